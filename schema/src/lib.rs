//! neocloud's shared vocabulary: the domain types every crate speaks (ids, money, GPU
//! models, MIG geometry, roles), the ingest v1 wire contract between agents and the
//! metering pipeline, and — behind the `db` feature — the sea-orm entities.
//!
//! Nothing here does I/O. Agents depend on this crate without `db`, so the wire types and
//! the domain vocabulary must never pull in database code.

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

pub mod agent_api;
pub mod clock;
pub mod gpu;
pub mod ids;
pub mod ingest;
pub mod mig;
pub mod money;
pub mod slug;
pub mod usage_stream;
pub mod vocabulary;

#[cfg(feature = "db")]
pub mod entity;
