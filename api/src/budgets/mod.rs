//! Budgets: a tenant's monthly spend limit. The period's spend so far (the open period's
//! draft, rated: usage, fees, SLA credits, adjustments and commitment discount — not the
//! true-up nor credits) is compared with the limit by a sweep every
//! `budgets.sweep_seconds` (default 30, so a crossed limit acts within 60 s) and right
//! after every `setBudget`:
//!
//! - each alert threshold (percent of the limit) crossed in a period is recorded once per
//!   limit, as an event of the log (`budget.threshold_crossed`) that reaches the tenant's
//!   webhook endpoints. Changing the limit starts a new limit version: the new limit's
//!   thresholds are judged afresh, whatever was sent for the old one;
//! - with a hard cap, new orders are refused (`BUDGET_EXCEEDED`) while the spend is at or
//!   over the limit in force (re-judged at once when the limit changes);
//! - with `stopAllocations` too, once the limit is reached and no prepaid credit is left
//!   to pay for the period, running allocations get the preemption notice window and end.
//!
//! The budget's webhook URL is a webhook endpoint of the tenant that `setBudget` manages
//! ([`crate::webhooks::set_budget_endpoint`]): retried, logged and signed like every
//! endpoint, with the budget's secret, plus the `Neocloud-Signature` header budget
//! receivers verified before. The URL is checked when it is set, and at each send.

use chrono::{DateTime, Utc};
use neocloud_metering::budgets::{self, store};
use neocloud_metering::ingest;
use neocloud_schema::entity::{budget, budget_event};
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use rust_decimal::Decimal;
use sea_orm::DatabaseConnection;
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::ordering::Ordering;
use crate::outbound::{self, WebhookClient};
use crate::{tenancy, webhooks};

pub const MAX_THRESHOLDS: usize = 10;

/// `setBudget`'s input.
pub struct BudgetInput {
    pub tenant: Option<TenantId>,
    pub monthly_limit: String,
    pub alert_thresholds: Vec<i32>,
    pub webhook_url: Option<String>,
    pub hard_cap: bool,
    pub stop_allocations: bool,
    pub rotate_webhook_secret: bool,
}

/// A budget with where the period stands.
pub struct BudgetView {
    pub budget: budget::Model,
    pub spend: Decimal,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// With how each one's webhook delivery stands: `none`, `pending`, `delivered`,
    /// `failed`.
    pub events: Vec<(budget_event::Model, String)>,
    /// The webhook secret, only when it was just created or rotated.
    pub new_webhook_secret: Option<String>,
}

fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("whsec_{}", hex::encode(bytes))
}

fn validate_url(url: &str, webhooks: &WebhookClient) -> ApiResult<()> {
    outbound::check_url(url, webhooks.allow_list())
        .map(|_| ())
        .map_err(|why| ApiError::invalid("webhookUrl", why))
}

/// `setBudget` (tenant admin for its tenant, operator for any).
#[tracing::instrument(name = "budgets.set", skip_all)]
pub async fn set(
    db: &DatabaseConnection,
    actor: &Principal,
    ordering: &Ordering,
    webhooks: &WebhookClient,
    input: BudgetInput,
    now: DateTime<Utc>,
) -> ApiResult<BudgetView> {
    let tenant = actor.acting_tenant(input.tenant)?;
    if actor.role == Role::TenantMember {
        return Err(ApiError::forbidden("budgets are set by tenant admins"));
    }
    let (limit, thresholds) = checked_input(&input, webhooks)?;
    let txn = crate::db::begin_write(db).await?;
    let owner = tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    tenancy::in_currency("monthlyLimit", limit, &owner.currency)?;
    // Locked, so two changes of the limit cannot take the same limit version.
    let before = store::find_for_update(&txn, tenant).await?;
    let secret = match (&before, input.rotate_webhook_secret) {
        (Some(b), false) => b.webhook_secret.clone(),
        _ => new_secret(),
    };
    let shown = (before.is_none() || input.rotate_webhook_secret).then(|| secret.clone());
    let limit_version = match &before {
        Some(b) if b.monthly_limit.get() == limit => b.limit_version,
        _ => store::next_limit_version(&txn, tenant, before.as_ref()).await?,
    };
    let saved = store::upsert(
        &txn,
        budget::Model {
            tenant_id: tenant,
            monthly_limit: limit.into(),
            currency: owner.currency.clone(),
            alert_thresholds: json!(thresholds),
            webhook_url: input.webhook_url.clone(),
            webhook_secret: secret,
            hard_cap: input.hard_cap,
            stop_allocations: input.stop_allocations,
            blocked_since: before.as_ref().and_then(|b| b.blocked_since),
            updated_at: now,
            limit_version,
        },
        before.is_some(),
    )
    .await?;
    let url = saved.webhook_url.as_deref();
    webhooks::set_budget_endpoint(&txn, tenant, url, &saved.webhook_secret, now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "budget.set",
            object_type: "budget",
            object_id: tenant.to_string(),
            before: before.as_ref().map(public_json),
            after: Some(public_json(&saved)),
        },
    )
    .await?;
    txn.commit().await?;
    let mut view = evaluate(db, ordering, saved.tenant_id, now)
        .await?
        .ok_or_else(|| ApiError::not_found("budget"))?;
    view.new_webhook_secret = shown;
    Ok(view)
}

