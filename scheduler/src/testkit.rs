//! Fleet builders shared by the unit and property tests (test builds only).

use crate::fleet::{Fleet, GpuMode, GpuSpec, Health, NodeSpec, NodeState};

pub(crate) fn node(
    name: &str,
    rack: &str,
    domain: &str,
    model: &str,
    gpus: usize,
    mode: GpuMode,
) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        region: "eu".into(),
        zone: "eu-1".into(),
        rack: rack.into(),
        nvlink_domain: domain.into(),
        cpu_milli: 128_000,
        memory_mib: 1 << 20,
        state: NodeState::Active,
        reliability: None,
        gpus: vec![
            GpuSpec {
                model: model.into(),
                memory_mib: 81_920,
                health: Health::Ok,
                mode,
            };
            gpus
        ],
    }
}

/// `racks` racks of `per_rack` 8-GPU H100 nodes, each node its own NVLink domain.
pub(crate) fn hgx_fleet(racks: usize, per_rack: usize) -> Fleet {
    let mut specs = Vec::new();
    for r in 0..racks {
        for i in 0..per_rack {
            let name = format!("r{r}n{i}");
            specs.push(node(
                &name,
                &format!("rack{r}"),
                &name,
                "H100",
                8,
                GpuMode::Whole,
            ));
        }
    }
    Fleet::new(specs).unwrap()
}
