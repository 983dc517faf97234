//! Usage: `usage(from, to, groupBy, tenantId)` for tenants (operators name the tenant) and
//! `ingestHealth` for operators.

use async_graphql::{Context, Enum, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::Arc;

use async_graphql::dataloader::DataLoader;
use neocloud_metering::rating::period::round;
use neocloud_metering::rating::unit_cost::UnitCosts;
use neocloud_metering::{ingest, usage};

use super::loaders::{CostsOf, UsageCosts};
use super::scalars::{tenant_arg, to_id};
use sea_orm::TransactionTrait;
use uuid::Uuid;

use crate::audit;
use crate::error::ApiError;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum UsageGroupBy {
    Sku,
    Allocation,
    Label,
    Day,
    /// The UTC hour, e.g. `2026-12-06T14:00:00Z` (a query spans at most 31 days).
    Hour,
}

impl From<UsageGroupBy> for usage::GroupBy {
    fn from(g: UsageGroupBy) -> Self {
        match g {
            UsageGroupBy::Sku => usage::GroupBy::Sku,
            UsageGroupBy::Allocation => usage::GroupBy::Allocation,
            UsageGroupBy::Label => usage::GroupBy::Label,
            UsageGroupBy::Day => usage::GroupBy::Day,
            UsageGroupBy::Hour => usage::GroupBy::Hour,
        }
    }
}

/// One group of usage. Quantities are exact decimal strings.
#[derive(SimpleObject)]
pub struct UsageRow {
    /// The group's key parts joined by `|`, in `groupBy` order.
    pub key: String,
    pub keys: Vec<String>,
    /// Unit-seconds of the SKU allocated (one GPU, MIG slice, fraction or node held for a
    /// second is one), minus time on failed hardware: what ALLOCATED bills.
    pub allocated_seconds: String,
    /// SM-active GPU-seconds.
    pub active_seconds: String,
    pub memory_gib_seconds: String,
    pub energy_kwh: String,
    /// Unit-seconds on failed hardware (a node: the share of its GPUs that failed),
    /// credited instead of billed.
    pub sla_credit_seconds: String,
    /// What the row's usage cost, in `Usage.currency`, before tax: each quantity at the
    /// average its billing period's invoice charged per unit of its SKU and metric (tiers,
    /// packages, flat fees and minimum-duration top-ups averaged over the usage they
    /// priced; SLA credit negative), so a period's rows add up to its usage lines.
    /// Commitment discounts and credits stay on the invoice; a voided invoice's period
    /// costs nothing. Rounded half-even to 6 decimal places.
    pub cost: String,
}

#[derive(SimpleObject)]
pub struct Usage {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The currency of the rows' costs: the tenant's.
    pub currency: String,
    pub rows: Vec<UsageRow>,
}

/// Decimal places of a usage row's cost (an hour of a MIG slice can cost under a cent).
const COST_DP: u32 = 6;

#[derive(SimpleObject)]
pub struct AgentStream {
    pub agent_id: String,
    pub boot_id: ID,
    pub last_seq: i64,
    pub gaps: i64,
    pub lag_seconds: i64,
    pub last_received_at: DateTime<Utc>,
    /// Device-seconds this stream reported that another batch had already counted (a
    /// second agent on the node, a resent window): counted once, shown here.
    pub overlap_seconds: i64,
}

/// A journaled batch that could not be aggregated, moved aside so the rest goes on.
#[derive(SimpleObject)]
pub struct QuarantinedBatch {
    pub batch_id: ID,
    pub node_id: ID,
    pub reason: String,
    pub quarantined_at: DateTime<Utc>,
}

/// A reported value ingest clamped or did not count.
#[derive(SimpleObject)]
pub struct IngestAnomaly {
    pub batch_id: ID,
    pub node_id: ID,
    /// `energy_clamped` (more energy than the GPU's power limit allows) or
    /// `mig_instance_unattributed` (a second MIG instance claiming one allocation) or
    /// `process_util_clamped` (a GPU's processes reporting more than 100% together).
    pub kind: String,
    pub device: String,
    pub detail: String,
    pub recorded_at: DateTime<Utc>,
}

impl From<ingest::Quarantined> for QuarantinedBatch {
    fn from(q: ingest::Quarantined) -> Self {
        QuarantinedBatch {
            batch_id: to_id(q.batch_id),
            node_id: to_id(q.node_id),
            reason: q.reason,
            quarantined_at: q.quarantined_at,
        }
    }
}

impl From<ingest::IngestAnomaly> for IngestAnomaly {
    fn from(a: ingest::IngestAnomaly) -> Self {
        IngestAnomaly {
            batch_id: to_id(a.batch_id),
            node_id: to_id(a.node_id),
            kind: a.kind,
            device: a.device,
            detail: a.detail,
            recorded_at: a.recorded_at,
        }
    }
}

/// How many quarantined batches and anomalies `ingestHealth` lists, newest first.
const INGEST_HEALTH_LIST: u64 = 100;

#[derive(SimpleObject)]
pub struct IngestHealth {
    pub agents: Vec<AgentStream>,
    /// The newest quarantined batches (at most 100).
    pub quarantined: Vec<QuarantinedBatch>,
    /// The newest anomalies (at most 100).
    pub anomalies: Vec<IngestAnomaly>,
    /// Batches acknowledged and not yet in usage buckets (the ingest journal's backlog):
    /// near zero while aggregation keeps up; every usage read aggregates it first.
    pub pending_batches: i64,
    /// Messages a transport delivered that can never be ingested, newest first (at most
    /// 100): set aside so the stream goes on.
    pub rejected: Vec<RejectedMessage>,
    /// The JetStream consumer ingest workers share; null without NATS (or while NATS does
    /// not answer).
    pub stream: Option<IngestStream>,
    /// The hostname of every node the quarantined, anomaly and rejected lists name.
    pub hosts: Vec<NodeHost>,
}

/// A node's hostname.
#[derive(SimpleObject)]
pub struct NodeHost {
    pub node_id: ID,
    pub hostname: String,
}

impl From<(Uuid, String)> for NodeHost {
    fn from((id, hostname): (Uuid, String)) -> Self {
        NodeHost {
            node_id: to_id(id),
            hostname,
        }
    }
}

#[derive(SimpleObject)]
pub struct RejectedMessage {
    pub id: ID,
    /// `nats`.
    pub transport: String,
    pub subject: String,
    /// `Nats-Msg-Id` (`<agent>:<boot>:<seq>`), when it had one.
    pub message_id: Option<String>,
    /// The node the subject names, when it names one.
    pub node_id: Option<ID>,
    pub reason: String,
    pub rejected_at: DateTime<Utc>,
}

impl From<neocloud_schema::entity::ingest_rejection::Model> for RejectedMessage {
    fn from(r: neocloud_schema::entity::ingest_rejection::Model) -> Self {
        RejectedMessage {
            id: to_id(r.id),
            transport: r.transport,
            subject: r.subject,
            message_id: r.message_id,
            node_id: r.node_id.map(to_id),
            reason: r.reason,
            rejected_at: r.rejected_at,
        }
    }
}

/// The shared JetStream consumer's backlog.
#[derive(SimpleObject)]
pub struct IngestStream {
    /// Messages not yet delivered to a worker.
    pub pending: i64,
    /// Messages delivered and not yet acknowledged.
    pub ack_pending: i64,
    /// Messages delivered more than once and not yet acknowledged.
    pub redelivered: i64,
    /// Workers waiting for messages.
    pub waiting: i64,
}

impl From<async_nats::jetstream::consumer::Info> for IngestStream {
    fn from(info: async_nats::jetstream::consumer::Info) -> Self {
        // Counts beyond i64 saturate.
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let usize_count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        IngestStream {
            pending: count(info.num_pending),
            ack_pending: usize_count(info.num_ack_pending),
            redelivered: usize_count(info.num_redelivered),
            waiting: usize_count(info.num_waiting),
        }
    }
}

/// The grouping of a usage read, once each, after checking the range it spans.
fn checked_grouping(
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    group_by: Vec<UsageGroupBy>,
) -> Result<Vec<usage::GroupBy>, ApiError> {
    if to <= from {
        return Err(ApiError::invalid("to", "must be after from"));
    }
    if (to - from).num_days() > usage::MAX_RANGE_DAYS {
        let days = usage::MAX_RANGE_DAYS;
        return Err(ApiError::invalid(
            "to",
            format!("a query spans at most {days} days"),
        ));
    }
    let mut group: Vec<usage::GroupBy> = Vec::new();
    for g in group_by {
        let g = g.into();
        if !group.contains(&g) {
            group.push(g);
        }
    }
    if group.contains(&usage::GroupBy::Hour)
        && (to - from).num_days() > usage::MAX_HOURLY_RANGE_DAYS
    {
        let days = usage::MAX_HOURLY_RANGE_DAYS;
        return Err(ApiError::invalid(
            "to",
            format!("grouped by hour, a query spans at most {days} days"),
        ));
    }
    Ok(group)
}

/// The unit costs of `key`, read once per request (`loaders::UsageCosts`).
async fn unit_costs(ctx: &Context<'_>, key: CostsOf) -> Result<Arc<UnitCosts>> {
    let loader = ctx.data::<DataLoader<UsageCosts>>()?;
    let found = loader.load_one(key).await;
    Ok(found
        .map_err(|e| async_graphql::Error::from(&*e))?
        .unwrap_or_default())
}

#[derive(Default)]
pub struct UsageQuery;

#[Object]
impl UsageQuery {
    /// What the tenant used in `[from, to)`, grouped as asked.
    async fn usage(
        &self,
        ctx: &Context<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        #[graphql(default)] group_by: Vec<UsageGroupBy>,
        tenant_id: Option<ID>,
    ) -> Result<Usage> {
        let tenant = super::principal(ctx)?.acting_tenant(tenant_arg(tenant_id)?)?;
        let group = checked_grouping((from, to), group_by)?;
        let db = super::db(ctx)?;
        ingest::settle(db).await.map_err(ApiError::from)?;
        let now = super::now(ctx)?;
        // Rating the open period is the costly part: only when a row's cost is asked for.
        let costed = ctx.look_ahead().field("rows").field("cost").exists();
        let currency = crate::tenancy::store::find(db, tenant)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(|| ApiError::not_found("tenant"))?
            .currency;
        let costs = if costed {
            unit_costs(ctx, CostsOf(tenant, from, to)).await?
        } else {
            Arc::default()
        };
        let rows = usage::usage_costed(db, tenant, (from, to), &group, now, costs.as_ref())
            .await
            .map_err(ApiError::from)?;
        Ok(Usage {
            from,
            to,
            currency,
            rows: rows
                .into_iter()
                .map(|r| UsageRow {
                    key: r.key.join("|"),
                    keys: r.key,
                    allocated_seconds: r.allocated_seconds.normalize().to_string(),
                    active_seconds: r.active_seconds.normalize().to_string(),
                    memory_gib_seconds: r.memory_gib_seconds.normalize().to_string(),
                    energy_kwh: r.energy_kwh.normalize().to_string(),
                    sla_credit_seconds: r.sla_credit_seconds.normalize().to_string(),
                    cost: round(r.cost, COST_DP).normalize().to_string(),
                })
                .collect(),
        })
    }

    /// Completeness of every agent's stream of batches (operator).
    async fn ingest_health(&self, ctx: &Context<'_>) -> Result<IngestHealth> {
        super::principal(ctx)?.require_operator()?;
        let db = super::db(ctx)?;
        let streams = ingest::stream_health(db, super::now(ctx)?)
            .await
            .map_err(ApiError::from)?;
        let pending = ingest::journal_backlog(db).await.map_err(ApiError::from)?;
        let quarantined = ingest::quarantined(db, INGEST_HEALTH_LIST)
            .await
            .map_err(ApiError::from)?;
        let anomalies = ingest::anomalies(db, INGEST_HEALTH_LIST)
            .await
            .map_err(ApiError::from)?;
        let rejected = ingest::rejections::newest(db, INGEST_HEALTH_LIST)
            .await
            .map_err(ApiError::from)?;
        let jetstream = ctx
            .data::<Option<async_nats::jetstream::Context>>()
            .ok()
            .and_then(Option::as_ref);
        let stream = match jetstream {
            Some(js) => crate::nats::consumer::backlog(js).await,
            None => None,
        };
        let named: HashSet<Uuid> = quarantined
            .iter()
            .map(|q| q.node_id)
            .chain(anomalies.iter().map(|a| a.node_id))
            .chain(rejected.iter().filter_map(|r| r.node_id))
            .collect();
        let hosts = crate::fleet::hostnames(db, super::principal(ctx)?, named).await?;
        Ok(IngestHealth {
            hosts: hosts.into_iter().map(NodeHost::from).collect(),
            stream: stream.map(IngestStream::from),
            rejected: rejected.into_iter().map(RejectedMessage::from).collect(),
            pending_batches: i64::try_from(pending).unwrap_or(i64::MAX),
            quarantined: quarantined
                .into_iter()
                .map(QuarantinedBatch::from)
                .collect(),
            anomalies: anomalies.into_iter().map(IngestAnomaly::from).collect(),
            agents: streams
                .into_iter()
                .map(|s| AgentStream {
                    agent_id: s.agent_id,
                    boot_id: to_id(s.boot_id),
                    last_seq: s.last_seq,
                    gaps: s.gaps,
                    lag_seconds: s.lag_seconds,
                    last_received_at: s.last_received_at,
                    overlap_seconds: s.overlap_seconds,
                })
                .collect(),
        })
    }
}

#[derive(Default)]
pub struct IngestMutation;

#[Object]
impl IngestMutation {
    /// Puts a quarantined batch back in the ingest journal, once what stopped its
    /// aggregation is fixed (operator; audited). False when no such batch is quarantined.
    async fn requeue_quarantined_batch(&self, ctx: &Context<'_>, batch_id: ID) -> Result<bool> {
        let principal = super::principal(ctx)?;
        principal.require_operator()?;
        let id: uuid::Uuid = super::scalars::parse_id("batchId", &batch_id)?;
        let db = super::db(ctx)?;
        let txn = db.begin().await.map_err(ApiError::from)?;
        let requeued = ingest::requeue(&txn, id).await.map_err(ApiError::from)?;
        if requeued {
            audit::record(
                &txn,
                principal,
                audit::Entry {
                    tenant_id: None,
                    action: "ingest_batch.requeue",
                    object_type: "ingest_batch",
                    object_id: id.to_string(),
                    before: Some(serde_json::json!({"state": "quarantined"})),
                    after: Some(serde_json::json!({"state": "pending"})),
                },
            )
            .await
            .map_err(ApiError::from)?;
        }
        txn.commit().await.map_err(ApiError::from)?;
        Ok(requeued)
    }
}
