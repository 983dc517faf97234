//! Which plan version a tenant is on, from when. A tenant moves to a new version only
//! by a new row; the latest row whose `effective_from` has passed is in force.

use crate::ids::PlanVersionId;
use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tenant_plans")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: TenantId,
    pub plan_version_id: PlanVersionId,
    pub effective_from: DateTimeUtc,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
