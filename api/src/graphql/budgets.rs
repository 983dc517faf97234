//! Budgets: `budget` (tenants see their own; operators name the tenant), `setBudget` and
//! `removeBudget` (tenant admins for their tenant, operators for any).

use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};

use super::scalars::{tenant_arg, to_id};
use crate::budgets::{self, BudgetInput as NewBudget, BudgetView};

#[derive(InputObject)]
pub struct BudgetInput {
    /// Operators name the tenant; tenant admins set their own.
    pub tenant_id: Option<ID>,
    /// Per billing period, in the tenant's currency (decimal string).
    pub monthly_limit: String,
    /// Percentages of the limit that raise an alert once per period and limit: changing
    /// the limit judges them afresh against the new one.
    #[graphql(default_with = "vec![50, 80, 100]")]
    pub alert_thresholds: Vec<i32>,
    /// The budget events (`budget.threshold_crossed`, `budget.blocked`,
    /// `budget.allocations_stopped`) are delivered here as a webhook endpoint of the
    /// tenant (in `webhookEndpoints`, retried and logged), signed with the budget's
    /// webhook secret by the Standard Webhooks scheme and, for this release, also with
    /// `Neocloud-Signature`. An http(s) URL of at most 2048 bytes without user name or
    /// password, reaching a public address (loopback, private, link-local and metadata
    /// addresses are refused, also after the host name is resolved; redirects are not
    /// followed). Omitted: no endpoint.
    pub webhook_url: Option<String>,
    /// Refuse new orders while the spend is at or over the limit.
    #[graphql(default)]
    pub hard_cap: bool,
    /// With `hardCap`: once the limit is reached and no prepaid credit is left, running
    /// allocations get the preemption notice window and end.
    #[graphql(default)]
    pub stop_allocations: bool,
    /// Issue a new webhook secret (returned once).
    #[graphql(default)]
    pub rotate_webhook_secret: bool,
}

#[derive(SimpleObject)]
pub struct BudgetEvent {
    pub id: ID,
    /// `THRESHOLD_CROSSED` or `ALLOCATIONS_STOPPED`.
    pub kind: String,
    pub threshold_pct: i32,
    pub spend: String,
    /// The limit in force when the event was recorded, which it was judged against.
    pub monthly_limit: String,
    pub at: DateTime<Utc>,
    /// How its delivery to the budget's webhook URL stands: `NONE`, `PENDING`,
    /// `DELIVERED` or `FAILED` (retries ran out; the endpoint's log says why).
    pub webhook_status: String,
}

/// A budget and where the open billing period stands against it.
#[derive(SimpleObject)]
pub struct Budget {
    pub tenant_id: ID,
    pub monthly_limit: String,
    pub currency: String,
    pub alert_thresholds: Vec<i32>,
    pub webhook_url: Option<String>,
    pub hard_cap: bool,
    pub stop_allocations: bool,
    /// The period's spend so far: usage, fees, SLA credits, adjustments and commitment
    /// discount (not the commitment true-up, not credits).
    pub spend: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// Set while the hard cap refuses new orders.
    pub blocked_since: Option<DateTime<Utc>>,
    /// This period's alerts, of the limit in force and of earlier limits.
    pub events: Vec<BudgetEvent>,
}

#[derive(SimpleObject)]
pub struct SetBudgetPayload {
    pub budget: Budget,
    /// The webhook signing secret: only when the budget was created or the secret rotated.
    pub webhook_secret: Option<String>,
}

fn budget_of(view: BudgetView) -> Budget {
    let b = view.budget;
    Budget {
        alert_thresholds: neocloud_metering::budgets::thresholds(&b),
        tenant_id: to_id(b.tenant_id),
        monthly_limit: b.monthly_limit.to_string(),
        currency: b.currency,
        webhook_url: b.webhook_url,
        hard_cap: b.hard_cap,
        stop_allocations: b.stop_allocations,
        spend: view.spend.to_string(),
        period_start: view.period_start,
        period_end: view.period_end,
        blocked_since: b.blocked_since,
        events: view
            .events
            .into_iter()
            .map(|(e, webhook_status)| BudgetEvent {
                id: to_id(e.id),
                kind: e.kind.to_uppercase(),
                threshold_pct: e.threshold,
                spend: e.spend.to_string(),
                monthly_limit: e.monthly_limit.to_string(),
                at: e.created_at,
                webhook_status: webhook_status.to_uppercase(),
            })
            .collect(),
    }
}

#[derive(Default)]
pub struct BudgetQuery;

#[Object]
impl BudgetQuery {
    /// The tenant's budget, or null when it has none.
    async fn budget(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Option<Budget>> {
        let view = budgets::get(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            super::now(ctx)?,
        )
        .await?;
        Ok(view.map(budget_of))
    }
}

#[derive(Default)]
pub struct BudgetMutation;

#[Object]
impl BudgetMutation {
    /// Creates or replaces the tenant's budget and checks it against the spend at once.
    async fn set_budget(&self, ctx: &Context<'_>, input: BudgetInput) -> Result<SetBudgetPayload> {
        let view = budgets::set(
            super::db(ctx)?,
            super::principal(ctx)?,
            super::ordering_service(ctx)?,
            super::webhook_client(ctx)?,
            NewBudget {
                tenant: tenant_arg(input.tenant_id)?,
                monthly_limit: input.monthly_limit,
                alert_thresholds: input.alert_thresholds,
                webhook_url: input.webhook_url,
                hard_cap: input.hard_cap,
                stop_allocations: input.stop_allocations,
                rotate_webhook_secret: input.rotate_webhook_secret,
            },
            super::now(ctx)?,
        )
        .await?;
        let webhook_secret = view.new_webhook_secret.clone();
        Ok(SetBudgetPayload {
            budget: budget_of(view),
            webhook_secret,
        })
    }

    /// Removes the tenant's budget (and its hard cap). True if there was one.
    async fn remove_budget(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<bool> {
        Ok(budgets::remove(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            super::now(ctx)?,
        )
        .await?)
    }
}
