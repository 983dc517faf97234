//! The audit log: who did what, to which object, with its state before and after. Every
//! operator and tenant-admin mutation records an entry in the same transaction as its
//! change, so the log can never miss a change or record one that did not happen.

pub mod chain;

use chrono::Utc;
use neocloud_schema::entity::audit_log;
use neocloud_schema::ids::{AuditId, TenantId};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, Set};
use serde_json::Value;
use uuid::Uuid;

use crate::auth::Principal;

/// One audit entry, before the actor and time are added.
#[derive(Debug)]
pub struct Entry {
    /// The tenant the object belongs to, if any (tenant admins may read their tenant's log).
    pub tenant_id: Option<TenantId>,
    /// `object.verb`, e.g. `tenant.create`.
    pub action: &'static str,
    pub object_type: &'static str,
    pub object_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

pub async fn record<C: ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    entry: Entry,
) -> Result<(), DbErr> {
    record_as(conn, Some(actor), entry).await
}

/// Records an entry; `actor` is `None` for the system itself (bootstrap, demo seeding).
pub async fn record_as<C: ConnectionTrait>(
    conn: &C,
    actor: Option<&Principal>,
    entry: Entry,
) -> Result<(), DbErr> {
    row(actor, entry).insert(conn).await.map(|_| ())
}

/// Records several entries at once (a batch of orders placed in one transaction).
pub async fn record_all<C: ConnectionTrait>(
    conn: &C,
    rows: Vec<audit_log::ActiveModel>,
) -> Result<(), DbErr> {
    crate::db::insert_all(conn, rows).await
}

/// The row an entry becomes, stamped now.
pub fn row(actor: Option<&Principal>, entry: Entry) -> audit_log::ActiveModel {
    audit_log::ActiveModel {
        id: Set(AuditId::new()),
        at: Set(Utc::now()),
        actor_key_id: Set(actor.map(|a| a.key_id)),
        actor_role: Set(actor.map_or("system", |a| a.role.as_str()).to_owned()),
        tenant_id: Set(entry.tenant_id),
        action: Set(entry.action.to_owned()),
        object_type: Set(entry.object_type.to_owned()),
        object_id: Set(entry.object_id),
        before: Set(entry.before),
        after: Set(entry.after),
        // Sealed later, in commit order (`chain::seal`).
        ..Default::default()
    }
}

/// The newest entry of `action` about `tenant`, if any.
pub async fn latest<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    action: &str,
) -> Result<Option<audit_log::Model>, DbErr> {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
    audit_log::Entity::find()
        .filter(audit_log::Column::TenantId.eq(Uuid::from(tenant)))
        .filter(audit_log::Column::Action.eq(action))
        .order_by_desc(audit_log::Column::At)
        .order_by_desc(audit_log::Column::Id)
        .one(conn)
        .await
}

/// What `auditLog` may be narrowed to.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub tenant_id: Option<TenantId>,
    pub action: Option<String>,
    pub object_type: Option<String>,
    pub object_id: Option<String>,
}

/// `auditLog`: operators read everything; a tenant admin reads its own tenant's entries.
pub async fn page(
    db: &sea_orm::DatabaseConnection,
    actor: &Principal,
    filter: Filter,
    page: crate::pagination::Page,
) -> crate::error::ApiResult<crate::pagination::PageOf<audit_log::Model>> {
    use neocloud_schema::vocabulary::Role;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let tenant = match (actor.role, actor.tenant_id, filter.tenant_id) {
        (Role::Operator, _, asked) => asked,
        (Role::TenantAdmin, Some(own), None) => Some(own),
        (Role::TenantAdmin, Some(own), Some(asked)) if own == asked => Some(own),
        (Role::TenantAdmin, Some(_), Some(_)) => {
            return Err(crate::error::ApiError::not_found("tenant"));
        }
        _ => {
            return Err(crate::error::ApiError::forbidden(
                "the audit log needs an operator or tenant admin key",
            ));
        }
    };
    let mut query = audit_log::Entity::find();
    if let Some(tenant) = tenant {
        query = query.filter(audit_log::Column::TenantId.eq(Uuid::from(tenant)));
    }
    if let Some(action) = filter.action {
        query = query.filter(audit_log::Column::Action.eq(action));
    }
    if let Some(object_type) = filter.object_type {
        query = query.filter(audit_log::Column::ObjectType.eq(object_type));
    }
    if let Some(object_id) = filter.object_id {
        query = query.filter(audit_log::Column::ObjectId.eq(object_id));
    }
    Ok(page.fetch(db, query, audit_log::Column::Id).await?)
}
