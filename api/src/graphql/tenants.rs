//! Tenants: `tenants` and `createTenant` (operator).

use async_graphql::connection::Connection;
use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use neocloud_schema::entity::tenant;

use super::scalars::{GqlTenantStatus, connection, to_id};
use crate::pagination::Page;
use crate::tenancy;

pub struct Tenant(pub tenant::Model);

#[Object]
impl Tenant {
    async fn id(&self) -> ID {
        to_id(self.0.id)
    }

    async fn name(&self) -> &str {
        &self.0.name
    }

    /// ISO 4217 code the tenant is billed in.
    async fn currency(&self) -> &str {
        &self.0.currency
    }

    async fn status(&self) -> GqlTenantStatus {
        self.0.status.into()
    }

    /// Why the tenant is suspended (the operator's reason, or unpaid invoices); null while
    /// it is active.
    async fn suspension_reason(&self, ctx: &Context<'_>) -> Result<Option<String>> {
        Ok(crate::tenancy::suspension_reason(super::db(ctx)?, &self.0).await?)
    }

    async fn created_at(&self) -> DateTime<Utc> {
        self.0.created_at
    }

    /// Day of the month (UTC) on which its billing periods start.
    async fn billing_anchor_day(&self) -> i32 {
        self.0.billing_anchor_day
    }

    /// Days from an invoice's finalization to its due date (net terms; 0: due on receipt).
    async fn net_terms_days(&self) -> i32 {
        self.0.net_terms_days
    }
}

#[derive(InputObject)]
pub struct CreateTenantInput {
    pub name: String,
    /// ISO 4217 code, e.g. USD.
    pub currency: String,
    /// Day of the month (1–28, UTC) on which its billing periods start.
    #[graphql(default = 1)]
    pub billing_anchor_day: i32,
}

#[derive(SimpleObject)]
pub struct CreateTenantPayload {
    pub tenant: Tenant,
    /// The tenant's first `tenant_admin` key. Shown once.
    pub api_key: String,
}

#[derive(Default)]
pub struct TenantQuery;

#[Object]
impl TenantQuery {
    /// Every tenant, oldest first (operator).
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> Result<Connection<String, Tenant>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let result = tenancy::list_tenants(super::db(ctx)?, super::principal(ctx)?, page).await?;
        Ok(connection(result, |t| t.id.into(), Tenant))
    }
}

#[derive(Default)]
pub struct TenantMutation;

#[Object]
impl TenantMutation {
    /// Creates a tenant and its first admin key (operator).
    async fn create_tenant(
        &self,
        ctx: &Context<'_>,
        input: CreateTenantInput,
    ) -> Result<CreateTenantPayload> {
        let created = tenancy::create_tenant(
            super::db(ctx)?,
            super::principal(ctx)?,
            &input.name,
            &input.currency,
            input.billing_anchor_day,
        )
        .await?;
        Ok(CreateTenantPayload {
            tenant: Tenant(created.tenant),
            api_key: created.admin_key.secret,
        })
    }

    /// Sets a tenant's net terms (operator): invoices finalized from now on fall due this
    /// many days later (0 to 120; 30 for a new tenant).
    async fn set_payment_terms(
        &self,
        ctx: &Context<'_>,
        tenant_id: ID,
        net_terms_days: i32,
    ) -> Result<Tenant> {
        let id = super::scalars::parse_id("tenantId", &tenant_id)?;
        let updated =
            tenancy::set_payment_terms(super::db(ctx)?, super::principal(ctx)?, id, net_terms_days)
                .await?;
        Ok(Tenant(updated))
    }
}
