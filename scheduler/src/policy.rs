//! Placement policies: how a candidate is chosen among the ones that fit. `topo` is the
//! engine's own (fullest domains first, fragmentation-aware scoring, MIG by blocked
//! larger profiles); `best-fit`, `first-fit`, `random` (seeded) and `fgd` (fragmentation
//! gradient descent, ATC'23) are the baselines the replay compares it with.
//!
//! What fits is decided in `placement`; this module only ranks candidates.

use std::fmt;
use std::str::FromStr;

use neocloud_schema::mig::MigProfile;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::fleet::{Fleet, GpuMode, Health, Node};
use crate::fractional::{self, Measure};
use crate::ids::{ModelId, NodeId, count_u32};
use crate::mig;
use crate::placement::{GpuShare, NodePlacement};
use crate::request::{MILLI_PER_GPU, Shape};

/// The policies the engine knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    Topo,
    BestFit,
    FirstFit,
    Random,
    Fgd,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 5] = [
        PolicyKind::Topo,
        PolicyKind::BestFit,
        PolicyKind::FirstFit,
        PolicyKind::Random,
        PolicyKind::Fgd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Topo => "topo",
            PolicyKind::BestFit => "best-fit",
            PolicyKind::FirstFit => "first-fit",
            PolicyKind::Random => "random",
            PolicyKind::Fgd => "fgd",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy `{name}` (topo, best-fit, first-fit, random, fgd)")]
pub struct UnknownPolicy {
    pub name: String,
}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownPolicy { name: s.to_owned() })
    }
}

/// A policy with its state (the seeded generator of `random`).
#[derive(Debug, Clone)]
pub struct Policy {
    pub kind: PolicyKind,
    pub(crate) rng: ChaCha8Rng,
}

