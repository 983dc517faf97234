//! The catalog: what tenants can order (SKUs), at which list price, and how many of each
//! could be placed right now.

pub(crate) mod store;

use neocloud_schema::slug::Slug;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use neocloud_metering::invoicing::prices::{self, UnitPrice};
use neocloud_schema::entity::sku;
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::TenantId;
use neocloud_schema::mig::MigProfile;
use neocloud_schema::money::{Currency, parse_plain_decimal};
use neocloud_schema::vocabulary::{ServiceCategory, SkuForm, StorageClass};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use uuid::Uuid;

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::ordering::Ordering;

/// A catalog entry with its current availability and what one unit-hour costs the caller.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    pub sku: sku::Model,
    /// What one unit is (`Sku.unit`); a node says its size from the fleet.
    pub unit: String,
    pub available: u32,
    pub price: UnitPrice,
    /// The GPU-weighted reliability (basis points) of the nodes offering it in its region;
    /// `None` for storage and offers without a record.
    pub reliability_bp: Option<i32>,
}

/// `catalog { skus }`: every active SKU, with how many could be ordered now (the
/// scheduler's count from its free-capacity aggregates) and the caller's price per
/// unit-hour (its tenant's plan in force; operators see list prices).
pub async fn list(
    db: &DatabaseConnection,
    ordering: &Ordering,
    actor: &Principal,
    now: DateTime<Utc>,
) -> ApiResult<Vec<CatalogEntry>> {
    actor.require_user()?;
    let skus = store::active(db).await?;
    let available = ordering.available(db, &skus).await?;
    let mut prices = unit_prices(db, actor.tenant_scope_or_all(), now, &skus).await?;
    let sizes = store::node_sizes(db).await?;
    let reliability = crate::fleet::reliability::by_offer(db).await?;
    Ok(skus
        .into_iter()
        .zip(available)
        .filter_map(|(sku, available)| {
            let price = prices.remove(&Uuid::from(sku.id))?;
            let available = match sku.storage_class {
                Some(class) => u32::try_from(crate::volumes::max_gb(class)).unwrap_or(u32::MAX),
                None => available,
            };
            let reliability_bp = match sku.storage_class {
                Some(_) => None,
                None => reliability
                    .get(&(sku.gpu_model.clone(), sku.region.clone()))
                    .copied(),
            };
            Some(CatalogEntry {
                unit: unit_in(&sizes, &sku),
                sku,
                available,
                price,
                reliability_bp,
            })
        })
        .collect())
}

/// What one unit of `sku` is. A whole-node SKU says the size of the nodes it is placed on
/// (`node of 8 × H100`; `node of 4 or 8 × GB200` where the region has both), since its
/// price is per node whatever its GPUs.
pub async fn unit_of(db: &DatabaseConnection, sku: &sku::Model) -> ApiResult<String> {
    Ok(unit_in(&store::node_sizes(db).await?, sku))
}

/// `unit_of`, with the fleet's node sizes already read.
fn unit_in(sizes: &BTreeMap<(String, String), Vec<i32>>, sku: &sku::Model) -> String {
    if sku.form != SkuForm::WholeNode {
        return sku.unit();
    }
    let key = (sku.gpu_model.clone(), sku.region.clone());
    node_unit(sizes.get(&key).map_or(&[], Vec::as_slice), &sku.gpu_model)
}

fn node_unit(sizes: &[i32], model: &str) -> String {
    let sizes: Vec<String> = sizes.iter().map(i32::to_string).collect();
    match sizes.split_last() {
        None => format!("node of {model} GPUs"),
        Some((last, [])) => format!("node of {last} × {model}"),
        Some((last, rest)) => format!("node of {} or {last} × {model}", rest.join(", ")),
    }
}

/// The unit prices of `skus` at `now` for `tenant`, or the list prices without one.
pub async fn unit_prices<C: ConnectionTrait>(
    conn: &C,
    tenant: Option<TenantId>,
    now: DateTime<Utc>,
    skus: &[sku::Model],
) -> ApiResult<HashMap<Uuid, UnitPrice>> {
    Ok(prices::unit_prices(conn, tenant, now, skus).await?)
}

