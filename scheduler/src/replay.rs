//! Trace replay: feeds a trace's pods to a fleet built from its nodes under one policy
//! and measures the outcome. Two modes:
//!
//! - `timeline`: arrivals at `creation_time`, departures after the pod's run time
//!   (`deletion_time - scheduled_time`, or `- creation_time` for pods never scheduled in
//!   the original cluster). What does not fit waits in a FIFO queue; on each departure
//!   the first `QUEUE_RETRY_WINDOW` queued pods are retried in order (later arrivals
//!   that fit go ahead: FIFO with backfill). `--compress F` divides arrival times by F
//!   to replay the same work under contention; `--fleet-fraction F` replays it on F of
//!   the nodes, keeping the mix of node classes (the recorded trace never fills its
//!   whole fleet, so only a smaller one makes the policies' queueing differ). A pod list
//!   without times arrives in file order one second apart and never departs. GPU-hours
//!   are counted up to the trace's horizon (the last deletion or arrival).
//! - `saturate`: the FGD paper's experiment. Arrivals only, until the GPUs requested
//!   reach `arrive` × the fleet's GPUs: the whole pod list in a seeded shuffled order, then
//!   seeded draws with replacement (`Draw::List`, the paper's workload tuning), or draws
//!   with replacement from the start (`Draw::Sample`); the draw is the same for every
//!   policy. Reports what stays unallocated, how much of the free capacity no shape of
//!   the mix can use, a lower bound on what any policy must leave unallocated given the
//!   same arrivals (every 10 % of arrivals), and what an offline largest-first packing
//!   of them leaves (both in `optimum`).
//!
//! Pure: takes parsed rows, returns a `Report`. Reading files is the binary's job.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::fleet::{Fleet, FleetError, Tuning};
use crate::fractional::{MixShape, ShapeMix};
use crate::ids::{AllocationKey, ModelId, NodeId, count_u32};
use crate::optimum;
use crate::policy::{Policy, PolicyKind};
use crate::request::{Class, MILLI_PER_GPU, Request};
use crate::trace::{self, TraceNode, TracePod};

/// The share of a pod list's requests that the typical pods cover (the paper's 95 %).
pub const TYPICAL_POPULARITY: f64 = 0.95;
/// Queued pods retried, from the head of the queue, on each departure.
pub const QUEUE_RETRY_WINDOW: usize = 256;
/// Most arrivals a saturate run draws (guards pod lists without GPU pods).
pub const MAX_SATURATE_ARRIVALS: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Timeline,
    Saturate,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Timeline => "timeline",
            Mode::Saturate => "saturate",
        }
    }
}

/// How a saturate run draws its arrivals from the pod list (the same for every policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// The FGD paper's workload: the whole pod list once, in a seeded shuffled order,
    /// then uniform draws with replacement until the target.
    List,
    /// Uniform draws with replacement from the start.
    Sample,
}

impl Draw {
    pub fn name(self) -> &'static str {
        match self {
            Draw::List => "list",
            Draw::Sample => "sample",
        }
    }
}

/// The seeded sequence of pod indices a saturate run takes its arrivals from.
struct Arrivals {
    rng: ChaCha8Rng,
    order: Vec<usize>,
    next: usize,
    pods: usize,
}

impl Arrivals {
    fn new(draw: Draw, seed: u64, pods: usize) -> Arrivals {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut order: Vec<usize> = match draw {
            Draw::List => (0..pods).collect(),
            Draw::Sample => Vec::new(),
        };
        order.shuffle(&mut rng);
        Arrivals {
            rng,
            order,
            next: 0,
            pods,
        }
    }
}

