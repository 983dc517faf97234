//! Migration 031: credit notes and their lines are never changed (but a refund's
//! progress) nor deleted, on SQLite and PostgreSQL; its `down` takes them away.

mod support;

use neocloud_migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DatabaseConnection};

async fn notes_are_kept_as_issued(db: &DatabaseConnection) {
    Migrator::up(db, Some(31)).await.expect("up to 031");
    let (tenant, invoice, note) = (
        uuid::Uuid::now_v7(),
        uuid::Uuid::now_v7(),
        uuid::Uuid::now_v7(),
    );
    let statements = [
        format!(
            "INSERT INTO tenants (id, name, currency, status, created_at) VALUES ('{tenant}', 'acme', 'EUR', 'active', '2026-11-01T00:00:00Z')"
        ),
        format!(
            "INSERT INTO invoices (id, tenant_id, status, number, currency, period_start, period_end, subtotal, credits, total, plan, finalized_at, created_at) VALUES ('{invoice}', '{tenant}', 'open', 'NC-2026-000001', 'EUR', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', '10.00', '0', '10.00', 'p', '2026-12-01T00:00:00Z', '2026-12-01T00:00:00Z')"
        ),
        format!(
            "INSERT INTO credit_notes (id, tenant_id, invoice_id, number, currency, reason, form, subtotal, tax, total, taxes, applied, to_balance, refunded, refund_state, issued_at) VALUES ('{note}', '{tenant}', '{invoice}', 'NC-CN-2026-000001', 'EUR', 'r', 'amount', '1.00', '0', '1.00', '[]', '0', '0', '1.00', 'pending', '2026-12-02T00:00:00Z')"
        ),
        format!(
            "INSERT INTO credit_note_lines (id, credit_note_id, tenant_id, invoice_line_id, line_number, description, amount) VALUES ('{}', '{note}', '{tenant}', '{}', 1, 'd', '1.00')",
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7()
        ),
    ];
    for sql in &statements {
        db.execute_unprepared(sql).await.expect(sql);
    }
    db.execute_unprepared("UPDATE credit_notes SET refund_state = 'done'")
        .await
        .expect("a refund's progress moves on");
    for refused in [
        "UPDATE credit_notes SET total = '2.00'",
        "UPDATE credit_notes SET refunded = '0'",
        "DELETE FROM credit_notes",
        "UPDATE credit_note_lines SET amount = '2.00'",
        "DELETE FROM credit_note_lines",
    ] {
        assert!(db.execute_unprepared(refused).await.is_err(), "{refused}");
    }
    Migrator::down(db, Some(1)).await.expect("down 031");
    assert!(
        db.execute_unprepared("SELECT 1 FROM credit_notes")
            .await
            .is_err(),
        "the table is gone"
    );
}

#[tokio::test]
async fn credit_notes_are_kept_as_issued_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    notes_are_kept_as_issued(&support::sqlite(&dir).await).await;
}

#[tokio::test]
async fn credit_notes_are_kept_as_issued_on_postgres() {
    let Some(pg) = support::Pg::create().await else {
        return;
    };
    notes_are_kept_as_issued(&pg.db).await;
    pg.drop().await;
}
