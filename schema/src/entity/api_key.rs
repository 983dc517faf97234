//! API keys and agent tokens. Only a SHA-256 hash of the secret is stored; `prefix` is the
//! public, unique part of the key that finds the row.

use crate::ids::ApiKeyId;
use crate::ids::NodeId;
use crate::ids::ProviderId;
use crate::ids::TenantId;
pub use crate::vocabulary::Role;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: ApiKeyId,
    #[sea_orm(unique)]
    pub prefix: String,
    pub secret_hash: String,
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub node_id: Option<NodeId>,
    /// Set for `provider` keys.
    pub provider_id: Option<ProviderId>,
    pub label: String,
    pub created_by: Option<ApiKeyId>,
    pub created_at: DateTimeUtc,
    pub last_used_at: Option<DateTimeUtc>,
    pub revoked_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