impl Iterator for Arrivals {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let i = match self.order.get(self.next) {
            Some(&i) => i,
            None => self.rng.random_range(0..self.pods),
        };
        self.next += 1;
        Some(i)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayOptions {
    pub policy: PolicyKind,
    pub mode: Mode,
    pub seed: u64,
    /// Saturate: stop when the GPUs requested reach this multiple of the fleet's GPUs.
    pub arrive: f64,
    /// Saturate: how arrivals are drawn from the pod list.
    pub draw: Draw,
    /// Timeline: arrival times are divided by this (run times kept), so the same work
    /// arrives faster and the fleet is contended; 1 replays the trace as recorded.
    pub compress: f64,
    /// The share of the trace's nodes to replay on, keeping the mix of node classes
    /// ([`trace::scale_nodes`]): below 1 the same work contends for a smaller fleet.
    pub fleet_fraction: f64,
    /// The class every pod is placed as (on-demand: reliability breaks ties).
    pub class: Class,
    /// Gives every node a reliability drawn from [`seeded_reliability`] with this seed
    /// (None: no node has a record).
    pub reliability_seed: Option<u64>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            policy: PolicyKind::Topo,
            mode: Mode::Timeline,
            seed: 42,
            arrive: 1.2,
            draw: Draw::List,
            compress: 1.0,
            fleet_fraction: 1.0,
            class: Class::OnDemand,
            reliability_seed: None,
        }
    }
}

/// The figures of one replay (snake_case keys in JSON; mode-specific ones are omitted in
/// the other mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub policy: String,
    pub mode: String,
    /// The class the pods were placed as (`on_demand`, `reserved`, `spot`).
    pub class: Class,
    pub nodes: usize,
    pub gpus: usize,
    pub pods: usize,
    pub arrivals: usize,
    pub placed: usize,
    pub gpus_requested: f64,
    pub gpus_allocated_at_end: f64,
    pub unallocated_gpu_share: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_placed: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_queueing_delay_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_queueing_delay_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_allocation_ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_hours_allocated: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub horizon_s: Option<u64>,
    /// Timeline: the factor arrival times were divided by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compress: Option<f64>,
    /// The share of the trace's nodes replayed on, when below 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet_fraction: Option<f64>,
    /// Timeline: whether the pod list had times (else file order, one second apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_arrivals: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_gpus_requested: Option<f64>,
    /// Free GPU capacity that no GPU shape of the pod list can use, as a share of GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fragmented_gpu_share: Option<f64>,
    /// No policy can leave less unallocated with these arrivals ([`optimum`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bound_unallocated_share: Option<f64>,
    /// Saturate: `[arrived, lower bound]` every [`BOUND_STEP`] of the fleet's GPUs
    /// requested, and at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lower_bound_curve: Option<Vec<[f64; 2]>>,
    /// Saturate: what a packer that sees all the arrivals first, largest first, leaves
    /// unallocated (a feasible offline packing: the best possible is at most this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offline_unallocated_share: Option<f64>,
    /// Saturate: how arrivals were drawn (`list` or `sample`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw: Option<String>,
    /// Saturate: `[arrived, unallocated]` as shares of the fleet's GPUs, each time the
    /// GPUs requested pass another [`CURVE_STEP`] of it (the FGD paper's figure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curve: Option<Vec<[f64; 2]>>,
    /// The seed of the nodes' reliabilities, when they have some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability_seed: Option<u64>,
    /// Saturate, with reliabilities: the mean reliability (basis points) of the GPU
    /// capacity allocated at the end, weighted by milli-GPUs
    /// ([`Fleet::allocated_gpu_reliability`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_gpu_reliability: Option<f64>,
    /// Saturate, with reliabilities: `[arrived, mean reliability of the allocated GPUs]`
    /// at the points of `curve` (at the end nearly every GPU is allocated, whatever the
    /// tie-break chose, so the middle of the curve shows it best).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability_curve: Option<Vec<[f64; 2]>>,
}

/// How far apart, in shares of the fleet's GPUs requested, the saturate curve's points are.
pub const CURVE_STEP: f64 = 0.02;

/// How far apart, in shares of the fleet's GPUs requested, the lower bound is computed.
pub const BOUND_STEP: f64 = 0.1;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the node list builds no valid fleet: {0}")]
    Fleet(#[from] FleetError),
    #[error("the node list has no GPUs")]
    NoGpus,
    #[error("the pod list is empty")]
    NoPods,
}

