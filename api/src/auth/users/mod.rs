//! Users: people who sign in with an email and a password, each belonging to a tenant
//! (the portal) or to a hardware provider (the provider console): its [`Owner`]. A tenant
//! admin invites a tenant's people with a role, a provider its own people (role
//! `provider`), an operator either; the invitation is a one-time token
//! (shown once, valid [`INVITATION_LIFETIME`]) with which the person sets a password.
//! Each user acts through an API key of its own whose secret is thrown away at birth, so
//! what a user may do, how its acts are audited and how it is stopped are exactly those
//! of keys: removing a user revokes its key, which ends its sessions.
//!
//! Wrong passwords are counted; [`LOCK_AFTER`] in a row lock the user for
//! [`LOCK_DURATION`]. An unknown email and a wrong password get the same answer, after
//! the same work.

pub mod password;
pub mod second_factor;
pub(crate) mod store;
pub mod totp;

use chrono::{DateTime, Duration, Utc};
use neocloud_schema::entity::portal_user;
use neocloud_schema::ids::{ProviderId, TenantId};
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sea_orm::{ActiveValue::Set, DatabaseConnection};
use serde_json::json;
use uuid::Uuid;

use super::keys::hash_secret;
use super::{KeyOwner, Principal, mint_for};
use crate::audit;
use crate::error::{ApiError, ApiResult};
use crate::mail::{self, Mailer};

pub const INVITATION_LIFETIME: Duration = Duration::days(7);
/// How long a password reset link stays valid.
pub const RESET_LIFETIME: Duration = Duration::hours(24);
pub const LOCK_AFTER: i32 = 5;
pub const LOCK_DURATION: Duration = Duration::minutes(15);
const MAX_EMAIL_LENGTH: usize = 254;

/// Whom a user belongs to, and so which web app it signs in to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Tenant(TenantId),
    Provider(ProviderId),
}

impl Owner {
    /// The owner of `user` (the database keeps exactly one).
    pub fn of(user: &portal_user::Model) -> Option<Owner> {
        match (user.tenant_id, user.provider_id) {
            (Some(tenant), None) => Some(Owner::Tenant(tenant)),
            (None, Some(provider)) => Some(Owner::Provider(provider)),
            _ => None,
        }
    }

    /// Whose users a caller manages: a provider's own; for an operator the provider or
    /// the tenant it names; for a tenant role its own tenant. A provider naming a tenant
    /// or another provider finds nothing; a tenant naming a provider is `FORBIDDEN`.
    pub fn acting(
        actor: &Principal,
        tenant: Option<TenantId>,
        provider: Option<ProviderId>,
    ) -> ApiResult<Owner> {
        match (actor.role, tenant, provider) {
            (Role::Provider, Some(_), _) => Err(ApiError::not_found("tenant")),
            (Role::Provider, None, asked) => Ok(Owner::Provider(actor.acting_provider(asked)?)),
            (Role::Operator, None, Some(provider)) => Ok(Owner::Provider(provider)),
            (Role::Operator, Some(_), Some(_)) => Err(ApiError::invalid(
                "providerId",
                "a tenant or a provider, not both",
            )),
            (_, _, Some(_)) => Err(ApiError::forbidden(
                "a provider's users are managed by the provider and operators",
            )),
            (_, asked, None) => Ok(Owner::Tenant(actor.acting_tenant(asked)?)),
        }
    }

    /// `(tenant_id, provider_id)`, as rows and keys hold it.
    pub fn ids(self) -> (Option<TenantId>, Option<ProviderId>) {
        match self {
            Owner::Tenant(tenant) => (Some(tenant), None),
            Owner::Provider(provider) => (None, Some(provider)),
        }
    }

    /// Whether its users may have `role`: a tenant role, or `provider`.
    fn allows(self, role: Role) -> bool {
        match self {
            Owner::Tenant(_) => role.is_tenant_role(),
            Owner::Provider(_) => role == Role::Provider,
        }
    }

