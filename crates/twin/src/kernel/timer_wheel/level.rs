//! The levels of the timer wheel, as pure index math: which level a timer is filed in, the
//! granularity it is rounded up to, and its bucket ([`place`]).
//!
//! Nothing here holds state: these are the kernel's `calc_index()` and `LVL_*` macros of
//! `kernel/time/timer.c` as `const fn`s, so that the boundary tables below can check every
//! level edge exhaustively. The [module documentation of the wheel](super) explains the
//! rounding and why buckets never alias.

/// log2 of the granularity ratio between neighbouring levels (8).
pub const LVL_CLK_SHIFT: u32 = 3;
/// log2 of the number of buckets per level.
pub const LVL_BITS: u32 = 6;
/// Buckets per level.
pub const LVL_SIZE: usize = 1 << LVL_BITS;
/// Mask selecting a bucket within a level.
pub(crate) const LVL_MASK: u64 = (LVL_SIZE as u64) - 1;
/// The most levels a wheel can have (HZ > 100).
pub const MAX_DEPTH: usize = 9;

/// Number of levels of the wheel for a given HZ: 9 when HZ > 100, else 8.
pub const fn depth_for_hz(hz: u32) -> usize {
    if hz > 100 { 9 } else { 8 }
}

/// log2 of the granularity of `level`, in jiffies.
pub const fn level_shift(level: usize) -> u32 {
    level as u32 * LVL_CLK_SHIFT
}

/// Granularity of `level` in jiffies: `8^level`.
pub const fn level_granularity(level: usize) -> u64 {
    1 << level_shift(level)
}

/// Smallest delta (requested expiry minus wheel clock, in jiffies) that is filed at `level`.
///
/// Level `n ≥ 1` starts at `63 · 8^(n-1)`: one granule below the end of the previous level,
/// because rounding up adds up to one granule and the rounded expiry must still fit.
pub const fn level_start(level: usize) -> u64 {
    if level == 0 {
        0
    } else {
        (LVL_SIZE as u64 - 1) << level_shift(level - 1)
    }
}

/// Deltas at or beyond this many jiffies exceed the capacity of a wheel of `depth` levels.
pub const fn timeout_cutoff(depth: usize) -> u64 {
    level_start(depth)
}

/// The delta a too-long timeout is clamped to: the cutoff minus one granule of the last level.
pub const fn timeout_max(depth: usize) -> u64 {
    timeout_cutoff(depth) - level_granularity(depth - 1)
}

/// The level a timer `delta` jiffies ahead of the wheel clock is filed in, for a wheel of
/// `depth` levels (deltas beyond the last level's range go to the last level).
pub const fn level_for(delta: u64, depth: usize) -> usize {
    let last = depth - 1;
    let mut level = 0;
    while level < last {
        if delta < level_start(level + 1) {
            return level;
        }
        level += 1;
    }
    last
}

/// The effective expiry of a timer requested for `expires` and filed at `level`: the smallest
/// multiple of the level's granularity strictly greater than `expires`.
///
/// # Panics
///
/// On overflow, i.e. when `expires` is within one granule of `u64::MAX`.
pub const fn round_up(expires: u64, level: usize) -> u64 {
    let shift = level_shift(level);
    ((expires >> shift) + 1) << shift
}

/// The bucket (0..64) within `level` of a timer requested for `expires`.
pub const fn bucket_for(expires: u64, level: usize) -> usize {
    (((expires >> level_shift(level)) + 1) & LVL_MASK) as usize
}

/// Where a timer goes: the answer of [`place`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Level (0..depth).
    pub level: usize,
    /// Bucket within the level (0..64).
    pub bucket: usize,
    /// Effective expiry in jiffies: the jiffy at which the timer will fire.
    pub expiry: u64,
}

