//! neocloud-api: the server operators run — the GraphQL API for tenants and operators,
//! authentication, the catalog, the fleet registry, the audit log — and the `neocloud`
//! binary (`serve`, `demo`, `migrate`, `admin`).
//!
//! Handlers are thin: `graphql/` and `http/` parse and map; the domain modules (`auth`,
//! `tenancy`, `fleet`, `catalog`, `audit`) hold the rules and own their SQL in `store.rs`.
// The merged GraphQL query and mutation types nest deeper than the default limit.
#![recursion_limit = "256"]
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

/// mimalloc for every binary of the server (the `neocloud` command, examples, tests): a
/// request allocates and frees many small values (parsed JSON, rows, answers), and the
/// system allocator spent about a sixth of the server's CPU on them under load
/// (`docs/benchmarks.md`, "Usage events").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod access;
pub mod audit;
pub mod auth;
pub mod budgets;
pub mod catalog;
pub mod db;
pub mod demo;
pub mod error;
pub mod fleet;
pub mod graphql;
pub mod http;
pub mod invoicing;
pub mod ledger;
pub mod mail;
pub mod meters;
pub mod metrics;
pub mod models;
pub mod nats;
pub mod ordering;
pub mod outbound;
pub mod pagination;
pub mod payments;
pub mod plans;
pub mod providers;
pub mod settings;
pub mod startup;
pub mod telemetry;
pub mod tenancy;
pub mod volumes;
pub mod webhooks;
