//! neocloud-scheduler: the topology-aware placement engine. Pure: no I/O, no database,
//! deterministic for the same input. The api loads fleet state into a [`Fleet`], asks
//! [`Fleet::place`] for a [`Placement`], commits it in its own transaction and then
//! [`Fleet::commit`]s it here; [`Fleet::release`], [`Fleet::set_gpu_health`],
//! [`Fleet::set_node_state`] and [`Fleet::set_node_reliability`] keep the in-memory state
//! current, updating the per-domain aggregates incrementally. [`Fleet::available`] answers catalog capacity questions.
//!
//! The `neocloud-sched` binary replays workload traces (`trace`, `replay`) against the
//! policies of `policy`. Only the binary reads files; `trace` parses from readers.
//!
//! ```
//! use neocloud_scheduler::*;
//! let gpu = GpuSpec { model: "H100".into(), memory_mib: 81920, health: Health::Ok, mode: GpuMode::Whole };
//! let node = NodeSpec {
//!     name: "n1".into(), region: "r".into(), zone: "z".into(), rack: "k".into(),
//!     nvlink_domain: "n1".into(), cpu_milli: 64_000, memory_mib: 1 << 20,
//!     state: NodeState::Active, gpus: vec![gpu; 8], reliability: None,
//! };
//! let mut fleet = Fleet::new(vec![node]).unwrap();
//! let h100 = fleet.model_set(["H100"]);
//! let req = Request::new(TenantKey(1), Shape::WholeGpus {
//!     count: 2, models: h100, topology: Topology::required(TopologyLevel::Node),
//!     cpu_milli_per_gpu: 8_000, memory_mib_per_gpu: 65_536,
//! });
//! let placement = fleet.place(&req).unwrap();
//! fleet.commit(AllocationKey(7), &placement).unwrap();
//! assert_eq!(fleet.available(&req.shape), 3);
//! fleet.release(AllocationKey(7)).unwrap();
//! ```

// No panics on values from outside, no `as` cast where a checked conversion exists, and
// no function longer than `too-many-lines-threshold` (clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless,
    clippy::too_many_lines
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_lossless,
        clippy::too_many_lines
    )
)]

pub mod aggregate;
pub mod capacity;
pub mod fleet;
pub mod fractional;
pub mod ids;
pub mod mig;
pub mod optimum;
pub mod placement;
pub mod policy;
pub mod preemption;
pub mod replay;
pub mod request;
pub mod synthetic;
pub mod trace;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod testkit;

pub use fleet::{
    Allocation, CommitError, Fleet, FleetError, GpuMode, GpuSpec, Health, NodeFree, NodeSpec,
    NodeState, Tuning,
};
pub use fractional::{MixShape, ShapeMix};
pub use ids::{AllocationKey, GpuRef, ModelId, ModelSet, NodeId, TenantKey};
pub use placement::{GpuGrant, GpuShare, NoFit, NodePlacement, Placement};
pub use policy::{Policy, PolicyKind, UnknownPolicy};
pub use request::{Class, Exclusivity, InvalidRequest, Request, Shape, Topology, TopologyLevel};
