//! What this host's GPUs are, as the server checks them against the node's registration
//! (`POST /v1/agents/hardware`, docs/providers.md, "Onboarding"): each physical GPU's
//! UUID, index, name, memory, MIG mode, active NVLink links and NVLink fabric, from one
//! snapshot of the source.

use neocloud_schema::agent_api::{HardwareReport, ReportedGpu};

use crate::source::Snapshot;

const MIB: u64 = 1024 * 1024;

/// The physical GPUs of `snapshot` (MIG instances left out), in the source's order.
pub fn report(snapshot: &Snapshot) -> HardwareReport {
    let gpus = snapshot
        .devices
        .iter()
        .filter(|d| d.parent_uuid.is_none())
        .zip(0u32..)
        .map(|(d, index)| ReportedGpu {
            uuid: d.uuid.clone(),
            index,
            name: d.name.clone().unwrap_or_default(),
            memory_mib: d.memory_total_bytes.unwrap_or(0) / MIB,
            mig_mode: d.mig_mode.unwrap_or(false),
            nvlinks_active: d.nvlinks_active,
            fabric: d.fabric.clone(),
        })
        .collect();
    HardwareReport { gpus }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::GpuSource;
    use crate::source::sim::{SimProfile, SimSource};
    use neocloud_schema::gpu::GpuModel;

    #[test]
    fn a_simulated_host_reports_its_physical_gpus() {
        let profile = SimProfile::mixed_host("sim-1");
        let physical = profile.gpus.len();
        let mut sim = SimSource::new(profile, 1).unwrap();
        let report = report(&sim.sample(chrono::Utc::now()).unwrap());
        assert_eq!(report.gpus.len(), physical);
        assert!(
            report
                .gpus
                .iter()
                .all(|g| g.name.starts_with("NVIDIA ") && g.memory_mib > 0)
        );
        assert!(report.gpus.iter().zip(0u32..).all(|(g, i)| g.index == i));
    }

    #[test]
    fn each_gpu_reports_its_active_nvlink_links() {
        let mut profile = SimProfile::uniform("sim-2", GpuModel::H100, 2, 1);
        profile.gpus[1].nvlinks_active = Some(16);
        profile
            .gpus
            .push(SimProfile::uniform("x", GpuModel::L40S, 1, 1).gpus[0].clone());
        let mut sim = SimSource::new(profile, 1).unwrap();
        let report = report(&sim.sample(chrono::Utc::now()).unwrap());
        let links: Vec<_> = report.gpus.iter().map(|g| g.nvlinks_active).collect();
        assert_eq!(links, [Some(18), Some(16), Some(0)]);
    }
}
