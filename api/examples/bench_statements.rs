//! Closing provider statements at scale, on PostgreSQL: `--providers` providers, each on
//! a revenue-share agreement with one one-GPU node; `--tenants` tenants fill every node
//! with an on-demand allocation, release them, and their periods are closed (invoices of
//! `providers / tenants` allocations of an hour each, set in the database). Then the
//! month is closed for every provider at once, as the period closer does: the month's
//! invoices read and split per allocation once, then one transaction per provider
//! writing its statement, its line and its ledger transfer.
//!
//! Baseline, in the same run and database: one plain row inserted per transaction, one
//! per provider — the floor of a transaction per provider.
//!
//! `cargo run --release -p neocloud-api --example bench_statements -- --providers 1000 --tenants 50`

mod bench_support;

use std::time::Instant;

use bench_support::{BenchServer, arg, gql};
use chrono::{Datelike, TimeZone, Utc};
use sea_orm::{ConnectionTrait, DatabaseConnection, TransactionTrait};
use serde_json::json;

async fn setup(server: &BenchServer, providers: usize, tenants: usize) {
    let client = reqwest::Client::new();
    let (url, op) = (server.url.as_str(), server.operator_key.as_str());
    for p in 0..providers {
        let name = format!("partner-{p:04}");
        let r = gql(&client, url, op,
            "mutation($i: CreateProviderInput!) { createProvider(input: $i) { provider { id } } }",
            json!({"i": {"name": name, "legalName": format!("Partner {p}"), "country": "US", "currency": "USD", "payoutMethod": "MANUAL"}})).await;
        let id = r["data"]["createProvider"]["provider"]["id"].clone();
        let r = gql(&client, url, op,
            "mutation($i: ProviderAgreementInput!) { createProviderAgreement(input: $i) { version } }",
            json!({"i": {"providerId": id, "model": "REVENUE_SHARE", "revenueSharePercent": "70", "platformFeePercent": "5", "payoutMinimum": "0.00", "holdUntilPaid": false}})).await;
        assert!(r["errors"].is_null(), "{r}");
        let r = gql(&client, url, op,
            "mutation($i: RegisterNodeInput!) { registerNode(input: $i) { node { id } } }",
            json!({"i": {"hostname": format!("node-{p:04}"), "region": "eu-west", "zone": "eu-west-a",
                         "rack": format!("r{}", p / 32), "nvlinkDomain": format!("node-{p:04}"), "gpuModel": "H100",
                         "gpus": [{"uuid": format!("GPU-{p:04}"), "index": 0}], "provider": name}})).await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let r = gql(&client, url, op,
        "mutation { createSku(input: {name: \"h100\", gpuModel: \"H100\", form: WHOLE_GPU, region: \"eu-west\", listPricePerHour: \"2.49\", currency: \"USD\"}) { sku { id } } }",
        json!({})).await;
    let sku = r["data"]["createSku"]["sku"]["id"].clone();
    let mut ids = Vec::new();
    for t in 0..tenants {
        let r = gql(&client, url, op,
            "mutation($n: String!) { createTenant(input: {name: $n, currency: \"USD\"}) { tenant { id } apiKey } }",
            json!({"n": format!("tenant-{t:03}")})).await;
        let created = &r["data"]["createTenant"];
        let key = created["apiKey"].as_str().expect("key").to_owned();
        ids.push(created["tenant"]["id"].clone());
        for _ in 0..providers / tenants {
            let r = gql(
                &client,
                url,
                &key,
                "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id } } }",
                json!({"s": sku}),
            )
            .await;
            let order = r["data"]["placeOrder"]["order"]["id"].clone();
            assert!(order.is_string(), "{r}");
            gql(
                &client,
                url,
                &key,
                "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
                json!({"o": order}),
            )
            .await;
        }
    }
    // Each allocation ran an hour yesterday, inside its tenant's open period.
    for sql in [
        // A first period starts when its tenant was created.
        "UPDATE tenants SET created_at = now() - interval '1 day'",
        "DELETE FROM invoices WHERE status = 'draft'",
        "UPDATE allocations SET started_at = now() - interval '20 hours', ended_at = now() - interval '19 hours'",
        "UPDATE orders SET ended_at = now() - interval '19 hours'",
    ] {
        server.db.execute_unprepared(sql).await.expect(sql);
    }
    for id in ids {
        let r = gql(
            &client,
            url,
            op,
            "mutation($t: ID!) { closeBillingPeriod(tenantId: $t) { id } }",
            json!({"t": id}),
        )
        .await;
        assert!(r["errors"].is_null(), "{r}");
    }
}

async fn baseline(db: &DatabaseConnection, rows: usize) -> f64 {
    db.execute_unprepared(
        "CREATE TABLE bench_plain (id uuid PRIMARY KEY, provider uuid NOT NULL, amount bigint NOT NULL, at timestamptz NOT NULL)",
    )
    .await
    .expect("create");
    let start = Instant::now();
    for n in 0..rows {
        let txn = db.begin().await.expect("begin");
        let sql = format!(
            "INSERT INTO bench_plain VALUES ('{}', '{}', {n}, now())",
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7()
        );
        txn.execute_unprepared(&sql).await.expect("insert");
        txn.commit().await.expect("commit");
    }
    start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let providers = arg("--providers", 1000);
    let tenants = arg("--tenants", 50).clamp(1, providers);
    let server = BenchServer::start().await;
    let t = Instant::now();
    setup(&server, providers, tenants).await;
    println!(
        "setup: {providers} providers, {tenants} tenants in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // The month ends: close every provider's statement for it.
    let now = Utc::now();
    let (y, m) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let after = Utc
        .with_ymd_and_hms(y, m, 1, 1, 0, 0)
        .single()
        .expect("date");
    let start = Instant::now();
    let closed = neocloud_api::providers::statements::close_due(&server.db, after)
        .await
        .expect("close");
    let close_s = start.elapsed().as_secs_f64();
    assert_eq!(closed, providers, "every provider closed its month");
    let lines = server
        .db
        .query_one_raw(sea_orm::Statement::from_string(
            sea_orm::DatabaseBackend::Postgres,
            "SELECT count(*) AS n FROM provider_statement_lines",
        ))
        .await
        .expect("count")
        .and_then(|r| r.try_get::<i64>("", "n").ok())
        .unwrap_or(0);
    assert_eq!(
        lines,
        i64::try_from(providers).expect("count"),
        "a line per allocation"
    );
    let base_s = baseline(&server.db, providers).await;
    let per = |n: usize, secs: f64| {
        format!(
            "{:.0}",
            f64::from(u32::try_from(n).expect("count")) / secs.max(1e-9)
        )
    };
    println!(
        "statements closed: {closed} ({lines} lines) in {close_s:.2} s ({} per s)",
        per(closed, close_s)
    );
    println!(
        "baseline, one plain row per transaction: {providers} in {base_s:.2} s ({} per s)",
        per(providers, base_s)
    );
    server.finish().await;
}
