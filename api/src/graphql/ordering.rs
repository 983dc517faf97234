//! Ordering: `placeOrder`, `releaseAllocation`, `releaseOrder`, `orders`, `order`,
//! `allocations`, `allocation`.

use std::collections::HashMap;
use std::sync::Arc;

use async_graphql::connection::Connection;
use async_graphql::{ComplexObject, Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::health;
use neocloud_schema::entity::{allocation, gpu, sku};

use super::scalars::{connection, parse_id, to_id};
use crate::error::ApiError;
use crate::ordering::{self, AllocationView, OrderView, PlaceOrder, utilization};
use crate::pagination::Page;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::TopologyLevel",
    name = "TopologyLevel"
)]
pub enum GqlTopologyLevel {
    Node,
    NvlinkDomain,
    Rack,
    Any,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::AllocationClass",
    name = "AllocationClass"
)]
pub enum GqlClass {
    OnDemand,
    /// Placed and billed as ON_DEMAND until reservations exist (docs/ordering.md).
    Reserved,
    Spot,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::OrderStatus",
    name = "OrderStatus"
)]
pub enum GqlOrderStatus {
    Pending,
    Active,
    Released,
    Failed,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::AllocationStatus",
    name = "AllocationStatus"
)]
pub enum GqlAllocationStatus {
    Active,
    Preempting,
    Released,
}

#[derive(InputObject)]
pub struct TopologyInput {
    pub level: GqlTopologyLevel,
    /// Fail rather than spread wider (default true).
    #[graphql(default = true)]
    pub required: bool,
}

#[derive(InputObject, SimpleObject, Clone)]
#[graphql(input_name = "LabelInput")]
pub struct Label {
    pub key: String,
    pub value: String,
}

#[derive(InputObject)]
pub struct PlaceOrderInput {
    /// The SKU id from the catalog.
    pub sku: ID,
    #[graphql(default = 1)]
    pub count: i32,
    pub topology: Option<TopologyInput>,
    /// No other tenant on the same node (or NVLink domain, with that topology level).
    #[graphql(default)]
    pub exclusive: bool,
    #[graphql(default_with = "GqlClass::OnDemand")]
    pub class: GqlClass,
    /// Refuse the order if it costs more per hour (decimal string).
    pub max_price_per_hour: Option<String>,
    #[graphql(default)]
    pub labels: Vec<Label>,
    /// Retrying with the same key and input returns the same order.
    pub idempotency_key: Option<String>,
    /// The SSH keys (`sshKeys`) to hand to the provisioner; omitted: every key the tenant
    /// has now; empty: none.
    pub ssh_key_ids: Option<Vec<ID>>,
}

/// Where an allocation runs.
#[derive(SimpleObject)]
pub struct AllocationNode {
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
}

#[derive(SimpleObject)]
#[graphql(complex)]
pub struct AllocatedGpu {
    pub uuid: String,
    pub index: i32,
    pub model: String,
    /// The GPU's health now: time on a FAILED GPU is credited, not billed.
    pub health: super::scalars::GqlGpuHealth,
    pub health_changed_at: DateTime<Utc>,
    #[graphql(skip)]
    gpu: gpu::Model,
    /// The allocation holding it: the history shows only what happened while it held the
    /// GPU, the utilization only its own samples.
    #[graphql(skip)]
    allocation: Arc<allocation::Model>,
    /// The allocation's recent minutes, shared with its other GPUs.
    #[graphql(skip)]
    recent: Arc<RecentMinutes>,
    /// A MIG slice or a fraction: the GPU is shared with others.
    #[graphql(skip)]
    shared: bool,
    /// The GPU's history, read once for `events` and `healthHistory` together.
    #[graphql(skip)]
    history: tokio::sync::OnceCell<GpuHistory>,
}

type GpuHistory = (Vec<health::EventRecord>, Vec<health::HealthSpan>);

