//! What credit notes took back from the allocations a provider earned on (docs/providers.md,
//! "Credit notes"): each credited amount is a share of one invoice line, so each note's
//! lines, with the amounts it credited, are split over the allocations exactly as the
//! invoice's lines were (`attribute`). A revenue share then loses its percent of the
//! revenue taken back; a fixed rate keeps what the hours earned; a provider bearing SLA
//! credits gets back the chargeback of an SLA credit the note undid.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    credit_note, credit_note_line, invoice, invoice_line, provider_statement_line as line,
};
use neocloud_schema::ids::InvoiceId;
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use uuid::Uuid;

use super::{Served, attribute};
use crate::invoicing::store::kept_rating;
use crate::rating::period::Line;

/// One allocation's part of one credit note: the revenue and SLA credit it took back.
#[derive(Debug, Clone)]
pub struct CreditedShare {
    pub note: Uuid,
    pub number: String,
    pub invoice: invoice::Model,
    /// `unit_seconds` 0: a credit note takes back money, not the hours served.
    pub served: Served,
}

/// The shares of every credit note issued before `end` that no statement has taken yet.
pub async fn unclaimed_before<C: ConnectionTrait>(
    conn: &C,
    end: DateTime<Utc>,
) -> Result<Vec<CreditedShare>, DbErr> {
    let notes = credit_note::Entity::find()
        .filter(credit_note::Column::IssuedAt.lt(end))
        .order_by_asc(credit_note::Column::IssuedAt)
        .all(conn)
        .await?;
    let mut out = Vec::new();
    for chunk in notes.chunks(200) {
        let ids: Vec<Uuid> = chunk.iter().map(|n| n.id).collect();
        let claimed = claimed(conn, &ids).await?;
        let lines = note_lines(conn, &ids).await?;
        let invoices = invoices_of(conn, chunk).await?;
        for note in chunk {
            let Some(invoice) = invoices.get(&note.invoice_id) else {
                continue;
            };
            let credited = lines.get(&note.id).map_or(&[][..], Vec::as_slice);
            for served in shares(invoice, credited) {
                if !claimed.contains(&(note.id, served.allocation)) {
                    out.push(CreditedShare {
                        note: note.id,
                        number: note.number.clone(),
                        invoice: invoice.clone(),
                        served,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Each allocation's share of what `credited` (position on the invoice, net amount)
/// took from `invoice`: its lines with the credited amounts, split as the invoice's were.
fn shares(invoice: &invoice::Model, credited: &[(usize, Decimal)]) -> Vec<Served> {
    let Some((input, lines)) = kept_rating(invoice) else {
        return Vec::new();
    };
    let taken: Vec<Line> = credited
        .iter()
        .filter_map(|&(position, amount)| {
            let mut line = lines.get(position)?.clone();
            line.amount = amount;
            line.amount_exact = amount;
            Some(line)
        })
        .collect();
    attribute(&input, &taken)
        .into_iter()
        .filter(|s| !(s.revenue.is_zero() && s.sla_credit.is_zero()))
        .map(|s| Served {
            unit_seconds: Decimal::ZERO,
            ..s
        })
        .collect()
}

/// The (credit note, allocation) pairs already on a statement.
async fn claimed<C: ConnectionTrait>(
    conn: &C,
    notes: &[Uuid],
) -> Result<HashSet<(Uuid, Uuid)>, DbErr> {
    Ok(line::Entity::find()
        .filter(line::Column::CreditNoteId.is_in(notes.iter().copied()))
        .all(conn)
        .await?
        .into_iter()
        .filter_map(|l| Some((l.credit_note_id?, l.allocation_id)))
        .collect())
}

/// Each note's credited lines as (position on its invoice, net amount).
async fn note_lines<C: ConnectionTrait>(
    conn: &C,
    notes: &[Uuid],
) -> Result<HashMap<Uuid, Vec<(usize, Decimal)>>, DbErr> {
    let credited = credit_note_line::Entity::find()
        .filter(credit_note_line::Column::CreditNoteId.is_in(notes.iter().copied()))
        .all(conn)
        .await?;
    let positions: HashMap<Uuid, i32> = invoice_line::Entity::find()
        .filter(invoice_line::Column::Id.is_in(credited.iter().map(|l| l.invoice_line_id)))
        .all(conn)
        .await?
        .into_iter()
        .map(|l| (l.id, l.position))
        .collect();
    let mut out: HashMap<Uuid, Vec<(usize, Decimal)>> = HashMap::new();
    for l in credited {
        let Some(position) = positions
            .get(&l.invoice_line_id)
            .and_then(|p| usize::try_from(*p).ok())
        else {
            continue;
        };
        out.entry(l.credit_note_id)
            .or_default()
            .push((position, l.amount.get()));
    }
    Ok(out)
}

async fn invoices_of<C: ConnectionTrait>(
    conn: &C,
    notes: &[credit_note::Model],
) -> Result<HashMap<InvoiceId, invoice::Model>, DbErr> {
    Ok(invoice::Entity::find()
        .filter(invoice::Column::Id.is_in(notes.iter().map(|n| n.invoice_id)))
        .all(conn)
        .await?
        .into_iter()
        .map(|i| (i.id, i))
        .collect())
}
