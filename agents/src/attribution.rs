//! Which allocation a GPU process belongs to, and which labels it carries.
//!
//! A process's allocation comes from its cgroup (`/proc/<pid>/cgroup`): the first path
//! segment that reads `<prefix><allocation uuid>` (default prefix `neocloud-`, so
//! `/kubepods/…/neocloud-0b5e…/` or `neocloud-0b5e….scope`). Where no cgroup names one, the
//! device → allocation map from the server's assignments (a whole GPU or MIG instance
//! sold to one allocation) fills in. Labels come from an allow-list of environment
//! variables (`NEOCLOUD_PROJECT=llm` → label `project=llm`).
//!
//! NVML reports host PIDs, so the agent must run in the host PID namespace (`hostPID:
//! true`, or `--pid=host`) to read the right `/proc` entries. PIDs are reused: a cached
//! answer is kept only while the process start time stays the same.

use std::collections::{BTreeMap, HashMap, HashSet};

use neocloud_schema::agent_api::Assignments;
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{MAX_LABEL_BYTES, MAX_LABELS_PER_PROCESS};
use uuid::Uuid;

/// Read access to the processes of the host (real `/proc`, or the simulator's).
pub trait ProcessTable: Send + Sync {
    /// A value that changes when the PID is reused (start time in clock ticks); `None`
    /// when the process is gone.
    fn start_time(&self, pid: u32) -> Option<u64>;
    /// The text of `/proc/<pid>/cgroup`.
    fn cgroup(&self, pid: u32) -> Option<String>;
    /// The raw `/proc/<pid>/environ` (NUL-separated `KEY=value`).
    fn environ(&self, pid: u32) -> Option<Vec<u8>>;
}

/// The host's real `/proc`.
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: std::path::PathBuf,
}

impl ProcFs {
    pub fn new() -> Self {
        Self::at("/proc")
    }

    /// A `/proc` mounted elsewhere (a container with the host's mounted at `/host/proc`).
    pub fn at(root: impl Into<std::path::PathBuf>) -> Self {
        Self { root: root.into() }
    }
}

impl Default for ProcFs {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessTable for ProcFs {
    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(self.root.join(pid.to_string()).join("stat")).ok()?;
        // The command name (field 2) may contain spaces and parentheses: fields after
        // the last ')' are fixed; start time is field 22, i.e. the 20th after it.
        let after = stat.rsplit_once(')')?.1;
        after.split_whitespace().nth(19)?.parse().ok()
    }

    fn cgroup(&self, pid: u32) -> Option<String> {
        std::fs::read_to_string(self.root.join(pid.to_string()).join("cgroup")).ok()
    }

    fn environ(&self, pid: u32) -> Option<Vec<u8>> {
        std::fs::read(self.root.join(pid.to_string()).join("environ")).ok()
    }
}

/// How processes are attributed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributionConfig {
    /// A cgroup path segment `<prefix><uuid>` names the allocation.
    pub cgroup_prefix: String,
    /// Environment variables copied into labels; the label key is the variable name
    /// lower-cased without a leading `NEOCLOUD_`.
    pub label_env_allow: Vec<String>,
}

impl Default for AttributionConfig {
    fn default() -> Self {
        Self {
            cgroup_prefix: "neocloud-".into(),
            label_env_allow: vec!["NEOCLOUD_PROJECT".into(), "NEOCLOUD_JOB".into()],
        }
    }
}

/// What the agent knows about a process.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attribution {
    pub allocation_id: Option<AllocationId>,
    pub labels: BTreeMap<String, String>,
}

/// Finds the allocation named by a cgroup file's text.
pub fn allocation_from_cgroup(cgroup: &str, prefix: &str) -> Option<AllocationId> {
    for line in cgroup.lines() {
        // `hierarchy-id:controllers:path`; the path may itself contain ':'.
        let path = line.splitn(3, ':').nth(2).unwrap_or(line);
        for segment in path.split('/') {
            let Some(rest) = segment.strip_prefix(prefix) else {
                continue;
            };
            if let Some(candidate) = rest.get(..36)
                && let Ok(uuid) = Uuid::parse_str(candidate)
            {
                return Some(AllocationId(uuid));
            }
        }
    }
    None
}

