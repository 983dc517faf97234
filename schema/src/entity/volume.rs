//! A tenant's storage volume: a size in GB of one volume SKU (a storage class in a
//! region). Its size over time is in `volume_size`, what GB-hours bill.

use crate::ids::{SkuId, TenantId, VolumeId};
pub use crate::vocabulary::{AccessState, VolumeStatus};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "volumes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: VolumeId,
    pub tenant_id: TenantId,
    pub sku_id: SkuId,
    /// Its SKU's region.
    pub region: String,
    /// The tenant's name for it, unique among its live volumes.
    pub name: String,
    /// The size now.
    pub size_gb: i64,
    pub status: VolumeStatus,
    /// Whether the operator's storage has created it (`failed`: never billed).
    pub access_state: AccessState,
    /// Why creating it failed.
    pub access_reason: Option<String>,
    pub labels: Json,
    pub created_at: DateTimeUtc,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
