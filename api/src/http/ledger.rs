//! `GET /v1/ledger/journal.csv[?tenantId=…]`: the ledger's journal for the operator's
//! accounting (`crate::ledger`).

use actix_web::{HttpResponse, web};
use neocloud_schema::ids::TenantId;
use serde::Deserialize;
use uuid::Uuid;

use super::AppState;
use super::extract::User;
use crate::error::ApiError;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalQuery {
    tenant_id: Option<String>,
}

pub async fn journal(
    state: web::Data<AppState>,
    User(principal): User,
    query: web::Query<JournalQuery>,
) -> HttpResponse {
    let result = async {
        let tenant = match query.tenant_id.as_deref() {
            Some(id) => Some(TenantId(
                Uuid::parse_str(id).map_err(|_| ApiError::invalid("tenantId", "not an id"))?,
            )),
            None => None,
        };
        crate::ledger::journal_csv(&state.db, &principal, tenant, state.clock.now()).await
    }
    .await;
    match result {
        Ok((name, body)) => super::attachment("text/csv; charset=utf-8", &name, body.into_bytes()),
        Err(err) => err.to_response(),
    }
}
