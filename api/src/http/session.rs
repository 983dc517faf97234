//! `/v1/session`: signing in and out of the portal and the console, and the caller of any
//! request — a bearer key, else the session cookie. A request the cookie authenticates
//! must carry the session's `X-CSRF-Token` unless its method is safe (GET, HEAD); the
//! cookie is HttpOnly and `SameSite=Strict` besides, so another site can neither read it
//! nor send it.

use actix_web::cookie::{Cookie, SameSite, time};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use super::extract::RestError;
use super::{AppState, bearer};
use crate::auth::sessions::{self, Session};
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};

pub const COOKIE: &str = "neocloud_session";
pub const CSRF_HEADER: &str = "x-csrf-token";

/// `{"apiKey": …}`, or `{"email": …, "password": …}` for a portal user, with `"code"` (a
/// one-time or recovery code) when the user has a second factor.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignIn {
    api_key: Option<String>,
    email: Option<String>,
    password: Option<String>,
    code: Option<String>,
}

/// `{"token": …, "password": …}`: an invitation accepted with the password chosen.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Acceptance {
    token: String,
    password: String,
}

/// `{"email": …}`: someone who forgot its password asks for a link.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    email: String,
}

/// Small JSON bodies; a malformed one is `INVALID_INPUT` like any other bad input.
pub fn json_body() -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(4096)
        .error_handler(|err, _| {
            let response = ApiError::invalid("body", err.to_string()).to_response();
            actix_web::error::InternalError::from_response(err, response).into()
        })
}

/// The caller of a request, if it presented anything: its bearer key, or the session of
/// its cookie (CSRF-checked when the method changes things).
pub async fn caller(state: &AppState, req: &HttpRequest) -> ApiResult<Option<Principal>> {
    if let Some(key) = bearer(req) {
        return auth::authenticate(&state.db, key).await.map(Some);
    }
    let Some(session) = cookie_session(state, req).await? else {
        return Ok(None);
    };
    if !req.method().is_safe() && !session.csrf_matches(csrf_header(req)) {
        return Err(ApiError::forbidden(
            "a request signed in by cookie must send the session's X-CSRF-Token header",
        ));
    }
    Ok(Some(session.principal))
}

async fn cookie_session(state: &AppState, req: &HttpRequest) -> ApiResult<Option<Session>> {
    match req.cookie(COOKIE) {
        Some(cookie) if !cookie.value().is_empty() => {
            sessions::resume(&state.db, cookie.value()).await.map(Some)
        }
        _ => Ok(None),
    }
}

fn csrf_header(req: &HttpRequest) -> &str {
    req.headers()
        .get(CSRF_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}

/// An HttpOnly cookie, `Secure` when the request came over HTTPS (directly or, per
/// `X-Forwarded-Proto`, through the operator's proxy); a zero `max_age` clears it.
fn http_only(
    req: &HttpRequest,
    (name, path, same_site): (&'static str, &'static str, SameSite),
    value: String,
    max_age: chrono::Duration,
) -> Cookie<'static> {
    Cookie::build(name, value)
        .path(path)
        .http_only(true)
        .same_site(same_site)
        .secure(req.connection_info().scheme() == "https")
        .max_age(time::Duration::seconds(max_age.num_seconds()))
        .finish()
}

/// The session cookie, for the whole site and never sent by another site's page.
const SESSION: (&str, &str, SameSite) = (COOKIE, "/", SameSite::Strict);

fn described(session: &Session) -> serde_json::Value {
    json!({
        "csrfToken": session.csrf_token,
        "expiresAt": session.expires_at,
        "role": session.principal.role.as_str(),
        "tenantId": session.principal.tenant_id,
        "secondFactorSetupRequired": session.principal.second_factor_setup_required,
    })
}

/// `POST /v1/session`: opens a session with a key or an email and a password, and sets
/// its cookie.
pub async fn sign_in(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Json<SignIn>,
) -> Result<HttpResponse, RestError> {
    let opened = match (&body.api_key, &body.email, &body.password) {
        (Some(key), None, None) => sessions::sign_in(&state.db, key).await?,
        (None, Some(email), Some(password)) => {
            let code = body.code.as_deref();
            sessions::sign_in_with_password(&state.db, email, password, code).await?
        }
        _ => {
            return Err(ApiError::invalid(
                "apiKey",
                "send either `apiKey`, or `email` and `password`",
            )
            .into());
        }
    };
    Ok(opened_response(&req, opened))
}

