//! The operator console: fleet overview, node states, quotas, tenant suspension and the
//! audit log.

use async_graphql::connection::Connection;
use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{audit_log, quota};
use neocloud_schema::ids::{NodeId, TenantId};
use neocloud_schema::vocabulary::{NodeState, QuotaScope, TenantStatus};

use super::nodes::Node;
use super::scalars::{GqlGpuHealth, GqlNodeState, connection, parse_id, to_id};
use super::tenants::Tenant;
use crate::audit;
use crate::fleet;
use crate::ordering::quota as quotas;
use crate::pagination::Page;
use crate::tenancy;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(
    remote = "neocloud_schema::vocabulary::QuotaScope",
    name = "QuotaScope"
)]
pub enum GqlQuotaScope {
    GpuModel,
    Sku,
    Region,
    Allocations,
    /// GB of live volumes, in one region (`value`) or all (empty).
    StorageGb,
    /// Live volumes.
    Volumes,
}

#[derive(SimpleObject)]
pub struct Quota {
    pub id: ID,
    pub tenant_id: ID,
    pub scope: GqlQuotaScope,
    /// The model code, SKU id or region; empty for ALLOCATIONS.
    pub value: String,
    /// The limit, in `unit`.
    pub max: i64,
    /// What `max` counts: `GPU-equivalent` (a whole GPU 1, a MIG slice its compute share,
    /// a fraction its milli-GPUs, a node its GPUs: hardware, not SKU units), or
    /// `allocation` for ALLOCATIONS, `GB` for STORAGE_GB, `volume` for VOLUMES.
    pub unit: String,
    /// What the tenant holds against this quota now, in `unit` (an exact decimal).
    pub used: String,
    pub updated_at: DateTime<Utc>,
}

impl Quota {
    fn new(q: quota::Model, used: String) -> Self {
        Quota {
            used,
            id: to_id(q.id),
            tenant_id: to_id(q.tenant_id),
            scope: q.scope.into(),
            value: q.scope_value,
            max: q.max_value,
            unit: match q.scope {
                QuotaScope::Allocations => "allocation",
                QuotaScope::StorageGb => "GB",
                QuotaScope::Volumes => "volume",
                _ => "GPU-equivalent",
            }
            .to_owned(),
            updated_at: q.updated_at,
        }
    }
}

#[derive(InputObject)]
pub struct SetQuotaInput {
    pub tenant_id: ID,
    pub scope: GqlQuotaScope,
    #[graphql(default)]
    pub value: String,
    /// A negative value removes the quota.
    pub max: i64,
}

#[derive(SimpleObject)]
pub struct SetQuotaPayload {
    /// Null when the quota was removed.
    pub quota: Option<Quota>,
}

#[derive(SimpleObject)]
pub struct AuditEntry {
    pub id: ID,
    pub at: DateTime<Utc>,
    pub actor_key_id: Option<ID>,
    pub actor_role: String,
    pub tenant_id: Option<ID>,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    /// JSON of the object before the change.
    pub before: Option<String>,
    pub after: Option<String>,
    /// Place in the global hash chain (null until sealed, within seconds).
    pub seq: Option<i64>,
    /// SHA-256 (hex) over the previous entry's hash, `seq` and this entry
    /// (`neocloud admin verify-audit` proves the chain).
    pub hash: Option<String>,
    /// Place in its tenant's chain.
    pub tenant_seq: Option<i64>,
    pub tenant_hash: Option<String>,
}

impl From<audit_log::Model> for AuditEntry {
    fn from(e: audit_log::Model) -> Self {
        AuditEntry {
            id: to_id(e.id),
            at: e.at,
            actor_key_id: e.actor_key_id.map(to_id),
            actor_role: e.actor_role,
            tenant_id: e.tenant_id.map(to_id),
            action: e.action,
            object_type: e.object_type,
            object_id: e.object_id,
            before: e.before.map(|v| v.to_string()),
            after: e.after.map(|v| v.to_string()),
            seq: e.seq,
            hash: e.hash,
            tenant_seq: e.tenant_seq,
            tenant_hash: e.tenant_hash,
        }
    }
}

