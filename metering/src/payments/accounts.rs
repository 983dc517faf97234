//! The `payment_accounts` table: how each tenant pays (its Stripe customer, default
//! payment method, collection mode and terms) and whether dunning suspended it. The only
//! module that writes it; a tenant without a row is charged automatically.

use chrono::{DateTime, Utc};
use neocloud_schema::entity::payment_account;
use neocloud_schema::ids::TenantId;
use neocloud_schema::vocabulary::CollectionMode;
use sea_orm::{ActiveModelTrait, ConnectionTrait, DbErr, EntityTrait, IntoActiveModel, Set};

/// Payment terms of a hosted invoice unless the operator sets others.
pub const DEFAULT_DAYS_UNTIL_DUE: i32 = 30;
/// Longest payment terms accepted.
pub const MAX_DAYS_UNTIL_DUE: i32 = 365;

pub async fn find<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<Option<payment_account::Model>, DbErr> {
    payment_account::Entity::find_by_id(tenant).one(conn).await
}

/// How the tenant's finalized invoices are collected.
pub async fn collection_mode<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
) -> Result<CollectionMode, DbErr> {
    Ok(find(conn, tenant)
        .await?
        .map_or(CollectionMode::ChargeAutomatically, |a| a.collection_mode))
}

/// Changes the tenant's account with `change`, creating it first (charged automatically,
/// nothing set) when it has none.
async fn upsert<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut payment_account::ActiveModel),
) -> Result<payment_account::Model, DbErr> {
    let existing = find(conn, tenant).await?;
    let found = existing.is_some();
    let mut active = match existing {
        Some(account) => account.into_active_model(),
        None => payment_account::ActiveModel {
            tenant_id: Set(tenant),
            stripe_customer_id: Set(None),
            default_payment_method: Set(None),
            default_payment_method_label: Set(None),
            collection_mode: Set(CollectionMode::ChargeAutomatically),
            updated_at: Set(now),
            dunning_suspended_at: Set(None),
            days_until_due: Set(DEFAULT_DAYS_UNTIL_DUE),
        },
    };
    change(&mut active);
    active.updated_at = Set(now);
    if found {
        active.update(conn).await
    } else {
        active.insert(conn).await
    }
}

/// The tenant's Stripe customer and its default payment method.
pub async fn set_payment_method<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    customer: &str,
    method: &str,
    label: Option<String>,
    now: DateTime<Utc>,
) -> Result<payment_account::Model, DbErr> {
    upsert(conn, tenant, now, |a| {
        a.stripe_customer_id = Set(Some(customer.to_owned()));
        a.default_payment_method = Set(Some(method.to_owned()));
        a.default_payment_method_label = Set(label);
    })
    .await
}

/// The tenant has no default payment method any more (it removed it).
pub async fn clear_payment_method<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> Result<payment_account::Model, DbErr> {
    upsert(conn, tenant, now, |a| {
        a.default_payment_method = Set(None);
        a.default_payment_method_label = Set(None);
    })
    .await
}

/// The tenant's Stripe customer, created by a payment call.
pub async fn set_customer<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    customer: &str,
    now: DateTime<Utc>,
) -> Result<payment_account::Model, DbErr> {
    upsert(conn, tenant, now, |a| {
        a.stripe_customer_id = Set(Some(customer.to_owned()));
    })
    .await
}

pub async fn set_collection_mode<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    mode: CollectionMode,
    days_until_due: i32,
    now: DateTime<Utc>,
) -> Result<payment_account::Model, DbErr> {
    upsert(conn, tenant, now, |a| {
        a.collection_mode = Set(mode);
        a.days_until_due = Set(days_until_due);
    })
    .await
}

/// When dunning suspended the tenant (`None`: it did not, or it has paid since).
pub async fn set_dunning_suspended<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<payment_account::Model, DbErr> {
    upsert(conn, tenant, now, |a| a.dunning_suspended_at = Set(since)).await
}

/// Erasure: forgets the tenant's payment method; accounts changed.
pub async fn erase<C: ConnectionTrait>(conn: &C, tenant: TenantId) -> Result<u64, DbErr> {
    use sea_orm::sea_query::Expr;
    use sea_orm::{ColumnTrait, QueryFilter};
    let changed = payment_account::Entity::update_many()
        .col_expr(
            payment_account::Column::DefaultPaymentMethod,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            payment_account::Column::DefaultPaymentMethodLabel,
            Expr::value(Option::<String>::None),
        )
        .filter(payment_account::Column::TenantId.eq(tenant))
        .exec(conn)
        .await?;
    Ok(changed.rows_affected)
}
