//! The request middleware: one tracing span per request (handlers add `tenant_id` once
//! the caller is known) and the HTTP metrics.

use std::time::Instant;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;
use tracing::Instrument;

use super::AppState;
use crate::error::{Code, rest_error};

pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let route = req
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = req.method().to_string();
    let metrics = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.metrics.clone());
    let span = tracing::info_span!(
        "request",
        %method,
        %route,
        tenant_id = tracing::field::Empty,
        operation = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    let started = Instant::now();
    let response = next.call(req).instrument(span.clone()).await;
    let status = match &response {
        Ok(res) => res.status().as_u16(),
        Err(err) => err.as_response_error().status_code().as_u16(),
    };
    span.record("status", status);
    if let Some(metrics) = metrics {
        metrics
            .http_requests_total
            .with_label_values(&[method.as_str(), route.as_str(), &status.to_string()])
            .inc();
        metrics
            .http_request_duration_seconds
            .with_label_values(&[method.as_str(), route.as_str()])
            .observe(started.elapsed().as_secs_f64());
    }
    response
}

/// Request bodies the server decodes: anything else is refused (415) rather than read
/// as if it were not encoded.
const KNOWN_ENCODINGS: [&str; 4] = ["identity", "gzip", "deflate", "zstd"];

/// Refuses a request whose `Content-Encoding` the server cannot decode.
pub async fn known_encoding(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let encoding = req
        .headers()
        .get(actix_web::http::header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase());
    if let Some(encoding) = encoding
        && !KNOWN_ENCODINGS.contains(&encoding.as_str())
    {
        let response = rest_error(
            Code::UnsupportedEncoding,
            &format!(
                "Content-Encoding `{encoding}` is not supported; send identity, gzip, deflate or zstd"
            ),
        );
        return Ok(req.into_response(response).map_into_right_body());
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_left_body)
}
