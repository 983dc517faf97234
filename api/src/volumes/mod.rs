//! Storage volumes: block devices and object-store buckets a tenant creates, resizes and
//! deletes, of a storage class in a region (a VOLUME SKU the operator defines). A volume
//! is billed from its lifetime records (`volume_sizes`: one span per size), GB × hours
//! held, ALLOCATED on its SKU; it counts in the tenant's storage quotas and, while a hard
//! cap holds, cannot be created or grown. Each change is an event of the log
//! (`volume.created`, `volume.resized`, `volume.deleted`) in its transaction: what the
//! operator's Cinder, Ceph or S3 provisioner acts on, reporting back with
//! `markVolumeReady` or `markVolumeFailed` (a volume that failed is never billed).

pub(crate) mod store;

use std::collections::BTreeMap;

use chrono::{DateTime, SubsecRound, Utc};
use neocloud_metering::events::{self, NewEvent};
use neocloud_schema::entity::{sku, tenant, volume};
use neocloud_schema::ids::{TenantId, VolumeId};
use neocloud_schema::slug::Slug;
use neocloud_schema::vocabulary::{AccessState, StorageClass, TenantStatus, VolumeStatus};
use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction};
use serde_json::{Value, json};

use crate::audit;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::ordering::quota::Usage;
use crate::pagination::{Page, PageOf};

/// The largest block volume, in GB (64 TiB, what block devices commonly allow).
pub const MAX_BLOCK_GB: i64 = 65_536;
/// The largest object-store capacity, in GB (1 PiB).
pub const MAX_OBJECT_GB: i64 = 1_048_576;
/// Most volumes one tenant may hold at once, whatever its quotas.
pub const MAX_LIVE_VOLUMES: u64 = 1000;
/// Most labels on a volume; keys 1 to 64 bytes, values at most 128.
const MAX_LABELS: usize = 16;

/// A volume with what its SKU says it is.
#[derive(Debug, Clone)]
pub struct VolumeView {
    pub volume: volume::Model,
    pub storage_class: StorageClass,
    pub sku_name: String,
}

/// `createVolume`, as the caller asks.
#[derive(Debug, Clone)]
pub struct NewVolume {
    /// For operators: the tenant it is for.
    pub tenant: Option<TenantId>,
    pub name: String,
    pub size_gb: i64,
    pub storage_class: StorageClass,
    pub region: String,
    pub labels: BTreeMap<String, String>,
}

/// The most GB one volume of `class` may hold.
pub fn max_gb(class: StorageClass) -> i64 {
    match class {
        StorageClass::Block => MAX_BLOCK_GB,
        StorageClass::Object => MAX_OBJECT_GB,
    }
}

fn check_size(class: StorageClass, size_gb: i64) -> ApiResult<()> {
    let max = max_gb(class);
    if (1..=max).contains(&size_gb) {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "sizeGb",
            format!("a {class} volume holds 1 to {max} GB"),
        ))
    }
}

fn check_labels(labels: &BTreeMap<String, String>) -> ApiResult<()> {
    let bad = |(k, v): (&String, &String)| {
        k.is_empty()
            || k.len() > 64
            || v.len() > 128
            || k.chars().chain(v.chars()).any(char::is_control)
    };
    if labels.len() > MAX_LABELS || labels.iter().any(bad) {
        return Err(ApiError::invalid(
            "labels",
            format!("at most {MAX_LABELS} labels; keys 1 to 64 bytes, values at most 128"),
        ));
    }
    Ok(())
}

/// May the tenant (its row read locked) take more storage: not suspended, no hard cap
/// holding.
async fn admit<C: ConnectionTrait>(conn: &C, row: &tenant::Model) -> ApiResult<()> {
    if row.status == TenantStatus::Suspended {
        let reason = crate::tenancy::suspension_reason(conn, row).await?;
        return Err(ApiError::forbidden(format!(
            "the tenant is suspended and cannot take more storage: {}",
            reason.unwrap_or_default()
        )));
    }
    let budget = neocloud_metering::budgets::store::find(conn, row.id).await?;
    match budget.as_ref().and_then(crate::budgets::order_refusal) {
        Some(refusal) => Err(refusal),
        None => Ok(()),
    }
}

