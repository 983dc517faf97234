//! Single sign-on to the operator console through the operators' identity provider
//! (OpenID Connect, authorization code flow with PKCE). `start` records a sign-in in
//! flight and names where to send the browser; `finish` takes the provider's answer back,
//! checks the ID token (`provider`), decides whether the person is an operator (an email
//! the settings list, verified by the provider, or a group they list) and returns the
//! principal it acts as: an operator key of the person's own, made at the first sign-in
//! (`operator_identities`) and revocable like any key, which then ends its sessions and
//! refuses its sign-ins. `back_channel_logout` ends the sessions a sign-out at the
//! provider names.

pub mod provider;
pub(crate) mod store;

pub use provider::Provider;

use base64::Engine;
use chrono::{Duration, Utc};
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sea_orm::DatabaseConnection;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::keys::hash_secret;
use super::sessions::store::{self as sessions_store, LoggedOut};
use super::{Principal, mint};
use crate::audit;
use crate::error::{ApiError, ApiResult};
use crate::settings::OidcSettings;

/// How long a sign-in may take at the provider.
pub const LOGIN_LIFETIME: Duration = Duration::minutes(10);

/// A sign-in started: where to send the browser, and the state to bind to it.
pub struct Started {
    pub redirect: String,
    pub state: String,
}

fn random() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

pub async fn start(db: &DatabaseConnection, provider: &Provider) -> ApiResult<Started> {
    let (state, nonce, verifier) = (random(), random(), random());
    let now = Utc::now();
    store::forget_logins_before(db, now - LOGIN_LIFETIME).await?;
    store::insert_login(db, &hash_secret(&state), &nonce, &verifier, now).await?;
    let redirect = provider
        .authorization_url(&state, &nonce, &challenge(&verifier))
        .await?;
    Ok(Started { redirect, state })
}

fn expired() -> ApiError {
    ApiError::Unauthenticated {
        message: "this sign-in has expired or was already used: start again".to_owned(),
    }
}

/// A sign-in the provider vouched for: the operator's principal, and the provider's
/// session (`sid`) where the ID token names one.
pub struct SignedIn {
    pub principal: Principal,
    pub sid: Option<String>,
}

/// The most characters of a provider's session id that are kept.
const MAX_SID: usize = 255;

/// The provider's answer: the operator it vouched for.
pub async fn finish(
    db: &DatabaseConnection,
    provider: &Provider,
    state: &str,
    code: &str,
) -> ApiResult<SignedIn> {
    let login = store::take_login(db, &hash_secret(state))
        .await?
        .filter(|login| Utc::now() - login.created_at < LOGIN_LIFETIME)
        .ok_or_else(expired)?;
    let id_token = provider.exchange(code, &login.code_verifier).await?;
    let claims = provider.verify(&id_token, &login.nonce).await?;
    let email = operator_email(provider.settings(), &claims)?;
    let issuer = provider.settings().issuer.clone().unwrap_or_default();
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let principal = acting_operator(db, &issuer, subject, &email).await?;
    let sid = claims
        .get("sid")
        .and_then(Value::as_str)
        .filter(|sid| !sid.is_empty() && sid.len() <= MAX_SID)
        .map(str::to_owned);
    Ok(SignedIn { principal, sid })
}

