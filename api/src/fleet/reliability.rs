//! Node reliability as the product shows and uses it: refreshed by a background job
//! (`neocloud_metering::reliability`), read per node by operators and providers, per
//! offer (GPU model and region) by tenants in the catalog, and by the scheduler as the
//! tie-breaker of on-demand placements (through the fleet cache).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_metering::reliability::{self, Gap, Window};
use neocloud_schema::entity::{node, node_coverage_hour, node_reliability};
use neocloud_schema::ids::{NodeId, ProviderId};
use neocloud_schema::vocabulary::NodeState;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    QuerySelect,
};

use crate::error::ApiResult;
use neocloud_schema::clock::SharedClock;

/// How often every node's reliability is recomputed.
pub const REFRESH: Duration = Duration::from_secs(300);
/// The most coverage gaps listed for one node.
pub const GAPS_LISTED: usize = 100;

/// Recomputes every node's reliability as of `now`; how many scores changed.
pub async fn refresh(db: &DatabaseConnection, now: DateTime<Utc>) -> ApiResult<usize> {
    let txn = crate::db::begin_write(db).await?;
    let changed = reliability::store::refresh(&txn, now).await?;
    txn.commit().await?;
    Ok(changed)
}

/// Refreshes reliability every [`REFRESH`]. Replicas may all run it: a pass recomputes
/// the same rows.
pub fn spawn_refresh(db: DatabaseConnection, clock: SharedClock) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REFRESH);
        loop {
            tick.tick().await;
            if let Err(err) = refresh(&db, clock.now()).await {
                tracing::warn!(code = err.code().as_str(), message = %err.message(), "Refreshing node reliability failed.");
            }
        }
    });
}

/// The nodes' last computed reliability.
pub async fn of_nodes<C: ConnectionTrait>(
    conn: &C,
    nodes: impl IntoIterator<Item = NodeId>,
) -> Result<HashMap<NodeId, node_reliability::Model>, DbErr> {
    Ok(node_reliability::Entity::find()
        .filter(node_reliability::Column::NodeId.is_in(nodes))
        .all(conn)
        .await?
        .into_iter()
        .map(|r| (r.node_id, r))
        .collect())
}

/// The hours of a node's window its agents did not fully cover, newest first.
pub async fn gaps<C: ConnectionTrait>(
    conn: &C,
    r: &node_reliability::Model,
) -> Result<Vec<Gap>, DbErr> {
    let from = r.window_start - TimeDelta::hours(1);
    let covered: BTreeMap<DateTime<Utc>, i64> = node_coverage_hour::Entity::find()
        .select_only()
        .column(node_coverage_hour::Column::HourStart)
        .column(node_coverage_hour::Column::Seconds)
        .filter(node_coverage_hour::Column::NodeId.eq(r.node_id))
        .filter(node_coverage_hour::Column::HourStart.gt(from))
        .into_tuple()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    let window = Window {
        start: r.window_start,
        end: r.window_end,
    };
    Ok(reliability::gaps(window, &covered, GAPS_LISTED))
}

/// What tenants see per offer: the GPU-weighted reliability of the nodes of each (GPU
/// model, region) whose hardware is verified (or trusted).
pub async fn by_offer<C: ConnectionTrait>(
    conn: &C,
) -> Result<HashMap<(String, String), i32>, DbErr> {
    let nodes = node::Entity::find().all(conn).await?;
    let scores = of_nodes(conn, nodes.iter().map(|n| n.id)).await?;
    let mut per_offer: HashMap<(String, String), Vec<(i32, i64)>> = HashMap::new();
    let offered = |n: &&node::Model| n.verification.schedulable() && n.state != NodeState::Retired;
    for n in nodes.iter().filter(offered) {
        let Some(r) = scores.get(&n.id) else {
            continue;
        };
        if let Some(bp) = r.score_bp {
            per_offer
                .entry((n.gpu_model.clone(), n.region.clone()))
                .or_default()
                .push((bp, i64::from(r.gpu_count)));
        }
    }
    Ok(per_offer
        .into_iter()
        .filter_map(|(offer, scores)| Some((offer, reliability::weighted_bp(scores)?)))
        .collect())
}

/// The GPU-weighted reliability of a provider's nodes.
pub async fn of_provider<C: ConnectionTrait>(
    conn: &C,
    provider: ProviderId,
    now: DateTime<Utc>,
) -> Result<Option<i32>, DbErr> {
    // A node retired within the window still counts: retiring bad hardware does not
    // clean a provider's record.
    let since = now - TimeDelta::days(reliability::WINDOW_DAYS);
    let nodes: Vec<NodeId> = node::Entity::find()
        .select_only()
        .column(node::Column::Id)
        .filter(node::Column::ProviderId.eq(provider))
        .filter(
            Condition::any()
                .add(node::Column::RetiredAt.is_null())
                .add(node::Column::RetiredAt.gte(since)),
        )
        .into_tuple()
        .all(conn)
        .await?;
    let rows = of_nodes(conn, nodes).await?;
    Ok(reliability::weighted_bp(rows.values().filter_map(|r| {
        Some((r.score_bp?, i64::from(r.gpu_count)))
    })))
}
