//! Provider payouts (docs/providers.md, "Payouts"): sending queued Stripe Connect
//! payouts (the payment worker, under each payout's idempotency key), paying queued SEPA
//! payouts with a `pain.001` file (`createSepaPayoutFile`, operators), and reading them
//! (a provider its own, operators any), and recording payouts the operator made outside
//! neocloud (`recordManualPayout`). Queuing is part of closing a statement.

use std::collections::HashMap;

use chrono::{DateTime, TimeDelta, Utc};
use neocloud_metering::payments::gateway::{Gateway, GatewayError};
use neocloud_metering::payouts::{self, Credit, Debtor, MANUAL, SEPA, STRIPE_CONNECT, store};
use neocloud_schema::entity::{provider, provider_payout};
use neocloud_schema::ids::ProviderId;
use neocloud_schema::vocabulary::Role;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};

/// The most payouts one round sends, and one SEPA file pays.
const BATCH: u64 = 500;

/// Sends the queued Stripe Connect payouts that are due; how many were sent. A payout
/// whose answer a crash lost is sent again under the same idempotency key, which Stripe
/// answers with the first transfer. Each attempt is counted before it is made, and a
/// payout tried before (even by a sender that died waiting) is first looked up by its
/// transfer group, so a retry after Stripe forgot the key (24 hours) finds the transfer
/// instead of making a second: a payout is never paid twice.
pub async fn deliver_due(
    db: &DatabaseConnection,
    gateway: &Gateway,
    now: DateTime<Utc>,
) -> ApiResult<usize> {
    let mut sent = 0;
    for payout in store::due(db, STRIPE_CONNECT, now, BATCH).await? {
        let Ok(minor) = neocloud_metering::ledger::to_minor(payout.amount.get(), &payout.currency)
        else {
            // Queued from the ledger's minor units, so never: left queued for an operator.
            tracing::error!(payout = %payout.number, "A payout is not a whole number of minor units.");
            continue;
        };
        let payout = store::begin_attempt(db, payout).await?;
        let answer = transfer_once(gateway, &payout, minor).await;
        let txn = crate::db::begin_write(db).await?;
        match answer {
            Ok(transfer) => {
                sent += usize::from(store::sent(&txn, &payout, &transfer, now).await?);
            }
            Err(GatewayError::Refused(why)) => {
                tracing::warn!(payout = %payout.number, reason = %why, "Stripe refused a payout; it is owed again.");
                store::failed(&txn, &payout, &why, now).await?;
            }
            Err(GatewayError::Transient(why)) => {
                store::retry_later(&txn, &payout, &why, now).await?;
            }
        }
        txn.commit().await?;
    }
    Ok(sent)
}

/// The transfer paying `payout` (`minor` units): one Stripe already made for it when it
/// was tried before this attempt, otherwise a new one under its idempotency key.
async fn transfer_once(
    gateway: &Gateway,
    payout: &provider_payout::Model,
    minor: i64,
) -> Result<String, GatewayError> {
    let id = payout.id.to_string();
    if payout.attempts > 1
        && let Some(made) = gateway.find_transfer(&payout.number, &id).await?
    {
        return Ok(made);
    }
    let metadata = HashMap::from([
        ("payout".to_owned(), payout.number.clone()),
        ("payout_id".to_owned(), id),
    ]);
    gateway
        .transfer(
            &format!("neocloud-payout-{}", payout.id),
            minor,
            &payout.currency,
            &payout.destination,
            metadata,
        )
        .await
}

/// `providerPayouts(providerId)`: a provider's own; operators any provider's, or all.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    provider: Option<ProviderId>,
) -> ApiResult<Vec<provider_payout::Model>> {
    let provider = match (actor.role, provider) {
        (Role::Operator, asked) => asked,
        _ => Some(actor.acting_provider(provider)?),
    };
    Ok(store::list(db, provider).await?)
}

/// A SEPA file and what it paid.
pub struct SepaFile {
    pub message_id: String,
    pub payouts: Vec<provider_payout::Model>,
    pub xml: String,
}

/// `createSepaPayoutFile` (operator): one `pain.001.001.09` file paying every queued euro
/// SEPA payout from the operator's account (`billing.payout_account`), executed on
/// the next day; the payouts are sent (with the file's message id) in the transaction
/// that builds it, so no payout is in two files. Nothing queued: `INVALID_STATE`.
pub async fn sepa_file(
    db: &DatabaseConnection,
    actor: &Principal,
    debtor: Option<Debtor>,
    now: DateTime<Utc>,
) -> ApiResult<SepaFile> {
    actor.require_operator()?;
    let debtor = debtor.ok_or_else(|| ApiError::InvalidState {
        message: "set billing.payout_account (the operator's IBAN and BIC) to pay by SEPA".into(),
    })?;
    let txn = crate::db::begin_write(db).await?;
    let due: Vec<provider_payout::Model> = store::due(&txn, SEPA, now, BATCH)
        .await?
        .into_iter()
        .filter(|p| p.currency == "EUR")
        .collect();
    if due.is_empty() {
        return Err(ApiError::InvalidState {
            message: "no SEPA payout is queued".into(),
        });
    }
    let message_id = format!("NCPO-{}", now.format("%Y%m%d%H%M%S%3f"));
    let xml = build(&txn, &debtor, &message_id, now, &due).await?;
    let mut paid = Vec::with_capacity(due.len());
    for payout in due {
        store::sent(&txn, &payout, &message_id, now).await?;
        paid.push(provider_payout::Model {
            status: payouts::SENT.to_owned(),
            reference: Some(message_id.clone()),
            sent_at: Some(now),
            ..payout
        });
    }
    txn.commit().await?;
    Ok(SepaFile {
        message_id,
        payouts: paid,
        xml,
    })
}

