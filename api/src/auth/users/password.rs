//! Passwords: argon2id with the crate's defaults (19 MiB, 2 passes, 1 lane: OWASP's
//! minimum), stored as PHC strings. Length is the only rule (NIST SP 800-63B: at least
//! [`MIN_LENGTH`], no composition rules, long passphrases welcome). Hashing is slow on
//! purpose, so it runs off the async workers.

use std::sync::LazyLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::RngCore;

use crate::error::{ApiError, ApiResult};

pub const MIN_LENGTH: usize = 12;
pub const MAX_LENGTH: usize = 128;

/// A password's length, in characters, is within bounds.
pub fn validate(password: &str) -> ApiResult<()> {
    let length = password.chars().count();
    if !(MIN_LENGTH..=MAX_LENGTH).contains(&length) {
        return Err(ApiError::invalid(
            "password",
            format!("between {MIN_LENGTH} and {MAX_LENGTH} characters"),
        ));
    }
    Ok(())
}

fn hash_now(password: &str) -> Result<String, argon2::password_hash::Error> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt)?;
    Ok(Argon2::default()
        .hash_password(password.as_bytes(), &salt)?
        .to_string())
}

fn verify_now(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash no password matches, verified when there is no user to check against, so an
/// unknown email costs as long as a wrong password.
static DECOY: LazyLock<String> = LazyLock::new(|| {
    let mut random = [0u8; 32];
    rand::rng().fill_bytes(&mut random);
    hash_now(&hex::encode(random)).unwrap_or_default()
});

fn internal(message: String) -> ApiError {
    ApiError::Internal { message }
}

/// The PHC string of a new password.
pub async fn hash(password: &str) -> ApiResult<String> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || hash_now(&password))
        .await
        .map_err(|err| internal(format!("password hashing stopped: {err}")))?
        .map_err(|err| internal(format!("password hashing failed: {err}")))
}

/// Whether `password` matches `phc`; with `None`, checks the decoy and answers false.
pub async fn verify(password: &str, phc: Option<&str>) -> bool {
    let password = password.to_owned();
    let phc = phc.map(str::to_owned);
    tokio::task::spawn_blocking(move || match phc {
        Some(phc) => verify_now(&password, &phc),
        None => {
            verify_now(&password, &DECOY);
            false
        }
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let phc = hash_now("correct horse battery").expect("hash");
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(verify_now("correct horse battery", &phc));
        assert!(!verify_now("correct horse batterz", &phc));
        assert!(!verify_now("correct horse battery", "not a hash"));
        assert_ne!(
            phc,
            hash_now("correct horse battery").expect("hash"),
            "salted"
        );
    }

    #[test]
    fn lengths_are_bounded_in_characters() {
        assert!(validate(&"é".repeat(MIN_LENGTH)).is_ok());
        assert!(validate(&"a".repeat(MIN_LENGTH - 1)).is_err());
        assert!(validate(&"a".repeat(MAX_LENGTH + 1)).is_err());
    }
}
