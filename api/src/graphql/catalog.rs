//! The catalog: `catalog { skus }` (any user) and `createSku` (operator).

use async_graphql::{Context, ID, InputObject, Object, Result, SimpleObject};

use super::scalars::{GqlServiceCategory, GqlSkuForm, GqlStorageClass, to_id};
use crate::catalog::{self, CatalogEntry, NewSku};
use crate::error::ApiError;

pub struct Sku(CatalogEntry);

#[Object]
impl Sku {
    async fn id(&self) -> ID {
        to_id(self.0.sku.id)
    }

    async fn name(&self) -> &str {
        &self.0.sku.name
    }

    async fn gpu_model(&self) -> &str {
        &self.0.sku.gpu_model
    }

    async fn form(&self) -> GqlSkuForm {
        self.0.sku.form.into()
    }

    /// NVIDIA's profile name (`3g.40gb`) for MIG SKUs.
    async fn mig_profile(&self) -> Option<&str> {
        self.0.sku.mig_profile.as_deref()
    }

    /// Milli-GPUs sold, for fractional SKUs.
    async fn milli_gpu(&self) -> Option<i32> {
        self.0.sku.milli_gpu
    }

    /// GPU memory per unit, in MiB.
    async fn memory_mib(&self) -> Option<i64> {
        self.0.sku.memory_mib
    }

    async fn region(&self) -> &str {
        &self.0.sku.region
    }

    /// What one unit is — what `count` counts in `placeOrder` and every price here is per
    /// hour of: `GPU`, `MIG slice 3g.40gb`, `250 milli-GPU`, `node of 8 × H100` (a node
    /// SKU names the size of the region's nodes of its model; one price per node).
    async fn unit(&self) -> &str {
        &self.0.unit
    }

    /// What a VOLUME SKU stores.
    async fn storage_class(&self) -> Option<GqlStorageClass> {
        self.0.sku.storage_class.map(Into::into)
    }

    /// What it sells (FOCUS `ServiceCategory`): COMPUTE for GPU SKUs, STORAGE for volumes.
    async fn service_category(&self) -> GqlServiceCategory {
        self.0
            .sku
            .service_category
            .unwrap_or(neocloud_schema::vocabulary::ServiceCategory::Compute)
            .into()
    }

    /// List price per unit-hour, as an exact decimal string.
    async fn list_price_per_hour(&self) -> String {
        self.0.sku.list_price_per_hour.to_string()
    }

    /// What one unit-hour on demand costs the caller: its plan's ALLOCATED rate for this
    /// SKU (the first tier's price for a tiered rate), or the list price.
    async fn price_per_hour(&self) -> String {
        self.0.price.on_demand.normalize().to_string()
    }

    /// What one unit-hour on spot costs the caller (the on-demand price where the plan
    /// has no spot price).
    async fn spot_price_per_hour(&self) -> String {
        self.0.price.spot.normalize().to_string()
    }

    /// Where the caller's prices come from: its plan version (`standard v2`) or
    /// `list price`.
    async fn price_source(&self) -> &str {
        &self.0.price.source
    }

    async fn currency(&self) -> &str {
        &self.0.sku.currency
    }

    /// Units that could be ordered right now; for a VOLUME SKU, the most GB one volume
    /// may hold.
    async fn available(&self) -> u32 {
        self.0.available
    }

    /// How reliable the nodes behind this offer have been over the last 30 days (0 to 1,
    /// four decimals): their agents' coverage times their GPUs' health, weighted by GPUs
    /// (docs/providers.md, "Reliability"). Null for storage and for offers whose nodes
    /// have no record yet.
    async fn reliability(&self) -> Option<String> {
        self.0.reliability_bp.map(super::reliability::fraction)
    }
}

#[derive(SimpleObject)]
pub struct Catalog {
    pub skus: Vec<Sku>,
}

#[derive(InputObject)]
pub struct CreateSkuInput {
    pub name: String,
    /// The GPU model sold (`H100`); none for a METERED SKU.
    pub gpu_model: Option<String>,
    pub form: GqlSkuForm,
    pub mig_profile: Option<String>,
    pub milli_gpu: Option<i32>,
    /// What one unit of a METERED SKU is (`GB-month`, `1M input tokens`); none for the
    /// GPU forms, whose unit follows from the form.
    pub unit: Option<String>,
    /// What a METERED SKU sells (default OTHER; FOCUS `ServiceCategory`); none for the
    /// GPU forms, which are compute.
    pub service_category: Option<GqlServiceCategory>,
    /// What a VOLUME SKU stores (required for VOLUME, none for the other forms). A
    /// VOLUME SKU's unit is the GB and its list price is per GB-hour.
    pub storage_class: Option<GqlStorageClass>,
    pub region: String,
    /// Exact decimal string, e.g. "2.10": per unit-hour, or per unit for a METERED SKU.
    pub list_price_per_hour: String,
    pub currency: String,
}

#[derive(SimpleObject)]
pub struct CreateSkuPayload {
    pub sku: Sku,
}

#[derive(Default)]
pub struct CatalogQuery;

#[Object]
impl CatalogQuery {
    /// What can be ordered, with list prices and current availability.
    async fn catalog(&self, ctx: &Context<'_>) -> Result<Catalog> {
        let entries = catalog::list(
            super::db(ctx)?,
            super::ordering_service(ctx)?,
            super::principal(ctx)?,
            super::now(ctx)?,
        )
        .await?;
        Ok(Catalog {
            skus: entries.into_iter().map(Sku).collect(),
        })
    }
}

#[derive(Default)]
pub struct CatalogMutation;

#[Object]
impl CatalogMutation {
    /// Adds a SKU to the catalog (operator).
    async fn create_sku(
        &self,
        ctx: &Context<'_>,
        input: CreateSkuInput,
    ) -> Result<CreateSkuPayload> {
        let db = super::db(ctx)?;
        let sku = catalog::create_sku(
            db,
            super::principal(ctx)?,
            NewSku {
                name: input.name,
                gpu_model: input.gpu_model,
                form: input.form.into(),
                mig_profile: input.mig_profile,
                milli_gpu: input.milli_gpu,
                unit: input.unit,
                service_category: input.service_category.map(Into::into),
                storage_class: input.storage_class.map(Into::into),
                region: input.region,
                list_price_per_hour: input.list_price_per_hour,
                currency: input.currency,
            },
        )
        .await?;
        let price = catalog::unit_prices(db, None, super::now(ctx)?, std::slice::from_ref(&sku))
            .await?
            .remove(&sku.id.into())
            .ok_or_else(|| ApiError::invariant("the new SKU has no price"))?;
        Ok(CreateSkuPayload {
            sku: Sku(CatalogEntry {
                unit: catalog::unit_of(db, &sku).await?,
                sku,
                available: 0,
                price,
                reliability_bp: None,
            }),
        })
    }
}
