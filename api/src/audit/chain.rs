//! The audit log's hash chains. Entries are written unsealed, in the transaction of their
//! change, so audited writes never wait on one another; a background job seals them in
//! the order they are found (by id, which grows with time): each gets the next place in
//! the global chain and, if it has a tenant, in its tenant's chain, with a SHA-256 over
//! the previous entry's hash, its place and what it says. Changing, removing or
//! reordering a sealed entry breaks the chain at that entry; `verify` finds where. The
//! tail is proven against an anchor (a place and hash recorded elsewhere, e.g. by the
//! SIEM the log is exported to), since whoever can delete the last entries could also
//! have never written them.

use std::collections::HashMap;

use chrono::SecondsFormat;
use neocloud_schema::entity::audit_log;
use neocloud_schema::ids::{AuditId, TenantId};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Statement,
};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The hash before the first entry of every chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Entries sealed per transaction, and read per page when verifying or exporting.
const PAGE: u64 = 500;

/// The PostgreSQL advisory lock held while sealing, so one replica seals at a time.
const SEAL_LOCK: i64 = 0x6e65_6f61_7564_6974;

/// What an entry says, as both chains hash it: a JSON array of its fields (object keys
/// sorted), the time in RFC 3339 UTC with the precision stored.
pub fn content(e: &audit_log::Model) -> String {
    let id = |v: Option<String>| v.map_or(serde_json::Value::Null, serde_json::Value::String);
    json!([
        "neocloud.audit.v1",
        e.id.to_string(),
        e.at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        id(e.actor_key_id.map(|k| k.to_string())),
        e.actor_role,
        id(e.tenant_id.map(|t| t.to_string())),
        e.action,
        e.object_type,
        e.object_id,
        e.before,
        e.after,
    ])
    .to_string()
}

/// The hash of the entry at `seq` whose predecessor's hash is `prev`.
pub fn link(prev: &str, seq: i64, content: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [prev, &seq.to_string(), content] {
        hasher.update(part.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}

/// A chain's last place and hash.
type Head = (i64, String);

/// Seals every entry not sealed yet; how many. Another process sealing at the same time
/// (PostgreSQL) makes this one return at once: it will seal the rest.
pub async fn seal(db: &DatabaseConnection) -> Result<u64, DbErr> {
    let mut total = 0;
    loop {
        let txn = crate::db::begin_write(db).await?;
        if !hold_seal_lock(&txn).await? {
            return Ok(total);
        }
        let sealed = seal_page(&txn).await?;
        txn.commit().await?;
        total += sealed;
        if sealed < PAGE {
            return Ok(total);
        }
    }
}

async fn hold_seal_lock<C: ConnectionTrait>(txn: &C) -> Result<bool, DbErr> {
    if txn.get_database_backend() != DbBackend::Postgres {
        // SQLite: the write transaction is already the only one.
        return Ok(true);
    }
    let held = txn
        .query_one_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_try_advisory_xact_lock($1) AS held",
            [SEAL_LOCK.into()],
        ))
        .await?;
    held.map_or(Ok(false), |row| row.try_get("", "held"))
}

async fn seal_page<C: ConnectionTrait>(txn: &C) -> Result<u64, DbErr> {
    let unsealed = audit_log::Entity::find()
        .filter(audit_log::Column::Seq.is_null())
        .order_by_asc(audit_log::Column::Id)
        .limit(PAGE)
        .all(txn)
        .await?;
    if unsealed.is_empty() {
        return Ok(0);
    }
    let mut global = head(txn, None).await?;
    let mut tenants: HashMap<TenantId, Head> = HashMap::new();
    for entry in &unsealed {
        let body = content(entry);
        global = next(&global, &body);
        let tenant_link = match entry.tenant_id {
            Some(tenant) => {
                let before = match tenants.get(&tenant) {
                    Some(h) => h.clone(),
                    None => head(txn, Some(tenant)).await?,
                };
                let after = next(&before, &body);
                tenants.insert(tenant, after.clone());
                Some(after)
            }
            None => None,
        };
        write_seal(txn, entry.id, &global, tenant_link).await?;
    }
    Ok(u64::try_from(unsealed.len()).unwrap_or(u64::MAX))
}

