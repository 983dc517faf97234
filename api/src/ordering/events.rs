//! What ordering tells the event log, in the transaction of the change:
//! `allocation.placed` (with everything a provisioner needs: node, GPUs, MIG slot or
//! fraction, labels, the SSH keys the order hands over), `allocation.ready`,
//! `allocation.preempting` and `allocation.ended`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use neocloud_metering::events::{self, NewEvent};
use neocloud_schema::entity::{allocation, gpu, node, sku};
use neocloud_schema::ids::OrderId;
use neocloud_schema::vocabulary::AllocationStatus;
use sea_orm::{ConnectionTrait, DbErr};
use serde_json::{Value, json};
use uuid::Uuid;

use super::store;

/// Nodes and GPUs of some allocations, read in two queries.
struct Where {
    nodes: HashMap<Uuid, node::Model>,
    gpus: Vec<(Uuid, gpu::Model)>,
}

impl Where {
    async fn of<C: ConnectionTrait>(conn: &C, rows: &[allocation::Model]) -> Result<Where, DbErr> {
        let ids: Vec<Uuid> = rows.iter().map(|a| a.id.into()).collect();
        let node_ids: Vec<Uuid> = rows.iter().map(|a| a.node_id.into()).collect();
        let nodes = store::nodes_by_id(conn, &node_ids)
            .await?
            .into_iter()
            .map(|n| (n.id.into(), n))
            .collect();
        let gpus = store::gpus_of(conn, &ids).await?;
        Ok(Where { nodes, gpus })
    }

    fn hostname(&self, row: &allocation::Model) -> String {
        self.nodes
            .get(&row.node_id.into())
            .map(|n| n.hostname.clone())
            .unwrap_or_default()
    }

    fn gpus(&self, row: &allocation::Model) -> Value {
        let id: Uuid = row.id.into();
        let gpus: Vec<Value> = self
            .gpus
            .iter()
            .filter(|(a, _)| *a == id)
            .map(|(_, g)| json!({"uuid": g.uuid, "index": g.index}))
            .collect();
        json!(gpus)
    }
}

/// `allocation.placed` for each of `rows`, just written.
pub(crate) async fn placed<C: ConnectionTrait>(
    conn: &C,
    rows: &[allocation::Model],
    ssh_keys: &HashMap<OrderId, Value>,
    skus: &HashMap<Uuid, sku::Model>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if rows.is_empty() {
        return Ok(());
    }
    let at = Where::of(conn, rows).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let sku = skus.get(&row.sku_id.into());
        let data = json!({
            "allocation_id": row.id,
            "order_id": row.order_id,
            "tenant_id": row.tenant_id,
            "sku": sku.map(|s| s.name.clone()).unwrap_or_default(),
            "form": sku.map(|s| s.form.as_str()).unwrap_or_default(),
            "class": row.class.as_str(),
            "region": sku.map(|s| s.region.clone()).unwrap_or_default(),
            "hostname": at.hostname(row),
            "node_id": row.node_id,
            "gpus": at.gpus(row),
            "mig_profile": row.mig_profile,
            "mig_start_slot": row.mig_start_slot,
            "milli_gpu": row.milli_gpu,
            "labels": row.labels,
            "ssh_keys": ssh_keys.get(&row.order_id).cloned().unwrap_or_else(|| json!([])),
            "started_at": row.started_at,
        });
        out.push(NewEvent::tenant(
            "allocation.placed",
            row.tenant_id,
            row.started_at,
            data,
        ));
    }
    events::record_all(conn, out, now).await
}

/// `allocation.preempting` for allocations just given their notice.
pub(crate) async fn preempting<C: ConnectionTrait>(
    conn: &C,
    ids: &[Uuid],
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let mut out = Vec::with_capacity(ids.len());
    for row in store::allocations_by_id(conn, ids).await? {
        let Some(preempt_at) = row.preempt_at else {
            continue;
        };
        let data = json!({
            "allocation_id": row.id,
            "order_id": row.order_id,
            "preempt_at": preempt_at,
            "reason": reason,
        });
        out.push(NewEvent::tenant(
            "allocation.preempting",
            row.tenant_id,
            now,
            data,
        ));
    }
    events::record_all(conn, out, now).await
}

/// `allocation.ready`: the provisioner handed the allocation over at `endpoints`.
pub(crate) async fn ready<C: ConnectionTrait>(
    conn: &C,
    row: &allocation::Model,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let at = Where::of(conn, std::slice::from_ref(row)).await?;
    let data = json!({
        "allocation_id": row.id,
        "order_id": row.order_id,
        "hostname": at.hostname(row),
        "endpoints": row.access_endpoints.clone().unwrap_or_else(|| json!([])),
    });
    let event = NewEvent::tenant("allocation.ready", row.tenant_id, now, data);
    events::record(conn, event, now).await.map(|_| ())
}

/// `allocation.ended` for an allocation that was `before` and has just ended; `failure`
/// is why its provisioning failed, if that ended it.
pub(crate) async fn ended<C: ConnectionTrait>(
    conn: &C,
    before: &allocation::Model,
    ended: &allocation::Model,
    failure: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    let at = Where::of(conn, std::slice::from_ref(ended)).await?;
    let noticed = before.status == AllocationStatus::Preempting
        && before.preempt_at.is_some_and(|t| t <= now);
    let reason = match (failure, noticed) {
        (Some(_), _) => "provisioning_failed",
        (None, true) => "preempted",
        (None, false) => "released",
    };
    let data = json!({
        "allocation_id": ended.id,
        "order_id": ended.order_id,
        "tenant_id": ended.tenant_id,
        "hostname": at.hostname(ended),
        "gpus": at.gpus(ended),
        "ended_at": ended.ended_at.unwrap_or(now),
        "reason": reason,
        "failure": failure,
    });
    let event = NewEvent::tenant(
        "allocation.ended",
        ended.tenant_id,
        ended.ended_at.unwrap_or(now),
        data,
    );
    events::record(conn, event, now).await.map(|_| ())
}
