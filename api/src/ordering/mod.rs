//! Ordering: `placeOrder`, releases, and preemption. One transaction does the quota check,
//! the scheduler's placement against current state, and the order and allocation rows;
//! placements serialize on the fleet epoch row (see `fleet_cache`), so two orders can
//! never take the same GPU or overrun a quota, on SQLite or PostgreSQL, with one api
//! replica or several. Orders waiting for that row are placed together, in one
//! transaction, by the placement loop (see `placement`).

mod alternatives;
mod events;
pub mod fleet_cache;
mod handoff;
mod placement;
mod planning;
pub mod quota;
mod request;
mod shapes;
pub(crate) mod store;
pub mod utilization;
mod views;

pub use handoff::{AccessEndpoint, MAX_ENDPOINTS, MAX_FAILURE_CHARS};
pub use request::{
    MAX_GPUS_PER_ORDER, MAX_IDEMPOTENCY_KEY_BYTES, MAX_LABELS, MAX_NODES_PER_ORDER,
    MAX_SLICES_PER_ORDER, PlaceOrder, hourly_price,
};
pub use views::{
    AllocationView, OrderView, get_allocation, get_order, list_allocations, list_orders,
    live_on_nodes, view_allocations, view_order, view_orders,
};

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use chrono::Utc;
use neocloud_scheduler::TopologyLevel as SchedLevel;
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::{allocation, sku};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{AllocationStatus, OrderStatus};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction};
use serde_json::json;
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

use self::fleet_cache::{FleetCache, allocation_key};
use self::request::{check_price, check_residency, request_hash, validate};
use self::shapes::{units_for, with_models};
use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::fleet;
use crate::metrics::PlacementMetrics;

/// The ordering service: holds the cached scheduler fleet and the placement loop.
pub struct Ordering {
    cache: Arc<Mutex<FleetCache>>,
    /// The placement loop's queue, started by the first order (see `placement`).
    queue: std::sync::Mutex<Option<mpsc::Sender<placement::Job>>>,
    /// How long a preempted spot allocation keeps running.
    pub notice: Duration,
    metrics: Option<PlacementMetrics>,
    /// What time it is: when orders are placed, allocations end, notices run out.
    pub clock: SharedClock,
}

impl Ordering {
    pub fn new(notice: Duration, clock: SharedClock) -> Ordering {
        Ordering {
            cache: Arc::new(Mutex::new(FleetCache::default())),
            queue: std::sync::Mutex::new(None),
            notice,
            metrics: None,
            clock,
        }
    }

    /// Reports the placement loop's batches to `metrics`.
    pub fn with_metrics(mut self, metrics: PlacementMetrics) -> Ordering {
        self.metrics = Some(metrics);
        self
    }

