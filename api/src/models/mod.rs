//! Model offerings (Model-as-a-Service): the models an operator sells per token in a
//! region. `createModelOffering` makes, in one transaction, the offering and what bills
//! it: a METERED SKU (AI and Machine Learning, list price per token or per request) and a
//! meter over `model.request` events for each of input tokens, output tokens and, when
//! priced, cached input tokens and requests — each meter filtered to the offering's model
//! and region and grouped by the reporting gateway's `api_key` and `label`, so tenants see
//! usage and cost per model, per API key and per label (`modelUsage`). Budgets and hard
//! caps act on the tokens as on any metered spend. The event is what the reference
//! gateway (`examples/gateway`) sends; docs/models.md has its contract.

pub(crate) mod store;
pub mod usage;

use chrono::{DateTime, Utc};
use neocloud_metering::meters::{self, Condition, NewMeter};
use neocloud_schema::entity::{model_offering, sku};
use neocloud_schema::ids::ModelOfferingId;
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::{MeterAggregation, ServiceCategory, SkuForm};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::catalog::{self, Sells, ValidSku};
use crate::error::{ApiError, ApiResult};

/// The event type model gateways report, one per request.
pub const EVENT_TYPE: &str = "model.request";
/// Most tokens one request may report when the offering says nothing (of each kind).
pub const DEFAULT_MAX_TOKENS: i64 = 2_000_000;
/// The largest bound an offering may set on one request's tokens.
pub const MAX_MAX_TOKENS: i64 = 100_000_000;
/// The request statuses a per-request fee is charged for: a request the model served, in
/// full or until the client left; not one that failed.
pub const BILLED_STATUSES: [&str; 2] = ["ok", "incomplete"];

/// What an operator offers.
#[derive(Debug, Clone)]
pub struct NewOffering {
    pub name: String,
    pub region: String,
    pub currency: String,
    pub input_per_million: String,
    pub output_per_million: String,
    pub cached_per_million: Option<String>,
    pub request_fee: Option<String>,
    pub max_tokens_per_request: Option<i64>,
    pub description: Option<String>,
}

/// An offering with the SKUs that bill it.
#[derive(Debug, Clone)]
pub struct OfferingView {
    pub offering: model_offering::Model,
    pub input: sku::Model,
    pub output: sku::Model,
    pub cached: Option<sku::Model>,
    pub request: Option<sku::Model>,
}

impl OfferingView {
    /// Each billed part with its SKU.
    pub fn parts(&self) -> impl Iterator<Item = (Part, &sku::Model)> {
        [
            (Part::Input, Some(&self.input)),
            (Part::Output, Some(&self.output)),
            (Part::Cached, self.cached.as_ref()),
            (Part::Request, self.request.as_ref()),
        ]
        .into_iter()
        .filter_map(|(part, sku)| sku.map(|s| (part, s)))
    }
}

/// What one of an offering's SKUs bills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Input,
    Output,
    Cached,
    Request,
}

impl Part {
    fn suffix(self) -> &'static str {
        match self {
            Part::Input => "input",
            Part::Output => "output",
            Part::Cached => "cached",
            Part::Request => "requests",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Part::Input => "input token",
            Part::Output => "output token",
            Part::Cached => "cached input token",
            Part::Request => "request",
        }
    }

    /// The event's field it sums; none for requests, which are counted.
    pub fn value_path(self) -> Option<&'static str> {
        match self {
            Part::Input => Some("input_tokens"),
            Part::Output => Some("output_tokens"),
            Part::Cached => Some("cached_tokens"),
            Part::Request => None,
        }
    }
}

/// A model as gateways name it: 1 to 128 characters of letters, digits and `-_.:/@`.
fn check_model_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    let good = |c: char| c.is_ascii_alphanumeric() || "-_.:/@".contains(c);
    if name.is_empty() || name.len() > 128 || !name.chars().all(good) {
        return Err(ApiError::invalid(
            "name",
            "1 to 128 characters of letters, digits and `-_.:/@`, as the gateway names the model",
        ));
    }
    Ok(name.to_owned())
}

