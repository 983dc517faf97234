//! SQL for browser sessions.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::web_session::{self, Entity as WebSessions};
use neocloud_schema::ids::ApiKeyId;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};
use uuid::Uuid;

pub(super) struct NewSession<'a> {
    pub token_hash: &'a str,
    pub csrf_token: &'a str,
    pub api_key_id: ApiKeyId,
    pub user_id: Option<Uuid>,
    pub oidc_sid: Option<&'a str>,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub(super) async fn insert<C: ConnectionTrait>(
    conn: &C,
    new: NewSession<'_>,
) -> Result<web_session::Model, DbErr> {
    web_session::ActiveModel {
        id: Set(Uuid::new_v4()),
        token_hash: Set(new.token_hash.to_owned()),
        csrf_token: Set(new.csrf_token.to_owned()),
        api_key_id: Set(new.api_key_id),
        user_id: Set(new.user_id),
        created_at: Set(new.now),
        last_seen_at: Set(new.now),
        expires_at: Set(new.expires_at),
        ended_at: Set(None),
        oidc_sid: Set(new.oidc_sid.map(str::to_owned)),
    }
    .insert(conn)
    .await
}

pub(super) async fn find_by_hash<C: ConnectionTrait>(
    conn: &C,
    token_hash: &str,
) -> Result<Option<web_session::Model>, DbErr> {
    WebSessions::find()
        .filter(web_session::Column::TokenHash.eq(token_hash))
        .one(conn)
        .await
}

pub(super) async fn touch<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    WebSessions::update_many()
        .col_expr(web_session::Column::LastSeenAt, Expr::value(now))
        .filter(web_session::Column::Id.eq(id))
        .exec(conn)
        .await
        .map(drop)
}

/// Ends a session that is still open; whether it was.
pub(super) async fn end<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let ended = WebSessions::update_many()
        .col_expr(web_session::Column::EndedAt, Expr::value(now))
        .filter(web_session::Column::Id.eq(id))
        .filter(web_session::Column::EndedAt.is_null())
        .exec(conn)
        .await?;
    Ok(ended.rows_affected == 1)
}

/// Ends every open session of a portal user (its password was reset).
pub(crate) async fn end_all_of_user<C: ConnectionTrait>(
    conn: &C,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let ended = WebSessions::update_many()
        .col_expr(web_session::Column::EndedAt, Expr::value(now))
        .filter(web_session::Column::UserId.eq(user))
        .filter(web_session::Column::EndedAt.is_null())
        .exec(conn)
        .await?;
    Ok(ended.rows_affected)
}

/// Ends the open sessions a back-channel logout names: those of the provider session
/// `sid` (a session id names one sign-in at the provider, so a replayed token can end
/// nothing else), or without one every session of the key `key` opened before `before`
/// (so that a replayed token ends nothing opened since). Their ids.
pub(crate) async fn end_logged_out<C: ConnectionTrait>(
    conn: &C,
    named: LoggedOut<'_>,
    before: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbErr> {
    let open = WebSessions::find().filter(web_session::Column::EndedAt.is_null());
    let open = match named {
        LoggedOut::Session(sid) => open.filter(web_session::Column::OidcSid.eq(sid)),
        LoggedOut::Key(key) => open
            .filter(web_session::Column::ApiKeyId.eq(key))
            .filter(web_session::Column::CreatedAt.lt(before)),
    };
    let mut ended = Vec::new();
    for session in open.all(conn).await? {
        if end(conn, session.id, now).await? {
            ended.push(session.id);
        }
    }
    Ok(ended)
}

/// What a back-channel logout names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LoggedOut<'a> {
    /// The identity provider's session (`sid`).
    Session(&'a str),
    /// Every session of the operator key of the identity (`sub` without `sid`).
    Key(ApiKeyId),
}
