//! Onboarding with verification: a provider registers its own node, which takes no
//! allocation until its agent reports the hardware registered (the same GPUs by UUID, of
//! the registered model and memory, MIG exactly as registered). A report of other
//! hardware is a mismatch with the reason shown to the provider — at onboarding, or later
//! on a verified node, which then stops taking allocations while what runs there stays.
//! An NVLink domain of two or more GPUs is checked by its links: every GPU of a model
//! with NVLink has all of them up; one of two or more nodes by its fabric, the same for
//! every tray. Reports are bounded; an operator's node is trusted as
//! registered.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const REGISTER: &str = "mutation($i: RegisterNodeInput!) { registerNode(input: $i) { node { id hostname verification } agentToken } }";
const MINE: &str = "{ providerNodes { hostname verification verificationReason verifiedAt } }";

fn node_input(hostname: &str, provider: Option<&str>) -> Value {
    let gpus: Vec<Value> = (0..2)
        .map(|i| json!({"uuid": format!("GPU-{hostname}-{i}"), "index": i}))
        .collect();
    json!({"hostname": hostname, "region": "eu-west", "zone": "eu-west-a", "rack": "r07",
           "nvlinkDomain": hostname, "gpuModel": "H100", "gpus": gpus, "provider": provider})
}

/// What a healthy agent of `hostname` sees, changed by `change`.
fn seen(hostname: &str, change: impl Fn(usize, &mut Value)) -> Value {
    let gpus: Vec<Value> = (0..2)
        .map(|i| {
            let mut g = json!({"uuid": format!("GPU-{hostname}-{i}"), "index": i,
                "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81_559, "mig_mode": false,
                "nvlinks_active": 18});
            change(i, &mut g);
            g
        })
        .collect();
    json!({"gpus": gpus})
}

