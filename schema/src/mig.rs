//! MIG geometry: a MIG-capable GPU is an axis of 8 memory slots; a GPU instance of a
//! profile occupies `slots` consecutive slots starting at one of its valid start slots
//! (NVIDIA MIG user guide, `nvidia-smi mig -lgipp`). See `shared/reference/mig.md`.
//!
//! Occupancy of one GPU is a `SlotMask` (bit i set = slot i used), so overlap and
//! validity checks are a couple of bit operations.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::gpu::GpuModel;

/// Memory slots per MIG-capable GPU.
pub const SLOTS_PER_GPU: u8 = 8;

/// Compute slices of a whole GPU; a profile's share of a GPU is `compute_slices / 7`.
pub const COMPUTE_SLICES_PER_GPU: u8 = 7;

/// A GPU-instance profile, independent of the card's memory size. Names are per model
/// (`3g.40gb` on an 80 GB card, `3g.71gb` on an H200): see [`MigProfile::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigProfile {
    /// 1g with one memory slot (`1g.10gb` on 80 GB cards).
    OneG,
    /// 1g with two memory slots (`1g.20gb` on 80 GB cards).
    OneGDoubleMemory,
    TwoG,
    ThreeG,
    FourG,
    SevenG,
}

impl MigProfile {
    /// Smallest first; the scheduler's "larger profiles" are the ones after a profile here.
    pub const ALL: [MigProfile; 6] = [
        MigProfile::OneG,
        MigProfile::OneGDoubleMemory,
        MigProfile::TwoG,
        MigProfile::ThreeG,
        MigProfile::FourG,
        MigProfile::SevenG,
    ];

    /// Consecutive memory slots the instance occupies.
    pub fn slots(self) -> u8 {
        match self {
            MigProfile::OneG => 1,
            MigProfile::OneGDoubleMemory | MigProfile::TwoG => 2,
            MigProfile::ThreeG | MigProfile::FourG => 4,
            MigProfile::SevenG => 8,
        }
    }

    /// Compute slices (the `Ng` in the name).
    pub fn compute_slices(self) -> u8 {
        match self {
            MigProfile::OneG | MigProfile::OneGDoubleMemory => 1,
            MigProfile::TwoG => 2,
            MigProfile::ThreeG => 3,
            MigProfile::FourG => 4,
            MigProfile::SevenG => 7,
        }
    }

    /// The slots an instance may start at.
    pub fn valid_starts(self) -> &'static [u8] {
        match self {
            MigProfile::OneG => &[0, 1, 2, 3, 4, 5, 6],
            MigProfile::OneGDoubleMemory => &[0, 2, 4, 6],
            MigProfile::TwoG => &[0, 2, 4],
            MigProfile::ThreeG => &[0, 4],
            MigProfile::FourG | MigProfile::SevenG => &[0],
        }
    }

    /// How many instances of this profile fit on one empty GPU.
    pub fn max_per_gpu(self) -> u8 {
        match self {
            MigProfile::OneG => 7,
            MigProfile::OneGDoubleMemory => 4,
            MigProfile::TwoG => 3,
            MigProfile::ThreeG => 2,
            MigProfile::FourG | MigProfile::SevenG => 1,
        }
    }

    /// NVML's GPU-instance profile id.
    pub fn nvml_profile_id(self) -> u32 {
        match self {
            MigProfile::OneG => 19,
            MigProfile::OneGDoubleMemory => 15,
            MigProfile::TwoG => 14,
            MigProfile::ThreeG => 9,
            MigProfile::FourG => 5,
            MigProfile::SevenG => 0,
        }
    }

    /// The slots an instance starting at `start` occupies.
    pub fn mask_at(self, start: u8) -> SlotMask {
        let width = u16::from(self.slots());
        // A GPU has 8 slots: the low byte is the mask, bits past the last slot fall off.
        let [low, _] = (((1u16 << width) - 1) << start).to_le_bytes();
        SlotMask(low)
    }

    /// Framebuffer of one instance on `model`, in whole GB as NVIDIA names it.
    pub fn memory_gb(self, model: GpuModel) -> u32 {
        // NVIDIA rounds slot memory half up: 141 GB × 4/8 = 70.5 → 71 (`3g.71gb`).
        let total = model.spec().memory_gb * u32::from(self.slots());
        (total + u32::from(SLOTS_PER_GPU) / 2) / u32::from(SLOTS_PER_GPU)
    }

    /// Framebuffer of one instance on `model` in MiB (the model's memory × slots / 8).
    pub fn memory_mib(self, model: GpuModel) -> u64 {
        model.memory_mib() * u64::from(self.slots()) / u64::from(SLOTS_PER_GPU)
    }

    /// NVIDIA's name for this profile on `model`, e.g. `3g.40gb` on an H100.
    pub fn name(self, model: GpuModel) -> String {
        format!("{}g.{}gb", self.compute_slices(), self.memory_gb(model))
    }

    /// Compute slices named by a profile name of any card (`3` for `3g.40gb`), for
    /// callers that know the name but not the card.
    pub fn compute_slices_in_name(name: &str) -> Option<u8> {
        let (slices, rest) = name.trim().split_once('g')?;
        let slices: u8 = slices.parse().ok()?;
        (rest.starts_with('.') && MigProfile::ALL.iter().any(|p| p.compute_slices() == slices))
            .then_some(slices)
    }

    /// Parses NVIDIA's profile name for `model` (`1g.10gb`, `7g.141gb`, …).
    pub fn parse(name: &str, model: GpuModel) -> Result<Self, MigError> {
        if !model.mig_capable() {
            return Err(MigError::NotMigCapable { model });
        }
        MigProfile::ALL
            .into_iter()
            .find(|p| p.name(model).eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| MigError::UnknownProfile {
                name: name.to_owned(),
                model,
            })
    }
}

