//! The money ledger as operators and tenants read it (docs/ledger.md): balances
//! (operators every account, a tenant its own), the whole-ledger check and the journal
//! as CSV (operators). What is posted, and when, is `neocloud_metering::ledger`.

use chrono::{DateTime, Utc};
use neocloud_metering::ledger::from_minor;
use neocloud_metering::ledger::store::{self, Balance, Check};
use std::collections::HashMap;

use neocloud_schema::ids::TenantId;
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::invoicing::export::row;

/// `ledgerBalances(tenantId)`: a tenant's accounts (a tenant key: its own); with no
/// tenant, every account of the ledger (operators).
pub async fn balances(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
) -> ApiResult<Vec<Balance>> {
    actor.require_user()?;
    let owner = match (actor.tenant_scope_or_all(), tenant) {
        (None, asked) => asked,
        (Some(_), _) => Some(actor.acting_tenant(tenant)?),
    };
    Ok(store::balances(db, owner.map(|t| t.0)).await?)
}

/// The names of the tenants and providers among `owners` (the owners of balances the
/// caller may read), by id: tenants read by id through their store, providers (a few)
/// all at once.
pub async fn owner_names(
    db: &DatabaseConnection,
    owners: &[Uuid],
) -> ApiResult<HashMap<Uuid, String>> {
    let mut names: HashMap<Uuid, String> = crate::providers::store::list(db)
        .await?
        .into_iter()
        .map(|p| (p.id.into(), p.name))
        .collect();
    let tenants: Vec<TenantId> = owners.iter().map(|&o| TenantId::from(o)).collect();
    for chunk in tenants.chunks(500) {
        let found = crate::tenancy::store::find_many(db, chunk).await?;
        names.extend(found.into_iter().map(|t| (t.id.into(), t.name)));
    }
    Ok(names)
}

/// `ledgerCheck` (operators): debits equal credits per currency and per transfer.
pub async fn check(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Check> {
    actor.require_operator()?;
    Ok(store::check(db).await?)
}

/// Transfers read per page of the journal export.
const PAGE: u64 = 1_000;

const COLUMNS: [&str; 11] = [
    "posted_at",
    "transfer",
    "kind",
    "reference",
    "tenant",
    "description",
    "account",
    "owner",
    "currency",
    "debit",
    "credit",
];

/// `GET /v1/ledger/journal.csv[?tenantId=…]` (operators): every entry, a row each, in
/// posting order; debits and credits in the currency's units.
pub async fn journal_csv(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    now: DateTime<Utc>,
) -> ApiResult<(String, String)> {
    actor.require_operator()?;
    let mut out = String::new();
    row(&mut out, &COLUMNS.map(|c| (c, false)));
    let mut after = None;
    loop {
        let page = store::journal(db, tenant, after, PAGE).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.transfer.id);
        for entry in &page {
            journal_row(&mut out, entry);
        }
    }
    Ok((
        format!("ledger-journal-{}.csv", now.format("%Y%m%dT%H%M%SZ")),
        out,
    ))
}

fn journal_row(out: &mut String, entry: &store::JournalEntry) {
    let t = &entry.transfer;
    let money = |minor: i64| from_minor(minor, &t.currency).to_string();
    let (debit, credit) = if entry.amount > 0 {
        (money(entry.amount), String::new())
    } else {
        (String::new(), money(-entry.amount))
    };
    let tenant = t.tenant_id.map(|id| id.to_string()).unwrap_or_default();
    let owner = if entry.account.owner.is_nil() {
        String::new()
    } else {
        entry.account.owner.to_string()
    };
    row(
        out,
        &[
            (&t.posted_at.to_rfc3339(), false),
            (&t.id.to_string(), false),
            (&t.kind, true),
            (&t.reference, true),
            (&tenant, false),
            (&t.description, true),
            (entry.account.kind.as_str(), true),
            (&owner, false),
            (&t.currency, false),
            (&debit, false),
            (&credit, false),
        ],
    );
}
