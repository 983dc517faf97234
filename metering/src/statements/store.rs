//! SQL for provider statements: which provider's month is due, what a month's invoices
//! earned (read once for every provider closing that month), and closing one statement
//! with its lines and its ledger transfer in the caller's transaction. The only writer of
//! `provider_statements` and `provider_statement_lines`.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Datelike, TimeZone, Utc};
use neocloud_schema::entity::{
    Exact, allocation, invoice, node, provider, provider_agreement, provider_statement,
    provider_statement_line as line, sku,
};
use neocloud_schema::ids::{InvoiceId, ProviderId};
use neocloud_schema::vocabulary::InvoiceStatus;
use rust_decimal::Decimal;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use uuid::Uuid;

use super::credited::CreditedShare;
use super::{Claim, Earned, EarningTerms, Place, Served, attribute, earn, take_back};
use crate::exchange::Rates;
use crate::invoicing::store::kept_rating;

pub const EARNING: &str = "earning";
pub const REVERSAL: &str = "reversal";
pub const CREDIT_NOTE: &str = "credit_note";

/// The first instant of `t`'s calendar month (UTC).
pub fn month_start(t: DateTime<Utc>) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

/// The first instant of the month after the one starting at `start`.
pub fn next_month(start: DateTime<Utc>) -> DateTime<Utc> {
    let (year, month) = if start.month() == 12 {
        (start.year() + 1, 1)
    } else {
        (start.year(), start.month() + 1)
    };
    Utc.with_ymd_and_hms(year, month, 1, 0, 0, 0)
        .single()
        .unwrap_or(start)
}

/// A provider's agreements, oldest first, as statements apply them.
pub struct Agreements(Vec<(DateTime<Utc>, EarningTerms)>);

impl Agreements {
    /// The version in force at `at`: the latest that had started by then.
    fn at(&self, at: DateTime<Utc>) -> Option<&EarningTerms> {
        self.0
            .iter()
            .rev()
            .find(|(from, _)| *from <= at)
            .map(|(_, t)| t)
    }
}

/// Each provider with an agreement, its agreements, and the start of the month its next
/// statement covers: the month after its last statement, or the month its first
/// agreement took effect in.
pub async fn providers_with_terms<C: ConnectionTrait>(
    conn: &C,
) -> Result<Vec<(provider::Model, Agreements, DateTime<Utc>)>, DbErr> {
    let agreements = provider_agreement::Entity::find()
        .order_by_asc(provider_agreement::Column::ProviderId)
        .order_by_asc(provider_agreement::Column::Version)
        .all(conn)
        .await?;
    let mut by_provider: HashMap<ProviderId, Vec<(DateTime<Utc>, EarningTerms)>> = HashMap::new();
    for a in &agreements {
        if let Some(terms) = EarningTerms::from_stored(a) {
            by_provider
                .entry(a.provider_id)
                .or_default()
                .push((a.effective_from, terms));
        }
    }
    // Each provider's last statement's end (one row per provider, not every statement).
    let last_ends: HashMap<ProviderId, DateTime<Utc>> = provider_statement::Entity::find()
        .select_only()
        .column(provider_statement::Column::ProviderId)
        .column_as(provider_statement::Column::PeriodEnd.max(), "period_end")
        .group_by(provider_statement::Column::ProviderId)
        .into_tuple::<(ProviderId, DateTime<Utc>)>()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    let providers = provider::Entity::find()
        .filter(provider::Column::Id.is_in(by_provider.keys().copied()))
        .order_by_asc(provider::Column::Name)
        .all(conn)
        .await?;
    Ok(providers
        .into_iter()
        .filter_map(|p| {
            let terms = by_provider.remove(&p.id)?;
            let first = month_start(terms.first()?.0);
            let next = last_ends.get(&p.id).copied().unwrap_or(first);
            Some((p, Agreements(terms), next))
        })
        .collect())
}

