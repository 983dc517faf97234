//! Provider statements: `providerStatements` and `providerStatement` (a provider key its
//! own, operators any) and `closeProviderStatements` (operators). Money is a decimal
//! string in the statement's currency; tenants appear only as allocation ids.

use async_graphql::{Context, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{provider_statement, provider_statement_line};

use super::scalars::{parse_id, to_id};
use crate::providers::statements;

/// A provider's month: what its hardware earned on the tenants' invoices the month
/// brought in. Never changed once closed.
pub struct ProviderStatement {
    statement: provider_statement::Model,
    lines: Option<Vec<provider_statement_line::Model>>,
}

#[Object]
impl ProviderStatement {
    async fn id(&self) -> ID {
        to_id(self.statement.id)
    }
    async fn provider_id(&self) -> ID {
        to_id(self.statement.provider_id)
    }
    /// `PS-<PROVIDER>-0001`, numbered per provider.
    async fn number(&self) -> &str {
        &self.statement.number
    }
    /// The month, e.g. `2026-11`.
    async fn month(&self) -> String {
        statements::month_label(&self.statement)
    }
    async fn period_start(&self) -> DateTime<Utc> {
        self.statement.period_start
    }
    async fn period_end(&self) -> DateTime<Utc> {
        self.statement.period_end
    }
    async fn currency(&self) -> &str {
        &self.statement.currency
    }
    async fn gross(&self) -> String {
        statements::amount(&self.statement, self.statement.gross)
    }
    async fn fees(&self) -> String {
        statements::amount(&self.statement, self.statement.fees)
    }
    async fn sla_chargebacks(&self) -> String {
        statements::amount(&self.statement, self.statement.sla_chargebacks)
    }
    /// Gross less fees and SLA chargebacks: what the statement adds to the payable.
    async fn net(&self) -> String {
        statements::amount(&self.statement, self.statement.net)
    }
    async fn line_count(&self) -> i32 {
        self.statement.lines
    }
    async fn closed_at(&self) -> DateTime<Utc> {
        self.statement.closed_at
    }
    /// The lines (only when one statement is read, `providerStatement`).
    async fn lines(&self) -> Option<Vec<ProviderStatementLine>> {
        self.lines.as_ref().map(|lines| {
            lines
                .iter()
                .map(|l| ProviderStatementLine::of(&self.statement, l))
                .collect()
        })
    }
}

/// What one allocation earned on one tenant invoice, the reverse of it when the invoice
/// was voided, or what a credit note on the invoice took back.
#[derive(SimpleObject)]
pub struct ProviderStatementLine {
    pub position: i32,
    /// `earning`, `reversal` or `credit_note`.
    pub kind: String,
    pub allocation_id: ID,
    pub node_id: ID,
    pub sku: String,
    pub form: String,
    pub region: String,
    pub agreement_version: i32,
    pub unit_hours: String,
    /// What tenants were invoiced for it, in `revenueCurrency`.
    pub revenue: String,
    pub revenue_currency: String,
    pub gross: String,
    pub fee: String,
    pub sla_chargeback: String,
    pub net: String,
    pub note: Option<String>,
    /// Units of the statement's currency per unit of `revenueCurrency` the revenue and
    /// SLA credit were converted at; null when nothing was converted.
    pub exchange_rate: Option<String>,
}

impl ProviderStatementLine {
    fn of(statement: &provider_statement::Model, l: &provider_statement_line::Model) -> Self {
        let money = |value| statements::amount(statement, value);
        ProviderStatementLine {
            position: l.position,
            kind: l.kind.clone(),
            allocation_id: to_id(l.allocation_id),
            node_id: to_id(l.node_id),
            sku: l.sku_name.clone(),
            form: l.form.clone(),
            region: l.region.clone(),
            agreement_version: l.agreement_version,
            unit_hours: l.unit_hours.get().normalize().to_string(),
            revenue: l.revenue.get().round_dp(6).normalize().to_string(),
            revenue_currency: l.revenue_currency.clone(),
            gross: money(l.gross),
            fee: money(l.fee),
            sla_chargeback: money(l.sla_chargeback),
            net: money(l.net),
            note: l.note.clone(),
            exchange_rate: l.exchange_rate.map(|r| r.get().normalize().to_string()),
        }
    }
}

#[derive(Default)]
pub struct ProviderStatementQuery;

#[Object]
impl ProviderStatementQuery {
    /// A provider's statements, newest first: a provider key's own, any provider's for
    /// operators (who name it).
    async fn provider_statements(
        &self,
        ctx: &Context<'_>,
        provider_id: Option<ID>,
    ) -> Result<Vec<ProviderStatement>> {
        let provider = super::scalars::provider_arg(provider_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let found = statements::list(db, principal, provider).await?;
        Ok(found
            .into_iter()
            .map(|statement| ProviderStatement {
                statement,
                lines: None,
            })
            .collect())
    }

    /// One statement with its lines.
    async fn provider_statement(&self, ctx: &Context<'_>, id: ID) -> Result<ProviderStatement> {
        let id = parse_id::<uuid::Uuid>("id", &id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let (statement, lines) = statements::get(db, principal, id).await?;
        Ok(ProviderStatement {
            statement,
            lines: Some(lines),
        })
    }
}

#[derive(Default)]
pub struct ProviderStatementMutation;

#[Object]
impl ProviderStatementMutation {
    /// Closes every provider month that has ended and has no statement yet, oldest first
    /// (operator; a sweep does the same every few minutes). Returns how many closed.
    async fn close_provider_statements(&self, ctx: &Context<'_>) -> Result<i32> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let closed = statements::close_now(db, principal, super::now(ctx)?).await?;
        Ok(i32::try_from(closed).unwrap_or(i32::MAX))
    }
}
