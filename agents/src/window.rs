//! From readings to the wire: [`WindowBuilder`] integrates sampling cycles into one
//! window's device samples, and [`fold`] merges two adjacent windows into one coarser
//! window with the same totals (used when the spool is full).
//!
//! Billing needs integrals (Σ sm_util/100 × dt, Σ bytes × dt), and the contract carries
//! averages over the window. A window's value is therefore the integral divided by the
//! window's duration, so `value × duration` gives the integral back exactly: a cycle that
//! could not read a value contributes nothing rather than shifting the average.
//!
//! Each cycle at time `t` accounts for the interval since the previous cycle with the
//! readings taken at `t`. Windows are contiguous: the next window starts where the last
//! one ended.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};
use neocloud_schema::ids::AllocationId;
use neocloud_schema::ingest::{
    DeviceHealth, DeviceSample, HealthEvent, MAX_EVENTS_PER_DEVICE, MAX_PROCESSES_PER_DEVICE,
    MAX_WINDOW_SECONDS, ProcessSample, Window,
};

use crate::attribution::{Attribution, Attributor, ProcessTable};
use crate::source::{DeviceReading, Snapshot, health_for_event, worse};

/// A window ready to be numbered and spooled.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedWindow {
    pub window: Window,
    pub devices: Vec<DeviceSample>,
}

#[derive(Debug, Default)]
struct ProcAcc {
    labels: BTreeMap<String, String>,
    util_integral: f64,
    fb_integral: f64,
    fb_known: bool,
}

#[derive(Debug, Default)]
struct DeviceAcc {
    parent_uuid: Option<String>,
    mig_profile: Option<String>,
    util_integral: f64,
    util_known: bool,
    process_util_supported: bool,
    fb_integral: f64,
    fb_known: bool,
    power_integral: f64,
    power_known: bool,
    energy_mj: Option<u64>,
    temp_c: Option<i32>,
    source_health: Option<DeviceHealth>,
    events: Vec<HealthEvent>,
    processes: BTreeMap<(u32, Option<AllocationId>), ProcAcc>,
}

impl DeviceAcc {
    /// Adds one cycle's device readings, held for `dt` seconds.
    fn integrate(&mut self, reading: &DeviceReading, dt: f64) {
        self.parent_uuid.clone_from(&reading.parent_uuid);
        self.mig_profile.clone_from(&reading.mig_profile);
        self.process_util_supported |= reading.process_util_supported;
        if let Some(u) = reading.sm_util_pct {
            self.util_integral += u.clamp(0.0, 100.0) * dt;
            self.util_known = true;
        }
        if let Some(fb) = reading.fb_used_bytes {
            self.fb_integral += fb as f64 * dt;
            self.fb_known = true;
        }
        if let Some(p) = reading.power_mw {
            self.power_integral += p as f64 * dt;
            self.power_known = true;
        }
        self.energy_mj = reading.energy_mj.or(self.energy_mj);
        self.temp_c = reading.temp_c.or(self.temp_c);
        self.source_health = reading.health.or(self.source_health);
    }

    /// Adds one cycle of process `pid` (its memory, and its mean utilization over the
    /// cycle), held for `dt` seconds; a process past the contract's limit per device is
    /// left out.
    fn integrate_process(
        &mut self,
        pid: u32,
        attribution: Attribution,
        fb: Option<u64>,
        util: Option<f64>,
        dt: f64,
    ) {
        let key = (pid, attribution.allocation_id);
        if self.processes.len() >= MAX_PROCESSES_PER_DEVICE && !self.processes.contains_key(&key) {
            return;
        }
        let p = self.processes.entry(key).or_default();
        p.labels = attribution.labels;
        if let Some(mean) = util {
            p.util_integral += mean * dt;
        }
        if let Some(fb) = fb {
            p.fb_integral += fb as f64 * dt;
            p.fb_known = true;
        }
    }
}

