//! What a caller asks for: a `Request` is a tenant, a class (`on_demand`, `reserved`,
//! `spot`), an optional exclusivity and a `Shape` (whole GPUs, a MIG profile, a fraction
//! of a GPU, whole nodes, or CPU only). Validation of a request lives here; how it is
//! placed lives in `placement`.

use neocloud_schema::mig::MigProfile;
use serde::{Deserialize, Serialize};

use crate::ids::{ModelSet, TenantKey};

/// Milli-GPUs in one whole GPU.
pub const MILLI_PER_GPU: u32 = 1000;

/// The commercial class of an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    OnDemand,
    Reserved,
    Spot,
}

impl Class {
    /// On-demand and reserved capacity outrank spot: they may preempt it when nothing
    /// else fits. Spot never preempts anything.
    pub fn may_preempt_spot(self) -> bool {
        !matches!(self, Class::Spot)
    }
}

/// Topology levels from the smallest to the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyLevel {
    Node,
    NvlinkDomain,
    Rack,
    Any,
}

/// How tightly a gang must sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub level: TopologyLevel,
    /// Required: fail rather than spread wider. Preferred: spread wider when needed.
    pub required: bool,
}

impl Topology {
    pub const ANY: Topology = Topology {
        level: TopologyLevel::Any,
        required: false,
    };

    pub fn required(level: TopologyLevel) -> Topology {
        Topology {
            level,
            required: true,
        }
    }

    pub fn preferred(level: TopologyLevel) -> Topology {
        Topology {
            level,
            required: false,
        }
    }
}

/// The scope a tenant wants to itself: no other tenant may share it, before or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusivity {
    Node,
    NvlinkDomain,
}

/// The resources one order needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Shape {
    /// `count` whole GPUs of the acceptable models, all or nothing.
    WholeGpus {
        count: u32,
        models: ModelSet,
        topology: Topology,
        cpu_milli_per_gpu: u32,
        memory_mib_per_gpu: u64,
    },
    /// One MIG instance on a GPU in MIG mode.
    Mig {
        profile: MigProfile,
        models: ModelSet,
        cpu_milli: u32,
        memory_mib: u64,
    },
    /// A time-sliced share of one GPU in shared mode.
    Fractional {
        milli_gpu: u32,
        gpu_memory_mib: u64,
        models: ModelSet,
        cpu_milli: u32,
        memory_mib: u64,
    },
    /// `count` idle nodes (bare metal), all or nothing.
    WholeNodes {
        count: u32,
        models: ModelSet,
        topology: Topology,
    },
    /// CPU and memory on a GPU node without a GPU (trace pods that ask for no GPU).
    Cpu { cpu_milli: u32, memory_mib: u64 },
}

impl Shape {
    /// The GPUs this shape holds, in milli-GPUs (MIG counts its compute share; whole
    /// nodes count as zero here because their size depends on the node).
    pub fn gpu_milli(&self) -> u64 {
        match *self {
            Shape::WholeGpus { count, .. } => u64::from(count) * u64::from(MILLI_PER_GPU),
            Shape::Mig { profile, .. } => {
                u64::from(profile.compute_slices()) * u64::from(MILLI_PER_GPU) / 7
            }
            Shape::Fractional { milli_gpu, .. } => u64::from(milli_gpu),
            Shape::WholeNodes { .. } | Shape::Cpu { .. } => 0,
        }
    }

    /// The CPU (milli-cores) and memory (MiB) the shape takes in all (whole nodes: none
    /// here, they take whatever their nodes have).
    pub fn cpu_and_memory(&self) -> (u32, u64) {
        match *self {
            Shape::WholeGpus {
                count,
                cpu_milli_per_gpu,
                memory_mib_per_gpu,
                ..
            } => (
                cpu_milli_per_gpu.saturating_mul(count),
                memory_mib_per_gpu.saturating_mul(u64::from(count)),
            ),
            Shape::Mig {
                cpu_milli,
                memory_mib,
                ..
            }
            | Shape::Fractional {
                cpu_milli,
                memory_mib,
                ..
            }
            | Shape::Cpu {
                cpu_milli,
                memory_mib,
            } => (cpu_milli, memory_mib),
            Shape::WholeNodes { .. } => (0, 0),
        }
    }

    /// Checks the shape makes sense on its own (not whether it fits).
    pub fn validate(&self) -> Result<(), InvalidRequest> {
        match *self {
            Shape::WholeGpus { count, models, .. } => {
                if count == 0 {
                    return Err(InvalidRequest::ZeroCount);
                }
                if models.is_empty() {
                    return Err(InvalidRequest::NoModels);
                }
            }
            Shape::WholeNodes { count, models, .. } => {
                if count == 0 {
                    return Err(InvalidRequest::ZeroCount);
                }
                if models.is_empty() {
                    return Err(InvalidRequest::NoModels);
                }
            }
            Shape::Mig { models, .. } => {
                if models.is_empty() {
                    return Err(InvalidRequest::NoModels);
                }
            }
            Shape::Fractional {
                milli_gpu, models, ..
            } => {
                if milli_gpu == 0 || milli_gpu > MILLI_PER_GPU {
                    return Err(InvalidRequest::MilliOutOfRange { milli_gpu });
                }
                if models.is_empty() {
                    return Err(InvalidRequest::NoModels);
                }
            }
            Shape::Cpu { .. } => {}
        }
        Ok(())
    }
}

/// One order to place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    pub tenant: TenantKey,
    pub class: Class,
    pub exclusive: Option<Exclusivity>,
    pub shape: Shape,
}

impl Request {
    /// An on-demand, non-exclusive request.
    pub fn new(tenant: TenantKey, shape: Shape) -> Request {
        Request {
            tenant,
            class: Class::OnDemand,
            exclusive: None,
            shape,
        }
    }

    pub fn with_class(mut self, class: Class) -> Request {
        self.class = class;
        self
    }

    pub fn with_exclusive(mut self, exclusive: Exclusivity) -> Request {
        self.exclusive = Some(exclusive);
        self
    }
}

/// Why a request is malformed (as opposed to not fitting).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    #[error("a request must ask for at least one unit")]
    ZeroCount,
    #[error("the request accepts no GPU model of this fleet")]
    NoModels,
    #[error("a fractional GPU must be 1..=1000 milli-GPUs, not {milli_gpu}")]
    MilliOutOfRange { milli_gpu: u32 },
}
