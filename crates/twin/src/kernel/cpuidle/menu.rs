//! The menu governor (§9.3), the default cpuidle governor of NO_HZ kernels.
//!
//! # Design note
//!
//! menu predicts how long the CPU will stay idle and picks the deepest state that pays off
//! within that prediction and within the latency limit. The prediction has three parts:
//!
//! 1. **Next timer.** The sleep length (time to the next timer if the tick were stopped).
//! 2. **Correction factor.** A per-bucket running average of measured ÷ expected idle time,
//!    where the bucket is the order of magnitude of the sleep length ([`which_bucket`]). It is
//!    a fixed-point number: [`UNITY`] = 1024 × 8 means 1.0. Each update keeps 7/8 of the old
//!    value and adds 1024 × measured ÷ expected ([`updated_factor`]), so it converges on
//!    8 × 1024 × the average ratio.
//! 3. **Typical interval.** If the last 8 measured idle durations cluster (standard deviation
//!    ≤ 20 µs, or mean > 6 × standard deviation with at least 6 samples left), their mean caps
//!    the prediction. Upper outliers are dropped one value at a time, down to three quarters
//!    of the samples ([`typical_interval_us`]).
//!
//! The tick decision follows: the tick is kept when the choice is POLL or the prediction is
//! shorter than a tick, and the state is then stepped down until it fits before the next
//! programmed event (`delta_next`, which includes the tick). With the tick already stopped a
//! short prediction is distrusted and `delta_next` used instead, so that a CPU is not left in
//! a shallow state for a long tickless sleep.
//!
//! This is the behaviour of the ~5.4–5.10 kernels without I/O-wait buckets or the performance
//! multiplier (their effect vanishes with no I/O waiters: the latency limit becomes
//! `min(PM QoS, predicted)` while the tick runs). The 6.x rewrite that skips reading the
//! sleep length when the typical interval is short is not modelled. Like the kernel, a fresh
//! [`Menu`] has an all-zero interval history, so its first predictions are 0 and it polls
//! until eight idle periods have been recorded.

use super::{Governor, IdleStateParams, Reflect, SelectInput, Selection};

/// Number of correction-factor buckets (orders of magnitude of the sleep length).
pub const BUCKETS: usize = 6;
/// Length of the idle-interval history.
pub const INTERVALS: usize = 8;
/// Fixed-point resolution of one correction sample.
pub const RESOLUTION: u64 = 1024;
/// Decay of the correction running average: each update keeps `1 - 1/DECAY`.
pub const DECAY: u64 = 8;
/// A correction factor of 1.0.
pub const UNITY: u64 = RESOLUTION * DECAY;
/// Idle periods at least this long count as perfectly predicted (50 ms).
pub const MAX_INTERESTING_NS: u64 = 50_000_000;
/// Variance (µs²) under which the interval history is accepted outright (σ ≤ 20 µs).
pub const TYPICAL_MAX_VARIANCE_US2: u64 = 400;

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
/// largest found at the top of a sorted copy ([`History`]). The result is that of the plain
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
struct History {
    ring: [u32; INTERVALS],
    next: usize,
    sorted: [u32; INTERVALS],
    sum: u64,
    sum_sq: u128,
}

