//! `credit_notes` and `credit_note_lines`: only ever inserted (a refund's progress aside).
//! Every tenant-owned read filters by tenant.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{credit_note, credit_note_line, invoice, payment_outbox};
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::{InvoiceStatus, LineKind};
use rust_decimal::Decimal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    Set,
};
use uuid::Uuid;

use super::allocate::{Allocation, Creditable};
use super::{Issued, Settlement};
use crate::tax::TaxCategory;

/// The invoice's charge lines with what earlier notes credited of each.
pub async fn creditable<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
) -> Result<Vec<Creditable>, DbErr> {
    let credited = lines_of_invoice(conn, invoice).await?;
    let lines = crate::invoicing::store::lines(conn, invoice.tenant_id, invoice.id).await?;
    Ok(lines
        .iter()
        .filter(|l| l.kind != LineKind::Credit)
        .map(|l| {
            let line = crate::invoicing::store::line_of(l);
            Creditable {
                line: l.id,
                position: u32::try_from(l.position + 1).unwrap_or(u32::MAX),
                description: l.description.clone(),
                amount: l.amount.get(),
                credited: credited
                    .iter()
                    .filter(|c| c.invoice_line_id == l.id)
                    .map(|c| c.amount.get())
                    .sum(),
                tax: line.tax.map(|t| (t.category, t.percent)),
            }
        })
        .collect())
}

/// The lines of every note of `invoice`.
async fn lines_of_invoice<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
) -> Result<Vec<credit_note_line::Model>, DbErr> {
    let notes: Vec<Uuid> = of_invoice(conn, invoice.tenant_id, invoice.id.into())
        .await?
        .iter()
        .map(|n| n.id)
        .collect();
    credit_note_line::Entity::find()
        .filter(credit_note_line::Column::TenantId.eq(invoice.tenant_id))
        .filter(credit_note_line::Column::CreditNoteId.is_in(notes))
        .all(conn)
        .await
}

/// The notes of one invoice, oldest first.
pub async fn of_invoice<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    invoice: Uuid,
) -> Result<Vec<credit_note::Model>, DbErr> {
    credit_note::Entity::find()
        .filter(credit_note::Column::TenantId.eq(tenant))
        .filter(credit_note::Column::InvoiceId.eq(invoice))
        .order_by_asc(credit_note::Column::IssuedAt)
        .order_by_asc(credit_note::Column::Number)
        .all(conn)
        .await
}

/// The tenant's notes (every tenant's with `None`), newest first.
pub async fn list<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
) -> Result<Vec<credit_note::Model>, DbErr> {
    let mut query = credit_note::Entity::find();
    if let Some(tenant) = tenant {
        query = query.filter(credit_note::Column::TenantId.eq(tenant));
    }
    query
        .order_by_desc(credit_note::Column::IssuedAt)
        .order_by_desc(credit_note::Column::Number)
        .all(conn)
        .await
}

/// One note; with `tenant`, only if it is that tenant's.
pub async fn find<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    id: Uuid,
) -> Result<Option<credit_note::Model>, DbErr> {
    let mut query = credit_note::Entity::find_by_id(id);
    if let Some(tenant) = tenant {
        query = query.filter(credit_note::Column::TenantId.eq(tenant));
    }
    query.one(conn).await
}

/// A note's lines, in order.
pub async fn lines<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    note: Uuid,
) -> Result<Vec<credit_note_line::Model>, DbErr> {
    credit_note_line::Entity::find()
        .filter(credit_note_line::Column::TenantId.eq(tenant))
        .filter(credit_note_line::Column::CreditNoteId.eq(note))
        .order_by_asc(credit_note_line::Column::LineNumber)
        .all(conn)
        .await
}

fn sum(notes: &[credit_note::Model], part: fn(&credit_note::Model) -> Decimal) -> Decimal {
    notes.iter().map(part).sum()
}

/// What is still owed on `invoice`: its total less what notes applied to it (zero once
/// it is paid, void or a draft).
pub async fn amount_due<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
) -> Result<Decimal, DbErr> {
    if !owed(invoice) {
        return Ok(Decimal::ZERO);
    }
    let notes = of_invoice(conn, invoice.tenant_id, invoice.id.into()).await?;
    Ok(due_after(invoice, &notes))
}

/// [`amount_due`] given the invoice's notes, already read.
pub fn due_after(invoice: &invoice::Model, notes: &[credit_note::Model]) -> Decimal {
    if !owed(invoice) {
        return Decimal::ZERO;
    }
    (invoice.total.get() - sum(notes, |n| n.applied.get())).max(Decimal::ZERO)
}

