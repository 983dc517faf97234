//! The NATS users minted for nodes' agents (`nats_users`): recorded as they are minted,
//! revoked with the node's agent tokens (rotation, revocation, retirement), and listed as
//! the usage account's revocation list (`nats::revocation` hands it to nats-server).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{nats_user, node};
use neocloud_schema::ids::NodeId;
use sea_orm::sea_query::{Condition, Expr};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};

use crate::error::{ApiError, ApiResult};
use crate::nats::credentials::Authority;

/// A new credential (`.creds`) for `node`'s agent, recorded so it can be revoked.
pub async fn mint<C: ConnectionTrait>(
    conn: &C,
    authority: &Authority,
    node: &node::Model,
    now: DateTime<Utc>,
) -> ApiResult<String> {
    let minted = authority
        .node_credentials(node.id, &node.region, now.timestamp())
        // Regions are slugs, always one subject token.
        .map_err(|e| ApiError::invariant(e.to_string()))?;
    let at = |seconds: i64| DateTime::from_timestamp(seconds, 0).unwrap_or(now);
    insert(
        conn,
        nats_user::ActiveModel {
            user_key: Set(minted.user),
            node_id: Set(node.id),
            issued_at: Set(at(minted.issued)),
            expires_at: Set(minted.expires.map(at)),
            revoked_at: Set(None),
        },
    )
    .await?;
    Ok(minted.creds)
}

async fn insert<C: ConnectionTrait>(conn: &C, row: nats_user::ActiveModel) -> Result<(), DbErr> {
    nats_user::Entity::insert(row).exec(conn).await.map(drop)
}

/// Not expired at `now`.
fn live(now: DateTime<Utc>) -> Condition {
    Condition::any()
        .add(nats_user::Column::ExpiresAt.is_null())
        .add(nats_user::Column::ExpiresAt.gt(now))
}

/// Revokes every live credential of `node`'s agent, inside the caller's transaction; how
/// many.
pub(crate) async fn revoke_node<C: ConnectionTrait>(
    conn: &C,
    node: NodeId,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let done = nats_user::Entity::update_many()
        .col_expr(nats_user::Column::RevokedAt, Expr::value(now))
        .filter(nats_user::Column::NodeId.eq(node))
        .filter(nats_user::Column::RevokedAt.is_null())
        .filter(live(now))
        .exec(conn)
        .await?;
    Ok(done.rows_affected)
}

/// The revocation list as of `now`: each revoked user that has not expired, with the
/// instant its credential was issued (nats-server refuses a user's JWTs issued at or
/// before it; each user has one).
pub async fn revoked<C: ConnectionTrait>(
    conn: &C,
    now: DateTime<Utc>,
) -> Result<BTreeMap<String, i64>, DbErr> {
    let rows = nats_user::Entity::find()
        .filter(nats_user::Column::RevokedAt.is_not_null())
        .filter(live(now))
        .all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|u| (u.user_key, u.issued_at.timestamp()))
        .collect())
}

/// Forgets the users whose credentials expired before `before`: nats-server refuses them
/// on its own.
pub async fn prune<C: ConnectionTrait>(conn: &C, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let done = nats_user::Entity::delete_many()
        .filter(nats_user::Column::ExpiresAt.lt(before))
        .exec(conn)
        .await?;
    Ok(done.rows_affected)
}
