//! SQL for SKUs.

use std::collections::BTreeMap;

use chrono::Utc;
use neocloud_schema::entity::node;
use neocloud_schema::entity::sku::{self, Entity as Skus};
use neocloud_schema::ids::SkuId;
use neocloud_schema::vocabulary::{NodeState, NodeVerification};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use serde_json::{Value, json};

use super::{Sells, ValidSku};

pub(crate) async fn active<C: ConnectionTrait>(conn: &C) -> Result<Vec<sku::Model>, DbErr> {
    Skus::find()
        .filter(sku::Column::Active.eq(true))
        .order_by_asc(sku::Column::Region)
        .order_by_asc(sku::Column::Name)
        .all(conn)
        .await
}

/// The GPU counts of the nodes whole-node SKUs can be placed on (neither MIG nor shared,
/// not down), per (GPU model, region), smallest first: one read for the whole catalog.
pub(crate) async fn node_sizes<C: ConnectionTrait>(
    conn: &C,
) -> Result<BTreeMap<(String, String), Vec<i32>>, DbErr> {
    let rows: Vec<(String, String, i32)> = node::Entity::find()
        .select_only()
        .columns([
            node::Column::GpuModel,
            node::Column::Region,
            node::Column::GpuCount,
        ])
        .filter(node::Column::MigEnabled.eq(false))
        .filter(node::Column::SharedGpus.eq(false))
        .filter(node::Column::State.is_in([NodeState::Active, NodeState::Draining]))
        .filter(
            node::Column::Verification
                .is_in([NodeVerification::Trusted, NodeVerification::Verified]),
        )
        .distinct()
        .order_by_asc(node::Column::GpuCount)
        .into_tuple()
        .all(conn)
        .await?;
    let mut sizes: BTreeMap<(String, String), Vec<i32>> = BTreeMap::new();
    for (model, region, count) in rows {
        sizes.entry((model, region)).or_default().push(count);
    }
    Ok(sizes)
}

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: uuid::Uuid,
) -> Result<Option<sku::Model>, DbErr> {
    Skus::find_by_id(id).one(conn).await
}

/// The SKUs among `ids` that exist, in one read.
pub(crate) async fn find_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[uuid::Uuid],
) -> Result<Vec<sku::Model>, DbErr> {
    Skus::find()
        .filter(sku::Column::Id.is_in(ids.iter().copied()))
        .all(conn)
        .await
}

pub(crate) async fn find_by_name<C: ConnectionTrait>(
    conn: &C,
    name: &str,
) -> Result<Option<sku::Model>, DbErr> {
    Skus::find()
        .filter(sku::Column::Name.eq(name))
        .one(conn)
        .await
}

pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    valid: &ValidSku,
) -> Result<sku::Model, DbErr> {
    let mut storage_class = None;
    let (gpu_model, mig_profile, milli_gpu, memory_mib, metered) = match &valid.what {
        Sells::Gpus {
            model,
            mig_profile,
            milli_gpu,
            memory_mib,
        } => (
            model.code().to_owned(),
            mig_profile.map(|p| p.name(*model)),
            *milli_gpu,
            Some(*memory_mib),
            None,
        ),
        Sells::Metered { unit, category } => (
            String::new(),
            None,
            None,
            None,
            Some((Some(unit.clone()), *category)),
        ),
        Sells::Volume { class } => {
            storage_class = Some(*class);
            let category = neocloud_schema::vocabulary::ServiceCategory::Storage;
            (String::new(), None, None, None, Some((None, category)))
        }
    };
    sku::ActiveModel {
        id: Set(SkuId::new()),
        name: Set(valid.name.clone()),
        gpu_model: Set(gpu_model),
        form: Set(valid.form),
        mig_profile: Set(mig_profile),
        milli_gpu: Set(milli_gpu),
        memory_mib: Set(memory_mib),
        unit_name: Set(metered.as_ref().and_then(|m| m.0.clone())),
        service_category: Set(metered.map(|m| m.1)),
        storage_class: Set(storage_class),
        region: Set(valid.region.clone()),
        list_price_per_hour: Set(valid.list_price_per_hour.into()),
        currency: Set(valid.currency.code().to_owned()),
        active: Set(true),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await
}

pub(crate) fn describe(sku: &sku::Model) -> Value {
    json!({
        "id": sku.id,
        "name": sku.name,
        "gpu_model": sku.gpu_model,
        "form": sku.form,
        "mig_profile": sku.mig_profile,
        "milli_gpu": sku.milli_gpu,
        "unit_name": sku.unit_name,
        "service_category": sku.service_category,
        "storage_class": sku.storage_class,
        "region": sku.region,
        "list_price_per_hour": sku.list_price_per_hour,
        "currency": sku.currency,
    })
}
