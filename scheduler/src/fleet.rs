//! The fleet as the engine sees it: the topology tree (region → zone → rack → NVLink
//! domain → node → GPU → MIG slots), what is free on every node and GPU, the live
//! allocations, and the aggregates kept on every vertex. Building a fleet from node
//! descriptions, committing and releasing placements, and health or node-state changes
//! live here; each change touches the changed nodes and their ancestors only.
//!
//! Choosing a placement lives in `placement`; this module applies one and keeps the
//! books.

use std::collections::BTreeMap;

use neocloud_schema::mig::{MigProfile, SlotMask};
use serde::{Deserialize, Serialize};

use crate::aggregate::{PROFILES, SHARED_BUCKETS, Summary, WHOLE_BUCKETS};
use crate::fractional::{self, ShapeMix};
use crate::ids::{AllocationKey, GpuRef, MAX_MODELS, ModelId, ModelSet, NodeId, TenantKey};
use crate::placement::{GpuShare, NodePlacement, Placement};
use crate::request::{Class, Exclusivity, MILLI_PER_GPU};

/// GPU health as the agents report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    Ok,
    /// Usable, but only when nothing healthy fits.
    Degraded,
    /// Never placed on.
    Failed,
}

/// Whether a node takes new placements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Active,
    /// Keeps what runs there, takes nothing new.
    Draining,
    Down,
}

/// How a GPU is sold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuMode {
    /// Whole GPUs only.
    Whole,
    /// MIG instances only (a GPU in MIG mode cannot be sold whole until reconfigured).
    Mig,
    /// Time-sliced fractions in milli-GPUs; an idle shared GPU can also be sold whole.
    Shared,
}

/// One GPU of a node description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub model: String,
    pub memory_mib: u64,
    pub health: Health,
    pub mode: GpuMode,
}

/// One node as the api (or a trace) describes it. Nodes with the same region, zone,
/// rack and NVLink domain names share that domain (e.g. the 18 trays of an NVL72).
///
/// `reliability` is the node's measured reliability in basis points, 0..=10000
/// (availability from agent coverage × GPU health over the last 30 days); `None` while
/// the node has no record yet (a spec serialized without the field loads as `None`). It
/// only breaks ties between equally scored candidates for on-demand requests: the more
/// reliable node wins, and `None` ranks below every `Some` (docs/scheduler.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    pub name: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    pub state: NodeState,
    pub gpus: Vec<GpuSpec>,
    #[serde(default)]
    pub reliability: Option<u16>,
}

/// Knobs of the search that trade decision time for placement quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// How many feasible nodes the `topo` policy scores for a single-node request before
    /// it settles (visited fullest domains first). `None`: all of them.
    pub candidate_nodes: Option<usize>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            candidate_nodes: Some(16),
        }
    }
}

/// A live allocation: its key and the placement it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    pub key: AllocationKey,
    pub placement: Placement,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    #[error("a fleet holds at most {MAX_MODELS} GPU models; `{model}` is one too many")]
    TooManyModels { model: String },
    #[error("node `{name}` is listed twice")]
    DuplicateNode { name: String },
    #[error("node `{name}` has {gpus} GPUs; at most 255 are supported")]
    TooManyGpus { name: String, gpus: usize },
    #[error("the fleet holds at most 2^32 nodes")]
    TooManyNodes,
    #[error("no node {node:?}")]
    UnknownNode { node: NodeId },
    #[error("no GPU {gpu:?}")]
    UnknownGpu { gpu: GpuRef },
}

