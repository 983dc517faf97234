//! What an order of a SKU asks the scheduler for: the SKU's form becomes scheduler shapes
//! (one gang of whole GPUs or nodes, one shape per MIG slice or GPU fraction), restricted
//! to the SKU's model as a region's fleet names it. A new resource form plugs in here.

use neocloud_scheduler::{
    Exclusivity, Fleet, Request, Shape, Topology, TopologyLevel as SchedLevel,
};
use neocloud_schema::entity::sku;
use neocloud_schema::gpu::GpuModel;
use neocloud_schema::ids::TenantId;
use neocloud_schema::mig::MigProfile;
use neocloud_schema::vocabulary::{SkuForm, TopologyLevel};

use super::fleet_cache::{class_of, fraction_memory_mib, tenant_key};
use super::request::{MAX_GPUS_PER_ORDER, MAX_NODES_PER_ORDER, MAX_SLICES_PER_ORDER, PlaceOrder};
use crate::error::{ApiError, ApiResult};

pub(super) fn sched_level(level: TopologyLevel) -> SchedLevel {
    match level {
        TopologyLevel::Node => SchedLevel::Node,
        TopologyLevel::NvlinkDomain => SchedLevel::NvlinkDomain,
        TopologyLevel::Rack => SchedLevel::Rack,
        TopologyLevel::Any => SchedLevel::Any,
    }
}

fn not_orderable() -> ApiError {
    ApiError::invalid(
        "sku",
        "a METERED SKU is billed from usage events and a VOLUME SKU by `createVolume`; neither can be ordered",
    )
}

pub(super) fn units(sku: &sku::Model, input: &PlaceOrder) -> ApiResult<Vec<Shape>> {
    let max = match sku.form {
        SkuForm::WholeGpu => MAX_GPUS_PER_ORDER,
        SkuForm::Mig | SkuForm::Fractional => MAX_SLICES_PER_ORDER,
        SkuForm::WholeNode => MAX_NODES_PER_ORDER,
        SkuForm::Metered | SkuForm::Volume => return Err(not_orderable()),
    };
    if input.count > max {
        return Err(ApiError::invalid(
            "count",
            format!("at most {max} per order of this SKU"),
        ));
    }
    units_for(
        sku,
        // At least 1 (validated) and at most `max`.
        u32::try_from(input.count).unwrap_or(0),
        sched_level(input.topology_level),
        input.topology_required,
    )
}

/// The scheduler shapes an order of `count` units of `sku` becomes: one gang for whole
/// GPUs or nodes, one shape per slice for MIG and fractional SKUs. Models are filled in
/// per region by `resolve_models`.
pub(super) fn units_for(
    sku: &sku::Model,
    count: u32,
    level: SchedLevel,
    required: bool,
) -> ApiResult<Vec<Shape>> {
    let topology = Topology { level, required };
    let models = neocloud_scheduler::ModelSet::default();
    Ok(match sku.form {
        SkuForm::WholeGpu => vec![Shape::WholeGpus {
            count,
            models,
            topology,
            cpu_milli_per_gpu: 0,
            memory_mib_per_gpu: 0,
        }],
        SkuForm::WholeNode => vec![Shape::WholeNodes {
            count,
            models,
            topology,
        }],
        SkuForm::Mig => {
            let model: GpuModel = sku.gpu_model.parse().map_err(|_| ApiError::Internal {
                message: format!("SKU {} has an unknown model", sku.id),
            })?;
            let profile = sku
                .mig_profile
                .as_deref()
                .and_then(|name| MigProfile::parse(name, model).ok())
                .ok_or_else(|| ApiError::Internal {
                    message: format!("SKU {} has no valid MIG profile", sku.id),
                })?;
            vec![
                Shape::Mig {
                    profile,
                    models,
                    cpu_milli: 0,
                    memory_mib: 0,
                };
                count as usize
            ]
        }
        SkuForm::Metered | SkuForm::Volume => return Err(not_orderable()),
        SkuForm::Fractional => {
            let milli = u32::try_from(sku.milli_gpu.unwrap_or(0)).unwrap_or(0);
            let model: Option<GpuModel> = sku.gpu_model.parse().ok();
            let gpu_memory = model.map_or(0, |m| fraction_memory_mib(m.memory_mib(), milli));
            vec![
                Shape::Fractional {
                    milli_gpu: milli,
                    gpu_memory_mib: gpu_memory,
                    models,
                    cpu_milli: 0,
                    memory_mib: 0,
                };
                count as usize
            ]
        }
    })
}

/// Restricts a shape to a model set (the SKU's model as a region's fleet names it).
pub(super) fn with_models(shape: Shape, set: neocloud_scheduler::ModelSet) -> Shape {
    match shape {
        Shape::WholeGpus {
            count,
            topology,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
            ..
        } => Shape::WholeGpus {
            count,
            models: set,
            topology,
            cpu_milli_per_gpu,
            memory_mib_per_gpu,
        },
        Shape::WholeNodes {
            count, topology, ..
        } => Shape::WholeNodes {
            count,
            models: set,
            topology,
        },
        Shape::Mig {
            profile,
            cpu_milli,
            memory_mib,
            ..
        } => Shape::Mig {
            profile,
            models: set,
            cpu_milli,
            memory_mib,
        },
        Shape::Fractional {
            milli_gpu,
            gpu_memory_mib,
            cpu_milli,
            memory_mib,
            ..
        } => Shape::Fractional {
            milli_gpu,
            gpu_memory_mib,
            models: set,
            cpu_milli,
            memory_mib,
        },
        other => other,
    }
}

/// A scheduler request for one unit (`shape`) of `input`, by `tenant`, in `fleet` (the
/// region's fleet, which names the SKU's model).
pub(super) fn request_for(
    tenant: TenantId,
    input: &PlaceOrder,
    fleet: &Fleet,
    sku: &sku::Model,
    shape: Shape,
) -> Request {
    Request {
        tenant: tenant_key(tenant.into()),
        class: class_of(input.class),
        exclusive: input.exclusive.then_some(match input.topology_level {
            TopologyLevel::NvlinkDomain => Exclusivity::NvlinkDomain,
            _ => Exclusivity::Node,
        }),
        shape: with_models(shape, fleet.model_set([sku.gpu_model.as_str()])),
    }
}
