//! The crash-safe on-disk spool: every closed window is written here (fsync, checksum)
//! before anything is sent, and leaves only after the server answered `accepted` or
//! `duplicate`.
//!
//! Layout of a spool directory:
//! - `state.json`: `boot_id` and `next_seq`, replaced atomically (write, fsync, rename).
//! - `records/<first>-<last>.rec`: one batch each; `<first>-<last>` is the range of window
//!   ids it holds (a folded record covers several). Format: `NCSP`, version byte, 3
//!   reserved bytes, payload length (u32 LE), CRC-32 of the payload (u32 LE), payload
//!   (the batch as JSON).
//! - `quarantine/`: records that failed their checksum or that the server called invalid.
//!
//! Sequence numbers are given when a record becomes the head of the queue, just before
//! its first send: the record is rewritten with its `seq`, then `next_seq` is persisted.
//! Records that were never numbered were never sent, so they can still be folded
//! together when the spool is full; numbered records are immutable, so a resend is
//! byte-for-byte the batch the server may already hold, and its answer is `duplicate`.
//!
//! Crash consistency: a record is written to a `.tmp` file, fsynced, renamed, and the
//! directory fsynced; a `.tmp` left by a crash is deleted on open (its window was never
//! acknowledged to anyone, and its sequence number was never given out). A fold writes
//! the merged record before deleting its parts; on open, a record whose range lies inside
//! another's is a leftover part and is deleted. On open `next_seq` is the larger of the
//! state's and one past the highest numbered record, so no number is given twice.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use neocloud_schema::ingest::{Batch, WIRE_VERSION};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::failpoint;
use crate::window::{ClosedWindow, fold};

