//! What several processes need:
//! - `ingest_rejections`: a message a transport (JetStream) delivered that can never be
//!   ingested (not a batch, a batch that breaks the contract, a subject naming no node, a
//!   batch that does not speak for its subject's node), set aside with the reason and a
//!   bounded copy of the payload, so the stream behind it goes on and operators see it;
//! - `payment_outbox.claim`: the token of the worker delivering a row, so only that
//!   worker records its outcome (a worker whose claim lapsed writes nothing).

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IngestRejections {
    Table,
    Id,
    Transport,
    Subject,
    MessageId,
    NodeId,
    Reason,
    Payload,
    RejectedAt,
}

#[derive(DeriveIden)]
enum PaymentOutbox {
    Table,
    Claim,
}

const INDEX: &str = "idx_ingest_rejections_rejected_at";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IngestRejections::Table)
                    .col(uuid(IngestRejections::Id).primary_key())
                    .col(string(IngestRejections::Transport))
                    .col(string(IngestRejections::Subject))
                    .col(string_null(IngestRejections::MessageId))
                    .col(uuid_null(IngestRejections::NodeId))
                    .col(string(IngestRejections::Reason))
                    .col(blob(IngestRejections::Payload))
                    .col(timestamp_with_time_zone(IngestRejections::RejectedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                INDEX,
                IngestRejections::Table,
                vec![IngestRejections::RejectedAt.into_iden()],
                false,
            ))
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentOutbox::Table)
                    .add_column(uuid_null(PaymentOutbox::Claim))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentOutbox::Table)
                    .drop_column(PaymentOutbox::Claim)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(IngestRejections::Table).to_owned())
            .await
    }
}
