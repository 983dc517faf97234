//! The groups a meter version has seen for a tenant: what bounds its group-by cardinality.

use crate::ids::{MeterId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "meter_groups")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub meter_id: MeterId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub group_key: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
