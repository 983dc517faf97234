//! SQL for model offerings (published to every user: no owner).

use std::collections::HashMap;

use neocloud_schema::entity::{model_offering, sku};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
};
use uuid::Uuid;

use super::OfferingView;

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    name: &str,
    region: &str,
) -> Result<Option<model_offering::Model>, DbErr> {
    model_offering::Entity::find()
        .filter(model_offering::Column::Name.eq(name))
        .filter(model_offering::Column::Region.eq(region))
        .one(conn)
        .await
}

pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    row: model_offering::Model,
) -> Result<(), DbErr> {
    model_offering::ActiveModel::from(row)
        .insert(conn)
        .await
        .map(|_| ())
}

/// Every offering (of `region`, when named) with its SKUs, by name and region, in two
/// reads.
pub(crate) async fn all<C: ConnectionTrait>(
    conn: &C,
    region: Option<&str>,
) -> Result<Vec<OfferingView>, DbErr> {
    let mut query = model_offering::Entity::find();
    if let Some(region) = region {
        query = query.filter(model_offering::Column::Region.eq(region));
    }
    let rows = query
        .order_by_asc(model_offering::Column::Name)
        .order_by_asc(model_offering::Column::Region)
        .all(conn)
        .await?;
    let ids: Vec<Uuid> = rows
        .iter()
        .flat_map(|o| {
            [
                Some(o.input_sku_id),
                Some(o.output_sku_id),
                o.cached_sku_id,
                o.request_sku_id,
            ]
        })
        .flatten()
        .map(Uuid::from)
        .collect();
    let skus: HashMap<Uuid, sku::Model> = crate::catalog::store::find_many(conn, &ids)
        .await?
        .into_iter()
        .map(|s| (s.id.into(), s))
        .collect();
    let get = |id: neocloud_schema::ids::SkuId| skus.get(&Uuid::from(id)).cloned();
    Ok(rows
        .into_iter()
        .filter_map(|o| {
            Some(OfferingView {
                input: get(o.input_sku_id)?,
                output: get(o.output_sku_id)?,
                cached: o.cached_sku_id.and_then(get),
                request: o.request_sku_id.and_then(get),
                offering: o,
            })
        })
        .collect())
}
