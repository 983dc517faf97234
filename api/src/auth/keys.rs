//! The key format: `nck_<prefix>_<secret>` (agent tokens `nca_…`). The prefix (48 random
//! bits) finds the row; the secret (192 random bits) is never stored, only its SHA-256.
//! SHA-256 without a salt or stretching is right here: the secret is random and long, so
//! there is nothing for a dictionary to guess.

use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const PREFIX_BYTES: usize = 6;
const SECRET_BYTES: usize = 24;
// Keys must carry at least 128 random bits.
const _: () = assert!(SECRET_BYTES * 8 >= 128);

fn kind(role: Role) -> &'static str {
    match role {
        Role::Agent => "nca",
        _ => "nck",
    }
}

/// SHA-256 of the secret, hex-encoded.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A freshly generated key.
#[derive(Debug)]
pub struct GeneratedKey {
    pub prefix: String,
    pub secret_hash: String,
    /// The whole key, to show once.
    pub secret: String,
}

impl GeneratedKey {
    pub fn new(role: Role) -> Self {
        let mut rng = rand::rng();
        let mut prefix = [0u8; PREFIX_BYTES];
        let mut secret = [0u8; SECRET_BYTES];
        rng.fill_bytes(&mut prefix);
        rng.fill_bytes(&mut secret);
        let prefix = hex::encode(prefix);
        let secret_part = hex::encode(secret);
        GeneratedKey {
            secret_hash: hash_secret(&secret_part),
            secret: format!("{}_{prefix}_{secret_part}", kind(role)),
            prefix,
        }
    }
}

/// A key as presented by a client, split into its parts.
#[derive(Debug)]
pub struct ParsedKey {
    pub prefix: String,
    secret: String,
}

impl ParsedKey {
    pub fn parse(presented: &str) -> Option<ParsedKey> {
        let mut parts = presented.trim().splitn(3, '_');
        let kind = parts.next()?;
        let prefix = parts.next()?;
        let secret = parts.next()?;
        let hex_of = |s: &str, bytes: usize| {
            s.len() == bytes * 2 && s.bytes().all(|b| b.is_ascii_hexdigit())
        };
        if !matches!(kind, "nck" | "nca")
            || !hex_of(prefix, PREFIX_BYTES)
            || !hex_of(secret, SECRET_BYTES)
        {
            return None;
        }
        Some(ParsedKey {
            prefix: prefix.to_ascii_lowercase(),
            secret: secret.to_ascii_lowercase(),
        })
    }

    /// Constant-time comparison of this secret's hash with a stored one.
    pub fn matches_hash(&self, stored_hash: &str) -> bool {
        let presented = hash_secret(&self.secret);
        presented.as_bytes().ct_eq(stored_hash.as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_parses_and_matches_only_its_own_hash() {
        let key = GeneratedKey::new(Role::TenantAdmin);
        assert!(key.secret.starts_with("nck_"));
        let parsed = ParsedKey::parse(&key.secret).expect("parses");
        assert_eq!(parsed.prefix, key.prefix);
        assert!(parsed.matches_hash(&key.secret_hash));
        let other = GeneratedKey::new(Role::TenantAdmin);
        assert!(!parsed.matches_hash(&other.secret_hash));
    }

    #[test]
    fn keys_carry_at_least_128_random_bits_and_never_repeat() {
        let a = GeneratedKey::new(Role::Operator);
        let secret_hex = a.secret.rsplit('_').next().expect("secret part");
        assert!(secret_hex.len() * 4 >= 128);
        let b = GeneratedKey::new(Role::Operator);
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.prefix, b.prefix);
    }

    #[test]
    fn agent_tokens_are_recognisable() {
        assert!(GeneratedKey::new(Role::Agent).secret.starts_with("nca_"));
    }

    #[test]
    fn malformed_keys_do_not_parse() {
        for bad in [
            "",
            "nck_",
            "nck_zzzzzzzzzzzz_00",
            "xyz_000000000000_000000000000000000000000000000000000000000000000",
            "nck_not_a_real_key_000000000000",
        ] {
            assert!(ParsedKey::parse(bad).is_none(), "{bad}");
        }
    }
}