/// Labels from the allow-listed variables of a raw environ block, within the wire limits.
pub fn labels_from_environ(environ: &[u8], allow: &[String]) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    for entry in environ.split(|b| *b == 0) {
        let Ok(entry) = std::str::from_utf8(entry) else {
            continue;
        };
        let Some((key, value)) = entry.split_once('=') else {
            continue;
        };
        if !allow.iter().any(|a| a == key) {
            continue;
        }
        let label = key.strip_prefix("NEOCLOUD_").unwrap_or(key).to_lowercase();
        if label.is_empty() || label.len() > MAX_LABEL_BYTES {
            continue;
        }
        let mut value = value.to_owned();
        if value.len() > MAX_LABEL_BYTES {
            // Cut on a character boundary so the label stays valid UTF-8.
            let mut cut = MAX_LABEL_BYTES;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            value.truncate(cut);
        }
        if labels.len() < MAX_LABELS_PER_PROCESS {
            labels.insert(label, value);
        }
    }
    labels
}

/// Resolves PIDs to attributions, caching per (pid, start time).
#[derive(Debug, Default)]
pub struct Attributor {
    config: AttributionConfig,
    cache: HashMap<u32, (u64, Attribution)>,
    /// Device (GPU or MIG uuid) → the allocation it is assigned to.
    device_allocations: HashMap<String, AllocationId>,
    /// (parent GPU uuid, MIG profile name) → the MIG allocations of that profile there.
    mig_allocations: HashMap<(String, String), Vec<AllocationId>>,
}

impl Attributor {
    pub fn new(config: AttributionConfig) -> Self {
        Self {
            config,
            cache: HashMap::new(),
            device_allocations: HashMap::new(),
            mig_allocations: HashMap::new(),
        }
    }

    /// Takes the server's assignments (`GET /v1/agents/assignments`): a whole GPU sold to
    /// one allocation maps to it; a MIG instance maps to the allocation of its profile on
    /// its parent GPU when there is exactly one. Time-shared GPUs (milli-GPU allocations)
    /// map nothing: their processes are told apart by cgroup only.
    pub fn set_assignments(&mut self, assignments: &Assignments) {
        let mut whole: HashMap<String, Vec<AllocationId>> = HashMap::new();
        self.mig_allocations.clear();
        for a in &assignments.assignments {
            match (&a.mig_profile, a.milli_gpu) {
                (Some(profile), _) => self
                    .mig_allocations
                    .entry((a.gpu_uuid.clone(), profile.clone()))
                    .or_default()
                    .push(a.allocation_id),
                (None, None) => whole
                    .entry(a.gpu_uuid.clone())
                    .or_default()
                    .push(a.allocation_id),
                (None, Some(_)) => {}
            }
        }
        self.device_allocations = whole
            .into_iter()
            .filter_map(|(gpu, allocs)| (allocs.len() == 1).then(|| (gpu, allocs[0])))
            .collect();
    }

    /// Like [`Attributor::resolve`], also using the MIG assignment of a MIG instance.
    pub fn resolve_on(
        &mut self,
        table: &dyn ProcessTable,
        pid: u32,
        device_uuid: &str,
        mig: Option<(&str, &str)>,
    ) -> Attribution {
        let mut attribution = self.resolve(table, pid, device_uuid);
        if attribution.allocation_id.is_none()
            && let Some((parent, profile)) = mig
            && let Some(allocs) = self
                .mig_allocations
                .get(&(parent.to_owned(), profile.to_owned()))
            && allocs.len() == 1
        {
            attribution.allocation_id = Some(allocs[0]);
        }
        attribution
    }

    /// Replaces the device → allocation map (from the server's assignments).
    pub fn set_device_allocations(&mut self, map: HashMap<String, AllocationId>) {
        self.device_allocations = map;
    }

    /// The attribution of `pid` running on `device_uuid`.
    pub fn resolve(
        &mut self,
        table: &dyn ProcessTable,
        pid: u32,
        device_uuid: &str,
    ) -> Attribution {
        let mut attribution = match table.start_time(pid) {
            Some(start) => match self.cache.get(&pid) {
                Some((cached_start, a)) if *cached_start == start => a.clone(),
                _ => {
                    let a = self.read(table, pid);
                    self.cache.insert(pid, (start, a.clone()));
                    a
                }
            },
            // The process is gone already (or /proc is not readable): no cgroup to read.
            None => Attribution::default(),
        };
        if attribution.allocation_id.is_none() {
            attribution.allocation_id = self.device_allocations.get(device_uuid).copied();
        }
        attribution
    }

    /// Forgets PIDs that are no longer running, so the cache stays bounded.
    pub fn retain_running(&mut self, running: &HashSet<u32>) {
        self.cache.retain(|pid, _| running.contains(pid));
    }

