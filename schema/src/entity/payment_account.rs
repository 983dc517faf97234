//! A tenant's account with the payment provider: its Stripe customer, default payment
//! method and how its invoices are collected.

use crate::ids::TenantId;
pub use crate::vocabulary::CollectionMode;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payment_accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    pub stripe_customer_id: Option<String>,
    pub default_payment_method: Option<String>,
    /// What the customer recognises the default method by: `Visa •••• 4242, expires 12/2030`.
    pub default_payment_method_label: Option<String>,
    pub collection_mode: CollectionMode,
    pub updated_at: DateTimeUtc,
    /// Set while the tenant is suspended because its payments kept failing.
    pub dunning_suspended_at: Option<DateTimeUtc>,
    /// For `send_invoice`: days from finalizing to the hosted invoice's due date.
    pub days_until_due: i32,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
