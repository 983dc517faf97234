//! A simulated GPU host, deterministic for a seed: whole, MIG and time-shared GPUs of
//! several models; processes that start and stop, with PID reuse and some whose memory
//! NVML reports as `Unavailable`; per-process utilization samples only for active
//! processes, with µs timestamps and a last-seen cursor like NVML's; `null` SM
//! utilization on MIG; energy counter resets; scheduled XIDs (13, 48, 94 through the
//! event API; 79 and 119 only through the kernel log).
//!
//! The simulation steps once per whole second: step `s` describes the interval
//! `(s-1, s]`. Every step after the first records the [`GroundTruth`] of what each
//! allocation really used in that second, so tests can compare what is billed with the
//! truth, second by second. An agent sampling at 1 Hz on whole seconds bills exactly
//! the truth (up to float rounding).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use neocloud_schema::agent_api::{Assignment, Assignments, FabricState, Inventory, ReportedFabric};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{DeviceHealth, HealthEvent, HealthEventKind};
use neocloud_schema::mig::MigProfile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::kmsg::parse_xid_line;
use super::{DeviceReading, GpuSource, ProcessReading, Snapshot, SourceError, UtilSample};
use crate::attribution::ProcessTable;

/// A simulated host (JSON for `--sim-profile FILE`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimProfile {
    pub hostname: String,
    pub gpus: Vec<SimGpuSpec>,
    /// Concurrent processes per whole or shared GPU.
    #[serde(default = "default_processes_per_gpu")]
    pub processes_per_gpu: u32,
    /// Mean process lifetime in seconds.
    #[serde(default = "default_process_seconds")]
    pub mean_process_seconds: u32,
    /// Share of processes whose memory NVML reports as `Unavailable`.
    #[serde(default)]
    pub memory_unavailable_share: f64,
    /// Share of new processes that reuse a recently freed PID.
    #[serde(default = "default_pid_reuse")]
    pub pid_reuse_share: f64,
    #[serde(default)]
    pub events: Vec<SimEvent>,
}