/// Builds the fleet of a trace, with the mix of its pod list that fragmentation is
/// measured against: the FGD paper's typical pods.
pub fn trace_fleet(
    nodes: &[TraceNode],
    pods: &[TracePod],
) -> Result<(Fleet, Vec<Request>), ReplayError> {
    let mut fleet = Fleet::new(trace::fleet_specs(nodes))?.with_tuning(Tuning {
        candidate_nodes: None,
    });
    let requests: Vec<Request> = pods.iter().map(|p| trace::pod_request(&fleet, p)).collect();
    fleet.set_mix(ShapeMix::typical(
        requests.iter().map(|r| &r.shape),
        TYPICAL_POPULARITY,
    ));
    Ok((fleet, requests))
}

pub fn replay(
    nodes: &[TraceNode],
    pods: &[TracePod],
    opts: &ReplayOptions,
) -> Result<Report, ReplayError> {
    if pods.is_empty() {
        return Err(ReplayError::NoPods);
    }
    let scaled = trace::scale_nodes(nodes, opts.fleet_fraction);
    let (mut fleet, requests) = trace_fleet(&scaled, pods)?;
    let requests: Vec<Request> = requests
        .into_iter()
        .map(|r| r.with_class(opts.class))
        .collect();
    if let Some(seed) = opts.reliability_seed {
        let ids: Vec<NodeId> = fleet.node_ids().collect();
        for (id, r) in ids
            .into_iter()
            .zip(seeded_reliability(seed, fleet.node_count()))
        {
            fleet.set_node_reliability(id, Some(r))?;
        }
    }
    let gpus = fleet.gpu_count();
    if gpus == 0 {
        return Err(ReplayError::NoGpus);
    }
    let policy = Policy::new(opts.policy, opts.seed.wrapping_add(1));
    let mut report = Report {
        policy: opts.policy.name().to_owned(),
        mode: opts.mode.name().to_owned(),
        class: opts.class,
        nodes: fleet.node_count(),
        gpus,
        pods: pods.len(),
        arrivals: 0,
        placed: 0,
        gpus_requested: 0.0,
        gpus_allocated_at_end: 0.0,
        unallocated_gpu_share: 0.0,
        never_placed: None,
        mean_queueing_delay_s: None,
        p99_queueing_delay_s: None,
        gpu_allocation_ratio: None,
        gpu_hours_allocated: None,
        horizon_s: None,
        timed: None,
        compress: None,
        fleet_fraction: (opts.fleet_fraction > 0.0 && opts.fleet_fraction < 1.0)
            .then_some(opts.fleet_fraction),
        failed_arrivals: None,
        failed_gpus_requested: None,
        fragmented_gpu_share: None,
        lower_bound_unallocated_share: None,
        lower_bound_curve: None,
        offline_unallocated_share: None,
        draw: None,
        curve: None,
        reliability_seed: opts.reliability_seed,
        allocated_gpu_reliability: None,
        reliability_curve: None,
    };
    match opts.mode {
        Mode::Timeline => timeline(fleet, pods, &requests, policy, opts, &mut report),
        Mode::Saturate => saturate(fleet, pods, &requests, policy, opts, &mut report),
    }
    Ok(report)
}

/// `nodes` reliabilities in basis points from a generator seeded with `seed`: 90 % of
/// nodes uniform in 9900..=10000, 10 % uniform in 9000..9900 (a fleet where one node in
/// ten has had a bad month).
pub fn seeded_reliability(seed: u64, nodes: usize) -> Vec<u16> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..nodes)
        .map(|_| {
            if rng.random_bool(0.9) {
                rng.random_range(9900..=10_000)
            } else {
                rng.random_range(9000..9900)
            }
        })
        .collect()
}

struct Job {
    arrival: u64,
    /// None: never departs.
    run_s: Option<u64>,
    index: usize,
}

