//! Per-key rate limiting: a token bucket per API key (`limits.requests_per_second`
//! refilled continuously, up to `limits.burst`). A request over the limit is answered
//! `RATE_LIMITED` (HTTP 429) before anything runs. Buckets live in memory per replica;
//! idle buckets are dropped so the table stays bounded by the number of active keys.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use neocloud_schema::ids::ApiKeyId;

/// Buckets not touched for this long are forgotten (they would be full anyway).
const IDLE_SECONDS: f64 = 300.0;
/// Most keys tracked before idle ones are swept.
const SWEEP_AT: usize = 10_000;

#[derive(Debug)]
pub struct RateLimiter {
    rate_per_second: f64,
    burst: f64,
    buckets: Mutex<HashMap<ApiKeyId, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    pub fn new(rate_per_second: u32, burst: u32) -> RateLimiter {
        RateLimiter {
            rate_per_second: f64::from(rate_per_second),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `key`; `false` when the key is over its limit.
    pub fn allow(&self, key: ApiKeyId) -> bool {
        self.allow_n(key, 1)
    }

    /// Takes `n` tokens for `key` at once (a request making `n` mutations); `false`, and
    /// none taken, when the key has fewer left.
    pub fn allow_n(&self, key: ApiKeyId, n: usize) -> bool {
        self.allow_at(key, Instant::now(), n)
    }

    fn allow_at(&self, key: ApiKeyId, now: Instant, n: usize) -> bool {
        if self.rate_per_second <= 0.0 {
            return true;
        }
        // A poisoned lock only means another request panicked mid-update; the map is
        // still a valid set of buckets.
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= SWEEP_AT {
            buckets.retain(|_, b| now.duration_since(b.at).as_secs_f64() < IDLE_SECONDS);
        }
        let bucket = buckets.entry(key).or_insert(Bucket {
            tokens: self.burst,
            at: now,
        });
        let elapsed = now.duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate_per_second).min(self.burst);
        bucket.at = now;
        let cost = n as f64;
        if bucket.tokens >= cost {
            bucket.tokens -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_key_gets_its_burst_then_the_steady_rate() {
        let limiter = RateLimiter::new(10, 5);
        let key = ApiKeyId::new();
        let t0 = Instant::now();
        assert!((0..5).all(|_| limiter.allow_at(key, t0, 1)));
        assert!(!limiter.allow_at(key, t0, 1));
        // 100 ms at 10/s refills one token.
        assert!(limiter.allow_at(key, t0 + Duration::from_millis(100), 1));
        assert!(!limiter.allow_at(key, t0 + Duration::from_millis(100), 1));
    }

    #[test]
    fn keys_do_not_share_a_bucket() {
        let limiter = RateLimiter::new(1, 1);
        let t0 = Instant::now();
        let (a, b) = (ApiKeyId::new(), ApiKeyId::new());
        assert!(limiter.allow_at(a, t0, 1));
        assert!(!limiter.allow_at(a, t0, 1));
        assert!(limiter.allow_at(b, t0, 1));
    }

    #[test]
    fn a_request_of_many_mutations_takes_a_token_for_each() {
        let limiter = RateLimiter::new(1, 10);
        let key = ApiKeyId::new();
        let t0 = Instant::now();
        assert!(!limiter.allow_at(key, t0, 11));
        assert!(limiter.allow_at(key, t0, 10));
        assert!(!limiter.allow_at(key, t0, 1));
    }

    #[test]
    fn a_zero_rate_disables_limiting() {
        let limiter = RateLimiter::new(0, 1);
        let key = ApiKeyId::new();
        let t0 = Instant::now();
        assert!((0..1000).all(|_| limiter.allow_at(key, t0, 1)));
    }
}
