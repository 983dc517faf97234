//! A console sign-in through the identity provider, in flight: found by the SHA-256 of its
//! `state`, used once, valid for minutes.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oidc_logins")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub state_hash: String,
    /// The ID token must carry it back.
    pub nonce: String,
    /// PKCE: sent with the code; its S256 challenge went with the authorization request.
    pub code_verifier: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
