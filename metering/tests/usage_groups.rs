//! Usage grouping against a real (SQLite) database, over generated fleets: for every
//! `groupBy` the rows add up to the ungrouped totals, quantity by quantity; and, per
//! allocation (and per UTC hour of it), allocated plus SLA-credit seconds are its units
//! times the seconds it held inside the range (and that hour) (a model written from docs/invoicing.md, "Units": a node is one unit,
//! every GPU, MIG slice or fraction one each), and its sampled quantities are those of
//! its minute buckets whose minute starts inside the range, whether the read takes them
//! from the minutes or from their hourly roll-ups. The fleet's GPUs are shared by every case,
//! so failures of earlier cases overlap later ones: failed time must count once.

mod support;

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use neocloud_metering::usage::{self, GroupBy, UsageRow};
use neocloud_schema::entity::{
    allocation, allocation_gpu, gpu_health_interval, order, sku, tenant, usage_minute,
};
use neocloud_schema::ids::{AllocationId, OrderId, SkuId, TenantId};
use neocloud_schema::vocabulary::{
    AccessState, AllocationClass, AllocationStatus, GpuHealth, OrderStatus, SkuForm, TenantStatus,
    TopologyLevel,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rust_decimal::Decimal;
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};
use uuid::Uuid;

/// GPUs of the one node every allocation runs on.
const NODE_GPUS: usize = 4;
const DAY: i64 = 86_400;

/// (form, GPUs held, whole node) of the SKUs a case draws from.
const FORMS: [(SkuForm, usize, bool); 5] = [
    (SkuForm::WholeGpu, 1, false),
    (SkuForm::WholeGpu, 2, false),
    (SkuForm::WholeNode, NODE_GPUS, true),
    (SkuForm::Mig, 1, false),
    (SkuForm::Fractional, 1, false),
];

