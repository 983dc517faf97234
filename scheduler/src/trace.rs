//! Workload traces in the format of the Alibaba GPU cluster trace v2023 (`openb_*`):
//! node lists (`sn,cpu_milli,memory_mib,gpu,model`) and pod lists (`name,cpu_milli,
//! memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,deletion_time,
//! scheduled_time]`). Parsing takes readers (the binary opens the files) and tolerates
//! missing optional columns: without `gpu_spec` every model is acceptable, without times
//! the replay decides the timing.
//!
//! Turning trace rows into fleet specs and requests also lives here; replaying them
//! lives in `replay`.

use std::io::Read;

use serde::Deserialize;

use crate::fleet::{Fleet, GpuMode, GpuSpec, Health, NodeSpec, NodeState};
use crate::ids::{ModelSet, TenantKey};
use crate::request::{MILLI_PER_GPU, Request, Shape, Topology, TopologyLevel};

/// Nodes per rack when a trace gives no topology (its nodes are grouped in file order).
pub const TRACE_RACK_NODES: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TraceNode {
    pub sn: String,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    pub gpu: u32,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TracePod {
    pub name: String,
    pub cpu_milli: u32,
    pub memory_mib: u64,
    pub num_gpu: u32,
    pub gpu_milli: u32,
    #[serde(default)]
    pub gpu_spec: Option<String>,
    #[serde(default)]
    pub creation_time: Option<u64>,
    #[serde(default)]
    pub deletion_time: Option<u64>,
    #[serde(default)]
    pub scheduled_time: Option<u64>,
}

impl TracePod {
    /// GPUs requested, in milli-GPUs.
    pub fn gpu_milli_total(&self) -> u64 {
        u64::from(self.num_gpu) * u64::from(self.gpu_milli)
    }

    /// The accepted model names (`gpu_spec` split on `|`; empty: any).
    pub fn models(&self) -> Vec<&str> {
        self.gpu_spec
            .as_deref()
            .map(|s| {
                s.split('|')
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("trace row {row}: {source}")]
    Row { row: usize, source: csv::Error },
    #[error("trace header: {0}")]
    Header(csv::Error),
}

fn read<T: for<'de> Deserialize<'de>, R: Read>(reader: R) -> Result<Vec<T>, TraceError> {
    let mut csv = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(reader);
    csv.headers().map_err(TraceError::Header)?;
    csv.deserialize()
        .enumerate()
        .map(|(i, r)| r.map_err(|source| TraceError::Row { row: i + 2, source }))
        .collect()
}

pub fn read_nodes<R: Read>(reader: R) -> Result<Vec<TraceNode>, TraceError> {
    read(reader)
}

pub fn read_pods<R: Read>(reader: R) -> Result<Vec<TracePod>, TraceError> {
    read(reader)
}

/// Framebuffer of the trace's GPU models in MiB (the trace does not say; `G2`, `G3` are
/// unnamed models and get 16 GiB). Only fractional requests with GPU memory read it.
fn model_memory_mib(model: &str) -> u64 {
    let gib = match model {
        "V100M32" => 32,
        "A10" => 24,
        _ => 16,
    };
    gib * 1024
}

/// Fleet specs for a trace's nodes: one region and zone, racks of `TRACE_RACK_NODES`
/// nodes in file order, each node its own NVLink domain, every GPU in shared mode (the
/// trace's GPUs take whole and fractional pods alike).
/// A fleet `fraction` the size of `nodes` with the same mix: of each class of identical
/// nodes (model, GPUs, CPU, memory) the first `round(fraction × count)`, at least one, in
/// file order. A fraction of 1 or more keeps every node.
pub fn scale_nodes(nodes: &[TraceNode], fraction: f64) -> Vec<TraceNode> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return nodes.to_vec();
    }
    let class = |n: &TraceNode| (n.model.clone(), n.gpu, n.cpu_milli, n.memory_mib);
    let mut sizes: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    for node in nodes {
        *sizes.entry(class(node)).or_default() += 1;
    }
    let mut kept: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    nodes
        .iter()
        .filter(|node| {
            let key = class(node);
            // At most a few thousand nodes per class: exact in f64.
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let quota = ((sizes[&key] as f64 * fraction).round() as usize).max(1);
            let taken = kept.entry(key).or_default();
            *taken += 1;
            *taken <= quota
        })
        .cloned()
        .collect()
}

pub fn fleet_specs(nodes: &[TraceNode]) -> Vec<NodeSpec> {
    nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeSpec {
            name: n.sn.clone(),
            region: "trace".into(),
            zone: "trace-a".into(),
            rack: format!("rack-{:04}", i / TRACE_RACK_NODES),
            nvlink_domain: n.sn.clone(),
            cpu_milli: n.cpu_milli,
            memory_mib: n.memory_mib,
            state: NodeState::Active,
            reliability: None,
            gpus: (0..n.gpu)
                .map(|_| GpuSpec {
                    model: n.model.clone(),
                    memory_mib: model_memory_mib(&n.model),
                    health: Health::Ok,
                    mode: GpuMode::Shared,
                })
                .collect(),
        })
        .collect()
}

