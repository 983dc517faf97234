//! Folding one device sample into minute buckets (pure). A sample summarises its window:
//! its utilization and memory hold for every newly counted second of the window. Those
//! seconds are attributed to allocations by time — a whole GPU or MIG instance to the
//! allocation holding it, a shared GPU's processes to their own (valid) allocations —
//! and split by the processes' label sets. Seconds no allocation holds stay under the nil
//! allocation, for utilization reports, never billed.
//!
//! Rounding: utilization percentages are taken to 6 decimal places; GiB-seconds to 9;
//! kWh to 12. Everything after that is exact decimal arithmetic.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use neocloud_schema::ids::TenantId;
use neocloud_schema::ingest::{DeviceSample, ProcessSample};
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use uuid::Uuid;

use crate::coverage::{MinuteMask, clip};

const GIB: i64 = 1 << 30;

/// What an allocation holds on the sampled GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    Whole,
    /// A MIG instance of this profile name.
    Mig(String),
    /// A fraction of a shared GPU.
    Fraction,
}

/// An allocation that may own some of the sample's seconds.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub allocation: Uuid,
    pub tenant: TenantId,
    pub sku: Uuid,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
    pub holding: Holding,
}

/// One bucket increment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Increment {
    pub minute: DateTime<Utc>,
    /// `Uuid::nil()` when no allocation holds these seconds.
    pub allocation: Uuid,
    pub tenant: Option<TenantId>,
    pub sku: Option<Uuid>,
    pub label: String,
    pub active_seconds: Decimal,
    pub memory_gib_seconds: Decimal,
    pub energy_kwh: Decimal,
    pub seconds: i64,
}

fn pct(value: Option<f64>) -> Decimal {
    value
        .and_then(Decimal::from_f64)
        .map_or(Decimal::ZERO, |d| d.round_dp(6))
}

/// The factor that brings a GPU's processes' SM utilization down to 100% together: one
/// GPU cannot be more than fully busy, so a sum above it (sampling noise, a lie) is
/// scaled, never billed. `None` when they fit.
pub fn process_util_scale(device: &DeviceSample) -> Option<Decimal> {
    let sum: Decimal = device.processes.iter().map(|p| pct(p.sm_util_pct)).sum();
    (sum > Decimal::ONE_HUNDRED).then(|| Decimal::ONE_HUNDRED / sum)
}

fn gib_seconds(bytes: Option<u64>, seconds: i64) -> Decimal {
    let bytes = Decimal::from(bytes.unwrap_or(0));
    (bytes * Decimal::from(seconds) / Decimal::from(GIB)).round_dp(9)
}

/// The canonical label key of a process: `k=v` pairs sorted by key, joined by `,`.
pub fn label_key(labels: &BTreeMap<String, String>) -> String {
    let mut key = String::with_capacity(labels.iter().map(|(k, v)| k.len() + v.len() + 2).sum());
    for (k, v) in labels {
        if !key.is_empty() {
            key.push(',');
        }
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
    key
}

/// Splits `total` by `weights` exactly: the last share takes the remainder.
fn split(total: Decimal, weights: &[Decimal]) -> Vec<Decimal> {
    let sum: Decimal = weights.iter().sum();
    if weights.is_empty() {
        return Vec::new();
    }
    if sum.is_zero() {
        let n = Decimal::from(weights.len());
        let each = (total / n).round_dp(12);
        let mut out = vec![each; weights.len()];
        if let Some(last) = out.last_mut() {
            *last = total - each * (n - Decimal::ONE);
        }
        return out;
    }
    let mut out = Vec::with_capacity(weights.len());
    let mut given = Decimal::ZERO;
    for (i, w) in weights.iter().enumerate() {
        let share = if i + 1 == weights.len() {
            total - given
        } else {
            (total * w / sum).round_dp(12)
        };
        given += share;
        out.push(share);
    }
    out
}

/// Device-level quantities for `seconds`, split across the device's processes' label sets.
fn device_increments(
    device: &DeviceSample,
    minute: DateTime<Utc>,
    owner: Option<&Candidate>,
    seconds: i64,
    energy_kwh: Decimal,
) -> Vec<Increment> {
    let active = pct(device.sm_util_pct) / Decimal::ONE_HUNDRED * Decimal::from(seconds);
    let memory = gib_seconds(device.fb_used_bytes, seconds);
    let base = |label: String, active, memory, energy| Increment {
        minute,
        allocation: owner.map_or(Uuid::nil(), |c| c.allocation),
        tenant: owner.map(|c| c.tenant),
        sku: owner.map(|c| c.sku),
        label,
        active_seconds: active,
        memory_gib_seconds: memory,
        energy_kwh: energy,
        seconds,
    };
    let mut groups = label_groups(device);
    if groups.len() <= 1 {
        let label = groups.pop().map(|g| g.0).unwrap_or_default();
        return vec![base(label, active, memory, energy_kwh)];
    }
    let sm: Vec<Decimal> = groups.iter().map(|g| g.1.0).collect();
    let fb: Vec<Decimal> = groups.iter().map(|g| g.1.1).collect();
    let labels: Vec<String> = groups.into_iter().map(|g| g.0).collect();
    let actives = split(active, &sm);
    let memories = split(memory, &fb);
    let energies = split(energy_kwh, &sm);
    labels
        .into_iter()
        .zip(actives)
        .zip(memories)
        .zip(energies)
        .map(|(((label, a), m), e)| {
            let mut inc = base(label, a, m, e);
            // Seconds are counted once per bucket key; only the first label carries them.
            inc.seconds = 0;
            inc
        })
        .enumerate()
        .map(|(i, mut inc)| {
            if i == 0 {
                inc.seconds = seconds;
            }
            inc
        })
        .collect()
}

/// The device's processes by label key, in key order, with their SM utilization and
/// memory summed: one bucket per distinct label set.
fn label_groups(device: &DeviceSample) -> Vec<(String, (Decimal, Decimal))> {
    // Processes are grouped by their label maps first, so a key is built once a set.
    let mut sets: BTreeMap<&BTreeMap<String, String>, (Decimal, Decimal)> = BTreeMap::new();
    for p in &device.processes {
        let entry = sets.entry(&p.labels).or_default();
        entry.0 += pct(p.sm_util_pct);
        entry.1 += Decimal::from(p.fb_used_bytes.unwrap_or(0));
    }
    let mut groups: Vec<(String, (Decimal, Decimal))> = sets
        .into_iter()
        .map(|(labels, sums)| (label_key(labels), sums))
        .collect();
    groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Label values may hold `,` or `=`: distinct sets with one key are one bucket.
    groups.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1.0 += later.1.0;
            kept.1.1 += later.1.1;
        }
        same
    });
    groups
}

