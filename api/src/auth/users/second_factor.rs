//! A user's second factor: a TOTP authenticator (`totp`) the user sets up and confirms
//! with a first code, plus ten single-use recovery codes shown once. Once on, signing in
//! with the password also needs a current code (or a recovery code); a wrong one counts
//! as a wrong password. The user turns it off with a code; a tenant admin who may manage
//! the user's role (for a provider's user, the provider) or an operator resets it for a
//! lost phone. A tenant, or a provider, may require one of every user: a user without one
//! then signs in to a session that may only set one up. Operators sign in through their
//! identity provider, which brings its own.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::portal_user;
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sea_orm::{ActiveValue::Set, DatabaseConnection};
use serde_json::json;
use uuid::Uuid;

use super::{Owner, store, totp};
use crate::audit;
use crate::auth::Principal;
use crate::auth::keys::hash_secret;
use crate::error::{ApiError, ApiResult};

/// The issuer authenticator apps list the account under.
pub const ISSUER: &str = "neocloud";
const RECOVERY_CODES: usize = 10;

/// A secret being set up: what the authenticator app needs.
#[derive(Debug)]
pub struct Setup {
    pub secret: String,
    pub uri: String,
    /// `uri` as a QR code (SVG).
    pub qr_code_svg: String,
}

/// What a code accepted at sign-in changes: the step it used, or the recovery codes left.
#[derive(Debug, Default)]
pub(super) struct Accepted {
    last_step: Option<i64>,
    recovery_codes: Option<serde_json::Value>,
}

impl Accepted {
    pub(super) fn apply(self, user: &mut portal_user::ActiveModel) {
        if let Some(step) = self.last_step {
            user.totp_last_step = Set(Some(step));
        }
        if let Some(codes) = self.recovery_codes {
            user.recovery_codes = Set(Some(codes));
        }
    }
}

/// Why a sign-in's second factor did not pass.
pub(super) enum Refused {
    /// None was sent (the password was right).
    Missing,
    /// One was sent and is wrong, used or expired.
    Wrong,
}

