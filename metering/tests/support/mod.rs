//! A migrated in-memory database with one H100 node, for tests that use the metering
//! crate without the API server.

use chrono::Utc;
use neocloud_migrations::{Migrator, MigratorTrait};
use neocloud_schema::entity::{gpu, node, provider};
use neocloud_schema::ids::{GpuId, NodeId, ProviderId};
use neocloud_schema::vocabulary::{GpuHealth, NodeState};
use sea_orm::{ActiveModelTrait, Database, DatabaseConnection, Set};
use uuid::Uuid;

/// A fresh SQLite database with every migration applied and one H100 node `hgx-1` holding
/// the GPUs `uuids` (indexed in order). Returns the database, the node and its GPUs' ids.
pub async fn node_with_gpus(uuids: &[&str]) -> (DatabaseConnection, Uuid, Vec<Uuid>) {
    let db = Database::connect("sqlite::memory:").await.expect("sqlite");
    Migrator::up(&db, None).await.expect("migrate");
    let now = Utc::now();
    let provider = provider::ActiveModel {
        id: Set(ProviderId::new()),
        name: Set("operator".into()),
        created_at: Set(now),
        legal_name: Set("Operator".into()),
        country: Set("DE".into()),
        currency: Set("EUR".into()),
        payout_method: Set("manual".into()),
        payout_account: Set(None),
        statement_held: Set(None),
        second_factor_required: Set(false),
    }
    .insert(&db)
    .await
    .expect("provider");
    let node = node::ActiveModel {
        id: Set(NodeId::new()),
        provider_id: Set(provider.id),
        hostname: Set("hgx-1".into()),
        region: Set("eu-west".into()),
        zone: Set("a".into()),
        rack: Set("r1".into()),
        nvlink_domain: Set("hgx-1".into()),
        gpu_model: Set("H100".into()),
        gpu_count: Set(i32::try_from(uuids.len()).expect("a node's GPUs")),
        mig_enabled: Set(false),
        shared_gpus: Set(false),
        cpu_milli: Set(64_000),
        memory_mib: Set(1 << 20),
        state: Set(NodeState::Active),
        created_at: Set(now),
        verification: Set(neocloud_schema::vocabulary::NodeVerification::Trusted),
        verification_reason: Set(None),
        verified_at: Set(None),
        retired_at: Set(None),
        nvlink_fabric: Set(None),
    }
    .insert(&db)
    .await
    .expect("node");
    let mut gpus = Vec::new();
    for (index, uuid) in uuids.iter().enumerate() {
        let gpu = gpu::ActiveModel {
            id: Set(GpuId::new()),
            node_id: Set(node.id),
            uuid: Set((*uuid).into()),
            index: Set(i32::try_from(index).expect("index")),
            model: Set("H100".into()),
            memory_mib: Set(81_559),
            mig_enabled: Set(false),
            health: Set(GpuHealth::Ok),
            health_changed_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("gpu");
        gpus.push(gpu.id.into());
    }
    (db, node.id.into(), gpus)
}
