//! Verifying a node's hardware (docs/providers.md, "Onboarding"): the GPUs its agent
//! reports (`POST /v1/agents/hardware`) against the registration — the same GPUs by
//! UUID, each of the registered model and memory, in MIG mode exactly when the node was
//! registered for MIG, with its NVLink links up and, in a multi-node NVLink domain, in
//! the domain's one NVLink fabric. A provider's node takes allocations only once
//! verified; any node whose agent reports other hardware later stops taking them, with
//! the reason shown.

use chrono::{DateTime, Utc};
use neocloud_metering::events::{self, NewEvent};
use neocloud_schema::agent_api::{FabricState, HardwareReport, HardwareVerdict};
use neocloud_schema::entity::{gpu, node};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::NodeId;
use neocloud_schema::vocabulary::NodeVerification;
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};

use super::store;
use crate::error::{ApiError, ApiResult};

/// The most GPUs a report may list, and the longest name or UUID.
const MAX_GPUS: usize = 64;
const MAX_TEXT: usize = 96;
/// Reported memory may differ from the model's nominal memory by this share (NVML
/// reports the total less what the driver reserves: 81,559 MiB of an H100's 80 GiB).
const MEMORY_TOLERANCE_PERCENT: u64 = 5;
/// NVML's most NVLink links per GPU.
const MAX_NVLINKS: u32 = 18;
/// Differences named in a reason, at most.
const MAX_DIFFERENCES: usize = 3;

/// Refuses a report no GPU host could send (bounded like every value from outside).
fn check(report: &HardwareReport) -> ApiResult<()> {
    if report.gpus.len() > MAX_GPUS {
        return Err(ApiError::invalid(
            "gpus",
            format!("at most {MAX_GPUS} GPUs"),
        ));
    }
    for (i, g) in report.gpus.iter().enumerate() {
        if g.uuid.is_empty() || g.uuid.len() > MAX_TEXT || g.name.len() > MAX_TEXT {
            return Err(ApiError::InvalidInput {
                field: format!("gpus[{i}]"),
                message: format!(
                    "a UUID of 1 to {MAX_TEXT} and a name of at most {MAX_TEXT} characters"
                ),
            });
        }
        if g.nvlinks_active.is_some_and(|n| n > MAX_NVLINKS) {
            return Err(ApiError::InvalidInput {
                field: format!("gpus[{i}].nvlinksActive"),
                message: format!("at most {MAX_NVLINKS} NVLink links"),
            });
        }
        if g.fabric
            .as_ref()
            .is_some_and(|f| uuid::Uuid::parse_str(&f.cluster_uuid).is_err())
        {
            return Err(ApiError::InvalidInput {
                field: format!("gpus[{i}].fabric.clusterUuid"),
                message: "a UUID".into(),
            });
        }
        if g.memory_mib > 4 * 1024 * 1024 {
            return Err(ApiError::InvalidInput {
                field: format!("gpus[{i}].memoryMib"),
                message: "at most 4 TiB".into(),
            });
        }
    }
    Ok(())
}

/// The node's NVLink domain as a report is judged against it.
#[derive(Debug, Clone, Default)]
pub struct Domain {
    /// GPUs of every node registered in it, the node's own included.
    pub gpus: usize,
    /// Nodes registered in it, the node included: two or more make it multi-node.
    pub nodes: usize,
    /// The fabric (`<cluster>/<clique>`) another of its nodes, not in mismatch, reported,
    /// with that node's hostname.
    pub fabric: Option<(String, String)>,
}

/// What differs between the registration and the report; empty when nothing does.
pub fn differences(
    node: &node::Model,
    gpus: &[gpu::Model],
    report: &HardwareReport,
    domain: &Domain,
) -> Vec<String> {
    let mut found = Vec::new();
    if report.gpus.len() != gpus.len() {
        found.push(format!(
            "{} GPUs registered, the agent sees {}",
            gpus.len(),
            report.gpus.len()
        ));
    }
    for registered in gpus {
        let Some(seen) = report.gpus.iter().find(|g| g.uuid == registered.uuid) else {
            found.push(format!("{} is registered but not seen", registered.uuid));
            continue;
        };
        found.extend(gpu_differences(node, registered, seen));
        found.extend(nvlink_difference(node, registered, seen, domain.gpus));
    }
    for seen in &report.gpus {
        if !gpus.iter().any(|g| g.uuid == seen.uuid) {
            found.push(format!("{} is seen but not registered", seen.uuid));
        }
    }
    found.extend(fabric_difference(node, report, domain));
    found
}

