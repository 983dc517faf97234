//! SQL for tenants.

use chrono::Utc;
use neocloud_schema::entity::tenant::{self, Entity as Tenants, TenantStatus};
use neocloud_schema::ids::TenantId;
use neocloud_schema::money::Currency;
use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::pagination::{Page, PageOf};

/// Net terms of a new tenant: invoices fall due 30 days after they are finalized.
pub const DEFAULT_NET_TERMS_DAYS: i32 = 30;

pub(crate) async fn insert<C: ConnectionTrait>(
    conn: &C,
    name: &str,
    currency: Currency,
    billing_anchor_day: i32,
    now: chrono::DateTime<Utc>,
) -> Result<tenant::Model, DbErr> {
    tenant::ActiveModel {
        id: Set(TenantId::new()),
        name: Set(name.to_owned()),
        currency: Set(currency.code().to_owned()),
        status: Set(TenantStatus::Active),
        created_at: Set(now),
        billing_anchor_day: Set(billing_anchor_day),
        net_terms_days: Set(DEFAULT_NET_TERMS_DAYS),
        erased_at: Set(None),
        home_region: Set(None),
        allowed_regions: Set(None),
        second_factor_required: Set(false),
    }
    .insert(conn)
    .await
}

pub(crate) async fn find<C: ConnectionTrait>(
    conn: &C,
    id: TenantId,
) -> Result<Option<tenant::Model>, DbErr> {
    Tenants::find_by_id(Uuid::from(id)).one(conn).await
}

/// The tenants among `ids` that exist, in one read.
pub(crate) async fn find_many<C: ConnectionTrait>(
    conn: &C,
    ids: &[TenantId],
) -> Result<Vec<tenant::Model>, DbErr> {
    Tenants::find()
        .filter(tenant::Column::Id.is_in(ids.iter().map(|id| Uuid::from(*id))))
        .all(conn)
        .await
}

pub(crate) async fn find_by_name<C: ConnectionTrait>(
    conn: &C,
    name: &str,
) -> Result<Option<tenant::Model>, DbErr> {
    Tenants::find()
        .filter(tenant::Column::Name.eq(name))
        .one(conn)
        .await
}

/// A page of tenants, those whose name contains `name_contains` (any case) when given.
pub(crate) async fn page<C: ConnectionTrait>(
    conn: &C,
    page: Page,
    name_contains: Option<&str>,
) -> Result<PageOf<tenant::Model>, DbErr> {
    let mut query = Tenants::find();
    if let Some(part) = name_contains {
        let escaped: String = part
            .to_lowercase()
            .chars()
            .flat_map(|c| match c {
                '%' | '_' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect();
        let name = Func::lower(Expr::col((tenant::Entity, tenant::Column::Name)));
        query =
            query.filter(Expr::expr(name).like(LikeExpr::new(format!("%{escaped}%")).escape('\\')));
    }
    page.fetch(conn, query, tenant::Column::Id).await
}

pub(crate) fn describe(tenant: &tenant::Model) -> Value {
    json!({
        "id": tenant.id,
        "name": tenant.name,
        "currency": tenant.currency,
        "status": tenant.status,
        "net_terms_days": tenant.net_terms_days,
    })
}

pub(crate) async fn set_status<C: ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    status: TenantStatus,
) -> Result<tenant::Model, DbErr> {
    let mut active: tenant::ActiveModel = tenant.clone().into();
    active.status = Set(status);
    active.update(conn).await
}

/// Renames an erased tenant to its pseudonym and suspends it, with when.
pub(crate) async fn erase<C: ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    pseudonym: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<tenant::Model, DbErr> {
    let mut active: tenant::ActiveModel = tenant.clone().into();
    active.name = Set(pseudonym.to_owned());
    active.status = Set(neocloud_schema::vocabulary::TenantStatus::Suspended);
    active.erased_at = Set(Some(now));
    active.update(conn).await
}

/// Sets where the tenant's data lives and where it may order.
pub(crate) async fn set_residency<C: ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    home: Option<String>,
    allowed: Option<Vec<String>>,
) -> Result<tenant::Model, DbErr> {
    let mut active: tenant::ActiveModel = tenant.clone().into();
    active.home_region = Set(home);
    active.allowed_regions = Set(allowed.map(|a| serde_json::json!(a)));
    active.update(conn).await
}

/// Sets whether every portal user of the tenant must have a second factor.
pub(crate) async fn set_second_factor_required<C: ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    required: bool,
) -> Result<tenant::Model, DbErr> {
    let mut active: tenant::ActiveModel = tenant.clone().into();
    active.second_factor_required = Set(required);
    active.update(conn).await
}

pub(crate) async fn set_net_terms<C: ConnectionTrait>(
    conn: &C,
    tenant: &tenant::Model,
    days: i32,
) -> Result<tenant::Model, DbErr> {
    let mut active: tenant::ActiveModel = tenant.clone().into();
    active.net_terms_days = Set(days);
    active.update(conn).await
}
