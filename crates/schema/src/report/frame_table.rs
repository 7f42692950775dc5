//! The frame table of a frame group (E2's table, `cyclictest`'s columns): the group's report,
//! its per-CPU rows, the jitter histogram and percentiles, and the running statistics both the
//! twin and the host lab fold each frame into.

use serde::{Deserialize, Serialize};

/// The frame table of one group (see docs/experiments.md E2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FrameGroupReport {
    /// Group name.
    pub group: String,
    /// Frames per second.
    pub frequency_hz: f64,
    /// Work units per frame.
    pub loop_units: u64,
    /// Flier threshold in microseconds.
    pub flier_threshold_us: f64,
    /// One row per CPU.
    pub rows: Vec<FrameRow>,
    /// Group percentiles (p50, p99, p99.9) in microseconds.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// How the host harness ran (SCHED_FIFO or timer slack), host only.
    pub policy: Option<String>,
    /// Group percentiles of the wake-up latency (µs), when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<Percentiles>,
    /// Per-CPU latency histograms (`--histogram`), in row order; empty when not asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<crate::histogram::CpuHistograms>,
    /// The jitter distribution of all the group's frames in the buckets of
    /// [`JITTER_BUCKET_EDGES_NS`] (twin; `None` where not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_histogram: Option<Vec<HistogramBucket>>,
}

/// Lower edges of the jitter histogram buckets, ns: 0, then 1-2-5 steps from 100 ns to
/// 10 ms (the last bucket is open above). Fine enough to show E2's tails (µs to tens of µs)
/// apart from its body, coarse enough to stay a few lines of JSON per group.
pub const JITTER_BUCKET_EDGES_NS: [u64; 17] = [
    0, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
    1_000_000, 2_000_000, 5_000_000, 10_000_000,
];

/// One bucket of a jitter histogram: frames with jitter from `from_us` (inclusive) to the
/// next bucket's `from_us` (exclusive; the last bucket is open).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistogramBucket {
    /// Lower edge, µs.
    pub from_us: f64,
    /// Frames in the bucket.
    pub frames: u64,
}

/// The buckets of [`JITTER_BUCKET_EDGES_NS`] filled from `(jitter ns, frames)` pairs (the
/// recorded values of a histogram); every bucket is listed, empty ones with 0.
pub fn jitter_histogram(values: impl IntoIterator<Item = (u64, u64)>) -> Vec<HistogramBucket> {
    let mut frames = [0u64; JITTER_BUCKET_EDGES_NS.len()];
    for (ns, n) in values {
        // The last edge not above `ns`; edge 0 is 0, so there always is one.
        let i = JITTER_BUCKET_EDGES_NS.partition_point(|&e| e <= ns) - 1;
        frames[i] += n;
    }
    JITTER_BUCKET_EDGES_NS
        .iter()
        .zip(frames)
        .map(|(&e, frames)| HistogramBucket {
            from_us: e as f64 / 1e3,
            frames,
        })
        .collect()
}

/// p50 / p99 / p99.9 of a distribution, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percentiles {
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
}

/// A percentile read from a histogram, kept inside the exact extremes of the same samples.
///
/// A histogram answers a percentile with an edge of the bucket that holds it (HdrHistogram:
/// the bucket's highest equivalent value), which can lie a few ns beyond the largest (or below
/// the smallest) sample the exact running statistics saw. The true percentile lies both in
/// that bucket and in `[min_us, max_us]`, so the bounded value is still a value of the bucket:
/// no less precise, and no longer contradicting the row's maximum. `min_us > max_us` (no
/// samples) leaves `v` as it is.
pub fn within_extremes(v: f64, min_us: f64, max_us: f64) -> f64 {
    if min_us <= max_us {
        v.clamp(min_us, max_us)
    } else {
        v
    }
}

impl Percentiles {
    /// Each percentile through [`within_extremes`].
    pub fn within_extremes(self, min_us: f64, max_us: f64) -> Percentiles {
        let b = |v| within_extremes(v, min_us, max_us);
        let p = Percentiles {
            p50_us: b(self.p50_us),
            p99_us: b(self.p99_us),
            p999_us: b(self.p999_us),
        };
        debug_assert!(
            min_us > max_us || (min_us <= p.p50_us && p.p50_us <= p.p999_us && p.p999_us <= max_us),
            "{p:?} outside [{min_us}, {max_us}]"
        );
        p
    }
}

impl FrameGroupReport {
    /// The smallest and largest jitter of any CPU with frames (µs), `None` without frames.
    pub fn jitter_extremes_us(&self) -> Option<(f64, f64)> {
        let rows = || self.rows.iter().filter(|r| r.frames > 0);
        Some((
            rows().map(|r| r.min_us).reduce(f64::min)?,
            rows().map(|r| r.max_us).reduce(f64::max)?,
        ))
    }

