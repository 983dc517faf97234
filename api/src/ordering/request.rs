//! The order request: what a tenant may ask for (limits, labels, idempotency key, price
//! cap), the digest that tells a retry from a different order, and the price check an
//! order with `maxPricePerHour` must pass — at the price it will be billed.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::entity::sku;
use neocloud_schema::ids::{SshKeyId, TenantId};
use neocloud_schema::money::parse_plain_decimal;
use neocloud_schema::vocabulary::{AllocationClass, TopologyLevel};
use rust_decimal::Decimal;
use sea_orm::ConnectionTrait;
use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::catalog;
use crate::error::{ApiError, ApiResult};

/// Most units one order may ask for.
pub const MAX_GPUS_PER_ORDER: i32 = 1024;
pub const MAX_SLICES_PER_ORDER: i32 = 64;
pub const MAX_NODES_PER_ORDER: i32 = 128;
pub const MAX_LABELS: usize = 16;
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 128;

/// What a tenant asks for.
#[derive(Debug, Clone)]
pub struct PlaceOrder {
    pub sku: Uuid,
    pub count: i32,
    pub topology_level: TopologyLevel,
    pub topology_required: bool,
    pub exclusive: bool,
    pub class: AllocationClass,
    pub max_price_per_hour: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub idempotency_key: Option<String>,
    /// The SSH keys handed to the provisioner; `None`: every key the tenant has.
    pub ssh_key_ids: Option<Vec<SshKeyId>>,
}

pub(super) fn validate(input: &PlaceOrder) -> ApiResult<()> {
    if input.count < 1 {
        return Err(ApiError::invalid("count", "must be at least 1"));
    }
    if input.labels.len() > MAX_LABELS
        || input
            .labels
            .iter()
            .any(|(k, v)| k.is_empty() || k.len() > 64 || v.len() > 128)
    {
        return Err(ApiError::invalid(
            "labels",
            format!("at most {MAX_LABELS} labels; keys 1 to 64 bytes, values at most 128"),
        ));
    }
    if let Some(key) = &input.idempotency_key
        && (key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_BYTES)
    {
        return Err(ApiError::invalid(
            "idempotencyKey",
            format!("1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes"),
        ));
    }
    if let Some(keys) = &input.ssh_key_ids
        && keys.len() > crate::access::MAX_KEYS_PER_ORDER
    {
        return Err(ApiError::invalid(
            "sshKeyIds",
            format!("at most {} keys", crate::access::MAX_KEYS_PER_ORDER),
        ));
    }
    if let Some(max) = &input.max_price_per_hour {
        let max = parse_plain_decimal(max).map_err(|e| ApiError::invalid("maxPricePerHour", e))?;
        if max.is_sign_negative() {
            return Err(ApiError::invalid("maxPricePerHour", "must not be negative"));
        }
    }
    Ok(())
}

/// A stable digest of what was asked, to tell a retry from a different order.
pub(super) fn request_hash(input: &PlaceOrder) -> String {
    let mut canonical = json!({
        "sku": input.sku,
        "count": input.count,
        "topology": [input.topology_level.as_str(), input.topology_required.to_string()],
        "exclusive": input.exclusive,
        "class": input.class.as_str(),
        "max_price_per_hour": input.max_price_per_hour,
        "labels": input.labels,
    });
    // Only when named, so orders from before keys keep their digest.
    if let Some(keys) = &input.ssh_key_ids {
        let mut keys = keys.clone();
        keys.sort_unstable();
        keys.dedup();
        canonical["ssh_key_ids"] = json!(keys);
    }
    hex::encode(Sha256::digest(canonical.to_string().as_bytes()))
}

/// What `count` units of `sku` cost `tenant` an hour in `class`, as they will be billed:
/// the tenant's plan rate for the SKU (its spot price on spot), or the list price.
pub async fn hourly_price<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    sku: &sku::Model,
    (class, count): (AllocationClass, i32),
    now: DateTime<Utc>,
) -> ApiResult<Decimal> {
    let price = catalog::unit_prices(conn, Some(tenant), now, std::slice::from_ref(sku))
        .await?
        .remove(&sku.id.into())
        .ok_or_else(|| ApiError::not_found("SKU"))?;
    let unit = if class == AllocationClass::Spot {
        price.spot
    } else {
        price.on_demand
    };
    Ok((unit * Decimal::from(count)).normalize())
}

/// Refuses an order whose hourly price, as it will be billed, is above the buyer's limit.
/// Refuses an order for a SKU in a region the tenant's data may not be in.
pub(super) async fn check_residency<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    input: &PlaceOrder,
) -> ApiResult<()> {
    // An unknown SKU is refused by placement.
    let Some(sku) = catalog::store::find(conn, input.sku).await? else {
        return Ok(());
    };
    crate::tenancy::residency::check(conn, tenant, "sku", &sku.region).await
}

pub(super) async fn check_price<C: ConnectionTrait>(
    conn: &C,
    tenant: TenantId,
    input: &PlaceOrder,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let Some(max) = &input.max_price_per_hour else {
        return Ok(());
    };
    let max = parse_plain_decimal(max).map_err(|e| ApiError::invalid("maxPricePerHour", e))?;
    // An unknown SKU is refused by placement, with the same answer as without a limit.
    let Some(sku) = catalog::store::find(conn, input.sku).await? else {
        return Ok(());
    };
    let price = hourly_price(conn, tenant, &sku, (input.class, input.count), now).await?;
    if price > max {
        return Err(ApiError::invalid(
            "maxPricePerHour",
            format!(
                "the order costs {price} {} per hour ({} × {} at {}), above {max}",
                sku.currency,
                input.count,
                sku.unit(),
                if input.class == AllocationClass::Spot {
                    "the spot price"
                } else {
                    "the on-demand price"
                },
            ),
        ));
    }
    Ok(())
}