/// Whether instances of all of `profiles` can exist on one GPU at once: each at a valid
/// start, no two sharing a slot, within the GPU's compute slices.
pub fn fit_together(profiles: &[MigProfile]) -> bool {
    fn place(rest: &[MigProfile], used: SlotMask) -> bool {
        let Some((first, rest)) = rest.split_first() else {
            return true;
        };
        used.free_starts(*first)
            .any(|start| place(rest, used.union(first.mask_at(start))))
    }
    let slices: u32 = profiles.iter().map(|p| u32::from(p.compute_slices())).sum();
    if profiles.len() > usize::from(SLOTS_PER_GPU) || slices > u32::from(COMPUTE_SLICES_PER_GPU) {
        return false;
    }
    let mut widest_first = profiles.to_vec();
    widest_first.sort_by_key(|p| std::cmp::Reverse(p.slots()));
    place(&widest_first, SlotMask::EMPTY)
}

/// Which of a GPU's 8 memory slots are taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SlotMask(pub u8);

impl SlotMask {
    pub const EMPTY: SlotMask = SlotMask(0);
    pub const FULL: SlotMask = SlotMask(u8::MAX);

    pub fn used_slots(self) -> u32 {
        self.0.count_ones()
    }

    pub fn overlaps(self, other: SlotMask) -> bool {
        self.0 & other.0 != 0
    }

    pub fn union(self, other: SlotMask) -> SlotMask {
        SlotMask(self.0 | other.0)
    }

    pub fn without(self, other: SlotMask) -> SlotMask {
        SlotMask(self.0 & !other.0)
    }

    /// Whether `profile` may start at `start` on a GPU with these slots taken.
    pub fn fits_at(self, profile: MigProfile, start: u8) -> bool {
        profile.valid_starts().contains(&start) && !self.overlaps(profile.mask_at(start))
    }

    /// The valid start slots where `profile` fits now, lowest first.
    pub fn free_starts(self, profile: MigProfile) -> impl Iterator<Item = u8> {
        profile
            .valid_starts()
            .iter()
            .copied()
            .filter(move |&start| self.fits_at(profile, start))
    }

    /// How many more instances of `profile` could still be placed (greedily from the
    /// lowest start slot, which is optimal for a single profile on this geometry).
    pub fn capacity_for(self, profile: MigProfile) -> u8 {
        let mut mask = self;
        let mut count = 0;
        while let Some(start) = mask.free_starts(profile).next() {
            mask = mask.union(profile.mask_at(start));
            count += 1;
        }
        count
    }
}

