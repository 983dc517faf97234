//! Posting the history a database held before it had a ledger (migration 037), once:
//! when the ledger is empty and money already moved, every finalized invoice, grant,
//! credit note, payment and refund is posted as it would have been, in one transaction.
//! Each posting keeps its (kind, reference), so replicas starting together post it once.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{credit_grant, credit_note, invoice, ledger_transfer, top_up};
use neocloud_schema::ids::{CreditGrantId, InvoiceId};
use neocloud_schema::vocabulary::InvoiceStatus;
use rust_decimal::Decimal;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};

use super::postings::{self, Funding};
use super::{Transfer, store};

/// Whether the ledger is empty while invoices or grants exist.
pub async fn needed<C: ConnectionTrait>(conn: &C) -> Result<bool, DbErr> {
    if ledger_transfer::Entity::find().count(conn).await? > 0 {
        return Ok(false);
    }
    let invoices = invoice::Entity::find()
        .filter(invoice::Column::Status.ne(InvoiceStatus::Draft))
        .count(conn)
        .await?;
    Ok(invoices > 0 || credit_grant::Entity::find().count(conn).await? > 0)
}

/// Posts the whole history; run inside a write transaction. How many transfers it posted.
pub async fn run<C: ConnectionTrait>(conn: &C, now: DateTime<Utc>) -> Result<u64, DbErr> {
    let mut posted = 0;
    let notes = credit_note::Entity::find()
        .order_by_asc(credit_note::Column::IssuedAt)
        .all(conn)
        .await?;
    let mut notes_of: HashMap<InvoiceId, Vec<&credit_note::Model>> = HashMap::new();
    for note in &notes {
        notes_of.entry(note.invoice_id).or_default().push(note);
    }
    for inv in invoice::Entity::find()
        .filter(invoice::Column::Status.ne(InvoiceStatus::Draft))
        .order_by_asc(invoice::Column::FinalizedAt)
        .all(conn)
        .await?
    {
        posted += post(conn, Some(postings::invoice_finalized(&inv)), now).await?;
        let own = notes_of.get(&inv.id).map_or(&[][..], Vec::as_slice);
        if let Some(collected) = collected(&inv, own) {
            posted += post(
                conn,
                Some(postings::invoice_paid(
                    &inv,
                    collected,
                    postings::Collected::ThroughStripe,
                )),
                now,
            )
            .await?;
        }
        if inv.status == InvoiceStatus::Void {
            let reversal = Transfer::new(
                postings::INVOICE_VOIDED,
                inv.id,
                &inv.currency,
                Some(inv.tenant_id),
                format!("invoice {} voided", inv.number.clone().unwrap_or_default()),
            );
            let reversed = store::reverse(conn, postings::INVOICE_FINALIZED, reversal, now).await?;
            posted += u64::from(matches!(reversed, store::Posted::New(_)));
        }
    }
    for (grant, funding) in grants(conn).await? {
        posted += post(conn, postings::credit_granted(&grant, funding), now).await?;
    }
    for note in &notes {
        posted += post(conn, Some(postings::credit_note_issued(note)), now).await?;
        if note.refund_state.as_deref() == Some("done") {
            posted += post(conn, Some(postings::refund_sent(note)), now).await?;
        }
    }
    Ok(posted)
}

/// Posts `transfer` if there is one: 1 when it was new.
async fn post<C: ConnectionTrait>(
    conn: &C,
    transfer: Option<Transfer>,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let Some(transfer) = transfer else {
        return Ok(0);
    };
    let posted = store::post(conn, &transfer, now).await?;
    Ok(u64::from(matches!(posted, store::Posted::New(_))))
}

/// What Stripe collected for a paid invoice: what its notes left due (a note issued
/// after the payment applies nothing). `None` when nothing was collected.
fn collected(inv: &invoice::Model, notes: &[&credit_note::Model]) -> Option<Decimal> {
    if inv.status != InvoiceStatus::Paid {
        return None;
    }
    let applied: Decimal = notes.iter().map(|n| n.applied.get()).sum();
    let due = inv.total.get() - applied;
    (due > Decimal::ZERO).then_some(due)
}

/// Every grant with where its money came from: a top-up's, a credit note's, else the
/// operator's.
async fn grants<C: ConnectionTrait>(
    conn: &C,
) -> Result<Vec<(credit_grant::Model, Funding)>, DbErr> {
    let topped: HashSet<CreditGrantId> = top_up::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .filter_map(|t| t.credit_grant_id)
        .collect();
    let noted: HashSet<uuid::Uuid> = credit_note::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .filter_map(|n| n.credit_grant_id)
        .collect();
    let all = credit_grant::Entity::find()
        .order_by_asc(credit_grant::Column::CreatedAt)
        .all(conn)
        .await?;
    Ok(all
        .into_iter()
        .map(|g| {
            let id: uuid::Uuid = g.id.into();
            let funding = if topped.contains(&g.id) {
                Funding::StripeTopUp
            } else if noted.contains(&id) {
                Funding::CreditNote
            } else {
                Funding::Operator
            };
            (g, funding)
        })
        .collect())
}
