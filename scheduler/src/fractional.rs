//! Fragmentation against the observed mix of request shapes (the FGD idea, Weng et al.,
//! USENIX ATC'23). A node's free GPU capacity is a fragment for a shape when that shape
//! cannot use it: the node lacks the CPU or memory, the GPU's model is not acceptable,
//! the GPU has too little left for the fraction, or too few whole GPUs are free. The
//! node's fragmentation is that amount weighted by how common each shape is. Packing a
//! request where it raises fragmentation least keeps capacity usable for what comes.
//! `topo` also counts as fragment the GPUs a fraction fits on but the node's CPU could
//! not feed ([`Measure::CpuBound`]).
//!
//! This module measures; `policy` decides how the measure is used.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::fleet::{GpuMode, Health, Node, NodeState};
use crate::ids::{ModelId, ModelSet, count_u32};
use crate::request::{MILLI_PER_GPU, Shape};

/// One request shape of the mix, with its share of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MixShape {
    pub cpu_milli: u32,
    pub memory_mib: u64,
    /// Whole GPUs wanted (0 for a fraction).
    pub whole_gpus: u32,
    /// Milli-GPUs wanted on one GPU for a fraction (1000 for whole GPUs).
    pub milli: u32,
    pub models: ModelSet,
    /// Share of the mix; the weights of a mix sum to 1.
    pub weight: f64,
}

impl MixShape {
    /// A shape of the typical pods that asks for no GPU.
    pub fn is_cpu_only(&self) -> bool {
        self.whole_gpus == 0 && self.milli == 0
    }
}

/// The popular request shapes that fragmentation is measured against. `observe` keeps GPU
/// shapes only (CPU-only requests cannot use a GPU, MIG requests live on MIG GPUs);
/// `typical` is the FGD paper's list, CPU-only shapes included.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ShapeMix {
    pub shapes: Vec<MixShape>,
}

impl ShapeMix {
    /// The `limit` most common GPU shapes of `shapes`, weighted by how often they occur.
    pub fn observe<'a>(shapes: impl IntoIterator<Item = &'a Shape>, limit: usize) -> ShapeMix {
        let mut counts: BTreeMap<(u32, u64, u32, u32, u16), u64> = BTreeMap::new();
        for shape in shapes {
            let (whole, milli, models) = match *shape {
                Shape::WholeGpus { count, models, .. } => (count, MILLI_PER_GPU, models),
                Shape::Fractional {
                    milli_gpu, models, ..
                } => (0, milli_gpu, models),
                _ => continue,
            };
            let (cpu, memory) = shape.cpu_and_memory();
            *counts
                .entry((cpu, memory, whole, milli, model_bits(models)))
                .or_default() += 1;
        }
        let mut ranked: Vec<_> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        let total: u64 = ranked.iter().map(|(_, c)| c).sum();
        let shapes = ranked
            .into_iter()
            .map(|((cpu, mem, whole, milli, models), count)| MixShape {
                cpu_milli: cpu,
                memory_mib: mem,
                whole_gpus: whole,
                milli,
                models: ModelSet::from_bits(models),
                weight: count as f64 / total.max(1) as f64,
            })
            .collect();
        ShapeMix { shapes }
    }

    /// The FGD paper's typical pods: every request shape of `shapes` — CPU-only ones too —
    /// keyed by CPU, milli-GPUs per GPU, GPU count and models (memory is not part of the
    /// key), the most common first until they cover `popularity` (0–1) of the requests,
    /// their weights renormalized over what was kept. A CPU request without CPU counts as
    /// 100 milli-cores, the scheduler's default request. Ties in frequency keep the larger
    /// shape first.
    pub fn typical<'a>(shapes: impl IntoIterator<Item = &'a Shape>, popularity: f64) -> ShapeMix {
        let mut counts: BTreeMap<(u32, u32, u32, u16), u64> = BTreeMap::new();
        let mut total = 0u64;
        for shape in shapes {
            let (milli, count, models) = match *shape {
                Shape::WholeGpus { count, models, .. } => (MILLI_PER_GPU, count, models),
                Shape::Fractional {
                    milli_gpu, models, ..
                } => (milli_gpu, 1, models),
                Shape::Cpu { .. } => (0, 0, ModelSet::ANY),
                _ => continue,
            };
            let (cpu, _) = shape.cpu_and_memory();
            let cpu = if cpu == 0 { DEFAULT_CPU_REQUEST } else { cpu };
            *counts
                .entry((cpu, milli, count, model_bits(models)))
                .or_default() += 1;
            total += 1;
        }
        let mut ranked: Vec<_> = counts.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
        let wanted = popularity.clamp(0.0, 1.0) * total as f64;
        let mut kept = 0u64;
        let mut cut = 0;
        while cut < ranked.len() && (kept as f64) < wanted {
            kept += ranked[cut].1;
            cut += 1;
        }
        ranked.truncate(cut);
        let shapes = ranked
            .into_iter()
            .map(|((cpu, milli, count, models), n)| MixShape {
                cpu_milli: cpu,
                memory_mib: 0,
                whole_gpus: if milli == MILLI_PER_GPU { count } else { 0 },
                milli,
                models: ModelSet::from_bits(models),
                weight: n as f64 / kept.max(1) as f64,
            })
            .collect();
        ShapeMix { shapes }
    }

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }
}

