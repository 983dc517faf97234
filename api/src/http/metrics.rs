//! `GET /metrics`: the registry (`crate::metrics`) in Prometheus text format.

use actix_web::{HttpRequest, HttpResponse, web};
use prometheus::{Encoder, TextEncoder};

use super::AppState;
use super::extract::{RestError, User};

/// The metrics, to loopback (or anyone, where the deployment says so) and to operator
/// keys.
pub async fn metrics(
    state: web::Data<AppState>,
    req: HttpRequest,
    user: Result<User, RestError>,
) -> Result<HttpResponse, RestError> {
    let local = req.peer_addr().is_some_and(|a| a.ip().is_loopback());
    if !(local || state.exposure.metrics_without_key) {
        user?.0.require_operator()?;
    }
    let queued = i64::try_from(state.ordering.queued_orders()).unwrap_or(i64::MAX);
    state.metrics.placement.queue_depth.set(queued);
    let mut body = Vec::new();
    Ok(
        match TextEncoder::new().encode(&state.metrics.registry.gather(), &mut body) {
            Ok(()) => HttpResponse::Ok()
                .content_type("text/plain; version=0.0.4")
                .body(body),
            Err(err) => HttpResponse::InternalServerError().body(err.to_string()),
        },
    )
}
