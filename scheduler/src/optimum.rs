//! How far from the best possible a saturate replay ends: a lower bound on what any
//! policy leaves unallocated with the same arrivals, and one feasible offline packing of
//! them. The best any policy could do lies between the two.
//!
//! The bound is the dual of a relaxation. Allocate arrival `i` (g_i milli-GPUs, c_i CPU,
//! m_i memory) to at most one node, each node within its GPUs G_n, CPU C_n and memory
//! M_n, and — what makes it an integer bound — within G_n under a dual-feasible function
//! `u` of the GPU (Fekete and Schepers): whatever shares one GPU sums to at most one GPU
//! under `u` as well. With `u_t`, a fraction of at most `t` milli counts nothing and one
//! of at least `1000 − t` counts a whole GPU: an 800-milli task leaves a sliver only
//! tasks of 200 or less can use. For prices α, β (per milli-GPU, plain and under `u`), a
//! (per CPU milli) and b (per MiB), all ≥ 0, what node `n` allocates is at most
//! `min(G_n, (α + β)·G_n + a·C_n + b·M_n)` plus the part of its tasks those prices do not
//! pay for, `Σ_i max(0, (1 − α)·g_i − β·u_t(g_i) − a·c_i − b·m_i)`. Summed over nodes
//! and tasks, for any prices, that bounds what any assignment allocates (weak duality);
//! the bound is its minimum over a search of the prices. It ignores the order of
//! arrivals (an online policy also cannot see what comes), which nodes a model-
//! constrained task may use, and how a node's CPU splits between its GPUs.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::fleet::Fleet;
use crate::ids::{AllocationKey, ModelSet};
use crate::request::{MILLI_PER_GPU, Request, Shape};

/// Identical arrivals, or identical nodes: the milli-GPUs asked for (whole GPUs are
/// multiples of 1000) or that arrivals could use, CPU milli, memory MiB, and how many.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    pub milli: u64,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    pub count: u32,
}

/// Counts identical `(milli, cpu_milli, memory_mib)` into groups.
fn groups(items: impl Iterator<Item = (u64, u32, u64)>) -> Vec<Group> {
    let mut counts: BTreeMap<(u64, u32, u64), u32> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|((milli, cpu_milli, memory_mib), count)| Group {
            milli,
            cpu_milli,
            memory_mib,
            count,
        })
        .collect()
}

/// One point of the dual: the prices of the relaxation.
#[derive(Debug, Clone, Copy, Default)]
struct Prices {
    gpu: f64,
    packed: f64,
    sliver: u64,
    cpu: f64,
    memory: f64,
}

/// `u_t` of a task's milli-GPUs: whole GPUs count as they are; a fraction of at most
/// `sliver` counts 0, one of at least `1000 − sliver` a whole GPU, the rest as they are.
/// Under it what one GPU holds sums to at most 1000 (for `sliver` ≤ 500): beside a
/// fraction that counts whole, only ones of at most `sliver` fit.
fn packed_milli(milli: u64, sliver: u64) -> f64 {
    let whole = u64::from(MILLI_PER_GPU);
    if milli >= whole {
        milli as f64
    } else if milli <= sliver {
        0.0
    } else if milli + sliver >= whole {
        whole as f64
    } else {
        milli as f64
    }
}

/// What any assignment allocates at most, under `p` (milli-GPUs).
fn dual(tasks: &[Group], nodes: &[Group], p: &Prices) -> f64 {
    let unpaid: f64 = tasks
        .iter()
        .map(|t| {
            let g = t.milli as f64;
            let left = (1.0 - p.gpu) * g
                - p.packed * packed_milli(t.milli, p.sliver)
                - p.cpu * f64::from(t.cpu_milli)
                - p.memory * t.memory_mib as f64;
            f64::from(t.count) * left.max(0.0)
        })
        .sum();
    let held: f64 = nodes
        .iter()
        .map(|n| {
            let g = n.milli as f64;
            let priced = (p.gpu + p.packed) * g
                + p.cpu * f64::from(n.cpu_milli)
                + p.memory * n.memory_mib as f64;
            f64::from(n.count) * g.min(priced)
        })
        .sum();
    unpaid + held
}