/// The head after appending `body` to a chain whose head is `head`.
fn next((seq, hash): &Head, body: &str) -> Head {
    (seq + 1, link(hash, seq + 1, body))
}

/// The global chain's head, or `tenant`'s.
async fn head<C: ConnectionTrait>(txn: &C, tenant: Option<TenantId>) -> Result<Head, DbErr> {
    let (seq, hash) = match tenant {
        None => (audit_log::Column::Seq, audit_log::Column::Hash),
        Some(_) => (audit_log::Column::TenantSeq, audit_log::Column::TenantHash),
    };
    let mut query = audit_log::Entity::find()
        .select_only()
        .column(seq)
        .column(hash)
        .filter(seq.is_not_null());
    if let Some(tenant) = tenant {
        query = query.filter(audit_log::Column::TenantId.eq(tenant));
    }
    let last: Option<(i64, String)> = query.order_by_desc(seq).into_tuple().one(txn).await?;
    Ok(last.unwrap_or_else(|| (0, GENESIS.to_owned())))
}

async fn write_seal<C: ConnectionTrait>(
    txn: &C,
    id: AuditId,
    (seq, hash): &Head,
    tenant: Option<Head>,
) -> Result<(), DbErr> {
    let (tenant_seq, tenant_hash) = tenant.unzip();
    audit_log::Entity::update_many()
        .col_expr(audit_log::Column::Seq, Expr::value(*seq))
        .col_expr(audit_log::Column::Hash, Expr::value(hash.clone()))
        .col_expr(audit_log::Column::TenantSeq, Expr::value(tenant_seq))
        .col_expr(audit_log::Column::TenantHash, Expr::value(tenant_hash))
        .filter(audit_log::Column::Id.eq(id))
        .filter(audit_log::Column::Seq.is_null())
        .exec(txn)
        .await?;
    Ok(())
}

/// Where a chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// `global`, or the tenant's id.
    pub chain: String,
    /// The place the break was found at (in `chain`).
    pub seq: i64,
    /// The entry found there, if any.
    pub entry: Option<AuditId>,
    pub reason: String,
}

/// What `verify` found.
#[derive(Debug, Default)]
pub struct Verification {
    /// Sealed entries read.
    pub sealed: u64,
    /// Tenants with a chain.
    pub tenants: usize,
    /// The global chain's head.
    pub head: Option<(i64, String)>,
    /// Entries not sealed yet, and the oldest one's time.
    pub unsealed: u64,
    pub oldest_unsealed: Option<chrono::DateTime<chrono::Utc>>,
    pub breaks: Vec<Break>,
}

impl Verification {
    pub fn holds(&self) -> bool {
        self.breaks.is_empty()
    }
}

/// Walks one chain: the place and hash expected next, and what to report.
struct Walk {
    chain: String,
    head: Head,
}

impl Walk {
    fn new(chain: String) -> Self {
        Walk {
            chain,
            head: (0, GENESIS.to_owned()),
        }
    }

    /// Checks the entry stored at `seq` with `hash`; later entries are checked against
    /// what is stored, so one changed entry is reported once.
    fn check(&mut self, id: AuditId, seq: i64, hash: &str, body: &str, breaks: &mut Vec<Break>) {
        let mut report = |seq: i64, entry: Option<AuditId>, reason: String| {
            breaks.push(Break {
                chain: self.chain.clone(),
                seq,
                entry,
                reason,
            });
        };
        let expected = self.head.0 + 1;
        match seq.cmp(&expected) {
            std::cmp::Ordering::Greater => report(
                expected,
                None,
                format!("entries {expected} to {} are missing", seq - 1),
            ),
            std::cmp::Ordering::Less => report(seq, Some(id), "a place taken twice".into()),
            std::cmp::Ordering::Equal if link(&self.head.1, seq, body) != hash => report(
                seq,
                Some(id),
                "changed since it was sealed (or its hash, or the one before it)".into(),
            ),
            std::cmp::Ordering::Equal => {}
        }
        self.head = (seq, hash.to_owned());
    }
}

