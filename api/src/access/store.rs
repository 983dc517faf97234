//! SQL for `ssh_keys`: every read and change names the tenant that owns the key.

use neocloud_schema::entity::ssh_key;
use neocloud_schema::ids::{SshKeyId, TenantId};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel,
    PaginatorTrait, QueryFilter, QueryOrder,
};

pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    key: ssh_key::Model,
) -> Result<ssh_key::Model, DbErr> {
    key.into_active_model().insert(conn).await
}

pub(crate) async fn of_tenant<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<ssh_key::Model>, DbErr> {
    ssh_key::Entity::find()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .order_by_asc(ssh_key::Column::CreatedAt)
        .order_by_asc(ssh_key::Column::Id)
        .all(conn)
        .await
}

pub(crate) async fn count<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    ssh_key::Entity::find()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .count(conn)
        .await
}

pub(crate) async fn find_by_fingerprint<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    fingerprint: &str,
) -> Result<Option<ssh_key::Model>, DbErr> {
    ssh_key::Entity::find()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .filter(ssh_key::Column::Fingerprint.eq(fingerprint))
        .one(conn)
        .await
}

/// The keys among `ids` that belong to `tenant` (others are not there for it).
pub(crate) async fn find_many<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    ids: &[SshKeyId],
) -> Result<Vec<ssh_key::Model>, DbErr> {
    ssh_key::Entity::find()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .filter(ssh_key::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(ssh_key::Column::CreatedAt)
        .order_by_asc(ssh_key::Column::Id)
        .all(conn)
        .await
}

/// Deletes `tenant`'s key `id`; true when there was one.
pub(crate) async fn delete<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    id: SshKeyId,
) -> Result<bool, DbErr> {
    let done = ssh_key::Entity::delete_many()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .filter(ssh_key::Column::Id.eq(id))
        .exec(conn)
        .await?;
    Ok(done.rows_affected > 0)
}

/// Erasure: deletes every key of the tenant; rows deleted.
pub(crate) async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    let deleted = ssh_key::Entity::delete_many()
        .filter(ssh_key::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(deleted.rows_affected)
}
