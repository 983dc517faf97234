//! Providers: `createProvider`, `createProviderKey` and `providers` (operators);
//! `provider` and `providerNodes` (a provider key its own, operators any).

use async_graphql::{Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::provider;
use neocloud_schema::ids::ProviderId;

use super::api_keys::{ApiKey, CreateApiKeyPayload};
use super::scalars::{GqlGpuHealth, GqlNodeState, parse_id, to_id};
use crate::providers::payout::PayoutMethod;
use crate::providers::store::OwnNode;
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

/// A company whose hardware the operator resells (the operator itself among them).
pub struct Provider(provider::Model);

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
    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }
}

/// A GPU of a provider's node.
#[derive(SimpleObject)]
pub struct ProviderGpu {
    pub index: i32,
    pub model: String,
    pub health: GqlGpuHealth,
    pub health_changed_at: DateTime<Utc>,
    /// The allocations running on it, by id only: a provider never learns who they are.
    pub allocation_ids: Vec<ID>,
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
    pub gpus: Vec<ProviderGpu>,
    /// GPUs holding at least one running allocation.
    pub gpus_in_use: i32,
}

impl From<OwnNode> for ProviderNode {
    fn from(own: OwnNode) -> Self {
        let gpus: Vec<ProviderGpu> = own
            .gpus
            .iter()
            .map(|g| ProviderGpu {
                index: g.index,
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
        ProviderNode {
            id: to_id(own.node.id),
            hostname: own.node.hostname,
            region: own.node.region,
            zone: own.node.zone,
            rack: own.node.rack,
            nvlink_domain: own.node.nvlink_domain,
            gpu_model: own.node.gpu_model,
            state: own.node.state.into(),
            gpus_in_use: i32::try_from(in_use).unwrap_or(i32::MAX),
            gpus,
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

#[derive(SimpleObject)]
pub struct CreateProviderPayload {
    pub provider: Provider,
    /// The provider's first `provider` key. Shown once.
    pub api_key: String,
}

fn provider_arg(id: Option<ID>) -> Result<Option<ProviderId>> {
    Ok(id.map(|id| parse_id("providerId", &id)).transpose()?)
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

    /// Another key for a provider (operator). Revoked with `revokeApiKey`.
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
