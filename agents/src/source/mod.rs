//! Where GPU readings come from: the [`GpuSource`] trait and what one sampling cycle
//! returns ([`Snapshot`]). Two implementations: [`nvml`] (the real driver, loaded at run
//! time) and [`sim`] (a deterministic simulated host with ground truth).
//!
//! A source reports raw readings only. Turning readings into windows and batches lives in
//! `window.rs`; mapping processes to allocations lives in `attribution.rs`.

pub mod kmsg;
pub mod nvml;
pub mod sim;

use chrono::{DateTime, Utc};
use neocloud_schema::agent_api::Assignments;
use neocloud_schema::ingest::{DeviceHealth, HealthEvent, HealthEventKind};

use crate::attribution::ProcessTable;

/// One device as the source sees it: a whole GPU or a MIG instance.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReading {
    /// `GPU-…` or `MIG-…`.
    pub uuid: String,
    /// The physical GPU of a MIG instance.
    pub parent_uuid: Option<String>,
    /// NVIDIA's profile name (`3g.40gb`) of a MIG instance.
    pub mig_profile: Option<String>,
    /// The marketing name (`NVIDIA H100 80GB HBM3`); for MIG, the parent's.
    pub name: Option<String>,
    pub memory_total_bytes: Option<u64>,
    /// Device-level SM utilization over the driver's last sample period; `None` where the
    /// driver cannot report it (MIG without GPM).
    pub sm_util_pct: Option<f64>,
    pub fb_used_bytes: Option<u64>,
    /// Cumulative energy counter in mJ since the driver loaded (resets on reload).
    pub energy_mj: Option<u64>,
    pub power_mw: Option<u64>,
    pub temp_c: Option<i32>,
    pub ecc_corrected_total: Option<u64>,
    pub ecc_uncorrected_total: Option<u64>,
    /// NVML's throttle-reason bit set.
    pub throttle_reasons: Option<u64>,
    /// Whether MIG mode is on (whole GPUs only).
    pub mig_mode: Option<bool>,
    /// Active NVLink links of a whole GPU (0 for a PCIe-only GPU).
    pub nvlinks_active: Option<u32>,
    /// The NVLink fabric a whole GPU is registered with, where the driver tells.
    pub fabric: Option<neocloud_schema::agent_api::ReportedFabric>,
    /// Whether per-process SM utilization is reported for this device at all.
    pub process_util_supported: bool,
    /// Health as the source knows it (the sim's state; NVML has no such reading).
    pub health: Option<DeviceHealth>,
    pub processes: Vec<ProcessReading>,
    /// New per-process utilization samples since the previous cycle (the source keeps the
    /// last-seen-timestamp cursor).
    pub util_samples: Vec<UtilSample>,
    /// Health events since the previous cycle.
    pub events: Vec<HealthEvent>,
}

impl DeviceReading {
    /// A reading with only the identity filled in; every measurement is unknown.
    pub fn new(uuid: impl Into<String>) -> Self {
        Self {
            uuid: uuid.into(),
            parent_uuid: None,
            mig_profile: None,
            name: None,
            memory_total_bytes: None,
            sm_util_pct: None,
            fb_used_bytes: None,
            energy_mj: None,
            power_mw: None,
            temp_c: None,
            ecc_corrected_total: None,
            ecc_uncorrected_total: None,
            throttle_reasons: None,
            mig_mode: None,
            nvlinks_active: None,
            fabric: None,
            process_util_supported: false,
            health: None,
            processes: Vec::new(),
            util_samples: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// A compute process on a device (`running_compute_processes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessReading {
    /// Host PID (the driver is not PID-namespace aware).
    pub pid: u32,
    /// `None` where NVML answers `Unavailable`.
    pub fb_used_bytes: Option<u64>,
    pub gpu_instance_id: Option<u32>,
    pub compute_instance_id: Option<u32>,
}

/// One per-process utilization sample (`process_utilization_stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtilSample {
    pub pid: u32,
    /// CPU timestamp in µs.
    pub timestamp_us: u64,
    pub sm_util_pct: u32,
}

/// Everything one sampling cycle read.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub at: DateTime<Utc>,
    pub devices: Vec<DeviceReading>,
}

/// What a source could not do. Missing fields are not errors (they read as `None`); these
/// are the failures that stop a cycle or the start-up.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(
        "NVML is not available ({reason}): install the NVIDIA driver (libnvidia-ml.so.1), or run with --simulate"
    )]
    NvmlMissing { reason: String },
    #[error("NVML call {call} failed: {reason}")]
    Nvml { call: &'static str, reason: String },
    #[error("simulation profile is invalid: {reason}")]
    SimProfile { reason: String },
}

/// A host's GPUs. Sampling is synchronous and runs on the agent's sampling thread.
pub trait GpuSource: Send {
    /// A short name for logs and `/healthz` (`nvml`, `sim`).
    fn kind(&self) -> &'static str;
    /// Reads every device once. `now` is the cycle's timestamp: the simulator advances its
    /// clock to it; the real driver ignores it.
    fn sample(&mut self, now: DateTime<Utc>) -> Result<Snapshot, SourceError>;
    /// Where process cgroups and environments are read (`/proc`, or the simulator's).
    fn process_table(&self) -> &dyn ProcessTable;
    /// The server's current assignments of this node's devices. The simulator runs work
    /// for exactly these allocations; the real driver has nothing to do with them.
    fn apply_assignments(&mut self, _assignments: &Assignments) {}
}

/// What the platform does about an XID (shared/reference/xid.md): the device health it
/// implies, or `None` for the tenant's own application errors.
pub fn health_for_xid(code: u32) -> Option<DeviceHealth> {
    match code {
        48 | 64 | 74 | 79 | 95 | 119 | 120 => Some(DeviceHealth::Failed),
        63 | 92 | 94 => Some(DeviceHealth::Degraded),
        _ => None,
    }
}

/// The health an event implies.
pub fn health_for_event(event: &HealthEvent) -> Option<DeviceHealth> {
    match event.kind {
        HealthEventKind::Xid => health_for_xid(event.code),
        HealthEventKind::EccDoubleBit => Some(DeviceHealth::Failed),
        HealthEventKind::EccSingleBit => None,
    }
}

/// XIDs that concern the whole GPU even when raised on a MIG instance.
pub fn xid_is_device_wide(code: u32) -> bool {
    matches!(code, 79 | 48 | 95 | 119 | 120)
}

/// The worse of two health states.
pub fn worse(a: DeviceHealth, b: DeviceHealth) -> DeviceHealth {
    fn rank(h: DeviceHealth) -> u8 {
        match h {
            DeviceHealth::Ok => 0,
            DeviceHealth::Degraded => 1,
            DeviceHealth::Failed => 2,
        }
    }
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_xids_do_not_change_health_but_ecc_and_bus_errors_do() {
        assert_eq!(health_for_xid(13), None);
        assert_eq!(health_for_xid(43), None);
        assert_eq!(health_for_xid(48), Some(DeviceHealth::Failed));
        assert_eq!(health_for_xid(79), Some(DeviceHealth::Failed));
        assert_eq!(health_for_xid(94), Some(DeviceHealth::Degraded));
        assert_eq!(
            worse(DeviceHealth::Degraded, DeviceHealth::Ok),
            DeviceHealth::Degraded
        );
        assert!(xid_is_device_wide(79));
        assert!(!xid_is_device_wide(94));
    }
}