/// Steps of the GPU prices α and β (each 0 to 1 in twentieths).
const GPU_PRICE_STEPS: u32 = 20;

/// The lower bound on the unallocated share of `nodes`' GPUs with arrivals `tasks`:
/// the smallest dual found by searching the GPU prices and slivers, then the CPU and
/// memory prices, then the GPU prices again (the search only decides how tight it is:
/// every point of it is a valid bound).
pub fn lower_bound(tasks: &[Group], nodes: &[Group]) -> f64 {
    let capacity: f64 = nodes
        .iter()
        .map(|n| n.milli as f64 * f64::from(n.count))
        .sum();
    if capacity <= 0.0 {
        return 0.0;
    }
    let mut best = (Prices::default(), dual(tasks, nodes, &Prices::default()));
    let mut consider = |p: Prices| {
        let d = dual(tasks, nodes, &p);
        if d < best.1 {
            best = (p, d);
        }
        best.0
    };
    let slivers = slivers(tasks);
    let mut at = search_gpu_prices(Prices::default(), &slivers, &mut consider);
    // From the GPU prices found and from none: the GPUs alone (α = 1) leave nothing for
    // CPU prices to improve.
    for from in [at, Prices::default()] {
        for cpu in price_grid(1.0 / 1000.0) {
            for memory in price_grid(1.0 / 1024.0 / 10.0) {
                at = consider(Prices {
                    cpu,
                    memory,
                    ..from
                });
            }
        }
    }
    search_gpu_prices(at, &slivers, &mut consider);
    (1.0 - best.1.min(capacity) / capacity).max(0.0)
}

/// Tries every GPU price pair and sliver at the CPU and memory prices of `at`; returns
/// the best point found so far (`consider` keeps it).
fn search_gpu_prices(
    at: Prices,
    slivers: &[u64],
    consider: &mut impl FnMut(Prices) -> Prices,
) -> Prices {
    let mut best = at;
    for &sliver in slivers {
        for (gpu, packed) in gpu_prices() {
            best = consider(Prices {
                gpu,
                packed,
                sliver,
                ..at
            });
        }
    }
    best
}

/// The slivers worth trying: 0, every fraction size up to half a GPU, and what every
/// larger fraction leaves of its GPU.
fn slivers(tasks: &[Group]) -> Vec<u64> {
    let whole = u64::from(MILLI_PER_GPU);
    let mut out: Vec<u64> = tasks
        .iter()
        .filter(|t| t.milli < whole)
        .map(|t| t.milli.min(whole - t.milli))
        .collect();
    out.push(0);
    out.sort_unstable();
    out.dedup();
    out
}

/// α and β with α + β ≤ 1 (at 1 the GPUs alone bound it: nothing to gain above).
fn gpu_prices() -> impl Iterator<Item = (f64, f64)> {
    (0..=GPU_PRICE_STEPS).flat_map(|a| {
        (0..=GPU_PRICE_STEPS - a).map(move |b| {
            let step = f64::from(GPU_PRICE_STEPS);
            (f64::from(a) / step, f64::from(b) / step)
        })
    })
}

/// Prices from "free" to about a GPU's worth per node's share, on a log scale.
fn price_grid(unit: f64) -> impl Iterator<Item = f64> {
    std::iter::once(0.0).chain((0..40).map(move |k| unit * 10f64.powf(f64::from(k) / 10.0 - 2.0)))
}

