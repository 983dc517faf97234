//! A tenant's SSH public key: what a provisioner installs on the machines of the orders
//! that name it. Stored normalized (`<type> <base64>`) with its SHA-256 fingerprint.

use crate::ids::{SshKeyId, TenantId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ssh_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: SshKeyId,
    pub tenant_id: TenantId,
    pub name: String,
    /// e.g. `ssh-ed25519`.
    pub key_type: String,
    /// `<type> <base64>`, without the comment.
    pub public_key: String,
    pub comment: String,
    /// `SHA256:<base64, unpadded>`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
