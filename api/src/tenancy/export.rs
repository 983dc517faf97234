//! A tenant's data export (GDPR Art. 15 and 20): every row of every table that holds the
//! tenant's data, as one `.tar.gz` of JSON Lines with a manifest. The tables are found in
//! the database's own catalog (each table with a `tenant_id` column, and the tenant's row),
//! so a table added later is exported without anyone remembering to list it.
//! Credentials (key hashes, webhook signing secrets) are withheld and the manifest says so.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::usage_event_batch;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::Role;
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, FromQueryResult, JsonValue, Statement,
};
use serde_json::{Value, json};

use super::archive::Archive;
use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

pub const FORMAT: &str = "neocloud tenant export v1";

/// Columns never exported: secrets that authenticate, not data about the tenant.
const WITHHELD: &[(&str, &str)] = &[
    ("api_keys", "secret_hash"),
    ("portal_users", "password_hash"),
    ("portal_users", "invitation_hash"),
    ("portal_users", "totp_secret"),
    ("portal_users", "totp_pending_secret"),
    ("portal_users", "recovery_codes"),
    ("webhook_endpoints", "secret"),
    ("webhook_endpoints", "previous_secret"),
];

/// Tables with a `tenant_id` column, by name.
pub async fn tenant_tables<C: ConnectionTrait>(conn: &C) -> Result<Vec<String>, DbErr> {
    let backend = conn.get_database_backend();
    let sql = match backend {
        DbBackend::Postgres => {
            "SELECT table_name AS name FROM information_schema.columns \
             WHERE column_name = 'tenant_id' AND table_schema = current_schema()"
        }
        _ => {
            "SELECT m.name AS name FROM sqlite_master m, pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND p.name = 'tenant_id'"
        }
    };
    let rows = conn
        .query_all_raw(Statement::from_string(backend, sql))
        .await?;
    let mut names: Vec<String> = rows
        .iter()
        .filter_map(|r| r.try_get::<String>("", "name").ok())
        .filter(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}

/// The rows of `table` whose `column` is the tenant, as JSON objects.
async fn rows<C: ConnectionTrait>(
    conn: &C,
    table: &str,
    column: &str,
    tenant: TenantId,
) -> Result<Vec<Value>, DbErr> {
    let backend = conn.get_database_backend();
    let placeholder = if backend == DbBackend::Postgres {
        "$1"
    } else {
        "?"
    };
    let sql = format!("SELECT * FROM \"{table}\" WHERE \"{column}\" = {placeholder}");
    let statement = Statement::from_sql_and_values(backend, sql, [tenant.0.into()]);
    let mut rows = JsonValue::find_by_statement(statement).all(conn).await?;
    // SQLite keeps JSON as text: written out as the JSON it is, as PostgreSQL gives it.
    for column in json_text_columns(conn, table).await? {
        for row in &mut rows {
            let parsed = row
                .get(&column)
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str::<Value>(text).ok());
            if let (Some(parsed), Some(object)) = (parsed, row.as_object_mut()) {
                object.insert(column.clone(), parsed);
            }
        }
    }
    Ok(rows)
}

/// The columns SQLite declares as JSON kept as text (none on PostgreSQL).
async fn json_text_columns<C: ConnectionTrait>(
    conn: &C,
    table: &str,
) -> Result<Vec<String>, DbErr> {
    let backend = conn.get_database_backend();
    if backend == DbBackend::Postgres {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT name FROM pragma_table_info('{table}') WHERE type LIKE '%json%'");
    let rows = conn
        .query_all_raw(Statement::from_string(backend, sql))
        .await?;
    Ok(rows
        .iter()
        .filter_map(|r| r.try_get::<String>("", "name").ok())
        .collect())
}

/// Drops withheld columns; a usage event batch is written out as the events it holds.
fn cleaned(table: &str, mut row: Value) -> Value {
    if let Some(object) = row.as_object_mut() {
        for (t, column) in WITHHELD {
            if *t == table {
                object.remove(*column);
            }
        }
        if table == "usage_event_batches" {
            let body: Option<Vec<u8>> = object
                .get("body")
                .and_then(|b| serde_json::from_value(b.clone()).ok());
            if let Some(events) = body.and_then(|b| usage_event_batch::decode(&b, 64 << 20).ok()) {
                object.insert("body".to_owned(), Value::Array(events));
            }
        }
    }
    row
}

/// The archive of everything held about `tenant`.
pub async fn archive(
    db: &DatabaseConnection,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> ApiResult<Vec<u8>> {
    let mut archive = Archive::new(u64::try_from(now.timestamp()).unwrap_or(0));
    let mut listed = Vec::new();
    let mut add = |table: &str, rows: Vec<Value>| {
        let mut lines = String::new();
        for row in &rows {
            lines.push_str(&cleaned(table, row.clone()).to_string());
            lines.push('\n');
        }
        let file = format!("tables/{table}.jsonl");
        archive.add(&file, lines.as_bytes());
        let withheld: Vec<&str> = WITHHELD
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, c)| *c)
            .collect();
        listed
            .push(json!({"table": table, "rows": rows.len(), "file": file, "withheld": withheld}));
    };
    add("tenants", rows(db, "tenants", "id", tenant).await?);
    for table in tenant_tables(db).await? {
        add(&table, rows(db, &table, "tenant_id", tenant).await?);
    }
    let manifest = json!({
        "format": FORMAT,
        "tenant_id": tenant,
        "generated_at": now,
        "tables": listed,
        "notes": [
            "Each file holds one JSON object per line: a row of the table, column by column.",
            "Credentials (API key hashes, password hashes, invitations, webhook signing secrets) are withheld.",
            "Invoices and credit notes are kept for 10 years as tax law requires, also after erasure.",
        ],
    });
    archive.add("manifest.json", manifest.to_string().as_bytes());
    archive.finish().map_err(|e| ApiError::Internal {
        message: format!("writing the archive: {e}"),
    })
}

/// `GET /v1/tenant/export`: a tenant admin's own tenant, or the one an operator names.
/// Audited. Returns the file name and the archive.
pub async fn export(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<TenantId>,
    now: DateTime<Utc>,
) -> ApiResult<(String, Vec<u8>)> {
    let tenant = actor.acting_tenant(asked)?;
    if !matches!(actor.role, Role::Operator | Role::TenantAdmin) {
        return Err(ApiError::forbidden(
            "a tenant's data is exported by its admins and operators",
        ));
    }
    if super::store::find(db, tenant).await?.is_none() {
        return Err(ApiError::not_found("tenant"));
    }
    let bytes = archive(db, tenant, now).await?;
    let txn = crate::db::begin_write(db).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: Some(tenant),
            action: "tenant.export",
            object_type: "tenant",
            object_id: tenant.to_string(),
            before: None,
            after: Some(json!({"bytes": bytes.len()})),
        },
    )
    .await?;
    txn.commit().await?;
    let name = format!(
        "neocloud-export-{tenant}-{}.tar.gz",
        now.format("%Y%m%dT%H%M%SZ")
    );
    Ok((name, bytes))
}
