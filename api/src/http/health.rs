//! `/healthz` (the process answers) and `/readyz` (and its database does).

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::AppState;
use crate::error::{Code, rest_error};

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    match crate::db::ping(&state.db).await {
        Ok(()) => HttpResponse::Ok().json(json!({"status": "ready"})),
        Err(err) => {
            tracing::warn!(error = %err, "Readiness check failed: database unreachable.");
            rest_error(Code::Unavailable, "database unreachable")
        }
    }
}
