//! Providers: the companies whose hardware the operator resells, the operator itself
//! among them (docs/providers.md). Operators create them (`createProvider`, which mints
//! the provider's first key) and their further keys (`createProviderKey`); a `provider`
//! key reads its own provider and nodes — state, health, and who uses a GPU only as an
//! allocation id — and nothing of any tenant or other provider.

pub mod exchange_rates;
pub mod payout;
pub mod payouts;
pub mod statements;
pub mod store;
pub mod terms;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::{provider, provider_agreement};
use neocloud_schema::ids::ProviderId;
use neocloud_schema::money::Currency;
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::Role;
use sea_orm::DatabaseConnection;
use serde_json::json;

use self::payout::PayoutMethod;
use self::store::{NewProvider, OwnNode};
use crate::audit;
use crate::auth::{self, KeyOwner, MintedKey, Principal};
use crate::error::{ApiError, ApiResult};

/// What `createProvider` asks for, unchecked.
#[derive(Debug, Clone)]
pub struct ProviderInput {
    pub name: String,
    pub legal_name: String,
    pub country: String,
    pub currency: String,
    pub payout_method: PayoutMethod,
    pub payout_account: Option<String>,
}

impl ProviderInput {
    /// Checks every field; the first refused one is named.
    fn check(self) -> ApiResult<NewProvider> {
        let name = Slug::parse(&self.name)
            .map(Slug::into_string)
            .map_err(|rule| ApiError::invalid("name", rule))?;
        let legal_name = self.legal_name.trim().to_owned();
        if legal_name.is_empty()
            || legal_name.chars().count() > 200
            || legal_name.chars().any(char::is_control)
        {
            return Err(ApiError::invalid(
                "legalName",
                "1 to 200 characters, no control characters",
            ));
        }
        let country = self.country.trim().to_ascii_uppercase();
        if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(ApiError::invalid(
                "country",
                "an ISO 3166-1 alpha-2 code, e.g. DE",
            ));
        }
        let currency: Currency = self.currency.trim().parse().map_err(
            |e: neocloud_schema::money::UnknownCurrency| {
                ApiError::invalid("currency", e.to_string())
            },
        )?;
        let payout_account = payout::account(self.payout_method, self.payout_account.as_deref())?;
        Ok(NewProvider {
            name,
            legal_name,
            country,
            currency: currency.code().to_owned(),
            payout_method: self.payout_method.as_str(),
            payout_account,
        })
    }
}

/// What is recorded of a provider in the audit log (no payout account: it is banking
/// data, and the log is kept for ever).
fn describe(p: &provider::Model) -> serde_json::Value {
    json!({"name": p.name, "legal_name": p.legal_name, "country": p.country,
           "currency": p.currency, "payout_method": p.payout_method})
}

/// `createProvider` (operator): the provider and its first `provider` key.
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    input: ProviderInput,
    now: DateTime<Utc>,
) -> ApiResult<(provider::Model, MintedKey)> {
    actor.require_operator()?;
    let new = input.check()?;
    let txn = crate::db::begin_write(db).await?;
    if store::find_by_name(&txn, &new.name).await?.is_some() {
        return Err(ApiError::AlreadyExists {
            what: format!("provider `{}`", new.name),
        });
    }
    let created = store::insert(&txn, new, now).await?;
    let key = mint(&txn, actor, created.id, "first provider key").await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "provider.create",
            object_type: "provider",
            object_id: created.id.to_string(),
            before: None,
            after: Some(describe(&created)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok((created, key))
}

async fn mint(
    txn: &sea_orm::DatabaseTransaction,
    actor: &Principal,
    provider: ProviderId,
    label: &str,
) -> ApiResult<MintedKey> {
    let owner = KeyOwner {
        provider_id: Some(provider),
        ..KeyOwner::default()
    };
    let minted = auth::mint_for(txn, Role::Provider, owner, label, Some(actor.key_id)).await?;
    audit::record(
        txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "api_key.create",
            object_type: "api_key",
            object_id: minted.key.id.to_string(),
            before: None,
            after: Some(auth::store::describe(&minted.key)),
        },
    )
    .await?;
    Ok(minted)
}

/// The details `updateProvider` replaces: all but the name nodes are registered under.
#[derive(Debug, Clone)]
pub struct DetailsInput {
    pub legal_name: String,
    pub country: String,
    pub currency: String,
    pub payout_method: PayoutMethod,
    pub payout_account: Option<String>,
}

