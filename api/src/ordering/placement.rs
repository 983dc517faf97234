//! The placement loop: group commit for `placeOrder`. One loop per process takes every
//! order waiting behind the fleet lock and places them in ONE transaction serialized on
//! the fleet epoch row, so the commit's flush and the fixed statements are paid once per
//! batch instead of once per order.
//!
//! Each order is still all or nothing, decided against the state the orders before it in
//! the batch left: idempotency keys, quotas and the scheduler's fleet are updated in memory
//! as each order is placed, and only placed orders are written. A refused order (quota,
//! capacity, idempotency conflict, invalid shape) writes nothing, leaves the fleet as it
//! found it, and gets exactly the answer it would have got alone. If writing or committing
//! the batch fails, it is rolled back and every order in it is placed again on its own,
//! so one order can never fail another.
//!
//! The caller validates the input before it queues; the tenant's status, its budget's hard
//! cap and the SKU are read here once per batch, and checked per order in the same order
//! as always (tenant, budget, SKU, price, then idempotency, quota and placement).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use neocloud_scheduler::Placement;
use neocloud_schema::clock::{Clock, SharedClock};
use neocloud_schema::entity::{allocation, audit_log, budget, order, sku, ssh_key, tenant};
use neocloud_schema::ids::{OrderId, SshKeyId, TenantId};
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::{OrderStatus, TenantStatus};
use sea_orm::{DatabaseConnection, DatabaseTransaction};
use serde_json::json;
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

use super::alternatives::{Alternative, Asked};
use super::fleet_cache::FleetCache;
use super::planning::{Planned, Refusal, place_units, plan_part};
use super::quota::Usage;
use super::shapes::{request_for, units};
use super::{AllocationView, OrderView, Ordering, PlaceOrder, hourly_price, store};
use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::metrics::PlacementMetrics;

/// Most orders placed in one transaction (bounds the transaction's size and the wait of
/// the batch's first order).
pub const MAX_ORDERS_PER_BATCH: usize = 64;

/// Most orders waiting for the loop; further callers wait to queue.
pub const MAX_QUEUED_ORDERS: usize = 1024;

/// An order whose input is valid.
pub(super) struct Pending {
    pub actor: Principal,
    pub tenant: TenantId,
    pub input: PlaceOrder,
    pub request_hash: String,
    pub idempotency_key: String,
}

/// A queued order and where its answer goes.
pub(super) struct Job {
    pub pending: Pending,
    pub reply: oneshot::Sender<ApiResult<Placed>>,
}

/// What became of an order.
pub(super) enum Placed {
    /// Placed now.
    New(Box<OrderView>),
    /// A retry: the order placed earlier under the same idempotency key and input.
    Existing(Box<order::Model>),
}

/// Starts the placement loop over `cache`; it runs until every sender is dropped.
pub(super) fn spawn(
    db: DatabaseConnection,
    cache: Arc<Mutex<FleetCache>>,
    notice: Duration,
    clock: SharedClock,
    metrics: Option<PlacementMetrics>,
) -> mpsc::Sender<Job> {
    let (sender, mut queue) = mpsc::channel::<Job>(MAX_QUEUED_ORDERS);
    tokio::spawn(async move {
        while let Some(first) = queue.recv().await {
            let mut cache = cache.lock().await;
            // Everything that queued while the previous batch (or a release) held the fleet.
            let mut jobs = vec![first];
            while jobs.len() < MAX_ORDERS_PER_BATCH
                && let Ok(job) = queue.try_recv()
            {
                jobs.push(job);
            }
            // At most MAX_ORDERS_PER_BATCH.
            let orders = u64::try_from(jobs.len()).unwrap_or(u64::MAX);
            if let Some(m) = &metrics {
                m.orders_in_progress
                    .set(i64::try_from(orders).unwrap_or(i64::MAX));
            }
            let started = std::time::Instant::now();
            place_batch(&db, &mut cache, (notice, clock.as_ref()), jobs).await;
            if let Some(m) = &metrics {
                m.batch_seconds.observe(started.elapsed().as_secs_f64());
                m.orders_in_progress.set(0);
                m.batches_total.inc();
                m.orders_total.inc_by(orders);
            }
        }
    });
    sender
}