/// A back-channel logout (OpenID Connect Back-Channel Logout 1.0): the provider posts a
/// logout token when a person signs out there. Its token checked (`provider`), the
/// console sessions it names end: those of its `sid`, or without one every session of
/// the identity `sub` that began before the token was issued. Audited as
/// `session.back_channel_logout` with how many; the number ended.
pub async fn back_channel_logout(
    db: &DatabaseConnection,
    provider: &Provider,
    logout_token: &str,
) -> ApiResult<usize> {
    let claims = provider.verify_logout(logout_token).await?;
    let issuer = provider.settings().issuer.clone().unwrap_or_default();
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let named = match (&claims.sid, &claims.sub) {
        (Some(sid), _) => Some(LoggedOut::Session(sid)),
        (None, Some(sub)) => store::find_identity(&txn, &issuer, sub)
            .await?
            .map(|identity| LoggedOut::Key(identity.api_key_id)),
        (None, None) => None,
    };
    let ended = match named {
        Some(named) => {
            // A token's issue time has whole seconds, and the provider's clock may lag.
            let before = claims.issued_at + provider::CLOCK_ALLOWANCE;
            sessions_store::end_logged_out(&txn, named, before, now).await?
        }
        None => Vec::new(),
    };
    audit::record_as(
        &txn,
        None,
        audit::Entry {
            tenant_id: None,
            action: "session.back_channel_logout",
            object_type: "web_session",
            object_id: claims
                .sid
                .clone()
                .or(claims.sub.clone())
                .unwrap_or_default(),
            before: None,
            after: Some(
                json!({"issuer": issuer, "sub": claims.sub, "sid": claims.sid,
                "ended": ended}),
            ),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(ended.len())
}

/// The person's email, if the claims make them an operator; `FORBIDDEN` otherwise.
fn operator_email(settings: &OidcSettings, claims: &Map<String, Value>) -> ApiResult<String> {
    let email = claims
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_lowercase();
    let verified = claims.get("email_verified").and_then(Value::as_bool) != Some(false);
    let by_email = verified
        && !email.is_empty()
        && OidcSettings::list(&settings.operator_emails).contains(&email);
    let groups_claim = settings.groups_claim.as_deref().unwrap_or("groups");
    let groups = OidcSettings::list(&settings.operator_groups);
    let by_group = claims
        .get(groups_claim)
        .and_then(Value::as_array)
        .is_some_and(|held| {
            held.iter()
                .filter_map(Value::as_str)
                .any(|group| groups.contains(&group.to_lowercase()))
        });
    if by_email || by_group {
        Ok(email)
    } else {
        Err(ApiError::forbidden(format!(
            "{} is not an operator of this deployment",
            if email.is_empty() {
                "this account"
            } else {
                &email
            }
        )))
    }
}

/// The operator key of this identity, made at its first sign-in (audited); refused once
/// revoked.
async fn acting_operator(
    db: &DatabaseConnection,
    issuer: &str,
    subject: &str,
    email: &str,
) -> ApiResult<Principal> {
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let principal = match store::find_identity(&txn, issuer, subject).await? {
        Some(identity) => {
            let key = super::store::find(&txn, identity.api_key_id).await?;
            let key = key
                .filter(|k| k.revoked_at.is_none())
                .ok_or_else(|| ApiError::forbidden("this operator's access has been revoked"))?;
            store::signed_in(&txn, identity, email, now).await?;
            Principal::from_row(&key)
        }
        None => {
            let label = format!("console sign-in {email}");
            let key = mint(&txn, Role::Operator, None, None, &label, None).await?;
            let principal = Principal::from_row(&key.key);
            let identity =
                store::insert_identity(&txn, issuer, subject, email, key.key.id, now).await?;
            audit::record(
                &txn,
                &principal,
                audit::Entry {
                    tenant_id: None,
                    action: "operator_identity.create",
                    object_type: "operator_identity",
                    object_id: identity.id.to_string(),
                    before: None,
                    after: Some(json!({"issuer": issuer, "subject": subject, "email": email})),
                },
            )
            .await?;
            principal
        }
    };
    txn.commit().await?;
    Ok(principal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(emails: &str, groups: &str) -> OidcSettings {
        OidcSettings {
            operator_emails: emails.to_owned(),
            operator_groups: groups.to_owned(),
            ..OidcSettings::default()
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn operators_are_listed_emails_verified_or_members_of_listed_groups() {
        let s = settings("Ops@Example.com, root@example.com", "neocloud-operators");
        let ok = |c: Value| operator_email(&s, &claims(c)).is_ok();
        assert!(ok(json!({"email": "ops@example.com"})));
        assert!(ok(
            json!({"email": "OPS@example.com", "email_verified": true})
        ));
        assert!(!ok(
            json!({"email": "ops@example.com", "email_verified": false})
        ));
        assert!(!ok(json!({"email": "eve@example.com"})));
        assert!(!ok(json!({})));
        assert!(ok(
            json!({"email": "eve@example.com", "groups": ["staff", "Neocloud-Operators"]})
        ));
        assert!(!ok(
            json!({"email": "eve@example.com", "groups": "neocloud-operators"})
        ));
        let custom = OidcSettings {
            groups_claim: Some("roles".into()),
            ..settings("", "admin")
        };
        assert!(operator_email(&custom, &claims(json!({"roles": ["admin"]}))).is_ok());
        assert!(operator_email(&custom, &claims(json!({"groups": ["admin"]}))).is_err());
    }

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