/// The processes of one cycle on a device: pid, memory used (if listed) and mean
/// utilization over the new samples (if sampled). A pid sampled but already exited is
/// included: its utilization still counts.
fn cycle_processes(reading: &DeviceReading) -> Vec<(u32, Option<u64>, Option<f64>)> {
    let mut util: HashMap<u32, (f64, u32)> = HashMap::new();
    for s in &reading.util_samples {
        let e = util.entry(s.pid).or_default();
        e.0 += f64::from(s.sm_util_pct.min(100));
        e.1 += 1;
    }
    let mut pids: Vec<(u32, Option<u64>)> = reading
        .processes
        .iter()
        .map(|p| (p.pid, p.fb_used_bytes))
        .collect();
    for pid in util.keys() {
        if !reading.processes.iter().any(|p| p.pid == *pid) {
            pids.push((*pid, None));
        }
    }
    pids.into_iter()
        .map(|(pid, fb)| {
            let mean = util.get(&pid).map(|(sum, n)| sum / f64::from(*n));
            (pid, fb, mean)
        })
        .collect()
}

/// Integrates sampling cycles into windows.
#[derive(Debug, Default)]
pub struct WindowBuilder {
    start: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
    devices: BTreeMap<String, DeviceAcc>,
    /// Health implied by events, kept for the agent's lifetime (a failed GPU stays failed
    /// until the driver says otherwise, i.e. until the source reports a health again).
    sticky_health: HashMap<String, DeviceHealth>,
}

impl WindowBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// When the open window started (the first cycle, or the previous window's end).
    pub fn start(&self) -> Option<DateTime<Utc>> {
        self.start
    }

    /// Seconds covered so far by the open window.
    pub fn covered_seconds(&self) -> f64 {
        match (self.start, self.last) {
            (Some(s), Some(l)) => seconds(l - s),
            _ => 0.0,
        }
    }

    /// Adds one sampling cycle. A snapshot not later than the previous one is ignored
    /// (clock stepped back): it covers no time.
    pub fn add(
        &mut self,
        snapshot: &Snapshot,
        attributor: &mut Attributor,
        table: &dyn ProcessTable,
    ) {
        let dt = match self.last {
            None => {
                self.start = Some(snapshot.at);
                0.0
            }
            Some(last) if snapshot.at <= last => return,
            Some(last) => seconds(snapshot.at - last),
        };
        self.last = Some(snapshot.at);
        let mut running = std::collections::HashSet::new();
        for reading in &snapshot.devices {
            let acc = self.devices.entry(reading.uuid.clone()).or_default();
            acc.integrate(reading, dt);
            if reading.health.is_some() {
                // The source knows the device's health: it overrides what events implied.
                self.sticky_health.remove(&reading.uuid);
            }
            for event in &reading.events {
                if let Some(h) = health_for_event(event) {
                    let entry = self
                        .sticky_health
                        .entry(reading.uuid.clone())
                        .or_insert(DeviceHealth::Ok);
                    *entry = worse(*entry, h);
                }
                if acc.events.len() < MAX_EVENTS_PER_DEVICE && !acc.events.contains(event) {
                    acc.events.push(event.clone());
                }
            }
            for (pid, fb, util) in cycle_processes(reading) {
                running.insert(pid);
                let mig = reading
                    .parent_uuid
                    .as_deref()
                    .zip(reading.mig_profile.as_deref());
                let attribution = attributor.resolve_on(table, pid, &reading.uuid, mig);
                acc.integrate_process(pid, attribution, fb, util, dt);
            }
        }
        attributor.retain_running(&running);
    }

    /// Closes the open window at the last cycle; the next window starts there. `None`
    /// while the window covers no time yet.
    pub fn close(&mut self) -> Option<ClosedWindow> {
        let (start, end) = (self.start?, self.last?);
        if end <= start {
            return None;
        }
        let d = seconds(end - start);
        let avg = |integral: f64| integral / d;
        let devices = std::mem::take(&mut self.devices)
            .into_iter()
            .map(|(uuid, acc)| {
                let sticky = self.sticky_health.get(&uuid).copied();
                // `None` when nothing is known: the driver has no health reading, and an
                // agent that saw no event must not claim a GPU is fine.
                let health = match (acc.source_health, sticky) {
                    (Some(a), Some(b)) => Some(worse(a, b)),
                    (a, b) => a.or(b),
                };
                let processes = acc
                    .processes
                    .into_iter()
                    .map(|((pid, allocation_id), p)| ProcessSample {
                        pid,
                        allocation_id,
                        labels: p.labels,
                        sm_util_pct: acc
                            .process_util_supported
                            .then(|| avg(p.util_integral).clamp(0.0, 100.0)),
                        fb_used_bytes: p.fb_known.then(|| round_u64(avg(p.fb_integral))),
                    })
                    .collect();
                DeviceSample {
                    uuid,
                    parent_uuid: acc.parent_uuid,
                    mig_profile: acc.mig_profile,
                    sm_util_pct: acc
                        .util_known
                        .then(|| avg(acc.util_integral).clamp(0.0, 100.0)),
                    fb_used_bytes: acc.fb_known.then(|| round_u64(avg(acc.fb_integral))),
                    energy_mj: acc.energy_mj,
                    power_mw: acc.power_known.then(|| round_u64(avg(acc.power_integral))),
                    temp_c: acc.temp_c,
                    health,
                    events: acc.events,
                    processes,
                }
            })
            .collect();
        self.start = Some(end);
        Some(ClosedWindow {
            window: Window { start, end },
            devices,
        })
    }
}

