//! The portal (`/portal`), the operator console (`/console`) and the provider console
//! (`/provider`, for the providers whose nodes the operator resells): single-page apps built
//! from `api/web/` with npm and Vite into `api/web/dist/`, which is committed and embedded
//! in the binary, so a deployment needs neither Node.js nor the internet. Every path under
//! an app answers its page (the app routes in the browser); `/ui/assets/` serves the
//! bundle's files, whose names carry a content hash and may be cached for good.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use include_dir::{Dir, include_dir};

use super::state::AppState;

static BUNDLE: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/web/dist");

/// Scripts, styles and data only from this origin; never framed.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Where Stripe.js frames its 3-D Secure challenges.
const STRIPE_HOOKS: &str = "https://hooks.stripe.com";
/// The API Stripe.js calls unless another base is configured.
const STRIPE_API: &str = "https://api.stripe.com";

/// The portal's policy: the console's, and where cards are collected also Stripe.js — the
/// script, its frames and the API it calls (`stripe_js` and `stripe_api` are URLs).
pub fn portal_policy(stripe_js: Option<&str>, stripe_api: Option<&str>) -> String {
    let origin = |url: &str| {
        reqwest::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default()
    };
    let Some(js) = stripe_js.map(origin).filter(|o| o.starts_with("http")) else {
        return CONTENT_SECURITY_POLICY.to_owned();
    };
    let api = origin(stripe_api.unwrap_or(STRIPE_API));
    CONTENT_SECURITY_POLICY
        .replace("script-src 'self'", &format!("script-src 'self' {js}"))
        .replace(
            "connect-src 'self'",
            &format!("connect-src 'self' {js} {api}; frame-src {js} {STRIPE_HOOKS}"),
        )
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn serve(path: &str, cache: &str, policy: &str) -> HttpResponse {
    match BUNDLE.get_file(path) {
        Some(file) => HttpResponse::Ok()
            .content_type(content_type(path))
            .insert_header((header::CACHE_CONTROL, cache))
            .insert_header((header::CONTENT_SECURITY_POLICY, policy))
            .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
            .insert_header((header::X_FRAME_OPTIONS, "DENY"))
            .insert_header((header::REFERRER_POLICY, "no-referrer"))
            .body(file.contents()),
        None => crate::error::ApiError::not_found("file").to_response(),
    }
}

/// `GET /portal[/…]`.
pub async fn portal(state: web::Data<AppState>) -> HttpResponse {
    serve("portal.html", "no-cache", &state.portal_policy)
}

/// `GET /console[/…]`.
pub async fn console() -> HttpResponse {
    serve("console.html", "no-cache", CONTENT_SECURITY_POLICY)
}

/// `GET /provider[/…]`.
pub async fn provider() -> HttpResponse {
    serve("provider.html", "no-cache", CONTENT_SECURITY_POLICY)
}

/// `GET /`: the portal.
pub async fn root() -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, "/portal"))
        .finish()
}

/// `GET /ui/assets/{file}`: one file of the bundle.
pub async fn asset(file: web::Path<String>) -> HttpResponse {
    if file.contains('/') || file.starts_with('.') {
        return crate::error::ApiError::not_found("file").to_response();
    }
    serve(
        &format!("assets/{file}"),
        "public, max-age=31536000, immutable",
        CONTENT_SECURITY_POLICY,
    )
}

/// The apps' routes.
pub fn routes(routes: &mut web::ServiceConfig) {
    routes
        .route("/", web::get().to(root))
        .route("/portal", web::get().to(portal))
        .route("/portal/{tail:.*}", web::get().to(portal))
        .route("/console", web::get().to(console))
        .route("/console/{tail:.*}", web::get().to(console))
        .route("/provider", web::get().to(provider))
        .route("/provider/{tail:.*}", web::get().to(provider))
        .route("/ui/assets/{file}", web::get().to(asset));
}
