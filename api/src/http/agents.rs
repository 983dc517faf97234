//! Endpoints for host agents, authenticated with the node's agent token:
//! `GET /v1/agents/inventory` (the node's registered devices) and
//! `GET /v1/agents/assignments` (which device serves which allocation, preemption notices),
//! `POST /v1/agents/hardware` (what the agent sees, checked against the registration),
//! `GET /v1/agents/nats-credentials` (a fresh NATS credential for the node).

use actix_web::{HttpResponse, web};
use neocloud_schema::agent_api::{Assignment, Assignments, Inventory, InventoryGpu};
use neocloud_schema::vocabulary::NodeState;

use super::AppState;
use super::extract::{AgentNode, RestError};
use crate::error::ApiError;
use crate::fleet;

pub async fn inventory(
    state: web::Data<AppState>,
    AgentNode(node_id): AgentNode,
) -> Result<HttpResponse, RestError> {
    let result = async {
        let node = fleet::store::find(&state.db, node_id)
            .await?
            .ok_or_else(|| ApiError::not_found("node"))?;
        let gpus = fleet::store::gpus_of(&state.db, &[node.id.into()]).await?;
        Ok::<_, ApiError>(Inventory {
            node_id: Some(node.id),
            hostname: node.hostname,
            region: node.region,
            zone: node.zone,
            rack: node.rack,
            nvlink_domain: node.nvlink_domain,
            gpu_model: node.gpu_model,
            mig_enabled: node.mig_enabled,
            shared_gpus: node.shared_gpus,
            gpus: gpus
                .into_iter()
                .map(|g| InventoryGpu {
                    uuid: g.uuid,
                    index: u32::try_from(g.index).unwrap_or(0),
                    model: g.model,
                    memory_mib: u64::try_from(g.memory_mib).unwrap_or(0),
                    mig_enabled: g.mig_enabled,
                    health: g.health.as_str().to_owned(),
                })
                .collect(),
        })
    }
    .await;
    Ok(HttpResponse::Ok().json(result?))
}

pub async fn assignments(
    state: web::Data<AppState>,
    AgentNode(node_id): AgentNode,
) -> Result<HttpResponse, RestError> {
    let result = async {
        let node = fleet::store::find(&state.db, node_id)
            .await?
            .ok_or_else(|| ApiError::not_found("node"))?;
        let live = crate::ordering::store::live_on_nodes(&state.db, &[node.id.into()]).await?;
        let views = crate::ordering::view_allocations(&state.db, live).await?;
        let mut assignments = Vec::new();
        for view in views {
            let a = &view.allocation;
            for gpu in &view.gpus {
                assignments.push(Assignment {
                    allocation_id: a.id,
                    gpu_uuid: gpu.uuid.clone(),
                    mig_profile: a.mig_profile.clone(),
                    mig_start_slot: a
                        .mig_start_slot
                        .map(|s| u8::try_from(s.clamp(0, 7)).unwrap_or(0)),
                    milli_gpu: a.milli_gpu.map(|m| u32::try_from(m).unwrap_or(0)),
                    status: a.status.as_str().to_owned(),
                    started_at: a.started_at,
                    preempt_at: a.preempt_at,
                });
            }
        }
        Ok::<_, ApiError>(Assignments {
            hostname: node.hostname,
            assignments,
        })
    }
    .await;
    Ok(HttpResponse::Ok().json(result?))
}

/// `GET /v1/agents/nats-credentials`: a new credential (`.creds`) for the node's agent,
/// valid for `nats.credential_hours`; the agent renews it before it expires. A rotated or
/// retired node's old token is revoked, so it gets none (401), and its last credential
/// runs out. `NOT_FOUND` where the server mints no NATS credentials.
pub async fn nats_credentials(
    state: web::Data<AppState>,
    AgentNode(node_id): AgentNode,
) -> Result<HttpResponse, RestError> {
    let authority = state
        .nats_authority
        .as_ref()
        .ok_or_else(|| ApiError::not_found("NATS credentials (this server mints none)"))?;
    let node = fleet::store::find(&state.db, node_id)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(|| ApiError::not_found("node"))?;
    if node.state == NodeState::Retired {
        return Err(ApiError::forbidden("the node is retired").into());
    }
    let creds =
        crate::auth::nats_users::mint(&state.db, authority, &node, state.clock.now()).await?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(creds))
}

/// `POST /v1/agents/hardware`: what the agent sees, checked against the registration
/// (`fleet::verify`); the verdict.
pub async fn hardware(
    state: web::Data<AppState>,
    AgentNode(node_id): AgentNode,
    report: web::Json<neocloud_schema::agent_api::HardwareReport>,
) -> Result<HttpResponse, RestError> {
    let verdict = fleet::verify::report(&state.db, node_id, &report, state.clock.now()).await?;
    Ok(HttpResponse::Ok().json(verdict))
}
