//! `GET /v1/invoices/{id}/export?format=csv|json|pdf|focus`: an invoice as a file, for
//! the tenant it belongs to (or an operator). Another tenant's invoice is `404`, exactly
//! as a missing one.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use neocloud_schema::ids::InvoiceId;
use serde::Deserialize;
use uuid::Uuid;

use super::AppState;
use super::extract::User;
use crate::error::{ApiError, ApiResult};
use crate::invoicing::{self, export};
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
        let view = invoicing::get(&state.db, &principal, InvoiceId(id), state.clock.now()).await?;
        let tenant = tenancy::store::find(&state.db, view.invoice.tenant_id)
            .await?
            .map(|t| t.name)
            .unwrap_or_default();
        let body = export::render_export(&view, format, &state.billing.operator_name, &tenant);
        Ok::<_, ApiError>((format, export::file_name(&view, format), body))
    }
    .await;
    respond(result)
}

fn respond(result: ApiResult<(export::Format, String, Vec<u8>)>) -> HttpResponse {
    match result {
        Ok((format, name, body)) => HttpResponse::Ok()
            .content_type(format.content_type())
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ))
            .insert_header((header::CACHE_CONTROL, "private, no-store"))
            .body(body),
        Err(err) => err.to_response(),
    }
}
