//! A NATS user the server minted for a node's agent (one per credential, renewals
//! included): its public key, when it was issued and expires, and when it was revoked.

use crate::ids::NodeId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "nats_users")]
pub struct Model {
    /// The user's public nkey (`U…`): what an account's revocation list names.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_key: String,
    pub node_id: NodeId,
    pub issued_at: DateTimeUtc,
    /// `None`: valid for ever.
    pub expires_at: Option<DateTimeUtc>,
    pub revoked_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
