//! Reads what rating a period needs: the plan versions in force (segments), the usage of
//! each allocation in each segment, the SKUs, the credit grants, and the late usage of
//! recently closed periods.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_schema::entity::{
    Exact, allocation, allocation_gpu, invoice, plan_rate, plan_version, sku, tenant, tenant_plan,
};
use neocloud_schema::ids::PlanVersionId;
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::Currency;
use neocloud_schema::vocabulary::{AccessState, AllocationClass, Metric};
use rust_decimal::Decimal;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::{InvoicingError, month_fraction, store};
use crate::plans;
use crate::rating::PriceModel;
use crate::rating::period::{
    ALLOCATED_UNIT_RULE, AllocationUsage, Commitment, DEFAULT_UNIT, GrantBalance, LateUsage, Line,
    PeriodInput, PlanTerms, Rate, Segment, SkuInfo, rate_period,
};
use crate::usage::{self, GroupBy};

/// Closed periods this recent are re-rated for late usage.
pub const LATE_WINDOW_DAYS: i64 = 35;

/// A plan version's rates as the rating engine takes them.
fn terms(name: &str, version: &plan_version::Model, rates: &[plan_rate::Model]) -> PlanTerms {
    let rates = rates
        .iter()
        .filter(|r| r.plan_version_id == version.id)
        .filter_map(|r| {
            let model = match (&r.unit_price, &r.tiers, &r.package_size, &r.package_price) {
                (Some(price), _, _, _) => PriceModel::PerUnit {
                    unit_price: price.get(),
                },
                (_, Some(tiers), _, _) => {
                    let tiers = serde_json::from_value(tiers.clone()).ok()?;
                    match r.tiers_mode {
                        neocloud_schema::vocabulary::TiersMode::Volume => {
                            PriceModel::Volume { tiers }
                        }
                        _ => PriceModel::Graduated { tiers },
                    }
                }
                (_, _, Some(size), Some(price)) => PriceModel::Package {
                    size: size.get(),
                    price: price.get(),
                },
                _ => return None,
            };
            Some(Rate {
                sku: r.sku_id.into(),
                metric: r.metric,
                model,
                spot_unit_price: r.spot_unit_price.map(Exact::get),
            })
        })
        .collect();
    PlanTerms {
        label: format!("{name} v{}", version.version),
        version_id: Some(version.id.into()),
        minimum_billable_seconds: version.minimum_billable_seconds,
        rates,
        commitment: version
            .commitment_monthly_minimum
            .map(|minimum| Commitment {
                monthly_minimum: minimum.get(),
                discount_pct: version
                    .commitment_discount_pct
                    .map_or(Decimal::ZERO, Exact::get),
            }),
    }
}

/// The terms of a tenant without a plan: every SKU at its list price.
pub(super) fn list_prices() -> PlanTerms {
    PlanTerms {
        label: "list prices".to_owned(),
        version_id: None,
        minimum_billable_seconds: 0,
        rates: Vec::new(),
        commitment: None,
    }
}

/// The plan versions in force over `[from, to)`, as consecutive segments.
async fn segments<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>, PlanTerms)>, DbErr> {
    let assignments = plans::store::assignments_before(conn, tenant, to).await?;
    let version_ids: Vec<PlanVersionId> = assignments.iter().map(|a| a.plan_version_id).collect();
    let versions = plans::store::versions(conn, &version_ids).await?;
    let names = plans::store::names(conn).await?;
    let rates = plans::store::rates_of(conn, &version_ids).await?;
    let terms_of = |a: &tenant_plan::Model| {
        versions
            .get(&a.plan_version_id)
            .map_or_else(list_prices, |v| {
                terms(
                    names.get(&v.plan_id).map_or("plan", String::as_str),
                    v,
                    &rates,
                )
            })
    };
    // The assignment in force at `from`, then each one that starts inside the range.
    let mut changes: Vec<(DateTime<Utc>, PlanTerms)> = Vec::new();
    let in_force = assignments.iter().rfind(|a| a.effective_from <= from);
    changes.push((from, in_force.map_or_else(list_prices, terms_of)));
    for a in assignments.iter().filter(|a| a.effective_from > from) {
        match changes.last_mut() {
            Some(last) if last.0 == a.effective_from => last.1 = terms_of(a),
            _ => changes.push((a.effective_from, terms_of(a))),
        }
    }
    let mut out = Vec::new();
    for (i, (start, terms)) in changes.iter().enumerate() {
        let end = changes.get(i + 1).map_or(to, |next| next.0);
        if start < &end {
            out.push((*start, end, terms.clone()));
        }
    }
    Ok(out)
}