#[derive(InputObject, Default)]
pub struct AuditFilter {
    pub tenant_id: Option<ID>,
    pub action: Option<String>,
    pub object_type: Option<String>,
    pub object_id: Option<String>,
}

#[derive(SimpleObject)]
pub struct CountBy {
    pub key: String,
    pub count: u64,
}

#[derive(SimpleObject)]
pub struct CapacityByModel {
    pub region: String,
    pub gpu_model: String,
    pub gpus: u64,
    /// Allocated GPU-equivalents (MIG slices and fractions count their share).
    pub allocated_gpus: String,
    /// allocated / total, as a decimal string.
    pub allocated_share: String,
}

#[derive(SimpleObject)]
pub struct FleetOverview {
    pub nodes_by_state: Vec<CountBy>,
    pub gpus_by_health: Vec<CountBy>,
    pub capacity: Vec<CapacityByModel>,
}

#[derive(SimpleObject)]
pub struct GpuHealthPayload {
    pub uuid: String,
    pub health: GqlGpuHealth,
    pub changed_at: DateTime<Utc>,
}

#[derive(Default)]
pub struct ConsoleQuery;

#[Object]
impl ConsoleQuery {
    /// Nodes by state, GPUs by health, and the allocated share per region and model
    /// (operator).
    async fn fleet_overview(&self, ctx: &Context<'_>) -> Result<FleetOverview> {
        let o = fleet::overview(super::db(ctx)?, super::principal(ctx)?).await?;
        let count = |rows: Vec<(String, u64)>| {
            rows.into_iter()
                .map(|(key, count)| CountBy { key, count })
                .collect()
        };
        Ok(FleetOverview {
            nodes_by_state: count(o.nodes_by_state),
            gpus_by_health: count(o.gpus_by_health),
            capacity: o
                .capacity
                .into_iter()
                .map(|c| {
                    let allocated = rust_decimal::Decimal::from(c.allocated_milli)
                        / rust_decimal::Decimal::ONE_THOUSAND;
                    let share = if c.gpus == 0 {
                        rust_decimal::Decimal::ZERO
                    } else {
                        (allocated / rust_decimal::Decimal::from(c.gpus)).round_dp(4)
                    };
                    CapacityByModel {
                        region: c.region,
                        gpu_model: c.gpu_model,
                        gpus: c.gpus,
                        allocated_gpus: allocated.normalize().to_string(),
                        allocated_share: share.normalize().to_string(),
                    }
                })
                .collect(),
        })
    }

    /// A tenant's quotas: the caller's own, or `tenantId`'s for operators.
    async fn quotas(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Vec<Quota>> {
        let tenant: Option<TenantId> = tenant_id.map(|id| parse_id("tenantId", &id)).transpose()?;
        let rows = quotas::list_quotas(super::db(ctx)?, super::principal(ctx)?, tenant).await?;
        Ok(rows
            .into_iter()
            .map(|(q, used)| Quota::new(q, used))
            .collect())
    }

    /// Who did what, oldest first (operators: everything; tenant admins: their tenant).
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn audit_log(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        filter: Option<AuditFilter>,
    ) -> Result<Connection<String, AuditEntry>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let filter = filter.unwrap_or_default();
        let filter = audit::Filter {
            tenant_id: filter
                .tenant_id
                .map(|id| parse_id("filter.tenantId", &id))
                .transpose()?,
            action: filter.action,
            object_type: filter.object_type,
            object_id: filter.object_id,
        };
        let result = audit::page(super::db(ctx)?, super::principal(ctx)?, filter, page).await?;
        Ok(connection(result, |e| e.id.into(), AuditEntry::from))
    }
}