/// A new SKU, as an operator describes it.
#[derive(Debug, Clone)]
pub struct NewSku {
    pub name: String,
    /// Required for the GPU forms; none for a metered SKU.
    pub gpu_model: Option<String>,
    pub form: SkuForm,
    pub mig_profile: Option<String>,
    pub milli_gpu: Option<i32>,
    /// A metered SKU's unit; none for the GPU forms.
    pub unit: Option<String>,
    /// What a metered SKU sells (default `other`); none for the GPU forms (compute).
    pub service_category: Option<ServiceCategory>,
    /// What a volume SKU stores; none for the other forms.
    pub storage_class: Option<StorageClass>,
    pub region: String,
    /// Per unit-hour, or per unit for a metered SKU.
    pub list_price_per_hour: String,
    pub currency: String,
}

/// What a validated SKU sells.
#[derive(Debug, Clone)]
pub(crate) enum Sells {
    Gpus {
        model: GpuModel,
        mig_profile: Option<MigProfile>,
        milli_gpu: Option<i32>,
        memory_mib: i64,
    },
    Metered {
        unit: String,
        category: ServiceCategory,
    },
    /// GB-hours of volumes of one storage class.
    Volume { class: StorageClass },
}

/// A SKU that passed validation.
#[derive(Debug, Clone)]
pub(crate) struct ValidSku {
    pub name: String,
    pub what: Sells,
    pub form: SkuForm,
    pub region: String,
    pub list_price_per_hour: Decimal,
    pub currency: Currency,
}

/// A SKU's MIG profile: named by MIG SKUs (valid for the model), by no others.
fn mig_profile_of(
    form: SkuForm,
    name: Option<&str>,
    model: GpuModel,
) -> ApiResult<Option<MigProfile>> {
    match (form, name) {
        (SkuForm::Mig, Some(name)) => MigProfile::parse(name, model)
            .map(Some)
            .map_err(|e| ApiError::invalid("migProfile", e.to_string())),
        (SkuForm::Mig, None) => Err(ApiError::invalid(
            "migProfile",
            "a MIG SKU names its profile",
        )),
        (_, Some(_)) => Err(ApiError::invalid(
            "migProfile",
            "only MIG SKUs have a profile",
        )),
        (_, None) => Ok(None),
    }
}

/// A SKU's share of a GPU: 1 to 999 milli-GPUs for fractional SKUs, none for others.
fn milli_gpu_of(form: SkuForm, milli: Option<i32>) -> ApiResult<Option<i32>> {
    match (form, milli) {
        (SkuForm::Fractional, Some(m)) if (1..1000).contains(&m) => Ok(Some(m)),
        (SkuForm::Fractional, _) => Err(ApiError::invalid(
            "milliGpu",
            "a fractional SKU sells 1 to 999 milli-GPUs",
        )),
        (_, Some(_)) => Err(ApiError::invalid(
            "milliGpu",
            "only fractional SKUs sell milli-GPUs",
        )),
        (_, None) => Ok(None),
    }
}

/// Most decimal places of a GPU SKU's price per unit-hour, and of a metered SKU's per unit
/// (a token's price is a tiny fraction of a cent).
const PRICE_SCALE: u32 = 6;
const METERED_PRICE_SCALE: u32 = 9;

impl NewSku {
    pub(crate) fn validate(self) -> ApiResult<ValidSku> {
        let name = Slug::parse(&self.name)
            .map_err(|rule| ApiError::invalid("name", rule))?
            .into_string();
        let per_unit = matches!(self.form, SkuForm::Metered | SkuForm::Volume);
        let scale = if per_unit {
            METERED_PRICE_SCALE
        } else {
            PRICE_SCALE
        };
        let price = parse_plain_decimal(self.list_price_per_hour.trim())
            .map_err(|e| ApiError::invalid("listPricePerHour", e))?;
        if price.is_sign_negative() || price.scale() > scale {
            return Err(ApiError::invalid(
                "listPricePerHour",
                format!("a non-negative price with at most {scale} decimal places"),
            ));
        }
        let currency = crate::tenancy::parse_currency(&self.currency)?;
        let region = self.region.trim().to_owned();
        if region.is_empty() || region.len() > 64 {
            return Err(ApiError::invalid("region", "1 to 64 characters"));
        }
        let what = match self.form {
            SkuForm::Metered => self.metered()?,
            SkuForm::Volume => self.volume()?,
            _ => self.gpus()?,
        };
        Ok(ValidSku {
            name,
            what,
            form: self.form,
            region,
            list_price_per_hour: price,
            currency,
        })
    }

    /// Refuses the GPU fields on a SKU that sells no GPU.
    fn no_gpu(&self, why: &str) -> ApiResult<()> {
        if self
            .gpu_model
            .as_deref()
            .is_some_and(|m| !m.trim().is_empty())
            || self.mig_profile.is_some()
            || self.milli_gpu.is_some()
        {
            return Err(ApiError::invalid("gpuModel", why));
        }
        Ok(())
    }

