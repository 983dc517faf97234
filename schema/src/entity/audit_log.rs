//! Who did what: one row per operator or tenant-admin mutation, with the object's state
//! before and after. Append-only.

use crate::ids::ApiKeyId;
use crate::ids::AuditId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: AuditId,
    pub at: DateTimeUtc,
    pub actor_key_id: Option<ApiKeyId>,
    pub actor_role: String,
    pub tenant_id: Option<TenantId>,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    pub before: Option<Json>,
    pub after: Option<Json>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
