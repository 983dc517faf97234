//! SQL for console single sign-on: sign-ins in flight and operator identities.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::oidc_login::{self, Entity as OidcLogins};
use neocloud_schema::entity::operator_identity::{self, Entity as OperatorIdentities};
use neocloud_schema::ids::ApiKeyId;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    QueryFilter, Set,
};
use uuid::Uuid;

pub(super) async fn insert_login<C: ConnectionTrait>(
    conn: &C,
    state_hash: &str,
    nonce: &str,
    code_verifier: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    oidc_login::ActiveModel {
        state_hash: Set(state_hash.to_owned()),
        nonce: Set(nonce.to_owned()),
        code_verifier: Set(code_verifier.to_owned()),
        created_at: Set(now),
    }
    .insert(conn)
    .await
    .map(drop)
}

/// The sign-in of this state, removed so it cannot be used twice.
pub(super) async fn take_login<C: ConnectionTrait>(
    conn: &C,
    state_hash: &str,
) -> Result<Option<oidc_login::Model>, DbErr> {
    let Some(login) = OidcLogins::find_by_id(state_hash.to_owned())
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let deleted = OidcLogins::delete_by_id(state_hash.to_owned())
        .exec(conn)
        .await?;
    Ok((deleted.rows_affected == 1).then_some(login))
}

/// Forgets sign-ins started before `before` (abandoned at the provider).
pub(super) async fn forget_logins_before<C: ConnectionTrait>(
    conn: &C,
    before: DateTime<Utc>,
) -> Result<(), DbErr> {
    OidcLogins::delete_many()
        .filter(oidc_login::Column::CreatedAt.lt(before))
        .exec(conn)
        .await
        .map(drop)
}

pub(super) async fn find_identity<C: ConnectionTrait>(
    conn: &C,
    issuer: &str,
    subject: &str,
) -> Result<Option<operator_identity::Model>, DbErr> {
    OperatorIdentities::find()
        .filter(operator_identity::Column::Issuer.eq(issuer))
        .filter(operator_identity::Column::Subject.eq(subject))
        .one(conn)
        .await
}

/// The operator identity acting through `key`, if the key is one's.
pub(crate) async fn identity_by_key<C: ConnectionTrait>(
    conn: &C,
    key: ApiKeyId,
) -> Result<Option<operator_identity::Model>, DbErr> {
    OperatorIdentities::find()
        .filter(operator_identity::Column::ApiKeyId.eq(key))
        .one(conn)
        .await
}

pub(super) async fn insert_identity<C: ConnectionTrait>(
    conn: &C,
    issuer: &str,
    subject: &str,
    email: &str,
    api_key_id: ApiKeyId,
    now: DateTime<Utc>,
) -> Result<operator_identity::Model, DbErr> {
    operator_identity::ActiveModel {
        id: Set(Uuid::new_v4()),
        issuer: Set(issuer.to_owned()),
        subject: Set(subject.to_owned()),
        email: Set(email.to_owned()),
        api_key_id: Set(api_key_id),
        created_at: Set(now),
        last_sign_in_at: Set(now),
    }
    .insert(conn)
    .await
}

pub(super) async fn signed_in<C: ConnectionTrait>(
    conn: &C,
    identity: operator_identity::Model,
    email: &str,
    now: DateTime<Utc>,
) -> Result<operator_identity::Model, DbErr> {
    let mut active = identity.into_active_model();
    active.email = Set(email.to_owned());
    active.last_sign_in_at = Set(now);
    active.update(conn).await
}
