//! Ordering: `placeOrder`, releases, and preemption. One transaction does the quota check,
//! the scheduler's placement against current state, and the order and allocation rows;
//! placements serialize on the fleet epoch row (see `fleet_cache`), so two orders can
//! never take the same GPU or overrun a quota, on SQLite or PostgreSQL, with one api
//! replica or several. Orders waiting for that row are placed together, in one
//! transaction, by the placement loop (see `placement`).

mod alternatives;
pub mod fleet_cache;
mod placement;
pub mod quota;
pub(crate) mod store;

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use chrono::Utc;
use neocloud_scheduler::{
    Exclusivity, Fleet, GpuShare, NoFit, Placement, Request, Shape, Topology,
    TopologyLevel as SchedLevel,
};
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::{allocation, gpu, node, order, sku};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::{AllocationId, TenantId};
use neocloud_schema::mig::MigProfile;
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::{
    AllocationClass, AllocationStatus, OrderStatus, SkuForm, TopologyLevel,
};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

use self::fleet_cache::{
    FleetCache, RegionFleet, allocation_key, class_of, exclusive_name, fraction_memory_mib,
    tenant_key,
};
use crate::audit;
use crate::auth::Principal;
use crate::catalog;
use crate::error::{ApiError, ApiResult};
use crate::fleet;
use crate::metrics::PlacementMetrics;
use crate::pagination::{Page, PageOf};

/// Most units one order may ask for.
pub const MAX_GPUS_PER_ORDER: i32 = 1024;
pub const MAX_SLICES_PER_ORDER: i32 = 64;
pub const MAX_NODES_PER_ORDER: i32 = 128;
pub const MAX_LABELS: usize = 16;
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 128;

/// What a tenant asks for.
#[derive(Debug, Clone)]
pub struct PlaceOrder {
    pub sku: Uuid,
    pub count: i32,
    pub topology_level: TopologyLevel,
    pub topology_required: bool,
    pub exclusive: bool,
    pub class: AllocationClass,
    pub max_price_per_hour: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub idempotency_key: Option<String>,
}

/// An allocation with its SKU and where it runs.
#[derive(Debug, Clone)]
pub struct AllocationView {
    pub allocation: allocation::Model,
    pub sku: sku::Model,
    pub node: node::Model,
    pub gpus: Vec<gpu::Model>,
}

