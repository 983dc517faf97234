//! What a customer recognises its default payment method by
//! (`payment_accounts.default_payment_method_label`: `Visa •••• 4242, expires 12/2030`),
//! read from Stripe when the method is set. Empty for methods set before.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PaymentAccounts {
    Table,
    DefaultPaymentMethodLabel,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentAccounts::Table)
                    .add_column(string_len_null(
                        PaymentAccounts::DefaultPaymentMethodLabel,
                        100,
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PaymentAccounts::Table)
                    .drop_column(PaymentAccounts::DefaultPaymentMethodLabel)
                    .to_owned(),
            )
            .await
    }
}