fn default_processes_per_gpu() -> u32 {
    4
}
fn default_process_seconds() -> u32 {
    120
}
fn default_pid_reuse() -> f64 {
    0.3
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimGpuSpec {
    pub model: GpuModel,
    /// NVML's UUID; generated from the seed when absent.
    #[serde(default)]
    pub uuid: Option<String>,
    /// MIG instances to create (MIG mode on); `None` for a whole GPU.
    #[serde(default)]
    pub mig: Option<Vec<MigProfile>>,
    /// Time-shared between several allocations.
    #[serde(default)]
    pub shared: bool,
    /// Health at start (the server's view, from the inventory); `ok` when absent.
    #[serde(default)]
    pub health: Option<DeviceHealth>,
    /// Active NVLink links to report; all of the model's when absent (fewer: a link down).
    #[serde(default)]
    pub nvlinks_active: Option<u32>,
    /// The NVLink fabric to report; none when absent (the driver cannot tell).
    #[serde(default)]
    pub fabric: Option<ReportedFabric>,
}

/// Something that happens at a given second after the simulation starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimEvent {
    pub after_seconds: u64,
    pub gpu_index: usize,
    pub what: SimEventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SimEventKind {
    /// An XID through NVML's event API.
    Xid(u32),
    /// An XID that only reaches the kernel log.
    KernelXid(u32),
    /// The driver reloads: the energy counter restarts at 0.
    EnergyReset,
    /// The GPU is healthy again (after a reset).
    Recover,
}

impl SimProfile {
    /// A mixed 8-GPU host: 2 MIG H100s, 2 time-shared H100s, 2 A100-80GB, 2 L40S, with
    /// one of each scheduled event.
    pub fn mixed_host(hostname: &str) -> Self {
        let mig = || Some(vec![MigProfile::ThreeG, MigProfile::TwoG, MigProfile::OneG]);
        let gpu = |model, mig, shared| SimGpuSpec {
            model,
            uuid: None,
            mig,
            shared,
            health: None,
            nvlinks_active: None,
            fabric: None,
        };
        let ev = |after_seconds, gpu_index, what| SimEvent {
            after_seconds,
            gpu_index,
            what,
        };
        Self {
            hostname: hostname.into(),
            gpus: vec![
                gpu(GpuModel::H100, mig(), false),
                gpu(GpuModel::H100, mig(), false),
                gpu(GpuModel::H100, None, true),
                gpu(GpuModel::H100, None, true),
                gpu(GpuModel::A100_80, None, false),
                gpu(GpuModel::A100_80, None, false),
                gpu(GpuModel::L40S, None, false),
                gpu(GpuModel::L40S, None, false),
            ],
            processes_per_gpu: default_processes_per_gpu(),
            mean_process_seconds: default_process_seconds(),
            memory_unavailable_share: 0.1,
            pid_reuse_share: default_pid_reuse(),
            events: vec![
                ev(30, 4, SimEventKind::Xid(13)),
                ev(60, 5, SimEventKind::Xid(94)),
                ev(90, 6, SimEventKind::Xid(48)),
                ev(120, 7, SimEventKind::KernelXid(79)),
                ev(150, 5, SimEventKind::KernelXid(119)),
                ev(180, 4, SimEventKind::EnergyReset),
                ev(240, 6, SimEventKind::Recover),
            ],
        }
    }

    /// `gpus` whole GPUs of one model with `processes_per_gpu` processes each (the
    /// benchmark's host), no events.
    pub fn uniform(hostname: &str, model: GpuModel, gpus: usize, processes_per_gpu: u32) -> Self {
        Self {
            hostname: hostname.into(),
            gpus: (0..gpus)
                .map(|_| SimGpuSpec {
                    model,
                    uuid: None,
                    mig: None,
                    shared: false,
                    health: None,
                    nvlinks_active: None,
                    fabric: None,
                })
                .collect(),
            processes_per_gpu,
            mean_process_seconds: default_process_seconds(),
            memory_unavailable_share: 0.0,
            pid_reuse_share: default_pid_reuse(),
            events: Vec::new(),
        }
    }

    /// Exactly the devices the server registered for this node (`GET
    /// /v1/agents/inventory`), so the batches are valid for it. MIG GPUs get a
    /// 3g + 2g + 1g layout; no destructive events are scheduled.
    pub fn from_inventory(inventory: &Inventory) -> Result<Self, SourceError> {
        let gpus = inventory
            .gpus
            .iter()
            .map(|g| {
                let model: GpuModel = g.model.parse().map_err(|e| SourceError::SimProfile {
                    reason: format!("inventory GPU {}: {e}", g.uuid),
                })?;
                Ok(SimGpuSpec {
                    model,
                    uuid: Some(g.uuid.clone()),
                    mig: (g.mig_enabled && model.mig_capable())
                        .then(|| vec![MigProfile::ThreeG, MigProfile::TwoG, MigProfile::OneG]),
                    shared: inventory.shared_gpus,
                    health: match g.health.as_str() {
                        "failed" => Some(DeviceHealth::Failed),
                        "degraded" => Some(DeviceHealth::Degraded),
                        _ => None,
                    },
                    nvlinks_active: None,
                    fabric: (model.spec().nvlinks > 0 && !g.mig_enabled)
                        .then(|| inventory_fabric(&inventory.region, &inventory.nvlink_domain)),
                })
            })
            .collect::<Result<Vec<_>, SourceError>>()?;
        Ok(Self {
            hostname: inventory.hostname.clone(),
            gpus,
            processes_per_gpu: default_processes_per_gpu(),
            mean_process_seconds: default_process_seconds(),
            memory_unavailable_share: 0.1,
            pid_reuse_share: default_pid_reuse(),
            events: vec![SimEvent {
                after_seconds: 45,
                gpu_index: 0,
                what: SimEventKind::Xid(13),
            }],
        })
    }

    /// Devices (GPUs plus MIG instances) and the largest framebuffer: what the server's
    /// validation context would hold for this host.
    /// (devices, largest framebuffer in bytes, highest board power limit in watts).
    pub fn limits(&self) -> (usize, u64, u32) {
        let devices = self
            .gpus
            .iter()
            .map(|g| 1 + g.mig.as_ref().map_or(0, Vec::len))
            .sum();
        let fb = self
            .gpus
            .iter()
            .map(|g| g.model.memory_mib() * 1024 * 1024)
            .max()
            .unwrap_or(0);
        let power = self
            .gpus
            .iter()
            .map(|g| g.model.spec().max_power_w)
            .max()
            .unwrap_or(0);
        (devices, fb, power)
    }

    fn check(&self) -> Result<(), SourceError> {
        let bad = |reason: String| Err(SourceError::SimProfile { reason });
        if self.gpus.is_empty() || self.gpus.len() > 64 {
            return bad("a host has 1 to 64 GPUs".into());
        }
        if self.processes_per_gpu == 0 || self.processes_per_gpu > 512 {
            return bad("processes_per_gpu must be 1 to 512".into());
        }
        for (i, g) in self.gpus.iter().enumerate() {
            if let Some(mig) = &g.mig {
                if !g.model.mig_capable() {
                    return bad(format!("gpus[{i}]: {} is not MIG-capable", g.model));
                }
                let mut used = neocloud_schema::mig::SlotMask::default();
                for p in mig {
                    let Some(start) = used.free_starts(*p).next() else {
                        return bad(format!("gpus[{i}]: the MIG layout does not fit"));
                    };
                    used = used.union(p.mask_at(start));
                }
            }
        }
        for e in &self.events {
            if e.gpu_index >= self.gpus.len() {
                return bad(format!(
                    "event on gpu_index {} beyond the host",
                    e.gpu_index
                ));
            }
        }
        Ok(())
    }
}

/// What one allocation really used in one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TruthSecond {
    /// SM-active seconds that NVML reports per process (whole and shared GPUs).
    pub active_seconds: f64,
    /// SM-active seconds NVML cannot attribute (MIG instances without GPM).
    pub active_unreported_seconds: f64,
    /// Framebuffer byte-seconds NVML reports.
    pub fb_byte_seconds: f64,
    /// Framebuffer byte-seconds of processes whose memory reads `Unavailable`.
    pub fb_unavailable_byte_seconds: f64,
}

#[derive(Serialize)]
struct TruthLine<'a> {
    second: i64,
    allocation_id: AllocationId,
    #[serde(flatten)]
    usage: &'a TruthSecond,
}

/// The simulation's record of real usage per (second, allocation).
#[derive(Debug, Default)]
pub struct GroundTruth {
    /// Kept in memory for tests; the binary only streams to a file.
    pub retain: bool,
    pub seconds: BTreeMap<(i64, AllocationId), TruthSecond>,
    writer: Option<std::io::BufWriter<std::fs::File>>,
}

impl GroundTruth {
    /// Streams one JSON line per (second, allocation) to `path`.
    pub fn write_to(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        self.writer = Some(std::io::BufWriter::new(std::fs::File::create(path)?));
        Ok(())
    }

    /// Total of one allocation over the seconds in `(from, to]`.
    pub fn total(&self, allocation: AllocationId, from: i64, to: i64) -> TruthSecond {
        let mut t = TruthSecond::default();
        for ((s, a), u) in &self.seconds {
            if *a == allocation && *s > from && *s <= to {
                t.active_seconds += u.active_seconds;
                t.active_unreported_seconds += u.active_unreported_seconds;
                t.fb_byte_seconds += u.fb_byte_seconds;
                t.fb_unavailable_byte_seconds += u.fb_unavailable_byte_seconds;
            }
        }
        t
    }

