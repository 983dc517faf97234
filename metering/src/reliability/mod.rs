//! Node reliability, the way tenants compare offers and the scheduler breaks ties: over a
//! window of the last 30 days (from when its agent first reported, if later; up to two
//! minutes ago, what agents may still be shipping), the node's **availability** (the share of the
//! window some agent batch covered) times its **GPU health** (the share of GPU-seconds not
//! spent failed), in basis points, rounded down. Faults (XID and ECC events that fail a
//! GPU), degradations and allocations a GPU failure hit are counted beside it: they are
//! what the score comes from, shown to the provider, not a second penalty.

pub mod store;

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// How far back the window reaches.
pub const WINDOW_DAYS: i64 = 30;
/// A perfect score, in basis points.
pub const FULL_BP: i32 = 10_000;

/// The window a node is measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Window {
    pub fn seconds(&self) -> i64 {
        (self.end - self.start).num_seconds().max(0)
    }

    /// The seconds of `[from, to)` (an open `to`: until the window's end) inside it.
    pub fn overlap(&self, from: DateTime<Utc>, to: Option<DateTime<Utc>>) -> i64 {
        let from = from.max(self.start);
        let to = to.map_or(self.end, |t| t.min(self.end));
        (to - from).num_seconds().max(0)
    }
}

/// How far behind `now` the window ends: time an agent's last batch may still be on its
/// way (agents ship every few seconds).
pub const SHIPPING_LAG: TimeDelta = TimeDelta::minutes(2);

/// Where the window ends, as of `now` (whole seconds).
pub fn window_end(now: DateTime<Utc>) -> DateTime<Utc> {
    let end = now - SHIPPING_LAG;
    end.duration_trunc(TimeDelta::seconds(1)).unwrap_or(end)
}

/// A node's window as of `now`: the last [`WINDOW_DAYS`] before [`window_end`], from when
/// its agent first reported if that is later — the end of its first covered hour (or
/// `now`, while that hour lasts) less the seconds covered in it (`first`: that hour and
/// its seconds); `None` before any report.
pub fn window(now: DateTime<Utc>, first: Option<(DateTime<Utc>, i64)>) -> Option<Window> {
    let (hour, seconds) = first?;
    let covered_until = (hour + TimeDelta::hours(1)).min(now);
    let reported = covered_until - TimeDelta::seconds(seconds.clamp(0, 3600));
    let reported = reported
        .duration_trunc(TimeDelta::seconds(1))
        .unwrap_or(reported);
    let end = window_end(now);
    let start = reported.max(end - TimeDelta::days(WINDOW_DAYS));
    (start < end).then_some(Window { start, end })
}

/// What a node's score is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    pub window_seconds: i64,
    pub covered_seconds: i64,
    pub gpu_count: i64,
    pub failed_gpu_seconds: i64,
}

/// Availability × GPU health in basis points, rounded down; `None` for an empty window.
/// A node without GPUs is as healthy as it is available.
pub fn score_bp(f: Figures) -> Option<i32> {
    if f.window_seconds <= 0 {
        return None;
    }
    let window = i128::from(f.window_seconds);
    let covered = i128::from(f.covered_seconds.clamp(0, f.window_seconds));
    let (healthy, capacity) = if f.gpu_count > 0 {
        let capacity = i128::from(f.gpu_count) * window;
        let failed = i128::from(f.failed_gpu_seconds).clamp(0, capacity);
        (capacity - failed, capacity)
    } else {
        (1, 1)
    };
    let bp = covered * healthy * i128::from(FULL_BP) / (window * capacity);
    i32::try_from(bp).ok()
}

/// The GPU-weighted mean of scores (`(score, GPUs)`), rounded down; `None` when no GPU
/// has a score.
pub fn weighted_bp(scores: impl IntoIterator<Item = (i32, i64)>) -> Option<i32> {
    let (sum, gpus) = scores.into_iter().filter(|(_, gpus)| *gpus > 0).fold(
        (0i128, 0i128),
        |(sum, n), (bp, gpus)| {
            (
                sum + i128::from(bp) * i128::from(gpus),
                n + i128::from(gpus),
            )
        },
    );
    if gpus == 0 {
        return None;
    }
    i32::try_from(sum / gpus).ok()
}

/// An hour of a node's window its agents did not fully cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub hour_start: DateTime<Utc>,
    pub missing_seconds: i64,
}

/// The hours of `w` (newest first, at most `limit`) with fewer seconds covered
/// (`covered`: hour start → seconds) than the window holds of them.
pub fn gaps(w: Window, covered: &BTreeMap<DateTime<Utc>, i64>, limit: usize) -> Vec<Gap> {
    let hour = TimeDelta::hours(1);
    let mut out = Vec::new();
    let Ok(first) = w.start.duration_trunc(hour) else {
        return out;
    };
    let mut at = w.end.duration_trunc(hour).unwrap_or(w.end);
    while at >= first && out.len() < limit {
        let expected = w.overlap(at, Some(at + hour));
        let got = covered.get(&at).copied().unwrap_or(0).clamp(0, expected);
        if got < expected {
            out.push(Gap {
                hour_start: at,
                missing_seconds: expected - got,
            });
        }
        at -= hour;
    }
    out
}

#[cfg(test)]
mod tests;