/// The lower bound for `arrivals` on `fleet` (GPUs of models no arrival accepts count as
/// unusable; CPU-only and MIG arrivals are left out: a relaxation may refuse them).
pub fn lower_bound_unallocated(fleet: &Fleet, arrivals: &[&Request]) -> f64 {
    let mut accepted = ModelSet::NONE;
    let mut gpu_arrivals = Vec::new();
    for r in arrivals {
        let models = match r.shape {
            Shape::WholeGpus { models, .. } | Shape::Fractional { models, .. } => models,
            _ => continue,
        };
        accepted = ModelSet::from_bits(accepted.bits() | models.bits());
        let (cpu, memory) = r.shape.cpu_and_memory();
        gpu_arrivals.push((r.shape.gpu_milli(), cpu, memory));
    }
    let tasks = groups(gpu_arrivals.into_iter());
    let nodes = groups(fleet.nodes.iter().map(|n| {
        let gpus = n.gpus.iter().filter(|g| accepted.contains(g.model)).count();
        let milli = gpus as u64 * u64::from(MILLI_PER_GPU);
        (milli, n.cpu_milli, n.memory_mib)
    }));
    // Capacity is the whole fleet's, usable or not.
    let capacity = fleet.gpu_count() as f64 * f64::from(MILLI_PER_GPU);
    let usable: f64 = nodes
        .iter()
        .map(|n| n.milli as f64 * f64::from(n.count))
        .sum();
    let allocated_at_most = (1.0 - lower_bound(&tasks, &nodes)) * usable;
    (1.0 - allocated_at_most / capacity).max(0.0)
}

