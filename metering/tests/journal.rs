//! The ingest journal against a real (SQLite) database, with no aggregator running: an
//! acknowledged batch is journaled and not yet counted; aggregation passes of any size
//! count every batch exactly once, in the order batches were acknowledged, and ignore
//! (and note) a new boot's overlap; `settle` leaves nothing in the journal.

mod support;

use chrono::{DateTime, Duration, DurationRound, Utc};
use neocloud_metering::ingest::{self, Outcome, Submission};
use neocloud_schema::entity::{ingest_batch, ingest_pending, usage_minute};
use neocloud_schema::ingest::Batch;
use rust_decimal::Decimal;
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
};
use serde_json::json;
use uuid::Uuid;

const GPUS: [&str; 2] = ["GPU-A", "GPU-B"];

async fn fleet_of_one() -> (DatabaseConnection, Uuid) {
    let (db, node, _) = support::node_with_gpus(&GPUS).await;
    (db, node)
}

/// A minute boundary an hour ago: every window below lies in its first minute.
fn base() -> DateTime<Utc> {
    (Utc::now() - Duration::hours(1))
        .duration_trunc(Duration::minutes(1))
        .expect("minute")
}

/// A 10 s window starting `offset` seconds after `base`, for `devices` at 50 %.
fn batch(boot: Uuid, seq: u64, offset: i64, devices: &[&str]) -> Batch {
    let start = base() + Duration::seconds(offset);
    serde_json::from_value(json!({
        "version": 1, "agent_id": "hgx-1", "boot_id": boot, "seq": seq,
        "window": {"start": start, "end": start + Duration::seconds(10)},
        "devices": devices.iter().map(|d| json!({"uuid": d, "sm_util_pct": 50.0,
            "fb_used_bytes": 1u64 << 30})).collect::<Vec<_>>(),
    }))
    .expect("batch")
}

async fn take(db: &DatabaseConnection, node: Uuid, batches: &[&Batch]) -> Vec<Outcome> {
    let submissions = batches
        .iter()
        .map(|b| Submission {
            node_id: node,
            batch: (*b).clone(),
        })
        .collect();
    ingest::accept_many(db, submissions, Utc::now())
        .await
        .into_iter()
        .map(|answer| answer.expect("taken"))
        .collect()
}

/// (device, minute, sampled seconds, active seconds) of every bucket, in a fixed order.
async fn buckets(db: &DatabaseConnection) -> Vec<(String, DateTime<Utc>, i64, Decimal)> {
    usage_minute::Entity::find()
        .order_by_asc(usage_minute::Column::DeviceUuid)
        .order_by_asc(usage_minute::Column::MinuteStart)
        .all(db)
        .await
        .expect("buckets")
        .into_iter()
        .map(|b| {
            let active = b.active_seconds.get();
            (b.device_uuid, b.minute_start, b.sampled_seconds, active)
        })
        .collect()
}

/// Takes three batches — the third from a new boot, overlapping the second by 5 s on
/// GPU-A — and aggregates them in passes of the given sizes.
async fn ingest_then_aggregate(passes: &[u64]) -> (DatabaseConnection, Vec<usize>) {
    let (db, node) = fleet_of_one().await;
    let (boot, reboot) = (Uuid::new_v4(), Uuid::new_v4());
    let first = batch(boot, 1, 0, &GPUS);
    let second = batch(boot, 2, 10, &GPUS);
    let overlapping = batch(reboot, 1, 15, &["GPU-A"]);
    assert_eq!(
        take(&db, node, &[&first, &second]).await,
        vec![Outcome::Accepted { seq: 1 }, Outcome::Accepted { seq: 2 }]
    );
    assert_eq!(
        take(&db, node, &[&first, &overlapping]).await,
        vec![Outcome::Duplicate { seq: 1 }, Outcome::Accepted { seq: 1 }]
    );
    // Acknowledged means journaled: recorded, nothing counted yet.
    assert_eq!(ingest::journal_backlog(&db).await.expect("backlog"), 3);
    assert_eq!(
        ingest_batch::Entity::find()
            .count(&db)
            .await
            .expect("count"),
        3
    );
    assert!(buckets(&db).await.is_empty());
    let mut taken = Vec::new();
    for &pass in passes {
        taken.push(ingest::aggregate(&db, pass, None).await.expect("pass"));
    }
    (db, taken)
}

