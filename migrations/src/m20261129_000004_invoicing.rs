//! Invoicing: a tenant's billing anchor day, invoices (the open period's draft and the
//! finalized ones), their lines, gapless invoice numbers, credit grants and what each
//! invoice used of them. Finalized invoices and their lines are immutable: the store never
//! changes them, and a trigger (PostgreSQL and SQLite alike) rejects any statement that
//! would.

use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::{fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tenants {
    Table,
    Id,
    BillingAnchorDay,
}

#[derive(DeriveIden)]
enum Invoices {
    Table,
    Id,
    TenantId,
    Status,
    Number,
    Currency,
    PeriodStart,
    PeriodEnd,
    Subtotal,
    Credits,
    Total,
    Plan,
    Rating,
    FinalizedAt,
    PaidAt,
    VoidedAt,
    VoidReason,
    CreatedAt,
}

#[derive(DeriveIden)]
enum InvoiceLines {
    Table,
    Id,
    InvoiceId,
    TenantId,
    Position,
    Kind,
    Description,
    SkuId,
    SkuName,
    Metric,
    Tier,
    Quantity,
    Unit,
    UnitPrice,
    Amount,
    AmountExact,
    AdjustsInvoiceId,
    Trace,
}

#[derive(DeriveIden)]
enum InvoiceSequences {
    Table,
    Series,
    LastValue,
}

#[derive(DeriveIden)]
enum CreditGrants {
    Table,
    Id,
    TenantId,
    Kind,
    Currency,
    Amount,
    EffectiveAt,
    ExpiresAt,
    Reason,
    CreatedAt,
}

#[derive(DeriveIden)]
enum CreditApplications {
    Table,
    Id,
    GrantId,
    InvoiceId,
    TenantId,
    Amount,
    CreatedAt,
}

/// Columns of a finalized invoice that never change again.
const FROZEN: &[&str] = &[
    "tenant_id",
    "number",
    "currency",
    "period_start",
    "period_end",
    "subtotal",
    "credits",
    "total",
    "plan",
    "finalized_at",
];

fn postgres_triggers() -> Vec<String> {
    let changed = FROZEN
        .iter()
        .map(|c| format!("NEW.{c} IS DISTINCT FROM OLD.{c}"))
        .chain(["NEW.rating::text IS DISTINCT FROM OLD.rating::text".to_owned()])
        .collect::<Vec<_>>()
        .join(" OR ");
    vec![
        format!(
            "CREATE FUNCTION invoices_frozen() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    IF OLD.status <> 'draft' THEN
      RAISE EXCEPTION 'invoice % is finalized and cannot be deleted', OLD.id USING ERRCODE = 'check_violation';
    END IF;
    RETURN OLD;
  END IF;
  IF OLD.status <> 'draft' AND ({changed}) THEN
    RAISE EXCEPTION 'invoice % is finalized and cannot be changed', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.status = 'void' AND NEW.status <> 'void' THEN
    RAISE EXCEPTION 'invoice % is void', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql"
        ),
        "CREATE TRIGGER invoices_frozen BEFORE UPDATE OR DELETE ON invoices \
         FOR EACH ROW EXECUTE FUNCTION invoices_frozen()"
            .to_owned(),
        "CREATE FUNCTION invoice_lines_frozen() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF (SELECT status FROM invoices WHERE id = NEW.invoice_id) <> 'draft' THEN
      RAISE EXCEPTION 'invoice % is finalized: no lines can be added', NEW.invoice_id USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'invoice lines cannot be changed or deleted' USING ERRCODE = 'check_violation';
END $$ LANGUAGE plpgsql"
            .to_owned(),
        "CREATE TRIGGER invoice_lines_frozen BEFORE INSERT OR UPDATE OR DELETE ON invoice_lines \
         FOR EACH ROW EXECUTE FUNCTION invoice_lines_frozen()"
            .to_owned(),
    ]
}

fn sqlite_triggers() -> Vec<String> {
    let changed = FROZEN
        .iter()
        .chain(&["rating"])
        .map(|c| format!("NEW.{c} IS NOT OLD.{c}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    vec![
        format!(
            "CREATE TRIGGER invoices_frozen_update BEFORE UPDATE ON invoices \
             WHEN OLD.status <> 'draft' AND ({changed} OR (OLD.status = 'void' AND NEW.status <> 'void')) \
             BEGIN SELECT RAISE(ABORT, 'invoice is finalized and cannot be changed'); END"
        ),
        "CREATE TRIGGER invoices_frozen_delete BEFORE DELETE ON invoices \
         WHEN OLD.status <> 'draft' \
         BEGIN SELECT RAISE(ABORT, 'invoice is finalized and cannot be deleted'); END"
            .to_owned(),
        "CREATE TRIGGER invoice_lines_frozen_insert BEFORE INSERT ON invoice_lines \
         WHEN (SELECT status FROM invoices WHERE id = NEW.invoice_id) <> 'draft' \
         BEGIN SELECT RAISE(ABORT, 'invoice is finalized: no lines can be added'); END"
            .to_owned(),
        "CREATE TRIGGER invoice_lines_frozen_update BEFORE UPDATE ON invoice_lines \
         BEGIN SELECT RAISE(ABORT, 'invoice lines cannot be changed'); END"
            .to_owned(),
        "CREATE TRIGGER invoice_lines_frozen_delete BEFORE DELETE ON invoice_lines \
         BEGIN SELECT RAISE(ABORT, 'invoice lines cannot be deleted'); END"
            .to_owned(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        add_tenant_billing_anchor_day(manager).await?;
        create_invoices(manager).await?;
        create_invoice_lines(manager).await?;
        create_invoice_sequences(manager).await?;
        create_credit_grants(manager).await?;
        create_credit_applications(manager).await?;
        create_frozen_invoice_triggers(manager).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            CreditApplications::Table.into_iden(),
            CreditGrants::Table.into_iden(),
            InvoiceSequences::Table.into_iden(),
            InvoiceLines::Table.into_iden(),
            Invoices::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        if manager.get_database_backend() == sea_orm::DatabaseBackend::Postgres {
            let conn = manager.get_connection();
            conn.execute_unprepared("DROP FUNCTION IF EXISTS invoices_frozen()")
                .await?;
            conn.execute_unprepared("DROP FUNCTION IF EXISTS invoice_lines_frozen()")
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Tenants::Table)
                    .drop_column(Tenants::BillingAnchorDay)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}

async fn add_tenant_billing_anchor_day(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .alter_table(
            Table::alter()
                .table(Tenants::Table)
                .add_column(integer(Tenants::BillingAnchorDay).default(1))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_invoices(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(Invoices::Table)
                .col(pk_uuid(Invoices::Id))
                .col(uuid(Invoices::TenantId))
                .col(string(Invoices::Status))
                .col(string_null(Invoices::Number).unique_key())
                .col(string(Invoices::Currency))
                .col(timestamp_with_time_zone(Invoices::PeriodStart))
                .col(timestamp_with_time_zone(Invoices::PeriodEnd))
                .col(string(Invoices::Subtotal))
                .col(string(Invoices::Credits))
                .col(string(Invoices::Total))
                .col(string(Invoices::Plan))
                .col(json_null(Invoices::Rating))
                .col(timestamp_with_time_zone_null(Invoices::FinalizedAt))
                .col(timestamp_with_time_zone_null(Invoices::PaidAt))
                .col(timestamp_with_time_zone_null(Invoices::VoidedAt))
                .col(string_null(Invoices::VoidReason))
                .col(timestamp_with_time_zone(Invoices::CreatedAt))
                .foreign_key(&mut fk(
                    Invoices::Table,
                    Invoices::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_invoices_tenant_period",
            Invoices::Table,
            vec![
                Invoices::TenantId.into_iden(),
                Invoices::PeriodStart.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_invoice_lines(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(InvoiceLines::Table)
                .col(pk_uuid(InvoiceLines::Id))
                .col(uuid(InvoiceLines::InvoiceId))
                .col(uuid(InvoiceLines::TenantId))
                .col(integer(InvoiceLines::Position))
                .col(string(InvoiceLines::Kind))
                .col(string(InvoiceLines::Description))
                .col(uuid_null(InvoiceLines::SkuId))
                .col(string_null(InvoiceLines::SkuName))
                .col(string_null(InvoiceLines::Metric))
                .col(integer_null(InvoiceLines::Tier))
                .col(string(InvoiceLines::Quantity))
                .col(string(InvoiceLines::Unit))
                .col(string(InvoiceLines::UnitPrice))
                .col(string(InvoiceLines::Amount))
                .col(string(InvoiceLines::AmountExact))
                .col(uuid_null(InvoiceLines::AdjustsInvoiceId))
                .col(json(InvoiceLines::Trace))
                .foreign_key(&mut fk(
                    InvoiceLines::Table,
                    InvoiceLines::InvoiceId,
                    Invoices::Table,
                    Invoices::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_invoice_lines_invoice",
            InvoiceLines::Table,
            vec![
                InvoiceLines::InvoiceId.into_iden(),
                InvoiceLines::Position.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_invoice_sequences(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(InvoiceSequences::Table)
                .col(string(InvoiceSequences::Series).primary_key())
                .col(big_integer(InvoiceSequences::LastValue))
                .to_owned(),
        )
        .await?;
    Ok(())
}

async fn create_credit_grants(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(CreditGrants::Table)
                .col(pk_uuid(CreditGrants::Id))
                .col(uuid(CreditGrants::TenantId))
                .col(string(CreditGrants::Kind))
                .col(string(CreditGrants::Currency))
                .col(string(CreditGrants::Amount))
                .col(timestamp_with_time_zone(CreditGrants::EffectiveAt))
                .col(timestamp_with_time_zone_null(CreditGrants::ExpiresAt))
                .col(string(CreditGrants::Reason))
                .col(timestamp_with_time_zone(CreditGrants::CreatedAt))
                .foreign_key(&mut fk(
                    CreditGrants::Table,
                    CreditGrants::TenantId,
                    Tenants::Table,
                    Tenants::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_credit_grants_tenant",
            CreditGrants::Table,
            vec![CreditGrants::TenantId.into_iden()],
            false,
        ))
        .await?;
    Ok(())
}

async fn create_credit_applications(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    manager
        .create_table(
            Table::create()
                .table(CreditApplications::Table)
                .col(pk_uuid(CreditApplications::Id))
                .col(uuid(CreditApplications::GrantId))
                .col(uuid(CreditApplications::InvoiceId))
                .col(uuid(CreditApplications::TenantId))
                .col(string(CreditApplications::Amount))
                .col(timestamp_with_time_zone(CreditApplications::CreatedAt))
                .foreign_key(&mut fk(
                    CreditApplications::Table,
                    CreditApplications::GrantId,
                    CreditGrants::Table,
                    CreditGrants::Id,
                ))
                .foreign_key(&mut fk(
                    CreditApplications::Table,
                    CreditApplications::InvoiceId,
                    Invoices::Table,
                    Invoices::Id,
                ))
                .to_owned(),
        )
        .await?;
    manager
        .create_index(index(
            "idx_credit_applications_grant_invoice",
            CreditApplications::Table,
            vec![
                CreditApplications::GrantId.into_iden(),
                CreditApplications::InvoiceId.into_iden(),
            ],
            true,
        ))
        .await?;
    Ok(())
}

async fn create_frozen_invoice_triggers(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let statements = match manager.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => postgres_triggers(),
        _ => sqlite_triggers(),
    };
    let conn = manager.get_connection();
    for statement in statements {
        conn.execute_unprepared(&statement).await?;
    }
    Ok(())
}
