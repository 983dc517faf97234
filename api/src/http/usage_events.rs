//! `POST /v1/events` (contract): usage events as CloudEvents 1.0 in JSON, one
//! (`application/cloudevents+json`) or a batch (`application/cloudevents-batch+json`;
//! `application/json` takes either), reported with a usage reporter key or an operator
//! key. A batch is answered `200` with one result per event, in order: `accepted` (with
//! the meters that counted it), `duplicate` or `invalid` (the field and why); a single
//! invalid event is answered `400`. A body that is not events at all is `400` and stores
//! nothing.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use neocloud_metering::meters::cloudevent;
use neocloud_metering::meters::record::Outcome;
use serde_json::Value;

use super::AppState;
use super::extract::{AnyKey, RestError};
use crate::error::{ApiError, Code};
use crate::meters;

/// What the body holds, as its `Content-Type` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Single,
    Batch,
    Either,
}

fn mode(req: &HttpRequest) -> Result<Mode, ApiError> {
    let kind = req
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match kind.split(';').next().unwrap_or("").trim() {
        "application/cloudevents+json" => Ok(Mode::Single),
        "application/cloudevents-batch+json" => Ok(Mode::Batch),
        "application/json" => Ok(Mode::Either),
        _ => Err(ApiError::invalid(
            "Content-Type",
            "send application/cloudevents+json (one event), application/cloudevents-batch+json (a batch) or application/json",
        )),
    }
}

/// The answer to a batch: counts, and one result per event, in order.
#[derive(serde::Serialize)]
struct Answer<'a> {
    accepted: usize,
    duplicates: usize,
    invalid: usize,
    results: Vec<EventResult<'a>>,
}

/// One event's result in the answer (serialized as it is borrowed).
#[derive(serde::Serialize)]
struct EventResult<'a> {
    index: usize,
    /// The event's `id` when it is a string, else null.
    id: Option<&'a str>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    meters: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<EventError<'a>>,
}

#[derive(serde::Serialize)]
struct EventError<'a> {
    code: &'static str,
    field: &'a str,
    message: &'a str,
}

fn result<'a>(index: usize, event: &'a Value, outcome: &'a Outcome) -> EventResult<'a> {
    let id = event.get("id").and_then(Value::as_str);
    let (status, meters, error) = match outcome {
        Outcome::Accepted { meters } => ("accepted", Some(*meters), None),
        Outcome::Duplicate => ("duplicate", None, None),
        Outcome::Invalid(refusal) => (
            "invalid",
            None,
            Some(EventError {
                code: Code::InvalidInput.as_str(),
                field: &refusal.field,
                message: &refusal.message,
            }),
        ),
    };
    EventResult {
        index,
        id,
        status,
        meters,
        error,
    }
}

pub async fn report(
    state: web::Data<AppState>,
    AnyKey(principal): AnyKey,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, RestError> {
    let mode = mode(&req)?;
    let cloudevent::Body { events, single } =
        cloudevent::parse_body(&body).map_err(|e| ApiError::invalid(e.field, e.message))?;
    match (mode, single) {
        (Mode::Single, false) => {
            return Err(ApiError::invalid(
                "body",
                "application/cloudevents+json is one event (an object)",
            )
            .into());
        }
        (Mode::Batch, true) => {
            return Err(ApiError::invalid(
                "body",
                "application/cloudevents-batch+json is an array of events",
            )
            .into());
        }
        _ => {}
    }
    let events = Arc::new(events);
    let outcomes = meters::report(&state.events, &principal, events.clone()).await?;
    if let ([Outcome::Invalid(refusal)], true) = (outcomes.as_slice(), single) {
        return Err(ApiError::invalid(refusal.field.clone(), refusal.message.clone()).into());
    }
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    Ok(HttpResponse::Ok().json(Answer {
        accepted: count(|o| matches!(o, Outcome::Accepted { .. })),
        duplicates: count(|o| matches!(o, Outcome::Duplicate)),
        invalid: count(|o| matches!(o, Outcome::Invalid(_))),
        results: events
            .iter()
            .zip(&outcomes)
            .enumerate()
            .map(|(i, (e, o))| result(i, e, o))
            .collect(),
    }))
}
