//! The real driver through nvml-wrapper 0.13, which loads `libnvidia-ml.so.1` at run time:
//! the agent builds and starts without a GPU, and [`NvmlSource::open`] says clearly when
//! NVML is missing.
//!
//! Per GPU: uuid, name, memory, utilization, framebuffer, power, temperature, the total
//! energy counter, ECC totals, throttle reasons, MIG mode, active NVLink links and the
//! NVLink fabric. Per MIG instance (MIG device handles): uuid, parent, profile name,
//! framebuffer, and SM utilization from GPM
//! (`gpm_mig_sample`) where the GPU supports it (Hopper+), else `null`. Per process:
//! `running_compute_processes` and `process_utilization_stats` with a last-seen cursor
//! per device (`NotFound` means "no new samples"). `NotSupported` on any field reads as
//! `None` and never fails the cycle.
//!
//! XID and ECC events come from an `EventSet` on a dedicated blocking thread; XIDs that
//! the event API does not deliver (79, 119, 120) come from the kernel log where readable.
//!
//! Two readings have no safe wrapper. The NVLink fabric (cluster UUID, clique, state):
//! one function, [`fabric`], calls NVML's `nvmlDeviceGetGpuFabricInfo` through the
//! wrapper's loaded library, the module's only `unsafe`. GPU-instance ids of a MIG
//! handle are derived instead: from the UUID where it has the pre-R470 form
//! `MIG-GPU-<uuid>/<gi>/<ci>`, otherwise from the `gpu_instance_id` NVML reports for the
//! instance's processes. An instance whose id is not known yet has no GPM reading.
//!
//! The `Nvml` handle is leaked once per process (`&'static Nvml`) so devices, GPM samples
//! and the event set can be kept across cycles without self-referential structs.

use std::collections::HashMap;
use std::sync::mpsc;

use chrono::{DateTime, Utc};
use neocloud_schema::agent_api::{FabricState, ReportedFabric};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ingest::{HealthEvent, HealthEventKind};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, GpmSample, Nvml};

use super::kmsg::{KmsgReader, same_pci_device};
use super::{DeviceReading, GpuSource, ProcessReading, Snapshot, SourceError, UtilSample};
use crate::attribution::{ProcFs, ProcessTable};

/// An optional field: `NotSupported` and friends read as `None`.
fn opt<T>(r: Result<T, NvmlError>) -> Option<T> {
    r.ok()
}

fn call_err(call: &'static str) -> impl FnOnce(NvmlError) -> SourceError {
    move |e| SourceError::Nvml {
        call,
        reason: e.to_string(),
    }
}

/// Loads NVML, or explains why it cannot.
pub fn load() -> Result<&'static Nvml, SourceError> {
    match Nvml::init() {
        Ok(nvml) => Ok(Box::leak(Box::new(nvml))),
        Err(e) => {
            let reason = match &e {
                NvmlError::LibloadingError(inner) => {
                    format!("libnvidia-ml.so.1 could not be loaded: {inner}")
                }
                NvmlError::DriverNotLoaded => "the NVIDIA kernel driver is not loaded".into(),
                NvmlError::NoPermission => "no permission to talk to the driver".into(),
                other => other.to_string(),
            };
            Err(SourceError::NvmlMissing { reason })
        }
    }
}

/// The GPU-instance id encoded in a pre-R470 MIG UUID (`MIG-GPU-<uuid>/<gi>/<ci>`).
pub fn gpu_instance_from_uuid(uuid: &str) -> Option<(u32, u32)> {
    let rest = uuid.strip_prefix("MIG-GPU-")?;
    let mut parts = rest.split('/');
    parts.next()?;
    let gi = parts.next()?.parse().ok()?;
    let ci = parts.next()?.parse().ok()?;
    Some((gi, ci))
}

/// The MIG profile name from the instance's memory, as NVIDIA names it (`3g.40gb`).
fn mig_profile_name(parent_name: &str, instance_memory_bytes: u64) -> Option<String> {
    let model = GpuModel::ALL
        .into_iter()
        .filter(|m| m.mig_capable())
        .find(|m| parent_name.starts_with(m.spec().nvml_name_prefix))?;
    let mib = instance_memory_bytes / (1024 * 1024);
    // The driver reserves some memory: pick the profile whose size is closest.
    neocloud_schema::mig::MigProfile::ALL
        .into_iter()
        .min_by_key(|p| p.memory_mib(model).abs_diff(mib))
        .map(|p| p.name(model))
}

