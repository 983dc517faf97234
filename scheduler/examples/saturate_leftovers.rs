//! Where a saturate replay leaves GPUs unallocated, by node model: free GPUs, free CPU and
//! memory on nodes that still have free GPU capacity. Arrivals as `--draw sample --seed
//! 42 --arrive 1.2`.
//! `cargo run --release -p neocloud-scheduler --example saturate_leftovers -- NODES PODS POLICY`

use std::collections::BTreeMap;
use std::fs::File;

use neocloud_scheduler::replay::{self, MAX_SATURATE_ARRIVALS};
use neocloud_scheduler::{AllocationKey, Policy, PolicyKind, trace};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(nodes), Some(pods), Some(policy)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err("usage: saturate_leftovers NODES PODS POLICY".into());
    };
    let nodes = trace::read_nodes(File::open(nodes)?)?;
    let pods = trace::read_pods(File::open(pods)?)?;
    let kind: PolicyKind = policy.parse()?;
    let (mut fleet, requests) = replay::trace_fleet(&nodes, &pods)?;
    let mut policy = Policy::new(kind, 43);
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let target = (1.2 * fleet.gpu_count() as f64 * 1000.0) as u64;
    let mut requested = 0;
    let mut n = 0u128;
    let mut failed: BTreeMap<String, u32> = BTreeMap::new();
    while requested < target && (n as usize) < MAX_SATURATE_ARRIVALS {
        let i = rng.random_range(0..pods.len());
        requested += pods[i].gpu_milli_total();
        n += 1;
        match fleet.place_with(&requests[i], &mut policy) {
            Ok(p) => {
                fleet.commit(AllocationKey(n), &p)?;
            }
            Err(_) => {
                let p = &pods[i];
                let kind = if p.num_gpu == 0 {
                    "cpu".to_owned()
                } else if p.gpu_milli < 1000 {
                    "frac".to_owned()
                } else {
                    format!("{}gpu", p.num_gpu)
                };
                *failed.entry(kind).or_default() += 1;
            }
        }
    }
    println!("failed by kind: {failed:?}");
    let mut by_model: BTreeMap<String, (u32, u64, u64, u64, u64)> = BTreeMap::new();
    for (id, tn) in fleet.node_ids().zip(&nodes) {
        let free = fleet.node_free(id).ok_or("node")?;
        let gpu_free: u64 = free.gpu_free_milli.iter().map(|&m| u64::from(m)).sum();
        let e = by_model
            .entry(format!("{}x{} {}c", tn.gpu, tn.model, tn.cpu_milli / 1000))
            .or_default();
        e.0 += 1;
        e.1 += u64::from(tn.gpu) * 1000;
        e.2 += gpu_free;
        if gpu_free > 0 {
            e.3 += u64::from(free.cpu_milli);
            e.4 += 1;
        }
    }
    println!(
        "node type: nodes, gpu milli, free gpu milli, free cpu on nodes with free gpu, such nodes"
    );
    for (k, v) in by_model {
        println!("{k:24} {v:?}");
    }
    Ok(())
}