    /// Starts the placement loop on the current runtime, beside the other background
    /// workers (not on an HTTP worker's thread, where it would wait behind requests while
    /// it holds the fleet lock). Orders start it themselves if it is not running.
    pub fn start(&self, db: &DatabaseConnection) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.as_ref().is_none_or(mpsc::Sender::is_closed) {
            *queue = Some(placement::spawn(
                db.clone(),
                self.cache.clone(),
                self.notice,
                self.clock.clone(),
                self.metrics.clone(),
            ));
        }
    }

    /// Orders waiting for the placement loop.
    pub fn queued_orders(&self) -> usize {
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue
            .as_ref()
            .map_or(0, |sender| sender.max_capacity() - sender.capacity())
    }

    /// Starts a fleet change: bumps the epoch in `txn` (which makes this transaction the
    /// fleet's only writer on every replica until it ends) and brings `cache` up to date
    /// for it. The cache is then marked stale until [`Self::commit`] records the epoch: a
    /// change that fails, or whose future is dropped, halfway leaves the next change to
    /// reload, whatever another replica committed meanwhile.
    async fn current(cache: &mut FleetCache, txn: &DatabaseTransaction) -> ApiResult<i64> {
        let epoch = fleet::store::bump_epoch(txn).await?;
        if cache.epoch != Some(epoch - 1) {
            *cache = FleetCache::load(txn, epoch).await?;
        }
        cache.epoch = None;
        Ok(epoch)
    }

    /// Ends a fleet change begun by [`Self::current`]: commits, then marks `cache` current
    /// as of `epoch`.
    async fn commit(cache: &mut FleetCache, txn: DatabaseTransaction, epoch: i64) -> ApiResult<()> {
        txn.commit().await?;
        cache.epoch = Some(epoch);
        Ok(())
    }

    /// `placeOrder`.
    #[tracing::instrument(name = "ordering.place_order", skip_all, fields(key = %actor.key_id))]
    pub async fn place_order(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        input: PlaceOrder,
    ) -> ApiResult<OrderView> {
        let tenant = actor.tenant()?;
        validate(&input)?;
        check_residency(db, tenant, &input).await?;
        check_price(db, tenant, &input, self.clock.now()).await?;
        let request_hash = request_hash(&input);
        let idempotency_key = input
            .idempotency_key
            .clone()
            .unwrap_or_else(|| Uuid::new_v4().to_string());

        // The tenant's status, its budget and the SKU are read by the placement loop, once
        // for every order of a batch (see `placement`).
        let (reply, answer) = oneshot::channel();
        let job = placement::Job {
            pending: placement::Pending {
                actor: actor.clone(),
                tenant,
                input,
                request_hash,
                idempotency_key,
            },
            reply,
        };
        self.enqueue(db, job).await?;
        match answer.await {
            Ok(Ok(placement::Placed::New(view))) => Ok(*view),
            Ok(Ok(placement::Placed::Existing(order))) => view_order(db, *order).await,
            Ok(Err(err)) => Err(err),
            Err(_) => Err(ApiError::Internal {
                message: "the placement loop stopped before answering".into(),
            }),
        }
    }

    /// Queues an order for the placement loop, starting the loop if it is not running.
    async fn enqueue(&self, db: &DatabaseConnection, job: placement::Job) -> ApiResult<()> {
        self.start(db);
        let sender = {
            // Held for no await; a panic elsewhere cannot leave the slot half-written.
            let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.clone().ok_or_else(|| ApiError::Internal {
                message: "the placement loop is not running".into(),
            })?
        };
        sender.send(job).await.map_err(|_| ApiError::Internal {
            message: "the placement loop is not running".into(),
        })
    }

    /// `releaseAllocation`: ends one allocation now.
    #[tracing::instrument(name = "ordering.release_allocation", skip_all, fields(allocation = %id))]
    pub async fn release_allocation(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
    ) -> ApiResult<allocation::Model> {
        let scope = actor.tenant_scope_or_all();
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        // The fleet's lock first: the allocation read below is then what the last writer,
        // on any replica, left.
        let epoch = Self::current(&mut cache, &txn).await?;
        let row = store::find_allocation(&txn, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("allocation"))?;
        if row.status == AllocationStatus::Released {
            return Ok(row);
        }
        let ended = self.end(&txn, &mut cache, &row).await?;
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: Some(row.tenant_id),
                action: "allocation.release",
                object_type: "allocation",
                object_id: row.id.to_string(),
                before: Some(json!({"status": row.status})),
                after: Some(json!({"status": ended.status, "ended_at": ended.ended_at})),
            },
        )
        .await?;
        Self::commit(&mut cache, txn, epoch).await?;
        Ok(ended)
    }

    /// `releaseOrder`: ends every live allocation of an order.
    #[tracing::instrument(name = "ordering.release_order", skip_all, fields(order = %id))]
    pub async fn release_order(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
    ) -> ApiResult<OrderView> {
        let scope = actor.tenant_scope_or_all();
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        let epoch = Self::current(&mut cache, &txn).await?;
        let order = store::find_order(&txn, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("order"))?;
        for row in store::allocations_of_orders(&txn, &[order.id.into()]).await? {
            if row.status != AllocationStatus::Released {
                self.end(&txn, &mut cache, &row).await?;
            }
        }
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: Some(order.tenant_id),
                action: "order.release",
                object_type: "order",
                object_id: order.id.to_string(),
                before: Some(json!({"status": order.status})),
                after: Some(json!({"status": OrderStatus::Released})),
            },
        )
        .await?;
        Self::commit(&mut cache, txn, epoch).await?;
        drop(cache);
        let order = store::find_order(db, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("order"))?;
        view_order(db, order).await
    }

    /// Ends an allocation now (or when its notice ran out) in the database and in the
    /// cached fleet.
    async fn end(
        &self,
        txn: &DatabaseTransaction,
        cache: &mut FleetCache,
        row: &allocation::Model,
    ) -> ApiResult<allocation::Model> {
        let now = self.clock.now();
        let at = row.preempt_at.filter(|p| *p < now).unwrap_or(now);
        self.end_at(txn, cache, row, at, None).await
    }

    /// Ends an allocation at `at`; `failure` says why provisioning failed, if that is why.
    async fn end_at(
        &self,
        txn: &DatabaseTransaction,
        cache: &mut FleetCache,
        row: &allocation::Model,
        at: chrono::DateTime<Utc>,
        failure: Option<&str>,
    ) -> ApiResult<allocation::Model> {
        let now = self.clock.now();
        let ended = store::end_allocation(txn, row, at).await?;
        store::settle_order(txn, row.order_id.into(), at).await?;
        events::ended(txn, row, &ended, failure, now).await?;
        for region in cache.regions.values_mut() {
            if region.node_id(row.node_id.into()).is_some() {
                if let Err(err) = region.fleet.release(allocation_key(row.id.into())) {
                    tracing::warn!(error = %err, allocation = %row.id, "Released allocation was not in the fleet.");
                }
                break;
            }
        }
        if row.started_at > at {
            Self::return_to_the_displaced(txn, cache, row).await?;
        }
        Ok(ended)
    }

    /// An allocation released before it started was waiting for spot allocations on its
    /// node to end their notice: what it would have taken stays theirs until then.
    async fn return_to_the_displaced(
        txn: &DatabaseTransaction,
        cache: &mut FleetCache,
        row: &allocation::Model,
    ) -> ApiResult<()> {
        let displaced: Vec<allocation::Model> = store::live_on_nodes(txn, &[row.node_id.into()])
            .await?
            .into_iter()
            .filter(|a| a.status == AllocationStatus::Preempting)
            .collect();
        let ids: Vec<Uuid> = displaced.iter().map(|a| a.id.into()).collect();
        let gpus = store::gpus_of(txn, &ids).await?;
        for alloc in &displaced {
            let held: Vec<Uuid> = gpus
                .iter()
                .filter(|(a, _)| *a == Uuid::from(alloc.id))
                .map(|(_, g)| g.id.into())
                .collect();
            cache.hold_for_notice(alloc, &held)?;
        }
        Ok(())
    }

    /// Gives every running allocation of `tenant` the preemption notice window from `at`
    /// (a budget's hard stop): they end when it passes, as preempted spot allocations do.
    /// Returns how many were running.
    #[tracing::instrument(name = "ordering.stop_tenant", skip_all, fields(tenant = %tenant))]
    pub async fn stop_tenant<C: ConnectionTrait>(
        &self,
        conn: &C,
        tenant: TenantId,
        at: chrono::DateTime<Utc>,
    ) -> ApiResult<usize> {
        let running: Vec<Uuid> = store::live_allocations_of(conn, tenant)
            .await?
            .iter()
            .filter(|(a, _)| a.status == AllocationStatus::Active)
            .map(|(a, _)| Uuid::from(a.id))
            .collect();
        if running.is_empty() {
            return Ok(0);
        }
        let notice = chrono::TimeDelta::from_std(self.notice).unwrap_or_default();
        let stopped = store::mark_preempting(conn, &running, at + notice).await?;
        events::preempting(conn, &stopped, "budget_stop", at).await?;
        Ok(stopped.len())
    }

    /// Ends preempted allocations whose notice window has passed. Returns how many.
    #[tracing::instrument(name = "ordering.end_due_preemptions", skip_all)]
    pub async fn end_due_preemptions(&self, db: &DatabaseConnection) -> ApiResult<usize> {
        let due = store::due_preemptions(db, self.clock.now()).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        let epoch = Self::current(&mut cache, &txn).await?;
        let mut ended = 0;
        for row in store::due_preemptions(&txn, self.clock.now()).await? {
            self.end(&txn, &mut cache, &row).await?;
            ended += 1;
        }
        Self::commit(&mut cache, txn, epoch).await?;
        Ok(ended)
    }

    /// How many units of `sku` could be placed now (for the catalog).
    pub async fn available(
        &self,
        db: &DatabaseConnection,
        skus: &[sku::Model],
    ) -> ApiResult<Vec<u32>> {
        let mut cache = self.cache.lock().await;
        let epoch = fleet::store::current_epoch(db).await?;
        if cache.epoch != Some(epoch) {
            *cache = FleetCache::load(db, epoch).await?;
        }
        Ok(skus
            .iter()
            .map(|sku| {
                let Some(region) = cache.regions.get(&sku.region) else {
                    return 0;
                };
                let Ok(mut shapes) = units_for(sku, 1, SchedLevel::Any, false) else {
                    return 0;
                };
                shapes.pop().map_or(0, |shape| {
                    let models = region.fleet.model_set([sku.gpu_model.as_str()]);
                    region.fleet.available(&with_models(shape, models))
                })
            })
            .collect())
    }
}
