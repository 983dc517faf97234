//! `GET /v1/tenant/export[?tenantId=…]`: everything held about a tenant as one `.tar.gz`
//! (`tenancy::export`), for its admins (their own tenant) and operators (the one named).

use actix_web::{HttpResponse, web};
use neocloud_schema::ids::TenantId;
use serde::Deserialize;
use uuid::Uuid;

use super::AppState;
use super::extract::User;
use crate::error::ApiError;
use crate::tenancy::export;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportQuery {
    tenant_id: Option<String>,
}

pub async fn tenant_export(
    state: web::Data<AppState>,
    User(principal): User,
    query: web::Query<ExportQuery>,
) -> HttpResponse {
    let result = async {
        let asked = match query.tenant_id.as_deref() {
            Some(id) => Some(TenantId(
                Uuid::parse_str(id).map_err(|_| ApiError::not_found("tenant"))?,
            )),
            None => None,
        };
        export::export(&state.db, &principal, asked, state.clock.now()).await
    }
    .await;
    match result {
        Ok((name, body)) => super::attachment("application/gzip", &name, body),
        Err(err) => err.to_response(),
    }
}
