//! The demo fleet and catalog: two regions; racks of 8×H100 HGX nodes (each node its own
//! NVLink domain); a GB200 NVL72-style rack (18 nodes × 4 GPUs in one NVLink domain);
//! H100 and A100 nodes in MIG mode; L40S nodes sold as fractions; H200 nodes.

use neocloud_schema::gpu::GpuModel;
use neocloud_schema::mig::{COMPUTE_SLICES_PER_GPU, MigProfile};
use neocloud_schema::vocabulary::SkuForm;
use rust_decimal::Decimal;

use crate::catalog::NewSku;
use crate::fleet::{GpuInput, NodeRegistration};

struct Group {
    region: &'static str,
    zone: &'static str,
    rack: &'static str,
    prefix: &'static str,
    model: GpuModel,
    nodes: usize,
    gpus_per_node: usize,
    mig: bool,
    shared: bool,
    /// One NVLink domain for the whole group (NVL72); otherwise one per node.
    shared_domain: Option<&'static str>,
    /// The partner whose hardware it is; the operator's own otherwise.
    provider: Option<&'static str>,
}

/// The demo's partner provider: the us-east H200 rack is its hardware.
pub const PARTNER: &str = "atlantic-gpu";

const GROUPS: &[Group] = &[
    Group {
        region: "eu-west",
        zone: "eu-west-a",
        rack: "r01",
        prefix: "eu-h100-r01",
        model: GpuModel::H100,
        nodes: 4,
        gpus_per_node: 8,
        mig: false,
        shared: false,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "eu-west",
        zone: "eu-west-a",
        rack: "r02",
        prefix: "eu-h100-r02",
        model: GpuModel::H100,
        nodes: 4,
        gpus_per_node: 8,
        mig: false,
        shared: false,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "eu-west",
        zone: "eu-west-a",
        rack: "nvl72-01",
        prefix: "eu-gb200",
        model: GpuModel::GB200,
        nodes: 18,
        gpus_per_node: 4,
        mig: false,
        shared: false,
        shared_domain: Some("eu-nvl72-01"),
        provider: None,
    },
    Group {
        region: "eu-west",
        zone: "eu-west-b",
        rack: "r03",
        prefix: "eu-h100-mig",
        model: GpuModel::H100,
        nodes: 2,
        gpus_per_node: 8,
        mig: true,
        shared: false,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "eu-west",
        zone: "eu-west-b",
        rack: "r03",
        prefix: "eu-a100-mig",
        model: GpuModel::A100_80,
        nodes: 2,
        gpus_per_node: 8,
        mig: true,
        shared: false,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "eu-west",
        zone: "eu-west-b",
        rack: "r04",
        prefix: "eu-l40s",
        model: GpuModel::L40S,
        nodes: 2,
        gpus_per_node: 8,
        mig: false,
        shared: true,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "us-east",
        zone: "us-east-a",
        rack: "r01",
        prefix: "us-h100-r01",
        model: GpuModel::H100,
        nodes: 4,
        gpus_per_node: 8,
        mig: false,
        shared: false,
        shared_domain: None,
        provider: None,
    },
    Group {
        region: "us-east",
        zone: "us-east-a",
        rack: "r02",
        prefix: "us-h200-r02",
        model: GpuModel::H200,
        nodes: 2,
        gpus_per_node: 8,
        mig: false,
        shared: false,
        shared_domain: None,
        provider: Some(PARTNER),
    },
    Group {
        region: "us-east",
        zone: "us-east-a",
        rack: "r03",
        prefix: "us-l40s",
        model: GpuModel::L40S,
        nodes: 2,
        gpus_per_node: 8,
        mig: false,
        shared: true,
        shared_domain: None,
        provider: None,
    },
];

/// Every demo node, with deterministic hostnames and GPU UUIDs.
pub fn nodes() -> Vec<NodeRegistration> {
    let mut out = Vec::new();
    for (g, group) in GROUPS.iter().enumerate() {
        for n in 0..group.nodes {
            let hostname = format!("{}-{:02}", group.prefix, n + 1);
            out.push(NodeRegistration {
                nvlink_domain: group
                    .shared_domain
                    .map_or_else(|| hostname.clone(), str::to_owned),
                hostname,
                region: group.region.into(),
                zone: group.zone.into(),
                rack: group.rack.into(),
                gpu_model: group.model.code().into(),
                gpus: (0..group.gpus_per_node)
                    .zip(0i32..)
                    .map(|(i, index)| GpuInput {
                        uuid: format!("GPU-{g:04x}{n:04x}-0000-4000-8000-{i:012x}"),
                        index,
                    })
                    .collect(),
                mig_enabled: group.mig,
                shared_gpus: group.shared,
                cpu_milli: None,
                memory_mib: None,
                provider: group.provider.map(str::to_owned),
            });
        }
    }
    out
}

fn list_price(model: GpuModel) -> Decimal {
    match model {
        GpuModel::H100 => Decimal::new(249, 2),
        GpuModel::H200 => Decimal::new(329, 2),
        GpuModel::A100_80 => Decimal::new(159, 2),
        GpuModel::A100_40 => Decimal::new(119, 2),
        GpuModel::B200 => Decimal::new(449, 2),
        GpuModel::GB200 => Decimal::new(499, 2),
        GpuModel::L40S => Decimal::new(99, 2),
    }
}

fn sku(name: String, model: GpuModel, form: SkuForm, region: &str, price: Decimal) -> NewSku {
    NewSku {
        name,
        gpu_model: Some(model.code().into()),
        form,
        mig_profile: None,
        milli_gpu: None,
        unit: None,
        service_category: None,
        storage_class: None,
        region: region.into(),
        list_price_per_hour: price.round_dp(4).normalize().to_string(),
        currency: "USD".into(),
    }
}

