//! neocloud-metering: the metering pipeline. `ingest` takes agent batches exactly once
//! (batch ids kept for ever, in the same transaction as their effects; a device's usage
//! counted at most once per second), attributes device and process samples to
//! allocations by time and folds them into minute buckets; `health` turns XID and ECC
//! events into GPU health transitions; `usage` answers usage queries; `rating` prices a
//! quantity by a rate into an exact charge with its trace.
//!
//! `invoicing` keeps each tenant's open period as a draft rated on read, and finalizes
//! it into an immutable, numbered invoice.

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

pub mod budgets;
pub mod coverage;
pub mod credit_notes;
pub mod error;
pub mod events;
pub mod exchange;
pub mod group_commit;
pub mod health;
pub mod ingest;
pub mod invoicing;
pub mod ledger;
pub mod meters;
pub mod parties;
pub mod payments;
pub mod payouts;
mod pg;
pub mod plans;
pub mod rating;
pub mod reliability;
pub mod statements;
pub mod tax;
pub mod usage;

pub use error::MeteringError;