/// An XID or ECC event of a GPU, as its agent reported it.
#[derive(SimpleObject)]
pub struct GpuEvent {
    pub at: DateTime<Utc>,
    /// `xid`, `ecc_single_bit` or `ecc_double_bit`.
    pub kind: String,
    /// The XID number (shared/reference/xid.md), or the ECC counter's code.
    pub code: i64,
    /// What it did to the GPU's health; null for nothing.
    pub effect: Option<super::scalars::GqlGpuHealth>,
}

/// A stretch of time the GPU was DEGRADED or FAILED.
#[derive(SimpleObject)]
pub struct GpuHealthSpan {
    pub health: super::scalars::GqlGpuHealth,
    pub from: DateTime<Utc>,
    /// Null: still so (or the allocation still holds the GPU).
    pub to: Option<DateTime<Utc>>,
    /// The event that caused it (`xid 79`) or the operator's reason.
    pub cause: String,
}

impl From<&health::EventRecord> for GpuEvent {
    fn from(e: &health::EventRecord) -> Self {
        GpuEvent {
            at: e.at,
            kind: serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            code: i64::from(e.code),
            effect: e.effect.map(Into::into),
        }
    }
}

impl From<&health::HealthSpan> for GpuHealthSpan {
    fn from(s: &health::HealthSpan) -> Self {
        GpuHealthSpan {
            health: s.health.into(),
            from: s.from,
            to: s.to,
            cause: s.cause.clone(),
        }
    }
}

#[ComplexObject]
impl AllocatedGpu {
    /// XID and ECC events of the GPU while this allocation held it, newest first (at most
    /// 100). On a shared GPU (a MIG slice, a fraction) only the events that changed the
    /// GPU's health: a neighbour's application errors are the neighbour's.
    async fn events(&self, ctx: &Context<'_>) -> Result<Vec<GpuEvent>> {
        Ok(self.history(ctx).await?.0.iter().map(Into::into).collect())
    }

    /// When the GPU was DEGRADED or FAILED while this allocation held it, oldest first,
    /// clipped to the allocation's lifetime. FAILED time is SLA credit, not usage.
    async fn health_history(&self, ctx: &Context<'_>) -> Result<Vec<GpuHealthSpan>> {
        Ok(self.history(ctx).await?.1.iter().map(Into::into).collect())
    }

    /// This GPU's activity for the allocation minute by minute over the last `minutes` of
    /// its life (1 to 1,440; default 60): only minutes its agent reported. On a shared GPU
    /// (a MIG slice, a fraction) the allocation's own share, never a neighbour's.
    #[graphql(complexity = 40)]
    async fn utilization(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 60)] minutes: i64,
    ) -> Result<Vec<UtilizationMinute>> {
        let recent = self.recent.read(ctx, &self.allocation, minutes).await?;
        // A shared GPU's samples are the allocation's slice or fraction, under its own id.
        let found = if self.shared {
            recent.all()
        } else {
            recent.of(&self.uuid)
        };
        Ok(found.into_iter().map(UtilizationMinute).collect())
    }
}

impl AllocatedGpu {
    async fn history(&self, ctx: &Context<'_>) -> Result<&GpuHistory> {
        let db = super::db(ctx)?;
        let (from, to) = (self.allocation.started_at, self.allocation.ended_at);
        let read = self
            .history
            .get_or_try_init(|| async {
                health::history(db, &self.gpu, from, to, self.shared)
                    .await
                    .map_err(ApiError::from)
            })
            .await;
        Ok(read?)
    }
}

#[derive(SimpleObject)]
pub struct SkuRef {
    pub id: ID,
    pub name: String,
}

pub struct Allocation(AllocationView, Arc<RecentMinutes>);

impl From<AllocationView> for Allocation {
    fn from(view: AllocationView) -> Self {
        Allocation(view, Arc::default())
    }
}

/// An allocation's recent minutes per window asked for, read once for the allocation and
/// all its GPUs in one answer (the portal asks for all of them every 15 s).
#[derive(Default)]
struct RecentMinutes(tokio::sync::Mutex<HashMap<i64, Arc<utilization::Recent>>>);

