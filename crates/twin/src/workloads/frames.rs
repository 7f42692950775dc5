//! Frame-scheduler groups (docs/experiments.md E2): one SCHED_FIFO worker per CPU; frame `k` of a
//! group starts at exactly `t0 + k / FREQ`; the worker sleeps on an absolute hrtimer (slack 0,
//! as for any RT task) to the frame start, computes `LOOP × work_unit_ns`, records how late it
//! finished, and sleeps again.
//!
//! The two figures of a frame follow the rule shared with the host lab
//! ([`ticklab_schema::frames::FrameTiming`], docs/experiments.md E2):
//!
//! * jitter = completion − the moment the worker started running the frame − undisturbed
//!   duration: every interrupt that landed while the worker computed, nothing else;
//! * wake-up latency = the moment the worker started running − nominal start: timer
//!   delivery, C-state exit, interrupt entry, callbacks before the wake-up in the same
//!   interrupt (the tick, a jiffies catch-up, the RT enqueue bookkeeping), the tick restart
//!   on idle exit and the context switch.
//!
//! The statistics here are updated once per frame without allocating.

use crate::engine::Time;
use crate::kernel::hrtimer::TimerId;
use ticklab_schema::frames::FrameClock;
use ticklab_schema::hdr::HdrRecorder;
use ticklab_schema::histogram::CpuHistograms;
use ticklab_schema::report::WakeupRowStats;
use ticklab_schema::report::{FrameGroupReport, FrameRow, Percentiles, jitter_histogram};

/// Default flier threshold (docs/experiments.md E2: "default 10 µs").
pub const DEFAULT_FLIER_NS: u64 = 10_000;

/// Largest jitter the group histogram resolves (60 s); larger values saturate.
const HIST_MAX_NS: u64 = 60_000_000_000;

/// One group at run time.
#[derive(Debug, Clone)]
pub(crate) struct FrameGroup {
    /// Name used in tables.
    pub name: String,
    /// Frames per second.
    pub frequency_hz: f64,
    /// When frames start (the rule shared with the host lab).
    clock: FrameClock,
    /// For an integral frequency `f`: `(⌊2·10^9 ÷ 2f⌋, 2·10^9 mod 2f, 2f)`, one frame's step
    /// of the exact rounding in [`FrameGroup::next_start`].
    step: Option<(u64, u64, u64)>,
    /// Work units per frame.
    pub loop_units: u64,
    /// Undisturbed compute time of one frame (ns).
    pub work_ns: u64,
    /// Frame 0 starts here.
    pub t0: Time,
    /// Frames to run.
    pub n_frames: u64,
    /// Jitter of every frame of every worker (ns), by HdrHistogram bucket (3 digits).
    pub hist: HdrRecorder,
    /// Wake-up latency of every frame of every worker (ns), likewise.
    pub wake_hist: HdrRecorder,
    /// Indices of the group's workers, in CPU order.
    pub workers: Vec<usize>,
}

impl FrameGroup {
    /// A group whose frame 0 starts at `t0` and which runs `n_frames` frames.
    pub(crate) fn new(
        name: String,
        frequency_hz: f64,
        loop_units: u64,
        work_unit_ns: f64,
        t0: Time,
        n_frames: u64,
    ) -> FrameGroup {
        FrameGroup {
            name,
            frequency_hz,
            clock: FrameClock::new(frequency_hz),
            step: FrameClock::new(frequency_hz)
                .integral_hz()
                .map(|f| (2_000_000_000 / (2 * f), 2_000_000_000 % (2 * f), 2 * f)),
            loop_units,
            work_ns: (loop_units as f64 * work_unit_ns).round() as u64,
            t0,
            n_frames,
            hist: HdrRecorder::new(HIST_MAX_NS, 3)
                .expect("1..60 s at 3 significant digits is a valid histogram"),
            wake_hist: HdrRecorder::new(HIST_MAX_NS, 3)
                .expect("1..60 s at 3 significant digits is a valid histogram"),
            workers: Vec::new(),
        }
    }

    /// Nominal start of frame `k`.
    #[inline]
    pub(crate) fn start(&self, k: u64) -> Time {
        self.t0 + self.clock.offset_ns(k)
    }

    /// The remainder [`FrameGroup::next_start`] starts from at frame 0.
    pub(crate) fn first_remainder(&self) -> u64 {
        self.clock.integral_hz().unwrap_or(0)
    }

    /// Start of frame `k + 1` from frame `k`'s start and the rounding remainder, which it
    /// advances: what [`FrameGroup::start`] gives, without its division per frame.
    ///
    /// Invariant (integral frequency `f`): `2·10^9·k + f = (start(k) − t0)·2f + rem` with
    /// `0 ≤ rem < 2f`; one frame adds `2·10^9 = A·2f + B` to the left side.
    #[inline]
    pub(crate) fn next_start(&self, k: u64, start: Time, rem: &mut u64) -> Time {
        match self.step {
            Some((a, b, two_f)) => {
                let mut next = start + a;
                *rem += b;
                if *rem >= two_f {
                    *rem -= two_f;
                    next += 1;
                }
                next
            }
            None => self.start(k + 1),
        }
    }
}