/// A shared GPU's process: its share of the GPU (`scale`d, rounded down so the shares of
/// one GPU never pass 100%) over `seconds`.
fn process_increment(
    p: &ProcessSample,
    minute: DateTime<Utc>,
    owner: Option<&Candidate>,
    seconds: i64,
    scale: Decimal,
) -> Increment {
    let util = (pct(p.sm_util_pct) * scale)
        .round_dp_with_strategy(6, rust_decimal::RoundingStrategy::ToZero);
    Increment {
        minute,
        allocation: owner.map_or(Uuid::nil(), |c| c.allocation),
        tenant: owner.map(|c| c.tenant),
        sku: owner.map(|c| c.sku),
        label: label_key(&p.labels),
        active_seconds: util / Decimal::ONE_HUNDRED * Decimal::from(seconds),
        memory_gib_seconds: gib_seconds(p.fb_used_bytes, seconds),
        energy_kwh: Decimal::ZERO,
        seconds,
    }
}

/// The allocation a MIG instance's seconds belong to: the one allocation of its profile on
/// the GPU or, where several hold that profile, the one its processes name. `None` for a
/// whole GPU or an instance nobody holds.
pub fn mig_owner<'a>(device: &DeviceSample, candidates: &'a [Candidate]) -> Option<&'a Candidate> {
    let profile = device.mig_profile.as_deref()?;
    let same: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| matches!(&c.holding, Holding::Mig(p) if p == profile))
        .collect();
    if same.len() == 1 {
        return same.first().copied();
    }
    // Several instances of the profile on this GPU: trust a process's allocation id, but
    // only if it names one of them.
    device
        .processes
        .iter()
        .filter_map(|p| p.allocation_id)
        .find_map(|id| same.iter().copied().find(|c| c.allocation == id.as_uuid()))
}

/// Folds one device's newly counted seconds (`fresh`, per minute) into increments.
/// `energy_kwh` is the device's energy over the fresh seconds (whole GPUs only).
pub fn fold(
    device: &DeviceSample,
    fresh: &BTreeMap<DateTime<Utc>, MinuteMask>,
    candidates: &[Candidate],
    energy_kwh: Decimal,
) -> Vec<Increment> {
    let total_seconds: i64 = fresh.values().map(|m| i64::from(m.count_ones())).sum();
    if total_seconds == 0 {
        return Vec::new();
    }
    let is_mig = device.uuid.starts_with("MIG-");
    let holders = Holders {
        device,
        is_mig,
        owners: if is_mig {
            mig_owner(device, candidates).into_iter().collect()
        } else {
            candidates
                .iter()
                .filter(|c| c.holding == Holding::Whole)
                .collect()
        },
        fractions: candidates
            .iter()
            .filter(|c| c.holding == Holding::Fraction)
            .collect(),
        energy_per_second: energy_kwh / Decimal::from(total_seconds),
    };
    let mut out = Vec::new();
    for (&minute, &mask) in fresh {
        holders.fold_minute(minute, mask, &mut out);
    }
    out
}