/// The catalog for the demo fleet: per (model, region) whole GPUs and whole nodes, MIG
/// profiles priced by compute share, and fractions of shared GPUs.
pub fn skus() -> Vec<NewSku> {
    let mut out: Vec<NewSku> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for group in GROUPS {
        if !seen.insert((group.model, group.region, group.mig, group.shared)) {
            continue;
        }
        let code = group.model.code().to_ascii_lowercase();
        let price = list_price(group.model);
        if group.mig {
            for profile in MigProfile::ALL {
                let share =
                    Decimal::from(profile.compute_slices()) / Decimal::from(COMPUTE_SLICES_PER_GPU);
                let name = profile.name(group.model);
                let mut s = sku(
                    format!("{code}-mig-{name}-{}", group.region),
                    group.model,
                    SkuForm::Mig,
                    group.region,
                    price * share,
                );
                s.mig_profile = Some(name);
                out.push(s);
            }
        } else if group.shared {
            for milli in [250, 500] {
                let mut s = sku(
                    format!("{code}-{milli}m-{}", group.region),
                    group.model,
                    SkuForm::Fractional,
                    group.region,
                    price * Decimal::new(milli, 3),
                );
                s.milli_gpu = i32::try_from(milli).ok();
                out.push(s);
            }
        } else {
            out.push(sku(
                format!("{code}-{}", group.region),
                group.model,
                SkuForm::WholeGpu,
                group.region,
                price,
            ));
            out.push(sku(
                format!("{code}-node-{}", group.region),
                group.model,
                SkuForm::WholeNode,
                group.region,
                price * Decimal::from(group.gpus_per_node),
            ));
        }
    }
    out.extend(volume_skus());
    out
}

/// Block and object storage in eu-west, per GB-hour: about 0.10 and 0.023 per GB-month.
fn volume_skus() -> [NewSku; 2] {
    let volume = |name: &str, class, price: &str| NewSku {
        name: name.into(),
        gpu_model: None,
        form: SkuForm::Volume,
        mig_profile: None,
        milli_gpu: None,
        unit: None,
        service_category: None,
        storage_class: Some(class),
        region: "eu-west".into(),
        list_price_per_hour: price.into(),
        currency: "USD".into(),
    };
    use neocloud_schema::vocabulary::StorageClass;
    [
        volume("block-ssd-eu-west", StorageClass::Block, "0.000137"),
        volume("object-eu-west", StorageClass::Object, "0.0000315"),
    ]
}

/// The demo's metered SKUs, each with the meter that bills it: output tokens of a model
/// endpoint (per token, grouped by model and API key) and egress (per GB, grouped by
/// region), both in eu-west.
pub fn metered() -> Vec<(NewSku, neocloud_metering::meters::NewMeter)> {
    use neocloud_schema::vocabulary::MeterAggregation;
    use neocloud_schema::vocabulary::ServiceCategory;
    let metered_sku = |name: &str, unit: &str, price: &str, category| NewSku {
        name: name.into(),
        gpu_model: None,
        form: SkuForm::Metered,
        mig_profile: None,
        milli_gpu: None,
        unit: Some(unit.into()),
        service_category: Some(category),
        storage_class: None,
        region: "eu-west".into(),
        list_price_per_hour: price.into(),
        currency: "USD".into(),
    };
    let meter = |key: &str, event_type: &str, path: &str, group_by: &[&str]| {
        neocloud_metering::meters::NewMeter {
            key: key.into(),
            event_type: event_type.into(),
            value_path: Some(path.into()),
            aggregation: MeterAggregation::Sum,
            group_by: group_by.iter().map(|g| (*g).to_owned()).collect(),
            filter: vec![],
            max_value: None,
            // Set to the SKU's id when seeded.
            sku: neocloud_schema::ids::SkuId::from(uuid::Uuid::nil()),
            description: None,
        }
    };
    vec![
        (
            metered_sku(
                "llama-70b-output-tokens-eu-west",
                "token",
                "0.0000008",
                ServiceCategory::AiAndMachineLearning,
            ),
            meter(
                "llama-70b-output-tokens",
                "llm.request",
                "usage.output_tokens",
                &["model", "api_key"],
            ),
        ),
        (
            metered_sku("egress-eu-west", "GB", "0.05", ServiceCategory::Networking),
            meter("egress-gb", "net.egress", "gb", &["region"]),
        ),
    ]
}

/// The demo's model endpoint: Llama 3.1 70B in eu-west, per million tokens, with a
/// cached-input price and no request fee.
pub fn model_offering() -> crate::models::NewOffering {
    crate::models::NewOffering {
        name: "llama-3.1-70b-instruct".into(),
        region: "eu-west".into(),
        currency: "USD".into(),
        input_per_million: "0.60".into(),
        output_per_million: "0.80".into(),
        cached_per_million: Some("0.30".into()),
        request_fee: None,
        max_tokens_per_request: Some(200_000),
        description: Some("Llama 3.1 70B Instruct on H100s in eu-west".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_node_and_sku_is_valid() {
        let nodes = nodes();
        assert!(nodes.len() >= 30);
        let mut hostnames = std::collections::HashSet::new();
        for node in nodes {
            assert!(hostnames.insert(node.hostname.clone()));
            node.validate().expect("valid node");
        }
        let skus = skus();
        let mut names = std::collections::HashSet::new();
        for sku in skus {
            assert!(names.insert(sku.name.clone()), "{}", sku.name);
            sku.validate().expect("valid sku");
        }
    }
}
