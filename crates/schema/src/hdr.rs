//! A recorder in front of an HdrHistogram: counts by the histogram's own bucket index, kept
//! with a shift and an increment per value, and turned into the [`Histogram`] when it is read.
//!
//! `Histogram::saturating_record` looks the bucket up through a range check that may resize
//! or clamp, updates the extremes and the total on every value: about 60 instructions per
//! value in E2's frame loop (docs/model.md, "Speed of the event loop"). [`HdrRecorder::record`]
//! does the index arithmetic of the histogram itself (for the lowest discernible value 1, so
//! the unit magnitude is 0) and one increment; the extremes and the total follow from the
//! counts when [`HdrRecorder::histogram`] builds the histogram, which is then equal (`==`,
//! which compares counts, total, `max()` and `min_nz()`) to one every value was
//! `saturating_record`ed into.
//!
//! # The index
//!
//! With `s` significant digits, HdrHistogram splits each power-of-two range into
//! `2^m` sub-buckets, `m = ⌈log2(2·10^s)⌉`, the first bucket using all of them and every later
//! one its upper half. For a value `v`:
//!
//! * bucket `b = (64 − m) − lzcnt(v | (2^m − 1))`,
//! * sub-bucket `v >> b`, in `[2^(m−1), 2^m)` for `b > 0`,
//! * index `(b + 1)·2^(m−1) + (v >> b) − 2^(m−1)`.
//!
//! A value whose index lies past the counts (above the highest trackable value's bucket) is
//! counted at the highest trackable value's index, as `saturating_record` clamps it.

use hdrhistogram::Histogram;

/// Counts by HdrHistogram bucket index (see the module note); lowest discernible value 1.
///
/// Invariant: `counts.len()` is the histogram's `distinct_values()` and `clamp_index` the index
/// of its highest trackable value, below it.
#[derive(Debug, Clone)]
pub struct HdrRecorder {
    counts: Vec<u64>,
    /// `m`: log2 of the sub-bucket count.
    sub_bucket_magnitude: u32,
    /// Where a value beyond the counts is counted.
    clamp_index: usize,
    /// The bounds the histogram is built with.
    highest_trackable: u64,
    significant_digits: u8,
}

impl HdrRecorder {
    /// A recorder for a histogram of values 1 ..= `highest_trackable` at `significant_digits`
    /// (as `Histogram::new_with_bounds(1, highest_trackable, significant_digits)`). Allocates
    /// its counts here, never when recording.
    pub fn new(
        highest_trackable: u64,
        significant_digits: u8,
    ) -> Result<HdrRecorder, hdrhistogram::CreationError> {
        let template = Histogram::<u64>::new_with_bounds(1, highest_trackable, significant_digits)?;
        let largest = 2 * 10u64.pow(u32::from(significant_digits));
        let mut r = HdrRecorder {
            counts: vec![0; template.distinct_values()],
            sub_bucket_magnitude: largest.next_power_of_two().trailing_zeros(),
            clamp_index: 0,
            highest_trackable,
            significant_digits,
        };
        r.clamp_index = r.index(highest_trackable);
        debug_assert!(r.clamp_index < r.counts.len());
        Ok(r)
    }

    /// The histogram's index of `value`, possibly past the counts.
    #[inline]
    fn index(&self, value: u64) -> usize {
        let m = self.sub_bucket_magnitude;
        let half = 1usize << (m - 1);
        let bucket = (64 - m) - (value | ((1 << m) - 1)).leading_zeros();
        ((bucket as usize + 1) << (m - 1)) + (value >> bucket) as usize - half
    }

    /// Counts `value` (above the highest trackable value's bucket, as that value):
    /// `Histogram::saturating_record`'s bucket, without its bookkeeping.
    #[inline]
    pub fn record(&mut self, value: u64) {
        let i = self.index(value);
        let i = if i < self.counts.len() {
            i
        } else {
            self.clamp_index
        };
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    /// The lowest value of index `i`'s bucket (the inverse of the index).
    fn lowest_value(&self, i: usize) -> u64 {
        let half_magnitude = self.sub_bucket_magnitude - 1;
        let half = 1u64 << half_magnitude;
        match (i >> half_magnitude).checked_sub(1) {
            // The lower half of the first bucket.
            None => i as u64,
            Some(bucket) => ((i as u64 & (half - 1)) + half) << bucket,
        }
    }

    /// The histogram of every value recorded (allocates it; a report-time call).
    pub fn histogram(&self) -> Histogram<u64> {
        let mut h =
            Histogram::<u64>::new_with_bounds(1, self.highest_trackable, self.significant_digits)
                .expect("the bounds were accepted when the recorder was made");
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                h.saturating_record_n(self.lowest_value(i), n);
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HIGH: u64 = 60_000_000_000;

    fn reference(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, HIGH, 3).unwrap();
        for &v in values {
            h.saturating_record(v);
        }
        h
    }

    fn recorded(values: &[u64]) -> Histogram<u64> {
        let mut r = HdrRecorder::new(HIGH, 3).unwrap();
        for &v in values {
            r.record(v);
        }
        r.histogram()
    }

    #[test]
    fn bucket_edges_and_clamps_match_saturating_record() {
        // The first bucket's halves (0 has an index of its own), each bucket's edges, the
        // highest trackable value and past it (clamped), and the largest u64.
        let mut values = vec![
            0, 1, 2, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,
        ];
        for shift in 12..63 {
            values.extend([(1u64 << shift) - 1, 1 << shift, (1 << shift) + 1]);
        }
        values.extend([HIGH - 1, HIGH, HIGH + 1, 1 << 36, u64::MAX]);
        for &v in &values {
            assert!(recorded(&[v]) == reference(&[v]), "value {v}");
        }
        assert!(recorded(&values) == reference(&values));
    }

    #[test]
    fn empty_is_empty() {
        let h = recorded(&[]);
        assert!(h.is_empty() && h == reference(&[]));
    }

    #[test]
    fn other_precisions_index_as_the_histogram() {
        for digits in 1..=4 {
            let mut r = HdrRecorder::new(1_000_000, digits).unwrap();
            let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, digits).unwrap();
            for v in (1..3_000_000).step_by(997) {
                r.record(v);
                h.saturating_record(v);
            }
            assert!(r.histogram() == h, "{digits} digits");
        }
    }

    proptest! {
        #[test]
        fn any_values_give_the_same_histogram(
            values in proptest::collection::vec(
                prop_oneof![0u64..100_000, 0u64..HIGH * 2, any::<u64>()], 0..200)
        ) {
            let (a, b) = (recorded(&values), reference(&values));
            prop_assert!(a == b);
            for q in [0.0, 0.5, 0.99, 0.999, 1.0] {
                prop_assert_eq!(a.value_at_quantile(q), b.value_at_quantile(q));
            }
        }
    }
}
