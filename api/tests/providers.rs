//! Providers: operators create them with their legal and payout details (every field
//! checked, a refused one changing nothing) and their keys. A provider key reads its own
//! provider and nodes — state, GPU health, and who runs on a GPU only as an allocation
//! id — and nothing else: no other provider, no tenant, no invoice, no ledger, no fleet
//! beyond its own. A tenant reads nothing of any provider.

mod support;

use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const CREATE: &str = "mutation($i: CreateProviderInput!) { createProvider(input: $i) { provider { id name legalName country currency payoutMethod payoutAccount } apiKey } }";
const OWN_NODES: &str = "query($p: ID) { providerNodes(providerId: $p) { hostname state gpusInUse gpus { index health allocationIds } } }";

fn input(name: &str, method: &str, account: Option<&str>) -> Value {
    json!({"name": name, "legalName": format!("{name} GmbH"), "country": "de", "currency": "EUR",
           "payoutMethod": method, "payoutAccount": account})
}

async fn create(app: &TestApp, input: Value) -> Value {
    app.gql(Some(&app.operator_key), CREATE, json!({"i": input}))
        .await
}

/// (provider id, its key).
async fn provider(app: &TestApp, name: &str) -> (String, String) {
    let r = create(
        app,
        input(
            name,
            "SEPA_CREDIT_TRANSFER",
            Some("DE89 3704 0044 0532 0130 00 COBADEFFXXX"),
        ),
    )
    .await;
    let p = &r["data"]["createProvider"];
    assert!(p.is_object(), "createProvider: {r}");
    (
        p["provider"]["id"].as_str().expect("id").to_owned(),
        p["apiKey"].as_str().expect("key").to_owned(),
    )
}