/// Who may own a device's seconds: the allocations holding the whole GPU or MIG instance,
/// else those holding fractions of a shared GPU.
struct Holders<'a> {
    device: &'a DeviceSample,
    is_mig: bool,
    /// The MIG instance's owner, or the allocations holding the whole GPU.
    owners: Vec<&'a Candidate>,
    fractions: Vec<&'a Candidate>,
    energy_per_second: Decimal,
}

impl Holders<'_> {
    /// One minute's seconds: first to the owners of the whole GPU or instance; the rest to
    /// a shared GPU's processes, or to nobody.
    fn fold_minute(&self, minute: DateTime<Utc>, mask: MinuteMask, out: &mut Vec<Increment>) {
        let mut rest = mask;
        for &owner in &self.owners {
            let mine = held_in(owner, rest, minute);
            rest &= !mine;
            let secs = i64::from(mine.count_ones());
            if secs > 0 {
                let energy = self.energy_for(secs);
                out.extend(device_increments(
                    self.device,
                    minute,
                    Some(owner),
                    secs,
                    energy,
                ));
            }
        }
        let secs = i64::from(rest.count_ones());
        if secs == 0 {
            return;
        }
        if !self.is_mig && !self.fractions.is_empty() {
            self.shared_gpu(minute, rest, out);
        } else {
            let energy = self.energy_for(secs);
            out.extend(device_increments(self.device, minute, None, secs, energy));
        }
    }

    /// A shared GPU: each process to its own allocation, if it holds this GPU then.
    fn shared_gpu(&self, minute: DateTime<Utc>, rest: MinuteMask, out: &mut Vec<Increment>) {
        let scale = process_util_scale(self.device).unwrap_or(Decimal::ONE);
        for p in &self.device.processes {
            let owner = p.allocation_id.and_then(|id| {
                self.fractions
                    .iter()
                    .copied()
                    .find(|c| c.allocation == id.as_uuid())
            });
            let owned = owner.map_or(rest, |c| held_in(c, rest, minute));
            let s = i64::from(owned.count_ones());
            if s > 0 {
                out.push(process_increment(p, minute, owner, s, scale));
            }
        }
    }

    /// The device's energy over `secs` seconds; a MIG instance reports none of its own.
    fn energy_for(&self, secs: i64) -> Decimal {
        if self.is_mig {
            Decimal::ZERO
        } else {
            self.energy_per_second * Decimal::from(secs)
        }
    }
}