fn timeline(
    fleet: Fleet,
    pods: &[TracePod],
    requests: &[Request],
    policy: Policy,
    opts: &ReplayOptions,
    report: &mut Report,
) {
    let timed = pods.iter().all(|p| p.creation_time.is_some());
    let compress = if opts.compress > 0.0 {
        opts.compress
    } else {
        1.0
    };
    let jobs = jobs(pods, timed, compress);
    let horizon = horizon(&jobs);
    let mut run = Timeline {
        fleet,
        policy,
        pods,
        requests,
        run_of: {
            let mut v = vec![None; pods.len()];
            for j in &jobs {
                v[j.index] = j.run_s;
            }
            v
        },
        departures: BinaryHeap::new(),
        queue: VecDeque::new(),
        delays: Vec::new(),
        allocated: 0,
        area: 0.0,
        now: 0,
    };
    let mut next = 0usize;
    loop {
        let dep = run.departures.peek().map(|Reverse((t, _))| *t);
        let arr = jobs.get(next).map(|j| j.arrival);
        let (t, is_departure) = match (dep, arr) {
            (None, None) => break,
            (Some(d), Some(a)) => {
                if d <= a {
                    (d, true)
                } else {
                    (a, false)
                }
            }
            (Some(d), None) => (d, true),
            (None, Some(a)) => (a, false),
        };
        run.advance(t.min(horizon));
        if is_departure {
            if !run.depart() {
                break;
            }
            run.retry_queue(t);
        } else {
            let job = &jobs[next];
            next += 1;
            report.arrivals += 1;
            run.arrive(job, t);
        }
    }
    run.advance_to_horizon(horizon);
    run.report(report, horizon);
    report.timed = Some(timed);
    report.compress = Some(compress);
}

/// The pods as jobs in arrival order: at their (compressed) creation times when the
/// trace has them all, else one a second in trace order, and then never departing.
fn jobs(pods: &[TracePod], timed: bool, compress: f64) -> Vec<Job> {
    let mut jobs: Vec<Job> = pods
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let arrival = if timed {
                whole(p.creation_time.unwrap_or(0) as f64 / compress)
            } else {
                i as u64
            };
            let start = p.scheduled_time.or(p.creation_time).unwrap_or(arrival);
            Job {
                arrival,
                run_s: if timed {
                    p.deletion_time.map(|d| d.saturating_sub(start))
                } else {
                    None
                },
                index: i,
            }
        })
        .collect();
    jobs.sort_by_key(|j| (j.arrival, j.index));
    jobs
}

/// A quantity the replay counts in whole units (seconds, milli-GPUs): the fraction is
/// dropped, below what a trace records; `as` saturates (NaN and negatives to 0, beyond
/// `u64::MAX` to it).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn whole(x: f64) -> u64 {
    x as u64
}

/// The end of the replay: the last departure, or one second after the last arrival.
fn horizon(jobs: &[Job]) -> u64 {
    let last_arrival = jobs.last().map(|j| j.arrival).unwrap_or(0);
    jobs.iter()
        .filter_map(|j| j.run_s.map(|r| j.arrival + r))
        .max()
        .unwrap_or(0)
        .max(last_arrival + 1)
}

/// The state of a timeline replay between events.
struct Timeline<'a> {
    fleet: Fleet,
    policy: Policy,
    pods: &'a [TracePod],
    requests: &'a [Request],
    /// Per pod: how long it runs once placed (None: never departs).
    run_of: Vec<Option<u64>>,
    departures: BinaryHeap<Reverse<(u64, usize)>>,
    /// Jobs waiting for capacity, with their arrival times.
    queue: VecDeque<(usize, u64)>,
    delays: Vec<u64>,
    allocated: u64,
    /// Milli-GPU seconds allocated so far.
    area: f64,
    now: u64,
}

