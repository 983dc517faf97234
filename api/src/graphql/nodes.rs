//! Nodes: `nodes`, `fleetTopology`, `gpuHistory` and `registerNode` (operator).

use std::sync::Arc;

use async_graphql::connection::Connection;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{gpu, node};

use super::reliability::Reliability;
use super::scalars::{
    GqlGpuHealth, GqlNodeState, GqlNodeVerification, connection, parse_id, to_id,
};
use crate::error::ApiError;
use crate::fleet::{self, GpuInput, NodeRegistration, topology};
use crate::nats::credentials::Authority;
use crate::pagination::Page;

pub struct Node {
    node: node::Model,
    gpus: Vec<gpu::Model>,
}

impl Node {
    pub fn new(node: node::Model, gpus: Vec<gpu::Model>) -> Node {
        Node { node, gpus }
    }
}

#[Object]
impl Node {
    async fn id(&self) -> ID {
        to_id(self.node.id)
    }

    async fn hostname(&self) -> &str {
        &self.node.hostname
    }

    async fn region(&self) -> &str {
        &self.node.region
    }

    async fn zone(&self) -> &str {
        &self.node.zone
    }

    /// The rack (InfiniBand leaf / rail group).
    async fn rack(&self) -> &str {
        &self.node.rack
    }

    /// The NVLink domain: one HGX board, or a multi-node domain such as an NVL72 rack.
    async fn nvlink_domain(&self) -> &str {
        &self.node.nvlink_domain
    }

    async fn gpu_model(&self) -> &str {
        &self.node.gpu_model
    }

    async fn mig_enabled(&self) -> bool {
        self.node.mig_enabled
    }

    /// Whether the node's GPUs are time-shared (sold in milli-GPU fractions).
    async fn shared_gpus(&self) -> bool {
        self.node.shared_gpus
    }

    async fn cpu_milli(&self) -> i64 {
        self.node.cpu_milli
    }

    async fn memory_mib(&self) -> i64 {
        self.node.memory_mib
    }

    async fn state(&self) -> GqlNodeState {
        self.node.state.into()
    }

    /// Whether the hardware its agent reports is what was registered.
    async fn verification(&self) -> GqlNodeVerification {
        self.node.verification.into()
    }

    /// What differs, while `MISMATCH`.
    async fn verification_reason(&self) -> Option<&str> {
        self.node.verification_reason.as_deref()
    }

    /// When its agent last reported the registered hardware.
    async fn verified_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.node.verified_at
    }

    /// When it left the fleet (`RETIRED`).
    async fn retired_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.node.retired_at
    }

    /// Its reliability and what it comes from; null before the first computation.
    async fn reliability(&self, ctx: &Context<'_>) -> Result<Option<Reliability>> {
        let db = super::db(ctx)?;
        let mut found = crate::fleet::reliability::of_nodes(db, [self.node.id]).await?;
        Ok(found.remove(&self.node.id).map(Reliability))
    }

    /// The agent tokens this node was given, oldest first, revoked ones included
    /// (operator).
    async fn agent_tokens(&self, ctx: &Context<'_>) -> Result<Vec<AgentToken>> {
        let tokens =
            super::loaders::load(ctx, super::loaders::TokensOf(self.node.id.into())).await?;
        Ok(tokens
            .into_iter()
            .map(|k| AgentToken {
                id: to_id(k.id),
                prefix: k.prefix,
                created_at: k.created_at,
                last_used_at: k.last_used_at,
                revoked_at: k.revoked_at,
            })
            .collect())
    }

    /// The allocations running on this node now, oldest first: what a drain waits for
    /// (operator).
    async fn allocations(&self, ctx: &Context<'_>) -> Result<Vec<super::ordering::Allocation>> {
        let live = super::loaders::load(ctx, super::loaders::LiveOn(self.node.id.into())).await?;
        Ok(live
            .into_iter()
            .map(super::ordering::Allocation::from)
            .collect())
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.node.created_at
    }

    /// The node's GPUs. They are read with the node (at most 16, no query of their own),
    /// so their fields cost once, not once per GPU: a full page of nodes with their GPUs
    /// fits the cost limit.
    async fn gpus(&self) -> Vec<Gpu> {
        self.gpus.iter().cloned().map(Gpu).collect()
    }
}

pub struct Gpu(gpu::Model);

