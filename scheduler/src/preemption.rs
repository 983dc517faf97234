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

use crate::fleet::{Fleet, Node, NodeState};
use crate::ids::{AllocationKey, NodeId};
use crate::placement::{NodePlacement, Placement};
use crate::policy::Policy;
use crate::request::{Class, Request, Shape};

impl Fleet {
    pub(crate) fn preempt(&self, req: &Request, policy: &mut Policy) -> Option<Placement> {
        let gang = self.needs_gang(req)?;
        if !gang {
            if let Some(p) = self.preempt_on_one_node(req) {
                return Some(p);
            }
            if !matches!(req.shape, Shape::WholeGpus { .. }) {
                return None;
            }
        }
        self.preempt_across_nodes(req, policy)
    }

    /// Whether the request needs more than one node (None: no node is big enough, so no
    /// amount of preemption helps).
    fn needs_gang(&self, req: &Request) -> Option<bool> {
        let max_gpus = self.nodes.iter().map(|n| n.gpus.len()).max().unwrap_or(0);
        match req.shape {
            Shape::WholeGpus {
                count, topology, ..
            } if topology.required
                && topology.level == crate::request::TopologyLevel::Node
                && count as usize > max_gpus =>
            {
                None
            }
            Shape::WholeGpus { count, .. } => Some(count as usize > max_gpus),
            Shape::WholeNodes { count, .. } => Some(count > 1),
            _ => Some(false),
        }
    }

    /// Places the request on a copy of the fleet without spot work, then releases spot
    /// allocations in order (those on its GPUs, then its nodes, then its NVLink domains)
    /// until it fits for real.
    fn preempt_across_nodes(&self, req: &Request, policy: &mut Policy) -> Option<Placement> {
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
        let placement = without_spot.search(req, policy)?;
        let (victims, extra) = self.gang_victims(&placement, &spot);
        self.first_sufficient(placement, victims, extra)
    }

    /// The spot allocations sharing a GPU with `placement` (victims for sure), and the
    /// others on its nodes (largest CPU first) and then in its NVLink domains.
    fn gang_victims(
        &self,
        placement: &Placement,
        spot: &[AllocationKey],
    ) -> (Vec<AllocationKey>, Vec<AllocationKey>) {
        let gpus: BTreeSet<_> = placement.gpus().map(|(g, _)| g).collect();
        let nodes: BTreeSet<NodeId> = placement.nodes.iter().map(|np| np.node).collect();
        let domains: BTreeSet<u32> = nodes.iter().map(|n| self.nodes[n.index()].domain).collect();
        let touches = |key: &AllocationKey, f: &dyn Fn(&NodePlacement) -> bool| {
            self.allocations
                .get(key)
                .is_some_and(|a| a.placement.nodes.iter().any(f))
        };
        let victims: Vec<AllocationKey> = spot
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
        on_nodes.extend(in_domains);
        (victims, on_nodes)
    }

    /// `placement` with `victims` and as few of `extra` (in order) as make it fit.
    fn first_sufficient(
        &self,
        mut placement: Placement,
        mut victims: Vec<AllocationKey>,
        extra: Vec<AllocationKey>,
    ) -> Option<Placement> {
        let probe = self.unused_key();
        let mut extra = extra.into_iter();
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
            for (id, n) in self.node_ids().zip(&self.nodes) {
                if n.state != NodeState::Active
                    || !n.allocs.iter().any(|a| a.class == Class::Spot)
                    || !could_serve(n, &req.shape)
                {
                    continue;
                }
                let (spot, without_spot) = self.without_spot(id, n);
                options.clear();
                self.node_options(id, &without_spot, &ctx, &mut options);
                let Some((np, degraded)) = options.drain(..).next() else {
                    continue;
                };
                let order = self.victim_order(id, spot, &np);
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

    /// The spot allocations on node `n`, and the node as it would be without them.
    fn without_spot(&self, id: NodeId, n: &Node) -> (Vec<AllocationKey>, Node) {
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
        (spot, without_spot)
    }

    /// The order to preempt node `id`'s spot allocations for `np`: those sharing a GPU
    /// with it first, then by CPU held on the node, largest first.
    fn victim_order(
        &self,
        id: NodeId,
        spot: Vec<AllocationKey>,
        np: &NodePlacement,
    ) -> Vec<AllocationKey> {
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
        order
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