/// A mean of readings (bytes, milliwatts) as the whole number the contract carries. The
/// readings are non-negative integers, so their mean is too, give or take rounding; `as`
/// saturates anything else (NaN and negatives to 0).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn round_u64(v: f64) -> u64 {
    v.round() as u64
}

fn seconds(d: Duration) -> f64 {
    d.num_microseconds()
        .map_or(d.num_seconds() as f64, |us| us as f64 / 1e6)
}

/// The same process in two windows being folded.
type ProcessPairs<'a> =
    BTreeMap<(u32, Option<AllocationId>), (Option<&'a ProcessSample>, Option<&'a ProcessSample>)>;

fn weighted(a: Option<f64>, da: f64, b: Option<f64>, db: f64) -> Option<f64> {
    if a.is_none() && b.is_none() {
        return None;
    }
    Some((a.unwrap_or(0.0) * da + b.unwrap_or(0.0) * db) / (da + db))
}

fn weighted_u64(a: Option<u64>, da: f64, b: Option<u64>, db: f64) -> Option<u64> {
    weighted(a.map(|v| v as f64), da, b.map(|v| v as f64), db).map(round_u64)
}

/// Merges two adjacent windows (`a` ends where `b` starts) into one window with the same
/// integrals. `None` when they are not adjacent, or the result would exceed the
/// contract's limits (a one-hour window, 1024 processes per device).
pub fn fold(a: &ClosedWindow, b: &ClosedWindow) -> Option<ClosedWindow> {
    if a.window.end != b.window.start
        || b.window.end - a.window.start > Duration::seconds(MAX_WINDOW_SECONDS)
    {
        return None;
    }
    let (da, db) = (seconds(a.window.duration()), seconds(b.window.duration()));
    let mut by_uuid: BTreeMap<String, (Option<&DeviceSample>, Option<&DeviceSample>)> =
        BTreeMap::new();
    for d in &a.devices {
        by_uuid.entry(d.uuid.clone()).or_default().0 = Some(d);
    }
    for d in &b.devices {
        by_uuid.entry(d.uuid.clone()).or_default().1 = Some(d);
    }
    let devices = by_uuid
        .into_iter()
        .map(|(uuid, (x, y))| fold_device(uuid, x, da, y, db))
        .collect::<Option<Vec<_>>>()?;
    Some(ClosedWindow {
        window: Window {
            start: a.window.start,
            end: b.window.end,
        },
        devices,
    })
}