#[derive(Debug, Clone)]
pub struct OrderView {
    pub order: order::Model,
    pub sku: sku::Model,
    pub allocations: Vec<AllocationView>,
}

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

    /// Starts a fleet change: bumps the epoch in `txn` and makes `cache` current for it.
    async fn current(cache: &mut FleetCache, txn: &DatabaseTransaction) -> ApiResult<()> {
        let epoch = fleet::store::bump_epoch(txn).await?;
        if cache.epoch != Some(epoch - 1) {
            *cache = FleetCache::load(txn, epoch).await?;
        }
        // If this transaction rolls back, the database epoch stays at `epoch - 1` while
        // the cache says `epoch`: the next change sees the mismatch and reloads.
        cache.epoch = Some(epoch);
        Ok(())
    }

    /// `placeOrder`.
    pub async fn place_order(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        input: PlaceOrder,
    ) -> ApiResult<OrderView> {
        let tenant = actor.tenant()?;
        validate(&input)?;
        check_price(db, tenant, &input).await?;
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
            Ok(Ok(placement::Placed::Existing(order))) => view_order(db, order).await,
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
    pub async fn release_allocation(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
    ) -> ApiResult<allocation::Model> {
        let scope = actor.tenant_scope_or_all();
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        let row = store::find_allocation(&txn, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("allocation"))?;
        if row.status == AllocationStatus::Released {
            return Ok(row);
        }
        Self::current(&mut cache, &txn).await?;
        let ended = self.end(&txn, &mut cache, &row).await?;
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: Some(TenantId::from(row.tenant_id)),
                action: "allocation.release",
                object_type: "allocation",
                object_id: row.id.to_string(),
                before: Some(json!({"status": row.status})),
                after: Some(json!({"status": ended.status, "ended_at": ended.ended_at})),
            },
        )
        .await?;
        txn.commit().await?;
        Ok(ended)
    }

    /// `releaseOrder`: ends every live allocation of an order.
    pub async fn release_order(
        &self,
        db: &DatabaseConnection,
        actor: &Principal,
        id: Uuid,
    ) -> ApiResult<OrderView> {
        let scope = actor.tenant_scope_or_all();
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        let order = store::find_order(&txn, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("order"))?;
        Self::current(&mut cache, &txn).await?;
        for row in store::allocations_of_orders(&txn, &[order.id]).await? {
            if row.status != AllocationStatus::Released {
                self.end(&txn, &mut cache, &row).await?;
            }
        }
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: Some(TenantId::from(order.tenant_id)),
                action: "order.release",
                object_type: "order",
                object_id: order.id.to_string(),
                before: Some(json!({"status": order.status})),
                after: Some(json!({"status": OrderStatus::Released})),
            },
        )
        .await?;
        txn.commit().await?;
        drop(cache);
        let order = store::find_order(db, id, scope)
            .await?
            .ok_or_else(|| ApiError::not_found("order"))?;
        view_order(db, order).await
    }

    /// Ends an allocation in the database and in the cached fleet.
    async fn end(
        &self,
        txn: &DatabaseTransaction,
        cache: &mut FleetCache,
        row: &allocation::Model,
    ) -> ApiResult<allocation::Model> {
        let now = self.clock.now();
        let at = row.preempt_at.filter(|p| *p < now).unwrap_or(now);
        let ended = store::end_allocation(txn, row, at).await?;
        store::settle_order(txn, row.order_id, at).await?;
        for region in cache.regions.values_mut() {
            if region.node_id(row.node_id).is_some() {
                if let Err(err) = region.fleet.release(allocation_key(row.id)) {
                    tracing::warn!(error = %err, allocation = %row.id, "Released allocation was not in the fleet.");
                }
                break;
            }
        }
        Ok(ended)
    }

    /// Gives every running allocation of `tenant` the preemption notice window from `at`
    /// (a budget's hard stop): they end when it passes, as preempted spot allocations do.
    /// Returns how many were running.
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
            .map(|(a, _)| a.id)
            .collect();
        if !running.is_empty() {
            let notice = chrono::TimeDelta::from_std(self.notice).unwrap_or_default();
            store::mark_preempting(conn, &running, at + notice).await?;
        }
        Ok(running.len())
    }

    /// Ends preempted allocations whose notice window has passed. Returns how many.
    pub async fn end_due_preemptions(&self, db: &DatabaseConnection) -> ApiResult<usize> {
        let due = store::due_preemptions(db, self.clock.now()).await?;
        if due.is_empty() {
            return Ok(0);
        }
        let mut cache = self.cache.lock().await;
        let txn = crate::db::begin_write(db).await?;
        Self::current(&mut cache, &txn).await?;
        let mut ended = 0;
        for row in store::due_preemptions(&txn, self.clock.now()).await? {
            self.end(&txn, &mut cache, &row).await?;
            ended += 1;
        }
        txn.commit().await?;
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

fn validate(input: &PlaceOrder) -> ApiResult<()> {
    if input.count < 1 {
        return Err(ApiError::invalid("count", "must be at least 1"));
    }
    if input.labels.len() > MAX_LABELS
        || input
            .labels
            .iter()
            .any(|(k, v)| k.is_empty() || k.len() > 64 || v.len() > 128)
    {
        return Err(ApiError::invalid(
            "labels",
            format!("at most {MAX_LABELS} labels; keys 1 to 64 bytes, values at most 128"),
        ));
    }
    if let Some(key) = &input.idempotency_key
        && (key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_BYTES)
    {
        return Err(ApiError::invalid(
            "idempotencyKey",
            format!("1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes"),
        ));
    }
    if let Some(max) = &input.max_price_per_hour {
        let max = parse_plain_decimal(max).map_err(|e| ApiError::invalid("maxPricePerHour", e))?;
        if max.is_sign_negative() {
            return Err(ApiError::invalid("maxPricePerHour", "must not be negative"));
        }
    }
    Ok(())
}

/// A stable digest of what was asked, to tell a retry from a different order.
fn request_hash(input: &PlaceOrder) -> String {
    let canonical = json!({
        "sku": input.sku,
        "count": input.count,
        "topology": [input.topology_level.as_str(), input.topology_required.to_string()],
        "exclusive": input.exclusive,
        "class": input.class.as_str(),
        "max_price_per_hour": input.max_price_per_hour,
        "labels": input.labels,
    });
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

/// What `count` units of `sku` cost `tenant` an hour in `class`, as they will be billed:
/// the tenant's plan rate for the SKU (its spot price on spot), or the list price.
pub async fn hourly_price<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    sku: &sku::Model,
    class: AllocationClass,
    count: i32,
) -> ApiResult<Decimal> {
    let price = catalog::unit_prices(conn, Some(tenant), std::slice::from_ref(sku))
        .await?
        .remove(&sku.id)
        .ok_or_else(|| ApiError::not_found("SKU"))?;
    let unit = if class == AllocationClass::Spot {
        price.spot
    } else {
        price.on_demand
    };
    Ok((unit * Decimal::from(count)).normalize())
}

/// Refuses an order whose hourly price, as it will be billed, is above the buyer's limit.
async fn check_price<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    input: &PlaceOrder,
) -> ApiResult<()> {
    let Some(max) = &input.max_price_per_hour else {
        return Ok(());
    };
    let max = parse_plain_decimal(max).map_err(|e| ApiError::invalid("maxPricePerHour", e))?;
    // An unknown SKU is refused by placement, with the same answer as without a limit.
    let Some(sku) = catalog::store::find(conn, input.sku).await? else {
        return Ok(());
    };
    let price = hourly_price(conn, tenant, &sku, input.class, input.count).await?;
    if price > max {
        return Err(ApiError::invalid(
            "maxPricePerHour",
            format!(
                "the order costs {price} {} per hour ({} × {} at {}), above {max}",
                sku.currency,
                input.count,
                sku.unit(),
                if input.class == AllocationClass::Spot {
                    "the spot price"
                } else {
                    "the on-demand price"
                },
            ),
        ));
    }
    Ok(())
}

