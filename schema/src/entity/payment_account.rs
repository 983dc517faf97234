//! A tenant's account with the payment provider: its Stripe customer, default payment
//! method and how its invoices are collected.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payment_accounts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: Uuid,
    pub stripe_customer_id: Option<String>,
    pub default_payment_method: Option<String>,
    /// `charge_automatically` (the default) or `send_invoice`.
    pub collection_mode: String,
    pub updated_at: DateTimeUtc,
    /// Set while the tenant is suspended because its payments kept failing.
    pub dunning_suspended_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
