//! Quotas: per-tenant limits on concurrent GPUs (per model, SKU or region, counted in
//! GPU-equivalents: a whole GPU is 1, a MIG slice its compute share, a fraction its
//! milli-GPUs), on concurrent allocations, and on live volumes and their GB (in all or
//! per region). Checked inside the placement transaction,
//! which is serialized, so concurrent orders can never overrun a quota.

use std::collections::HashMap;

use neocloud_schema::entity::{allocation, quota, sku};
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::TenantId;
use neocloud_schema::mig::{COMPUTE_SLICES_PER_GPU, MigProfile};
use neocloud_schema::vocabulary::{QuotaScope, SkuForm};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// Milli-GPUs one unit of `sku` holds (0 when unknown, e.g. a node of an unknown size).
pub fn milli_per_unit(sku: &sku::Model, gpus_per_node: u64) -> u64 {
    match sku.form {
        SkuForm::WholeGpu => 1000,
        SkuForm::WholeNode => 1000 * gpus_per_node,
        SkuForm::Metered | SkuForm::Volume => 0,
        SkuForm::Fractional => u64::try_from(sku.milli_gpu.unwrap_or(0)).unwrap_or(0),
        SkuForm::Mig => sku
            .gpu_model
            .parse::<GpuModel>()
            .ok()
            .zip(sku.mig_profile.as_deref())
            .and_then(|(model, name)| MigProfile::parse(name, model).ok())
            .map_or(0, |p| {
                u64::from(p.compute_slices()) * 1000 / u64::from(COMPUTE_SLICES_PER_GPU)
            }),
    }
}

/// What a tenant holds against its quotas, as of one moment of the serialized placement
/// section; a batch of orders adds what each placed order took before the next is checked.
#[derive(Debug, Default)]
pub struct Usage {
    quotas: Vec<quota::Model>,
    /// Milli-GPUs held per quota key (model, SKU, region).
    milli: HashMap<(QuotaScope, String), u64>,
    /// Live allocations.
    allocations: u64,
    /// Live volumes, and their GB per region and in all (`""`).
    volumes: u64,
    storage_gb: HashMap<String, u64>,
}

impl Usage {
    /// Reads the quotas of every tenant in `tenants` in one query, and what the tenants
    /// with a quota hold (a tenant without one needs no counting).
    pub async fn load_many<C: ConnectionTrait>(
        conn: &C,
        tenants: &[TenantId],
    ) -> ApiResult<HashMap<TenantId, Usage>> {
        let mut out: HashMap<TenantId, Usage> =
            tenants.iter().map(|t| (*t, Usage::default())).collect();
        let quotas = quota::Entity::find()
            .filter(quota::Column::TenantId.is_in(tenants.iter().map(|t| Uuid::from(*t))))
            .all(conn)
            .await?;
        for q in quotas {
            if let Some(usage) = out.get_mut(&q.tenant_id) {
                usage.quotas.push(q);
            }
        }
        for (tenant, usage) in &mut out {
            if !usage.quotas.is_empty() {
                usage.count_live(conn, *tenant).await?;
            }
        }
        Ok(out)
    }

    /// Counts what `tenant` holds now: its live allocations and their GPUs.
    async fn count_live<C: ConnectionTrait>(
        &mut self,
        conn: &C,
        tenant: TenantId,
    ) -> ApiResult<()> {
        let live = super::store::live_allocations_of(conn, tenant).await?;
        // One read of every live allocation's GPUs (this runs inside the serialized section).
        let ids: Vec<Uuid> = live.iter().map(|(a, _)| Uuid::from(a.id)).collect();
        let mut gpus_held: HashMap<Uuid, u64> = HashMap::new();
        for (allocation, _) in super::store::gpus_of(conn, &ids).await? {
            *gpus_held.entry(allocation).or_default() += 1;
        }
        for (alloc, alloc_sku) in &live {
            let Some(alloc_sku) = alloc_sku else { continue };
            let held =
                alloc.milli_per_gpu() * gpus_held.get(&Uuid::from(alloc.id)).copied().unwrap_or(0);
            for key in keys(alloc_sku) {
                *self.milli.entry(key).or_default() += held;
            }
        }
        self.allocations = live.len() as u64;
        if self.quotas.iter().any(|q| is_storage(q.scope)) {
            for (region, gb) in crate::volumes::store::live_sizes(conn, tenant).await? {
                self.add_volume(&region, gb);
            }
        }
        Ok(())
    }

    fn add_volume(&mut self, region: &str, gb: u64) {
        self.volumes += 1;
        for key in ["", region] {
            *self.storage_gb.entry(key.to_owned()).or_default() += gb;
        }
    }