#[Object]
impl Gpu {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }

    /// NVML's UUID (`GPU-…`).
    async fn uuid(&self) -> &str {
        &self.0.uuid
    }

    async fn index(&self) -> i32 {
        self.0.index
    }

    async fn model(&self) -> &str {
        &self.0.model
    }

    async fn memory_mib(&self) -> i64 {
        self.0.memory_mib
    }

    async fn health(&self) -> GqlGpuHealth {
        self.0.health.into()
    }
}

#[derive(InputObject)]
pub struct GpuRegistrationInput {
    /// NVML's UUID (`GPU-…`).
    pub uuid: String,
    /// NVML's index on the node.
    pub index: i32,
}

#[derive(InputObject)]
pub struct RegisterNodeInput {
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    /// A catalog model code: H100, H200, A100-80GB, A100-40GB, B200, GB200, L40S.
    pub gpu_model: String,
    pub gpus: Vec<GpuRegistrationInput>,
    #[graphql(default)]
    pub mig_enabled: bool,
    /// Sell the GPUs as time-shared fractions.
    #[graphql(default)]
    pub shared_gpus: bool,
    /// Schedulable CPU in milli-CPUs (default 16 CPUs per GPU).
    pub cpu_milli: Option<i64>,
    /// Schedulable memory in MiB (default 128 GiB per GPU).
    pub memory_mib: Option<i64>,
    /// The company that owns the node (default: the operator).
    pub provider: Option<String>,
}

#[derive(SimpleObject)]
pub struct RegisterNodePayload {
    pub node: Node,
    /// The node's agent token. Shown once.
    pub agent_token: String,
    /// The node's NATS credentials file (`--nats-creds`): it may publish to the node's
    /// usage subject only. Shown once; null when the server mints no NATS credentials.
    pub nats_credentials: Option<String>,
}

#[derive(Default)]
pub struct NodeQuery;

#[Object]
impl NodeQuery {
    /// One node, by id or by hostname (operator). `NOT_FOUND` when there is none.
    async fn node(
        &self,
        ctx: &Context<'_>,
        id: Option<ID>,
        hostname: Option<String>,
    ) -> Result<Node> {
        let lookup = match (id, hostname) {
            (Some(id), None) => fleet::NodeLookup::Id(parse_id("id", &id)?),
            (None, Some(hostname)) => fleet::NodeLookup::Hostname(hostname),
            _ => return Err(ApiError::invalid("id", "give exactly one of id and hostname").into()),
        };
        let (node, gpus) =
            fleet::find_node(super::db(ctx)?, super::principal(ctx)?, lookup).await?;
        Ok(Node { node, gpus })
    }

    /// The registered nodes, oldest first; only those in the region, rack and NVLink
    /// domain given (operator).
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn nodes(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        region: Option<String>,
        rack: Option<String>,
        nvlink_domain: Option<String>,
    ) -> Result<Connection<String, Node>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let filter = fleet::NodeFilter {
            region,
            rack,
            nvlink_domain,
        };
        let result =
            fleet::list_nodes(super::db(ctx)?, super::principal(ctx)?, page, &filter).await?;
        Ok(connection(
            result,
            |(n, _)| n.id.into(),
            |(node, gpus)| Node { node, gpus },
        ))
    }

    /// Every NVLink domain by region, rack and name, with its nodes by state, its GPUs by
    /// health and what live allocations hold (operator): the fleet's tree.
    async fn fleet_topology(&self, ctx: &Context<'_>) -> Result<Vec<NvlinkDomainSummary>> {
        let domains = topology::domains(super::db(ctx)?, super::principal(ctx)?).await?;
        Ok(domains.into_iter().map(Into::into).collect())
    }

    /// Each GPU of a node with its XID/ECC events and health over the last `days` (1 to
    /// 90; operator): the node's timeline.
    async fn gpu_history(
        &self,
        ctx: &Context<'_>,
        node_id: ID,
        #[graphql(default = 30)] days: i64,
    ) -> Result<Vec<GpuHistory>> {
        let node = parse_id("nodeId", &node_id)?;
        let found = topology::gpu_history(
            super::db(ctx)?,
            super::principal(ctx)?,
            node,
            days,
            super::now(ctx)?,
        )
        .await?;
        Ok(found
            .into_iter()
            .map(|(g, events, spans)| GpuHistory {
                uuid: g.uuid,
                index: g.index,
                health: g.health.into(),
                health_changed_at: g.health_changed_at,
                events: events.iter().map(super::ordering::GpuEvent::from).collect(),
                health_history: spans.iter().map(Into::into).collect(),
            })
            .collect())
    }
}

