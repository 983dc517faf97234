//! The fleet: registered nodes, their place in the topology (region → zone → rack →
//! NVLink domain) and their GPUs. Registering a node issues its agent token (one per node).

pub mod reliability;
pub(crate) mod store;
pub mod topology;
pub mod verify;

use neocloud_metering::events::{self, NewEvent};
use neocloud_schema::entity::{gpu, node};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::NodeId;
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::{NodeState, NodeVerification, Role};
use sea_orm::{DatabaseConnection, DatabaseTransaction};

use crate::audit;
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};
use crate::pagination::{Page, PageOf};

/// Most GPUs one node can have (HGX boards carry 8; leave room for 16-GPU systems).
pub const MAX_GPUS_PER_NODE: usize = 16;
/// The provider nodes belong to when registration names none: the operator itself.
pub const DEFAULT_PROVIDER: &str = "operator";

#[derive(Debug, Clone)]
pub struct GpuInput {
    pub uuid: String,
    pub index: i32,
}

/// `registerNode`'s input, as received.
#[derive(Debug, Clone)]
pub struct NodeRegistration {
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub gpu_model: String,
    pub gpus: Vec<GpuInput>,
    pub mig_enabled: bool,
    pub shared_gpus: bool,
    pub cpu_milli: Option<i64>,
    pub memory_mib: Option<i64>,
    pub provider: Option<String>,
}

/// A registration that passed validation.
#[derive(Debug, Clone)]
pub(crate) struct ValidNode {
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub model: GpuModel,
    pub gpus: Vec<GpuInput>,
    pub mig_enabled: bool,
    pub shared_gpus: bool,
    pub cpu_milli: i64,
    pub memory_mib: i64,
    pub provider: String,
    /// `trusted` when an operator registers it; `pending` when a provider does.
    pub verification: NodeVerification,
}

fn topology_name(field: &'static str, value: &str) -> ApiResult<String> {
    Slug::parse(value)
        .map(Slug::into_string)
        .map_err(|rule| ApiError::invalid(field, rule))
}

fn hostname(value: &str) -> ApiResult<String> {
    let value = value.trim().to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if value.is_empty() || value.len() > 253 || !value.split('.').all(label_ok) {
        return Err(ApiError::invalid(
            "hostname",
            "must be a valid DNS hostname (RFC 1123)",
        ));
    }
    Ok(value)
}

/// The GPUs of a registration: 1 to `MAX_GPUS_PER_NODE`, NVML UUIDs and indexes, each
/// once.
fn check_gpus(gpus: &[GpuInput]) -> ApiResult<()> {
    if gpus.is_empty() || gpus.len() > MAX_GPUS_PER_NODE {
        return Err(ApiError::invalid(
            "gpus",
            format!("a node has 1 to {MAX_GPUS_PER_NODE} GPUs"),
        ));
    }
    let mut uuids = std::collections::HashSet::new();
    let mut indexes = std::collections::HashSet::new();
    let indexes_allowed = 0..i32::try_from(MAX_GPUS_PER_NODE).unwrap_or(i32::MAX);
    for (i, gpu) in gpus.iter().enumerate() {
        let uuid = gpu.uuid.trim();
        if !uuid.starts_with("GPU-") || uuid.len() > 96 || uuid.len() < 5 {
            return Err(ApiError::invalid(
                format!("gpus[{i}].uuid"),
                "must be NVML's GPU UUID (GPU-…)",
            ));
        }
        if !uuids.insert(uuid.to_owned()) {
            return Err(ApiError::invalid(
                format!("gpus[{i}].uuid"),
                "appears twice",
            ));
        }
        if !indexes_allowed.contains(&gpu.index) || !indexes.insert(gpu.index) {
            return Err(ApiError::invalid(
                format!("gpus[{i}].index"),
                format!("indexes are unique, 0 to {}", MAX_GPUS_PER_NODE - 1),
            ));
        }
    }
    Ok(())
}

