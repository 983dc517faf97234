//! Payment terms through the API, on both databases: an operator sets a tenant's net
//! terms (bounded, audited, operators only); an invoice falls due its finalization plus
//! the terms, shown in GraphQL and the exports; and the reminders that go out as the
//! clock moves past due dates agree with a model written from docs/invoicing.md
//! ("Due dates and reminders"), over generated sweep times, for tenants on different
//! terms at once: each reminder once, in its window, the invoice OVERDUE from its due date.

mod support;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use neocloud_api::invoicing::{Billing, send_reminders};
use neocloud_schema::clock::Clock;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use support::{Backend, TestApp, error_code};

const SET_TERMS: &str = "mutation($t: ID!, $d: Int!) { setPaymentTerms(tenantId: $t, netTermsDays: $d) { id netTermsDays } }";

async fn terms_are_the_operators_to_set_within_bounds(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (tenant, key) = app.create_tenant("acme").await;
    let r = app
        .gql(
            Some(&key),
            "{ viewer { tenant { netTermsDays } } }",
            json!({}),
        )
        .await;
    assert_eq!(r["data"]["viewer"]["tenant"]["netTermsDays"], 30, "{r}");

    let r = app
        .gql(Some(&key), SET_TERMS, json!({"t": tenant, "d": 90}))
        .await;
    assert_eq!(error_code(&r), Some("FORBIDDEN"), "{r}");
    for days in [-1, 121] {
        let r = app
            .gql(
                Some(&app.operator_key),
                SET_TERMS,
                json!({"t": tenant, "d": days}),
            )
            .await;
        assert_eq!(error_code(&r), Some("INVALID_INPUT"), "{days}: {r}");
    }
    let r = app
        .gql(
            Some(&app.operator_key),
            SET_TERMS,
            json!({"t": tenant, "d": 14}),
        )
        .await;
    assert_eq!(r["data"]["setPaymentTerms"]["netTermsDays"], 14, "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(filter: {action: \"tenant.payment_terms\"}) { edges { node { before after } } } }",
            json!({}),
        )
        .await;
    let edges = r["data"]["auditLog"]["edges"].as_array().expect("edges");
    assert_eq!(edges.len(), 1, "{r}");
    assert!(
        edges[0]["node"]["after"]
            .as_str()
            .is_some_and(|a| a.contains("14"))
    );
}

/// The reminders of docs/invoicing.md, for an invoice `days` (fractional) past its due
/// date: the kind whose window holds it, if any. Windows: due soon [-3, 0), overdue from
/// 0 on (never skipped), 7 days [7, 14), 14 days [14, 30), 30 days from 30 on.
fn window(days: f64) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    if (-3.0..0.0).contains(&days) {
        kinds.push("due_soon");
    }
    if days >= 0.0 {
        kinds.push("overdue");
    }
    if (7.0..14.0).contains(&days) {
        kinds.push("overdue_7");
    }
    if (14.0..30.0).contains(&days) {
        kinds.push("overdue_14");
    }
    if days >= 30.0 {
        kinds.push("overdue_30");
    }
    kinds
}

fn event_of(kind: &str) -> &'static str {
    match kind {
        "due_soon" => "invoice.due_soon",
        "overdue" => "invoice.overdue",
        _ => "invoice.payment_reminder",
    }
}

/// What the model says went out for an invoice due at `due` after sweeps at `sweeps`:
/// (event type, whole days overdue for a payment reminder), in order.
fn model(due: DateTime<Utc>, sweeps: &[DateTime<Utc>]) -> Vec<(String, Option<i64>)> {
    let mut sent: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for at in sweeps {
        let days = (*at - due).num_seconds() as f64 / 86_400.0;
        for kind in window(days) {
            if !sent.contains(&kind) {
                sent.push(kind);
                let overdue =
                    (event_of(kind) == "invoice.payment_reminder").then(|| (*at - due).num_days());
                out.push((event_of(kind).to_owned(), overdue));
            }
        }
    }
    out
}

