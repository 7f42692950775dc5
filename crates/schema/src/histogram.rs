//! Latency histograms in the layout of `cyclictest -h`: one microsecond per bucket, an
//! overflow count, and the exact minimum, mean and maximum beside them. One type for the
//! twin and the host lab, so a simulated and a measured histogram are read the same way
//! (docs/experiments.md E2, docs/schema.md).
//!
//! # Buckets
//!
//! A value of `v` ns goes into bucket `⌊v / 1000⌋` (whole microseconds, truncated, as
//! `cyclictest` truncates its µs differences); a negative value (a measured frame that ran
//! faster than its calibration, a clock read that raced the start) into bucket 0. A value
//! whose bucket is `max_us` or above is not in any bucket: it counts as an overflow. So
//! `Σ buckets + overflows = samples` (the invariant [`LatencyHistogram::record`] keeps).
//!
//! # One maximum
//!
//! The minimum, the maximum and the mean are kept from the values themselves, in ns, not
//! from the buckets: the histogram's maximum is the same number as the frame table's.
//!
//! Recording allocates nothing: the buckets are allocated once, when the histogram is made.

use serde::{Deserialize, Serialize};

/// The largest `MAX_US` a histogram accepts (10 s of 1 µs buckets, 80 MB per histogram and
/// as much again for the overflowing frames' indices):
/// beyond it the buckets cost more memory than any frame run needs.
pub const MAX_HISTOGRAM_US: u32 = 10_000_000;

/// The bucket count when `--histogram` is given without a value.
pub const DEFAULT_HISTOGRAM_US: u32 = 1_000;

/// Why a histogram's size or a stored histogram was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    /// A bucket count outside 1 ..= [`MAX_HISTOGRAM_US`].
    #[error("{0} buckets: expected 1 to {MAX_HISTOGRAM_US} (one per microsecond)")]
    Buckets(u32),
    /// The run's frame workers would hold more than [`MAX_HISTOGRAM_TOTAL_BUCKETS`] together.
    #[error(
        "{workers} frame workers × 2 histograms × {max_us} buckets is {} buckets, above the \
         limit of {MAX_HISTOGRAM_TOTAL_BUCKETS} ({} MiB of counts); give at most \
         --histogram={} for {workers} workers",
        u64::from(*max_us) * 2 * *workers as u64,
        (MAX_HISTOGRAM_TOTAL_BUCKETS * 8) >> 20,
        MAX_HISTOGRAM_TOTAL_BUCKETS / (2 * *workers as u64).max(1)
    )]
    TooManyBuckets {
        /// Buckets per histogram.
        max_us: u32,
        /// Frame workers of the run.
        workers: usize,
    },
    /// A stored histogram (JSON) that does not hold together.
    #[error("histogram: {0}")]
    Record(String),
}

/// Checks a `--histogram` value: 1 ..= [`MAX_HISTOGRAM_US`] buckets.
pub fn check_histogram_us(max_us: u32) -> Result<u32, HistogramError> {
    if (1..=MAX_HISTOGRAM_US).contains(&max_us) {
        Ok(max_us)
    } else {
        Err(HistogramError::Buckets(max_us))
    }
}

/// Most buckets all the histograms of one run may hold together (two per frame worker):
/// 2²⁵, 256 MiB of counts (and as much reserved for the overflowing frames' indices). One
/// worker may take the whole [`MAX_HISTOGRAM_US`]; 64 workers get up to 262 144 µs each.
pub const MAX_HISTOGRAM_TOTAL_BUCKETS: u64 = 1 << 25;

/// Checks that `workers` frame workers, each with two histograms of `max_us` buckets, stay
/// within [`MAX_HISTOGRAM_TOTAL_BUCKETS`] (`--histogram=10000000` on 64 CPUs asked for 10 GB).
pub fn check_histogram_total(max_us: u32, workers: usize) -> Result<(), HistogramError> {
    let total = u64::from(max_us) * 2 * workers as u64;
    if total <= MAX_HISTOGRAM_TOTAL_BUCKETS {
        return Ok(());
    }
    Err(HistogramError::TooManyBuckets { max_us, workers })
}

/// A latency histogram of 1 µs buckets (see the module docs).
///
/// Invariant: `counts.len() == max_us`, and `Σ counts + overflows == samples`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(into = "HistogramRecord", try_from = "HistogramRecord")]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    overflows: u64,
    samples: u64,
    min_ns: i64,
    max_ns: i64,
    /// Frame (cycle) index of the first maximum.
    max_frame: u64,
    sum_ns: i128,
    /// Frame indices of the first overflows: at most `max_us` of them, as `cyclictest` keeps
    /// for its "Histogram Overflow at cycle number" line.
    first_overflows: Vec<u64>,
}

