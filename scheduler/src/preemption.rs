//! Preemption: when an on-demand or reserved request fits nowhere, find spot allocations
//! whose removal makes it fit. The victims are only ever spot allocations, and they
//! suffice: the answer is checked against the fleet with the victims released before it
//! is returned. Nothing else is ever preempted.
//!
//! How, for a request that fits on one node: scan the active nodes holding spot work, see
//! what the node could offer with all of its spot allocations gone, and take as victims
//! those sharing a GPU with that offer, then others on the node (largest CPU first),
//! until the offer fits for real; the first node that works wins. For a gang across
//! nodes: place it on a copy of the fleet with every spot allocation released, then pick
//! victims the same way over its nodes and NVLink domains (a copy of the fleet per
//! attempt: rare and slower, see docs/scheduler.md).

use std::collections::BTreeSet;

use crate::fleet::{Fleet, NodeState};
use crate::ids::{AllocationKey, NodeId};
use crate::placement::Placement;
use crate::policy::Policy;
use crate::request::{Class, Request, Shape};

impl Fleet {
    pub(crate) fn preempt(&self, req: &Request, policy: &mut Policy) -> Option<Placement> {
        let max_gpus = self.nodes.iter().map(|n| n.gpus.len()).max().unwrap_or(0);
        let gang = match req.shape {
            // No node is big enough: no amount of preemption helps.
            Shape::WholeGpus {
                count, topology, ..
            } if topology.required
                && topology.level == crate::request::TopologyLevel::Node
                && count as usize > max_gpus =>
            {
                return None;
            }
            Shape::WholeGpus { count, .. } => count as usize > max_gpus,
            Shape::WholeNodes { count, .. } => count > 1,
            _ => false,
        };
        if !gang {
            if let Some(p) = self.preempt_on_one_node(req) {
                return Some(p);
            }
            if !matches!(req.shape, Shape::WholeGpus { .. }) {
                return None;
            }
        }
        let spot: Vec<AllocationKey> = self
            .allocations
            .values()
            .filter(|a| a.placement.class == Class::Spot)
            .map(|a| a.key)
            .collect();
        if spot.is_empty() {
            return None;
        }
        let mut without_spot = self.clone();
        for &key in &spot {
            without_spot.release(key).ok()?;
        }
        let mut placement = without_spot.search(req, policy)?;
        let gpus: BTreeSet<_> = placement.gpus().map(|(g, _)| g).collect();
        let nodes: BTreeSet<NodeId> = placement.nodes.iter().map(|np| np.node).collect();
        let domains: BTreeSet<u32> = nodes.iter().map(|n| self.nodes[n.index()].domain).collect();
        let touches = |key: &AllocationKey,
                       f: &dyn Fn(&crate::placement::NodePlacement) -> bool| {
            self.allocations
                .get(key)
                .is_some_and(|a| a.placement.nodes.iter().any(f))
        };
        let mut victims: Vec<AllocationKey> = spot
            .iter()
            .copied()
            .filter(|k| {
                touches(k, &|np| {
                    np.gpus.iter().any(|g| {
                        gpus.contains(&crate::ids::GpuRef {
                            node: np.node,
                            gpu: g.gpu,
                        })
                    })
                })
            })
            .collect();
        let cpu_of = |k: &AllocationKey| {
            self.allocations
                .get(k)
                .map(|a| a.placement.nodes.iter().map(|np| np.cpu_milli).sum::<u32>())
                .unwrap_or(0)
        };
        let mut on_nodes: Vec<AllocationKey> = spot
            .iter()
            .copied()
            .filter(|k| !victims.contains(k) && touches(k, &|np| nodes.contains(&np.node)))
            .collect();
        on_nodes.sort_by_key(|k| (std::cmp::Reverse(cpu_of(k)), *k));
        let in_domains: Vec<AllocationKey> = spot
            .iter()
            .copied()
            .filter(|k| {
                !victims.contains(k)
                    && !on_nodes.contains(k)
                    && touches(k, &|np| {
                        domains.contains(&self.nodes[np.node.index()].domain)
                    })
            })
            .collect();
        let probe = self.unused_key();
        let mut extra = on_nodes.into_iter().chain(in_domains);
        loop {
            placement.victims = victims.clone();
            if self.dry_run(probe, &placement).is_ok() {
                return Some(placement);
            }
            victims.push(extra.next()?);
        }
    }

