//! `POST /v1/stripe/webhook`: Stripe's events about our invoices. The raw body is checked
//! against `Stripe-Signature` with the endpoint secret before anything is read; a missing,
//! forged or stale signature is `400` and changes nothing; an event already handled is
//! acknowledged again and changes nothing.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use neocloud_metering::payments::{self, webhook};
use secrecy::ExposeSecret;
use serde_json::json;

use super::AppState;
use crate::error::{Code, rest_error};

pub async fn webhook(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let Some(secret) = &state.stripe_webhook_secret else {
        return rest_error(Code::Unavailable, "Stripe webhooks are not configured");
    };
    let header = req
        .headers()
        .get("Stripe-Signature")
        .and_then(|v| v.to_str().ok());
    // Stripe's signing time is checked against the real time, not the application's
    // clock: the tolerance is about the sender's clock and replays.
    if let Err(err) = webhook::verify(
        header,
        &body,
        secret.expose_secret(),
        Utc::now().timestamp(),
    ) {
        tracing::warn!(error = %err, "Stripe webhook refused.");
        return rest_error(Code::InvalidInput, &err.to_string());
    }
    let event = match payments::parse_event(&body) {
        Ok(event) => event,
        Err(err) => return rest_error(Code::InvalidInput, &err.to_string()),
    };
    let now = state.clock.now();
    let result =
        crate::payments::handle_event(&state.db, &event, state.billing.dunning_failures, now).await;
    match result {
        Ok(outcome) => {
            tracing::info!(event = %event.id, kind = %event.kind, ?outcome, "Stripe event handled.");
            HttpResponse::Ok().json(json!({"received": true, "outcome": format!("{outcome:?}")}))
        }
        // Stripe retries a non-2xx delivery later.
        Err(err) => err.to_response(),
    }
}