/// The request a trace pod makes: no GPU → CPU only; one GPU below 1000 milli → a
/// fraction; otherwise whole GPUs on one node (a pod runs on one node), with the pod's
/// CPU and memory spread evenly over its GPUs (rounded up).
pub fn pod_request(fleet: &Fleet, pod: &TracePod) -> Request {
    let names = pod.models();
    let models = if names.is_empty() {
        ModelSet::ANY
    } else {
        fleet.model_set(names)
    };
    let shape = if pod.num_gpu == 0 || pod.gpu_milli == 0 {
        Shape::Cpu {
            cpu_milli: pod.cpu_milli,
            memory_mib: pod.memory_mib,
        }
    } else if pod.num_gpu == 1 && pod.gpu_milli < MILLI_PER_GPU {
        Shape::Fractional {
            milli_gpu: pod.gpu_milli,
            gpu_memory_mib: 0,
            models,
            cpu_milli: pod.cpu_milli,
            memory_mib: pod.memory_mib,
        }
    } else {
        Shape::WholeGpus {
            count: pod.num_gpu,
            models,
            topology: Topology::required(TopologyLevel::Node),
            cpu_milli_per_gpu: pod.cpu_milli.div_ceil(pod.num_gpu),
            memory_mib_per_gpu: pod.memory_mib.div_ceil(u64::from(pod.num_gpu)),
        }
    };
    Request::new(TenantKey(0), shape)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_scaled_fleet_keeps_the_mix_of_node_classes() {
        let node = |sn: usize, model: &str, gpu: u32| TraceNode {
            sn: format!("n{sn}"),
            cpu_milli: 96_000,
            memory_mib: 393_216,
            gpu,
            model: model.to_owned(),
        };
        let mut nodes: Vec<TraceNode> = (0..40).map(|i| node(i, "G2", 8)).collect();
        nodes.extend((40..50).map(|i| node(i, "T4", 2)));
        nodes.push(node(50, "A10", 1));
        let half = scale_nodes(&nodes, 0.5);
        let count =
            |list: &[TraceNode], model: &str| list.iter().filter(|n| n.model == model).count();
        assert_eq!(
            (count(&half, "G2"), count(&half, "T4"), count(&half, "A10")),
            (20, 5, 1)
        );
        assert_eq!(half[0].sn, "n0", "file order");
        assert_eq!(scale_nodes(&nodes, 1.0), nodes);
        assert_eq!(
            scale_nodes(&nodes, 0.01).len(),
            3,
            "one of each class at least"
        );
    }

    use super::*;

    #[test]
    fn a_pod_list_without_spec_and_time_columns_parses() {
        let csv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,12000,16384,1,1000\np1,6000,12288,1,460\n";
        let pods = read_pods(csv.as_bytes()).unwrap();
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[1].gpu_milli, 460);
        assert!(pods[0].creation_time.is_none());
        assert!(pods[0].models().is_empty());
    }

    #[test]
    fn a_full_pod_row_with_empty_spec_and_scheduled_time_parses() {
        let csv = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
                   p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n\
                   p1,6000,12288,2,1000,V100M32|T4,LS,Pending,5,9,\n";
        let pods = read_pods(csv.as_bytes()).unwrap();
        assert_eq!(pods[0].deletion_time, Some(12_537_496));
        assert_eq!(pods[1].scheduled_time, None);
        assert_eq!(pods[1].models(), ["V100M32", "T4"]);
    }

    #[test]
    fn trace_nodes_become_racks_of_shared_gpus() {
        let csv = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n";
        let specs = fleet_specs(&read_nodes(csv.as_bytes()).unwrap());
        assert_eq!(specs[0].gpus.len(), 2);
        assert_eq!(specs[0].gpus[0].mode, GpuMode::Shared);
    }
}
