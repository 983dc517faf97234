//! A Stripe webhook event already handled (events are deduplicated by id).

use crate::ids::InvoiceId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stripe_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub event_type: String,
    /// Stripe's `created` (unix seconds).
    pub created: i64,
    pub invoice_id: Option<InvoiceId>,
    /// What handling it did: `applied`, `ignored`, `unknown_object` (no invoice or top-up of ours), `superseded`.
    pub outcome: String,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
