//! The GraphQL transport: `POST /graphql` (JSON body, bounded by the body limit) and the
//! GraphiQL IDE on `GET /graphql`. Authentication happens here, once per request; a key
//! that is presented but invalid is refused before any resolver runs.

use actix_web::{HttpRequest, HttpResponse, web};
use async_graphql::{ErrorExtensionValues, Response, ServerError, Value};

use actix_web::http::StatusCode;

use super::AppState;
use crate::error::{ApiError, Code};
use crate::graphql::cost::IntrospectionOnly;
use crate::graphql::loaders::{NodeExtras, UsageCosts};
use crate::graphql::{Caller, bounds};

/// A request answered before the engine runs it.
struct Refusal {
    status: StatusCode,
    code: Code,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, code: Code, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }

    fn of(err: &ApiError) -> Refusal {
        Refusal::new(err.code().status(), err.code(), err.message())
    }
}

fn count_error(state: &AppState, code: &str) {
    state
        .metrics
        .graphql_errors_total
        .with_label_values(&[code])
        .inc();
}

pub async fn graphql(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let request = match admit(&state, &req, &body).await {
        Ok(request) => request,
        Err(refusal) => {
            count_error(&state, refusal.code.as_str());
            let mut error = ServerError::new(refusal.message, None);
            let mut ext = ErrorExtensionValues::default();
            ext.set("code", refusal.code.as_str());
            error.extensions = Some(ext);
            return HttpResponse::build(refusal.status).json(Response::from_errors(vec![error]));
        }
    };
    let mut response = state.schema.execute(request).await;
    for error in &mut response.errors {
        let ext = error.extensions.get_or_insert_with(Default::default);
        // Parse, validation, depth and complexity errors come from the engine uncoded.
        if ext.get("code").is_none() {
            ext.set("code", Code::InvalidQuery.as_str());
        }
        if let Some(Value::String(code)) = ext.get("code") {
            count_error(&state, code);
        }
    }
    HttpResponse::Ok().json(response)
}

/// Everything before the engine: the body, the caller, the bounds on work, anonymous
/// access and the rate limit. The request that comes out carries its caller.
async fn admit(
    state: &AppState,
    req: &HttpRequest,
    body: &[u8],
) -> Result<async_graphql::Request, Refusal> {
    let mut request: async_graphql::Request = serde_json::from_slice(body).map_err(|err| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            Code::InvalidInput,
            format!("the body is not a GraphQL request: {err}"),
        )
    })?;
    let caller = Caller(
        super::session::caller(state, req)
            .await
            .map_err(|e| Refusal::of(&e))?,
    );
    // Without a key only introspection may run (where the deployment allows it): refused
    // before anything but the parse that tells.
    if caller.0.is_none() && !state.exposure.introspection_without_key {
        return Err(Refusal::of(&unauthenticated()));
    }
    let shape = bounded(&mut request)?;
    tracing::Span::current().record("operation", shape.operation.as_str());
    match &caller.0 {
        None if shape.introspection_only => {}
        None => return Err(Refusal::of(&unauthenticated())),
        Some(principal) if principal.role.read_only() && shape.changing_mutations > 0 => {
            return Err(Refusal::of(&ApiError::forbidden(
                "a billing key can only read: ask a tenant admin or member to change things",
            )));
        }
        Some(principal) => {
            // Each mutation of an aliased batch is a request of its own.
            if !state
                .rate_limiter
                .allow_n(principal.key_id, shape.mutations.max(1))
            {
                return Err(Refusal::of(&ApiError::RateLimited));
            }
            if let Some(tenant) = principal.tenant_id {
                tracing::Span::current().record("tenant_id", tracing::field::display(tenant));
            }
        }
    }
    let mut request = request;
    if let Some(principal) = &caller.0 {
        request = request
            .data(NodeExtras::loader(state.db.clone(), principal.clone()))
            .data(UsageCosts::loader(state.db.clone(), state.clock.clone()));
    }
    let request = request.data(caller);
    Ok(if shape.introspection_only {
        request.data(IntrospectionOnly)
    } else {
        request
    })
}

fn unauthenticated() -> ApiError {
    ApiError::Unauthenticated {
        message: "send `Authorization: Bearer <API key>`".into(),
    }
}

/// Parses the request once and checks it against the bounds on work, before the engine
/// validates it.
fn bounded(request: &mut async_graphql::Request) -> Result<bounds::Shape, Refusal> {
    let refuse = |code: Code, message: &str| Refusal::new(StatusCode::BAD_REQUEST, code, message);
    if request.query.len() > bounds::MAX_QUERY_BYTES {
        let message = format!(
            "the query is {} bytes; at most {}",
            request.query.len(),
            bounds::MAX_QUERY_BYTES
        );
        return Err(refuse(Code::InvalidQuery, &message));
    }
    let operation = request.operation_name.clone();
    let variables = std::mem::take(&mut request.variables);
    let checked = match request.parsed_query() {
        Ok(doc) => bounds::check(doc, operation.as_deref(), &variables).map_err(|out| {
            let code = match out {
                bounds::OutOfBounds::Query(_) => Code::InvalidQuery,
                bounds::OutOfBounds::Input(_) => Code::InvalidInput,
            };
            refuse(code, out.message())
        }),
        Err(err) => Err(refuse(Code::InvalidQuery, &err.message)),
    };
    request.variables = variables;
    checked
}

/// The GraphiQL IDE, served with every asset it needs from the binary (nothing from a
/// CDN: sovereign and air-gapped sites have none). `scripts/vendor-graphiql.sh` refreshes
/// the vendored files.
pub async fn graphiql() -> HttpResponse {
    asset_response("text/html; charset=utf-8", GRAPHIQL_PAGE)
}

const GRAPHIQL_PAGE: &[u8] = include_bytes!("../../assets/graphiql/index.html");

/// `GET /graphiql/{file}`: one of the IDE's assets, or 404.
pub async fn graphiql_asset(file: web::Path<String>) -> HttpResponse {
    let found = match file.as_str() {
        "graphiql.min.js" => Some((
            "text/javascript",
            &include_bytes!("../../assets/graphiql/graphiql.min.js")[..],
        )),
        "graphiql.min.css" => Some((
            "text/css",
            &include_bytes!("../../assets/graphiql/graphiql.min.css")[..],
        )),
        "react.production.min.js" => Some((
            "text/javascript",
            &include_bytes!("../../assets/graphiql/react.production.min.js")[..],
        )),
        "react-dom.production.min.js" => Some((
            "text/javascript",
            &include_bytes!("../../assets/graphiql/react-dom.production.min.js")[..],
        )),
        "start.js" => Some((
            "text/javascript",
            &include_bytes!("../../assets/graphiql/start.js")[..],
        )),
        _ => None,
    };
    match found {
        Some((content_type, body)) => asset_response(content_type, body),
        None => crate::error::rest_error(Code::NotFound, "no such GraphiQL asset"),
    }
}

fn asset_response(content_type: &str, body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body)
}