/// One device over two adjacent windows of `da` and `db` seconds (absent from either).
fn fold_device(
    uuid: String,
    x: Option<&DeviceSample>,
    da: f64,
    y: Option<&DeviceSample>,
    db: f64,
) -> Option<DeviceSample> {
    let any = y
        .or(x)
        .map(|d| (d.parent_uuid.clone(), d.mig_profile.clone()));
    let (parent_uuid, mig_profile) = any.unwrap_or_default();
    let f =
        |get: fn(&DeviceSample) -> Option<f64>| weighted(x.and_then(get), da, y.and_then(get), db);
    let fu = |get: fn(&DeviceSample) -> Option<u64>| {
        weighted_u64(x.and_then(get), da, y.and_then(get), db)
    };
    let mut events: Vec<HealthEvent> = Vec::new();
    for e in x.iter().chain(y.iter()).flat_map(|d| d.events.iter()) {
        if events.len() < MAX_EVENTS_PER_DEVICE && !events.contains(e) {
            events.push(e.clone());
        }
    }
    let health = match (x.and_then(|d| d.health), y.and_then(|d| d.health)) {
        (Some(h1), Some(h2)) => Some(worse(h1, h2)),
        (h1, h2) => h1.or(h2),
    };
    let processes = fold_processes(x, da, y, db)?;
    Some(DeviceSample {
        uuid,
        parent_uuid,
        mig_profile,
        sm_util_pct: f(|d| d.sm_util_pct),
        fb_used_bytes: fu(|d| d.fb_used_bytes),
        energy_mj: y.and_then(|d| d.energy_mj).or(x.and_then(|d| d.energy_mj)),
        power_mw: fu(|d| d.power_mw),
        temp_c: y.and_then(|d| d.temp_c).or(x.and_then(|d| d.temp_c)),
        health,
        events,
        processes,
    })
}