/// The plan version in force over `[from, to)` at its start (the list prices when none).
pub(super) async fn plan_in_force<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<PlanTerms, DbErr> {
    Ok(segments(conn, tenant, from, to)
        .await?
        .into_iter()
        .next()
        .map_or_else(list_prices, |(_, _, plan)| plan))
}

/// Per-allocation usage of the tenant in `[from, to)`.
async fn allocation_usage<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<AllocationUsage>, DbErr> {
    let rows = usage::usage(conn, tenant, from, to, &[GroupBy::Allocation], now).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = rows
        .iter()
        .filter_map(|r| r.key.first().and_then(|k| k.parse().ok()))
        .collect();
    let allocations: HashMap<Uuid, allocation::Model> = allocation::Entity::find()
        .filter(allocation::Column::TenantId.eq(tenant))
        .filter(allocation::Column::Id.is_in(ids.clone()))
        .all(conn)
        .await?
        .into_iter()
        .map(|a| (a.id.into(), a))
        .collect();
    let mut gpus_held: HashMap<Uuid, usize> = HashMap::new();
    for h in allocation_gpu::Entity::find()
        .filter(allocation_gpu::Column::AllocationId.is_in(ids))
        .all(conn)
        .await?
    {
        *gpus_held.entry(h.allocation_id.into()).or_default() += 1;
    }
    Ok(rows
        .into_iter()
        .filter_map(|row| {
            let id: Uuid = row.key.first()?.parse().ok()?;
            // Provisioning failed, or it was released while it waited for spot allocations
            // to leave: the customer never had it, so none of it is billed.
            let a = allocations.get(&id).filter(|a| {
                a.access_state != AccessState::Failed && a.ended_at.is_none_or(|e| e > a.started_at)
            })?;
            let units = usage::units_held(a, gpus_held.get(&id).copied().unwrap_or(0));
            let ended_here = a.ended_at.filter(|e| *e > from && *e <= to);
            let held_from = a.started_at.max(from);
            let held_to = a.ended_at.map_or(to, |e| e.min(to));
            Some(AllocationUsage {
                allocation: id,
                sku: a.sku_id.into(),
                spot: a.class == AllocationClass::Spot,
                units,
                allocated_seconds: row.allocated_seconds,
                sla_credit_seconds: row.sla_credit_seconds,
                active_seconds: row.active_seconds,
                memory_gib_seconds: row.memory_gib_seconds,
                energy_kwh: row.energy_kwh,
                lifetime_seconds_if_ended: ended_here.map(|e| (e - a.started_at).num_seconds()),
                held: (held_from < held_to).then_some((held_from, held_to)),
            })
        })
        .collect())
}

/// What rating `invoice`'s period over `[period_start, until)` needs. With `extras`, also
/// the credit grants and the late usage of recently closed periods (the finalized view);
/// without, only the usage (to re-rate a closed period or to price part of one).
pub(super) async fn period_input<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    extras: bool,
) -> Result<PeriodInput, InvoicingError> {
    let tenant = tenant::Entity::find_by_id(invoice.tenant_id)
        .one(conn)
        .await?
        .ok_or(InvoicingError::NotFound("tenant"))?;
    let currency: Currency = tenant
        .currency
        .parse()
        .map_err(|_| InvoicingError::NotFound("currency"))?;
    let anchor = u32::try_from(tenant.billing_anchor_day).unwrap_or(1);
    let mut input = PeriodInput {
        currency: currency.code().to_owned(),
        minor_digits: currency.minor_unit_digits(),
        skus: sku_infos(conn).await?,
        segments: Vec::new(),
        month_fraction: month_fraction(invoice.period_start, invoice.period_end, anchor),
        late: Vec::new(),
        grants: Vec::new(),
        tax: None,
    };
    for (from, to, plan) in segments(conn, tenant.id, invoice.period_start, until).await? {
        input.segments.push(Segment {
            from,
            to,
            usage: [
                allocation_usage(conn, tenant.id, from, to, now).await?,
                super::volumes::usage(conn, tenant.id, from, to, now).await?,
            ]
            .concat(),
            metered: crate::meters::quantity::per_sku(conn, tenant.id, from, to).await?,
            plan,
        });
    }
    if !extras {
        return Ok(input);
    }
    input.late = late_usage(conn, tenant.id, now).await?;
    input.grants = grant_balances(conn, invoice, until, now, &input.currency).await?;
    Ok(input)
}