struct GpuState {
    /// The UUID read at start, so a GPU that stops answering can still be reported.
    uuid: Option<String>,
    /// Whether the last cycle could read this GPU (to log changes only).
    readable: bool,
    cursor_us: u64,
    pci_bus_id: Option<String>,
    gpm: bool,
    /// Previous GPM sample per GPU-instance id.
    gpm_prev: HashMap<u32, GpmSample<'static>>,
    /// Learned GPU-instance id per MIG uuid.
    gi_of: HashMap<String, u32>,
}

/// NVML as a [`GpuSource`].
pub struct NvmlSource {
    nvml: &'static Nvml,
    gpus: Vec<GpuState>,
    events: Option<mpsc::Receiver<(String, HealthEvent)>>,
    kmsg: Option<KmsgReader>,
    procfs: ProcFs,
}

impl std::fmt::Debug for NvmlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlSource")
            .field("gpus", &self.gpus.len())
            .finish_non_exhaustive()
    }
}

impl NvmlSource {
    /// Loads NVML, enumerates GPUs, starts the event thread and opens the kernel log.
    pub fn open() -> Result<Self, SourceError> {
        let nvml = load()?;
        let count = nvml.device_count().map_err(call_err("device_count"))?;
        let mut gpus = Vec::new();
        for i in 0..count {
            let device = nvml
                .device_by_index(i)
                .map_err(call_err("device_by_index"))?;
            gpus.push(GpuState {
                uuid: opt(device.uuid()),
                readable: true,
                cursor_us: 0,
                pci_bus_id: opt(device.pci_info()).map(|p| p.bus_id),
                gpm: opt(device.gpm_support()).unwrap_or(false),
                gpm_prev: HashMap::new(),
                gi_of: HashMap::new(),
            });
        }
        let events = start_event_thread(nvml, count);
        let kmsg = match KmsgReader::open() {
            Ok(k) => Some(k),
            Err(e) => {
                tracing::warn!(error = %e, "Kernel log not readable: XIDs 79/119/120 that NVML's event API does not deliver will be missed.");
                None
            }
        };
        Ok(Self {
            nvml,
            gpus,
            events,
            kmsg,
            procfs: ProcFs::new(),
        })
    }