/// Places `jobs` in one transaction and answers each; if the batch cannot be written, each
/// order is placed again alone so that its answer is its own.
async fn place_batch(
    db: &DatabaseConnection,
    cache: &mut FleetCache,
    time: Time<'_>,
    jobs: Vec<Job>,
) {
    let (batch, replies): (Vec<Pending>, Vec<_>) =
        jobs.into_iter().map(|j| (j.pending, j.reply)).unzip();
    match attempt(db, cache, time, &batch).await {
        Ok(outcomes) => {
            for (reply, outcome) in replies.into_iter().zip(outcomes) {
                // The caller may have gone (a closed connection); the order stands.
                let _ = reply.send(outcome);
            }
        }
        Err(err) => {
            // Nothing of the batch was written; the cached fleet, which holds its
            // placements, stays stale until the next change reloads it.
            if batch.len() > 1 {
                tracing::warn!(error = ?err, orders = batch.len(), "A batch of orders could not be written; placing each on its own.");
            }
            let mut first_error = Some(err);
            for (pending, reply) in batch.iter().zip(replies) {
                let outcome = if batch.len() == 1 {
                    Err(first_error.take().unwrap_or_else(lost))
                } else {
                    attempt(db, cache, time, std::slice::from_ref(pending))
                        .await
                        .and_then(|mut outcomes| outcomes.pop().unwrap_or_else(|| Err(lost())))
                };
                let _ = reply.send(outcome);
            }
        }
    }
}

/// The preemption notice and the clock of a placement.
type Time<'a> = (Duration, &'a dyn Clock);

fn lost() -> ApiError {
    ApiError::Internal {
        message: "the order's outcome was lost".into(),
    }
}

/// One transaction for `batch`. The outer error means nothing was written; the inner
/// results are each order's own answer.
async fn attempt(
    db: &DatabaseConnection,
    cache: &mut FleetCache,
    (notice, clock): Time<'_>,
    batch: &[Pending],
) -> ApiResult<Vec<ApiResult<Placed>>> {
    let txn = crate::db::begin_write(db).await?;
    // The epoch row first: from here on this transaction is the fleet's only writer on
    // every replica, so each read below sees what the previous writer committed.
    let epoch = Ordering::current(cache, &txn).await?;
    let keys: Vec<(TenantId, &str)> = batch
        .iter()
        .map(|p| (p.tenant, p.idempotency_key.as_str()))
        .collect();
    let known = store::find_by_idempotency_keys(&txn, &keys)
        .await?
        .into_iter()
        .map(|o| ((o.tenant_id, o.idempotency_key.clone()), o))
        .collect();
    let mut tenants: Vec<TenantId> = batch.iter().map(|p| p.tenant).collect();
    tenants.sort_unstable();
    tenants.dedup();
    let usage = Usage::load_many(&txn, &tenants).await?;
    let tenant_rows = crate::tenancy::store::find_many(&txn, &tenants)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let tenant_ids: Vec<Uuid> = tenants.iter().map(|t| Uuid::from(*t)).collect();
    let budgets = neocloud_metering::budgets::store::find_many(&txn, &tenant_ids)
        .await?
        .into_iter()
        .map(|b| (b.tenant_id, b))
        .collect();
    let mut sku_ids: Vec<Uuid> = batch.iter().map(|p| p.input.sku).collect();
    sku_ids.sort_unstable();
    sku_ids.dedup();
    let skus = crate::catalog::store::find_many(&txn, &sku_ids)
        .await?
        .into_iter()
        .map(|s| (s.id.into(), s))
        .collect();
    let mut run = Batch {
        txn: &txn,
        cache: &mut *cache,
        notice,
        now: clock.now().trunc_subsecs(6),
        tenants: tenant_rows,
        budgets,
        skus,
        known,
        usage,
        catalog: None,
        writes: Writes::default(),
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for pending in batch {
        outcomes.push(run.place(pending).await?);
    }
    let preempted = run.writes.apply(&txn, &run.skus, run.now).await?;
    Ordering::commit(cache, txn, epoch).await?;
    for (tenant, count) in preempted {
        tracing::info!(%tenant, preempted = count, "Spot allocations preempted for an order.");
    }
    Ok(outcomes)
}

/// The state of one batch as its orders are placed in turn.
struct Batch<'a> {
    txn: &'a DatabaseTransaction,
    cache: &'a mut FleetCache,
    notice: Duration,
    /// When the batch's orders are placed.
    now: DateTime<Utc>,
    tenants: HashMap<TenantId, tenant::Model>,
    budgets: HashMap<TenantId, budget::Model>,
    skus: HashMap<Uuid, sku::Model>,
    /// Orders by (tenant, idempotency key): those already stored and those placed so far.
    known: HashMap<(TenantId, String), order::Model>,
    usage: HashMap<TenantId, Usage>,
    /// The active catalog, read once if an order does not fit (for its alternatives).
    catalog: Option<Vec<sku::Model>>,
    writes: Writes,
}