    /// Where its users sign in: the portal or the provider console.
    pub fn app(self) -> mail::App {
        match self {
            Owner::Tenant(_) => mail::App::Portal,
            Owner::Provider(_) => mail::App::ProviderConsole,
        }
    }

    /// Its name, as an invitation says it.
    async fn name<C: sea_orm::ConnectionTrait>(self, conn: &C) -> ApiResult<Option<String>> {
        Ok(match self {
            Owner::Tenant(id) => crate::tenancy::store::find(conn, id).await?.map(|t| t.name),
            Owner::Provider(id) => crate::providers::store::find(conn, id)
                .await?
                .map(|p| p.legal_name),
        })
    }
}

/// The owner of a user, for what is said of it (audit, mail).
fn owner_of(user: &portal_user::Model) -> ApiResult<Owner> {
    Owner::of(user).ok_or_else(|| ApiError::Internal {
        message: format!("user {} belongs to no tenant or provider", user.id),
    })
}

/// A user just invited, with the token to hand over (shown once); `emailed` when a mail
/// with the link was queued too.
#[derive(Debug)]
pub struct Invited {
    pub user: portal_user::Model,
    pub token: String,
    pub emailed: bool,
}

/// How often a password-reset mail goes to one address at most.
pub const RESET_MAIL_INTERVAL: Duration = Duration::minutes(5);

/// Lower-cased, trimmed, and shaped like an address (`local@domain.tld`, no spaces).
pub fn normalise_email(email: &str) -> ApiResult<String> {
    let email = email.trim().to_lowercase();
    let shaped = email.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && !domain.contains('@')
    });
    if !shaped
        || email.len() > MAX_EMAIL_LENGTH
        || email.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::invalid("email", "an email address"));
    }
    Ok(email)
}

fn invitation_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn describe(user: &portal_user::Model) -> serde_json::Value {
    json!({"email": user.email, "role": user.role.as_str()})
}

/// `inviteUser`: a user of `owner` with a role the caller may grant (a tenant role for a
/// tenant, `provider` for a provider). Inviting an email whose invitation is still
/// pending issues a new token for it; an email of an active user is refused.
pub async fn invite(
    db: &DatabaseConnection,
    actor: &Principal,
    mailer: Option<&Mailer>,
    email: &str,
    role: Role,
    owner: Owner,
) -> ApiResult<Invited> {
    if !owner.allows(role) {
        return Err(match owner {
            Owner::Tenant(_) => ApiError::invalid("role", "a tenant role"),
            Owner::Provider(_) => ApiError::invalid("role", "PROVIDER, for a provider's user"),
        });
    }
    if !actor.role.may_manage(role) {
        return Err(ApiError::forbidden(format!(
            "a {} cannot invite a {} user",
            actor.role, role
        )));
    }
    let email = normalise_email(email)?;
    let token = invitation_token();
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let Some(owner_name) = owner.name(&txn).await? else {
        return Err(match owner {
            Owner::Tenant(_) => ApiError::not_found("tenant"),
            Owner::Provider(_) => ApiError::not_found("provider"),
        });
    };
    let user = match store::active_by_email(&txn, &email).await? {
        Some(user) if Owner::of(&user) == Some(owner) && user.password_hash.is_none() => {
            store::save(&txn, user, |u| {
                u.invitation_hash = Set(Some(hash_secret(&token)));
                u.invitation_expires_at = Set(Some(now + INVITATION_LIFETIME));
            })
            .await?
        }
        Some(_) => return Err(ApiError::invalid("email", "already has a user")),
        None => {
            let new = store::NewUser {
                owner,
                email: &email,
                role,
                invitation_hash: &hash_secret(&token),
                invitation_expires_at: now + INVITATION_LIFETIME,
                now,
            };
            new_user(&txn, actor, new).await?
        }
    };
    let emailed = match mailer {
        Some(mailer) => {
            let letter = mailer.invitation(owner.app(), &owner_name, role_words(user.role), &token);
            mail::store::queue(&txn, user.tenant_id, &user.email, letter, now).await?;
            true
        }
        None => false,
    };
    let mut after = describe(&user);
    after["emailed"] = emailed.into();
    record(&txn, Some(actor), &user, "portal_user.invite", None, after).await?;
    txn.commit().await?;
    Ok(Invited {
        user,
        token,
        emailed,
    })
}

