//! What the server tells an agent (contract): `GET /v1/agents/inventory` — the node's
//! registered devices, so a simulated agent simulates exactly those and a real agent can
//! check NVML against them. Authenticated with the node's agent token.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
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
