//! Placement: the answer (`Placement`: nodes, GPU indices, MIG start slots, milli-GPU
//! shares, preemption victims) and the search that finds it. `Fleet::place` never
//! changes the fleet; the caller commits the answer with `Fleet::commit`.
//!
//! The search walks the topology tree and skips every subtree whose aggregate says the
//! request cannot fit there. Single-node shapes (one GPU, a MIG instance, a fraction,
//! a gang that fits one node) score the candidate nodes with the policy; gangs take the
//! smallest domain that holds them (NVLink domain, then rack, zone, region, fleet) and
//! fill it from its fullest-fitting sub-blocks, keeping large free blocks whole.
//! Degraded GPUs are used only when nothing healthy fits; failed GPUs and nodes that are
//! not active never. Whole GPUs and whole nodes take plain capacity (whole-mode GPUs,
//! nodes with only those) before GPUs in MIG or shared mode, whose slices and fractions a
//! whole taking would destroy (see `Fleet::passes`). Preemption lives in `preemption`.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

use neocloud_schema::mig::MigProfile;
use rand::Rng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::aggregate::{Summary, profile_index};
use crate::fleet::{Fleet, Gpu, GpuMode, Health, Level, Node, NodeState};
use crate::ids::{AllocationKey, GpuRef, ModelSet, NodeId, TenantKey, count_u32};
use crate::policy::{self, Policy, PolicyKind, Score};
use crate::request::{Class, Exclusivity, InvalidRequest, Request, Shape, Topology, TopologyLevel};

/// What one GPU gives an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GpuShare {
    Whole,
    Mig { profile: MigProfile, start: u8 },
    Fraction { milli: u32, memory_mib: u64 },
}

/// One GPU of a placement, by its index on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GpuGrant {
    pub gpu: u8,
    pub share: GpuShare,
}

/// What a placement takes on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePlacement {
    pub node: NodeId,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    /// Bare metal: the node is taken whole.
    pub whole_node: bool,
    pub gpus: Vec<GpuGrant>,
}

/// The answer to a request: where it goes, and which spot allocations must make room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub tenant: TenantKey,
    pub class: Class,
    pub exclusive: Option<Exclusivity>,
    pub nodes: Vec<NodePlacement>,
    /// Spot allocations to preempt first (empty unless nothing fitted without).
    pub victims: Vec<AllocationKey>,
    /// Whether a degraded GPU is used (only when nothing healthy fitted).
    pub degraded: bool,
}

impl Placement {
    /// Every GPU the placement touches.
    pub fn gpus(&self) -> impl Iterator<Item = (GpuRef, GpuShare)> + '_ {
        self.nodes.iter().flat_map(|np| {
            np.gpus.iter().map(move |g| {
                (
                    GpuRef {
                        node: np.node,
                        gpu: g.gpu,
                    },
                    g.share,
                )
            })
        })
    }
}

/// Why nothing was placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoFit {
    #[error("invalid request: {0}")]
    Invalid(#[from] InvalidRequest),
    #[error("no capacity fits the request now")]
    NoCapacity,
}

/// The part of a request one node can satisfy alone.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Gpus {
        models: ModelSet,
        cpu_milli_per_gpu: u32,
        memory_mib_per_gpu: u64,
    },
    Nodes {
        models: ModelSet,
    },
}

pub(crate) struct Ctx<'a> {
    pub req: &'a Request,
    pub allow_degraded: bool,
    /// Take only plain GPUs and nodes for whole GPUs and whole nodes, leaving GPUs in
    /// MIG or shared mode to the slices and fractions they are for.
    pub plain_only: bool,
}

impl Ctx<'_> {
    /// Whether a whole-GPU request may take `g` in this pass.
    pub(crate) fn takes_whole(&self, g: &crate::fleet::Gpu, models: ModelSet) -> bool {
        g.whole_free()
            && g.usable(self.allow_degraded)
            && models.contains(g.model)
            && (!self.plain_only || g.mode == GpuMode::Whole)
    }

    /// Whether a whole-node request may take `n` (known to be open) in this pass.
    pub(crate) fn takes_node(&self, n: &Node, models: ModelSet) -> bool {
        n.is_idle()
            && (!self.plain_only || n.is_plain())
            && n.gpus
                .iter()
                .all(|g| g.usable(self.allow_degraded) && models.contains(g.model))
    }
}

