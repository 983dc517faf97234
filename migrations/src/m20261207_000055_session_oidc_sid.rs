//! The identity provider's session a console session came from (`web_sessions.oidc_sid`,
//! the ID token's `sid`), so that the provider's back-channel logout ends exactly the
//! sessions it opened. Empty for sessions opened otherwise.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WebSessions {
    Table,
    OidcSid,
}

const INDEX: &str = "web_sessions_oidc_sid";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(WebSessions::Table)
                    .add_column(string_len_null(WebSessions::OidcSid, 255))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(WebSessions::Table)
                    .col(WebSessions::OidcSid)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(INDEX)
                    .table(WebSessions::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(WebSessions::Table)
                    .drop_column(WebSessions::OidcSid)
                    .to_owned(),
            )
            .await
    }
}
