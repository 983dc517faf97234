//! Fragmentation against the observed mix of request shapes (the FGD idea, Weng et al.,
//! USENIX ATC'23). A node's free GPU capacity is a fragment for a shape when that shape
//! cannot use it: the node lacks the CPU or memory, the GPU's model is not acceptable,
//! the GPU has too little left for the fraction, or too few whole GPUs are free. The
//! node's fragmentation is that amount weighted by how common each shape is. Packing a
//! request where it raises fragmentation least keeps capacity usable for what comes.
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

/// The popular request shapes that fragmentation is measured against (GPU shapes only:
/// CPU-only requests cannot use a GPU, MIG requests live on MIG GPUs).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ShapeMix {
    pub shapes: Vec<MixShape>,
}

impl ShapeMix {
    /// The `limit` most common GPU shapes of `shapes`, weighted by how often they occur.
    pub fn observe<'a>(shapes: impl IntoIterator<Item = &'a Shape>, limit: usize) -> ShapeMix {
        let mut counts: BTreeMap<(u32, u64, u32, u32, u16), u64> = BTreeMap::new();
        for shape in shapes {
            let key = match *shape {
                Shape::WholeGpus {
                    count,
                    models,
                    cpu_milli_per_gpu,
                    memory_mib_per_gpu,
                    ..
                } => (
                    cpu_milli_per_gpu.saturating_mul(count),
                    memory_mib_per_gpu.saturating_mul(u64::from(count)),
                    count,
                    MILLI_PER_GPU,
                    model_bits(models),
                ),
                Shape::Fractional {
                    milli_gpu,
                    models,
                    cpu_milli,
                    memory_mib,
                    ..
                } => (cpu_milli, memory_mib, 0, milli_gpu, model_bits(models)),
                _ => continue,
            };
            *counts.entry(key).or_default() += 1;
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

    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }
}

fn model_bits(models: ModelSet) -> u16 {
    models.bits()
}

/// Fragmentation of a node in its current state.
pub(crate) fn node_frag_of(mix: &ShapeMix, node: &Node) -> f64 {
    if mix.is_empty() || node.state != NodeState::Active {
        return 0.0;
    }
    let mut gpus = [(ModelId(0), 0u32); 64];
    let n = free_gpus(node, &mut gpus);
    frag(mix, node.free_cpu_milli, node.free_memory_mib, &gpus[..n])
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
/// `memory_mib` free on the node, in milli-GPUs.
pub fn frag(mix: &ShapeMix, cpu_milli: u32, memory_mib: u64, gpus: &[(ModelId, u32)]) -> f64 {
    let total: u32 = gpus.iter().map(|g| g.1).sum();
    if total == 0 {
        return 0.0;
    }
    let mut out = 0.0;
    for s in &mix.shapes {
        let stranded = if s.cpu_milli > cpu_milli || s.memory_mib > memory_mib {
            total
        } else if s.whole_gpus > 0 {
            let full = gpus
                .iter()
                .filter(|g| g.1 == MILLI_PER_GPU && s.models.contains(g.0))
                .count();
            let full = count_u32(full);
            if full < s.whole_gpus {
                total
            } else {
                total - full * MILLI_PER_GPU
            }
        } else {
            let usable: u32 = gpus
                .iter()
                .filter(|g| g.1 >= s.milli && s.models.contains(g.0))
                .map(|g| g.1)
                .sum();
            total - usable
        };
        out += s.weight * f64::from(stranded);
    }
    out
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
        assert_eq!(frag(&m, 1000, 0, &gpus), 2000.0);
        assert_eq!(frag(&m, 8000, 0, &gpus), 0.0);
    }

    #[test]
    fn a_sliver_too_small_for_every_fraction_is_fragment() {
        let m = mix(&[(0, 0, 500)]);
        let gpus = [(ModelId(0), 300), (ModelId(0), 600)];
        assert_eq!(frag(&m, 0, 0, &gpus), 300.0);
    }
}