/// Fails with `QUOTA_EXCEEDED` if `more_gb` (and `more_volumes`) would pass a quota.
async fn check_quota<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    region: &str,
    more_gb: u64,
    more_volumes: u64,
) -> ApiResult<()> {
    if more_volumes > 0 && store::count_live(conn, tenant).await? + more_volumes > MAX_LIVE_VOLUMES
    {
        return Err(ApiError::QuotaExceeded {
            message: format!("a tenant holds at most {MAX_LIVE_VOLUMES} volumes"),
        });
    }
    Usage::load_many(conn, &[tenant])
        .await?
        .remove(&tenant)
        .unwrap_or_default()
        .check_storage(region, more_gb, more_volumes)
}

/// `createVolume`: a tenant's new volume of the storage class's SKU in the region, billed
/// from now.
pub async fn create(
    db: &DatabaseConnection,
    actor: &Principal,
    new: NewVolume,
    now: DateTime<Utc>,
) -> ApiResult<VolumeView> {
    let now = at_millisecond(now);
    require_writer(actor)?;
    let tenant = actor.acting_tenant(new.tenant)?;
    let name = Slug::parse(&new.name)
        .map_err(|rule| ApiError::invalid("name", rule))?
        .into_string();
    check_size(new.storage_class, new.size_gb)?;
    check_labels(&new.labels)?;
    let region = new.region.trim();
    crate::tenancy::residency::check(db, tenant, "region", region).await?;
    let txn = crate::db::begin_write(db).await?;
    let tenant_row = store::lock_tenant(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    admit(&txn, &tenant_row).await?;
    let sku = store::sku_for(&txn, new.storage_class, region)
        .await?
        .ok_or_else(|| {
            ApiError::invalid(
                "region",
                format!(
                    "no {} storage is sold in `{region}`; the catalog lists the VOLUME SKUs",
                    new.storage_class
                ),
            )
        })?;
    if store::find_live_by_name(&txn, tenant, &name)
        .await?
        .is_some()
    {
        return Err(ApiError::AlreadyExists {
            what: format!("volume `{name}`"),
        });
    }
    check_quota(&txn, tenant, region, new.size_gb.unsigned_abs(), 1).await?;
    let row = store::insert(
        &txn,
        volume::Model {
            id: VolumeId::new(),
            tenant_id: tenant,
            sku_id: sku.id,
            region: sku.region.clone(),
            name,
            size_gb: new.size_gb,
            status: VolumeStatus::Active,
            access_state: AccessState::Pending,
            access_reason: None,
            labels: json!(new.labels),
            created_at: now,
            deleted_at: None,
        },
    )
    .await?;
    let view = view_of(row, &sku);
    let change = ("volume.created", json!({}), "volume.create");
    finish(txn, actor, change, (None, &view), now).await?;
    Ok(view)
}

/// Volume times are kept to the millisecond, what their GB-seconds count in, so that
/// every database stores and reports the instants billed.
fn at_millisecond(now: DateTime<Utc>) -> DateTime<Utc> {
    now.trunc_subsecs(3)
}

/// Creating, resizing and deleting need a tenant admin or member (or the operator).
fn require_writer(actor: &Principal) -> ApiResult<()> {
    actor.require_user()?;
    if actor.role == neocloud_schema::vocabulary::Role::TenantBilling {
        return Err(ApiError::forbidden(
            "volumes are managed by admins and members",
        ));
    }
    Ok(())
}

/// The caller's volume `id`, live, in `txn`: its row locked, then its tenant's, so that
/// what is checked is what is changed.
async fn live(txn: &DatabaseTransaction, actor: &Principal, id: VolumeId) -> ApiResult<Found> {
    let row = store::find_for_update(txn, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("volume"))?;
    let tenant = store::lock_tenant(txn, row.tenant_id)
        .await?
        .ok_or_else(|| ApiError::invariant("a volume's tenant is gone"))?;
    if row.status == VolumeStatus::Deleted {
        return Err(ApiError::InvalidState {
            message: "the volume is deleted".into(),
        });
    }
    let sku = crate::catalog::store::find(txn, row.sku_id.into())
        .await?
        .ok_or_else(|| ApiError::invariant("a volume's SKU is gone"))?;
    Ok(Found { row, sku, tenant })
}

struct Found {
    row: volume::Model,
    sku: sku::Model,
    tenant: tenant::Model,
}

/// `resizeVolume`: the volume at `size_gb` from now. A block volume only grows (its
/// filesystem would not survive shrinking); growing is admitted like a new volume.
pub async fn resize(
    db: &DatabaseConnection,
    actor: &Principal,
    id: VolumeId,
    size_gb: i64,
    now: DateTime<Utc>,
) -> ApiResult<VolumeView> {
    let now = at_millisecond(now);
    require_writer(actor)?;
    let txn = crate::db::begin_write(db).await?;
    let Found { row, sku, tenant } = live(&txn, actor, id).await?;
    let before = view_of(row.clone(), &sku);
    let class = before.storage_class;
    check_size(class, size_gb)?;
    let old = row.size_gb;
    if size_gb == old {
        return Err(ApiError::invalid(
            "sizeGb",
            format!("it is {old} GB already"),
        ));
    }
    if class == StorageClass::Block && size_gb < old {
        return Err(ApiError::invalid(
            "sizeGb",
            format!("a block volume only grows ({old} GB now)"),
        ));
    }
    if size_gb > old {
        admit(&txn, &tenant).await?;
        check_quota(
            &txn,
            row.tenant_id,
            &row.region,
            (size_gb - old).unsigned_abs(),
            0,
        )
        .await?;
    }
    let view = view_of(store::resize(&txn, row, size_gb, now).await?, &sku);
    let extra = json!({"previous_size_gb": old, "resized_at": now});
    let change = ("volume.resized", extra, "volume.resize");
    finish(txn, actor, change, (Some(&before), &view), now).await?;
    Ok(view)
}

/// `deleteVolume`: billing stops now; the storage is told to delete it.
pub async fn delete(
    db: &DatabaseConnection,
    actor: &Principal,
    id: VolumeId,
    now: DateTime<Utc>,
) -> ApiResult<VolumeView> {
    let now = at_millisecond(now);
    require_writer(actor)?;
    let txn = crate::db::begin_write(db).await?;
    let Found { row, sku, .. } = live(&txn, actor, id).await?;
    let before = view_of(row.clone(), &sku);
    let view = view_of(store::delete(&txn, row, None, now).await?, &sku);
    let extra = json!({"deleted_at": now, "reason": "deleted"});
    let change = ("volume.deleted", extra, "volume.delete");
    finish(txn, actor, change, (Some(&before), &view), now).await?;
    Ok(view)
}

/// `markVolumeReady` / `markVolumeFailed` (operator): the storage created the volume, or
/// could not (`failure`: why) — a failed volume is deleted and none of it is billed.
pub async fn mark(
    db: &DatabaseConnection,
    actor: &Principal,
    id: VolumeId,
    failure: Option<String>,
    now: DateTime<Utc>,
) -> ApiResult<VolumeView> {
    let now = at_millisecond(now);
    actor.require_operator()?;
    if let Some(reason) = &failure
        && (reason.trim().is_empty() || reason.len() > 500)
    {
        return Err(ApiError::invalid("reason", "1 to 500 bytes"));
    }
    let txn = crate::db::begin_write(db).await?;
    let Found { row, sku, .. } = live(&txn, actor, id).await?;
    if row.access_state != AccessState::Pending {
        return Err(ApiError::InvalidState {
            message: format!("the volume is {} already", row.access_state),
        });
    }
    let before = view_of(row.clone(), &sku);
    let view = match failure.as_deref() {
        None => view_of(store::mark_ready(&txn, row).await?, &sku),
        Some(reason) => {
            let view = view_of(store::delete(&txn, row, Some(reason), now).await?, &sku);
            let extra =
                json!({"deleted_at": now, "reason": "provisioning_failed", "failure": reason});
            tell(&txn, "volume.deleted", &view, extra, now).await?;
            view
        }
    };
    record(&txn, actor, "volume.mark", Some(&before), &view).await?;
    txn.commit().await?;
    Ok(view)
}

/// `volumes`: the caller's volumes (operators: every tenant's, or one's), oldest first.
pub async fn list(
    db: &DatabaseConnection,
    actor: &Principal,
    tenant: Option<TenantId>,
    include_deleted: bool,
    page: Page,
) -> ApiResult<PageOf<VolumeView>> {
    actor.require_user()?;
    let scope = match tenant {
        Some(asked) => Some(actor.acting_tenant(Some(asked))?),
        None => actor.tenant_scope_or_all(),
    };
    let rows = page
        .fetch(
            db,
            store::listed(scope, include_deleted),
            volume::Column::Id,
        )
        .await?;
    let skus = skus_of(db, &rows.items).await?;
    Ok(PageOf {
        items: rows
            .items
            .into_iter()
            .filter_map(|v| {
                let sku = skus.iter().find(|s| s.id == v.sku_id)?;
                Some(view_of(v, sku))
            })
            .collect(),
        has_next: rows.has_next,
        has_previous: rows.has_previous,
    })
}

/// `volume(id)`: one of the caller's volumes.
pub async fn get(
    db: &DatabaseConnection,
    actor: &Principal,
    id: VolumeId,
) -> ApiResult<VolumeView> {
    actor.require_user()?;
    let row = store::find(db, id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("volume"))?;
    let sku = skus_of(db, std::slice::from_ref(&row))
        .await?
        .pop()
        .ok_or_else(|| ApiError::invariant("a volume's SKU is gone"))?;
    Ok(view_of(row, &sku))
}

/// `Volume.gbHours(from, to)`: what one of the caller's volumes held over the span, in
/// GB-hours (at most `meters::MAX_RANGE_DAYS` days).
pub async fn gb_hours(
    db: &DatabaseConnection,
    actor: &Principal,
    volume: &volume::Model,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    now: DateTime<Utc>,
) -> ApiResult<rust_decimal::Decimal> {
    actor.require_user()?;
    if to <= from || (to - from).num_days() > crate::meters::MAX_RANGE_DAYS {
        return Err(ApiError::invalid(
            "to",
            format!(
                "after from, at most {} days later",
                crate::meters::MAX_RANGE_DAYS
            ),
        ));
    }
    let owned = store::find(db, volume.id, actor.tenant_scope_or_all())
        .await?
        .ok_or_else(|| ApiError::not_found("volume"))?;
    Ok(neocloud_metering::invoicing::volumes::gb_hours(db, &owned, from, to, now).await?)
}

async fn skus_of<C: ConnectionTrait>(
    conn: &C,
    rows: &[volume::Model],
) -> ApiResult<Vec<sku::Model>> {
    let ids: Vec<uuid::Uuid> = rows.iter().map(|v| v.sku_id.into()).collect();
    Ok(crate::catalog::store::find_many(conn, &ids).await?)
}

fn view_of(volume: volume::Model, sku: &sku::Model) -> VolumeView {
    VolumeView {
        volume,
        storage_class: sku.storage_class.unwrap_or(StorageClass::Block),
        sku_name: sku.name.clone(),
    }
}

/// What the log says of a volume: its identity, size and where it is, with `extra`.
async fn tell<C: ConnectionTrait>(
    conn: &C,
    kind: &'static str,
    view: &VolumeView,
    extra: Value,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let v = &view.volume;
    let mut data = json!({
        "volume_id": v.id,
        "tenant_id": v.tenant_id,
        "name": v.name,
        "sku": view.sku_name,
        "storage_class": view.storage_class,
        "region": v.region,
        "size_gb": v.size_gb,
        "labels": v.labels,
        "created_at": v.created_at,
    });
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    events::record(conn, NewEvent::tenant(kind, v.tenant_id, now, data), now).await?;
    Ok(())
}

/// Records a change's event (`kind` with `extra` in its data) and audit entry
/// (`action`, before and after), and commits it.
async fn finish(
    txn: DatabaseTransaction,
    actor: &Principal,
    (kind, extra, action): (&'static str, Value, &'static str),
    (before, after): (Option<&VolumeView>, &VolumeView),
    now: DateTime<Utc>,
) -> ApiResult<()> {
    tell(&txn, kind, after, extra, now).await?;
    record(&txn, actor, action, before, after).await?;
    txn.commit().await?;
    Ok(())
}

fn describe(view: &VolumeView) -> Value {
    let v = &view.volume;
    json!({"name": v.name, "size_gb": v.size_gb, "status": v.status,
           "access_state": v.access_state, "sku": view.sku_name})
}

async fn record<C: ConnectionTrait>(
    conn: &C,
    actor: &Principal,
    action: &'static str,
    before: Option<&VolumeView>,
    after: &VolumeView,
) -> ApiResult<()> {
    audit::record(
        conn,
        actor,
        audit::Entry {
            tenant_id: Some(after.volume.tenant_id),
            action,
            object_type: "volume",
            object_id: after.volume.id.to_string(),
            before: before.map(describe),
            after: Some(describe(after)),
        },
    )
    .await?;
    Ok(())
}
