//! What a refused order is told: `INSUFFICIENT_CAPACITY`, whether the order could ever fit
//! its region, and alternatives that would be placed now.
//!
//! An alternative is the same order (topology, exclusivity, class, labels) with another
//! SKU or count, and is offered only after it was placed on a copy of the fleet exactly as
//! an order is placed (`place_units`), as the refused order's tenant and class. Offered:
//! the same SKU with the largest count below the order's that places; the same product
//! (form, MIG profile or fraction size) on the same model in another region, or on
//! another model in the same region, with the largest count up to the order's that
//! places. An alternative above the tenant's quota is left out.

use neocloud_scheduler::Shape;
use neocloud_schema::entity::sku;
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::TenantId;
use neocloud_schema::mig::MigProfile;
use neocloud_schema::vocabulary::{SkuForm, TopologyLevel};
use serde_json::{Value, json};

use super::PlaceOrder;
use super::fleet_cache::FleetCache;
use super::planning::place_units;
use super::quota::Usage;
use super::shapes::{request_for, sched_level, units_for, with_models};
use crate::error::ApiError;

/// Most alternatives one refusal lists.
const MAX_ALTERNATIVES: usize = 8;

/// An order that would be placed now in place of the refused one.
pub(super) struct Alternative<'a> {
    pub sku: &'a sku::Model,
    pub count: u32,
    pub reason: &'static str,
}

impl Alternative<'_> {
    pub fn to_json(&self) -> Value {
        json!({
            "sku": self.sku.id,
            "skuName": self.sku.name,
            "region": self.sku.region,
            "gpuModel": self.sku.gpu_model,
            "count": self.count,
            "reason": self.reason,
        })
    }
}

/// The order as asked, for the refusal and its alternatives.
pub(super) struct Asked<'a> {
    pub tenant: TenantId,
    pub sku: &'a sku::Model,
    pub input: &'a PlaceOrder,
}

