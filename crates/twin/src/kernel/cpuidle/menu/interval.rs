//! The typical interval of the menu governor (part 3 of the [prediction](super)): whether
//! the last [`INTERVALS`] idle durations cluster, and around which mean.
//!
//! [`typical_interval_us`] states the rule as the kernel's `get_typical_interval()` does. It
//! runs on every idle entry, so [`History`] keeps a sorted copy of the ring and its running
//! sums, and each pass is computed from those moments (`Moments::pass`, with its proof that
//! the integer arithmetic is exact) with the mean taken by a reciprocal multiply instead of
//! a division (`RECIP_33`, with its proof). The tests check both against a plain rescanning
//! loop, exhaustively on small inputs and by property tests on large ones.

/// Length of the idle-interval history.
pub const INTERVALS: usize = 8;
/// Variance (µs²) under which the interval history is accepted outright (σ ≤ 20 µs).
pub const TYPICAL_MAX_VARIANCE_US2: u64 = 400;

/// The typical idle interval (µs) of a history, if it has one (see the module note).
///
/// As in the kernel's `get_typical_interval()`, this is a series of passes over the intervals.
/// A pass keeps `n` of them (all 8 in the first) and takes their integer mean `avg` and
/// variance `⌊Σ(v − avg)² ÷ n⌋`. It returns `avg` if the variance is at most
/// [`TYPICAL_MAX_VARIANCE_US2`], or if `avg² > 36 × variance` with at least three quarters of
/// the intervals kept. Otherwise it returns `None` if no more than three quarters are kept, and
/// failing that the next pass drops every copy of the largest interval kept.
///
/// The passes are not rescans. Each is computed from the count, sum and sum of squares of the
/// intervals it keeps (`Moments`), and dropping a value subtracts its copies from those, the
/// largest found at the top of a sorted copy (`History`). The result is that of the plain
/// rescanning loop for every input (the tests check it against one).
pub fn typical_interval_us(intervals: &[u32; INTERVALS]) -> Option<u32> {
    History::new(*intervals).typical_us()
}

/// Unsigned integer holding the sums of a [`Moments`]: `u64` or `u128`.
trait MomentInt:
    Copy
    + Ord
    + From<u64>
    + TryInto<u32, Error = std::num::TryFromIntError>
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// `⌊self ÷ count⌋` for a pass's `count` (1..=8 intervals kept).
    fn div_count(self, count: u64) -> Self;
}

/// `⌈2^33 ÷ n⌉` for n = 1..=8, index n − 1: `⌊x ÷ n⌋ = (x · RECIP[n − 1]) >> 33` for every
/// `x < 2^30` (with `RECIP = (2^33 + e) ÷ n`, `0 ≤ e < n`, the error term `x·e ÷ (n·2^33)` is
/// below `1 ÷ n`, too small to carry the fraction `x ÷ n` past an integer). The pass mean is
/// on every idle entry, and a hardware division was the largest single cost of menu.
const RECIP_33: [u64; INTERVALS] = {
    let mut r = [0; INTERVALS];
    let mut n = 1;
    while n <= INTERVALS as u64 {
        r[n as usize - 1] = (1u64 << 33).div_ceil(n);
        n += 1;
    }
    r
};

impl MomentInt for u64 {
    #[inline]
    fn div_count(self, count: u64) -> Self {
        // The u64 path is taken only when the eight intervals sum below 2^30.
        debug_assert!(self < 1 << 30 && (1..=INTERVALS as u64).contains(&count));
        (self * RECIP_33[count as usize - 1]) >> 33
    }
}

impl MomentInt for u128 {
    #[inline]
    fn div_count(self, count: u64) -> Self {
        self / u128::from(count)
    }
}

/// The intervals kept by a pass of [`typical_interval_us`], as count, sum and sum of squares.
#[derive(Clone, Copy)]
struct Moments<W> {
    count: u64,
    sum: W,
    sum_sq: W,
}