fn sched_level(level: TopologyLevel) -> SchedLevel {
    match level {
        TopologyLevel::Node => SchedLevel::Node,
        TopologyLevel::NvlinkDomain => SchedLevel::NvlinkDomain,
        TopologyLevel::Rack => SchedLevel::Rack,
        TopologyLevel::Any => SchedLevel::Any,
    }
}

fn units(sku: &sku::Model, input: &PlaceOrder) -> ApiResult<Vec<Shape>> {
    let max = match sku.form {
        SkuForm::WholeGpu => MAX_GPUS_PER_ORDER,
        SkuForm::Mig | SkuForm::Fractional => MAX_SLICES_PER_ORDER,
        SkuForm::WholeNode => MAX_NODES_PER_ORDER,
    };
    if input.count > max {
        return Err(ApiError::invalid(
            "count",
            format!("at most {max} per order of this SKU"),
        ));
    }
    units_for(
        sku,
        input.count as u32,
        sched_level(input.topology_level),
        input.topology_required,
    )
}

/// The scheduler shapes an order of `count` units of `sku` becomes: one gang for whole
/// GPUs or nodes, one shape per slice for MIG and fractional SKUs. Models are filled in
/// per region by `resolve_models`.
fn units_for(
    sku: &sku::Model,
    count: u32,
    level: SchedLevel,
    required: bool,
) -> ApiResult<Vec<Shape>> {
    let topology = Topology { level, required };
    let models = neocloud_scheduler::ModelSet::default();
    Ok(match sku.form {
        SkuForm::WholeGpu => vec![Shape::WholeGpus {
            count,
            models,
            topology,
            cpu_milli_per_gpu: 0,
            memory_mib_per_gpu: 0,
        }],
        SkuForm::WholeNode => vec![Shape::WholeNodes {
            count,
            models,
            topology,
        }],
        SkuForm::Mig => {
            let model: GpuModel = sku.gpu_model.parse().map_err(|_| ApiError::Internal {
                message: format!("SKU {} has an unknown model", sku.id),
            })?;
            let profile = sku
                .mig_profile
                .as_deref()
                .and_then(|name| MigProfile::parse(name, model).ok())
                .ok_or_else(|| ApiError::Internal {
                    message: format!("SKU {} has no valid MIG profile", sku.id),
                })?;
            vec![
                Shape::Mig {
                    profile,
                    models,
                    cpu_milli: 0,
                    memory_mib: 0,
                };
                count as usize
            ]
        }
        SkuForm::Fractional => {
            let milli = sku.milli_gpu.unwrap_or(0).max(0) as u32;
            let model: Option<GpuModel> = sku.gpu_model.parse().ok();
            let gpu_memory = model.map_or(0, |m| fraction_memory_mib(m.memory_mib(), milli));
            vec![
                Shape::Fractional {
                    milli_gpu: milli,
                    gpu_memory_mib: gpu_memory,
                    models,
                    cpu_milli: 0,
                    memory_mib: 0,
                };
                count as usize
            ]
        }
    })
}

