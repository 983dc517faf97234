//! The event log and its webhooks. `events` holds every change a tenant or the operator
//! may care about, written in the transaction of the change, numbered by `seq` in commit
//! order (the single `event_log_head` row hands numbers out, so a feed read after a
//! cursor never skips an event that committed late). `webhook_endpoints` are where
//! tenants (and the operator, `tenant_id` null) want events sent; `webhook_deliveries`
//! is one row per event and endpoint, the outbox the delivery worker claims from; and
//! `webhook_attempts` logs every attempt.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Events {
    Table,
    Id,
    Seq,
    EventType,
    TenantId,
    OccurredAt,
    Payload,
}

#[derive(DeriveIden)]
enum EventLogHead {
    Table,
    Id,
    Last,
}

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    Id,
    TenantId,
    Url,
    Description,
    EventTypes,
    Enabled,
    DisabledReason,
    Secret,
    PreviousSecret,
    PreviousSecretUntil,
    FailingSince,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum WebhookDeliveries {
    Table,
    Id,
    EventId,
    EndpointId,
    TenantId,
    Status,
    Attempts,
    NextAttemptAt,
    RetryUntil,
    Claim,
    LastStatusCode,
    LastError,
    DeliveredAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WebhookAttempts {
    Table,
    Id,
    DeliveryId,
    EndpointId,
    EventId,
    Attempt,
    At,
    StatusCode,
    LatencyMs,
    Error,
    ResponseHead,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        create_events(manager).await?;
        create_endpoints(manager).await?;
        create_deliveries(manager).await?;
        create_attempts(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            WebhookAttempts::Table.into_iden(),
            WebhookDeliveries::Table.into_iden(),
            WebhookEndpoints::Table.into_iden(),
            EventLogHead::Table.into_iden(),
            Events::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

async fn create_events(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Events::Table)
                .col(uuid(Events::Id).primary_key())
                .col(big_integer(Events::Seq).unique_key())
                .col(string(Events::EventType))
                .col(uuid_null(Events::TenantId))
                .col(timestamp_with_time_zone(Events::OccurredAt))
                .col(json(Events::Payload))
                .foreign_key(&mut fk(
                    Events::Table,
                    Events::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_events_tenant_seq",
            Events::Table,
            vec![Events::TenantId.into_iden(), Events::Seq.into_iden()],
            false,
        ))
        .await?;
    manager
        .create_table(
            Table::create()
                .table(EventLogHead::Table)
                .col(integer(EventLogHead::Id).primary_key())
                .col(big_integer(EventLogHead::Last))
                .to_owned(),
        )
        .await?;
    manager
        .exec_stmt(
            Query::insert()
                .into_table(EventLogHead::Table)
                .columns([EventLogHead::Id, EventLogHead::Last])
                .values_panic([1.into(), 0i64.into()])
                .to_owned(),
        )
        .await
}

async fn create_endpoints(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(WebhookEndpoints::Table)
                .col(uuid(WebhookEndpoints::Id).primary_key())
                .col(uuid_null(WebhookEndpoints::TenantId))
                .col(string(WebhookEndpoints::Url))
                .col(string(WebhookEndpoints::Description))
                .col(json(WebhookEndpoints::EventTypes))
                .col(boolean(WebhookEndpoints::Enabled))
                .col(string_null(WebhookEndpoints::DisabledReason))
                .col(string(WebhookEndpoints::Secret))
                .col(string_null(WebhookEndpoints::PreviousSecret))
                .col(timestamp_with_time_zone_null(
                    WebhookEndpoints::PreviousSecretUntil,
                ))
                .col(timestamp_with_time_zone_null(
                    WebhookEndpoints::FailingSince,
                ))
                .col(timestamp_with_time_zone(WebhookEndpoints::CreatedAt))
                .col(timestamp_with_time_zone(WebhookEndpoints::UpdatedAt))
                .foreign_key(&mut fk(
                    WebhookEndpoints::Table,
                    WebhookEndpoints::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_webhook_endpoints_tenant",
            WebhookEndpoints::Table,
            vec![WebhookEndpoints::TenantId.into_iden()],
            false,
        ))
        .await
}

async fn create_deliveries(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(WebhookDeliveries::Table)
                .col(uuid(WebhookDeliveries::Id).primary_key())
                .col(uuid(WebhookDeliveries::EventId))
                .col(uuid(WebhookDeliveries::EndpointId))
                .col(uuid_null(WebhookDeliveries::TenantId))
                .col(string(WebhookDeliveries::Status))
                .col(integer(WebhookDeliveries::Attempts))
                .col(timestamp_with_time_zone(WebhookDeliveries::NextAttemptAt))
                .col(timestamp_with_time_zone(WebhookDeliveries::RetryUntil))
                .col(uuid_null(WebhookDeliveries::Claim))
                .col(integer_null(WebhookDeliveries::LastStatusCode))
                .col(string_null(WebhookDeliveries::LastError))
                .col(timestamp_with_time_zone_null(
                    WebhookDeliveries::DeliveredAt,
                ))
                .col(timestamp_with_time_zone(WebhookDeliveries::CreatedAt))
                .foreign_key(&mut fk(
                    WebhookDeliveries::Table,
                    WebhookDeliveries::EventId,
                    Events::Table,
                    Events::Id,
                ))
                .foreign_key(&mut fk(
                    WebhookDeliveries::Table,
                    WebhookDeliveries::EndpointId,
                    WebhookEndpoints::Table,
                    WebhookEndpoints::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_webhook_deliveries_event_endpoint",
            WebhookDeliveries::Table,
            vec![
                WebhookDeliveries::EventId.into_iden(),
                WebhookDeliveries::EndpointId.into_iden(),
            ],
            true,
        ))
        .await?;
    manager
        .create_index(index(
            "idx_webhook_deliveries_due",
            WebhookDeliveries::Table,
            vec![
                WebhookDeliveries::Status.into_iden(),
                WebhookDeliveries::NextAttemptAt.into_iden(),
            ],
            false,
        ))
        .await?;
    manager
        .create_index(index(
            "idx_webhook_deliveries_endpoint",
            WebhookDeliveries::Table,
            vec![
                WebhookDeliveries::EndpointId.into_iden(),
                WebhookDeliveries::CreatedAt.into_iden(),
            ],
            false,
        ))
        .await
}

async fn create_attempts(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(WebhookAttempts::Table)
                .col(uuid(WebhookAttempts::Id).primary_key())
                .col(uuid(WebhookAttempts::DeliveryId))
                .col(uuid(WebhookAttempts::EndpointId))
                .col(uuid(WebhookAttempts::EventId))
                .col(integer(WebhookAttempts::Attempt))
                .col(timestamp_with_time_zone(WebhookAttempts::At))
                .col(integer_null(WebhookAttempts::StatusCode))
                .col(big_integer(WebhookAttempts::LatencyMs))
                .col(string_null(WebhookAttempts::Error))
                .col(string_null(WebhookAttempts::ResponseHead))
                .foreign_key(&mut fk(
                    WebhookAttempts::Table,
                    WebhookAttempts::DeliveryId,
                    WebhookDeliveries::Table,
                    WebhookDeliveries::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_webhook_attempts_endpoint_at",
            WebhookAttempts::Table,
            vec![
                WebhookAttempts::EndpointId.into_iden(),
                WebhookAttempts::At.into_iden(),
            ],
            false,
        ))
        .await
}
