//! Preemption: when an on-demand or reserved request fits nowhere, find spot allocations
//! whose removal makes it fit. The victims are only ever spot allocations, and they
//! suffice: the answer is checked against the fleet with the victims released before it
//! is returned. Nothing else is ever preempted.
//!
//! How: place the request on a copy of the fleet with every spot allocation released;
//! then take as victims the spot allocations sharing a GPU with that placement, adding
//! spot allocations on the same nodes (largest CPU first), then in the same NVLink
//! domains, until the placement fits for real.

use std::collections::BTreeSet;

use crate::fleet::Fleet;
use crate::ids::{AllocationKey, NodeId};
use crate::placement::Placement;
use crate::policy::Policy;
use crate::request::{Class, Request};

impl Fleet {
    pub(crate) fn preempt(&self, req: &Request, policy: &mut Policy) -> Option<Placement> {
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

    /// A key no live allocation uses (for checking a placement without committing it).
    fn unused_key(&self) -> AllocationKey {
        let mut key = u128::MAX;
        while self.allocations.contains_key(&AllocationKey(key)) {
            key -= 1;
        }
        AllocationKey(key)
    }
}