impl RecentMinutes {
    async fn read(
        &self,
        ctx: &Context<'_>,
        a: &allocation::Model,
        minutes: i64,
    ) -> Result<Arc<utilization::Recent>> {
        let mut read = self.0.lock().await;
        if let Some(recent) = read.get(&minutes) {
            return Ok(recent.clone());
        }
        let recent =
            Arc::new(utilization::recent(super::db(ctx)?, a, minutes, super::now(ctx)?).await?);
        read.insert(minutes, recent.clone());
        Ok(recent)
    }
}

#[Object]
impl Allocation {
    async fn id(&self) -> ID {
        to_id(self.0.allocation.id)
    }

    async fn order_id(&self) -> ID {
        to_id(self.0.allocation.order_id)
    }

    async fn sku(&self) -> SkuRef {
        sku_ref(&self.0.sku)
    }

    async fn class(&self) -> GqlClass {
        self.0.allocation.class.into()
    }

    async fn status(&self) -> GqlAllocationStatus {
        self.0.allocation.status.into()
    }

    async fn mig_profile(&self) -> Option<&str> {
        self.0.allocation.mig_profile.as_deref()
    }

    async fn mig_start_slot(&self) -> Option<i32> {
        self.0.allocation.mig_start_slot
    }

    async fn milli_gpu(&self) -> Option<i32> {
        self.0.allocation.milli_gpu
    }

    /// When billing starts (after a preempted spot allocation's notice window, if any).
    async fn started_at(&self) -> DateTime<Utc> {
        self.0.allocation.started_at
    }

    /// For a preempted allocation: when it will be ended.
    async fn preempt_at(&self) -> Option<DateTime<Utc>> {
        self.0.allocation.preempt_at
    }

    async fn ended_at(&self) -> Option<DateTime<Utc>> {
        self.0.allocation.ended_at
    }

    async fn node(&self) -> AllocationNode {
        let n = &self.0.node;
        AllocationNode {
            hostname: n.hostname.clone(),
            region: n.region.clone(),
            zone: n.zone.clone(),
            rack: n.rack.clone(),
            nvlink_domain: n.nvlink_domain.clone(),
        }
    }

    async fn gpus(&self) -> Vec<AllocatedGpu> {
        let a = Arc::new(self.0.allocation.clone());
        let shared = a.mig_profile.is_some() || a.milli_gpu.is_some();
        self.0
            .gpus
            .iter()
            .map(|g| AllocatedGpu {
                uuid: g.uuid.clone(),
                index: g.index,
                model: g.model.clone(),
                health: g.health.into(),
                health_changed_at: g.health_changed_at,
                gpu: g.clone(),
                allocation: a.clone(),
                recent: self.1.clone(),
                shared,
                history: tokio::sync::OnceCell::new(),
            })
            .collect()
    }

    async fn labels(&self) -> Vec<Label> {
        labels_of(&self.0.allocation.labels)
    }

    /// How to reach it, once the operator's provisioner has handed it over.
    async fn access(&self) -> super::access::AllocationAccess {
        super::access::access_of(&self.0.allocation)
    }

    /// Its GPUs' activity minute by minute over the last `minutes` of its life (1 to
    /// 1,440; default 60), from its usage buckets: only minutes its agent reported.
    #[graphql(complexity = 40)]
    async fn utilization(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 60)] minutes: i64,
    ) -> Result<Vec<UtilizationMinute>> {
        let recent = self.1.read(ctx, &self.0.allocation, minutes).await?;
        Ok(recent.all().into_iter().map(UtilizationMinute).collect())
    }
}

/// One minute of an allocation's samples, over all its GPUs (MIG slices, fractions) or of
/// one of them.
pub struct UtilizationMinute(neocloud_metering::usage::SampledMinute);