    fn record(&mut self, second: i64, usage: BTreeMap<AllocationId, TruthSecond>) {
        for (allocation_id, u) in usage {
            if let Some(w) = &mut self.writer {
                let line = TruthLine {
                    second,
                    allocation_id,
                    usage: &u,
                };
                // The truth file is a test aid: a failed write must not stop sampling.
                if let Ok(json) = serde_json::to_string(&line) {
                    let _ = writeln!(w, "{json}");
                }
            }
            if self.retain {
                self.seconds.insert((second, allocation_id), u);
            }
        }
        if let Some(w) = &mut self.writer {
            let _ = w.flush();
        }
    }
}

#[derive(Debug, Clone)]
struct SimDevice {
    uuid: String,
    parent: Option<usize>,
    mig_profile: Option<String>,
    gpu_index: usize,
    model: GpuModel,
    memory_bytes: u64,
    pci_bus_id: String,
    mig_mode: bool,
    /// Whole GPUs only.
    nvlinks_active: Option<u32>,
    fabric: Option<ReportedFabric>,
    allocations: Vec<AllocationId>,
    gpu_instance_id: Option<u32>,
    compute_instance_id: Option<u32>,
    /// First memory slot of a MIG instance.
    mig_slot: Option<u8>,
    /// A MIG instance destroyed by a reconfiguration: no longer reported.
    retired: bool,
    health: DeviceHealth,
    energy_mj: u64,
    util_pct: u32,
    fb_used: u64,
    power_mw: u64,
    temp_c: i32,
    events: Vec<HealthEvent>,
    samples: VecDeque<UtilSample>,
    cursor_us: u64,
}

#[derive(Debug, Clone)]
struct SimProc {
    pid: u32,
    device: usize,
    allocation: AllocationId,
    base_util: u32,
    util: u32,
    fb: u64,
    memory_unavailable: bool,
    ends_at: i64,
}

#[derive(Debug, Clone)]
struct SimProcEntry {
    start_time: u64,
    cgroup: String,
    environ: Vec<u8>,
}

/// The simulated host's `/proc`: cgroups name the allocation like a real container
/// runtime would (`…/neocloud-<allocation>.scope`).
#[derive(Debug, Default)]
pub struct SimProcessTable {
    entries: Mutex<HashMap<u32, SimProcEntry>>,
}

impl SimProcessTable {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<u32, SimProcEntry>) -> T) -> T {
        let mut guard = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }
}

impl ProcessTable for SimProcessTable {
    fn start_time(&self, pid: u32) -> Option<u64> {
        self.with(|e| e.get(&pid).map(|p| p.start_time))
    }
    fn cgroup(&self, pid: u32) -> Option<String> {
        self.with(|e| e.get(&pid).map(|p| p.cgroup.clone()))
    }
    fn environ(&self, pid: u32) -> Option<Vec<u8>> {
        self.with(|e| e.get(&pid).map(|p| p.environ.clone()))
    }
}

/// The simulated host as a [`GpuSource`].
#[derive(Debug)]
pub struct SimSource {
    profile: SimProfile,
    rng: ChaCha8Rng,
    devices: Vec<SimDevice>,
    procs: Vec<SimProc>,
    free_pids: VecDeque<u32>,
    next_pid: u32,
    next_start_time: u64,
    first_second: Option<i64>,
    last_second: Option<i64>,
    kernel_log: Vec<String>,
    table: Arc<SimProcessTable>,
    pub truth: GroundTruth,
}

/// The fabric a registered node's GPUs report in the simulator: one cluster per region and
/// NVLink domain (the same for every tray of a multi-node domain), registered, clique 1.
fn inventory_fabric(region: &str, domain: &str) -> ReportedFabric {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        (salt, region, domain).hash(&mut h);
        h.finish()
    };
    let bits = (u128::from(half(1)) << 64) | u128::from(half(2));
    ReportedFabric {
        cluster_uuid: Uuid::from_u128(bits).to_string(),
        clique_id: 1,
        state: FabricState::Completed,
    }
}

fn random_uuid(rng: &mut ChaCha8Rng) -> Uuid {
    uuid::Builder::from_random_bytes(rng.random()).into_uuid()
}

/// Seconds of history the simulated driver keeps utilization samples for.
const SAMPLE_BUFFER_SECONDS: usize = 20;
/// A clock jump longer than this is skipped rather than simulated second by second.
const MAX_CATCH_UP_SECONDS: i64 = 3600;

/// The simulated physical GPU `i` of the profile.
fn physical_gpu(rng: &mut ChaCha8Rng, i: usize, g: &SimGpuSpec) -> SimDevice {
    let uuid = g
        .uuid
        .clone()
        .unwrap_or_else(|| format!("GPU-{}", random_uuid(rng)));
    let memory_bytes = g.model.memory_mib() * 1024 * 1024;
    let mut allocations = vec![AllocationId(random_uuid(rng))];
    if g.shared {
        allocations.push(AllocationId(random_uuid(rng)));
        allocations.push(AllocationId(random_uuid(rng)));
    }
    SimDevice {
        uuid,
        parent: None,
        mig_profile: None,
        gpu_index: i,
        model: g.model,
        memory_bytes,
        pci_bus_id: format!("0000:{:02x}:00", 0x18 + i * 0x10),
        mig_mode: g.mig.is_some(),
        nvlinks_active: Some(g.nvlinks_active.unwrap_or(g.model.spec().nvlinks)),
        fabric: g.fabric.clone(),
        allocations: if g.mig.is_some() {
            Vec::new()
        } else {
            allocations
        },
        gpu_instance_id: None,
        compute_instance_id: None,
        mig_slot: None,
        retired: false,
        health: g.health.unwrap_or(DeviceHealth::Ok),
        energy_mj: rng.random_range(1_000_000..1_000_000_000),
        util_pct: 0,
        fb_used: 0,
        power_mw: 0,
        temp_c: 35,
        events: Vec::new(),
        samples: VecDeque::new(),
        cursor_us: 0,
    }
}

