//! SQL for API keys. Tenant-scoped lookups filter by tenant here, never in callers.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::api_key::{self, Entity as ApiKeys};
use neocloud_schema::ids::{ApiKeyId, NodeId, ProviderId, TenantId};
use neocloud_schema::vocabulary::Role;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use serde_json::{Value, json};
use uuid::Uuid;

pub(super) struct NewKey<'a> {
    pub prefix: &'a str,
    pub secret_hash: &'a str,
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub node_id: Option<NodeId>,
    pub label: &'a str,
    pub created_by: Option<ApiKeyId>,
    pub provider_id: Option<ProviderId>,
}

/// Which keys a listing covers.
#[derive(Debug, Clone, Copy)]
pub enum KeyScope {
    Operators,
    Tenant(TenantId),
    /// A provider's own keys.
    Provider(ProviderId),
}

pub(super) async fn insert<C: ConnectionTrait>(
    conn: &C,
    new: NewKey<'_>,
) -> Result<api_key::Model, DbErr> {
    api_key::ActiveModel {
        id: Set(ApiKeyId::new()),
        prefix: Set(new.prefix.to_owned()),
        secret_hash: Set(new.secret_hash.to_owned()),
        role: Set(new.role),
        tenant_id: Set(new.tenant_id),
        node_id: Set(new.node_id),
        provider_id: Set(new.provider_id),
        label: Set(new.label.to_owned()),
        created_by: Set(new.created_by),
        created_at: Set(Utc::now()),
        last_used_at: Set(None),
        revoked_at: Set(None),
    }
    .insert(conn)
    .await
}

pub(super) async fn find_by_prefix<C: ConnectionTrait>(
    conn: &C,
    prefix: &str,
) -> Result<Option<api_key::Model>, DbErr> {
    ApiKeys::find()
        .filter(api_key::Column::Prefix.eq(prefix))
        .one(conn)
        .await
}

/// A key by id, whoever owns it (a session's own key).
pub(super) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: ApiKeyId,
) -> Result<Option<api_key::Model>, DbErr> {
    ApiKeys::find_by_id(Uuid::from(id)).one(conn).await
}

/// A key by id, only if it belongs to `tenant` (`None`: any key, for operators).
pub(super) async fn find_in_scope<C: ConnectionTrait>(
    conn: &C,
    id: ApiKeyId,
    tenant: Option<TenantId>,
) -> Result<Option<api_key::Model>, DbErr> {
    let mut query = ApiKeys::find_by_id(Uuid::from(id));
    if let Some(tenant) = tenant {
        query = query.filter(api_key::Column::TenantId.eq(Uuid::from(tenant)));
    }
    query.one(conn).await
}

/// A provider key by id, only if it belongs to `provider`.
pub(super) async fn find_of_provider<C: ConnectionTrait>(
    conn: &C,
    id: ApiKeyId,
    provider: ProviderId,
) -> Result<Option<api_key::Model>, DbErr> {
    ApiKeys::find_by_id(Uuid::from(id))
        .filter(api_key::Column::ProviderId.eq(provider))
        .filter(api_key::Column::Role.eq(Role::Provider))
        .one(conn)
        .await
}

pub(super) async fn list<C: ConnectionTrait>(
    conn: &C,
    scope: KeyScope,
) -> Result<Vec<api_key::Model>, DbErr> {
    let query = ApiKeys::find().order_by_asc(api_key::Column::Id);
    let query = match scope {
        KeyScope::Operators => query
            .filter(api_key::Column::Role.eq(Role::Operator))
            .filter(api_key::Column::TenantId.is_null()),
        KeyScope::Tenant(tenant) => query
            .filter(api_key::Column::TenantId.eq(Uuid::from(tenant)))
            .filter(api_key::Column::Role.ne(Role::Agent)),
        KeyScope::Provider(provider) => query
            .filter(api_key::Column::ProviderId.eq(provider))
            .filter(api_key::Column::Role.eq(Role::Provider)),
    };
    query.all(conn).await
}

/// The agent tokens of `nodes`, revoked ones too, oldest first.
pub(super) async fn agent_tokens_of<C: ConnectionTrait>(
    conn: &C,
    nodes: &[NodeId],
) -> Result<Vec<api_key::Model>, DbErr> {
    ApiKeys::find()
        .filter(api_key::Column::Role.eq(Role::Agent))
        .filter(api_key::Column::NodeId.is_in(nodes.iter().map(|n| Uuid::from(*n))))
        .order_by_asc(api_key::Column::CreatedAt)
        .order_by_asc(api_key::Column::Id)
        .all(conn)
        .await
}

pub(super) async fn touch<C: ConnectionTrait>(
    conn: &C,
    id: ApiKeyId,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    ApiKeys::update_many()
        .col_expr(
            api_key::Column::LastUsedAt,
            sea_orm::sea_query::Expr::value(at),
        )
        .filter(api_key::Column::Id.eq(id))
        .exec(conn)
        .await
        .map(|_| ())
}

pub(super) async fn revoke<C: ConnectionTrait>(
    conn: &C,
    key: &api_key::Model,
    at: DateTime<Utc>,
) -> Result<api_key::Model, DbErr> {
    let mut active: api_key::ActiveModel = key.clone().into();
    active.revoked_at = Set(Some(at));
    active.update(conn).await
}

/// What the audit log keeps of a key: never the hash.
pub(crate) fn describe(key: &api_key::Model) -> Value {
    json!({
        "id": key.id,
        "prefix": key.prefix,
        "role": key.role,
        "tenant_id": key.tenant_id,
        "node_id": key.node_id,
        "provider_id": key.provider_id,
        "label": key.label,
        "revoked_at": key.revoked_at,
    })
}

/// Erasure: revokes every key of the tenant and empties their labels; keys touched.
pub(crate) async fn erase<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    use sea_orm::sea_query::Expr;
    ApiKeys::update_many()
        .col_expr(api_key::Column::RevokedAt, Expr::value(now))
        .filter(api_key::Column::TenantId.eq(tenant))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(conn)
        .await?;
    let labelled = ApiKeys::update_many()
        .col_expr(api_key::Column::Label, Expr::value(""))
        .filter(api_key::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(labelled.rows_affected)
}
