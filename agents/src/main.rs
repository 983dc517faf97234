//! `neocloud-agent`: the host agent's command line.
//!
//! - `neocloud-agent run --server URL --token TOKEN [--simulate [--seed N] [--sim-profile
//!   FILE]] [--spool DIR] [--interval S]`: sample, spool and ship until SIGINT/SIGTERM.
//! - `neocloud-agent probe [--simulate] [--hardware]`: one sample (two cycles a second
//!   apart) printed as the ingest batch it would ship, or as the hardware report it would
//!   send, no server needed.

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

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use neocloud_agent::agent::{ASSIGNMENTS_PERIOD, AgentConfig, run, watch_assignments};
use neocloud_agent::attribution::AttributionConfig;
use neocloud_agent::metrics::{self, AgentMetrics, Health};
use neocloud_agent::sampler::Sampler;
use neocloud_agent::shipper::nats::{NatsShipper, credentials};
use neocloud_agent::shipper::{Backoff, Compression, HttpShipper, ShipperError, Transport};
use neocloud_agent::source::nvml::NvmlSource;
use neocloud_agent::source::sim::{SimProfile, SimSource};
use neocloud_agent::source::{GpuSource, SourceError};
use neocloud_agent::spool::SpoolLimits;
use neocloud_schema::agent_api::{HardwareReport, Inventory};
use neocloud_schema::ingest::{Batch, WIRE_VERSION};
use tokio::sync::watch;

#[derive(Parser)]
#[command(name = "neocloud-agent", version, about = "neocloud's GPU host agent")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sample, spool and ship until stopped.
    Run(Box<RunArgs>),
    /// Print one sample as an ingest batch (JSON) and exit.
    Probe(ProbeArgs),
}

#[derive(Args)]
struct ProbeArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Print the hardware report instead (what `POST /v1/agents/hardware` would send:
    /// each GPU's name, memory, MIG mode, NVLink links and NVLink fabric).
    #[arg(long)]
    hardware: bool,
}

#[derive(Args, Clone)]
struct SourceArgs {
    /// Simulate the GPUs instead of asking NVML.
    #[arg(long)]
    simulate: bool,
    /// Seed of the simulation (same seed, same host).
    #[arg(long, default_value_t = 1, requires = "simulate")]
    seed: u64,
    /// A simulated host as JSON (see docs/agent.md); default: the server's inventory of
    /// this node, or a mixed 8-GPU host without a server.
    #[arg(long, requires = "simulate")]
    sim_profile: Option<PathBuf>,
    /// Write the simulation's ground truth (JSON lines, per allocation per second).
    #[arg(long, requires = "simulate")]
    truth_out: Option<PathBuf>,
    /// The registered hostname; default: the server's inventory, else this host's name.
    #[arg(long, env = "NEOCLOUD_AGENT_ID")]
    agent_id: Option<String>,
}

