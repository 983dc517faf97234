//! Single sign-on for the operator console (OpenID Connect). `oidc_logins`: a sign-in in
//! flight (the state's SHA-256, the nonce and PKCE verifier it must come back with), used
//! once. `operator_identities`: a person the identity provider vouched for as an
//! operator, by issuer and subject, acting through an operator key of its own whose
//! secret nobody sees.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OidcLogins {
    Table,
    StateHash,
    Nonce,
    CodeVerifier,
    CreatedAt,
}

#[derive(DeriveIden)]
enum OperatorIdentities {
    Table,
    Id,
    Issuer,
    Subject,
    Email,
    ApiKeyId,
    CreatedAt,
    LastSignInAt,
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
                    .table(OidcLogins::Table)
                    .col(string(OidcLogins::StateHash).primary_key())
                    .col(string(OidcLogins::Nonce))
                    .col(string(OidcLogins::CodeVerifier))
                    .col(timestamp_with_time_zone(OidcLogins::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OperatorIdentities::Table)
                    .col(uuid(OperatorIdentities::Id).primary_key())
                    .col(string(OperatorIdentities::Issuer))
                    .col(string(OperatorIdentities::Subject))
                    .col(string(OperatorIdentities::Email))
                    .col(uuid(OperatorIdentities::ApiKeyId))
                    .col(timestamp_with_time_zone(OperatorIdentities::CreatedAt))
                    .col(timestamp_with_time_zone(OperatorIdentities::LastSignInAt))
                    .foreign_key(&mut fk(
                        OperatorIdentities::Table,
                        OperatorIdentities::ApiKeyId,
                        ApiKeys::Table,
                        ApiKeys::Id,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "operator_identities_subject",
                OperatorIdentities::Table,
                vec![
                    OperatorIdentities::Issuer.into_iden(),
                    OperatorIdentities::Subject.into_iden(),
                ],
                true,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(OperatorIdentities::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(OidcLogins::Table).to_owned())
            .await
    }
}
