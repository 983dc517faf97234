//! Where a tenant — or the operator, `tenant_id` null — wants events sent: a URL, the
//! event types it takes (empty: all it may see), its signing secret and, for a while
//! after a rotation, the previous one.

use crate::ids::{TenantId, WebhookEndpointId};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_endpoints")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: WebhookEndpointId,
    pub tenant_id: Option<TenantId>,
    pub url: String,
    pub description: String,
    /// Event type names, e.g. `["allocation.placed"]`; empty takes every type.
    pub event_types: Json,
    pub enabled: bool,
    /// Why it was disabled: by its owner, or after failing for days.
    pub disabled_reason: Option<String>,
    /// `whsec_<base64>`, shown once.
    pub secret: String,
    /// The secret before the last rotation, still signing until `previous_secret_until`.
    pub previous_secret: Option<String>,
    pub previous_secret_until: Option<DateTimeUtc>,
    /// Since when every attempt has failed; cleared by a success.
    pub failing_since: Option<DateTimeUtc>,
    /// The endpoint `setBudget(webhookUrl)` manages: its deliveries also carry the
    /// `Neocloud-Signature` header budget receivers verified before (for one release).
    pub legacy_signature: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