/// The outcome of one pass of [`typical_interval_us`].
enum Pass {
    /// The typical interval, or `None`: the answer.
    Done(Option<u32>),
    /// Undecided: drop the largest interval kept (every copy) and pass again.
    DropMax,
}

impl<W: MomentInt> Moments<W> {
    /// One pass over the intervals kept (`count ≥ 1`).
    ///
    /// No rescan and no division by `n` for the variance: with `avg = ⌊sum ÷ n⌋` and
    /// `sum = n·avg + r`, the squared deviations are
    ///
    /// ```text
    /// dev = Σ(v − avg)² = sum_sq − 2·avg·sum + n·avg² = sum_sq − avg·(sum + r)
    /// ```
    ///
    /// exactly, in integers. As `dev ≥ 0`, `avg·(sum + r) ≤ sum_sq`, so nothing overflows `W`:
    /// in the 64-bit case every interval is below 2^30, `sum_sq` below 2^60 and `2·sum` below
    /// 2^31; `u128` has room for any eight `u32`s. The variance `⌊dev ÷ n⌋` is then compared
    /// through
    ///
    /// ```text
    /// ⌊dev ÷ n⌋ ≤ 400        ⟺  dev < 401·n
    /// avg² > 36·⌊dev ÷ n⌋    ⟺  ⌊dev ÷ n⌋ < ⌈avg² ÷ 36⌉  ⟺  dev < n·⌊(avg² + 35) ÷ 36⌋
    /// ```
    ///
    /// (an integer is below a real number iff it is below its ceiling), where `avg² < 2^60`
    /// and `n·⌈avg² ÷ 36⌉ < 2^59` in the 64-bit case.
    #[inline]
    fn pass(&self) -> Pass {
        let n = W::from(self.count);
        let avg = self.sum.div_count(self.count);
        // Σ(v − avg)² = sum_sq − avg·(sum + r), where sum + r = 2·sum − n·avg.
        let dev = self.sum_sq - avg * (self.sum + self.sum - avg * n);
        let typical = || Pass::Done(Some(avg.try_into().expect("a mean of u32s fits a u32")));
        let kept_x4 = 4 * self.count;
        let three_quarters_x4 = 3 * INTERVALS as u64;
        if dev < W::from(TYPICAL_MAX_VARIANCE_US2 + 1) * n {
            // variance ≤ TYPICAL_MAX_VARIANCE_US2
            typical()
        } else if kept_x4 < three_quarters_x4 {
            Pass::Done(None)
        } else if dev < n * ((avg * avg + W::from(35)) / W::from(36)) {
            // avg² > 36 × variance, with at least three quarters kept
            typical()
        } else if kept_x4 == three_quarters_x4 {
            Pass::Done(None)
        } else {
            Pass::DropMax
        }
    }

    /// These moments without `copies` intervals equal to `value`, all of them kept.
    fn without(self, value: u32, copies: u64) -> Self {
        let (v, k) = (W::from(u64::from(value)), W::from(copies));
        Moments {
            count: self.count - copies,
            sum: self.sum - k * v,
            sum_sq: self.sum_sq - k * v * v,
        }
    }

    /// The passes from these moments (of all the intervals) on: a pass that asks to drop
    /// removes every copy of the largest interval kept, the top of `sorted`.
    #[inline]
    fn passes(mut self, sorted: &[u32; INTERVALS]) -> Option<u32> {
        let mut n = INTERVALS;
        loop {
            match self.pass() {
                Pass::Done(typical) => return typical,
                Pass::DropMax => {
                    // A pass that asks to drop has a non-zero variance, so values below the
                    // maximum remain and `n` stays above 0.
                    let max = sorted[n - 1];
                    let mut copies = 0;
                    while n > 0 && sorted[n - 1] == max {
                        n -= 1;
                        copies += 1;
                    }
                    self = self.without(max, copies);
                }
            }
        }
    }
}

