//! One sampling cycle: read the source, attribute processes, integrate into the open
//! window, and close the window when it has covered the batch interval. [`Sampler`] is
//! what the agent's sampling thread runs once per tick and what the benchmark measures.

use chrono::{DateTime, Duration, Utc};
use neocloud_schema::agent_api::{Assignments, HardwareReport};

use crate::attribution::{AttributionConfig, Attributor};
use crate::source::{GpuSource, SourceError};
use crate::window::{ClosedWindow, WindowBuilder};

/// Reads a source at each tick and produces closed windows.
pub struct Sampler<S> {
    source: S,
    attributor: Attributor,
    window: WindowBuilder,
    interval: Duration,
    devices_last: usize,
    processes_last: usize,
    hardware: HardwareReport,
}

impl<S: GpuSource> Sampler<S> {
    /// `interval` is the batch window length (the contract allows up to an hour).
    pub fn new(source: S, attribution: AttributionConfig, interval: Duration) -> Self {
        Self {
            source,
            attributor: Attributor::new(attribution),
            window: WindowBuilder::new(),
            interval,
            devices_last: 0,
            processes_last: 0,
            hardware: HardwareReport { gpus: Vec::new() },
        }
    }

    pub fn source(&self) -> &S {
        &self.source
    }

    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }

    pub fn attributor_mut(&mut self) -> &mut Attributor {
        &mut self.attributor
    }

    /// Devices and processes seen by the last cycle.
    pub fn last_counts(&self) -> (usize, usize) {
        (self.devices_last, self.processes_last)
    }

    /// The physical GPUs the last cycle saw, as the server checks them.
    pub fn hardware(&self) -> &HardwareReport {
        &self.hardware
    }

    /// One cycle at `now`; a closed window when the open one reached the interval.
    pub fn cycle(&mut self, now: DateTime<Utc>) -> Result<Option<ClosedWindow>, SourceError> {
        let snapshot = self.source.sample(now)?;
        self.devices_last = snapshot.devices.len();
        self.processes_last = snapshot.devices.iter().map(|d| d.processes.len()).sum();
        self.hardware = crate::hardware::report(&snapshot);
        self.window
            .add(&snapshot, &mut self.attributor, self.source.process_table());
        let due = self
            .window
            .start()
            .is_some_and(|start| now - start >= self.interval);
        Ok(if due { self.window.close() } else { None })
    }

    /// Hands the server's assignments to the source and the attributor.
    pub fn apply_assignments(&mut self, assignments: &Assignments) {
        self.source.apply_assignments(assignments);
        self.attributor.set_assignments(assignments);
    }

    /// Closes whatever the open window holds (on shutdown).
    pub fn flush(&mut self) -> Option<ClosedWindow> {
        self.window.close()
    }
}
