//! Portal users: people of a tenant who sign in with an email and a password. A tenant
//! admin (or an operator) invites one with a role; the invitation is a one-time token
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
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sea_orm::{ActiveValue::Set, DatabaseConnection};
use serde_json::json;
use uuid::Uuid;

use super::keys::hash_secret;
use super::{Principal, mint};
use crate::audit;
use crate::error::{ApiError, ApiResult};
use crate::mail::{self, Mailer};

pub const INVITATION_LIFETIME: Duration = Duration::days(7);
/// How long a password reset link stays valid.
pub const RESET_LIFETIME: Duration = Duration::hours(24);
pub const LOCK_AFTER: i32 = 5;
pub const LOCK_DURATION: Duration = Duration::minutes(15);
const MAX_EMAIL_LENGTH: usize = 254;

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

/// `inviteUser`: a user of a tenant role the caller may grant, in the caller's tenant (an
/// operator names it). Inviting an email whose invitation is still pending issues a new
/// token for it; an email of an active user is refused.
pub async fn invite(
    db: &DatabaseConnection,
    actor: &Principal,
    mailer: Option<&Mailer>,
    email: &str,
    role: Role,
    tenant: Option<TenantId>,
) -> ApiResult<Invited> {
    let tenant = actor.acting_tenant(tenant)?;
    if !role.is_tenant_role() {
        return Err(ApiError::invalid("role", "a tenant role"));
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
    let user = match store::active_by_email(&txn, &email).await? {
        Some(user) if user.tenant_id == tenant && user.password_hash.is_none() => {
            store::save(&txn, user, |u| {
                u.invitation_hash = Set(Some(hash_secret(&token)));
                u.invitation_expires_at = Set(Some(now + INVITATION_LIFETIME));
            })
            .await?
        }
        Some(_) => return Err(ApiError::invalid("email", "already has a portal user")),
        None => {
            let label = format!("portal user {email}");
            let key = mint(&txn, role, Some(tenant), None, &label, Some(actor.key_id)).await?;
            store::insert(
                &txn,
                store::NewUser {
                    tenant_id: tenant,
                    email: &email,
                    role,
                    api_key_id: key.key.id,
                    invitation_hash: &hash_secret(&token),
                    invitation_expires_at: now + INVITATION_LIFETIME,
                    now,
                },
            )
            .await?
        }
    };
    let emailed = mail_invitation(&txn, mailer, &user, &token, now).await?;
    let mut after = describe(&user);
    after["emailed"] = emailed.into();
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "portal_user.invite",
            object_type: "portal_user",
            object_id: user.id.to_string(),
            before: None,
            after: Some(after),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(Invited {
        user,
        token,
        emailed,
    })
}

/// Queues the invitation's mail to `user` when a mail server is configured; whether it did.
async fn mail_invitation<C: sea_orm::ConnectionTrait>(
    conn: &C,
    mailer: Option<&Mailer>,
    user: &portal_user::Model,
    token: &str,
    now: DateTime<Utc>,
) -> ApiResult<bool> {
    let Some(mailer) = mailer else {
        return Ok(false);
    };
    let tenant = crate::tenancy::store::find(conn, user.tenant_id)
        .await?
        .map_or_else(String::new, |t| t.name);
    let letter = mailer.invitation(&tenant, role_words(user.role), token);
    mail::store::queue(conn, Some(user.tenant_id), &user.email, letter, now).await?;
    Ok(true)
}

/// How an invitation names a role.
fn role_words(role: Role) -> &'static str {
    match role {
        Role::TenantAdmin => "an admin",
        Role::TenantBilling => "a billing reader",
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
    audit::record(
        &txn,
        &principal,
        audit::Entry {
            tenant_id: Some(user.tenant_id),
            action: if reset {
                "portal_user.password_set"
            } else {
                "portal_user.accept"
            },
            object_type: "portal_user",
            object_id: user.id.to_string(),
            before: None,
            after: Some(describe(&user)),
        },
    )
    .await?;
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

/// A user of `tenant` whose role the caller may manage, for `what` (`remove`, …):
/// `NOT_FOUND` outside the tenant, `FORBIDDEN` above the caller's role.
pub(super) async fn managed_user<C: sea_orm::ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    id: Uuid,
    tenant: TenantId,
    what: &str,
) -> ApiResult<portal_user::Model> {
    let user = store::find_in_tenant(conn, id, tenant)
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
    tenant: Option<TenantId>,
) -> ApiResult<Invited> {
    let tenant = actor.acting_tenant(tenant)?;
    let txn = crate::db::begin_write(db).await?;
    let user = managed_user(&txn, actor, id, tenant, "reset the password of").await?;
    if user.disabled_at.is_some() || user.password_hash.is_none() {
        return Err(ApiError::InvalidState {
            message: "only an active user's password is reset: invite a pending or removed one"
                .into(),
        });
    }
    let (user, token) = new_reset_link(&txn, user, mailer).await?;
    let emailed = mailer.is_some();
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "portal_user.password_reset",
            object_type: "portal_user",
            object_id: user.id.to_string(),
            before: None,
            after: Some(json!({"expires_at": user.invitation_expires_at, "emailed": emailed})),
        },
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
        let letter = mailer.password_reset(&token);
        mail::store::queue(conn, Some(user.tenant_id), &user.email, letter, now).await?;
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
    audit::record_as(
        &txn,
        None,
        audit::Entry {
            tenant_id: Some(user.tenant_id),
            action: "portal_user.password_reset_requested",
            object_type: "portal_user",
            object_id: user.id.to_string(),
            before: None,
            after: Some(json!({"expires_at": user.invitation_expires_at})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(())
}

/// `portalUsers`: the users of the caller's tenant (an operator names it).
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
) -> ApiResult<Vec<portal_user::Model>> {
    let tenant = actor.acting_tenant(tenant)?;
    Ok(store::list(db, tenant).await?)
}

/// `removeUser`: disables a user of a role the caller may grant and revokes its key (its
/// sessions end with it). Removing a removed user changes nothing.
pub async fn remove(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
    tenant: Option<TenantId>,
) -> ApiResult<portal_user::Model> {
    let tenant = actor.acting_tenant(tenant)?;
    let txn = crate::db::begin_write(db).await?;
    let user = managed_user(&txn, actor, id, tenant, "remove").await?;
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
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "portal_user.remove",
            object_type: "portal_user",
            object_id: removed.id.to_string(),
            before: Some(describe(&removed)),
            after: Some(json!({"disabled_at": now})),
        },
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
