//! What recorded usage events said, journaled together: the events of one tenant recorded
//! in one transaction, as a zstd-compressed JSON array (`encode`), each as received
//! (`id`, `source`, `type`, `time`, `subject`, `data`) with how many meters counted it.
//! Their identities are `usage_event_key` rows of the same transaction.

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_event_batches")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tenant_id: TenantId,
    pub received_at: DateTimeUtc,
    /// How many events `body` holds.
    pub events: i32,
    pub body: Vec<u8>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// `events` as a batch body.
pub fn encode<E: serde::Serialize>(events: &[E]) -> std::io::Result<Vec<u8>> {
    let json = serde_json::to_vec(events)?;
    zstd::bulk::compress(&json, 1)
}

/// The events of a batch body; at most `max_bytes` of JSON.
pub fn decode(body: &[u8], max_bytes: usize) -> std::io::Result<Vec<Value>> {
    let json = zstd::bulk::decompress(body, max_bytes)?;
    Ok(serde_json::from_slice(&json)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gives_back_its_events() {
        let events: Vec<Value> = (0..50)
            .map(|i| serde_json::json!({"id": format!("e{i}"), "source": "gw", "data": {"tokens": i}, "meters": 1}))
            .collect();
        let body = encode(&events).unwrap();
        assert!(body.len() < serde_json::to_vec(&events).unwrap().len());
        assert_eq!(decode(&body, 1 << 20).unwrap(), events);
        assert!(decode(&body, 16).is_err(), "bounded");
    }
}