impl Asked<'_> {
    /// Whether `count` × `sku` would be placed now, placed on a copy of the fleet exactly
    /// as the order would be.
    fn places_now(&self, cache: &FleetCache, sku: &sku::Model, count: u32) -> bool {
        let Some(region) = cache.regions.get(&sku.region) else {
            return false;
        };
        let Ok(shapes) = self.shapes(sku, count) else {
            return false;
        };
        let requests = shapes
            .into_iter()
            .map(|shape| request_for(self.tenant, self.input, &region.fleet, sku, shape))
            .collect();
        let mut probe = region.fleet.clone();
        matches!(place_units(&mut probe, requests), Ok(Ok(_)))
    }

    fn shapes(&self, sku: &sku::Model, count: u32) -> Result<Vec<Shape>, ApiError> {
        let level = sched_level(self.input.topology_level);
        units_for(sku, count, level, self.input.topology_required)
    }

    /// The largest count up to `most` of `sku` that places now (`most` is tried first).
    /// Dry runs halve the range, so the answer is the largest wherever a smaller order
    /// places whenever a larger one does; every count returned was placed.
    fn largest_now(&self, cache: &FleetCache, sku: &sku::Model, most: u32) -> Option<u32> {
        if most == 0 {
            return None;
        }
        if self.places_now(cache, sku, most) {
            return Some(most);
        }
        let (mut low, mut high) = (0, most - 1);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if self.places_now(cache, sku, mid) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        (low > 0).then_some(low)
    }

    /// The most units of `sku` one order like this could ever get in its region (every
    /// node active and healthy, nothing allocated).
    fn most_ever(&self, cache: &FleetCache, sku: &sku::Model) -> u32 {
        let Some(region) = cache.regions.get(&sku.region) else {
            return 0;
        };
        let Some(shape) = self.shapes(sku, 1).ok().and_then(|mut s| s.pop()) else {
            return 0;
        };
        let models = region.fleet.model_set([sku.gpu_model.as_str()]);
        region.fleet.most_ever(&with_models(shape, models))
    }

    /// Orders that would be placed now instead: fewer units of the same SKU first, then
    /// the same product in another region or on another model. `skus` is the active
    /// catalog; `usage` the tenant's quota usage.
    pub fn alternatives<'s>(
        &self,
        cache: &FleetCache,
        skus: &'s [sku::Model],
        usage: Option<&Usage>,
    ) -> Vec<Alternative<'s>> {
        let count = u32::try_from(self.input.count).unwrap_or(0);
        let mut out = Vec::new();
        let fewer = count.saturating_sub(1).min(self.most_ever(cache, self.sku));
        if let Some(n) = self.largest_now(cache, self.sku, fewer)
            && let Some(same) = skus.iter().find(|s| s.id == self.sku.id)
        {
            out.push(Alternative {
                sku: same,
                count: n,
                reason: "fewer units",
            });
        }
        for other in skus.iter().filter(|s| neighbour(self.sku, s)) {
            if out.len() >= MAX_ALTERNATIVES {
                break;
            }
            let most = count.min(self.most_ever(cache, other));
            let Some(n) = self.largest_now(cache, other, most) else {
                continue;
            };
            let asked = i32::try_from(n).unwrap_or(i32::MAX);
            if usage.is_some_and(|u| u.check(other, asked).is_err()) {
                continue;
            }
            let reason = if other.region != self.sku.region {
                "other region"
            } else {
                "other model"
            };
            out.push(Alternative {
                sku: other,
                count: n,
                reason,
            });
        }
        out
    }

    /// `INSUFFICIENT_CAPACITY` for this order with `alternatives`; the message says when
    /// the order could never fit its region, and why.
    pub fn refusal(&self, cache: &FleetCache, alternatives: Vec<Value>) -> ApiError {
        let sku = self.sku;
        let count = self.input.count;
        let most = self.most_ever(cache, sku);
        let message = if i64::from(count) > i64::from(most) {
            format!(
                "{count} × {} can never fit in {}: {}",
                sku.name,
                sku.region,
                self.limit(most)
            )
        } else {
            format!(
                "not enough free capacity for {count} × {} in {} now",
                sku.name, sku.region
            )
        };
        ApiError::InsufficientCapacity {
            message,
            alternatives,
        }
    }

    /// What bounds the order in its region: `most` units at most.
    fn limit(&self, most: u32) -> String {
        let sku = self.sku;
        let (model, region) = (&sku.gpu_model, &sku.region);
        if most == 0 {
            return format!("{region} has no {model} that can serve {}", sku.name);
        }
        let required = self.input.topology_required;
        let scope = match (required, self.input.topology_level) {
            (true, TopologyLevel::Node) => Some("node"),
            (true, TopologyLevel::NvlinkDomain) => Some("NVLink domain"),
            (true, TopologyLevel::Rack) => Some("rack"),
            _ => None,
        };
        let what = match sku.form {
            SkuForm::WholeGpu => "GPUs",
            SkuForm::WholeNode => "nodes",
            SkuForm::Mig | SkuForm::Fractional | SkuForm::Metered | SkuForm::Volume => {
                return format!(
                    "{region} has room for at most {most} × {} at once",
                    sku.name
                );
            }
        };
        match scope {
            Some("node") if sku.form == SkuForm::WholeNode => {
                "an order held to one node takes exactly one node".into()
            }
            Some(scope) => {
                format!("the largest {scope} of {model} in {region} holds {most} {what}")
            }
            None => format!("{region} holds {most} {model} {what} in all"),
        }
    }
}

/// Whether `other` sells what `sku` sells (same form, same MIG profile or fraction size)
/// on the same model in another region, or on another model in the same region.
fn neighbour(sku: &sku::Model, other: &sku::Model) -> bool {
    let elsewhere = (other.gpu_model == sku.gpu_model && other.region != sku.region)
        || (other.region == sku.region && other.gpu_model != sku.gpu_model);
    other.id != sku.id
        && other.form == sku.form
        && elsewhere
        && mig_profile(other) == mig_profile(sku)
        && other.milli_gpu == sku.milli_gpu
}

/// The MIG geometry a SKU sells (the same profile names a different size per model).
fn mig_profile(sku: &sku::Model) -> Option<MigProfile> {
    let model: GpuModel = sku.gpu_model.parse().ok()?;
    MigProfile::parse(sku.mig_profile.as_deref()?, model).ok()
}
