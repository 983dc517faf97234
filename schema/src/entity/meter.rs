//! One version of an operator-defined meter: which usage events it reads, the value it
//! takes from each, how a period's values become a quantity, and the metered SKU that
//! quantity is billed as. A new version is a new row; rows are never updated.

use crate::ids::{MeterId, SkuId};
pub use crate::vocabulary::MeterAggregation;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "meters")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: MeterId,
    pub key: String,
    pub version: i32,
    pub event_type: String,
    /// A dotted path into the event's `data` (`tokens.input`); unset for `count`.
    pub value_path: Option<String>,
    pub aggregation: MeterAggregation,
    /// JSON array of dotted paths into `data` whose values group the usage.
    pub group_by: Json,
    /// JSON array of `{path, values}`: the meter counts only events whose value at each
    /// path is one of its values; unset (meters defined before filters): every event of
    /// its type.
    pub filter: Option<Json>,
    /// The largest value one event may carry; an event above it is refused.
    pub max_value: super::Exact,
    pub sku_id: SkuId,
    pub description: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
