//! Providers: `createProvider`, `createProviderKey` and `providers` (operators);
//! `provider` and `providerNodes` (a provider key its own, operators any).

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::{provider, provider_agreement};
use neocloud_schema::ids::ProviderId;

use super::api_keys::{ApiKey, CreateApiKeyPayload};
use super::reliability::Reliability;
use super::scalars::{
    GqlGpuHealth, GqlNodeState, GqlNodeVerification, GqlSkuForm, parse_id, provider_arg, to_id,
};
use crate::providers::payout::PayoutMethod;
use crate::providers::store::OwnNode;
use crate::providers::terms::{EarningModel, RateInput, SlaBearer, TermsInput};
use crate::providers::{self, ProviderInput};

/// How a provider is paid.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "crate::providers::payout::PayoutMethod")]
pub enum GqlPayoutMethod {
    /// The operator pays outside neocloud.
    Manual,
    /// Transfers to a Stripe connected account (`acct_…`).
    StripeConnect,
    /// SEPA credit transfers to an IBAN (with its BIC).
    SepaCreditTransfer,
}

/// How a provider's earnings are computed.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "crate::providers::terms::EarningModel")]
pub enum GqlEarningModel {
    /// A percentage of what tenants are invoiced for the provider's hardware.
    RevenueShare,
    /// A price per unit-hour per SKU form and region.
    FixedRate,
}

/// Who gives up the SLA credits tenants get for a failed GPU.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "crate::providers::terms::SlaBearer")]
pub enum GqlSlaBearer {
    /// The provider whose hardware failed.
    Provider,
    Platform,
}

/// A fixed price of a provider agreement.
#[derive(SimpleObject)]
pub struct ProviderRate {
    pub form: GqlSkuForm,
    pub region: String,
    pub price_per_unit_hour: String,
}

/// A version of the terms a provider's capacity is resold on. Never changed: a new
/// version takes effect from its start.
pub struct ProviderAgreement(provider_agreement::Model);

#[Object]
impl ProviderAgreement {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }
    async fn provider_id(&self) -> ID {
        to_id(self.0.provider_id)
    }
    /// 1, 2, … per provider.
    async fn version(&self) -> i32 {
        self.0.version
    }
    async fn effective_from(&self) -> DateTime<Utc> {
        self.0.effective_from
    }
    /// The provider's currency, which rates and the minimum are in.
    async fn currency(&self) -> &str {
        &self.0.currency
    }
    async fn model(&self) -> GqlEarningModel {
        EarningModel::parse(&self.0.model)
            .unwrap_or(EarningModel::RevenueShare)
            .into()
    }
    /// For `REVENUE_SHARE`: the provider's share of what tenants are invoiced, percent.
    async fn revenue_share_percent(&self) -> Option<String> {
        self.0
            .revenue_share_percent
            .as_ref()
            .map(|p| p.get().normalize().to_string())
    }
    /// For `FIXED_RATE`.
    async fn fixed_rates(&self) -> Vec<ProviderRate> {
        let rates = self.0.fixed_rates.as_array().cloned().unwrap_or_default();
        rates
            .iter()
            .filter_map(|r| {
                let form: neocloud_schema::vocabulary::SkuForm =
                    r["form"].as_str()?.parse().ok()?;
                Some(ProviderRate {
                    form: form.into(),
                    region: r["region"].as_str()?.to_owned(),
                    price_per_unit_hour: r["price_per_unit_hour"].as_str()?.to_owned(),
                })
            })
            .collect()
    }
    /// Taken from the provider's gross, percent.
    async fn platform_fee_percent(&self) -> String {
        self.0.platform_fee_percent.get().normalize().to_string()
    }
    async fn sla_credits_borne_by(&self) -> GqlSlaBearer {
        SlaBearer::parse(&self.0.sla_credits_borne_by)
            .unwrap_or(SlaBearer::Provider)
            .into()
    }
    /// `monthly`.
    async fn payout_schedule(&self) -> &str {
        &self.0.payout_schedule
    }
    /// Nothing is paid out below it; it carries over.
    async fn payout_minimum(&self) -> String {
        self.0.payout_minimum.get().to_string()
    }
    /// Pay out only what tenants' paid invoices earned.
    async fn hold_until_paid(&self) -> bool {
        self.0.hold_until_paid
    }
    /// Whether a credit note takes back part of what the provider earned: always for a
    /// revenue share; for a fixed rate, as agreed (the part of the invoice it gave back).
    async fn credit_notes_shared(&self) -> bool {
        self.0.model == "revenue_share" || self.0.credit_notes_shared
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
}

