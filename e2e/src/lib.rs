//! neocloud-e2e: journeys that run the built binaries as separate processes (as an operator
//! or a customer would) and talk to them over HTTP. The tests live in `tests/`; they need
//! the binaries under `target/<profile>/`, which `cargo test --workspace` builds.

use std::path::{Path, PathBuf};

/// `target/<profile>/<name>`, next to the running test's own `deps/` directory. Panics
/// with the build command when the binary is missing.
pub fn binary(name: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile_dir| profile_dir.join(name))
        .unwrap_or_default();
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p {package}` (cargo test --workspace does)",
        bin.display()
    );
    bin
}
