//! SQL for invoices, their lines, invoice numbers and credit grants. Every tenant-owned
//! read filters by tenant; a finalized invoice is only ever moved to paid or void.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{
    Exact, credit_application, credit_grant, invoice, invoice_line, invoice_sequence, tenant,
};
use neocloud_schema::ids::InvoiceId;
use neocloud_schema::ids::{SkuId, TenantId};
use neocloud_schema::vocabulary::{InvoiceStatus, PaymentState};
use rust_decimal::Decimal;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::{NewGrant, next_anchor, whole_minute};
use crate::rating::period::{Line, PeriodInput, RatedInvoice};
use crate::tax::LineTax;

/// A no-op write on the tenant's row (closes of one tenant wait for each other); the
/// tenant's net terms in days.
pub(crate) async fn lock_tenant<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<i64, DbErr> {
    tenant::Entity::update_many()
        .col_expr(tenant::Column::Name, Expr::col(tenant::Column::Name))
        .filter(tenant::Column::Id.eq(tenant))
        .exec(conn)
        .await?;
    let terms: Option<i32> = tenant::Entity::find_by_id(tenant)
        .select_only()
        .column(tenant::Column::NetTermsDays)
        .into_tuple()
        .one(conn)
        .await?;
    Ok(terms.map_or(0, i64::from))
}

/// The tenant's draft; its first one (from the tenant's creation) or the one after its
/// last finalized invoice is created when missing.
pub async fn open_draft<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<invoice::Model, DbErr> {
    if let Some(draft) = invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.eq(InvoiceStatus::Draft))
        .one(conn)
        .await?
    {
        return Ok(draft);
    }
    let owner = tenant::Entity::find_by_id(tenant)
        .one(conn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("tenant".into()))?;
    // Finalized invoices only: a draft another reader opened meanwhile is the same
    // period, not the one before it.
    let last_end = invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.ne(InvoiceStatus::Draft))
        .order_by_desc(invoice::Column::PeriodEnd)
        .one(conn)
        .await?
        .map(|i| i.period_end);
    // A period starts where the last one ended; the first, at the start of the minute
    // the tenant was created in.
    let start = last_end.unwrap_or_else(|| whole_minute(owner.created_at));
    let end = next_anchor(start, u32::try_from(owner.billing_anchor_day).unwrap_or(1));
    let draft = invoice::ActiveModel {
        id: Set(InvoiceId::new()),
        tenant_id: Set(tenant),
        status: Set(InvoiceStatus::Draft),
        number: Set(None),
        currency: Set(owner.currency),
        period_start: Set(start),
        period_end: Set(end),
        subtotal: Set(Exact::default()),
        tax: Set(Exact::default()),
        taxes: Set(None),
        credits: Set(Exact::default()),
        total: Set(Exact::default()),
        plan: Set(String::new()),
        rating: Set(None),
        finalized_at: Set(None),
        due_at: Set(None),
        parties: Set(None),
        paid_at: Set(None),
        voided_at: Set(None),
        void_reason: Set(None),
        created_at: Set(Utc::now()),
        payment_state: Set(PaymentState::External),
        payment_failures: Set(0),
        payment_url: Set(None),
    };
    // Two readers may race to open the same period: the unique (tenant, period_start)
    // index keeps one, and both read it back.
    invoice::Entity::insert(draft)
        .on_conflict(
            OnConflict::columns([invoice::Column::TenantId, invoice::Column::PeriodStart])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::PeriodStart.eq(start))
        .one(conn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("draft invoice".into()))
}

