//! A usage event's identity, once: `(tenant_id, key)`, the key being the event's `source`
//! and `id` hashed (`key_of`), so a resent event changes nothing. What the event said is
//! in its batch (`usage_event_batch`).

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;
use sha2::{Digest, Sha256};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "usage_event_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: Uuid,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// The key of event `id` from `source`: the first 128 bits of SHA-256 over the source's
/// length (4 bytes, little-endian), the source and the id, so no two pairs run together.
/// Two events of one tenant share a key only by a collision of 128-bit hashes.
pub fn key_of(source: &str, id: &str) -> Uuid {
    let mut hash = Sha256::new();
    hash.update(
        u32::try_from(source.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    hash.update(source.as_bytes());
    hash.update(id.as_bytes());
    let digest = hash.finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    Uuid::from_bytes(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_depends_on_where_source_ends_and_id_begins() {
        assert_eq!(key_of("gw", "e1"), key_of("gw", "e1"));
        assert_ne!(key_of("gw", "e1"), key_of("gwe", "1"));
        assert_ne!(key_of("gw", "e1"), key_of("gw", "e2"));
    }
}
