//! Events and webhooks: the `events` feed, `eventTypes`, `webhookEndpoints` with their
//! delivery log, and the mutations that manage endpoints and redeliver. Tenants act on
//! their own; operators on their own endpoints (no `tenantId`) or a tenant's.

use async_graphql::{Context, ID, InputObject, Json, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_metering::events::{self, catalog};
use neocloud_schema::entity::{event, webhook_attempt, webhook_delivery, webhook_endpoint};
use neocloud_schema::ids::{EventId, WebhookEndpointId};

use super::scalars::{parse_id, tenant_arg, to_id};
use crate::error::ApiError;
use crate::webhooks::{self, EndpointInput, EndpointView};

/// Most log rows one endpoint read returns.
const MAX_LOG: i32 = 100;

pub struct Event(event::Model);

#[Object]
impl Event {
    /// Stable for ever; the `webhook-id` of every delivery of it.
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }

    /// A catalog type, e.g. `allocation.placed` (see `eventTypes`).
    #[graphql(name = "type")]
    async fn kind(&self) -> &str {
        &self.0.event_type
    }

    /// When it happened.
    async fn timestamp(&self) -> DateTime<Utc> {
        self.0.occurred_at
    }

    async fn tenant_id(&self) -> Option<ID> {
        self.0.tenant_id.map(to_id)
    }

    /// The feed position: pass the last one seen as `after`.
    async fn cursor(&self) -> String {
        self.0.seq.to_string()
    }

    /// The whole event as webhooks deliver it: `{id, type, version, timestamp,
    /// tenant_id, data}`.
    async fn envelope(&self) -> Json<serde_json::Value> {
        Json(events::envelope(&self.0))
    }

    /// The type's `data`, as its JSON Schema in `GET /v1/events/schema` describes it.
    async fn data(&self) -> Json<serde_json::Value> {
        Json(self.0.payload.clone())
    }
}

#[derive(SimpleObject)]
pub struct EventPage {
    pub events: Vec<Event>,
    /// Ask after this next time (the last event's cursor, or the one given).
    pub cursor: String,
    pub has_more: bool,
}

#[derive(SimpleObject)]
pub struct EventType {
    pub name: String,
    /// `tenant`, `operator` or `endpoint owner`.
    pub audience: String,
    pub version: i32,
    pub summary: String,
}

pub struct WebhookEndpoint(webhook_endpoint::Model);

#[Object]
impl WebhookEndpoint {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }

    /// None: the operator's own endpoint.
    async fn tenant_id(&self) -> Option<ID> {
        self.0.tenant_id.map(to_id)
    }

    async fn url(&self) -> &str {
        &self.0.url
    }

    async fn description(&self) -> &str {
        &self.0.description
    }

    /// The types it takes; empty: every type its owner may see.
    async fn event_types(&self) -> Vec<String> {
        neocloud_metering::events::webhooks::event_types(&self.0)
    }

    async fn enabled(&self) -> bool {
        self.0.enabled
    }

    async fn disabled_reason(&self) -> Option<&str> {
        self.0.disabled_reason.as_deref()
    }

    /// Since when every attempt has failed (an endpoint failing 5 days is disabled).
    async fn failing_since(&self) -> Option<DateTime<Utc>> {
        self.0.failing_since
    }

    /// Until when the secret before the last rotation still signs beside the new one.
    async fn previous_secret_valid_until(&self) -> Option<DateTime<Utc>> {
        self.0.previous_secret_until
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }

    async fn updated_at(&self) -> DateTime<Utc> {
        self.0.updated_at
    }

    /// Its deliveries, newest first.
    async fn deliveries(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 20)] first: i32,
    ) -> Result<Vec<WebhookDelivery>> {
        let db = super::db(ctx)?;
        let (deliveries, _) = webhooks::log(db, &self.0, log_limit(first)?).await?;
        let mut types = neocloud_metering::events::webhooks::types_of_delivered(db, &deliveries)
            .await
            .map_err(ApiError::from)?;
        Ok(deliveries
            .into_iter()
            .map(|d| {
                let event_type = types.remove(&d.event_id).unwrap_or_default();
                WebhookDelivery::new(d, event_type)
            })
            .collect())
    }

    /// Every attempt, newest first: status, latency, error, the answer's first bytes.
    async fn attempts(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = 20)] first: i32,
    ) -> Result<Vec<WebhookAttempt>> {
        let (_, attempts) = webhooks::log(super::db(ctx)?, &self.0, log_limit(first)?).await?;
        Ok(attempts.into_iter().map(WebhookAttempt::from).collect())
    }
}