/// An allocation's share of one invoice, with where it ran.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub invoice: InvoiceId,
    pub invoice_currency: String,
    pub invoice_period_end: DateTime<Utc>,
    /// Paid (or settled) before the month ended.
    pub paid: bool,
    pub served: Served,
    pub node: Uuid,
    pub region: String,
    pub sku: Option<sku::Model>,
}

/// What a month's invoices brought each provider: the candidates for earning lines, the
/// earning lines of invoices voided in the month, to reverse, and what credit notes
/// issued by the month's end took back and no statement has yet.
pub struct Month {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub earnings: HashMap<ProviderId, Vec<Candidate>>,
    pub voided: HashMap<ProviderId, Vec<line::Model>>,
    pub credited: HashMap<ProviderId, Vec<(CreditedShare, Candidate)>>,
    /// (invoice, allocation) already earned, for the month's and the credited invoices,
    /// with what it earned.
    claimed: HashMap<(InvoiceId, Uuid), Claim>,
}

/// Reads what the month `[start, next_month(start))` brought: the invoices finalized in
/// it, or paid in it (earnings held until paid), not voided, split per allocation and
/// grouped by the provider of the node each ran on; and the invoices voided in it.
pub async fn gather<C: ConnectionTrait>(conn: &C, start: DateTime<Utc>) -> Result<Month, DbErr> {
    let end = next_month(start);
    let invoices = invoice::Entity::find()
        .filter(invoice::Column::Status.is_not_in([InvoiceStatus::Draft, InvoiceStatus::Void]))
        .filter(invoice::Column::FinalizedAt.lt(end))
        .filter(
            Condition::any()
                .add(invoice::Column::FinalizedAt.gte(start))
                .add(
                    Condition::all()
                        .add(invoice::Column::PaidAt.gte(start))
                        .add(invoice::Column::PaidAt.lt(end)),
                ),
        )
        .all(conn)
        .await?;
    let credit_notes = super::credited::unclaimed_before(conn, end).await?;
    let mut ids: Vec<InvoiceId> = invoices.iter().map(|i| i.id).collect();
    ids.extend(credit_notes.iter().map(|c| c.invoice.id));
    let claimed = claimed(conn, &ids).await?;
    let shares: Vec<(&invoice::Model, Vec<Served>)> =
        invoices.iter().map(|inv| (inv, served_on(inv))).collect();
    let allocation_ids: Vec<Uuid> = shares
        .iter()
        .flat_map(|(_, s)| s.iter().map(|s| s.allocation))
        .chain(credit_notes.iter().map(|c| c.served.allocation))
        .collect();
    let places = Places::load(conn, &allocation_ids).await?;
    let mut credited: HashMap<ProviderId, Vec<(CreditedShare, Candidate)>> = HashMap::new();
    for share in credit_notes {
        if let Some((provider, candidate)) =
            places.candidate(&share.invoice, true, share.served.clone())
        {
            credited
                .entry(provider)
                .or_default()
                .push((share, candidate));
        }
    }
    let mut earnings: HashMap<ProviderId, Vec<Candidate>> = HashMap::new();
    for (inv, served) in shares {
        let paid = inv.status == InvoiceStatus::Paid && inv.paid_at.is_some_and(|p| p < end);
        for s in served {
            let Some((provider, candidate)) = places.candidate(inv, paid, s) else {
                continue;
            };
            earnings.entry(provider).or_default().push(candidate);
        }
    }
    let voided = voided_in(conn, start, end).await?;
    Ok(Month {
        start,
        end,
        earnings,
        voided,
        credited,
        claimed,
    })
}

/// The allocations' shares of a finalized invoice, from the rating it keeps.
fn served_on(inv: &invoice::Model) -> Vec<Served> {
    kept_rating(inv).map_or_else(Vec::new, |(input, lines)| attribute(&input, &lines))
}