    fn preempt_on_one_node(&self, req: &Request) -> Option<Placement> {
        let probe = self.unused_key();
        let mut options = Vec::new();
        for ctx in self.passes(req) {
            for (i, n) in self.nodes.iter().enumerate() {
                if n.state != NodeState::Active
                    || !n.allocs.iter().any(|a| a.class == Class::Spot)
                    || !could_serve(n, &req.shape)
                {
                    continue;
                }
                let id = NodeId(i as u32);
                let spot: Vec<AllocationKey> = n
                    .allocs
                    .iter()
                    .filter(|a| a.class == Class::Spot)
                    .map(|a| a.key)
                    .collect();
                let mut without_spot = n.clone();
                for key in &spot {
                    for np in self
                        .allocations
                        .get(key)
                        .into_iter()
                        .flat_map(|a| &a.placement.nodes)
                    {
                        if np.node == id {
                            without_spot.revert(*key, np);
                        }
                    }
                }
                options.clear();
                self.node_options(id, &without_spot, &ctx, &mut options);
                let Some((np, degraded)) = options.drain(..).next() else {
                    continue;
                };
                let gpus: BTreeSet<u8> = np.gpus.iter().map(|g| g.gpu).collect();
                let on_node = |key: &AllocationKey| {
                    self.allocations
                        .get(key)
                        .into_iter()
                        .flat_map(|a| &a.placement.nodes)
                        .filter(|p| p.node == id)
                        .fold((false, 0u32), |(hit, cpu), p| {
                            (
                                hit || p.gpus.iter().any(|g| gpus.contains(&g.gpu)),
                                cpu + p.cpu_milli,
                            )
                        })
                };
                let mut order = spot;
                order.sort_by_key(|k| {
                    let (hit, cpu) = on_node(k);
                    (!hit, std::cmp::Reverse(cpu), *k)
                });
                let mut placement = Placement {
                    tenant: req.tenant,
                    class: req.class,
                    exclusive: req.exclusive,
                    nodes: vec![np],
                    victims: Vec::new(),
                    degraded,
                };
                for key in order {
                    placement.victims.push(key);
                    if self.dry_run(probe, &placement).is_ok() {
                        return Some(placement);
                    }
                }
            }
        }
        None
    }

    /// A key no live allocation uses (for checking a placement without committing it).
    fn unused_key(&self) -> AllocationKey {
        let mut key = u128::MAX;
        while self.allocations.contains_key(&AllocationKey(key)) {
            key -= 1;
        }
        AllocationKey(key)
    }
}

/// Whether the node has GPUs of the kind the shape needs at all (a cheap filter before
/// trying it without its spot work).
fn could_serve(node: &crate::fleet::Node, shape: &Shape) -> bool {
    use crate::fleet::GpuMode;
    let has = |models: crate::ids::ModelSet, mode: Option<GpuMode>| {
        node.gpus
            .iter()
            .any(|g| models.contains(g.model) && mode.is_none_or(|m| g.mode == m))
    };
    match *shape {
        Shape::WholeGpus { models, count, .. } => {
            // GPUs that would be free with the node's spot work gone (an upper bound:
            // a shared GPU also used by other work still counts).
            let spot = |key: &crate::ids::AllocationKey| {
                node.allocs
                    .iter()
                    .any(|a| a.key == *key && a.class == Class::Spot)
            };
            let freeable = node
                .gpus
                .iter()
                .filter(|g| {
                    models.contains(g.model)
                        && g.mode != GpuMode::Mig
                        && g.health != crate::fleet::Health::Failed
                        && g.holder.as_ref().is_none_or(spot)
                })
                .count();
            freeable >= count as usize
        }
        Shape::WholeNodes { models, .. } => has(models, None),
        Shape::Mig { models, .. } => has(models, Some(GpuMode::Mig)),
        Shape::Fractional { models, .. } => has(models, Some(GpuMode::Shared)),
        Shape::Cpu { .. } => true,
    }
}
