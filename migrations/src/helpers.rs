//! Small builders shared by migrations (they never change behaviour once a migration
//! has shipped: a migration that needs something else gets a new helper).

use sea_orm_migration::prelude::*;

/// A foreign key from `from.col` to `to.id`.
pub(crate) fn fk(
    from: impl IntoIden + 'static,
    col: impl IntoIden + 'static,
    to: impl IntoIden + 'static,
    to_col: impl IntoIden + 'static,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from_tbl(from)
        .from_col(col)
        .to_tbl(to)
        .to_col(to_col)
        .on_delete(ForeignKeyAction::Restrict)
        .to_owned()
}

pub(crate) fn index(
    name: &str,
    table: impl IntoIden + 'static,
    cols: Vec<DynIden>,
    unique: bool,
) -> IndexCreateStatement {
    let mut stmt = Index::create();
    stmt.name(name).table(table);
    for col in cols {
        stmt.col(col);
    }
    if unique {
        stmt.unique();
    }
    stmt.to_owned()
}

/// An exact-decimal column: `NUMERIC` on PostgreSQL, text on SQLite; nullable unless
/// made `not_null()`.
pub(crate) fn exact(
    backend: sea_orm_migration::sea_orm::DbBackend,
    col: impl IntoIden,
) -> ColumnDef {
    let mut def = ColumnDef::new(col);
    if backend == sea_orm_migration::sea_orm::DbBackend::Postgres {
        def.custom(Alias::new("numeric"));
    } else {
        def.text();
    }
    def.to_owned()
}

/// Columns of a finalized invoice that never change again, as of migration 028 (those of
/// 004 and `due_at`).
pub(crate) const INVOICE_FROZEN_028: &[&str] = &[
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
    "due_at",
];

/// Makes the update triggers of `invoices` (004's) freeze `frozen` and the JSON columns
/// `json` of a finalized invoice, keeping their other rules: a finalized invoice is never
/// deleted, a void one never un-voided.
pub(crate) async fn freeze_invoices(
    manager: &SchemaManager<'_>,
    frozen: &[&str],
    json: &[&str],
) -> Result<(), DbErr> {
    use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};
    let sql = match manager.get_database_backend() {
        DbBackend::Postgres => {
            let changed = frozen
                .iter()
                .map(|c| format!("NEW.{c} IS DISTINCT FROM OLD.{c}"))
                .chain(
                    json.iter()
                        .map(|c| format!("NEW.{c}::text IS DISTINCT FROM OLD.{c}::text")),
                )
                .collect::<Vec<_>>()
                .join(" OR ");
            format!(
                "CREATE OR REPLACE FUNCTION invoices_frozen() RETURNS trigger AS $$
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
            )
        }
        _ => {
            let changed = frozen
                .iter()
                .chain(json)
                .map(|c| format!("NEW.{c} IS NOT OLD.{c}"))
                .collect::<Vec<_>>()
                .join(" OR ");
            // One execution: the drop and the new trigger on one connection of the pool.
            format!(
                "DROP TRIGGER invoices_frozen_update; \
                 CREATE TRIGGER invoices_frozen_update BEFORE UPDATE ON invoices \
                 WHEN OLD.status <> 'draft' AND ({changed} OR (OLD.status = 'void' AND NEW.status <> 'void')) \
                 BEGIN SELECT RAISE(ABORT, 'invoice is finalized and cannot be changed'); END"
            )
        }
    };
    manager.get_connection().execute_unprepared(&sql).await?;
    Ok(())
}
