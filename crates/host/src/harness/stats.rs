//! Streaming statistics of the frame table (docs/experiments.md E2) and latency percentiles.
//!
//! A frame worker produces one [`FrameSample`] per frame; [`FrameStats`] folds them into the
//! row's numbers without keeping the samples (an hour at 960 Hz is 3.4 M frames per CPU):
//!
//! * min / max (and the frame index of the first maximum) / mean / sigma of the jitter,
//!   with the mean and the *population* standard deviation kept by Welford's update;
//! * overruns — frames whose completion came after the next frame's start — and the last one;
//! * fliers — frames whose jitter is strictly above the threshold — with the first five and the
//!   last frame index, as in `940 (2496,2497,36625,36626,45649,..3438632)`;
//! * HdrHistograms (3 significant digits) of jitter and of wake-up latency for percentiles.
//!
//! The minimum and the maximum of every summary are the exact values of the frame table
//! ([`FrameRowStats`], [`WakeupRowStats`]), never a histogram's bucket bound: one maximum per
//! quantity, whichever field of the report shows it. With `--histogram` a worker also keeps
//! the `cyclictest -h` histograms of [`ticklab_schema::histogram`].
//!
//! Jitter can come out slightly negative when a frame's work ran faster than the calibrated
//! minimum; min/avg/sigma keep the signed value, the histograms clamp it at zero and
//! [`FrameStats::negative`] counts such frames.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use ticklab_schema::histogram::CpuHistograms;
use ticklab_schema::report::WakeupRowStats;
use ticklab_schema::report::{FrameRow, FrameRowStats};

/// What one frame measured, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameSample {
    /// Frame index k (the frame started at t0 + k / FREQ).
    pub frame: u64,
    /// Wake time − frame start.
    pub wakeup_ns: i64,
    /// (Completion − wake time) − undisturbed duration
    /// ([`ticklab_schema::frames::FrameTiming::jitter_ns`]).
    pub jitter_ns: i64,
    /// Completed after the next frame's start.
    pub overrun: bool,
    /// Started running after the next frame's start (the wake-up overrun).
    pub wake_overrun: bool,
}

/// Running statistics of one frame worker: the shared frame-table statistics
/// ([`FrameRowStats`]) plus the histograms and counters only a measured run has.
#[derive(Debug, Clone)]
pub(crate) struct FrameStats {
    flier_threshold_ns: i64,
    table: FrameRowStats,
    /// The wake-up columns of the row.
    wake: WakeupRowStats,
    negative: u64,
    jitter: Histogram<u64>,
    wakeup: Histogram<u64>,
    /// `cyclictest -h` histograms, when asked for.
    cyclictest: Option<CpuHistograms>,
}

/// An auto-resizing histogram with 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid HdrHistogram precision")
}

