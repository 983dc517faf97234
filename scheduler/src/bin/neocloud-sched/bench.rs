//! `neocloud-sched bench`: times decisions on a synthetic fleet and prints p50/p99 per
//! request kind, for `topo` and for two naive linear scans without aggregates (first fit
//! and best fit), side by side, plus release and sustained decisions per second.

use std::time::{Duration, Instant};

use neocloud_scheduler::replay::nearest_rank;
use neocloud_scheduler::synthetic::{self, Kind};
use neocloud_scheduler::{AllocationKey, Fleet, Request, Shape, Topology, TopologyLevel};

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort_unstable();
    let at = |q: f64| {
        let rank = nearest_rank(q, samples.len().max(1));
        samples.get(rank - 1).map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    let mean =
        samples.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e6 / samples.len().max(1) as f64;
    (at(0.5), at(0.99), mean)
}

fn time(decisions: usize, mut f: impl FnMut(usize) -> bool) -> (Vec<Duration>, usize) {
    let mut samples = Vec::with_capacity(decisions);
    let mut fits = 0;
    for i in 0..decisions {
        let start = Instant::now();
        let ok = f(i);
        samples.push(start.elapsed());
        fits += usize::from(ok);
    }
    (samples, fits)
}

pub fn run(
    nodes: usize,
    decisions: usize,
    occupancies: &[f64],
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "synthetic fleet: {nodes} nodes x 8 GPUs; {decisions} decisions per row; times in microseconds"
    );
    println!(
        "| occupancy | request | topo p50 | topo p99 | topo mean | scan first-fit p50 | scan first-fit p99 | scan best-fit p50 | scan best-fit p99 | fits (topo/ff/bf) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &occupancy in occupancies {
        let build = Instant::now();
        let mut fleet = synthetic::fleet(nodes)?;
        synthetic::fill(&mut fleet, occupancy, seed);
        let built_s = build.elapsed().as_secs_f64();
        let share = fleet.allocated_gpu_milli() as f64 / (fleet.gpu_count() as f64 * 1000.0);
        for kind in Kind::ALL {
            let reqs: Vec<Request> = (0..decisions)
                .map(|i| kind.request(&fleet, 1000 + i as u128 % 7))
                .collect();
            let (topo, topo_fits) = time(decisions, |i| fleet.place(&reqs[i]).is_ok());
            let (naive, naive_fits) = time(decisions, |i| {
                synthetic::naive_first_fit(&fleet, &reqs[i]).is_ok()
            });
            let (p50, p99, mean) = percentiles(topo);
            let (best, best_fits) = time(decisions, |i| {
                synthetic::naive_best_fit(&fleet, &reqs[i]).is_ok()
            });
            let (n50, n99, _) = percentiles(naive);
            let (b50, b99, _) = percentiles(best);
            println!(
                "| {:.0}% | {} | {p50:.1} | {p99:.1} | {mean:.1} | {n50:.1} | {n99:.1} | {b50:.1} | {b99:.1} | {topo_fits}/{naive_fits}/{best_fits} |",
                share * 100.0,
                kind.name()
            );
        }
        release_row(&mut fleet, decisions, share)?;
        sustained_row(&mut fleet, decisions * 10, share)?;
        eprintln!("(fleet built and filled in {built_s:.1} s)");
    }
    preemption_row(nodes, decisions, seed)?;
    Ok(())
}

/// 8 H100 on one node, on demand, on a fleet filled to the brim (every node full or half
/// used): nothing fits without preempting spot work.
fn preemption_row(
    nodes: usize,
    decisions: usize,
    seed: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut fleet = synthetic::fleet(nodes)?;
    synthetic::fill(&mut fleet, 1.0, seed);
    let share = fleet.allocated_gpu_milli() as f64 / (fleet.gpu_count() as f64 * 1000.0);
    let mut req = Kind::EightGpusNvlink.request(&fleet, 1000);
    req.shape = Shape::WholeGpus {
        count: 8,
        models: fleet.model_set(["H100"]),
        topology: Topology::required(TopologyLevel::Node),
        cpu_milli_per_gpu: 8000,
        memory_mib_per_gpu: 65_536,
    };
    // Use up the nodes where it still fits without preemption.
    let mut key = 1u128;
    while let Ok(p) = fleet.place(&req) {
        if !p.victims.is_empty() {
            break;
        }
        fleet.commit(AllocationKey(key), &p)?;
        key += 1;
    }
    let mut victims = 0usize;
    let (samples, fits) = time(decisions, |_| match fleet.place(&req) {
        Ok(p) => {
            victims += p.victims.len();
            true
        }
        Err(_) => false,
    });
    let (p50, p99, mean) = percentiles(samples);
    println!(
        "| {:.0}% | 8 H100 on one node, on demand, by preempting spot ({:.1} victims each) | {p50:.1} | {p99:.1} | {mean:.1} | | | | | {fits} |",
        share * 100.0,
        victims as f64 / fits.max(1) as f64
    );
    Ok(())
}

/// Release of a one-GPU allocation (placed and committed untimed first).
fn release_row(
    fleet: &mut Fleet,
    decisions: usize,
    share: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut samples = Vec::with_capacity(decisions);
    for i in 0..decisions {
        let key = AllocationKey(1 + i as u128);
        let p = fleet.place(&Kind::OneGpu.request(fleet, 1))?;
        fleet.commit(key, &p)?;
        let start = Instant::now();
        fleet.release(key)?;
        samples.push(start.elapsed());
    }
    let (p50, p99, mean) = percentiles(samples);
    println!(
        "| {:.0}% | release (1 GPU) | {p50:.1} | {p99:.1} | {mean:.1} | | | | | |",
        share * 100.0
    );
    Ok(())
}

/// A stream of mixed single-node requests, each placed, committed and released (so the
/// occupancy holds): decisions per second including the bookkeeping.
fn sustained_row(
    fleet: &mut Fleet,
    decisions: usize,
    share: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let kinds = [
        Kind::OneGpu,
        Kind::EightGpusNvlink,
        Kind::Mig1g,
        Kind::Mig3g,
        Kind::Fractional,
    ];
    let start = Instant::now();
    for i in 0..decisions {
        let kind = kinds[i % kinds.len()];
        let key = AllocationKey(1 + i as u128);
        if let Ok(p) = fleet.place(&kind.request(fleet, 1)) {
            fleet.commit(key, &p)?;
            fleet.release(key)?;
        }
    }
    let per_s = decisions as f64 / start.elapsed().as_secs_f64();
    println!(
        "| {:.0}% | sustained mix (place+commit+release) | {per_s:.0} decisions/s | | | | | | | |",
        share * 100.0
    );
    Ok(())
}