    /// What a volume SKU sells: GB-hours of a storage class, no GPU.
    fn volume(&self) -> ApiResult<Sells> {
        self.no_gpu("a VOLUME SKU sells storage: no GPU model, profile or fraction")?;
        if self.unit.is_some() {
            return Err(ApiError::invalid(
                "unit",
                "a VOLUME SKU's unit is the GB; its price is per GB-hour",
            ));
        }
        if self
            .service_category
            .is_some_and(|c| c != ServiceCategory::Storage)
        {
            return Err(ApiError::invalid(
                "serviceCategory",
                "a VOLUME SKU sells STORAGE",
            ));
        }
        let class = self.storage_class.ok_or_else(|| {
            ApiError::invalid("storageClass", "a VOLUME SKU names its storage class")
        })?;
        Ok(Sells::Volume { class })
    }

    /// What a metered SKU sells: a unit of its own, no GPU.
    fn metered(&self) -> ApiResult<Sells> {
        self.no_gpu("a METERED SKU sells a unit of its own: no GPU model, profile or fraction")?;
        if self.storage_class.is_some() {
            return Err(ApiError::invalid(
                "storageClass",
                "only VOLUME SKUs name a storage class",
            ));
        }
        let unit = self.unit.as_deref().map(str::trim).unwrap_or("");
        if unit.is_empty() || unit.chars().count() > 64 || unit.chars().any(char::is_control) {
            return Err(ApiError::invalid(
                "unit",
                "a METERED SKU names its unit (1 to 64 printable characters, e.g. `GB-month`)",
            ));
        }
        Ok(Sells::Metered {
            unit: unit.to_owned(),
            category: self.service_category.unwrap_or(ServiceCategory::Other),
        })
    }

    /// What a GPU SKU sells: its model, profile or fraction, and the memory of one unit.
    fn gpus(&self) -> ApiResult<Sells> {
        if self.storage_class.is_some() {
            return Err(ApiError::invalid(
                "storageClass",
                "only VOLUME SKUs name a storage class",
            ));
        }
        if self.unit.is_some() {
            return Err(ApiError::invalid(
                "unit",
                "only METERED SKUs name their unit; a GPU SKU's follows from its form",
            ));
        }
        if self.service_category.is_some() {
            return Err(ApiError::invalid(
                "serviceCategory",
                "only METERED SKUs name their service category; a GPU SKU is compute",
            ));
        }
        let model: GpuModel = self.gpu_model.as_deref().unwrap_or("").parse().map_err(
            |e: neocloud_schema::gpu::UnknownGpuModel| ApiError::invalid("gpuModel", e.to_string()),
        )?;
        let mig_profile = mig_profile_of(self.form, self.mig_profile.as_deref(), model)?;
        let milli_gpu = milli_gpu_of(self.form, self.milli_gpu)?;
        let spec = model.spec();
        let memory_mib = match (mig_profile, milli_gpu) {
            (Some(profile), _) => profile.memory_mib(model),
            // 1 to 999, checked above.
            (None, Some(milli)) => spec.memory_mib * u64::try_from(milli).unwrap_or(0) / 1000,
            (None, None) => spec.memory_mib,
        };
        Ok(Sells::Gpus {
            model,
            mig_profile,
            milli_gpu,
            // No GPU's memory comes near i64::MAX MiB.
            memory_mib: i64::try_from(memory_mib).unwrap_or(i64::MAX),
        })
    }
}

/// `createSku` (operator).
pub async fn create_sku(
    db: &DatabaseConnection,
    actor: &Principal,
    new: NewSku,
) -> ApiResult<sku::Model> {
    actor.require_operator()?;
    let valid = new.validate()?;
    let txn = crate::db::begin_write(db).await?;
    let sku = create_in(&txn, Some(actor), &valid).await?;
    txn.commit().await?;
    Ok(sku)
}

