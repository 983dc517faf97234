//! Browser sessions for the portal and the consoles. Signing in with an API key, or as a
//! portal user with an email and a password (`users`), opens a session that acts as that
//! key (the user's own): the browser holds a random secret in an HttpOnly cookie
//! (only its SHA-256 is stored, as for keys) and sends the session's CSRF token in a
//! header with every request the cookie authenticates. A session ends when signed out,
//! after [`ABSOLUTE_LIFETIME`], after [`IDLE_LIMIT`] without a request, or as soon as its
//! key is revoked. Opening and ending one are audited.

pub(crate) mod store;

use chrono::{DateTime, Duration, Utc};
use rand::RngCore;
use serde_json::json;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use sea_orm::DatabaseConnection;

use super::{Principal, authenticate, keys::hash_secret, oidc, users};
use crate::audit;
use crate::error::{ApiError, ApiResult};

/// How long a session lasts at most, however busy.
pub const ABSOLUTE_LIFETIME: Duration = Duration::hours(12);
/// How long a session survives without a request.
pub const IDLE_LIMIT: Duration = Duration::hours(1);
/// `last_seen_at` is written at most this often.
const TOUCH_RESOLUTION: Duration = Duration::seconds(60);
const SECRET_BYTES: usize = 32;

/// A signed-in session: who it acts as, and the token its page must echo.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: Uuid,
    pub principal: Principal,
    pub csrf_token: String,
    /// When it ends without further requests: the idle limit or the lifetime, the sooner.
    pub expires_at: DateTime<Utc>,
}

/// A session just opened, with the secret for its cookie (shown once, never stored).
#[derive(Debug)]
pub struct Opened {
    pub session: Session,
    pub secret: String,
}

fn random_token() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn ended(message: &str) -> ApiError {
    ApiError::Unauthenticated {
        message: message.to_owned(),
    }
}

fn expiry(last_seen: DateTime<Utc>, expires_at: DateTime<Utc>) -> DateTime<Utc> {
    (last_seen + IDLE_LIMIT).min(expires_at)
}

/// Signs in with an API key of a person's role (operators, tenant roles and providers;
/// agent tokens and usage reporters are for machines).
pub async fn sign_in(db: &DatabaseConnection, api_key: &str) -> ApiResult<Opened> {
    let principal = authenticate(db, api_key.trim()).await?;
    principal.require_person()?;
    open(db, principal, How::ApiKey).await
}

/// Signs a portal user in with an email and a password, and a one-time or recovery code
/// when the user has a second factor (`users::verify`).
pub async fn sign_in_with_password(
    db: &DatabaseConnection,
    email: &str,
    password: &str,
    code: Option<&str>,
) -> ApiResult<Opened> {
    let (user, principal) = users::verify(db, email, password, code).await?;
    open(db, principal, How::Password(user.id)).await
}

/// Accepts a portal user's invitation (`users::accept`) and signs the user in.
pub async fn accept_invitation(
    db: &DatabaseConnection,
    token: &str,
    password: &str,
) -> ApiResult<Opened> {
    let (user, principal) = users::accept(db, token, password).await?;
    open(db, principal, How::Password(user.id)).await
}

/// Finishes a console sign-in through the identity provider (`oidc::finish`).
pub async fn sign_in_with_oidc(
    db: &DatabaseConnection,
    provider: &oidc::Provider,
    state: &str,
    code: &str,
) -> ApiResult<Opened> {
    let signed = oidc::finish(db, provider, state, code).await?;
    open(db, signed.principal, How::Oidc(signed.sid)).await
}

/// How a person proved who they are.
enum How {
    ApiKey,
    /// A portal user's password.
    Password(Uuid),
    /// The operators' identity provider, with its session (`sid`) where it names one.
    Oidc(Option<String>),
}

/// Opens a session acting as `principal`. Audited as `session.sign_in`, with the method.
async fn open(db: &DatabaseConnection, mut principal: Principal, how: How) -> ApiResult<Opened> {
    let (method, user, sid) = match how {
        How::ApiKey => ("api_key", None, None),
        How::Password(user) => ("password", Some(user), None),
        How::Oidc(sid) => ("oidc", None, sid),
    };
    principal.second_factor_setup_required =
        users::second_factor::setup_required(db, &principal, user).await?;
    let secret = random_token();
    let csrf_token = random_token();
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let row = store::insert(
        &txn,
        store::NewSession {
            token_hash: &hash_secret(&secret),
            csrf_token: &csrf_token,
            api_key_id: principal.key_id,
            user_id: user,
            oidc_sid: sid.as_deref(),
            now,
            expires_at: now + ABSOLUTE_LIFETIME,
        },
    )
    .await?;
    audit::record(
        &txn,
        &principal,
        audit::Entry {
            tenant_id: principal.tenant_id,
            action: "session.sign_in",
            object_type: "web_session",
            object_id: row.id.to_string(),
            before: None,
            after: Some(json!({"method": method, "user_id": user, "expires_at": row.expires_at})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(Opened {
        session: Session {
            id: row.id,
            principal,
            csrf_token,
            expires_at: expiry(now, row.expires_at),
        },
        secret,
    })
}

/// The open session a cookie's secret belongs to, or `UNAUTHENTICATED`.
pub async fn resume(db: &DatabaseConnection, secret: &str) -> ApiResult<Session> {
    let Some(row) = store::find_by_hash(db, &hash_secret(secret)).await? else {
        return Err(ended("no such session: sign in"));
    };
    let now = Utc::now();
    if row.ended_at.is_some() || now >= expiry(row.last_seen_at, row.expires_at) {
        return Err(ended("the session has ended: sign in again"));
    }
    let key = super::store::find(db, row.api_key_id).await?;
    let Some(key) = key.filter(|key| key.revoked_at.is_none()) else {
        return Err(ended("the session's API key has been revoked"));
    };
    let mut last_seen = row.last_seen_at;
    if now - last_seen > TOUCH_RESOLUTION {
        store::touch(db, row.id, now).await?;
        last_seen = now;
    }
    let mut principal = Principal::from_row(&key);
    principal.second_factor_setup_required =
        users::second_factor::setup_required(db, &principal, row.user_id).await?;
    Ok(Session {
        id: row.id,
        principal,
        csrf_token: row.csrf_token,
        expires_at: expiry(last_seen, row.expires_at),
    })
}

impl Session {
    /// Whether `presented` is this session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(self.csrf_token.as_bytes()))
    }
}

/// Signs out: the session ends now. Audited as `session.sign_out`; ending an ended session
/// changes nothing.
pub async fn sign_out(db: &DatabaseConnection, session: &Session) -> ApiResult<()> {
    let txn = crate::db::begin_write(db).await?;
    if store::end(&txn, session.id, Utc::now()).await? {
        audit::record(
            &txn,
            &session.principal,
            audit::Entry {
                tenant_id: session.principal.tenant_id,
                action: "session.sign_out",
                object_type: "web_session",
                object_id: session.id.to_string(),
                before: None,
                after: None,
            },
        )
        .await?;
    }
    txn.commit().await?;
    Ok(())
}
