//! A fleet under load: nodes whose GPUs are all allocated, and the batches their agents
//! would ship.
#![allow(dead_code)] // not every benchmark ingests

use chrono::{Duration, Utc};
use serde_json::{Value, json};

use super::{BenchServer, gql};

const PROCESSES: usize = 8;

pub fn batch(
    host: &str,
    boot: &str,
    seq: usize,
    gpus: &[(String, String)],
    start: chrono::DateTime<Utc>,
) -> Value {
    let iso = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let devices: Vec<Value> = gpus
        .iter()
        .map(|(uuid, alloc)| {
            let processes: Vec<Value> = (0..PROCESSES)
                .map(|p| {
                    json!({"pid": 1000 + p, "allocation_id": alloc,
                    "labels": {"project": format!("p{}", p % 2)},
                    "sm_util_pct": 7.5, "fb_used_bytes": 1u64 << 30})
                })
                .collect();
            json!({"uuid": uuid, "sm_util_pct": 60.0, "fb_used_bytes": 8u64 << 30,
                "energy_mj": 1_000_000 + seq * 3_500_000, "power_mw": 350000, "temp_c": 60,
                "health": "ok", "events": [], "processes": processes})
        })
        .collect();
    json!({"version": 1, "agent_id": host, "boot_id": boot, "seq": seq,
        "window": {"start": iso(start), "end": iso(start + Duration::seconds(10))},
        "devices": devices})
}

/// Samples in one batch: each device reading and each process reading.
pub fn samples(b: &Value) -> usize {
    b["devices"].as_array().map_or(0, |d| {
        d.iter()
            .map(|x| 1 + x["processes"].as_array().map_or(0, Vec::len))
            .sum()
    })
}

/// A registered node of 8 H100s, every GPU in one allocation.
pub struct AllocatedNode {
    pub id: String,
    pub host: String,
    pub token: String,
    /// (GPU uuid, allocation id).
    pub gpus: Vec<(String, String)>,
}

/// Registers `nodes` nodes of 8 H100s in eu-west and has one tenant order each whole.
pub async fn allocated_nodes(
    server: &BenchServer,
    client: &reqwest::Client,
    nodes: usize,
) -> Vec<AllocatedNode> {
    let (url, operator) = (&server.url, &server.operator_key);
    let (sku, tenant) = server.h100_sku_and_tenant(client).await;
    let mut agents = Vec::new();
    for n in 0..nodes {
        let host = format!("hgx-{n:04}");
        let gpus: Vec<Value> = (0..8)
            .map(|i| json!({"uuid": format!("GPU-{n:04}-{i}"), "index": i}))
            .collect();
        let r = gql(client, url, operator,
            "mutation($h: String!, $g: [GpuRegistrationInput!]!) { registerNode(input: {hostname: $h, region: \"eu-west\", zone: \"a\", rack: \"r1\", nvlinkDomain: $h, gpuModel: \"H100\", gpus: $g}) { node { id } agentToken } }",
            json!({"h": host, "g": gpus})).await;
        let registered = &r["data"]["registerNode"];
        let token = registered["agentToken"].as_str().expect("token").to_owned();
        let id = registered["node"]["id"].as_str().expect("node").to_owned();
        let r = gql(client, url, &tenant,
            "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 8, topology: {level: NODE}}) { order { allocations { id gpus { uuid } } } } }",
            json!({"s": sku})).await;
        let alloc = &r["data"]["placeOrder"]["order"]["allocations"][0];
        let allocation = alloc["id"].as_str().expect("allocation").to_owned();
        let placed = alloc["gpus"]
            .as_array()
            .expect("gpus")
            .iter()
            .map(|g| {
                (
                    g["uuid"].as_str().expect("uuid").to_owned(),
                    allocation.clone(),
                )
            })
            .collect();
        agents.push(AllocatedNode {
            id,
            host,
            token,
            gpus: placed,
        });
    }
    agents
}

/// `batches` consecutive 10 s windows per node from now, in node order: (token, batch).
pub fn batches_of(agents: &[AllocatedNode], batches: usize) -> Vec<(String, Value)> {
    let start = Utc::now();
    agents
        .iter()
        .flat_map(|node| {
            let boot = uuid::Uuid::new_v4().to_string();
            (0..batches)
                .map(move |s| {
                    let at = start + Duration::seconds(10 * i64::try_from(s).unwrap_or(0));
                    (
                        node.token.clone(),
                        batch(&node.host, &boot, s + 1, &node.gpus, at),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}
