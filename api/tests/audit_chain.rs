//! The audit log's hash chains, on both databases: every entry is sealed into the global
//! chain and its tenant's; the export alone lets a SIEM re-prove both (checked here by a
//! verifier written from docs/compliance.md, sharing nothing with the server's); the
//! database refuses to change or delete an entry; and a chain broken on purpose (by
//! someone who can lift that guard) is found where it breaks, by the library and by
//! `neocloud admin verify-audit`.

mod support;

use std::collections::HashMap;

use neocloud_api::audit::chain;
use neocloud_schema::entity::audit_log;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{Backend, TestApp};

/// Audited changes of two tenants and of the catalog; how many entries there are.
async fn audited_changes(app: &TestApp) -> u64 {
    let (a, _) = app.create_tenant("acme").await;
    app.create_tenant("globex").await;
    app.create_h100_sku().await;
    for max in [4, 8] {
        let r = app
            .gql(
                Some(&app.operator_key),
                "mutation($t: ID!, $m: Int!) { setQuota(input: {tenantId: $t, scope: GPU_MODEL, value: \"H100\", max: $m}) { quota { id } } }",
                json!({"t": a, "m": max}),
            )
            .await;
        assert!(r["errors"].is_null(), "{r}");
    }
    let entries = audit_log::Entity::find()
        .count(&app.db)
        .await
        .expect("count");
    assert!(
        entries >= 5,
        "enough entries to break in the middle: {entries}"
    );
    entries
}