#[Object]
impl UtilizationMinute {
    /// The minute's start.
    async fn minute(&self) -> DateTime<Utc> {
        self.0.minute
    }

    /// SM-active device-seconds, exact.
    async fn active_seconds(&self) -> String {
        self.0.active_seconds.normalize().to_string()
    }

    /// Device-seconds sampled (a second of each of eight GPUs is eight).
    async fn sampled_seconds(&self) -> i64 {
        self.0.sampled_seconds
    }

    /// `activeSeconds / sampledSeconds` as a percentage, to one decimal place (half even).
    async fn sm_active_pct(&self) -> String {
        let m = &self.0;
        if m.sampled_seconds <= 0 {
            return "0.0".into();
        }
        let pct = m.active_seconds * rust_decimal::Decimal::ONE_HUNDRED
            / rust_decimal::Decimal::from(m.sampled_seconds);
        format!("{:.1}", pct.round_dp(1))
    }

    /// Average memory in use per sampled device-second, in GiB, to two decimal places.
    async fn memory_gib(&self) -> String {
        let m = &self.0;
        if m.sampled_seconds <= 0 {
            return "0.00".into();
        }
        let gib = m.memory_gib_seconds / rust_decimal::Decimal::from(m.sampled_seconds);
        format!("{:.2}", gib.round_dp(2))
    }
}

/// Labels as a map, refusing a key given twice.
pub(super) fn label_map(
    labels: Vec<Label>,
) -> crate::error::ApiResult<std::collections::BTreeMap<String, String>> {
    let mut map = std::collections::BTreeMap::new();
    for label in labels {
        if map.insert(label.key.clone(), label.value).is_some() {
            return Err(ApiError::invalid(
                "labels",
                format!("`{}` appears twice", label.key),
            ));
        }
    }
    Ok(map)
}

