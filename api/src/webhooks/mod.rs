//! Webhook endpoints: where a tenant — or the operator, for its own events and the
//! provisioning hand-off — wants the event log delivered. Tenant admins manage their
//! tenant's endpoints; operators manage their own (no `tenantId`) and any tenant's.
//!
//! The rules: an http(s) URL that [`crate::outbound`] may reach (checked when set, and
//! again at each send after resolution); at most [`MAX_ENDPOINTS`] per owner; a filter of
//! catalog types the owner may see (empty: all of them); a signing secret
//! (`whsec_<base64 of 24 random bytes>`) shown once, at creation and rotation. After a
//! rotation the previous secret keeps signing beside the new one for the grace asked
//! (default a day, at most a week), so receivers can switch without losing a delivery.
//!
//! A budget's webhook URL is an endpoint too, which `setBudget` manages
//! ([`set_budget_endpoint`]): it takes the budget events, signs with the budget's secret
//! and also sends the older `Neocloud-Signature` header ([`signing::legacy`]). Its URL,
//! filter and secret change only through `setBudget`; it can be disabled and enabled,
//! tested and redelivered like any other.
//!
//! Signing and delivery are in [`delivery`]; the tables are metering's
//! (`neocloud_metering::events::webhooks`).

pub mod delivery;
pub mod signing;

use base64::Engine;
use chrono::{DateTime, TimeDelta, Utc};
use neocloud_metering::events::{self, NewEvent, catalog, store as event_store, webhooks as store};
use neocloud_schema::entity::{webhook_attempt, webhook_delivery, webhook_endpoint};
use neocloud_schema::ids::{EventId, TenantId, WebhookEndpointId};
use neocloud_schema::vocabulary::Role;
use rand::RngCore;
use sea_orm::DatabaseConnection;
use serde_json::json;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::outbound::{self, WebhookClient};

/// Most endpoints one owner may have.
pub const MAX_ENDPOINTS: usize = 20;
/// Most event types one endpoint's filter may name.
pub const MAX_TYPES: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// How long the previous secret signs after a rotation, unless asked otherwise.
pub const DEFAULT_ROTATION_GRACE: TimeDelta = TimeDelta::hours(24);
pub const MAX_ROTATION_GRACE: TimeDelta = TimeDelta::days(7);
/// Most events one `redeliverSince` owes again.
pub const MAX_REDELIVER: u64 = 10_000;

/// Whose endpoints a call is about: a tenant key's own tenant, or for an operator the
/// tenant it names or, naming none, its own.
fn owner_of(actor: &Principal, asked: Option<TenantId>) -> ApiResult<store::Owner> {
    actor.require_user()?;
    if actor.role == Role::Operator {
        return Ok(asked);
    }
    actor.acting_tenant(asked).map(Some)
}

/// Like [`owner_of`], for a change: tenant admins and operators only.
fn managing_owner(actor: &Principal, asked: Option<TenantId>) -> ApiResult<store::Owner> {
    let owner = owner_of(actor, asked)?;
    if matches!(actor.role, Role::TenantMember | Role::TenantBilling) {
        return Err(ApiError::forbidden(
            "webhook endpoints are managed by tenant admins",
        ));
    }
    Ok(owner)
}

fn no_endpoint() -> ApiError {
    ApiError::not_found("webhook endpoint")
}

fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The event types a budget's endpoint takes.
pub const BUDGET_EVENT_TYPES: [&str; 3] = [
    "budget.threshold_crossed",
    "budget.blocked",
    "budget.allocations_stopped",
];

/// Refuses to change what `setBudget` manages.
fn not_budgets(endpoint: &webhook_endpoint::Model) -> ApiResult<()> {
    if endpoint.legacy_signature {
        return Err(ApiError::InvalidState {
            message: "this endpoint is the budget's webhook: change its URL or secret with setBudget, or remove it there".to_owned(),
        });
    }
    Ok(())
}

/// The tenant's budget endpoint, if its budget has a webhook URL.
pub async fn budget_endpoint<C: sea_orm::ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> ApiResult<Option<webhook_endpoint::Model>> {
    let all = store::endpoints(conn, Some(tenant)).await?;
    Ok(all.into_iter().find(|e| e.legacy_signature))
}

/// How `event`'s delivery to `endpoint` stands: `pending`, `delivered`, `failed`, or
/// `none` when it was never owed there.
pub async fn delivery_status<C: sea_orm::ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    event: EventId,
    endpoint: &webhook_endpoint::Model,
) -> ApiResult<String> {
    let found = store::delivery_of(conn, Some(tenant), event, endpoint.id).await?;
    Ok(found.map_or_else(|| "none".to_owned(), |d| d.status))
}

