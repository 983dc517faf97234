//! Closing billing periods at scale, on PostgreSQL: `--tenants` tenants, each on a plan
//! (per-unit ALLOCATED with spot, graduated ACTIVE, a commitment) with one H100 allocation
//! running through a `--days`-day open period and a minute bucket for every minute of it
//! (43,200 per tenant for 30 days). Every period is then closed, one tenant after another
//! (`--workers` at a time), by the function `closeBillingPeriod` and the automatic close
//! run: rate, number, write lines, open the next period.
//!
//! Baseline, in the same run and database: fetching the same tenants' buckets with a
//! plain SELECT and nothing else — the floor any design that rates from stored minute
//! buckets pays.
//!
//! Before closing, the portal's usage page (the month's totals, per day and per SKU) is
//! read for the first `--usage-reads` tenants, one request at a time: with each row's
//! cost, and — the baseline, in the same run — with quantities only.
//!
//! `cargo run --release -p neocloud-api --example bench_close -- --tenants 1000 --days 30 --workers 2`

mod bench_support;

use std::sync::Arc;
use std::time::Instant;

use bench_support::{BenchServer, arg, gql};
use chrono::{Duration, Utc};
use neocloud_metering::invoicing::{self, BillingPolicy};
use neocloud_schema::ids::TenantId;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, TransactionTrait};
use serde_json::{Value, json};
use uuid::Uuid;

async fn run_parallel<F, Fut>(workers: usize, items: Vec<Uuid>, work: F) -> f64
where
    F: Fn(Uuid) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let items = Arc::new(tokio::sync::Mutex::new(items));
    let work = Arc::new(work);
    let start = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (items, work) = (items.clone(), work.clone());
        handles.push(tokio::spawn(async move {
            loop {
                let next = items.lock().await.pop();
                match next {
                    Some(id) => work(id).await,
                    None => break,
                }
            }
        }));
    }
    for h in handles {
        h.await.expect("worker");
    }
    start.elapsed().as_secs_f64()
}

async fn sql(db: &DatabaseConnection, text: &str, values: Vec<sea_orm::Value>) {
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        text,
        values,
    ))
    .await
    .unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// The portal's usage page of each of `keys`' tenants, one request at a time, with
/// quantities only and with each row's cost: the mean milliseconds a page takes.
async fn usage_page_reads(
    client: &reqwest::Client,
    url: &str,
    keys: &[String],
    (from, to): (chrono::DateTime<Utc>, chrono::DateTime<Utc>),
) {
    const PAGE: &str = "query($f: DateTime!, $t: DateTime!) {
        total: usage(from: $f, to: $t) { rows { allocatedSeconds activeSeconds COST } }
        byDay: usage(from: $f, to: $t, groupBy: [DAY]) { rows { key allocatedSeconds activeSeconds COST } }
        bySku: usage(from: $f, to: $t, groupBy: [SKU]) { rows { key allocatedSeconds activeSeconds COST } } }";
    println!("| usage page ({} tenants) | ms per page |", keys.len());
    println!("|---|---|");
    for (name, cost) in [("quantities only", ""), ("with each row's cost", "cost")] {
        let query = PAGE.replace("COST", cost);
        let started = Instant::now();
        for key in keys {
            let r = gql(client, url, key, &query, json!({"f": from, "t": to})).await;
            assert!(r["errors"].is_null(), "{r}");
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0 / keys.len().max(1) as f64;
        println!("| {name} | {ms:.1} |");
    }
}

/// Baseline for the usage page: one `SELECT` of a tenant's month of minute buckets, what
/// each of the page's `usage` fields read before hourly roll-ups (three or four a page).
async fn minute_scan_baseline(
    db: &sea_orm::DatabaseConnection,
    tenants: &[Uuid],
    (from, to): (chrono::DateTime<Utc>, chrono::DateTime<Utc>),
) {
    let started = Instant::now();
    for tenant in tenants {
        db.query_all_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            "SELECT sku_id, allocation_id, minute_start, active_seconds, memory_gib_seconds, energy_kwh FROM usage_minutes WHERE tenant_id = $1 AND minute_start >= $2 AND minute_start < $3",
            vec![(*tenant).into(), from.into(), to.into()],
        ))
        .await
        .expect("select");
    }
    let ms = started.elapsed().as_secs_f64() * 1000.0 / tenants.len().max(1) as f64;
    println!("| baseline: one SELECT of the month's minute buckets | {ms:.1} |");
}