/// The interval history: a ring of the last [`INTERVALS`] idle durations (µs), with a sorted
/// copy and running sums so that [`History::typical_us`] needs no scan of the ring.
///
/// Invariant: `sorted` is `ring` in ascending order, `sum` and `sum_sq` its sum and sum of
/// squares (kept by [`History::push`]).
#[derive(Clone, Debug)]
pub(super) struct History {
    ring: [u32; INTERVALS],
    next: usize,
    sorted: [u32; INTERVALS],
    sum: u64,
    sum_sq: u128,
}

impl History {
    /// The ring of the last [`INTERVALS`] idle durations (µs); order is not meaningful.
    pub(super) fn ring(&self) -> &[u32; INTERVALS] {
        &self.ring
    }

    pub(super) fn new(ring: [u32; INTERVALS]) -> History {
        let mut sorted = ring;
        sorted.sort_unstable();
        History {
            ring,
            next: 0,
            sorted,
            sum: ring.iter().map(|&v| u64::from(v)).sum(),
            sum_sq: ring.iter().map(|&v| u128::from(v) * u128::from(v)).sum(),
        }
    }

    /// Records `v` in place of the oldest interval.
    #[inline]
    pub(super) fn push(&mut self, v: u32) {
        let old = std::mem::replace(&mut self.ring[self.next], v);
        self.next = (self.next + 1) % INTERVALS;
        self.sum = self.sum - u64::from(old) + u64::from(v);
        self.sum_sq =
            self.sum_sq - u128::from(old) * u128::from(old) + u128::from(v) * u128::from(v);
        // Replace one copy of `old` in the sorted copy by `v`, sliding it into order.
        let s = &mut self.sorted;
        let mut i = s
            .iter()
            .position(|&x| x == old)
            .expect("the sorted copy holds every ring value");
        while i + 1 < INTERVALS && s[i + 1] < v {
            s[i] = s[i + 1];
            i += 1;
        }
        while i > 0 && s[i - 1] > v {
            s[i] = s[i - 1];
            i -= 1;
        }
        s[i] = v;
    }