    /// The smallest and largest wake-up latency of any CPU (µs), `None` when not measured.
    pub fn wakeup_extremes_us(&self) -> Option<(f64, f64)> {
        let rows = || self.rows.iter().filter_map(|r| r.wakeup.as_ref());
        Some((
            rows().map(|w| w.min_us).reduce(f64::min)?,
            rows().map(|w| w.max_us).reduce(f64::max)?,
        ))
    }

    /// The group's percentiles kept inside its rows' exact extremes ([`within_extremes`]):
    /// what the producers call once the rows are filled in.
    pub fn bound_percentiles(&mut self) {
        if let Some((min, max)) = self.jitter_extremes_us() {
            let p = Percentiles {
                p50_us: self.p50_us,
                p99_us: self.p99_us,
                p999_us: self.p999_us,
            }
            .within_extremes(min, max);
            (self.p50_us, self.p99_us, self.p999_us) = (p.p50_us, p.p99_us, p.p999_us);
        }
        if let (Some(w), Some((min, max))) = (self.wakeup, self.wakeup_extremes_us()) {
            self.wakeup = Some(w.within_extremes(min, max));
        }
    }
}

/// One CPU's row of the frame table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FrameRow {
    /// CPU.
    pub cpu: u32,
    /// Frames completed.
    pub frames: u64,
    /// Minimum jitter, µs.
    pub min_us: f64,
    /// Maximum jitter, µs.
    pub max_us: f64,
    /// Frame index of the maximum.
    pub max_frame: u64,
    /// Mean jitter, µs.
    pub avg_us: f64,
    /// Standard deviation, µs.
    pub sigma_us: f64,
    /// Frames not finished before the next one started.
    pub overruns: u64,
    /// Index of the last overrun.
    pub last_overrun: u64,
    /// Frames above the flier threshold.
    pub fliers: u64,
    /// First five flier frame indices.
    pub first_fliers: Vec<u64>,
    /// Last flier frame index.
    pub last_flier: Option<u64>,
    /// Wake-up latency (programmed start → worker running), when measured: the columns
    /// beside the jitter (docs/experiments.md E2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<WakeupRow>,
    /// Longest wait of this CPU for a shared lock or line in one kernel path (µs), twin only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lock_wait_us: Option<f64>,
}

/// Fliers listed by index at the start of the frame table's last column.
pub const FIRST_FLIERS: usize = 5;

/// Running statistics of one frame worker, folded frame by frame into one [`FrameRow`]. The
/// twin and the host lab both keep their per-CPU frame statistics in this one type, so the
/// table means the same thing for a simulated and a measured run.
///
/// Mean and variance come from exact integer sums of each jitter's distance to the first one
/// (no stored samples, no division per frame, no rounding until the row is built); the flier
/// list keeps the first [`FIRST_FLIERS`] indices and the last one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FrameRowStats {
    /// Frames recorded.
    pub frames: u64,
    /// Smallest jitter (ns); meaningful when `frames > 0`.
    pub min_ns: i64,
    /// Largest jitter (ns).
    pub max_ns: i64,
    /// Frame index of the largest.
    pub max_frame: u64,
    /// The first jitter recorded: the others are summed as distances from it, which keeps the
    /// sums small (the spread of the jitters, not their size).
    origin: i64,
    /// Σ (jitter − origin).
    sum: i128,
    /// Σ (jitter − origin)².
    sum_sq: u128,
    /// Frames that finished after the next frame's start.
    pub overruns: u64,
    /// Index of the last such frame.
    pub last_overrun: u64,
    /// Frames strictly above the flier threshold.
    pub fliers: u64,
    first: [u64; FIRST_FLIERS],
    /// Index of the last flier.
    pub last_flier: Option<u64>,
}

impl FrameRowStats {
    /// Folds in frame `k` with `jitter_ns`; `overrun` if it ended after the next frame's start;
    /// a flier when the jitter is strictly above `flier_ns`.
    #[inline]
    pub fn record(&mut self, k: u64, jitter_ns: i64, overrun: bool, flier_ns: i64) {
        if self.frames == 0 || jitter_ns < self.min_ns {
            self.min_ns = jitter_ns;
        }
        if self.frames == 0 || jitter_ns > self.max_ns {
            self.max_ns = jitter_ns;
            self.max_frame = k;
        }
        if self.frames == 0 {
            self.origin = jitter_ns;
        }
        self.frames += 1;
        let d = i128::from(jitter_ns) - i128::from(self.origin);
        self.sum += d;
        // |d| < 2^64, so d² < 2^128; saturation would need ~2^64 frames at that spread.
        self.sum_sq = self.sum_sq.saturating_add(d.unsigned_abs().pow(2));
        if overrun {
            self.overruns += 1;
            self.last_overrun = k;
        }
        if jitter_ns > flier_ns {
            if (self.fliers as usize) < FIRST_FLIERS {
                self.first[self.fliers as usize] = k;
            }
            self.fliers += 1;
            self.last_flier = Some(k);
        }
    }