/// Inserts `new` with a key of its own (whose secret nobody sees) minted by `actor`.
async fn new_user<C: sea_orm::ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    new: store::NewUser<'_>,
) -> ApiResult<portal_user::Model> {
    let (tenant_id, provider_id) = new.owner.ids();
    let key_owner = KeyOwner {
        tenant_id,
        provider_id,
        node_id: None,
    };
    let label = match new.owner {
        Owner::Tenant(_) => format!("portal user {}", new.email),
        Owner::Provider(_) => format!("provider user {}", new.email),
    };
    let key = mint_for(conn, new.role, key_owner, &label, Some(actor.key_id)).await?;
    Ok(store::insert(conn, key.key.id, new).await?)
}

/// Records `action` on `user` in the audit log, under the user's tenant where it has one.
async fn record<C: sea_orm::ConnectionTrait>(
    conn: &C,
    actor: Option<&Principal>,
    user: &portal_user::Model,
    action: &'static str,
    before: Option<serde_json::Value>,
    after: serde_json::Value,
) -> ApiResult<()> {
    let entry = audit::Entry {
        tenant_id: user.tenant_id,
        action,
        object_type: "portal_user",
        object_id: user.id.to_string(),
        before,
        after: Some(after),
    };
    audit::record_as(conn, actor, entry).await?;
    Ok(())
}

/// How an invitation names a role.
fn role_words(role: Role) -> &'static str {
    match role {
        Role::TenantAdmin => "an admin",
        Role::TenantBilling => "a billing reader",
        Role::Provider => "a provider user",
        _ => "a member",
    }
}

fn invalid_invitation() -> ApiError {
    ApiError::Unauthenticated {
        message: "this invitation is not valid: it was used, has expired or was withdrawn"
            .to_owned(),
    }
}

/// Accepts an invitation (or a password reset link): the password is set and the token
/// spent; after a reset, the user's other sessions end. Returns the user and the
/// principal it acts as.
pub async fn accept(
    db: &DatabaseConnection,
    token: &str,
    new_password: &str,
) -> ApiResult<(portal_user::Model, Principal)> {
    password::validate(new_password)?;
    let phc = password::hash(new_password).await?;
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let user = store::active_by_invitation(&txn, &hash_secret(token.trim()))
        .await?
        .filter(|u| u.invitation_expires_at.is_some_and(|at| at > now))
        .ok_or_else(invalid_invitation)?;
    let principal = acting_key(&txn, &user)
        .await?
        .ok_or_else(invalid_invitation)?;
    let reset = user.password_hash.is_some();
    if reset {
        // A new password: whoever knew the old one is signed out everywhere.
        crate::auth::sessions::store::end_all_of_user(&txn, user.id, now).await?;
    }
    let user = store::save(&txn, user, |u| {
        u.password_hash = Set(Some(phc));
        u.invitation_hash = Set(None);
        u.invitation_expires_at = Set(None);
        u.failed_sign_ins = Set(0);
        u.locked_until = Set(None);
    })
    .await?;
    let action = if reset {
        "portal_user.password_set"
    } else {
        "portal_user.accept"
    };
    record(&txn, Some(&principal), &user, action, None, describe(&user)).await?;
    txn.commit().await?;
    Ok((user, principal))
}

/// The principal of the user's key, unless the key is revoked.
async fn acting_key<C: sea_orm::ConnectionTrait>(
    conn: &C,
    user: &portal_user::Model,
) -> ApiResult<Option<Principal>> {
    let key = super::store::find(conn, user.api_key_id).await?;
    Ok(key
        .filter(|key| key.revoked_at.is_none())
        .map(|key| Principal::from_row(&key)))
}

fn wrong_credentials() -> ApiError {
    ApiError::Unauthenticated {
        message: "wrong email or password".to_owned(),
    }
}