/// Per GPU model (indexed by `ModelId`): how much of it the mix's model-constrained
/// shapes want, against how much of the fleet it is. A shape that accepts only some of
/// the fleet's models spreads its GPU demand evenly over them; a model's pressure is its
/// share of that constrained demand (in all the mix's GPU demand) over its share of the
/// GPUs, capped at 1: at 1 the constrained shapes alone could fill it.
pub fn model_pressure(mix: &ShapeMix, gpus_per_model: &[u32]) -> Vec<f64> {
    let models = gpus_per_model.len();
    let capacity: u32 = gpus_per_model.iter().sum();
    let demand = |s: &MixShape| s.weight * f64::from(s.milli) * f64::from(s.whole_gpus.max(1));
    let gpu_shapes = || mix.shapes.iter().filter(|s| !s.is_cpu_only());
    let total: f64 = gpu_shapes().map(demand).sum();
    let mut wanted = vec![0.0; models];
    for s in gpu_shapes() {
        let accepted: Vec<ModelId> = s.models.iter(models).collect();
        if accepted.len() == models || accepted.is_empty() {
            continue;
        }
        for m in &accepted {
            wanted[m.index()] += demand(s) / accepted.len() as f64;
        }
    }
    wanted
        .iter()
        .zip(gpus_per_model)
        .map(|(&w, &gpus)| {
            if total <= 0.0 || gpus == 0 {
                return 0.0;
            }
            (w / total / (f64::from(gpus) / f64::from(capacity))).min(1.0)
        })
        .collect()
}

/// The CPU a request without any is counted with in the typical pods (milli-cores).
const DEFAULT_CPU_REQUEST: u32 = 100;

fn model_bits(models: ModelSet) -> u16 {
    models.bits()
}

/// How much of a node's free GPU capacity a shape that fits there counts as usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// The FGD paper's: all the free capacity of the GPUs it fits on, however few copies
    /// of it the node's CPU could hold.
    Fgd,
    /// `topo`'s: for a fraction, only the GPUs that the copies of it the node's free CPU
    /// and memory hold would go to (the roomiest first). Four GPUs with room next to CPU
    /// for one copy are three GPUs of fragment for it. Whole-GPU shapes count as in FGD.
    CpuBound,
}

impl Measure {
    pub const ALL: [Measure; 2] = [Measure::Fgd, Measure::CpuBound];

    pub fn index(self) -> usize {
        self as usize
    }
}

/// Fragmentation of a node in its current state, under each [`Measure`].
pub(crate) fn node_frag_of(mix: &ShapeMix, node: &Node) -> [f64; 2] {
    if mix.is_empty() || node.state != NodeState::Active {
        return [0.0; 2];
    }
    let mut gpus = [(ModelId(0), 0u32); 64];
    let n = free_gpus(node, &mut gpus);
    Measure::ALL.map(|m| {
        frag(
            mix,
            m,
            node.free_cpu_milli,
            node.free_memory_mib,
            &gpus[..n],
        )
    })
}

/// Fills `out` with (model, free milli) of the node's non-failed, non-MIG GPUs.
pub(crate) fn free_gpus(node: &Node, out: &mut [(ModelId, u32)]) -> usize {
    let mut n = 0;
    for g in &node.gpus {
        if n == out.len() {
            break;
        }
        if g.mode == GpuMode::Mig || g.health == Health::Failed {
            continue;
        }
        out[n] = (g.model, g.free_milli());
        n += 1;
    }
    n
}

