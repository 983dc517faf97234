//! HTTP endpoints other than GraphQL resolvers: the GraphQL transport, health, metrics,
//! and the request middleware (a span per request, Prometheus counters).

pub mod agents;
pub mod events;
pub mod extract;
pub mod graphql;
pub mod health;
pub mod ingest;
pub mod invoices;
pub mod ledger;
pub mod metrics;
pub mod observe;
pub mod privacy;
pub mod provider_statements;
pub mod rate_limit;
pub mod session;
mod state;
pub mod stripe;
pub mod usage_events;
pub mod web;

pub use state::AppState;

use actix_web::HttpRequest;

/// A file to download: `name` as an attachment, never cached.
pub fn attachment(content_type: &str, name: &str, body: Vec<u8>) -> actix_web::HttpResponse {
    use actix_web::http::header;
    actix_web::HttpResponse::Ok()
        .content_type(content_type)
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        ))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(body)
}

/// The bearer token of a request, if any (`Bearer ` with nothing after it, as GraphiQL's
/// header template sends before a key is pasted, is no token).
pub fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get(actix_web::http::header::AUTHORIZATION)?;
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
