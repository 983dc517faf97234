//! Mail to people (`mail_outbox`): invitations and password-reset links, queued in the
//! transaction that issues them and sent by a worker over SMTP. The body holds a one-time
//! link, so it is cleared once the mail is sent or given up.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MailOutbox {
    Table,
    Id,
    TenantId,
    Recipient,
    Kind,
    Subject,
    Body,
    CreatedAt,
    NextAttemptAt,
    Attempts,
    SentAt,
    FailedAt,
    LastError,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MailOutbox::Table)
                    .col(uuid(MailOutbox::Id).primary_key())
                    .col(uuid_null(MailOutbox::TenantId))
                    .col(string_len(MailOutbox::Recipient, 254))
                    .col(string_len(MailOutbox::Kind, 32))
                    .col(string_len(MailOutbox::Subject, 200))
                    .col(text_null(MailOutbox::Body))
                    .col(timestamp_with_time_zone(MailOutbox::CreatedAt))
                    .col(timestamp_with_time_zone(MailOutbox::NextAttemptAt))
                    .col(integer(MailOutbox::Attempts).default(0))
                    .col(timestamp_with_time_zone_null(MailOutbox::SentAt))
                    .col(timestamp_with_time_zone_null(MailOutbox::FailedAt))
                    .col(string_len_null(MailOutbox::LastError, 500))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_mail_outbox_due",
                MailOutbox::Table,
                vec![MailOutbox::NextAttemptAt.into_iden()],
                false,
            ))
            .await?;
        manager
            .create_index(index(
                "idx_mail_outbox_recipient",
                MailOutbox::Table,
                vec![
                    MailOutbox::Recipient.into_iden(),
                    MailOutbox::CreatedAt.into_iden(),
                ],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MailOutbox::Table).to_owned())
            .await
    }
}