/// Fragmentation of free capacity `gpus` (model, free milli) with `cpu_milli` and
/// `memory_mib` free on the node, in milli-GPUs, under `measure`.
pub fn frag(
    mix: &ShapeMix,
    measure: Measure,
    cpu_milli: u32,
    memory_mib: u64,
    gpus: &[(ModelId, u32)],
) -> f64 {
    let total: u32 = gpus.iter().map(|g| g.1).sum();
    if total == 0 {
        return 0.0;
    }
    // The roomiest GPUs first: where a fraction's copies would go.
    let mut roomiest = [(ModelId(0), 0u32); 64];
    let n = gpus.len().min(roomiest.len());
    roomiest[..n].copy_from_slice(&gpus[..n]);
    if measure == Measure::CpuBound {
        roomiest[..n].sort_unstable_by_key(|g| std::cmp::Reverse(g.1));
    }
    let mut out = 0.0;
    for s in &mix.shapes {
        // A CPU-only shape uses no GPU: all the free GPU capacity is a fragment for it.
        let usable = if s.is_cpu_only() || s.cpu_milli > cpu_milli || s.memory_mib > memory_mib {
            0
        } else {
            let copies = match measure {
                Measure::CpuBound => copies(s, cpu_milli, memory_mib),
                Measure::Fgd => u32::MAX,
            };
            usable_milli(s, &roomiest[..n], copies)
        };
        out += s.weight * f64::from(total - usable);
    }
    out
}

/// How many copies of `s` fit in `cpu_milli` and `memory_mib`.
fn copies(s: &MixShape, cpu_milli: u32, memory_mib: u64) -> u32 {
    let by_cpu = cpu_milli.checked_div(s.cpu_milli).unwrap_or(u32::MAX);
    let by_memory = memory_mib
        .checked_div(s.memory_mib)
        .map_or(u32::MAX, |c| u32::try_from(c).unwrap_or(u32::MAX));
    by_cpu.min(by_memory)
}