/// Files a timer requested for `expires` into a wheel of `depth` levels whose clock is `clk`.
///
/// * `expires < clk` (already due): level 0, the clock's own bucket, effective expiry `clk`.
/// * delta ≥ [`timeout_cutoff`]: clamped to `clk + timeout_max(depth)` in the last level.
/// * otherwise: level [`level_for`], expiry [`round_up`], bucket [`bucket_for`].
pub const fn place(expires: u64, clk: u64, depth: usize) -> Placement {
    if expires < clk {
        return Placement {
            level: 0,
            bucket: (clk & LVL_MASK) as usize,
            expiry: clk,
        };
    }
    let delta = expires - clk;
    let level = level_for(delta, depth);
    let expires = if delta >= timeout_cutoff(depth) {
        clk + timeout_max(depth)
    } else {
        expires
    };
    Placement {
        level,
        bucket: bucket_for(expires, level),
        expiry: round_up(expires, level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DEPTHS: [usize; 2] = [8, 9];
    #[test]
    fn depth_follows_hz() {
        for (hz, depth) in [(100, 8), (101, 9), (250, 9), (300, 9), (1000, 9), (24, 8)] {
            assert_eq!(depth_for_hz(hz), depth, "hz {hz}");
        }
    }

    #[test]
    fn level_constants() {
        let starts = [
            0u64,
            63,
            504,
            4_032,
            32_256,
            258_048,
            2_064_384,
            16_515_072,
            132_120_576,
        ];
        for (level, &start) in starts.iter().enumerate() {
            assert_eq!(level_start(level), start, "level {level}");
            assert_eq!(
                level_granularity(level),
                8u64.pow(level as u32),
                "level {level}"
            );
        }
        assert_eq!(timeout_cutoff(9), 1_056_964_608);
        assert_eq!(timeout_max(9), 1_056_964_608 - 16_777_216);
        assert_eq!(timeout_cutoff(8), 132_120_576);
        assert_eq!(timeout_max(8), 132_120_576 - 2_097_152);
    }

    #[test]
    fn level_for_every_boundary() {
        for depth in DEPTHS {
            assert_eq!(level_for(0, depth), 0);
            assert_eq!(level_for(1, depth), 0);
            for level in 1..depth {
                let start = level_start(level);
                assert_eq!(
                    level_for(start - 1, depth),
                    level - 1,
                    "depth {depth} level {level}"
                );
                assert_eq!(
                    level_for(start, depth),
                    level,
                    "depth {depth} level {level}"
                );
                assert_eq!(
                    level_for(start + 1, depth),
                    level,
                    "depth {depth} level {level}"
                );
            }
            // Beyond the last level's range everything stays in the last level.
            let cutoff = timeout_cutoff(depth);
            for delta in [cutoff - 1, cutoff, cutoff + 1, u64::MAX] {
                assert_eq!(
                    level_for(delta, depth),
                    depth - 1,
                    "depth {depth} delta {delta}"
                );
            }
        }
        // The ninth level exists only in the deeper wheel.
        assert_eq!(level_for(level_start(8), 9), 8);
        assert_eq!(level_for(level_start(8), 8), 7);
    }

    #[test]
    fn round_up_and_bucket_every_level() {
        // (expires, level, effective expiry, bucket)
        let table: &[(u64, usize, u64, usize)] = &[
            (0, 0, 1, 1),
            (100, 0, 101, 37),
            (62, 0, 63, 63),
            (63, 0, 64, 0),
            (800, 1, 808, 37),
            (807, 1, 808, 37),
            (808, 1, 816, 38),
            (799, 1, 800, 36),
            (511, 1, 512, 0),
            (512, 1, 520, 1),
            (4_096, 2, 4_160, 1),
            (4_095, 2, 4_096, 0),
            (4_159, 2, 4_160, 1),
        ];
        for &(expires, level, effective, bucket) in table {
            assert_eq!(round_up(expires, level), effective, "{expires} @ {level}");
            assert_eq!(bucket_for(expires, level), bucket, "{expires} @ {level}");
        }
        // At every level, around every multiple of the granularity.
        for level in 0..MAX_DEPTH {
            let g = level_granularity(level);
            for k in [1u64, 2, 63, 64, 65, 1000] {
                let m = k * g;
                assert_eq!(round_up(m - 1, level), m, "level {level} k {k}");
                assert_eq!(round_up(m, level), m + g, "level {level} k {k}");
                assert_eq!(bucket_for(m - 1, level), (k % 64) as usize);
                assert_eq!(bucket_for(m, level), ((k + 1) % 64) as usize);
                if level > 0 {
                    // m + 1 is inside the same granule only when granules are wider than 1.
                    assert_eq!(round_up(m + 1, level), m + g, "level {level} k {k}");
                    assert_eq!(bucket_for(m + 1, level), ((k + 1) % 64) as usize);
                }
            }
        }
    }

    #[test]
    fn place_at_every_boundary() {
        for depth in DEPTHS {
            for clk in [0u64, 1, 7, 8, 4_294_667_296, 1 << 40] {
                // Past timers go into the clock's own level-0 bucket.
                if clk > 0 {
                    let p = place(clk - 1, clk, depth);
                    assert_eq!(
                        p,
                        Placement {
                            level: 0,
                            bucket: (clk % 64) as usize,
                            expiry: clk
                        }
                    );
                }
                for level in 0..depth {
                    let start = level_start(level);
                    for delta in [start.saturating_sub(1), start, start + 1] {
                        let p = place(clk + delta, clk, depth);
                        let want = level_for(delta, depth);
                        assert_eq!(p.level, want, "depth {depth} clk {clk} delta {delta}");
                        let g = level_granularity(want);
                        assert!(p.expiry > clk + delta && p.expiry - (clk + delta) <= g);
                        assert_eq!(p.expiry % g, 0);
                        assert_eq!(p.bucket, ((p.expiry / g) % 64) as usize);
                    }
                }
                // Clamping at the cutoff.
                let cutoff = timeout_cutoff(depth);
                let last = depth - 1;
                let capped = round_up(clk + timeout_max(depth), last);
                for delta in [cutoff, cutoff + 1, cutoff * 10] {
                    let p = place(clk + delta, clk, depth);
                    assert_eq!(
                        (p.level, p.expiry),
                        (last, capped),
                        "depth {depth} delta {delta}"
                    );
                }
                let below = place(clk + cutoff - 1, clk, depth);
                assert_eq!(below.level, last);
                assert_eq!(below.expiry, round_up(clk + cutoff - 1, last));
                assert!(below.expiry >= capped);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn lateness_is_bounded_by_the_level(
            hz in prop::sample::select(vec![100u32, 1000]),
            clk in 0u64..1 << 40,
            delta in prop_oneof![0u64..2_000_000_000, 0u64..1 << 40],
        ) {
            let depth = depth_for_hz(hz);
            let p = place(clk + delta, clk, depth);
            if delta < timeout_cutoff(depth) {
                // Level n is used only for deltas ≥ 63·8^(n-1), so a granule is ≤ 8/63 of the
                // delta: timers fire at most ~12.7 % (and at least one jiffy) late.
                let late = p.expiry - (clk + delta);
                prop_assert!(late >= 1);
                prop_assert!(late <= (delta * 8).div_ceil(63).max(1));
            } else {
                // Beyond the wheel's capacity timers are clamped, i.e. fire early.
                prop_assert_eq!(p.expiry, round_up(clk + timeout_max(depth), depth - 1));
                prop_assert!(p.expiry < clk + delta);
            }
        }
    }
}
