//! One line of a finalized invoice (drafts are rated on read and keep no lines). Lines
//! are only ever inserted, while their invoice is being finalized.

use crate::ids::InvoiceId;
use crate::ids::SkuId;
use crate::ids::TenantId;
pub use crate::vocabulary::{LineKind, Metric};
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "invoice_lines")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub invoice_id: InvoiceId,
    pub tenant_id: TenantId,
    pub position: i32,
    pub kind: LineKind,
    pub description: String,
    pub sku_id: Option<SkuId>,
    pub sku_name: Option<String>,
    pub metric: Option<Metric>,
    pub tier: Option<i32>,
    /// Exact quantity in `unit`.
    pub quantity: super::Exact,
    pub unit: String,
    pub unit_price: super::Exact,
    /// Rounded half-even to the currency's minor unit.
    pub amount: super::Exact,
    /// The exact amount before rounding.
    pub amount_exact: super::Exact,
    /// For adjustments: the invoice whose period the late usage belongs to.
    pub adjusts_invoice_id: Option<InvoiceId>,
    /// The line's tax category (`standard`, `reverse_charge`, `export`); none when the
    /// invoice was not taxed.
    pub tax_category: Option<String>,
    pub tax_percent: Option<super::Exact>,
    /// The line's own tax, for information: the invoice's tax is computed per rate.
    pub tax_amount: Option<super::Exact>,
    pub trace: Json,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