/// Where an order stands after the checks that need no placement.
enum Admission {
    /// Go on and place it, as this SKU, handing over these SSH keys.
    Place(sku::Model, Vec<ssh_key::Model>),
    /// The answer, given without placing (a refusal, or the order a retry stands for).
    Answer(ApiResult<Placed>),
}

impl Batch<'_> {
    /// Places one order against the state the batch's earlier orders left. The outer error
    /// fails the whole batch (a database error, or a state that cannot be undone in memory).
    async fn place(&mut self, p: &Pending) -> ApiResult<ApiResult<Placed>> {
        let (sku, keys) = match self.admit(p).await? {
            Admission::Place(sku, keys) => (sku, keys),
            Admission::Answer(answer) => return Ok(answer),
        };
        let (planned, victims) = match self.plan(p.tenant, &p.input, &sku).await? {
            Ok(planned) => planned,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let starts_at = if victims.is_empty() {
            self.now
        } else {
            self.now + chrono::Duration::from_std(self.notice).unwrap_or_default()
        };
        let ids: Vec<SshKeyId> = keys.iter().map(|k| k.id).collect();
        let order = order_row(p, &sku, &ids, self.now)?;
        self.writes
            .ssh_keys
            .insert(order.id, crate::access::material(&keys));
        let view = self.record(p, order, &sku, &planned, victims, starts_at)?;
        Ok(Ok(Placed::New(Box::new(view))))
    }

    /// The checks before placement: the tenant may order (not suspended, within its
    /// budget), the SKU is sold, a retry gets its first answer, the quota holds.
    async fn admit(&self, p: &Pending) -> ApiResult<Admission> {
        let refuse = |err| Ok(Admission::Answer(Err(err)));
        let (tenant, input) = (p.tenant, &p.input);
        match self.tenants.get(&tenant) {
            None => return refuse(ApiError::not_found("tenant")),
            Some(row) if row.status == TenantStatus::Suspended => {
                let reason = crate::tenancy::suspension_reason(self.txn, row).await?;
                return refuse(ApiError::forbidden(format!(
                    "the tenant is suspended and cannot place new orders: {}",
                    reason.unwrap_or_default()
                )));
            }
            Some(_) => {}
        }
        if let Some(refusal) = self
            .budgets
            .get(&tenant)
            .and_then(crate::budgets::order_refusal)
        {
            return refuse(refusal);
        }
        let Some(sku) = self.skus.get(&input.sku).filter(|s| s.active) else {
            return refuse(ApiError::invalid("sku", "no such SKU in the catalog"));
        };
        if let Some(existing) = self.known.get(&(tenant, p.idempotency_key.clone())) {
            if existing.request_hash != p.request_hash {
                return refuse(ApiError::IdempotencyConflict {
                    message: "this idempotencyKey was used for a different order".into(),
                });
            }
            return Ok(Admission::Answer(Ok(Placed::Existing(Box::new(
                existing.clone(),
            )))));
        }
        if let Some(usage) = self.usage.get(&tenant)
            && let Err(err) = usage.check(sku, input.count)
        {
            return refuse(err);
        }
        match crate::access::for_order(self.txn, tenant, input.ssh_key_ids.as_deref()).await {
            Ok(keys) => Ok(Admission::Place(sku.clone(), keys)),
            Err(ApiError::Database { source }) => Err(source.into()),
            Err(refusal) => refuse(refusal),
        }
    }

    /// Every unit of the order placed and committed in the cached fleet, all or nothing:
    /// one part per node, and the spot allocations they preempt; or the refusal.
    async fn plan(
        &mut self,
        tenant: TenantId,
        input: &PlaceOrder,
        sku: &sku::Model,
    ) -> ApiResult<Result<(Vec<(Uuid, Placement)>, Vec<Uuid>), ApiError>> {
        let shape_units = match units(sku, input) {
            Ok(units) => units,
            Err(err) => return Ok(Err(err)),
        };
        let Some(region) = self.cache.regions.get_mut(&sku.region) else {
            return Ok(Err(self.refuse(tenant, sku, input).await?));
        };
        let requests = shape_units
            .into_iter()
            .map(|shape| request_for(tenant, input, &region.fleet, sku, shape))
            .collect();
        match place_units(&mut region.fleet, requests)? {
            Ok(Planned { parts, victims }) => Ok(Ok((parts, victims))),
            Err(Refusal::Invalid(message)) => Ok(Err(ApiError::invalid("sku", message))),
            Err(Refusal::NoCapacity) => Ok(Err(self.refuse(tenant, sku, input).await?)),
        }
    }

    /// Queues the writes of a placed order (its row, allocations, audit entries and
    /// preemptions), counts it in the tenant's usage, and returns its view.
    fn record(
        &mut self,
        p: &Pending,
        order: order::Model,
        sku: &sku::Model,
        planned: &[(Uuid, Placement)],
        victims: Vec<Uuid>,
        starts_at: DateTime<Utc>,
    ) -> ApiResult<OrderView> {
        let tenant = p.tenant;
        let region = self
            .cache
            .regions
            .get(&sku.region)
            .ok_or_else(|| ApiError::invariant("the region's fleet went away"))?;
        let mut views: Vec<AllocationView> = Vec::with_capacity(planned.len());
        let mut rows: Vec<(allocation::Model, Vec<Uuid>)> = Vec::with_capacity(planned.len());
        for (id, part) in planned {
            let (view, gpu_ids) = plan_part(region, *id, part, &order, sku, starts_at)?;
            rows.push((view.allocation.clone(), gpu_ids));
            views.push(view);
        }
        if let Some(usage) = self.usage.get_mut(&tenant) {
            let held: Vec<(&allocation::Model, usize)> =
                rows.iter().map(|(a, gpus)| (a, gpus.len())).collect();
            usage.add(sku, &held);
        }
        self.known
            .insert((tenant, p.idempotency_key.clone()), order.clone());
        let allocations: Vec<Uuid> = planned.iter().map(|(id, _)| *id).collect();
        self.writes
            .audit
            .push(placement_entry(p, &order, sku, &allocations, victims.len()));
        if !victims.is_empty() {
            self.writes
                .audit
                .push(preemption_entry(&order, &victims, starts_at));
            self.writes.preempting.push((tenant, victims, starts_at));
        }
        self.writes.orders.push(order.clone());
        self.writes.allocations.extend(rows);
        Ok(OrderView {
            order,
            sku: sku.clone(),
            allocations: views,
        })
    }
}