/// The free capacity of `gpus` that `s` could use: for whole GPUs every idle one it
/// accepts (when there are enough), for a fraction the GPUs that up to `copies` copies
/// of it would go to in the order given, each counted with all it has free (what FGD
/// counts for a GPU a fraction fits on).
fn usable_milli(s: &MixShape, gpus: &[(ModelId, u32)], copies: u32) -> u32 {
    if s.whole_gpus > 0 {
        let full = count_u32(
            gpus.iter()
                .filter(|g| g.1 == MILLI_PER_GPU && s.models.contains(g.0))
                .count(),
        );
        return if full < s.whole_gpus {
            0
        } else {
            full * MILLI_PER_GPU
        };
    }
    let mut left = copies;
    let mut usable = 0;
    for g in gpus
        .iter()
        .filter(|g| g.1 >= s.milli && s.models.contains(g.0))
    {
        if left == 0 {
            break;
        }
        usable += g.1;
        left = left.saturating_sub((g.1 / s.milli.max(1)).max(1));
    }
    usable
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(shapes: &[(u32, u32, u32)]) -> ShapeMix {
        let w = 1.0 / shapes.len() as f64;
        ShapeMix {
            shapes: shapes
                .iter()
                .map(|&(cpu, whole, milli)| MixShape {
                    cpu_milli: cpu,
                    memory_mib: 0,
                    whole_gpus: whole,
                    milli,
                    models: ModelSet::ANY,
                    weight: w,
                })
                .collect(),
        }
    }

    #[test]
    fn free_gpus_on_a_node_without_cpu_are_all_fragment() {
        let m = mix(&[(4000, 1, 1000)]);
        let gpus = [(ModelId(0), 1000), (ModelId(0), 1000)];
        assert_eq!(frag(&m, Measure::Fgd, 1000, 0, &gpus), 2000.0);
        assert_eq!(frag(&m, Measure::Fgd, 8000, 0, &gpus), 0.0);
    }

    #[test]
    fn a_cpu_only_shape_counts_all_free_gpu_capacity_as_fragment() {
        let m = ShapeMix {
            shapes: vec![MixShape {
                cpu_milli: 100,
                memory_mib: 0,
                whole_gpus: 0,
                milli: 0,
                models: ModelSet::ANY,
                weight: 1.0,
            }],
        };
        let gpus = [(ModelId(0), 1000), (ModelId(0), 250)];
        assert_eq!(frag(&m, Measure::Fgd, 64_000, 0, &gpus), 1250.0);
    }

    #[test]
    fn typical_pods_cover_the_popular_shapes_cpu_only_ones_too() {
        let whole = Shape::WholeGpus {
            count: 2,
            models: ModelSet::ANY,
            topology: crate::request::Topology::required(crate::request::TopologyLevel::Node),
            cpu_milli_per_gpu: 4000,
            memory_mib_per_gpu: 1024,
        };
        let half = |memory_mib| Shape::Fractional {
            milli_gpu: 500,
            gpu_memory_mib: 0,
            models: ModelSet::ANY,
            cpu_milli: 2000,
            memory_mib,
        };
        let cpu = Shape::Cpu {
            cpu_milli: 0,
            memory_mib: 10,
        };
        // 5 halves (memory is not part of the key), 3 CPU-only, 2 whole pairs.
        let mut shapes = vec![half(1), half(2), half(3), half(4), half(5)];
        shapes.extend([cpu, cpu, cpu, whole, whole]);
        let all = ShapeMix::typical(&shapes, 1.0);
        let weights: Vec<(u32, u32, u32, f64)> = all
            .shapes
            .iter()
            .map(|s| (s.cpu_milli, s.whole_gpus, s.milli, s.weight))
            .collect();
        assert_eq!(
            weights,
            [(2000, 0, 500, 0.5), (100, 0, 0, 0.3), (8000, 2, 1000, 0.2)]
        );
        assert!(all.shapes[1].is_cpu_only());
        // 80 % is covered by the first two shapes; they share the weight.
        let popular = ShapeMix::typical(&shapes, 0.8);
        assert_eq!(popular.shapes.len(), 2);
        assert!((popular.shapes[0].weight - 5.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn a_model_wanted_by_constrained_work_is_under_pressure() {
        let shape = |models: ModelSet, milli: u32, weight: f64| MixShape {
            cpu_milli: 1000,
            memory_mib: 0,
            whole_gpus: u32::from(milli == MILLI_PER_GPU),
            milli,
            models,
            weight,
        };
        let t4 = ModelSet::from_bits(0b01);
        let m = ShapeMix {
            shapes: vec![
                // Of the GPU demand (800): 400 may run anywhere, 200 only on model 0,
                // 200 on models 0 or 1 (spread over both); CPU-only work has none.
                shape(ModelSet::ANY, 1000, 0.4),
                shape(t4, 500, 0.4),
                shape(ModelSet::from_bits(0b011), 1000, 0.2),
                shape(ModelSet::ANY, 0, 0.1),
            ],
        };
        // Models 0, 1 and 2 hold 2, 6 and 2 of the 10 GPUs.
        let p = model_pressure(&m, &[2, 6, 2]);
        assert_eq!(p[0], 1.0, "300 of 800 on 2 of 10 GPUs, capped");
        assert!((p[1] - (100.0 / 800.0) / 0.6).abs() < 1e-12, "{p:?}");
        assert_eq!(p[2], 0.0, "no constrained work wants model 2");
        let unconstrained = ShapeMix {
            shapes: vec![shape(ModelSet::ANY, 1000, 1.0)],
        };
        assert_eq!(model_pressure(&unconstrained, &[2, 6, 2]), [0.0; 3]);
    }

    #[test]
    fn a_sliver_too_small_for_every_fraction_is_fragment() {
        let m = mix(&[(0, 0, 500)]);
        let gpus = [(ModelId(0), 300), (ModelId(0), 600)];
        assert_eq!(frag(&m, Measure::Fgd, 0, 0, &gpus), 300.0);
    }

    #[test]
    fn gpus_a_fraction_fits_on_beyond_what_the_cpu_feeds_are_fragment_when_cpu_bound() {
        // A half-GPU shape with 12 cores, four idle GPUs, CPU for one copy.
        let m = mix(&[(12_000, 0, 500)]);
        let gpus = [(ModelId(0), 1000); 4];
        assert_eq!(frag(&m, Measure::Fgd, 20_000, 0, &gpus), 0.0);
        assert_eq!(frag(&m, Measure::CpuBound, 20_000, 0, &gpus), 3000.0);
        // CPU for eight copies, two per GPU: nothing is fragment under either measure.
        assert_eq!(frag(&m, Measure::CpuBound, 96_000, 0, &gpus), 0.0);
        // Whole-GPU shapes are counted as FGD counts them.
        let whole = mix(&[(12_000, 1, 1000)]);
        assert_eq!(frag(&whole, Measure::CpuBound, 20_000, 0, &gpus), 0.0);
    }

    #[test]
    fn cpu_bound_fractions_go_to_the_roomiest_gpus_first() {
        // A 300-milli shape with 4 cores; CPU for three copies (12 of 13 cores).
        let m = mix(&[(4000, 0, 300)]);
        let gpus = [(ModelId(0), 400), (ModelId(0), 1000), (ModelId(0), 100)];
        // The 1000 takes all three copies: the 400 and the 100 are fragment.
        assert_eq!(frag(&m, Measure::CpuBound, 13_000, 0, &gpus), 500.0);
        // With CPU for four, the fourth goes to the 400; FGD counts it whatever the CPU.
        assert_eq!(frag(&m, Measure::CpuBound, 16_000, 0, &gpus), 100.0);
        assert_eq!(frag(&m, Measure::Fgd, 4000, 0, &gpus), 100.0);
    }
}
