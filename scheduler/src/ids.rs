//! Identifiers the engine speaks: interned GPU models (`ModelId`, `ModelSet`), nodes and
//! GPUs by position in the fleet, and the opaque tenant and allocation keys the caller
//! owns. Nothing here knows about the database or the sellable catalog: the api maps
//! its own ids onto these.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Most distinct GPU models one fleet may hold (a `ModelSet` is a bit set over them).
pub const MAX_MODELS: usize = 16;

/// A GPU model interned by the fleet (`Fleet::model_id("H100")`). Open: trace models such
/// as `V100M32` or `G2` are as valid as the catalog's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ModelId(pub u16);

impl ModelId {
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A set of acceptable GPU models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelSet(u16);

impl ModelSet {
    /// Every model, including ones interned later.
    pub const ANY: ModelSet = ModelSet(u16::MAX);
    pub const NONE: ModelSet = ModelSet(0);

    pub fn of(models: &[ModelId]) -> ModelSet {
        models.iter().fold(ModelSet::NONE, |set, &m| set.with(m))
    }

    pub fn with(self, model: ModelId) -> ModelSet {
        if model.index() < MAX_MODELS {
            ModelSet(self.0 | (1 << model.0))
        } else {
            self
        }
    }

    pub fn contains(self, model: ModelId) -> bool {
        model.index() < MAX_MODELS && self.0 & (1 << model.0) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The models of the set among the first `count` interned ones.
    pub fn iter(self, count: usize) -> impl Iterator<Item = ModelId> {
        (0..count.min(MAX_MODELS))
            .filter_map(|i| u16::try_from(i).ok())
            .map(ModelId)
            .filter(move |&m| self.contains(m))
    }
}

impl Default for ModelSet {
    fn default() -> Self {
        ModelSet::ANY
    }
}

/// A node by its position in the fleet (the order of the specs it was built from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One GPU: its node and its index on the node (as the node spec lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GpuRef {
    pub node: NodeId,
    pub gpu: u8,
}

/// The caller's tenant id, opaque to the engine (a UUID's 128 bits fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TenantKey(pub u128);

/// The caller's allocation id, opaque to the engine (a UUID's 128 bits fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AllocationKey(pub u128);

impl fmt::Display for AllocationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl ModelSet {
    pub fn bits(self) -> u16 {
        self.0
    }

    pub fn from_bits(bits: u16) -> ModelSet {
        ModelSet(bits)
    }
}

/// A count of GPUs, nodes or vertices in the `u32` the engine counts in. A fleet that
/// `Fleet::new` accepts never counts that far; were a count ever larger, saturating only
/// understates it.
pub(crate) fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
