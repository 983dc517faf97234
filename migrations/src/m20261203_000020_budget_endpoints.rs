//! Budget alerts move onto webhook endpoints. A budget's webhook URL becomes an endpoint
//! of its tenant marked `legacy_signature` (it also sends the `Neocloud-Signature` header
//! budget receivers verify, for one release), taking the budget events with the
//! budget's secret; each budget event keeps the id of the event that carried it, so its
//! delivery status is the endpoint's. Alerts still pending at the upgrade are in the
//! event feed but are not resent.

use sea_orm::Value;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum WebhookEndpoints {
    Table,
    Id,
    TenantId,
    Url,
    Description,
    EventTypes,
    Enabled,
    Secret,
    LegacySignature,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum BudgetEvents {
    Table,
    EventId,
}

#[derive(DeriveIden)]
enum Budgets {
    Table,
    TenantId,
    WebhookUrl,
    WebhookSecret,
}

/// The event types a budget's endpoint takes.
const BUDGET_EVENT_TYPES: [&str; 3] = [
    "budget.threshold_crossed",
    "budget.blocked",
    "budget.allocations_stopped",
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let mut legacy = boolean(WebhookEndpoints::LegacySignature)
            .default(false)
            .to_owned();
        alter(manager, WebhookEndpoints::Table, |t| {
            t.add_column(&mut legacy)
        })
        .await?;
        let mut event = uuid_null(BudgetEvents::EventId);
        alter(manager, BudgetEvents::Table, |t| t.add_column(&mut event)).await?;
        move_budget_urls(manager).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .exec_stmt(
                Query::delete()
                    .from_table(WebhookEndpoints::Table)
                    .and_where(Expr::col(WebhookEndpoints::LegacySignature).eq(true))
                    .to_owned(),
            )
            .await?;
        alter(manager, BudgetEvents::Table, |t| {
            t.drop_column(BudgetEvents::EventId)
        })
        .await?;
        alter(manager, WebhookEndpoints::Table, |t| {
            t.drop_column(WebhookEndpoints::LegacySignature)
        })
        .await
    }
}

async fn alter(
    manager: &SchemaManager<'_>,
    table: impl IntoIden + 'static,
    change: impl FnOnce(&mut TableAlterStatement) -> &mut TableAlterStatement,
) -> Result<(), DbErr> {
    let mut statement = Table::alter();
    statement.table(table);
    change(&mut statement);
    manager.alter_table(statement).await
}

/// One endpoint per budget with a webhook URL, signing with the budget's secret.
async fn move_budget_urls(manager: &SchemaManager<'_>) -> Result<(), DbErr> {
    let db = manager.get_connection();
    let backend = manager.get_database_backend();
    let select = Query::select()
        .columns([
            Budgets::TenantId,
            Budgets::WebhookUrl,
            Budgets::WebhookSecret,
        ])
        .from(Budgets::Table)
        .and_where(Expr::col(Budgets::WebhookUrl).is_not_null())
        .to_owned();
    let now = chrono::Utc::now();
    let types = serde_json::json!(BUDGET_EVENT_TYPES);
    for row in db.query_all_raw(backend.build(&select)).await? {
        let tenant: uuid::Uuid = row.try_get("", "tenant_id")?;
        let url: String = row.try_get("", "webhook_url")?;
        let secret: String = row.try_get("", "webhook_secret")?;
        let insert = Query::insert()
            .into_table(WebhookEndpoints::Table)
            .columns([
                WebhookEndpoints::Id,
                WebhookEndpoints::TenantId,
                WebhookEndpoints::Url,
                WebhookEndpoints::Description,
                WebhookEndpoints::EventTypes,
                WebhookEndpoints::Enabled,
                WebhookEndpoints::Secret,
                WebhookEndpoints::LegacySignature,
                WebhookEndpoints::CreatedAt,
                WebhookEndpoints::UpdatedAt,
            ])
            .values_panic([
                uuid::Uuid::now_v7().into(),
                tenant.into(),
                url.into(),
                "budget alerts (setBudget)".into(),
                Value::Json(Some(Box::new(types.clone()))).into(),
                true.into(),
                secret.into(),
                true.into(),
                now.into(),
                now.into(),
            ])
            .to_owned();
        db.execute_raw(backend.build(&insert)).await?;
    }
    Ok(())
}