    /// [`typical_interval_us`] of the ring, from the sums and the sorted copy
    /// ([`Moments::passes`]).
    #[inline]
    pub(super) fn typical_us(&self) -> Option<u32> {
        if self.sum < 1 << 30 {
            // Every realistic history: the sum bounds each value, so the sum of squares is
            // below 2^60 and 64 bits will do (see `Moments::pass`).
            Moments {
                count: INTERVALS as u64,
                sum: self.sum,
                sum_sq: self.sum_sq as u64,
            }
            .passes(&self.sorted)
        } else {
            Moments {
                count: INTERVALS as u64,
                sum: u128::from(self.sum),
                sum_sq: self.sum_sq,
            }
            .passes(&self.sorted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::SPREAD;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn typical_table() {
        let rep = |a: u32, b: u32| [a, b, a, b, a, b, a, b];
        let table: &[([u32; INTERVALS], Option<u32>)] = &[
            ([500; 8], Some(500)),
            ([0; 8], Some(0)),
            // σ exactly 20 µs is accepted on the absolute rule.
            (rep(480, 520), Some(500)),
            (rep(0, 40), Some(20)),
            // σ 21 µs with a small mean fails both rules; dropping the four maxima leaves
            // four zeros, which pass the absolute rule.
            (rep(0, 42), Some(0)),
            // mean exactly 6σ fails the relative rule; after dropping the maxima the four
            // 500s are tight.
            (rep(500, 700), Some(500)),
            // mean just above 6σ passes with all eight samples.
            (rep(501, 701), Some(601)),
            // One upper outlier is discarded.
            (
                [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 90_000],
                Some(1_000),
            ),
            // Two outliers: 6 samples left, still allowed.
            (
                [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 80_000, 90_000],
                Some(1_000),
            ),
            // Three distinct outliers: would need to go below 6 samples.
            (
                [1_000, 1_000, 1_000, 1_000, 1_000, 70_000, 80_000, 90_000],
                None,
            ),
            (SPREAD, None),
            // The relative rule at its edge: mean² = 36 × variance + 1 passes, in each pass.
            // 757² = 36 × 15_918 + 1.
            ([584, 611, 684, 685, 792, 858, 917, 926], Some(757)),
            // 2_341² = 36 × 152_230 + 1 over the seven left.
            (
                [1_900, 1_968, 1_986, 2_273, 2_587, 2_685, 2_991, 50_000],
                Some(2_341),
            ),
            // 935² = 36 × 24_284 + 1 over the six left.
            (
                [694, 776, 915, 1_040, 1_090, 1_099, 40_000, 50_000],
                Some(935),
            ),
            // ...and mean² = 36 × variance fails: 330² = 36 × 3_025, with no pass left.
            ([246, 284, 307, 366, 376, 401, 40_000, 50_000], None),
            // Saturated samples do not overflow.
            ([u32::MAX; 8], Some(u32::MAX)),
        ];
        for (intervals, want) in table {
            assert_eq!(typical_interval_us(intervals), *want, "{intervals:?}");
            assert_eq!(
                typical_interval_us_reference(intervals),
                *want,
                "{intervals:?}"
            );
        }
    }

    /// The kernel's loop as written before the moments rewrite: the oracle for
    /// `typical_interval_us`.
    fn typical_interval_us_reference(intervals: &[u32; INTERVALS]) -> Option<u32> {
        let mut threshold = u32::MAX;
        loop {
            let (mut sum, mut count, mut max) = (0u64, 0u64, 0u32);
            for &v in intervals.iter().filter(|&&v| v <= threshold) {
                sum += u64::from(v);
                count += 1;
                max = max.max(v);
            }
            // count ≥ 1: the smallest interval is never dropped (all equal means variance 0).
            let avg = sum / count;
            let variance = if max < 1 << 30 {
                let sq: u64 = intervals
                    .iter()
                    .filter(|&&v| v <= threshold)
                    .map(|&v| {
                        let d = u64::from(v).abs_diff(avg);
                        d * d
                    })
                    .sum();
                u128::from(sq / count)
            } else {
                intervals
                    .iter()
                    .filter(|&&v| v <= threshold)
                    .map(|&v| (i128::from(v) - i128::from(avg)).pow(2) as u128)
                    .sum::<u128>()
                    / u128::from(count)
            };
            let tight_relative = u128::from(avg) * u128::from(avg) > 36 * variance
                && 4 * count >= 3 * INTERVALS as u64;
            if tight_relative || variance <= u128::from(TYPICAL_MAX_VARIANCE_US2) {
                return Some(avg as u32);
            }
            if 4 * count <= 3 * INTERVALS as u64 {
                return None;
            }
            threshold = max - 1;
        }
    }

    /// Intervals `centre ± spread`, clamped to the u32 range; centres near 0, near 2^27 (where
    /// the sum crosses 2^30, the 64/128-bit boundary) and anywhere.
    fn clustered() -> impl Strategy<Value = [u32; INTERVALS]> {
        let centre = prop_oneof![
            0u32..3_000,
            (1u32 << 27) - 50_000..(1 << 27) + 50_000,
            any::<u32>()
        ];
        (centre, 0u32..=20, proptest::array::uniform8(any::<u32>())).prop_map(
            |(centre, bits, raw)| {
                let spread = 1i64 << bits;
                raw.map(|r| {
                    let offset = i64::from(r) % (2 * spread + 1) - spread;
                    (i64::from(centre) + offset).clamp(0, i64::from(u32::MAX)) as u32
                })
            },
        )
    }

    /// Intervals drawn from a pool of 2 to 4 values, edge values included: many repeats.
    fn repetitive() -> impl Strategy<Value = [u32; INTERVALS]> {
        let value = prop_oneof![
            Just(0u32),
            Just(u32::MAX),
            Just((1 << 30) - 1),
            0u32..2_000,
            any::<u32>(),
        ];
        (
            proptest::collection::vec(value, 2..=4),
            proptest::array::uniform8(any::<usize>()),
        )
            .prop_map(|(pool, picks)| picks.map(|i| pool[i % pool.len()]))
    }

    /// A cluster around 1000 µs with some intervals replaced by outliers.
    fn with_outliers() -> impl Strategy<Value = [u32; INTERVALS]> {
        (
            proptest::array::uniform8(950u32..1_050),
            proptest::array::uniform8(
                prop_oneof![3 => Just(None), 1 => any::<u32>().prop_map(Some)],
            ),
        )
            .prop_map(|(base, outliers)| {
                std::array::from_fn(|i| outliers[i].map_or(base[i], |o| o % 100_000 + 1_000))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn typical_matches_reference_small(intervals in proptest::array::uniform8(0u32..100)) {
            prop_assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals)
            );
        }

        #[test]
        fn typical_matches_reference_clustered(intervals in clustered()) {
            prop_assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals)
            );
        }

        #[test]
        fn typical_matches_reference_full_range(intervals in proptest::array::uniform8(any::<u32>())) {
            prop_assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals)
            );
        }