/// Takes the next number of the series `{prefix}-{year}`: the increment is a row update
/// in the finalizing transaction, so a rolled-back finalization leaves no gap.
pub(crate) async fn next_number<C: ConnectionTrait>(
    conn: &C,
    prefix: &str,
    year: i32,
) -> Result<String, DbErr> {
    let series = format!("{prefix}-{year}");
    invoice_sequence::Entity::insert(invoice_sequence::ActiveModel {
        series: Set(series.clone()),
        last_value: Set(0),
    })
    .on_conflict(
        OnConflict::column(invoice_sequence::Column::Series)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    invoice_sequence::Entity::update_many()
        .col_expr(
            invoice_sequence::Column::LastValue,
            Expr::col(invoice_sequence::Column::LastValue).add(1),
        )
        .filter(invoice_sequence::Column::Series.eq(series.as_str()))
        .exec(conn)
        .await?;
    let value = invoice_sequence::Entity::find_by_id(series.clone())
        .one(conn)
        .await?
        .map_or(0, |s| s.last_value);
    Ok(format!("{series}-{value:06}"))
}

/// When and to whom an invoice is issued.
pub(super) struct Issue {
    pub at: DateTime<Utc>,
    pub due_at: DateTime<Utc>,
    pub parties: crate::parties::Parties,
}

/// Freezes the draft: lines, credit applications, amounts, number, rating input.
pub(super) async fn finalize<C: ConnectionTrait>(
    conn: &C,
    draft: invoice::Model,
    number: &str,
    input: &PeriodInput,
    rated: &RatedInvoice,
    payment_state: PaymentState,
    issue: &Issue,
) -> Result<invoice::Model, DbErr> {
    let now = issue.at;
    insert_lines(conn, &draft, &rated.lines).await?;
    insert_credit_applications(conn, &draft, &rated.credit_uses, now).await?;
    let plan = input
        .segments
        .iter()
        .map(|s| s.plan.label.clone())
        .collect::<Vec<_>>()
        .join(", then ");
    let end = draft.period_end;
    let mut active: invoice::ActiveModel = draft.into();
    active.status = Set(InvoiceStatus::Open);
    active.number = Set(Some(number.to_owned()));
    active.period_end = Set(end);
    active.subtotal = Set(rated.subtotal.into());
    active.tax = Set(rated.tax.into());
    active.taxes = Set((!rated.taxes.is_empty())
        .then(|| serde_json::to_value(&rated.taxes).ok())
        .flatten());
    active.credits = Set(rated.credits.into());
    active.total = Set(rated.total.into());
    active.plan = Set(plan);
    active.rating = Set(Some(rating_record(input, rated)));
    active.finalized_at = Set(Some(now));
    active.due_at = Set(Some(issue.due_at));
    active.parties = Set(serde_json::to_value(&issue.parties).ok());
    if payment_state == PaymentState::Paid {
        active.status = Set(InvoiceStatus::Paid);
        active.paid_at = Set(Some(now));
    }
    active.payment_state = Set(payment_state);
    active.update(conn).await
}

/// Writes the invoice's lines, numbered in order.
async fn insert_lines<C: ConnectionTrait>(
    conn: &C,
    draft: &invoice::Model,
    lines: &[Line],
) -> Result<(), DbErr> {
    for (position, line) in lines.iter().enumerate() {
        invoice_line::ActiveModel {
            id: Set(Uuid::now_v7()),
            invoice_id: Set(draft.id),
            tenant_id: Set(draft.tenant_id),
            position: Set(i32::try_from(position).unwrap_or(i32::MAX)),
            kind: Set(line.kind),
            description: Set(line.description.clone()),
            sku_id: Set(line.sku.map(SkuId)),
            sku_name: Set(line.sku_name.clone()),
            metric: Set(line.metric),
            tier: Set(line.tier.and_then(|t| i32::try_from(t).ok())),
            quantity: Set(line.quantity.into()),
            unit: Set(line.unit.clone()),
            unit_price: Set(line.unit_price.into()),
            amount: Set(line.amount.into()),
            amount_exact: Set(line.amount_exact.into()),
            adjusts_invoice_id: Set(line.adjusts_invoice),
            trace: Set(line.trace.clone()),
            tax_category: Set(line.tax.as_ref().map(|t| t.category.as_str().to_owned())),
            tax_percent: Set(line.tax.as_ref().map(|t| t.percent.into())),
            tax_amount: Set(line.tax.as_ref().map(|t| t.amount.into())),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// Records what each grant gave to the invoice.
async fn insert_credit_applications<C: ConnectionTrait>(
    conn: &C,
    draft: &invoice::Model,
    credit_uses: &[(Uuid, Decimal)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for (grant, amount) in credit_uses {
        credit_application::ActiveModel {
            id: Set(Uuid::now_v7()),
            grant_id: Set((*grant).into()),
            invoice_id: Set(draft.id),
            tenant_id: Set(draft.tenant_id),
            amount: Set((*amount).into()),
            created_at: Set(now),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// What a finalized invoice keeps of its rating: the input, the output and the rules
/// they were rated by.
fn rating_record(input: &PeriodInput, rated: &RatedInvoice) -> serde_json::Value {
    serde_json::json!({
        "allocated_unit": crate::rating::period::ALLOCATED_UNIT_RULE,
        "tier_numbering": crate::rating::period::TIER_NUMBERING_RULE,
        "input": input,
        "output": rated,
        "rounding": format!(
            "each line rounded half-even to {} decimal places; tax per rate rounded half away from zero; total = sum of rounded lines + tax",
            input.minor_digits
        ),
    })
}

/// Settles an owed invoice whose credit notes left nothing due.
pub(crate) async fn mark_settled<C: ConnectionTrait>(
    conn: &C,
    found: invoice::Model,
    now: DateTime<Utc>,
) -> Result<invoice::Model, DbErr> {
    let mut active: invoice::ActiveModel = found.into();
    active.status = Set(InvoiceStatus::Paid);
    active.paid_at = Set(Some(now));
    active.payment_state = Set(PaymentState::Paid);
    active.update(conn).await
}

pub(super) async fn mark_void<C: ConnectionTrait>(
    conn: &C,
    found: invoice::Model,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<invoice::Model, DbErr> {
    let mut active: invoice::ActiveModel = found.into();
    active.status = Set(InvoiceStatus::Void);
    active.voided_at = Set(Some(now));
    active.void_reason = Set(Some(reason.to_owned()));
    active.payment_state = Set(PaymentState::Void);
    active.update(conn).await
}

/// One invoice; with `tenant`, only if it belongs to that tenant.
pub async fn find<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    id: Uuid,
) -> Result<Option<invoice::Model>, DbErr> {
    let mut query = invoice::Entity::find_by_id(id);
    if let Some(tenant) = tenant {
        query = query.filter(invoice::Column::TenantId.eq(tenant));
    }
    query.one(conn).await
}

/// The tenant's latest finalized invoice that was not voided (by period end).
pub async fn latest_finalized<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Option<invoice::Model>, DbErr> {
    invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.is_not_in([InvoiceStatus::Draft, InvoiceStatus::Void]))
        .order_by_desc(invoice::Column::PeriodEnd)
        .one(conn)
        .await
}

/// The lines of a finalized invoice, in order.
pub async fn lines<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    invoice: InvoiceId,
) -> Result<Vec<invoice_line::Model>, DbErr> {
    invoice_line::Entity::find()
        .filter(invoice_line::Column::TenantId.eq(tenant))
        .filter(invoice_line::Column::InvoiceId.eq(invoice))
        .order_by_asc(invoice_line::Column::Position)
        .all(conn)
        .await
}

/// A stored line as the rating engine wrote it.
pub fn line_of(model: &invoice_line::Model) -> Line {
    Line {
        kind: model.kind,
        description: model.description.clone(),
        sku: model.sku_id.map(Uuid::from),
        sku_name: model.sku_name.clone(),
        metric: model.metric,
        tier: model.tier.and_then(|t| usize::try_from(t).ok()),
        quantity: model.quantity.get(),
        unit: model.unit.clone(),
        unit_price: model.unit_price.get(),
        amount_exact: model.amount_exact.get(),
        amount: model.amount.get(),
        adjusts_invoice: model.adjusts_invoice_id,
        trace: model.trace.clone(),
        tax: line_tax(model),
    }
}

/// A stored line's tax, if it was taxed.
fn line_tax(model: &invoice_line::Model) -> Option<LineTax> {
    let category = serde_json::from_value(serde_json::json!(model.tax_category.as_ref()?)).ok()?;
    Some(LineTax {
        category,
        percent: model.tax_percent?.get(),
        amount: model.tax_amount?.get(),
    })
}

/// Finalized, not voided invoices of the tenant whose period ended after `since`.
pub(super) async fn finalized_since<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    since: DateTime<Utc>,
) -> Result<Vec<invoice::Model>, DbErr> {
    invoice::Entity::find()
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.is_in([
            InvoiceStatus::Open.as_str(),
            InvoiceStatus::Overdue.as_str(),
            InvoiceStatus::Paid.as_str(),
            InvoiceStatus::Uncollectible.as_str(),
        ]))
        .filter(invoice::Column::PeriodEnd.gt(since))
        .order_by_asc(invoice::Column::PeriodStart)
        .all(conn)
        .await
}

/// Ids of the tenant's voided invoices (their lines and credit applications no longer
/// count).
async fn voided_ids<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<InvoiceId>, DbErr> {
    invoice::Entity::find()
        .select_only()
        .column(invoice::Column::Id)
        .filter(invoice::Column::TenantId.eq(tenant))
        .filter(invoice::Column::Status.eq(InvoiceStatus::Void))
        .into_tuple()
        .all(conn)
        .await
}

/// What has been billed for a closed period: its own lines and the adjustments for it on
/// later finalized invoices that were not voided.
pub(super) async fn billed_lines<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    closed: InvoiceId,
) -> Result<Vec<Line>, DbErr> {
    let voided = voided_ids(conn, tenant).await?;
    Ok(invoice_line::Entity::find()
        .filter(invoice_line::Column::TenantId.eq(tenant))
        .filter(
            sea_orm::Condition::any()
                .add(invoice_line::Column::InvoiceId.eq(closed))
                .add(invoice_line::Column::AdjustsInvoiceId.eq(closed)),
        )
        .all(conn)
        .await?
        .iter()
        .filter(|l| match l.adjusts_invoice_id {
            // The closed invoice's own lines for its own period...
            None => l.invoice_id == closed,
            // ...and adjustments for that period on invoices still standing.
            Some(adjusted) => adjusted == closed && !voided.contains(&l.invoice_id),
        })
        .map(line_of)
        .collect())
}

/// Drafts whose period ended before `before`: (tenant, period end).
pub(super) async fn drafts_ended_before<C: ConnectionTrait>(
    conn: &C,
    before: DateTime<Utc>,
) -> Result<Vec<(TenantId, DateTime<Utc>)>, DbErr> {
    Ok(invoice::Entity::find()
        .filter(invoice::Column::Status.eq(InvoiceStatus::Draft))
        .filter(invoice::Column::PeriodEnd.lte(before))
        .all(conn)
        .await?
        .into_iter()
        .map(|i| (i.tenant_id, i.period_end))
        .collect())
}

pub(super) async fn insert_grant<C: ConnectionTrait>(
    conn: &C,
    id: Uuid,
    grant: NewGrant,
    now: DateTime<Utc>,
) -> Result<credit_grant::Model, DbErr> {
    credit_grant::ActiveModel {
        id: Set(id.into()),
        tenant_id: Set(grant.tenant),
        kind: Set(grant.kind),
        currency: Set(grant.currency),
        amount: Set(grant.amount.normalize().into()),
        effective_at: Set(grant.effective_at),
        expires_at: Set(grant.expires_at),
        reason: Set(grant.reason),
        created_at: Set(now),
        covers_from: Set(grant.covers_from),
    }
    .insert(conn)
    .await
}

/// The tenant's grants with what is left of each.
pub(super) async fn grants_with_remaining<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Vec<(credit_grant::Model, Decimal)>, DbErr> {
    let grants = credit_grant::Entity::find()
        .filter(credit_grant::Column::TenantId.eq(tenant))
        .order_by_asc(credit_grant::Column::CreatedAt)
        .all(conn)
        .await?;
    let voided = voided_ids(conn, tenant).await?;
    let mut used: HashMap<Uuid, Decimal> = HashMap::new();
    for application in credit_application::Entity::find()
        .filter(credit_application::Column::TenantId.eq(tenant))
        .all(conn)
        .await?
    {
        if !voided.contains(&application.invoice_id) {
            *used.entry(application.grant_id.into()).or_default() += application.amount.get();
        }
    }
    Ok(grants
        .into_iter()
        .map(|g| {
            let left = g.amount.get() - used.get(&Uuid::from(g.id)).copied().unwrap_or_default();
            (g, left)
        })
        .collect())
}

/// The rating input and output lines a finalized invoice keeps; `None` (logged) when
/// they cannot be read: the provider statements and usage costs that read it then leave
/// the invoice out.
pub fn kept_rating(inv: &invoice::Model) -> Option<(PeriodInput, Vec<Line>)> {
    let rating = inv.rating.as_ref()?;
    let input: Option<PeriodInput> = rating
        .get("input")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let lines: Option<Vec<Line>> = rating
        .get("output")
        .and_then(|o| o.get("lines"))
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    if input.is_none() || lines.is_none() {
        tracing::warn!(invoice = %inv.id, "An invoice's kept rating could not be read.");
    }
    Some((input?, lines?))
}