#[derive(Args)]
struct RunArgs {
    /// Base URL of the neocloud api (`http://127.0.0.1:8080`).
    #[arg(long, env = "NEOCLOUD_AGENT_SERVER")]
    server: Option<String>,
    /// The node's agent token (`nca_…`).
    #[arg(long, env = "NEOCLOUD_AGENT_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(flatten)]
    source: SourceArgs,
    /// Spool directory (crash-safe queue of unsent batches).
    #[arg(long, default_value = "/var/lib/neocloud-agent/spool")]
    spool: PathBuf,
    /// Seconds per batch window (fractions allowed; at most 3600).
    #[arg(long, default_value_t = 10.0)]
    interval: f64,
    /// Milliseconds between sampling cycles (at most the window).
    #[arg(long, default_value_t = 1000)]
    sample_interval_ms: u64,
    /// Spool size limit in MiB; beyond it unsent windows are folded together.
    #[arg(long, default_value_t = 256)]
    spool_max_mib: u64,
    /// Request body compression.
    #[arg(long, value_enum, default_value_t = Compression::Gzip)]
    compression: Compression,
    /// How batches are shipped: `http` (`POST /v1/ingest`) or `nats` (JetStream, stream
    /// `USAGE`); inventory and assignments come from --server either way.
    #[arg(long, value_enum, default_value_t = TransportKind::Http)]
    transport: TransportKind,
    /// NATS server URL for `--transport nats` (`nats://127.0.0.1:4222`).
    #[arg(long, env = "NEOCLOUD_AGENT_NATS_URL")]
    nats_url: Option<String>,
    /// The node's NATS credentials file (`registerNode`'s `natsCredentials`).
    #[arg(long, env = "NEOCLOUD_AGENT_NATS_CREDS")]
    nats_creds: Option<PathBuf>,
    /// Where `/metrics` and `/healthz` are served; `off` to disable.
    #[arg(long, default_value = "127.0.0.1:9464")]
    metrics_listen: String,
    /// A cgroup path segment `<prefix><allocation uuid>` names a process's allocation.
    #[arg(long, default_value = "neocloud-")]
    cgroup_prefix: String,
    /// Environment variables of GPU processes copied into labels.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "NEOCLOUD_PROJECT,NEOCLOUD_JOB"
    )]
    label_env: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TransportKind {
    Http,
    Nats,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

enum Source {
    Sim(Box<SimSource>),
    Nvml(NvmlSource),
}

impl GpuSource for Source {
    fn kind(&self) -> &'static str {
        match self {
            Source::Sim(s) => s.kind(),
            Source::Nvml(s) => s.kind(),
        }
    }
    fn sample(
        &mut self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<neocloud_agent::Snapshot, SourceError> {
        match self {
            Source::Sim(s) => s.sample(now),
            Source::Nvml(s) => s.sample(now),
        }
    }
    fn process_table(&self) -> &dyn neocloud_agent::attribution::ProcessTable {
        match self {
            Source::Sim(s) => s.process_table(),
            Source::Nvml(s) => s.process_table(),
        }
    }
    fn apply_assignments(&mut self, assignments: &neocloud_schema::agent_api::Assignments) {
        match self {
            Source::Sim(s) => s.apply_assignments(assignments),
            Source::Nvml(s) => s.apply_assignments(assignments),
        }
    }
}

/// What the source needs, decided before the sampling thread starts.
enum SourcePlan {
    Sim {
        profile: SimProfile,
        seed: u64,
        truth_out: Option<PathBuf>,
    },
    Nvml,
}

impl SourcePlan {
    fn build(self) -> Result<Source, SourceError> {
        match self {
            SourcePlan::Sim {
                profile,
                seed,
                truth_out,
            } => {
                let mut sim = SimSource::new(profile, seed)?;
                if let Some(path) = truth_out {
                    sim.truth
                        .write_to(&path)
                        .map_err(|e| SourceError::SimProfile {
                            reason: format!("cannot write the truth file {}: {e}", path.display()),
                        })?;
                }
                Ok(Source::Sim(Box::new(sim)))
            }
            SourcePlan::Nvml => NvmlSource::open().map(Source::Nvml),
        }
    }
}

fn plan(
    args: &SourceArgs,
    agent_id: &str,
    inventory: Option<&Inventory>,
) -> anyhow::Result<SourcePlan> {
    if !args.simulate {
        return Ok(SourcePlan::Nvml);
    }
    let profile = match (&args.sim_profile, inventory) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the simulation profile {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("parsing the simulation profile {}", path.display()))?
        }
        (None, Some(inv)) => SimProfile::from_inventory(inv)?,
        (None, None) => SimProfile::mixed_host(agent_id),
    };
    Ok(SourcePlan::Sim {
        profile,
        seed: args.seed,
        truth_out: args.truth_out.clone(),
    })
}