/// `POST /v1/session/invitation`: sets an invited user's password and signs it in.
pub async fn accept_invitation(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Json<Acceptance>,
) -> Result<HttpResponse, RestError> {
    let opened = sessions::accept_invitation(&state.db, &body.token, &body.password).await?;
    Ok(opened_response(&req, opened))
}

fn opened_response(req: &HttpRequest, opened: sessions::Opened) -> HttpResponse {
    HttpResponse::Ok()
        .cookie(http_only(
            req,
            SESSION,
            opened.secret,
            sessions::ABSOLUTE_LIFETIME,
        ))
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .json(described(&opened.session))
}

/// `GET /v1/session`: the cookie's session (who it acts as, its CSRF token, when it ends).
pub async fn current(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, RestError> {
    match cookie_session(&state, &req).await? {
        Some(session) => Ok(HttpResponse::Ok()
            .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
            .json(described(&session))),
        None => Err(ApiError::Unauthenticated {
            message: "not signed in".to_owned(),
        }
        .into()),
    }
}

/// `DELETE /v1/session` (with the CSRF token): ends the session and clears the cookie.
/// An operator who signed in through single sign-on gets `200 {"logoutUrl": …}`: the
/// identity provider's sign-out, which sends the browser back to the console; anyone
/// else `204`.
pub async fn sign_out(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, RestError> {
    let mut logout = None;
    if let Some(session) = cookie_session(&state, &req).await? {
        if !session.csrf_matches(csrf_header(&req)) {
            return Err(
                ApiError::forbidden("signing out needs the session's X-CSRF-Token header").into(),
            );
        }
        sessions::sign_out(&state.db, &session).await?;
        logout = provider_logout(&state, &session).await;
    }
    let cleared = http_only(&req, SESSION, String::new(), chrono::Duration::zero());
    Ok(match logout {
        Some(url) => HttpResponse::Ok()
            .cookie(cleared)
            .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
            .json(json!({"logoutUrl": url})),
        None => HttpResponse::NoContent().cookie(cleared).finish(),
    })
}

/// The identity provider's sign-out for a session opened through single sign-on. The
/// session has ended here whatever this answers: a provider that cannot be reached
/// only loses its own sign-out (logged).
async fn provider_logout(state: &AppState, session: &Session) -> Option<String> {
    let provider = state.oidc.as_ref()?;
    let identity = auth::oidc::store::identity_by_key(&state.db, session.principal.key_id)
        .await
        .ok()??;
    match provider.logout_url().await {
        Ok(url) => url,
        Err(err) => {
            tracing::warn!(identity = %identity.id, message = %err.message(), "The identity provider's sign-out is unavailable.");
            None
        }
    }
}

/// `POST /v1/session/password-reset`: mails a password-reset link to the address, if it
/// has an active user (`202` either way, so the answer tells no one who has an account);
/// `503` without a mail server.
pub async fn request_password_reset(
    state: web::Data<AppState>,
    body: web::Json<ResetRequest>,
) -> Result<HttpResponse, RestError> {
    let mailer = state
        .mailer
        .as_deref()
        .ok_or_else(|| ApiError::Unavailable {
            message:
                "this deployment sends no mail: ask an admin of your organisation for a reset link"
                    .into(),
        })?;
    auth::users::request_password_reset(&state.db, mailer, &body.email).await?;
    Ok(HttpResponse::Accepted().json(json!({
        "status": "if the address has an account, a link to set a new password is on its way",
    })))
}

/// `GET /v1/session/methods`: which ways of signing in this deployment offers.
pub async fn methods(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "apiKey": true,
        "password": true,
        "passwordReset": state.mailer.is_some(),
        "oidc": state.oidc.is_some(),
    }))
}

/// The cookie that binds a single sign-on in flight to the browser that started it. `Lax`:
/// the provider sends the browser back with a top-level GET from its own site.
const OIDC_COOKIE: &str = "neocloud_oidc";

const OIDC: (&str, &str, SameSite) = (OIDC_COOKIE, "/v1/session/oidc", SameSite::Lax);