#[derive(InputObject)]
pub struct ProviderRateInput {
    /// A hardware form: `WHOLE_GPU`, `MIG`, `FRACTIONAL` or `WHOLE_NODE`.
    pub form: GqlSkuForm,
    pub region: String,
    /// Above 0, at most 6 decimals, in the provider's currency.
    pub price_per_unit_hour: String,
}

#[derive(InputObject)]
pub struct ProviderAgreementInput {
    pub provider_id: ID,
    /// Default: now. Never in the past, and after the latest version's start.
    pub effective_from: Option<DateTime<Utc>>,
    pub model: GqlEarningModel,
    /// For `REVENUE_SHARE`: above 0, at most 100, at most 4 decimals.
    pub revenue_share_percent: Option<String>,
    /// For `FIXED_RATE`: 1 to 64 prices, one per form and region.
    #[graphql(default)]
    pub fixed_rates: Vec<ProviderRateInput>,
    /// 0 to below 100, at most 4 decimals.
    pub platform_fee_percent: String,
    #[graphql(default_with = "GqlSlaBearer::Provider")]
    pub sla_credits_borne_by: GqlSlaBearer,
    /// In the provider's currency, at most its minor unit's digits.
    pub payout_minimum: String,
    #[graphql(default = true)]
    pub hold_until_paid: bool,
    /// For `FIXED_RATE`: a credit note then takes back, of what an allocation earned, the
    /// part it gave back of what the allocation was invoiced (default: no, the hours
    /// served keep what they earned). A revenue share always shares credit notes
    /// (`false` is refused).
    pub share_credit_notes: Option<bool>,
}

/// A company whose hardware the operator resells (the operator itself among them).
pub struct Provider(pub provider::Model);

#[Object]
impl Provider {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }
    /// The name nodes are registered under (a slug).
    async fn name(&self) -> &str {
        &self.0.name
    }
    async fn legal_name(&self) -> &str {
        &self.0.legal_name
    }
    /// ISO 3166-1 alpha-2; empty for a provider only named at node registration.
    async fn country(&self) -> &str {
        &self.0.country
    }
    /// What the provider is paid in.
    async fn currency(&self) -> &str {
        &self.0.currency
    }
    async fn payout_method(&self) -> GqlPayoutMethod {
        PayoutMethod::parse(&self.0.payout_method)
            .unwrap_or(PayoutMethod::Manual)
            .into()
    }
    /// The connected account, or `IBAN BIC`; null for manual payouts.
    async fn payout_account(&self) -> Option<&str> {
        self.0.payout_account.as_deref()
    }
    /// Whether every one of its users must have a second factor
    /// (`requireProviderSecondFactor`).
    async fn second_factor_required(&self) -> bool {
        self.0.second_factor_required
    }
    /// Why its next statement has not closed (an exchange rate missing: add it with
    /// `addExchangeRate`); null when nothing holds it.
    async fn statement_held(&self) -> Option<StatementHold> {
        crate::providers::statements::held_of(&self.0).map(|h| StatementHold {
            reason: h.reason(),
            from_currency: h.from,
            to_currency: h.to,
            at: h.at,
        })
    }
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
    /// The GPU-weighted reliability of its nodes over the last 30 days (0 to 1, four
    /// decimals); null while none has a record.
    async fn reliability(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        let db = super::db(ctx)?;
        let bp = crate::fleet::reliability::of_provider(db, self.0.id, super::now(ctx)?).await?;
        Ok(bp.map(super::reliability::fraction))
    }
}

/// Why a provider's next statement is held: no exchange rate from `from` to `to` in force
/// at `at`, the end of an invoice's period.
#[derive(SimpleObject)]
pub struct StatementHold {
    pub reason: String,
    /// ISO 4217: the invoice's currency.
    #[graphql(name = "from")]
    pub from_currency: String,
    /// ISO 4217: the provider's currency.
    #[graphql(name = "to")]
    pub to_currency: String,
    pub at: DateTime<Utc>,
}

/// A GPU of a provider's node.
#[derive(SimpleObject)]
pub struct ProviderGpu {
    pub index: i32,
    /// NVML's UUID, as the provider registered it.
    pub uuid: String,
    pub model: String,
    pub health: GqlGpuHealth,
    pub health_changed_at: DateTime<Utc>,
    /// The allocations running on it, by id only: a provider never learns who they are.
    pub allocation_ids: Vec<ID>,
}

