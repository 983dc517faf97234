//! The catalog: what can be ordered (whole GPU, MIG profile, fraction, whole node), per
//! model and region, with its list price.

pub use crate::vocabulary::SkuForm;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "skus")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    #[sea_orm(unique)]
    pub name: String,
    pub gpu_model: String,
    pub form: SkuForm,
    pub mig_profile: Option<String>,
    pub milli_gpu: Option<i32>,
    pub memory_mib: Option<i64>,
    pub region: String,
    pub list_price_per_hour: String,
    pub currency: String,
    pub active: bool,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