/// Restricts a shape to a model set (the SKU's model as a region's fleet names it).
fn with_models(shape: Shape, set: neocloud_scheduler::ModelSet) -> Shape {
    match shape {
        Shape::WholeGpus {
            count,
            topology,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
            ..
        } => Shape::WholeGpus {
            count,
            models: set,
            topology,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
        },
        Shape::WholeNodes {
            count, topology, ..
        } => Shape::WholeNodes {
            count,
            models: set,
            topology,
        },
        Shape::Mig {
            profile,
            cpu_milli,
            memory_mib,
            ..
        } => Shape::Mig {
            profile,
            models: set,
            cpu_milli,
            memory_mib,
        },
        Shape::Fractional {
            milli_gpu,
            gpu_memory_mib,
            cpu_milli,
            memory_mib,
            ..
        } => Shape::Fractional {
            milli_gpu,
            gpu_memory_mib,
            models: set,
            cpu_milli,
            memory_mib,
        },
        other => other,
    }
}

/// One placement per node, so each node's share is its own allocation (and can be
/// released on its own). Victims stay with the first part.
fn split_per_node(placement: &Placement) -> Vec<Placement> {
    placement
        .nodes
        .iter()
        .map(|np| Placement {
            tenant: placement.tenant,
            class: placement.class,
            exclusive: placement.exclusive,
            nodes: vec![np.clone()],
            victims: placement.victims.clone(),
            degraded: placement.degraded,
        })
        .collect()
}

/// The allocation row one node's part of a placement becomes, with the GPUs it holds.
fn plan_part(
    region: &RegionFleet,
    id: Uuid,
    part: &Placement,
    order: &order::Model,
    sku: &sku::Model,
    starts_at: chrono::DateTime<Utc>,
) -> ApiResult<(AllocationView, Vec<Uuid>)> {
    let np = part.nodes.first().ok_or_else(|| ApiError::Internal {
        message: "an empty placement".into(),
    })?;
    let node = region
        .node(np.node)
        .cloned()
        .ok_or_else(|| ApiError::Internal {
            message: "placement on an unknown node".into(),
        })?;
    let mut gpus = Vec::new();
    let (mut mig_profile, mut mig_start, mut milli) = (None, None, None);
    for grant in &np.gpus {
        let gpu = region
            .gpu(neocloud_scheduler::GpuRef {
                node: np.node,
                gpu: grant.gpu,
            })
            .cloned()
            .ok_or_else(|| ApiError::Internal {
                message: "placement on an unknown GPU".into(),
            })?;
        match grant.share {
            GpuShare::Mig { profile, start } => {
                let model: Option<GpuModel> = gpu.model.parse().ok();
                mig_profile = model.map(|m| profile.name(m));
                mig_start = Some(i32::from(start));
            }
            GpuShare::Fraction { milli: m, .. } => milli = Some(m as i32),
            GpuShare::Whole => {}
        }
        gpus.push(gpu);
    }
    let row = allocation::Model {
        id,
        order_id: order.id,
        tenant_id: order.tenant_id,
        sku_id: sku.id,
        node_id: node.id,
        class: order.class,
        status: AllocationStatus::Active,
        mig_profile,
        mig_start_slot: mig_start,
        milli_gpu: milli,
        labels: order.labels.clone(),
        started_at: starts_at,
        preempt_at: None,
        ended_at: None,
        cpu_milli: i64::from(np.cpu_milli),
        memory_mib: np.memory_mib as i64,
        exclusive: exclusive_name(part.exclusive),
        whole_node: np.whole_node,
    };
    let gpu_ids: Vec<Uuid> = gpus.iter().map(|g| g.id).collect();
    Ok((
        AllocationView {
            allocation: row,
            sku: sku.clone(),
            node,
            gpus,
        },
        gpu_ids,
    ))
}