const ORDER_LABELS: [&str; 3] = ["{}", r#"{"team":"a"}"#, r#"{"team":"b","project":"x"}"#];
/// The `LABEL` key of each of `ORDER_LABELS`: pairs sorted by key, `k=v` joined by `,`.
const ORDER_LABEL_KEYS: [&str; 3] = ["", "team=a", "project=x,team=b"];
const PROCESS_LABELS: [&str; 3] = ["", "project=llm", "job=eval"];

#[derive(Debug, Clone)]
struct Held {
    form: usize,
    labels: usize,
    /// Seconds after the case's base.
    start: i64,
    /// `None`: still running.
    length: Option<i64>,
    /// (GPU of the allocation, start after the allocation's, length or still failed).
    failure: Option<(usize, i64, Option<i64>)>,
    /// (minute after the allocation's start, process label, active, memory, energy).
    buckets: Vec<(i64, usize, u32, u32, u32)>,
}

#[derive(Debug, Clone)]
struct Case {
    held: Vec<Held>,
    /// The queried range, seconds after the base.
    from: i64,
    to: i64,
}

fn held() -> impl Strategy<Value = Held> {
    (
        0..FORMS.len(),
        0..ORDER_LABELS.len(),
        0..3 * DAY,
        prop::option::weighted(0.8, 1..2 * DAY),
        prop::option::weighted(0.4, (0..NODE_GPUS, 0..DAY, prop::option::of(1..DAY))),
        prop::collection::vec(
            (0..600i64, 0..3usize, 0..6000u32, 0..9000u32, 0..700u32),
            0..6,
        ),
    )
        .prop_map(|(form, labels, start, length, failure, buckets)| Held {
            form,
            labels,
            start,
            length,
            failure,
            buckets,
        })
}

fn case() -> impl Strategy<Value = Case> {
    (prop::collection::vec(held(), 1..6), 0..2 * DAY, 1..3 * DAY).prop_map(|(held, from, span)| {
        Case {
            held,
            from,
            to: from + span,
        }
    })
}

struct Fleet {
    db: DatabaseConnection,
    node: Uuid,
    gpus: Vec<Uuid>,
    skus: Vec<SkuId>,
}

async fn fleet() -> Fleet {
    let uuids: Vec<String> = (0..NODE_GPUS).map(|i| format!("GPU-{i}")).collect();
    let uuids: Vec<&str> = uuids.iter().map(String::as_str).collect();
    let (db, node, gpus) = support::node_with_gpus(&uuids).await;
    let now = Utc::now();
    let mut skus = Vec::new();
    for (i, (form, gpus, _)) in FORMS.iter().enumerate() {
        let sku = sku::ActiveModel {
            id: Set(SkuId::new()),
            name: Set(format!("sku-{i}")),
            gpu_model: Set("H100".into()),
            form: Set(*form),
            mig_profile: Set((*form == SkuForm::Mig).then(|| "3g.40gb".into())),
            milli_gpu: Set((*form == SkuForm::Fractional).then_some(250)),
            memory_mib: Set(None),
            unit_name: Set(None),
            service_category: Set(None),
            storage_class: Set(None),
            region: Set("eu-west".into()),
            list_price_per_hour: Set(Decimal::from(gpus * 2).into()),
            currency: Set("EUR".into()),
            active: Set(true),
            created_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("sku");
        skus.push(sku.id);
    }
    Fleet {
        db,
        node,
        gpus,
        skus,
    }
}

/// What the model expects of one allocation.
struct Expected {
    id: Uuid,
    sku: String,
    label: &'static str,
    units: i64,
    /// Seconds held inside the range.
    seconds: i64,
    /// Where: seconds after the case's base, `[from, to)`.
    held: (i64, i64),
    /// Active seconds, memory GiB-seconds and energy of its minute buckets whose minute
    /// starts inside the range.
    sampled: [Decimal; 3],
}

/// Writes a case for a tenant of its own; returns the tenant and what each allocation
/// should show.
async fn write(fleet: &Fleet, case: &Case, base: DateTime<Utc>) -> (TenantId, Vec<Expected>) {
    let db = &fleet.db;
    let tenant = tenant::ActiveModel {
        id: Set(TenantId::new()),
        name: Set(format!("t-{}", Uuid::new_v4().simple())),
        currency: Set("EUR".into()),
        status: Set(TenantStatus::Active),
        created_at: Set(base),
        billing_anchor_day: Set(1),
        ..Default::default()
    }
    .insert(db)
    .await
    .expect("tenant")
    .id;
    let at = |s: i64| base + Duration::seconds(s);
    let mut expected = Vec::new();
    for h in &case.held {
        let (form, gpu_count, whole_node) = FORMS[h.form];
        let labels: serde_json::Value = serde_json::from_str(ORDER_LABELS[h.labels]).expect("json");
        let order = order::ActiveModel {
            id: Set(OrderId::new()),
            tenant_id: Set(tenant),
            sku_id: Set(fleet.skus[h.form]),
            count: Set(1),
            class: Set(AllocationClass::OnDemand),
            topology_level: Set(TopologyLevel::Any),
            topology_required: Set(false),
            exclusive: Set(false),
            max_price_per_hour: Set(None),
            labels: Set(labels.clone()),
            idempotency_key: Set(Uuid::new_v4().to_string()),
            request_hash: Set(String::new()),
            status: Set(OrderStatus::Active),
            created_by: Set(None),
            created_at: Set(at(h.start)),
            ended_at: Set(None),
            ssh_key_ids: Set(None),
        }
        .insert(db)
        .await
        .expect("order");
        let ended = h.length.map(|l| at(h.start + l));
        let allocation = allocation::ActiveModel {
            id: Set(AllocationId::new()),
            order_id: Set(order.id),
            tenant_id: Set(tenant),
            sku_id: Set(fleet.skus[h.form]),
            node_id: Set(fleet.node.into()),
            class: Set(AllocationClass::OnDemand),
            status: Set(if ended.is_some() {
                AllocationStatus::Released
            } else {
                AllocationStatus::Active
            }),
            mig_profile: Set((form == SkuForm::Mig).then(|| "3g.40gb".into())),
            mig_start_slot: Set((form == SkuForm::Mig).then_some(0)),
            milli_gpu: Set((form == SkuForm::Fractional).then_some(250)),
            labels: Set(labels),
            started_at: Set(at(h.start)),
            preempt_at: Set(None),
            ended_at: Set(ended),
            cpu_milli: Set(1000),
            memory_mib: Set(1024),
            exclusive: Set(None),
            whole_node: Set(whole_node),
            access_state: Set(AccessState::Pending),
            access_endpoints: Set(None),
            access_reason: Set(None),
            access_changed_at: Set(None),
        }
        .insert(db)
        .await
        .expect("allocation");
        let gpus = &fleet.gpus[..gpu_count];
        for g in gpus {
            allocation_gpu::ActiveModel {
                allocation_id: Set(allocation.id),
                gpu_id: Set((*g).into()),
                tenant_id: Set(tenant),
            }
            .insert(db)
            .await
            .expect("holding");
        }
        if let Some((g, start, length)) = h.failure {
            gpu_health_interval::ActiveModel {
                id: Set(Uuid::now_v7()),
                gpu_id: Set(gpus[g % gpus.len()].into()),
                health: Set(GpuHealth::Failed.as_str().into()),
                started_at: Set(at(h.start + start)),
                ended_at: Set(length.map(|l| at(h.start + start + l))),
                cause: Set("xid 79".into()),
            }
            .insert(db)
            .await
            .expect("failure");
        }
        let written = write_buckets(
            db,
            tenant,
            fleet.skus[h.form].into(),
            allocation.id.into(),
            h,
            at(h.start),
        )
        .await;
        let mut sampled = [Decimal::ZERO; 3];
        for (minute, quantities) in written {
            if (at(case.from)..at(case.to)).contains(&minute) {
                for (sum, q) in sampled.iter_mut().zip(quantities) {
                    *sum += q;
                }
            }
        }
        let units = if whole_node { 1 } else { gpu_count as i64 };
        let held_from = h.start.max(case.from);
        let held_to = h.length.map_or(case.to, |l| (h.start + l).min(case.to));
        expected.push(Expected {
            id: allocation.id.into(),
            sku: format!("sku-{}", h.form),
            label: ORDER_LABEL_KEYS[h.labels],
            units,
            seconds: (held_to - held_from).max(0),
            held: (held_from, held_to),
            sampled,
        });
    }
    (tenant, expected)
}

/// Stores `h`'s minute buckets as the aggregation pass does: each minute, and its hour's
/// roll-up through the metering crate. Returns each written minute's start and (active,
/// memory, energy).
async fn write_buckets(
    db: &DatabaseConnection,
    tenant: TenantId,
    sku: Uuid,
    allocation: Uuid,
    h: &Held,
    start: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, [Decimal; 3])> {
    let first_minute = start - Duration::seconds(start.timestamp() % 60);
    let mut seen = BTreeSet::new();
    let mut hours = usage::hours::Hours::new();
    let mut written = Vec::new();
    for (minute, label, active, memory, energy) in &h.buckets {
        if !seen.insert((*minute, *label)) {
            continue;
        }
        let minute_start = first_minute + Duration::minutes(*minute);
        let quantities = [
            Decimal::new(i64::from(*active), 2),
            Decimal::new(i64::from(*memory), 3),
            Decimal::new(i64::from(*energy), 6),
        ];
        usage_minute::ActiveModel {
            id: Set(Uuid::now_v7()),
            minute_start: Set(minute_start),
            device_uuid: Set(String::new()),
            allocation_id: Set(allocation.into()),
            tenant_id: Set(Some(tenant)),
            sku_id: Set(Some(sku.into())),
            label: Set(PROCESS_LABELS[*label].into()),
            active_seconds: Set(quantities[0].into()),
            memory_gib_seconds: Set(quantities[1].into()),
            energy_kwh: Set(quantities[2].into()),
            sampled_seconds: Set(60),
        }
        .insert(db)
        .await
        .expect("bucket");
        let sums = usage::hours::HourSums {
            tenant: Some(tenant),
            sku: Some(sku),
            active_seconds: quantities[0],
            memory_gib_seconds: quantities[1],
            energy_kwh: quantities[2],
            sampled_seconds: 60,
        };
        usage::hours::add_minute(&mut hours, allocation, minute_start, sums);
        written.push((minute_start, quantities));
    }
    usage::hours::add(db, &hours).await.expect("hours");
    written
}

fn quantities(r: &UsageRow) -> [Decimal; 5] {
    [
        r.allocated_seconds,
        r.active_seconds,
        r.memory_gib_seconds,
        r.energy_kwh,
        r.sla_credit_seconds,
    ]
}

fn totals(rows: &[UsageRow]) -> [Decimal; 5] {
    let mut sum = [Decimal::ZERO; 5];
    for r in rows {
        for (s, q) in sum.iter_mut().zip(quantities(r)) {
            *s += q;
        }
    }
    sum
}

/// Every non-empty subset of the five dimensions, in a fixed order.
fn groupings() -> Vec<Vec<GroupBy>> {
    let all = [
        GroupBy::Sku,
        GroupBy::Allocation,
        GroupBy::Label,
        GroupBy::Day,
        GroupBy::Hour,
    ];
    (1u8..32)
        .map(|mask| {
            all.iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, g)| *g)
                .collect()
        })
        .collect()
}

