//! Reminders of owed invoices, by their due date (finalization plus the tenant's net
//! terms): `invoice.due_soon` three days before; at the due date the invoice becomes
//! `overdue` and `invoice.overdue` goes out; `invoice.payment_reminder` 7, 14 and 30 days
//! after. Each is recorded in `invoice_reminders` with its event, in one transaction, and
//! goes out once (the row's key), whichever replica sweeps. A reminder whose window has
//! passed (the next one is due too) is skipped: an invoice found 20 days overdue gets
//! `overdue` and the 14-day reminder, not three at once.

use chrono::{DateTime, Duration, Utc};
use neocloud_schema::entity::{invoice, invoice_reminder};
use neocloud_schema::vocabulary::InvoiceStatus;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::json;

/// One reminder: its key, its event, and when it is due relative to the due date.
struct Reminder {
    kind: &'static str,
    event: &'static str,
    days_after_due: i64,
}

const SCHEDULE: [Reminder; 5] = [
    Reminder {
        kind: "due_soon",
        event: "invoice.due_soon",
        days_after_due: -3,
    },
    Reminder {
        kind: "overdue",
        event: "invoice.overdue",
        days_after_due: 0,
    },
    Reminder {
        kind: "overdue_7",
        event: "invoice.payment_reminder",
        days_after_due: 7,
    },
    Reminder {
        kind: "overdue_14",
        event: "invoice.payment_reminder",
        days_after_due: 14,
    },
    Reminder {
        kind: "overdue_30",
        event: "invoice.payment_reminder",
        days_after_due: 30,
    },
];

/// Invoices reminded per kind and sweep.
const PAGE: u64 = 500;

/// Sends every reminder due at `now`; how many went out. Run inside a write transaction.
pub async fn send_due<C: ConnectionTrait>(conn: &C, now: DateTime<Utc>) -> Result<usize, DbErr> {
    let mut sent = 0;
    for (i, reminder) in SCHEDULE.iter().enumerate() {
        // `overdue` changes the status, so it is never skipped.
        let next = SCHEDULE
            .get(i + 1)
            .filter(|_| reminder.kind != "overdue")
            .map(|n| n.days_after_due);
        for invoice in due(conn, reminder, next, now).await? {
            if remind(conn, &invoice, reminder, now).await? {
                sent += 1;
            }
        }
    }
    Ok(sent)
}

/// Owed invoices whose `reminder` is due and not sent, before the next one's time.
async fn due<C: ConnectionTrait>(
    conn: &C,
    reminder: &Reminder,
    next: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Vec<invoice::Model>, DbErr> {
    let sent = Query::select()
        .expr(Expr::val(1))
        .from(invoice_reminder::Entity)
        .and_where(
            Expr::col((
                invoice_reminder::Entity,
                invoice_reminder::Column::InvoiceId,
            ))
            .equals((invoice::Entity, invoice::Column::Id)),
        )
        .and_where(Expr::col(invoice_reminder::Column::Kind).eq(reminder.kind))
        .to_owned();
    let mut query = invoice::Entity::find()
        .filter(invoice::Column::Status.is_in(InvoiceStatus::OWED.map(InvoiceStatus::as_str)))
        .filter(invoice::Column::DueAt.lte(now - Duration::days(reminder.days_after_due)))
        .filter(Expr::exists(sent).not());
    if let Some(next) = next {
        query = query.filter(invoice::Column::DueAt.gt(now - Duration::days(next)));
    }
    query
        .order_by_asc(invoice::Column::DueAt)
        .limit(PAGE)
        .all(conn)
        .await
}

/// Records `reminder` for `invoice` and its event (and the `overdue` status); false when
/// another sweep sent it first.
async fn remind<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    reminder: &Reminder,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let row = invoice_reminder::ActiveModel {
        invoice_id: Set(invoice.id),
        kind: Set(reminder.kind.to_owned()),
        sent_at: Set(now),
    };
    let inserted = invoice_reminder::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                invoice_reminder::Column::InvoiceId,
                invoice_reminder::Column::Kind,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    if inserted == 0 {
        return Ok(false);
    }
    if reminder.kind == "overdue" {
        invoice::Entity::update_many()
            .col_expr(
                invoice::Column::Status,
                Expr::value(InvoiceStatus::Overdue.as_str()),
            )
            .filter(invoice::Column::Id.eq(invoice.id))
            .filter(invoice::Column::Status.eq(InvoiceStatus::Open.as_str()))
            .exec(conn)
            .await?;
    }
    let due_at = invoice.due_at.unwrap_or(now);
    let mut extra = json!({"due_at": due_at});
    if reminder.event == "invoice.payment_reminder" {
        extra["days_overdue"] = json!((now - due_at).num_days());
    }
    super::record_invoice_event(conn, reminder.event, invoice, extra, now).await?;
    Ok(true)
}
