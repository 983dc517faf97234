//! The NATS users the server minted for nodes' agents: each credential's user public key,
//! its node, when it was issued and expires, and when it was revoked (the node's agent
//! token rotated or the node retired). The revoked ones that have not expired yet are the
//! usage account's revocation list, which nats-server is given at once.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum NatsUsers {
    Table,
    UserKey,
    NodeId,
    IssuedAt,
    ExpiresAt,
    RevokedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(NatsUsers::Table)
                    .col(string(NatsUsers::UserKey).primary_key())
                    .col(uuid(NatsUsers::NodeId))
                    .col(timestamp_with_time_zone(NatsUsers::IssuedAt))
                    .col(timestamp_with_time_zone_null(NatsUsers::ExpiresAt))
                    .col(timestamp_with_time_zone_null(NatsUsers::RevokedAt))
                    .foreign_key(&mut fk(
                        NatsUsers::Table,
                        NatsUsers::NodeId,
                        Nodes::Table,
                        Nodes::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_nats_users_node",
                NatsUsers::Table,
                vec![NatsUsers::NodeId.into_iden()],
                false,
            ))
            .await?;
        // The revocation list is read every second: the revoked users, not every user.
        manager
            .create_index(index(
                "idx_nats_users_revoked",
                NatsUsers::Table,
                vec![NatsUsers::RevokedAt.into_iden()],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(NatsUsers::Table).to_owned())
            .await
    }
}