async fn providers_are_checked_and_created_with_their_first_key(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let refused = [
        (input("Not A Slug", "MANUAL", None), "name"),
        (
            json!({"name": "x", "legalName": " ", "country": "DE", "currency": "EUR", "payoutMethod": "MANUAL"}),
            "legalName",
        ),
        (
            json!({"name": "x", "legalName": "X", "country": "Germany", "currency": "EUR", "payoutMethod": "MANUAL"}),
            "country",
        ),
        (
            json!({"name": "x", "legalName": "X", "country": "DE", "currency": "EURO", "payoutMethod": "MANUAL"}),
            "currency",
        ),
        (
            input(
                "x",
                "SEPA_CREDIT_TRANSFER",
                Some("DE89 3704 0044 0532 0130 01 COBADEFFXXX"),
            ),
            "payoutAccount",
        ),
        (input("x", "SEPA_CREDIT_TRANSFER", None), "payoutAccount"),
        (
            input("x", "STRIPE_CONNECT", Some("cus_123456789")),
            "payoutAccount",
        ),
        (
            input("x", "MANUAL", Some("acct_123456789")),
            "payoutAccount",
        ),
    ];
    for (bad, field) in refused {
        let r = create(&app, bad.clone()).await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{bad}: {r}");
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{bad}: {r}");
    }
    let r = app
        .gql(Some(&app.operator_key), "{ providers { name } }", json!({}))
        .await;
    assert_eq!(
        r["data"]["providers"],
        json!([]),
        "refusals created nothing: {r}"
    );

    let r = create(
        &app,
        input(
            "rhein-gpu",
            "SEPA_CREDIT_TRANSFER",
            Some("de89 3704 0044 0532 0130 00 cobadeffxxx"),
        ),
    )
    .await;
    let p = &r["data"]["createProvider"]["provider"];
    assert_eq!(
        (&p["country"], &p["payoutMethod"], &p["payoutAccount"]),
        (
            &json!("DE"),
            &json!("SEPA_CREDIT_TRANSFER"),
            &json!("DE89370400440532013000 COBADEFFXXX")
        ),
        "{r}"
    );
    let r = create(&app, input("rhein-gpu", "MANUAL", None)).await;
    assert_eq!(error_code(&r), Some("ALREADY_EXISTS"), "{r}");
    let r = create(
        &app,
        input(
            "connect-gpu",
            "STRIPE_CONNECT",
            Some("acct_1A2b3C4d5E6f7G8h"),
        ),
    )
    .await;
    assert_eq!(
        r["data"]["createProvider"]["provider"]["payoutMethod"], "STRIPE_CONNECT",
        "{r}"
    );

    // The first key acts as the provider; createApiKey cannot mint provider keys.
    let key = r["data"]["createProvider"]["apiKey"].as_str().expect("key");
    let r = app
        .gql(
            Some(key),
            "{ viewer { role } provider { name } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["viewer"]["role"], "PROVIDER", "{r}");
    assert_eq!(r["data"]["provider"]["name"], "connect-gpu", "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation { createApiKey(role: PROVIDER) { apiKey } }",
            json!({}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");

    // Another key works until revoked.
    let id = p["id"].clone();
    let r = app
        .gql(Some(&app.operator_key), "mutation($p: ID!) { createProviderKey(providerId: $p, label: \"ops\") { apiKey key { id role } } }", json!({"p": id}))
        .await;
    let second = r["data"]["createProviderKey"]["apiKey"]
        .as_str()
        .expect("key")
        .to_owned();
    assert_eq!(r["data"]["createProviderKey"]["key"]["role"], "PROVIDER");
    let r = app
        .gql(Some(&second), "{ provider { name } }", json!({}))
        .await;
    assert_eq!(r["data"]["provider"]["name"], "rhein-gpu", "{r}");
    let key_id = app
        .gql(
            Some(&app.operator_key),
            "mutation($p: ID!) { createProviderKey(providerId: $p) { key { id } } }",
            json!({"p": id}),
        )
        .await["data"]["createProviderKey"]["key"]["id"]
        .clone();
    let r = app
        .gql(
            Some(&app.operator_key),
            "mutation($k: ID!) { revokeApiKey(id: $k) { key { revokedAt } } }",
            json!({"k": key_id}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
}

/// Registers `hostname` (two H100s) for the provider named `provider`; its agent token.
async fn node_of(app: &TestApp, hostname: &str, provider: &str) -> String {
    let r = app
        .register_node(hostname, "H100", 2, &format!(", provider: \"{provider}\""))
        .await;
    support::agent_token(&r)
}

/// The status the node's agent (of `token`) gets when it asks for its assignments.
async fn agent_asks(app: &TestApp, token: &str) -> u16 {
    let res = app
        .client
        .get(format!("{}/v1/agents/assignments", app.url))
        .bearer_auth(token)
        .send()
        .await
        .expect("get");
    res.status().as_u16()
}

/// The node's agent reports an XID 79 on its second GPU.
async fn xid_on_second_gpu(app: &TestApp, hostname: &str, token: &str) {
    use neocloud_schema::clock::Clock;
    let end = app.clock.now() - chrono::TimeDelta::seconds(5);
    let start = end - chrono::TimeDelta::seconds(10);
    let body = json!({"version": 1, "agent_id": hostname, "boot_id": uuid::Uuid::new_v4(), "seq": 1,
        "window": {"start": start.to_rfc3339(), "end": end.to_rfc3339()},
        "devices": [{"uuid": format!("GPU-{hostname}-1"),
                     "events": [{"kind": "xid", "code": 79, "at": start.to_rfc3339()}]}]});
    let res = app
        .client
        .post(format!("{}/v1/ingest", app.url))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("post");
    let status = res.status().as_u16();
    assert_eq!(status, 200, "{}", res.text().await.unwrap_or_default());
}

async fn a_provider_sees_its_own_nodes_and_nobody_it_serves(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (rhein, rhein_key) = provider(&app, "rhein-gpu").await;
    let (_, seine_key) = provider(&app, "seine-gpu").await;
    let rhein_agent = node_of(&app, "rhein-1", "rhein-gpu").await;
    node_of(&app, "seine-1", "seine-gpu").await;
    let sku = app.create_h100_sku().await;
    let (tenant, tenant_key) = app.create_tenant("secret-customer").await;
    let mut allocations = Vec::new();
    for _ in 0..3 {
        let r = app
            .gql(Some(&tenant_key), "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { allocations { id node { hostname } } } } }", json!({"s": sku}))
            .await;
        let a = &r["data"]["placeOrder"]["order"]["allocations"][0];
        assert!(a.is_object(), "{r}");
        allocations.push((
            a["id"].as_str().expect("id").to_owned(),
            a["node"]["hostname"].as_str().expect("host").to_owned(),
        ));
    }

    // Each provider sees its node and exactly the allocations on it, by id only.
    for (key, host) in [(&rhein_key, "rhein-1"), (&seine_key, "seine-1")] {
        let r = app.gql(Some(key), OWN_NODES, json!({"p": null})).await;
        let nodes = r["data"]["providerNodes"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"));
        assert_eq!(nodes.len(), 1, "{r}");
        assert_eq!(nodes[0]["hostname"], host);
        let mut seen: Vec<String> = nodes[0]["gpus"]
            .as_array()
            .expect("gpus")
            .iter()
            .flat_map(|g| g["allocationIds"].as_array().cloned().unwrap_or_default())
            .map(|id| id.as_str().expect("id").to_owned())
            .collect();
        seen.sort();
        let mut want: Vec<String> = allocations
            .iter()
            .filter(|(_, h)| h == host)
            .map(|(id, _)| id.clone())
            .collect();
        want.sort();
        assert_eq!(seen, want, "{r}");
        assert_eq!(nodes[0]["gpusInUse"], json!(want.len()));
        let text = r.to_string();
        assert!(
            !text.contains(&tenant) && !text.contains("secret-customer"),
            "{text}"
        );
    }

    // The health events behind a node's reliability reach its provider only.
    xid_on_second_gpu(&app, "rhein-1", &rhein_agent).await;
    let events = "{ providerNodes { healthEvents { gpuIndex kind code } } }";
    let r = app.gql(Some(&rhein_key), events, json!({})).await;
    assert_eq!(
        r["data"]["providerNodes"][0]["healthEvents"],
        json!([{"gpuIndex": 1, "kind": "xid", "code": 79}]),
        "{r}"
    );
    let r = app.gql(Some(&seine_key), events, json!({})).await;
    assert_eq!(
        r["data"]["providerNodes"][0]["healthEvents"],
        json!([]),
        "{r}"
    );

    // Another provider's nodes and provider: as if they did not exist.
    let r = app
        .gql(Some(&seine_key), OWN_NODES, json!({"p": rhein}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(
            Some(&seine_key),
            "query($p: ID) { provider(id: $p) { name } }",
            json!({"p": rhein}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    // Operators read any provider's.
    let r = app
        .gql(Some(&app.operator_key), OWN_NODES, json!({"p": rhein}))
        .await;
    assert_eq!(r["data"]["providerNodes"][0]["hostname"], "rhein-1", "{r}");

    // Nothing of tenants, invoices, the fleet, the ledger or keys.
    for query in [
        "{ providers { name } }",
        "{ tenants { edges { node { name } } } }",
        "{ nodes { edges { node { hostname } } } }",
        "{ invoices { edges { node { id } } } }",
        "{ orders { edges { node { id } } } }",
        "{ ledgerBalances { balance } }",
        "{ ledgerCheck { balanced } }",
        "{ auditLog { edges { node { action } } } }",
        "{ creditNotes { id } }",
        "{ fleetSummary { gpus } }",
    ] {
        let r = app.gql(Some(&rhein_key), query, json!({})).await;
        assert!(
            r["data"].is_null() || r["errors"].is_array(),
            "{query}: {r}"
        );
        let code = error_code(&r);
        assert!(
            matches!(code, Some("FORBIDDEN" | "INVALID_QUERY")),
            "{query}: {r}"
        );
        assert!(!r.to_string().contains("secret-customer"), "{query}: {r}");
    }
    let invoice = app.close_period(&tenant, "id").await["id"].clone();
    for path in [
        format!(
            "/v1/invoices/{}/export?format=json",
            invoice.as_str().expect("id")
        ),
        "/v1/ledger/journal.csv".to_owned(),
        "/v1/tenant/export".to_owned(),
    ] {
        let res = app
            .client
            .get(format!("{}{path}", app.url))
            .bearer_auth(&rhein_key)
            .send()
            .await
            .expect("get");
        assert!(
            matches!(res.status().as_u16(), 403 | 404),
            "{path}: {}",
            res.status()
        );
    }

    // A tenant reads nothing of providers.
    for query in [
        "{ providers { name } }",
        "{ provider { name } }",
        "{ providerNodes { hostname } }",
    ] {
        let r = app.gql(Some(&tenant_key), query, json!({})).await;
        assert_eq!(error_code(&r), Some("FORBIDDEN"), "{query}: {r}");
    }
    let r = app
        .gql(
            Some(&tenant_key),
            "query($p: ID) { provider(id: $p) { name } }",
            json!({"p": rhein}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
}

const AGREE: &str = "mutation($i: ProviderAgreementInput!) { createProviderAgreement(input: $i) { version effectiveFrom currency model revenueSharePercent fixedRates { form region pricePerUnitHour } platformFeePercent slaCreditsBorneBy payoutSchedule payoutMinimum holdUntilPaid } }";
const AGREEMENTS: &str = "query($p: ID) { providerAgreements(providerId: $p) { version model } }";

/// Terms are versions: each from its start on, never retroactive, never changed.
async fn agreements_are_versions_never_changed(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (rhein, rhein_key) = provider(&app, "rhein-gpu").await;
    let (seine, _) = provider(&app, "seine-gpu").await;
    let (_, tenant_key) = app.create_tenant("acme").await;
    let share = json!({"providerId": rhein, "model": "REVENUE_SHARE", "revenueSharePercent": "70",
                       "platformFeePercent": "5", "payoutMinimum": "100.00"});
    let r = app
        .gql(Some(&app.operator_key), AGREE, json!({"i": share}))
        .await;
    let v1 = &r["data"]["createProviderAgreement"];
    assert_eq!(
        (
            &v1["version"],
            &v1["currency"],
            &v1["revenueSharePercent"],
            &v1["slaCreditsBorneBy"],
            &v1["holdUntilPaid"],
            &v1["payoutSchedule"]
        ),
        (
            &json!(1),
            &json!("EUR"),
            &json!("70"),
            &json!("PROVIDER"),
            &json!(true),
            &json!("monthly")
        ),
        "{r}"
    );

    let later = (chrono::Utc::now() + chrono::TimeDelta::days(30)).to_rfc3339();
    let refused = [
        (
            json!({"effectiveFrom": "2020-01-01T00:00:00Z"}),
            "effectiveFrom",
        ),
        (json!({"revenueSharePercent": "0"}), "revenueSharePercent"),
        (json!({"platformFeePercent": "100"}), "platformFeePercent"),
        (json!({"payoutMinimum": "1.001"}), "payoutMinimum"),
        (json!({"model": "FIXED_RATE"}), "revenueSharePercent"),
        (
            json!({"model": "FIXED_RATE", "revenueSharePercent": null}),
            "fixedRates",
        ),
    ];
    for (change, field) in refused {
        let mut input = share.clone();
        input
            .as_object_mut()
            .expect("object")
            .extend(change.as_object().expect("object").clone());
        input["effectiveFrom"] = input.get("effectiveFrom").cloned().unwrap_or(json!(later));
        let r = app
            .gql(Some(&app.operator_key), AGREE, json!({"i": input}))
            .await;
        assert_eq!(r["errors"][0]["extensions"]["field"], field, "{input}: {r}");
    }
    let fixed = json!({"providerId": rhein, "model": "FIXED_RATE", "effectiveFrom": later,
        "fixedRates": [{"form": "WHOLE_GPU", "region": "eu-west", "pricePerUnitHour": "1.85"},
                       {"form": "MIG", "region": "eu-west", "pricePerUnitHour": "0.31"}],
        "platformFeePercent": "0", "slaCreditsBorneBy": "PLATFORM", "payoutMinimum": "0", "holdUntilPaid": false});
    let r = app
        .gql(Some(&app.operator_key), AGREE, json!({"i": fixed}))
        .await;
    let v2 = &r["data"]["createProviderAgreement"];
    assert_eq!(
        (&v2["version"], &v2["model"]),
        (&json!(2), &json!("FIXED_RATE")),
        "{r}"
    );
    assert_eq!(
        v2["fixedRates"][0],
        json!({"form": "WHOLE_GPU", "region": "eu-west", "pricePerUnitHour": "1.85"})
    );
    // Not before the latest version's start.
    let r = app
        .gql(Some(&app.operator_key), AGREE, json!({"i": share}))
        .await;
    assert_eq!(
        r["errors"][0]["extensions"]["field"], "effectiveFrom",
        "{r}"
    );

    // The provider reads its own versions; nobody else's, and writes none.
    let r = app
        .gql(Some(&rhein_key), AGREEMENTS, json!({"p": null}))
        .await;
    assert_eq!(
        r["data"]["providerAgreements"],
        json!([{"version": 1, "model": "REVENUE_SHARE"}, {"version": 2, "model": "FIXED_RATE"}]),
        "{r}"
    );
    let r = app
        .gql(Some(&rhein_key), AGREEMENTS, json!({"p": seine}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app.gql(Some(&rhein_key), AGREE, json!({"i": share})).await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&tenant_key), AGREEMENTS, json!({"p": rhein}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // Details change, checked as at creation; the currency stays once terms exist.
    const UPDATE: &str = "mutation($id: ID!, $i: ProviderDetailsInput!) { updateProvider(id: $id, input: $i) { legalName country currency payoutMethod payoutAccount } }";
    let details = |currency: &str, method: &str, account: &str| {
        json!({"legalName": "Seine Calcul SAS", "country": "fr", "currency": currency,
               "payoutMethod": method, "payoutAccount": account})
    };
    let r = app
        .gql(
            Some(&app.operator_key),
            UPDATE,
            json!({"id": seine, "i": details("USD", "STRIPE_CONNECT", "acct_1A2b3C4d5E6f7G8h")}),
        )
        .await;
    assert_eq!(
        r["data"]["updateProvider"],
        json!({"legalName": "Seine Calcul SAS", "country": "FR", "currency": "USD",
               "payoutMethod": "STRIPE_CONNECT", "payoutAccount": "acct_1A2b3C4d5E6f7G8h"}),
        "{r}"
    );
    let r = app
        .gql(
            Some(&app.operator_key),
            UPDATE,
            json!({"id": rhein, "i": details("USD", "MANUAL", "")}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app.gql(Some(&app.operator_key), UPDATE,
        json!({"id": rhein, "i": details("EUR", "SEPA_CREDIT_TRANSFER", "DE00 3704 0044 0532 0130 00 COBADEFFXXX")})).await;
    assert_eq!(
        r["errors"][0]["extensions"]["field"], "payoutAccount",
        "{r}"
    );
    let r = app
        .gql(
            Some(&rhein_key),
            "{ provider { legalName currency payoutAccount } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["provider"],
        json!({"legalName": "rhein-gpu GmbH", "currency": "EUR", "payoutAccount": "DE89370400440532013000 COBADEFFXXX"}),
        "refusals changed nothing: {r}"
    );
    let r = app
        .gql(
            Some(&rhein_key),
            UPDATE,
            json!({"id": rhein, "i": details("EUR", "MANUAL", "")}),
        )
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");

    // The database refuses to change a version.
    use sea_orm::ConnectionTrait;
    for sql in [
        "UPDATE provider_agreements SET hold_until_paid = false",
        "DELETE FROM provider_agreements",
    ] {
        assert!(
            app.db.execute_unprepared(sql).await.is_err(),
            "{sql} was allowed"
        );
    }
}

/// A provider mints, lists and revokes its own keys, and nobody else's.
async fn a_provider_manages_its_own_keys(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (rhein, rhein_key) = provider(&app, "rhein-gpu").await;
    let (seine, seine_key) = provider(&app, "seine-gpu").await;
    const MINT: &str = "mutation($p: ID!) { createProviderKey(providerId: $p, label: \"ci\") { apiKey key { id role } } }";
    const KEYS: &str = "{ apiKeys { id role label revokedAt } }";
    let r = app.gql(Some(&rhein_key), MINT, json!({"p": rhein})).await;
    let minted = &r["data"]["createProviderKey"];
    assert_eq!(minted["key"]["role"], "PROVIDER", "{r}");
    let second = minted["apiKey"].as_str().expect("key").to_owned();
    let second_id = minted["key"]["id"].clone();
    let r = app
        .gql(Some(&second), "{ provider { name } }", json!({}))
        .await;
    assert_eq!(r["data"]["provider"]["name"], "rhein-gpu", "{r}");
    let r = app.gql(Some(&rhein_key), MINT, json!({"p": seine})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "another provider's: {r}");

    // Its keys, and only its.
    let r = app.gql(Some(&rhein_key), KEYS, json!({})).await;
    let keys = r["data"]["apiKeys"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(keys.len(), 2, "{r}");
    assert!(keys.iter().all(|k| k["role"] == "PROVIDER"), "{r}");
    let seine_ids: Vec<Value> = app.gql(Some(&seine_key), KEYS, json!({})).await["data"]["apiKeys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["id"].clone())
        .collect();
    assert_eq!(seine_ids.len(), 1);
    assert!(!keys.iter().any(|k| seine_ids.contains(&k["id"])));
    let r = app
        .gql(
            Some(&rhein_key),
            "query($t: ID) { apiKeys(tenantId: $t) { id } }",
            json!({"t": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");

    // It revokes its own; another provider's key is as if it did not exist.
    const REVOKE: &str = "mutation($k: ID!) { revokeApiKey(id: $k) { key { revokedAt } } }";
    let r = app
        .gql(Some(&rhein_key), REVOKE, json!({"k": seine_ids[0]}))
        .await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(Some(&seine_key), "{ provider { name } }", json!({}))
        .await;
    assert_eq!(
        r["data"]["provider"]["name"], "seine-gpu",
        "still valid: {r}"
    );
    let r = app
        .gql(Some(&rhein_key), REVOKE, json!({"k": second_id}))
        .await;
    assert!(
        r["data"]["revokeApiKey"]["key"]["revokedAt"].is_string(),
        "{r}"
    );
    let r = app
        .gql(Some(&second), "{ provider { name } }", json!({}))
        .await;
    assert_eq!(error_code(&r), Some("UNAUTHENTICATED"), "{r}");
}

/// Maintenance: a provider drains its own node and brings it back, and nothing more — not
/// down (the operator's call), not another provider's node, not the node's operator-only
/// fields.
async fn a_provider_drains_and_undrains_its_own_nodes_only(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, rhein_key) = provider(&app, "rhein-gpu").await;
    provider(&app, "seine-gpu").await;
    node_of(&app, "rhein-1", "rhein-gpu").await;
    node_of(&app, "seine-1", "seine-gpu").await;
    let id_of = |host: &'static str| {
        let app = &app;
        async move {
            let r = app
                .gql(
                    Some(&app.operator_key),
                    "query($h: String!) { node(hostname: $h) { id state } }",
                    json!({"h": host}),
                )
                .await;
            (
                r["data"]["node"]["id"].clone(),
                r["data"]["node"]["state"].clone(),
            )
        }
    };
    let (rhein, _) = id_of("rhein-1").await;
    let (seine, _) = id_of("seine-1").await;
    let set =
        "mutation($n: ID!, $s: NodeState!) { setNodeState(id: $n, state: $s) { hostname state } }";
    let drain = "mutation($n: ID!) { drainNode(id: $n) { hostname state } }";
    let r = app.gql(Some(&rhein_key), drain, json!({"n": rhein})).await;
    assert_eq!(r["data"]["drainNode"]["state"], "DRAINING", "{r}");
    assert_eq!(id_of("rhein-1").await.1, "DRAINING");
    let r = app
        .gql(Some(&rhein_key), set, json!({"n": rhein, "s": "DOWN"}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(Some(&rhein_key), set, json!({"n": rhein, "s": "ACTIVE"}))
        .await;
    assert_eq!(r["data"]["setNodeState"]["state"], "ACTIVE", "{r}");
    let r = app.gql(Some(&rhein_key), drain, json!({"n": seine})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    assert_eq!(
        id_of("seine-1").await.1,
        "ACTIVE",
        "another provider's node is untouched"
    );
    let r = app
        .gql(
            Some(&rhein_key),
            "mutation($n: ID!) { drainNode(id: $n) { state agentTokens { id } allocations { id } } }",
            json!({"n": rhein}),
        )
        .await;
    assert_eq!(
        error_code(&r),
        Some("FORBIDDEN"),
        "operator-only fields stay so: {r}"
    );
    let by_provider = node_actions_by_providers(&app, "node.set_state").await;
    assert!(
        by_provider >= 2,
        "drain and undrain audited under the provider"
    );
}

/// How many `action` entries on nodes the audit log records under a provider key.
async fn node_actions_by_providers(app: &TestApp, action: &str) -> usize {
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {objectType: \"node\"}) { nodes { actorRole action } } }",
            json!({}),
        )
        .await;
    r["data"]["auditLog"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .filter(|e| e["actorRole"] == "provider" && e["action"] == action)
        .count()
}

const RETIRE: &str = "mutation($n: ID!) { retireNode(id: $n) { hostname state retiredAt } }";

async fn node_id(app: &TestApp, hostname: &str) -> Value {
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($h: String!) { node(hostname: $h) { id } }",
            json!({"h": hostname}),
        )
        .await;
    r["data"]["node"]["id"].clone()
}

async fn a_provider_retires_its_own_node_once_nothing_runs_there(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (_, rhein_key) = provider(&app, "rhein-gpu").await;
    let (_, seine_key) = provider(&app, "seine-gpu").await;
    let rhein_agent = node_of(&app, "rhein-1", "rhein-gpu").await;
    node_of(&app, "seine-1", "seine-gpu").await;
    assert_eq!(agent_asks(&app, &rhein_agent).await, 200);
    let (rhein, seine) = (
        node_id(&app, "rhein-1").await,
        node_id(&app, "seine-1").await,
    );
    let sku = app.create_h100_sku().await;
    let (_, tenant_key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&seine_key),
            "mutation($n: ID!) { drainNode(id: $n) { state } }",
            json!({"n": seine}),
        )
        .await;
    assert_eq!(r["data"]["drainNode"]["state"], "DRAINING", "{r}");
    let place = "mutation($s: ID!) { placeOrder(input: {sku: $s, count: 1}) { order { id allocations { node { hostname } } } } }";
    let r = app.gql(Some(&tenant_key), place, json!({"s": sku})).await;
    let order = r["data"]["placeOrder"]["order"].clone();
    assert_eq!(
        order["allocations"][0]["node"]["hostname"], "rhein-1",
        "{r}"
    );

    // Not while an allocation runs there; not another provider's node; not a tenant.
    let r = app.gql(Some(&rhein_key), RETIRE, json!({"n": rhein})).await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app.gql(Some(&seine_key), RETIRE, json!({"n": rhein})).await;
    assert_eq!(error_code(&r), Some("NOT_FOUND"), "{r}");
    let r = app
        .gql(Some(&tenant_key), RETIRE, json!({"n": rhein}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($h: String!) { node(hostname: $h) { state } }",
            json!({"h": "rhein-1"}),
        )
        .await;
    assert_eq!(
        r["data"]["node"]["state"], "ACTIVE",
        "refused, nothing changed: {r}"
    );

    // Once the allocation has ended, it leaves the fleet: retired, and twice is once.
    let r = app
        .gql(
            Some(&tenant_key),
            "mutation($o: ID!) { releaseOrder(id: $o) { order { id } } }",
            json!({"o": order["id"]}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let r = app.gql(Some(&rhein_key), RETIRE, json!({"n": rhein})).await;
    let retired = &r["data"]["retireNode"];
    assert_eq!(retired["state"], "RETIRED", "{r}");
    assert!(retired["retiredAt"].is_string(), "{r}");
    let again = app.gql(Some(&rhein_key), RETIRE, json!({"n": rhein})).await;
    assert_eq!(again["data"]["retireNode"], *retired, "{again}");
    // Its agent's token died with it: the agent is refused from then on.
    assert_eq!(agent_asks(&app, &rhein_agent).await, 401);

    // For good: no state brings it back, and setNodeState retires nothing.
    let set = "mutation($n: ID!, $s: NodeState!) { setNodeState(id: $n, state: $s) { state } }";
    let r = app
        .gql(
            Some(&app.operator_key),
            set,
            json!({"n": rhein, "s": "ACTIVE"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_STATE"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            set,
            json!({"n": seine, "s": "RETIRED"}),
        )
        .await;
    assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{r}");

    // Nothing is placed on it or sold from it; the fleet tree leaves it out; its
    // provider still sees it, retired.
    let r = app.gql(Some(&tenant_key), place, json!({"s": sku})).await;
    assert_eq!(error_code(&r), Some("INSUFFICIENT_CAPACITY"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ fleetTopology { nodes } }",
            json!({}),
        )
        .await;
    let in_tree: i64 = r["data"]["fleetTopology"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|d| d["nodes"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(in_tree, 1, "only seine-1 is in the fleet: {r}");
    let r = app
        .gql(
            Some(&rhein_key),
            "{ providerNodes { hostname state retiredAt } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["providerNodes"][0]["state"], "RETIRED", "{r}");
    assert_eq!(
        app.events_of(&app.operator_key, "node.retired").await.len(),
        1
    );
    let by_provider = node_actions_by_providers(&app, "node.retire").await;
    assert_eq!(by_provider, 1);
}

on_both_databases!(
    a_provider_retires_its_own_node_once_nothing_runs_there,
    a_provider_drains_and_undrains_its_own_nodes_only,
    a_provider_manages_its_own_keys,
    agreements_are_versions_never_changed,
    providers_are_checked_and_created_with_their_first_key,
    a_provider_sees_its_own_nodes_and_nobody_it_serves,
);