    fn read(&self, table: &dyn ProcessTable, pid: u32) -> Attribution {
        let allocation_id = table
            .cgroup(pid)
            .and_then(|c| allocation_from_cgroup(&c, &self.config.cgroup_prefix));
        let labels = if self.config.label_env_allow.is_empty() {
            BTreeMap::new()
        } else {
            table
                .environ(pid)
                .map(|e| labels_from_environ(&e, &self.config.label_env_allow))
                .unwrap_or_default()
        };
        Attribution {
            allocation_id,
            labels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    const ALLOC: &str = "0b5e0000-0000-4000-8000-000000000000";

    #[test]
    fn a_cgroup_v2_path_segment_names_the_allocation() {
        let cgroup = format!("0::/system.slice/neocloud-{ALLOC}.scope\n");
        assert_eq!(
            allocation_from_cgroup(&cgroup, "neocloud-"),
            Some(AllocationId(Uuid::parse_str(ALLOC).unwrap()))
        );
    }

    #[test]
    fn a_cgroup_v1_file_with_several_hierarchies_is_searched_line_by_line() {
        let cgroup =
            format!("12:memory:/user.slice\n11:devices:/kubepods/pod1/neocloud-{ALLOC}/ctr\n");
        assert!(allocation_from_cgroup(&cgroup, "neocloud-").is_some());
    }

    #[test]
    fn a_process_outside_any_allocation_cgroup_has_no_allocation() {
        assert_eq!(
            allocation_from_cgroup("0::/user.slice/session-2.scope", "neocloud-"),
            None
        );
        assert_eq!(
            allocation_from_cgroup("0::/neocloud-not-a-uuid", "neocloud-"),
            None
        );
    }

    #[test]
    fn only_allow_listed_variables_become_labels() {
        let environ = b"PATH=/bin\0NEOCLOUD_PROJECT=llm\0SECRET=x\0NEOCLOUD_JOB=train-7\0";
        let labels = labels_from_environ(environ, &AttributionConfig::default().label_env_allow);
        assert_eq!(labels.len(), 2);
        assert_eq!(labels["project"], "llm");
        assert_eq!(labels["job"], "train-7");
    }

    #[test]
    fn an_overlong_label_value_is_cut_to_the_wire_limit() {
        let environ = format!("NEOCLOUD_PROJECT={}", "é".repeat(100));
        let labels = labels_from_environ(environ.as_bytes(), &["NEOCLOUD_PROJECT".into()]);
        assert!(labels["project"].len() <= MAX_LABEL_BYTES);
    }

    struct Table {
        start: Mutex<u64>,
        cgroup: Mutex<String>,
        reads: Mutex<u32>,
    }

    impl ProcessTable for Table {
        fn start_time(&self, _pid: u32) -> Option<u64> {
            Some(*self.start.lock().unwrap())
        }
        fn cgroup(&self, _pid: u32) -> Option<String> {
            *self.reads.lock().unwrap() += 1;
            Some(self.cgroup.lock().unwrap().clone())
        }
        fn environ(&self, _pid: u32) -> Option<Vec<u8>> {
            None
        }
    }

    #[test]
    fn a_reused_pid_is_attributed_afresh() {
        let table = Table {
            start: Mutex::new(100),
            cgroup: Mutex::new(format!("0::/neocloud-{ALLOC}")),
            reads: Mutex::new(0),
        };
        let mut attributor = Attributor::new(AttributionConfig::default());
        let first = attributor.resolve(&table, 42, "GPU-a");
        assert!(first.allocation_id.is_some());
        attributor.resolve(&table, 42, "GPU-a");
        assert_eq!(
            *table.reads.lock().unwrap(),
            1,
            "cached while the start time holds"
        );
        *table.start.lock().unwrap() = 200;
        *table.cgroup.lock().unwrap() = "0::/user.slice".into();
        assert_eq!(attributor.resolve(&table, 42, "GPU-a").allocation_id, None);
    }

    #[test]
    fn the_device_assignment_fills_in_where_the_cgroup_names_nothing() {
        let table = Table {
            start: Mutex::new(1),
            cgroup: Mutex::new("0::/user.slice".into()),
            reads: Mutex::new(0),
        };
        let mut attributor = Attributor::new(AttributionConfig::default());
        let alloc = AllocationId(Uuid::parse_str(ALLOC).unwrap());
        attributor.set_device_allocations(HashMap::from([("MIG-x".to_string(), alloc)]));
        assert_eq!(
            attributor.resolve(&table, 7, "MIG-x").allocation_id,
            Some(alloc)
        );
        assert_eq!(attributor.resolve(&table, 7, "GPU-y").allocation_id, None);
    }
}