async fn claimed<C: ConnectionTrait>(
    conn: &C,
    invoices: &[InvoiceId],
) -> Result<HashMap<(InvoiceId, Uuid), Claim>, DbErr> {
    let mut found = HashMap::new();
    for chunk in invoices.chunks(500) {
        let rows = line::Entity::find()
            .filter(line::Column::InvoiceId.is_in(chunk.iter().copied()))
            .filter(line::Column::Kind.eq(EARNING))
            .all(conn)
            .await?;
        found.extend(rows.into_iter().map(|l| {
            let claim = Claim {
                exchange_rate: l.exchange_rate.map(|r| r.get()),
                revenue: l.revenue.get(),
                gross: l.gross.get(),
            };
            ((l.invoice_id, l.allocation_id), claim)
        }));
    }
    Ok(found)
}

/// Earning lines of invoices voided in `[start, end)` that no statement reversed yet.
async fn voided_in<C: ConnectionTrait>(
    conn: &C,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<HashMap<ProviderId, Vec<line::Model>>, DbErr> {
    let voided: Vec<InvoiceId> = invoice::Entity::find()
        .filter(invoice::Column::Status.eq(InvoiceStatus::Void))
        .filter(invoice::Column::VoidedAt.gte(start))
        .filter(invoice::Column::VoidedAt.lt(end))
        .all(conn)
        .await?
        .into_iter()
        .map(|i| i.id)
        .collect();
    let mut out: HashMap<ProviderId, Vec<line::Model>> = HashMap::new();
    for chunk in voided.chunks(500) {
        let lines = line::Entity::find()
            .filter(line::Column::InvoiceId.is_in(chunk.iter().copied()))
            .order_by_asc(line::Column::Position)
            .all(conn)
            .await?;
        let reversed: HashSet<(InvoiceId, Uuid)> = lines
            .iter()
            .filter(|l| l.kind == REVERSAL)
            .map(|l| (l.invoice_id, l.allocation_id))
            .collect();
        for l in lines {
            if l.kind == EARNING && !reversed.contains(&(l.invoice_id, l.allocation_id)) {
                out.entry(l.provider_id).or_default().push(l);
            }
        }
    }
    Ok(out)
}

/// Where allocations ran: their node (and its provider and region) and their SKU.
struct Places {
    allocations: HashMap<Uuid, allocation::Model>,
    nodes: HashMap<Uuid, node::Model>,
    skus: HashMap<Uuid, sku::Model>,
}

impl Places {
    async fn load<C: ConnectionTrait>(conn: &C, ids: &[Uuid]) -> Result<Places, DbErr> {
        let mut allocations = HashMap::new();
        for chunk in ids.chunks(500) {
            let rows = allocation::Entity::find()
                .filter(allocation::Column::Id.is_in(chunk.iter().copied()))
                .all(conn)
                .await?;
            allocations.extend(rows.into_iter().map(|a| (a.id.0, a)));
        }
        let nodes = node::Entity::find()
            .all(conn)
            .await?
            .into_iter()
            .map(|n| (n.id.0, n))
            .collect();
        let skus = sku::Entity::find()
            .all(conn)
            .await?
            .into_iter()
            .map(|s| (s.id.0, s))
            .collect();
        Ok(Places {
            allocations,
            nodes,
            skus,
        })
    }

    fn candidate(
        &self,
        inv: &invoice::Model,
        paid: bool,
        served: Served,
    ) -> Option<(ProviderId, Candidate)> {
        let allocation = self.allocations.get(&served.allocation)?;
        let node = self.nodes.get(&allocation.node_id.0)?;
        let candidate = Candidate {
            invoice: inv.id,
            invoice_currency: inv.currency.clone(),
            invoice_period_end: inv.period_end,
            paid,
            node: node.id.0,
            region: node.region.clone(),
            sku: self.skus.get(&served.sku).cloned(),
            served,
        };
        Some((node.provider_id, candidate))
    }
}

/// A line to write, before it has its statement.
struct NewLine {
    kind: &'static str,
    candidate_invoice: InvoiceId,
    allocation: Uuid,
    node: Uuid,
    sku_name: String,
    form: String,
    region: String,
    version: i32,
    revenue: Decimal,
    revenue_currency: String,
    sla_credit: Decimal,
    earned: Earned,
    credit_note: Option<Uuid>,
}

/// Why a provider's statement cannot close yet: no exchange rate from `from` to `to` in
/// force at `at` (the end of an invoice's period; no tenant's invoice is named, since
/// providers read it too).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    pub from: String,
    pub to: String,
    pub at: DateTime<Utc>,
}

