//! Which seconds of each minute a device's usage has been counted for (bit i = second
//! i): the guard that makes a device's usage count at most once per second.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "device_coverage")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub device_uuid: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub minute_start: DateTimeUtc,
    pub mask: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