/// A health event an agent reported on a provider's node.
#[derive(SimpleObject)]
pub struct ProviderHealthEvent {
    /// The GPU's index on the node; null when the device is not one of its GPUs.
    pub gpu_index: Option<i32>,
    /// `xid`, `ecc_single_bit` or `ecc_double_bit`.
    pub kind: String,
    /// The XID code (0 for ECC events).
    pub code: i32,
    pub at: DateTime<Utc>,
}

/// One of a provider's nodes as the provider sees it.
#[derive(SimpleObject)]
pub struct ProviderNode {
    pub id: ID,
    pub hostname: String,
    pub region: String,
    pub zone: String,
    pub rack: String,
    pub nvlink_domain: String,
    pub gpu_model: String,
    pub state: GqlNodeState,
    /// Whether its agent reported the registered hardware; only `TRUSTED` and `VERIFIED`
    /// nodes take allocations.
    pub verification: GqlNodeVerification,
    /// What differs, while `MISMATCH`.
    pub verification_reason: Option<String>,
    pub verified_at: Option<DateTime<Utc>>,
    /// When it left the fleet (`RETIRED`).
    pub retired_at: Option<DateTime<Utc>>,
    pub gpus: Vec<ProviderGpu>,
    /// GPUs holding at least one running allocation.
    pub gpus_in_use: i32,
    /// XID and ECC events of the last 30 days, newest first, at most 20: what its health
    /// and reliability come from.
    pub health_events: Vec<ProviderHealthEvent>,
    /// Its reliability and what it comes from; null before the first computation.
    pub reliability: Option<Reliability>,
}

impl From<OwnNode> for ProviderNode {
    fn from(own: OwnNode) -> Self {
        let gpus: Vec<ProviderGpu> = own
            .gpus
            .iter()
            .map(|g| ProviderGpu {
                index: g.index,
                uuid: g.uuid.clone(),
                model: g.model.clone(),
                health: g.health.into(),
                health_changed_at: g.health_changed_at,
                allocation_ids: own
                    .held
                    .iter()
                    .filter(|h| h.gpu_id == g.id)
                    .map(|h| to_id(h.allocation_id))
                    .collect(),
            })
            .collect();
        let in_use = gpus.iter().filter(|g| !g.allocation_ids.is_empty()).count();
        let health_events = own
            .events
            .iter()
            .map(|e| {
                let uuid = e.gpu_uuid.as_deref().unwrap_or(&e.device_uuid);
                ProviderHealthEvent {
                    gpu_index: own.gpus.iter().find(|g| g.uuid == uuid).map(|g| g.index),
                    kind: e.kind.clone(),
                    code: e.code,
                    at: e.at,
                }
            })
            .collect();
        ProviderNode {
            id: to_id(own.node.id),
            hostname: own.node.hostname,
            region: own.node.region,
            zone: own.node.zone,
            rack: own.node.rack,
            nvlink_domain: own.node.nvlink_domain,
            gpu_model: own.node.gpu_model,
            state: own.node.state.into(),
            verification: own.node.verification.into(),
            verification_reason: own.node.verification_reason,
            verified_at: own.node.verified_at,
            retired_at: own.node.retired_at,
            gpus_in_use: i32::try_from(in_use).unwrap_or(i32::MAX),
            gpus,
            health_events,
            reliability: own.reliability.map(Reliability),
        }
    }
}

#[derive(InputObject)]
pub struct CreateProviderInput {
    /// The name nodes are registered under: a slug, unique.
    pub name: String,
    pub legal_name: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// ISO 4217: what the provider is paid in.
    pub currency: String,
    pub payout_method: GqlPayoutMethod,
    /// A Stripe connected account (`acct_…`) for `STRIPE_CONNECT`, `IBAN BIC` for
    /// `SEPA_CREDIT_TRANSFER`, nothing for `MANUAL`.
    pub payout_account: Option<String>,
}

#[derive(InputObject)]
pub struct ProviderDetailsInput {
    pub legal_name: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// ISO 4217; fixed once the provider has an agreement.
    pub currency: String,
    pub payout_method: GqlPayoutMethod,
    /// As for `createProvider`.
    pub payout_account: Option<String>,
}

#[derive(SimpleObject)]
pub struct CreateProviderPayload {
    pub provider: Provider,
    /// The provider's first `provider` key. Shown once.
    pub api_key: String,
}

#[derive(Default)]
pub struct ProviderQuery;

