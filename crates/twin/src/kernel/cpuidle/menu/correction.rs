//! The correction factors of the menu governor (part 2 of the [prediction](super)).
//!
//! menu keeps, per order of magnitude of the sleep length ([`which_bucket`]), a running
//! average of measured ÷ expected idle time as a fixed-point number ([`UNITY`] = 1.0). Each
//! idle period updates the factor of its bucket ([`updated_factor`]); the next prediction
//! scales the sleep length by it ([`scale_by_factor`]).

/// Number of correction-factor buckets (orders of magnitude of the sleep length).
pub const BUCKETS: usize = 6;
/// Fixed-point resolution of one correction sample.
pub const RESOLUTION: u64 = 1024;
/// Decay of the correction running average: each update keeps `1 - 1/DECAY`.
pub const DECAY: u64 = 8;
/// A correction factor of 1.0.
pub const UNITY: u64 = RESOLUTION * DECAY;
/// Idle periods at least this long count as perfectly predicted (50 ms).
pub const MAX_INTERESTING_NS: u64 = 50_000_000;

/// Correction bucket of a sleep length: <10 µs, <100 µs, <1 ms, <10 ms, <100 ms, longer.
pub fn which_bucket(sleep_ns: u64) -> usize {
    match sleep_ns {
        0..10_000 => 0,
        10_000..100_000 => 1,
        100_000..1_000_000 => 2,
        1_000_000..10_000_000 => 3,
        10_000_000..100_000_000 => 4,
        _ => 5,
    }
}

/// `sleep_ns × factor ÷ UNITY`, rounded to nearest and saturating.
pub fn scale_by_factor(sleep_ns: u64, factor: u32) -> u64 {
    // 64-bit unless the product overflows (sleep lengths near "never"); this runs at every
    // idle entry.
    match sleep_ns
        .checked_mul(u64::from(factor))
        .and_then(|p| p.checked_add(UNITY / 2))
    {
        Some(p) => p / UNITY,
        None => {
            let product = u128::from(sleep_ns) * u128::from(factor);
            u64::try_from((product + u128::from(UNITY / 2)) / u128::from(UNITY)).unwrap_or(u64::MAX)
        }
    }
}

/// The correction factor after one idle period that lasted `measured_ns` (already capped at
/// `expected_ns`) when `expected_ns` was the sleep length.
pub fn updated_factor(old: u32, measured_ns: u64, expected_ns: u64) -> u32 {
    let kept = u64::from(old) - u64::from(old) / DECAY;
    let sample = if expected_ns > 0 && measured_ns < MAX_INTERESTING_NS {
        // measured ≤ expected, so the sample is at most RESOLUTION.
        // measured < MAX_INTERESTING_NS (5·10^7), so the product is below 2^36.
        RESOLUTION * measured_ns / expected_ns
    } else {
        RESOLUTION
    };
    u32::try_from(kept + sample).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_boundaries() {
        let table = [
            (0, 0),
            (9_999, 0),
            (10_000, 1),
            (99_999, 1),
            (100_000, 2),
            (999_999, 2),
            (1_000_000, 3),
            (9_999_999, 3),
            (10_000_000, 4),
            (99_999_999, 4),
            (100_000_000, 5),
            (u64::MAX, 5),
        ];
        for (ns, bucket) in table {
            assert_eq!(which_bucket(ns), bucket, "{ns}");
        }
    }
    #[test]
    fn factor_table() {
        let unity = UNITY as u32;
        let table: &[(u32, u64, u64, u32)] = &[
            // (old, measured, expected, new)
            (unity, 1_000_000, 1_000_000, unity),
            (unity, 0, 1_000_000, unity - 1_024),
            (unity, 500_000, 1_000_000, unity - 1_024 + 512),
            (unity, 45_000_000, 100_000_000, unity - 1_024 + 460),
            // At or beyond MAX_INTERESTING: a perfect prediction whatever the ratio.
            (unity, MAX_INTERESTING_NS, 10 * MAX_INTERESTING_NS, unity),
            (
                unity,
                MAX_INTERESTING_NS - 1,
                10 * MAX_INTERESTING_NS,
                unity - 1_024 + 102,
            ),
            (0, 0, 0, 1_024),
            (7, 0, 10, 7),
        ];
        for &(old, measured, expected, new) in table {
            assert_eq!(
                updated_factor(old, measured, expected),
                new,
                "{old} {measured}"
            );
        }
        assert_eq!(scale_by_factor(1_000, unity), 1_000);
        assert_eq!(scale_by_factor(1_000, unity / 2), 500);
        assert_eq!(scale_by_factor(3, 4_096 + 1), 2, "1.5 rounds to nearest");
        assert_eq!(scale_by_factor(u64::MAX, unity), u64::MAX);
        assert_eq!(scale_by_factor(u64::MAX, unity + 1), u64::MAX, "saturates");
    }

    #[test]
    fn scale_by_factor_table() {
        // (sleep, factor, want): rounding to nearest, the 64/128-bit seam, saturation.
        let cases = [
            (1_000, UNITY as u32, 1_000),
            (1_000, UNITY as u32 / 2, 500),
            (3, UNITY as u32 / 2, 2), // 1.5 rounds up
            (u64::MAX / UNITY, UNITY as u32, u64::MAX / UNITY),
            (u64::MAX / UNITY + 1, UNITY as u32, u64::MAX / UNITY + 1),
            (u64::MAX, UNITY as u32, u64::MAX),
            (u64::MAX, 2 * UNITY as u32, u64::MAX),
            (0, u32::MAX, 0),
        ];
        for (sleep, factor, want) in cases {
            assert_eq!(scale_by_factor(sleep, factor), want, "{sleep} x {factor}");
        }
    }
}