/// Every SKU as invoices name and price it.
async fn sku_infos<C: ConnectionTrait>(conn: &C) -> Result<BTreeMap<Uuid, SkuInfo>, DbErr> {
    Ok(sku::Entity::find()
        .all(conn)
        .await?
        .into_iter()
        .map(|s| {
            (
                s.id.into(),
                SkuInfo {
                    unit: s.unit(),
                    list_price_per_hour: s.list_price_per_hour.get(),
                    name: s.name,
                    region: s.region,
                    category: s.service_category,
                    storage_class: s.storage_class,
                },
            )
        })
        .collect())
}

/// The tenant's grants in `currency` with something left that can pay for `invoice`'s
/// period up to `until`, each capped at the charges accrued within its coverage when that
/// is narrower than the period.
async fn grant_balances<C: ConnectionTrait>(
    conn: &C,
    invoice: &invoice::Model,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
    currency: &str,
) -> Result<Vec<GrantBalance>, InvoicingError> {
    let mut balances = Vec::new();
    for (grant, remaining) in store::grants_with_remaining(conn, invoice.tenant_id).await? {
        // Grants older than recorded coverage pay the charges from their effective time.
        let covers_from = grant.covers_from.unwrap_or(grant.effective_at);
        if remaining <= Decimal::ZERO
            || grant.effective_at >= until
            || covers_from >= until
            || grant.expires_at.is_some_and(|e| e <= invoice.period_start)
            || grant.currency != currency
        {
            continue;
        }
        let window_start = covers_from.max(invoice.period_start);
        let window_end = grant.expires_at.map_or(until, |e| e.min(until));
        let accrued_cap = if window_start > invoice.period_start || window_end < until {
            let mut part = invoice.clone();
            part.period_start = window_start;
            let partial = Box::pin(period_input(conn, &part, window_end, now, false)).await?;
            Some(rate_period(&partial)?.subtotal)
        } else {
            None
        };
        balances.push(GrantBalance {
            grant: grant.id.into(),
            description: grant_description(&grant),
            available: remaining,
            expires_at: grant.expires_at,
            accrued_cap,
        });
    }
    Ok(balances)
}

fn grant_description(grant: &neocloud_schema::entity::credit_grant::Model) -> String {
    let kind = match grant.kind {
        neocloud_schema::vocabulary::CreditKind::Prepaid => "Prepaid credit",
        neocloud_schema::vocabulary::CreditKind::Promotional => "Promotional credit",
    };
    let mut text = format!("{kind} granted {}", grant.effective_at.format("%Y-%m-%d"));
    if let Some(expires) = grant.expires_at {
        text.push_str(&format!(", expires {}", expires.format("%Y-%m-%d")));
    }
    if !grant.reason.is_empty() {
        text.push_str(&format!(" ({})", grant.reason));
    }
    text
}

/// Recently closed periods whose usage changed since they were billed.
async fn late_usage<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<Vec<LateUsage>, InvoicingError> {
    let mut out = Vec::new();
    let since = now - TimeDelta::days(LATE_WINDOW_DAYS);
    for closed in store::finalized_since(conn, tenant, since).await? {
        let mut billed = store::billed_lines(conn, tenant, closed.id).await?;
        // Held to the period's end, as when it was closed (it may end a second after that).
        let held = now.max(closed.period_end);
        let input = Box::pin(period_input(conn, &closed, closed.period_end, held, false)).await?;
        let mut rerated = rate_period(&input)?.lines;
        if !billed_in_sku_units(&closed) {
            // Rated when ALLOCATED counted GPU shares: the held time of anything but whole
            // GPUs would differ by the change of rule, not by late usage. Only the rest is
            // compared; the operator corrects the rest (docs/invoicing.md, "Units").
            billed.retain(|l| same_under_both_rules(l, &input.skus));
            rerated.retain(|l| same_under_both_rules(l, &input.skus));
        }
        out.push(LateUsage {
            invoice: closed.id,
            number: closed.number.clone().unwrap_or_default(),
            billed,
            rerated,
            tax: frozen_treatment(&closed),
        });
    }
    Ok(out)
}