impl LatencyHistogram {
    /// An empty histogram of `max_us` buckets (0 ..= `max_us − 1` µs); callers check `max_us`
    /// with [`check_histogram_us`].
    pub fn new(max_us: u32) -> LatencyHistogram {
        debug_assert!(check_histogram_us(max_us).is_ok());
        LatencyHistogram {
            counts: vec![0; max_us as usize],
            overflows: 0,
            samples: 0,
            min_ns: 0,
            max_ns: 0,
            max_frame: 0,
            sum_ns: 0,
            first_overflows: Vec::with_capacity(max_us as usize),
        }
    }

    /// Folds in frame `k`'s latency of `ns` nanoseconds. Allocates nothing.
    #[inline]
    pub fn record(&mut self, k: u64, ns: i64) {
        if self.samples == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        if self.samples == 0 || ns > self.max_ns {
            self.max_ns = ns;
            self.max_frame = k;
        }
        self.samples += 1;
        self.sum_ns += i128::from(ns);
        let bucket = (ns.max(0) / 1000) as u64;
        match self.counts.get_mut(bucket as usize) {
            Some(c) => *c += 1,
            None => {
                self.overflows += 1;
                if self.first_overflows.len() < self.counts.len() {
                    // Capacity reserved in `new`: no allocation.
                    self.first_overflows.push(k);
                }
            }
        }
        debug_assert_eq!(
            self.counts.iter().sum::<u64>() + self.overflows,
            self.samples
        );
    }

    /// Number of buckets (`MAX_US`).
    pub fn max_us(&self) -> u32 {
        self.counts.len() as u32
    }

    /// Count of bucket `us` (values in `[us, us + 1)` µs); 0 beyond the last bucket.
    pub fn count(&self, us: u32) -> u64 {
        self.counts.get(us as usize).copied().unwrap_or(0)
    }

    /// Values at or above `max_us` µs.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Frame indices of the first overflows (at most `max_us`).
    pub fn first_overflows(&self) -> &[u64] {
        &self.first_overflows
    }

    /// Values recorded.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Smallest value, ns (`None` when empty).
    pub fn min_ns(&self) -> Option<i64> {
        (self.samples > 0).then_some(self.min_ns)
    }

    /// Largest value, ns, exact (`None` when empty).
    pub fn max_ns(&self) -> Option<i64> {
        (self.samples > 0).then_some(self.max_ns)
    }

    /// Frame index of the first largest value.
    pub fn max_frame(&self) -> u64 {
        self.max_frame
    }

    /// Mean, ns (`None` when empty).
    pub fn mean_ns(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_ns as f64 / self.samples as f64)
    }
}

/// What a [`LatencyHistogram`] looks like in the JSON report: the non-empty buckets only,
/// as `[microsecond, count]` pairs, and the exact figures in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct HistogramRecord {
    /// Buckets (`MAX_US`).
    max_us: u32,
    /// `[µs, count]` of every non-empty bucket, ascending.
    buckets: Vec<(u32, u64)>,
    overflows: u64,
    #[serde(default)]
    first_overflows: Vec<u64>,
    samples: u64,
    min_ns: Option<i64>,
    max_ns: Option<i64>,
    max_frame: u64,
    /// Σ values, ns (exact; the mean is `sum_ns / samples`). A string: it can exceed what a
    /// JSON number holds exactly.
    sum_ns: String,
}

impl From<LatencyHistogram> for HistogramRecord {
    fn from(h: LatencyHistogram) -> HistogramRecord {
        HistogramRecord {
            max_us: h.max_us(),
            buckets: h
                .counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(us, c)| (us as u32, *c))
                .collect(),
            overflows: h.overflows,
            first_overflows: h.first_overflows.clone(),
            samples: h.samples,
            min_ns: h.min_ns(),
            max_ns: h.max_ns(),
            max_frame: h.max_frame,
            sum_ns: h.sum_ns.to_string(),
        }
    }
}

impl TryFrom<HistogramRecord> for LatencyHistogram {
    type Error = HistogramError;

    fn try_from(r: HistogramRecord) -> Result<LatencyHistogram, HistogramError> {
        let bad = HistogramError::Record;
        check_histogram_us(r.max_us).map_err(|e| bad(format!("max_us: {e}")))?;
        let mut counts = vec![0u64; r.max_us as usize];
        for (us, c) in r.buckets {
            *counts
                .get_mut(us as usize)
                .ok_or_else(|| bad(format!("bucket {us} us: beyond max_us {}", r.max_us)))? += c;
        }
        let sum_ns: i128 = r
            .sum_ns
            .parse()
            .map_err(|e| bad(format!("sum_ns {:?}: {e}", r.sum_ns)))?;
        if counts.iter().sum::<u64>() + r.overflows != r.samples {
            return Err(bad(format!(
                "buckets and overflows add up to {}, not {} samples",
                counts.iter().sum::<u64>() + r.overflows,
                r.samples
            )));
        }
        Ok(LatencyHistogram {
            counts,
            overflows: r.overflows,
            samples: r.samples,
            min_ns: r.min_ns.unwrap_or(0),
            max_ns: r.max_ns.unwrap_or(0),
            max_frame: r.max_frame,
            sum_ns,
            first_overflows: r.first_overflows,
        })
    }
}