impl NodeRegistration {
    /// The host's CPU (milli-CPUs) and memory (MiB), given or by default per GPU, within
    /// bounds.
    fn host_resources(&self) -> ApiResult<(i64, i64)> {
        // At most MAX_GPUS_PER_NODE, checked first.
        let gpu_count = i64::try_from(self.gpus.len()).unwrap_or(i64::MAX);
        let cpu_milli = self.cpu_milli.unwrap_or(16_000 * gpu_count);
        let memory_mib = self.memory_mib.unwrap_or(128 * 1024 * gpu_count);
        if !(1_000..=1_024_000).contains(&cpu_milli) {
            return Err(ApiError::invalid("cpuMilli", "1000 to 1024000 milli-CPUs"));
        }
        if !(1_024..=16 * 1024 * 1024).contains(&memory_mib) {
            return Err(ApiError::invalid("memoryMib", "1 GiB to 16 TiB"));
        }
        Ok((cpu_milli, memory_mib))
    }

    pub(crate) fn validate(self) -> ApiResult<ValidNode> {
        let model: GpuModel =
            self.gpu_model
                .parse()
                .map_err(|e: neocloud_schema::gpu::UnknownGpuModel| {
                    ApiError::invalid("gpuModel", e.to_string())
                })?;
        check_gpus(&self.gpus)?;
        if self.mig_enabled && !model.mig_capable() {
            return Err(ApiError::invalid(
                "migEnabled",
                format!("{model} does not support MIG"),
            ));
        }
        if self.mig_enabled && self.shared_gpus {
            return Err(ApiError::invalid(
                "sharedGpus",
                "a GPU in MIG mode is partitioned, not time-shared",
            ));
        }
        let (cpu_milli, memory_mib) = self.host_resources()?;
        let provider = match self.provider.as_deref() {
            Some(p) => topology_name("provider", p)?,
            None => DEFAULT_PROVIDER.to_owned(),
        };
        Ok(ValidNode {
            hostname: hostname(&self.hostname)?,
            region: topology_name("region", &self.region)?,
            zone: topology_name("zone", &self.zone)?,
            rack: topology_name("rack", &self.rack)?,
            nvlink_domain: topology_name("nvlinkDomain", &self.nvlink_domain)?,
            model,
            gpus: self
                .gpus
                .into_iter()
                .map(|g| GpuInput {
                    uuid: g.uuid.trim().to_owned(),
                    index: g.index,
                })
                .collect(),
            mig_enabled: self.mig_enabled,
            shared_gpus: self.shared_gpus,
            cpu_milli,
            memory_mib,
            provider,
            verification: NodeVerification::Trusted,
        })
    }
}

#[derive(Debug)]
pub struct RegisteredNode {
    pub node: node::Model,
    pub gpus: Vec<gpu::Model>,
    pub agent_token: auth::MintedKey,
}

/// `registerNode`: the node, its GPUs and its agent token, in one transaction. An
/// operator's node is trusted as registered; a provider registers its own nodes only, and
/// each stays unschedulable until its agent reports the registered hardware
/// (`verification`).
pub async fn register_node(
    db: &DatabaseConnection,
    actor: &Principal,
    registration: NodeRegistration,
) -> ApiResult<RegisteredNode> {
    let valid = match actor.role {
        Role::Provider => {
            let own = actor.acting_provider(None)?;
            let provider = crate::providers::store::find(db, own)
                .await?
                .ok_or_else(|| ApiError::not_found("provider"))?;
            if registration
                .provider
                .as_deref()
                .is_some_and(|p| p.trim() != provider.name)
            {
                return Err(ApiError::invalid(
                    "provider",
                    "a provider registers its own nodes",
                ));
            }
            let own_name = Some(provider.name);
            ValidNode {
                verification: NodeVerification::Pending,
                ..NodeRegistration {
                    provider: own_name,
                    ..registration
                }
                .validate()?
            }
        }
        _ => {
            actor.require_operator()?;
            registration.validate()?
        }
    };
    let txn = crate::db::begin_write(db).await?;
    let registered = register_in(&txn, Some(actor), &valid).await?;
    txn.commit().await?;
    Ok(registered)
}