async fn run_command(args: RunArgs) -> anyhow::Result<()> {
    if !(args.interval > 0.0 && args.interval <= 3600.0) {
        bail!("--interval must be more than 0 and at most 3600 seconds");
    }
    let shipper = shipper(&args)?;
    // A simulated host without a profile file is the node's inventory, and so is the NATS
    // subject: wait for it (the server may still be starting). A real host shipping over
    // HTTP samples at once and falls back to --agent-id or the host name.
    let needs_inventory = (args.source.simulate && args.source.sim_profile.is_none())
        || args.transport == TransportKind::Nats;
    let inventory = match &shipper {
        Some(s) => fetch_inventory(s, needs_inventory).await?,
        None => None,
    };
    let transport = transport(&args, shipper.clone(), inventory.as_ref()).await?;
    let agent_id = args
        .source
        .agent_id
        .clone()
        .or_else(|| inventory.as_ref().map(|i| i.hostname.clone()))
        .unwrap_or_else(hostname);
    let plan = plan(&args.source, &agent_id, inventory.as_ref())?;
    let mut config = agent_config(&args, &agent_id);

    let (tx, rx) = tokio::sync::watch::channel(false);
    if let Some(shipper) = &shipper {
        config.assignments = Some(watch_assignments(shipper, ASSIGNMENTS_PERIOD, rx.clone()).await);
    }

    let metrics = AgentMetrics::new()?;
    let health = Arc::new(Health::default());
    if args.metrics_listen != "off" {
        serve_metrics(&args, &metrics, &health).await?;
    }
    tokio::spawn(stop_on_signal(tx));
    if let Some(shipper) = &shipper {
        let (seen_tx, seen) = tokio::sync::watch::channel(None);
        config.hardware = Some(seen_tx);
        tokio::spawn(report_hardware(shipper.clone(), seen, rx.clone()));
    }
    if let (Some(Transport::Nats(_)), Some(shipper), Some(path)) =
        (&transport, &shipper, &args.nats_creds)
    {
        tokio::spawn(credentials::keep_fresh(
            shipper.clone(),
            path.clone(),
            rx.clone(),
        ));
    }
    let report = run(config, move || plan.build(), transport, metrics, health, rx).await?;
    tracing::info!(?report, "Stopped.");
    Ok(())
}

/// How often the hardware is reported again though nothing changed (the server may have
/// lost or re-registered the node), and how soon a failed report is retried.
const HARDWARE_REFRESH: Duration = Duration::from_secs(3600);
const HARDWARE_RETRY: Duration = Duration::from_secs(60);

/// Tells the server what this host's GPUs are (`POST /v1/agents/hardware`): after the
/// first sampling cycle, whenever the sampler sees other hardware (a GPU lost, MIG
/// turned on, an NVLink link down) and hourly. A provider's node takes allocations only
/// once they match its registration, and any node whose hardware differs stops taking
/// them. Logged, never fatal: sampling goes on either way.
async fn report_hardware(
    shipper: HttpShipper,
    mut seen: watch::Receiver<Option<HardwareReport>>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let latest = seen.borrow_and_update().clone();
        let wait = match latest {
            Some(report) if !send_hardware(&shipper, &report).await => HARDWARE_RETRY,
            _ => HARDWARE_REFRESH,
        };
        tokio::select! {
            changed = seen.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One report and the server's verdict, logged; false when it did not get through.
async fn send_hardware(shipper: &HttpShipper, report: &HardwareReport) -> bool {
    match shipper.report_hardware(report).await {
        Ok(Some(v)) if v.reason.is_some() => tracing::warn!(
            verification = %v.verification,
            reason = v.reason.as_deref().unwrap_or_default(),
            "The server finds this host's hardware differs from its registration: it takes no new allocations."
        ),
        Ok(Some(v)) => {
            tracing::info!(verification = %v.verification, gpus = report.gpus.len(), "Hardware reported.");
        }
        Ok(None) => tracing::info!("The server does not check hardware (no /v1/agents/hardware)."),
        Err(e) => {
            tracing::warn!(error = %e, "Could not report the hardware.");
            return false;
        }
    }
    true
}

/// The HTTP shipper, when both --server and --token are given.
fn shipper(args: &RunArgs) -> anyhow::Result<Option<HttpShipper>> {
    match (&args.server, &args.token) {
        (Some(server), Some(token)) => Ok(Some(HttpShipper::new(server, token, args.compression)?)),
        (None, None) => {
            tracing::warn!(
                "No --server and --token: batches accumulate in the spool and are not shipped."
            );
            Ok(None)
        }
        _ => bail!("--server and --token go together"),
    }
}

/// The shipper for --transport: the HTTP one, or a JetStream publisher to the subject of
/// the node the inventory names.
async fn transport(
    args: &RunArgs,
    http: Option<HttpShipper>,
    inventory: Option<&Inventory>,
) -> anyhow::Result<Option<Transport>> {
    let Some(http) = http else { return Ok(None) };
    if args.transport == TransportKind::Http {
        return Ok(Some(Transport::Http(http)));
    }
    let url = args
        .nats_url
        .as_deref()
        .context("--transport nats needs --nats-url")?;
    let inventory = inventory.context("the server sent no inventory for this node")?;
    let node = inventory
        .node_id
        .context("the server's inventory names no node id: it predates NATS ingest")?;
    let nats = NatsShipper::connect(
        url,
        args.nats_creds.as_deref(),
        &inventory.region,
        node,
        args.compression,
    )
    .await
    .context("connecting to NATS")?;
    tracing::info!(subject = nats.subject(), "Shipping batches over JetStream.");
    Ok(Some(Transport::Nats(nats)))
}

/// This node's inventory from the server; retried until it comes when the simulated
/// host `needs` it, else given up at the first failure.
async fn fetch_inventory(shipper: &HttpShipper, needs: bool) -> anyhow::Result<Option<Inventory>> {
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30), 1);
    loop {
        match shipper.inventory().await {
            Ok(inv) => return Ok(inv),
            Err(e @ ShipperError::Unauthorized { .. }) => {
                return Err(e).context("the server refused the agent token; check --token");
            }
            Err(e) if needs => {
                let wait = backoff.next_delay();
                // Saturates: a delay beyond u64 milliseconds is logged as the largest.
                let retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(error = %e, retry_in_ms, "Could not fetch this node's inventory; the simulated host needs it.");
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "Could not fetch this node's inventory; using --agent-id or the host name.");
                return Ok(None);
            }
        }
    }
}

