//! SQL for users. Listings and lookups by id filter by owner (tenant or provider) here.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::portal_user::{self, Entity as PortalUsers};
use neocloud_schema::ids::{ApiKeyId, TenantId};
use neocloud_schema::vocabulary::Role;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    QueryFilter, QueryOrder, Set,
};
use uuid::Uuid;

use super::Owner;

pub(super) struct NewUser<'a> {
    pub owner: Owner,
    pub email: &'a str,
    pub role: Role,
    pub invitation_hash: &'a str,
    pub invitation_expires_at: DateTime<Utc>,
    pub now: DateTime<Utc>,
}

/// Inserts `new`, acting through `key`.
pub(super) async fn insert<C: ConnectionTrait>(
    conn: &C,
    key: ApiKeyId,
    new: NewUser<'_>,
) -> Result<portal_user::Model, DbErr> {
    let (tenant_id, provider_id) = new.owner.ids();
    portal_user::ActiveModel {
        id: Set(Uuid::new_v4()),
        tenant_id: Set(tenant_id),
        provider_id: Set(provider_id),
        email: Set(new.email.to_owned()),
        role: Set(new.role),
        api_key_id: Set(key),
        password_hash: Set(None),
        invitation_hash: Set(Some(new.invitation_hash.to_owned())),
        invitation_expires_at: Set(Some(new.invitation_expires_at)),
        failed_sign_ins: Set(0),
        locked_until: Set(None),
        created_at: Set(new.now),
        last_sign_in_at: Set(None),
        disabled_at: Set(None),
        totp_secret: Set(None),
        totp_pending_secret: Set(None),
        totp_enabled_at: Set(None),
        totp_last_step: Set(None),
        recovery_codes: Set(None),
    }
    .insert(conn)
    .await
}

/// The active user with this (lower-cased) email, of any tenant or provider.
pub(super) async fn active_by_email<C: ConnectionTrait>(
    conn: &C,
    email: &str,
) -> Result<Option<portal_user::Model>, DbErr> {
    PortalUsers::find()
        .filter(portal_user::Column::Email.eq(email))
        .filter(portal_user::Column::DisabledAt.is_null())
        .one(conn)
        .await
}

pub(super) async fn active_by_invitation<C: ConnectionTrait>(
    conn: &C,
    invitation_hash: &str,
) -> Result<Option<portal_user::Model>, DbErr> {
    PortalUsers::find()
        .filter(portal_user::Column::InvitationHash.eq(invitation_hash))
        .filter(portal_user::Column::DisabledAt.is_null())
        .one(conn)
        .await
}

/// The user acting through `key`, if the key is a portal user's.
pub(crate) async fn by_key<C: ConnectionTrait>(
    conn: &C,
    key: ApiKeyId,
) -> Result<Option<portal_user::Model>, DbErr> {
    PortalUsers::find()
        .filter(portal_user::Column::ApiKeyId.eq(key))
        .one(conn)
        .await
}

/// The condition "belongs to `owner`".
fn owned_by(owner: Owner) -> sea_orm::sea_query::SimpleExpr {
    match owner {
        Owner::Tenant(tenant) => portal_user::Column::TenantId.eq(tenant),
        Owner::Provider(provider) => portal_user::Column::ProviderId.eq(provider),
    }
}

pub(super) async fn find_owned<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    owner: Owner,
) -> Result<Option<portal_user::Model>, DbErr> {
    PortalUsers::find_by_id(id)
        .filter(owned_by(owner))
        .one(conn)
        .await
}

pub(super) async fn list<C: ConnectionTrait>(
    conn: &C,
    owner: Owner,
) -> Result<Vec<portal_user::Model>, DbErr> {
    PortalUsers::find()
        .filter(owned_by(owner))
        .order_by_asc(portal_user::Column::CreatedAt)
        .all(conn)
        .await
}

/// Saves a changed user.
pub(super) async fn save<C: ConnectionTrait>(
    conn: &C,
    user: portal_user::Model,
    change: impl FnOnce(&mut portal_user::ActiveModel),
) -> Result<portal_user::Model, DbErr> {
    let mut active = user.into_active_model();
    change(&mut active);
    active.update(conn).await
}

/// GDPR erasure: every user of the tenant loses its email, password, invitation and
/// second factor and
/// is disabled (its key is revoked with the tenant's others).
pub(crate) async fn erase<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let users = list(conn, Owner::Tenant(tenant)).await?;
    for user in &users {
        PortalUsers::update_many()
            .col_expr(
                portal_user::Column::Email,
                Expr::value(format!("erased-{}@invalid", user.id.simple())),
            )
            .col_expr(
                portal_user::Column::PasswordHash,
                Expr::value(None::<String>),
            )
            .col_expr(
                portal_user::Column::InvitationHash,
                Expr::value(None::<String>),
            )
            .col_expr(portal_user::Column::TotpSecret, Expr::value(None::<String>))
            .col_expr(
                portal_user::Column::TotpPendingSecret,
                Expr::value(None::<String>),
            )
            .col_expr(
                portal_user::Column::RecoveryCodes,
                Expr::value(None::<serde_json::Value>),
            )
            .col_expr(
                portal_user::Column::DisabledAt,
                Expr::value(user.disabled_at.unwrap_or(now)),
            )
            .filter(portal_user::Column::Id.eq(user.id))
            .exec(conn)
            .await?;
    }
    Ok(users.len() as u64)
}
