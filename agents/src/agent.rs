//! The running agent: a sampling thread (source → windows → spool) and a shipping task
//! (spool head → server → ack), sharing the spool. [`run`] is the whole agent for any
//! source and shipper; [`SimulatedAgent`] is the in-process simulated agent the demo can
//! start once per demo node.
//!
//! What each server answer does to the spooled batch (ingest v1 contract):
//! - `accepted` / `duplicate`: the batch leaves the spool.
//! - 400: poison. It is moved to `quarantine/`, logged as an error and counted; the next
//!   batch goes on (retrying it could only block everything behind it for ever).
//! - 401/403: the token is refused. Nothing is dropped; the agent reports itself
//!   degraded on `/healthz`, logs an error, and retries slowly (`auth_backoff`).
//! - 413: the batch is split by devices into two numbered batches; a single-device batch
//!   that is still too large is quarantined.
//! - 5xx, 429, network: retried with exponential backoff and jitter, without limit (the
//!   spool is the bound).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use neocloud_schema::agent_api::{Assignments, HardwareReport};
use neocloud_schema::ingest::Batch;
use tokio::sync::{Notify, watch};

use crate::attribution::AttributionConfig;
use crate::failpoint;
use crate::metrics::{AgentMetrics, Health};
use crate::sampler::Sampler;
use crate::shipper::{Backoff, Compression, HttpShipper, ShipOutcome, Shipper, ShipperError};
use crate::source::sim::{SimProfile, SimSource};
use crate::source::{GpuSource, SourceError};
use crate::spool::{Spool, SpoolError, SpoolLimits};
use crate::window::ClosedWindow;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Shipper(#[from] ShipperError),
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    #[error("the sampling thread stopped unexpectedly: {0}")]
    Sampler(String),
}

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The registered hostname (`agent_id` of every batch).
    pub agent_id: String,
    pub spool_dir: PathBuf,
    pub spool_limits: SpoolLimits,
    /// Length of a batch window.
    pub interval: Duration,
    /// Time between sampling cycles (1 s: the contract's unit of usage).
    pub sample_interval: Duration,
    pub attribution: AttributionConfig,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Wait between attempts while the server refuses the token.
    pub auth_backoff: Duration,
    /// The server's latest device assignments (see [`refresh_assignments`]); applied to
    /// the source and the attributor at the next cycle after each change.
    pub assignments: Option<watch::Receiver<Option<Assignments>>>,
    /// Where the sampling thread publishes the hardware it sees (`hardware::report` of
    /// each cycle), changed only when the hardware does.
    pub hardware: Option<watch::Sender<Option<HardwareReport>>>,
}

impl AgentConfig {
    pub fn new(agent_id: impl Into<String>, spool_dir: impl Into<PathBuf>) -> Self {
        Self {
            agent_id: agent_id.into(),
            spool_dir: spool_dir.into(),
            spool_limits: SpoolLimits::default(),
            interval: Duration::from_secs(10),
            sample_interval: Duration::from_secs(1),
            attribution: AttributionConfig::default(),
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(60),
            auth_backoff: Duration::from_secs(60),
            assignments: None,
            hardware: None,
        }
    }
}

/// What a run did, when it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    pub cycles: u64,
    pub batches_acked: u64,
    pub batches_left: usize,
}

fn lock(spool: &Mutex<Spool>) -> MutexGuard<'_, Spool> {
    // A panic while holding the lock leaves the spool's files consistent (every change
    // is atomic on disk); the in-memory index may lag, which the next open repairs.
    spool.lock().unwrap_or_else(PoisonError::into_inner)
}

fn update_gauges(spool: &Spool, metrics: &AgentMetrics) {
    // Gauges saturate: no spool holds more than `i64::MAX` batches or bytes.
    let batches = i64::try_from(spool.len()).unwrap_or(i64::MAX);
    metrics.batches_spooled.set(batches);
    metrics
        .spool_bytes
        .set(i64::try_from(spool.bytes()).unwrap_or(i64::MAX));
}

/// Windows kept in memory while the spool cannot be written (disk full, I/O error).
const MAX_PENDING_WINDOWS: usize = 360;

fn ceil_to(ms: i64, step: i64) -> i64 {
    (ms + step - 1).div_euclid(step) * step
}