/// The tax a finalized invoice was rated with (`None` if untaxed).
fn frozen_treatment(closed: &invoice::Model) -> Option<crate::tax::Treatment> {
    let tax = closed.rating.as_ref()?.get("input")?.get("tax")?;
    serde_json::from_value(tax.clone()).ok()
}

/// Whether a line bills the same under GPU shares and under SKU units: any sampled metric,
/// and held time of whole GPUs.
fn same_under_both_rules(line: &Line, skus: &BTreeMap<Uuid, SkuInfo>) -> bool {
    !matches!(line.metric, Some(Metric::Allocated | Metric::SlaCredit))
        || line
            .sku
            .and_then(|s| skus.get(&s))
            .is_some_and(|i| i.unit == DEFAULT_UNIT)
}

/// Whether `closed` was rated with ALLOCATED in unit-hours of the SKU (see
/// `ALLOCATED_UNIT_RULE`).
fn billed_in_sku_units(closed: &invoice::Model) -> bool {
    closed
        .rating
        .as_ref()
        .and_then(|r| r.get("allocated_unit"))
        .and_then(serde_json::Value::as_str)
        == Some(ALLOCATED_UNIT_RULE)
}

#[cfg(test)]
mod tests {
    use neocloud_schema::vocabulary::LineKind;
    use serde_json::json;

    use super::*;

    fn line(sku: Uuid, metric: Metric) -> Line {
        Line {
            kind: LineKind::Usage,
            description: String::new(),
            sku: Some(sku),
            sku_name: None,
            metric: Some(metric),
            tier: None,
            quantity: Decimal::ONE,
            unit: String::new(),
            unit_price: Decimal::ONE,
            amount_exact: Decimal::ONE,
            amount: Decimal::ONE,
            adjusts_invoice: None,
            trace: serde_json::Value::Null,
            tax: None,
        }
    }

    #[test]
    fn only_whole_gpu_time_and_sampled_metrics_compare_across_the_change_of_rule() {
        let (gpu, slice) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let sku = |unit: &str| SkuInfo {
            name: unit.to_owned(),
            list_price_per_hour: Decimal::ONE,
            unit: unit.to_owned(),
            region: String::new(),
            category: None,
            storage_class: None,
        };
        let skus = BTreeMap::from([(gpu, sku("GPU")), (slice, sku("MIG slice 3g.40gb"))]);
        let kept = |sku, metric| same_under_both_rules(&line(sku, metric), &skus);
        assert!(kept(gpu, Metric::Allocated));
        assert!(kept(gpu, Metric::SlaCredit));
        assert!(kept(slice, Metric::Active));
        assert!(kept(slice, Metric::Energy));
        assert!(!kept(slice, Metric::Allocated));
        assert!(!kept(slice, Metric::SlaCredit));
    }

    #[test]
    fn an_invoice_is_known_as_billed_in_sku_units_by_its_rating() {
        let invoice = |rating: Option<serde_json::Value>| invoice::Model {
            id: neocloud_schema::ids::InvoiceId(Uuid::nil()),
            tenant_id: TenantId(Uuid::nil()),
            status: neocloud_schema::vocabulary::InvoiceStatus::Open,
            number: None,
            currency: "USD".into(),
            period_start: DateTime::UNIX_EPOCH,
            period_end: DateTime::UNIX_EPOCH,
            subtotal: Exact::default(),
            tax: Exact::default(),
            credits: Exact::default(),
            total: Exact::default(),
            plan: String::new(),
            rating,
            finalized_at: None,
            due_at: None,
            parties: None,
            taxes: None,
            paid_at: None,
            voided_at: None,
            void_reason: None,
            created_at: DateTime::UNIX_EPOCH,
            payment_state: neocloud_schema::vocabulary::PaymentState::Pending,
            payment_failures: 0,
            payment_url: None,
        };
        assert!(billed_in_sku_units(&invoice(Some(
            json!({"allocated_unit": ALLOCATED_UNIT_RULE, "input": {}})
        ))));
        assert!(!billed_in_sku_units(&invoice(Some(json!({"input": {}})))));
        assert!(!billed_in_sku_units(&invoice(None)));
    }
}