/// A price per million tokens (at most 3 decimals, so a token's price has at most 9) as
/// the price of one token.
fn per_token(field: &str, per_million: &str) -> ApiResult<Decimal> {
    let price = parse_plain_decimal(per_million.trim())
        .ok()
        .filter(|p| !p.is_sign_negative() && p.scale() <= 3)
        .ok_or_else(|| {
            ApiError::invalid(field, "a non-negative price with at most 3 decimal places")
        })?;
    Ok((price / Decimal::from(1_000_000)).normalize())
}

fn request_fee(fee: &str) -> ApiResult<Decimal> {
    parse_plain_decimal(fee.trim())
        .ok()
        .filter(|p| !p.is_sign_negative() && p.scale() <= 9)
        .ok_or_else(|| {
            ApiError::invalid(
                "requestFee",
                "a non-negative price with at most 9 decimal places",
            )
        })
}

/// The SKU and meter name of one part: the model's name made a slug, the part, the region.
fn part_name(model: &str, part: Part, region: &str) -> String {
    let slug: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let tail = format!("-{}-{region}", part.suffix());
    let room = 64usize.saturating_sub(tail.len());
    format!("{}{tail}", slug.chars().take(room).collect::<String>())
}

/// The checked offering: name, region, the price of each part, the token bound.
struct Checked {
    name: String,
    region: String,
    currency: neocloud_schema::money::Currency,
    prices: Vec<(Part, Decimal)>,
    max_tokens: i64,
    description: String,
}

fn check(new: &NewOffering) -> ApiResult<Checked> {
    let name = check_model_name(&new.name)?;
    let region = neocloud_schema::slug::Slug::parse(&new.region)
        .map_err(|rule| ApiError::invalid("region", rule))?
        .into_string();
    let mut prices = vec![
        (
            Part::Input,
            per_token("inputPricePerMillion", &new.input_per_million)?,
        ),
        (
            Part::Output,
            per_token("outputPricePerMillion", &new.output_per_million)?,
        ),
    ];
    if let Some(cached) = &new.cached_per_million {
        prices.push((
            Part::Cached,
            per_token("cachedInputPricePerMillion", cached)?,
        ));
    }
    // Requests are always counted (served ones: `ok`, `incomplete`), at no fee by default.
    let fee = match &new.request_fee {
        Some(fee) => request_fee(fee)?,
        None => Decimal::ZERO,
    };
    prices.push((Part::Request, fee));
    let max_tokens = new.max_tokens_per_request.unwrap_or(DEFAULT_MAX_TOKENS);
    if !(1..=MAX_MAX_TOKENS).contains(&max_tokens) {
        return Err(ApiError::invalid(
            "maxTokensPerRequest",
            format!("1 to {MAX_MAX_TOKENS}"),
        ));
    }
    let description = new.description.as_deref().unwrap_or("").trim().to_owned();
    if description.len() > 500 || description.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "description",
            "at most 500 printable bytes",
        ));
    }
    Ok(Checked {
        currency: crate::tenancy::parse_currency(&new.currency)?,
        name,
        region,
        prices,
        max_tokens,
        description,
    })
}

/// `createModelOffering` (operator).
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    new: &NewOffering,
    now: DateTime<Utc>,
) -> ApiResult<OfferingView> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let view = create_in(&txn, Some(actor), new, now).await?;
    txn.commit().await?;
    Ok(view)
}