/// A MIG instance of `profile` on the physical GPU at `parent` in the device list.
fn mig_instance(
    rng: &mut ChaCha8Rng,
    parent_index: usize,
    i: usize,
    g: &SimGpuSpec,
    p: MigProfile,
    instance: Option<u32>,
    slot: Option<u8>,
) -> SimDevice {
    let uuid = format!("MIG-{}", random_uuid(rng));
    SimDevice {
        uuid,
        parent: Some(parent_index),
        mig_profile: Some(p.name(g.model)),
        gpu_index: i,
        model: g.model,
        memory_bytes: p.memory_mib(g.model) * 1024 * 1024,
        pci_bus_id: String::new(),
        mig_mode: false,
        nvlinks_active: None,
        fabric: None,
        allocations: vec![AllocationId(random_uuid(rng))],
        gpu_instance_id: instance,
        compute_instance_id: Some(0),
        mig_slot: slot,
        retired: false,
        health: g.health.unwrap_or(DeviceHealth::Ok),
        energy_mj: 0,
        util_pct: 0,
        fb_used: 0,
        power_mw: 0,
        temp_c: 0,
        events: Vec::new(),
        samples: VecDeque::new(),
        cursor_us: 0,
    }
}

impl SimSource {
    pub fn new(profile: SimProfile, seed: u64) -> Result<Self, SourceError> {
        profile.check()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut devices = Vec::new();
        for (i, g) in profile.gpus.iter().enumerate() {
            let parent_index = devices.len();
            devices.push(physical_gpu(&mut rng, i, g));
            let mut used = neocloud_schema::mig::SlotMask::default();
            for (k, p) in g.mig.iter().flatten().enumerate() {
                let slot = used.free_starts(*p).next();
                if let Some(start) = slot {
                    used = used.union(p.mask_at(start));
                }
                // The k-th instance of a GPU: at most 7, numbered from 1.
                let instance = u32::try_from(k + 1).ok();
                devices.push(mig_instance(
                    &mut rng,
                    parent_index,
                    i,
                    g,
                    *p,
                    instance,
                    slot,
                ));
            }
        }
        Ok(Self {
            profile,
            rng,
            devices,
            procs: Vec::new(),
            free_pids: VecDeque::new(),
            next_pid: 4000,
            next_start_time: 1,
            first_second: None,
            last_second: None,
            kernel_log: Vec::new(),
            table: Arc::new(SimProcessTable::default()),
            truth: GroundTruth::default(),
        })
    }

    pub fn profile(&self) -> &SimProfile {
        &self.profile
    }

    /// Every allocation the simulation runs work for, with the device it uses.
    pub fn allocations(&self) -> Vec<(String, AllocationId)> {
        self.devices
            .iter()
            .flat_map(|d| d.allocations.iter().map(|a| (d.uuid.clone(), *a)))
            .collect()
    }

    /// The simulated kernel log lines so far (`NVRM: Xid …`).
    pub fn kernel_log(&self) -> &[String] {
        &self.kernel_log
    }

    /// Runs the simulation up to and including whole second `second`.
    fn advance_to(&mut self, second: i64) {
        let from = match self.last_second {
            None => {
                self.first_second = Some(second);
                self.step(second, false);
                self.last_second = Some(second);
                return;
            }
            Some(last) if second <= last => return,
            Some(last) if second - last > MAX_CATCH_UP_SECONDS => second - 1,
            Some(last) => last,
        };
        for s in from + 1..=second {
            self.step(s, true);
        }
        self.last_second = Some(second);
    }

    fn step(&mut self, s: i64, record_truth: bool) {
        self.fire_due_events(s);
        self.end_processes(s);
        self.keep_devices_busy(s);
        self.draw_utilization();
        let usage = self.account_second(s);
        self.roll_up_mig_instances();
        self.update_boards();
        if record_truth {
            self.truth.record(s, usage);
        }
    }

    /// The profile's events due at second `s` (counted from the first second).
    fn fire_due_events(&mut self, s: i64) {
        // Never negative: the first second is the earliest.
        let elapsed = u64::try_from((s - self.first_second.unwrap_or(s)).max(0)).unwrap_or(0);
        let due: Vec<SimEvent> = self
            .profile
            .events
            .iter()
            .filter(|e| e.after_seconds == elapsed)
            .cloned()
            .collect();
        let at = DateTime::from_timestamp(s, 0).unwrap_or_default();
        for e in due {
            self.apply_event(&e, at);
        }
    }

    /// Processes end; their PIDs become free for reuse.
    fn end_processes(&mut self, s: i64) {
        let mut ended = Vec::new();
        self.procs.retain(|p| {
            let keep = p.ends_at > s;
            if !keep {
                ended.push(p.pid);
            }
            keep
        });
        for pid in ended {
            self.forget_pid(pid);
        }
    }

    /// New processes keep each healthy device at its target.
    fn keep_devices_busy(&mut self, s: i64) {
        for d in 0..self.devices.len() {
            let dev = &self.devices[d];
            if dev.retired || dev.allocations.is_empty() || dev.health == DeviceHealth::Failed {
                continue;
            }
            let target = if dev.parent.is_some() {
                2
            } else {
                self.profile.processes_per_gpu
            } as usize;
            while self.procs.iter().filter(|p| p.device == d).count() < target {
                self.spawn(d, s, target);
            }
        }
    }

    /// Utilization of this second: integers like NVML's, summing to at most 100.
    fn draw_utilization(&mut self) {
        for dev in &mut self.devices {
            dev.util_pct = 0;
            dev.fb_used = 0;
        }
        let mut per_device_util: HashMap<usize, u32> = HashMap::new();
        for p in &mut self.procs {
            let idle = self.rng.random_bool(0.1);
            p.util = if idle {
                0
            } else {
                let jitter = self.rng.random_range(0..=p.base_util / 5 + 1);
                (p.base_util + jitter).saturating_sub(p.base_util / 10)
            };
            *per_device_util.entry(p.device).or_default() += p.util;
        }
        for p in &mut self.procs {
            let total = per_device_util.get(&p.device).copied().unwrap_or(0);
            if total > 100 {
                p.util = p.util * 100 / total;
            }
        }
    }

