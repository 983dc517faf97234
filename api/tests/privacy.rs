//! A tenant's data export through the API, on both databases: its admin (or an operator
//! naming it) downloads one `.tar.gz`; every table the database holds with a `tenant_id`
//! column is in it, with exactly the tenant's rows (counted here with SQL of the test's
//! own) and nobody else's; credentials are withheld; usage events read as events; other
//! roles and other tenants get nothing; the export is audited. Erasure takes what
//! identifies people and keeps, as issued, what tax law requires.

mod support;

#[path = "fixtures/ssh_keys.rs"]
mod ssh_keys;

use std::collections::BTreeMap;
use std::io::Read;

use chrono::TimeDelta;
use neocloud_schema::clock::Clock;
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::{Value, json};
use support::billing::{customer, egress, egress_sku, seller};
use support::{Backend, TestApp};

/// The files of a `.tar.gz`, read here without the server's code.
fn untar(gz: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut tar)
        .expect("gzip");
    let mut files = BTreeMap::new();
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at] != 0 {
        let header = &tar[at..at + 512];
        let name_end = header[..100].iter().position(|b| *b == 0).unwrap_or(100);
        let name = String::from_utf8(header[..name_end].to_vec()).expect("name");
        let size_text = std::str::from_utf8(&header[124..135]).expect("size");
        let size = usize::from_str_radix(size_text.trim_matches(['\0', ' ']), 8).expect("octal");
        let data = tar[at + 512..at + 512 + size].to_vec();
        files.insert(name, data);
        at += 512 + size.div_ceil(512) * 512;
    }
    files
}