fn gpu_differences(
    node: &node::Model,
    registered: &gpu::Model,
    seen: &neocloud_schema::agent_api::ReportedGpu,
) -> Vec<String> {
    let mut found = Vec::new();
    let uuid = &registered.uuid;
    if let Ok(model) = registered.model.parse::<GpuModel>() {
        let prefix = model.spec().nvml_name_prefix.to_ascii_uppercase();
        let name = seen.name.trim().to_ascii_uppercase();
        // `NVIDIA L40` must not pass for an L40S: the prefix ends at a word boundary.
        let matches = name
            .strip_prefix(&prefix)
            .is_some_and(|rest| !rest.starts_with(char::is_alphanumeric));
        if !matches {
            found.push(format!(
                "{uuid} is a `{}`, registered as {model}",
                seen.name.trim()
            ));
        }
    }
    let nominal = u64::try_from(registered.memory_mib).unwrap_or(0);
    if seen.memory_mib.abs_diff(nominal) * 100 > nominal * MEMORY_TOLERANCE_PERCENT {
        found.push(format!(
            "{uuid} has {} MiB, {nominal} registered",
            seen.memory_mib
        ));
    }
    if seen.mig_mode != node.mig_enabled {
        let (is, was) = if seen.mig_mode {
            ("on", "without")
        } else {
            ("off", "for")
        };
        found.push(format!("{uuid} has MIG {is}, registered {was} MIG"));
    }
    found
}

/// An NVLink domain of two or more GPUs says they talk over NVLink: each GPU of a model
/// that has NVLink must have every link up. MIG nodes are not checked (a MIG instance
/// never spans GPUs), nor PCIe-only models (their domain groups, it does not link).
fn nvlink_difference(
    node: &node::Model,
    registered: &gpu::Model,
    seen: &neocloud_schema::agent_api::ReportedGpu,
    domain_gpus: usize,
) -> Option<String> {
    let links = registered.model.parse::<GpuModel>().ok()?.spec().nvlinks;
    if node.mig_enabled || domain_gpus < 2 || links == 0 {
        return None;
    }
    let uuid = &registered.uuid;
    match seen.nvlinks_active {
        None => Some(format!(
            "{uuid} did not report its NVLink links (NVLink domain `{}`)",
            node.nvlink_domain
        )),
        Some(active) if active != links => Some(format!(
            "{uuid} has {active} of its {links} NVLink links active (NVLink domain `{}`)",
            node.nvlink_domain
        )),
        Some(_) => None,
    }
}

/// The fabric every GPU of the report is registered with, `<cluster>/<clique>`; none
/// unless all of them report the same one, completed.
pub fn fabric_of(report: &HardwareReport) -> Option<String> {
    let mut keys = report.gpus.iter().map(|g| {
        g.fabric
            .as_ref()
            .filter(|f| f.state == FabricState::Completed)
            .map(|f| format!("{}/{}", f.cluster_uuid, f.clique_id))
    });
    let first = keys.next()??;
    keys.all(|k| k.as_deref() == Some(first.as_str()))
        .then_some(first)
}

/// `<cluster>/<clique>` as a reason names it.
fn fabric_name(key: &str) -> String {
    match key.rsplit_once('/') {
        Some((cluster, clique)) => format!("clique {clique} of NVLink fabric {cluster}"),
        None => key.to_owned(),
    }
}