/// The most characters of a manual payout's reference (a bank statement line, a cheque
/// number).
const MAX_REFERENCE: usize = 140;

/// `recordManualPayout(payoutId, reference)` (operator): a queued payout of a `manual`
/// provider was paid outside neocloud; it is `sent` with the operator's reference and
/// leaves the payouts in transit for the bank account.
pub async fn record_manual(
    db: &DatabaseConnection,
    actor: &Principal,
    id: uuid::Uuid,
    reference: &str,
    now: DateTime<Utc>,
) -> ApiResult<provider_payout::Model> {
    actor.require_operator()?;
    let reference = reference.trim();
    if reference.is_empty() || reference.chars().count() > MAX_REFERENCE {
        return Err(ApiError::invalid(
            "reference",
            format!("1 to {MAX_REFERENCE} characters: what the payment is found by"),
        ));
    }
    let txn = crate::db::begin_write(db).await?;
    let payout = provider_payout::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| ApiError::not_found("payout"))?;
    if payout.method != MANUAL || payout.status != payouts::QUEUED {
        return Err(ApiError::InvalidState {
            message: format!(
                "payout {} is {} by {}: only a queued manual payout is recorded by hand",
                payout.number, payout.status, payout.method
            ),
        });
    }
    if !store::sent(&txn, &payout, reference, now).await? {
        return Err(ApiError::InvalidState {
            message: format!("payout {} was settled meanwhile", payout.number),
        });
    }
    let audited =
        serde_json::json!({"reference": reference, "amount": payout.amount.get().to_string()});
    crate::audit::record(
        &txn,
        actor,
        crate::audit::Entry {
            tenant_id: None,
            action: "provider_payout.record_manual",
            object_type: "provider_payout",
            object_id: payout.id.to_string(),
            before: None,
            after: Some(audited),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(provider_payout::Model {
        status: payouts::SENT.to_owned(),
        reference: Some(reference.to_owned()),
        sent_at: Some(now),
        ..payout
    })
}

/// `sepaPayoutFile(messageId)` (operator): the file as it was made, again (from the
/// payouts it paid, which keep its message id and time).
pub async fn sepa_file_again(
    db: &DatabaseConnection,
    actor: &Principal,
    debtor: Option<Debtor>,
    message_id: &str,
) -> ApiResult<SepaFile> {
    actor.require_operator()?;
    let paid = provider_payout::Entity::find()
        .filter(provider_payout::Column::Method.eq(SEPA))
        .filter(provider_payout::Column::Reference.eq(message_id))
        .all(db)
        .await?;
    let (Some(debtor), Some(at)) = (debtor, paid.first().and_then(|p| p.sent_at)) else {
        return Err(ApiError::not_found("SEPA payout file"));
    };
    let xml = build(db, &debtor, message_id, at, &paid).await?;
    Ok(SepaFile {
        message_id: message_id.to_owned(),
        payouts: paid,
        xml,
    })
}

/// The file paying `payouts`, made at `at` and executed the next day.
async fn build<C: sea_orm::ConnectionTrait>(
    txn: &C,
    debtor: &Debtor,
    message_id: &str,
    at: DateTime<Utc>,
    payouts: &[provider_payout::Model],
) -> ApiResult<String> {
    let names = legal_names(txn, payouts).await?;
    let credits: Vec<Credit> = payouts
        .iter()
        .filter_map(|p| {
            let (iban, bic) = payouts::iban_bic(&p.destination)?;
            Some(Credit {
                end_to_end_id: p.number.clone(),
                amount: p.amount.get(),
                creditor: names.get(&p.provider_id).cloned().unwrap_or_default(),
                iban: iban.to_owned(),
                bic: bic.to_owned(),
                remittance: format!("neocloud payout {}", p.number),
            })
        })
        .collect();
    let execution = (at + TimeDelta::days(1)).date_naive();
    Ok(payouts::pain001(
        debtor, message_id, at, execution, &credits,
    ))
}

async fn legal_names<C: sea_orm::ConnectionTrait>(
    txn: &C,
    payouts: &[provider_payout::Model],
) -> ApiResult<HashMap<ProviderId, String>> {
    let ids: Vec<ProviderId> = payouts.iter().map(|p| p.provider_id).collect();
    Ok(provider::Entity::find()
        .filter(provider::Column::Id.is_in(ids))
        .all(txn)
        .await?
        .into_iter()
        .map(|p| {
            let name = if p.legal_name.is_empty() {
                p.name
            } else {
                p.legal_name
            };
            (p.id, name)
        })
        .collect())
}