    /// Adds second `s` of every process to its device and to its allocation's truth.
    fn account_second(&mut self, s: i64) -> BTreeMap<AllocationId, TruthSecond> {
        let mut usage: BTreeMap<AllocationId, TruthSecond> = BTreeMap::new();
        // The simulated clock is after 1970.
        let micros = u64::try_from(s).unwrap_or(0).saturating_mul(1_000_000);
        for p in &self.procs {
            let dev = &mut self.devices[p.device];
            dev.util_pct += p.util;
            dev.fb_used += p.fb;
            let is_mig = dev.parent.is_some();
            let u = usage.entry(p.allocation).or_default();
            if is_mig {
                u.active_unreported_seconds += f64::from(p.util) / 100.0;
            } else {
                u.active_seconds += f64::from(p.util) / 100.0;
                if p.util > 0 {
                    dev.samples.push_back(UtilSample {
                        pid: p.pid,
                        // Mid-second, spread by pid: a sample inside (s-1, s].
                        timestamp_us: micros - 500_000 + u64::from(p.pid % 1000),
                        sm_util_pct: p.util,
                    });
                }
            }
            if p.memory_unavailable {
                u.fb_unavailable_byte_seconds += p.fb as f64;
            } else {
                u.fb_byte_seconds += p.fb as f64;
            }
        }
        usage
    }

    /// Parents of MIG instances: memory is the instances' sum; utilization their share.
    fn roll_up_mig_instances(&mut self) {
        for d in 0..self.devices.len() {
            if let Some(parent) = self.devices[d].parent {
                let (fb, util) = (self.devices[d].fb_used, self.devices[d].util_pct);
                self.devices[parent].fb_used += fb;
                self.devices[parent].util_pct += util * 100 / 700;
            }
        }
    }

    /// Power, energy and temperature follow the whole board; old samples age out.
    fn update_boards(&mut self) {
        for dev in &mut self.devices {
            while dev.samples.len() > SAMPLE_BUFFER_SECONDS * 64 {
                dev.samples.pop_front();
            }
            if dev.parent.is_some() {
                continue;
            }
            let max_mw = u64::from(dev.model.spec().max_power_w) * 1000;
            let idle_mw = max_mw / 8;
            let util = dev.util_pct.min(100);
            dev.power_mw = idle_mw + (max_mw - idle_mw) * u64::from(util) / 100;
            // mW × 1 s = mJ.
            dev.energy_mj += dev.power_mw;
            // At most 100: fits any integer.
            dev.temp_c = 35 + i32::try_from(util).unwrap_or(100) * 45 / 100;
        }
    }

    fn apply_event(&mut self, e: &SimEvent, at: DateTime<Utc>) {
        let Some(d) = self
            .devices
            .iter()
            .position(|d| d.gpu_index == e.gpu_index && d.parent.is_none())
        else {
            return;
        };
        let affected: Vec<usize> = (0..self.devices.len())
            .filter(|&i| self.devices[i].gpu_index == e.gpu_index)
            .collect();
        match e.what {
            SimEventKind::Xid(code) => {
                self.devices[d].events.push(HealthEvent {
                    kind: HealthEventKind::Xid,
                    code,
                    at,
                });
                self.xid_effect(code, &affected);
            }
            SimEventKind::KernelXid(code) => {
                let line = format!(
                    "4,{},{},-;NVRM: Xid (PCI:{}): {code}, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                    self.kernel_log.len(),
                    at.timestamp(),
                    self.devices[d].pci_bus_id
                );
                self.kernel_log.push(line.clone());
                // The simulated host reads its own kernel log through the real parser.
                if let Some(xid) = parse_xid_line(&line) {
                    self.devices[d].events.push(HealthEvent {
                        kind: HealthEventKind::Xid,
                        code: xid.code,
                        at,
                    });
                }
                self.xid_effect(code, &affected);
            }
            SimEventKind::EnergyReset => self.devices[d].energy_mj = 0,
            SimEventKind::Recover => {
                for &i in &affected {
                    self.devices[i].health = DeviceHealth::Ok;
                }
            }
        }
    }

    fn xid_effect(&mut self, code: u32, affected: &[usize]) {
        match super::health_for_xid(code) {
            Some(DeviceHealth::Failed) => {
                for &i in affected {
                    self.devices[i].health = DeviceHealth::Failed;
                }
                // Every process on a failed GPU dies.
                let dead: Vec<u32> = self
                    .procs
                    .iter()
                    .filter(|p| affected.contains(&p.device))
                    .map(|p| p.pid)
                    .collect();
                self.procs.retain(|p| !affected.contains(&p.device));
                for pid in dead {
                    self.forget_pid(pid);
                }
            }
            Some(h) => {
                for &i in affected {
                    self.devices[i].health = super::worse(self.devices[i].health, h);
                }
            }
            None => {
                // An application error: one process on the GPU dies.
                if let Some(pos) = self.procs.iter().position(|p| affected.contains(&p.device)) {
                    let pid = self.procs.remove(pos).pid;
                    self.forget_pid(pid);
                }
            }
        }
    }

    fn forget_pid(&mut self, pid: u32) {
        self.table.with(|e| e.remove(&pid));
        self.free_pids.push_back(pid);
    }

