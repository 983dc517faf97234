//! Each device's last cumulative energy reading, to turn counters into deltas.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "device_energy")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub device_uuid: String,
    pub last_energy_mj: i64,
    pub last_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
