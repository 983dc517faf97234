//! The node's NATS credential over time. The server mints it valid for a limited time
//! (`exp` in its JWT; nats-server disconnects a user whose credential has expired), so the
//! agent keeps its credentials file fresh: once half its life has passed it fetches a new
//! one with the agent token (`GET /v1/agents/nats-credentials`) and replaces the file
//! atomically. Every connection and reconnection authenticates with the file as it is
//! then ([`file_auth`]). A node whose agent token was revoked (rotated, retired) gets no
//! new credential and is off NATS once its last one expires.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::{Auth, AuthError, ConnectOptions};
use data_encoding::BASE64URL_NOPAD;
use tokio::sync::watch;

use crate::shipper::{Backoff, HttpShipper, ShipperError};

/// The JWT and the seed of a `.creds` file.
pub fn parse(creds: &str) -> Option<(&str, &str)> {
    let after = |marker: &str| {
        let start = creds.find(marker)? + marker.len();
        let rest = creds[start..].trim_start_matches(['-', '\r', '\n']);
        rest.lines().next().map(str::trim).filter(|l| !l.is_empty())
    };
    Some((
        after("BEGIN NATS USER JWT")?,
        after("BEGIN USER NKEY SEED")?,
    ))
}

/// When a `.creds` file's JWT was issued and when it expires (Unix seconds); `None`
/// when it does not expire (or cannot be read).
pub fn lifetime(creds: &str) -> Option<(i64, i64)> {
    let (jwt, _) = parse(creds)?;
    let body = BASE64URL_NOPAD
        .decode(jwt.split('.').nth(1)?.as_bytes())
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&body).ok()?;
    Some((claims.get("iat")?.as_i64()?, claims.get("exp")?.as_i64()?))
}

/// Options that authenticate each connection attempt with the credentials file at
/// `path` as it is at that moment: its JWT, and the server's nonce signed with its seed.
pub fn file_auth(path: PathBuf) -> ConnectOptions {
    ConnectOptions::with_auth_callback(move |nonce| {
        let path = path.clone();
        async move {
            let creds = std::fs::read_to_string(&path)
                .map_err(|e| AuthError::new(format!("{}: {e}", path.display())))?;
            let (jwt, seed) = parse(&creds)
                .ok_or_else(|| AuthError::new(format!("{}: not a .creds file", path.display())))?;
            let key = nkeys::KeyPair::from_seed(seed).map_err(AuthError::new)?;
            let mut auth = Auth::new();
            auth.jwt = Some(jwt.to_owned());
            auth.signature = Some(key.sign(&nonce).map_err(AuthError::new)?);
            Ok(auth)
        }
    })
}

/// How long to wait before renewing a credential issued at `iat` that expires at `exp`,
/// at `now`: until half its life has passed (at once if it has).
pub fn renew_in((iat, exp): (i64, i64), now: i64) -> Duration {
    let half = iat.saturating_add(exp.saturating_sub(iat) / 2);
    Duration::from_secs(u64::try_from(half.saturating_sub(now)).unwrap_or(0))
}

/// Writes `creds` over the file at `path` (a new file renamed over it: a connection never
/// reads half of one). Owner-only on Unix: it holds a secret.
pub fn replace(path: &Path, creds: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("creds.new");
    std::fs::write(&tmp, creds)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
    }
    std::fs::rename(&tmp, path)
}

/// The least time between two renewals, whatever the credentials say.
const RENEWAL_GAP: Duration = Duration::from_secs(60);

/// Keeps the credentials file at `path` fresh until `stop`: renews it through `http`
/// when half its life has passed, retrying with backoff while the server does not answer
/// (a refused token is logged, and retried slowly: an operator may rotate it back).
pub async fn keep_fresh(http: HttpShipper, path: PathBuf, mut stop: watch::Receiver<bool>) {
    let mut backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(300), 2);
    loop {
        let now = chrono::Utc::now().timestamp();
        let wait = match std::fs::read_to_string(&path)
            .ok()
            .as_deref()
            .and_then(lifetime)
        {
            Some(life) => renew_in(life, now),
            None => {
                tracing::info!(path = %path.display(), "The NATS credential does not expire: not renewed.");
                return;
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let pause = match http.nats_credentials().await {
            Ok(Some(creds)) if lifetime(&creds).is_some() => match replace(&path, &creds) {
                Ok(()) => {
                    backoff.reset();
                    tracing::info!(path = %path.display(), "Renewed the NATS credential.");
                    // A credential already past half its life by this host's clock (a
                    // clock far ahead of the server's) would be renewed again at once.
                    RENEWAL_GAP
                }
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "Could not write the renewed NATS credential.");
                    backoff.next_delay()
                }
            },
            Ok(_) => {
                tracing::warn!("The server mints no expiring NATS credential: keeping this one.");
                return;
            }
            Err(e @ ShipperError::Unauthorized { .. }) => {
                tracing::error!(error = %e, "The server refused the agent token: the NATS credential will not be renewed.");
                Duration::from_secs(300)
            }
            Err(e) => {
                tracing::warn!(error = %e, "Could not renew the NATS credential; retrying.");
                backoff.next_delay()
            }
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(claims: &serde_json::Value) -> String {
        let body = BASE64URL_NOPAD.encode(claims.to_string().as_bytes());
        format!(
            "-----BEGIN NATS USER JWT-----\nhead.{body}.sig\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\n\
             -----BEGIN USER NKEY SEED-----\nSUAKEY\n------END USER NKEY SEED------\n"
        )
    }

    #[test]
    fn a_creds_file_gives_its_jwt_seed_and_lifetime() {
        let file = creds(&serde_json::json!({"iat": 1000, "exp": 87_400}));
        let (jwt, seed) = parse(&file).expect("parsed");
        assert!(jwt.starts_with("head.") && jwt.ends_with(".sig"));
        assert_eq!(seed, "SUAKEY");
        assert_eq!(lifetime(&file), Some((1000, 87_400)));
        assert_eq!(lifetime(&creds(&serde_json::json!({"iat": 1000}))), None);
        assert_eq!(parse("not a creds file"), None);
    }

    #[test]
    fn a_credential_is_renewed_once_half_its_life_has_passed() {
        assert_eq!(renew_in((0, 3600), 0), Duration::from_secs(1800));
        assert_eq!(renew_in((0, 3600), 1000), Duration::from_secs(800));
        assert_eq!(
            renew_in((0, 3600), 5000),
            Duration::ZERO,
            "expired: at once"
        );
    }
}