    /// Mean jitter (ns).
    pub fn mean_ns(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.origin as f64 + self.sum as f64 / self.frames as f64
        }
    }

    /// Population standard deviation of the jitter (ns).
    pub fn sigma_ns(&self) -> f64 {
        if self.frames == 0 {
            return 0.0;
        }
        let n = u128::from(self.frames);
        let s = self.sum.unsigned_abs();
        // n² σ² = n Σd² − (Σd)², exact in integers when it fits; f64 otherwise.
        let n2_var = n
            .checked_mul(self.sum_sq)
            .zip(s.checked_mul(s))
            .map(|(a, b)| a.saturating_sub(b) as f64);
        let var = match n2_var {
            Some(x) => x / (n as f64 * n as f64),
            None => {
                let mean = self.sum as f64 / n as f64;
                (self.sum_sq as f64 / n as f64 - mean * mean).max(0.0)
            }
        };
        var.sqrt()
    }

    /// The frame-table row of `cpu` (µs); an empty worker gives zeros with `frames == 0`.
    pub fn row(&self, cpu: u32) -> FrameRow {
        let empty = self.frames == 0;
        let us = |ns: i64| if empty { 0.0 } else { ns as f64 / 1e3 };
        let n = (self.fliers as usize).min(FIRST_FLIERS);
        FrameRow {
            cpu,
            frames: self.frames,
            min_us: us(self.min_ns),
            max_us: us(self.max_ns),
            max_frame: self.max_frame,
            avg_us: self.mean_ns() / 1e3,
            sigma_us: self.sigma_ns() / 1e3,
            overruns: self.overruns,
            last_overrun: self.last_overrun,
            fliers: self.fliers,
            first_fliers: self.first[..n].to_vec(),
            last_flier: self.last_flier,
            wakeup: None,
            max_lock_wait_us: None,
        }
    }
}

/// Wake-up latency of one worker over its frames (µs): the columns beside the jitter table.
///
/// Overruns and fliers are counted as the jitter table counts them, on the wake-up latency:
/// an overrun is a frame whose worker started running after the next frame's start (a whole
/// period late, the case cyclictest's loop skips), a flier one woken more than the flier
/// threshold after its start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WakeupRow {
    /// Smallest wake-up latency.
    pub min_us: f64,
    /// Largest wake-up latency.
    pub max_us: f64,
    /// Frame index of the largest.
    pub max_frame: u64,
    /// Mean.
    pub avg_us: f64,
    /// Population standard deviation.
    pub sigma_us: f64,
    /// Frames whose worker started running after the next frame's start.
    #[serde(default)]
    pub overruns: u64,
    /// Index of the last such frame.
    #[serde(default)]
    pub last_overrun: u64,
    /// Frames woken more than the flier threshold after their start.
    #[serde(default)]
    pub fliers: u64,
    /// First five flier frame indices.
    #[serde(default)]
    pub first_fliers: Vec<u64>,
    /// Last flier frame index.
    #[serde(default)]
    pub last_flier: Option<u64>,
}

/// Running wake-up latency statistics of one worker: the frame-row statistics of the
/// schema ([`FrameRowStats`], exact integer sums), with overruns and fliers of the wake-up
/// latency ([`WakeupRow`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WakeupRowStats(FrameRowStats);

impl WakeupRowStats {
    /// Folds in frame `k` woken `wakeup_ns` after its programmed start; `overrun` when the
    /// worker started running after the next frame's start; a flier when `wakeup_ns` is
    /// strictly above `flier_ns`.
    #[inline]
    pub fn record(&mut self, k: u64, wakeup_ns: i64, overrun: bool, flier_ns: i64) {
        self.0.record(k, wakeup_ns, overrun, flier_ns);
    }

    /// The row (µs); `None` before the first frame.
    pub fn row(&self) -> Option<WakeupRow> {
        if self.0.frames == 0 {
            return None;
        }
        let r = self.0.row(0);
        Some(WakeupRow {
            min_us: r.min_us,
            max_us: r.max_us,
            max_frame: r.max_frame,
            avg_us: r.avg_us,
            sigma_us: r.sigma_us,
            overruns: r.overruns,
            last_overrun: r.last_overrun,
            fliers: r.fliers,
            first_fliers: r.first_fliers,
            last_flier: r.last_flier,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakeup_rows() {
        let mut w = WakeupRowStats::default();
        assert_eq!(w.row(), None);
        // (wakeup ns, overrun): a 4 µs flier threshold.
        for (k, (ns, over)) in [(2_000i64, false), (5_000, true), (2_000, false)]
            .into_iter()
            .enumerate()
        {
            w.record(k as u64, ns, over, 4_000);
        }
        let r = w.row().unwrap();
        assert_eq!(
            (r.min_us, r.max_us, r.max_frame, r.avg_us),
            (2.0, 5.0, 1, 3.0)
        );
        assert_eq!((r.overruns, r.last_overrun), (1, 1));
        assert_eq!(
            (r.fliers, r.first_fliers.as_slice(), r.last_flier),
            (1, &[1u64][..], Some(1))
        );
        assert!((r.sigma_us - 2f64.sqrt()).abs() < 1e-9);
    }
}