    fn read_gpu(&mut self, index: usize, out: &mut Vec<DeviceReading>) -> Result<(), SourceError> {
        let device = self
            .nvml
            .device_by_index(u32::try_from(index).map_err(|_| SourceError::Nvml {
                call: "device_by_index",
                reason: format!("GPU index {index} is out of range"),
            })?)
            .map_err(call_err("device_by_index"))?;
        let uuid = device.uuid().map_err(call_err("uuid"))?;
        let name = opt(device.name());
        let mut r = DeviceReading::new(uuid.clone());
        r.name = name.clone();
        let memory = opt(device.memory_info());
        r.memory_total_bytes = memory.as_ref().map(|m| m.total);
        r.fb_used_bytes = memory.as_ref().map(|m| m.used);
        r.power_mw = opt(device.power_usage()).map(u64::from);
        r.energy_mj = opt(device.total_energy_consumption());
        // A temperature past `i32::MAX` °C is no reading at all.
        r.temp_c =
            opt(device.temperature(TemperatureSensor::Gpu)).and_then(|t| i32::try_from(t).ok());
        r.ecc_corrected_total =
            opt(device.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile));
        r.ecc_uncorrected_total =
            opt(device.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile));
        r.throttle_reasons = opt(device.current_throttle_reasons()).map(|t| t.bits());
        let mig_on = opt(device.mig_mode()).is_some_and(|m| m.current == 1);
        r.mig_mode = Some(mig_on);
        r.nvlinks_active = nvlinks_active(&device);
        r.fabric = fabric(self.nvml, &device);
        if mig_on {
            // Utilization and per-process utilization are NotSupported in MIG mode.
            r.sm_util_pct = None;
            r.process_util_supported = false;
            out.push(r);
            self.read_mig_instances(index, &device, &uuid, name.as_deref().unwrap_or(""), out);
            return Ok(());
        }
        r.sm_util_pct = opt(device.utilization_rates()).map(|u| f64::from(u.gpu.min(100)));
        r.processes = processes(&device);
        let state = &mut self.gpus[index];
        match device.process_utilization_stats(Some(state.cursor_us).filter(|c| *c > 0)) {
            Ok(samples) => {
                r.process_util_supported = true;
                for s in samples {
                    // Keep the largest timestamp seen as the cursor; clamp junk values.
                    state.cursor_us = state.cursor_us.max(s.timestamp);
                    r.util_samples.push(UtilSample {
                        pid: s.pid,
                        timestamp_us: s.timestamp,
                        sm_util_pct: s.sm_util.min(100),
                    });
                }
            }
            // No new samples since the cursor: not an error (nvml-wrapper#56).
            Err(NvmlError::NotFound) => r.process_util_supported = true,
            Err(_) => r.process_util_supported = false,
        }
        out.push(r);
        Ok(())
    }

    fn read_mig_instances(
        &mut self,
        index: usize,
        parent: &Device<'static>,
        parent_uuid: &str,
        parent_name: &str,
        out: &mut Vec<DeviceReading>,
    ) {
        let count = opt(parent.mig_device_count()).unwrap_or(7);
        for i in 0..count {
            // Empty slots answer NotFound/InvalidArg: skip them.
            let Ok(mig) = parent.mig_device_by_index(i) else {
                continue;
            };
            let Ok(uuid) = mig.uuid() else { continue };
            let mut r = DeviceReading::new(uuid.clone());
            r.parent_uuid = Some(parent_uuid.to_owned());
            let memory = opt(mig.memory_info());
            r.memory_total_bytes = memory.as_ref().map(|m| m.total);
            r.fb_used_bytes = memory.as_ref().map(|m| m.used);
            r.mig_profile = memory
                .as_ref()
                .and_then(|m| mig_profile_name(parent_name, m.total));
            r.name = Some(parent_name.to_owned());
            r.processes = processes(&mig);
            let state = &mut self.gpus[index];
            if let Some((gi, _)) = gpu_instance_from_uuid(&uuid) {
                state.gi_of.insert(uuid.clone(), gi);
            } else if let Some(gi) = r.processes.iter().find_map(|p| p.gpu_instance_id) {
                state.gi_of.insert(uuid.clone(), gi);
            }
            if state.gpm
                && let Some(gi) = state.gi_of.get(&uuid).copied()
                && let Ok(sample) = parent.gpm_mig_sample(gi)
            {
                if let Some(prev) = state.gpm_prev.get(&gi)
                    && let Ok(results) = nvml_wrapper::gpm::gpm_metrics_get(
                        self.nvml,
                        prev,
                        &sample,
                        &[GpmMetricId::SmUtil],
                    )
                    && let Some(Ok(m)) = results.into_iter().next()
                {
                    r.sm_util_pct = Some(m.value.clamp(0.0, 100.0));
                }
                state.gpm_prev.insert(gi, sample);
            }
            out.push(r);
        }
    }

    fn drain_events(&mut self, now: DateTime<Utc>, readings: &mut [DeviceReading]) {
        if let Some(rx) = &self.events {
            while let Ok((uuid, event)) = rx.try_recv() {
                if let Some(r) = readings.iter_mut().find(|r| r.uuid == uuid) {
                    r.events.push(event);
                }
            }
        }
        if let Some(kmsg) = &mut self.kmsg {
            for xid in kmsg.drain() {
                let gpu = self.gpus.iter().position(|g| {
                    g.pci_bus_id
                        .as_deref()
                        .is_some_and(|b| same_pci_device(b, &xid.pci_bus_id))
                });
                let Some(gpu) = gpu else { continue };
                let Ok(index) = u32::try_from(gpu) else {
                    continue;
                };
                let Ok(uuid) = self.nvml.device_by_index(index).and_then(|d| d.uuid()) else {
                    continue;
                };
                let event = HealthEvent {
                    kind: HealthEventKind::Xid,
                    code: xid.code,
                    at: now,
                };
                if let Some(r) = readings.iter_mut().find(|r| r.uuid == uuid)
                    && !r
                        .events
                        .iter()
                        .any(|e| e.code == xid.code && e.kind == HealthEventKind::Xid)
                {
                    r.events.push(event);
                }
            }
        }
    }
}

