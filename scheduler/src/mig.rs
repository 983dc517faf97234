//! MIG start-slot choice. Where a profile can go on one GPU is NVIDIA's table
//! (`neocloud_schema::mig`); which of the free starts to take is decided here: the one
//! that blocks the fewest instances of larger profiles, so a GPU keeps room for the big
//! profiles as long as it can (`shared/reference/mig.md`).

use std::sync::OnceLock;

use neocloud_schema::mig::{MigProfile, SlotMask};

/// How many instances of profiles larger than `profile` the GPU loses if `profile` is
/// created at `start` (summed over every larger profile).
pub fn blocked_larger(mask: SlotMask, profile: MigProfile, start: u8) -> u32 {
    let after = mask.union(profile.mask_at(start));
    let table = capacity_table();
    MigProfile::ALL
        .into_iter()
        .enumerate()
        .filter(|&(_, p)| {
            p.slots() > profile.slots() || p.compute_slices() > profile.compute_slices()
        })
        .map(|(i, _)| {
            u32::from(table[usize::from(mask.0)][i]) - u32::from(table[usize::from(after.0)][i])
        })
        .sum()
}

/// `SlotMask::capacity_for` of every mask and profile, computed once (256 × 6 entries),
/// because placement asks it for every candidate GPU.
fn capacity_table() -> &'static [[u8; 6]; 256] {
    static TABLE: OnceLock<[[u8; 6]; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = [[0u8; 6]; 256];
        for (bits, row) in (0..=u8::MAX).zip(table.iter_mut()) {
            for (i, profile) in MigProfile::ALL.into_iter().enumerate() {
                row[i] = SlotMask(bits).capacity_for(profile);
            }
        }
        table
    })
}

/// The free start that blocks the fewest larger instances (lowest start on a tie).
pub fn best_start(mask: SlotMask, profile: MigProfile) -> Option<u8> {
    mask.free_starts(profile)
        .min_by_key(|&start| (blocked_larger(mask, profile, start), start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1g_beside_a_4g_goes_where_it_keeps_a_3g_possible_elsewhere() {
        // Slots 0-3 hold a 4g; of 4,5,6 a 1g at 6 keeps the 2g at 4 possible.
        let mask = MigProfile::FourG.mask_at(0);
        assert_eq!(best_start(mask, MigProfile::OneG), Some(6));
    }

    #[test]
    fn a_3g_on_an_empty_gpu_takes_slot_4_so_a_4g_still_fits() {
        assert_eq!(best_start(SlotMask::EMPTY, MigProfile::ThreeG), Some(4));
        assert!(MigProfile::ThreeG.mask_at(4).fits_at(MigProfile::FourG, 0));
    }

    #[test]
    fn a_full_gpu_has_no_start() {
        assert_eq!(best_start(SlotMask::FULL, MigProfile::OneG), None);
    }
}