fn see_other(location: &str) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::SeeOther();
    response.insert_header((actix_web::http::header::LOCATION, location.to_owned()));
    response
}

/// `GET /v1/session/oidc`: sends the browser to the identity provider.
pub async fn oidc_start(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, RestError> {
    let provider = state
        .oidc
        .as_ref()
        .ok_or_else(|| ApiError::not_found("single sign-on"))?;
    let started = crate::auth::oidc::start(&state.db, provider).await?;
    let lifetime = crate::auth::oidc::LOGIN_LIFETIME;
    Ok(see_other(&started.redirect)
        .cookie(http_only(&req, OIDC, started.state, lifetime))
        .finish())
}

#[derive(Deserialize)]
pub struct Callback {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// `GET /v1/session/oidc/callback`: the provider's answer. Signed in, the browser goes
/// to the console; refused, to the console's sign-in page with the reason.
pub async fn oidc_callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<Callback>,
) -> HttpResponse {
    let clear = http_only(&req, OIDC, String::new(), chrono::Duration::zero());
    match finish_oidc(&state, &req, &query).await {
        Ok(opened) => see_other("/console")
            .cookie(http_only(
                &req,
                SESSION,
                opened.secret,
                sessions::ABSOLUTE_LIFETIME,
            ))
            .cookie(clear)
            .finish(),
        Err(err) => see_other(&signin_page_with(&err.message()))
            .cookie(clear)
            .finish(),
    }
}

#[derive(Deserialize)]
pub struct BackChannelLogout {
    logout_token: Option<String>,
}

/// `POST /v1/session/oidc/backchannel-logout`: the identity provider's back-channel
/// logout (form-encoded `logout_token`) ends the console sessions the token names
/// (`oidc::back_channel_logout`). `200` once done, also when none was open;
/// `400 {"error": "invalid_request"}` for a token that does not hold; `404` without
/// single sign-on. Never cached.
pub async fn oidc_back_channel_logout(
    state: web::Data<AppState>,
    form: web::Form<BackChannelLogout>,
) -> HttpResponse {
    let Some(provider) = state.oidc.as_ref() else {
        return ApiError::not_found("single sign-on").to_response();
    };
    let token = form.logout_token.as_deref().unwrap_or_default();
    let mut response =
        match crate::auth::oidc::back_channel_logout(&state.db, provider, token).await {
            Ok(_) => HttpResponse::Ok().finish(),
            Err(err @ ApiError::Unauthenticated { .. }) => HttpResponse::BadRequest().json(
                serde_json::json!({"error": "invalid_request", "error_description": err.message()}),
            ),
            Err(err) => err.to_response(),
        };
    response.headers_mut().insert(
        actix_web::http::header::CACHE_CONTROL,
        actix_web::http::header::HeaderValue::from_static("no-store"),
    );
    response
}

/// `/console/signin?error=…`, the reason encoded.
fn signin_page_with(reason: &str) -> String {
    let mut url = reqwest::Url::parse("http://console.invalid/console/signin")
        .unwrap_or_else(|_| unreachable!("a constant URL"));
    url.query_pairs_mut().append_pair("error", reason);
    format!("{}?{}", url.path(), url.query().unwrap_or_default())
}

async fn finish_oidc(
    state: &AppState,
    req: &HttpRequest,
    query: &Callback,
) -> ApiResult<sessions::Opened> {
    let provider = state
        .oidc
        .as_ref()
        .ok_or_else(|| ApiError::not_found("single sign-on"))?;
    if let Some(error) = &query.error {
        return Err(ApiError::Unauthenticated {
            message: format!("the identity provider refused: {error}"),
        });
    }
    let (Some(returned), Some(code)) = (&query.state, &query.code) else {
        return Err(ApiError::invalid("code", "the provider sent no code"));
    };
    let bound = req.cookie(OIDC_COOKIE);
    let same_browser = bound.is_some_and(|cookie| {
        bool::from(subtle::ConstantTimeEq::ct_eq(
            cookie.value().as_bytes(),
            returned.as_bytes(),
        ))
    });
    if !same_browser {
        return Err(ApiError::Unauthenticated {
            message: "this sign-in was started in another browser: start again".to_owned(),
        });
    }
    sessions::sign_in_with_oidc(&state.db, provider, returned, code).await
}