    fn spawn(&mut self, d: usize, s: i64, target: usize) {
        let reuse =
            !self.free_pids.is_empty() && self.rng.random_bool(self.profile.pid_reuse_share);
        let pid = match reuse.then(|| self.free_pids.pop_front()).flatten() {
            Some(pid) => pid,
            None => {
                self.next_pid += 1;
                self.next_pid
            }
        };
        let dev = &self.devices[d];
        let allocation = dev.allocations[self.rng.random_range(0..dev.allocations.len())];
        // Saturates: a target past `u32::MAX` processes leaves the least share, 2.
        let share = (100 / u32::try_from(target).unwrap_or(u32::MAX)).max(2);
        let base_util = self.rng.random_range(1..share);
        let fb = self
            .rng
            .random_range(1..(dev.memory_bytes / (target as u64 * 2)).max(2));
        let memory_unavailable = self
            .rng
            .random_bool(self.profile.memory_unavailable_share.clamp(0.0, 1.0));
        let mean = u64::from(self.profile.mean_process_seconds.max(2));
        let run_s = self.rng.random_range(mean / 2..=mean * 3 / 2);
        // At most 1.5 × a `u32`: fits.
        let ends_at = s + i64::try_from(run_s).unwrap_or(i64::MAX);
        let project = ["llm", "vision", "rl"][self.rng.random_range(0..3usize)];
        let start_time = self.next_start_time;
        self.next_start_time += 1;
        self.table.with(|e| {
            e.insert(
                pid,
                SimProcEntry {
                    start_time,
                    cgroup: format!("0::/system.slice/neocloud-{allocation}.scope\n"),
                    environ: format!("PATH=/usr/bin\0NEOCLOUD_PROJECT={project}\0").into_bytes(),
                },
            )
        });
        self.procs.push(SimProc {
            pid,
            device: d,
            allocation,
            base_util,
            util: 0,
            fb,
            memory_unavailable,
            ends_at,
        });
    }

    /// Runs work for exactly the server's allocations from now on: a whole or time-shared
    /// GPU runs the processes of the allocations assigned to it (none: idle); a MIG GPU
    /// is reconfigured to the instances of its MIG allocations (profile and start slot),
    /// keeping instances that match. Processes of allocations that went away end.
    pub fn assign(&mut self, assignments: &Assignments) {
        let parents: Vec<usize> = (0..self.devices.len())
            .filter(|&d| self.devices[d].parent.is_none())
            .collect();
        for p in parents {
            let uuid = self.devices[p].uuid.clone();
            let mine: Vec<&Assignment> = assignments
                .assignments
                .iter()
                .filter(|a| a.gpu_uuid == uuid)
                .collect();
            let any_mig = mine.iter().any(|a| a.mig_profile.is_some());
            let any_whole = mine.iter().any(|a| a.mig_profile.is_none());
            // The tenant of a whole GPU (or bare-metal node) that was in MIG mode turns
            // MIG off and uses the GPU whole; MIG allocations turn it on again.
            if any_mig && self.devices[p].model.mig_capable() {
                self.devices[p].mig_mode = true;
            } else if any_whole {
                self.devices[p].mig_mode = false;
            }
            if self.devices[p].mig_mode {
                self.assign_mig(p, &mine);
            } else {
                let mut allocs: Vec<AllocationId> = mine
                    .iter()
                    .filter(|a| a.mig_profile.is_none())
                    .map(|a| a.allocation_id)
                    .collect();
                allocs.dedup();
                self.devices[p].allocations = allocs;
                self.retire_instances(p, &[]);
            }
        }
        let gone: Vec<u32> = self
            .procs
            .iter()
            .filter(|pr| !self.devices[pr.device].allocations.contains(&pr.allocation))
            .map(|pr| pr.pid)
            .collect();
        self.procs.retain(|pr| !gone.contains(&pr.pid));
        for pid in gone {
            self.forget_pid(pid);
        }
    }

    /// GPU `p` in MIG mode: each MIG allocation gets an instance of its profile (at its
    /// slot, when given), reusing a live one where it can; the others retire.
    fn assign_mig(&mut self, p: usize, mine: &[&Assignment]) {
        self.devices[p].allocations.clear();
        let mut keep: Vec<usize> = Vec::new();
        for a in mine.iter().filter(|a| a.mig_profile.is_some()) {
            let profile_name = a.mig_profile.clone().unwrap_or_default();
            let existing = (0..self.devices.len()).find(|&i| {
                let d = &self.devices[i];
                d.parent == Some(p)
                    && !d.retired
                    && !keep.contains(&i)
                    && d.mig_profile.as_deref() == Some(profile_name.as_str())
                    && (a.mig_start_slot.is_none() || d.mig_slot == a.mig_start_slot)
            });
            let index = match existing {
                Some(i) => i,
                None => match self.create_instance(p, profile_name, a.mig_start_slot) {
                    Some(i) => i,
                    None => continue,
                },
            };
            self.devices[index].allocations = vec![a.allocation_id];
            keep.push(index);
        }
        self.retire_instances(p, &keep);
    }

    /// A new MIG instance of `profile_name` on GPU `p` (None when the GPU's model has no
    /// such profile); returns its index.
    fn create_instance(
        &mut self,
        p: usize,
        profile_name: String,
        slot: Option<u8>,
    ) -> Option<usize> {
        let model = self.devices[p].model;
        let profile = MigProfile::parse(&profile_name, model).ok()?;
        let gi = self
            .devices
            .iter()
            .filter(|d| d.parent == Some(p))
            .filter_map(|d| d.gpu_instance_id)
            .max()
            .unwrap_or(0)
            + 1;
        let uuid = format!("MIG-{}", random_uuid(&mut self.rng));
        self.devices.push(SimDevice {
            uuid,
            parent: Some(p),
            mig_profile: Some(profile_name),
            gpu_index: self.devices[p].gpu_index,
            model,
            memory_bytes: profile.memory_mib(model) * 1024 * 1024,
            pci_bus_id: String::new(),
            mig_mode: false,
            nvlinks_active: None,
            fabric: None,
            allocations: Vec::new(),
            gpu_instance_id: Some(gi),
            compute_instance_id: Some(0),
            mig_slot: slot,
            retired: false,
            health: self.devices[p].health,
            energy_mj: 0,
            util_pct: 0,
            fb_used: 0,
            power_mw: 0,
            temp_c: 0,
            events: Vec::new(),
            samples: VecDeque::new(),
            cursor_us: 0,
        });
        Some(self.devices.len() - 1)
    }