impl Fleet {
    /// Finds a placement with the engine's own policy (`topo`). Changes nothing.
    pub fn place(&self, req: &Request) -> Result<Placement, NoFit> {
        self.place_with(req, &mut Policy::topo())
    }

    /// Finds a placement with `policy`. Changes nothing (but a `random` policy's state).
    pub fn place_with(&self, req: &Request, policy: &mut Policy) -> Result<Placement, NoFit> {
        req.shape.validate()?;
        if let Some(p) = self.search(req, policy) {
            return Ok(p);
        }
        if req.class.may_preempt_spot()
            && let Some(p) = self.preempt(req, policy)
        {
            return Ok(p);
        }
        Err(NoFit::NoCapacity)
    }

    /// Runs the passes of `passes` in turn; the first that fits wins.
    pub(crate) fn search(&self, req: &Request, policy: &mut Policy) -> Option<Placement> {
        self.passes(req)
            .find_map(|ctx| self.search_pass(&ctx, policy))
    }

    /// The search passes, most preferred first: healthy GPUs before degraded ones (only
    /// when some are degraded); within each, whole GPUs and whole nodes take plain GPUs
    /// and nodes before GPUs in MIG or shared mode (only when the fleet has both), since
    /// a whole GPU or node taken there destroys the MIG slices or fractions it could sell.
    pub(crate) fn passes<'a>(&self, req: &'a Request) -> impl Iterator<Item = Ctx<'a>> + use<'a> {
        let degraded = self.degraded_gpus > 0;
        let spare = self.mixed_modes
            && matches!(
                req.shape,
                Shape::WholeGpus { .. } | Shape::WholeNodes { .. }
            );
        [false, true]
            .into_iter()
            .filter(move |&d| !d || degraded)
            .flat_map(move |allow_degraded| {
                [true, false]
                    .into_iter()
                    .filter(move |&p| !p || spare)
                    .map(move |plain_only| Ctx {
                        req,
                        allow_degraded,
                        plain_only,
                    })
            })
    }

    fn search_pass(&self, ctx: &Ctx<'_>, policy: &mut Policy) -> Option<Placement> {
        let Some((unit, count, topology)) = gang_unit(&ctx.req.shape) else {
            return self.search_single(ctx, policy);
        };
        let widest = if topology.required {
            match topology.level {
                TopologyLevel::Node => Level::Domain,
                TopologyLevel::NvlinkDomain => Level::Domain,
                TopologyLevel::Rack => Level::Rack,
                TopologyLevel::Any => Level::Root,
            }
        } else {
            Level::Root
        };
        let node_only = topology.required && topology.level == TopologyLevel::Node;
        if count == 1 || matches!(unit, Unit::Gpus { .. }) {
            if let Some(p) = self.search_single(ctx, policy) {
                return Some(p);
            }
            if node_only || count == 1 {
                return None;
            }
        }
        // Smallest domain first: NVLink domain, rack, zone, region, the whole fleet.
        for level in [
            Level::Domain,
            Level::Rack,
            Level::Zone,
            Level::Region,
            Level::Root,
        ] {
            if level < widest {
                break;
            }
            if let Some(p) = self.search_gang(ctx, unit, count, level, policy) {
                return Some(p);
            }
        }
        None
    }

    /// Whether the aggregate `s` allows the request somewhere beneath it.
    fn summary_fits(&self, shape: &Shape, s: &Summary) -> bool {
        let models = |set: ModelSet| set.iter(self.models.len());
        match *shape {
            Shape::WholeGpus {
                count,
                models: set,
                cpu_milli_per_gpu,
                memory_mib_per_gpu,
                ..
            } => {
                let most: u32 = models(set).map(|m| s.max_node_whole[m.index()]).sum();
                most >= count
                    && s.max_cpu_milli >= cpu_milli_per_gpu.saturating_mul(count)
                    && s.max_memory_mib >= memory_mib_per_gpu.saturating_mul(u64::from(count))
            }
            Shape::Mig {
                profile,
                models: set,
                cpu_milli,
                memory_mib,
            } => {
                let p = profile_index(profile);
                models(set).any(|m| s.mig_cap[m.index()][p] > 0)
                    && s.max_cpu_milli >= cpu_milli
                    && s.max_memory_mib >= memory_mib
            }
            Shape::Fractional {
                milli_gpu,
                models: set,
                cpu_milli,
                memory_mib,
                ..
            } => {
                models(set).any(|m| s.max_shared_milli[m.index()] >= milli_gpu)
                    && s.max_cpu_milli >= cpu_milli
                    && s.max_memory_mib >= memory_mib
            }
            Shape::WholeNodes { models: set, .. } => {
                models(set).any(|m| s.idle_nodes[m.index()] > 0)
            }
            Shape::Cpu {
                cpu_milli,
                memory_mib,
            } => s.max_cpu_milli >= cpu_milli && s.max_memory_mib >= memory_mib,
        }
    }

    /// Free capacity of the relevant kind beneath a vertex: fuller domains sort first.
    fn fullness(&self, shape: &Shape, s: &Summary) -> u64 {
        let models = |set: ModelSet| set.iter(self.models.len());
        match *shape {
            Shape::Mig {
                profile,
                models: set,
                ..
            } => {
                let p = profile_index(profile);
                models(set)
                    .map(|m| u64::from(s.mig_cap[m.index()][p]))
                    .sum()
            }
            Shape::WholeGpus { models: set, .. } | Shape::Fractional { models: set, .. } => {
                models(set)
                    .map(|m| u64::from(s.whole_free[m.index()]))
                    .sum()
            }
            Shape::WholeNodes { models: set, .. } => models(set)
                .map(|m| u64::from(s.idle_nodes[m.index()]))
                .sum(),
            Shape::Cpu { .. } => s.whole_free.iter().map(|&c| u64::from(c)).sum(),
        }
    }

    /// Whether `tenant` may place on node `n` with the request's exclusivity.
    pub(crate) fn node_open(&self, n: &Node, req: &Request) -> bool {
        if n.state != NodeState::Active {
            return false;
        }
        if n.lock().is_some_and(|t| t != req.tenant) {
            return false;
        }
        let domain = self.vertex(n.domain);
        if domain.lock.is_some_and(|t| t != req.tenant) {
            return false;
        }
        match req.exclusive {
            None => true,
            Some(Exclusivity::Node) => n.only_tenant(req.tenant),
            Some(Exclusivity::NvlinkDomain) => domain
                .nodes
                .iter()
                .all(|&m| self.nodes[m.index()].only_tenant(req.tenant)),
        }
    }

    /// Walks the tree depth-first, skipping subtrees the aggregates rule out, calling `f`
    /// on each node that may fit. `fullest_first`: children with the least free capacity
    /// first (packs domains, keeps empty ones whole); otherwise in id order.
    fn visit(
        &self,
        v: u32,
        shape: &Shape,
        fullest_first: bool,
        f: &mut dyn FnMut(NodeId) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let vx = self.vertex(v);
        if !self.summary_fits(shape, &vx.summary) {
            return ControlFlow::Continue(());
        }
        if vx.level == Level::Domain {
            let mut nodes: Vec<NodeId> = vx
                .nodes
                .iter()
                .copied()
                .filter(|n| self.summary_fits(shape, &self.nodes[n.index()].summary))
                .collect();
            if fullest_first {
                nodes.sort_by_key(|n| self.fullness(shape, &self.nodes[n.index()].summary));
            }
            for n in nodes {
                f(n)?;
            }
            return ControlFlow::Continue(());
        }
        let mut children = vx.children.clone();
        if fullest_first {
            children.sort_by_key(|&c| self.fullness(shape, &self.vertex(c).summary));
        }
        for c in children {
            self.visit(c, shape, fullest_first, f)?;
        }
        ControlFlow::Continue(())
    }

    /// Single-node search: every candidate node is scored by the policy.
    fn search_single(&self, ctx: &Ctx<'_>, policy: &mut Policy) -> Option<Placement> {
        let shape = &ctx.req.shape;
        let kind = policy.kind;
        let limit = match kind {
            PolicyKind::Topo => self.tuning.candidate_nodes.unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        let by_reliability = reliability_breaks_ties(ctx.req, kind);
        let mut best: Option<(Score, Option<u16>, NodePlacement, bool)> = None;
        let mut seen = 0usize;
        let mut options = Vec::new();
        let rng = &mut policy.rng;
        let _ = self.visit(0, shape, kind == PolicyKind::Topo, &mut |n| {
            options.clear();
            self.node_options(n, &self.nodes[n.index()], ctx, &mut options);
            if options.is_empty() {
                return ControlFlow::Continue(());
            }
            seen += 1;
            let r = self.nodes[n.index()].reliability;
            for (np, degraded) in options.drain(..) {
                let s: Score = match kind {
                    PolicyKind::FirstFit => Score::of([0.0; 3]),
                    PolicyKind::Random => Score::of([rng.random::<f64>(), 0.0, 0.0]),
                    _ => policy::score(kind, self, n, &np, shape),
                };
                if best
                    .as_ref()
                    .is_none_or(|(b, rb, _, _)| policy::outranks((&s, r), (b, *rb), by_reliability))
                {
                    best = Some((s, r, np, degraded));
                }
            }
            if kind == PolicyKind::FirstFit || seen >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        best.map(|(_, _, np, degraded)| self.answer(ctx.req, vec![np], degraded))
    }

    fn answer(&self, req: &Request, nodes: Vec<NodePlacement>, degraded: bool) -> Placement {
        Placement {
            tenant: req.tenant,
            class: req.class,
            exclusive: req.exclusive,
            nodes,
            victims: Vec::new(),
            degraded,
        }
    }

    /// The ways node `n` alone can satisfy the request (with whether each uses a
    /// degraded GPU).
    pub(crate) fn node_options(
        &self,
        id: NodeId,
        n: &Node,
        ctx: &Ctx<'_>,
        out: &mut Vec<(NodePlacement, bool)>,
    ) {
        if !self.node_open(n, ctx.req) {
            return;
        }
        if let Some((unit, count, _)) = gang_unit(&ctx.req.shape) {
            // One node alone: all the GPUs asked for, or one whole node.
            let k = match unit {
                Unit::Gpus { .. } => count,
                Unit::Nodes { .. } => 1,
            };
            if self.node_capacity(n, ctx, unit) >= k {
                out.push(self.take_gpus(id, n, ctx, unit, k));
            }
            return;
        }
        let fits_node = |cpu: u32, mem: u64| cpu <= n.free_cpu_milli && mem <= n.free_memory_mib;
        match ctx.req.shape {
            Shape::Cpu {
                cpu_milli,
                memory_mib,
            } => {
                if fits_node(cpu_milli, memory_mib) {
                    out.push((one_node(id, cpu_milli, memory_mib, Vec::new()), false));
                }
            }
            Shape::Mig {
                profile,
                models,
                cpu_milli,
                memory_mib,
            } => {
                if !fits_node(cpu_milli, memory_mib) {
                    return;
                }
                for (gpu, g, start) in mig_candidates(n, ctx, profile, models) {
                    let share = GpuShare::Mig { profile, start };
                    out.push(one_gpu(id, cpu_milli, memory_mib, gpu, g, share));
                }
            }
            Shape::Fractional {
                milli_gpu,
                gpu_memory_mib,
                models,
                cpu_milli,
                memory_mib,
            } => {
                if !fits_node(cpu_milli, memory_mib) {
                    return;
                }
                for (gpu, g) in fraction_candidates(n, ctx, milli_gpu, gpu_memory_mib, models) {
                    let share = GpuShare::Fraction {
                        milli: milli_gpu,
                        memory_mib: gpu_memory_mib,
                    };
                    out.push(one_gpu(id, cpu_milli, memory_mib, gpu, g, share));
                }
            }
            Shape::WholeGpus { .. } | Shape::WholeNodes { .. } => {}
        }
    }

    /// How many units of a gang node `n` can take now.
    fn node_capacity(&self, n: &Node, ctx: &Ctx<'_>, unit: Unit) -> u32 {
        if !self.node_open(n, ctx.req) {
            return 0;
        }
        match unit {
            Unit::Gpus {
                models,
                cpu_milli_per_gpu,
                memory_mib_per_gpu,
            } => {
                let mut cap =
                    count_u32(n.gpus.iter().filter(|g| ctx.takes_whole(g, models)).count());
                if let Some(by_cpu) = n.free_cpu_milli.checked_div(cpu_milli_per_gpu) {
                    cap = cap.min(by_cpu);
                }
                if let Some(by_memory) = n.free_memory_mib.checked_div(memory_mib_per_gpu) {
                    cap = cap.min(u32::try_from(by_memory).unwrap_or(u32::MAX));
                }
                cap
            }
            Unit::Nodes { models } => u32::from(ctx.takes_node(n, models)),
        }
    }

    /// Takes `k` units on node `id` (known to have them): healthy GPUs before degraded,
    /// whole-mode GPUs before idle shared ones, lowest index first.
    fn take_gpus(
        &self,
        id: NodeId,
        n: &Node,
        ctx: &Ctx<'_>,
        unit: Unit,
        k: u32,
    ) -> (NodePlacement, bool) {
        match unit {
            Unit::Nodes { .. } => (
                NodePlacement {
                    node: id,
                    cpu_milli: n.free_cpu_milli,
                    memory_mib: n.free_memory_mib,
                    whole_node: true,
                    gpus: n
                        .indexed_gpus()
                        .map(|(gpu, _)| GpuGrant {
                            gpu,
                            share: GpuShare::Whole,
                        })
                        .collect(),
                },
                n.gpus.iter().any(|g| g.health == Health::Degraded),
            ),
            Unit::Gpus {
                models,
                cpu_milli_per_gpu,
                memory_mib_per_gpu,
            } => {
                let mut idx: Vec<(u8, &Gpu)> = n
                    .indexed_gpus()
                    .filter(|(_, g)| ctx.takes_whole(g, models))
                    .collect();
                idx.sort_by_key(|&(i, g)| (g.health != Health::Ok, g.mode != GpuMode::Whole, i));
                idx.truncate(k as usize);
                let degraded = idx.iter().any(|(_, g)| g.health == Health::Degraded);
                (
                    NodePlacement {
                        node: id,
                        cpu_milli: cpu_milli_per_gpu.saturating_mul(k),
                        memory_mib: memory_mib_per_gpu.saturating_mul(u64::from(k)),
                        whole_node: false,
                        gpus: idx
                            .into_iter()
                            .map(|(gpu, _)| GpuGrant {
                                gpu,
                                share: GpuShare::Whole,
                            })
                            .collect(),
                    },
                    degraded,
                )
            }
        }
    }

    /// A gang of `count` units inside one vertex of `level`: the smallest such vertex
    /// that holds it (best fit by its aggregate, then checked exactly).
    fn search_gang(
        &self,
        ctx: &Ctx<'_>,
        unit: Unit,
        count: u32,
        level: Level,
        policy: &mut Policy,
    ) -> Option<Placement> {
        for v in self.gang_candidates(unit, count, level, policy) {
            let caps = self.gang_capacities(v, ctx, unit);
            if caps.total < u64::from(count) {
                continue;
            }
            let mut picks = Vec::new();
            let by_reliability = reliability_breaks_ties(ctx.req, policy.kind);
            self.take(v, count, &caps, policy.kind, by_reliability, &mut picks);
            let mut nodes = Vec::with_capacity(picks.len());
            let mut degraded = false;
            for (id, k) in picks {
                let (np, d) = self.take_gpus(id, &self.nodes[id.index()], ctx, unit, k);
                degraded |= d;
                nodes.push(np);
            }
            return Some(self.answer(ctx.req, nodes, degraded));
        }
        None
    }

    /// Units of `unit` free under a vertex by its aggregate: an upper bound.
    fn upper_units(&self, unit: Unit, s: &Summary) -> u64 {
        match unit {
            Unit::Gpus { models, .. } => models
                .iter(self.models.len())
                .map(|m| u64::from(s.whole_free[m.index()]))
                .sum(),
            Unit::Nodes { models } => models
                .iter(self.models.len())
                .map(|m| u64::from(s.idle_nodes[m.index()]))
                .sum(),
        }
    }

    /// The vertices of `level` whose aggregates may hold the gang, in the order the
    /// policy tries them.
    fn gang_candidates(
        &self,
        unit: Unit,
        count: u32,
        level: Level,
        policy: &mut Policy,
    ) -> Vec<u32> {
        let mut candidates = Vec::new();
        let mut stack = vec![0u32];
        while let Some(v) = stack.pop() {
            let vx = self.vertex(v);
            if self.upper_units(unit, &vx.summary) < u64::from(count) {
                continue;
            }
            if vx.level == level {
                candidates.push(v);
            } else if vx.level < level {
                stack.extend(vx.children.iter().rev());
            }
        }
        candidates.sort_unstable();
        match policy.kind {
            PolicyKind::FirstFit => {}
            PolicyKind::Random => candidates.shuffle(&mut policy.rng),
            _ => candidates.sort_by_key(|&v| self.upper_units(unit, &self.vertex(v).summary)),
        }
        candidates
    }

    /// The exact capacities under vertex `v`: per node, per vertex up to `v`, and in all.
    fn gang_capacities(&self, v: u32, ctx: &Ctx<'_>, unit: Unit) -> GangCapacities {
        let mut caps = GangCapacities {
            vertices: BTreeMap::new(),
            nodes: BTreeMap::new(),
            total: 0,
        };
        self.for_nodes_under(v, &mut |id| {
            let cap = self.node_capacity(&self.nodes[id.index()], ctx, unit);
            if cap == 0 {
                return;
            }
            caps.total += u64::from(cap);
            caps.nodes.insert(id, cap);
            let mut a = Some(self.nodes[id.index()].domain);
            while let Some(x) = a {
                *caps.vertices.entry(x).or_default() += cap;
                if x == v {
                    break;
                }
                a = self.vertex(x).parent;
            }
        });
        caps
    }

    fn for_nodes_under(&self, v: u32, f: &mut dyn FnMut(NodeId)) {
        let vx = self.vertex(v);
        for &n in &vx.nodes {
            f(n);
        }
        for &c in &vx.children {
            self.for_nodes_under(c, f);
        }
    }

    /// Splits `need` units over the sub-blocks of `v`: if one sub-block holds it all, the
    /// tightest such one; otherwise the largest sub-blocks whole, until the rest fits one.
    /// Of equal sub-blocks the first wins: the most reliable first when `by_reliability`.
    fn take(
        &self,
        v: u32,
        need: u32,
        caps: &GangCapacities,
        kind: PolicyKind,
        by_reliability: bool,
        out: &mut Vec<(NodeId, u32)>,
    ) {
        let vx = self.vertex(v);
        let mut items: Vec<(Item, u32)> = if vx.level == Level::Domain {
            vx.nodes
                .iter()
                .filter_map(|n| caps.nodes.get(n).map(|&c| (Item::Node(*n), c)))
                .collect()
        } else {
            vx.children
                .iter()
                .filter_map(|c| caps.vertices.get(c).map(|&cap| (Item::Vertex(*c), cap)))
                .collect()
        };
        if by_reliability {
            // Stable: equally reliable items keep their id order.
            items.sort_by_key(|&(item, _)| Reverse(self.item_reliability(item)));
        }
        let mut need = need;
        while need > 0 && !items.is_empty() {
            let fits = items
                .iter()
                .enumerate()
                .filter(|(_, (_, c))| *c >= need)
                .min_by_key(|(i, (_, c))| {
                    if kind == PolicyKind::FirstFit {
                        (0, *i)
                    } else {
                        (*c, *i)
                    }
                })
                .map(|(i, _)| i);
            let (i, k) = match fits {
                Some(i) => (i, need),
                None => {
                    let i = items
                        .iter()
                        .enumerate()
                        .max_by_key(|(i, (_, c))| (*c, std::cmp::Reverse(*i)))
                        .map(|(i, _)| i)
                        .unwrap_or(0);
                    (i, items[i].1)
                }
            };
            let (item, _) = items.remove(i);
            match item {
                Item::Node(n) => out.push((n, k)),
                Item::Vertex(c) => self.take(c, k, caps, kind, by_reliability, out),
            }
            need -= k;
        }
    }

    /// What a gang can count on from one item of a split: a node's reliability; an NVLink
    /// domain's is its least reliable node's (an HGX node is a domain of its own); racks
    /// and wider rank alike.
    fn item_reliability(&self, item: Item) -> Option<u16> {
        match item {
            Item::Node(n) => self.nodes[n.index()].reliability,
            Item::Vertex(v) if self.vertex(v).level == Level::Domain => {
                let nodes = &self.vertex(v).nodes;
                nodes
                    .iter()
                    .map(|n| self.nodes[n.index()].reliability)
                    .min()?
            }
            Item::Vertex(_) => None,
        }
    }
}

/// One sub-block of a gang split (`Fleet::take`): a vertex below the split one, or a
/// node of a split NVLink domain.
#[derive(Debug, Clone, Copy)]
enum Item {
    Vertex(u32),
    Node(NodeId),
}

/// Whether reliability breaks ties between equally scored nodes: for on-demand requests,
/// under every policy but first-fit (the first node that fits is its rule).
fn reliability_breaks_ties(req: &Request, kind: PolicyKind) -> bool {
    req.class == Class::OnDemand && kind != PolicyKind::FirstFit
}

/// What a request of whole GPUs or whole nodes asks for: its unit, how many of them, and
/// where they must be (None for other shapes).
fn gang_unit(shape: &Shape) -> Option<(Unit, u32, Topology)> {
    match *shape {
        Shape::WholeGpus {
            count,
            models,
            topology,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
        } => Some((
            Unit::Gpus {
                models,
                cpu_milli_per_gpu,
                memory_mib_per_gpu,
            },
            count,
            topology,
        )),
        Shape::WholeNodes {
            count,
            models,
            topology,
        } => Some((Unit::Nodes { models }, count, topology)),
        _ => None,
    }
}

/// A placement on node `id` of some CPU, memory and the GPU grants given.
fn one_node(id: NodeId, cpu_milli: u32, memory_mib: u64, gpus: Vec<GpuGrant>) -> NodePlacement {
    NodePlacement {
        node: id,
        cpu_milli,
        memory_mib,
        whole_node: false,
        gpus,
    }
}

/// A placement of one share of GPU `gpu` (state `g`) on node `id`, with whether that GPU
/// is degraded.
fn one_gpu(
    id: NodeId,
    cpu_milli: u32,
    memory_mib: u64,
    gpu: u8,
    g: &Gpu,
    share: GpuShare,
) -> (NodePlacement, bool) {
    let grant = GpuGrant { gpu, share };
    (
        one_node(id, cpu_milli, memory_mib, vec![grant]),
        g.health == Health::Degraded,
    )
}

/// The MIG GPUs of `n` that can take `profile`, one per distinct GPU state (slots used,
/// health, model), each at the start that blocks the fewest larger profiles.
fn mig_candidates<'n>(
    n: &'n Node,
    ctx: &Ctx<'_>,
    profile: MigProfile,
    models: ModelSet,
) -> Vec<(u8, &'n Gpu, u8)> {
    let mut masks_seen = Vec::new();
    let mut out = Vec::new();
    for (i, g) in n.indexed_gpus() {
        if g.mode != GpuMode::Mig
            || g.holder.is_some()
            || !g.usable(ctx.allow_degraded)
            || !models.contains(g.model)
            || masks_seen.contains(&(g.mig_used, g.health, g.model))
        {
            continue;
        }
        masks_seen.push((g.mig_used, g.health, g.model));
        if let Some(start) = crate::mig::best_start(g.mig_used, profile) {
            out.push((i, g, start));
        }
    }
    out
}

/// The shared GPUs of `n` with room for the fraction, one per distinct GPU state (free
/// milli-GPUs, health, model).
fn fraction_candidates<'n>(
    n: &'n Node,
    ctx: &Ctx<'_>,
    milli_gpu: u32,
    gpu_memory_mib: u64,
    models: ModelSet,
) -> Vec<(u8, &'n Gpu)> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for (i, g) in n.indexed_gpus() {
        if g.mode != GpuMode::Shared
            || g.holder.is_some()
            || !g.usable(ctx.allow_degraded)
            || !models.contains(g.model)
            || g.free_milli() < milli_gpu
            || g.shared_memory_mib + gpu_memory_mib > g.memory_mib
        {
            continue;
        }
        let key = (g.free_milli(), g.health, g.model);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push((i, g));
    }
    out
}

/// How many units of a gang the nodes under one vertex can take now.
struct GangCapacities {
    /// Per vertex from the nodes' domains up to the searched vertex.
    vertices: BTreeMap<u32, u32>,
    nodes: BTreeMap<NodeId, u32>,
    total: u64,
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;
