//! `POST /v1/ingest` (contract): an agent's batch, authenticated by its node's token. The
//! body may be gzip or zstd (decoded by the server, bounded by the ingest body limit after
//! decoding). Answers `200 accepted|duplicate`, `400` naming the field, `401/403`, `413`.

use actix_web::{HttpResponse, web};
use neocloud_metering::MeteringError;
use neocloud_metering::ingest::{self, Outcome};
use serde_json::json;

use super::AppState;
use super::extract::AgentNode;
use crate::error::{Code, rest_error};

pub async fn ingest(
    state: web::Data<AppState>,
    AgentNode(node_id): AgentNode,
    body: web::Bytes,
) -> HttpResponse {
    let result = async {
        let batch = ingest::parse(&body)?;
        state.ingest.submit(node_id.into(), batch).await
    }
    .await;
    match result {
        Ok(Outcome::Accepted { seq }) => {
            HttpResponse::Ok().json(json!({"status": "accepted", "seq": seq}))
        }
        Ok(Outcome::Duplicate { seq }) => {
            HttpResponse::Ok().json(json!({"status": "duplicate", "seq": seq}))
        }
        Err(MeteringError::Invalid(invalid)) => HttpResponse::BadRequest().json(json!({
            "error": {
                "code": Code::InvalidInput.as_str(),
                "message": invalid.to_string(),
                "field": invalid.field,
            }
        })),
        Err(MeteringError::Forbidden { message }) => rest_error(Code::Forbidden, &message),
        Err(MeteringError::Database(err)) => {
            tracing::error!(error = %err, "Ingest failed; the batch was not recorded.");
            rest_error(Code::Unavailable, "the batch was not recorded; retry")
        }
    }
}
