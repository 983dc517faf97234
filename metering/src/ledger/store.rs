//! SQL for the ledger: posting a transfer (once per kind and reference), reversing one,
//! balances, the journal and the whole-ledger check. The only writer of
//! `ledger_accounts`, `ledger_transfers` and `ledger_entries`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{ledger_account, ledger_entry, ledger_transfer};
use neocloud_schema::ids::TenantId;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use super::{Account, AccountKind, Transfer};

/// What posting did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    /// Written, with this id.
    New(Uuid),
    /// A transfer of this kind and reference was posted before: nothing written.
    Already,
    /// Every leg was zero: nothing to post.
    Nothing,
}

/// Posts `transfer` in the caller's transaction, unless one of its kind and reference
/// was posted before. An unbalanced transfer is an error (the caller's transaction must
/// roll back), never a row.
pub async fn post<C: ConnectionTrait>(
    conn: &C,
    transfer: &Transfer,
    now: DateTime<Utc>,
) -> Result<Posted, DbErr> {
    let entries = transfer.entries()?;
    if entries.is_empty() {
        return Ok(Posted::Nothing);
    }
    let id = Uuid::now_v7();
    let inserted = ledger_transfer::Entity::insert(ledger_transfer::ActiveModel {
        id: Set(id),
        kind: Set(transfer.kind.to_owned()),
        reference: Set(transfer.reference.clone()),
        currency: Set(transfer.currency.clone()),
        tenant_id: Set(transfer.tenant),
        description: Set(transfer.description.clone()),
        posted_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            ledger_transfer::Column::Kind,
            ledger_transfer::Column::Reference,
        ])
        .do_nothing()
        .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    if inserted == 0 {
        return Ok(Posted::Already);
    }
    let accounts: Vec<Account> = entries.iter().map(|(a, _)| *a).collect();
    let ids = account_ids(conn, &accounts, &transfer.currency, now).await?;
    let rows = entries
        .iter()
        .zip(ids)
        .map(|((_, amount), account_id)| ledger_entry::ActiveModel {
            id: Set(Uuid::now_v7()),
            transfer_id: Set(id),
            account_id: Set(account_id),
            currency: Set(transfer.currency.clone()),
            amount: Set(*amount),
        });
    ledger_entry::Entity::insert_many(rows)
        .exec_without_returning(conn)
        .await?;
    Ok(Posted::New(id))
}