#[derive(Default)]
pub struct ConsoleMutation;

#[Object]
impl ConsoleMutation {
    /// Stops new placements on a node; what runs there keeps running (operator, or the
    /// node's provider).
    async fn drain_node(&self, ctx: &Context<'_>, id: ID) -> Result<Node> {
        let id: NodeId = parse_id("id", &id)?;
        let (node, gpus) = fleet::set_node_state(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            NodeState::Draining,
            super::now(ctx)?,
        )
        .await?;
        Ok(Node::new(node, gpus))
    }

    /// Takes a node out of the fleet for good once no allocation runs there (operator, or
    /// the node's provider): `INVALID_STATE` while any does. Its history stays.
    async fn retire_node(&self, ctx: &Context<'_>, id: ID) -> Result<Node> {
        let id: NodeId = parse_id("id", &id)?;
        let (node, gpus) = fleet::retire_node(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            super::now(ctx)?,
        )
        .await?;
        Ok(Node::new(node, gpus))
    }

    /// Sets a node active, draining or down (operator; the node's provider: active or
    /// draining). A retired node stays retired.
    async fn set_node_state(&self, ctx: &Context<'_>, id: ID, state: GqlNodeState) -> Result<Node> {
        let id: NodeId = parse_id("id", &id)?;
        let (node, gpus) = fleet::set_node_state(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            state.into(),
            super::now(ctx)?,
        )
        .await?;
        Ok(Node::new(node, gpus))
    }

    /// Marks a GPU repaired (`OK`) or takes it out of service by hand (operator).
    async fn set_gpu_health(
        &self,
        ctx: &Context<'_>,
        uuid: String,
        health: GqlGpuHealth,
        #[graphql(default)] reason: String,
    ) -> Result<GpuHealthPayload> {
        let gpu = fleet::set_gpu_health(
            super::db(ctx)?,
            super::principal(ctx)?,
            &uuid,
            health.into(),
            &reason,
            super::now(ctx)?,
        )
        .await?;
        Ok(GpuHealthPayload {
            uuid: gpu.uuid,
            health: gpu.health.into(),
            changed_at: gpu.health_changed_at,
        })
    }

    /// Creates, changes or (with a negative max) removes a tenant's quota (operator).
    async fn set_quota(&self, ctx: &Context<'_>, input: SetQuotaInput) -> Result<SetQuotaPayload> {
        let tenant: TenantId = parse_id("tenantId", &input.tenant_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let quota = quotas::set_quota(
            db,
            principal,
            tenant,
            input.scope.into(),
            &input.value,
            input.max,
            super::now(ctx)?,
        )
        .await?;
        let Some(quota) = quota else {
            return Ok(SetQuotaPayload { quota: None });
        };
        let used = quotas::list_quotas(db, principal, Some(tenant))
            .await?
            .into_iter()
            .find(|(q, _)| q.id == quota.id)
            .map_or_else(|| "0".to_owned(), |(_, used)| used);
        Ok(SetQuotaPayload {
            quota: Some(Quota::new(quota, used)),
        })
    }

    /// Blocks new orders of a tenant; running allocations continue (operator).
    async fn suspend_tenant(
        &self,
        ctx: &Context<'_>,
        id: ID,
        #[graphql(default)] reason: String,
    ) -> Result<Tenant> {
        let id: TenantId = parse_id("id", &id)?;
        let t = tenancy::set_status(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            TenantStatus::Suspended,
            &reason,
            super::now(ctx)?,
        )
        .await?;
        Ok(Tenant(t))
    }

    /// Lets a suspended tenant order again (operator).
    async fn resume_tenant(&self, ctx: &Context<'_>, id: ID) -> Result<Tenant> {
        let id: TenantId = parse_id("id", &id)?;
        let t = tenancy::set_status(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            TenantStatus::Active,
            "",
            super::now(ctx)?,
        )
        .await?;
        Ok(Tenant(t))
    }
}