pub(crate) async fn create_in<C: ConnectionTrait>(
    conn: &C,
    actor: Option<&Principal>,
    valid: &ValidSku,
) -> ApiResult<sku::Model> {
    if store::find_by_name(conn, &valid.name).await?.is_some() {
        return Err(ApiError::AlreadyExists {
            what: format!("SKU `{}`", valid.name),
        });
    }
    let sku = store::insert(conn, valid).await?;
    audit::record_as(
        conn,
        actor,
        audit::Entry {
            tenant_id: None,
            action: "sku.create",
            object_type: "sku",
            object_id: sku.id.to_string(),
            before: None,
            after: Some(store::describe(&sku)),
        },
    )
    .await?;
    Ok(sku)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_unit_names_the_sizes_it_is_placed_on() {
        assert_eq!(node_unit(&[8], "H100"), "node of 8 × H100");
        assert_eq!(node_unit(&[4, 8], "GB200"), "node of 4 or 8 × GB200");
        assert_eq!(node_unit(&[2, 4, 8], "H100"), "node of 2, 4 or 8 × H100");
        assert_eq!(node_unit(&[], "H100"), "node of H100 GPUs");
    }

    fn new_sku(form: SkuForm) -> NewSku {
        NewSku {
            name: "h100-3g-eu".into(),
            gpu_model: Some("H100".into()),
            form,
            mig_profile: None,
            milli_gpu: None,
            unit: None,
            service_category: None,
            storage_class: None,
            region: "eu-west".into(),
            list_price_per_hour: "1.20".into(),
            currency: "USD".into(),
        }
    }

    #[test]
    fn a_mig_sku_needs_a_profile_of_its_model() {
        let mut sku = new_sku(SkuForm::Mig);
        assert!(sku.clone().validate().is_err());
        sku.mig_profile = Some("3g.40gb".into());
        let valid = sku.clone().validate().expect("valid");
        assert!(matches!(
            valid.what,
            Sells::Gpus { mig_profile: Some(MigProfile::ThreeG), memory_mib, .. } if memory_mib == 40 * 1024
        ));
        sku.mig_profile = Some("3g.71gb".into());
        assert!(sku.validate().is_err());
    }

    #[test]
    fn prices_are_exact_non_negative_decimals() {
        let mut sku = new_sku(SkuForm::WholeGpu);
        sku.list_price_per_hour = "-1".into();
        assert!(sku.clone().validate().is_err());
        sku.list_price_per_hour = "2.1e3".into();
        assert!(sku.clone().validate().is_err());
        sku.list_price_per_hour = "2.10".into();
        assert_eq!(
            sku.validate().expect("valid").list_price_per_hour,
            Decimal::new(210, 2)
        );
    }

    #[test]
    fn a_fraction_is_less_than_one_gpu() {
        let mut sku = new_sku(SkuForm::Fractional);
        sku.milli_gpu = Some(1000);
        assert!(sku.clone().validate().is_err());
        sku.milli_gpu = Some(250);
        assert!(matches!(
            sku.validate().expect("valid").what,
            Sells::Gpus { memory_mib, .. } if memory_mib == 20 * 1024
        ));
    }

    #[test]
    fn a_metered_sku_names_its_unit_and_no_gpu() {
        let mut sku = new_sku(SkuForm::Metered);
        sku.unit = Some("1M input tokens".into());
        assert_eq!(error_field(sku.clone()), "gpuModel");
        sku.gpu_model = None;
        sku.list_price_per_hour = "0.000000150".into();
        assert!(
            matches!(sku.clone().validate().expect("valid").what, Sells::Metered { unit, category: ServiceCategory::Other } if unit == "1M input tokens")
        );
        sku.list_price_per_hour = "0.0000000001".into();
        assert_eq!(error_field(sku.clone()), "listPricePerHour");
        sku.list_price_per_hour = "1".into();
        sku.unit = None;
        assert_eq!(error_field(sku), "unit");
        let mut gpu = new_sku(SkuForm::WholeGpu);
        gpu.unit = Some("GPU".into());
        assert_eq!(error_field(gpu), "unit");
    }

    #[test]
    fn a_volume_sku_names_its_storage_class_and_sells_gb_hours() {
        let mut sku = new_sku(SkuForm::Volume);
        sku.gpu_model = None;
        sku.list_price_per_hour = "0.000136986".into();
        assert_eq!(error_field(sku.clone()), "storageClass");
        sku.storage_class = Some(StorageClass::Block);
        assert!(matches!(
            sku.clone().validate().expect("valid").what,
            Sells::Volume {
                class: StorageClass::Block
            }
        ));
        sku.service_category = Some(ServiceCategory::Networking);
        assert_eq!(error_field(sku.clone()), "serviceCategory");
        sku.service_category = None;
        sku.unit = Some("TB".into());
        assert_eq!(error_field(sku), "unit");
        let mut gpu = new_sku(SkuForm::WholeGpu);
        gpu.storage_class = Some(StorageClass::Object);
        assert_eq!(error_field(gpu), "storageClass");
    }

    fn error_field(sku: NewSku) -> String {
        match sku.validate() {
            Err(ApiError::InvalidInput { field, .. }) => field,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