/// Points the tenant's budget endpoint at `url` with `secret`, creating it, or removes
/// it when `url` is none; in the caller's transaction (`setBudget`, `removeBudget`).
pub async fn set_budget_endpoint<C: sea_orm::ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    url: Option<&str>,
    secret: &str,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    match (budget_endpoint(conn, tenant).await?, url) {
        (None, None) => {}
        (Some(found), None) => {
            store::delete_endpoint(conn, Some(tenant), found.id).await?;
        }
        (Some(found), Some(url)) => {
            let same = found.url == url && found.secret == secret;
            if !same {
                let mut after = found;
                after.url = url.to_owned();
                after.secret = secret.to_owned();
                after.updated_at = now;
                store::update_endpoint(conn, after).await?;
            }
        }
        (None, Some(url)) => {
            let endpoint = webhook_endpoint::Model {
                id: WebhookEndpointId::new(),
                tenant_id: Some(tenant),
                url: url.to_owned(),
                description: "budget alerts (setBudget)".to_owned(),
                event_types: json!(BUDGET_EVENT_TYPES),
                enabled: true,
                disabled_reason: None,
                secret: secret.to_owned(),
                previous_secret: None,
                previous_secret_until: None,
                failing_since: None,
                legacy_signature: true,
                created_at: now,
                updated_at: now,
            };
            store::insert_endpoint(conn, endpoint).await?;
        }
    }
    Ok(())
}