fn spool_window(
    spool: &Mutex<Spool>,
    w: ClosedWindow,
    metrics: &AgentMetrics,
) -> Result<(), (ClosedWindow, SpoolError)> {
    let mut s = lock(spool);
    match s.append(w.clone()) {
        Ok(outcome) => {
            if outcome.folds > 0 {
                tracing::warn!(
                    folds = outcome.folds,
                    spool_bytes = s.bytes(),
                    batches = s.len(),
                    "Spool is full: folded unsent windows into coarser ones (same totals)."
                );
                metrics.spool_folds_total.inc_by(outcome.folds as u64);
            }
            if outcome.dropped {
                metrics.spool_dropped_windows_total.inc();
            }
            update_gauges(&s, metrics);
            Ok(())
        }
        Err(e) => Err((w, e)),
    }
}

/// The sampling loop: aligned ticks, one cycle each, windows into the spool.
fn sampling_loop<S: GpuSource>(
    mut sampler: Sampler<S>,
    config: &AgentConfig,
    spool: &Mutex<Spool>,
    notify: &Notify,
    stop: &AtomicBool,
    metrics: &AgentMetrics,
    health: &Health,
) -> u64 {
    // Saturates: an interval beyond i64 milliseconds is as good as never.
    let step_ms = i64::try_from(config.sample_interval.as_millis())
        .unwrap_or(i64::MAX)
        .max(1);
    let mut next = ceil_to(Utc::now().timestamp_millis(), step_ms);
    let mut pending: Vec<ClosedWindow> = Vec::new();
    let mut cycles = 0u64;
    let mut assignments = config.assignments.clone();
    if let Some(rx) = &mut assignments
        && let Some(a) = rx.borrow_and_update().clone()
    {
        sampler.apply_assignments(&a);
    }
    loop {
        if !wait_for_tick(next, stop) {
            if let Some(w) = sampler.flush() {
                pending.push(w);
            }
            for w in pending.drain(..) {
                if let Err((_, e)) = spool_window(spool, w, metrics) {
                    tracing::error!(error = %e, "Could not spool the last window at shutdown.");
                }
            }
            notify.notify_one();
            return cycles;
        }
        if let Some(rx) = &mut assignments
            && rx.has_changed().unwrap_or(false)
            && let Some(a) = rx.borrow_and_update().clone()
        {
            tracing::info!(
                allocations = a.assignments.len(),
                "Device assignments changed."
            );
            sampler.apply_assignments(&a);
        }
        let at = DateTime::from_timestamp_millis(next).unwrap_or_else(Utc::now);
        if sample(&mut sampler, at, metrics, health, &mut pending) {
            cycles += 1;
            if let Some(tx) = &config.hardware {
                publish_hardware(tx, sampler.hardware());
            }
        }
        spool_pending(&mut pending, spool, notify, metrics);
        next += step_ms;
        let now = Utc::now().timestamp_millis();
        if now > next + step_ms {
            // Fell behind (suspended, overloaded): skip the missed ticks.
            next = ceil_to(now, step_ms);
        }
    }
}

/// Hands `seen` to whoever reports the hardware, when it differs from what it last got.
fn publish_hardware(tx: &watch::Sender<Option<HardwareReport>>, seen: &HardwareReport) {
    tx.send_if_modified(|last| {
        let changed = last.as_ref() != Some(seen);
        if changed {
            *last = Some(seen.clone());
        }
        changed
    });
}

