//! What the server tells an agent (contract): `GET /v1/agents/inventory` — the node's
//! registered devices, so a simulated agent simulates exactly those and a real agent can
//! check NVML against them. Authenticated with the node's agent token.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// The node's id (names its usage subject on NATS); absent from servers before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<crate::ids::NodeId>,
    /// The registered hostname: the `agent_id` of this node's batches.
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    /// Catalog code of the node's GPU model (`H100`, `L40S`, …).
    pub gpu_model: String,
    pub mig_enabled: bool,
    /// GPUs sold as time-shared fractions.
    pub shared_gpus: bool,
    pub gpus: Vec<InventoryGpu>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryGpu {
    /// NVML's UUID (`GPU-…`).
    pub uuid: String,
    /// NVML's index.
    pub index: u32,
    pub model: String,
    pub memory_mib: u64,
    pub mig_enabled: bool,
    /// `ok`, `degraded` or `failed`.
    pub health: String,
}

/// `GET /v1/agents/assignments`: which device of the node belongs to which live
/// allocation, and the preemption notices the node's workloads must act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignments {
    pub hostname: String,
    pub assignments: Vec<Assignment>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub allocation_id: crate::ids::AllocationId,
    /// The physical GPU (`GPU-…`).
    pub gpu_uuid: String,
    /// NVIDIA's profile name for a MIG allocation; the instance sits at `mig_start_slot`.
    pub mig_profile: Option<String>,
    pub mig_start_slot: Option<u8>,
    /// Milli-GPUs of a fractional allocation.
    pub milli_gpu: Option<u32>,
    /// `active` or `preempting`.
    pub status: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Set for a preempted allocation: when it will be ended.
    pub preempt_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What an agent tells the server it sees (contract): `POST /v1/agents/hardware`, at
/// start and whenever its devices change. The server compares it with the registration
/// (docs/providers.md, "Onboarding"); at most 64 GPUs, names and UUIDs of at most 96
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareReport {
    pub gpus: Vec<ReportedGpu>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedGpu {
    /// NVML's UUID (`GPU-…`).
    pub uuid: String,
    pub index: u32,
    /// NVML's name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Total memory as NVML reports it.
    pub memory_mib: u64,
    /// Whether MIG mode is on.
    pub mig_mode: bool,
    /// How many of the GPU's NVLink links are active (0 for a PCIe-only GPU); absent
    /// when the driver could not tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlinks_active: Option<u32>,
    /// The NVLink fabric the GPU is registered with (NVML's GPU fabric info): what makes
    /// the trays of a multi-node NVLink domain (an NVL72) one domain. Absent where the
    /// driver cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<ReportedFabric>,
}

/// A GPU's place in an NVLink fabric, as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedFabric {
    /// The fabric's cluster UUID (hyphenated): the same for every GPU it connects.
    pub cluster_uuid: String,
    /// The clique within the cluster: GPUs talk over NVLink only within one.
    pub clique_id: u32,
    pub state: FabricState,
}

/// How far the GPU's registration with the fabric manager got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FabricState {
    /// Registered: the cluster and clique are the GPU's.
    Completed,
    /// Registration finished with an error.
    Failed,
    InProgress,
    NotStarted,
    /// The GPU is not on an NVLink fabric (a single HGX board, a PCIe card).
    NotSupported,
}

impl FabricState {
    pub fn as_str(self) -> &'static str {
        match self {
            FabricState::Completed => "completed",
            FabricState::Failed => "failed",
            FabricState::InProgress => "in progress",
            FabricState::NotStarted => "not started",
            FabricState::NotSupported => "not supported",
        }
    }
}

/// What the server concluded from a hardware report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareVerdict {
    /// `trusted`, `verified` or `mismatch`.
    pub verification: String,
    /// What differs, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