impl Policy {
    pub fn new(kind: PolicyKind, seed: u64) -> Policy {
        Policy {
            kind,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn topo() -> Policy {
        Policy::new(PolicyKind::Topo, 0)
    }
}

/// A candidate's rank under a policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Score {
    /// Lower is better, compared element by element.
    pub rank: [f64; 3],
    /// The measure `rank[0]` rounds: `topo`'s cost before its steps, `fgd`'s gain before
    /// its integer scale; otherwise `rank[0]` itself. Within a rounded step the candidate
    /// met first wins, which for `topo` is a packing choice (fullest domain first).
    pub exact: f64,
}

impl Score {
    /// A rank that rounds nothing.
    pub(crate) fn of(rank: [f64; 3]) -> Score {
        Score {
            rank,
            exact: rank[0],
        }
    }
}

pub(crate) fn better(a: &Score, b: &Score) -> bool {
    for i in 0..3 {
        if a.rank[i] < b.rank[i] {
            return true;
        }
        if a.rank[i] > b.rank[i] {
            return false;
        }
    }
    false
}

/// Whether a candidate (score, node reliability) replaces the best so far: a strictly
/// better score, or, when `by_reliability` (on-demand requests), an exactly equal score
/// (unrounded measure included: the packing choice within a step comes first) on a more
/// reliable node. `None` (no record) ranks below every `Some`.
pub(crate) fn outranks(
    (a, ra): (&Score, Option<u16>),
    (b, rb): (&Score, Option<u16>),
    by_reliability: bool,
) -> bool {
    better(a, b) || (by_reliability && ra > rb && a == b)
}

/// Weight of the CPU-balance term of `topo` (milli-GPUs per unit of imbalance). Tuned
/// on the Alibaba v2023 traces (docs/scheduler.md): over ten seeds 30 is level with 10
/// or slightly ahead on every pod list; 3 is behind on gpushare40.
const CPU_BALANCE_WEIGHT: f64 = 30.0;

/// How far apart two `topo` costs must be (milli-GPUs of fragmentation) to rank apart.
/// Differences smaller than this are noise in a measure weighted by an estimated mix;
/// ranking them by packing instead leaves fewer GPUs unallocated (docs/scheduler.md).
const COST_STEP: f64 = 20.0;

/// Cost per milli-GPU taken on a model that model-constrained work wants, at full
/// pressure: work that may run anywhere leaves such GPUs to the work that may not.
/// Tuned on the model-constrained pod lists (docs/scheduler.md); 0 where no work is
/// constrained, so it changes nothing there.
const MODEL_PRESSURE_WEIGHT: f64 = 0.12;

/// Cost of opening an idle node, per unit of `idle_size` (milli-GPUs of fragmentation).
const OPEN_IDLE_WEIGHT: f64 = 0.3;

/// Size of an idle node as a block: its cores plus 10 per GPU.
fn idle_size(cpu_milli: u32, gpus: u32) -> f64 {
    f64::from(cpu_milli) / 1000.0 + 10.0 * f64::from(gpus)
}

/// Ranks one node candidate under `kind`.
pub(crate) fn score(
    kind: PolicyKind,
    fleet: &Fleet,
    node: NodeId,
    np: &NodePlacement,
    shape: &Shape,
) -> Score {
    let n = &fleet.nodes[node.index()];
    if let Shape::Mig { profile, .. } = *shape {
        return mig_score(kind, n, np, profile);
    }
    let after = FreeAfter::of(n, np);
    let gpus_after = after.gpus();
    let free_after: u32 = gpus_after.iter().map(|g| g.1).sum();
    let leftover = after.leftover;
    let cpu_after = n.free_cpu_milli.saturating_sub(np.cpu_milli);
    let mem_after = n.free_memory_mib.saturating_sub(np.memory_mib);
    match kind {
        PolicyKind::BestFit | PolicyKind::FirstFit | PolicyKind::Random => Score::of([
            f64::from(free_after),
            f64::from(leftover),
            f64::from(cpu_after),
        ]),
        PolicyKind::Fgd => {
            let measure = Measure::Fgd;
            let gain = fleet.node_frag[node.index()][measure.index()]
                - fractional::frag(&fleet.mix, measure, cpu_after, mem_after, gpus_after);
            Score {
                rank: [-fgd_node_score(gain), 0.0, 0.0],
                exact: -gain,
            }
        }
        PolicyKind::Topo => {
            let measure = Measure::CpuBound;
            let delta = fractional::frag(&fleet.mix, measure, cpu_after, mem_after, gpus_after)
                - fleet.node_frag[node.index()][measure.index()];
            let count = count_u32(after.count);
            let balance = cpu_balance(n.cpu_milli, cpu_after, count, free_after);
            // Ties keep the first candidate met, in fullest-domain-first order.
            // Opening an idle node costs in proportion to its size: the smallest idle
            // block breaks first and the big ones stay whole (HiveD's buddy cells).
            let opens_idle = n.allocs.is_empty() && n.gpus.iter().all(|g| g.is_idle());
            let opening = if opens_idle {
                OPEN_IDLE_WEIGHT * idle_size(n.cpu_milli, count)
            } else {
                0.0
            };
            // Costs within one step are the same to it: among them the tightest GPU for a
            // fraction wins, then the first candidate met, fullest domain first.
            let cost = delta
                + CPU_BALANCE_WEIGHT * balance
                + opening
                + MODEL_PRESSURE_WEIGHT * pressure(fleet, n, np);
            Score {
                rank: [(cost / COST_STEP).floor(), f64::from(leftover), 0.0],
                exact: cost,
            }
        }
    }
}

/// The FGD paper's node score: the fragmentation a placement removes, in GPUs, through
/// a sigmoid onto the scheduler's integer scale 0–100. The scale is coarse
/// on purpose: placements within about 40 milli-GPUs of each other tie, and a tie goes to
/// the first node (and GPU) in index order.
fn fgd_node_score(gain_milli: f64) -> f64 {
    let sigmoid = 1.0 / (1.0 + (-gain_milli / f64::from(MILLI_PER_GPU)).exp());
    (sigmoid * FGD_MAX_NODE_SCORE).trunc()
}

/// The top of the integer score scale FGD's score is truncated onto.
const FGD_MAX_NODE_SCORE: f64 = 100.0;

/// The milli-GPUs a placement takes, each weighted by its model's pressure (how much
/// of that model the mix's model-constrained shapes want).
fn pressure(fleet: &Fleet, n: &Node, np: &NodePlacement) -> f64 {
    np.gpus
        .iter()
        .filter_map(|grant| {
            let gpu = n.gpus.get(usize::from(grant.gpu))?;
            let milli = match grant.share {
                GpuShare::Whole => MILLI_PER_GPU,
                GpuShare::Fraction { milli, .. } => milli,
                GpuShare::Mig { .. } => return None,
            };
            Some(fleet.model_pressure.get(gpu.model.index())? * f64::from(milli))
        })
        .sum()
}

/// One MIG grant: ranked by what it blocks, then by how full the GPU gets.
fn mig_score(kind: PolicyKind, n: &Node, np: &NodePlacement, profile: MigProfile) -> Score {
    let (blocked, free_after) = np
        .gpus
        .first()
        .and_then(|g| {
            let gpu = n.gpus.get(usize::from(g.gpu))?;
            match g.share {
                GpuShare::Mig { start, .. } => Some((
                    mig::blocked_larger(gpu.mig_used, profile, start),
                    8 - gpu.mig_used.union(profile.mask_at(start)).used_slots(),
                )),
                _ => None,
            }
        })
        .unwrap_or((0, 0));
    match kind {
        PolicyKind::Topo => Score::of([f64::from(blocked), f64::from(free_after), 0.0]),
        _ => Score::of([f64::from(free_after), 0.0, 0.0]),
    }
}

/// A node's free GPUs (model, free milli-GPUs) as they would be after a placement.
struct FreeAfter {
    gpus: [(ModelId, u32); 64],
    count: usize,
    /// What the placement's fraction leaves free on its GPU (0 for whole GPUs).
    leftover: u32,
}

impl FreeAfter {
    fn of(n: &Node, np: &NodePlacement) -> FreeAfter {
        let mut gpus = [(ModelId(0), 0u32); 64];
        let count = fractional::free_gpus(n, &mut gpus);
        // Map the node's GPU indices onto the free list (MIG and failed GPUs are skipped).
        let mut slot = [usize::MAX; 256];
        let mut k = 0;
        for (i, g) in n.gpus.iter().enumerate() {
            if g.mode != GpuMode::Mig && g.health != Health::Failed && k < count {
                slot[i.min(255)] = k;
                k += 1;
            }
        }
        let mut leftover = 0u32;
        for grant in &np.gpus {
            let j = slot[usize::from(grant.gpu)];
            if j == usize::MAX {
                continue;
            }
            match grant.share {
                GpuShare::Whole => gpus[j].1 = 0,
                GpuShare::Fraction { milli, .. } => {
                    gpus[j].1 = gpus[j].1.saturating_sub(milli);
                    leftover = gpus[j].1;
                }
                GpuShare::Mig { .. } => {}
            }
        }
        FreeAfter {
            gpus,
            count,
            leftover,
        }
    }

