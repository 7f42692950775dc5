//! The frame-scheduler harness: one pinned worker per CPU, all starting frame k at
//! t0 + k / FREQ (docs/experiments.md E2).
//!
//! Each worker
//!
//! 1. pins itself, switches to SCHED_FIFO when permitted (else sets its timer slack to 1 ns so
//!    the kernel does not batch its wake-ups by the default 50 µs), and calibrates the work
//!    unit under that final policy;
//! 2. sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to each frame start —
//!    never relative, so lateness does not accumulate;
//! 3. runs LOOP units and records, by the rule shared with the twin ([`FrameTiming`]), the
//!    wake-up latency (wake − programmed start) and the jitter measured from the worker's
//!    start: (completion − wake) − LOOP × calibrated minimum unit cost, so a late wake-up
//!    is not counted as jitter (docs/experiments.md E2).
//!
//! A frame that completes after the next frame's start is an overrun; the next frame then
//! starts immediately (its sleep target is already past) and is not skipped, so unless the
//! run is stopped early a worker runs every frame that starts inside the window
//! ([`FrameClock::frames_in`], the twin's rule too): `FREQ × duration` for a window of whole
//! frame periods, and at least one (frame 0 starts at t0; the plan refuses a zero window).

use std::hint::black_box;
use ticklab_schema::frames::{FrameClock, FrameTiming};

use super::gate::Gate;
use super::os::{now_ns, pin_to, set_fifo, set_timer_slack, sleep_until};
use super::stats::{FrameSample, FrameStats};
use super::stop::Stop;
use super::work::{Calibration, calibrate, work};
use super::{HarnessError, os_error};

/// How a frame worker got its timely wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakePolicy {
    /// SCHED_FIFO at this priority.
    Fifo(i32),
    /// SCHED_OTHER with the timer slack set to 1 ns; `fifo_refused` tells whether SCHED_FIFO
    /// was tried and refused (as opposed to not asked for).
    TimerSlack {
        /// SCHED_FIFO was requested but not permitted.
        fifo_refused: bool,
    },
}

impl WakePolicy {
    /// Short description for the report (`SCHED_FIFO 50`, `SCHED_OTHER, timerslack 1 ns`).
    pub(crate) fn describe(self) -> String {
        match self {
            WakePolicy::Fifo(p) => format!("SCHED_FIFO {p}"),
            WakePolicy::TimerSlack {
                fifo_refused: false,
            } => "SCHED_OTHER, timerslack 1 ns".into(),
            WakePolicy::TimerSlack { fifo_refused: true } => {
                "SCHED_OTHER, timerslack 1 ns (SCHED_FIFO not permitted)".into()
            }
        }
    }
}

/// What a frame worker is asked to do.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FramePlan {
    /// Frames per second.
    pub frequency_hz: f64,
    /// Work units per frame.
    pub loop_units: u64,
    /// Frames to run: those that start inside the window ([`FrameClock::frames_in`]).
    pub frames: u64,
    /// Flier threshold in nanoseconds.
    pub flier_threshold_ns: i64,
    /// SCHED_FIFO priority to try, or `None` to go straight to timer slack.
    pub fifo_priority: Option<i32>,
    /// Buckets of the worker's `cyclictest -h` histograms, if asked for.
    pub histogram_us: Option<u32>,
}

impl FramePlan {
    /// Start of frame `k` relative to t0, in nanoseconds (the rule the twin uses too).
    pub(crate) fn offset_ns(&self, k: u64) -> u64 {
        FrameClock::new(self.frequency_hz).offset_ns(k)
    }
}

/// One worker's results.
#[derive(Debug, Clone)]
pub(crate) struct FrameWorkerOutput {
    /// The CPU it ran on.
    pub cpu: u32,
    /// Its row statistics.
    pub stats: FrameStats,
    /// Its calibration.
    pub calibration: Calibration,
    /// Undisturbed frame duration used for jitter, ns.
    pub undisturbed_ns: u64,
    /// How it was scheduled.
    pub policy: WakePolicy,
}

fn set_policy(fifo: Option<i32>) -> Result<WakePolicy, HarnessError> {
    if let Some(prio) = fifo {
        match set_fifo(prio) {
            Ok(()) => return Ok(WakePolicy::Fifo(prio)),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                set_timer_slack(1).map_err(|e| os_error("prctl(PR_SET_TIMERSLACK, 1)", e))?;
                return Ok(WakePolicy::TimerSlack { fifo_refused: true });
            }
            Err(e) => {
                return Err(os_error(
                    &format!("sched_setscheduler(SCHED_FIFO, {prio})"),
                    e,
                ));
            }
        }
    }
    set_timer_slack(1).map_err(|e| os_error("prctl(PR_SET_TIMERSLACK, 1)", e))?;
    Ok(WakePolicy::TimerSlack {
        fifo_refused: false,
    })
}

