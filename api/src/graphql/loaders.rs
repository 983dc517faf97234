//! Batched reads for fields of list items: a page of 100 nodes asking for their agent
//! tokens and allocations costs one query each, not one per node; and reads that several
//! fields of one request share (a tenant's usage costs). A loader lives for one request;
//! `NodeExtras` acts as its caller (the domain functions authorize the batch), the usage
//! resolver authorizes before it asks `UsageCosts`.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;

use async_graphql::dataloader::{DataLoader, Loader};
use chrono::{DateTime, Utc};
use neocloud_metering::invoicing::costs::unit_costs;
use neocloud_metering::rating::unit_cost::UnitCosts;
use neocloud_schema::clock::SharedClock;
use neocloud_schema::entity::api_key;
use neocloud_schema::ids::{NodeId, TenantId};
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use crate::auth::Principal;
use crate::error::ApiError;
use crate::ordering::AllocationView;

/// What one request's node fields read, as its caller.
pub struct NodeExtras {
    db: DatabaseConnection,
    caller: Principal,
}

impl NodeExtras {
    pub fn loader(db: DatabaseConnection, caller: Principal) -> DataLoader<NodeExtras> {
        DataLoader::new(NodeExtras { db, caller }, tokio::spawn)
    }
}

/// A node's agent tokens.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokensOf(pub Uuid);

/// A node's live allocations.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LiveOn(pub Uuid);

impl Loader<TokensOf> for NodeExtras {
    type Value = Vec<api_key::Model>;
    type Error = Arc<ApiError>;

    async fn load(&self, keys: &[TokensOf]) -> Result<HashMap<TokensOf, Self::Value>, Self::Error> {
        let nodes: Vec<NodeId> = keys.iter().map(|k| NodeId(k.0)).collect();
        let tokens = crate::auth::agent_tokens(&self.db, &self.caller, &nodes).await?;
        let mut out: HashMap<TokensOf, Self::Value> = HashMap::new();
        for token in tokens {
            if let Some(node) = token.node_id {
                out.entry(TokensOf(node.into())).or_default().push(token);
            }
        }
        Ok(out)
    }
}

impl Loader<LiveOn> for NodeExtras {
    type Value = Vec<AllocationView>;
    type Error = Arc<ApiError>;

    async fn load(&self, keys: &[LiveOn]) -> Result<HashMap<LiveOn, Self::Value>, Self::Error> {
        let nodes: Vec<Uuid> = keys.iter().map(|k| k.0).collect();
        let live = crate::ordering::live_on_nodes(&self.db, &self.caller, &nodes).await?;
        let mut out: HashMap<LiveOn, Self::Value> = HashMap::new();
        for view in live {
            out.entry(LiveOn(view.allocation.node_id.into()))
                .or_default()
                .push(view);
        }
        Ok(out)
    }
}

/// What one request's `usage` fields price their rows at: the open period is rated once
/// per tenant and range, however many fields of the request ask for costs.
pub struct UsageCosts {
    db: DatabaseConnection,
    clock: SharedClock,
}

impl UsageCosts {
    pub fn loader(db: DatabaseConnection, clock: SharedClock) -> DataLoader<UsageCosts> {
        DataLoader::new(UsageCosts { db, clock }, tokio::spawn)
    }
}

/// A tenant's unit costs over `[from, to)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CostsOf(pub TenantId, pub DateTime<Utc>, pub DateTime<Utc>);

impl Loader<CostsOf> for UsageCosts {
    type Value = Arc<UnitCosts>;
    type Error = Arc<ApiError>;

    async fn load(&self, keys: &[CostsOf]) -> Result<HashMap<CostsOf, Self::Value>, Self::Error> {
        let now = self.clock.now();
        let mut out = HashMap::new();
        for &key @ CostsOf(tenant, from, to) in keys {
            let costs = unit_costs(&self.db, tenant, (from, to), now)
                .await
                .map_err(ApiError::from)?;
            out.insert(key, Arc::new(costs));
        }
        Ok(out)
    }
}

/// `key`'s value through the request's loader (none for a key with nothing).
pub async fn load<K>(
    ctx: &async_graphql::Context<'_>,
    key: K,
) -> async_graphql::Result<<NodeExtras as Loader<K>>::Value>
where
    K: Send + Sync + std::hash::Hash + Eq + Clone + 'static,
    NodeExtras: Loader<K>,
    <NodeExtras as Loader<K>>::Value: Default,
    <NodeExtras as Loader<K>>::Error: std::ops::Deref<Target = ApiError>,
{
    let loader = ctx.data::<DataLoader<NodeExtras>>()?;
    match loader.load_one(key).await {
        Ok(found) => Ok(found.unwrap_or_default()),
        Err(err) => Err(err.deref().into()),
    }
}
