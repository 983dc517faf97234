//! A person who signs in with an email and a password, acting through an API key of its
//! own (`api_key_id`, whose secret is never shown). Invited with a
//! one-time token (`invitation_hash`, its SHA-256) until a password is set.

use crate::ids::{ApiKeyId, ProviderId, TenantId};
use crate::vocabulary::Role;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "portal_users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// The tenant whose portal the user signs in to; exactly one of it and `provider_id`
    /// is set.
    pub tenant_id: Option<TenantId>,
    /// The provider whose console the user signs in to.
    pub provider_id: Option<ProviderId>,
    /// Lower-cased.
    pub email: String,
    /// The role of its key: a tenant role, or `provider`.
    pub role: Role,
    pub api_key_id: ApiKeyId,
    /// argon2id, as a PHC string; `None` until the invitation is accepted.
    pub password_hash: Option<String>,
    pub invitation_hash: Option<String>,
    pub invitation_expires_at: Option<DateTimeUtc>,
    /// Wrong passwords since the last sign-in; enough of them lock the user a while.
    pub failed_sign_ins: i32,
    pub locked_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub last_sign_in_at: Option<DateTimeUtc>,
    pub disabled_at: Option<DateTimeUtc>,
    /// The TOTP secret (base32) once a code confirmed it: sign-in asks for a code.
    pub totp_secret: Option<String>,
    /// A secret being set up, until a code from it confirms it.
    pub totp_pending_secret: Option<String>,
    pub totp_enabled_at: Option<DateTimeUtc>,
    /// The last TOTP time step a code was accepted for: a code counts once.
    pub totp_last_step: Option<i64>,
    /// SHA-256 (hex) of each unused recovery code, a JSON array.
    pub recovery_codes: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
