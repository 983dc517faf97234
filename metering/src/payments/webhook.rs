//! Verifying a Stripe webhook (pure): the `Stripe-Signature` header is
//! `t=<unix time>,v1=<hex>[,v1=<hex>…][,v0=…]`; an event is genuine when one `v1` equals
//! HMAC-SHA256(secret, "<t>.<raw body>"), compared in constant time, and `t` is within the
//! tolerance of now (300 s) — so a replayed old delivery is refused too.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a signature's timestamp may be from now, in seconds.
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header")]
    Missing,
    #[error("the Stripe-Signature header has no timestamp or no v1 signature")]
    Malformed,
    #[error("the signature's timestamp is more than {TOLERANCE_SECONDS} s from now")]
    Stale,
    #[error("no v1 signature matches")]
    Mismatch,
}

/// Checks `header` against the raw `body` with the endpoint's `secret` at `now` (unix s).
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secret: &str,
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", hex_sig)) => {
                if let Ok(bytes) = hex::decode(hex_sig) {
                    candidates.push(bytes);
                }
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(SignatureError::Stale);
    }
    for candidate in candidates {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
            .map_err(|_| SignatureError::Malformed)?;
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        // `verify_slice` compares in constant time.
        if mac.verify_slice(&candidate).is_ok() {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch)
}

/// The header Stripe would send for `body` at `timestamp` (for tests and tools).
pub fn sign(body: &[u8], secret: &str, timestamp: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;

    #[test]
    fn a_genuine_signature_passes_and_anything_else_does_not() {
        let now = 1_790_000_000;
        let header = sign(BODY, SECRET, now);
        assert_eq!(verify(Some(&header), BODY, SECRET, now + 10), Ok(()));
        assert_eq!(
            verify(None, BODY, SECRET, now),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify(Some(&header), BODY, "whsec_other", now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(Some(&header), b"{\"id\":\"evt_2\"}", SECRET, now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(Some(&header), BODY, SECRET, now + TOLERANCE_SECONDS + 1),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify(Some("v1=abcd"), BODY, SECRET, now),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(Some(&format!("t={now}")), BODY, SECRET, now),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn any_of_several_v1_signatures_may_match() {
        let now = 1_790_000_000;
        let genuine = sign(BODY, SECRET, now);
        let v1 = genuine
            .split_once(",v1=")
            .map(|(_, v)| v)
            .unwrap_or_default();
        let header = format!("t={now},v1={},v1={v1},v0=deadbeef", "00".repeat(32));
        assert_eq!(verify(Some(&header), BODY, SECRET, now), Ok(()));
    }
}
