//! Placing an order's units in the cached fleet, all or nothing, and the allocation rows
//! the placements become: one allocation per node, so each node's share can be released
//! on its own.

use chrono::Utc;
use neocloud_scheduler::{Fleet, GpuShare, NoFit, Placement, Request};
use neocloud_schema::entity::{allocation, order, sku};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::AllocationId;
use neocloud_schema::vocabulary::{AccessState, AllocationStatus};
use uuid::Uuid;

use super::fleet_cache::{RegionFleet, allocation_key, exclusive_name, keep_until_notice_ends};
use super::views::AllocationView;
use crate::error::{ApiError, ApiResult};

/// One placement per node, so each node's share is its own allocation (and can be
/// released on its own). Victims stay with the first part.
pub(super) fn split_per_node(placement: &Placement) -> Vec<Placement> {
    placement
        .nodes
        .iter()
        .map(|np| Placement {
            tenant: placement.tenant,
            class: placement.class,
            exclusive: placement.exclusive,
            nodes: vec![np.clone()],
            victims: placement.victims.clone(),
            degraded: placement.degraded,
        })
        .collect()
}

/// The allocation row one node's part of a placement becomes, with the GPUs it holds.
pub(super) fn plan_part(
    region: &RegionFleet,
    id: Uuid,
    part: &Placement,
    order: &order::Model,
    sku: &sku::Model,
    starts_at: chrono::DateTime<Utc>,
) -> ApiResult<(AllocationView, Vec<Uuid>)> {
    let np = part
        .nodes
        .first()
        .ok_or_else(|| ApiError::invariant("an empty placement"))?;
    let node = region
        .node(np.node)
        .cloned()
        .ok_or_else(|| ApiError::invariant("placement on an unknown node"))?;
    let (gpus, share) = granted_gpus(region, np)?;
    let row = allocation::Model {
        id: id.into(),
        order_id: order.id,
        tenant_id: order.tenant_id,
        sku_id: sku.id,
        node_id: node.id,
        class: order.class,
        status: AllocationStatus::Active,
        mig_profile: share.mig_profile,
        mig_start_slot: share.mig_start,
        milli_gpu: share.milli,
        labels: order.labels.clone(),
        started_at: starts_at,
        preempt_at: None,
        ended_at: None,
        cpu_milli: i64::from(np.cpu_milli),
        // Within the node's memory, itself bounded at registration.
        memory_mib: i64::try_from(np.memory_mib).unwrap_or(i64::MAX),
        exclusive: exclusive_name(part.exclusive),
        whole_node: np.whole_node,
        access_state: AccessState::Pending,
        access_endpoints: None,
        access_reason: None,
        access_changed_at: None,
    };
    let gpu_ids: Vec<Uuid> = gpus.iter().map(|g| Uuid::from(g.id)).collect();
    Ok((
        AllocationView {
            allocation: row,
            sku: sku.clone(),
            node,
            gpus,
        },
        gpu_ids,
    ))
}

/// What of its GPUs an allocation holds, when it is not whole GPUs.
#[derive(Default)]
struct Share {
    mig_profile: Option<String>,
    mig_start: Option<i32>,
    milli: Option<i32>,
}

/// The GPU rows a node's part of a placement holds, and the MIG slice or fraction of them.
fn granted_gpus(
    region: &RegionFleet,
    np: &neocloud_scheduler::NodePlacement,
) -> ApiResult<(Vec<neocloud_schema::entity::gpu::Model>, Share)> {
    let mut gpus = Vec::new();
    let mut share = Share::default();
    for grant in &np.gpus {
        let gpu = region
            .gpu(neocloud_scheduler::GpuRef {
                node: np.node,
                gpu: grant.gpu,
            })
            .cloned()
            .ok_or_else(|| ApiError::invariant("placement on an unknown GPU"))?;
        match grant.share {
            GpuShare::Mig { profile, start } => {
                let model: Option<GpuModel> = gpu.model.parse().ok();
                share.mig_profile = model.map(|m| profile.name(m));
                share.mig_start = Some(i32::from(start));
            }
            GpuShare::Fraction { milli, .. } => {
                // A fraction is under 1000 milli-GPUs.
                share.milli = Some(i32::try_from(milli).unwrap_or(i32::MAX));
            }
            GpuShare::Whole => {}
        }
        gpus.push(gpu);
    }
    Ok((gpus, share))
}

/// Why an order's units could not all be placed.
pub(super) enum Refusal {
    NoCapacity,
    Invalid(String),
}

/// An order's units placed and committed in a fleet: one allocation per node, with the
/// spot allocations they preempt.
pub(super) struct Planned {
    pub parts: Vec<(Uuid, Placement)>,
    pub victims: Vec<Uuid>,
}

/// Places and commits `requests` (an order's units) on `fleet` in turn, all or nothing:
/// a refused order leaves the fleet as it found it. This is how an order is placed, and
/// how an alternative is tried before it is offered. The outer error is a state that
/// cannot be undone in memory.
pub(super) fn place_units(
    fleet: &mut Fleet,
    requests: Vec<Request>,
) -> ApiResult<Result<Planned, Refusal>> {
    // An order that may commit more than one part keeps a copy to go back to (a single
    // part commits all or nothing by itself).
    let mut before: Option<Fleet> = (requests.len() > 1).then(|| fleet.clone());
    let mut planned = Planned {
        parts: Vec::new(),
        victims: Vec::new(),
    };
    let refusal = 'units: {
        for request in &requests {
            let placement = match fleet.place(request) {
                Ok(placement) => placement,
                Err(NoFit::Invalid(err)) => break 'units Refusal::Invalid(err.to_string()),
                Err(NoFit::NoCapacity) => break 'units Refusal::NoCapacity,
            };
            if before.is_none() && placement.nodes.len() > 1 {
                before = Some(fleet.clone());
            }
            let mut preempted = Vec::new();
            for (i, mut part) in split_per_node(&placement).into_iter().enumerate() {
                let id = AllocationId::new().as_uuid();
                if i > 0 {
                    part.victims.clear();
                }
                match fleet.commit(allocation_key(id), &part) {
                    Ok(victims) => {
                        let keys = victims.iter().map(|a| Uuid::from_u128(a.key.0));
                        planned.victims.extend(keys);
                        planned.parts.push((id, part));
                        preempted.extend(victims);
                    }
                    Err(err) => {
                        tracing::error!(error = %err, "A fresh placement did not commit.");
                        break 'units Refusal::NoCapacity;
                    }
                }
            }
            // Once every part has what it needs, the displaced keep the rest until their
            // notice ends.
            for victim in &preempted {
                keep_until_notice_ends(fleet, victim.key, &victim.placement);
            }
        }
        return Ok(Ok(planned));
    };
    match before {
        Some(before) => *fleet = before,
        None if planned.parts.is_empty() => {}
        None => {
            return Err(ApiError::invariant(
                "a refused order left placements behind",
            ));
        }
    }
    Ok(Err(refusal))
}