#[tokio::main]
async fn main() {
    let tenants = arg("--tenants", 1000);
    let days = arg("--days", 30) as i64;
    let workers = arg("--workers", 2).max(1);
    let server = BenchServer::start().await;
    let client = reqwest::Client::new();
    let seeded = Instant::now();
    server
        .register_h100_nodes(&client, tenants.div_ceil(8))
        .await;
    let (sku, _) = server.h100_sku_and_tenant(&client).await;
    let op = server.operator_key.clone();
    let plan = json!({"plan": "bench", "currency": "USD", "effectiveFrom": "2026-01-01T00:00:00Z",
        "rates": [
            {"sku": sku, "metric": "ALLOCATED", "tiersMode": "PER_UNIT", "unitPrice": "2.49", "spotUnitPrice": "1.00"},
            {"sku": sku, "metric": "ACTIVE", "tiersMode": "GRADUATED", "tiers": [
                {"upTo": "200", "unitPrice": "0.10"}, {"upTo": null, "unitPrice": "0.05", "flatFee": "1.00"}]}],
        "commitment": {"monthlyMinimum": "2000.00", "discountPct": "5"}});
    let r = gql(
        &client,
        &server.url,
        &op,
        "mutation($i: PlanVersionInput!) { createPlanVersion(input: $i) { planVersion { id } } }",
        json!({"i": plan}),
    )
    .await;
    let version = r["data"]["createPlanVersion"]["planVersion"]["id"].clone();
    let mut keys = Vec::new();
    for i in 0..tenants {
        let r = gql(&client, &server.url, &op, "mutation($n: String!) { createTenant(input: {name: $n, currency: \"USD\"}) { tenant { id } apiKey } }", json!({"n": format!("tenant-{i:05}")})).await;
        let tenant = r["data"]["createTenant"]["tenant"]["id"].clone();
        let key = r["data"]["createTenant"]["apiKey"]
            .as_str()
            .expect("key")
            .to_owned();
        keys.push(key.clone());
        gql(&client, &server.url, &op, "mutation($t: ID!, $v: ID!) { assignPlan(tenantId: $t, planVersionId: $v) { effectiveFrom } }", json!({"t": tenant, "v": version})).await;
        let r: Value = gql(
            &client,
            &server.url,
            &key,
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
            json!({"s": sku}),
        )
        .await;
        assert!(r["data"]["placeOrder"].is_object(), "{r}");
    }

    // Backdate: every tenant, plan and allocation began `days` ago, and the open period
    // has a bucket for every minute since.
    let db = server.db.clone();
    let now = Utc::now();
    let start = invoicing::whole_minute(now - Duration::days(days));
    let minutes = days * 1440;
    sql(
        &db,
        "UPDATE tenants SET created_at = $1",
        vec![start.into()],
    )
    .await;
    sql(
        &db,
        "UPDATE tenant_plans SET effective_from = $1",
        vec![start.into()],
    )
    .await;
    sql(
        &db,
        "UPDATE allocations SET started_at = $1",
        vec![start.into()],
    )
    .await;
    let ids: Vec<Uuid> = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT id FROM tenants WHERE name LIKE 'tenant-%' ORDER BY name",
        ))
        .await
        .expect("tenants")
        .iter()
        .map(|row| row.try_get::<Uuid>("", "id").expect("id"))
        .collect();
    for chunk in ids.chunks(50) {
        let list: Vec<String> = chunk.iter().map(|id| format!("'{id}'")).collect();
        sql(&db, &format!(
            "INSERT INTO usage_minutes (id, minute_start, device_uuid, allocation_id, tenant_id, sku_id, label, active_seconds, memory_gib_seconds, energy_kwh, sampled_seconds)
             SELECT gen_random_uuid(), $1::timestamptz + m * interval '1 minute', g.uuid, a.id, a.tenant_id, a.sku_id, '',
                    ((30 + m % 30)::text || '.125')::numeric, 4096.5, 0.011666, 60
             FROM allocations a JOIN allocation_gpus ag ON ag.allocation_id = a.id JOIN gpus g ON g.id = ag.gpu_id,
                  generate_series(0, {}) m
             WHERE a.tenant_id IN ({})", minutes - 1, list.join(",")), vec![start.into()]).await;
        sql(&db, &format!(
            "INSERT INTO invoices (id, tenant_id, status, number, currency, period_start, period_end, subtotal, credits, total, plan, created_at)
             SELECT gen_random_uuid(), id, 'draft', NULL, 'USD', $1, $2, '0', '0', '0', '', $1 FROM tenants WHERE id IN ({})",
            list.join(",")), vec![start.into(), (now + Duration::days(1)).into()]).await;
        // The hourly roll-ups the aggregation pass keeps beside the minutes.
        sql(&db, &format!(
            "INSERT INTO usage_hours (allocation_id, hour_start, tenant_id, sku_id, active_seconds, memory_gib_seconds, energy_kwh, sampled_seconds)
             SELECT allocation_id, date_trunc('hour', minute_start, 'UTC'), tenant_id, sku_id, sum(active_seconds), sum(memory_gib_seconds), sum(energy_kwh), sum(sampled_seconds)
             FROM usage_minutes WHERE tenant_id IN ({}) GROUP BY 1, 2, 3, 4", list.join(",")), vec![]).await;
    }
    sql(&db, "VACUUM ANALYZE usage_minutes", vec![]).await;
    sql(&db, "VACUUM ANALYZE usage_hours", vec![]).await;
    let buckets = ids.len() as i64 * minutes;
    println!(
        "seeded {} tenants × {minutes} minute buckets ({buckets} buckets) in {:.0} s; {workers} workers",
        ids.len(),
        seeded.elapsed().as_secs_f64()
    );

    let reads = arg("--usage-reads", 20).min(keys.len());
    usage_page_reads(&client, &server.url, &keys[..reads], (start, now)).await;
    minute_scan_baseline(&db, &ids[..reads], (start, now)).await;

    let read_db = db.clone();
    let floor = run_parallel(workers, ids.clone(), move |tenant| {
        let db = read_db.clone();
        async move {
            let rows = db
                .query_all_raw(Statement::from_sql_and_values(
                    db.get_database_backend(),
                    "SELECT allocation_id, active_seconds, memory_gib_seconds, energy_kwh FROM usage_minutes WHERE tenant_id = $1 AND minute_start >= $2 AND minute_start < $3",
                    vec![tenant.into(), start.into(), now.into()],
                ))
                .await
                .expect("select");
            assert_eq!(rows.len() as i64, minutes);
        }
    })
    .await;

    let close_db = db.clone();
    let closed_at = Utc::now();
    let close = run_parallel(workers, ids.clone(), move |tenant| {
        let db = close_db.clone();
        async move {
            let txn = db.begin().await.expect("begin");
            invoicing::close_period(
                &txn,
                TenantId(tenant),
                closed_at,
                closed_at,
                &BillingPolicy::default(),
            )
            .await
            .expect("close");
            txn.commit().await.expect("commit");
        }
    })
    .await;

    let numbers = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT count(*) AS n, count(DISTINCT number) AS d, min(total)::text AS lo, max(total)::text AS hi FROM invoices WHERE status = 'open'",
        ))
        .await
        .expect("count")
        .expect("row");
    let n: i64 = numbers.try_get("", "n").expect("n");
    let distinct: i64 = numbers.try_get("", "d").expect("d");
    assert_eq!((n, distinct), (ids.len() as i64, ids.len() as i64));
    let lo: String = numbers.try_get("", "lo").expect("lo");
    let hi: String = numbers.try_get("", "hi").expect("hi");
    println!("{n} invoices finalized, {distinct} distinct numbers, totals {lo} .. {hi}");
    println!("| step | seconds | per tenant (ms) | minute buckets/s |");
    println!("|---|---|---|---|");
    for (name, secs) in [
        (
            "close every period (rate, number, lines, next period)",
            close,
        ),
        ("baseline: SELECT the buckets only", floor),
    ] {
        println!(
            "| {name} | {secs:.1} | {:.1} | {:.0} |",
            secs * 1000.0 / ids.len() as f64,
            buckets as f64 / secs
        );
    }
    server.finish().await;
}
