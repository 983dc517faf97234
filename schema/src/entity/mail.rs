//! A mail to a person (`mail_outbox`): an invitation or a password-reset link, queued in
//! the transaction that issued it and sent over SMTP by a worker. `body` holds a one-time
//! link and is cleared once the mail is sent or given up.

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mail_outbox")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: Option<TenantId>,
    pub recipient: String,
    /// `invitation` or `password_reset`.
    pub kind: String,
    pub subject: String,
    pub body: Option<String>,
    pub created_at: DateTimeUtc,
    /// When the worker tries next (moved on while a worker holds it).
    pub next_attempt_at: DateTimeUtc,
    pub attempts: i32,
    pub sent_at: Option<DateTimeUtc>,
    /// Set when the mail server refused it for good or the tries ran out.
    pub failed_at: Option<DateTimeUtc>,
    pub last_error: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
