//! Energy cursors per node instead of per GPU: `node_energy` holds a node's last reading
//! of each GPU's cumulative counter as one JSON object, so a batch writes one row rather
//! than one per GPU. The cursors in `device_energy` move over (GPUs map to their nodes;
//! only whole GPUs ever had a cursor), and `device_energy` goes.

use std::collections::BTreeMap;

use sea_orm::ConnectionTrait;
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use serde_json::json;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NodeEnergy {
    Table,
    NodeId,
    Cursors,
}

#[derive(DeriveIden)]
enum DeviceEnergy {
    Table,
    DeviceUuid,
    LastEnergyMj,
    LastAt,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Uuid,
    NodeId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(NodeEnergy::Table)
                    .col(uuid(NodeEnergy::NodeId).primary_key())
                    .col(string(NodeEnergy::Cursors))
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        let backend = manager.get_database_backend();
        let select = Query::select()
            .column((Gpus::Table, Gpus::NodeId))
            .column((DeviceEnergy::Table, DeviceEnergy::DeviceUuid))
            .column((DeviceEnergy::Table, DeviceEnergy::LastEnergyMj))
            .column((DeviceEnergy::Table, DeviceEnergy::LastAt))
            .from(DeviceEnergy::Table)
            .inner_join(
                Gpus::Table,
                Expr::col((Gpus::Table, Gpus::Uuid))
                    .equals((DeviceEnergy::Table, DeviceEnergy::DeviceUuid)),
            )
            .to_owned();
        let mut nodes: BTreeMap<uuid::Uuid, serde_json::Map<String, serde_json::Value>> =
            BTreeMap::new();
        for row in db.query_all_raw(backend.build(&select)).await? {
            let node: uuid::Uuid = row.try_get("", "node_id")?;
            let device: String = row.try_get("", "device_uuid")?;
            let mj: i64 = row.try_get("", "last_energy_mj")?;
            let at: chrono::DateTime<chrono::Utc> = row.try_get("", "last_at")?;
            nodes
                .entry(node)
                .or_default()
                .insert(device, json!({"mj": mj, "at": at}));
        }
        for (node, cursors) in nodes {
            let insert = Query::insert()
                .into_table(NodeEnergy::Table)
                .columns([NodeEnergy::NodeId, NodeEnergy::Cursors])
                .values_panic([
                    node.into(),
                    serde_json::Value::Object(cursors).to_string().into(),
                ])
                .to_owned();
            db.execute_raw(backend.build(&insert)).await?;
        }
        manager
            .drop_table(Table::drop().table(DeviceEnergy::Table).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DeviceEnergy::Table)
                    .col(string(DeviceEnergy::DeviceUuid).primary_key())
                    .col(big_integer(DeviceEnergy::LastEnergyMj))
                    .col(timestamp_with_time_zone(DeviceEnergy::LastAt))
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(NodeEnergy::Table).to_owned())
            .await
    }
}