/// `updateProvider(id, input)` (operator): new legal and payout details, checked as at
/// creation. The currency is fixed once an agreement exists (its prices are in it).
pub async fn update(
    db: &DatabaseConnection,
    actor: &Principal,
    id: ProviderId,
    input: DetailsInput,
) -> ApiResult<provider::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let found = store::find(&txn, id)
        .await?
        .ok_or_else(|| ApiError::not_found("provider"))?;
    let checked = ProviderInput {
        name: found.name.clone(),
        legal_name: input.legal_name,
        country: input.country,
        currency: input.currency,
        payout_method: input.payout_method,
        payout_account: input.payout_account,
    }
    .check()?;
    if checked.currency != found.currency && !store::agreements(&txn, id).await?.is_empty() {
        return Err(ApiError::InvalidState {
            message: format!(
                "the provider's agreements are in {}: add a provider for another currency",
                found.currency
            ),
        });
    }
    let updated = store::update_details(&txn, found.clone(), checked).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "provider.update",
            object_type: "provider",
            object_id: id.to_string(),
            before: Some(describe(&found)),
            after: Some(describe(&updated)),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// `createProviderKey(providerId, label)`: another key of the provider (operators; a
/// provider key for its own provider).
pub async fn create_key(
    db: &DatabaseConnection,
    actor: &Principal,
    provider: ProviderId,
    label: Option<&str>,
) -> ApiResult<MintedKey> {
    // Operators for any provider; a provider key for its own (another's is NOT_FOUND).
    let provider = match actor.role {
        Role::Provider => actor.acting_provider(Some(provider))?,
        _ => {
            actor.require_operator()?;
            provider
        }
    };
    let label = auth::validate_label(label)?;
    let txn = crate::db::begin_write(db).await?;
    store::find(&txn, provider)
        .await?
        .ok_or_else(|| ApiError::not_found("provider"))?;
    let minted = mint(&txn, actor, provider, &label).await?;
    txn.commit().await?;
    Ok(minted)
}

/// `providers` (operator).
pub async fn list(db: &DatabaseConnection, actor: &Principal) -> ApiResult<Vec<provider::Model>> {
    actor.require_operator()?;
    Ok(store::list(db).await?)
}

/// `provider(id)`: a provider key's own (another's is `NOT_FOUND`), any for operators.
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<ProviderId>,
) -> ApiResult<provider::Model> {
    let id = actor.acting_provider(asked)?;
    store::find(db, id)
        .await?
        .ok_or_else(|| ApiError::not_found("provider"))
}

/// `providerNodes(providerId)`: the provider's nodes with their GPUs and what runs on
/// them, as allocation ids only.
pub async fn nodes(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<ProviderId>,
) -> ApiResult<Vec<OwnNode>> {
    let id = actor.acting_provider(asked)?;
    Ok(store::nodes_of(db, id).await?)
}

/// `createProviderAgreement` (operator): the provider's next version of its terms, from
/// its start on. Versions are never changed; the one in force at a moment is the latest
/// that started by then.
pub async fn add_agreement(
    db: &DatabaseConnection,
    actor: &Principal,
    provider: ProviderId,
    input: terms::TermsInput,
    now: DateTime<Utc>,
) -> ApiResult<provider_agreement::Model> {
    actor.require_operator()?;
    let txn = crate::db::begin_write(db).await?;
    let found = store::find(&txn, provider)
        .await?
        .ok_or_else(|| ApiError::not_found("provider"))?;
    // Versions of one provider are added one at a time (the unique version index backs
    // this up on a race).
    let earlier = store::agreements(&txn, provider).await?;
    let last = earlier.last();
    let checked = terms::check(input, &found.currency, last.map(|a| a.effective_from), now)?;
    let version = last.map_or(1, |a| a.version + 1);
    let added =
        store::insert_agreement(&txn, &found, version, &checked, actor.key_id.into(), now).await?;
    audit::record(
        &txn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "provider_agreement.create",
            object_type: "provider_agreement",
            object_id: added.id.to_string(),
            before: None,
            after: Some(json!({"provider_id": provider, "version": version,
                "effective_from": added.effective_from, "model": added.model,
                "revenue_share_percent": added.revenue_share_percent.as_ref().map(|p| p.get().to_string()),
                "fixed_rates": added.fixed_rates,
                "platform_fee_percent": added.platform_fee_percent.get().to_string(),
                "sla_credits_borne_by": added.sla_credits_borne_by,
                "payout_minimum": added.payout_minimum.get().to_string(),
                "hold_until_paid": added.hold_until_paid,
                "credit_notes_shared": added.credit_notes_shared})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(added)
}

/// `providerAgreements(providerId)`: a provider key's own, any provider's for operators.
pub async fn agreements(
    db: &DatabaseConnection,
    actor: &Principal,
    asked: Option<ProviderId>,
) -> ApiResult<Vec<provider_agreement::Model>> {
    let id = actor.acting_provider(asked)?;
    Ok(store::agreements(db, id).await?)
}