/// The agent's settings from the command line (assignments are added once shipping).
fn agent_config(args: &RunArgs, agent_id: &str) -> AgentConfig {
    let interval = Duration::from_secs_f64(args.interval);
    let mut config = AgentConfig::new(agent_id, &args.spool);
    config.interval = interval;
    config.sample_interval = Duration::from_millis(args.sample_interval_ms.max(1)).min(interval);
    config.spool_limits = SpoolLimits {
        max_bytes: args.spool_max_mib.saturating_mul(1024 * 1024),
        ..SpoolLimits::default()
    };
    config.attribution = AttributionConfig {
        cgroup_prefix: args.cgroup_prefix.clone(),
        label_env_allow: args.label_env.clone(),
    };
    config
}

/// Serves /metrics and /healthz on --metrics-listen.
async fn serve_metrics(
    args: &RunArgs,
    metrics: &AgentMetrics,
    health: &Arc<Health>,
) -> anyhow::Result<()> {
    let addr: SocketAddr = args
        .metrics_listen
        .parse()
        .with_context(|| format!("--metrics-listen {}", args.metrics_listen))?;
    let listener = metrics::bind(addr)
        .await
        .with_context(|| format!("binding the metrics endpoint on {addr}"))?;
    tracing::info!(addr = %listener.local_addr()?, "Serving /metrics and /healthz.");
    let kind = if args.source.simulate { "sim" } else { "nvml" };
    tokio::spawn(metrics::serve(
        listener,
        metrics.clone(),
        health.clone(),
        kind,
    ));
    Ok(())
}

/// Asks the agent to stop on Ctrl-C or SIGTERM.
async fn stop_on_signal(tx: tokio::sync::watch::Sender<bool>) {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("Stopping: closing the open window into the spool.");
    let _ = tx.send(true);
}

fn probe(args: ProbeArgs) -> anyhow::Result<()> {
    let agent_id = args.source.agent_id.clone().unwrap_or_else(hostname);
    let source = plan(&args.source, &agent_id, None)?.build()?;
    let mut sampler = Sampler::new(
        source,
        AttributionConfig::default(),
        chrono::Duration::hours(1),
    );
    let start = chrono::Utc::now();
    let start = chrono::DateTime::from_timestamp(start.timestamp(), 0).unwrap_or(start);
    sampler.cycle(start)?;
    let next = start + chrono::Duration::seconds(1);
    let wait = (next - chrono::Utc::now()).to_std().unwrap_or_default();
    std::thread::sleep(wait);
    sampler.cycle(next)?;
    if args.hardware {
        println!("{}", serde_json::to_string_pretty(sampler.hardware())?);
        return Ok(());
    }
    let window = sampler.flush().context("the probe covered no time")?;
    let batch = Batch {
        version: WIRE_VERSION,
        agent_id,
        boot_id: uuid::Uuid::nil(),
        seq: 1,
        window: window.window,
        devices: window.devices,
    };
    println!("{}", serde_json::to_string_pretty(&batch)?);
    Ok(())
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Probe(args) => probe(args),
        Command::Run(args) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
            .block_on(run_command(*args)),
    }
}