impl Timeline<'_> {
    fn gpu_milli(&self, job: usize) -> u64 {
        self.pods[job].gpu_milli_total()
    }

    /// Counts the allocation held from now until `clipped` (the event time, clipped to
    /// the horizon).
    fn advance(&mut self, clipped: u64) {
        self.area += self.allocated as f64 * clipped.saturating_sub(self.now) as f64;
        self.now = self.now.max(clipped);
    }

    fn advance_to_horizon(&mut self, horizon: u64) {
        self.area += self.allocated as f64 * horizon.saturating_sub(self.now) as f64;
    }

    /// Places `job` at time `t`; if it ever departs, schedules its departure.
    fn try_place(&mut self, job: usize, t: u64, run: Option<u64>) -> bool {
        match self.fleet.place_with(&self.requests[job], &mut self.policy) {
            Ok(p) => {
                let key = AllocationKey(job as u128);
                if self.fleet.commit(key, &p).is_err() {
                    return false;
                }
                if let Some(run) = run {
                    self.departures.push(Reverse((t + run, job)));
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Releases the next departing job; false when there is none.
    fn depart(&mut self) -> bool {
        let Some(Reverse((_, job))) = self.departures.pop() else {
            return false;
        };
        if self.fleet.release(AllocationKey(job as u128)).is_ok() {
            self.allocated -= self.gpu_milli(job);
        }
        true
    }

    /// Retries the first [`QUEUE_RETRY_WINDOW`] queued jobs at time `t`, in order.
    fn retry_queue(&mut self, t: u64) {
        let mut still = VecDeque::with_capacity(self.queue.len());
        let mut tried = 0;
        while let Some((q, arrived)) = self.queue.pop_front() {
            if tried == QUEUE_RETRY_WINDOW {
                still.push_back((q, arrived));
                continue;
            }
            tried += 1;
            if self.try_place(q, t, self.run_of[q]) {
                self.allocated += self.gpu_milli(q);
                self.delays.push(t - arrived);
            } else {
                still.push_back((q, arrived));
            }
        }
        self.queue = still;
    }

    /// A job arrives at time `t`: placed at once, or queued.
    fn arrive(&mut self, job: &Job, t: u64) {
        if self.try_place(job.index, t, job.run_s) {
            self.allocated += self.gpu_milli(job.index);
            self.delays.push(0);
        } else {
            self.queue.push_back((job.index, job.arrival));
        }
    }

    fn report(mut self, report: &mut Report, horizon: u64) {
        let area = self.area;
        let capacity = (report.gpus as u64 * u64::from(MILLI_PER_GPU)) as f64;
        report.placed = self.delays.len();
        report.never_placed = Some(self.queue.len());
        report.gpus_requested =
            self.pods.iter().map(|p| p.gpu_milli_total()).sum::<u64>() as f64 / 1000.0;
        report.gpus_allocated_at_end = self.fleet.allocated_gpu_milli() as f64 / 1000.0;
        report.unallocated_gpu_share = 1.0 - area / (capacity * horizon as f64);
        report.gpu_allocation_ratio = Some(area / (capacity * horizon as f64));
        report.gpu_hours_allocated = Some(area / 1000.0 / 3600.0);
        report.horizon_s = Some(horizon);
        let delays = &mut self.delays;
        delays.sort_unstable();
        report.mean_queueing_delay_s = Some(if delays.is_empty() {
            0.0
        } else {
            delays.iter().sum::<u64>() as f64 / delays.len() as f64
        });
        report.p99_queueing_delay_s = Some(percentile(delays, 0.99) as f64);
    }
}

/// Nearest-rank percentile of sorted values (0 for none).
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = nearest_rank(q, sorted.len());
    sorted[rank - 1]
}

/// The nearest rank of quantile `q` among `len` values, 1-based. The float only picks
/// the rank: `as` saturates (NaN and negatives to 0) and the clamp keeps it in range.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn nearest_rank(q: f64, len: usize) -> usize {
    ((q * len as f64).ceil() as usize).clamp(1, len)
}

fn saturate(
    mut fleet: Fleet,
    pods: &[TracePod],
    requests: &[Request],
    mut policy: Policy,
    opts: &ReplayOptions,
    report: &mut Report,
) {
    let capacity = report.gpus as u64 * u64::from(MILLI_PER_GPU);
    let empty = fleet.clone();
    let target = whole((opts.arrive * capacity as f64).max(0.0));
    let mut arrivals = Arrivals::new(opts.draw, opts.seed, pods.len());
    let mut requested = 0u64;
    let mut failed = 0usize;
    let mut failed_milli = 0u64;
    let mut drawn: Vec<usize> = Vec::new();
    let step = whole(CURVE_STEP * capacity as f64).max(1);
    let mut curve = Vec::new();
    let mut reliability_curve = Vec::new();
    while requested < target && drawn.len() < MAX_SATURATE_ARRIVALS {
        let Some(i) = arrivals.next() else { break };
        drawn.push(i);
        let g = pods[i].gpu_milli_total();
        requested += g;
        let key = AllocationKey(drawn.len() as u128);
        let ok = match fleet.place_with(&requests[i], &mut policy) {
            Ok(p) => fleet.commit(key, &p).is_ok(),
            Err(_) => false,
        };
        if ok {
            report.placed += 1;
        } else {
            failed += 1;
            failed_milli += g;
        }
        if (requested - g) / step != requested / step || requested >= target {
            let free = 1.0 - fleet.allocated_gpu_milli() as f64 / capacity as f64;
            let arrived = requested as f64 / capacity as f64;
            curve.push([arrived, free]);
            if let Some(r) = fleet.allocated_gpu_reliability() {
                reliability_curve.push([arrived, r]);
            }
        }
    }
    report.curve = Some(curve);
    report.reliability_curve = opts.reliability_seed.map(|_| reliability_curve);
    report.draw = Some(opts.draw.name().to_owned());
    let allocated = fleet.allocated_gpu_milli();
    report.arrivals = drawn.len();
    report.gpus_requested = requested as f64 / 1000.0;
    report.gpus_allocated_at_end = allocated as f64 / 1000.0;
    report.unallocated_gpu_share = 1.0 - allocated as f64 / capacity as f64;
    report.failed_arrivals = Some(failed);
    report.failed_gpus_requested = Some(failed_milli as f64 / 1000.0);
    report.allocated_gpu_reliability = fleet.allocated_gpu_reliability();
    let all_shapes = ShapeMix::observe(requests.iter().map(|r| &r.shape), usize::MAX);
    report.fragmented_gpu_share =
        Some(unusable_free_milli(&fleet, &all_shapes) as f64 / capacity as f64);
    let arrivals: Vec<&Request> = drawn.iter().map(|&i| &requests[i]).collect();
    let bounds = bound_curve(&empty, pods, &drawn, &arrivals);
    report.lower_bound_unallocated_share = bounds.last().map(|b| b[1]);
    report.lower_bound_curve = Some(bounds);
    report.offline_unallocated_share = Some(optimum::offline_unallocated(empty, &arrivals));
}

/// Saturate: the lower bound each time the GPUs requested pass another [`BOUND_STEP`]
/// of the fleet's, and at the end (at least one point): `[arrived, bound]`.
/// `arrivals` are the requests of the `drawn` pods, in order.
fn bound_curve(
    fleet: &Fleet,
    pods: &[TracePod],
    drawn: &[usize],
    arrivals: &[&Request],
) -> Vec<[f64; 2]> {
    let capacity = fleet.gpu_count() as f64 * f64::from(MILLI_PER_GPU);
    let step = BOUND_STEP * capacity;
    let mut out = Vec::new();
    let mut requested = 0.0;
    let mut next = step;
    for (k, &i) in drawn.iter().enumerate() {
        requested += pods[i].gpu_milli_total() as f64;
        if requested >= next || k + 1 == drawn.len() {
            let bound = optimum::lower_bound_unallocated(fleet, &arrivals[..=k]);
            out.push([requested / capacity, bound]);
            while next <= requested {
                next += step;
            }
        }
    }
    if out.is_empty() {
        // No arrivals: nothing can be allocated.
        out.push([0.0, optimum::lower_bound_unallocated(fleet, &[])]);
    }
    out
}

/// Free GPU capacity (milli) that no shape of `mix` could use where it is.
pub fn unusable_free_milli(fleet: &Fleet, mix: &ShapeMix) -> u64 {
    let mut total = 0u64;
    for id in fleet.node_ids() {
        let Some(free) = fleet.node_free(id) else {
            continue;
        };
        let node = &fleet.nodes[id.index()];
        let gpus: Vec<(ModelId, u32)> = node
            .gpus
            .iter()
            .map(|g| (g.model, g.free_milli()))
            .collect();
        let fits_node =
            |s: &MixShape| s.cpu_milli <= free.cpu_milli && s.memory_mib <= free.memory_mib;
        let full = |s: &MixShape| {
            count_u32(
                gpus.iter()
                    .filter(|g| g.1 == MILLI_PER_GPU && s.models.contains(g.0))
                    .count(),
            )
        };
        for &(model, milli) in &gpus {
            if milli == 0 {
                continue;
            }
            let usable = mix.shapes.iter().any(|s| {
                fits_node(s)
                    && s.models.contains(model)
                    && if s.whole_gpus > 0 {
                        milli == MILLI_PER_GPU && full(s) >= s.whole_gpus
                    } else {
                        milli >= s.milli
                    }
            });
            if !usable {
                total += u64::from(milli);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "sn,cpu_milli,memory_mib,gpu,model\n\
        a,32000,262144,2,T4\nb,96000,393216,8,G2\nc,16000,122880,2,P100\n";
    const PODS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        p0,12000,16384,1,1000,,LS,Running,0,100,0\n\
        p1,6000,12288,1,460,,LS,Running,10,50,10\n\
        p2,8000,16384,8,1000,,LS,Running,20,200,20\n\
        p3,8000,16384,8,1000,G2,LS,Pending,30,60,\n\
        p4,4000,8192,0,0,,BE,Running,40,90,40\n";

    fn run(mode: Mode, policy: PolicyKind) -> Report {
        let nodes = trace::read_nodes(NODES.as_bytes()).unwrap();
        let pods = trace::read_pods(PODS.as_bytes()).unwrap();
        replay(
            &nodes,
            &pods,
            &ReplayOptions {
                policy,
                mode,
                ..ReplayOptions::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn a_timeline_queues_what_does_not_fit_until_a_departure() {
        let r = run(Mode::Timeline, PolicyKind::Topo);
        assert_eq!(r.placed, 5);
        assert_eq!(r.never_placed, Some(0));
        // p3 needs the only 8-GPU node, busy with p2 until t=200.
        assert_eq!(r.p99_queueing_delay_s, Some(170.0));
        assert!(r.gpu_hours_allocated.unwrap() > 0.0);
    }

    #[test]
    fn the_saturate_curve_rises_in_arrivals_to_the_final_share() {
        let r = run(Mode::Saturate, PolicyKind::Topo);
        let curve = r.curve.expect("a curve");
        assert!(curve.len() >= 2, "{curve:?}");
        assert!(curve.windows(2).all(|w| w[0][0] < w[1][0]), "{curve:?}");
        let last = curve.last().unwrap();
        assert!(last[0] >= 1.2, "{curve:?}");
        assert!(
            (last[1] - r.unallocated_gpu_share).abs() < 1e-12,
            "{curve:?}"
        );
        assert!(run(Mode::Timeline, PolicyKind::Topo).curve.is_none());
    }

    #[test]
    fn no_policy_leaves_less_than_the_lower_bound_at_any_level() {
        for policy in PolicyKind::ALL {
            let r = run(Mode::Saturate, policy);
            let curve = r.curve.clone().expect("a curve");
            let bounds = r.lower_bound_curve.expect("a bound curve");
            assert!(bounds.len() >= 2, "{bounds:?}");
            assert_eq!(bounds.last().map(|b| b[1]), r.lower_bound_unallocated_share);
            // Where the curve has a point after the same arrivals (at least the end).
            let mut compared = 0;
            for [arrived, bound] in bounds {
                for p in curve.iter().filter(|p| (p[0] - arrived).abs() < 1e-12) {
                    assert!(
                        bound <= p[1] + 1e-12,
                        "{policy:?} at {arrived}: {} below the bound {bound}",
                        p[1]
                    );
                    compared += 1;
                }
            }
            assert!(compared >= 1, "{curve:?}");
        }
    }

    #[test]
    fn the_list_draw_takes_every_pod_once_before_drawing_again() {
        let first: Vec<usize> = Arrivals::new(Draw::List, 7, 50).take(50).collect();
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(first, sorted, "the list is shuffled");
        let again: Vec<usize> = Arrivals::new(Draw::List, 7, 50).take(80).collect();
        assert_eq!(again[..50], first[..]);
        assert!(again[50..].iter().all(|&i| i < 50));
        let sampled: Vec<usize> = Arrivals::new(Draw::Sample, 7, 50).take(50).collect();
        let mut distinct = sampled.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() < 50,
            "sampling with replacement repeats pods"
        );
    }

    #[test]
    fn a_smaller_fleet_makes_the_same_work_wait_longer() {
        let nodes = trace::read_nodes(
            "sn,cpu_milli,memory_mib,gpu,model\na,96000,393216,8,G2\nb,96000,393216,8,G2\n"
                .as_bytes(),
        )
        .unwrap();
        let pods = trace::read_pods(PODS.as_bytes()).unwrap();
        let at = |fleet_fraction: f64| {
            let opts = ReplayOptions {
                fleet_fraction,
                ..ReplayOptions::default()
            };
            replay(&nodes, &pods, &opts).unwrap()
        };
        let (whole, half) = (at(1.0), at(0.5));
        assert_eq!((whole.nodes, half.nodes), (2, 1));
        assert_eq!(
            (whole.fleet_fraction, half.fleet_fraction),
            (None, Some(0.5))
        );
        assert!(
            half.mean_queueing_delay_s.unwrap() > whole.mean_queueing_delay_s.unwrap(),
            "{whole:?} {half:?}"
        );
    }

    #[test]
    fn every_policy_replays_both_modes_deterministically() {
        for policy in PolicyKind::ALL {
            for mode in [Mode::Timeline, Mode::Saturate] {
                let a = run(mode, policy);
                assert_eq!(a, run(mode, policy), "{policy} {mode:?}");
                assert!((0.0..=1.0).contains(&a.unallocated_gpu_share));
            }
        }
    }

    #[test]
    fn the_json_report_names_the_policy_and_the_contract_keys() {
        let json = serde_json::to_value(run(Mode::Saturate, PolicyKind::Fgd)).unwrap();
        assert_eq!(json["policy"], "fgd");
        assert_eq!(json["mode"], "saturate");
        assert!(json["unallocated_gpu_share"].is_number());
        assert!(json["lower_bound_unallocated_share"].is_number());
        let json = serde_json::to_value(run(Mode::Timeline, PolicyKind::BestFit)).unwrap();
        assert!(json["gpu_hours_allocated"].is_number());
        assert!(json["p99_queueing_delay_s"].is_number());
    }

    #[test]
    fn seeded_reliabilities_are_plausible_and_spot_replays_ignore_them() {
        let r = seeded_reliability(7, 10_000);
        assert_eq!(r, seeded_reliability(7, 10_000));
        assert!(r.iter().all(|&x| (9000..=10_000).contains(&x)));
        let low = r.iter().filter(|&&x| x < 9900).count();
        assert!((900..1100).contains(&low), "{low} of 10000 below 9900");
        let at = |class, reliability_seed| {
            let opts = ReplayOptions {
                mode: Mode::Saturate,
                class,
                reliability_seed,
                ..ReplayOptions::default()
            };
            let nodes = trace::read_nodes(NODES.as_bytes()).unwrap();
            replay(&nodes, &trace::read_pods(PODS.as_bytes()).unwrap(), &opts).unwrap()
        };
        let plain = at(Class::OnDemand, None);
        assert_eq!(plain.allocated_gpu_reliability, None);
        let spot = at(Class::Spot, Some(3));
        assert_eq!(
            spot.curve, plain.curve,
            "spot placements ignore reliability"
        );
        let mean = spot.allocated_gpu_reliability.expect("a mean");
        assert!((9000.0..=10_000.0).contains(&mean), "{mean}");
        let json = serde_json::to_value(at(Class::OnDemand, Some(3))).unwrap();
        assert_eq!(json["class"], "on_demand");
        assert!(json["allocated_gpu_reliability"].is_number());
        assert!(json["reliability_curve"].is_array());
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&[], 0.99), 0);
    }
}