fn log_limit(first: i32) -> Result<u64, ApiError> {
    match u64::try_from(first) {
        Ok(n) if (1..=MAX_LOG).contains(&first) => Ok(n),
        _ => Err(ApiError::invalid("first", format!("from 1 to {MAX_LOG}"))),
    }
}

#[derive(SimpleObject)]
pub struct WebhookDelivery {
    pub event_id: ID,
    /// The event's type (`invoice.finalized`, …); empty once the event has aged out.
    pub event_type: String,
    /// `PENDING`, `DELIVERED` or `FAILED` (retries ran out; redeliver by hand).
    pub status: String,
    pub attempts: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_status_code: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl WebhookDelivery {
    fn new(d: webhook_delivery::Model, event_type: String) -> Self {
        let pending = d.status == neocloud_metering::events::webhooks::PENDING;
        WebhookDelivery {
            event_id: to_id(d.event_id),
            event_type,
            status: d.status.to_uppercase(),
            attempts: d.attempts,
            next_attempt_at: pending.then_some(d.next_attempt_at),
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            delivered_at: d.delivered_at,
            created_at: d.created_at,
        }
    }
}

#[derive(SimpleObject)]
pub struct WebhookAttempt {
    pub event_id: ID,
    /// 1 for a delivery's first attempt.
    pub attempt: i32,
    pub at: DateTime<Utc>,
    /// None when no answer came (refused address, connection error, time-out).
    pub status_code: Option<i32>,
    pub latency_ms: i64,
    pub error: Option<String>,
    /// The first bytes of the answer.
    pub response_head: Option<String>,
}

impl From<webhook_attempt::Model> for WebhookAttempt {
    fn from(a: webhook_attempt::Model) -> Self {
        WebhookAttempt {
            event_id: to_id(a.event_id),
            attempt: a.attempt,
            at: a.at,
            status_code: a.status_code,
            latency_ms: a.latency_ms,
            error: a.error,
            response_head: a.response_head,
        }
    }
}

#[derive(SimpleObject)]
pub struct WebhookEndpointPayload {
    pub endpoint: WebhookEndpoint,
    /// The signing secret (`whsec_…`): only when the endpoint was created or its secret
    /// rotated.
    pub secret: Option<String>,
}

impl From<EndpointView> for WebhookEndpointPayload {
    fn from(view: EndpointView) -> Self {
        WebhookEndpointPayload {
            endpoint: WebhookEndpoint(view.endpoint),
            secret: view.new_secret,
        }
    }
}

#[derive(InputObject)]
pub struct WebhookEndpointInput {
    /// Operators name the tenant, or none for their own endpoint.
    pub tenant_id: Option<ID>,
    /// An http(s) URL of at most 2048 bytes without user name or password, reaching a
    /// public address (checked again after resolution at every send; redirects are not
    /// followed).
    pub url: String,
    #[graphql(default)]
    pub description: String,
    /// Catalog types to send; empty: all the owner may see.
    #[graphql(default)]
    pub event_types: Vec<String>,
    #[graphql(default = true)]
    pub enabled: bool,
}

#[derive(InputObject)]
pub struct WebhookEndpointUpdate {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// Enabling clears why it was disabled and its failure streak.
    pub enabled: Option<bool>,
}

fn endpoint_id(id: &ID) -> Result<WebhookEndpointId, ApiError> {
    parse_id("id", id)
}

#[derive(Default)]
pub struct WebhookQuery;

#[Object]
impl WebhookQuery {
    /// The event catalog: every type, who sees it, what it means. Each type's `data`
    /// schema is served at `GET /v1/events/schema`.
    async fn event_types(&self) -> Vec<EventType> {
        catalog::all()
            .iter()
            .map(|s| EventType {
                name: s.name.to_owned(),
                audience: match s.audience {
                    catalog::Audience::Tenant => "tenant",
                    catalog::Audience::Operator => "operator",
                    catalog::Audience::Owner => "endpoint owner",
                }
                .to_owned(),
                version: i32::try_from(s.version).unwrap_or(i32::MAX),
                summary: s.summary.to_owned(),
            })
            .collect()
    }

