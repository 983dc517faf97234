//! Endpoints for host agents, authenticated with the node's agent token:
//! `GET /v1/agents/inventory` (the node's registered devices) and
//! `GET /v1/agents/assignments` (which device serves which allocation, preemption notices).

use actix_web::{HttpRequest, HttpResponse, web};
use neocloud_schema::agent_api::{Assignment, Assignments, Inventory, InventoryGpu};
use neocloud_schema::ids::NodeId;
use neocloud_schema::vocabulary::Role;

use super::AppState;
use super::bearer;
use crate::auth::{self, Principal};
use crate::error::{ApiError, ApiResult};
use crate::fleet;

/// The agent token's node, or 401/403.
pub async fn agent_node(state: &AppState, req: &HttpRequest) -> ApiResult<(Principal, NodeId)> {
    let key = bearer(req).ok_or_else(|| ApiError::Unauthenticated {
        message: "send `Authorization: Bearer <agent token>`".into(),
    })?;
    let principal = auth::authenticate_agent(&state.db, key).await?;
    if !state.rate_limiter.allow(principal.key_id) {
        return Err(ApiError::RateLimited);
    }
    match (principal.role, principal.node_id) {
        (Role::Agent, Some(node)) => Ok((principal, node)),
        _ => Err(ApiError::forbidden(
            "this endpoint needs a node's agent token",
        )),
    }
}

pub async fn inventory(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let result = async {
        let (_, node_id) = agent_node(&state, &req).await?;
        let node = fleet::store::find(&state.db, node_id)
            .await?
            .ok_or_else(|| ApiError::not_found("node"))?;
        let gpus = fleet::store::gpus_of(&state.db, &[node.id]).await?;
        Ok::<_, ApiError>(Inventory {
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
                    index: g.index.max(0) as u32,
                    model: g.model,
                    memory_mib: g.memory_mib.max(0) as u64,
                    mig_enabled: g.mig_enabled,
                    health: g.health.as_str().to_owned(),
                })
                .collect(),
        })
    }
    .await;
    match result {
        Ok(inventory) => HttpResponse::Ok().json(inventory),
        Err(err) => err.to_response(),
    }
}

pub async fn assignments(state: web::Data<AppState>, req: HttpRequest) -> HttpResponse {
    let result = async {
        let (_, node_id) = agent_node(&state, &req).await?;
        let node = fleet::store::find(&state.db, node_id)
            .await?
            .ok_or_else(|| ApiError::not_found("node"))?;
        let live = crate::ordering::store::live_on_nodes(&state.db, &[node.id]).await?;
        let views = crate::ordering::view_allocations(&state.db, live).await?;
        let mut assignments = Vec::new();
        for view in views {
            let a = &view.allocation;
            for gpu in &view.gpus {
                assignments.push(Assignment {
                    allocation_id: a.id.into(),
                    gpu_uuid: gpu.uuid.clone(),
                    mig_profile: a.mig_profile.clone(),
                    mig_start_slot: a.mig_start_slot.map(|s| s.clamp(0, 7) as u8),
                    milli_gpu: a.milli_gpu.map(|m| m.max(0) as u32),
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
    match result {
        Ok(body) => HttpResponse::Ok().json(body),
        Err(err) => err.to_response(),
    }
}
