//! One open period per tenant: readers racing to open a tenant's first period could also
//! open the one after it, as a second draft. A draft holds nothing but its period (lines,
//! credit applications and numbers come when it is finalized), so each tenant keeps its
//! earliest draft and the later ones go; the next period opens again when the first
//! closes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared(
                "DELETE FROM invoices WHERE status = 'draft' AND EXISTS (
                    SELECT 1 FROM invoices AS earlier
                    WHERE earlier.tenant_id = invoices.tenant_id
                      AND earlier.status = 'draft'
                      AND earlier.period_start < invoices.period_start)",
            )
            .await
            .map(|_| ())
    }

    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        // The removed drafts were empty: nothing to put back.
        Ok(())
    }
}