async fn check(fleet: &Fleet, case: &Case) -> Result<(), TestCaseError> {
    // Far enough back that `now` (the end of open intervals) lies after every instant.
    let base: DateTime<Utc> = "2026-01-05T10:17:23Z".parse().expect("time");
    let (tenant, expected) = write(fleet, case, base).await;
    let (from, to) = (
        base + Duration::seconds(case.from),
        base + Duration::seconds(case.to),
    );
    let now = base + Duration::days(10);
    let query = |group: Vec<GroupBy>| async move {
        usage::usage(&fleet.db, tenant, from, to, &group, now)
            .await
            .expect("usage")
    };
    let whole = query(Vec::new()).await;
    prop_assert!(whole.len() <= 1, "ungrouped usage is one row");
    let total = totals(&whole);
    for group in groupings() {
        let rows = query(group.clone()).await;
        prop_assert_eq!(totals(&rows), total, "grouped by {:?}", group);
        let keys: BTreeSet<&Vec<String>> = rows.iter().map(|r| &r.key).collect();
        prop_assert_eq!(keys.len(), rows.len(), "one row per key");
    }
    // One row per allocation, under its own SKU and its order's labels: every quantity
    // of an allocation is keyed alike, so no row mixes one allocation's seconds held with
    // another key's activity.
    let by_allocation = query(vec![GroupBy::Allocation, GroupBy::Sku, GroupBy::Label]).await;
    for e in &expected {
        let rows: Vec<&UsageRow> = by_allocation
            .iter()
            .filter(|r| r.key[0] == e.id.to_string())
            .collect();
        prop_assert!(
            rows.len() <= 1,
            "allocation {} is split over {:?}",
            e.id,
            rows
        );
        if let Some(row) = rows.first() {
            prop_assert!(row.allocated_seconds >= Decimal::ZERO, "{:?}", row);
            prop_assert!(row.sla_credit_seconds >= Decimal::ZERO, "{:?}", row);
            prop_assert_eq!(&row.key[1], &e.sku);
            prop_assert_eq!(row.key[2].as_str(), e.label);
        }
        let sampled = rows.first().map_or([Decimal::ZERO; 3], |r| {
            [r.active_seconds, r.memory_gib_seconds, r.energy_kwh]
        });
        prop_assert_eq!(sampled, e.sampled, "allocation {}'s samples", e.id);
        let held = rows.first().map_or(Decimal::ZERO, |r| {
            r.allocated_seconds + r.sla_credit_seconds
        });
        prop_assert_eq!(
            held,
            Decimal::from(e.units * e.seconds),
            "allocation {}",
            e.id
        );
    }
    // Per UTC hour: what each allocation held in that hour of the range, times its units.
    let by_hour = query(vec![GroupBy::Allocation, GroupBy::Hour]).await;
    for e in &expected {
        for r in by_hour.iter().filter(|r| r.key[0] == e.id.to_string()) {
            let hour: DateTime<Utc> = r.key[1].parse().expect("an hour");
            let start = (hour - base).num_seconds();
            let inside = (e.held.1.min(start + 3600) - e.held.0.max(start)).max(0);
            prop_assert_eq!(
                r.allocated_seconds + r.sla_credit_seconds,
                Decimal::from(e.units * inside),
                "allocation {} in the hour from {}",
                e.id,
                hour
            );
        }
    }
    Ok(())
}

