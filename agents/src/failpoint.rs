//! Named crash points for the crash-safety tests. When `NEOCLOUD_AGENT_FAILPOINT` names a
//! point, the agent prints `failpoint <name> reached` to stderr when it gets there and
//! stops in place, so a test can `kill -9` it at exactly that moment. Unset (always, in
//! production), a point costs one comparison.

use std::sync::OnceLock;

fn armed() -> Option<&'static str> {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| std::env::var("NEOCLOUD_AGENT_FAILPOINT").ok())
        .as_deref()
}

/// Stops the thread for ever if `name` is the armed failpoint.
pub fn hit(name: &str) {
    if armed() == Some(name) {
        eprintln!("failpoint {name} reached");
        loop {
            std::thread::park();
        }
    }
}

/// Whether `name` is armed (for points that change what is written before stopping).
pub fn is_armed(name: &str) -> bool {
    armed() == Some(name)
}