impl Held {
    /// The reason, as a sentence.
    pub fn reason(&self) -> String {
        format!(
            "no {}→{} exchange rate in force at {}, the end of an invoice's period",
            self.from,
            self.to,
            self.at.to_rfc3339()
        )
    }
}

fn no_rate(c: &Candidate, to: &str) -> Held {
    Held {
        from: c.invoice_currency.clone(),
        to: to.to_owned(),
        at: c.invoice_period_end,
    }
}

/// The earning lines of `provider`'s month: each candidate priced by the agreement in
/// force at its invoice's period end (and converted at the exchange rate in force then),
/// unless already on a statement or held until its invoice is paid. `Held` when a rate
/// is missing.
fn earning_lines(
    month: &Month,
    provider: ProviderId,
    terms: &Agreements,
    rates: &Rates,
) -> Result<Vec<NewLine>, Held> {
    let Some(candidates) = month.earnings.get(&provider) else {
        return Ok(Vec::new());
    };
    let mut lines = Vec::new();
    for c in candidates.iter().filter(|c| {
        !month
            .claimed
            .contains_key(&(c.invoice, c.served.allocation))
    }) {
        let Some(terms) = terms.at(c.invoice_period_end) else {
            continue;
        };
        if terms.hold_until_paid && !c.paid {
            continue;
        }
        let Some(sku) = c.sku.as_ref() else {
            continue;
        };
        let place = Place {
            form: sku.form,
            region: &c.region,
            invoice_currency: &c.invoice_currency,
            exchange_rate: rates.at(&c.invoice_currency, &terms.currency, c.invoice_period_end),
        };
        let earned = earn(terms, &c.served, place).ok_or_else(|| no_rate(c, &terms.currency))?;
        lines.push(NewLine {
            kind: EARNING,
            candidate_invoice: c.invoice,
            allocation: c.served.allocation,
            node: c.node,
            sku_name: sku.name.clone(),
            form: sku.form.as_str().to_owned(),
            region: c.region.clone(),
            version: terms.version,
            revenue: c.served.revenue,
            revenue_currency: c.invoice_currency.clone(),
            sla_credit: c.served.sla_credit,
            earned,
            credit_note: None,
        });
    }
    Ok(lines)
}

/// The reverse of an earning line.
fn reversal(l: &line::Model) -> NewLine {
    let earned = Earned {
        unit_hours: l.unit_hours.get(),
        gross: l.gross.get(),
        fee: l.fee.get(),
        sla_chargeback: l.sla_chargeback.get(),
        net: l.net.get(),
        note: None,
        exchange_rate: l.exchange_rate.map(|r| r.get()),
    };
    NewLine {
        kind: REVERSAL,
        candidate_invoice: l.invoice_id,
        allocation: l.allocation_id,
        node: l.node_id,
        sku_name: l.sku_name.clone(),
        form: l.form.clone(),
        region: l.region.clone(),
        version: l.agreement_version,
        revenue: -l.revenue.get(),
        revenue_currency: l.revenue_currency.clone(),
        sla_credit: -l.sla_credit.get(),
        earned: negated(earned, "the invoice was voided".to_owned()),
        credit_note: None,
    }
}

/// `earned` taken back, with why.
fn negated(earned: Earned, why: String) -> Earned {
    Earned {
        unit_hours: -earned.unit_hours,
        gross: -earned.gross,
        fee: -earned.fee,
        sla_chargeback: -earned.sla_chargeback,
        net: -earned.net,
        note: Some(why),
        exchange_rate: earned.exchange_rate,
    }
}