/// One device's processes over two adjacent windows; `None` when the merged device would
/// break the contract's limit of processes per device (then the windows do not fold).
fn fold_processes(
    x: Option<&DeviceSample>,
    da: f64,
    y: Option<&DeviceSample>,
    db: f64,
) -> Option<Vec<ProcessSample>> {
    let mut procs: ProcessPairs<'_> = BTreeMap::new();
    for p in x.iter().flat_map(|d| d.processes.iter()) {
        procs.entry((p.pid, p.allocation_id)).or_default().0 = Some(p);
    }
    for p in y.iter().flat_map(|d| d.processes.iter()) {
        procs.entry((p.pid, p.allocation_id)).or_default().1 = Some(p);
    }
    if procs.len() > MAX_PROCESSES_PER_DEVICE {
        return None;
    }
    let processes = procs
        .into_iter()
        .map(|((pid, allocation_id), (p, q))| ProcessSample {
            pid,
            allocation_id,
            labels: q.or(p).map(|s| s.labels.clone()).unwrap_or_default(),
            sm_util_pct: weighted(
                p.and_then(|s| s.sm_util_pct),
                da,
                q.and_then(|s| s.sm_util_pct),
                db,
            ),
            fb_used_bytes: weighted_u64(
                p.and_then(|s| s.fb_used_bytes),
                da,
                q.and_then(|s| s.fb_used_bytes),
                db,
            ),
        })
        .collect();
    Some(processes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::AttributionConfig;
    use crate::source::{DeviceReading, ProcessReading, UtilSample};

    struct NoProcs;
    impl ProcessTable for NoProcs {
        fn start_time(&self, _: u32) -> Option<u64> {
            None
        }
        fn cgroup(&self, _: u32) -> Option<String> {
            None
        }
        fn environ(&self, _: u32) -> Option<Vec<u8>> {
            None
        }
    }

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn snapshot(s: i64, util: Option<f64>, proc_util: Option<u32>) -> Snapshot {
        let mut d = DeviceReading::new("GPU-a");
        d.sm_util_pct = util;
        d.fb_used_bytes = Some(1000);
        d.process_util_supported = true;
        d.processes.push(ProcessReading {
            pid: 7,
            fb_used_bytes: Some(500),
            gpu_instance_id: None,
            compute_instance_id: None,
        });
        if let Some(u) = proc_util {
            d.util_samples.push(UtilSample {
                pid: 7,
                timestamp_us: (s * 1_000_000) as u64,
                sm_util_pct: u,
            });
        }
        Snapshot {
            at: at(s),
            devices: vec![d],
        }
    }

    fn build(cycles: &[(i64, Option<f64>, Option<u32>)]) -> ClosedWindow {
        let mut w = WindowBuilder::new();
        let mut attributor = Attributor::new(AttributionConfig::default());
        for (s, u, p) in cycles {
            w.add(&snapshot(*s, *u, *p), &mut attributor, &NoProcs);
        }
        w.close().unwrap()
    }

    #[test]
    fn a_window_average_times_its_duration_is_the_integral_of_the_cycles() {
        let w = build(&[
            (0, Some(0.0), None),
            (1, Some(50.0), Some(40)),
            (3, Some(100.0), Some(90)),
        ]);
        assert_eq!(w.window.duration(), Duration::seconds(3));
        let d = &w.devices[0];
        // 50 × 1 s + 100 × 2 s = 250 %·s over 3 s.
        assert!((d.sm_util_pct.unwrap() * 3.0 - 250.0).abs() < 1e-9);
        let p = &d.processes[0];
        assert!((p.sm_util_pct.unwrap() * 3.0 - (40.0 + 180.0)).abs() < 1e-9);
        assert_eq!(p.fb_used_bytes, Some(500));
    }

    #[test]
    fn a_cycle_without_a_reading_contributes_nothing_instead_of_shifting_the_average() {
        let w = build(&[(0, None, None), (1, None, None), (2, Some(80.0), None)]);
        assert!((w.devices[0].sm_util_pct.unwrap() * 2.0 - 80.0).abs() < 1e-9);
    }

    #[test]
    fn a_single_cycle_covers_no_time_and_closes_nothing() {
        let mut w = WindowBuilder::new();
        let mut attributor = Attributor::new(AttributionConfig::default());
        w.add(&snapshot(0, Some(1.0), None), &mut attributor, &NoProcs);
        assert!(w.close().is_none());
    }

    #[test]
    fn health_is_unknown_without_a_reading_and_sticks_after_a_fatal_xid() {
        let mut w = WindowBuilder::new();
        let mut attributor = Attributor::new(AttributionConfig::default());
        w.add(&snapshot(0, Some(1.0), None), &mut attributor, &NoProcs);
        w.add(&snapshot(1, Some(1.0), None), &mut attributor, &NoProcs);
        assert_eq!(w.close().unwrap().devices[0].health, None);
        let mut with_xid = snapshot(2, Some(1.0), None);
        with_xid.devices[0].events.push(HealthEvent {
            kind: neocloud_schema::ingest::HealthEventKind::Xid,
            code: 79,
            at: at(2),
        });
        w.add(&with_xid, &mut attributor, &NoProcs);
        let failed = w.close().unwrap();
        assert_eq!(failed.devices[0].health, Some(DeviceHealth::Failed));
        assert_eq!(failed.devices[0].events.len(), 1);
        w.add(&snapshot(3, Some(1.0), None), &mut attributor, &NoProcs);
        let after = w.close().unwrap();
        assert_eq!(after.devices[0].health, Some(DeviceHealth::Failed));
        assert!(
            after.devices[0].events.is_empty(),
            "an event is shipped once"
        );
    }

    #[test]
    fn windows_are_contiguous() {
        let mut w = WindowBuilder::new();
        let mut attributor = Attributor::new(AttributionConfig::default());
        w.add(&snapshot(0, Some(1.0), None), &mut attributor, &NoProcs);
        w.add(&snapshot(10, Some(1.0), None), &mut attributor, &NoProcs);
        let first = w.close().unwrap();
        w.add(&snapshot(20, Some(1.0), None), &mut attributor, &NoProcs);
        let second = w.close().unwrap();
        assert_eq!(first.window.end, second.window.start);
    }

    #[test]
    fn folding_two_windows_keeps_every_total() {
        let a = build(&[(0, Some(0.0), None), (10, Some(30.0), Some(20))]);
        let b = {
            let mut w = build(&[(10, Some(0.0), None), (30, Some(90.0), Some(70))]);
            w.devices[0].processes[0].pid = 8;
            w
        };
        let folded = fold(&a, &b).unwrap();
        assert_eq!(folded.window.duration(), Duration::seconds(30));
        let d = &folded.devices[0];
        assert!((d.sm_util_pct.unwrap() * 30.0 - (300.0 + 1800.0)).abs() < 1e-9);
        let total: f64 = d
            .processes
            .iter()
            .map(|p| p.sm_util_pct.unwrap() * 30.0)
            .sum();
        assert!((total - (200.0 + 1400.0)).abs() < 1e-9);
        assert_eq!(d.processes.len(), 2);
    }

    #[test]
    fn windows_that_do_not_touch_or_would_exceed_an_hour_are_not_folded() {
        let a = build(&[(0, Some(0.0), None), (10, Some(30.0), None)]);
        let gap = build(&[(11, Some(0.0), None), (20, Some(30.0), None)]);
        assert!(fold(&a, &gap).is_none());
        let long = build(&[(10, Some(0.0), None), (3601, Some(1.0), None)]);
        assert!(fold(&a, &long).is_none());
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// (duration s, per device: present?, util, fb, per process pid 1..4: util)
        type Spec = Vec<(i64, Vec<(bool, f64, u64, Vec<(u32, f64)>)>)>;

        fn windows(spec: &Spec) -> Vec<ClosedWindow> {
            let mut t = 0;
            spec.iter()
                .map(|(dur, devices)| {
                    let w = ClosedWindow {
                        window: Window {
                            start: at(t),
                            end: at(t + dur),
                        },
                        devices: devices
                            .iter()
                            .enumerate()
                            .filter(|(_, d)| d.0)
                            .map(|(i, (_, util, fb, procs))| DeviceSample {
                                uuid: format!("GPU-{i}"),
                                parent_uuid: None,
                                mig_profile: None,
                                sm_util_pct: Some(*util),
                                fb_used_bytes: Some(*fb),
                                energy_mj: None,
                                power_mw: None,
                                temp_c: None,
                                health: None,
                                events: vec![],
                                processes: procs
                                    .iter()
                                    .map(|(pid, u)| ProcessSample {
                                        pid: *pid,
                                        allocation_id: None,
                                        labels: BTreeMap::new(),
                                        sm_util_pct: Some(*u),
                                        fb_used_bytes: Some(u64::from(*pid) << 20),
                                    })
                                    .collect(),
                            })
                            .collect(),
                    };
                    t += dur;
                    w
                })
                .collect()
        }

        fn totals(ws: &[ClosedWindow]) -> BTreeMap<String, (f64, f64)> {
            let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
            for w in ws {
                let secs = seconds(w.window.duration());
                for d in &w.devices {
                    let e = out.entry(d.uuid.clone()).or_default();
                    e.0 += d.sm_util_pct.unwrap_or(0.0) * secs;
                    e.1 += d.fb_used_bytes.unwrap_or(0) as f64 * secs;
                    for p in &d.processes {
                        let e = out.entry(format!("{}/{}", d.uuid, p.pid)).or_default();
                        e.0 += p.sm_util_pct.unwrap_or(0.0) * secs;
                        e.1 += p.fb_used_bytes.unwrap_or(0) as f64 * secs;
                    }
                }
            }
            out
        }

        fn spec() -> impl Strategy<Value = Spec> {
            let process = (1u32..5, 0.0f64..25.0);
            let device = (
                any::<bool>(),
                0.0f64..100.0,
                0u64..(80u64 << 30),
                proptest::collection::vec(process, 0..4),
            );
            proptest::collection::vec((1i64..900, proptest::collection::vec(device, 1..4)), 1..24)
        }

        proptest! {
            #[test]
            fn folding_any_adjacent_windows_preserves_every_integral(spec in spec()) {
                let mut ws = windows(&spec);
                // Dedupe pids per device: a pid appears once per device and window.
                for w in &mut ws {
                    for d in &mut w.devices {
                        d.processes.sort_by_key(|p| p.pid);
                        d.processes.dedup_by_key(|p| p.pid);
                    }
                }
                let before = totals(&ws);
                let mut folded: Vec<ClosedWindow> = Vec::new();
                for w in ws {
                    let merged = folded.last().and_then(|last| fold(last, &w));
                    match merged {
                        Some(m) => {
                            prop_assert!(m.window.duration() <= Duration::seconds(MAX_WINDOW_SECONDS));
                            *folded.last_mut().expect("a last window") = m;
                        }
                        None => folded.push(w),
                    }
                }
                let after = totals(&folded);
                prop_assert_eq!(before.len(), after.len());
                for (k, (u, f)) in &before {
                    let (u2, f2) = after[k];
                    prop_assert!((u - u2).abs() <= 1e-6 * u.max(1.0), "{} util {} vs {}", k, u, u2);
                    // fb is rounded to whole bytes per window: at most half a byte × duration.
                    prop_assert!((f - f2).abs() <= 0.5 * 3600.0 * 24.0 + 1e-6 * f, "{} fb {} vs {}", k, f, f2);
                }
            }
        }
    }
}