fn owed(invoice: &invoice::Model) -> bool {
    invoice.status.is_owed() || invoice.status == InvoiceStatus::Uncollectible
}

/// What Stripe collected for `invoice` and no note refunded yet (zero unless a charge of
/// it succeeded).
pub async fn refundable<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
) -> Result<Decimal, DbErr> {
    if invoice.status != InvoiceStatus::Paid || payment_intent(conn, invoice).await?.is_none() {
        return Ok(Decimal::ZERO);
    }
    let notes = of_invoice(conn, invoice.tenant_id, invoice.id.into()).await?;
    let charged = invoice.total.get() - sum(&notes, |n| n.applied.get());
    Ok((charged - sum(&notes, |n| n.refunded.get())).max(Decimal::ZERO))
}

/// The PaymentIntent that collected `invoice`, if Stripe charged it.
pub async fn payment_intent<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
) -> Result<Option<String>, DbErr> {
    Ok(payment_outbox::Entity::find()
        .filter(payment_outbox::Column::TenantId.eq(invoice.tenant_id))
        .filter(payment_outbox::Column::InvoiceId.eq(invoice.id))
        .filter(payment_outbox::Column::Kind.eq(crate::payments::outbox::CHARGE_INVOICE))
        .filter(payment_outbox::Column::Status.eq("done"))
        .all(conn)
        .await?
        .into_iter()
        .find_map(|row| row.stripe_id.filter(|id| id.starts_with("pi_"))))
}

/// A note to insert.
pub struct Note<'a> {
    pub number: &'a str,
    pub form: &'static str,
    pub reason: &'a str,
    pub allocation: &'a Allocation,
    pub settlement: Settlement,
    pub grant: Option<Uuid>,
}

fn tax_parts(tax: Option<(TaxCategory, Decimal)>) -> (Option<String>, Option<Decimal>) {
    (tax.map(|(c, _)| c.as_str().to_owned()), tax.map(|(_, p)| p))
}

pub async fn insert<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    note: Note<'_>,
    now: DateTime<Utc>,
) -> Result<Issued, DbErr> {
    let allocation = note.allocation;
    let taxes: Vec<serde_json::Value> = allocation
        .rates
        .iter()
        .map(|r| {
            let (category, percent) = tax_parts(r.tax);
            serde_json::json!({"category": category, "percent": percent.map(|p| p.normalize().to_string()),
                               "net": r.net.to_string(), "tax": r.tax_amount.to_string()})
        })
        .collect();
    let refund_state = (note.settlement.refunded > Decimal::ZERO).then(|| "pending".to_owned());
    let row = credit_note::ActiveModel {
        id: Set(Uuid::now_v7()),
        tenant_id: Set(invoice.tenant_id),
        invoice_id: Set(invoice.id),
        number: Set(note.number.to_owned()),
        currency: Set(invoice.currency.clone()),
        reason: Set(note.reason.to_owned()),
        form: Set(note.form.to_owned()),
        subtotal: Set(allocation.net.into()),
        tax: Set(allocation.tax.into()),
        total: Set(allocation.total.into()),
        taxes: Set(serde_json::Value::Array(taxes)),
        applied: Set(note.settlement.applied.into()),
        to_balance: Set(note.settlement.to_balance.into()),
        refunded: Set(note.settlement.refunded.into()),
        credit_grant_id: Set(note.grant),
        refund_state: Set(refund_state),
        issued_at: Set(now),
    }
    .insert(conn)
    .await?;
    let mut lines = Vec::with_capacity(allocation.lines.len());
    for line in &allocation.lines {
        let (category, percent) = tax_parts(line.tax);
        let inserted = credit_note_line::ActiveModel {
            id: Set(Uuid::now_v7()),
            credit_note_id: Set(row.id),
            tenant_id: Set(invoice.tenant_id),
            invoice_line_id: Set(line.line),
            line_number: Set(i32::try_from(line.position).unwrap_or(i32::MAX)),
            description: Set(line.description.clone()),
            amount: Set(line.amount.into()),
            tax_category: Set(category),
            tax_percent: Set(percent.map(Into::into)),
        }
        .insert(conn)
        .await?;
        lines.push(inserted);
    }
    Ok(Issued { note: row, lines })
}

/// Records how a note's refund went (`done` or `failed`).
pub async fn set_refund_state<C: ConnectionTrait>(
    conn: &C,
    note: Uuid,
    state: &str,
) -> Result<(), DbErr> {
    credit_note::Entity::update_many()
        .col_expr(
            credit_note::Column::RefundState,
            sea_orm::sea_query::Expr::value(state),
        )
        .filter(credit_note::Column::Id.eq(note))
        .exec(conn)
        .await
        .map(|_| ())
}