    /// Retires GPU `p`'s MIG instances other than those in `keep`.
    fn retire_instances(&mut self, p: usize, keep: &[usize]) {
        for i in 0..self.devices.len() {
            if self.devices[i].parent == Some(p) && !keep.contains(&i) {
                self.devices[i].retired = true;
                self.devices[i].allocations.clear();
            }
        }
    }

    fn reading(&mut self, d: usize) -> DeviceReading {
        let name = self.devices[d].model.spec().nvml_name_prefix.to_owned();
        let parent_uuid = self.devices[d].parent.map(|p| self.devices[p].uuid.clone());
        let dev = &mut self.devices[d];
        let mut r = DeviceReading::new(dev.uuid.clone());
        r.parent_uuid = parent_uuid;
        r.mig_profile = dev.mig_profile.clone();
        r.name = Some(name);
        r.memory_total_bytes = Some(dev.memory_bytes);
        r.fb_used_bytes = Some(dev.fb_used);
        r.health = Some(dev.health);
        r.nvlinks_active = dev.nvlinks_active;
        r.fabric.clone_from(&dev.fabric);
        r.events = std::mem::take(&mut dev.events);
        let is_mig = dev.parent.is_some();
        if dev.mig_mode || is_mig {
            // NVML: no utilization_rates and no per-process utilization on MIG.
            r.sm_util_pct = None;
            r.process_util_supported = false;
        } else {
            r.sm_util_pct = Some(f64::from(dev.util_pct.min(100)));
            r.process_util_supported = true;
            let cursor = dev.cursor_us;
            r.util_samples = dev
                .samples
                .iter()
                .filter(|s| s.timestamp_us > cursor)
                .copied()
                .collect();
            if let Some(max) = r.util_samples.iter().map(|s| s.timestamp_us).max() {
                dev.cursor_us = max;
            }
        }
        if !is_mig {
            r.energy_mj = Some(dev.energy_mj);
            r.power_mw = Some(dev.power_mw);
            r.temp_c = Some(dev.temp_c);
            r.mig_mode = Some(dev.mig_mode);
            r.ecc_corrected_total = Some(0);
            r.ecc_uncorrected_total = Some(0);
            r.throttle_reasons = Some(0);
        }
        r.processes = self
            .procs
            .iter()
            .filter(|p| p.device == d)
            .map(|p| ProcessReading {
                pid: p.pid,
                fb_used_bytes: (!p.memory_unavailable).then_some(p.fb),
                gpu_instance_id: self.devices[d].gpu_instance_id,
                compute_instance_id: self.devices[d].compute_instance_id,
            })
            .collect();
        r
    }
}

impl GpuSource for SimSource {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn sample(&mut self, now: DateTime<Utc>) -> Result<Snapshot, SourceError> {
        self.advance_to(now.timestamp());
        let live: Vec<usize> = (0..self.devices.len())
            .filter(|&d| !self.devices[d].retired)
            .collect();
        let devices = live.into_iter().map(|d| self.reading(d)).collect();
        Ok(Snapshot { at: now, devices })
    }

    fn process_table(&self) -> &dyn ProcessTable {
        self.table.as_ref()
    }

