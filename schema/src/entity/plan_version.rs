//! An immutable version of a plan, in force from `effective_from`.

use crate::ids::PlanId;
use crate::ids::PlanVersionId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "plan_versions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: PlanVersionId,
    pub plan_id: PlanId,
    pub version: i32,
    pub currency: String,
    pub effective_from: DateTimeUtc,
    pub minimum_billable_seconds: i64,
    pub commitment_monthly_minimum: Option<super::Exact>,
    pub commitment_discount_pct: Option<super::Exact>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