/// The second-factor check of a sign-in whose password matched: nothing to check when
/// the user has none.
pub(super) fn check(
    user: &portal_user::Model,
    code: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Accepted, Refused> {
    let Some(secret) = user.totp_secret.as_deref() else {
        return Ok(Accepted::default());
    };
    let code = code
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .ok_or(Refused::Missing)?;
    if let Some(step) = totp::matching_step(secret, code, now, user.totp_last_step) {
        return Ok(Accepted {
            last_step: Some(step),
            recovery_codes: None,
        });
    }
    let left = spend_recovery_code(user, code).ok_or(Refused::Wrong)?;
    Ok(Accepted {
        last_step: None,
        recovery_codes: Some(left),
    })
}

/// The user's recovery codes without `presented`, if it is one of them.
fn spend_recovery_code(user: &portal_user::Model, presented: &str) -> Option<serde_json::Value> {
    let hashes: Vec<String> = serde_json::from_value(user.recovery_codes.clone()?).ok()?;
    let wanted = hash_secret(&normalise_recovery(presented));
    let i = hashes.iter().position(|h| *h == wanted)?;
    let mut left = hashes;
    left.remove(i);
    Some(json!(left))
}

/// A recovery code as stored: lower-case hex without separators.
fn normalise_recovery(code: &str) -> String {
    code.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Ten new recovery codes (`1a2b-3c4d-5e6f-7a8b`, 64 bits each) and their stored hashes.
fn recovery_codes() -> (Vec<String>, serde_json::Value) {
    let codes: Vec<String> = (0..RECOVERY_CODES)
        .map(|_| {
            let mut bytes = [0u8; 8];
            rand::rng().fill_bytes(&mut bytes);
            let hex = hex::encode(bytes);
            format!(
                "{}-{}-{}-{}",
                &hex[0..4],
                &hex[4..8],
                &hex[8..12],
                &hex[12..16]
            )
        })
        .collect();
    let hashes: Vec<String> = codes
        .iter()
        .map(|c| hash_secret(&normalise_recovery(c)))
        .collect();
    (codes, json!(hashes))
}

/// The portal user the caller signed in as: only people set up their own second factor.
async fn own_user(db: &DatabaseConnection, actor: &Principal) -> ApiResult<portal_user::Model> {
    store::by_key(db, actor.key_id)
        .await?
        .filter(|u| u.disabled_at.is_none())
        .ok_or_else(|| {
            ApiError::forbidden("only a portal user signed in with a password has a second factor")
        })
}

/// `startSecondFactor`: a new secret for the caller, pending until a code confirms it.
pub async fn start(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Setup> {
    let user = own_user(db, actor).await?;
    if user.totp_secret.is_some() {
        return Err(ApiError::InvalidState {
            message: "the second factor is already on; turn it off first".into(),
        });
    }
    let secret = totp::new_secret();
    let uri = totp::uri(&secret, ISSUER, &user.email);
    let pending = secret.clone();
    store::save(db, user, |u| u.totp_pending_secret = Set(Some(pending))).await?;
    let qr_code_svg = totp::qr_code_svg(&uri).map_err(|e| ApiError::Internal {
        message: format!("the secret's QR code: {e}"),
    })?;
    Ok(Setup {
        secret,
        uri,
        qr_code_svg,
    })
}

/// `confirmSecondFactor(code)`: a current code of the pending secret turns it on; the
/// recovery codes are returned, once.
pub async fn confirm(
    db: &DatabaseConnection,
    actor: &Principal,
    code: &str,
    now: DateTime<Utc>,
) -> ApiResult<Vec<String>> {
    let user = own_user(db, actor).await?;
    let pending = user
        .totp_pending_secret
        .clone()
        .ok_or_else(|| ApiError::InvalidState {
            message: "no second factor is being set up: start it first".into(),
        })?;
    let step = totp::matching_step(&pending, code, now, None)
        .ok_or_else(|| ApiError::invalid("code", "not a current code of the authenticator app"))?;
    let (codes, hashes) = recovery_codes();
    let txn = crate::db::begin_write(db).await?;
    let user = store::save(&txn, user, |u| {
        u.totp_secret = Set(Some(pending));
        u.totp_pending_secret = Set(None);
        u.totp_enabled_at = Set(Some(now));
        u.totp_last_step = Set(Some(step));
        u.recovery_codes = Set(Some(hashes));
    })
    .await?;
    record(&txn, actor, &user, "portal_user.second_factor_on").await?;
    txn.commit().await?;
    Ok(codes)
}

/// `disableSecondFactor(code)`: the caller turns its own off with a current or recovery
/// code.
pub async fn disable(
    db: &DatabaseConnection,
    actor: &Principal,
    code: &str,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let user = own_user(db, actor).await?;
    if user.totp_secret.is_none() {
        return Ok(());
    }
    if required_by(db, super::owner_of(&user)?).await? {
        return Err(ApiError::InvalidState {
            message: "your organisation requires a second factor: it stays on".into(),
        });
    }
    if check(&user, Some(code), now).is_err() {
        return Err(ApiError::invalid(
            "code",
            "not a current code or an unused recovery code",
        ));
    }
    turn_off(db, actor, user, "portal_user.second_factor_off").await?;
    Ok(())
}

/// Whether `owner` (a tenant or a provider) requires a second factor of every user.
async fn required_by(db: &DatabaseConnection, owner: Owner) -> ApiResult<bool> {
    Ok(match owner {
        Owner::Tenant(id) => crate::tenancy::store::find(db, id)
            .await?
            .is_some_and(|t| t.second_factor_required),
        Owner::Provider(id) => crate::providers::store::find(db, id)
            .await?
            .is_some_and(|p| p.second_factor_required),
    })
}

/// Whether a session of `actor`, signed in as user `user` (none: with a key or through
/// the identity provider), may only set up a second factor: the user has none and its
/// tenant or provider requires one. Asked on every request of a session, so it reads the
/// user by its id and the owner only when the user has none.
pub async fn setup_required(
    db: &DatabaseConnection,
    actor: &Principal,
    user: Option<Uuid>,
) -> ApiResult<bool> {
    let owner = match (actor.tenant_id, actor.provider_id) {
        (Some(tenant), _) => Owner::Tenant(tenant),
        (None, Some(provider)) => Owner::Provider(provider),
        (None, None) => return Ok(false),
    };
    let Some(user) = user else {
        return Ok(false);
    };
    match store::find_owned(db, user, owner).await? {
        Some(user) if user.totp_secret.is_none() => required_by(db, owner).await,
        _ => Ok(false),
    }
}

/// `requireSecondFactor(required)`: whether every user of `owner` must have a second
/// factor (for a tenant: its admins and operators; for a provider: the provider and
/// operators). A user turning it on has one already, so as not to lock itself into
/// setting one up. Audited as `tenant.second_factor_required` or
/// `provider.second_factor_required`.
pub async fn require(
    db: &DatabaseConnection,
    actor: &Principal,
    owner: Owner,
    required: bool,
) -> ApiResult<()> {
    let allowed = match owner {
        Owner::Tenant(_) => matches!(actor.role, Role::Operator | Role::TenantAdmin),
        Owner::Provider(_) => matches!(actor.role, Role::Operator | Role::Provider),
    };
    if !allowed {
        return Err(ApiError::forbidden(
            "what signing in requires is set by tenant admins, providers and operators",
        ));
    }
    if required
        && store::by_key(db, actor.key_id)
            .await?
            .is_some_and(|u| u.totp_secret.is_none())
    {
        return Err(ApiError::InvalidState {
            message: "turn on your own second factor first".into(),
        });
    }
    let txn = crate::db::begin_write(db).await?;
    let (entry, was) = set_required(&txn, owner, required).await?;
    let entry = audit::Entry {
        before: Some(json!({"required": was})),
        after: Some(json!({"required": required})),
        ..entry
    };
    audit::record(&txn, actor, entry).await?;
    txn.commit().await?;
    Ok(())
}

/// Sets `owner`'s requirement; the audit entry's subject and the requirement before.
async fn set_required<C: sea_orm::ConnectionTrait>(
    conn: &C,
    owner: Owner,
    required: bool,
) -> ApiResult<(audit::Entry, bool)> {
    let (tenant_id, action, object_type, object_id, was) = match owner {
        Owner::Tenant(id) => {
            let found = crate::tenancy::store::find(conn, id)
                .await?
                .ok_or_else(|| ApiError::not_found("tenant"))?;
            crate::tenancy::store::set_second_factor_required(conn, &found, required).await?;
            let was = found.second_factor_required;
            (
                Some(id),
                "tenant.second_factor_required",
                "tenant",
                id.to_string(),
                was,
            )
        }
        Owner::Provider(id) => {
            let found = crate::providers::store::find(conn, id)
                .await?
                .ok_or_else(|| ApiError::not_found("provider"))?;
            crate::providers::store::set_second_factor_required(conn, &found, required).await?;
            let was = found.second_factor_required;
            (
                None,
                "provider.second_factor_required",
                "provider",
                id.to_string(),
                was,
            )
        }
    };
    let entry = audit::Entry {
        tenant_id,
        action,
        object_type,
        object_id,
        before: None,
        after: None,
    };
    Ok((entry, was))
}

/// `resetSecondFactor(userId)`: an admin (or operator) who may manage the user's role
/// turns it off, for a lost phone; the user sets it up again.
pub async fn reset(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
    owner: Owner,
) -> ApiResult<portal_user::Model> {
    let user = super::managed_user(db, actor, id, owner, "reset the second factor of").await?;
    turn_off(db, actor, user, "portal_user.second_factor_reset").await
}

async fn turn_off(
    db: &DatabaseConnection,
    actor: &Principal,
    user: portal_user::Model,
    action: &'static str,
) -> ApiResult<portal_user::Model> {
    let txn = crate::db::begin_write(db).await?;
    let user = store::save(&txn, user, |u| {
        u.totp_secret = Set(None);
        u.totp_pending_secret = Set(None);
        u.totp_enabled_at = Set(None);
        u.totp_last_step = Set(None);
        u.recovery_codes = Set(None);
    })
    .await?;
    record(&txn, actor, &user, action).await?;
    txn.commit().await?;
    Ok(user)
}

async fn record<C: sea_orm::ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    user: &portal_user::Model,
    action: &'static str,
) -> ApiResult<()> {
    let after = json!({"email": user.email});
    super::record(conn, Some(actor), user, action, None, after).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use neocloud_schema::ids::TenantId;

    #[test]
    fn a_recovery_code_works_once_whatever_its_dashes_and_case() {
        let (codes, hashes) = recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        let user = portal_user::Model {
            id: Uuid::new_v4(),
            tenant_id: Some(TenantId::new()),
            provider_id: None,
            email: "ada@example.com".into(),
            role: neocloud_schema::vocabulary::Role::TenantMember,
            api_key_id: neocloud_schema::ids::ApiKeyId::new(),
            password_hash: None,
            invitation_hash: None,
            invitation_expires_at: None,
            failed_sign_ins: 0,
            locked_until: None,
            created_at: Utc::now(),
            last_sign_in_at: None,
            disabled_at: None,
            totp_secret: Some(totp::new_secret()),
            totp_pending_secret: None,
            totp_enabled_at: None,
            totp_last_step: None,
            recovery_codes: Some(hashes),
        };
        let typed = codes[3].to_uppercase().replace('-', " ");
        let left = spend_recovery_code(&user, &typed).expect("a recovery code");
        assert_eq!(left.as_array().map(Vec::len), Some(RECOVERY_CODES - 1));
        let spent = portal_user::Model {
            recovery_codes: Some(left),
            ..user
        };
        assert!(
            spend_recovery_code(&spent, &codes[3]).is_none(),
            "used once"
        );
        assert!(matches!(
            check(&spent, None, Utc::now()),
            Err(Refused::Missing)
        ));
        assert!(matches!(
            check(&spent, Some("000000x"), Utc::now()),
            Err(Refused::Wrong)
        ));
    }
}
