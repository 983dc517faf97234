//! A browser's signed-in session. The cookie holds a secret whose SHA-256 hash is
//! `token_hash`; the session acts as the API key `api_key_id` until `expires_at`, until it
//! has been idle too long (`last_seen_at`), or until it is ended (`ended_at`: signed out).

use crate::ids::ApiKeyId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "web_sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    #[sea_orm(unique)]
    pub token_hash: String,
    /// Sent back by the page in `X-CSRF-Token` with every request that changes something.
    pub csrf_token: String,
    pub api_key_id: ApiKeyId,
    /// The portal user who signed in with a password; `None` for a sign-in with a key.
    pub user_id: Option<Uuid>,
    pub created_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    pub ended_at: Option<DateTimeUtc>,
    /// The identity provider's session (the ID token's `sid`) of a single sign-on, which
    /// its back-channel logout names.
    pub oidc_sid: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
