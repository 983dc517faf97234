//! `web_sessions`: a browser's signed-in session (the portal and the console). Only a
//! SHA-256 hash of the cookie's secret is stored; a session acts as the API key it was
//! opened with (a portal user's own key when a person signed in with a password), so
//! revoking the key ends it. Deleted with its key.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WebSessions {
    Table,
    Id,
    TokenHash,
    CsrfToken,
    ApiKeyId,
    UserId,
    CreatedAt,
    LastSeenAt,
    ExpiresAt,
    EndedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WebSessions::Table)
                    .col(uuid(WebSessions::Id).primary_key())
                    .col(string(WebSessions::TokenHash))
                    .col(string(WebSessions::CsrfToken))
                    .col(uuid(WebSessions::ApiKeyId))
                    .col(uuid_null(WebSessions::UserId))
                    .col(timestamp_with_time_zone(WebSessions::CreatedAt))
                    .col(timestamp_with_time_zone(WebSessions::LastSeenAt))
                    .col(timestamp_with_time_zone(WebSessions::ExpiresAt))
                    .col(timestamp_with_time_zone_null(WebSessions::EndedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from_tbl(WebSessions::Table)
                            .from_col(WebSessions::ApiKeyId)
                            .to_tbl(ApiKeys::Table)
                            .to_col(ApiKeys::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "web_sessions_token_hash",
                WebSessions::Table,
                vec![WebSessions::TokenHash.into_iden()],
                true,
            ))
            .await?;
        manager
            .create_index(index(
                "web_sessions_api_key",
                WebSessions::Table,
                vec![WebSessions::ApiKeyId.into_iden()],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(WebSessions::Table).to_owned())
            .await
    }
}
