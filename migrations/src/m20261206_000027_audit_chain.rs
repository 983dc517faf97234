//! The audit log becomes tamper-evident: each entry, once sealed, carries its place in
//! the global chain (`seq`) and in its tenant's (`tenant_seq`), each with a hash over the
//! entry and the hash before it. The database refuses to delete an entry or change one
//! beyond sealing it once (a trigger on each backend), so the application cannot rewrite
//! history either; what a database owner does anyway, the chain shows.

use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::{prelude::*, schema::*};

use crate::helpers::index;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden, Clone, Copy)]
enum AuditLog {
    Table,
    TenantId,
    Seq,
    Hash,
    TenantSeq,
    TenantHash,
}

const SEQ_INDEX: &str = "uq_audit_log_seq";
const TENANT_SEQ_INDEX: &str = "uq_audit_log_tenant_seq";

/// PostgreSQL: one function and trigger refuse deletes and any change but the first seal.
const POSTGRES_GUARD: &str = r"
CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'the audit log is append-only';
    END IF;
    IF OLD.seq IS NOT NULL
        OR (NEW.id, NEW.at, NEW.actor_key_id, NEW.actor_role, NEW.tenant_id, NEW.action,
            NEW.object_type, NEW.object_id, NEW.before, NEW.after)
           IS DISTINCT FROM
           (OLD.id, OLD.at, OLD.actor_key_id, OLD.actor_role, OLD.tenant_id, OLD.action,
            OLD.object_type, OLD.object_id, OLD.before, OLD.after)
    THEN
        RAISE EXCEPTION 'an audit entry is sealed once and never changed';
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
";

const POSTGRES_UNGUARD: &str = r"
DROP TRIGGER audit_log_append_only ON audit_log;
DROP FUNCTION audit_log_append_only();
";

/// SQLite: the same rules as two triggers.
const SQLITE_GUARD: [&str; 2] = [
    r"CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
      BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
    r"CREATE TRIGGER audit_log_sealed_once BEFORE UPDATE ON audit_log
      WHEN OLD.seq IS NOT NULL
        OR NEW.id IS NOT OLD.id OR NEW.at IS NOT OLD.at
        OR NEW.actor_key_id IS NOT OLD.actor_key_id OR NEW.actor_role IS NOT OLD.actor_role
        OR NEW.tenant_id IS NOT OLD.tenant_id OR NEW.action IS NOT OLD.action
        OR NEW.object_type IS NOT OLD.object_type OR NEW.object_id IS NOT OLD.object_id
        OR NEW.before IS NOT OLD.before OR NEW.after IS NOT OLD.after
      BEGIN SELECT RAISE(ABORT, 'an audit entry is sealed once and never changed'); END",
];

const SQLITE_UNGUARD: [&str; 2] = [
    "DROP TRIGGER audit_log_no_delete",
    "DROP TRIGGER audit_log_sealed_once",
];

async fn run_all(manager: &SchemaManager<'_>, statements: &[&str]) -> Result<(), DbErr> {
    for sql in statements {
        manager.get_connection().execute_unprepared(sql).await?;
    }
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            big_integer_null(AuditLog::Seq),
            string_len_null(AuditLog::Hash, 64),
            big_integer_null(AuditLog::TenantSeq),
            string_len_null(AuditLog::TenantHash, 64),
        ];
        // One column a statement: SQLite adds no more at once.
        for mut column in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(AuditLog::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_index(index(
                SEQ_INDEX,
                AuditLog::Table,
                vec![AuditLog::Seq.into_iden()],
                true,
            ))
            .await?;
        manager
            .create_index(index(
                TENANT_SEQ_INDEX,
                AuditLog::Table,
                vec![
                    AuditLog::TenantId.into_iden(),
                    AuditLog::TenantSeq.into_iden(),
                ],
                true,
            ))
            .await?;
        match manager.get_database_backend() {
            DbBackend::Postgres => run_all(manager, &[POSTGRES_GUARD]).await,
            _ => run_all(manager, &SQLITE_GUARD).await,
        }
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        match manager.get_database_backend() {
            DbBackend::Postgres => run_all(manager, &[POSTGRES_UNGUARD]).await?,
            _ => run_all(manager, &SQLITE_UNGUARD).await?,
        }
        for name in [SEQ_INDEX, TENANT_SEQ_INDEX] {
            manager
                .drop_index(Index::drop().name(name).table(AuditLog::Table).to_owned())
                .await?;
        }
        for column in [
            AuditLog::Seq,
            AuditLog::Hash,
            AuditLog::TenantSeq,
            AuditLog::TenantHash,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AuditLog::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