/// The row of a newly placed order.
fn order_row(
    p: &Pending,
    sku: &sku::Model,
    keys: &[SshKeyId],
    now: DateTime<Utc>,
) -> ApiResult<order::Model> {
    let input = &p.input;
    Ok(order::Model {
        id: OrderId::new(),
        tenant_id: p.tenant,
        sku_id: sku.id,
        count: input.count,
        class: input.class,
        topology_level: input.topology_level,
        topology_required: input.topology_required,
        exclusive: input.exclusive,
        max_price_per_hour: input
            .max_price_per_hour
            .as_deref()
            .map(neocloud_schema::money::parse_plain_decimal)
            .transpose()
            .map_err(|e| ApiError::invalid("maxPricePerHour", e))?
            .map(Into::into),
        labels: json!(input.labels),
        ssh_key_ids: Some(json!(keys)),
        idempotency_key: p.idempotency_key.clone(),
        request_hash: p.request_hash.clone(),
        status: OrderStatus::Active,
        created_by: Some(p.actor.key_id),
        created_at: now,
        ended_at: None,
    })
}

/// The tenant's audit entry of a placed order.
fn placement_entry(
    p: &Pending,
    order: &order::Model,
    sku: &sku::Model,
    allocations: &[Uuid],
    preempted: usize,
) -> audit_log::ActiveModel {
    audit::row(
        Some(&p.actor),
        audit::Entry {
            tenant_id: Some(p.tenant),
            action: "order.place",
            object_type: "order",
            object_id: order.id.to_string(),
            before: None,
            after: Some(json!({
                "sku": sku.name,
                "count": p.input.count,
                "class": p.input.class,
                "allocations": allocations,
                // Only how many: the victims are other tenants' allocations.
                "preempted": preempted,
            })),
        },
    )
}