pub(super) fn labels_of(value: &serde_json::Value) -> Vec<Label> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| Label {
                    key: k.clone(),
                    value: v.as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sku_ref(sku: &sku::Model) -> SkuRef {
    SkuRef {
        id: to_id(sku.id),
        name: sku.name.clone(),
    }
}

pub struct Order(OrderView);

#[Object]
impl Order {
    async fn id(&self) -> ID {
        to_id(self.0.order.id)
    }

    async fn status(&self) -> GqlOrderStatus {
        self.0.order.status.into()
    }

    async fn count(&self) -> i32 {
        self.0.order.count
    }

    async fn class(&self) -> GqlClass {
        self.0.order.class.into()
    }

    async fn idempotency_key(&self) -> &str {
        &self.0.order.idempotency_key
    }

    async fn labels(&self) -> Vec<Label> {
        labels_of(&self.0.order.labels)
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.0.order.created_at
    }

    /// The SSH keys the order hands to the provisioner (keys removed since are not shown).
    async fn ssh_keys(&self, ctx: &Context<'_>) -> Result<Vec<super::access::SshKey>> {
        let order = &self.0.order;
        let ids = crate::access::key_ids_of(order);
        let keys = crate::access::keys(super::db(ctx)?, order.tenant_id, &ids).await?;
        Ok(keys.into_iter().map(Into::into).collect())
    }

    async fn ended_at(&self) -> Option<DateTime<Utc>> {
        self.0.order.ended_at
    }

    async fn allocations(&self) -> Vec<Allocation> {
        self.0
            .allocations
            .iter()
            .cloned()
            .map(Allocation::from)
            .collect()
    }

    /// What the order's units cost an hour as they are billed now: `count` × the price of
    /// one unit-hour of its SKU on its class (the tenant's plan rate, its spot price for
    /// spot, or the list price), as an exact decimal in the SKU's currency.
    async fn price_per_hour(&self, ctx: &Context<'_>) -> Result<String> {
        let (db, now) = (super::db(ctx)?, super::now(ctx)?);
        let order = &self.0.order;
        let unit = (order.class, order.count);
        let price = ordering::hourly_price(db, order.tenant_id, &self.0.sku, unit, now).await?;
        Ok(price.to_string())
    }
}

#[derive(SimpleObject)]
pub struct PlaceOrderPayload {
    pub order: Order,
}

#[derive(SimpleObject)]
pub struct ReleaseOrderPayload {
    pub order: Order,
}

#[derive(Default)]
pub struct OrderingQuery;

#[Object]
impl OrderingQuery {
    /// The caller's orders, oldest first (operators: every tenant's).
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn orders(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        status: Option<GqlOrderStatus>,
    ) -> Result<Connection<String, Order>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let result = ordering::list_orders(
            super::db(ctx)?,
            super::principal(ctx)?,
            status.map(Into::into),
            page,
        )
        .await?;
        Ok(connection(result, |o| o.order.id.into(), Order))
    }

    async fn order(&self, ctx: &Context<'_>, id: ID) -> Result<Order> {
        let id = parse_id("id", &id)?;
        let view = ordering::get_order(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(Order(view))
    }

    /// The caller's allocations, oldest first.
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn allocations(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        status: Option<GqlAllocationStatus>,
    ) -> Result<Connection<String, Allocation>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let result = ordering::list_allocations(
            super::db(ctx)?,
            super::principal(ctx)?,
            status.map(Into::into),
            page,
        )
        .await?;
        Ok(connection(
            result,
            |a| a.allocation.id.into(),
            Allocation::from,
        ))
    }

    async fn allocation(&self, ctx: &Context<'_>, id: ID) -> Result<Allocation> {
        let id = parse_id("id", &id)?;
        let view = ordering::get_allocation(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(Allocation::from(view))
    }
}

#[derive(Default)]
pub struct OrderingMutation;

#[Object]
impl OrderingMutation {
    /// Orders capacity: placed at once, all or nothing, within quotas.
    async fn place_order(
        &self,
        ctx: &Context<'_>,
        input: PlaceOrderInput,
    ) -> Result<PlaceOrderPayload> {
        let topology = input.topology.unwrap_or(TopologyInput {
            level: GqlTopologyLevel::Any,
            required: false,
        });
        let labels = label_map(input.labels)?;
        let request = PlaceOrder {
            sku: parse_id("sku", &input.sku)?,
            count: input.count,
            topology_level: topology.level.into(),
            topology_required: topology.required,
            exclusive: input.exclusive,
            class: input.class.into(),
            max_price_per_hour: input.max_price_per_hour,
            labels,
            idempotency_key: input.idempotency_key,
            ssh_key_ids: input
                .ssh_key_ids
                .map(|ids| ids.iter().map(|id| parse_id("sshKeyIds", id)).collect())
                .transpose()?,
        };
        let view = super::ordering_service(ctx)?
            .place_order(super::db(ctx)?, super::principal(ctx)?, request)
            .await?;
        Ok(PlaceOrderPayload { order: Order(view) })
    }

    /// Ends one allocation now.
    async fn release_allocation(&self, ctx: &Context<'_>, id: ID) -> Result<Allocation> {
        let id = parse_id("id", &id)?;
        let db = super::db(ctx)?;
        let actor = super::principal(ctx)?;
        actor.require_user()?;
        let row = super::ordering_service(ctx)?
            .release_allocation(db, actor, id)
            .await?;
        let view = ordering::view_allocations(db, vec![row])
            .await?
            .pop()
            .ok_or_else(|| ApiError::not_found("allocation"))?;
        Ok(Allocation::from(view))
    }

    /// Ends every allocation of an order.
    async fn release_order(&self, ctx: &Context<'_>, id: ID) -> Result<ReleaseOrderPayload> {
        let id = parse_id("id", &id)?;
        let actor = super::principal(ctx)?;
        actor.require_user()?;
        let view = super::ordering_service(ctx)?
            .release_order(super::db(ctx)?, actor, id)
            .await?;
        Ok(ReleaseOrderPayload { order: Order(view) })
    }
}