impl fmt::Display for SlotMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for slot in 0..SLOTS_PER_GPU {
            f.write_str(if self.0 & (1 << slot) != 0 { "#" } else { "." })?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigError {
    #[error("GPU model {model} does not support MIG")]
    NotMigCapable { model: GpuModel },
    #[error("`{name}` is not a MIG profile of {model}")]
    UnknownProfile { name: String, model: GpuModel },
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn instances_fit_together_only_as_the_geometry_allows() {
        use MigProfile::*;
        assert!(fit_together(&[]));
        assert!(fit_together(&[ThreeG, TwoG, OneG]));
        assert!(fit_together(&[ThreeG, ThreeG]));
        assert!(fit_together(&[OneG; 7]));
        assert!(fit_together(&[FourG, TwoG, OneG]));
        assert!(!fit_together(&[OneG; 8]));
        assert!(!fit_together(&[ThreeG; 3]));
        assert!(!fit_together(&[SevenG, OneG]));
        assert!(!fit_together(&[FourG, FourG]));
        // A 4g and a 3g take every slot and all 7 compute slices.
        assert!(!fit_together(&[FourG, ThreeG, OneG]));
    }

    #[test]
    fn profile_names_follow_nvidia_for_each_card_size() {
        let names = |model| {
            MigProfile::ALL
                .into_iter()
                .map(|p| p.name(model))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(GpuModel::H100),
            [
                "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"
            ]
        );
        assert_eq!(
            names(GpuModel::H200),
            [
                "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"
            ]
        );
        assert_eq!(
            names(GpuModel::A100_40),
            [
                "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"
            ]
        );
    }

    #[test]
    fn a_profile_name_parses_only_on_its_card() {
        assert_eq!(
            MigProfile::parse("3g.40gb", GpuModel::H100),
            Ok(MigProfile::ThreeG)
        );
        assert!(MigProfile::parse("3g.40gb", GpuModel::H200).is_err());
        assert_eq!(
            MigProfile::parse("1g.10gb", GpuModel::L40S),
            Err(MigError::NotMigCapable {
                model: GpuModel::L40S
            })
        );
    }

    #[test]
    fn compute_slices_read_from_any_cards_profile_name() {
        assert_eq!(MigProfile::compute_slices_in_name("3g.40gb"), Some(3));
        assert_eq!(MigProfile::compute_slices_in_name("7g.141gb"), Some(7));
        assert_eq!(MigProfile::compute_slices_in_name("5g.50gb"), None);
        assert_eq!(MigProfile::compute_slices_in_name("garbage"), None);
    }

    #[test]
    fn the_reference_consequences_hold() {
        // 4g at slot 0 plus 3g at slot 4 is valid.
        let four = MigProfile::FourG.mask_at(0);
        assert!(four.fits_at(MigProfile::ThreeG, 4));
        // A 3g at slot 0 blocks every 4g on that GPU.
        assert_eq!(
            MigProfile::ThreeG
                .mask_at(0)
                .capacity_for(MigProfile::FourG),
            0
        );
        // A 2g can never start at slot 6; a 1g at slot 1 blocks the 2g and 3g at 0.
        assert!(!SlotMask::EMPTY.fits_at(MigProfile::TwoG, 6));
        let one = MigProfile::OneG.mask_at(1);
        assert!(!one.fits_at(MigProfile::TwoG, 0));
        assert!(!one.fits_at(MigProfile::ThreeG, 0));
    }

    #[test]
    fn an_empty_gpu_holds_the_documented_maximum_of_each_profile() {
        for profile in MigProfile::ALL {
            assert_eq!(
                SlotMask::EMPTY.capacity_for(profile),
                profile.max_per_gpu(),
                "{profile:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn placing_profiles_at_free_starts_never_overlaps(choices in proptest::collection::vec((0usize..6, 0usize..8), 0..20)) {
            let mut mask = SlotMask::EMPTY;
            let mut placed: Vec<SlotMask> = Vec::new();
            for (p, pick) in choices {
                let profile = MigProfile::ALL[p];
                let starts: Vec<u8> = mask.free_starts(profile).collect();
                if starts.is_empty() { continue; }
                let start = starts[pick % starts.len()];
                prop_assert!(profile.valid_starts().contains(&start));
                let m = profile.mask_at(start);
                for other in &placed { prop_assert!(!other.overlaps(m)); }
                placed.push(m);
                mask = mask.union(m);
            }
            prop_assert!(mask.used_slots() <= u32::from(SLOTS_PER_GPU));
        }
    }
}
