//! The ingest wire format v1 (contract, docs/architecture.md): one batch covers one window of
//! one agent. Agents build these; the metering pipeline validates them with
//! [`Batch::validate`] before anything is stored.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ids::AllocationId;

/// The only wire version this crate speaks.
pub const WIRE_VERSION: u32 = 1;
/// A window may cover at most this long.
pub const MAX_WINDOW_SECONDS: i64 = 3600;
/// A window may end at most this far in the future (clock skew allowance).
pub const MAX_FUTURE_SKEW_SECONDS: i64 = 300;
/// Hard caps, whatever the node: a batch beyond them is malformed.
pub const MAX_DEVICES_PER_BATCH: usize = 512;
pub const MAX_PROCESSES_PER_DEVICE: usize = 1024;
pub const MAX_EVENTS_PER_DEVICE: usize = 256;
pub const MAX_LABELS_PER_PROCESS: usize = 16;
pub const MAX_LABEL_BYTES: usize = 128;
/// Longest accepted text field (ids, uuids, profile names).
pub const MAX_ID_BYTES: usize = 128;
/// A window may start at most this long before the batch arrives: an agent's spool holds
/// days, not years, and older usage would reopen long-closed invoices.
pub const MAX_WINDOW_AGE_DAYS: i64 = 35;
/// How far outside its batch's window an event's time may lie: an agent stamps an event
/// when it reads it, which may be a moment after the window's last sample.
pub const MAX_EVENT_SKEW_SECONDS: i64 = 60;
/// The largest sequence number and energy counter storage can hold exactly.
pub const MAX_COUNTER: u64 = i64::MAX.unsigned_abs();

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    pub version: u32,
    /// The registered hostname of the token's node.
    pub agent_id: String,
    /// Changes only when the agent's spool is lost.
    pub boot_id: Uuid,
    /// Starts at 1, no gaps per (agent_id, boot_id).
    pub seq: u64,
    pub window: Window,
    pub devices: Vec<DeviceSample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Window {
    pub fn duration(&self) -> Duration {
        self.end - self.start
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSample {
    /// `GPU-…` for a whole GPU, `MIG-…` for a MIG instance.
    pub uuid: String,
    /// The physical GPU of a MIG instance; null for a whole GPU.
    #[serde(default)]
    pub parent_uuid: Option<String>,
    /// NVIDIA's profile name (`3g.40gb`) of a MIG instance.
    #[serde(default)]
    pub mig_profile: Option<String>,
    /// Null where NVML cannot report it (e.g. MIG without GPM).
    #[serde(default)]
    pub sm_util_pct: Option<f64>,
    #[serde(default)]
    pub fb_used_bytes: Option<u64>,
    /// The GPU's cumulative energy counter in millijoules; resets on driver reload.
    #[serde(default)]
    pub energy_mj: Option<u64>,
    #[serde(default)]
    pub power_mw: Option<u64>,
    #[serde(default)]
    pub temp_c: Option<i32>,
    #[serde(default)]
    pub health: Option<DeviceHealth>,
    #[serde(default)]
    pub events: Vec<HealthEvent>,
    #[serde(default)]
    pub processes: Vec<ProcessSample>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceHealth {
    Ok,
    Degraded,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthEvent {
    pub kind: HealthEventKind,
    /// The XID number, or the ECC counter kind's code.
    pub code: u32,
    pub at: DateTime<Utc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthEventKind {
    Xid,
    EccSingleBit,
    EccDoubleBit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSample {
    pub pid: u32,
    /// The allocation the process belongs to (from its cgroup), where the agent knows it.
    #[serde(default)]
    pub allocation_id: Option<AllocationId>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub sm_util_pct: Option<f64>,
    #[serde(default)]
    pub fb_used_bytes: Option<u64>,
}

/// What the server knows when validating a batch.
#[derive(Debug, Clone, Copy)]
pub struct ValidationContext {
    pub now: DateTime<Utc>,
    /// Devices (GPUs plus possible MIG instances) the agent's node can have.
    pub max_devices: usize,
    /// Framebuffer of the largest GPU on the node, in bytes.
    pub max_fb_bytes: u64,
    /// Board power limit of the node's most powerful GPU, in watts.
    pub max_power_w: u32,
}

/// Why a batch was rejected; `field` is a JSON path such as `devices[2].sm_util_pct`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidBatch {
    pub field: String,
    pub message: String,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> InvalidBatch {
    InvalidBatch {
        field: field.into(),
        message: message.into(),
    }
}

// Field paths are built only for a violation: validation runs once per batch on the
// ingest path, and a valid batch names no field.
fn check_pct(field: impl FnOnce() -> String, value: Option<f64>) -> Result<(), InvalidBatch> {
    match value {
        Some(v) if !(0.0..=100.0).contains(&v) => Err(invalid(
            field(),
            format!("utilization must be between 0 and 100, got {v}"),
        )),
        _ => Ok(()),
    }
}

fn check_text(field: impl FnOnce() -> String, value: &str) -> Result<(), InvalidBatch> {
    if value.is_empty() || value.len() > MAX_ID_BYTES {
        return Err(invalid(
            field(),
            format!("must be 1 to {MAX_ID_BYTES} bytes long"),
        ));
    }
    check_printable(field, value)
}

/// Text that reaches storage holds no control characters (NUL breaks PostgreSQL's text).
fn check_printable(field: impl FnOnce() -> String, value: &str) -> Result<(), InvalidBatch> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(invalid(
            field(),
            format!("contains the control character U+{:04X}", u32::from(c)),
        )),
        None => Ok(()),
    }
}

fn check_counter(field: &str, value: Option<u64>) -> Result<(), InvalidBatch> {
    match value {
        Some(v) if v > MAX_COUNTER => Err(invalid(
            field,
            format!("{v} is above the largest counter, {MAX_COUNTER}"),
        )),
        _ => Ok(()),
    }
}

impl Batch {
    /// Checks every rule of the contract; the first violation names its field.
    pub fn validate(&self, ctx: &ValidationContext) -> Result<(), InvalidBatch> {
        self.validate_header()?;
        self.validate_window(ctx)?;
        let max_devices = ctx.max_devices.min(MAX_DEVICES_PER_BATCH);
        if self.devices.len() > max_devices {
            return Err(invalid(
                "devices",
                format!(
                    "{} devices, but the node can have at most {max_devices}",
                    self.devices.len()
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, device) in self.devices.iter().enumerate() {
            let at = |name: &str| format!("devices[{i}].{name}");
            check_text(|| at("uuid"), &device.uuid)?;
            if !seen.insert(device.uuid.as_str()) {
                return Err(invalid(at("uuid"), "appears twice in one batch"));
            }
            device.validate_identity(&at)?;
            device.validate_readings(&at, ctx)?;
            device.validate_events(i, &at, &self.window)?;
            device.validate_processes(i, &at, ctx)?;
        }
        Ok(())
    }

    /// The version, the agent and the sequence number.
    fn validate_header(&self) -> Result<(), InvalidBatch> {
        if self.version != WIRE_VERSION {
            return Err(invalid(
                "version",
                format!(
                    "unsupported version {} (this server speaks 1)",
                    self.version
                ),
            ));
        }
        check_text(|| "agent_id".into(), &self.agent_id)?;
        if self.seq == 0 {
            return Err(invalid("seq", "sequence numbers start at 1"));
        }
        check_counter("seq", Some(self.seq))
    }

    /// A window of at most an hour, neither in the future nor too old.
    fn validate_window(&self, ctx: &ValidationContext) -> Result<(), InvalidBatch> {
        if self.window.end <= self.window.start {
            return Err(invalid("window.end", "must be after window.start"));
        }
        if self.window.duration() > Duration::seconds(MAX_WINDOW_SECONDS) {
            return Err(invalid("window", "a window may cover at most 1 hour"));
        }
        if self.window.end > ctx.now + Duration::seconds(MAX_FUTURE_SKEW_SECONDS) {
            return Err(invalid(
                "window.end",
                "ends more than 5 minutes in the future",
            ));
        }
        if self.window.start < ctx.now - Duration::days(MAX_WINDOW_AGE_DAYS) {
            return Err(invalid(
                "window.start",
                format!("starts more than {MAX_WINDOW_AGE_DAYS} days ago"),
            ));
        }
        Ok(())
    }
}

impl DeviceSample {
    /// A MIG device names its parent GPU and profile; a GPU names neither.
    fn validate_identity(&self, at: &dyn Fn(&str) -> String) -> Result<(), InvalidBatch> {
        if let Some(parent) = &self.parent_uuid {
            check_text(|| at("parent_uuid"), parent)?;
        }
        if let Some(profile) = &self.mig_profile {
            check_text(|| at("mig_profile"), profile)?;
        }
        let is_mig = self.uuid.starts_with("MIG-");
        if is_mig != self.parent_uuid.is_some() || is_mig != self.mig_profile.is_some() {
            return Err(invalid(
                at("parent_uuid"),
                "a MIG device (uuid MIG-…) needs parent_uuid and mig_profile; a GPU has neither",
            ));
        }
        Ok(())
    }

    /// Utilization, energy, power, memory and temperature within what a GPU can report.
    fn validate_readings(
        &self,
        at: &dyn Fn(&str) -> String,
        ctx: &ValidationContext,
    ) -> Result<(), InvalidBatch> {
        check_pct(|| at("sm_util_pct"), self.sm_util_pct)?;
        check_counter(&at("energy_mj"), self.energy_mj)?;
        // A mean over the window: transients pass the board limit, never twice it.
        if let Some(mw) = self.power_mw
            && mw > u64::from(ctx.max_power_w) * 2000
        {
            return Err(invalid(
                at("power_mw"),
                format!(
                    "{mw} mW is more than twice the GPU's {} W limit",
                    ctx.max_power_w
                ),
            ));
        }
        if let Some(fb) = self.fb_used_bytes
            && fb > ctx.max_fb_bytes
        {
            return Err(invalid(
                at("fb_used_bytes"),
                format!(
                    "{fb} bytes is more than the GPU's {} bytes",
                    ctx.max_fb_bytes
                ),
            ));
        }
        if let Some(t) = self.temp_c
            && !(-40..=150).contains(&t)
        {
            return Err(invalid(at("temp_c"), format!("impossible temperature {t}")));
        }
        Ok(())
    }

    /// Few enough events, each inside the batch's window (give or take the allowed skew).
    fn validate_events(
        &self,
        i: usize,
        at: &dyn Fn(&str) -> String,
        window: &Window,
    ) -> Result<(), InvalidBatch> {
        if self.events.len() > MAX_EVENTS_PER_DEVICE {
            return Err(invalid(
                at("events"),
                format!("at most {MAX_EVENTS_PER_DEVICE} events per device"),
            ));
        }
        let skew = Duration::seconds(MAX_EVENT_SKEW_SECONDS);
        let span = window.start - skew..=window.end + skew;
        if let Some(j) = self.events.iter().position(|e| !span.contains(&e.at)) {
            return Err(invalid(
                format!("devices[{i}].events[{j}].at"),
                "an event must lie inside its batch's window",
            ));
        }
        Ok(())
    }

    /// Few enough processes, each with plausible readings and labels.
    fn validate_processes(
        &self,
        i: usize,
        at: &dyn Fn(&str) -> String,
        ctx: &ValidationContext,
    ) -> Result<(), InvalidBatch> {
        if self.processes.len() > MAX_PROCESSES_PER_DEVICE {
            return Err(invalid(
                at("processes"),
                format!("at most {MAX_PROCESSES_PER_DEVICE} processes per device"),
            ));
        }
        for (j, p) in self.processes.iter().enumerate() {
            let pat = |name: &str| format!("devices[{i}].processes[{j}].{name}");
            p.validate(&pat, ctx)?;
        }
        Ok(())
    }
}

impl ProcessSample {
    fn validate(
        &self,
        pat: &dyn Fn(&str) -> String,
        ctx: &ValidationContext,
    ) -> Result<(), InvalidBatch> {
        check_pct(|| pat("sm_util_pct"), self.sm_util_pct)?;
        if let Some(fb) = self.fb_used_bytes
            && fb > ctx.max_fb_bytes
        {
            return Err(invalid(
                pat("fb_used_bytes"),
                "more than the GPU's framebuffer",
            ));
        }
        if self.labels.len() > MAX_LABELS_PER_PROCESS {
            return Err(invalid(
                pat("labels"),
                format!("at most {MAX_LABELS_PER_PROCESS} labels"),
            ));
        }
        if self.labels.iter().any(|(k, v)| {
            k.is_empty()
                || k.len() > MAX_LABEL_BYTES
                || v.len() > MAX_LABEL_BYTES
                || k.chars().chain(v.chars()).any(char::is_control)
        }) {
            return Err(invalid(
                pat("labels"),
                format!(
                    "label keys must be 1 to {MAX_LABEL_BYTES} bytes, values at most {MAX_LABEL_BYTES}, neither with control characters"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example batch of the wire contract (docs/architecture.md), with the elided uuids filled in.
    const EXAMPLE: &str = r#"{
      "version": 1,
      "agent_id": "node-7f3a",
      "boot_id": "6f1c2e0a-1b7e-4a51-9d55-0d1a7c3e9b10",
      "seq": 1842,
      "window": {"start": "2026-11-29T14:00:00Z", "end": "2026-11-29T14:00:10Z"},
      "devices": [
        {
          "uuid": "GPU-5c1e0000-0000-0000-0000-000000000000",
          "parent_uuid": null,
          "mig_profile": null,
          "sm_util_pct": 63.0,
          "fb_used_bytes": 41234567168,
          "energy_mj": 918273645,
          "power_mw": 350000,
          "temp_c": 61,
          "health": "ok",
          "events": [{"kind": "xid", "code": 79, "at": "2026-11-29T14:00:07Z"}],
          "processes": [
            {"pid": 4242, "allocation_id": "0b5e0000-0000-4000-8000-000000000000", "labels": {"project": "llm"},
             "sm_util_pct": 60.0, "fb_used_bytes": 41000000000}
          ]
        }
      ]
    }"#;

    fn ctx() -> ValidationContext {
        ValidationContext {
            now: "2026-11-29T14:00:10Z".parse().expect("time"),
            max_devices: 8,
            max_fb_bytes: 80 * 1024 * 1024 * 1024,
            max_power_w: 700,
        }
    }

    fn example() -> Batch {
        serde_json::from_str(EXAMPLE).expect("the contract's example parses")
    }

    #[test]
    fn the_architecture_example_parses_and_validates() {
        let batch = example();
        assert_eq!(batch.seq, 1842);
        assert_eq!(batch.devices[0].events[0].code, 79);
        assert_eq!(batch.devices[0].processes[0].labels["project"], "llm");
        assert_eq!(batch.validate(&ctx()), Ok(()));
    }

    #[test]
    fn a_batch_round_trips_through_json() {
        let batch = example();
        let json = serde_json::to_string(&batch).expect("serializes");
        assert_eq!(serde_json::from_str::<Batch>(&json).expect("parses"), batch);
    }

    fn rejected_field(mutate: impl FnOnce(&mut Batch)) -> String {
        let mut batch = example();
        mutate(&mut batch);
        batch.validate(&ctx()).expect_err("must be rejected").field
    }

    #[test]
    fn each_contract_rule_names_its_field() {
        assert_eq!(rejected_field(|b| b.version = 2), "version");
        assert_eq!(
            rejected_field(|b| b.devices[0].sm_util_pct = Some(100.5)),
            "devices[0].sm_util_pct"
        );
        assert_eq!(
            rejected_field(|b| b.devices[0].processes[0].sm_util_pct = Some(-1.0)),
            "devices[0].processes[0].sm_util_pct"
        );
        assert_eq!(
            rejected_field(|b| b.window.end = b.window.start),
            "window.end"
        );
        assert_eq!(
            rejected_field(|b| b.window.start = b.window.end - Duration::seconds(3601)),
            "window"
        );
        assert_eq!(
            rejected_field(|b| {
                b.window.end = ctx().now + Duration::seconds(301);
            }),
            "window.end"
        );
        assert_eq!(
            rejected_field(|b| {
                let d = b.devices[0].clone();
                b.devices = (0..9)
                    .map(|i| DeviceSample {
                        uuid: format!("GPU-{i}"),
                        ..d.clone()
                    })
                    .collect();
            }),
            "devices"
        );
        assert_eq!(
            rejected_field(|b| b.devices[0].fb_used_bytes = Some(u64::MAX)),
            "devices[0].fb_used_bytes"
        );
        assert_eq!(
            rejected_field(|b| b.devices[0].parent_uuid = Some("GPU-x".into())),
            "devices[0].parent_uuid"
        );
        assert_eq!(rejected_field(|b| b.seq = 0), "seq");
    }

    #[test]
    fn values_no_hardware_or_storage_can_hold_are_rejected() {
        assert_eq!(rejected_field(|b| b.seq = MAX_COUNTER + 1), "seq");
        assert_eq!(
            rejected_field(|b| b.devices[0].energy_mj = Some(u64::MAX)),
            "devices[0].energy_mj"
        );
        assert_eq!(
            rejected_field(|b| b.devices[0].power_mw = Some(1_400_001)),
            "devices[0].power_mw"
        );
        assert_eq!(
            rejected_field(|b| {
                b.window.start = "0001-01-01T00:00:00Z".parse().expect("time");
                b.window.end = b.window.start + Duration::seconds(10);
            }),
            "window.start"
        );
        assert_eq!(
            rejected_field(|b| {
                b.window.start = ctx().now - Duration::days(MAX_WINDOW_AGE_DAYS + 1);
                b.window.end = b.window.start + Duration::seconds(10);
            }),
            "window.start"
        );
        for year in ["2001-01-01T00:00:00Z", "9999-01-01T00:00:00Z"] {
            assert_eq!(
                rejected_field(|b| b.devices[0].events[0].at = year.parse().expect("time")),
                "devices[0].events[0].at"
            );
        }
    }

    #[test]
    fn control_characters_are_rejected_wherever_text_reaches_storage() {
        assert_eq!(
            rejected_field(|b| {
                b.devices[0].processes[0]
                    .labels
                    .insert("team".into(), "a\u{0}b".into());
            }),
            "devices[0].processes[0].labels"
        );
        assert_eq!(
            rejected_field(|b| {
                b.devices[0].processes[0]
                    .labels
                    .insert("t\u{7}".into(), "a".into());
            }),
            "devices[0].processes[0].labels"
        );
        assert_eq!(rejected_field(|b| b.agent_id.push('\n')), "agent_id");
        assert_eq!(
            rejected_field(|b| b.devices[0].uuid.push('\u{0}')),
            "devices[0].uuid"
        );
        assert_eq!(
            rejected_field(|b| {
                b.devices[0].uuid = "MIG-1".into();
                b.devices[0].parent_uuid = Some("GPU-\u{1b}".into());
                b.devices[0].mig_profile = Some("1g.10gb".into());
            }),
            "devices[0].parent_uuid"
        );
    }

    #[test]
    fn negative_and_unknown_values_do_not_parse() {
        let negative = EXAMPLE.replace("\"power_mw\": 350000", "\"power_mw\": -5");
        assert!(serde_json::from_str::<Batch>(&negative).is_err());
        let unknown = EXAMPLE.replace("\"seq\": 1842,", "\"seq\": 1842, \"extra\": 1,");
        assert!(serde_json::from_str::<Batch>(&unknown).is_err());
    }
}
