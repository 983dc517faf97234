//! `billing_profiles`: one row per tenant that gave one.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::billing_profile;
use neocloud_schema::ids::TenantId;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, Set};

use super::Buyer;

pub async fn find<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<Option<Buyer>, DbErr> {
    Ok(billing_profile::Entity::find_by_id(tenant)
        .one(conn)
        .await?
        .map(|row| buyer_of(&row)))
}

pub fn buyer_of(row: &billing_profile::Model) -> Buyer {
    Buyer {
        legal_name: row.legal_name.clone(),
        address_lines: serde_json::from_value(row.address_lines.clone()).unwrap_or_default(),
        postal_code: row.postal_code.clone(),
        city: row.city.clone(),
        country: row.country.clone(),
        vat_id: row.vat_id.clone(),
        vat_id_status: row.vat_id_status.clone(),
        po_number: row.po_number.clone(),
        billing_email: row.billing_email.clone(),
    }
}

/// Writes the tenant's profile (replacing the one before).
pub async fn save<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    buyer: &Buyer,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use billing_profile::Column as C;
    let row = billing_profile::ActiveModel {
        tenant_id: Set(tenant),
        legal_name: Set(buyer.legal_name.clone()),
        address_lines: Set(serde_json::json!(buyer.address_lines)),
        postal_code: Set(buyer.postal_code.clone()),
        city: Set(buyer.city.clone()),
        country: Set(buyer.country.clone()),
        vat_id: Set(buyer.vat_id.clone()),
        vat_id_status: Set(buyer.vat_id_status.clone()),
        po_number: Set(buyer.po_number.clone()),
        billing_email: Set(buyer.billing_email.clone()),
        updated_at: Set(now),
    };
    billing_profile::Entity::insert(row)
        .on_conflict(
            OnConflict::column(C::TenantId)
                .update_columns([
                    C::LegalName,
                    C::AddressLines,
                    C::PostalCode,
                    C::City,
                    C::Country,
                    C::VatId,
                    C::VatIdStatus,
                    C::PoNumber,
                    C::BillingEmail,
                    C::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    Ok(())
}

/// Erasure: deletes the tenant's profile (issued invoices keep theirs); rows deleted.
pub async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    use sea_orm::{ColumnTrait, QueryFilter};
    let deleted = billing_profile::Entity::delete_many()
        .filter(billing_profile::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(deleted.rows_affected)
}
