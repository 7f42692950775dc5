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
//! starts immediately (its sleep target is already past) and is not skipped. The frames due
//! are those that start inside the window ([`FrameClock::frames_in`], the twin's rule too):
//! `FREQ × duration` for a window of whole frame periods, and at least one (frame 0 starts at
//! t0; the plan refuses a zero window).
//!
//! **The window is a hard end** ([`WindowCut`]): a worker whose frames overrun falls behind,
//! and it never works past t0 + duration to catch up. Its work runs in slices that look at the
//! window's end and the stop flags ([`work_until`]); a frame still working at the end is *cut*
//! (not recorded in the table, counted), and the frames due that the worker had not reached
//! by then are counted as *not started*. A stop (Ctrl-C, SIGTERM) cuts the same way, within
//! one slice (≈ 100 µs).

use std::hint::black_box;
use ticklab_schema::frames::{FrameClock, FrameTiming};

use super::error::{HarnessError, os_error};
use super::gate::Gate;
use super::os::{now_ns, pin_to, set_fifo, set_timer_slack, sleep_until};
use super::stats::{FrameSample, FrameStats};
use super::stop::Stop;
use super::watchdog::Watchdog;
use super::work::{Calibration, WorkEnd, calibrate, work_until};

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
    /// The window's length, ns: no work runs after t0 + this.
    pub window_ns: u64,
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
    /// The frames the end of the window (or a stop) cut or kept from starting.
    pub cut: WindowCut,
}

/// The rule for frames at the end of the window, and its tally for one worker.
///
/// * A frame whose worker is free for it (its start has come and the previous frame is done)
///   at or after the window's end is *not started*, and neither are the frames after it.
/// * A frame whose work is still running at the window's end (or when a stop arrives) is
///   *cut*: its work stops at the next slice boundary and it is not recorded.
/// * Every frame due that was neither completed nor cut counts as not started (after a cut, or
///   when a stop came while the worker slept).
///
/// Invariant (after [`WindowCut::finish`]): `completed + cut + not_started == frames due`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WindowCut {
    /// Frames whose work was cut (0 or 1 per worker).
    pub cut: u64,
    /// Frames due in the window that the worker never started.
    pub not_started: u64,
}

impl WindowCut {
    /// Whether a frame may start when its worker is free for it at `free_ns`.
    pub(crate) fn admit(free_ns: u64, window_end_ns: u64) -> bool {
        free_ns < window_end_ns
    }

    /// Whether the frame's work completed (and may be recorded); a cut frame is counted.
    pub(crate) fn completed(&mut self, end: WorkEnd) -> bool {
        match end {
            WorkEnd::Done => true,
            WorkEnd::Cut { .. } => {
                self.cut += 1;
                false
            }
        }
    }