fn jsonl(files: &BTreeMap<String, Vec<u8>>, table: &str) -> Vec<Value> {
    let text = files
        .get(&format!("tables/{table}.jsonl"))
        .unwrap_or_else(|| panic!("no file for {table}: {:?}", files.keys()));
    std::str::from_utf8(text)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// (table, rows of `tenant`) for every table with a `tenant_id` column.
async fn tenant_rows(app: &TestApp, tenant: &str) -> Vec<(String, i64)> {
    let backend = app.db.get_database_backend();
    let tables = match backend {
        DbBackend::Postgres => {
            "SELECT DISTINCT table_name AS t FROM information_schema.columns WHERE column_name = 'tenant_id' AND table_schema = 'public'"
        }
        _ => {
            "SELECT m.name AS t FROM sqlite_master m WHERE m.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'tenant_id')"
        }
    };
    let rows = app
        .db
        .query_all_raw(Statement::from_string(backend, tables))
        .await
        .expect("catalog");
    let mut out = Vec::new();
    for row in rows {
        let table: String = row.try_get("", "t").expect("name");
        let (sql, value) = match backend {
            DbBackend::Postgres => (
                format!("SELECT COUNT(*) AS n FROM {table} WHERE tenant_id = $1"),
                uuid::Uuid::parse_str(tenant).expect("uuid").into(),
            ),
            _ => (
                format!("SELECT COUNT(*) AS n FROM {table} WHERE tenant_id = ?"),
                uuid::Uuid::parse_str(tenant).expect("uuid").into(),
            ),
        };
        let count = app
            .db
            .query_one_raw(Statement::from_sql_and_values(backend, sql, [value]))
            .await
            .expect("count")
            .expect("a row");
        out.push((table, count.try_get::<i64>("", "n").expect("n")));
    }
    out
}

async fn download(app: &TestApp, key: &str, tenant: Option<&str>) -> (u16, Vec<u8>) {
    let mut url = format!("{}/v1/tenant/export", app.url);
    if let Some(t) = tenant {
        url.push_str(&format!("?tenantId={t}"));
    }
    let res = app
        .client
        .get(url)
        .bearer_auth(key)
        .send()
        .await
        .expect("export");
    (
        res.status().as_u16(),
        res.bytes().await.expect("body").to_vec(),
    )
}

async fn a_tenant_gets_everything_held_about_it_and_nothing_else(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    support::billing::add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    support::billing::add_rate(&app, "FR", "20", "2020-01-01T00:00:00Z").await;
    let acme = customer(&app, "acme", Some(("DE", Some("DE811363057")))).await;
    let globex = customer(&app, "globex", Some(("FR", None))).await;
    app.advance(TimeDelta::minutes(20));
    let at = app.clock.now() - TimeDelta::minutes(10);
    egress(&app, &acme, "a1", "150", at).await;
    egress(&app, &globex, "g1", "70", at).await;
    app.close_period(&acme.id, "id").await;
    app.close_period(&globex.id, "id").await;
    let member = app
        .gql(
            Some(&acme.admin),
            "mutation { createApiKey(role: TENANT_MEMBER) { apiKey } }",
            json!({}),
        )
        .await["data"]["createApiKey"]["apiKey"]
        .as_str()
        .expect("member key")
        .to_owned();

    let (status, _) = download(&app, &member, None).await;
    assert_eq!(status, 403, "members do not export");
    let (status, _) = download(&app, &globex.admin, Some(&acme.id)).await;
    assert_eq!(status, 404, "another tenant's export is not found");
    // Counted before the export, which is audited once done.
    let expected = tenant_rows(&app, &acme.id).await;
    let (status, gz) = download(&app, &acme.admin, None).await;
    assert_eq!(status, 200);
    let files = untar(&gz);
    let manifest: Value = serde_json::from_slice(&files["manifest.json"]).expect("manifest");
    assert_eq!(manifest["tenant_id"], acme.id);

    assert!(expected.len() >= 30, "{expected:?}");
    for (table, count) in &expected {
        let rows = jsonl(&files, table);
        assert_eq!(rows.len() as i64, *count, "{table}");
        for row in &rows {
            assert_eq!(row["tenant_id"], json!(acme.id), "{table}: {row}");
        }
    }
    assert!(
        expected.iter().any(|(t, n)| t == "invoice_lines" && *n > 0),
        "{expected:?}"
    );
    let tenants = jsonl(&files, "tenants");
    assert_eq!(tenants.len(), 1);
    assert_eq!(tenants[0]["id"], json!(acme.id));
    for key in jsonl(&files, "api_keys") {
        assert!(key.get("secret_hash").is_none(), "withheld: {key}");
    }
    let batches = jsonl(&files, "usage_event_batches");
    assert_eq!(batches[0]["body"][0]["id"], "a1", "{batches:?}");
    let all: String = files
        .values()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    assert!(!all.contains(&globex.id), "nothing of another tenant");

    let (status, gz) = download(&app, &app.operator_key, Some(&globex.id)).await;
    assert_eq!(status, 200);
    let profiles = jsonl(&untar(&gz), "billing_profiles");
    assert_eq!(profiles[0]["country"], "FR");
    let r = app
        .gql(
            Some(&acme.admin),
            "{ auditLog(filter: {action: \"tenant.export\"}) { edges { node { action } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r["data"]["auditLog"]["edges"].as_array().map(Vec::len),
        Some(1),
        "{r}"
    );
}

const ERASE: &str = "mutation($t: ID!, $n: String!) { eraseTenantData(tenantId: $t, confirmName: $n) { name status erasedAt } }";

async fn erasure_takes_personal_data_and_keeps_invoices_as_issued(backend: Backend) {
    let Some(app) = TestApp::spawn_with(backend, seller).await else {
        return;
    };
    egress_sku(&app).await;
    support::billing::add_rate(&app, "DE", "19", "2020-01-01T00:00:00Z").await;
    let acme = customer(&app, "acme", Some(("DE", Some("DE811363057")))).await;
    let (line, _) = ssh_keys::KEYS[0];
    let r = app
        .gql(
            Some(&acme.admin),
            "mutation($k: String!) { addSshKey(name: \"alice laptop\", publicKey: $k) { id } }",
            json!({"k": line}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    let r = app
        .gql(
            Some(&acme.admin),
            "mutation { inviteUser(email: \"alice@acme.example\", role: TENANT_MEMBER) { invitationToken } }",
            json!({}),
        )
        .await;
    assert!(r["errors"].is_null(), "{r}");
    app.advance(TimeDelta::minutes(20));
    egress(
        &app,
        &acme,
        "a1",
        "150",
        app.clock.now() - TimeDelta::minutes(10),
    )
    .await;
    let invoice = app.close_period(&acme.id, "id number total").await;

    // Only operators, and only with the tenant's name to confirm; a refusal erases nothing.
    let r = app
        .gql(Some(&acme.admin), ERASE, json!({"t": acme.id, "n": "acme"}))
        .await;
    assert_eq!(support::error_code(&r), Some("FORBIDDEN"), "{r}");
    let r = app
        .gql(
            Some(&app.operator_key),
            ERASE,
            json!({"t": acme.id, "n": "globex"}),
        )
        .await;
    assert_eq!(support::error_code(&r), Some("INVALID_INPUT"), "{r}");
    let (_, before) = download(&app, &app.operator_key, Some(&acme.id)).await;
    assert_eq!(jsonl(&untar(&before), "ssh_keys").len(), 1);

    let r = app
        .gql(
            Some(&app.operator_key),
            ERASE,
            json!({"t": acme.id, "n": "acme"}),
        )
        .await;
    let erased = &r["data"]["eraseTenantData"];
    assert_eq!(
        erased["name"],
        format!("erased-{}", acme.id.replace('-', "")),
        "{r}"
    );
    assert_eq!(erased["status"], "SUSPENDED");
    assert!(erased["erasedAt"].is_string());

    // Its keys no longer open anything.
    let r = app
        .gql(Some(&acme.admin), "{ viewer { role } }", json!({}))
        .await;
    assert!(support::error_code(&r).is_some(), "{r}");
    let (_, after) = download(&app, &app.operator_key, Some(&acme.id)).await;
    let files = untar(&after);
    assert!(jsonl(&files, "billing_profiles").is_empty());
    assert!(jsonl(&files, "ssh_keys").is_empty());
    for key in jsonl(&files, "api_keys") {
        assert!(key["revoked_at"].is_string(), "{key}");
        assert_eq!(key["label"], "");
    }
    // Gone everywhere but the audit log, which is evidence and kept as written.
    let all: String = files
        .iter()
        .filter(|(name, _)| name.as_str() != "tables/audit_log.jsonl")
        .map(|(_, f)| String::from_utf8_lossy(f).into_owned())
        .collect();
    assert!(!all.contains("alice laptop") && !all.contains("user@example"));
    assert!(!all.contains("alice@acme.example"));
    for user in jsonl(&files, "portal_users") {
        assert!(user["disabled_at"].is_string(), "{user}");
        for column in [
            "invitation_hash",
            "password_hash",
            "totp_secret",
            "recovery_codes",
        ] {
            assert!(user.get(column).is_none(), "{column} withheld: {user}");
        }
    }
    assert!(!jsonl(&files, "audit_log").is_empty());
    // The invoice stays as issued, buyer and all (10 years of tax law).
    let r = app
        .gql(
            Some(&app.operator_key),
            "query($id: ID!) { invoice(id: $id) { number total } }",
            json!({"id": invoice["id"]}),
        )
        .await;
    assert_eq!(r["data"]["invoice"]["total"], invoice["total"], "{r}");
    let invoices = jsonl(&files, "invoices");
    let issued = invoices
        .iter()
        .find(|i| i["number"] == invoice["number"])
        .expect("the invoice is kept");
    assert_eq!(
        issued["parties"]["buyer"]["legal_name"], "acme Ltd",
        "{issued}"
    );
}

on_both_databases!(
    a_tenant_gets_everything_held_about_it_and_nothing_else,
    erasure_takes_personal_data_and_keeps_invoices_as_issued,
);
