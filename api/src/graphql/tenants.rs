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
    /// The region its data lives in (null: not set).
    async fn home_region(&self) -> Option<&str> {
        self.0.home_region.as_deref()
    }
    /// The regions it may order GPUs and volumes in (null: any).
    async fn allowed_regions(&self) -> Option<Vec<String>> {
        crate::tenancy::residency::allowed(&self.0)
    }
    /// When its personal data was erased on request (null while it was not).
    async fn erased_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.0.erased_at
    }
    /// Whether every portal user must have a second factor (`requireSecondFactor`).
    async fn second_factor_required(&self) -> bool {
        self.0.second_factor_required
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

/// The legal identity a tenant's invoices are addressed to (frozen onto each invoice as it
/// is finalized).
#[derive(SimpleObject)]
pub struct BillingProfile {
    pub legal_name: String,
    pub address_lines: Vec<String>,
    pub postal_code: String,
    pub city: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// Compacted, e.g. `DE136695976`.
    pub vat_id: Option<String>,
    /// `check_digits_valid`, `format_valid` (a form whose check digits are not verified here)
    /// or `not_checked` (outside the EU). Never verified with VIES: shown on invoices as
    /// "not verified".
    pub vat_id_status: Option<String>,
    pub po_number: Option<String>,
    pub billing_email: Option<String>,
}

impl From<neocloud_metering::parties::Buyer> for BillingProfile {
    fn from(b: neocloud_metering::parties::Buyer) -> Self {
        BillingProfile {
            legal_name: b.legal_name,
            address_lines: b.address_lines,
            postal_code: b.postal_code,
            city: b.city,
            country: b.country,
            vat_id: b.vat_id,
            vat_id_status: b.vat_id_status,
            po_number: b.po_number,
            billing_email: b.billing_email,
        }
    }
}

#[derive(InputObject)]
pub struct BillingProfileInput {
    pub legal_name: String,
    /// 1 to 4 street lines.
    pub address_lines: Vec<String>,
    pub postal_code: String,
    pub city: String,
    /// ISO 3166-1 alpha-2, e.g. DE.
    pub country: String,
    /// For an EU country, a VAT id with its country's prefix, checked by format and check
    /// digits; elsewhere, the tax id as written.
    pub vat_id: Option<String>,
    pub po_number: Option<String>,
    pub billing_email: Option<String>,
}

#[derive(Default)]
pub struct TenantQuery;

#[Object]
impl TenantQuery {
    /// Tenants, oldest first (operator); `nameContains` finds them by name.
    #[graphql(complexity = "first.unwrap_or(20).max(0) as usize * child_complexity")]
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        #[graphql(
            desc = "Only tenants whose name contains this (any case; at most 100 characters)."
        )]
        name_contains: Option<String>,
    ) -> Result<Connection<String, Tenant>> {
        let page = Page::from_args(first, after.as_deref(), super::page_limit(ctx))?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let result = tenancy::list_tenants(db, principal, page, name_contains.as_deref()).await?;
        Ok(connection(result, |t| t.id.into(), Tenant))
    }

    /// One tenant: operators any, tenant roles their own.
    async fn tenant(&self, ctx: &Context<'_>, id: ID) -> Result<Tenant> {
        let id = super::scalars::parse_id("id", &id)?;
        let found = tenancy::tenant(super::db(ctx)?, super::principal(ctx)?, id).await?;
        Ok(Tenant(found))
    }

    /// The billing profile of the caller's tenant (operators: `tenantId`'s); null until set.
    async fn billing_profile(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
    ) -> Result<Option<BillingProfile>> {
        let tenant = tenant_id
            .map(|id| super::scalars::parse_id("tenantId", &id))
            .transpose()?;
        let found = tenancy::profile::get(super::db(ctx)?, super::principal(ctx)?, tenant).await?;
        Ok(found.map(BillingProfile::from))
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
            super::now(ctx)?,
        )
        .await?;
        Ok(CreateTenantPayload {
            tenant: Tenant(created.tenant),
            api_key: created.admin_key.secret,
        })
    }

    /// Sets the billing profile of the caller's tenant (tenant admins) or of `tenantId`
    /// (operators); audited. Invoices already finalized keep the profile they were issued
    /// with.
    async fn set_billing_profile(
        &self,
        ctx: &Context<'_>,
        tenant_id: Option<ID>,
        input: BillingProfileInput,
    ) -> Result<BillingProfile> {
        let tenant = tenant_id
            .map(|id| super::scalars::parse_id("tenantId", &id))
            .transpose()?;
        let input = neocloud_metering::parties::BuyerInput {
            legal_name: input.legal_name,
            address_lines: input.address_lines,
            postal_code: input.postal_code,
            city: input.city,
            country: input.country,
            vat_id: input.vat_id,
            po_number: input.po_number,
            billing_email: input.billing_email,
        };
        let saved = tenancy::profile::set(
            super::db(ctx)?,
            super::principal(ctx)?,
            tenant,
            &input,
            super::now(ctx)?,
        )
        .await?;
        Ok(saved.into())
    }

    /// Sets where a tenant's data lives (operator): its home region and the regions it may
    /// order GPUs and volumes in (null: any); the home region must be among them. Orders
    /// and volumes elsewhere are refused (`INVALID_INPUT`). Audited.
    async fn set_data_residency(
        &self,
        ctx: &Context<'_>,
        tenant_id: ID,
        home_region: Option<String>,
        allowed_regions: Option<Vec<String>>,
    ) -> Result<Tenant> {
        let id = super::scalars::parse_id("tenantId", &tenant_id)?;
        let updated = tenancy::residency::set(
            super::db(ctx)?,
            super::principal(ctx)?,
            id,
            home_region.as_deref(),
            allowed_regions.as_deref(),
        )
        .await?;
        Ok(Tenant(updated))
    }

    /// Erases a tenant's personal data on request (operator; `confirmName` is its current
    /// name): billing profile, SSH keys, labels, key labels, webhook URLs, payment method
    /// and event payloads go, its keys are revoked and it is suspended under a pseudonym.
    /// Invoices, credit notes, usage and the audit log are kept as the law requires.
    /// Refused while it has running allocations or volumes.
    async fn erase_tenant_data(
        &self,
        ctx: &Context<'_>,
        tenant_id: ID,
        confirm_name: String,
    ) -> Result<Tenant> {
        let id = super::scalars::parse_id("tenantId", &tenant_id)?;
        let (db, principal) = (super::db(ctx)?, super::principal(ctx)?);
        let (erased, _) =
            tenancy::erasure::erase(db, principal, id, &confirm_name, super::now(ctx)?).await?;
        Ok(Tenant(erased))
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