const MAGIC: &[u8; 4] = b"NCSP";
const FORMAT_VERSION: u8 = 1;
const HEADER_BYTES: usize = 16;
/// A record larger than this is corrupt (a batch is at most 512 devices × 1024 processes,
/// far below).
const MAX_RECORD_BYTES: usize = 256 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("spool I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("spool record {path} does not encode: {source}")]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("the spool has no record with seq {seq} at its head")]
    NotHead { seq: u64 },
    #[error("spool record {path} would be {bytes} bytes, more than a record can hold")]
    TooLarge { path: PathBuf, bytes: usize },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SpoolError + '_ {
    move |source| SpoolError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Bounds of the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpoolLimits {
    /// Above this many bytes of records, new windows are folded into older ones.
    pub max_bytes: u64,
    /// Above this many records, likewise.
    pub max_records: usize,
}

impl Default for SpoolLimits {
    fn default() -> Self {
        Self {
            max_bytes: 256 * 1024 * 1024,
            max_records: 100_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct SpoolState {
    boot_id: Uuid,
    next_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordMeta {
    first_id: u64,
    last_id: u64,
    seq: Option<u64>,
    bytes: u64,
    /// The record's window, kept so folding can pick records without reading them.
    window: Option<neocloud_schema::ingest::Window>,
}

impl RecordMeta {
    fn file_name(&self) -> String {
        format!("{:020}-{:020}.rec", self.first_id, self.last_id)
    }
    fn contains(&self, other: &RecordMeta) -> bool {
        self != other && self.first_id <= other.first_id && other.last_id <= self.last_id
    }
}

/// What opening the spool found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Records that failed their checksum or did not parse, moved to `quarantine/`.
    pub quarantined: usize,
    /// Unfinished writes (`.tmp`) and leftover parts of an interrupted fold, deleted.
    pub removed_partial: usize,
    /// Whether `state.json` was missing or unreadable, so a new `boot_id` started.
    pub new_boot: bool,
}

/// What appending a window did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Folds done to make room (each merges two windows into one).
    pub folds: usize,
    /// The window could not be kept: the spool is beyond twice its limit even after
    /// folding every window up to one hour.
    pub dropped: bool,
}

/// The on-disk queue of batches.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    agent_id: String,
    limits: SpoolLimits,
    state: SpoolState,
    records: Vec<RecordMeta>,
    next_id: u64,
    bytes: u64,
    /// Records found corrupt while running (not at open), moved to `quarantine/`.
    quarantined_at_run: u64,
}

fn encode(batch: &Batch, path: &Path) -> Result<Vec<u8>, SpoolError> {
    let payload = serde_json::to_vec(batch).map_err(|source| SpoolError::Encode {
        path: path.to_owned(),
        source,
    })?;
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&[0, 0, 0]);
    let length = u32::try_from(payload.len()).map_err(|_| SpoolError::TooLarge {
        path: path.to_owned(),
        bytes: payload.len(),
    })?;
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Decodes a record; `Err` with the reason when it is torn or corrupt.
fn decode(bytes: &[u8]) -> Result<Batch, String> {
    if bytes.len() < HEADER_BYTES || &bytes[..4] != MAGIC {
        return Err("no record header".into());
    }
    if bytes[4] != FORMAT_VERSION {
        return Err(format!("unknown record format {}", bytes[4]));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    // Saturates: a length past `usize` is past the largest record too, and refused below.
    let len = usize::try_from(word(8)).unwrap_or(usize::MAX);
    if len > MAX_RECORD_BYTES || bytes.len() != HEADER_BYTES + len {
        return Err(format!(
            "length {len} does not match the file ({} bytes): torn write",
            bytes.len()
        ));
    }
    let payload = &bytes[HEADER_BYTES..];
    if crc32fast::hash(payload) != word(12) {
        return Err("checksum mismatch".into());
    }
    serde_json::from_slice(payload).map_err(|e| format!("payload does not parse: {e}"))
}

fn fsync_dir(dir: &Path) -> Result<(), SpoolError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// What a durable write holds: names its crash points (`spool.<kind>_torn`,
/// `spool.<kind>_tmp_written`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Record,
    State,
    /// The state written when the spool opens (no crash point: nothing was numbered).
    StateAtOpen,
}

/// Writes `bytes` to `path` atomically and durably.
fn write_durable(dir: &Path, path: &Path, bytes: &[u8], kind: Kind) -> Result<(), SpoolError> {
    let (torn, written) = match kind {
        Kind::Record => ("spool.record_torn", "spool.record_tmp_written"),
        Kind::State => ("spool.state_torn", "spool.state_tmp_written"),
        Kind::StateAtOpen => ("", ""),
    };
    let tmp = path.with_extension("tmp");
    {
        let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
        if !torn.is_empty() && failpoint::is_armed(torn) {
            // Half the bytes reach the disk, then the process dies.
            let _ = f.write_all(&bytes[..bytes.len() / 2]);
            let _ = f.sync_all();
            failpoint::hit(torn);
        }
        f.write_all(bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    if !written.is_empty() {
        failpoint::hit(written);
    }
    fs::rename(&tmp, path).map_err(io_err(path))?;
    fsync_dir(dir)
}

/// The spool's boot id and next sequence number; a new boot when the state file is
/// missing or unreadable.
fn load_state(dir: &Path, report: &mut OpenReport) -> SpoolState {
    let state = fs::read(dir.join("state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<SpoolState>(&b).ok());
    match state {
        Some(s) => s,
        None => {
            report.new_boot = true;
            SpoolState {
                boot_id: Uuid::new_v4(),
                next_seq: 1,
            }
        }
    }
}

/// Checks one file of the records directory: a sound record is returned (and moves the
/// next sequence number past its own), a partial write is removed, anything torn or
/// corrupt is quarantined.
fn check_record(
    entry: &fs::DirEntry,
    quarantine_dir: &Path,
    state: &mut SpoolState,
    report: &mut OpenReport,
) -> Result<Option<RecordMeta>, SpoolError> {
    let path = entry.path();
    let name = entry.file_name().to_string_lossy().into_owned();
    if name.ends_with(".tmp") {
        fs::remove_file(&path).map_err(io_err(&path))?;
        report.removed_partial += 1;
        return Ok(None);
    }
    let range = name
        .strip_suffix(".rec")
        .and_then(|n| n.split_once('-'))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
    let bytes = fs::read(&path).map_err(io_err(&path))?;
    match (range, decode(&bytes)) {
        (Some((first_id, last_id)), Ok(batch)) => {
            let seq = (batch.seq > 0).then_some(batch.seq);
            if let Some(seq) = seq
                && batch.boot_id == state.boot_id
            {
                state.next_seq = state.next_seq.max(seq + 1);
            }
            Ok(Some(RecordMeta {
                first_id,
                last_id,
                seq,
                bytes: bytes.len() as u64,
                window: Some(batch.window),
            }))
        }
        (_, reason) => {
            let reason = reason
                .err()
                .unwrap_or_else(|| "unexpected file name".into());
            tracing::error!(file = %name, %reason, "Spool record is torn or corrupt: quarantined, never sent.");
            let to = quarantine_dir.join(&name);
            fs::rename(&path, &to).map_err(io_err(&to))?;
            report.quarantined += 1;
            Ok(None)
        }
    }
}

/// Removes the parts of an interrupted fold: the merged record already holds them.
fn remove_fold_leftovers(
    records_dir: &Path,
    records: &mut Vec<RecordMeta>,
    report: &mut OpenReport,
) -> Result<(), SpoolError> {
    let leftovers: Vec<RecordMeta> = records
        .iter()
        .filter(|r| r.seq.is_none() && records.iter().any(|o| o.contains(r)))
        .cloned()
        .collect();
    for r in &leftovers {
        let path = records_dir.join(r.file_name());
        fs::remove_file(&path).map_err(io_err(&path))?;
        report.removed_partial += 1;
    }
    records.retain(|r| !leftovers.contains(r));
    Ok(())
}

impl Spool {
    /// Opens (or creates) the spool in `dir`, checking every record.
    pub fn open(
        dir: impl Into<PathBuf>,
        agent_id: &str,
        limits: SpoolLimits,
    ) -> Result<(Self, OpenReport), SpoolError> {
        let dir = dir.into();
        let records_dir = dir.join("records");
        let quarantine_dir = dir.join("quarantine");
        fs::create_dir_all(&records_dir).map_err(io_err(&records_dir))?;
        fs::create_dir_all(&quarantine_dir).map_err(io_err(&quarantine_dir))?;
        let mut report = OpenReport::default();
        let mut state = load_state(&dir, &mut report);
        let mut records = Vec::new();
        let entries = fs::read_dir(&records_dir).map_err(io_err(&records_dir))?;
        for entry in entries {
            let entry = entry.map_err(io_err(&records_dir))?;
            let meta = check_record(&entry, &quarantine_dir, &mut state, &mut report)?;
            records.extend(meta);
        }
        remove_fold_leftovers(&records_dir, &mut records, &mut report)?;
        records.sort_by_key(|r| (r.seq.is_none(), r.seq, r.first_id));
        let next_id = records.iter().map(|r| r.last_id + 1).max().unwrap_or(1);
        let bytes = records.iter().map(|r| r.bytes).sum();
        let spool = Self {
            dir,
            agent_id: agent_id.to_owned(),
            limits,
            state,
            records,
            next_id,
            bytes,
            quarantined_at_run: 0,
        };
        spool.save_state_as(Kind::StateAtOpen)?;
        Ok((spool, report))
    }

    pub fn boot_id(&self) -> Uuid {
        self.state.boot_id
    }

    /// The sequence number the next numbered record will get.
    pub fn next_seq(&self) -> u64 {
        self.state.next_seq
    }

    /// Records waiting to be acknowledged.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records found corrupt while running and quarantined (see [`Spool::head`]).
    pub fn quarantined_at_run(&self) -> u64 {
        self.quarantined_at_run
    }

    /// Bytes of records on disk.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn records_dir(&self) -> PathBuf {
        self.dir.join("records")
    }

    fn path_of(&self, r: &RecordMeta) -> PathBuf {
        self.records_dir().join(r.file_name())
    }

    fn save_state(&self) -> Result<(), SpoolError> {
        self.save_state_as(Kind::State)
    }

    fn save_state_as(&self, kind: Kind) -> Result<(), SpoolError> {
        let path = self.dir.join("state.json");
        let bytes = serde_json::to_vec(&self.state).map_err(|source| SpoolError::Encode {
            path: path.clone(),
            source,
        })?;
        write_durable(&self.dir, &path, &bytes, kind)
    }

    fn read(&self, r: &RecordMeta) -> Result<Batch, SpoolError> {
        let path = self.path_of(r);
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        decode(&bytes).map_err(|reason| SpoolError::Io {
            path,
            source: io::Error::new(io::ErrorKind::InvalidData, reason),
        })
    }

    fn write(&mut self, meta: &mut RecordMeta, batch: &Batch) -> Result<(), SpoolError> {
        let path = self.path_of(meta);
        let bytes = encode(batch, &path)?;
        write_durable(&self.records_dir(), &path, &bytes, Kind::Record)?;
        meta.bytes = bytes.len() as u64;
        meta.window = Some(batch.window);
        Ok(())
    }

    fn remove(&mut self, index: usize) -> Result<RecordMeta, SpoolError> {
        let r = self.records.remove(index);
        let path = self.path_of(&r);
        fs::remove_file(&path).map_err(io_err(&path))?;
        self.bytes -= r.bytes;
        Ok(r)
    }

    fn unnumbered_batch(&self, w: ClosedWindow) -> Batch {
        Batch {
            version: WIRE_VERSION,
            agent_id: self.agent_id.clone(),
            boot_id: self.state.boot_id,
            seq: 0,
            window: w.window,
            devices: w.devices,
        }
    }

    fn is_full(&self, incoming: u64) -> bool {
        self.bytes.saturating_add(incoming) > self.limits.max_bytes
            || self.records.len() >= self.limits.max_records
    }

    /// Appends a closed window durably. When the spool is full, windows that were never
    /// sent are folded together (same totals, coarser windows up to one hour) to make
    /// room; unsent usage is dropped only beyond twice the limit.
    pub fn append(&mut self, w: ClosedWindow) -> Result<AppendOutcome, SpoolError> {
        let mut outcome = AppendOutcome::default();
        let batch = self.unnumbered_batch(w);
        let estimate = serde_json::to_vec(&batch).map_or(0, |v| v.len() as u64);
        if self.is_full(estimate) {
            // First choice: widen the newest unsent record with this window.
            if let Some(last) = self.records.last().cloned()
                && last.seq.is_none()
            {
                let old = self.read(&last)?;
                let merged = fold(&as_window(&old), &as_window(&batch));
                if let Some(merged) = merged {
                    let id = self.next_id;
                    self.next_id += 1;
                    let mut meta = RecordMeta {
                        first_id: last.first_id,
                        last_id: id,
                        seq: None,
                        bytes: 0,
                        window: None,
                    };
                    let merged = self.unnumbered_batch(merged);
                    self.write(&mut meta, &merged)?;
                    self.bytes += meta.bytes;
                    let index = self.records.len() - 1;
                    self.remove(index)?;
                    self.records.push(meta);
                    outcome.folds += 1;
                    return Ok(outcome);
                }
            }
            outcome.folds += self.compact(estimate)?;
            if self.is_full(estimate)
                && (self.bytes.saturating_add(estimate) > self.limits.max_bytes.saturating_mul(2)
                    || self.records.len() >= self.limits.max_records.saturating_mul(2))
            {
                tracing::error!(
                    spool_bytes = self.bytes,
                    records = self.records.len(),
                    "Spool is beyond twice its limit with every window folded: dropping this window."
                );
                outcome.dropped = true;
                return Ok(outcome);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut meta = RecordMeta {
            first_id: id,
            last_id: id,
            seq: None,
            bytes: 0,
            window: None,
        };
        self.write(&mut meta, &batch)?;
        failpoint::hit("spool.after_append");
        self.bytes += meta.bytes;
        self.records.push(meta);
        Ok(outcome)
    }

    /// Folds adjacent unsent records, shortest combined window first, until a record of
    /// `incoming` bytes fits or nothing more can be folded. Returns the folds done.
    fn compact(&mut self, incoming: u64) -> Result<usize, SpoolError> {
        let mut folds = 0;
        while self.is_full(incoming) {
            let mut best: Option<(usize, chrono::Duration)> = None;
            for i in 0..self.records.len().saturating_sub(1) {
                let (a, b) = (&self.records[i], &self.records[i + 1]);
                if a.seq.is_some() || b.seq.is_some() {
                    continue;
                }
                let (Some(x), Some(y)) = (a.window, b.window) else {
                    continue;
                };
                if x.end != y.start {
                    continue;
                }
                let span = y.end - x.start;
                if span > chrono::Duration::seconds(neocloud_schema::ingest::MAX_WINDOW_SECONDS) {
                    continue;
                }
                if best.as_ref().is_none_or(|(_, s)| span < *s) {
                    best = Some((i, span));
                }
            }
            let Some((i, _)) = best else { break };
            let (x, y) = (
                self.read(&self.records[i])?,
                self.read(&self.records[i + 1])?,
            );
            let Some(merged) = fold(&as_window(&x), &as_window(&y)) else {
                // Too many processes to fold: never pick this pair again.
                self.records[i].window = None;
                continue;
            };
            let mut meta = RecordMeta {
                first_id: self.records[i].first_id,
                last_id: self.records[i + 1].last_id,
                seq: None,
                bytes: 0,
                window: None,
            };
            let merged = self.unnumbered_batch(merged);
            self.write(&mut meta, &merged)?;
            failpoint::hit("spool.fold_written");
            self.bytes += meta.bytes;
            self.remove(i + 1)?;
            self.remove(i)?;
            self.records.insert(i, meta);
            folds += 1;
        }
        Ok(folds)
    }

    /// The batch to send next, numbered (durably) if it was not yet.
    pub fn head(&mut self) -> Result<Option<Batch>, SpoolError> {
        let (mut meta, mut batch) = loop {
            let Some(meta) = self.records.first().cloned() else {
                return Ok(None);
            };
            match self.read(&meta) {
                Ok(batch) => break (meta, batch),
                Err(SpoolError::Io { source, .. })
                    if source.kind() == io::ErrorKind::InvalidData =>
                {
                    // Damaged on disk after it was checked at open: never send it, never
                    // let it block the records behind it.
                    let r = self.records.remove(0);
                    self.bytes -= r.bytes;
                    let to = self.dir.join("quarantine").join(r.file_name());
                    fs::rename(self.path_of(&r), &to).map_err(io_err(&to))?;
                    self.quarantined_at_run += 1;
                    tracing::error!(file = %r.file_name(), reason = %source, "Spool record is corrupt: quarantined, never sent.");
                }
                Err(e) => return Err(e),
            }
        };
        if meta.seq.is_none() {
            batch.seq = self.state.next_seq;
            batch.boot_id = self.state.boot_id;
            let before = meta.bytes;
            self.write(&mut meta, &batch)?;
            self.bytes = self.bytes - before + meta.bytes;
            self.state.next_seq += 1;
            self.save_state()?;
            meta.seq = Some(batch.seq);
            self.records[0] = meta;
        }
        Ok(Some(batch))
    }

    /// The server acknowledged `seq` (accepted or duplicate): it leaves the spool.
    pub fn ack(&mut self, seq: u64) -> Result<(), SpoolError> {
        self.check_head(seq)?;
        self.remove(0)?;
        Ok(())
    }

    /// The server called `seq` invalid: it moves to `quarantine/` and is never resent.
    pub fn quarantine_head(&mut self, seq: u64) -> Result<PathBuf, SpoolError> {
        self.check_head(seq)?;
        let r = self.records.remove(0);
        self.bytes -= r.bytes;
        let from = self.path_of(&r);
        let to = self.dir.join("quarantine").join(r.file_name());
        fs::rename(&from, &to).map_err(io_err(&to))?;
        fsync_dir(&self.records_dir())?;
        Ok(to)
    }

    /// The server found `seq` too large: its devices are split over two batches, the
    /// second numbered next. `false` when it holds a single device and cannot be split.
    pub fn split_head(&mut self, seq: u64) -> Result<bool, SpoolError> {
        self.check_head(seq)?;
        let mut head = self.records[0].clone();
        let mut batch = self.read(&head)?;
        if batch.devices.len() < 2 {
            return Ok(false);
        }
        let second_devices = batch.devices.split_off(batch.devices.len() / 2);
        let second = Batch {
            seq: self.state.next_seq,
            devices: second_devices,
            ..batch.clone()
        };
        let id = self.next_id;
        self.next_id += 1;
        let mut meta = RecordMeta {
            first_id: id,
            last_id: id,
            seq: Some(second.seq),
            bytes: 0,
            window: None,
        };
        // The second half first: a crash in between leaves both halves' devices in two
        // batches (the server ignores the repeated device-seconds), never loses any.
        self.write(&mut meta, &second)?;
        self.bytes += meta.bytes;
        self.state.next_seq += 1;
        self.save_state()?;
        let before = head.bytes;
        self.write(&mut head, &batch)?;
        self.bytes = self.bytes - before + head.bytes;
        self.records[0] = head;
        let pos = self
            .records
            .iter()
            .position(|r| r.seq.is_none())
            .unwrap_or(self.records.len());
        self.records.insert(pos, meta);
        Ok(true)
    }

    fn check_head(&self, seq: u64) -> Result<(), SpoolError> {
        match self.records.first() {
            Some(r) if r.seq == Some(seq) => Ok(()),
            _ => Err(SpoolError::NotHead { seq }),
        }
    }
}

fn as_window(b: &Batch) -> ClosedWindow {
    ClosedWindow {
        window: b.window,
        devices: b.devices.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use neocloud_schema::ingest::{DeviceSample, Window};

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn window(from: i64, to: i64, util: f64) -> ClosedWindow {
        ClosedWindow {
            window: Window {
                start: at(from),
                end: at(to),
            },
            devices: vec![
                DeviceSample {
                    uuid: "GPU-a".into(),
                    parent_uuid: None,
                    mig_profile: None,
                    sm_util_pct: Some(util),
                    fb_used_bytes: Some(1 << 30),
                    energy_mj: Some(1),
                    power_mw: Some(1),
                    temp_c: Some(40),
                    health: None,
                    events: vec![],
                    processes: vec![],
                },
                DeviceSample {
                    uuid: "GPU-b".into(),
                    parent_uuid: None,
                    mig_profile: None,
                    sm_util_pct: Some(util / 2.0),
                    fb_used_bytes: None,
                    energy_mj: None,
                    power_mw: None,
                    temp_c: None,
                    health: None,
                    events: vec![],
                    processes: vec![],
                },
            ],
        }
    }

    fn open(dir: &Path, limits: SpoolLimits) -> (Spool, OpenReport) {
        Spool::open(dir, "node-1", limits).unwrap()
    }

    #[test]
    fn records_are_numbered_in_order_when_they_reach_the_head_and_leave_on_ack() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, report) = open(dir.path(), SpoolLimits::default());
        assert!(report.new_boot);
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 20.0)).unwrap();
        let head = spool.head().unwrap().unwrap();
        assert_eq!(head.seq, 1);
        assert_eq!(
            spool.head().unwrap().unwrap(),
            head,
            "the head is stable until acked"
        );
        spool.ack(1).unwrap();
        assert_eq!(spool.head().unwrap().unwrap().seq, 2);
        spool.ack(2).unwrap();
        assert!(spool.is_empty());
        assert_eq!(spool.bytes(), 0);
    }

    #[test]
    fn seq_and_boot_id_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        let boot = spool.boot_id();
        spool.append(window(0, 10, 10.0)).unwrap();
        let seq = spool.head().unwrap().unwrap().seq;
        spool.ack(seq).unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        spool.head().unwrap();
        drop(spool);
        let (mut spool, report) = open(dir.path(), SpoolLimits::default());
        assert!(!report.new_boot);
        assert_eq!(spool.boot_id(), boot);
        let head = spool.head().unwrap().unwrap();
        assert_eq!(head.seq, 2, "the numbered head keeps its number");
        spool.ack(2).unwrap();
        spool.append(window(20, 30, 10.0)).unwrap();
        assert_eq!(spool.head().unwrap().unwrap().seq, 3);
    }

    #[test]
    fn a_lost_state_file_never_reuses_a_numbered_records_seq() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        spool.head().unwrap();
        // The state write was lost: as if the crash hit between the record and the state.
        let stale = SpoolState {
            boot_id: spool.boot_id(),
            next_seq: 1,
        };
        fs::write(
            dir.path().join("state.json"),
            serde_json::to_vec(&stale).unwrap(),
        )
        .unwrap();
        drop(spool);
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        assert_eq!(spool.next_seq(), 2);
        spool.ack(1).unwrap();
        assert_eq!(spool.head().unwrap().unwrap().seq, 2);
    }

    #[test]
    fn a_corrupt_record_is_quarantined_and_never_sent() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        drop(spool);
        let first = dir
            .path()
            .join("records")
            .join(format!("{:020}-{:020}.rec", 1, 1));
        let mut bytes = fs::read(&first).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 0x55;
        fs::write(&first, bytes).unwrap();
        let (mut spool, report) = open(dir.path(), SpoolLimits::default());
        assert_eq!(report.quarantined, 1);
        assert_eq!(spool.len(), 1);
        assert_eq!(spool.head().unwrap().unwrap().window.start, at(10));
        assert_eq!(
            fs::read_dir(dir.path().join("quarantine")).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_record_damaged_while_running_is_quarantined_instead_of_blocking_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        let first = dir
            .path()
            .join("records")
            .join(format!("{:020}-{:020}.rec", 1, 1));
        fs::write(&first, b"NCSP garbage").unwrap();
        let head = spool.head().unwrap().unwrap();
        assert_eq!(head.window.start, at(10));
        assert_eq!(head.seq, 1, "the damaged record never got a number");
        assert_eq!(spool.quarantined_at_run(), 1);
    }

    #[test]
    fn a_torn_record_and_an_unfinished_write_are_detected_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        drop(spool);
        let rec = dir
            .path()
            .join("records")
            .join(format!("{:020}-{:020}.rec", 1, 1));
        let bytes = fs::read(&rec).unwrap();
        fs::write(&rec, &bytes[..bytes.len() / 2]).unwrap();
        fs::write(dir.path().join("records").join("x.tmp"), b"half").unwrap();
        let (spool, report) = open(dir.path(), SpoolLimits::default());
        assert_eq!(report.quarantined, 1);
        assert_eq!(report.removed_partial, 1);
        assert!(spool.is_empty());
    }

    fn util_seconds(b: &Batch, uuid: &str) -> f64 {
        let d = b.devices.iter().find(|d| d.uuid == uuid).unwrap();
        d.sm_util_pct.unwrap() * b.window.duration().num_seconds() as f64
    }

    #[test]
    fn a_full_spool_folds_unsent_windows_and_keeps_every_total() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SpoolLimits {
            max_bytes: u64::MAX,
            max_records: 4,
        };
        let (mut spool, _) = open(dir.path(), limits);
        let mut expected = 0.0;
        let mut folds = 0;
        for i in 0..40 {
            let u = (i % 7) as f64 * 10.0;
            expected += u * 10.0;
            folds += spool.append(window(i * 10, i * 10 + 10, u)).unwrap().folds;
        }
        assert!(folds > 0);
        assert!(spool.len() <= 4);
        let mut total = 0.0;
        let mut end = at(0);
        while let Some(b) = spool.head().unwrap() {
            assert_eq!(b.window.start, end, "folded windows stay contiguous");
            assert!(b.window.duration() <= chrono::Duration::hours(1));
            end = b.window.end;
            total += util_seconds(&b, "GPU-a");
            spool.ack(b.seq).unwrap();
        }
        assert_eq!(end, at(400));
        assert!((total - expected).abs() < 1e-6, "{total} != {expected}");
    }

    #[test]
    fn a_sent_record_is_never_folded() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SpoolLimits {
            max_bytes: u64::MAX,
            max_records: 1,
        };
        let (mut spool, _) = open(dir.path(), limits);
        spool.append(window(0, 10, 10.0)).unwrap();
        let sent = spool.head().unwrap().unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        spool.append(window(20, 30, 10.0)).unwrap();
        assert_eq!(spool.head().unwrap().unwrap(), sent);
        spool.ack(sent.seq).unwrap();
        let rest = spool.head().unwrap().unwrap();
        assert_eq!(rest.window.start, at(10));
        assert_eq!(rest.window.end, at(30));
    }

    #[test]
    fn a_window_is_dropped_only_beyond_twice_the_limit_with_nothing_left_to_fold() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SpoolLimits {
            max_bytes: u64::MAX,
            max_records: 1,
        };
        let (mut spool, _) = open(dir.path(), limits);
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.head().unwrap();
        let kept = spool.append(window(10, 20, 10.0)).unwrap();
        assert!(!kept.dropped, "up to twice the limit, nothing is dropped");
        // Not adjacent to anything unsent: it cannot be folded.
        let over = spool.append(window(4000, 4010, 10.0)).unwrap();
        assert!(over.dropped);
        assert_eq!(spool.len(), 2);
    }

    #[test]
    fn an_interrupted_fold_leaves_no_double_count() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 30.0)).unwrap();
        // What a crash after writing the merged record but before deleting the parts
        // leaves behind.
        let a = spool.read(&spool.records[0].clone()).unwrap();
        let b = spool.read(&spool.records[1].clone()).unwrap();
        let merged = spool.unnumbered_batch(fold(&as_window(&a), &as_window(&b)).unwrap());
        let mut meta = RecordMeta {
            first_id: 1,
            last_id: 2,
            seq: None,
            bytes: 0,
            window: None,
        };
        spool.write(&mut meta, &merged).unwrap();
        drop(spool);
        let (mut spool, report) = open(dir.path(), SpoolLimits::default());
        assert_eq!(report.removed_partial, 2);
        assert_eq!(spool.len(), 1);
        let b = spool.head().unwrap().unwrap();
        assert!((util_seconds(&b, "GPU-a") - 400.0).abs() < 1e-9);
    }

    #[test]
    fn a_too_large_batch_is_split_into_two_numbered_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        spool.append(window(10, 20, 10.0)).unwrap();
        let head = spool.head().unwrap().unwrap();
        assert!(spool.split_head(head.seq).unwrap());
        let first = spool.head().unwrap().unwrap();
        assert_eq!((first.seq, first.devices.len()), (1, 1));
        spool.ack(1).unwrap();
        let second = spool.head().unwrap().unwrap();
        assert_eq!((second.seq, second.devices.len()), (2, 1));
        assert_eq!(second.window, first.window);
        spool.ack(2).unwrap();
        assert_eq!(spool.head().unwrap().unwrap().seq, 3);
        assert!(!spool.split_head(3).unwrap() || spool.len() == 2);
    }

    #[test]
    fn an_invalid_batch_moves_to_quarantine() {
        let dir = tempfile::tempdir().unwrap();
        let (mut spool, _) = open(dir.path(), SpoolLimits::default());
        spool.append(window(0, 10, 10.0)).unwrap();
        let head = spool.head().unwrap().unwrap();
        let to = spool.quarantine_head(head.seq).unwrap();
        assert!(to.exists());
        assert!(spool.is_empty());
        assert!(matches!(spool.ack(1), Err(SpoolError::NotHead { seq: 1 })));
    }
}
