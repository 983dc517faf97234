//! neocloud-agent: runs on every GPU host, samples the GPUs (NVML, or a deterministic
//! simulated host), attributes every process to its allocation, integrates samples into
//! windows, appends each window to a crash-safe spool and ships it to the metering
//! pipeline (`POST /v1/ingest`, ingest wire format v1).
//!
//! Modules, one per concept:
//! - [`source`]: the [`source::GpuSource`] trait, NVML ([`source::nvml`]), XIDs from the
//!   kernel log ([`source::kmsg`]) and the simulator ([`source::sim`], with ground truth).
//! - [`attribution`]: pid → cgroup → allocation, labels from allow-listed environment.
//! - [`window`]: cycles → windows (exact integrals), and folding windows together.
//! - [`sampler`]: one sampling cycle end to end (what the benchmark measures).
//! - [`spool`]: the on-disk queue (fsync, checksums, quarantine, folding when full).
//! - [`shipper`]: the [`shipper::Shipper`] seam and its HTTP implementation, backoff.
//! - [`agent`]: the running agent ([`agent::run`]) and the in-process simulated agent
//!   the demo starts per node ([`agent::SimulatedAgent`]).
//! - [`metrics`]: `/metrics` and `/healthz`.
//! - [`failpoint`]: named crash points for the crash-safety tests (inert in production).
//!
//! This crate depends on `neocloud-schema` without its `db` feature: no database code.

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

pub mod agent;
pub mod attribution;
pub mod failpoint;
pub mod hardware;
pub mod metrics;
pub mod sampler;
pub mod shipper;
pub mod source;
pub mod spool;
pub mod window;

pub use agent::{AgentConfig, AgentError, RunReport, SimulatedAgent, run};
pub use source::{GpuSource, Snapshot};
