//! The GraphQL transport: `POST /graphql` (JSON body, bounded by the body limit) and the
//! GraphiQL IDE on `GET /graphql`. Authentication happens here, once per request; a key
//! that is presented but invalid is refused before any resolver runs.

use actix_web::{HttpRequest, HttpResponse, web};
use async_graphql::http::GraphiQLSource;
use async_graphql::{ErrorExtensionValues, Response, ServerError, Value};

use super::bearer;
use crate::auth;
use crate::error::Code;
use crate::graphql::Caller;
use crate::startup::AppState;

fn error_response(status: actix_web::http::StatusCode, code: Code, message: &str) -> HttpResponse {
    let mut error = ServerError::new(message, None);
    let mut ext = ErrorExtensionValues::default();
    ext.set("code", code.as_str());
    error.extensions = Some(ext);
    HttpResponse::build(status).json(Response::from_errors(vec![error]))
}

pub async fn graphql(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let request: async_graphql::Request = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(err) => {
            return error_response(
                actix_web::http::StatusCode::BAD_REQUEST,
                Code::InvalidInput,
                &format!("the body is not a GraphQL request: {err}"),
            );
        }
    };
    let caller = match bearer(&req) {
        None => Caller(None),
        Some(key) => match auth::authenticate(&state.db, key).await {
            Ok(principal) => {
                if !state.rate_limiter.allow(principal.key_id) {
                    let err = crate::error::ApiError::RateLimited;
                    return error_response(err.code().status(), err.code(), &err.message());
                }
                if let Some(tenant) = principal.tenant_id {
                    tracing::Span::current().record("tenant_id", tracing::field::display(tenant));
                }
                Caller(Some(principal))
            }
            Err(err) => {
                let code = err.code();
                return error_response(code.status(), code, &err.message());
            }
        },
    };
    let mut response = state.schema.execute(request.data(caller)).await;
    for error in &mut response.errors {
        let ext = error.extensions.get_or_insert_with(Default::default);
        // Parse, validation, depth and complexity errors come from the engine uncoded.
        if ext.get("code").is_none() {
            ext.set("code", Code::InvalidQuery.as_str());
        }
        if let Some(Value::String(code)) = ext.get("code") {
            state
                .metrics
                .graphql_errors_total
                .with_label_values(&[code.as_str()])
                .inc();
        }
    }
    HttpResponse::Ok().json(response)
}

pub async fn graphiql() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(GraphiQLSource::build().endpoint("/graphql").finish())
}