    /// Fails with `QUOTA_EXCEEDED` if `more_gb` more GB in `region` (and `more_volumes`
    /// more volumes) would pass a storage quota.
    pub fn check_storage(&self, region: &str, more_gb: u64, more_volumes: u64) -> ApiResult<()> {
        for q in self.quotas.iter().filter(|q| is_storage(q.scope)) {
            let limit = u64::try_from(q.max_value).unwrap_or(0);
            let (used, asked, unit) = match q.scope {
                QuotaScope::Volumes => (self.volumes, more_volumes, "volumes"),
                _ if q.scope_value.is_empty() || q.scope_value == region => (
                    self.storage_gb.get(&q.scope_value).copied().unwrap_or(0),
                    more_gb,
                    "GB of volumes",
                ),
                _ => continue,
            };
            if asked > 0 && used + asked > limit {
                let place = match q.scope_value.as_str() {
                    "" => String::new(),
                    region => format!(" in {region}"),
                };
                return Err(ApiError::QuotaExceeded {
                    message: format!(
                        "the quota is {limit} {unit}{place}; {used} in use, {asked} more asked"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Counts allocations just placed (each with the number of GPUs it holds), as a fresh
    /// read would after they are written.
    pub fn add(&mut self, sku: &sku::Model, placed: &[(&allocation::Model, usize)]) {
        for (alloc, gpus) in placed {
            let held = alloc.milli_per_gpu() * *gpus as u64;
            for key in keys(sku) {
                *self.milli.entry(key).or_default() += held;
            }
        }
        self.allocations += placed.len() as u64;
    }

    /// What is held against `quota`, in its unit.
    fn used(&self, quota: &quota::Model) -> String {
        match quota.scope {
            QuotaScope::Allocations => self.allocations.to_string(),
            QuotaScope::Volumes => self.volumes.to_string(),
            QuotaScope::StorageGb => self
                .storage_gb
                .get(&quota.scope_value)
                .copied()
                .unwrap_or(0)
                .to_string(),
            scope => display_gpus(
                self.milli
                    .get(&(scope, quota.scope_value.clone()))
                    .copied()
                    .unwrap_or(0),
            ),
        }
    }

    /// Fails with `QUOTA_EXCEEDED` if `count` more units of `sku` would pass any quota.
    pub fn check(&self, sku: &sku::Model, count: i32) -> ApiResult<()> {
        let gpus_per_node = 8;
        let asked = milli_per_unit(sku, gpus_per_node) * u64::try_from(count).unwrap_or(0);
        let allocations_asked = match sku.form {
            SkuForm::WholeGpu => 1,
            _ => u64::try_from(count).unwrap_or(0),
        };
        for q in &self.quotas {
            let limit = u64::try_from(q.max_value).unwrap_or(0);
            let (used, wanted, unit) = match q.scope {
                QuotaScope::Allocations => (self.allocations, allocations_asked, "allocations"),
                QuotaScope::StorageGb | QuotaScope::Volumes => continue,
                scope => {
                    let matches = keys(sku).contains(&(scope, q.scope_value.clone()));
                    if !matches {
                        continue;
                    }
                    let used = self
                        .milli
                        .get(&(scope, q.scope_value.clone()))
                        .copied()
                        .unwrap_or(0);
                    if used + asked > limit * 1000 {
                        return Err(ApiError::QuotaExceeded {
                            message: format!(
                                "the {} quota for {} is {limit} GPU-equivalents (a MIG slice counts its compute share, a fraction its milli-GPUs, a node its GPUs); {} in use, {} asked",
                                scope,
                                q.scope_value,
                                display_gpus(used),
                                display_gpus(asked)
                            ),
                        });
                    }
                    continue;
                }
            };
            if used + wanted > limit {
                return Err(ApiError::QuotaExceeded {
                    message: format!("the quota is {limit} concurrent {unit}; {used} in use"),
                });
            }
        }
        Ok(())
    }
}

/// Fails with `QUOTA_EXCEEDED` if `count` more units of `sku` would pass any quota.
pub async fn check<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    sku: &sku::Model,
    count: i32,
) -> ApiResult<()> {
    let mut usage = Usage::load_many(conn, &[tenant]).await?;
    usage.remove(&tenant).unwrap_or_default().check(sku, count)
}

fn is_storage(scope: QuotaScope) -> bool {
    matches!(scope, QuotaScope::StorageGb | QuotaScope::Volumes)
}

fn keys(sku: &sku::Model) -> [(QuotaScope, String); 3] {
    [
        (QuotaScope::GpuModel, sku.gpu_model.clone()),
        (QuotaScope::Sku, sku.id.to_string()),
        (QuotaScope::Region, sku.region.clone()),
    ]
}

fn display_gpus(milli: u64) -> String {
    (rust_decimal::Decimal::from(milli) / rust_decimal::Decimal::ONE_THOUSAND)
        .normalize()
        .to_string()
}

/// `setQuota` (operator): creates or replaces one limit; `maxGpus < 0` removes it.
pub async fn set_quota(
    db: &sea_orm::DatabaseConnection,
    actor: &crate::auth::Principal,
    tenant: TenantId,
    scope: QuotaScope,
    value: &str,
    max: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<Option<quota::Model>> {
    actor.require_operator()?;
    let value = scope_value(scope, value)?;
    let txn = crate::db::begin_write(db).await?;
    crate::tenancy::store::find(&txn, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("tenant"))?;
    let (before, result) = write_quota(&txn, tenant, (scope, &value), max, now).await?;
    let data = serde_json::json!({
        "scope": if value.is_empty() { scope.to_string() } else { format!("{scope}:{value}") },
        "limit": result.as_ref().map(|q| q.max_value),
        "previous_limit": before.as_ref().and_then(|b| b["max"].as_i64()),
    });
    let event = neocloud_metering::events::NewEvent::tenant("quota.changed", tenant, now, data);
    neocloud_metering::events::record(&txn, event, now).await?;
    crate::audit::record(
        &txn,
        actor,
        crate::audit::Entry {
            tenant_id: Some(tenant),
            action: "quota.set",
            object_type: "quota",
            object_id: format!("{scope}:{value}"),
            before,
            after: result
                .as_ref()
                .map(|q| serde_json::json!({"max": q.max_value})),
        },
    )
    .await?;
    txn.commit().await?;
    Ok(result)
}

/// The value a quota of `scope` is about, checked: none for all allocations or volumes, a
/// SKU id, a GPU model code, or a region name (optional for storage GB).
fn scope_value(scope: QuotaScope, value: &str) -> ApiResult<String> {
    Ok(match scope {
        QuotaScope::Allocations | QuotaScope::Volumes => String::new(),
        QuotaScope::StorageGb if value.trim().is_empty() => String::new(),
        QuotaScope::Sku => value
            .parse::<Uuid>()
            .map_err(|_| ApiError::invalid("value", "a SKU id"))?
            .to_string(),
        QuotaScope::GpuModel => value
            .parse::<GpuModel>()
            .map_err(|e| ApiError::invalid("value", e.to_string()))?
            .code()
            .to_owned(),
        QuotaScope::Region | QuotaScope::StorageGb => {
            let v = value.trim();
            if v.is_empty() || v.len() > 64 {
                return Err(ApiError::invalid("value", "a region name"));
            }
            v.to_owned()
        }
    })
}

/// Creates, changes or (negative `max`) removes the tenant's quota of `scope`; returns
/// (what it was, for the audit entry) and what it is now.
async fn write_quota(
    txn: &sea_orm::DatabaseTransaction,
    tenant: TenantId,
    (scope, value): (QuotaScope, &str),
    max: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<(Option<serde_json::Value>, Option<quota::Model>)> {
    use sea_orm::{ActiveModelTrait, Set};
    let existing = quota::Entity::find()
        .filter(quota::Column::TenantId.eq(Uuid::from(tenant)))
        .filter(quota::Column::Scope.eq(scope))
        .filter(quota::Column::ScopeValue.eq(value))
        .one(txn)
        .await?;
    let before = existing
        .as_ref()
        .map(|q| serde_json::json!({"max": q.max_value}));
    let result = match (existing, max) {
        (Some(q), m) if m < 0 => {
            quota::Entity::delete_by_id(q.id).exec(txn).await?;
            None
        }
        (None, m) if m < 0 => None,
        (Some(q), m) => {
            let mut active: quota::ActiveModel = q.into();
            active.max_value = Set(m);
            active.updated_at = Set(now);
            Some(active.update(txn).await?)
        }
        (None, m) => Some(
            quota::ActiveModel {
                id: Set(Uuid::now_v7()),
                tenant_id: Set(tenant),
                scope: Set(scope),
                scope_value: Set(value.to_owned()),
                max_value: Set(m),
                updated_at: Set(now),
            }
            .insert(txn)
            .await?,
        ),
    };
    Ok((before, result))
}

/// A tenant's quotas (its own, or any tenant's for operators), each with what the tenant
/// uses of it now, in the quota's unit.
pub async fn list_quotas(
    db: &sea_orm::DatabaseConnection,
    actor: &crate::auth::Principal,
    tenant: Option<TenantId>,
) -> ApiResult<Vec<(quota::Model, String)>> {
    let tenant = actor.acting_tenant(tenant)?;
    let mut usage = Usage::load_many(db, &[tenant])
        .await?
        .remove(&tenant)
        .unwrap_or_default();
    let quotas = std::mem::take(&mut usage.quotas);
    Ok(quotas
        .into_iter()
        .map(|q| {
            let used = usage.used(&q);
            (q, used)
        })
        .collect())
}