/// Waits for the tick at `next` (Unix milliseconds), checking for shutdown at least every
/// 50 ms; false when asked to stop.
fn wait_for_tick(next: i64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Utc::now().timestamp_millis();
        if now >= next {
            return true;
        }
        // Positive here: the tick is still ahead.
        let ms = u64::try_from((next - now).min(50)).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// One sampling cycle at `at`, the window it closed (if any) added to `pending`; false
/// when the cycle failed.
fn sample<S: GpuSource>(
    sampler: &mut Sampler<S>,
    at: DateTime<Utc>,
    metrics: &AgentMetrics,
    health: &Health,
    pending: &mut Vec<ClosedWindow>,
) -> bool {
    match sampler.cycle(at) {
        Ok(closed) => {
            metrics.samples_total.inc();
            health.source_failing.store(false, Ordering::Relaxed);
            health
                .last_sample_unix
                .store(at.timestamp(), Ordering::Relaxed);
            pending.extend(closed);
            true
        }
        Err(e) => {
            metrics.sample_errors_total.inc();
            health.source_failing.store(true, Ordering::Relaxed);
            tracing::error!(error = %e, "Sampling cycle failed.");
            false
        }
    }
}

/// Writes the pending windows to the spool in order, keeping in memory what it cannot
/// write, up to [`MAX_PENDING_WINDOWS`].
fn spool_pending(
    pending: &mut Vec<ClosedWindow>,
    spool: &Mutex<Spool>,
    notify: &Notify,
    metrics: &AgentMetrics,
) {
    while let Some(w) = pending.first().cloned() {
        match spool_window(spool, w, metrics) {
            Ok(()) => {
                pending.remove(0);
                notify.notify_one();
            }
            Err((_, e)) => {
                tracing::error!(error = %e, pending = pending.len(), "Could not write to the spool; keeping the window in memory.");
                break;
            }
        }
    }
    if pending.len() > MAX_PENDING_WINDOWS {
        tracing::error!("The spool has been unwritable for too long: dropping the oldest window.");
        metrics.spool_dropped_windows_total.inc();
        pending.remove(0);
    }
}

async fn sleep_or_stop(d: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => false,
        _ = shutdown.wait_for(|s| *s) => true,
    }
}

/// The shipping loop: sends the spool's head until acknowledged, in order.
async fn shipping_loop<Sh: Shipper>(
    shipper: Sh,
    config: &AgentConfig,
    spool: Arc<Mutex<Spool>>,
    notify: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
    metrics: AgentMetrics,
    health: Arc<Health>,
) -> u64 {
    // The low half of the boot id: enough to keep agents' retries apart.
    let seed = lock(&spool).boot_id().as_u64_pair().1;
    let mut shipping = Shipping {
        config,
        spool,
        metrics,
        health,
        backoff: Backoff::new(config.backoff_base, config.backoff_max, seed),
        acked: 0,
    };
    loop {
        if *shutdown.borrow() {
            return shipping.acked;
        }
        let batch = match shipping.head() {
            Ok(Some(b)) => b,
            Ok(None) => {
                tokio::select! {
                    _ = notify.notified() => continue,
                    _ = shutdown.wait_for(|s| *s) => return shipping.acked,
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "Could not read the spool head.");
                if sleep_or_stop(shipping.backoff.next_delay(), &mut shutdown).await {
                    return shipping.acked;
                }
                continue;
            }
        };
        let seq = batch.seq;
        let outcome = tokio::select! {
            o = shipper.ship(&batch) => o,
            _ = shutdown.wait_for(|s| *s) => return shipping.acked,
        };
        if let Some(d) = shipping.settle(seq, outcome)
            && sleep_or_stop(d, &mut shutdown).await
        {
            return shipping.acked;
        }
    }
}

/// What the shipping loop keeps between batches.
struct Shipping<'a> {
    config: &'a AgentConfig,
    spool: Arc<Mutex<Spool>>,
    metrics: AgentMetrics,
    health: Arc<Health>,
    backoff: Backoff,
    acked: u64,
}