    fn apply_assignments(&mut self, assignments: &Assignments) {
        self.assign(assignments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn run(seed: u64, seconds: i64) -> Vec<Snapshot> {
        let mut sim = SimSource::new(SimProfile::mixed_host("sim-1"), seed).unwrap();
        (0..seconds).map(|s| sim.sample(at(s)).unwrap()).collect()
    }

    #[test]
    fn the_same_seed_gives_the_same_host_second_by_second() {
        assert_eq!(run(7, 40), run(7, 40));
        assert_ne!(run(7, 40), run(8, 40));
    }

    #[test]
    fn mig_instances_report_no_sm_utilization_and_name_their_parent() {
        let snap = &run(1, 3)[2];
        let mig: Vec<_> = snap
            .devices
            .iter()
            .filter(|d| d.uuid.starts_with("MIG-"))
            .collect();
        assert_eq!(mig.len(), 6);
        for d in mig {
            assert_eq!(d.sm_util_pct, None);
            assert!(
                d.parent_uuid
                    .as_deref()
                    .is_some_and(|p| p.starts_with("GPU-"))
            );
            assert!(d.util_samples.is_empty());
        }
    }

    #[test]
    fn utilization_samples_are_new_since_the_cursor_and_only_for_active_processes() {
        let mut sim = SimSource::new(SimProfile::mixed_host("sim-1"), 3).unwrap();
        sim.sample(at(0)).unwrap();
        let a = sim.sample(at(1)).unwrap();
        let b = sim.sample(at(1)).unwrap();
        let gpu = |s: &Snapshot| {
            s.devices
                .iter()
                .find(|d| d.uuid.starts_with("GPU-") && d.sm_util_pct.is_some())
                .cloned()
                .unwrap()
        };
        assert!(!gpu(&a).util_samples.is_empty());
        assert!(
            gpu(&b).util_samples.is_empty(),
            "nothing new at the same second"
        );
        assert!(gpu(&a).util_samples.iter().all(|s| s.sm_util_pct > 0));
    }

    #[test]
    fn scheduled_xids_arrive_including_the_kernel_log_only_ones() {
        let snaps = run(1, 200);
        let codes: Vec<u32> = snaps
            .iter()
            .flat_map(|s| {
                s.devices
                    .iter()
                    .flat_map(|d| d.events.iter().map(|e| e.code))
            })
            .collect();
        assert_eq!(codes, vec![13, 94, 48, 79, 119]);
        let failed = snaps[125]
            .devices
            .iter()
            .filter(|d| d.health == Some(DeviceHealth::Failed))
            .count();
        assert_eq!(failed, 2, "the GPUs behind XID 48 and 79");
    }

    #[test]
    fn the_energy_counter_restarts_when_the_driver_reloads() {
        let snaps = run(1, 185);
        let energy = |s: &Snapshot| {
            s.devices
                .iter()
                .filter(|d| d.parent_uuid.is_none())
                .nth(4)
                .unwrap()
                .energy_mj
                .unwrap()
        };
        assert!(energy(&snaps[179]) > energy(&snaps[181]));
    }

    #[test]
    fn pids_are_reused_by_other_processes() {
        let mut sim = SimSource::new(SimProfile::mixed_host("sim-1"), 5).unwrap();
        let mut seen: HashMap<u32, u64> = HashMap::new();
        let mut reused = false;
        for s in 0..600 {
            let snap = sim.sample(at(s)).unwrap();
            for p in snap.devices.iter().flat_map(|d| d.processes.iter()) {
                let start = sim.process_table().start_time(p.pid).unwrap();
                if let Some(before) = seen.insert(p.pid, start) {
                    reused |= before != start;
                }
            }
        }
        assert!(reused);
    }

    fn assignment(
        alloc: AllocationId,
        gpu: &str,
        mig: Option<(&str, u8)>,
        milli: Option<u32>,
    ) -> neocloud_schema::agent_api::Assignment {
        neocloud_schema::agent_api::Assignment {
            allocation_id: alloc,
            gpu_uuid: gpu.into(),
            mig_profile: mig.map(|m| m.0.to_owned()),
            mig_start_slot: mig.map(|m| m.1),
            milli_gpu: milli,
            status: "active".into(),
            started_at: at(0),
            preempt_at: None,
        }
    }

    #[test]
    fn with_assignments_work_runs_for_exactly_the_servers_allocations() {
        let mut sim = SimSource::new(SimProfile::mixed_host("sim-1"), 9).unwrap();
        let gpus: Vec<String> = sim
            .devices
            .iter()
            .filter(|d| d.parent.is_none())
            .map(|d| d.uuid.clone())
            .collect();
        let (whole, mig_a, mig_b, shared, bare) = (
            AllocationId(Uuid::from_u128(1)),
            AllocationId(Uuid::from_u128(2)),
            AllocationId(Uuid::from_u128(3)),
            AllocationId(Uuid::from_u128(4)),
            AllocationId(Uuid::from_u128(5)),
        );
        sim.sample(at(0)).unwrap();
        sim.assign(&Assignments {
            hostname: "sim-1".into(),
            assignments: vec![
                assignment(whole, &gpus[4], None, None),
                assignment(mig_a, &gpus[0], Some(("1g.10gb", 3)), None),
                assignment(mig_b, &gpus[0], Some(("3g.40gb", 4)), None),
                assignment(shared, &gpus[2], None, Some(250)),
                assignment(bare, &gpus[1], None, None),
            ],
        });
        let snap = sim.sample(at(5)).unwrap();
        let table = sim.process_table();
        let mut seen = std::collections::BTreeSet::new();
        for d in &snap.devices {
            for p in &d.processes {
                let cgroup = table.cgroup(p.pid).unwrap();
                seen.insert(
                    crate::attribution::allocation_from_cgroup(&cgroup, "neocloud-").unwrap(),
                );
            }
        }
        assert_eq!(
            seen,
            [whole, mig_a, mig_b, shared, bare].into_iter().collect()
        );
        let migs: Vec<_> = snap
            .devices
            .iter()
            .filter(|d| d.parent_uuid.as_deref() == Some(gpus[0].as_str()))
            .map(|d| d.mig_profile.clone().unwrap())
            .collect();
        assert_eq!(
            migs.len(),
            2,
            "GPU 0 reconfigured to its two MIG allocations: {migs:?}"
        );
        assert!(
            snap.devices
                .iter()
                .all(|d| d.parent_uuid.as_deref() != Some(gpus[1].as_str())),
            "GPU 1 is sold whole: MIG is off, no instances"
        );
        let bare_gpu = snap.devices.iter().find(|d| d.uuid == gpus[1]).unwrap();
        assert!(bare_gpu.sm_util_pct.is_some() && !bare_gpu.processes.is_empty());
        let idle = snap.devices.iter().find(|d| d.uuid == gpus[5]).unwrap();
        assert!(idle.processes.is_empty(), "an unassigned GPU is idle");
    }

    #[test]
    fn a_gpu_the_server_knows_as_failed_stays_failed_and_runs_nothing() {
        let inventory = Inventory {
            node_id: None,
            hostname: "n1".into(),
            region: "r".into(),
            zone: "z".into(),
            rack: "k".into(),
            nvlink_domain: "d".into(),
            gpu_model: "L40S".into(),
            mig_enabled: false,
            shared_gpus: false,
            gpus: ["ok", "failed"]
                .iter()
                .enumerate()
                .map(|(i, h)| neocloud_schema::agent_api::InventoryGpu {
                    uuid: format!("GPU-{i}"),
                    index: i as u32,
                    model: "L40S".into(),
                    memory_mib: 48 * 1024,
                    mig_enabled: false,
                    health: (*h).into(),
                })
                .collect(),
        };
        let mut sim = SimSource::new(SimProfile::from_inventory(&inventory).unwrap(), 1).unwrap();
        let snap = sim.sample(at(3)).unwrap();
        assert_eq!(snap.devices[0].health, Some(DeviceHealth::Ok));
        assert!(!snap.devices[0].processes.is_empty());
        assert_eq!(snap.devices[1].health, Some(DeviceHealth::Failed));
        assert!(snap.devices[1].processes.is_empty());
    }

    #[test]
    fn a_layout_that_does_not_fit_is_refused() {
        let mut profile = SimProfile::mixed_host("x");
        profile.gpus[0].mig = Some(vec![MigProfile::FourG, MigProfile::FourG]);
        assert!(SimSource::new(profile, 1).is_err());
    }
}