#[tokio::test]
async fn passes_of_any_size_count_each_batch_once_and_ignore_an_overlap() {
    let (all_at_once, taken) = ingest_then_aggregate(&[100, 100]).await;
    assert_eq!(taken, vec![3, 0]);
    let expected = buckets(&all_at_once).await;
    // 10 s + 10 s on both GPUs; the new boot adds only 20..25 s on GPU-A, at 50 %.
    let minute = base();
    assert_eq!(
        expected,
        vec![
            ("GPU-A".to_owned(), minute, 25, Decimal::new(125, 1)),
            ("GPU-B".to_owned(), minute, 20, Decimal::from(10)),
        ]
    );
    for passes in [&[1, 1, 1, 1][..], &[2, 5], &[1, 100]] {
        let (db, taken) = ingest_then_aggregate(passes).await;
        assert_eq!(taken.iter().sum::<usize>(), 3, "passes {passes:?}");
        assert_eq!(buckets(&db).await, expected, "passes {passes:?}");
        assert_eq!(
            ingest_pending::Entity::find()
                .count(&db)
                .await
                .expect("count"),
            0
        );
        let overlapped = ingest_batch::Entity::find()
            .filter(ingest_batch::Column::OverlapSeconds.gt(0))
            .all(&db)
            .await
            .expect("batches");
        assert_eq!(overlapped.len(), 1);
        assert_eq!(overlapped[0].overlap_seconds, 5);
        assert_eq!(overlapped[0].window_start, minute + Duration::seconds(15));
    }
}

#[tokio::test]
async fn settle_aggregates_everything_acknowledged_and_a_replay_changes_nothing() {
    let (db, node) = fleet_of_one().await;
    let boot = Uuid::new_v4();
    let batches: Vec<Batch> = (0..5)
        .map(|i| batch(boot, i + 1, 10 * i as i64, &GPUS))
        .collect();
    let all: Vec<&Batch> = batches.iter().collect();
    take(&db, node, &all).await;
    ingest::settle(&db).await.expect("settle");
    assert_eq!(ingest::journal_backlog(&db).await.expect("backlog"), 0);
    assert_eq!(
        ingest_pending::Entity::find()
            .count(&db)
            .await
            .expect("count"),
        0
    );
    let settled = buckets(&db).await;
    let seconds: i64 = settled.iter().map(|b| b.2).sum();
    assert_eq!(seconds, 5 * 10 * GPUS.len() as i64);
    // The agent replays everything after losing its answers: all duplicates, no journal.
    assert!(
        take(&db, node, &all)
            .await
            .iter()
            .all(|o| matches!(o, Outcome::Duplicate { .. }))
    );
    assert_eq!(
        ingest_pending::Entity::find()
            .count(&db)
            .await
            .expect("count"),
        0
    );
    assert_eq!(ingest::aggregate(&db, 100, None).await.expect("pass"), 0);
    assert_eq!(buckets(&db).await, settled);
}

/// A retired node's batches count for nothing: refused before the journal, whatever path
/// (HTTP or NATS) brought them.
#[tokio::test]
async fn a_retired_nodes_batches_are_refused() {
    use neocloud_schema::entity::node;
    use neocloud_schema::vocabulary::NodeState;
    use sea_orm::sea_query::Expr;
    let (db, node_id) = fleet_of_one().await;
    let boot = Uuid::new_v4();
    assert_eq!(
        take(&db, node_id, &[&batch(boot, 1, 0, &GPUS)]).await,
        vec![Outcome::Accepted { seq: 1 }]
    );
    node::Entity::update_many()
        .col_expr(node::Column::State, Expr::value(NodeState::Retired))
        .filter(node::Column::Id.eq(node_id))
        .exec(&db)
        .await
        .expect("retire");
    let submission = Submission {
        node_id,
        batch: batch(boot, 2, 10, &GPUS),
    };
    let answer = ingest::accept_many(&db, vec![submission], Utc::now()).await;
    match &answer[..] {
        [Err(neocloud_metering::MeteringError::Forbidden { message })] => {
            assert!(message.contains("retired"), "{message}");
        }
        other => panic!("accepted from a retired node: {other:?}"),
    }
    ingest::settle(&db).await.expect("settle");
    let seconds: i64 = buckets(&db).await.iter().map(|b| b.2).sum();
    assert_eq!(
        seconds,
        10 * GPUS.len() as i64,
        "only the first batch counts"
    );
}
