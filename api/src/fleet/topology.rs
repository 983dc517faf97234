//! The fleet as the console's tree shows it: region → rack → NVLink domain, each domain
//! with its nodes by state, its GPUs by health and what live allocations hold; and one
//! node's GPU history (XID/ECC events and stretches of bad health) for its timeline.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_metering::health::{self, EventRecord, HealthSpan};
use neocloud_schema::entity::{gpu, node};
use neocloud_schema::ids::NodeId;
use neocloud_schema::vocabulary::{GpuHealth, NodeState};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr};
use uuid::Uuid;

use super::store;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Every node with its GPUs and the milli-GPUs live allocations hold on each GPU.
pub(crate) struct Snapshot {
    pub nodes: Vec<node::Model>,
    pub gpus: Vec<gpu::Model>,
    pub held: HashMap<Uuid, u64>,
}

impl Snapshot {
    pub(crate) async fn read<C: ConnectionTrait>(conn: &C) -> Result<Snapshot, DbErr> {
        let nodes = store::all_nodes(conn).await?;
        let ids: Vec<Uuid> = nodes.iter().map(|n| n.id.into()).collect();
        Ok(Snapshot {
            gpus: store::gpus_of(conn, &ids).await?,
            held: store::held_milli_by_gpu(conn).await?,
            nodes,
        })
    }

    /// Milli-GPUs held on `gpu` (at most the whole GPU).
    pub(crate) fn held_on(&self, gpu: &gpu::Model) -> u64 {
        self.held
            .get(&Uuid::from(gpu.id))
            .copied()
            .unwrap_or(0)
            .min(1000)
    }
}

/// One NVLink domain of the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domain {
    pub region: String,
    pub rack: String,
    pub nvlink_domain: String,
    /// The GPU models of its nodes, sorted.
    pub gpu_models: Vec<String>,
    pub nodes: u64,
    pub nodes_draining: u64,
    pub nodes_down: u64,
    pub gpus: u64,
    pub gpus_degraded: u64,
    pub gpus_failed: u64,
    /// What live allocations hold, in milli-GPUs.
    pub allocated_milli: u64,
}

/// `fleetTopology` (operator): every NVLink domain, by region, rack and name.
pub async fn domains(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Vec<Domain>> {
    actor.require_operator()?;
    Ok(summarise(&Snapshot::read(db).await?))
}

fn summarise(fleet: &Snapshot) -> Vec<Domain> {
    let mut domains: BTreeMap<(&str, &str, &str), Domain> = BTreeMap::new();
    let mut domain_of = HashMap::new();
    for n in &fleet.nodes {
        let key = (n.region.as_str(), n.rack.as_str(), n.nvlink_domain.as_str());
        let d = domains.entry(key).or_insert_with(|| Domain {
            region: n.region.clone(),
            rack: n.rack.clone(),
            nvlink_domain: n.nvlink_domain.clone(),
            ..Domain::default()
        });
        d.nodes += 1;
        d.nodes_draining += u64::from(n.state == NodeState::Draining);
        d.nodes_down += u64::from(n.state == NodeState::Down);
        if !d.gpu_models.contains(&n.gpu_model) {
            d.gpu_models.push(n.gpu_model.clone());
            d.gpu_models.sort();
        }
        domain_of.insert(n.id, key);
    }
    for g in &fleet.gpus {
        let Some(d) = domain_of.get(&g.node_id).and_then(|k| domains.get_mut(k)) else {
            continue;
        };
        d.gpus += 1;
        d.gpus_degraded += u64::from(g.health == GpuHealth::Degraded);
        d.gpus_failed += u64::from(g.health == GpuHealth::Failed);
        d.allocated_milli += fleet.held_on(g);
    }
    domains.into_values().collect()
}

/// The longest history the console asks for.
pub const MAX_HISTORY_DAYS: i64 = 90;

/// `gpuHistory` (operator): each GPU of the node with its events (newest first, at most
/// 100) and its stretches of degraded or failed health over the last `days`.
pub async fn gpu_history(
    db: &DatabaseConnection,
    actor: &Principal,
    node: NodeId,
    days: i64,
    now: DateTime<Utc>,
) -> ApiResult<Vec<(gpu::Model, Vec<EventRecord>, Vec<HealthSpan>)>> {
    actor.require_operator()?;
    if !(1..=MAX_HISTORY_DAYS).contains(&days) {
        return Err(ApiError::invalid(
            "days",
            format!("1 to {MAX_HISTORY_DAYS} days"),
        ));
    }
    store::find(db, node)
        .await?
        .ok_or_else(|| ApiError::not_found("node"))?;
    let from = now - chrono::TimeDelta::days(days);
    let mut out = Vec::new();
    for g in store::gpus_of(db, &[node.into()]).await? {
        let (events, spans) = health::history(db, &g, from, None, false).await?;
        out.push((g, events, spans));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, rack: &str, domain: &str, state: NodeState) -> node::Model {
        node::Model {
            id: NodeId::new(),
            provider_id: neocloud_schema::ids::ProviderId::new(),
            hostname: host.into(),
            region: "eu-west".into(),
            zone: "a".into(),
            rack: rack.into(),
            nvlink_domain: domain.into(),
            gpu_model: "H100".into(),
            gpu_count: 2,
            mig_enabled: false,
            shared_gpus: false,
            cpu_milli: 1,
            memory_mib: 1,
            state,
            created_at: Utc::now(),
            verification: neocloud_schema::vocabulary::NodeVerification::Trusted,
            verification_reason: None,
            verified_at: None,
            retired_at: None,
            nvlink_fabric: None,
        }
    }

    fn gpu(node: &node::Model, index: i32, health: GpuHealth) -> gpu::Model {
        gpu::Model {
            id: neocloud_schema::ids::GpuId::new(),
            node_id: node.id,
            uuid: format!("GPU-{}-{index}", node.hostname),
            index,
            model: "H100".into(),
            memory_mib: 1,
            mig_enabled: false,
            health,
            health_changed_at: Utc::now(),
        }
    }

    #[test]
    fn domains_count_their_nodes_gpus_and_what_is_held() {
        let a = node("a", "r1", "d1", NodeState::Active);
        let b = node("b", "r1", "d1", NodeState::Draining);
        let c = node("c", "r2", "d2", NodeState::Down);
        let gpus = vec![
            gpu(&a, 0, GpuHealth::Ok),
            gpu(&a, 1, GpuHealth::Failed),
            gpu(&b, 0, GpuHealth::Degraded),
            gpu(&c, 0, GpuHealth::Ok),
        ];
        // 1,500 milli held on one GPU counts as the whole GPU.
        let held = HashMap::from([(gpus[0].id.into(), 1500), (gpus[2].id.into(), 250)]);
        let fleet = Snapshot {
            nodes: vec![c.clone(), a, b],
            gpus,
            held,
        };
        let found = summarise(&fleet);
        assert_eq!(
            found
                .iter()
                .map(|d| d.nvlink_domain.as_str())
                .collect::<Vec<_>>(),
            ["d1", "d2"]
        );
        let d1 = &found[0];
        assert_eq!((d1.nodes, d1.nodes_draining, d1.nodes_down), (2, 1, 0));
        assert_eq!((d1.gpus, d1.gpus_degraded, d1.gpus_failed), (3, 1, 1));
        assert_eq!(d1.allocated_milli, 1250);
        let d2 = &found[1];
        assert_eq!(
            (d2.nodes, d2.nodes_down, d2.gpus, d2.allocated_milli),
            (1, 1, 1, 0)
        );
    }
}
