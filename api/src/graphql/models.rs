//! Model offerings: `modelOfferings` (every user), `modelUsage` (a tenant's own; operators
//! name one), `createModelOffering` (operator).

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::sku;
use rust_decimal::Decimal;

use super::scalars::{tenant_arg, to_id};
use crate::models::usage::{self, Dimension};
use crate::models::{self, NewOffering, OfferingView};

pub struct ModelOffering(OfferingView);

fn per_million(sku: &sku::Model) -> String {
    (sku.list_price_per_hour.get() * Decimal::from(1_000_000))
        .normalize()
        .to_string()
}

#[Object]
impl ModelOffering {
    async fn id(&self) -> ID {
        to_id(self.0.offering.id)
    }

    /// The model as gateways name it in `data.model`.
    async fn name(&self) -> &str {
        &self.0.offering.name
    }

    async fn region(&self) -> &str {
        &self.0.offering.region
    }

    async fn currency(&self) -> &str {
        &self.0.input.currency
    }

    /// List price per million input tokens (not read from cache).
    async fn input_price_per_million(&self) -> String {
        per_million(&self.0.input)
    }

    async fn output_price_per_million(&self) -> String {
        per_million(&self.0.output)
    }

    /// List price per million input tokens read from the prompt cache; none: cached
    /// tokens are not billed apart (the gateway reports them as input).
    async fn cached_input_price_per_million(&self) -> Option<String> {
        self.0.cached.as_ref().map(per_million)
    }

    /// List price of each request served (status `ok` or `incomplete`; 0: counted, not
    /// charged).
    async fn request_fee(&self) -> Option<String> {
        self.0
            .request
            .as_ref()
            .map(|s| s.list_price_per_hour.get().normalize().to_string())
    }

    /// The most tokens of each kind one request may report; a report above it is refused.
    async fn max_tokens_per_request(&self) -> i64 {
        self.0.offering.max_tokens_per_request
    }

    /// The METERED SKUs that bill it (plans price them with METERED rates).
    async fn sku_ids(&self) -> Vec<ID> {
        self.0.parts().map(|(_, s)| to_id(s.id)).collect()
    }

    async fn description(&self) -> &str {
        &self.0.offering.description
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.0.offering.created_at
    }
}

#[derive(InputObject)]
pub struct CreateModelOfferingInput {
    /// The model as the gateway names it (`llama-3.1-70b-instruct`).
    pub name: String,
    pub region: String,
    pub currency: String,
    /// Exact decimals, at most 3 places: per million tokens.
    pub input_price_per_million: String,
    pub output_price_per_million: String,
    /// Prompt tokens read from cache, when billed apart.
    pub cached_input_price_per_million: Option<String>,
    /// A fee per request served, at most 9 decimal places (default 0: requests are
    /// counted, not charged).
    pub request_fee: Option<String>,
    /// The most tokens of each kind one request may report (default 2000000).
    pub max_tokens_per_request: Option<i64>,
    pub description: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateModelOfferingPayload {
    pub model_offering: ModelOffering,
}

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(name = "ModelUsageDimension")]
pub enum GqlDimension {
    Model,
    ApiKey,
    Label,
}

/// Usage and cost under the dimensions asked for (the others are empty).
#[derive(SimpleObject)]
pub struct ModelUsage {
    pub model: String,
    pub region: String,
    /// The gateway's name for the key the requests came with.
    pub api_key: String,
    pub label: String,
    pub requests: String,
    pub input_tokens: String,
    pub output_tokens: String,
    pub cached_tokens: String,
    /// Tokens and requests × the caller's price per unit now (exact); the invoice lines
    /// are the charge where a rate has tiers.
    pub cost: String,
    pub currency: String,
}

fn text(d: Decimal) -> String {
    d.normalize().to_string()
}

#[derive(Default)]
pub struct ModelQuery;

#[Object]
impl ModelQuery {
    /// The models sold per token (published to every user).
    async fn model_offerings(
        &self,
        ctx: &Context<'_>,
        region: Option<String>,
    ) -> Result<Vec<ModelOffering>> {
        let rows = models::list(super::db(ctx)?, super::principal(ctx)?, region.as_deref()).await?;
        Ok(rows.into_iter().map(ModelOffering).collect())
    }

    /// The tenant's model usage and cost in `[from, to)` (by request time), per model
    /// (default), API key and label.
    async fn model_usage(
        &self,
        ctx: &Context<'_>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        #[graphql(default_with = "vec![GqlDimension::Model]")] group_by: Vec<GqlDimension>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<ModelUsage>> {
        let by: Vec<Dimension> = group_by
            .into_iter()
            .map(|d| match d {
                GqlDimension::Model => Dimension::Model,
                GqlDimension::ApiKey => Dimension::ApiKey,
                GqlDimension::Label => Dimension::Label,
            })
            .collect();
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let rows = usage::rows(db, actor, tenant_arg(tenant_id)?, (from, to), &by, now).await?;
        Ok(rows
            .into_iter()
            .map(|r| ModelUsage {
                requests: text(r.requests),
                input_tokens: text(r.input_tokens),
                output_tokens: text(r.output_tokens),
                cached_tokens: text(r.cached_tokens),
                cost: text(r.cost),
                model: r.model,
                region: r.region,
                api_key: r.api_key,
                label: r.label,
                currency: r.currency,
            })
            .collect())
    }
}

#[derive(Default)]
pub struct ModelMutation;

#[Object]
impl ModelMutation {
    /// Sells a model per token in a region (operator): its SKUs and meters over
    /// `model.request` events, in one step.
    async fn create_model_offering(
        &self,
        ctx: &Context<'_>,
        input: CreateModelOfferingInput,
    ) -> Result<CreateModelOfferingPayload> {
        let new = NewOffering {
            name: input.name,
            region: input.region,
            currency: input.currency,
            input_per_million: input.input_price_per_million,
            output_per_million: input.output_price_per_million,
            cached_per_million: input.cached_input_price_per_million,
            request_fee: input.request_fee,
            max_tokens_per_request: input.max_tokens_per_request,
            description: input.description,
        };
        let (db, actor, now) = (super::db(ctx)?, super::principal(ctx)?, super::now(ctx)?);
        let view = models::create(db, actor, &new, now).await?;
        Ok(CreateModelOfferingPayload {
            model_offering: ModelOffering(view),
        })
    }
}
