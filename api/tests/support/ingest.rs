//! A node with one allocation and the ingest batches its agent would send, for the
//! tests of ingest over HTTP and over JetStream.

use chrono::{DateTime, Duration, DurationRound, TimeDelta, Utc};
use serde_json::{Value, json};

use super::TestApp;

/// One whole H100 of node `hgx-0`, in one allocation of tenant `acme`.
pub struct Setup {
    /// The node's agent token.
    pub token: String,
    pub node: String,
    /// The node's NATS credential, when the server mints them.
    pub nats_credentials: Option<String>,
    pub tenant_key: String,
    pub host: String,
    pub gpu: String,
    pub allocation: String,
    pub started: DateTime<Utc>,
}

pub async fn setup(app: &TestApp) -> Setup {
    let r = app.register_node("hgx-0", "H100", 8, "").await;
    let token = super::agent_token(&r);
    let registered = &r["data"]["registerNode"];
    let sku = app.create_h100_sku().await;
    let (_, tenant_key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&tenant_key),
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id startedAt gpus { uuid } } } } }",
            json!({"s": sku}),
        )
        .await;
    let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
    Setup {
        token,
        node: registered["node"]["id"].as_str().expect("node").to_owned(),
        nats_credentials: registered["natsCredentials"].as_str().map(str::to_owned),
        tenant_key,
        host: "hgx-0".into(),
        gpu: alloc["gpus"][0]["uuid"].as_str().expect("gpu").to_owned(),
        allocation: alloc["id"].as_str().expect("id").to_owned(),
        started: alloc["startedAt"]
            .as_str()
            .expect("start")
            .parse()
            .expect("time"),
    }
}

pub fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A 10-second window starting `offset` seconds after the allocation's first whole second.
pub fn batch(s: &Setup, boot: &str, seq: u64, offset: i64, sm: f64) -> Value {
    let start = s
        .started
        .duration_trunc(TimeDelta::seconds(1))
        .expect("trunc")
        + Duration::seconds(1 + offset);
    json!({"version": 1, "agent_id": s.host, "boot_id": boot, "seq": seq,
        "window": {"start": iso(start), "end": iso(start + Duration::seconds(10))},
        "devices": [{"uuid": s.gpu, "sm_util_pct": sm, "fb_used_bytes": 1u64 << 30, "energy_mj": 1000,
            "temp_c": 60, "health": "ok", "events": [],
            "processes": [{"pid": 42, "allocation_id": s.allocation, "labels": {"project": "llm"},
                "sm_util_pct": sm, "fb_used_bytes": 1u64 << 30}]}]})
}

/// One usage figure (`activeSeconds`, `energyKwh`, …) of the setup's allocation around its
/// start, as the tenant reads it.
pub async fn allocation_usage(app: &TestApp, s: &Setup, field: &str) -> String {
    let r = app
        .gql(
            Some(&s.tenant_key),
            &format!("query($f: DateTime!, $t: DateTime!) {{ usage(from: $f, to: $t, groupBy: [ALLOCATION]) {{ rows {{ key {field} }} }} }}"),
            json!({"f": iso(s.started - Duration::minutes(5)), "t": iso(s.started + Duration::minutes(10))}),
        )
        .await;
    let rows = r["data"]["usage"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    rows.iter()
        .filter(|row| row["key"] == s.allocation.as_str())
        .map(|row| row[field].as_str().expect("decimal").to_owned())
        .next()
        .unwrap_or_else(|| "0".into())
}

pub async fn active_seconds(app: &TestApp, s: &Setup) -> String {
    allocation_usage(app, s, "activeSeconds").await
}