/// Records into an auto-resizing histogram. (`saturating_record` would clamp to the
/// histogram's *current* range, which starts at 2 ns, instead of growing it.)
fn record(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

impl FrameStats {
    /// Empty statistics; a frame is a flier when its jitter is strictly above the threshold.
    pub(crate) fn new(flier_threshold_ns: i64) -> Self {
        FrameStats {
            flier_threshold_ns,
            table: FrameRowStats::default(),
            wake: WakeupRowStats::default(),
            negative: 0,
            jitter: new_histogram(),
            wakeup: new_histogram(),
            cyclictest: None,
        }
    }

    /// Also keeps `cyclictest -h` histograms of `max_us` buckets for the worker on `cpu`
    /// (allocated here, before the first frame).
    pub(crate) fn keep_histograms(&mut self, cpu: u32, max_us: u32) {
        self.cyclictest = Some(CpuHistograms::new(cpu, max_us));
    }

    /// The `cyclictest -h` histograms, if kept.
    pub(crate) fn histograms(&self) -> Option<&CpuHistograms> {
        self.cyclictest.as_ref()
    }

    /// Folds in one frame.
    pub(crate) fn record(&mut self, s: FrameSample) {
        let j = s.jitter_ns;
        self.table
            .record(s.frame, j, s.overrun, self.flier_threshold_ns);
        self.wake.record(
            s.frame,
            s.wakeup_ns,
            s.wake_overrun,
            self.flier_threshold_ns,
        );
        if j < 0 {
            self.negative += 1;
        }
        record(&mut self.jitter, j.max(0) as u64);
        record(&mut self.wakeup, s.wakeup_ns.max(0) as u64);
        if let Some(h) = &mut self.cyclictest {
            h.record(s.frame, j, s.wakeup_ns);
        }
    }

    /// Frames recorded.
    pub(crate) fn frames(&self) -> u64 {
        self.table.frames
    }

    /// Frames whose jitter came out below zero.
    pub(crate) fn negative(&self) -> u64 {
        self.negative
    }

    /// Histogram of jitter (ns, clamped at 0).
    pub(crate) fn jitter_histogram(&self) -> &Histogram<u64> {
        &self.jitter
    }

    /// Histogram of wake-up latency (ns, clamped at 0).
    pub(crate) fn wakeup_histogram(&self) -> &Histogram<u64> {
        &self.wakeup
    }

    /// Wake-up latency summary of this worker: percentiles from the histogram, minimum and
    /// maximum exact (the frame row's wake-up columns).
    pub(crate) fn wakeup_summary(&self) -> LatencySummary {
        let mut s = LatencySummary::from_histogram(&self.wakeup);
        if let Some(r) = self.wake.row() {
            s.min_us = r.min_us;
            s.max_us = r.max_us;
        }
        s
    }

    /// Exact (min, max) jitter in ns, `None` before the first frame.
    pub(crate) fn jitter_extremes_ns(&self) -> Option<(i64, i64)> {
        (self.table.frames > 0).then_some((self.table.min_ns, self.table.max_ns))
    }

    /// The frame-table row for `cpu` (times in µs). An empty worker gives a row of zeros with
    /// `frames == 0`.
    pub(crate) fn row(&self, cpu: u32) -> FrameRow {
        FrameRow {
            wakeup: self.wake.row(),
            ..self.table.row(cpu)
        }
    }
}

/// Percentiles of a latency distribution, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub samples: u64,
    /// Smallest value.
    pub min_us: f64,
    /// First quartile (25th percentile). Absent in reports written before it was added (0).
    #[serde(default)]
    pub p25_us: f64,
    /// Median.
    pub p50_us: f64,
    /// Third quartile (75th percentile); with `p25_us` the interquartile range, a spread
    /// measure the tail does not move. Absent in older reports (0).
    #[serde(default)]
    pub p75_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest value.
    pub max_us: f64,
}

impl LatencySummary {
    /// Summarises a histogram of nanoseconds (all zeros when it is empty).
    pub(crate) fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary {
                samples: 0,
                min_us: 0.0,
                p25_us: 0.0,
                p50_us: 0.0,
                p75_us: 0.0,
                p99_us: 0.0,
                p999_us: 0.0,
                max_us: 0.0,
            };
        }
        let q = |p: f64| percentile_ns(h, p) as f64 / 1e3;
        LatencySummary {
            samples: h.len(),
            min_us: h.min() as f64 / 1e3,
            p25_us: q(25.0),
            p50_us: q(50.0),
            p75_us: q(75.0),
            p99_us: q(99.0),
            p999_us: q(99.9),
            max_us: h.max() as f64 / 1e3,
        }
    }
}

impl LatencySummary {
    /// Keeps every percentile inside `[min_us, max_us]` once those hold the exact extremes
    /// ([`ticklab_schema::report::within_extremes`]: a histogram's bucket edge may lie beyond
    /// them).
    pub(crate) fn bound_percentiles(&mut self) {
        let (min, max) = (self.min_us, self.max_us);
        for p in [
            &mut self.p25_us,
            &mut self.p50_us,
            &mut self.p75_us,
            &mut self.p99_us,
            &mut self.p999_us,
        ] {
            *p = ticklab_schema::report::within_extremes(*p, min, max);
        }
    }
}

