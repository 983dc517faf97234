//! Second-level coverage of a device's time: which seconds of each minute have already
//! been counted. A window is the seconds `[floor(start), floor(end))`; only seconds no
//! earlier batch counted are counted now, so overlapping windows (an agent restarted
//! without its spool, two agents on one node) never count a second twice.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// Seconds of one minute, as bits 0..60.
pub type MinuteMask = u64;

pub const FULL_MINUTE: MinuteMask = (1 << 60) - 1;

/// The seconds a window covers, per minute (minute start → mask).
pub fn window_masks(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> BTreeMap<DateTime<Utc>, MinuteMask> {
    let mut out = BTreeMap::new();
    let (Ok(first), Ok(end)) = (
        start.duration_trunc(TimeDelta::seconds(1)),
        end.duration_trunc(TimeDelta::seconds(1)),
    ) else {
        return out;
    };
    let mut t = first;
    while t < end {
        let Ok(minute) = t.duration_trunc(TimeDelta::minutes(1)) else {
            break;
        };
        let minute_end = minute + TimeDelta::minutes(1);
        let stop = end.min(minute_end);
        *out.entry(minute).or_default() |=
            range_mask(second_of(minute, t), second_of(minute, stop));
        t = stop;
    }
    out
}

/// Bits `from..to` set.
pub fn range_mask(from: u32, to: u32) -> MinuteMask {
    if to <= from {
        return 0;
    }
    let width = (to - from).min(60);
    (((1u64 << width) - 1) << from) & FULL_MINUTE
}

/// The seconds of `mask` inside `[lo, hi)`, for the minute starting at `minute`.
pub fn clip(
    mask: MinuteMask,
    minute: DateTime<Utc>,
    lo: DateTime<Utc>,
    hi: DateTime<Utc>,
) -> MinuteMask {
    mask & range_mask(second_of(minute, lo), second_of(minute, hi))
}

/// Which second of the minute starting at `minute` the instant `at` is, bounded to the
/// minute: 0 before it, 60 after it.
fn second_of(minute: DateTime<Utc>, at: DateTime<Utc>) -> u32 {
    let second = (at - minute).num_seconds().clamp(0, 60);
    // Within 0..=60 after the clamp: the conversion cannot fail.
    u32::try_from(second).unwrap_or(0)
}

/// An earlier batch's window on a node and the devices it carried (`None`: every device
/// of the node — batches recorded before devices were listed).
#[derive(Debug, Clone)]
pub struct RecordedWindow {
    pub masks: BTreeMap<DateTime<Utc>, MinuteMask>,
    pub devices: Option<HashSet<String>>,
}

/// The seconds of `minute` that `earlier` windows already counted for `device`.
pub fn counted(earlier: &[RecordedWindow], device: &str, minute: DateTime<Utc>) -> MinuteMask {
    earlier
        .iter()
        .filter(|w| w.devices.as_ref().is_none_or(|d| d.contains(device)))
        .filter_map(|w| w.masks.get(&minute))
        .fold(0, |covered, mask| covered | mask)
}

/// The seconds of each hour a window covers that no `earlier` window of its node covered
/// (whatever devices they carried): what the node's availability counts.
pub fn fresh_node_seconds(
    masks: &BTreeMap<DateTime<Utc>, MinuteMask>,
    earlier: &[RecordedWindow],
) -> BTreeMap<DateTime<Utc>, i64> {
    let mut hours = BTreeMap::new();
    for (minute, mask) in masks {
        let before = earlier
            .iter()
            .filter_map(|w| w.masks.get(minute))
            .fold(0, |covered, m| covered | m);
        let fresh = i64::from((mask & !before).count_ones());
        if fresh > 0
            && let Ok(hour) = minute.duration_trunc(TimeDelta::hours(1))
        {
            *hours.entry(hour).or_default() += fresh;
        }
    }
    hours
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    #[test]
    fn a_ten_second_window_covers_ten_seconds_of_one_minute() {
        let masks = window_masks(t("2026-11-29T14:00:02Z"), t("2026-11-29T14:00:12Z"));
        assert_eq!(masks.len(), 1);
        assert_eq!(masks[&t("2026-11-29T14:00:00Z")], range_mask(2, 12));
        assert_eq!(range_mask(2, 12).count_ones(), 10);
    }

    #[test]
    fn a_window_across_a_minute_boundary_splits() {
        let masks = window_masks(t("2026-11-29T14:00:55Z"), t("2026-11-29T14:01:05Z"));
        assert_eq!(masks[&t("2026-11-29T14:00:00Z")].count_ones(), 5);
        assert_eq!(masks[&t("2026-11-29T14:01:00Z")].count_ones(), 5);
    }

    #[test]
    fn clipping_keeps_only_the_seconds_inside_an_interval() {
        let minute = t("2026-11-29T14:00:00Z");
        let clipped = clip(
            FULL_MINUTE,
            minute,
            t("2026-11-29T14:00:10Z"),
            t("2026-11-29T14:00:20Z"),
        );
        assert_eq!(clipped, range_mask(10, 20));
        assert_eq!(
            clip(
                FULL_MINUTE,
                minute,
                t("2026-11-29T13:00:00Z"),
                t("2026-11-29T15:00:00Z")
            ),
            FULL_MINUTE
        );
    }

    #[test]
    fn a_window_covers_only_the_devices_it_carried_unless_it_listed_none() {
        let minute = t("2026-11-29T14:00:00Z");
        let window = |devices: Option<&[&str]>| RecordedWindow {
            masks: window_masks(t("2026-11-29T14:00:10Z"), t("2026-11-29T14:00:20Z")),
            devices: devices.map(|d| d.iter().map(|s| (*s).to_owned()).collect()),
        };
        let listed = [window(Some(&["GPU-a"]))];
        assert_eq!(counted(&listed, "GPU-a", minute), range_mask(10, 20));
        assert_eq!(counted(&listed, "GPU-b", minute), 0);
        assert_eq!(
            counted(&listed, "GPU-a", t("2026-11-29T14:01:00Z")),
            0,
            "another minute"
        );
        let legacy = [window(None), window(Some(&["GPU-b"]))];
        assert_eq!(counted(&legacy, "GPU-c", minute), range_mask(10, 20));
    }

    proptest! {
        #[test]
        fn overlapping_windows_never_count_a_second_twice(windows in proptest::collection::vec((0i64..3600, 1i64..600), 1..20)) {
            let base = t("2026-11-29T14:00:00Z");
            let mut covered: BTreeMap<DateTime<Utc>, MinuteMask> = BTreeMap::new();
            let mut counted = 0u64;
            let mut truth = std::collections::BTreeSet::new();
            for (offset, len) in windows {
                let start = base + TimeDelta::seconds(offset);
                let end = start + TimeDelta::seconds(len);
                for s in offset..offset + len { truth.insert(s); }
                for (minute, mask) in window_masks(start, end) {
                    let old = covered.entry(minute).or_default();
                    counted += u64::from((mask & !*old).count_ones());
                    *old |= mask;
                }
            }
            prop_assert_eq!(counted, truth.len() as u64);
        }
    }

    #[test]
    fn a_node_second_counts_once_whatever_devices_carried_it() {
        let earlier = vec![RecordedWindow {
            masks: window_masks(t("2026-11-29T14:59:50Z"), t("2026-11-29T15:00:10Z")),
            devices: Some(HashSet::from(["GPU-a".to_owned()])),
        }];
        // Overlaps the earlier window by 5 s in each hour, whatever its devices.
        let masks = window_masks(t("2026-11-29T14:59:45Z"), t("2026-11-29T15:00:20Z"));
        let fresh = fresh_node_seconds(&masks, &earlier);
        assert_eq!(fresh[&t("2026-11-29T14:00:00Z")], 5);
        assert_eq!(fresh[&t("2026-11-29T15:00:00Z")], 10);
        assert_eq!(fresh.len(), 2);
    }
}