/// Checks an email and a password (and, for a user with a second factor, `code`); the
/// user and the principal it acts as.
pub async fn verify(
    db: &DatabaseConnection,
    email: &str,
    presented: &str,
    code: Option<&str>,
) -> ApiResult<(portal_user::Model, Principal)> {
    let email = email.trim().to_lowercase();
    let now = Utc::now();
    let user = store::active_by_email(db, &email).await?;
    let phc = user.as_ref().and_then(|u| u.password_hash.as_deref());
    let matches = password::verify(presented, phc).await;
    let Some(user) = user.filter(|u| u.password_hash.is_some()) else {
        return Err(wrong_credentials());
    };
    if let Some(until) = user.locked_until.filter(|until| *until > now) {
        return Err(locked(until));
    }
    if !matches {
        record_failure(db, user, now).await?;
        return Err(wrong_credentials());
    }
    let principal = acting_key(db, &user).await?.ok_or_else(wrong_credentials)?;
    let accepted = match second_factor::check(&user, code, now) {
        Ok(accepted) => accepted,
        Err(second_factor::Refused::Missing) => return Err(ApiError::SecondFactorRequired),
        Err(second_factor::Refused::Wrong) => {
            record_failure(db, user, now).await?;
            return Err(ApiError::Unauthenticated {
                message: "wrong, used or expired one-time code".to_owned(),
            });
        }
    };
    let user = store::save(db, user, |u| {
        u.failed_sign_ins = Set(0);
        u.locked_until = Set(None);
        u.last_sign_in_at = Set(Some(now));
        accepted.apply(u);
    })
    .await?;
    Ok((user, principal))
}

fn locked(until: DateTime<Utc>) -> ApiError {
    ApiError::Unauthenticated {
        message: format!(
            "too many wrong passwords: sign-in is locked until {}",
            until.format("%H:%M UTC")
        ),
    }
}

async fn record_failure(
    db: &DatabaseConnection,
    user: portal_user::Model,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let failures = user.failed_sign_ins + 1;
    store::save(db, user, |u| {
        if failures >= LOCK_AFTER {
            u.failed_sign_ins = Set(0);
            u.locked_until = Set(Some(now + LOCK_DURATION));
        } else {
            u.failed_sign_ins = Set(failures);
        }
    })
    .await?;
    Ok(())
}

/// A user of `owner` whose role the caller may manage, for `what` (`remove`, …):
/// `NOT_FOUND` outside the owner, `FORBIDDEN` above the caller's role.
pub(super) async fn managed_user<C: sea_orm::ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    id: Uuid,
    owner: Owner,
    what: &str,
) -> ApiResult<portal_user::Model> {
    let user = store::find_owned(conn, id, owner)
        .await?
        .ok_or_else(|| ApiError::not_found("portal user"))?;
    if !actor.role.may_manage(user.role) {
        return Err(ApiError::forbidden(format!(
            "a {} cannot {what} a {} user",
            actor.role, user.role
        )));
    }
    Ok(user)
}

/// `resetPassword`: a one-time link (valid [`RESET_LIFETIME`]) with which an active user
/// of a role the caller may grant sets a new password; the old one works until then.
/// Mailed to the user where a mail server is configured; the admin may hand it over too.
pub async fn issue_password_reset(
    db: &DatabaseConnection,
    actor: &Principal,
    mailer: Option<&Mailer>,
    id: Uuid,
    owner: Owner,
) -> ApiResult<Invited> {
    let txn = crate::db::begin_write(db).await?;
    let user = managed_user(&txn, actor, id, owner, "reset the password of").await?;
    if user.disabled_at.is_some() || user.password_hash.is_none() {
        return Err(ApiError::InvalidState {
            message: "only an active user's password is reset: invite a pending or removed one"
                .into(),
        });
    }
    let (user, token) = new_reset_link(&txn, user, mailer).await?;
    let emailed = mailer.is_some();
    let after = json!({"expires_at": user.invitation_expires_at, "emailed": emailed});
    record(
        &txn,
        Some(actor),
        &user,
        "portal_user.password_reset",
        None,
        after,
    )
    .await?;
    txn.commit().await?;
    Ok(Invited {
        user,
        token,
        emailed,
    })
}

