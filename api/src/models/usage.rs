//! `modelUsage`: a tenant's model usage and cost over a span, per model, API key and
//! label (any of them), from what the offerings' meters counted. Cost is each part's
//! quantity × the tenant's price per unit now (its plan's rate, the first tier of a tiered
//! one, else the list price), so a row's cost is what it adds to the invoice under a
//! per-unit rate; under tiers the invoice lines are the charge.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_schema::ids::TenantId;
use rust_decimal::Decimal;
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use super::{OfferingView, Part, store};
use crate::auth::Principal;
use crate::error::ApiResult;

/// What a row is broken down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    Model,
    ApiKey,
    Label,
}

/// One row: the dimensions asked for (the others empty) and what was used under them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub model: String,
    pub region: String,
    pub api_key: String,
    pub label: String,
    pub requests: Decimal,
    pub input_tokens: Decimal,
    pub output_tokens: Decimal,
    pub cached_tokens: Decimal,
    pub cost: Decimal,
    pub currency: String,
}

impl Row {
    fn add(&mut self, part: Part, quantity: Decimal, price: Decimal) {
        *match part {
            Part::Input => &mut self.input_tokens,
            Part::Output => &mut self.output_tokens,
            Part::Cached => &mut self.cached_tokens,
            Part::Request => &mut self.requests,
        } += quantity;
        self.cost += quantity * price;
    }
}

/// The usage rows of `tenant` in `[from, to)` broken down by `by`, ordered by their keys.
pub async fn rows(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    span: (DateTime<Utc>, DateTime<Utc>),
    by: &[Dimension],
    now: DateTime<Utc>,
) -> ApiResult<Vec<Row>> {
    let quantities = crate::meters::usage(db, actor, tenant, span).await?;
    let tenant = actor.acting_tenant(tenant)?;
    let offerings = store::all(db, None).await?;
    let parts: HashMap<Uuid, (&OfferingView, Part)> = offerings
        .iter()
        .flat_map(|o| o.parts().map(move |(part, sku)| (sku.id.into(), (o, part))))
        .collect();
    let skus: Vec<_> = offerings
        .iter()
        .flat_map(|o| o.parts().map(|(_, s)| s.clone()))
        .collect();
    let prices =
        neocloud_metering::invoicing::prices::unit_prices(db, Some(tenant), now, &skus).await?;
    let wants = |d: Dimension| by.contains(&d);
    let mut rows: BTreeMap<[String; 5], Row> = BTreeMap::new();
    for q in quantities {
        let sku = Uuid::from(q.meter.sku_id);
        let Some((offering, part)) = parts.get(&sku) else {
            continue;
        };
        let group = |i: usize| q.group.get(i).cloned().unwrap_or_default();
        let o = &offering.offering;
        let key = [
            if wants(Dimension::Model) {
                o.name.clone()
            } else {
                String::new()
            },
            if wants(Dimension::Model) {
                o.region.clone()
            } else {
                String::new()
            },
            if wants(Dimension::ApiKey) {
                group(0)
            } else {
                String::new()
            },
            if wants(Dimension::Label) {
                group(1)
            } else {
                String::new()
            },
            // Amounts in different currencies are never added up.
            offering.input.currency.clone(),
        ];
        let row = rows.entry(key.clone()).or_insert_with(|| {
            let [model, region, api_key, label, currency] = key;
            Row {
                model,
                region,
                api_key,
                label,
                currency,
                ..Row::default()
            }
        });
        let price = prices.get(&sku).map_or(Decimal::ZERO, |p| p.on_demand);
        row.add(*part, q.quantity, price);
    }
    Ok(rows.into_values().collect())
}