#[Object]
impl ProviderQuery {
    /// Every provider (operator).
    async fn providers(&self, ctx: &Context<'_>) -> Result<Vec<Provider>> {
        let found = providers::list(super::db(ctx)?, super::principal(ctx)?).await?;
        Ok(found.into_iter().map(Provider).collect())
    }

    /// A provider: a provider key's own (no id needed), any for operators.
    async fn provider(&self, ctx: &Context<'_>, id: Option<ID>) -> Result<Provider> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        Ok(Provider(
            providers::get(db, principal, provider_arg(id)?).await?,
        ))
    }

    /// The provider's agreements, oldest version first: a provider key's own, any
    /// provider's for operators.
    async fn provider_agreements(
        &self,
        ctx: &Context<'_>,
        provider_id: Option<ID>,
    ) -> Result<Vec<ProviderAgreement>> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let found = providers::agreements(db, principal, provider_arg(provider_id)?).await?;
        Ok(found.into_iter().map(ProviderAgreement).collect())
    }

    /// The provider's nodes, GPUs and what runs on them (as allocation ids): a provider
    /// key's own, any provider's for operators.
    async fn provider_nodes(
        &self,
        ctx: &Context<'_>,
        provider_id: Option<ID>,
    ) -> Result<Vec<ProviderNode>> {
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let nodes = providers::nodes(db, principal, provider_arg(provider_id)?).await?;
        Ok(nodes.into_iter().map(ProviderNode::from).collect())
    }
}

#[derive(Default)]
pub struct ProviderMutation;

impl ProviderAgreementInput {
    fn into_terms(self) -> TermsInput {
        TermsInput {
            effective_from: self.effective_from,
            model: self.model.into(),
            revenue_share_percent: self.revenue_share_percent,
            fixed_rates: self
                .fixed_rates
                .into_iter()
                .map(|r| RateInput {
                    form: r.form.into(),
                    region: r.region,
                    price_per_unit_hour: r.price_per_unit_hour,
                })
                .collect(),
            platform_fee_percent: self.platform_fee_percent,
            sla_credits_borne_by: self.sla_credits_borne_by.into(),
            payout_minimum: self.payout_minimum,
            hold_until_paid: self.hold_until_paid,
            share_credit_notes: self.share_credit_notes,
        }
    }
}

#[Object]
impl ProviderMutation {
    /// Creates a provider and its first key (operator).
    async fn create_provider(
        &self,
        ctx: &Context<'_>,
        input: CreateProviderInput,
    ) -> Result<CreateProviderPayload> {
        let input = ProviderInput {
            name: input.name,
            legal_name: input.legal_name,
            country: input.country,
            currency: input.currency,
            payout_method: input.payout_method.into(),
            payout_account: input.payout_account,
        };
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let (created, key) = providers::create(db, principal, input, super::now(ctx)?).await?;
        Ok(CreateProviderPayload {
            provider: Provider(created),
            api_key: key.secret,
        })
    }

    /// Replaces a provider's legal and payout details (operator); its name stays.
    async fn update_provider(
        &self,
        ctx: &Context<'_>,
        id: ID,
        input: ProviderDetailsInput,
    ) -> Result<Provider> {
        let id: ProviderId = parse_id("id", &id)?;
        let details = providers::DetailsInput {
            legal_name: input.legal_name,
            country: input.country,
            currency: input.currency,
            payout_method: input.payout_method.into(),
            payout_account: input.payout_account,
        };
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        Ok(Provider(
            providers::update(db, principal, id, details).await?,
        ))
    }

    /// The provider's next version of its terms (operator), in force from its start.
    async fn create_provider_agreement(
        &self,
        ctx: &Context<'_>,
        input: ProviderAgreementInput,
    ) -> Result<ProviderAgreement> {
        let id: ProviderId = parse_id("providerId", &input.provider_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let now = super::now(ctx)?;
        let added = providers::add_agreement(db, principal, id, input.into_terms(), now).await?;
        Ok(ProviderAgreement(added))
    }

    /// Another key for a provider (operators; a provider key for its own). Revoked with
    /// `revokeApiKey`.
    async fn create_provider_key(
        &self,
        ctx: &Context<'_>,
        provider_id: ID,
        label: Option<String>,
    ) -> Result<CreateApiKeyPayload> {
        let id: ProviderId = parse_id("providerId", &provider_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let minted = providers::create_key(db, principal, id, label.as_deref()).await?;
        Ok(CreateApiKeyPayload {
            api_key: minted.secret,
            key: ApiKey(minted.key),
        })
    }
}