    fn gpus(&self) -> &[(ModelId, u32)] {
        &self.gpus[..self.count]
    }
}

/// How far a node's free CPU per free GPU falls below its build ratio after a placement
/// (0 when it keeps at least its share of CPU for its free GPUs).
fn cpu_balance(cpu_total: u32, cpu_after: u32, gpus: u32, free_gpu_milli: u32) -> f64 {
    if gpus == 0 || free_gpu_milli == 0 {
        return 0.0;
    }
    let per_gpu = f64::from(cpu_total) / f64::from(gpus * MILLI_PER_GPU);
    let needed = per_gpu * f64::from(free_gpu_milli);
    ((needed - f64::from(cpu_after)) / needed.max(1.0)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fgd_scores_removed_fragmentation_on_a_coarse_integer_scale() {
        assert_eq!(fgd_node_score(0.0), 50.0);
        // 25 points per GPU near zero: 30 milli-GPUs apart can tie, 100 apart cannot.
        assert_eq!(fgd_node_score(10.0), fgd_node_score(35.0));
        assert!(fgd_node_score(100.0) > fgd_node_score(0.0));
        assert!(fgd_node_score(-500.0) < fgd_node_score(0.0));
        // Large gains saturate below the top of the scale.
        assert_eq!(fgd_node_score(8000.0), 99.0);
        assert_eq!(fgd_node_score(-8000.0), 0.0);
    }
}