    /// Events after `after` (a cursor from an earlier page; none: the oldest kept),
    /// oldest first, within the retention (30 days). Tenants read their own; operators
    /// their own (no `tenantId`) or a tenant's.
    async fn events(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
        after: Option<String>,
        #[graphql(default)] types: Vec<String>,
        first: Option<i32>,
    ) -> Result<EventPage> {
        let after = match after.as_deref() {
            None => 0,
            Some(text) => text
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| ApiError::invalid("after", "not a cursor from this API"))?,
        };
        let max = super::page_limit(ctx);
        let first = match first {
            None => 20.min(max),
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| ApiError::invalid("first", format!("from 1 to {max}")))?,
        };
        if types.iter().any(|t| catalog::spec(t).is_none()) {
            return Err(ApiError::invalid("types", "not an event type of the catalog").into());
        }
        let now = super::now(ctx)?;
        let query = events::FeedQuery {
            after,
            types: &types,
            first,
            not_before: now - super::retention(ctx),
        };
        let page = webhooks::feed(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            query,
        )
        .await?;
        Ok(EventPage {
            events: page.events.into_iter().map(Event).collect(),
            cursor: page.cursor.to_string(),
            has_more: page.has_more,
        })
    }

    /// The webhook endpoints of a tenant (its own for tenant keys), or the operator's.
    async fn webhook_endpoints(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Vec<WebhookEndpoint>> {
        let found = webhooks::list(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
        )
        .await?;
        Ok(found.into_iter().map(WebhookEndpoint).collect())
    }
}

#[derive(Default)]
pub struct WebhookMutation;

#[Object]
impl WebhookMutation {
    /// Creates an endpoint; its signing secret is in the answer, once.
    async fn create_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        input: WebhookEndpointInput,
    ) -> Result<WebhookEndpointPayload> {
        let view = webhooks::create(
            super::db(ctx)?,
            super::principal(ctx)?,
            super::webhook_client(ctx)?,
            tenant_arg(input.tenant_id)?,
            EndpointInput {
                url: Some(input.url),
                description: Some(input.description),
                event_types: Some(input.event_types),
                enabled: Some(input.enabled),
            },
            super::now(ctx)?,
        )
        .await?;
        Ok(view.into())
    }

    /// Changes what is given of an endpoint.
    async fn update_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        input: WebhookEndpointUpdate,
    ) -> Result<WebhookEndpoint> {
        let view = webhooks::update(
            super::db(ctx)?,
            super::principal(ctx)?,
            super::webhook_client(ctx)?,
            tenant_arg(tenant_id)?,
            endpoint_id(&id)?,
            EndpointInput {
                url: input.url,
                description: input.description,
                event_types: input.event_types,
                enabled: input.enabled,
            },
            super::now(ctx)?,
        )
        .await?;
        Ok(WebhookEndpoint(view.endpoint))
    }

    /// Deletes an endpoint with its delivery log; false when there was none.
    async fn delete_webhook_endpoint(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
    ) -> Result<bool> {
        Ok(webhooks::delete(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            endpoint_id(&id)?,
        )
        .await?)
    }

    /// A new signing secret, shown once. The old one keeps signing beside it (both
    /// signatures are sent) for `graceSeconds` (default 86400, at most 604800).
    async fn rotate_webhook_secret(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        grace_seconds: Option<i64>,
    ) -> Result<WebhookEndpointPayload> {
        let view = webhooks::rotate_secret(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            endpoint_id(&id)?,
            grace_seconds,
            super::now(ctx)?,
        )
        .await?;
        Ok(view.into())
    }

    /// Sends a `webhook.test` event to this endpoint alone; its id.
    async fn send_test_webhook(
        &self,
        ctx: &Context<'_>,
        id: ID,
        tenant_id: Option<ID>,
        note: Option<String>,
    ) -> Result<ID> {
        let event = webhooks::send_test(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            endpoint_id(&id)?,
            note,
            super::now(ctx)?,
        )
        .await?;
        Ok(to_id(event))
    }

    /// Sends one event to one endpoint again (same `webhook-id`), retried as new.
    async fn redeliver_webhook(
        &self,
        ctx: &Context<'_>,
        endpoint_id: ID,
        event_id: ID,
        tenant_id: Option<ID>,
    ) -> Result<bool> {
        let event: EventId = parse_id("eventId", &event_id)?;
        webhooks::redeliver(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            parse_id("endpointId", &endpoint_id)?,
            event,
            super::now(ctx)?,
        )
        .await?;
        Ok(true)
    }

    /// Sends again every event since `since` that the endpoint takes (at most 10,000);
    /// how many.
    async fn redeliver_webhooks_since(
        &self,
        ctx: &Context<'_>,
        endpoint_id: ID,
        since: DateTime<Utc>,
        tenant_id: Option<ID>,
    ) -> Result<i32> {
        let owed = webhooks::redeliver_since(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant_arg(tenant_id)?,
            parse_id("endpointId", &endpoint_id)?,
            since,
            super::now(ctx)?,
        )
        .await?;
        Ok(i32::try_from(owed).unwrap_or(i32::MAX))
    }
}
