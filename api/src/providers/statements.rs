//! Provider statements (docs/providers.md, "Statements"): closing each provider's months
//! in order once they have ended (a sweep, and `closeProviderStatements` for operators),
//! reading them (a provider its own, operators any) and exporting one as CSV or PDF.
//! What a statement holds, and its ledger transfer, is `neocloud_metering::statements`.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use neocloud_metering::statements::store::{self, month_start, next_month};
use neocloud_schema::entity::{provider_statement, provider_statement_line};
use neocloud_schema::ids::ProviderId;
use neocloud_schema::vocabulary::Role;
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::invoicing::export::row;
use crate::invoicing::pdf::{PdfInvoice, PdfLine, render};

/// The most months one sweep closes per provider (a provider whose first agreement is
/// years old catches up over several sweeps).
const MAX_MONTHS_PER_SWEEP: usize = 24;

/// Closes every provider month that has ended and has no statement yet, oldest first:
/// the months before a provider's last statement are never reopened. A provider whose
/// close fails is logged and retried on the next sweep; one held for a missing exchange
/// rate says why (`Provider.statementHeld`) until it closes; the others go on. Returns
/// the statements closed.
#[tracing::instrument(name = "statements.close_due", skip_all)]
pub async fn close_due(db: &DatabaseConnection, now: DateTime<Utc>) -> ApiResult<usize> {
    let mut closed = 0;
    let mut failed: HashSet<ProviderId> = HashSet::new();
    let rates = neocloud_metering::exchange::store::table(db).await?;
    for _ in 0..MAX_MONTHS_PER_SWEEP {
        let due: Vec<_> = store::providers_with_terms(db)
            .await?
            .into_iter()
            .filter(|(p, _, next)| next_month(*next) <= now && !failed.contains(&p.id))
            .collect();
        let Some(oldest) = due.iter().map(|(_, _, next)| *next).min() else {
            break;
        };
        let month = store::gather(db, oldest).await?;
        for (provider, terms, _) in due.iter().filter(|(_, _, next)| *next == oldest) {
            let result = async {
                let txn = crate::db::begin_write(db).await?;
                let closed = store::close(&txn, provider, (terms, &rates), &month, now).await?;
                let held = closed.as_ref().err().map(held_text);
                if provider.statement_held != held {
                    super::store::set_statement_held(&txn, provider.id, held).await?;
                }
                txn.commit().await?;
                Ok::<_, ApiError>(closed)
            }
            .await;
            match result {
                Ok(Ok(statement)) => {
                    closed += 1;
                    tracing::info!(number = %statement.number, net = %statement.net, "Provider statement closed.");
                }
                Ok(Err(held)) => {
                    failed.insert(provider.id);
                    tracing::warn!(provider = %provider.name, reason = %held.reason(), "A provider statement is held.");
                }
                Err(err) => {
                    failed.insert(provider.id);
                    tracing::error!(provider = %provider.name, code = err.code().as_str(), message = %err.message(), "Closing a provider statement failed; the other providers go on.");
                }
            }
        }
    }
    Ok(closed)
}

/// A hold as `providers.statement_held` keeps it (JSON).
fn held_text(held: &store::Held) -> String {
    serde_json::to_string(held).unwrap_or_else(|_| held.reason())
}

/// The hold `providers.statement_held` keeps; `None` when nothing holds the statement.
pub fn held_of(provider: &neocloud_schema::entity::provider::Model) -> Option<store::Held> {
    serde_json::from_str(provider.statement_held.as_deref()?).ok()
}

/// `closeProviderStatements` (operator): closes what is due now.
pub async fn close_now(
    db: &DatabaseConnection,
    actor: &Principal,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    actor.require_operator()?;
    close_due(db, now).await
}

/// `providerStatements(providerId)`: a provider's own statements, any provider's for
/// operators; newest first.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    provider: Option<ProviderId>,
) -> ApiResult<Vec<provider_statement::Model>> {
    let provider = actor.acting_provider(provider)?;
    Ok(store::list(db, provider).await?)
}

/// One statement with its lines: a provider's own (another's answers `NOT_FOUND`), any
/// for operators.
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
) -> ApiResult<(
    provider_statement::Model,
    Vec<provider_statement_line::Model>,
)> {
    let owner = match actor.role {
        Role::Operator => None,
        _ => Some(actor.acting_provider(None)?),
    };
    store::find(db, id, owner)
        .await?
        .ok_or_else(|| ApiError::not_found("provider statement"))
}

/// An amount of a statement written with its currency's minor-unit digits (`0.00`,
/// whichever database stored it).
pub fn amount(
    statement: &provider_statement::Model,
    value: neocloud_schema::entity::Exact,
) -> String {
    crate::invoicing::in_minor_units(&statement.currency)(value.get()).to_string()
}

/// The month a statement covers, as `2026-11`.
pub fn month_label(statement: &provider_statement::Model) -> String {
    month_start(statement.period_start)
        .format("%Y-%m")
        .to_string()
}

