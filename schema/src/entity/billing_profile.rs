//! A tenant's legal identity as a buyer: what its invoices are addressed to. Frozen onto
//! each invoice as it is finalized (`invoices.parties`).

use crate::ids::TenantId;
use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "billing_profiles")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant_id: TenantId,
    pub legal_name: String,
    /// Street lines, in order (JSON array of strings, 1 to 4).
    pub address_lines: Json,
    pub postal_code: String,
    pub city: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// Compacted (`DE136695976`); for an EU country its prefix matches the country.
    pub vat_id: Option<String>,
    /// `check_digits_valid`, `format_valid` (EU, a form whose check digits are not
    /// verified) or `not_checked` (outside the EU); never verified against VIES.
    pub vat_id_status: Option<String>,
    pub po_number: Option<String>,
    pub billing_email: Option<String>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