/// Body of one frame worker thread. Waits at `gate` (even when its setup failed, so the other
/// threads are never left waiting), then runs until all frames are done or `stop` / `abort`
/// is set.
pub(crate) fn worker(
    cpu: u32,
    plan: FramePlan,
    gate: &Gate,
    stop: &Stop,
    abort: &Stop,
) -> Result<FrameWorkerOutput, HarnessError> {
    let setup = (|| {
        pin_to(cpu).map_err(|e| os_error(&format!("pinning a frame worker to CPU {cpu}"), e))?;
        let policy = set_policy(plan.fifo_priority)?;
        let calibration = calibrate(50, 20_000_000);
        Ok::<_, HarnessError>((policy, calibration))
    })();
    let t0 = gate.wait();
    let (policy, calibration) = setup?;
    let undisturbed_ns = calibration.undisturbed_ns(plan.loop_units);
    let mut stats = FrameStats::new(plan.flier_threshold_ns);
    if let Some(max_us) = plan.histogram_us {
        stats.keep_histograms(cpu, max_us);
    }
    'frames: for k in 0..plan.frames {
        if stop.is_set() || abort.is_set() {
            break;
        }
        let start = t0 + plan.offset_ns(k);
        while !sleep_until(start) {
            if stop.is_set() || abort.is_set() {
                break 'frames;
            }
        }
        let wake = now_ns();
        black_box(work(plan.loop_units, k));
        let done = now_ns();
        let timing = FrameTiming {
            start_ns: start,
            running_ns: wake,
            done_ns: done,
        };
        stats.record(FrameSample {
            frame: k,
            wakeup_ns: timing.wakeup_ns(),
            jitter_ns: timing.jitter_ns(undisturbed_ns),
            overrun: done > t0 + plan.offset_ns(k + 1),
        });
    }
    Ok(FrameWorkerOutput {
        cpu,
        stats,
        calibration,
        undisturbed_ns,
        policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_offsets_do_not_drift() {
        let plan = FramePlan {
            frequency_hz: 960.0,
            loop_units: 0,
            frames: 3_456_000,
            flier_threshold_ns: 10_000,
            fifo_priority: None,
            histogram_us: None,
        };
        assert_eq!(plan.offset_ns(0), 0);
        assert_eq!(plan.offset_ns(1), 1_041_667);
        assert_eq!(plan.offset_ns(960), 1_000_000_000);
        assert_eq!(plan.offset_ns(3_456_000), 3_600_000_000_000);
    }

    /// The host's frame count before it used the shared [`FrameClock`] (issue 8): at least
    /// one frame, ⌈duration × FREQ⌉ corrected against float-rounded starts.
    fn frames_in_before_frame_clock(duration_ns: u64, frequency_hz: f64) -> u64 {
        let offset = |k: u64| (k as f64 * 1e9 / frequency_hz).round() as u64;
        let mut n = (duration_ns as f64 * frequency_hz / 1e9).ceil().max(1.0) as u64;
        while n > 1 && offset(n - 1) >= duration_ns {
            n -= 1;
        }
        while offset(n) < duration_ns {
            n += 1;
        }
        n
    }

    #[test]
    fn the_shared_frame_count_equals_the_old_host_count_for_every_window_the_harness_runs() {
        // The harness refuses a zero window (the one place the rules differ: 0 vs 1 frame).
        let freqs = [
            1.0, 2.0, 24.0, 59.94, 60.0, 144.0, 300.0, 333.333, 666.0, 960.0, 1000.0, 1024.0,
            4096.0, 48_000.0, 100_000.0,
        ];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut windows: Vec<u64> = vec![1, 999, 1_000_000, 999_999_999, 1_000_000_000];
        windows.extend([1_000_000_001, 3_600_000_000_000, 60_000_000_000]);
        for _ in 0..2000 {
            // xorshift64: windows from 1 ns to about 1 h.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            windows.push(1 + x % 3_600_000_000_000);
        }
        for f in freqs {
            let clock = FrameClock::new(f);
            for &d in &windows {
                assert_eq!(
                    clock.frames_in(d),
                    frames_in_before_frame_clock(d, f),
                    "{d} ns at {f} Hz"
                );
            }
        }
        assert_eq!(FrameClock::new(960.0).frames_in(0), 0);
        assert_eq!(frames_in_before_frame_clock(0, 960.0), 1);
    }

    #[test]
    fn policy_names() {
        assert_eq!(WakePolicy::Fifo(50).describe(), "SCHED_FIFO 50");
        assert!(
            WakePolicy::TimerSlack { fifo_refused: true }
                .describe()
                .contains("not permitted")
        );
    }
}
