//! neocloud-e2e: journeys that run the built binaries as separate processes (as an operator
//! or a customer would) and talk to them over HTTP. The tests live in `tests/`; they need
//! `target/<profile>/neocloud`, which `cargo test --workspace` builds.
