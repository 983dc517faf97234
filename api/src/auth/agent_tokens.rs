//! Verified agent tokens, remembered briefly: every agent posts a batch every few seconds,
//! and looking its token up each time cost a database round trip per batch on the ingest
//! path. A token verified against the database is trusted for [`TTL`] in this process.
//! Revoking any key in this process forgets them all, so a revocation is immediate on the
//! replica that made it and takes at most [`TTL`] on the others.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::Principal;

pub const TTL: Duration = Duration::from_secs(10);
/// Beyond this many tokens the expired ones are dropped (and all, if none had expired).
const CAPACITY: usize = 65_536;

/// SHA-256 of the presented token → its principal, and when it was verified.
type Verified = HashMap<[u8; 32], (Principal, Instant)>;

static VERIFIED: LazyLock<Mutex<Verified>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn key(presented: &str) -> [u8; 32] {
    Sha256::digest(presented.as_bytes()).into()
}

/// The principal of a token verified less than [`TTL`] ago.
pub fn recall(presented: &str) -> Option<Principal> {
    let map = VERIFIED.lock().unwrap_or_else(PoisonError::into_inner);
    map.get(&key(presented))
        .filter(|(_, at)| at.elapsed() < TTL)
        .map(|(p, _)| p.clone())
}

pub fn remember(presented: &str, principal: &Principal) {
    let mut map = VERIFIED.lock().unwrap_or_else(PoisonError::into_inner);
    if map.len() >= CAPACITY {
        map.retain(|_, (_, at)| at.elapsed() < TTL);
        if map.len() >= CAPACITY {
            map.clear();
        }
    }
    map.insert(key(presented), (principal.clone(), Instant::now()));
}

pub fn forget_all() {
    VERIFIED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}
