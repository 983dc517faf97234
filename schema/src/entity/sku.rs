//! The catalog: what can be ordered (whole GPU, MIG profile, fraction, whole node), per
//! model and region, with its list price; and what meters bill (`metered`: per unit of
//! its own, never ordered), and what volumes are (`volume`: GB-hours of a storage class).

use crate::ids::SkuId;
pub use crate::vocabulary::{GPU_UNIT, SkuForm};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "skus")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: SkuId,
    #[sea_orm(unique)]
    pub name: String,
    pub gpu_model: String,
    pub form: SkuForm,
    pub mig_profile: Option<String>,
    pub milli_gpu: Option<i32>,
    pub memory_mib: Option<i64>,
    pub region: String,
    pub list_price_per_hour: super::Exact,
    pub currency: String,
    /// What one unit of a metered SKU is (`GB-month`, `1M input tokens`); unset for the
    /// GPU forms, whose unit follows from the form.
    pub unit_name: Option<String>,
    /// What a metered SKU sells (FOCUS `ServiceCategory`); unset for the GPU forms
    /// (compute).
    pub service_category: Option<crate::vocabulary::ServiceCategory>,
    /// What a volume SKU stores (block or object); unset for the other forms.
    pub storage_class: Option<crate::vocabulary::StorageClass>,
    pub active: bool,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// What one unit of this SKU is — what its list price is per hour of, an order's
    /// `count` counts and an ALLOCATED invoice line bills: `GPU`, `MIG slice 3g.40gb`,
    /// `250 milli-GPU`, `node`.
    pub fn unit(&self) -> String {
        match self.form {
            SkuForm::WholeGpu => GPU_UNIT.to_owned(),
            SkuForm::Mig => format!("MIG slice {}", self.mig_profile.as_deref().unwrap_or("?")),
            SkuForm::Fractional => format!("{} milli-GPU", self.milli_gpu.unwrap_or(0)),
            SkuForm::WholeNode => "node".to_owned(),
            SkuForm::Metered => self.unit_name.clone().unwrap_or_else(|| "unit".to_owned()),
            SkuForm::Volume => crate::vocabulary::GB_UNIT.to_owned(),
        }
    }
}