/// `create` in the caller's transaction, by `actor` (none: the system, e.g. the demo).
pub(crate) async fn create_in<C: ConnectionTrait>(
    txn: &C,
    actor: Option<&Principal>,
    new: &NewOffering,
    now: DateTime<Utc>,
) -> ApiResult<OfferingView> {
    let checked = check(new)?;
    if store::find(txn, &checked.name, &checked.region)
        .await?
        .is_some()
    {
        return Err(ApiError::AlreadyExists {
            what: format!("model offering `{}` in {}", checked.name, checked.region),
        });
    }
    let mut skus = Vec::new();
    for (part, price) in &checked.prices {
        let sku = bill_part(txn, actor, &checked, *part, *price, now).await?;
        skus.push((*part, sku));
    }
    let view = offering_of(&checked, skus, now)?;
    store::insert(txn, view.offering.clone()).await?;
    let after = json!({"name": view.offering.name, "region": view.offering.region,
        "skus": view.parts().map(|(_, s)| s.name.clone()).collect::<Vec<_>>()});
    audit::record_as(
        txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "model_offering.create",
            object_type: "model_offering",
            object_id: view.offering.id.to_string(),
            before: None,
            after: Some(after),
        },
    )
    .await?;
    Ok(view)
}

/// The offering row and view from its checked terms and the SKUs made for its parts.
fn offering_of(
    checked: &Checked,
    skus: Vec<(Part, sku::Model)>,
    now: DateTime<Utc>,
) -> ApiResult<OfferingView> {
    let sku_of = |p: Part| skus.iter().find(|(q, _)| *q == p).map(|(_, s)| s.clone());
    let (Some(input), Some(output)) = (sku_of(Part::Input), sku_of(Part::Output)) else {
        return Err(ApiError::invariant(
            "an offering bills input and output tokens",
        ));
    };
    let (cached, request) = (sku_of(Part::Cached), sku_of(Part::Request));
    let offering = model_offering::Model {
        id: ModelOfferingId::new(),
        name: checked.name.clone(),
        region: checked.region.clone(),
        input_sku_id: input.id,
        output_sku_id: output.id,
        cached_sku_id: cached.as_ref().map(|s| s.id),
        request_sku_id: request.as_ref().map(|s| s.id),
        max_tokens_per_request: checked.max_tokens,
        description: checked.description.clone(),
        created_at: now,
    };
    Ok(OfferingView {
        offering,
        input,
        output,
        cached,
        request,
    })
}

/// The SKU and meter that bill one part of the offering.
async fn bill_part<C: ConnectionTrait>(
    conn: &C,
    actor: Option<&Principal>,
    checked: &Checked,
    part: Part,
    price: Decimal,
    now: DateTime<Utc>,
) -> ApiResult<sku::Model> {
    let name = part_name(&checked.name, part, &checked.region);
    let sku = catalog::create_in(
        conn,
        actor,
        &ValidSku {
            name: name.clone(),
            what: Sells::Metered {
                unit: part.unit().to_owned(),
                category: ServiceCategory::AiAndMachineLearning,
            },
            form: SkuForm::Metered,
            region: checked.region.clone(),
            list_price_per_hour: price,
            currency: checked.currency,
        },
    )
    .await?;
    let mut filter = vec![
        condition("model", &[&checked.name]),
        condition("region", &[&checked.region]),
    ];
    if part == Part::Request {
        filter.push(condition("status", &BILLED_STATUSES));
    }
    let meter = NewMeter {
        key: name,
        event_type: EVENT_TYPE.to_owned(),
        value_path: part.value_path().map(str::to_owned),
        aggregation: match part {
            Part::Request => MeterAggregation::Count,
            _ => MeterAggregation::Sum,
        },
        group_by: vec!["api_key".to_owned(), "label".to_owned()],
        filter,
        max_value: Some(checked.max_tokens.to_string()),
        sku: sku.id,
        description: Some(format!(
            "{} of {} in {}",
            part.unit(),
            checked.name,
            checked.region
        )),
    };
    meters::create(conn, &meter, now).await?;
    Ok(sku)
}

fn condition(path: &str, values: &[&str]) -> Condition {
    Condition {
        path: path.to_owned(),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
    }
}

/// `modelOfferings`: every offering (published to every user), optionally of one region.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    region: Option<&str>,
) -> ApiResult<Vec<OfferingView>> {
    actor.require_user()?;
    Ok(store::all(db, region).await?)
}
