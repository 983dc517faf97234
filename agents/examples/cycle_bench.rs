//! The agent's sampling-cycle benchmark: the simulated host of 8 GPUs × 64 processes,
//! one cycle per simulated second, a 10 s window spooled (fsync) every 10 cycles.
//! Reports CPU time per cycle of this thread (from `/proc/thread-self/schedstat`), and
//! the same cycle without the spool as a baseline, measured in the same run.
//!
//! `cargo run --release -p neocloud-agent --example cycle_bench -- [cycles]`

use chrono::{DateTime, Duration};
use neocloud_agent::attribution::AttributionConfig;
use neocloud_agent::sampler::Sampler;
use neocloud_agent::source::sim::{SimProfile, SimSource};
use neocloud_agent::spool::{Spool, SpoolLimits};
use neocloud_schema::gpu::GpuModel;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn run(cycles: i64, spool: Option<&mut Spool>) -> f64 {
    let profile = SimProfile::uniform("bench-8x64", GpuModel::H100, 8, 64);
    let sim = SimSource::new(profile, 1).unwrap_or_else(|e| panic!("{e}"));
    let mut sampler = Sampler::new(sim, AttributionConfig::default(), Duration::seconds(10));
    let t0 = 1_800_000_000;
    // Warm up: processes started, caches filled.
    for s in 0..20 {
        let _ = sampler.cycle(DateTime::from_timestamp(t0 + s, 0).unwrap_or_default());
    }
    let mut spool = spool;
    let start = thread_cpu_ns();
    for s in 20..20 + cycles {
        let closed = sampler
            .cycle(DateTime::from_timestamp(t0 + s, 0).unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        if let (Some(w), Some(spool)) = (closed, spool.as_deref_mut()) {
            spool.append(w).unwrap_or_else(|e| panic!("{e}"));
            // Ship-and-ack stands in for the server: number the head, then drop it.
            if let Some(b) = spool.head().unwrap_or_else(|e| panic!("{e}")) {
                spool.ack(b.seq).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
    let (devices, processes) = sampler.last_counts();
    assert_eq!((devices, processes), (8, 512));
    (thread_cpu_ns() - start) as f64 / cycles as f64
}

/// Bytes of spool per hour of usage: 10 s windows as written, and folded as far as the
/// contract allows (what a full spool converges to).
fn spool_bytes_per_hour() -> (f64, f64, i64) {
    let profile = SimProfile::uniform("bench-8x64", GpuModel::H100, 8, 64);
    let sim = SimSource::new(profile, 2).unwrap_or_else(|e| panic!("{e}"));
    let mut sampler = Sampler::new(sim, AttributionConfig::default(), Duration::seconds(10));
    let mut windows = Vec::new();
    for s in 0..=3600 {
        let at = DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default();
        windows.extend(sampler.cycle(at).unwrap_or_else(|e| panic!("{e}")));
    }
    let size = |w: &neocloud_agent::window::ClosedWindow| {
        serde_json::to_vec(&w.devices).map_or(0, |v| v.len()) as f64 + 200.0
    };
    let unfolded: f64 = windows.iter().map(size).sum();
    let mut folded = Vec::new();
    let mut acc: Option<neocloud_agent::window::ClosedWindow> = None;
    let mut longest = 0;
    for w in windows {
        acc = Some(match acc {
            None => w,
            Some(a) => match neocloud_agent::window::fold(&a, &w) {
                Some(m) => m,
                None => {
                    longest = longest.max(a.window.duration().num_seconds());
                    folded.push(a);
                    w
                }
            },
        });
    }
    if let Some(a) = acc {
        longest = longest.max(a.window.duration().num_seconds());
        folded.push(a);
    }
    (unfolded, folded.iter().map(size).sum(), longest)
}

fn main() {
    let cycles: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(600);
    let dir = std::env::temp_dir().join(format!("cycle-bench-{}", std::process::id()));
    let (mut spool, _) =
        Spool::open(&dir, "bench-8x64", SpoolLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    let baseline = run(cycles, None);
    let full = run(cycles, Some(&mut spool));
    let _ = std::fs::remove_dir_all(&dir);
    println!("cycles per run:                      {cycles}");
    println!(
        "sample only (baseline), CPU/cycle:   {:.3} ms",
        baseline / 1e6
    );
    println!("sample + spool (fsync), CPU/cycle:   {:.3} ms", full / 1e6);
    println!(
        "share of one core at 1 Hz:           {:.3} %",
        full / 1e9 * 100.0
    );
    let peak_after_cycles = peak_rss_kib();
    let (unfolded, folded, longest) = spool_bytes_per_hour();
    println!(
        "spool bytes per hour, 10 s windows:  {:.0} KiB",
        unfolded / 1024.0
    );
    println!(
        "spool bytes per hour, folded:        {:.0} KiB (longest folded window {longest} s)",
        folded / 1024.0
    );
    println!(
        "peak RSS after the cycle runs:       {:.1} MiB",
        peak_after_cycles as f64 / 1024.0
    );
}