/// Proves both kinds of chain over every sealed entry, and that the entry at each of
/// `anchors` (place, hash) is still there as recorded.
pub async fn verify(
    db: &DatabaseConnection,
    anchors: &[(i64, String)],
) -> Result<Verification, DbErr> {
    let mut found = Verification::default();
    let mut global = Walk::new("global".into());
    let mut tenants: HashMap<TenantId, Walk> = HashMap::new();
    let mut after = 0;
    loop {
        let page = sealed_after(db, after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.seq.unwrap_or(after);
        for entry in &page {
            found.sealed += 1;
            check_entry(entry, &mut global, &mut tenants, &mut found.breaks);
        }
    }
    found.tenants = tenants.len();
    found.head = (global.head.0 > 0).then(|| global.head.clone());
    for (seq, hash) in anchors {
        check_anchor(db, *seq, hash, &mut found.breaks).await?;
    }
    let unsealed = audit_log::Entity::find()
        .filter(audit_log::Column::Seq.is_null())
        .order_by_asc(audit_log::Column::At);
    found.unsealed = sea_orm::PaginatorTrait::count(unsealed.clone(), db).await?;
    found.oldest_unsealed = unsealed.one(db).await?.map(|e| e.at);
    Ok(found)
}

fn check_entry(
    entry: &audit_log::Model,
    global: &mut Walk,
    tenants: &mut HashMap<TenantId, Walk>,
    breaks: &mut Vec<Break>,
) {
    let body = content(entry);
    let (Some(seq), Some(hash)) = (entry.seq, entry.hash.as_deref()) else {
        return;
    };
    global.check(entry.id, seq, hash, &body, breaks);
    match (
        entry.tenant_id,
        entry.tenant_seq,
        entry.tenant_hash.as_deref(),
    ) {
        (Some(tenant), Some(tseq), Some(thash)) => tenants
            .entry(tenant)
            .or_insert_with(|| Walk::new(tenant.to_string()))
            .check(entry.id, tseq, thash, &body, breaks),
        (None, None, None) => {}
        (tenant, ..) => breaks.push(Break {
            chain: tenant.map_or_else(|| "global".into(), |t| t.to_string()),
            seq,
            entry: Some(entry.id),
            reason: "its tenant chain's place does not match its tenant".into(),
        }),
    }
}

async fn check_anchor(
    db: &DatabaseConnection,
    seq: i64,
    hash: &str,
    breaks: &mut Vec<Break>,
) -> Result<(), DbErr> {
    let at = audit_log::Entity::find()
        .filter(audit_log::Column::Seq.eq(seq))
        .one(db)
        .await?;
    let reason = match &at {
        None => "the anchored entry is gone".to_owned(),
        Some(e) if e.hash.as_deref() != Some(hash) => "the anchored entry's hash differs".into(),
        Some(_) => return Ok(()),
    };
    breaks.push(Break {
        chain: "global".into(),
        seq,
        entry: at.map(|e| e.id),
        reason,
    });
    Ok(())
}

/// Up to `limit` sealed entries after place `after` of the global chain, in order.
pub async fn sealed_after<C: ConnectionTrait>(
    conn: &C,
    after: i64,
    limit: u64,
) -> Result<Vec<audit_log::Model>, DbErr> {
    audit_log::Entity::find()
        .filter(audit_log::Column::Seq.gt(after))
        .order_by_asc(audit_log::Column::Seq)
        .limit(limit)
        .all(conn)
        .await
}

/// `verify`'s findings, as an operator reads them.
pub fn describe(found: &Verification) -> String {
    let head = found
        .head
        .as_ref()
        .map_or_else(|| "empty".to_owned(), |(seq, hash)| format!("{seq}:{hash}"));
    let mut text = format!(
        "sealed entries: {}\ntenant chains: {}\nhead (anchor): {head}\nnot sealed yet: {}",
        found.sealed, found.tenants, found.unsealed
    );
    if let Some(at) = found.oldest_unsealed {
        text.push_str(&format!(" (oldest {})", at.to_rfc3339()));
    }
    text.push('\n');
    for b in &found.breaks {
        let entry = b.entry.map(|e| format!(" (entry {e})")).unwrap_or_default();
        text.push_str(&format!(
            "BROKEN {} chain at {}{entry}: {}\n",
            b.chain, b.seq, b.reason
        ));
    }
    text.push_str(if found.holds() {
        "the chain holds\n"
    } else {
        "the chain is broken\n"
    });
    text
}

/// One exported entry: what it says, with its places and hashes.
pub fn exported(e: &audit_log::Model) -> serde_json::Value {
    json!({
        "seq": e.seq, "hash": e.hash,
        "tenant_seq": e.tenant_seq, "tenant_hash": e.tenant_hash,
        "id": e.id.to_string(),
        "at": e.at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        "actor_key_id": e.actor_key_id.map(|k| k.to_string()),
        "actor_role": e.actor_role,
        "tenant_id": e.tenant_id.map(|t| t.to_string()),
        "action": e.action, "object_type": e.object_type, "object_id": e.object_id,
        "before": e.before, "after": e.after,
    })
}

/// Writes every sealed entry after place `after` to `out`, a JSON line each; how many.
pub async fn export(
    db: &DatabaseConnection,
    mut after: i64,
    out: &mut impl std::io::Write,
) -> Result<u64, DbErr> {
    let io = |e: std::io::Error| DbErr::Custom(format!("writing the export: {e}"));
    let mut written = 0;
    loop {
        let page = sealed_after(db, after, PAGE).await?;
        let Some(last) = page.last() else {
            out.flush().map_err(io)?;
            return Ok(written);
        };
        after = last.seq.unwrap_or(after);
        for entry in &page {
            writeln!(out, "{}", exported(entry)).map_err(io)?;
            written += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_hashes_the_previous_hash_the_place_and_the_content_a_line_each() {
        // printf '%s\n%s\n%s\n' 000…000 1 '["x"]' | sha256sum
        assert_eq!(
            link(GENESIS, 1, r#"["x"]"#),
            "dd8497db47d1667138c21b35d992a6da2b5694b73fba25299b29c2ddf11df6c5"
        );
        assert_ne!(link(GENESIS, 2, r#"["x"]"#), link(GENESIS, 1, r#"["x"]"#));
    }

    fn entry(after: serde_json::Value) -> audit_log::Model {
        audit_log::Model {
            id: AuditId::new(),
            at: "2026-12-06T10:00:00.123456Z".parse().expect("time"),
            actor_key_id: None,
            actor_role: "system".into(),
            tenant_id: None,
            action: "tenant.create".into(),
            object_type: "tenant".into(),
            object_id: "t".into(),
            before: None,
            after: Some(after),
            seq: None,
            hash: None,
            tenant_seq: None,
            tenant_hash: None,
        }
    }

    #[test]
    fn content_does_not_depend_on_the_order_objects_were_written_in() {
        let a = entry(serde_json::from_str(r#"{"name": "acme", "currency": "EUR"}"#).unwrap());
        let mut b = entry(serde_json::from_str(r#"{"currency": "EUR", "name": "acme"}"#).unwrap());
        b.id = a.id;
        assert_eq!(content(&a), content(&b));
        assert!(
            content(&a).contains(r#"{"currency":"EUR","name":"acme"}"#),
            "{}",
            content(&a)
        );
        assert!(content(&a).contains("2026-12-06T10:00:00.123456Z"));
    }
}