/// NVML's `NVML_NVLINK_MAX_LINKS` (not re-exported by the wrapper).
const NVLINK_MAX_LINKS: u32 = 18;

/// How many of the GPU's NVLink links are up: counted until NVML says a link does not
/// exist (`NotSupported` on link 0: a PCIe-only GPU); `None` when the driver fails to say.
fn nvlinks_active(device: &Device<'static>) -> Option<u32> {
    let mut active = 0;
    for link in 0..NVLINK_MAX_LINKS {
        match device.link_wrapper_for(link).is_active() {
            Ok(true) => active += 1,
            Ok(false) => {}
            Err(NvmlError::NotSupported | NvmlError::InvalidArg) => break,
            Err(_) => return None,
        }
    }
    Some(active)
}

/// The GPU's NVLink fabric: its cluster, clique and registration state
/// (`nvmlDeviceGetGpuFabricInfo`, R525 and later). `None` where the driver lacks the call
/// or fails it (a GPU on no fabric answers `NotSupported`, or succeeds with that state).
#[allow(unsafe_code)]
fn fabric(nvml: &Nvml, device: &Device<'static>) -> Option<ReportedFabric> {
    use nvml_wrapper_sys::bindings::{
        NVML_GPU_FABRIC_STATE_COMPLETED, NVML_GPU_FABRIC_STATE_IN_PROGRESS,
        NVML_GPU_FABRIC_STATE_NOT_STARTED, nvmlGpuFabricInfo_t, nvmlReturn_enum_NVML_SUCCESS,
    };
    // The wrapper loads each symbol on its own; a missing one is an `Err`, never called.
    let call = nvml.lib().nvmlDeviceGetGpuFabricInfo.as_ref().ok()?;
    let mut info = nvmlGpuFabricInfo_t {
        clusterUuid: [0; 16],
        status: nvmlReturn_enum_NVML_SUCCESS,
        cliqueId: 0,
        state: 0,
    };
    // SAFETY: `call` is NVML's own `nvmlDeviceGetGpuFabricInfo`, resolved from the library
    // that `nvml` keeps loaded for the life of the process (the instance is leaked, never
    // shut down). `device.handle()` is a handle NVML gave this instance. `info` is an
    // initialised `nvmlGpuFabricInfo_t` of the layout the call writes (bindgen's, from
    // nvml.h), valid and exclusively borrowed for the call; NVML keeps no pointer to it.
    let result = unsafe { call(device.handle(), &raw mut info) };
    if result != nvmlReturn_enum_NVML_SUCCESS {
        return None;
    }
    let state = match u32::from(info.state) {
        NVML_GPU_FABRIC_STATE_COMPLETED if info.status == nvmlReturn_enum_NVML_SUCCESS => {
            FabricState::Completed
        }
        NVML_GPU_FABRIC_STATE_COMPLETED => FabricState::Failed,
        NVML_GPU_FABRIC_STATE_IN_PROGRESS => FabricState::InProgress,
        NVML_GPU_FABRIC_STATE_NOT_STARTED => FabricState::NotStarted,
        _ => FabricState::NotSupported,
    };
    Some(ReportedFabric {
        cluster_uuid: uuid::Uuid::from_bytes(info.clusterUuid).to_string(),
        clique_id: info.cliqueId,
        state,
    })
}

fn processes(device: &Device<'static>) -> Vec<ProcessReading> {
    opt(device.running_compute_processes())
        .unwrap_or_default()
        .into_iter()
        .map(|p| ProcessReading {
            pid: p.pid,
            fb_used_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            },
            gpu_instance_id: p.gpu_instance_id,
            compute_instance_id: p.compute_instance_id,
        })
        .collect()
}