/// One CPU's two histograms of a frame group: jitter and wake-up latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuHistograms {
    /// CPU of the worker.
    pub cpu: u32,
    /// Jitter (docs/experiments.md E2: completion − running − undisturbed duration).
    pub jitter: LatencyHistogram,
    /// Wake-up latency (running − programmed start).
    pub wakeup: LatencyHistogram,
}

impl CpuHistograms {
    /// Empty histograms of `max_us` buckets for the worker on `cpu`.
    pub fn new(cpu: u32, max_us: u32) -> CpuHistograms {
        CpuHistograms {
            cpu,
            jitter: LatencyHistogram::new(max_us),
            wakeup: LatencyHistogram::new(max_us),
        }
    }

    /// Folds in frame `k`.
    #[inline]
    pub fn record(&mut self, k: u64, jitter_ns: i64, wakeup_ns: i64) {
        self.jitter.record(k, jitter_ns);
        self.wakeup.record(k, wakeup_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_of_a_run_are_capped_in_total() {
        // (max_us, workers, ok)
        let cases = [
            (MAX_HISTOGRAM_US, 1, true),
            (262_144, 64, true),
            (262_145, 64, false),
            (MAX_HISTOGRAM_US, 64, false),
            (1, 0, true),
        ];
        for (max_us, workers, ok) in cases {
            assert_eq!(
                check_histogram_total(max_us, workers).is_ok(),
                ok,
                "{max_us} × {workers}"
            );
        }
        let e = check_histogram_total(MAX_HISTOGRAM_US, 64).unwrap_err();
        assert!(e.to_string().contains("--histogram=262144"), "{e}");
    }

    #[test]
    fn buckets_truncate_to_whole_microseconds_and_overflow_at_max() {
        // (ns, bucket or None = overflow) with 5 buckets
        let cases = [
            (0, Some(0)),
            (999, Some(0)),
            (1_000, Some(1)),
            (4_999, Some(4)),
            (5_000, None),
            (-300, Some(0)),
            (i64::MAX, None),
        ];
        for (ns, bucket) in cases {
            let mut h = LatencyHistogram::new(5);
            h.record(7, ns);
            match bucket {
                Some(b) => assert_eq!((h.count(b), h.overflows()), (1, 0), "{ns}"),
                None => {
                    assert_eq!(h.overflows(), 1, "{ns}");
                    assert_eq!(h.first_overflows(), &[7]);
                }
            }
            assert_eq!(h.max_ns(), Some(ns));
        }
    }

    #[test]
    fn exact_min_mean_max_beside_the_buckets() {
        let mut h = LatencyHistogram::new(100);
        assert_eq!((h.min_ns(), h.max_ns(), h.mean_ns()), (None, None, None));
        for (k, ns) in [2_500i64, 2_770_943, 1_200].into_iter().enumerate() {
            h.record(k as u64, ns);
        }
        assert_eq!(h.min_ns(), Some(1_200));
        assert_eq!(h.max_ns(), Some(2_770_943));
        assert_eq!(h.max_frame(), 1);
        assert_eq!(h.mean_ns(), Some((2_500.0 + 2_770_943.0 + 1_200.0) / 3.0));
        assert_eq!((h.count(2), h.count(1), h.overflows()), (1, 1, 1));
    }

    #[test]
    fn json_keeps_every_figure_and_refuses_inconsistent_buckets() {
        let mut h = LatencyHistogram::new(50);
        for k in 0..200u64 {
            h.record(k, (k as i64 * 379) % 70_000 - 100);
        }
        let text = serde_json::to_string(&h).unwrap();
        let back: LatencyHistogram = serde_json::from_str(&text).unwrap();
        assert_eq!(back, h);
        let bad = text.replace("\"samples\":200", "\"samples\":201");
        assert!(serde_json::from_str::<LatencyHistogram>(&bad).is_err());
        let beyond = r#"{"max_us":2,"buckets":[[5,1]],"overflows":0,"samples":1,"min_ns":5000,"max_ns":5000,"max_frame":0,"sum_ns":"5000"}"#;
        assert!(serde_json::from_str::<LatencyHistogram>(beyond).is_err());
    }

    #[test]
    fn histogram_value_bounds() {
        for (v, ok) in [
            (0, false),
            (1, true),
            (MAX_HISTOGRAM_US, true),
            (MAX_HISTOGRAM_US + 1, false),
        ] {
            assert_eq!(check_histogram_us(v).is_ok(), ok, "{v}");
        }
    }
}
