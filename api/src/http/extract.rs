//! What a REST handler receives already checked: `User` (an operator or tenant key, or a
//! browser session acting as one), `AgentNode` (a node's agent token, never a session)
//! and `AnyKey` (any key or session; the handler checks its role), each authenticated and
//! rate-limited once here, and
//! `RestError`, the `{"error": {code, message}}` answer any `ApiError` becomes.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use neocloud_schema::ids::NodeId;
use neocloud_schema::vocabulary::Role;

use super::{AppState, bearer};
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};

/// An `ApiError` as a REST answer. (`ApiError` itself has no `Display`, so that GraphQL
/// resolvers cannot turn it into an error without a code.)
#[derive(Debug)]
pub struct RestError(pub ApiError);

impl From<ApiError> for RestError {
    fn from(err: ApiError) -> Self {
        RestError(err)
    }
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message())
    }
}

impl ResponseError for RestError {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.0.code().status()
    }

    fn error_response(&self) -> HttpResponse {
        self.0.to_response()
    }
}

/// The caller of a REST endpoint with an operator or tenant key.
pub struct User(pub Principal);

/// The node whose agent token called.
pub struct AgentNode(pub NodeId);

/// The caller of an endpoint any valid key may reach, whatever its role (the endpoint
/// checks the role itself): authenticated and rate-limited.
pub struct AnyKey(pub Principal);

type Extracted<T> = Pin<Box<dyn Future<Output = Result<T, RestError>>>>;

fn state(req: &HttpRequest) -> ApiResult<web::Data<AppState>> {
    req.app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::invariant("the application state is missing"))
}

fn key<'r>(req: &'r HttpRequest, what: &str) -> ApiResult<&'r str> {
    bearer(req).ok_or_else(|| ApiError::Unauthenticated {
        message: format!("send `Authorization: Bearer <{what}>`"),
    })
}

/// A key or a signed-in session (`session::caller`); `UNAUTHENTICATED` without either.
async fn signed_in(state: &AppState, req: &HttpRequest) -> ApiResult<Principal> {
    let principal =
        super::session::caller(state, req)
            .await?
            .ok_or_else(|| ApiError::Unauthenticated {
                message: "send `Authorization: Bearer <API key>`, or sign in".to_owned(),
            })?;
    if principal.second_factor_setup_required {
        return Err(ApiError::SecondFactorSetupRequired);
    }
    Ok(principal)
}

fn admitted(state: &AppState, principal: Principal) -> ApiResult<Principal> {
    if state.rate_limiter.allow(principal.key_id) {
        Ok(principal)
    } else {
        Err(ApiError::RateLimited)
    }
}

impl FromRequest for User {
    type Error = RestError;
    type Future = Extracted<User>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = state(&req)?;
            let principal = admitted(&state, signed_in(&state, &req).await?)?;
            principal.require_user()?;
            Ok(User(principal))
        })
    }
}

impl FromRequest for AnyKey {
    type Error = RestError;
    type Future = Extracted<AnyKey>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = state(&req)?;
            Ok(AnyKey(admitted(&state, signed_in(&state, &req).await?)?))
        })
    }
}

impl FromRequest for AgentNode {
    type Error = RestError;
    type Future = Extracted<AgentNode>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = state(&req)?;
            let principal = auth::authenticate_agent(&state.db, key(&req, "agent token")?).await?;
            match admitted(&state, principal)? {
                Principal {
                    role: Role::Agent,
                    node_id: Some(node),
                    ..
                } => Ok(AgentNode(node)),
                _ => Err(ApiError::forbidden("this endpoint needs a node's agent token").into()),
            }
        })
    }
}