impl Shipping<'_> {
    /// The spool's head, counting the batches found corrupt (and quarantined) on the way.
    fn head(&self) -> Result<Option<Batch>, SpoolError> {
        let mut s = lock(&self.spool);
        let before = s.quarantined_at_run();
        let head = s.head();
        let newly = s.quarantined_at_run() - before;
        if newly > 0 {
            self.metrics.spool_quarantined_total.inc_by(newly);
            update_gauges(&s, &self.metrics);
        }
        head
    }

    fn count_error(&self, kind: &str) {
        self.metrics
            .ship_errors_total
            .with_label_values(&[kind])
            .inc();
    }

    /// Acts on the server's answer to batch `seq`; returns how long to wait before the
    /// next attempt, if at all.
    fn settle(&mut self, seq: u64, outcome: ShipOutcome) -> Option<Duration> {
        match outcome {
            ShipOutcome::Accepted => self.acknowledged(seq, "accepted"),
            ShipOutcome::Duplicate => self.acknowledged(seq, "duplicate"),
            ShipOutcome::Invalid { message } => self.quarantine_invalid(seq, &message),
            ShipOutcome::Unauthorized { status, message } => {
                self.count_error("unauthorized");
                self.health.auth_rejected.store(true, Ordering::Relaxed);
                tracing::error!(status, %message, retry_in_s = self.config.auth_backoff.as_secs(), "The server refused the agent token: shipping paused, usage stays in the spool. Check --token and the node's registration.");
                return Some(self.config.auth_backoff);
            }
            ShipOutcome::TooLarge => self.split_too_large(seq),
            ShipOutcome::Retry { reason } => {
                let label = if reason.starts_with("status") {
                    "server"
                } else {
                    "network"
                };
                self.count_error(label);
                let d = self.backoff.next_delay();
                // Saturates: a delay beyond u64 milliseconds is logged as the largest.
                let retry_in_ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(seq, %reason, attempt = self.backoff.attempts(), retry_in_ms, "Shipping failed; will retry.");
                return Some(d);
            }
        }
        None
    }

    /// The server has batch `seq`: remove it from the spool and start afresh.
    fn acknowledged(&mut self, seq: u64, status: &str) {
        failpoint::hit("ship.before_ack");
        let mut s = lock(&self.spool);
        if let Err(e) = s.ack(seq) {
            tracing::error!(seq, error = %e, "Could not remove an acknowledged batch.");
        }
        update_gauges(&s, &self.metrics);
        drop(s);
        self.acked += 1;
        self.metrics
            .batches_acked_total
            .with_label_values(&[status])
            .inc();
        self.metrics
            .last_ack_timestamp_seconds
            .set(Utc::now().timestamp_millis() as f64 / 1000.0);
        self.health.auth_rejected.store(false, Ordering::Relaxed);
        self.backoff.reset();
        tracing::debug!(seq, status, "Batch acknowledged.");
    }

    /// The server called batch `seq` invalid: set it aside, never retried.
    fn quarantine_invalid(&self, seq: u64, message: &str) {
        self.count_error("invalid");
        let mut s = lock(&self.spool);
        match s.quarantine_head(seq) {
            Ok(path) => {
                self.metrics.spool_quarantined_total.inc();
                tracing::error!(seq, %message, path = %path.display(), "The server called a batch invalid: quarantined, not retried. This is a bug in the agent or the server; the usage in it is not billed until it is fixed.");
            }
            Err(e) => {
                tracing::error!(seq, error = %e, "Could not quarantine an invalid batch.")
            }
        }
        update_gauges(&s, &self.metrics);
    }

    /// Batch `seq` is too large for the server: split it in two, or, if it holds a
    /// single device, set it aside.
    fn split_too_large(&self, seq: u64) {
        self.count_error("too_large");
        let mut s = lock(&self.spool);
        match s.split_head(seq) {
            Ok(true) => {
                tracing::warn!(seq, "The server found a batch too large: split it in two.")
            }
            Ok(false) => {
                if s.quarantine_head(seq).is_ok() {
                    self.metrics.spool_quarantined_total.inc();
                }
                tracing::error!(
                    seq,
                    "A single-device batch is too large for the server: quarantined."
                );
            }
            Err(e) => {
                tracing::error!(seq, error = %e, "Could not split a too-large batch.")
            }
        }
        update_gauges(&s, &self.metrics);
    }
}

