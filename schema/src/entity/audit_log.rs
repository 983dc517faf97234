//! Who did what: one row per operator or tenant-admin mutation, with the object's state
//! before and after. Append-only (the database refuses anything else), and chained: once
//! sealed, an entry holds its place and hash in the global chain and in its tenant's.

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
    /// Place in the global chain, from 1; `None` until sealed.
    pub seq: Option<i64>,
    /// SHA-256 (hex) over the previous entry's hash, `seq` and this entry.
    pub hash: Option<String>,
    /// Place in its tenant's chain, from 1 (entries with a tenant, once sealed).
    pub tenant_seq: Option<i64>,
    /// SHA-256 (hex) over the tenant's previous entry's hash, `tenant_seq` and this entry.
    pub tenant_hash: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