/// What a packer that sees every arrival first leaves unallocated: the same arrivals,
/// the most GPU first (then the most CPU, then memory), each placed by `topo`. It is one
/// feasible offline packing, so the best any policy could do with these arrivals lies
/// between the lower bound and this.
pub fn offline_unallocated(mut fleet: Fleet, arrivals: &[&Request]) -> f64 {
    let mut order: Vec<&Request> = arrivals.to_vec();
    order.sort_by_key(|r| {
        let (cpu, memory) = r.shape.cpu_and_memory();
        Reverse((r.shape.gpu_milli(), cpu, memory))
    });
    for (k, r) in order.into_iter().enumerate() {
        if let Ok(p) = fleet.place(r) {
            let _ = fleet.commit(AllocationKey(k as u128), &p);
        }
    }
    let capacity = fleet.gpu_count() as f64 * f64::from(MILLI_PER_GPU);
    1.0 - fleet.allocated_gpu_milli() as f64 / capacity
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn task(milli: u64, cpu_milli: u32, count: u32) -> Group {
        Group {
            milli,
            cpu_milli,
            memory_mib: 0,
            count,
        }
    }

    fn node(gpus: u64, cpu_milli: u32) -> Group {
        Group {
            milli: gpus * 1000,
            cpu_milli,
            memory_mib: 0,
            count: 1,
        }
    }

    #[test]
    fn the_offline_packing_places_the_largest_first() {
        let nodes = crate::trace::read_nodes(
            "sn,cpu_milli,memory_mib,gpu,model\na,32000,65536,2,T4\n".as_bytes(),
        )
        .unwrap();
        let pods = crate::trace::read_pods(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,600\nq,1000,1024,1,1000\n"
                .as_bytes(),
        )
        .unwrap();
        let (fleet, requests) = crate::replay::trace_fleet(&nodes, &pods).unwrap();
        // Online in this order, the two 0.6 fractions take both GPUs and the whole GPU
        // fails (0.8 of 2 GPUs free); largest first, one 0.6 fails (0.4 free).
        let arrivals = [&requests[0], &requests[0], &requests[1]];
        assert!((offline_unallocated(fleet, &arrivals) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn what_one_gpu_holds_sums_to_at_most_a_gpu_under_the_packed_measure() {
        assert_eq!(packed_milli(800, 200), 1000.0);
        assert_eq!(packed_milli(200, 200), 0.0);
        assert_eq!(packed_milli(500, 200), 500.0);
        for sliver in [0, 100, 200, 499] {
            assert_eq!(packed_milli(2000, sliver), 2000.0);
            assert_eq!(
                packed_milli(600, sliver),
                if sliver >= 400 { 1000.0 } else { 600.0 }
            );
        }
    }

    #[test]
    fn three_fractions_over_half_a_gpu_cannot_share_two_gpus() {
        // 1800 milli asked of 2000: the plain relaxation packs it all (0.1 left), but no
        // two of them share a GPU, so at least 800 stays free.
        let bound = lower_bound(&[task(600, 0, 3)], &[node(2, 64_000)]);
        assert!((bound - 0.4).abs() < 1e-9, "{bound}");
    }

    #[test]
    fn cpu_strands_gpus_in_the_bound() {
        // Each whole-GPU task needs 16 of the node's 32 cores: 2 of 4 GPUs at most.
        // The CPU prices are a grid, so the bound gets close to 0.5 without reaching it.
        let bound = lower_bound(&[task(1000, 16_000, 8)], &[node(4, 32_000)]);
        assert!((0.49..=0.5).contains(&bound), "{bound}");
    }

    /// The most any assignment of single-GPU `tasks` (each task counted once) allocates
    /// on `nodes`, by trying every assignment.
    fn best_allocation(tasks: &[(u32, u32)], nodes: &[(usize, u32)]) -> u32 {
        let gpus: Vec<usize> = nodes
            .iter()
            .enumerate()
            .flat_map(|(n, &(count, _))| std::iter::repeat_n(n, count))
            .collect();
        let mut best = 0;
        let choices = gpus.len() + 1;
        let mut code = vec![0usize; tasks.len()];
        loop {
            let mut gpu_used = vec![0u32; gpus.len()];
            let mut whole = vec![false; gpus.len()];
            let mut cpu_used = vec![0u32; nodes.len()];
            let mut ok = true;
            let mut total = 0;
            for (t, &c) in code.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let g = c - 1;
                let (milli, cpu) = tasks[t];
                // A whole GPU shares with nothing.
                let shared_whole = whole[g] || (milli == 1000 && gpu_used[g] > 0);
                ok &= !shared_whole;
                whole[g] |= milli == 1000;
                gpu_used[g] += milli;
                cpu_used[gpus[g]] += cpu;
                total += milli;
            }
            ok &= gpu_used.iter().all(|&u| u <= 1000);
            ok &= cpu_used.iter().zip(nodes).all(|(&u, n)| u <= n.1);
            if ok {
                best = best.max(total);
            }
            let mut i = 0;
            while i < code.len() {
                code[i] += 1;
                if code[i] < choices {
                    break;
                }
                code[i] = 0;
                i += 1;
            }
            if i == code.len() {
                return best;
            }
        }
    }

    #[test]
    fn the_bound_never_exceeds_what_the_best_assignment_leaves() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let sizes = [100, 200, 300, 400, 500, 600, 700, 800, 1000];
        for case in 0..200 {
            let nodes: Vec<(usize, u32)> = (0..rng.random_range(1..=2))
                .map(|_| (rng.random_range(1..=2), rng.random_range(2..=8) * 1000))
                .collect();
            let tasks: Vec<(u32, u32)> = (0..rng.random_range(1..=6))
                .map(|_| {
                    let milli = sizes[rng.random_range(0..sizes.len())];
                    (milli, rng.random_range(0..=4) * 1000)
                })
                .collect();
            let capacity: usize = nodes.iter().map(|n| n.0 * 1000).sum();
            let best = best_allocation(&tasks, &nodes);
            let optimum = 1.0 - f64::from(best) / capacity as f64;
            let bound = lower_bound(
                &tasks
                    .iter()
                    .map(|&(m, c)| task(u64::from(m), c, 1))
                    .collect::<Vec<_>>(),
                &nodes
                    .iter()
                    .map(|&(g, c)| node(g as u64, c))
                    .collect::<Vec<_>>(),
            );
            assert!(
                bound <= optimum + 1e-9,
                "case {case}: bound {bound} above the optimum {optimum} ({tasks:?} on {nodes:?})"
            );
        }
    }
}