/// Seals everything written so far (the server's own sealer may hold the lock).
async fn sealed(app: &TestApp) {
    for _ in 0..200 {
        chain::seal(&app.db).await.expect("seal");
        let unsealed = audit_log::Entity::find()
            .filter(audit_log::Column::Seq.is_null())
            .count(&app.db)
            .await
            .expect("count");
        if unsealed == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("audit entries stay unsealed");
}

fn sha256_lines(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for p in parts {
        hasher.update(p.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// A SIEM's check of exported lines, from the rule in docs/compliance.md: each chain's
/// places count from 1, and each hash is SHA-256 over the previous hash (64 zeros at
/// first), the place and the entry's fields as a compact JSON array, a line each.
fn siem_verifies(lines: &[Value]) -> Result<(), String> {
    let zeros = "0".repeat(64);
    let mut global = (0_i64, zeros.clone());
    let mut tenants: HashMap<String, (i64, String)> = HashMap::new();
    for l in lines {
        let fields = json!([
            "neocloud.audit.v1",
            l["id"],
            l["at"],
            l["actor_key_id"],
            l["actor_role"],
            l["tenant_id"],
            l["action"],
            l["object_type"],
            l["object_id"],
            l["before"],
            l["after"]
        ])
        .to_string();
        let step = |head: &mut (i64, String), seq: &Value, hash: &Value| {
            let seq = seq.as_i64().ok_or("a place")?;
            if seq != head.0 + 1 {
                return Err(format!("place {seq} after {}", head.0));
            }
            let want = sha256_lines(&[&head.1, &seq.to_string(), &fields]);
            if hash.as_str() != Some(want.as_str()) {
                return Err(format!("hash at {seq}"));
            }
            *head = (seq, want);
            Ok(())
        };
        step(&mut global, &l["seq"], &l["hash"])?;
        if let Some(tenant) = l["tenant_id"].as_str() {
            let head = tenants
                .entry(tenant.to_owned())
                .or_insert((0, zeros.clone()));
            step(head, &l["tenant_seq"], &l["tenant_hash"])?;
        }
    }
    Ok(())
}

async fn exported(app: &TestApp) -> Vec<Value> {
    let mut out = Vec::new();
    chain::export(&app.db, 0, &mut out).await.expect("export");
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

async fn every_entry_is_chained_and_the_export_proves_it(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    let entries = audited_changes(&app).await;
    sealed(&app).await;

    let found = chain::verify(&app.db, &[]).await.expect("verify");
    assert!(found.holds(), "{}", chain::describe(&found));
    assert_eq!(found.sealed, entries);
    assert_eq!(found.tenants, 2, "acme and globex each have a chain");
    let lines = exported(&app).await;
    assert_eq!(lines.len() as u64, entries);
    siem_verifies(&lines).expect("the export proves the chains");
    let head = found.head.expect("a head");
    assert_eq!(lines.last().map(|l| l["hash"].clone()), Some(json!(head.1)));

    // Entries written later continue the chains.
    app.create_tenant("initech").await;
    sealed(&app).await;
    let lines = exported(&app).await;
    assert!(lines.len() as u64 > entries);
    siem_verifies(&lines).expect("the chains go on");
    let mut after = Vec::new();
    chain::export(&app.db, head.0, &mut after)
        .await
        .expect("export after the head");
    assert_eq!(
        String::from_utf8(after).expect("utf-8").lines().count(),
        lines.len() - usize::try_from(head.0).expect("a place")
    );

    // What the API shows of the chain: operators see it all.
    let r = app
        .gql(
            Some(&app.operator_key),
            "{ auditLog(first: 100) { edges { node { seq hash tenantSeq tenantHash } } } }",
            json!({}),
        )
        .await;
    let nodes = r["data"]["auditLog"]["edges"].as_array().expect("edges");
    assert!(
        nodes
            .iter()
            .all(|e| e["node"]["seq"].is_i64() && e["node"]["hash"].is_string()),
        "{r}"
    );
}

async fn the_database_refuses_to_change_or_delete_an_entry(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    audited_changes(&app).await;
    sealed(&app).await;
    for sql in [
        "UPDATE audit_log SET action = 'tenant.forged' WHERE seq = 1",
        "UPDATE audit_log SET seq = 1000 WHERE seq = 1",
        "DELETE FROM audit_log WHERE seq = 2",
        "DELETE FROM audit_log",
    ] {
        let err = app.db.execute_unprepared(sql).await.expect_err(sql);
        assert!(err.to_string().contains("audit"), "{sql}: {err}");
    }
    assert!(chain::verify(&app.db, &[]).await.expect("verify").holds());
}

/// Lifts the database's guard, as someone with the database's owner rights could.
async fn lift_guard(app: &TestApp, backend: Backend) {
    let statements: &[&str] = match backend {
        Backend::Postgres => &["ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"],
        Backend::Sqlite => &[
            "DROP TRIGGER audit_log_no_delete",
            "DROP TRIGGER audit_log_sealed_once",
        ],
    };
    for sql in statements {
        app.db.execute_unprepared(sql).await.expect(sql);
    }
}

fn verify_audit_cli(app: &TestApp, anchor: &str) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_neocloud"))
        .args([
            "admin",
            "verify-audit",
            "--anchor",
            anchor,
            "--database-url",
        ])
        .arg(app.settings.database_url.expose_secret())
        .output()
        .expect("run neocloud");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

async fn a_chain_broken_on_purpose_is_found_where_it_breaks(backend: Backend) {
    let Some(app) = TestApp::spawn(backend).await else {
        return;
    };
    audited_changes(&app).await;
    sealed(&app).await;
    let (head, hash) = chain::verify(&app.db, &[])
        .await
        .expect("verify")
        .head
        .expect("a head");
    let anchor = format!("{head}:{hash}");
    let (holds, printed) = verify_audit_cli(&app, &anchor);
    assert!(holds, "{printed}");
    assert!(
        printed.contains(&format!("head (anchor): {anchor}")),
        "{printed}"
    );

    lift_guard(&app, backend).await;
    let at = |seq: i64| audit_log::Column::Seq.eq(seq);
    let changed = audit_log::Entity::find()
        .filter(at(2))
        .one(&app.db)
        .await
        .expect("read")
        .expect("entry 2");
    audit_log::Entity::update_many()
        .col_expr(
            audit_log::Column::After,
            Expr::value(json!({"forged": true})),
        )
        .filter(at(2))
        .exec(&app.db)
        .await
        .expect("change entry 2");
    for seq in [4, head] {
        audit_log::Entity::delete_many()
            .filter(at(seq))
            .exec(&app.db)
            .await
            .expect("delete");
    }

    let found = chain::verify(&app.db, &[(head, hash.clone())])
        .await
        .expect("verify");
    assert!(!found.holds());
    let global: Vec<(i64, Option<_>, &str)> = found
        .breaks
        .iter()
        .filter(|b| b.chain == "global")
        .map(|b| (b.seq, b.entry, b.reason.as_str()))
        .collect();
    assert_eq!(
        global,
        [
            (
                2,
                Some(changed.id),
                "changed since it was sealed (or its hash, or the one before it)"
            ),
            (4, None, "entries 4 to 4 are missing"),
            (head, None, "the anchored entry is gone"),
        ],
        "{}",
        chain::describe(&found)
    );
    if let Some(tenant) = changed.tenant_id {
        assert!(
            found
                .breaks
                .iter()
                .any(|b| b.chain == tenant.to_string() && b.entry == Some(changed.id)),
            "its tenant's chain breaks too: {}",
            chain::describe(&found)
        );
    }
    let (holds, printed) = verify_audit_cli(&app, &anchor);
    assert!(!holds, "{printed}");
    assert!(printed.contains("BROKEN global chain at 2"), "{printed}");
    assert!(siem_verifies(&exported(&app).await).is_err());
}

on_both_databases!(
    every_entry_is_chained_and_the_export_proves_it,
    the_database_refuses_to_change_or_delete_an_entry,
    a_chain_broken_on_purpose_is_found_where_it_breaks,
);