/// The limit (positive) and the alert thresholds (sorted, distinct, bounded) of a
/// `setBudget`, its webhook URL checked.
fn checked_input(input: &BudgetInput, webhooks: &WebhookClient) -> ApiResult<(Decimal, Vec<i32>)> {
    let limit = parse_plain_decimal(input.monthly_limit.trim())
        .map_err(|e| ApiError::invalid("monthlyLimit", e))?;
    if limit <= Decimal::ZERO {
        return Err(ApiError::invalid("monthlyLimit", "must be positive"));
    }
    let mut thresholds = input.alert_thresholds.clone();
    thresholds.sort_unstable();
    thresholds.dedup();
    if thresholds.len() > MAX_THRESHOLDS || thresholds.iter().any(|t| !(1..=1000).contains(t)) {
        return Err(ApiError::invalid(
            "alertThresholds",
            format!("at most {MAX_THRESHOLDS} percentages from 1 to 1000"),
        ));
    }
    if let Some(url) = &input.webhook_url {
        validate_url(url, webhooks)?;
    }
    Ok((limit, thresholds))
}

/// A budget as the audit log keeps it (without the webhook secret).
fn public_json(b: &budget::Model) -> serde_json::Value {
    json!({"monthly_limit": b.monthly_limit, "alert_thresholds": b.alert_thresholds,
        "webhook_url": b.webhook_url, "hard_cap": b.hard_cap, "stop_allocations": b.stop_allocations})
}

/// `removeBudget`.
pub async fn remove(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    now: DateTime<Utc>,
) -> ApiResult<bool> {
    let tenant = actor.acting_tenant(asked)?;
    if actor.role == Role::TenantMember {
        return Err(ApiError::forbidden("budgets are set by tenant admins"));
    }
    let txn = crate::db::begin_write(db).await?;
    let Some(before) = store::find(&txn, tenant).await? else {
        return Ok(false);
    };
    store::delete(&txn, tenant).await?;
    webhooks::set_budget_endpoint(&txn, tenant, None, "", now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "budget.remove",
            object_type: "budget",
            object_id: tenant.to_string(),
            before: Some(public_json(&before)),
            after: None,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(true)
}

/// `budget`: the tenant's budget and where the period stands, or none.
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    now: DateTime<Utc>,
) -> ApiResult<Option<BudgetView>> {
    let tenant = actor.acting_tenant(asked)?;
    let Some(found) = store::find(db, tenant).await? else {
        return Ok(None);
    };
    ingest::settle(db).await?;
    let standing = budgets::standing(db, tenant, now).await?;
    let events = events_of(db, tenant, standing.period_start).await?;
    Ok(Some(BudgetView {
        budget: found,
        spend: standing.spend,
        period_start: standing.period_start,
        period_end: standing.period_end,
        events,
        new_webhook_secret: None,
    }))
}

/// `BUDGET_EXCEEDED` while `budget`'s hard cap holds (checked by `placeOrder`).
pub fn order_refusal(budget: &budget::Model) -> Option<ApiError> {
    (budget.hard_cap && budget.blocked_since.is_some()).then(|| ApiError::BudgetExceeded {
        message: format!(
            "the monthly budget of {} {} is spent; raise it or wait for the next period",
            budget.monthly_limit, budget.currency
        ),
    })
}

/// Judges a tenant's budget against the period's spend (see
/// `neocloud_metering::budgets`) and stops its allocations when the budget says so, in
/// the transaction that records the decisions. `None` when the tenant has no budget (any
/// more).
async fn evaluate(
    db: &DatabaseConnection,
    ordering: &Ordering,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> ApiResult<Option<BudgetView>> {
    ingest::settle(db).await?;
    let standing = budgets::standing(db, tenant, now).await?;
    let txn = crate::db::begin_write(db).await?;
    let Some(judged) = budgets::judge(&txn, tenant, standing, now).await? else {
        return Ok(None);
    };
    if judged.stop_allocations {
        let stopped = ordering.stop_tenant(&txn, tenant, now).await?;
        if stopped > 0 {
            budgets::record_stopped(&txn, &judged).await?;
            tracing::warn!(tenant = %tenant, allocations = stopped, "Budget reached with no credit left: allocations stopped.");
        }
    }
    txn.commit().await?;
    let period = judged.standing.period_start;
    let events = events_of(db, tenant, period).await?;
    let budget = store::find(db, tenant).await?.unwrap_or(judged.budget);
    Ok(Some(BudgetView {
        budget,
        spend: judged.standing.spend,
        period_start: period,
        period_end: judged.standing.period_end,
        events,
        new_webhook_secret: None,
    }))
}

/// The period's budget events, each with how its delivery to the budget's endpoint
/// stands (events from before budget alerts were events keep the status they had).
async fn events_of(
    db: &DatabaseConnection,
    tenant: TenantId,
    period_start: DateTime<Utc>,
) -> ApiResult<Vec<(budget_event::Model, String)>> {
    let endpoint = webhooks::budget_endpoint(db, tenant).await?;
    let mut out = Vec::new();
    for found in store::events(db, tenant, period_start).await? {
        let status = match (found.event_id, &endpoint) {
            (None, _) => found.webhook_status.clone(),
            (Some(_), None) => "none".to_owned(),
            (Some(event), Some(endpoint)) => {
                webhooks::delivery_status(db, tenant, event, endpoint).await?
            }
        };
        out.push((found, status));
    }
    Ok(out)
}

/// Evaluates every budget. Returns how many.
#[tracing::instrument(name = "budgets.sweep", skip_all)]
pub async fn sweep(
    db: &DatabaseConnection,
    ordering: &Ordering,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    let budgets = store::all(db).await?;
    for found in &budgets {
        if let Err(err) = evaluate(db, ordering, found.tenant_id, now).await {
            tracing::warn!(tenant = %found.tenant_id, code = err.code().as_str(), message = %err.message(), "Budget evaluation failed.");
        }
    }
    Ok(budgets.len())
}
