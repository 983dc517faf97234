//! `GET /v1/provider-statements/{id}/export?format=csv|pdf`: a provider statement as a
//! file, for the provider it belongs to (or an operator); another provider's is `404`.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use uuid::Uuid;

use super::AppState;
use super::extract::AnyKey;
use crate::error::ApiError;

#[derive(Deserialize)]
pub struct ExportQuery {
    format: Option<String>,
}

pub async fn export(
    state: web::Data<AppState>,
    AnyKey(principal): AnyKey,
    path: web::Path<String>,
    query: web::Query<ExportQuery>,
) -> HttpResponse {
    let result = async {
        let id = Uuid::parse_str(&path).map_err(|_| ApiError::not_found("provider statement"))?;
        let format = query.format.as_deref().unwrap_or("csv");
        let operator = &state.billing.operator_name;
        crate::providers::statements::export(&state.db, &principal, id, format, operator).await
    }
    .await;
    match result {
        Ok((content_type, name, body)) => super::attachment(content_type, &name, body),
        Err(err) => err.to_response(),
    }
}