const COLUMNS: [&str; 17] = [
    "statement",
    "month",
    "position",
    "kind",
    "allocation",
    "node",
    "sku",
    "form",
    "region",
    "agreement_version",
    "unit_hours",
    "revenue",
    "revenue_currency",
    "gross",
    "fee",
    "sla_chargeback",
    "net",
];

/// The statement as CSV: a row per line, amounts in the statement's currency (revenue in
/// the invoice's). The lines sum to the statement's totals.
pub fn csv(
    statement: &provider_statement::Model,
    lines: &[provider_statement_line::Model],
) -> String {
    let mut out = String::new();
    row(&mut out, &COLUMNS.map(|c| (c, false)));
    let month = month_label(statement);
    for l in lines {
        let cells = [
            statement.number.clone(),
            month.clone(),
            l.position.to_string(),
            l.kind.clone(),
            l.allocation_id.to_string(),
            l.node_id.to_string(),
            l.sku_name.clone(),
            l.form.clone(),
            l.region.clone(),
            l.agreement_version.to_string(),
            l.unit_hours.get().normalize().to_string(),
            l.revenue.get().round_dp(6).normalize().to_string(),
            l.revenue_currency.clone(),
            amount(statement, l.gross),
            amount(statement, l.fee),
            amount(statement, l.sla_chargeback),
            amount(statement, l.net),
        ];
        let text = [false, false, false, false, false, false, true, false, true];
        let refs: Vec<(&str, bool)> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), text.get(i).copied().unwrap_or(false)))
            .collect();
        row(&mut out, &refs);
    }
    out
}

/// The statement as a PDF, made out to the provider's legal name.
pub fn pdf(
    operator: &str,
    provider: &neocloud_schema::entity::provider::Model,
    statement: &provider_statement::Model,
    lines: &[provider_statement_line::Model],
) -> Vec<u8> {
    let legal = if provider.legal_name.is_empty() {
        provider.name.clone()
    } else {
        provider.legal_name.clone()
    };
    let pdf_lines = lines
        .iter()
        .map(|l| PdfLine {
            description: format!(
                "{} {} on {} ({}), allocation {}{}",
                match l.kind.as_str() {
                    store::REVERSAL => "Reversal:",
                    store::CREDIT_NOTE => "Credited:",
                    _ => "Served:",
                },
                l.sku_name,
                l.region,
                l.form,
                l.allocation_id,
                l.note
                    .as_ref()
                    .map(|n| format!(" - {n}"))
                    .unwrap_or_default()
            ),
            quantity: l.unit_hours.get().round_dp(4).normalize().to_string(),
            unit: "unit-hour".into(),
            unit_price: String::new(),
            amount: amount(statement, l.net),
        })
        .collect();
    let document = PdfInvoice {
        operator_name: operator.to_owned(),
        tenant_name: legal,
        tenant_lines: vec![format!("Provider {}", provider.name), provider.country.clone()],
        tenant_id: provider.id.to_string(),
        buyer_label: "STATEMENT FOR".into(),
        buyer_id_label: "Provider ID".into(),
        period_label: "Month".into(),
        title: "Provider statement".into(),
        document: "Statement".into(),
        number: Some(statement.number.clone()),
        status: "CLOSED".into(),
        issued_at: Some(statement.closed_at.format("%Y-%m-%d %H:%M UTC").to_string()),
        period_start: statement.period_start.format("%Y-%m-%d").to_string(),
        period_end: statement.period_end.format("%Y-%m-%d").to_string(),
        currency: statement.currency.clone(),
        references: vec![
            ("Gross earnings".into(), amount(statement, statement.gross)),
            ("Platform fees".into(), amount(statement, statement.fees)),
            ("SLA chargebacks".into(), amount(statement, statement.sla_chargebacks)),
        ],
        lines: pdf_lines,
        subtotal: amount(statement, statement.net),
        total: amount(statement, statement.net),
        notes: vec![
            "Each line is one allocation served on one tenant invoice: its net earning (gross less the platform fee and SLA chargebacks).".into(),
            "Tenants appear only as allocation ids.".into(),
        ],
        ..PdfInvoice::default()
    };
    render(&document)
}

/// `GET /v1/provider-statements/{id}/export?format=csv|pdf`: the file's content type,
/// name and body, for the provider it belongs to (or an operator).
pub async fn export(
    db: &DatabaseConnection,
    actor: &Principal,
    id: Uuid,
    format: &str,
    operator: &str,
) -> ApiResult<(&'static str, String, Vec<u8>)> {
    let (statement, lines) = get(db, actor, id).await?;
    match format {
        "csv" => Ok((
            "text/csv; charset=utf-8",
            format!("{}.csv", statement.number),
            csv(&statement, &lines).into_bytes(),
        )),
        "pdf" => {
            let provider = super::store::find(db, statement.provider_id)
                .await?
                .ok_or_else(|| ApiError::not_found("provider"))?;
            Ok((
                "application/pdf",
                format!("{}.pdf", statement.number),
                pdf(operator, &provider, &statement, &lines),
            ))
        }
        _ => Err(ApiError::invalid("format", "csv or pdf")),
    }
}
