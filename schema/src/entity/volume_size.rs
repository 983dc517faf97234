//! One span of a volume's life at one size, `[started_at, ended_at)`: created, each resize closes one
//! and opens the next, deleting closes the last. Rows are closed, never otherwise changed;
//! their GB × seconds are what a volume bills.

use crate::ids::{SkuId, TenantId, VolumeId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "volume_sizes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub volume_id: VolumeId,
    pub tenant_id: TenantId,
    pub sku_id: SkuId,
    pub size_gb: i64,
    pub started_at: DateTimeUtc,
    /// Unset while the volume is this size.
    pub ended_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