    /// Counts the frames due that were neither completed nor cut as not started.
    pub(crate) fn finish(&mut self, completed: u64, frames: u64) {
        debug_assert!(
            completed + self.cut <= frames,
            "more frames ran than were due"
        );
        self.not_started = frames.saturating_sub(completed + self.cut);
    }
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
/// threads are never left waiting), then runs until all frames are done, the window ends, or
/// `stop` / `abort` is set. At SCHED_FIFO it is registered with the run's `watchdog` while
/// it runs.
pub(crate) fn worker(
    cpu: u32,
    plan: FramePlan,
    gate: &Gate,
    stop: &Stop,
    abort: &Stop,
    watchdog: &Watchdog,
) -> Result<FrameWorkerOutput, HarnessError> {
    let out = run_frames(cpu, plan, gate, stop, abort, watchdog);
    watchdog.unregister();
    out
}

fn run_frames(
    cpu: u32,
    plan: FramePlan,
    gate: &Gate,
    stop: &Stop,
    abort: &Stop,
    watchdog: &Watchdog,
) -> Result<FrameWorkerOutput, HarnessError> {
    let setup = (|| {
        pin_to(cpu).map_err(|e| os_error(&format!("pinning a frame worker to CPU {cpu}"), e))?;
        let policy = set_policy(plan.fifo_priority)?;
        if let WakePolicy::Fifo(_) = policy {
            watchdog.register_fifo(cpu);
        }
        let calibration = calibrate(50, 20_000_000);
        Ok::<_, HarnessError>((policy, calibration))
    })();
    let t0 = gate.wait();
    let (policy, calibration) = setup?;
    let undisturbed_ns = calibration.undisturbed_ns(plan.loop_units);
    let window_end = t0.saturating_add(plan.window_ns);
    let stopped = || stop.is_set() || abort.is_set();
    let mut stats = FrameStats::new(plan.flier_threshold_ns);
    if let Some(max_us) = plan.histogram_us {
        stats.keep_histograms(cpu, max_us);
    }
    let mut cut = WindowCut::default();
    'frames: for k in 0..plan.frames {
        if stopped() {
            break;
        }
        let start = t0 + plan.offset_ns(k);
        while !sleep_until(start) {
            if stopped() {
                break 'frames;
            }
        }
        let wake = now_ns();
        if !WindowCut::admit(wake, window_end) {
            break;
        }
        let (state, end) = work_until(plan.loop_units, k, window_end, stopped);
        black_box(state);
        let done = now_ns();
        if !cut.completed(end) {
            break;
        }
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
            wake_overrun: wake > t0 + plan.offset_ns(k + 1),
        });
    }
    cut.finish(stats.frames(), plan.frames);
    Ok(FrameWorkerOutput {
        cpu,
        stats,
        calibration,
        undisturbed_ns,
        policy,
        cut,
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
            window_ns: 3_600_000_000_000,
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

    /// The worker's loop on a virtual clock: every frame's work takes `work_ns`, slices are
    /// infinitely fine, wake-ups are punctual. Returns (completed, cut, not started).
    fn run_virtually(frequency_hz: f64, work_ns: u64, window_ns: u64) -> (u64, u64, u64) {
        let clock = FrameClock::new(frequency_hz);
        let frames = clock.frames_in(window_ns);
        let (mut now, mut completed, mut cut) = (0u64, 0u64, WindowCut::default());
        for k in 0..frames {
            now = now.max(clock.offset_ns(k));
            if !WindowCut::admit(now, window_ns) {
                break;
            }
            let end = if now + work_ns > window_ns {
                WorkEnd::Cut {
                    units_run: window_ns - now,
                }
            } else {
                WorkEnd::Done
            };
            now = (now + work_ns).min(window_ns);
            if !cut.completed(end) {
                break;
            }
            completed += 1;
        }
        cut.finish(completed, frames);
        assert_eq!(
            completed + cut.cut + cut.not_started,
            frames,
            "nothing lost"
        );
        (completed, cut.cut, cut.not_started)
    }

    #[test]
    fn the_window_cuts_the_frame_that_would_overrun_it_and_counts_the_rest() {
        let ms = 1_000_000;
        // (FREQ, work per frame, window, (completed, cut, not started))
        type Case = (f64, u64, u64, (u64, u64, u64));
        let table: [Case; 8] = [
            // Work fits in the period: every frame runs.
            (1000.0, ms / 2, 2000 * ms, (2000, 0, 0)),
            // The reproducer: 20 ms of work per 1 ms frame over 2 s.
            (1000.0, 20 * ms, 2000 * ms, (100, 0, 1900)),
            // 30 ms frames: frame 66 starts at 1980 ms and would end at 2010 ms: cut.
            (1000.0, 30 * ms, 2000 * ms, (66, 1, 1933)),
            // An endless frame (loop=2^64-1): frame 0 is cut, nothing else starts.
            (1000.0, u64::MAX / 2, 2000 * ms, (0, 1, 1999)),
            // The last frame due ends exactly at the window's end: it completes.
            (1.0, 500 * ms, 1500 * ms, (2, 0, 0)),
            // ... one nanosecond more and it is cut.
            (1.0, 500 * ms + 1, 1500 * ms, (1, 1, 0)),
            // One frame in a window shorter than its period.
            (1.0, 2 * ms, ms, (0, 1, 0)),
            (960.0, ms / 2, 1000 * ms, (960, 0, 0)),
        ];
        for (f, work_ns, window, want) in table {
            assert_eq!(
                run_virtually(f, work_ns, window),
                want,
                "{f} Hz, {work_ns} ns of work, {window} ns window"
            );
        }
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