/// Registers XID and ECC events on every GPU and waits for them on a dedicated thread.
fn start_event_thread(
    nvml: &'static Nvml,
    count: u32,
) -> Option<mpsc::Receiver<(String, HealthEvent)>> {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("nvml-events".into())
        .spawn(move || {
            let Ok(mut set) = nvml.create_event_set() else {
                tracing::warn!("NVML event sets are not supported: XID events come only from the kernel log.");
                return;
            };
            for i in 0..count {
                let Ok(device) = nvml.device_by_index(i) else { continue };
                let wanted = EventTypes::CRITICAL_XID_ERROR
                    | EventTypes::DOUBLE_BIT_ECC_ERROR
                    | EventTypes::SINGLE_BIT_ECC_ERROR;
                let supported = device.supported_event_types().map(|s| s & wanted).unwrap_or(wanted);
                if supported.is_empty() {
                    continue;
                }
                set = match device.register_events(supported, set) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(gpu = i, error = %e.error, "Could not register for NVML events.");
                        return;
                    }
                };
            }
            loop {
                match set.wait(1000) {
                    Ok(data) => {
                        let Ok(uuid) = data.device.uuid() else { continue };
                        let (kind, code) = if data.event_type.contains(EventTypes::CRITICAL_XID_ERROR) {
                            let code = match data.event_data {
                                // XID codes are small; saturate one that is not.
                                Some(nvml_wrapper::enums::event::XidError::Value(v)) => {
                                    u32::try_from(v).unwrap_or(u32::MAX)
                                }
                                _ => 0,
                            };
                            (HealthEventKind::Xid, code)
                        } else if data.event_type.contains(EventTypes::DOUBLE_BIT_ECC_ERROR) {
                            (HealthEventKind::EccDoubleBit, 0)
                        } else {
                            (HealthEventKind::EccSingleBit, 0)
                        };
                        let event = HealthEvent {
                            kind,
                            code,
                            at: Utc::now(),
                        };
                        if tx.send((uuid, event)).is_err() {
                            return;
                        }
                    }
                    Err(NvmlError::Timeout) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "NVML event wait failed; stopping the event thread.");
                        return;
                    }
                }
            }
        });
    spawned.ok().map(|_| rx)
}

impl GpuSource for NvmlSource {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn sample(&mut self, now: DateTime<Utc>) -> Result<Snapshot, SourceError> {
        let mut devices = Vec::new();
        let mut failures = 0;
        let mut last_error = None;
        for i in 0..self.gpus.len() {
            match self.read_gpu(i, &mut devices) {
                Ok(()) => {
                    if !self.gpus[i].readable {
                        tracing::info!(gpu = i, "GPU answers again.");
                    }
                    self.gpus[i].readable = true;
                }
                Err(e) => {
                    // One GPU that stopped answering (fallen off the bus, XID 79) must not
                    // stop the others being measured: it is reported failed, by its UUID.
                    failures += 1;
                    if self.gpus[i].readable {
                        tracing::error!(gpu = i, error = %e, "GPU does not answer: reported as failed.");
                    }
                    self.gpus[i].readable = false;
                    if let Some(uuid) = self.gpus[i].uuid.clone() {
                        let mut r = DeviceReading::new(uuid);
                        r.health = Some(neocloud_schema::ingest::DeviceHealth::Failed);
                        devices.push(r);
                    }
                    last_error = Some(e);
                }
            }
        }
        if failures > 0
            && failures == self.gpus.len()
            && let Some(e) = last_error
        {
            return Err(e);
        }
        self.drain_events(now, &mut devices);
        Ok(Snapshot { at: now, devices })
    }

    fn process_table(&self) -> &dyn ProcessTable {
        &self.procfs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_style_mig_uuids_carry_their_instance_ids() {
        assert_eq!(
            gpu_instance_from_uuid("MIG-GPU-5c1e0000-0000-0000-0000-000000000000/3/0"),
            Some((3, 0))
        );
        assert_eq!(
            gpu_instance_from_uuid("MIG-5c1e0000-0000-0000-0000-000000000000"),
            None
        );
    }

    #[test]
    fn a_mig_profile_is_named_from_its_memory() {
        assert_eq!(
            mig_profile_name(
                "NVIDIA H100 80GB HBM3",
                40 * 1024 * 1024 * 1024 - 300 * 1024 * 1024
            )
            .as_deref(),
            Some("3g.40gb")
        );
        assert_eq!(mig_profile_name("NVIDIA L40S", 1 << 30), None);
    }

    #[test]
    fn without_a_driver_opening_nvml_says_so_clearly() {
        // On a host with a GPU this opens; on CI and laptops it must fail cleanly.
        match NvmlSource::open() {
            Ok(_) => {}
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.contains("NVML is not available") || text.contains("NVML call"),
                    "{text}"
                );
            }
        }
    }
}
