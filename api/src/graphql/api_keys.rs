//! API keys: `apiKeys`, `createApiKey`, `revokeApiKey`.

use async_graphql::{Context, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::api_key;
use neocloud_schema::ids::{ApiKeyId, TenantId};

use super::scalars::{GqlRole, parse_id, to_id};
use crate::auth;

pub struct ApiKey(pub api_key::Model);

#[Object]
impl ApiKey {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }

    /// The public part of the key (`nck_<prefix>_…`), to tell keys apart.
    async fn prefix(&self) -> &str {
        &self.0.prefix
    }

    async fn role(&self) -> GqlRole {
        self.0.role.into()
    }

    async fn label(&self) -> &str {
        &self.0.label
    }

    async fn tenant_id(&self) -> Option<ID> {
        self.0.tenant_id.map(to_id)
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }

    /// Last use, to the minute.
    async fn last_used_at(&self) -> Option<DateTime<Utc>> {
        self.0.last_used_at
    }

    async fn revoked_at(&self) -> Option<DateTime<Utc>> {
        self.0.revoked_at
    }
}

#[derive(SimpleObject)]
pub struct CreateApiKeyPayload {
    /// The key itself. Shown once; only its hash is stored.
    pub api_key: String,
    pub key: ApiKey,
}

#[derive(SimpleObject)]
pub struct RevokeApiKeyPayload {
    pub key: ApiKey,
}

#[derive(Default)]
pub struct ApiKeyQuery;

#[Object]
impl ApiKeyQuery {
    /// Keys of the caller's tenant (operators: operator keys, or the keys of `tenantId`).
    async fn api_keys(&self, ctx: &Context<'_>, tenant_id: Option<ID>) -> Result<Vec<ApiKey>> {
        let tenant_id: Option<TenantId> =
            tenant_id.map(|id| parse_id("tenantId", &id)).transpose()?;
        let keys = auth::list_keys(super::db(ctx)?, super::principal(ctx)?, tenant_id).await?;
        Ok(keys.into_iter().map(ApiKey).collect())
    }
}

#[derive(Default)]
pub struct ApiKeyMutation;

#[Object]
impl ApiKeyMutation {
    /// Creates a key of `role`, never more powerful than the caller's own.
    async fn create_api_key(
        &self,
        ctx: &Context<'_>,
        role: GqlRole,
        label: Option<String>,
        #[graphql(desc = "Operators creating a tenant key name the tenant.")] tenant_id: Option<ID>,
    ) -> Result<CreateApiKeyPayload> {
        let tenant_id: Option<TenantId> =
            tenant_id.map(|id| parse_id("tenantId", &id)).transpose()?;
        let minted = auth::create_key(
            super::db(ctx)?,
            super::principal(ctx)?,
            role.into(),
            tenant_id,
            label.as_deref(),
        )
        .await?;
        Ok(CreateApiKeyPayload {
            api_key: minted.secret,
            key: ApiKey(minted.key),
        })
    }

    /// Revokes a key at once; requests with it fail from now on.
    async fn revoke_api_key(&self, ctx: &Context<'_>, id: ID) -> Result<RevokeApiKeyPayload> {
        let id: ApiKeyId = parse_id("id", &id)?;
        let key = auth::revoke_key(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(RevokeApiKeyPayload { key: ApiKey(key) })
    }
}