/// The value at percentile `p` (0–100) of a histogram of nanoseconds: the smallest recorded
/// value such that at least `p` % of samples are at or below it (within the histogram's
/// 3-digit precision). 0 for an empty histogram.
pub(crate) fn percentile_ns(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_percentile(p)
    }
}

/// Merges per-worker histograms into one group histogram.
pub(crate) fn merged<'a>(parts: impl IntoIterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut all = new_histogram();
    for h in parts {
        all.add(h)
            .expect("auto-resizing histograms of equal precision always merge");
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(frame: u64, jitter_ns: i64) -> FrameSample {
        FrameSample {
            frame,
            wakeup_ns: jitter_ns.max(0),
            jitter_ns,
            overrun: false,
            wake_overrun: false,
        }
    }

    #[test]
    fn empty_row_is_zero_with_no_frames() {
        let s = FrameStats::new(10_000);
        let r = s.row(3);
        assert_eq!(r.cpu, 3);
        assert_eq!(r.frames, 0);
        assert_eq!(
            (r.min_us, r.max_us, r.avg_us, r.sigma_us),
            (0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!((r.overruns, r.last_overrun, r.fliers), (0, 0, 0));
        assert!(r.first_fliers.is_empty());
        assert_eq!(r.last_flier, None);
        assert_eq!(s.wakeup_summary().samples, 0);
    }

    #[test]
    fn min_max_mean_sigma() {
        let mut s = FrameStats::new(10_000);
        // 2, 4, 4, 4, 5, 5, 7, 9 µs: mean 5, population sigma 2.
        for (k, us) in [2, 4, 4, 4, 5, 5, 7, 9].into_iter().enumerate() {
            s.record(sample(k as u64, us * 1000));
        }
        let r = s.row(0);
        assert_eq!(r.frames, 8);
        assert_eq!(r.min_us, 2.0);
        assert_eq!(r.max_us, 9.0);
        assert_eq!(r.max_frame, 7);
        assert!((r.avg_us - 5.0).abs() < 1e-12);
        assert!((r.sigma_us - 2.0).abs() < 1e-12);
    }

    #[test]
    fn max_frame_is_the_first_maximum() {
        let mut s = FrameStats::new(10_000);
        for (k, j) in [5, 9, 9, 1].into_iter().enumerate() {
            s.record(sample(k as u64, j));
        }
        assert_eq!(s.row(0).max_frame, 1);
    }

    #[test]
    fn single_frame_has_zero_sigma() {
        let mut s = FrameStats::new(10_000);
        s.record(sample(0, 1234));
        let r = s.row(0);
        assert_eq!(
            (r.min_us, r.max_us, r.avg_us, r.sigma_us),
            (1.234, 1.234, 1.234, 0.0)
        );
    }

    #[test]
    fn flier_threshold_is_strict() {
        // (jitter ns, is a flier) around a 10 µs threshold.
        let table = [(9_999, false), (10_000, false), (10_001, true), (-5, false)];
        for (j, flier) in table {
            let mut s = FrameStats::new(10_000);
            s.record(sample(0, j));
            assert_eq!(s.row(0).fliers, flier as u64, "jitter {j}");
        }
    }

    #[test]
    fn flier_bookkeeping_keeps_first_five_and_last() {
        // (flier frames, expected first, expected last)
        let table: &[(&[u64], &[u64], Option<u64>)] = &[
            (&[], &[], None),
            (&[7], &[7], Some(7)),
            (&[1, 2, 3, 4, 5], &[1, 2, 3, 4, 5], Some(5)),
            (&[1, 2, 3, 4, 5, 6], &[1, 2, 3, 4, 5], Some(6)),
            (
                &[2496, 2497, 36625, 36626, 45649, 50000, 3438632],
                &[2496, 2497, 36625, 36626, 45649],
                Some(3438632),
            ),
        ];
        for (fliers, first, last) in table {
            let mut s = FrameStats::new(10_000);
            let end = fliers.last().copied().unwrap_or(10) + 3;
            for k in 0..end {
                let j = if fliers.contains(&k) { 50_000 } else { 100 };
                s.record(sample(k, j));
            }
            let r = s.row(0);
            assert_eq!(r.fliers, fliers.len() as u64);
            assert_eq!(&r.first_fliers[..], *first);
            assert_eq!(r.last_flier, *last);
            assert_eq!(r.frames, end);
        }
    }

    #[test]
    fn overruns_count_and_last() {
        let mut s = FrameStats::new(10_000);
        for k in 0..10 {
            s.record(FrameSample {
                frame: k,
                wakeup_ns: 1,
                jitter_ns: 1,
                overrun: k == 3 || k == 8,
                wake_overrun: false,
            });
        }
        let r = s.row(0);
        assert_eq!((r.overruns, r.last_overrun), (2, 8));
    }

    #[test]
    fn negative_jitter_is_kept_signed_and_counted() {
        let mut s = FrameStats::new(10_000);
        s.record(sample(0, -300));
        s.record(sample(1, 700));
        let r = s.row(0);
        assert_eq!(r.min_us, -0.3);
        assert!((r.avg_us - 0.2).abs() < 1e-12);
        assert_eq!(s.negative(), 1);
        assert_eq!(s.jitter_histogram().min(), 0);
    }

    #[test]
    fn percentiles_at_the_edges() {
        let mut h = new_histogram();
        for v in 1..=10_000u64 {
            record(&mut h, v * 100);
        }
        // (percentile, expected ns within 0.1 %)
        let table = [
            (0.0, 100),
            (50.0, 500_000),
            (99.0, 990_000),
            (99.9, 999_000),
            (100.0, 1_000_000),
        ];
        for (p, want) in table {
            let got = percentile_ns(&h, p) as f64;
            assert!(
                (got - want as f64).abs() <= want as f64 * 1e-3,
                "p{p}: {got} vs {want}"
            );
        }
        assert_eq!(percentile_ns(&Histogram::<u64>::new(3).unwrap(), 50.0), 0);
        // The summary's quartiles: 0.1 .. 1000 µs evenly, so p25 = 250 µs and p75 = 750 µs.
        let s = LatencySummary::from_histogram(&h);
        for (got, want) in [(s.p25_us, 250.0), (s.p50_us, 500.0), (s.p75_us, 750.0)] {
            assert!((got - want).abs() <= want * 1e-3, "{got} vs {want}");
        }
        assert!(s.min_us <= s.p25_us && s.p25_us <= s.p50_us && s.p50_us <= s.p75_us);
    }

    #[test]
    fn histograms_grow_instead_of_clamping() {
        let mut s = FrameStats::new(10_000);
        for (k, j) in [3_000, 2_000_000_000].into_iter().enumerate() {
            s.record(FrameSample {
                frame: k as u64,
                wakeup_ns: j,
                jitter_ns: j,
                overrun: false,
                wake_overrun: false,
            });
        }
        assert_eq!(s.jitter_histogram().min(), 3_000);
        assert!(s.wakeup_histogram().max() >= 2_000_000_000);
    }

    #[test]
    fn summary_and_merge() {
        let mut a = FrameStats::new(10_000);
        let mut b = FrameStats::new(10_000);
        for k in 0..100 {
            a.record(FrameSample {
                frame: k,
                wakeup_ns: 2_000,
                jitter_ns: 1_000,
                overrun: false,
                wake_overrun: false,
            });
            b.record(FrameSample {
                frame: k,
                wakeup_ns: 60_000,
                jitter_ns: 3_000,
                overrun: false,
                wake_overrun: false,
            });
        }
        let all = merged([a.jitter_histogram(), b.jitter_histogram()]);
        assert_eq!(all.len(), 200);
        let s = LatencySummary::from_histogram(&all);
        assert_eq!(s.samples, 200);
        assert!((s.p50_us - 1.0).abs() < 0.01, "{s:?}");
        assert!((s.p99_us - 3.0).abs() < 0.01);
        let w = b.wakeup_summary();
        assert_eq!((w.min_us, w.samples), (60.0, 100));
        assert!((w.p50_us - 60.0).abs() < 0.1);
    }
}
