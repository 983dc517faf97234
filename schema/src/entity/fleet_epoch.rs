//! One row (`id = 1`) whose `epoch` every fleet change increments inside its transaction:
//! placements serialize on it, and an api replica whose cached fleet has an older epoch
//! reloads before placing.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "fleet_epoch")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    pub epoch: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Increments the epoch inside the caller's transaction and returns the new value. The
/// row lock it takes serializes every fleet change.
pub async fn bump<C: ConnectionTrait>(conn: &C) -> Result<i64, DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    // One round trip: RETURNING works on PostgreSQL and SQLite ≥ 3.35.
    Entity::update_many()
        .col_expr(Column::Epoch, Expr::col(Column::Epoch).add(1))
        .filter(Column::Id.eq(1))
        .exec_with_returning(conn)
        .await?
        .first()
        .map(|row| row.epoch)
        .ok_or_else(|| DbErr::RecordNotFound("fleet_epoch row 1".into()))
}

pub async fn current<C: ConnectionTrait>(conn: &C) -> Result<i64, DbErr> {
    Entity::find_by_id(1)
        .one(conn)
        .await?
        .map(|row| row.epoch)
        .ok_or_else(|| DbErr::RecordNotFound("fleet_epoch row 1".into()))
}