/// The ids of `accounts` (in order), opening those used for the first time: one query
/// when all exist.
async fn account_ids<C: ConnectionTrait>(
    conn: &C,
    accounts: &[Account],
    currency: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, DbErr> {
    let mut known = known_accounts(conn, accounts, currency).await?;
    let missing: Vec<&Account> = accounts.iter().filter(|a| !known.contains_key(a)).collect();
    if !missing.is_empty() {
        let rows = missing.iter().map(|a| ledger_account::ActiveModel {
            id: Set(Uuid::now_v7()),
            kind: Set(a.kind.as_str().to_owned()),
            owner_id: Set(a.owner),
            currency: Set(currency.to_owned()),
            created_at: Set(now),
        });
        // Another transaction may open the same account first: the unique index keeps
        // one, and both read it back.
        ledger_account::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::columns([
                    ledger_account::Column::Kind,
                    ledger_account::Column::OwnerId,
                    ledger_account::Column::Currency,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_without_returning(conn)
            .await?;
        known = known_accounts(conn, accounts, currency).await?;
    }
    accounts
        .iter()
        .map(|a| {
            known
                .get(a)
                .copied()
                .ok_or_else(|| DbErr::RecordNotFound("ledger account".into()))
        })
        .collect()
}

/// The ids of those of `accounts` that exist.
async fn known_accounts<C: ConnectionTrait>(
    conn: &C,
    accounts: &[Account],
    currency: &str,
) -> Result<HashMap<Account, Uuid>, DbErr> {
    let owners: std::collections::BTreeSet<Uuid> = accounts.iter().map(|a| a.owner).collect();
    let rows = ledger_account::Entity::find()
        .filter(ledger_account::Column::OwnerId.is_in(owners))
        .filter(ledger_account::Column::Currency.eq(currency))
        .all(conn)
        .await?;
    let mut out = HashMap::new();
    for row in rows {
        let account = account_of(&row)?;
        if accounts.contains(&account) {
            out.insert(account, row.id);
        }
    }
    Ok(out)
}

/// Posts the exact opposite of the transfer of `kind` and `reference` as `reversal`
/// (same reference), once. Nothing when no such transfer was posted.
pub async fn reverse<C: ConnectionTrait>(
    conn: &C,
    kind: &str,
    reversal: Transfer,
    now: DateTime<Utc>,
) -> Result<Posted, DbErr> {
    let Some(original) = ledger_transfer::Entity::find()
        .filter(ledger_transfer::Column::Kind.eq(kind))
        .filter(ledger_transfer::Column::Reference.eq(reversal.reference.as_str()))
        .one(conn)
        .await?
    else {
        return Ok(Posted::Nothing);
    };
    let mut transfer = reversal;
    for (_, account, minor) in entries_of(conn, &[original.id]).await? {
        let amount = super::from_minor(minor, &original.currency);
        transfer = transfer.credit(account, amount);
    }
    post(conn, &transfer, now).await
}

/// The entries of `transfers` with their accounts, in posting order: two queries.
async fn entries_of<C: ConnectionTrait>(
    conn: &C,
    transfers: &[Uuid],
) -> Result<Vec<(Uuid, Account, i64)>, DbErr> {
    let rows = ledger_entry::Entity::find()
        .filter(ledger_entry::Column::TransferId.is_in(transfers.iter().copied()))
        .order_by_asc(ledger_entry::Column::TransferId)
        .order_by_asc(ledger_entry::Column::Id)
        .all(conn)
        .await?;
    let mut ids: Vec<Uuid> = rows.iter().map(|r| r.account_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut accounts = HashMap::new();
    for row in ledger_account::Entity::find()
        .filter(ledger_account::Column::Id.is_in(ids))
        .all(conn)
        .await?
    {
        accounts.insert(row.id, account_of(&row)?);
    }
    rows.into_iter()
        .map(|row| {
            let account = accounts
                .get(&row.account_id)
                .ok_or_else(|| DbErr::RecordNotFound("ledger account".into()))?;
            Ok((row.transfer_id, *account, row.amount))
        })
        .collect()
}

fn account_of(row: &ledger_account::Model) -> Result<Account, DbErr> {
    let kind = AccountKind::parse(&row.kind)
        .ok_or_else(|| DbErr::Custom(format!("unknown ledger account kind {}", row.kind)))?;
    Ok(Account {
        kind,
        owner: row.owner_id,
    })
}

/// An account's totals, in minor units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balance {
    pub account: Account,
    pub currency: String,
    pub debits: i64,
    pub credits: i64,
}

impl Balance {
    /// Debits minus credits for debit-normal accounts, credits minus debits otherwise.
    pub fn balance(&self) -> i64 {
        if self.account.kind.debit_normal() {
            self.debits - self.credits
        } else {
            self.credits - self.debits
        }
    }
}

/// Every account's totals; only `owner`'s accounts when given (a tenant's: the platform's
/// accounts are left out).
pub async fn balances<C: ConnectionTrait>(
    conn: &C,
    owner: Option<Uuid>,
) -> Result<Vec<Balance>, DbErr> {
    let mut accounts = ledger_account::Entity::find()
        .order_by_asc(ledger_account::Column::Kind)
        .order_by_asc(ledger_account::Column::OwnerId)
        .order_by_asc(ledger_account::Column::Currency);
    if let Some(owner) = owner {
        accounts = accounts.filter(ledger_account::Column::OwnerId.eq(owner));
    }
    let accounts = accounts.all(conn).await?;
    // An owner's accounts are summed alone; the whole ledger's in one pass otherwise.
    let only = owner.map(|_| accounts.iter().map(|a| a.id).collect::<Vec<_>>());
    let debits = sums(conn, true, only.as_deref()).await?;
    let credits = sums(conn, false, only.as_deref()).await?;
    accounts
        .iter()
        .map(|row| {
            Ok(Balance {
                account: account_of(row)?,
                currency: row.currency.clone(),
                debits: debits.get(&row.id).copied().unwrap_or(0),
                credits: -credits.get(&row.id).copied().unwrap_or(0),
            })
        })
        .collect()
}

/// Per account (of `only`, when given): the sum of its debits (`debits`) or of its
/// credits (negative).
async fn sums<C: ConnectionTrait>(
    conn: &C,
    debits: bool,
    only: Option<&[Uuid]>,
) -> Result<HashMap<Uuid, i64>, DbErr> {
    let side = if debits {
        ledger_entry::Column::Amount.gt(0)
    } else {
        ledger_entry::Column::Amount.lt(0)
    };
    let mut query = ledger_entry::Entity::find()
        .select_only()
        .column(ledger_entry::Column::AccountId)
        .column_as(
            Expr::col(ledger_entry::Column::Amount)
                .sum()
                .cast_as("BIGINT"),
            "total",
        )
        .filter(side)
        .group_by(ledger_entry::Column::AccountId);
    if let Some(only) = only {
        query = query.filter(ledger_entry::Column::AccountId.is_in(only.iter().copied()));
    }
    let rows: Vec<(Uuid, i64)> = query.into_tuple().all(conn).await?;
    Ok(rows.into_iter().collect())
}

/// One entry of the journal: its transfer and account.
#[derive(Clone, Debug)]
pub struct JournalEntry {
    pub transfer: ledger_transfer::Model,
    pub account: Account,
    pub amount: i64,
}

/// The journal in posting order, a page of up to `limit` transfers after `after` (a
/// transfer id); only `tenant`'s transfers when given.
pub async fn journal<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<JournalEntry>, DbErr> {
    let mut transfers = ledger_transfer::Entity::find()
        .order_by_asc(ledger_transfer::Column::Id)
        .limit(limit);
    if let Some(after) = after {
        transfers = transfers.filter(ledger_transfer::Column::Id.gt(after));
    }
    if let Some(tenant) = tenant {
        transfers = transfers.filter(ledger_transfer::Column::TenantId.eq(tenant));
    }
    let transfers: HashMap<Uuid, ledger_transfer::Model> = transfers
        .all(conn)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let ids: Vec<Uuid> = transfers.keys().copied().collect();
    let mut out = Vec::new();
    // Entries come ordered by transfer id, i.e. in posting order.
    for (transfer_id, account, amount) in entries_of(conn, &ids).await? {
        let Some(transfer) = transfers.get(&transfer_id) else {
            continue;
        };
        out.push(JournalEntry {
            transfer: transfer.clone(),
            account,
            amount,
        });
    }
    Ok(out)
}

/// What the whole-ledger check found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    pub transfers: u64,
    pub entries: u64,
    /// Currencies whose entries do not sum to zero, with the sum.
    pub unbalanced_currencies: Vec<(String, i64)>,
    /// Transfers whose entries do not sum to zero.
    pub unbalanced_transfers: Vec<Uuid>,
}

impl Check {
    pub fn balanced(&self) -> bool {
        self.unbalanced_currencies.is_empty() && self.unbalanced_transfers.is_empty()
    }
}

/// Checks the whole ledger: debits equal credits per currency and per transfer.
pub async fn check<C: ConnectionTrait>(conn: &C) -> Result<Check, DbErr> {
    let total = || {
        Expr::col(ledger_entry::Column::Amount)
            .sum()
            .cast_as("BIGINT")
    };
    let per_currency: Vec<(String, i64)> = ledger_entry::Entity::find()
        .select_only()
        .column(ledger_entry::Column::Currency)
        .column_as(total(), "total")
        .group_by(ledger_entry::Column::Currency)
        .into_tuple()
        .all(conn)
        .await?;
    let unbalanced_transfers: Vec<Uuid> = ledger_entry::Entity::find()
        .select_only()
        .column(ledger_entry::Column::TransferId)
        .group_by(ledger_entry::Column::TransferId)
        .having(total().ne(0))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(Check {
        transfers: ledger_transfer::Entity::find().count(conn).await?,
        entries: ledger_entry::Entity::find().count(conn).await?,
        unbalanced_currencies: per_currency.into_iter().filter(|(_, s)| *s != 0).collect(),
        unbalanced_transfers,
    })
}