/// Runs the agent until `shutdown` turns true: the source is created on the sampling
/// thread by `make_source`; without a shipper, batches only accumulate in the spool.
pub async fn run<S, F, Sh>(
    config: AgentConfig,
    make_source: F,
    shipper: Option<Sh>,
    metrics: AgentMetrics,
    health: Arc<Health>,
    shutdown: watch::Receiver<bool>,
) -> Result<RunReport, AgentError>
where
    S: GpuSource + 'static,
    F: FnOnce() -> Result<S, SourceError> + Send + 'static,
    Sh: Shipper + 'static,
{
    let spool = Arc::new(Mutex::new(open_spool(&config, &metrics)?));
    let notify = Arc::new(Notify::new());
    let stop = Arc::new(AtomicBool::new(false));
    let thread = start_sampling(
        make_source,
        &config,
        &spool,
        &notify,
        &stop,
        &metrics,
        &health,
    )
    .await?;
    let acked = match shipper {
        Some(shipper) => {
            shipping_loop(
                shipper,
                &config,
                spool.clone(),
                notify.clone(),
                shutdown.clone(),
                metrics.clone(),
                health.clone(),
            )
            .await
        }
        None => {
            let mut shutdown = shutdown.clone();
            let _ = shutdown.wait_for(|s| *s).await;
            0
        }
    };
    stop.store(true, Ordering::Relaxed);
    let cycles = tokio::task::spawn_blocking(move || thread.join())
        .await
        .map_err(|e| AgentError::Sampler(e.to_string()))?
        .map_err(|_| AgentError::Sampler("the sampling thread panicked".into()))?;
    let batches_left = lock(&spool).len();
    tracing::info!(
        cycles,
        acked,
        batches_left,
        "Agent stopped; unsent batches stay in the spool."
    );
    Ok(RunReport {
        cycles,
        batches_acked: acked,
        batches_left,
    })
}

/// Opens (and repairs) the spool, counting what it had to quarantine.
fn open_spool(config: &AgentConfig, metrics: &AgentMetrics) -> Result<Spool, AgentError> {
    let (spool, report) = Spool::open(&config.spool_dir, &config.agent_id, config.spool_limits)?;
    if report.quarantined > 0 {
        metrics
            .spool_quarantined_total
            .inc_by(report.quarantined as u64);
    }
    tracing::info!(
        agent_id = %config.agent_id,
        boot_id = %spool.boot_id(),
        next_seq = spool.next_seq(),
        batches = spool.len(),
        quarantined = report.quarantined,
        removed_partial = report.removed_partial,
        new_boot = report.new_boot,
        "Spool opened."
    );
    update_gauges(&spool, metrics);
    Ok(spool)
}

/// Starts the sampling thread and waits until its source is up; the thread returns the
/// number of cycles it ran.
async fn start_sampling<S, F>(
    make_source: F,
    config: &AgentConfig,
    spool: &Arc<Mutex<Spool>>,
    notify: &Arc<Notify>,
    stop: &Arc<AtomicBool>,
    metrics: &AgentMetrics,
    health: &Arc<Health>,
) -> Result<std::thread::JoinHandle<u64>, AgentError>
where
    S: GpuSource + 'static,
    F: FnOnce() -> Result<S, SourceError> + Send + 'static,
{
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<&'static str, SourceError>>();
    let (config, spool, notify, stop, metrics, health) = (
        config.clone(),
        spool.clone(),
        notify.clone(),
        stop.clone(),
        metrics.clone(),
        health.clone(),
    );
    let thread = std::thread::Builder::new()
        .name("sampler".into())
        .spawn(move || {
            let source = match make_source() {
                Ok(s) => s,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return 0;
                }
            };
            let _ = ready_tx.send(Ok(source.kind()));
            let interval = chrono::Duration::from_std(config.interval)
                .unwrap_or_else(|_| chrono::Duration::seconds(10));
            let sampler = Sampler::new(source, config.attribution.clone(), interval);
            sampling_loop(sampler, &config, &spool, &notify, &stop, &metrics, &health)
        })
        .map_err(|e| AgentError::Sampler(e.to_string()))?;
    match ready_rx.await {
        Ok(Ok(kind)) => {
            tracing::info!(source = kind, "Sampling started.");
            Ok(thread)
        }
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e.into())
        }
        Err(_) => Err(AgentError::Sampler(
            "the sampling thread died at start".into(),
        )),
    }
}

/// Polls `GET /v1/agents/assignments` every `period` and publishes changes, until
/// `shutdown`. A server without the endpoint (404) is asked again at the next period; a
/// failed poll keeps the last known assignments.
pub async fn refresh_assignments(
    shipper: HttpShipper,
    tx: watch::Sender<Option<Assignments>>,
    period: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        match shipper.assignments().await {
            Ok(Some(a)) => {
                tx.send_if_modified(|current| {
                    let changed = current.as_ref() != Some(&a);
                    if changed {
                        *current = Some(a);
                    }
                    changed
                });
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "Could not refresh the device assignments."),
        }
        if sleep_or_stop(period, &mut shutdown).await {
            return;
        }
    }
}

