//! Criterion benchmarks of placement decisions on the synthetic fleet of 10,000 nodes x 8
//! GPUs (H100 SXM in 8-GPU NVLink domains, NVL72-style GB200 racks, A100/H100 in MIG
//! mode, L40S shared) at 50% and 90% occupancy: one decision per request kind, and a
//! release. Criterion reports means; `neocloud-sched bench` reports p50/p99 beside a
//! naive scan (docs/benchmarks.md). `cargo bench -p neocloud-scheduler --bench placement`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use neocloud_scheduler::AllocationKey;
use neocloud_scheduler::synthetic::{self, Kind};

const NODES: usize = 10_000;

fn placement(c: &mut Criterion) {
    for occupancy in [0.5, 0.9] {
        let mut fleet = synthetic::fleet(NODES).expect("synthetic fleet");
        synthetic::fill(&mut fleet, occupancy, 42);
        let label = format!("{:.0}%", occupancy * 100.0);
        let mut group = c.benchmark_group(format!("place/{label}"));
        group.sample_size(20);
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(2));
        for kind in Kind::ALL {
            let req = kind.request(&fleet, 1000);
            group.bench_with_input(BenchmarkId::new("topo", kind.name()), &req, |b, req| {
                b.iter(|| black_box(fleet.place(black_box(req))))
            });
        }
        group.finish();
        let mut group = c.benchmark_group(format!("release/{label}"));
        group.sample_size(20);
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(2));
        let req = Kind::OneGpu.request(&fleet, 1000);
        group.bench_function("place+commit+release 1 GPU", |b| {
            b.iter(|| {
                let p = fleet.place(&req).expect("fits");
                fleet.commit(AllocationKey(1), &p).expect("commits");
                fleet.release(AllocationKey(1)).expect("releases")
            })
        });
        group.finish();
    }
}

criterion_group!(benches, placement);
criterion_main!(benches);
