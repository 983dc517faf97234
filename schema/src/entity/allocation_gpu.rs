//! Which GPUs an allocation holds (one row per GPU).

use crate::ids::AllocationId;
use crate::ids::GpuId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "allocation_gpus")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub allocation_id: AllocationId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: GpuId,
    pub tenant_id: TenantId,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::allocation::Entity",
        from = "Column::AllocationId",
        to = "super::allocation::Column::Id"
    )]
    Allocation,
}

impl Related<super::allocation::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Allocation.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