pub(crate) async fn register_in(
    txn: &DatabaseTransaction,
    actor: Option<&Principal>,
    valid: &ValidNode,
) -> ApiResult<RegisteredNode> {
    if store::find_by_hostname(txn, &valid.hostname)
        .await?
        .is_some()
    {
        return Err(ApiError::AlreadyExists {
            what: format!("node `{}`", valid.hostname),
        });
    }
    for (i, gpu) in valid.gpus.iter().enumerate() {
        if store::find_gpu_by_uuid(txn, &gpu.uuid).await?.is_some() {
            return Err(ApiError::InvalidInput {
                field: format!("gpus[{i}].uuid"),
                message: format!("GPU {} is already registered", gpu.uuid),
            });
        }
    }
    // An NVLink domain (an HGX board, or an NVL72 rack) never spans racks.
    if let Some(peer) = store::find_in_nvlink_domain(txn, &valid.nvlink_domain).await?
        && (peer.region != valid.region || peer.zone != valid.zone || peer.rack != valid.rack)
    {
        return Err(ApiError::invalid(
            "nvlinkDomain",
            format!(
                "domain `{}` is in rack {}/{}/{}; an NVLink domain lies within one rack",
                valid.nvlink_domain, peer.region, peer.zone, peer.rack
            ),
        ));
    }
    // A provider first named here is paid in the platform's default currency until an
    // operator sets its terms.
    let provider = crate::providers::store::id_by_name(txn, &valid.provider, "USD").await?;
    store::bump_epoch(txn).await?;
    let node_id = NodeId::new();
    let (node, gpus) = store::insert_node(txn, node_id, provider, valid).await?;
    let agent_token = auth::mint(
        txn,
        Role::Agent,
        None,
        Some(node_id),
        &format!("agent of {}", valid.hostname),
        actor.map(|a| a.key_id),
    )
    .await?;
    let data = serde_json::json!({"node_id": node.id, "hostname": node.hostname, "region": node.region,
        "gpu_model": node.gpu_model, "gpu_count": node.gpu_count});
    let event = NewEvent::operator("node.registered", node.created_at, data);
    events::record(txn, event, node.created_at).await?;
    audit::record_as(
        txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "node.register",
            object_type: "node",
            object_id: node.id.to_string(),
            before: None,
            after: Some(store::describe(&node, &gpus)),
        },
    )
    .await?;
    Ok(RegisteredNode {
        node,
        gpus,
        agent_token,
    })
}

/// How `node` finds one node.
#[derive(Debug, Clone)]
pub enum NodeLookup {
    Id(NodeId),
    Hostname(String),
}

/// `node(id | hostname)` (operator): one node with its GPUs, or `NOT_FOUND`.
pub async fn find_node(
    db: &DatabaseConnection,
    actor: &Principal,
    lookup: NodeLookup,
) -> ApiResult<(node::Model, Vec<gpu::Model>)> {
    actor.require_operator()?;
    let found = match &lookup {
        NodeLookup::Id(id) => store::find(db, *id).await?,
        NodeLookup::Hostname(hostname) => store::find_by_hostname(db, hostname).await?,
    };
    let node = found.ok_or_else(|| ApiError::not_found("node"))?;
    let gpus = store::gpus_of(db, &[node.id.into()]).await?;
    Ok((node, gpus))
}

/// `rotateAgentToken` (operator): the node's new agent token; its old ones are revoked.
pub async fn rotate_agent_token(
    db: &DatabaseConnection,
    actor: &Principal,
    id: NodeId,
) -> ApiResult<RegisteredNode> {
    let (node, gpus) = find_node(db, actor, NodeLookup::Id(id)).await?;
    let agent_token = auth::rotate_agent_token(db, actor, id, &node.hostname).await?;
    Ok(RegisteredNode {
        node,
        gpus,
        agent_token,
    })
}