/// A new reset link for `user` (valid [`RESET_LIFETIME`]), replacing any earlier one,
/// queued as a mail to the user when a mail server is configured.
async fn new_reset_link<C: sea_orm::ConnectionTrait>(
    conn: &C,
    user: portal_user::Model,
    mailer: Option<&Mailer>,
) -> ApiResult<(portal_user::Model, String)> {
    let token = invitation_token();
    let now = Utc::now();
    let user = store::save(conn, user, |u| {
        u.invitation_hash = Set(Some(hash_secret(&token)));
        u.invitation_expires_at = Set(Some(now + RESET_LIFETIME));
    })
    .await?;
    if let Some(mailer) = mailer {
        let letter = mailer.password_reset(owner_of(&user)?.app(), &token);
        mail::store::queue(conn, user.tenant_id, &user.email, letter, now).await?;
    }
    Ok((user, token))
}

/// `POST /v1/session/password-reset`: a person who forgot its password asks for a link by
/// mail. Whether or not the address has an active user, the answer is the same; a user
/// gets at most one such mail per [`RESET_MAIL_INTERVAL`]. Audited without an actor.
pub async fn request_password_reset(
    db: &DatabaseConnection,
    mailer: &Mailer,
    email: &str,
) -> ApiResult<()> {
    let email = normalise_email(email)?;
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let Some(user) = store::active_by_email(&txn, &email)
        .await?
        .filter(|u| u.password_hash.is_some())
    else {
        return Ok(());
    };
    let recent = mail::store::count_since(
        &txn,
        &email,
        mail::Kind::PasswordReset,
        now - RESET_MAIL_INTERVAL,
    )
    .await?;
    if recent > 0 {
        return Ok(());
    }
    let (user, _) = new_reset_link(&txn, user, Some(mailer)).await?;
    let after = json!({"expires_at": user.invitation_expires_at});
    let action = "portal_user.password_reset_requested";
    record(&txn, None, &user, action, None, after).await?;
    txn.commit().await?;
    Ok(())
}

/// `portalUsers`: the users of `owner` (see [`Owner::acting`]).
pub async fn list(db: &DatabaseConnection, owner: Owner) -> ApiResult<Vec<portal_user::Model>> {
    Ok(store::list(db, owner).await?)
}

/// `removeUser`: disables a user of a role the caller may grant and revokes its key (its
/// sessions end with it). Removing a removed user changes nothing.
pub async fn remove(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
    owner: Owner,
) -> ApiResult<portal_user::Model> {
    let txn = crate::db::begin_write(db).await?;
    let user = managed_user(&txn, actor, id, owner, "remove").await?;
    if user.disabled_at.is_some() {
        return Ok(user);
    }
    let now = Utc::now();
    let key = super::store::find(&txn, user.api_key_id).await?;
    if let Some(key) = key.filter(|key| key.revoked_at.is_none()) {
        super::store::revoke(&txn, &key, now).await?;
    }
    let removed = store::save(&txn, user, |u| {
        u.disabled_at = Set(Some(now));
        u.password_hash = Set(None);
        u.invitation_hash = Set(None);
        u.invitation_expires_at = Set(None);
    })
    .await?;
    let after = json!({"disabled_at": now});
    let before = Some(describe(&removed));
    record(
        &txn,
        Some(actor),
        &removed,
        "portal_user.remove",
        before,
        after,
    )
    .await?;
    txn.commit().await?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::normalise_email;

    #[test]
    fn emails_are_lower_cased_and_shaped() {
        assert_eq!(
            normalise_email("  Ada@Example.COM ").ok().as_deref(),
            Some("ada@example.com")
        );
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@example",
            "ada@.com",
            "a da@x.io",
            "a@b@c.io",
            "ada@example.com.",
        ] {
            assert!(normalise_email(bad).is_err(), "{bad:?}");
        }
    }
}
