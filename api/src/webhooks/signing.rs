//! Standard Webhooks signatures (**contract**), so receivers verify with the libraries
//! they already have: every delivery carries
//!
//! - `webhook-id`: the event's id, the same on every retry and redelivery;
//! - `webhook-timestamp`: seconds since the Unix epoch when this attempt was signed;
//! - `webhook-signature`: `v1,<base64 HMAC-SHA256>` over `<id>.<timestamp>.<body>`, keyed
//!   with the base64-decoded part of the `whsec_…` secret; during a rotation's grace, one
//!   such signature per valid secret, separated by spaces.
//!
//! The endpoint `setBudget(webhookUrl)` manages also carries, for one release, the header
//! budget receivers verified before: `Neocloud-Signature: t=<timestamp>,v1=<hex
//! HMAC-SHA256>` over `<timestamp>.<body>`, keyed with the whole secret string ([`legacy`]).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key a `whsec_<base64>` secret stands for. A secret that is not of that form
/// (none are minted so) is used as its bytes.
fn key_of(secret: &str) -> Vec<u8> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    STANDARD
        .decode(encoded)
        .unwrap_or_else(|_| secret.as_bytes().to_vec())
}

/// `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key_of(secret))
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// `t=<timestamp>,v1=<hex HMAC-SHA256(secret as bytes, "<timestamp>.<body>")>`.
pub fn legacy(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// The three headers of one delivery attempt, signed with every secret in `secrets`.
pub fn headers(
    secrets: &[&str],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> [(&'static str, String); 3] {
    let signatures: Vec<String> = secrets
        .iter()
        .map(|secret| sign(secret, id, timestamp, body))
        .collect();
    [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signatures.join(" ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries: this
    /// secret, id, timestamp and body sign to this signature.
    #[test]
    fn the_specification_example_signs_as_published() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1_614_265_330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_rotation_sends_one_signature_per_secret() {
        let [_, _, (_, signature)] = headers(&["whsec_AAAA", "whsec_BBBB"], "e", 1, b"{}");
        let parts: Vec<&str> = signature.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
        assert_ne!(parts[0], parts[1]);
    }
}