/// One NVLink domain of the fleet, with what is in it (`fleetTopology`).
#[derive(SimpleObject)]
pub struct NvlinkDomainSummary {
    pub region: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub gpu_models: Vec<String>,
    pub nodes: u64,
    pub nodes_draining: u64,
    pub nodes_down: u64,
    pub gpus: u64,
    pub gpus_degraded: u64,
    pub gpus_failed: u64,
    /// GPUs held by live allocations (fractions and slices as their share), exact.
    pub allocated_gpus: String,
}

impl From<topology::Domain> for NvlinkDomainSummary {
    fn from(d: topology::Domain) -> Self {
        let allocated =
            rust_decimal::Decimal::from(d.allocated_milli) / rust_decimal::Decimal::ONE_THOUSAND;
        NvlinkDomainSummary {
            region: d.region,
            rack: d.rack,
            nvlink_domain: d.nvlink_domain,
            gpu_models: d.gpu_models,
            nodes: d.nodes,
            nodes_draining: d.nodes_draining,
            nodes_down: d.nodes_down,
            gpus: d.gpus,
            gpus_degraded: d.gpus_degraded,
            gpus_failed: d.gpus_failed,
            allocated_gpus: allocated.normalize().to_string(),
        }
    }
}

/// A GPU's recent history: its XID/ECC events and its stretches of bad health.
#[derive(SimpleObject)]
pub struct GpuHistory {
    pub uuid: String,
    pub index: i32,
    pub health: GqlGpuHealth,
    pub health_changed_at: DateTime<Utc>,
    /// Newest first, at most 100.
    pub events: Vec<super::ordering::GpuEvent>,
    /// Oldest first; a span still open has no end.
    pub health_history: Vec<super::ordering::GpuHealthSpan>,
}

#[derive(Default)]
pub struct NodeMutation;

#[Object]
impl NodeMutation {
    /// Registers a host and its GPUs; returns the node's agent token (operator).
    async fn register_node(
        &self,
        ctx: &Context<'_>,
        input: RegisterNodeInput,
    ) -> Result<RegisterNodePayload> {
        let registration = NodeRegistration {
            hostname: input.hostname,
            region: input.region,
            zone: input.zone,
            rack: input.rack,
            nvlink_domain: input.nvlink_domain,
            gpu_model: input.gpu_model,
            gpus: input
                .gpus
                .into_iter()
                .map(|g| GpuInput {
                    uuid: g.uuid,
                    index: g.index,
                })
                .collect(),
            mig_enabled: input.mig_enabled,
            shared_gpus: input.shared_gpus,
            cpu_milli: input.cpu_milli,
            memory_mib: input.memory_mib,
            provider: input.provider,
        };
        let registered =
            fleet::register_node(super::db(ctx)?, super::principal(ctx)?, registration).await?;
        payload(ctx, registered).await
    }

    /// Gives the node's agent a new token and revokes every token it held before, at once
    /// (operator; audited). The new token is shown once: install it on the host.
    async fn rotate_agent_token(
        &self,
        ctx: &Context<'_>,
        node_id: ID,
    ) -> Result<RegisterNodePayload> {
        let id = parse_id("nodeId", &node_id)?;
        let rotated =
            fleet::rotate_agent_token(super::db(ctx)?, super::principal(ctx)?, id).await?;
        payload(ctx, rotated).await
    }
}

/// A registered (or rotated) node with its new secrets: the agent token and, where the
/// server holds the NATS account's signing key, a NATS credential for the node alone.
async fn payload(
    ctx: &Context<'_>,
    registered: fleet::RegisteredNode,
) -> Result<RegisterNodePayload> {
    let authority = ctx
        .data::<Option<Arc<Authority>>>()
        .ok()
        .and_then(Option::as_ref);
    let nats_credentials = match authority {
        Some(authority) => {
            let now = super::now(ctx)?;
            let db = super::db(ctx)?;
            Some(crate::auth::nats_users::mint(db, authority, &registered.node, now).await?)
        }
        None => None,
    };
    Ok(RegisterNodePayload {
        node: Node {
            node: registered.node,
            gpus: registered.gpus,
        },
        agent_token: registered.agent_token.secret,
        nats_credentials,
    })
}

/// One agent token of a node: never its secret.
#[derive(SimpleObject)]
pub struct AgentToken {
    pub id: ID,
    /// The token's public prefix (its first characters), to match it to a host.
    pub prefix: String,
    pub created_at: DateTime<Utc>,
    /// Refreshed at most once a minute.
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}