/// Per-worker jitter statistics: the shared frame-table statistics of the report schema.
pub(crate) type FrameStats = ticklab_schema::report::FrameRowStats;

/// One worker at run time.
#[derive(Debug, Clone)]
pub(crate) struct FrameWorker {
    /// Its group (index).
    pub group: usize,
    /// Its CPU.
    pub cpu: u32,
    /// The hrtimer it sleeps on, on its own CPU.
    pub timer: TimerId,
    /// Per CPU, the worker's sleeper timer in that CPU's slab when the worker's CPU is not a
    /// timer-housekeeping CPU and its sleeps may be queued there (`kernel::timer_migration`);
    /// empty otherwise (every sleep stays on the worker's CPU). Allocated at setup.
    pub remote_timers: Vec<Option<TimerId>>,
    /// Index of the current (or next) frame.
    pub k: u64,
    /// Nominal start of frame `k` (`FrameGroup::start(k)`), advanced frame by frame.
    pub start: Time,
    /// Rounding remainder of `start` (see [`FrameGroup::next_start`]).
    pub rem: u64,
    /// When the worker started running frame `k` (valid while it computes).
    pub running: Time,
    /// The jitter statistics.
    pub stats: FrameStats,
    /// The wake-up latency statistics.
    pub wake: WakeupRowStats,
    /// `cyclictest -h` histograms of jitter and wake-up latency, when asked for
    /// ([`crate::sim::Sim::set_frame_histogram`]); allocated before the run.
    pub histograms: Option<CpuHistograms>,
}

/// The report of one group; `max_lock_wait_ns(cpu)` is the CPU's longest wait for a shared
/// lock or line in the window.
pub(crate) fn group_report(
    g: &FrameGroup,
    workers: &[FrameWorker],
    flier_ns: u64,
    max_lock_wait_ns: impl Fn(u32) -> u64,
) -> FrameGroupReport {
    let (hist, wake_hist) = (g.hist.histogram(), g.wake_hist.histogram());
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1e3;
    let w = |p: f64| wake_hist.value_at_quantile(p) as f64 / 1e3;
    let mut report = FrameGroupReport {
        jitter_histogram: Some(jitter_histogram(
            hist.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value())),
        )),
        group: g.name.clone(),
        frequency_hz: g.frequency_hz,
        loop_units: g.loop_units,
        flier_threshold_us: flier_ns as f64 / 1e3,
        rows: g
            .workers
            .iter()
            .map(|&i| {
                let wk = &workers[i];
                FrameRow {
                    wakeup: wk.wake.row(),
                    max_lock_wait_us: Some(max_lock_wait_ns(wk.cpu) as f64 / 1e3),
                    ..wk.stats.row(wk.cpu)
                }
            })
            .collect(),
        p50_us: q(0.5),
        p99_us: q(0.99),
        p999_us: q(0.999),
        policy: None,
        wakeup: (!wake_hist.is_empty()).then(|| Percentiles {
            p50_us: w(0.5),
            p99_us: w(0.99),
            p999_us: w(0.999),
        }),
        histograms: g
            .workers
            .iter()
            .filter_map(|&i| workers[i].histograms.clone())
            .collect(),
    };
    // The histogram's bucket edges may lie beyond the exact extremes of the rows.
    report.bound_percentiles();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_start_follows_start_exactly() {
        for hz in [960.0, 666.0, 300.0, 7.0, 1_000_000_000.0, 2.5] {
            let g = FrameGroup::new("g".into(), hz, 1, 1.0, 12_345, 0);
            let (mut start, mut rem) = (g.start(0), g.first_remainder());
            for k in 0..5_000 {
                let next = g.next_start(k, start, &mut rem);
                assert_eq!(next, g.start(k + 1), "{hz} Hz, frame {}", k + 1);
                start = next;
            }
        }
    }

    #[test]
    fn stats_mean_sigma_fliers() {
        let mut s = FrameStats::default();
        for (k, j) in [
            100u64, 300, 20_000, 100, 15_000, 11_000, 12_000, 13_000, 14_000,
        ]
        .into_iter()
        .enumerate()
        {
            s.record(k as u64, j as i64, k == 3, 10_000);
        }
        assert_eq!(s.frames, 9);
        assert_eq!((s.min_ns, s.max_ns, s.max_frame), (100, 20_000, 2));
        let xs = [100.0, 300.0, 20e3, 100.0, 15e3, 11e3, 12e3, 13e3, 14e3];
        let mean = xs.iter().sum::<f64>() / 9.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 9.0;
        assert!((s.mean_ns() - mean).abs() < 1e-6);
        assert!((s.sigma_ns() - var.sqrt()).abs() < 1e-6);
        let row = s.row(4);
        assert_eq!(row.fliers, 6);
        assert_eq!(row.first_fliers, vec![2, 4, 5, 6, 7]);
        assert_eq!(row.last_flier, Some(8));
        assert_eq!((row.overruns, row.last_overrun), (1, 3));
    }
}