/// The first assignments, then a task that keeps them fresh.
pub async fn watch_assignments(
    shipper: &HttpShipper,
    period: Duration,
    shutdown: watch::Receiver<bool>,
) -> watch::Receiver<Option<Assignments>> {
    let first = match shipper.assignments().await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "Could not fetch the device assignments.");
            None
        }
    };
    let (tx, rx) = watch::channel(first);
    tokio::spawn(refresh_assignments(shipper.clone(), tx, period, shutdown));
    rx
}

/// How often the agent asks for its node's assignments.
pub const ASSIGNMENTS_PERIOD: Duration = Duration::from_secs(15);

/// A simulated agent for one registered node, as `neocloud demo` runs one per demo node
/// in process: asks the server for the node's inventory, simulates exactly those devices
/// (seeded) running work for exactly the node's current allocations (`GET
/// /v1/agents/assignments`, refreshed), and ships to `server` with the node's agent
/// token until `shutdown`.
#[derive(Debug, Clone)]
pub struct SimulatedAgent {
    pub server: String,
    pub token: String,
    pub seed: u64,
    pub spool_dir: PathBuf,
    pub interval: Duration,
    pub compression: Compression,
    /// How often the node's assignments are asked for.
    pub assignments_period: Duration,
}

impl SimulatedAgent {
    pub fn new(server: &str, token: &str, seed: u64, spool_dir: impl Into<PathBuf>) -> Self {
        Self {
            server: server.into(),
            token: token.into(),
            seed,
            spool_dir: spool_dir.into(),
            interval: Duration::from_secs(10),
            compression: Compression::Gzip,
            assignments_period: ASSIGNMENTS_PERIOD,
        }
    }

    /// Fetches the inventory (retrying while the server starts, up to ~30 s), then runs.
    pub async fn run(self, shutdown: watch::Receiver<bool>) -> Result<RunReport, AgentError> {
        let shipper = HttpShipper::new(&self.server, &self.token, self.compression)?;
        let mut backoff = Backoff::new(
            Duration::from_millis(200),
            Duration::from_secs(5),
            self.seed,
        );
        let inventory = loop {
            match shipper.inventory().await {
                Ok(Some(inv)) => break inv,
                Ok(None) => {
                    return Err(AgentError::Shipper(ShipperError::Request {
                        url: format!("{}/v1/agents/inventory", self.server),
                        reason: "the server has no inventory endpoint (404)".into(),
                    }));
                }
                Err(e @ ShipperError::Unauthorized { .. }) => return Err(e.into()),
                Err(e) if backoff.attempts() >= 10 => return Err(e.into()),
                Err(_) => tokio::time::sleep(backoff.next_delay()).await,
            }
        };
        let profile = SimProfile::from_inventory(&inventory)?;
        let mut config = AgentConfig::new(&inventory.hostname, &self.spool_dir);
        config.interval = self.interval;
        config.sample_interval = config.sample_interval.min(self.interval);
        config.assignments =
            Some(watch_assignments(&shipper, self.assignments_period, shutdown.clone()).await);
        let metrics = AgentMetrics::new()?;
        let seed = self.seed;
        run(
            config,
            move || SimSource::new(profile, seed),
            Some(shipper),
            metrics,
            Arc::new(Health::default()),
            shutdown,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neocloud_schema::agent_api::ReportedGpu;

    #[test]
    fn the_hardware_is_handed_on_only_when_it_changes() {
        let (tx, mut rx) = watch::channel(None);
        let gpu = ReportedGpu {
            uuid: "GPU-1".into(),
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            memory_mib: 81_559,
            mig_mode: false,
            nvlinks_active: Some(18),
            fabric: None,
        };
        let mut seen = HardwareReport { gpus: vec![gpu] };
        publish_hardware(&tx, &seen);
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();
        publish_hardware(&tx, &seen);
        assert!(!rx.has_changed().unwrap(), "the same hardware again");
        seen.gpus[0].nvlinks_active = Some(17);
        publish_hardware(&tx, &seen);
        assert!(rx.has_changed().unwrap(), "a link went down");
        assert_eq!(rx.borrow().as_ref(), Some(&seen));
    }
}