/// A scheduler request for one unit (`shape`) of `input`, by `tenant`, in `fleet` (the
/// region's fleet, which names the SKU's model).
fn request_for(
    tenant: TenantId,
    input: &PlaceOrder,
    fleet: &Fleet,
    sku: &sku::Model,
    shape: Shape,
) -> Request {
    Request {
        tenant: tenant_key(tenant.into()),
        class: class_of(input.class),
        exclusive: input.exclusive.then_some(match input.topology_level {
            TopologyLevel::NvlinkDomain => Exclusivity::NvlinkDomain,
            _ => Exclusivity::Node,
        }),
        shape: with_models(shape, fleet.model_set([sku.gpu_model.as_str()])),
    }
}

/// Why an order's units could not all be placed.
enum Refusal {
    NoCapacity,
    Invalid(String),
}

/// An order's units placed and committed in a fleet: one allocation per node, with the
/// spot allocations they preempt.
struct Planned {
    parts: Vec<(Uuid, Placement)>,
    victims: Vec<Uuid>,
}

/// Places and commits `requests` (an order's units) on `fleet` in turn, all or nothing:
/// a refused order leaves the fleet as it found it. This is how an order is placed, and
/// how an alternative is tried before it is offered. The outer error is a state that
/// cannot be undone in memory.
fn place_units(fleet: &mut Fleet, requests: Vec<Request>) -> ApiResult<Result<Planned, Refusal>> {
    // An order that may commit more than one part keeps a copy to go back to (a single
    // part commits all or nothing by itself).
    let mut before: Option<Fleet> = (requests.len() > 1).then(|| fleet.clone());
    let mut planned = Planned {
        parts: Vec::new(),
        victims: Vec::new(),
    };
    let refusal = 'units: {
        for request in &requests {
            let placement = match fleet.place(request) {
                Ok(placement) => placement,
                Err(NoFit::Invalid(err)) => break 'units Refusal::Invalid(err.to_string()),
                Err(NoFit::NoCapacity) => break 'units Refusal::NoCapacity,
            };
            if before.is_none() && placement.nodes.len() > 1 {
                before = Some(fleet.clone());
            }
            for (i, mut part) in split_per_node(&placement).into_iter().enumerate() {
                let id = AllocationId::new().as_uuid();
                if i > 0 {
                    part.victims.clear();
                }
                match fleet.commit(allocation_key(id), &part) {
                    Ok(preempted) => {
                        let keys = preempted.iter().map(|a| Uuid::from_u128(a.key.0));
                        planned.victims.extend(keys);
                        planned.parts.push((id, part));
                    }
                    Err(err) => {
                        tracing::error!(error = %err, "A fresh placement did not commit.");
                        break 'units Refusal::NoCapacity;
                    }
                }
            }
        }
        return Ok(Ok(planned));
    };
    match before {
        Some(before) => *fleet = before,
        None if planned.parts.is_empty() => {}
        None => {
            return Err(ApiError::Internal {
                message: "a refused order left placements behind".into(),
            });
        }
    }
    Ok(Err(refusal))
}

/// An order with its allocations, nodes and GPUs.
pub async fn view_order(db: &DatabaseConnection, order: order::Model) -> ApiResult<OrderView> {
    view_orders(db, vec![order])
        .await?
        .pop()
        .ok_or_else(|| ApiError::Internal {
            message: "an order without its view".into(),
        })
}

/// Orders with their SKUs and allocations, in a fixed number of reads for any number of
/// orders (a page of 100 costs what one does).
pub async fn view_orders(
    db: &DatabaseConnection,
    orders: Vec<order::Model>,
) -> ApiResult<Vec<OrderView>> {
    let ids: Vec<Uuid> = orders.iter().map(|o| o.id).collect();
    let mut allocations =
        view_allocations(db, store::allocations_of_orders(db, &ids).await?).await?;
    let skus = skus_by_id(db, orders.iter().map(|o| o.sku_id)).await?;
    let mut views = Vec::with_capacity(orders.len());
    for order in orders {
        let (mine, rest) = allocations
            .into_iter()
            .partition(|a| a.allocation.order_id == order.id);
        allocations = rest;
        views.push(OrderView {
            sku: sku_of(&skus, order.sku_id)?,
            order,
            allocations: mine,
        });
    }
    Ok(views)
}

