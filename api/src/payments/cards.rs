//! Adding a card in the portal. `startCardSetup` creates a Stripe SetupIntent for the
//! tenant's customer (created on first use) and hands the browser what Stripe.js needs to
//! collect and confirm the card with Stripe, so the card number never reaches neocloud;
//! `finishCardSetup` reads the SetupIntent back from Stripe, checks that it is the
//! tenant's own and succeeded, and makes its payment method the default.

use chrono::{DateTime, Utc};
use neocloud_metering::payments::accounts;
use neocloud_metering::payments::gateway::{Gateway, GatewayError};
use neocloud_schema::entity::payment_account;
use sea_orm::DatabaseConnection;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// Where the portal loads Stripe.js from unless configured otherwise.
pub const STRIPE_JS: &str = "https://js.stripe.com/v3/";

/// What the portal's card form needs, configured by the operator: the account's
/// publishable key and where Stripe.js is served.
#[derive(Debug, Clone)]
pub struct CardForm {
    pub publishable_key: String,
    pub js_url: String,
}

/// A card being added: the SetupIntent to confirm in the browser.
#[derive(Debug, Clone)]
pub struct Started {
    pub setup_intent_id: String,
    /// Lets Stripe.js confirm the SetupIntent; handed to the admin's browser, never stored.
    pub client_secret: String,
    pub publishable_key: String,
    pub js_url: String,
}

fn card_form_unavailable() -> ApiError {
    ApiError::Unavailable {
        message: "cards are not collected on this installation (no Stripe publishable key)".into(),
    }
}

/// `startCardSetup` (tenant admin).
#[tracing::instrument(name = "payments.start_card_setup", skip_all)]
pub async fn start(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: Option<&Gateway>,
    form: Option<&CardForm>,
    now: DateTime<Utc>,
) -> ApiResult<Started> {
    let tenant = super::admin_tenant(actor)?;
    let (Some(gateway), Some(form)) = (gateway, form) else {
        return Err(card_form_unavailable());
    };
    let customer = super::customer_of(db, gateway, tenant, now).await?;
    let setup = gateway.start_card_setup(&customer, tenant).await?;
    Ok(Started {
        setup_intent_id: setup.id,
        client_secret: setup.client_secret,
        publishable_key: form.publishable_key.clone(),
        js_url: form.js_url.clone(),
    })
}

/// `finishCardSetup(setupIntentId)` (tenant admin): the SetupIntent's payment method
/// becomes the default. Another customer's SetupIntent is not found; one not confirmed
/// yet is `INVALID_STATE`.
#[tracing::instrument(name = "payments.finish_card_setup", skip_all)]
pub async fn finish(
    db: &DatabaseConnection,
    actor: &Principal,
    gateway: Option<&Gateway>,
    setup_intent_id: &str,
    now: DateTime<Utc>,
) -> ApiResult<payment_account::Model> {
    let tenant = super::admin_tenant(actor)?;
    let id = setup_intent_id.trim();
    if !id.starts_with("seti_") || !super::stripe_id(id) {
        return Err(ApiError::invalid(
            "setupIntentId",
            "a Stripe SetupIntent id (seti_…)",
        ));
    }
    let gateway = gateway.ok_or_else(super::unavailable)?;
    let customer = accounts::find(db, tenant)
        .await?
        .and_then(|a| a.stripe_customer_id)
        .ok_or_else(|| ApiError::not_found("setupIntent"))?;
    let outcome = gateway.card_setup(id).await.map_err(|e| match e {
        GatewayError::Refused(reason) => ApiError::invalid("setupIntentId", reason),
        transient => transient.into(),
    })?;
    if outcome.customer.as_deref() != Some(customer.as_str()) {
        return Err(ApiError::not_found("setupIntent"));
    }
    let method = match (outcome.succeeded, outcome.payment_method) {
        (true, Some(method)) => method,
        _ => {
            return Err(ApiError::InvalidState {
                message: "the card is not confirmed with Stripe yet".into(),
            });
        }
    };
    super::make_default(db, actor, gateway, tenant, &customer, &method, now).await
}
