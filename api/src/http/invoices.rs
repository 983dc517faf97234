//! `GET /v1/invoices/{id}/export?format=csv|json|pdf|focus|ubl|cii|facturx` and
//! `GET /v1/credit-notes/{id}/export?format=…`: an invoice or a credit note as a file, for
//! the tenant it belongs to (or an operator). Another tenant's is `404`, exactly as a
//! missing one.

use actix_web::{HttpResponse, web};
use neocloud_schema::ids::InvoiceId;
use serde::Deserialize;
use uuid::Uuid;

use super::AppState;
use super::extract::User;
use crate::error::{ApiError, ApiResult};
use crate::invoicing::{self, credit_note_export, credit_notes, export};
use crate::tenancy;

#[derive(Deserialize)]
pub struct ExportQuery {
    format: Option<String>,
}

pub async fn export(
    state: web::Data<AppState>,
    User(principal): User,
    path: web::Path<String>,
    query: web::Query<ExportQuery>,
) -> HttpResponse {
    let result = async {
        let format = export::Format::parse(query.format.as_deref().unwrap_or("json"))?;
        let id = Uuid::parse_str(&path).map_err(|_| ApiError::not_found("invoice"))?;
        let now = state.clock.now();
        let seller = &state.billing.policy.seller;
        let view = invoicing::get(&state.db, &principal, InvoiceId(id), now, seller).await?;
        let tenant = tenancy::store::find(&state.db, view.invoice.tenant_id)
            .await?
            .map(|t| t.name)
            .unwrap_or_default();
        let body = export::render_export(&view, format, &state.billing.operator_name, &tenant)?;
        Ok::<_, ApiError>((format, export::file_name(&view, format), body))
    }
    .await;
    respond(result)
}

pub async fn credit_note(
    state: web::Data<AppState>,
    User(principal): User,
    path: web::Path<String>,
    query: web::Query<ExportQuery>,
) -> HttpResponse {
    let result = async {
        let format = export::Format::parse(query.format.as_deref().unwrap_or("json"))?;
        let id = Uuid::parse_str(&path).map_err(|_| ApiError::not_found("credit note"))?;
        let view = credit_notes::get(&state.db, &principal, id).await?;
        let tenant = tenancy::store::find(&state.db, view.note.tenant_id)
            .await?
            .map(|t| t.name)
            .unwrap_or_default();
        let operator = &state.billing.operator_name;
        let body = credit_note_export::render_export(&view, format, operator, &tenant)?;
        Ok::<_, ApiError>((format, credit_note_export::file_name(&view, format), body))
    }
    .await;
    respond(result)
}

fn respond(result: ApiResult<(export::Format, String, Vec<u8>)>) -> HttpResponse {
    match result {
        Ok((format, name, body)) => super::attachment(format.content_type(), &name, body),
        Err(err) => err.to_response(),
    }
}