/// What credit notes took back from `provider`'s earnings: a line per (note, allocation)
/// whose invoice the allocation has earned on, before or on this statement (`earned_now`);
/// a share not earned yet waits for the statement that earns it. What is taken back is
/// converted at the earning's rate (`take_back`).
fn credit_note_lines(
    month: &Month,
    provider: ProviderId,
    terms: &Agreements,
    earned_now: &HashMap<(InvoiceId, Uuid), Claim>,
) -> Result<Vec<NewLine>, Held> {
    let Some(credited) = month.credited.get(&provider) else {
        return Ok(Vec::new());
    };
    let mut lines = Vec::new();
    for (share, c) in credited {
        let key = (c.invoice, c.served.allocation);
        let Some(claim) = month.claimed.get(&key).or_else(|| earned_now.get(&key)) else {
            continue;
        };
        let (Some(terms), Some(sku)) = (terms.at(c.invoice_period_end), c.sku.as_ref()) else {
            continue;
        };
        let place = Place {
            form: sku.form,
            region: &c.region,
            invoice_currency: &c.invoice_currency,
            exchange_rate: claim.exchange_rate,
        };
        let earned =
            take_back(terms, &c.served, place, claim).ok_or_else(|| no_rate(c, &terms.currency))?;
        lines.push(NewLine {
            kind: CREDIT_NOTE,
            candidate_invoice: c.invoice,
            allocation: c.served.allocation,
            node: c.node,
            sku_name: sku.name.clone(),
            form: sku.form.as_str().to_owned(),
            region: c.region.clone(),
            version: terms.version,
            revenue: -c.served.revenue,
            revenue_currency: c.invoice_currency.clone(),
            sla_credit: -c.served.sla_credit,
            earned: negated(earned, format!("credit note {}", share.number)),
            credit_note: Some(share.note),
        });
    }
    Ok(lines)
}

/// The lines of `provider`'s statement for `month`: earnings, reversals of voided
/// invoices, then what credit notes took back.
fn statement_lines(
    month: &Month,
    provider: ProviderId,
    terms: &Agreements,
    rates: &Rates,
) -> Result<Vec<NewLine>, Held> {
    let mut lines = earning_lines(month, provider, terms, rates)?;
    let earned_now: HashMap<(InvoiceId, Uuid), Claim> = lines
        .iter()
        .map(|l| {
            let claim = Claim {
                exchange_rate: l.earned.exchange_rate,
                revenue: l.revenue,
                gross: l.earned.gross,
            };
            ((l.candidate_invoice, l.allocation), claim)
        })
        .collect();
    if let Some(voided) = month.voided.get(&provider) {
        lines.extend(voided.iter().map(reversal));
    }
    lines.extend(credit_note_lines(month, provider, terms, &earned_now)?);
    Ok(lines)
}