/// A multi-node NVLink domain (two or more nodes registered in it, like the trays of an
/// NVL72) is one NVLink fabric: each GPU must be registered with it, all in one clique,
/// the same as the domain's other nodes. MIG nodes and models without NVLink are not
/// checked, as for the links.
fn fabric_difference(
    node: &node::Model,
    report: &HardwareReport,
    domain: &Domain,
) -> Option<String> {
    let links = node.gpu_model.parse::<GpuModel>().ok()?.spec().nvlinks;
    if node.mig_enabled || domain.nodes < 2 || links == 0 || report.gpus.is_empty() {
        return None;
    }
    let name = &node.nvlink_domain;
    for g in &report.gpus {
        match &g.fabric {
            None => {
                return Some(format!(
                    "{} did not report its NVLink fabric (multi-node NVLink domain `{name}`)",
                    g.uuid
                ));
            }
            Some(f) if f.state != FabricState::Completed => {
                return Some(format!(
                    "{} is not registered with its NVLink fabric: {} (multi-node NVLink domain `{name}`)",
                    g.uuid,
                    f.state.as_str()
                ));
            }
            Some(_) => {}
        }
    }
    let Some(ours) = fabric_of(report) else {
        return Some(format!(
            "its GPUs are in more than one NVLink fabric (multi-node NVLink domain `{name}`)"
        ));
    };
    match &domain.fabric {
        Some((theirs, host)) if *theirs != ours => Some(format!(
            "its GPUs are in {}, node `{host}` of NVLink domain `{name}` in {}",
            fabric_name(&ours),
            fabric_name(theirs)
        )),
        _ => None,
    }
}