#[test]
fn grouped_rows_add_up_to_the_ungrouped_totals() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fleet = runtime.block_on(fleet());
    let mut runner = TestRunner::new(Config::with_cases(40));
    runner
        .run(&case(), |case| runtime.block_on(check(&fleet, &case)))
        .expect("every grouping adds up");
}

#[test]
fn a_bucket_that_does_not_hold_a_decimal_is_an_error_not_zero() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let fleet = fleet().await;
        let case = Case {
            held: vec![Held {
                form: 0,
                labels: 0,
                start: 0,
                length: Some(600),
                failure: None,
                buckets: vec![(0, 0, 100, 100, 100)],
            }],
            from: 0,
            to: 600,
        };
        let base: DateTime<Utc> = "2026-01-05T10:17:00Z".parse().expect("time");
        let (tenant, _) = write(&fleet, &case, base).await;
        use sea_orm::ConnectionTrait;
        fleet
            .db
            .execute_unprepared("UPDATE usage_minutes SET active_seconds = 'lots'")
            .await
            .expect("corrupt");
        let answer = usage::usage(
            &fleet.db,
            tenant,
            base,
            base + Duration::seconds(600),
            &[],
            base + Duration::days(1),
        )
        .await;
        assert!(answer.is_err(), "a corrupt bucket must not read as zero");
        // A whole hour is read from its roll-up alone: a corrupt one fails alike.
        fleet
            .db
            .execute_unprepared("UPDATE usage_hours SET energy_kwh = 'lots'")
            .await
            .expect("corrupt");
        let hour = base - Duration::minutes(17);
        let answer = usage::usage(
            &fleet.db,
            tenant,
            hour,
            hour + Duration::hours(1),
            &[],
            base + Duration::days(1),
        )
        .await;
        assert!(answer.is_err(), "a corrupt roll-up must not read as zero");
    });
}