/// A tenant on `terms` days with one finalized, owed invoice; (tenant key, invoice).
async fn owed_invoice(app: &TestApp, name: &str, terms: i32) -> (String, Value) {
    let (tenant, key) = app.create_tenant(name).await;
    let r = app
        .gql(
            Some(&app.operator_key),
            SET_TERMS,
            json!({"t": tenant, "d": terms}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    app.run_gpu_at_ten_a_second(name, &key).await;
    app.advance(Duration::seconds(30));
    let invoice = app
        .close_period(&tenant, "id status total finalizedAt dueAt")
        .await;
    assert_eq!(invoice["status"], "OPEN", "{invoice}");
    (key, invoice)
}

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str().expect("a time").parse().expect("RFC 3339")
}

async fn reminders_follow_the_due_dates(backend: Backend) {
    // The feed keeps every event of the 75 days the clock moves through, and the test's
    // sweeps are the only ones (no background jobs).
    let adjust = |s: &mut neocloud_api::settings::Settings| {
        s.events.retention_days = 365;
        s.role = neocloud_api::settings::Role::Api;
    };
    let Some(app) = TestApp::spawn_with(backend, adjust).await else {
        return;
    };
    let billing = Billing::new(&app.settings.billing, false, app.clock.clone());
    let mut invoices = BTreeMap::new();
    for (name, terms) in [("net0", 0), ("net3", 3), ("net10", 10), ("net30", 30)] {
        let (key, invoice) = owed_invoice(&app, name, terms).await;
        let (finalized, due) = (time(&invoice["finalizedAt"]), time(&invoice["dueAt"]));
        assert_eq!(due - finalized, Duration::days(i64::from(terms)), "{name}");
        invoices.insert(name, (key, invoice, due));
    }

    // Sweeps at generated times over 75 days, with the server's clock.
    let seed = rand::rng().random::<u64>();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let start = app.clock.now();
    let mut sweeps = Vec::new();
    while app.clock.now() < start + Duration::days(75) {
        app.advance(Duration::minutes(rng.random_range(360..=13_000)));
        send_reminders(&app.db, &billing).await.expect("a sweep");
        sweeps.push(app.clock.now());
    }

    for (name, (key, invoice, due)) in &invoices {
        let id = &invoice["id"];
        let mut got = Vec::new();
        for kind in [
            "invoice.due_soon",
            "invoice.overdue",
            "invoice.payment_reminder",
        ] {
            for data in app.events_of(key, kind).await {
                if &data["invoice_id"] == id {
                    assert_eq!(time(&data["due_at"]), *due, "{name}");
                    got.push((
                        time(&data["due_at"]),
                        kind.to_owned(),
                        data["days_overdue"].as_i64(),
                    ));
                }
            }
        }
        let mut want: Vec<_> = model(*due, &sweeps)
            .into_iter()
            .map(|(k, d)| (*due, k, d))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{name}, seed {seed}, sweeps {sweeps:?}");
        let r = app
            .gql(
                Some(key),
                "query($i: ID!) { invoice(id: $i) { status dueAt } }",
                json!({"i": id}),
            )
            .await;
        assert_eq!(r["data"]["invoice"]["status"], "OVERDUE", "{name}: {r}");
    }

    // A sweep with nothing new due sends nothing.
    assert_eq!(send_reminders(&app.db, &billing).await.expect("sweep"), 0);
}

async fn the_due_date_is_on_the_invoice_and_its_exports(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let (key, invoice) = owed_invoice(&app, "acme", 14).await;
    let id = invoice["id"].as_str().expect("id");
    let due = time(&invoice["dueAt"]);
    let res = app
        .client
        .get(format!("{}/v1/invoices/{id}/export?format=json", app.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("export");
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(time(&body["due_at"]), due);
    let r = app
        .gql(
            Some(&key),
            "{ invoices(first: 5) { edges { node { status dueAt finalized } } } }",
            json!({}),
        )
        .await;
    let finalized: Vec<&Value> = r["data"]["invoices"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .filter(|e| e["node"]["finalized"] == true)
        .collect();
    assert_eq!(finalized.len(), 1, "{r}");
    assert_eq!(time(&finalized[0]["node"]["dueAt"]), due);
}

on_both_databases!(
    terms_are_the_operators_to_set_within_bounds,
    reminders_follow_the_due_dates,
    the_due_date_is_on_the_invoice_and_its_exports,
);