/// What `createWebhookEndpoint` and `updateWebhookEndpoint` take.
#[derive(Debug, Default)]
pub struct EndpointInput {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// An endpoint with its secret, only when it was just made or rotated.
#[derive(Debug)]
pub struct EndpointView {
    pub endpoint: webhook_endpoint::Model,
    pub new_secret: Option<String>,
}

fn checked_url(url: &str, client: &WebhookClient) -> ApiResult<String> {
    outbound::check_url(url, client.allow_list())
        .map(|_| url.to_owned())
        .map_err(|why| ApiError::invalid("url", why))
}

fn checked_description(text: &str) -> ApiResult<String> {
    if text.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(ApiError::invalid(
            "description",
            format!("at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    Ok(text.trim().to_owned())
}

/// The filter, each type in the catalog and visible to the owner, without repeats.
fn checked_types(types: &[String], owner: store::Owner) -> ApiResult<serde_json::Value> {
    if types.len() > MAX_TYPES {
        return Err(ApiError::invalid(
            "eventTypes",
            format!("at most {MAX_TYPES} types"),
        ));
    }
    let audience = match owner {
        Some(_) => catalog::Audience::Tenant,
        None => catalog::Audience::Operator,
    };
    let mut names: Vec<&str> = Vec::new();
    for name in types {
        let known = catalog::visible_to(audience).any(|s| s.name == name);
        if !known {
            return Err(ApiError::invalid(
                "eventTypes",
                format!("`{name}` is not an event type this endpoint can receive"),
            ));
        }
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    Ok(json!(names))
}

/// The endpoint as the audit log keeps it (no secrets).
fn public_json(e: &webhook_endpoint::Model) -> serde_json::Value {
    json!({"url": e.url, "description": e.description, "event_types": e.event_types,
        "enabled": e.enabled, "disabled_reason": e.disabled_reason})
}

fn audit_entry(
    action: &'static str,
    endpoint: WebhookEndpointId,
    owner: store::Owner,
    before: Option<&webhook_endpoint::Model>,
    after: Option<&webhook_endpoint::Model>,
) -> audit::Entry {
    audit::Entry {
        tenant_id: owner,
        action,
        object_type: "webhook_endpoint",
        object_id: endpoint.to_string(),
        before: before.map(public_json),
        after: after.map(public_json),
    }
}

/// `createWebhookEndpoint`.
#[tracing::instrument(name = "webhooks.create", skip_all)]
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    client: &WebhookClient,
    asked: Option<TenantId>,
    input: EndpointInput,
    now: DateTime<Utc>,
) -> ApiResult<EndpointView> {
    let owner = managing_owner(actor, asked)?;
    let url = checked_url(input.url.as_deref().unwrap_or_default(), client)?;
    let description = checked_description(input.description.as_deref().unwrap_or_default())?;
    let event_types = checked_types(input.event_types.as_deref().unwrap_or_default(), owner)?;
    let txn = crate::db::begin_write(db).await?;
    if store::endpoints(&txn, owner).await?.len() >= MAX_ENDPOINTS {
        return Err(ApiError::invalid(
            "url",
            format!("at most {MAX_ENDPOINTS} webhook endpoints"),
        ));
    }
    let secret = new_secret();
    let enabled = input.enabled.unwrap_or(true);
    let saved = store::insert_endpoint(
        &txn,
        webhook_endpoint::Model {
            id: WebhookEndpointId::new(),
            tenant_id: owner,
            url,
            description,
            event_types,
            enabled,
            disabled_reason: (!enabled).then(|| "disabled by its owner".to_owned()),
            secret: secret.clone(),
            previous_secret: None,
            previous_secret_until: None,
            failing_since: None,
            legacy_signature: false,
            created_at: now,
            updated_at: now,
        },
    )
    .await
    .map_err(|e| match e {
        sea_orm::DbErr::Exec(_) | sea_orm::DbErr::Query(_) if owner.is_some() => {
            ApiError::not_found("tenant")
        }
        other => other.into(),
    })?;
    let entry = audit_entry(
        "webhook_endpoint.create",
        saved.id,
        owner,
        None,
        Some(&saved),
    );
    audit::record(&txn, actor, entry).await?;
    txn.commit().await?;
    Ok(EndpointView {
        endpoint: saved,
        new_secret: Some(secret),
    })
}

/// `updateWebhookEndpoint`: changes what is given. Enabling clears the reason it was
/// disabled and its failure streak.
#[tracing::instrument(name = "webhooks.update", skip_all, fields(endpoint = %id))]
pub async fn update(
    db: &DatabaseConnection,
    actor: &Principal,
    client: &WebhookClient,
    asked: Option<TenantId>,
    id: WebhookEndpointId,
    input: EndpointInput,
    now: DateTime<Utc>,
) -> ApiResult<EndpointView> {
    let owner = managing_owner(actor, asked)?;
    let txn = crate::db::begin_write(db).await?;
    let before = store::find_endpoint_for_update(&txn, owner, id)
        .await?
        .ok_or_else(no_endpoint)?;
    if input.url.is_some() || input.description.is_some() || input.event_types.is_some() {
        not_budgets(&before)?;
    }
    let mut after = before.clone();
    if let Some(url) = &input.url {
        after.url = checked_url(url, client)?;
    }
    if let Some(text) = &input.description {
        after.description = checked_description(text)?;
    }
    if let Some(types) = &input.event_types {
        after.event_types = checked_types(types, owner)?;
    }
    match input.enabled {
        Some(true) if !before.enabled => {
            after.enabled = true;
            after.disabled_reason = None;
            after.failing_since = None;
        }
        Some(false) if before.enabled => {
            after.enabled = false;
            after.disabled_reason = Some("disabled by its owner".to_owned());
        }
        _ => {}
    }
    after.updated_at = now;
    let saved = store::update_endpoint(&txn, after).await?;
    let entry = audit_entry(
        "webhook_endpoint.update",
        id,
        owner,
        Some(&before),
        Some(&saved),
    );
    audit::record(&txn, actor, entry).await?;
    txn.commit().await?;
    Ok(EndpointView {
        endpoint: saved,
        new_secret: None,
    })
}

/// `deleteWebhookEndpoint`: the endpoint, its deliveries and their log. Whether it existed.
#[tracing::instrument(name = "webhooks.delete", skip_all, fields(endpoint = %id))]
pub async fn delete(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    id: WebhookEndpointId,
) -> ApiResult<bool> {
    let owner = managing_owner(actor, asked)?;
    let txn = crate::db::begin_write(db).await?;
    let Some(before) = store::find_endpoint_for_update(&txn, owner, id).await? else {
        return Ok(false);
    };
    not_budgets(&before)?;
    store::delete_endpoint(&txn, owner, id).await?;
    let entry = audit_entry("webhook_endpoint.delete", id, owner, Some(&before), None);
    audit::record(&txn, actor, entry).await?;
    txn.commit().await?;
    Ok(true)
}

/// `rotateWebhookSecret`: a new secret, shown once; the old one signs beside it for
/// `grace`.
#[tracing::instrument(name = "webhooks.rotate_secret", skip_all, fields(endpoint = %id))]
pub async fn rotate_secret(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    id: WebhookEndpointId,
    grace_seconds: Option<i64>,
    now: DateTime<Utc>,
) -> ApiResult<EndpointView> {
    let owner = managing_owner(actor, asked)?;
    let grace = match grace_seconds {
        None => DEFAULT_ROTATION_GRACE,
        Some(s) if (0..=MAX_ROTATION_GRACE.num_seconds()).contains(&s) => TimeDelta::seconds(s),
        Some(_) => {
            return Err(ApiError::invalid(
                "graceSeconds",
                format!("from 0 to {}", MAX_ROTATION_GRACE.num_seconds()),
            ));
        }
    };
    let txn = crate::db::begin_write(db).await?;
    let before = store::find_endpoint_for_update(&txn, owner, id)
        .await?
        .ok_or_else(no_endpoint)?;
    not_budgets(&before)?;
    let secret = new_secret();
    let mut after = before.clone();
    after.previous_secret = Some(before.secret.clone());
    after.previous_secret_until = Some(now + grace);
    after.secret = secret.clone();
    after.updated_at = now;
    let saved = store::update_endpoint(&txn, after).await?;
    let entry = audit_entry(
        "webhook_endpoint.rotate_secret",
        id,
        owner,
        Some(&before),
        Some(&saved),
    );
    audit::record(&txn, actor, entry).await?;
    txn.commit().await?;
    Ok(EndpointView {
        endpoint: saved,
        new_secret: Some(secret),
    })
}

/// `sendTestWebhook`: records a `webhook.test` event owed to this endpoint alone.
pub async fn send_test(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    id: WebhookEndpointId,
    note: Option<String>,
    now: DateTime<Utc>,
) -> ApiResult<EventId> {
    let owner = managing_owner(actor, asked)?;
    let note = note.map(|n| checked_description(&n)).transpose()?;
    let txn = crate::db::begin_write(db).await?;
    store::find_endpoint(&txn, owner, id)
        .await?
        .ok_or_else(no_endpoint)?;
    let data = json!({"endpoint_id": id, "note": note});
    let event = NewEvent {
        kind: "webhook.test",
        tenant: owner,
        occurred_at: now,
        data,
    };
    let row = events::record(&txn, event, now).await?;
    txn.commit().await?;
    Ok(row.id)
}

/// `redeliverWebhook`: owes one event to one endpoint again, with the same `webhook-id`.
pub async fn redeliver(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    endpoint: WebhookEndpointId,
    event: EventId,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let owner = managing_owner(actor, asked)?;
    let txn = crate::db::begin_write(db).await?;
    let found = store::find_endpoint(&txn, owner, endpoint)
        .await?
        .ok_or_else(no_endpoint)?;
    // `takes` also says whether the endpoint's owner may see the event at all.
    let row = event_store::by_ids(&txn, vec![event])
        .await?
        .pop()
        .filter(|e| store::takes(&found, e))
        .ok_or_else(|| ApiError::not_found("event"))?;
    store::owe_again(&txn, &row, &found, now).await?;
    txn.commit().await?;
    Ok(())
}

/// `redeliverWebhooksSince`: owes again every event since `since` that the endpoint
/// takes (at most [`MAX_REDELIVER`]); how many.
pub async fn redeliver_since(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    endpoint: WebhookEndpointId,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    let owner = managing_owner(actor, asked)?;
    let txn = crate::db::begin_write(db).await?;
    let found = store::find_endpoint(&txn, owner, endpoint)
        .await?
        .ok_or_else(no_endpoint)?;
    let candidates = match owner {
        Some(_) => event_store::since(&txn, owner, since, MAX_REDELIVER).await?,
        None => event_store::all_since(&txn, since, MAX_REDELIVER).await?,
    };
    let mut owed = 0;
    for row in candidates.iter().filter(|e| store::takes(&found, e)) {
        store::owe_again(&txn, row, &found, now).await?;
        owed += 1;
    }
    txn.commit().await?;
    Ok(owed)
}

/// The owner's endpoints.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
) -> ApiResult<Vec<webhook_endpoint::Model>> {
    let owner = owner_of(actor, asked)?;
    Ok(store::endpoints(db, owner).await?)
}

/// An endpoint's deliveries and attempts, newest first.
pub async fn log(
    db: &DatabaseConnection,
    endpoint: &webhook_endpoint::Model,
    limit: u64,
) -> ApiResult<(Vec<webhook_delivery::Model>, Vec<webhook_attempt::Model>)> {
    let owner = endpoint.tenant_id;
    let deliveries = store::deliveries(db, owner, endpoint.id, limit).await?;
    let attempts = store::attempts(db, owner, endpoint.id, limit).await?;
    Ok((deliveries, attempts))
}

/// The feed: `events(after, types, first)` for a tenant, or for the operator its own or a
/// named tenant's, within the retention.
pub async fn feed(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    query: events::FeedQuery<'_>,
) -> ApiResult<events::FeedPage> {
    let reader = match owner_of(actor, asked)? {
        Some(tenant) => events::Reader::Tenant(tenant),
        None => events::Reader::Operator,
    };
    Ok(events::feed(db, reader, query).await?)
}