async fn report(app: &TestApp, token: &str, body: &Value) -> (u16, Value) {
    let res = app
        .client
        .post(format!("{}/v1/agents/hardware", app.url))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("post");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

async fn order(app: &TestApp, key: &str, sku: &str) -> Value {
    app.gql(
        Some(key),
        "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id allocations { node { hostname } } } } }",
        json!({"s": sku}),
    )
    .await
}

async fn mine(app: &TestApp, key: &str) -> Value {
    let r = app.gql(Some(key), MINE, json!({})).await;
    r["data"]["providerNodes"][0].clone()
}

async fn a_providers_node_takes_work_only_once_its_hardware_is_verified(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let key = app.create_rhein_provider().await;
    let sku = app.create_h100_sku().await;
    let (_, tenant_key) = app.create_tenant("acme").await;

    // A provider registers its own nodes only.
    let r = app
        .gql(
            Some(&key),
            REGISTER,
            json!({"i": node_input("rhein-9", Some("seine-gpu"))}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");
    assert_eq!(r["errors"][0]["extensions"]["field"], "provider", "{r}");
    let r = app
        .gql(
            Some(&key),
            REGISTER,
            json!({"i": node_input("rhein-9", None)}),
        )
        .await;
    let registered = &r["data"]["registerNode"];
    assert_eq!(registered["node"]["verification"], "PENDING", "{r}");
    let token = registered["agentToken"].as_str().expect("token").to_owned();
    let (_, tenant_of_nobody) = app.create_tenant("nobody").await;
    let r = app
        .gql(
            Some(&tenant_of_nobody),
            REGISTER,
            json!({"i": node_input("x-1", None)}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // Pending: no allocation lands on it, and the catalog does not sell it.
    let r = order(&app, &tenant_key, &sku).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");

    // Other hardware: the provider sees why, and it still takes nothing.
    let wrong = seen("rhein-9", |i, g| {
        if i == 1 {
            g["name"] = json!("NVIDIA A100-SXM4-40GB");
            g["memory_mib"] = json!(40_960);
        }
    });
    let (status, verdict) = report(&app, &token, &wrong).await;
    assert_eq!(status, 200, "{verdict}");
    assert_eq!(verdict["verification"], "mismatch", "{verdict}");
    let reason = verdict["reason"].as_str().expect("reason");
    assert!(
        reason.contains("GPU-rhein-9-1 is a `NVIDIA A100-SXM4-40GB`, registered as H100")
            && reason.contains("40960 MiB"),
        "{reason}"
    );
    let node = mine(&app, &key).await;
    assert_eq!(
        (&node["verification"], &node["verificationReason"]),
        (&json!("MISMATCH"), &json!(reason)),
        "{node}"
    );
    let r = order(&app, &tenant_key, &sku).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");

    // A report no host could send is refused and changes nothing.
    let too_many = json!({"gpus": (0..65).map(|i| json!({"uuid": format!("GPU-{i}"), "index": i,
        "name": "NVIDIA H100", "memory_mib": 81_559, "mig_mode": false})).collect::<Vec<_>>()});
    let (status, answer) = report(&app, &token, &too_many).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(mine(&app, &key).await["verificationReason"], json!(reason));

    // The registered hardware: verified, and it takes work.
    let (_, verdict) = report(&app, &token, &seen("rhein-9", |_, _| {})).await;
    assert_eq!(verdict, json!({"verification": "verified"}));
    let node = mine(&app, &key).await;
    assert_eq!(node["verification"], "VERIFIED", "{node}");
    assert!(node["verifiedAt"].is_string() && node["verificationReason"].is_null());
    let r = order(&app, &tenant_key, &sku).await;
    assert_eq!(
        r["data"]["placeOrder"]["order"]["allocations"][0]["node"]["hostname"], "rhein-9",
        "{r}"
    );

    // Later the hardware changes (MIG turned on, a GPU gone): nothing new is placed,
    // what runs stays, the operator is told.
    let changed = json!({"gpus": [seen("rhein-9", |_, g| g["mig_mode"] = json!(true))["gpus"][0]]});
    let (_, verdict) = report(&app, &token, &changed).await;
    let reason = verdict["reason"].as_str().expect("reason");
    assert!(
        reason.contains("2 GPUs registered, the agent sees 1")
            && reason.contains("GPU-rhein-9-0 has MIG on, registered without MIG")
            && reason.contains("GPU-rhein-9-1 is registered but not seen"),
        "{reason}"
    );
    let r = order(&app, &tenant_key, &sku).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let r = app
        .gql(
            Some(&tenant_key),
            "{ orders(status: ACTIVE) { edges { node { id } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["orders"]["edges"].as_array().map(Vec::len),
        Some(1),
        "{r}"
    );
    let events = app
        .events_of(&app.operator_key, "node.hardware_mismatch")
        .await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["reason"], json!(reason));
    assert_eq!(
        app.events_of(&app.operator_key, "node.verified")
            .await
            .len(),
        1
    );
}

async fn an_operators_node_is_trusted_until_its_hardware_differs(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let r = app
        .gql(
            Some(&app.operator_key),
            REGISTER,
            json!({"i": node_input("own-1", None)}),
        )
        .await;
    assert_eq!(
        r["data"]["registerNode"]["node"]["verification"], "TRUSTED",
        "{r}"
    );
    let token = r["data"]["registerNode"]["agentToken"]
        .as_str()
        .expect("token")
        .to_owned();
    let (_, verdict) = report(&app, &token, &seen("own-1", |_, _| {})).await;
    assert_eq!(verdict, json!({"verification": "trusted"}));
    let (_, verdict) = report(
        &app,
        &token,
        &seen("own-1", |_, g| g["memory_mib"] = json!(1_024)),
    )
    .await;
    assert_eq!(verdict["verification"], "mismatch", "{verdict}");
    // Another node's agent token reports for its own node only; no token, no report.
    let (status, _) = report(&app, "nc_not_a_token", &seen("own-1", |_, _| {})).await;
    assert_eq!(status, 401);
}

async fn an_nvlink_domain_is_verified_by_its_links(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let key = app.create_rhein_provider().await;
    let r = app
        .gql(
            Some(&key),
            REGISTER,
            json!({"i": node_input("nvl-1", None)}),
        )
        .await;
    let token = r["data"]["registerNode"]["agentToken"]
        .as_str()
        .expect("token")
        .to_owned();

    // A link down on one GPU: the domain's promise is broken, and the provider sees where.
    let link_down = seen("nvl-1", |i, g| {
        if i == 1 {
            g["nvlinks_active"] = json!(16);
        }
    });
    let (_, verdict) = report(&app, &token, &link_down).await;
    assert_eq!(
        verdict["reason"],
        json!("GPU-nvl-1-1 has 16 of its 18 NVLink links active (NVLink domain `nvl-1`)"),
        "{verdict}"
    );
    assert_eq!(mine(&app, &key).await["verification"], "MISMATCH");

    // Silence about the links is no proof of them.
    let silent = seen("nvl-1", |_, g| {
        g.as_object_mut().expect("gpu").remove("nvlinks_active");
    });
    let (_, verdict) = report(&app, &token, &silent).await;
    let reason = verdict["reason"].as_str().expect("reason");
    assert!(
        reason.contains("GPU-nvl-1-0 did not report its NVLink links")
            && reason.contains("GPU-nvl-1-1 did not report its NVLink links"),
        "{reason}"
    );

    // More links than NVML has is no reading at all: refused, nothing changes.
    let impossible = seen("nvl-1", |_, g| g["nvlinks_active"] = json!(19));
    let (status, answer) = report(&app, &token, &impossible).await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(mine(&app, &key).await["verificationReason"], json!(reason));

    // Every link up: verified.
    let (_, verdict) = report(&app, &token, &seen("nvl-1", |_, _| {})).await;
    assert_eq!(verdict, json!({"verification": "verified"}));

    // A lone GPU in its own domain claims no NVLink: no link state is needed.
    let mut lone = node_input("solo-1", None);
    lone["gpus"] = json!([{"uuid": "GPU-solo-1-0", "index": 0}]);
    let r = app.gql(Some(&key), REGISTER, json!({"i": lone})).await;
    let token = r["data"]["registerNode"]["agentToken"]
        .as_str()
        .expect("token")
        .to_owned();
    let one = json!({"gpus": [{"uuid": "GPU-solo-1-0", "index": 0, "name": "NVIDIA H100 80GB HBM3",
        "memory_mib": 81_559, "mig_mode": false, "nvlinks_active": 0}]});
    let (_, verdict) = report(&app, &token, &one).await;
    assert_eq!(verdict, json!({"verification": "verified"}));
}

/// A GB200 tray of NVLink domain `nvl72-a`, as registered and as its agent sees it in
/// the fabric `cluster`/`clique` (none: the agent cannot tell).
fn tray(hostname: &str) -> Value {
    let mut input = node_input(hostname, None);
    input["gpuModel"] = json!("GB200");
    input["nvlinkDomain"] = json!("nvl72-a");
    input
}

fn tray_seen(hostname: &str, fabric: Option<(&str, u32, &str)>) -> Value {
    seen(hostname, |_, g| {
        g["name"] = json!("NVIDIA GB200");
        g["memory_mib"] = json!(189_471);
        if let Some((cluster, clique, state)) = fabric {
            g["fabric"] = json!({"cluster_uuid": cluster, "clique_id": clique, "state": state});
        }
    })
}

const CLUSTER: &str = "6f1c2b8e-4d0a-4c55-9a3e-0b7d2f9e8a11";
const OTHER_CLUSTER: &str = "0d3e5a7c-1b2f-4e6a-8c9d-2f4b6a8c0e13";

/// The trays of a multi-node NVLink domain are one NVLink fabric: each GPU registered with
/// it, in the same cluster and clique as the domain's other trays. A tray cabled into
/// another fabric, or whose agent cannot say, takes no work, with the reason.
async fn a_multi_node_nvlink_domain_is_verified_by_its_fabric(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let key = app.create_rhein_provider().await;
    let mut tokens = Vec::new();
    for host in ["tray-1", "tray-2"] {
        let r = app
            .gql(Some(&key), REGISTER, json!({"i": tray(host)}))
            .await;
        let token = r["data"]["registerNode"]["agentToken"].as_str();
        tokens.push(token.expect("token").to_owned());
    }
    let in_cluster = Some((CLUSTER, 1, "completed"));
    let (_, verdict) = report(&app, &tokens[0], &tray_seen("tray-1", in_cluster)).await;
    assert_eq!(verdict, json!({"verification": "verified"}));

    // Another cluster, or the same cluster's other clique: not this domain.
    for (cluster, clique, named) in [(OTHER_CLUSTER, 1, OTHER_CLUSTER), (CLUSTER, 2, CLUSTER)] {
        let body = tray_seen("tray-2", Some((cluster, clique, "completed")));
        let (_, verdict) = report(&app, &tokens[1], &body).await;
        assert_eq!(
            verdict["reason"],
            json!(format!(
                "its GPUs are in clique {clique} of NVLink fabric {named}, node `tray-1` of NVLink domain `nvl72-a` in clique 1 of NVLink fabric {CLUSTER}"
            )),
            "{verdict}"
        );
    }
    // Still registering with the fabric manager, or silent: no proof of the fabric.
    let body = tray_seen("tray-2", Some((CLUSTER, 1, "in_progress")));
    let (_, verdict) = report(&app, &tokens[1], &body).await;
    assert_eq!(
        verdict["reason"],
        json!(
            "GPU-tray-2-0 is not registered with its NVLink fabric: in progress (multi-node NVLink domain `nvl72-a`)"
        )
    );
    let (_, verdict) = report(&app, &tokens[1], &tray_seen("tray-2", None)).await;
    assert_eq!(
        verdict["reason"],
        json!("GPU-tray-2-0 did not report its NVLink fabric (multi-node NVLink domain `nvl72-a`)")
    );
    // A cluster that is no UUID, or a state NVML has not: refused, nothing changes.
    for bad in [
        tray_seen("tray-2", Some(("not-a-uuid", 1, "completed"))),
        tray_seen("tray-2", Some((CLUSTER, 1, "fine"))),
    ] {
        let (status, _) = report(&app, &tokens[1], &bad).await;
        assert_eq!(status, 400, "{bad}");
    }

    let (_, verdict) = report(&app, &tokens[1], &tray_seen("tray-2", in_cluster)).await;
    assert_eq!(verdict, json!({"verification": "verified"}));
    let r = app.gql(Some(&key), MINE, json!({})).await;
    let states: Vec<&Value> = r["data"]["providerNodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| &n["verification"])
        .collect();
    assert_eq!(states, [&json!("VERIFIED"), &json!("VERIFIED")], "{r}");

    // A retired tray is no longer part of the domain: the other stands alone.
    let r = app
        .gql(Some(&key), "{ providerNodes { id hostname } }", json!({}))
        .await;
    let first = r["data"]["providerNodes"][0]["id"].clone();
    for mutation in [
        "mutation($id: ID!) { drainNode(id: $id) { state } }",
        "mutation($id: ID!) { retireNode(id: $id) { state } }",
    ] {
        let r = app.gql(Some(&key), mutation, json!({"id": first})).await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let moved = tray_seen("tray-2", Some((OTHER_CLUSTER, 1, "completed")));
    let (_, verdict) = report(&app, &tokens[1], &moved).await;
    assert_eq!(verdict, json!({"verification": "verified"}));
}

on_both_databases!(
    a_multi_node_nvlink_domain_is_verified_by_its_fabric,
    a_providers_node_takes_work_only_once_its_hardware_is_verified,
    an_operators_node_is_trusted_until_its_hardware_differs,
    an_nvlink_domain_is_verified_by_its_links,
);