impl Batch<'_> {
    /// `INSUFFICIENT_CAPACITY` for an order, with the alternatives that would be placed
    /// now, within the tenant's quota and the order's price limit.
    async fn refuse(
        &mut self,
        tenant: TenantId,
        sku: &sku::Model,
        input: &PlaceOrder,
    ) -> ApiResult<ApiError> {
        if self.catalog.is_none() {
            self.catalog = Some(crate::catalog::store::active(self.txn).await?);
        }
        let skus = self.catalog.as_deref().unwrap_or_default();
        let asked = Asked { tenant, sku, input };
        let cache: &FleetCache = self.cache;
        let mut offered = Vec::new();
        for alt in asked.alternatives(cache, skus, self.usage.get(&tenant)) {
            if within_price(self.txn, tenant, input, &alt, self.now).await? {
                offered.push(alt.to_json());
            }
        }
        Ok(asked.refusal(cache, offered))
    }
}

/// Whether an alternative costs at most the order's `maxPricePerHour`, if it has one.
async fn within_price(
    txn: &DatabaseTransaction,
    tenant: TenantId,
    input: &PlaceOrder,
    alt: &Alternative<'_>,
    now: DateTime<Utc>,
) -> ApiResult<bool> {
    let Some(max) = &input.max_price_per_hour else {
        return Ok(true);
    };
    let Ok(max) = parse_plain_decimal(max) else {
        return Ok(false);
    };
    let count = i32::try_from(alt.count).unwrap_or(i32::MAX);
    Ok(hourly_price(txn, tenant, alt.sku, (input.class, count), now).await? <= max)
}

/// The operator's record of a preemption: which spot allocations an order displaced.
/// It belongs to no tenant, so neither the preempting tenant nor the victims' see it.
fn preemption_entry(
    order: &order::Model,
    victims: &[Uuid],
    ends_at: DateTime<Utc>,
) -> audit_log::ActiveModel {
    audit::row(
        None,
        audit::Entry {
            tenant_id: None,
            action: "order.preempt",
            object_type: "order",
            object_id: order.id.to_string(),
            before: None,
            after: Some(json!({
                "tenant": order.tenant_id,
                "preempted": victims,
                "ends_at": ends_at,
            })),
        },
    )
}

/// What a batch writes, in the order it is written.
#[derive(Default)]
struct Writes {
    orders: Vec<order::Model>,
    /// Per order, the SSH keys `allocation.placed` hands over (as events carry them).
    ssh_keys: HashMap<OrderId, serde_json::Value>,
    allocations: Vec<(allocation::Model, Vec<Uuid>)>,
    /// Per order that preempted: its tenant, the victims and when they end.
    preempting: Vec<(TenantId, Vec<Uuid>, DateTime<Utc>)>,
    audit: Vec<audit_log::ActiveModel>,
}

impl Writes {
    /// Writes everything; returns how many allocations each preempting order preempted.
    async fn apply(
        self,
        txn: &DatabaseTransaction,
        skus: &HashMap<Uuid, sku::Model>,
        now: DateTime<Utc>,
    ) -> ApiResult<Vec<(TenantId, usize)>> {
        let placed: Vec<allocation::Model> =
            self.allocations.iter().map(|(a, _)| a.clone()).collect();
        store::insert_placed(txn, self.orders, self.allocations).await?;
        super::events::placed(txn, &placed, &self.ssh_keys, skus, now).await?;
        // After the inserts: an order may preempt a spot allocation placed earlier in
        // the same batch.
        let mut preempted = Vec::with_capacity(self.preempting.len());
        for (tenant, victims, at) in self.preempting {
            let marked = store::mark_preempting(txn, &victims, at).await?;
            super::events::preempting(txn, &marked, "preempted", now).await?;
            preempted.push((tenant, marked.len()));
        }
        audit::record_all(txn, self.audit).await?;
        Ok(preempted)
    }
}
