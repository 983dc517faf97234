//! The distinct values a `unique_count` meter saw, per tenant, minute and group.

use crate::ids::{MeterId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "meter_uniques")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub meter_id: MeterId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub minute_start: DateTimeUtc,
    #[sea_orm(primary_key, auto_increment = false)]
    pub group_key: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub value: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