/// Why a placement cannot be committed (the fleet is left unchanged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    #[error("allocation {key} already exists")]
    DuplicateAllocation { key: AllocationKey },
    #[error("allocation {key} does not exist")]
    UnknownAllocation { key: AllocationKey },
    #[error("victim {key} is not a spot allocation")]
    VictimNotSpot { key: AllocationKey },
    #[error("no node {node:?}")]
    UnknownNode { node: NodeId },
    #[error("no GPU {gpu:?}")]
    UnknownGpu { gpu: GpuRef },
    #[error("node {node:?} is not active")]
    NodeNotActive { node: NodeId },
    #[error("GPU {gpu:?} has failed")]
    GpuFailed { gpu: GpuRef },
    #[error("GPU {gpu:?} cannot take this share (busy or in another mode)")]
    GpuUnavailable { gpu: GpuRef },
    #[error("node {node:?} lacks CPU or memory")]
    NodeFull { node: NodeId },
    #[error("node {node:?} is not idle")]
    NodeNotIdle { node: NodeId },
    #[error("exclusivity would be broken on node {node:?}")]
    Exclusivity { node: NodeId },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Root,
    Region,
    Zone,
    Rack,
    Domain,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Vertex {
    pub level: Level,
    pub name: String,
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    /// Only for NVLink domains: their nodes, in id order.
    pub nodes: Vec<NodeId>,
    pub summary: Summary,
    /// Only for NVLink domains: the tenant holding the domain exclusively, if any.
    pub lock: Option<TenantKey>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Gpu {
    pub model: ModelId,
    pub memory_mib: u64,
    pub health: Health,
    pub mode: GpuMode,
    /// The allocation holding the whole GPU.
    pub holder: Option<AllocationKey>,
    pub mig_used: SlotMask,
    pub shared_milli: u32,
    pub shared_memory_mib: u64,
}

impl Gpu {
    /// Nothing at all allocated on it.
    pub fn is_idle(&self) -> bool {
        self.holder.is_none() && self.mig_used == SlotMask::EMPTY && self.shared_milli == 0
    }

    /// Idle and sellable as a whole GPU.
    pub fn whole_free(&self) -> bool {
        self.is_idle() && matches!(self.mode, GpuMode::Whole | GpuMode::Shared)
    }

    /// Free milli-GPUs as seen by whole and fractional requests (MIG GPUs: none).
    pub fn free_milli(&self) -> u32 {
        match self.mode {
            GpuMode::Mig => 0,
            _ if self.holder.is_some() => 0,
            GpuMode::Whole => {
                if self.is_idle() {
                    MILLI_PER_GPU
                } else {
                    0
                }
            }
            GpuMode::Shared => MILLI_PER_GPU.saturating_sub(self.shared_milli),
        }
    }

    /// Milli-GPUs allocated on it: 1000 held whole, MIG by compute share, fractions by
    /// their milli.
    pub fn allocated_milli(&self) -> u64 {
        if self.holder.is_some() {
            return u64::from(MILLI_PER_GPU);
        }
        match self.mode {
            GpuMode::Mig => {
                u64::from(self.mig_used.used_slots().min(7)) * u64::from(MILLI_PER_GPU) / 7
            }
            _ => u64::from(self.shared_milli),
        }
    }

    pub fn usable(&self, allow_degraded: bool) -> bool {
        match self.health {
            Health::Ok => true,
            Health::Degraded => allow_degraded,
            Health::Failed => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeAlloc {
    pub key: AllocationKey,
    pub tenant: TenantKey,
    pub class: Class,
    pub exclusive: Option<Exclusivity>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub name: String,
    pub domain: u32,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    pub state: NodeState,
    /// Basis points, `None` without a record (see `NodeSpec::reliability`).
    pub reliability: Option<u16>,
    pub free_cpu_milli: u32,
    pub free_memory_mib: u64,
    pub gpus: Vec<Gpu>,
    pub allocs: Vec<NodeAlloc>,
    pub summary: Summary,
}

impl Node {
    /// The tenant holding this node exclusively (node or domain exclusivity), if any.
    pub fn lock(&self) -> Option<TenantKey> {
        self.allocs
            .iter()
            .find(|a| a.exclusive.is_some())
            .map(|a| a.tenant)
    }

    /// The node's GPUs with their indices. `Fleet::new` refuses nodes of more than 255
    /// GPUs, so every GPU has a `u8` index.
    pub fn indexed_gpus(&self) -> impl Iterator<Item = (u8, &Gpu)> {
        (0..=u8::MAX).zip(&self.gpus)
    }

    pub fn only_tenant(&self, tenant: TenantKey) -> bool {
        self.allocs.iter().all(|a| a.tenant == tenant)
    }

    pub fn is_idle(&self) -> bool {
        self.allocs.is_empty() && self.gpus.iter().all(Gpu::is_idle)
    }

    /// Every GPU is sold whole only (none in MIG or shared mode): taking the node whole
    /// destroys no MIG slice or fraction.
    pub fn is_plain(&self) -> bool {
        self.gpus.iter().all(|g| g.mode == GpuMode::Whole)
    }

    fn summarize(&self) -> Summary {
        let mut s = Summary::default();
        if self.state != NodeState::Active {
            return s;
        }
        s.max_cpu_milli = self.free_cpu_milli;
        s.max_memory_mib = self.free_memory_mib;
        let mut present = [false; MAX_MODELS];
        let mut idle_ok = self.allocs.is_empty();
        for gpu in &self.gpus {
            let m = gpu.model.index();
            present[m] = true;
            if gpu.health == Health::Failed {
                idle_ok = false;
                continue;
            }
            if !gpu.is_idle() {
                idle_ok = false;
            }
            if gpu.holder.is_some() {
                continue;
            }
            if gpu.whole_free() {
                s.whole_free[m] += 1;
            }
            match gpu.mode {
                GpuMode::Mig => {
                    for (p, profile) in MigProfile::ALL.into_iter().enumerate() {
                        s.mig_cap[m][p] += u32::from(gpu.mig_used.capacity_for(profile));
                    }
                }
                GpuMode::Shared => {
                    let free = gpu.free_milli();
                    s.max_shared_milli[m] = s.max_shared_milli[m].max(free);
                    let bucket = (free / 100) as usize;
                    s.shared_hist[m][bucket.min(SHARED_BUCKETS - 1)] += 1;
                }
                GpuMode::Whole => {}
            }
        }
        for (m, &here) in present.iter().enumerate() {
            if here {
                s.max_node_whole[m] = s.whole_free[m];
                let bucket = (s.whole_free[m] as usize).min(WHOLE_BUCKETS - 1);
                s.whole_hist[m][bucket] += 1;
                if idle_ok {
                    s.idle_nodes[m] += 1;
                }
            }
        }
        debug_assert!(s.mig_cap.iter().all(|c| c.len() == PROFILES));
        s
    }

    /// Applies one node's share of a placement, checking it fits.
    fn apply(
        &mut self,
        id: NodeId,
        meta: &NodeAlloc,
        np: &NodePlacement,
    ) -> Result<(), CommitError> {
        if self.state != NodeState::Active {
            return Err(CommitError::NodeNotActive { node: id });
        }
        if np.whole_node && !self.is_idle() {
            return Err(CommitError::NodeNotIdle { node: id });
        }
        if np.cpu_milli > self.free_cpu_milli || np.memory_mib > self.free_memory_mib {
            return Err(CommitError::NodeFull { node: id });
        }
        self.free_cpu_milli -= np.cpu_milli;
        self.free_memory_mib -= np.memory_mib;
        for grant in &np.gpus {
            let gref = GpuRef {
                node: id,
                gpu: grant.gpu,
            };
            let gpu = self
                .gpus
                .get_mut(usize::from(grant.gpu))
                .ok_or(CommitError::UnknownGpu { gpu: gref })?;
            if gpu.health == Health::Failed {
                return Err(CommitError::GpuFailed { gpu: gref });
            }
            let ok = match grant.share {
                GpuShare::Whole => {
                    (gpu.whole_free() || (np.whole_node && gpu.is_idle())) && {
                        gpu.holder = Some(meta.key);
                        true
                    }
                }
                GpuShare::Mig { profile, start } => {
                    gpu.mode == GpuMode::Mig
                        && gpu.holder.is_none()
                        && gpu.mig_used.fits_at(profile, start)
                        && {
                            gpu.mig_used = gpu.mig_used.union(profile.mask_at(start));
                            true
                        }
                }
                GpuShare::Fraction { milli, memory_mib } => {
                    gpu.mode == GpuMode::Shared
                        && gpu.holder.is_none()
                        && milli > 0
                        && gpu.shared_milli + milli <= MILLI_PER_GPU
                        && gpu.shared_memory_mib + memory_mib <= gpu.memory_mib
                        && {
                            gpu.shared_milli += milli;
                            gpu.shared_memory_mib += memory_mib;
                            true
                        }
                }
            };
            if !ok {
                return Err(CommitError::GpuUnavailable { gpu: gref });
            }
        }
        self.allocs.push(meta.clone());
        Ok(())
    }

    /// Gives back one node's share of a committed placement.
    pub(crate) fn revert(&mut self, key: AllocationKey, np: &NodePlacement) {
        self.free_cpu_milli += np.cpu_milli;
        self.free_memory_mib += np.memory_mib;
        for grant in &np.gpus {
            if let Some(gpu) = self.gpus.get_mut(usize::from(grant.gpu)) {
                match grant.share {
                    GpuShare::Whole => gpu.holder = None,
                    GpuShare::Mig { profile, start } => {
                        gpu.mig_used = gpu.mig_used.without(profile.mask_at(start));
                    }
                    GpuShare::Fraction { milli, memory_mib } => {
                        gpu.shared_milli -= milli;
                        gpu.shared_memory_mib -= memory_mib;
                    }
                }
            }
        }
        if let Some(i) = self.allocs.iter().position(|a| a.key == key) {
            self.allocs.remove(i);
        }
    }
}

/// A read-only view of one node's free resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFree {
    pub cpu_milli: u32,
    pub memory_mib: u64,
    /// Per GPU: free milli-GPUs (whole/shared modes; 0 for MIG GPUs) and MIG slots used.
    pub gpu_free_milli: Vec<u32>,
    pub mig_used: Vec<SlotMask>,
}

/// The topology vertices met while building a fleet: level, parent and name to id.
type VertexIndex = BTreeMap<(Level, u32, String), u32>;

/// The fleet: topology, free state, live allocations and aggregates.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    pub(crate) models: Vec<String>,
    pub(crate) vertices: Vec<Vertex>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) allocations: BTreeMap<AllocationKey, Allocation>,
    pub(crate) by_name: BTreeMap<String, NodeId>,
    pub(crate) mix: ShapeMix,
    /// Per node: its fragmentation against `mix` under each measure (see `fractional`),
    /// kept current.
    pub(crate) node_frag: Vec<[f64; 2]>,
    pub(crate) model_pressure: Vec<f64>,
    pub(crate) tuning: Tuning,
    /// Degraded GPUs in the fleet: the second, degraded-allowed search pass runs only
    /// when there are some.
    pub(crate) degraded_gpus: usize,
    /// Whether the fleet has both plain (whole-mode) GPUs and GPUs in MIG or shared mode:
    /// only then do whole GPUs and whole nodes search the plain ones first (modes never
    /// change once a fleet is built).
    pub(crate) mixed_modes: bool,
}

impl Fleet {
    /// Builds a fleet from node descriptions; nodes get ids in the order given.
    pub fn new(specs: Vec<NodeSpec>) -> Result<Fleet, FleetError> {
        let mut fleet = Fleet::empty(specs.len());
        let mut index = VertexIndex::new();
        for spec in specs {
            fleet.add_node(spec, &mut index)?;
        }
        fleet.fold_summaries();
        fleet.node_frag = vec![[0.0; 2]; fleet.nodes.len()];
        fleet.degraded_gpus = fleet
            .nodes
            .iter()
            .flat_map(|n| &n.gpus)
            .filter(|g| g.health == Health::Degraded)
            .count();
        let mut gpus = fleet.nodes.iter().flat_map(|n| &n.gpus);
        fleet.mixed_modes = gpus.clone().any(|g| g.mode == GpuMode::Whole)
            && gpus.any(|g| g.mode != GpuMode::Whole);
        Ok(fleet)
    }

    /// A fleet of no nodes: only the root of the topology tree.
    fn empty(capacity: usize) -> Fleet {
        Fleet {
            models: Vec::new(),
            vertices: vec![Vertex {
                level: Level::Root,
                name: String::new(),
                parent: None,
                children: Vec::new(),
                nodes: Vec::new(),
                summary: Summary::default(),
                lock: None,
            }],
            nodes: Vec::with_capacity(capacity),
            allocations: BTreeMap::new(),
            by_name: BTreeMap::new(),
            mix: ShapeMix::default(),
            node_frag: Vec::new(),
            model_pressure: Vec::new(),
            tuning: Tuning::default(),
            degraded_gpus: 0,
            mixed_modes: false,
        }
    }

    /// Adds one node under its region, zone, rack and NVLink domain, creating those
    /// vertices the first time they are named.
    fn add_node(&mut self, spec: NodeSpec, index: &mut VertexIndex) -> Result<(), FleetError> {
        let id = NodeId(u32::try_from(self.nodes.len()).map_err(|_| FleetError::TooManyNodes)?);
        if self.by_name.contains_key(&spec.name) {
            return Err(FleetError::DuplicateNode { name: spec.name });
        }
        if spec.gpus.len() > usize::from(u8::MAX) {
            return Err(FleetError::TooManyGpus {
                name: spec.name,
                gpus: spec.gpus.len(),
            });
        }
        let mut parent = 0u32;
        for (level, name) in [
            (Level::Region, &spec.region),
            (Level::Zone, &spec.zone),
            (Level::Rack, &spec.rack),
            (Level::Domain, &spec.nvlink_domain),
        ] {
            parent = self.vertex_under(index, level, parent, name)?;
        }
        self.vertex_mut(parent).nodes.push(id);
        let mut gpus = Vec::with_capacity(spec.gpus.len());
        for g in spec.gpus {
            let model = self.intern(&g.model)?;
            gpus.push(Gpu {
                model,
                memory_mib: g.memory_mib,
                health: g.health,
                mode: g.mode,
                holder: None,
                mig_used: SlotMask::EMPTY,
                shared_milli: 0,
                shared_memory_mib: 0,
            });
        }
        let mut node = Node {
            name: spec.name.clone(),
            domain: parent,
            cpu_milli: spec.cpu_milli,
            memory_mib: spec.memory_mib,
            state: spec.state,
            reliability: spec.reliability,
            free_cpu_milli: spec.cpu_milli,
            free_memory_mib: spec.memory_mib,
            gpus,
            allocs: Vec::new(),
            summary: Summary::default(),
        };
        node.summary = node.summarize();
        self.by_name.insert(spec.name, id);
        self.nodes.push(node);
        Ok(())
    }

    /// The vertex called `name` at `level` under `parent`, created if it is new.
    fn vertex_under(
        &mut self,
        index: &mut VertexIndex,
        level: Level,
        parent: u32,
        name: &str,
    ) -> Result<u32, FleetError> {
        let key = (level, parent, name.to_owned());
        if let Some(&v) = index.get(&key) {
            return Ok(v);
        }
        let v = u32::try_from(self.vertices.len()).map_err(|_| FleetError::TooManyNodes)?;
        self.vertices.push(Vertex {
            level,
            name: name.to_owned(),
            parent: Some(parent),
            children: Vec::new(),
            nodes: Vec::new(),
            summary: Summary::default(),
            lock: None,
        });
        self.vertex_mut(parent).children.push(v);
        index.insert(key, v);
        Ok(v)
    }

    /// Folds the summaries bottom-up once; children always have larger indices.
    fn fold_summaries(&mut self) {
        for v in (0..self.vertices.len()).rev() {
            let mut s = Summary::default();
            for &n in &self.vertices[v].nodes {
                s.absorb(&self.nodes[n.index()].summary);
            }
            for &c in &self.vertices[v].children {
                s.absorb(&self.vertex(c).summary);
            }
            self.vertices[v].summary = s;
        }
    }

    /// Vertex `v` of the topology tree (vertex ids index `vertices`; a `u32` always fits
    /// a `usize` where this runs).
    pub(crate) fn vertex(&self, v: u32) -> &Vertex {
        &self.vertices[v as usize]
    }

    pub(crate) fn vertex_mut(&mut self, v: u32) -> &mut Vertex {
        &mut self.vertices[v as usize]
    }

    fn intern(&mut self, name: &str) -> Result<ModelId, FleetError> {
        let too_many = || FleetError::TooManyModels {
            model: name.to_owned(),
        };
        let i = match self.models.iter().position(|m| m == name) {
            Some(i) => i,
            None => {
                if self.models.len() >= MAX_MODELS {
                    return Err(too_many());
                }
                self.models.push(name.to_owned());
                self.models.len() - 1
            }
        };
        u16::try_from(i).map(ModelId).map_err(|_| too_many())
    }

    pub fn with_tuning(mut self, tuning: Tuning) -> Fleet {
        self.tuning = tuning;
        self
    }

    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// The id of a GPU model present in the fleet.
    pub fn model_id(&self, name: &str) -> Option<ModelId> {
        self.models
            .iter()
            .position(|m| m == name)
            .and_then(|i| u16::try_from(i).ok())
            .map(ModelId)
    }

    pub fn model_name(&self, model: ModelId) -> Option<&str> {
        self.models.get(model.index()).map(String::as_str)
    }

    /// The set of the named models that exist in this fleet (unknown names are ignored).
    pub fn model_set<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> ModelSet {
        names
            .into_iter()
            .filter_map(|n| self.model_id(n))
            .fold(ModelSet::NONE, ModelSet::with)
    }

    pub fn model_count(&self) -> usize {
        self.models.len()
    }

    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn node_name(&self, node: NodeId) -> Option<&str> {
        self.nodes.get(node.index()).map(|n| n.name.as_str())
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        // `Fleet::new` refuses more nodes than a `u32` counts: every node has an id.
        (0..=u32::MAX).zip(&self.nodes).map(|(i, _)| NodeId(i))
    }

    /// GPUs of the fleet, all states included.
    pub fn gpu_count(&self) -> usize {
        self.nodes.iter().map(|n| n.gpus.len()).sum()
    }

    pub fn node_free(&self, node: NodeId) -> Option<NodeFree> {
        let n = self.nodes.get(node.index())?;
        Some(NodeFree {
            cpu_milli: n.free_cpu_milli,
            memory_mib: n.free_memory_mib,
            gpu_free_milli: n.gpus.iter().map(Gpu::free_milli).collect(),
            mig_used: n.gpus.iter().map(|g| g.mig_used).collect(),
        })
    }

    /// Milli-GPUs allocated over the whole fleet (whole GPUs 1000, MIG by compute share,
    /// fractions by their milli).
    pub fn allocated_gpu_milli(&self) -> u64 {
        self.nodes
            .iter()
            .flat_map(|n| &n.gpus)
            .map(Gpu::allocated_milli)
            .sum()
    }

    /// The mean reliability (basis points) of the allocated GPU capacity, each node's
    /// weighted by the milli-GPUs allocated on it; nodes without a record are left out.
    /// `None` when nothing is allocated on a node with a record.
    pub fn allocated_gpu_reliability(&self) -> Option<f64> {
        let (mut weighted, mut milli) = (0.0, 0u64);
        for n in &self.nodes {
            let Some(r) = n.reliability else { continue };
            let here: u64 = n.gpus.iter().map(Gpu::allocated_milli).sum();
            weighted += f64::from(r) * here as f64;
            milli += here;
        }
        (milli > 0).then(|| weighted / milli as f64)
    }

    pub fn allocation(&self, key: AllocationKey) -> Option<&Allocation> {
        self.allocations.get(&key)
    }

    pub fn allocations(&self) -> impl Iterator<Item = &Allocation> {
        self.allocations.values()
    }

    /// The observed mix of request shapes that fragmentation is measured against.
    pub fn set_mix(&mut self, mix: ShapeMix) {
        self.mix = mix;
        let mut gpus_per_model = vec![0u32; self.models.len()];
        for g in self.nodes.iter().flat_map(|n| &n.gpus) {
            gpus_per_model[g.model.index()] += 1;
        }
        self.model_pressure = fractional::model_pressure(&self.mix, &gpus_per_model);
        for i in 0..self.nodes.len() {
            self.node_frag[i] = fractional::node_frag_of(&self.mix, &self.nodes[i]);
        }
    }

    pub fn mix(&self) -> &ShapeMix {
        &self.mix
    }

    /// Checks a placement against the current state and returns the nodes as they would
    /// be after it (victims released first). Changes nothing.
    pub(crate) fn dry_run(
        &self,
        key: AllocationKey,
        placement: &Placement,
    ) -> Result<BTreeMap<NodeId, Node>, CommitError> {
        if self.allocations.contains_key(&key) {
            return Err(CommitError::DuplicateAllocation { key });
        }
        let mut scratch: BTreeMap<NodeId, Node> = BTreeMap::new();
        for &victim in &placement.victims {
            let alloc = self
                .allocations
                .get(&victim)
                .ok_or(CommitError::UnknownAllocation { key: victim })?;
            if alloc.placement.class != Class::Spot {
                return Err(CommitError::VictimNotSpot { key: victim });
            }
            for np in &alloc.placement.nodes {
                let node = self.scratch_node(&mut scratch, np.node)?;
                node.revert(victim, np);
            }
        }
        let meta = NodeAlloc {
            key,
            tenant: placement.tenant,
            class: placement.class,
            exclusive: placement.exclusive,
        };
        for np in &placement.nodes {
            let node = self.scratch_node(&mut scratch, np.node)?;
            node.apply(np.node, &meta, np)?;
        }
        // Exclusivity is an invariant of the result: a node or domain held exclusively
        // holds one tenant only.
        for (&id, node) in &scratch {
            if let Some(t) = node.lock()
                && !node.only_tenant(t)
            {
                return Err(CommitError::Exclusivity { node: id });
            }
            let domain = self.vertex(node.domain);
            let view = |n: NodeId| scratch.get(&n).unwrap_or(&self.nodes[n.index()]);
            let domain_lock = domain.nodes.iter().find_map(|&n| {
                view(n)
                    .allocs
                    .iter()
                    .find(|a| a.exclusive == Some(Exclusivity::NvlinkDomain))
                    .map(|a| a.tenant)
            });
            if let Some(t) = domain_lock
                && !domain.nodes.iter().all(|&n| view(n).only_tenant(t))
            {
                return Err(CommitError::Exclusivity { node: id });
            }
        }
        Ok(scratch)
    }

    fn scratch_node<'a>(
        &self,
        scratch: &'a mut BTreeMap<NodeId, Node>,
        id: NodeId,
    ) -> Result<&'a mut Node, CommitError> {
        let node = self
            .nodes
            .get(id.index())
            .ok_or(CommitError::UnknownNode { node: id })?;
        Ok(scratch.entry(id).or_insert_with(|| node.clone()))
    }

    /// Commits a placement under `key`: preempts its victims (returned), then takes its
    /// resources. All or nothing: on error the fleet is unchanged.
    pub fn commit(
        &mut self,
        key: AllocationKey,
        placement: &Placement,
    ) -> Result<Vec<Allocation>, CommitError> {
        let scratch = self.dry_run(key, placement)?;
        let mut preempted = Vec::with_capacity(placement.victims.len());
        for victim in &placement.victims {
            if let Some(a) = self.allocations.remove(victim) {
                preempted.push(a);
            }
        }
        self.allocations.insert(
            key,
            Allocation {
                key,
                placement: placement.clone(),
            },
        );
        self.write_back(scratch);
        Ok(preempted)
    }

    /// Releases an allocation and gives its resources back.
    pub fn release(&mut self, key: AllocationKey) -> Result<Allocation, CommitError> {
        let alloc = self
            .allocations
            .remove(&key)
            .ok_or(CommitError::UnknownAllocation { key })?;
        let mut scratch = BTreeMap::new();
        for np in &alloc.placement.nodes {
            let node = self.scratch_node(&mut scratch, np.node)?;
            node.revert(key, np);
        }
        self.write_back(scratch);
        Ok(alloc)
    }

    fn write_back(&mut self, scratch: BTreeMap<NodeId, Node>) {
        let mut domains = Vec::new();
        for (id, node) in scratch {
            domains.push(node.domain);
            self.nodes[id.index()] = node;
            self.refresh_node(id);
        }
        domains.sort_unstable();
        domains.dedup();
        for d in domains {
            self.refresh_domain_lock(d);
        }
    }

    /// Marks a GPU ok, degraded or failed. What runs there stays (the api decides about
    /// credits and migration); a failed GPU takes nothing new.
    pub fn set_gpu_health(&mut self, gpu: GpuRef, health: Health) -> Result<(), FleetError> {
        let g = self
            .nodes
            .get_mut(gpu.node.index())
            .and_then(|n| n.gpus.get_mut(usize::from(gpu.gpu)))
            .ok_or(FleetError::UnknownGpu { gpu })?;
        if g.health == Health::Degraded {
            self.degraded_gpus -= 1;
        }
        if health == Health::Degraded {
            self.degraded_gpus += 1;
        }
        g.health = health;
        self.refresh_node(gpu.node);
        Ok(())
    }

    /// Marks a node active, draining or down; only active nodes take new placements.
    pub fn set_node_state(&mut self, node: NodeId, state: NodeState) -> Result<(), FleetError> {
        let n = self
            .nodes
            .get_mut(node.index())
            .ok_or(FleetError::UnknownNode { node })?;
        n.state = state;
        self.refresh_node(node);
        Ok(())
    }

    /// Sets a node's reliability (basis points; `None`: no record). It only breaks ties
    /// between equally scored on-demand candidates, so no aggregate changes.
    pub fn set_node_reliability(
        &mut self,
        node: NodeId,
        reliability: Option<u16>,
    ) -> Result<(), FleetError> {
        self.nodes
            .get_mut(node.index())
            .ok_or(FleetError::UnknownNode { node })?
            .reliability = reliability;
        Ok(())
    }

    /// A node's reliability (basis points; `None`: no record, or no such node).
    pub fn node_reliability(&self, node: NodeId) -> Option<u16> {
        self.nodes.get(node.index()).and_then(|n| n.reliability)
    }

    fn refresh_domain_lock(&mut self, domain: u32) {
        let lock = self.vertex(domain).nodes.iter().find_map(|&n| {
            self.nodes[n.index()]
                .allocs
                .iter()
                .find(|a| a.exclusive == Some(Exclusivity::NvlinkDomain))
                .map(|a| a.tenant)
        });
        self.vertex_mut(domain).lock = lock;
    }

    /// Recomputes one node's summary and carries the change up its ancestors.
    fn refresh_node(&mut self, id: NodeId) {
        let i = id.index();
        self.node_frag[i] = fractional::node_frag_of(&self.mix, &self.nodes[i]);
        let new = self.nodes[i].summarize();
        if new == self.nodes[i].summary {
            return;
        }
        let mut old = std::mem::replace(&mut self.nodes[i].summary, new.clone());
        let mut new = new;
        let mut v = Some(self.nodes[i].domain);
        while let Some(vi) = v {
            let vi = vi as usize;
            let before = self.vertices[vi].summary.clone();
            let mut s = before.clone();
            if s.replace_child(&old, &new) {
                s.reset_maxima();
                for &n in &self.vertices[vi].nodes {
                    s.absorb_maxima(&self.nodes[n.index()].summary);
                }
                for &c in &self.vertices[vi].children {
                    s.absorb_maxima(&self.vertex(c).summary);
                }
            }
            if s == before {
                return;
            }
            self.vertices[vi].summary = s.clone();
            old = before;
            new = s;
            v = self.vertices[vi].parent;
        }
    }

    /// The aggregate of the whole fleet.
    pub(crate) fn root_summary(&self) -> &Summary {
        &self.vertices[0].summary
    }

    /// Recomputes every aggregate from scratch; tests compare it with the incremental one.
    #[cfg(test)]
    pub(crate) fn rebuilt_summaries(&self) -> Vec<Summary> {
        let mut out = vec![Summary::default(); self.vertices.len()];
        for v in (0..self.vertices.len()).rev() {
            let mut s = Summary::default();
            for &n in &self.vertices[v].nodes {
                s.absorb(&self.nodes[n.index()].summarize());
            }
            for &c in &self.vertices[v].children {
                s.absorb(&out[c as usize]);
            }
            out[v] = s;
        }
        out
    }

    #[cfg(test)]
    pub(crate) fn summaries(&self) -> Vec<Summary> {
        self.vertices.iter().map(|v| v.summary.clone()).collect()
    }
}