/// Closes `provider`'s statement for `month` in the caller's transaction: its lines, its
/// totals, its ledger transfer, and the payout it makes due (`payouts::store::queue_for`).
/// `Held`, writing nothing, while an exchange rate it needs is missing. A second close of
/// the same month fails on the unique index (nothing is written twice).
pub async fn close<C: ConnectionTrait>(
    conn: &C,
    provider: &provider::Model,
    (terms, rates): (&Agreements, &Rates),
    month: &Month,
    now: DateTime<Utc>,
) -> Result<Result<provider_statement::Model, Held>, DbErr> {
    let lines = match statement_lines(month, provider.id, terms, rates) {
        Ok(lines) => lines,
        Err(held) => return Ok(Err(held)),
    };
    let sequence = provider_statement::Entity::find()
        .filter(provider_statement::Column::ProviderId.eq(provider.id))
        .count(conn)
        .await?
        + 1;
    let sum = |f: fn(&Earned) -> Decimal| lines.iter().map(|l| f(&l.earned)).sum::<Decimal>();
    let digits = neocloud_schema::money::minor_unit_digits_of(&provider.currency);
    let money = |d: Decimal| Exact::from(crate::rating::period::round(d, digits));
    let statement = provider_statement::ActiveModel {
        id: Set(Uuid::now_v7()),
        provider_id: Set(provider.id),
        sequence: Set(i32::try_from(sequence).unwrap_or(i32::MAX)),
        number: Set(format!("PS-{}-{sequence:04}", provider.name.to_uppercase())),
        period_start: Set(month.start),
        period_end: Set(month.end),
        currency: Set(provider.currency.clone()),
        gross: Set(money(sum(|e| e.gross))),
        fees: Set(money(sum(|e| e.fee))),
        sla_chargebacks: Set(money(sum(|e| e.sla_chargeback))),
        net: Set(money(sum(|e| e.net))),
        lines: Set(i32::try_from(lines.len()).unwrap_or(i32::MAX)),
        closed_at: Set(now),
    };
    let statement = provider_statement::Entity::insert(statement)
        .exec_with_returning(conn)
        .await?;
    insert_lines(conn, &statement, lines).await?;
    let posting = crate::ledger::postings::provider_statement_closed(&statement);
    crate::ledger::store::post(conn, &posting, now).await?;
    if let Some(current) = terms.at(month.end - chrono::TimeDelta::seconds(1)) {
        crate::payouts::store::queue_for(conn, provider, &statement, current.payout_minimum, now)
            .await?;
    }
    Ok(Ok(statement))
}

async fn insert_lines<C: ConnectionTrait>(
    conn: &C,
    statement: &provider_statement::Model,
    lines: Vec<NewLine>,
) -> Result<(), DbErr> {
    let rows: Vec<line::ActiveModel> = lines
        .into_iter()
        .zip(1..)
        .map(|(l, position)| line::ActiveModel {
            id: Set(Uuid::now_v7()),
            statement_id: Set(statement.id),
            provider_id: Set(statement.provider_id),
            position: Set(position),
            kind: Set(l.kind.to_owned()),
            invoice_id: Set(l.candidate_invoice),
            allocation_id: Set(l.allocation),
            node_id: Set(l.node),
            sku_name: Set(l.sku_name),
            form: Set(l.form),
            region: Set(l.region),
            agreement_version: Set(l.version),
            unit_hours: Set(Exact::from(l.earned.unit_hours)),
            revenue: Set(Exact::from(l.revenue)),
            revenue_currency: Set(l.revenue_currency),
            sla_credit: Set(Exact::from(l.sla_credit)),
            gross: Set(Exact::from(l.earned.gross)),
            fee: Set(Exact::from(l.earned.fee)),
            sla_chargeback: Set(Exact::from(l.earned.sla_chargeback)),
            net: Set(Exact::from(l.earned.net)),
            note: Set(l.earned.note),
            credit_note_id: Set(l.credit_note),
            exchange_rate: Set(l.earned.exchange_rate.map(Exact::from)),
        })
        .collect();
    for chunk in rows.chunks(200) {
        line::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// A provider's statements, newest first.
pub async fn list<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
) -> Result<Vec<provider_statement::Model>, DbErr> {
    provider_statement::Entity::find()
        .filter(provider_statement::Column::ProviderId.eq(provider))
        .order_by_desc(provider_statement::Column::PeriodStart)
        .all(conn)
        .await
}

/// One statement with its lines, if `provider` owns it (`None` for any provider).
pub async fn find<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    provider: Option<ProviderId>,
) -> Result<Option<(provider_statement::Model, Vec<line::Model>)>, DbErr> {
    let mut query = provider_statement::Entity::find_by_id(id);
    if let Some(p) = provider {
        query = query.filter(provider_statement::Column::ProviderId.eq(p));
    }
    let Some(statement) = query.one(conn).await? else {
        return Ok(None);
    };
    let lines = line::Entity::find()
        .filter(line::Column::StatementId.eq(statement.id))
        .order_by_asc(line::Column::Position)
        .all(conn)
        .await?;
    Ok(Some((statement, lines)))
}