/// The hostnames of `nodes` (for operators' reads that name nodes by id), by id.
pub async fn hostnames(
    db: &DatabaseConnection,
    actor: &Principal,
    nodes: impl IntoIterator<Item = uuid::Uuid>,
) -> ApiResult<std::collections::BTreeMap<uuid::Uuid, String>> {
    actor.require_operator()?;
    let ids: Vec<uuid::Uuid> = nodes.into_iter().collect();
    Ok(store::hostnames(db, &ids).await?)
}

/// Which nodes `nodes` lists: those in the region, rack and NVLink domain given.
#[derive(Debug, Clone, Default)]
pub struct NodeFilter {
    pub region: Option<String>,
    pub rack: Option<String>,
    pub nvlink_domain: Option<String>,
}

/// `nodes` (operator): the nodes the filter selects, oldest first.
pub async fn list_nodes(
    db: &DatabaseConnection,
    actor: &Principal,
    page: Page,
    filter: &NodeFilter,
) -> ApiResult<PageOf<(node::Model, Vec<gpu::Model>)>> {
    actor.require_operator()?;
    let nodes = store::page(db, page, filter).await?;
    let ids: Vec<uuid::Uuid> = nodes.items.iter().map(|n| n.id.into()).collect();
    let mut gpus = store::gpus_of(db, &ids).await?;
    let items = nodes
        .items
        .into_iter()
        .map(|node| {
            let (mine, rest): (Vec<_>, Vec<_>) = gpus.drain(..).partition(|g| g.node_id == node.id);
            gpus = rest;
            (node, mine)
        })
        .collect();
    Ok(PageOf {
        items,
        has_next: nodes.has_next,
        has_previous: nodes.has_previous,
    })
}

/// Who may move a node to `state`: an operator any node to any state; a provider its own
/// nodes between active and draining (maintenance) and out of the fleet (retired), not
/// down (the operator's call, which reliability counts). Another provider's node is `NOT_FOUND`, as if it did not exist.
fn may_set_state(actor: &Principal, node: Option<&node::Model>, state: NodeState) -> ApiResult<()> {
    match (actor.role, actor.provider_id) {
        (Role::Operator, _) => node.map(drop).ok_or_else(|| ApiError::not_found("node")),
        (Role::Provider, Some(own)) => {
            if state == NodeState::Down {
                return Err(ApiError::forbidden(
                    "a provider drains its nodes; the operator marks them down",
                ));
            }
            node.filter(|n| n.provider_id == own)
                .map(drop)
                .ok_or_else(|| ApiError::not_found("node"))
        }
        _ => Err(ApiError::forbidden(
            "this operation needs an operator key, or the node's provider's",
        )),
    }
}