/// The seconds of `mask` (of the minute starting at `minute`) that `holder` held.
fn held_in(holder: &Candidate, mask: MinuteMask, minute: DateTime<Utc>) -> MinuteMask {
    let end = holder.end.unwrap_or(minute + chrono::TimeDelta::minutes(1));
    clip(mask, minute, holder.start, end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::window_masks;
    use neocloud_schema::ids::AllocationId;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    fn device(sm: f64, processes: Vec<ProcessSample>) -> DeviceSample {
        DeviceSample {
            uuid: "GPU-1".into(),
            parent_uuid: None,
            mig_profile: None,
            sm_util_pct: Some(sm),
            fb_used_bytes: Some(1 << 30),
            energy_mj: None,
            power_mw: None,
            temp_c: None,
            health: None,
            events: vec![],
            processes,
        }
    }

    fn process(alloc: Option<Uuid>, label: &str, sm: f64) -> ProcessSample {
        ProcessSample {
            pid: 1,
            allocation_id: alloc.map(AllocationId::from),
            labels: [("project".to_owned(), label.to_owned())].into(),
            sm_util_pct: Some(sm),
            fb_used_bytes: Some(1 << 29),
        }
    }

    fn candidate(holding: Holding, start: &str, end: Option<&str>) -> Candidate {
        Candidate {
            allocation: Uuid::now_v7(),
            tenant: TenantId::new(),
            sku: Uuid::now_v7(),
            start: t(start),
            end: end.map(t),
            holding,
        }
    }

    fn sum(incs: &[Increment], alloc: Uuid) -> (Decimal, i64) {
        incs.iter()
            .filter(|i| i.allocation == alloc)
            .fold((Decimal::ZERO, 0), |(a, s), i| {
                (a + i.active_seconds, s + i.seconds)
            })
    }

    #[test]
    fn ten_seconds_at_half_utilization_are_five_active_seconds() {
        let fresh = window_masks(t("2026-11-29T14:00:02Z"), t("2026-11-29T14:00:12Z"));
        let c = candidate(Holding::Whole, "2026-11-29T14:00:00Z", None);
        let incs = fold(
            &device(50.0, vec![]),
            &fresh,
            std::slice::from_ref(&c),
            Decimal::ZERO,
        );
        assert_eq!(sum(&incs, c.allocation), (Decimal::from(5), 10));
        assert_eq!(incs[0].memory_gib_seconds, Decimal::from(10));
    }

    #[test]
    fn seconds_before_an_allocation_starts_are_not_billed_to_it() {
        let fresh = window_masks(t("2026-11-29T14:00:00Z"), t("2026-11-29T14:00:10Z"));
        let c = candidate(Holding::Whole, "2026-11-29T14:00:04Z", None);
        let incs = fold(
            &device(100.0, vec![]),
            &fresh,
            std::slice::from_ref(&c),
            Decimal::ZERO,
        );
        assert_eq!(sum(&incs, c.allocation), (Decimal::from(6), 6));
        assert_eq!(sum(&incs, Uuid::nil()), (Decimal::from(4), 4));
    }

    #[test]
    fn a_shared_gpu_bills_each_process_to_its_own_allocation_only() {
        let fresh = window_masks(t("2026-11-29T14:00:00Z"), t("2026-11-29T14:00:10Z"));
        let a = candidate(Holding::Fraction, "2026-11-29T13:00:00Z", None);
        let b = candidate(Holding::Fraction, "2026-11-29T13:00:00Z", None);
        let stranger = Uuid::now_v7();
        let d = device(
            90.0,
            vec![
                process(Some(a.allocation), "x", 30.0),
                process(Some(b.allocation), "y", 60.0),
                process(Some(stranger), "z", 10.0),
            ],
        );
        let incs = fold(&d, &fresh, &[a.clone(), b.clone()], Decimal::ZERO);
        assert_eq!(sum(&incs, a.allocation).0, Decimal::from(3));
        assert_eq!(sum(&incs, b.allocation).0, Decimal::from(6));
        assert_eq!(
            sum(&incs, Uuid::nil()).0,
            Decimal::from(1),
            "an unknown allocation id is not billed"
        );
        assert!(incs.iter().all(|i| i.allocation != stranger));
    }

    #[test]
    fn a_label_key_lists_pairs_by_key() {
        let labels = [("team", "infra"), ("project", "llm")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        assert_eq!(label_key(&labels), "project=llm,team=infra");
        assert_eq!(label_key(&BTreeMap::new()), "");
    }

    #[test]
    fn label_sets_that_read_alike_share_one_bucket() {
        let fresh = window_masks(t("2026-11-29T14:00:00Z"), t("2026-11-29T14:00:10Z"));
        let c = candidate(Holding::Whole, "2026-11-29T13:00:00Z", None);
        let with = |pairs: &[(&str, &str)], sm: f64| {
            let mut p = process(None, "", sm);
            p.labels = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            p
        };
        // Both sets read `a=b,c=d`.
        let d = device(
            100.0,
            vec![
                with(&[("a", "b,c=d")], 10.0),
                with(&[("a", "b"), ("c", "d")], 30.0),
                with(&[("project", "z")], 60.0),
            ],
        );
        let incs = fold(&d, &fresh, std::slice::from_ref(&c), Decimal::ZERO);
        let rows: Vec<(&str, Decimal, i64)> = incs
            .iter()
            .map(|i| (i.label.as_str(), i.active_seconds, i.seconds))
            .collect();
        assert_eq!(
            rows,
            [
                ("a=b,c=d", Decimal::from(4), 10),
                ("project=z", Decimal::from(6), 0)
            ]
        );
    }

    #[test]
    fn label_sets_split_a_whole_gpu_exactly() {
        let fresh = window_masks(t("2026-11-29T14:00:00Z"), t("2026-11-29T14:00:07Z"));
        let c = candidate(Holding::Whole, "2026-11-29T13:00:00Z", None);
        let d = device(
            100.0,
            vec![process(None, "a", 1.0), process(None, "b", 2.0)],
        );
        let incs = fold(&d, &fresh, std::slice::from_ref(&c), Decimal::new(7, 3));
        let total: Decimal = incs.iter().map(|i| i.active_seconds).sum();
        let energy: Decimal = incs.iter().map(|i| i.energy_kwh).sum();
        assert_eq!(total, Decimal::from(7));
        assert_eq!(energy, Decimal::new(7, 3));
        assert_eq!(incs.len(), 2);
        assert_eq!(incs.iter().map(|i| i.seconds).sum::<i64>(), 7);
    }
}
