//! Batched reads for fields of list items: a page of 100 nodes asking for their agent
//! tokens and allocations costs one query each, not one per node. A loader lives for one
//! request and acts as its caller (the domain functions authorize the batch).

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;

use async_graphql::dataloader::{DataLoader, Loader};
use neocloud_schema::entity::api_key;
use neocloud_schema::ids::NodeId;
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