/// Records what the agent of `node_id` reports: a pending or mismatched node that now
/// matches is verified; a node that no longer matches stops taking allocations. A change
/// reloads the scheduler's fleet and records an operator event.
pub async fn report(
    db: &DatabaseConnection,
    node_id: NodeId,
    report: &HardwareReport,
    now: DateTime<Utc>,
) -> ApiResult<HardwareVerdict> {
    check(report)?;
    let txn = crate::db::begin_write(db).await?;
    let node = store::find(&txn, node_id)
        .await?
        .ok_or_else(|| ApiError::not_found("node"))?;
    let gpus = store::gpus_of(&txn, &[node_id.into()]).await?;
    let domain = store::nvlink_domain(&txn, &node).await?;
    let found = differences(&node, &gpus, report, &domain);
    let reason = (!found.is_empty()).then(|| {
        let shown: Vec<&str> = found
            .iter()
            .take(MAX_DIFFERENCES)
            .map(String::as_str)
            .collect();
        let more = found.len().saturating_sub(MAX_DIFFERENCES);
        let tail = if more > 0 {
            format!("; {more} more")
        } else {
            String::new()
        };
        format!("{}{tail}", shown.join("; "))
    });
    let verification = match (&reason, node.verification) {
        (Some(_), _) => NodeVerification::Mismatch,
        (None, NodeVerification::Trusted) => NodeVerification::Trusted,
        (None, _) => NodeVerification::Verified,
    };
    let changed = verification != node.verification || reason != node.verification_reason;
    let mut active: node::ActiveModel = node.clone().into();
    active.verification = Set(verification);
    active.verification_reason = Set(reason.clone());
    active.nvlink_fabric = Set(fabric_of(report));
    if reason.is_none() {
        active.verified_at = Set(Some(now));
    }
    active.update(&txn).await?;
    if changed {
        store::bump_epoch(&txn).await?;
        let kind = if reason.is_some() {
            "node.hardware_mismatch"
        } else {
            "node.verified"
        };
        let mut data = serde_json::json!({"node_id": node.id, "hostname": node.hostname,
            "provider_id": node.provider_id});
        if let Some(reason) = &reason {
            data["reason"] = serde_json::json!(reason);
        }
        events::record(&txn, NewEvent::operator(kind, now, data), now).await?;
    }
    txn.commit().await?;
    Ok(HardwareVerdict {
        verification: verification.as_str().to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use neocloud_schema::agent_api::{ReportedFabric, ReportedGpu};

    fn registered_node() -> node::Model {
        node::Model {
            id: NodeId::new(),
            provider_id: neocloud_schema::ids::ProviderId(uuid::Uuid::nil()),
            hostname: "n".into(),
            region: "r".into(),
            zone: "z".into(),
            rack: "k".into(),
            nvlink_domain: "n".into(),
            gpu_model: "H100".into(),
            gpu_count: 1,
            mig_enabled: false,
            shared_gpus: false,
            cpu_milli: 1000,
            memory_mib: 1024,
            state: neocloud_schema::vocabulary::NodeState::Active,
            created_at: Utc::now(),
            verification: NodeVerification::Pending,
            verification_reason: None,
            verified_at: None,
            retired_at: None,
            nvlink_fabric: None,
        }
    }

    #[test]
    fn any_name_an_agent_sends_is_judged_never_a_panic() {
        let at = Utc::now();
        let node = registered_node();
        let gpu = gpu::Model {
            id: neocloud_schema::ids::GpuId::new(),
            node_id: node.id,
            uuid: "GPU-0".into(),
            index: 0,
            model: "H100".into(),
            memory_mib: 81_920,
            mig_enabled: false,
            health: neocloud_schema::vocabulary::GpuHealth::Ok,
            health_changed_at: at,
        };
        for name in [
            "NVIDIA H100 80GB HBM3",
            "NVIDIAÄÄÄÄÄÄ",
            "ä",
            "NVIDIA H1000",
            "",
        ] {
            let seen = ReportedGpu {
                uuid: "GPU-0".into(),
                index: 0,
                name: name.into(),
                memory_mib: 81_559,
                mig_mode: false,
                nvlinks_active: Some(18),
                fabric: None,
            };
            let found = gpu_differences(&node, &gpu, &seen);
            assert_eq!(
                found.is_empty(),
                name == "NVIDIA H100 80GB HBM3",
                "{name}: {found:?}"
            );
        }
    }

    fn fabric(cluster: u128, clique: u32, state: FabricState) -> Option<ReportedFabric> {
        Some(ReportedFabric {
            cluster_uuid: uuid::Uuid::from_u128(cluster).to_string(),
            clique_id: clique,
            state,
        })
    }

    /// Two GPUs, each in the fabric given.
    fn reporting(fabrics: [Option<ReportedFabric>; 2]) -> HardwareReport {
        let gpus = fabrics
            .into_iter()
            .zip(0u32..)
            .map(|(fabric, index)| ReportedGpu {
                uuid: format!("GPU-{index}"),
                index,
                name: "NVIDIA GB200".into(),
                memory_mib: 189_471,
                mig_mode: false,
                nvlinks_active: Some(18),
                fabric,
            })
            .collect();
        HardwareReport { gpus }
    }

    #[test]
    fn a_multi_node_domain_is_one_nvlink_fabric() {
        let mut node = registered_node();
        node.gpu_model = "GB200".into();
        node.nvlink_domain = "nvl72-a".into();
        let done = FabricState::Completed;
        let ok = reporting([fabric(7, 1, done), fabric(7, 1, done)]);
        let key = fabric_of(&ok).expect("one fabric");
        assert_eq!(key, format!("{}/1", uuid::Uuid::from_u128(7)));
        let alone = Domain {
            gpus: 2,
            nodes: 1,
            fabric: None,
        };
        let first = Domain {
            gpus: 8,
            nodes: 2,
            fabric: None,
        };
        let same = Domain {
            fabric: Some((key.clone(), "tray-1".into())),
            ..first.clone()
        };
        let other_clique = Domain {
            fabric: Some((format!("{}/2", uuid::Uuid::from_u128(7)), "tray-1".into())),
            ..first.clone()
        };
        let judge =
            |report: &HardwareReport, domain: &Domain| fabric_difference(&node, report, domain);

        assert_eq!(judge(&ok, &first), None, "the first tray sets the fabric");
        assert_eq!(judge(&ok, &same), None);
        let moved = judge(&ok, &other_clique).expect("another clique");
        assert!(
            moved.contains("clique 1 of")
                && moved.contains("node `tray-1`")
                && moved.contains("clique 2 of"),
            "{moved}"
        );

        let silent = reporting([fabric(7, 1, done), None]);
        assert_eq!(
            judge(&silent, &alone),
            None,
            "a single node's domain needs no fabric"
        );
        assert!(judge(&silent, &first).is_some_and(|r| r.starts_with("GPU-1 did not report")));
        assert_eq!(fabric_of(&silent), None);
        let pending = reporting([fabric(7, 1, FabricState::InProgress), fabric(7, 1, done)]);
        assert!(judge(&pending, &same).is_some_and(|r| {
            r.contains("GPU-0 is not registered with its NVLink fabric: in progress")
        }));
        let split = reporting([fabric(7, 1, done), fabric(8, 1, done)]);
        assert!(judge(&split, &first).is_some_and(|r| r.contains("more than one NVLink fabric")));

        // A MIG node or a PCIe-only model has no fabric to be in.
        let mut l40s = node.clone();
        l40s.gpu_model = "L40S".into();
        assert_eq!(fabric_difference(&l40s, &silent, &first), None);
        node.mig_enabled = true;
        assert_eq!(fabric_difference(&node, &silent, &first), None);
    }
}
