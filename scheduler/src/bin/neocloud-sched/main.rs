//! `neocloud-sched`: replays workload traces against the placement policies, and times
//! placement decisions on a synthetic fleet. The only part of the crate that reads files.

// No panics on values from outside, no `as` cast where a checked conversion exists, and
// no function longer than `too-many-lines-threshold` (clippy.toml).
#![warn(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::cast_lossless,
    clippy::too_many_lines
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_lossless,
        clippy::too_many_lines
    )
)]

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use neocloud_scheduler::replay::{self, Draw, Mode, ReplayOptions, Report};
use neocloud_scheduler::trace;
use neocloud_scheduler::{Class, PolicyKind};

mod bench;

#[derive(Parser)]
#[command(
    name = "neocloud-sched",
    about = "neocloud's placement engine: trace replay and decision timing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replays a trace (Alibaba GPU trace v2023 format) under one policy.
    Replay {
        /// Node list CSV (`sn,cpu_milli,memory_mib,gpu,model`).
        #[arg(long)]
        nodes: PathBuf,
        /// Pod list CSV (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,…times]`).
        #[arg(long)]
        pods: PathBuf,
        /// topo, best-fit, first-fit, random or fgd.
        #[arg(long, default_value = "topo")]
        policy: PolicyKind,
        #[arg(long, value_enum, default_value = "timeline")]
        mode: ModeArg,
        /// Seed of the saturate draw and of the random policy.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Saturate: stop when the GPUs requested reach this multiple of the fleet's.
        #[arg(long, default_value_t = 1.2)]
        arrive: f64,
        /// Saturate: `list` (the whole pod list shuffled, then draws with replacement: the
        /// FGD paper's workload) or `sample` (draws with replacement from the start).
        #[arg(long, value_enum, default_value = "list")]
        draw: DrawArg,
        /// Timeline: divide arrival times by this to replay the same work under contention.
        #[arg(long, default_value_t = 1.0)]
        compress: f64,
        /// Replay on this share of the nodes (0 < F ≤ 1), keeping the mix of node classes,
        /// so the same work contends for a smaller fleet.
        #[arg(long, default_value_t = 1.0)]
        fleet_fraction: f64,
        /// The class every pod is placed as: on-demand (reliability breaks ties), reserved
        /// or spot.
        #[arg(long, value_enum, default_value = "on-demand")]
        class: ClassArg,
        /// Give every node a seeded reliability (90 % of nodes 9900–10000 basis points,
        /// 10 % 9000–9899) and report the mean reliability of the GPUs allocated.
        #[arg(long)]
        reliability_seed: Option<u64>,
        /// Print one JSON object on the last line.
        #[arg(long)]
        json: bool,
    },
    /// Times placement decisions on a synthetic fleet (build with --release): p50/p99 per
    /// request kind for `topo` and for a naive linear first-fit scan, plus release and
    /// sustained decisions per second.
    Bench {
        /// Nodes of the synthetic fleet (8 GPUs each).
        #[arg(long, default_value_t = 10_000)]
        nodes: usize,
        /// Decisions timed per request kind and occupancy.
        #[arg(long, default_value_t = 1000)]
        decisions: usize,
        /// Occupancies to measure at (share of GPUs allocated).
        #[arg(long, value_delimiter = ',', default_values_t = [0.5, 0.9])]
        occupancy: Vec<f64>,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum DrawArg {
    List,
    Sample,
}

#[derive(Clone, Copy, ValueEnum)]
enum ClassArg {
    OnDemand,
    Reserved,
    Spot,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    Timeline,
    Saturate,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("neocloud-sched: {e}");
            ExitCode::FAILURE
        }
    }
}

fn open(path: &PathBuf) -> Result<BufReader<File>, Box<dyn std::error::Error>> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|e| format!("{}: {e}", path.display()).into())
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        Command::Replay {
            nodes,
            pods,
            policy,
            mode,
            seed,
            arrive,
            draw,
            compress,
            fleet_fraction,
            class,
            reliability_seed,
            json,
        } => {
            let nodes = trace::read_nodes(open(&nodes)?)?;
            let pods = trace::read_pods(open(&pods)?)?;
            let opts = ReplayOptions {
                policy,
                mode: match mode {
                    ModeArg::Timeline => Mode::Timeline,
                    ModeArg::Saturate => Mode::Saturate,
                },
                seed,
                arrive,
                draw: match draw {
                    DrawArg::List => Draw::List,
                    DrawArg::Sample => Draw::Sample,
                },
                compress,
                fleet_fraction,
                class: match class {
                    ClassArg::OnDemand => Class::OnDemand,
                    ClassArg::Reserved => Class::Reserved,
                    ClassArg::Spot => Class::Spot,
                },
                reliability_seed,
            };
            let report = replay::replay(&nodes, &pods, &opts)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print_report(&report);
            }
        }
        Command::Bench {
            nodes,
            decisions,
            occupancy,
            seed,
        } => bench::run(nodes, decisions, &occupancy, seed)?,
    }
    Ok(())
}

fn print_report(r: &Report) {
    println!(
        "policy {} · mode {} · {} nodes, {} GPUs, {} pods",
        r.policy, r.mode, r.nodes, r.gpus, r.pods
    );
    println!(
        "arrivals {} · placed {} · GPUs requested {:.1}",
        r.arrivals, r.placed, r.gpus_requested
    );
    if let (Some(never), Some(mean), Some(p99), Some(ratio), Some(hours)) = (
        r.never_placed,
        r.mean_queueing_delay_s,
        r.p99_queueing_delay_s,
        r.gpu_allocation_ratio,
        r.gpu_hours_allocated,
    ) {
        println!("never placed {never} · queueing delay mean {mean:.1} s, p99 {p99:.0} s");
        println!(
            "GPU allocation ratio {:.4} · GPU-hours allocated {hours:.1}",
            ratio
        );
    }
    if let (Some(failed), Some(frag), Some(lb), Some(offline), Some(draw)) = (
        r.failed_arrivals,
        r.fragmented_gpu_share,
        r.lower_bound_unallocated_share,
        r.offline_unallocated_share,
        &r.draw,
    ) {
        println!(
            "unallocated GPU share {:.4} (lower bound {lb:.4}, offline largest-first {offline:.4}) · fragmented {frag:.4} · failed arrivals {failed} · draw {draw}",
            r.unallocated_gpu_share
        );
    }
    if let (Some(seed), Some(mean)) = (r.reliability_seed, r.allocated_gpu_reliability) {
        println!(
            "class {:?} · reliability seed {seed} · mean reliability of allocated GPUs {mean:.1} bp",
            r.class
        );
    }
}