        #[test]
        fn typical_matches_reference_repetitive(intervals in repetitive()) {
            prop_assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals)
            );
        }

        #[test]
        fn typical_matches_reference_outliers(intervals in with_outliers()) {
            prop_assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals)
            );
        }
    }

    #[test]
    fn typical_matches_reference_exhaustively_on_five_values() {
        // All 5^8 histories over these values; between them they reach every outcome: each
        // rule accepting in each of the three passes, and `None` after the second and third.
        const VALUES: [u32; 5] = [300, 1_050, 1_200, 2_000, 5_000];
        for code in 0..VALUES.len().pow(INTERVALS as u32) {
            let intervals: [u32; INTERVALS] =
                std::array::from_fn(|i| VALUES[code / VALUES.len().pow(i as u32) % VALUES.len()]);
            assert_eq!(
                typical_interval_us(&intervals),
                typical_interval_us_reference(&intervals),
                "{intervals:?}"
            );
        }
    }

    proptest! {
        /// The incremental history (sorted copy and sums) gives what the pure function gives
        /// on its ring, after any sequence of recorded intervals.
        #[test]
        fn history_matches_the_pure_typical_interval(
            centre in 0u32..50_000,
            values in proptest::collection::vec((0u32..4, 0u32..3_000, any::<u32>()), 1..200),
        ) {
            let mut h = History::new([0; INTERVALS]);
            for (kind, spread, wild) in values {
                let v = match kind {
                    0 => centre.saturating_add(spread % 40),
                    1 => centre.saturating_add(spread),
                    2 => wild,
                    _ => wild % 1_000_000,
                };
                h.push(v);
                let mut sorted = h.ring;
                sorted.sort_unstable();
                prop_assert_eq!(h.sorted, sorted);
                prop_assert_eq!(h.sum, h.ring.iter().map(|&x| u64::from(x)).sum::<u64>());
                prop_assert_eq!(h.typical_us(), typical_interval_us(&h.ring));
                prop_assert_eq!(h.typical_us(), typical_interval_us_reference(&h.ring));
            }
        }
    }

    #[test]
    fn reciprocal_division_is_exact() {
        // Every divisor, at and around the multiples where a floor changes, up to 2^30.
        for n in 1..=INTERVALS as u64 {
            for x in (0..1u64 << 30)
                .step_by(7_919)
                .chain(
                    (1..(1u64 << 30) / n)
                        .step_by(9_973)
                        .flat_map(|q| [q * n - 1, q * n]),
                )
                .chain([(1 << 30) - 1])
            {
                assert_eq!(x.div_count(n), x / n, "{x} / {n}");
            }
        }
    }
}