/// `setNodeState` / `drainNode` (operator, or the node's provider): a draining or down
/// node keeps what runs there and takes nothing new. A fleet change: the scheduler's
/// cache reloads.
pub async fn set_node_state(
    db: &DatabaseConnection,
    actor: &Principal,
    id: NodeId,
    state: NodeState,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<(node::Model, Vec<gpu::Model>)> {
    if state == NodeState::Retired {
        return Err(ApiError::invalid(
            "state",
            "a node leaves the fleet with retireNode",
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let found = store::find(&txn, id).await?;
    may_set_state(actor, found.as_ref(), state)?;
    let node = found.ok_or_else(|| ApiError::not_found("node"))?;
    if node.state == NodeState::Retired {
        return Err(ApiError::InvalidState {
            message: "the node is retired".into(),
        });
    }
    let updated = if node.state == state {
        node.clone()
    } else {
        store::bump_epoch(&txn).await?;
        let updated = store::set_state(&txn, &node, state).await?;
        if state == NodeState::Draining {
            let data = serde_json::json!({"node_id": node.id, "hostname": node.hostname});
            events::record(&txn, NewEvent::operator("node.drained", now, data), now).await?;
        }
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: None,
                action: "node.set_state",
                object_type: "node",
                object_id: node.id.to_string(),
                before: Some(serde_json::json!({"state": node.state})),
                after: Some(serde_json::json!({"state": state})),
            },
        )
        .await?;
        updated
    };
    let gpus = store::gpus_of(&txn, &[updated.id.into()]).await?;
    txn.commit().await?;
    Ok((updated, gpus))
}

/// `retireNode` (operator, or the node's provider): takes a node out of the fleet for
/// good once nothing runs there. It is no longer placed on, sold or counted, its agent's
/// tokens are revoked, and its reliability stays as it was; its row, GPUs and history stay
/// for the invoices and statements that name it. Retiring a retired node changes nothing.
pub async fn retire_node(
    db: &DatabaseConnection,
    actor: &Principal,
    id: NodeId,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<(node::Model, Vec<gpu::Model>)> {
    let txn = crate::db::begin_write(db).await?;
    let found = store::find(&txn, id).await?;
    may_set_state(actor, found.as_ref(), NodeState::Retired)?;
    let node = found.ok_or_else(|| ApiError::not_found("node"))?;
    let retired = if node.state == NodeState::Retired {
        node
    } else {
        let live = store::live_allocations_on(&txn, id).await?;
        if live > 0 {
            return Err(ApiError::InvalidState {
                message: format!(
                    "{live} allocation(s) still run on the node: drain it and retire it once they end"
                ),
            });
        }
        store::bump_epoch(&txn).await?;
        let retired = store::retire(&txn, &node, now).await?;
        let revoked = crate::auth::revoke_agent_tokens(&txn, id, now).await?;
        let data = serde_json::json!({"node_id": node.id, "hostname": node.hostname,
            "provider_id": node.provider_id});
        events::record(&txn, NewEvent::operator("node.retired", now, data), now).await?;
        audit::record(
            &txn,
            actor,
            audit::Entry {
                tenant_id: None,
                action: "node.retire",
                object_type: "node",
                object_id: node.id.to_string(),
                before: Some(serde_json::json!({"state": node.state})),
                after: Some(
                    serde_json::json!({"state": NodeState::Retired, "revoked_agent_tokens": revoked}),
                ),
            },
        )
        .await?;
        retired
    };
    let gpus = store::gpus_of(&txn, &[retired.id.into()]).await?;
    txn.commit().await?;
    crate::auth::agent_tokens::forget_all();
    Ok((retired, gpus))
}

/// One row of the fleet overview: a region and model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CapacityRow {
    pub region: String,
    pub gpu_model: String,
    pub gpus: u64,
    /// Allocated GPU-equivalents, in milli-GPUs.
    pub allocated_milli: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Overview {
    pub nodes_by_state: Vec<(String, u64)>,
    pub gpus_by_health: Vec<(String, u64)>,
    pub capacity: Vec<CapacityRow>,
}

/// `fleetOverview` (operator): nodes by state, GPUs by health, allocated share per region
/// and model.
pub async fn overview(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Overview> {
    use std::collections::BTreeMap;
    actor.require_operator()?;
    let fleet = topology::Snapshot::read(db).await?;
    let mut by_state: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_health: BTreeMap<String, u64> = BTreeMap::new();
    let mut capacity: BTreeMap<(String, String), CapacityRow> = BTreeMap::new();
    let node_of: std::collections::HashMap<_, _> = fleet.nodes.iter().map(|n| (n.id, n)).collect();
    for n in &fleet.nodes {
        *by_state.entry(n.state.as_str().to_owned()).or_default() += 1;
    }
    for g in &fleet.gpus {
        *by_health.entry(g.health.as_str().to_owned()).or_default() += 1;
        if let Some(n) = node_of.get(&g.node_id) {
            let row = capacity
                .entry((n.region.clone(), g.model.clone()))
                .or_insert_with(|| CapacityRow {
                    region: n.region.clone(),
                    gpu_model: g.model.clone(),
                    gpus: 0,
                    allocated_milli: 0,
                });
            row.gpus += 1;
            row.allocated_milli += fleet.held_on(g);
        }
    }
    Ok(Overview {
        nodes_by_state: by_state.into_iter().collect(),
        gpus_by_health: by_health.into_iter().collect(),
        capacity: capacity.into_values().collect(),
    })
}

/// `setGpuHealth` (operator): marks a GPU repaired (`ok`) or takes it out of service by
/// hand, audited. A fleet change: the scheduler sees it at once.
#[tracing::instrument(name = "fleet.set_gpu_health", skip_all, fields(gpu = %uuid))]
pub async fn set_gpu_health(
    db: &DatabaseConnection,
    actor: &Principal,
    uuid: &str,
    health: neocloud_schema::vocabulary::GpuHealth,
    reason: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<gpu::Model> {
    actor.require_operator()?;
    let reason = reason.trim();
    if reason.chars().count() > 200 {
        return Err(ApiError::invalid("reason", "at most 200 characters"));
    }
    let txn = crate::db::begin_write(db).await?;
    let gpu = store::find_gpu_by_uuid(&txn, uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("GPU"))?;
    if gpu.health == health {
        return Ok(gpu);
    }
    let cause = if reason.is_empty() {
        "operator"
    } else {
        reason
    };
    let updated = neocloud_metering::health::transition(&txn, &gpu, health, now, cause).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "gpu.set_health",
            object_type: "gpu",
            object_id: gpu.uuid.clone(),
            before: Some(serde_json::json!({"health": gpu.health})),
            after: Some(serde_json::json!({"health": health, "reason": reason})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration() -> NodeRegistration {
        NodeRegistration {
            hostname: "hgx-001.eu-west".into(),
            region: "eu-west".into(),
            zone: "eu-west-a".into(),
            rack: "r01".into(),
            nvlink_domain: "hgx-001".into(),
            gpu_model: "H100".into(),
            gpus: (0..8)
                .map(|i| GpuInput {
                    uuid: format!("GPU-{i:08x}"),
                    index: i,
                })
                .collect(),
            mig_enabled: false,
            shared_gpus: false,
            cpu_milli: None,
            memory_mib: None,
            provider: None,
        }
    }

    fn rejected_field(mutate: impl FnOnce(&mut NodeRegistration)) -> String {
        let mut r = registration();
        mutate(&mut r);
        match r.validate() {
            Err(ApiError::InvalidInput { field, .. }) => field,
            other => panic!("expected INVALID_INPUT, got {other:?}"),
        }
    }

    #[test]
    fn a_valid_registration_gets_defaults_for_cpu_and_memory() {
        let valid = registration().validate().expect("valid");
        assert_eq!(valid.cpu_milli, 8 * 16_000);
        assert_eq!(valid.model, GpuModel::H100);
        assert_eq!(valid.provider, DEFAULT_PROVIDER);
    }

    #[test]
    fn each_bad_field_is_named() {
        assert_eq!(rejected_field(|r| r.gpu_model = "V100".into()), "gpuModel");
        assert_eq!(rejected_field(|r| r.hostname = "-bad-".into()), "hostname");
        assert_eq!(rejected_field(|r| r.region = "eu west".into()), "region");
        assert_eq!(rejected_field(|r| r.gpus.clear()), "gpus");
        assert_eq!(
            rejected_field(|r| r.gpus[1].uuid = r.gpus[0].uuid.clone()),
            "gpus[1].uuid"
        );
        assert_eq!(rejected_field(|r| r.gpus[2].index = 0), "gpus[2].index");
        assert_eq!(
            rejected_field(|r| r.gpus[0].uuid = "5c1e".into()),
            "gpus[0].uuid"
        );
        assert_eq!(
            rejected_field(|r| {
                r.gpu_model = "L40S".into();
                r.mig_enabled = true;
            }),
            "migEnabled"
        );
        assert_eq!(
            rejected_field(|r| {
                r.mig_enabled = true;
                r.shared_gpus = true;
            }),
            "sharedGpus"
        );
    }
}