impl History {
    fn new(ring: [u32; INTERVALS]) -> History {
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
    fn push(&mut self, v: u32) {
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
    fn typical_us(&self) -> Option<u32> {
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

/// Per-CPU state of the menu governor.
#[derive(Clone, Debug)]
pub struct Menu {
    correction: [u32; BUCKETS],
    /// Last measured idle durations in µs.
    history: History,
    /// Bucket and sleep length of the last selection, used by the next reflect.
    bucket: usize,
    next_timer_ns: u64,
    tick_period_ns: u64,
}

impl Default for Menu {
    fn default() -> Self {
        Self::new()
    }
}

impl Menu {
    /// A governor as enabled on a CPU: correction factors 1.0, empty (all-zero) history.
    pub fn new() -> Self {
        Menu {
            correction: [UNITY as u32; BUCKETS],
            history: History::new([0; INTERVALS]),
            bucket: 0,
            next_timer_ns: 0,
            tick_period_ns: 0,
        }
    }

    /// The correction factors (fixed point, [`UNITY`] = 1.0), by bucket.
    pub fn correction_factors(&self) -> &[u32; BUCKETS] {
        &self.correction
    }

    /// The interval history in µs (a ring; order is not meaningful).
    pub fn intervals_us(&self) -> &[u32; INTERVALS] {
        &self.history.ring
    }

    /// The idle duration menu would predict for `sleep_length_ns`: the corrected sleep length,
    /// capped by the typical interval.
    pub fn predict_ns(&self, sleep_length_ns: u64) -> u64 {
        let corrected = scale_by_factor(
            sleep_length_ns,
            self.correction[which_bucket(sleep_length_ns)],
        );
        match self.history.typical_us() {
            Some(us) => corrected.min(u64::from(us) * 1_000),
            None => corrected,
        }
    }
}

impl Governor for Menu {
    fn name(&self) -> &'static str {
        "menu"
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        let sleep = input.sleep_length_ns;
        let tick = input.tick_period_ns;
        self.next_timer_ns = sleep;
        self.tick_period_ns = tick;
        self.bucket = which_bucket(sleep);

        let Some(first) = states.first() else {
            return Selection {
                state: 0,
                stop_tick: true,
            };
        };
        // State 0 will be used no matter what: return it, keeping the tick if it polls.
        let shallow_only = states.len() == 1
            || input.latency_req_ns == 0
            || ((sleep < states[1].target_residency_ns
                || input.latency_req_ns < states[1].exit_latency_ns)
                && !first.disabled);
        if shallow_only {
            return Selection {
                state: 0,
                stop_tick: !first.polling,
            };
        }

        let mut predicted = self.predict_ns(sleep);
        let mut latency_req = input.latency_req_ns;
        if input.tick_stopped {
            if predicted < tick {
                predicted = input.delta_next_ns;
            }
        } else {
            latency_req = latency_req.min(predicted);
        }

        let mut chosen: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if s.disabled {
                continue;
            }
            let current = *chosen.get_or_insert(i);
            if s.target_residency_ns > predicted {
                // Prefer a real state to busy polling if a timer is due late enough.
                if states[current].polling
                    && s.exit_latency_ns <= latency_req
                    && s.target_residency_ns <= sleep
                {
                    predicted = s.target_residency_ns;
                    chosen = Some(i);
                    break;
                }
                if predicted < tick {
                    break;
                }
                if !input.tick_stopped {
                    // Shallow so far: keep the tick and let the next iteration decide.
                    predicted = states[current].target_residency_ns;
                    break;
                }
                // Tick stopped: don't get stuck shallow if this state fits the next event.
                let state = if states[current].target_residency_ns < tick
                    && s.target_residency_ns <= input.delta_next_ns
                {
                    i
                } else {
                    current
                };
                return Selection {
                    state,
                    stop_tick: true,
                };
            }
            if s.exit_latency_ns > latency_req {
                break;
            }
            chosen = Some(i);
        }
        let mut state = chosen.unwrap_or(0);

        let mut stop_tick = true;
        if (states[state].polling || predicted < tick) && !input.tick_stopped {
            stop_tick = false;
            // The tick stays: step down to a state that fits before the next event.
            if state > 0 && states[state].target_residency_ns > input.delta_next_ns {
                for i in (0..state).rev() {
                    if states[i].disabled {
                        continue;
                    }
                    state = i;
                    if states[i].target_residency_ns <= input.delta_next_ns {
                        break;
                    }
                }
            }
        }
        Selection { state, stop_tick }
    }

    fn reflect(&mut self, states: &[IdleStateParams], r: &Reflect) {
        let target = &states[r.state];
        let measured = if r.woken_by_tick && self.next_timer_ns > self.tick_period_ns {
            // nohz promised no event within the tick, yet the tick woke us: the tick was not
            // stopped after all, so the CPU might have slept long. Count it as long.
            9 * MAX_INTERESTING_NS / 10
        } else if target.polling && r.poll_timed_out {
            // A better prediction would have slept until the timer.
            self.next_timer_ns
        } else if r.residency_ns > target.exit_latency_ns.saturating_mul(2) {
            r.residency_ns - target.exit_latency_ns
        } else {
            // Too short to have really reached the state: assume no exit latency was paid.
            r.residency_ns / 2
        };
        let measured = measured.min(self.next_timer_ns);
        let factor = &mut self.correction[self.bucket];
        *factor = updated_factor(*factor, measured, self.next_timer_ns);
        self.history
            .push(u32::try_from(measured / 1_000).unwrap_or(u32::MAX));
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TICK, skx};
    use super::*;
    use proptest::prelude::*;

    /// Intervals with no typical value (checked in `typical_table`).
    const SPREAD: [u32; INTERVALS] = [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000];

    fn menu_with(intervals: [u32; INTERVALS]) -> Menu {
        Menu {
            history: History::new(intervals),
            ..Menu::new()
        }
    }

    fn input(sleep: u64, delta_next: u64, tick_stopped: bool, latency: u64) -> SelectInput {
        SelectInput {
            sleep_length_ns: sleep,
            delta_next_ns: delta_next,
            tick_stopped,
            latency_req_ns: latency,
            tick_period_ns: TICK,
        }
    }

    fn sel(state: usize, stop_tick: bool) -> Selection {
        Selection { state, stop_tick }
    }

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

    type SelectCase<'a> = (
        &'a [IdleStateParams],
        u64,
        u64,
        bool,
        u64,
        Selection,
        &'a str,
    );

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

    #[test]
    fn select_table() {
        let s = skx();
        let mut c1e_off = skx();
        c1e_off[2].disabled = true;
        let mut poll_off = skx();
        poll_off[0].disabled = true;
        let max = u64::MAX;
        // (states, sleep, delta_next, tick_stopped, latency, expected, why)
        #[rustfmt::skip]
        let table: &[SelectCase] = &[
            (&s, 1_999, TICK, false, max, sel(0, false), "sleep below C1 residency: POLL"),
            (&s, 2_000, TICK, false, max, sel(1, false), "residency == predicted fits"),
            (&s, 100_000, TICK, false, 0, sel(0, false), "latency 0: POLL only"),
            (&s, 100_000, TICK, false, 1_999, sel(0, false), "latency below C1 exit"),
            (&s, 100_000, TICK, false, 2_000, sel(1, false), "latency == C1 exit"),
            (&s, 100_000, TICK, false, 10_000, sel(2, false), "latency == C1E exit"),
            (&s, 100_000, TICK, false, 9_999, sel(1, false), "latency just below C1E exit"),
            (&s, 100_000, TICK, false, max, sel(2, false), "C6 residency too long"),
            (&s, 5 * TICK, 5 * TICK, false, max, sel(3, true), "long sleep: deepest, stop"),
            (&s, TICK, TICK, false, max, sel(3, true), "predicted == tick: stop"),
            (&s, TICK - 1, TICK - 1, false, max, sel(3, false), "predicted < tick: keep"),
            (&s, TICK - 1, 600_000, false, max, sel(3, false), "C6 fits delta_next exactly"),
            (&s, TICK - 1, 599_999, false, max, sel(2, false), "step down to fit delta_next"),
            (&c1e_off, 100_000, TICK, false, max, sel(1, false), "disabled C1E skipped"),
            (&c1e_off, TICK - 1, 500_000, false, max, sel(1, false), "step-down skips C1E"),
            (&poll_off, 1_999, TICK, false, max, sel(1, false), "POLL disabled: C1 anyway"),
            (&s, 5 * TICK, 5 * TICK, true, max, sel(3, true), "tick stopped"),
            (&s, 5 * TICK, 5 * TICK, false, 133_000, sel(3, true), "latency == C6 exit"),
            (&s, 5 * TICK, 5 * TICK, false, 132_999, sel(2, true), "latency caps at C1E"),
            (&s, max, max, true, max, sel(3, true), "no timer at all"),
        ];
        for &(states, sleep, delta_next, stopped, latency, want, what) in table {
            let mut m = menu_with(SPREAD);
            let got = m.select(states, &input(sleep, delta_next, stopped, latency));
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn all_states_disabled_falls_back_to_state_zero() {
        let states: Vec<_> = skx().into_iter().map(|s| s.with_disabled(true)).collect();
        let mut m = menu_with(SPREAD);
        let got = m.select(&states, &input(5 * TICK, 5 * TICK, false, u64::MAX));
        // Nothing is enabled: state 0, and since it polls the tick is kept.
        assert_eq!(got, sel(0, false));
    }

    #[test]
    fn prefer_a_real_state_over_polling() {
        let states = [
            IdleStateParams::poll(),
            IdleStateParams::new("C1", 1_000, 2_000),
        ];
        // Typical interval 1 µs → predicted 1 µs, below C1's residency.
        for (sleep, want) in [(2_000, sel(1, false)), (1_999, sel(0, false))] {
            let mut m = menu_with([1; INTERVALS]);
            let got = m.select(&states, &input(sleep, TICK, false, u64::MAX));
            assert_eq!(got, want, "sleep {sleep}");
        }
        // Latency limit (min(QoS, predicted) = 1 µs) admits C1's 1 µs exit exactly.
        let mut strict = states.clone();
        strict[1].exit_latency_ns = 1_001;
        let mut m = menu_with([1; INTERVALS]);
        assert_eq!(
            m.select(&strict, &input(100_000, TICK, false, u64::MAX)),
            sel(0, false)
        );
    }

    #[test]
    fn stopped_tick_distrusts_short_predictions() {
        let s = skx();
        // Typical 1 µs would pick POLL with a running tick...
        let mut m = menu_with([1; INTERVALS]);
        assert_eq!(
            m.select(&s, &input(5 * TICK, TICK, false, u64::MAX)),
            sel(0, false)
        );
        // ...but with the tick stopped the time to the next event is used instead.
        let mut m = menu_with([1; INTERVALS]);
        assert_eq!(
            m.select(&s, &input(5 * TICK, 5 * TICK, true, u64::MAX)),
            sel(3, true)
        );
        let mut m = menu_with([1; INTERVALS]);
        assert_eq!(
            m.select(&s, &input(5 * TICK, 599_999, true, u64::MAX)),
            sel(2, true)
        );
    }

    #[test]
    fn stopped_tick_promotes_from_shallow_when_the_event_is_far() {
        let mut s = skx();
        s[3].target_residency_ns = 2 * TICK;
        // predicted 1.5 ticks ≥ tick; C6 needs 2 ticks.
        let mut m = menu_with(SPREAD);
        let far = m.select(&s, &input(3 * TICK / 2, 2 * TICK, true, u64::MAX));
        assert_eq!(far, sel(3, true), "C6 fits the time to the next event");
        let near = m.select(&s, &input(3 * TICK / 2, 2 * TICK - 1, true, u64::MAX));
        assert_eq!(near, sel(2, true));
        // With the tick running, the shallow state is kept along with the tick.
        let running = m.select(&s, &input(3 * TICK / 2, TICK, false, u64::MAX));
        assert_eq!(running, sel(2, false));
    }

    #[test]
    fn fresh_menu_polls_until_history_fills() {
        let s = skx();
        let mut m = Menu::new();
        let i = input(10 * TICK, TICK, false, u64::MAX);
        assert_eq!(m.select(&s, &i), sel(0, false));
        for _ in 0..INTERVALS {
            assert_eq!(m.select(&s, &i).state, 0);
            m.reflect(
                &s,
                &Reflect {
                    state: 0,
                    residency_ns: 62_500,
                    woken_by_tick: false,
                    poll_timed_out: true,
                },
            );
        }
        // Each timed-out poll counted as a full sleep: history says 10 ms.
        assert_eq!(m.intervals_us(), &[10_000; INTERVALS]);
        assert_eq!(m.select(&s, &i), sel(3, true));
    }

    fn reflect_once(states: &[IdleStateParams], sleep: u64, r: Reflect) -> Menu {
        let mut m = menu_with(SPREAD);
        m.select(states, &input(sleep, TICK, false, u64::MAX));
        m.reflect(states, &r);
        m
    }

    #[test]
    fn reflect_table() {
        let s = skx();
        let r = |state, residency_ns, woken_by_tick, poll_timed_out| Reflect {
            state,
            residency_ns,
            woken_by_tick,
            poll_timed_out,
        };
        let unity = UNITY as u32;
        // (sleep, reflect, bucket, new factor, recorded µs)
        let table: &[(u64, Reflect, usize, u32, u32)] = &[
            // Tick wake although nohz promised nothing within the tick: a long sample.
            (
                100_000_000,
                r(3, 1_000_000, true, false),
                5,
                unity - 1_024 + 460,
                45_000,
            ),
            // ...capped at the sleep length.
            (20_000_000, r(3, 1_000_000, true, false), 4, unity, 20_000),
            // Sleep length exactly one tick: an ordinary sample.
            (
                TICK,
                r(3, 500_000, true, false),
                3,
                unity - 1_024 + 375,
                367,
            ),
            // Timed-out POLL counts as the full sleep.
            (5 * TICK, r(0, 62_500, false, true), 3, unity, 5_000),
            // POLL that ended by a wakeup: the residency.
            (
                5 * TICK,
                r(0, 62_500, false, false),
                3,
                unity - 1_024 + 12,
                62,
            ),
            // Exit latency deducted when the residency exceeds twice it...
            (
                5 * TICK,
                r(3, 266_001, false, false),
                3,
                unity - 1_024 + 27,
                133,
            ),
            // ...halved otherwise.
            (
                5 * TICK,
                r(3, 266_000, false, false),
                3,
                unity - 1_024 + 27,
                133,
            ),
            (
                5 * TICK,
                r(3, 100_000, false, false),
                3,
                unity - 1_024 + 10,
                50,
            ),
            // Longer than the sleep length (another wake source is impossible, but the
            // exit latency can overshoot): capped at 1.0.
            (5 * TICK, r(3, 9 * TICK, false, false), 3, unity, 5_000),
        ];
        for &(sleep, refl, bucket, factor, recorded) in table {
            let m = reflect_once(&s, sleep, refl);
            assert_eq!(m.correction_factors()[bucket], factor, "{sleep} {refl:?}");
            assert_eq!(m.intervals_us()[0], recorded, "{sleep} {refl:?}");
            for (b, &f) in m.correction_factors().iter().enumerate() {
                if b != bucket {
                    assert_eq!(f, unity, "only the selected bucket moves");
                }
            }
        }
    }

    #[test]
    fn learns_a_periodic_wakeup() {
        // Something wakes the CPU every 300 µs although the next timer is 10 ms away.
        let s = skx();
        let mut m = Menu::new();
        let i = input(10 * TICK, TICK, false, u64::MAX);
        let poll_limit = m.poll_limit_ns(&s, TICK);
        assert_eq!(poll_limit, 20_000);
        let mut last = m.select(&s, &i);
        for _ in 0..64 {
            // POLL gives up before the wakeup; other states see it.
            let polled = s[last.state].polling;
            m.reflect(
                &s,
                &Reflect {
                    state: last.state,
                    residency_ns: if polled { poll_limit } else { 300_000 },
                    woken_by_tick: false,
                    poll_timed_out: polled,
                },
            );
            last = m.select(&s, &i);
        }
        // The typical interval caps the prediction below C6's 600 µs: C1E, tick kept.
        assert_eq!(last, sel(2, false));
        assert!(m.predict_ns(10 * TICK) < 600_000);
    }
}