async fn skus_by_id(
    db: &DatabaseConnection,
    ids: impl Iterator<Item = Uuid>,
) -> ApiResult<BTreeMap<Uuid, sku::Model>> {
    let ids: Vec<Uuid> = ids
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(catalog::store::find_many(db, &ids)
        .await?
        .into_iter()
        .map(|s| (s.id, s))
        .collect())
}

fn sku_of(skus: &BTreeMap<Uuid, sku::Model>, id: Uuid) -> ApiResult<sku::Model> {
    skus.get(&id).cloned().ok_or_else(|| ApiError::Internal {
        message: format!("SKU {id} is missing"),
    })
}

pub async fn view_allocations(
    db: &DatabaseConnection,
    allocations: Vec<allocation::Model>,
) -> ApiResult<Vec<AllocationView>> {
    let ids: Vec<Uuid> = allocations.iter().map(|a| a.id).collect();
    let gpus = store::gpus_of(db, &ids).await?;
    let node_ids: Vec<Uuid> = allocations.iter().map(|a| a.node_id).collect();
    let nodes = store::nodes_by_id(db, &node_ids).await?;
    let skus = skus_by_id(db, allocations.iter().map(|a| a.sku_id)).await?;
    let mut out = Vec::new();
    for allocation in allocations {
        let node = nodes
            .iter()
            .find(|n| n.id == allocation.node_id)
            .cloned()
            .ok_or_else(|| ApiError::Internal {
                message: "allocation on a missing node".into(),
            })?;
        let mine = gpus
            .iter()
            .filter(|(a, _)| *a == allocation.id)
            .map(|(_, g)| g.clone())
            .collect();
        out.push(AllocationView {
            sku: sku_of(&skus, allocation.sku_id)?,
            allocation,
            node,
            gpus: mine,
        });
    }
    Ok(out)
}

/// `orders`: the caller's tenant's orders (operators: everyone's).
pub async fn list_orders(
    db: &DatabaseConnection,
    actor: &Principal,
    status: Option<OrderStatus>,
    page: Page,
) -> ApiResult<PageOf<OrderView>> {
    actor.require_user()?;
    let orders = store::orders_page(db, actor.tenant_scope_or_all(), status, page).await?;
    Ok(PageOf {
        items: view_orders(db, orders.items).await?,
        has_next: orders.has_next,
        has_previous: orders.has_previous,
    })
}

/// `allocations`.
pub async fn list_allocations(
    db: &DatabaseConnection,
    actor: &Principal,
    status: Option<AllocationStatus>,
    page: Page,
) -> ApiResult<PageOf<AllocationView>> {
    actor.require_user()?;
    let rows = store::allocations_page(db, actor.tenant_scope_or_all(), status, page).await?;
    Ok(PageOf {
        items: view_allocations(db, rows.items).await?,
        has_next: rows.has_next,
        has_previous: rows.has_previous,
    })
}

/// `allocation(id)` and `order(id)`: `NOT_FOUND` for another tenant's ids.
pub async fn get_allocation(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<AllocationView> {
    actor.require_user()?;
    let row = store::find_allocation(db, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("allocation"))?;
    view_allocations(db, vec![row])
        .await?
        .pop()
        .ok_or_else(|| ApiError::not_found("allocation"))
}

/// The live allocations on `nodes` (operator): what a drain would wait for.
pub async fn live_on_nodes(
    db: &DatabaseConnection,
    actor: &Principal,
    nodes: &[Uuid],
) -> ApiResult<Vec<AllocationView>> {
    actor.require_operator()?;
    let rows = store::live_on_nodes(db, nodes).await?;
    view_allocations(db, rows).await
}

pub async fn get_order(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<OrderView> {
    actor.require_user()?;
    let order = store::find_order(db, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("order"))?;
    view_order(db, order).await
}
