//! The kernel's own timer costs, timed with its tracepoints: how long the tick's hrtimer
//! callback, an `hrtimer_wakeup` callback and a timer-wheel callback run on this host, and how
//! long `hrtimer_interrupt` takes after its last callback to re-arm the clock event device
//! (docs/costs.md §11).
//!
//! # Recording
//!
//! Two harness phases on the hog CPU H, each under its own private tracefs instance
//! (`probe::tracefs::TraceSession`, removed when the phase ends, on an error and after Ctrl-C):
//! `hogs:1@H`, where every tick lands on a busy CPU, and `frames:1000@H:loop=0`, a task woken
//! by its own hrtimer on an otherwise idle CPU. Only the [`EVENTS`] the intervals need are
//! enabled: every recorded event costs time, and one recorded between the two ends of an
//! interval would lengthen it (`hrtimer_start`, for one, fires when the tick timer is
//! re-queued, inside the re-arm interval, so it is left out).
//!
//! The ns trace clocks (`mono`, `local`) print whole microseconds in the text, too coarse for
//! callbacks of a few µs. Where the kernel offers the `x86-tsc` clock the text carries the raw
//! TSC count instead; it is converted to ns by the slope of the `now=` field of
//! `hrtimer_expire_entry` (the hrtimer base's monotonic time in ns, read when the interrupt
//! began) against the event's timestamp, earliest to latest over both phases (`ns_per_count`).
//! Without `x86-tsc` the `mono` clock is used and the resolution, 1 µs, is said in the notes.
//!
//! # Intervals
//!
//! Per CPU, in trace order; a pair counts only when its two events follow each other on that
//! CPU with no other recorded event between (`intervals`):
//!
//! | cost | from | to | where |
//! |---|---|---|---|
//! | `tick_handler_ns` | `hrtimer_expire_entry` of the tick (`tick_nohz_handler`; `tick_sched_timer` on older kernels) | `hrtimer_expire_exit` | H, hog phase |
//! | `hrtimer_callback_ns` | `hrtimer_expire_entry` of `hrtimer_wakeup` | `hrtimer_expire_exit` | H, frames phase |
//! | `wheel_timer_ns` | `timer_expire_entry` | `timer_expire_exit` | every CPU, both phases |
//! | `clockevent_program_ns` | the last `hrtimer_expire_exit` of a local timer interrupt that ran the tick | `local_timer_exit` | H, hog phase |
//! | one recorded event | `softirq_exit` | the next vector's `softirq_entry` | every CPU, both phases |
//! | `tick_restart_ns` | `power:cpu_idle` leaving idle (state 4294967295) with need-resched set | the tick's `hrtimer_start` | every CPU, frames phase |
//!
//! The re-arm interval is what the twin charges `clockevent_program_ns` for at the end of its
//! `hrtimer_interrupt` (`crates/twin/src/sim/hrtimer_interrupt.rs`): after the callbacks, the
//! kernel re-queues the tick timer, finds the next expiry and writes it to the device (on a
//! KVM guest a TSC-deadline MSR write, a VM exit); the twin re-queues for free and charges the
//! whole tail as the one programming. The twin charges the same figure when it reprograms
//! outside the interrupt (`reprogram`, tick stop and restart), which no tracepoint brackets.
//!
//! # Tracing's own cost
//!
//! An interval runs from one event's timestamp to the next's: it holds the rest of the first
//! event's recording and the start of the second's, about one event's cost. Between a
//! softirq's exit event and the next vector's entry event the kernel runs a few instructions
//! of its softirq loop, so the median of those gaps is taken as one event's cost and
//! [`fit`] subtracts it from every median. Only gaps up to [`MAX_BACK_TO_BACK_NS`]
//! count: a softirq can also run from an interrupt this trace does not record (a device, an
//! IPI), and then its entry follows the previous exit by milliseconds (one loaded run here
//! took 4 ms for "one event" and wiped out every traced cost).
//!
//! # The tick's restart: `tick_restart_ns`
//!
//! The restart has no event of its own, but its end is visible: on a CPU without a cpuidle
//! driver (HLT through `default_idle_call`) the wake-up interrupt is handled inside the halt,
//! `power:cpu_idle` with state 4294967295 marks the idle exit, the idle loop sees the
//! reschedule and calls `tick_nohz_idle_exit`, whose restart re-queues the tick hrtimer:
//! `timer:hrtimer_start` with the tick's function (`was_armed=0`, the restart cancels it
//! first), traced as the timer is enqueued, before the device is programmed; then the switch
//! away from the idle task. The interval from the exit event to that `hrtimer_start` on the
//! same CPU, with no event between, holds the idle-time accounting, the jiffies check (a
//! catch-up only when the jiffies are stale), and the restart's bookkeeping up to the
//! enqueue: what the twin charges as the catch-up plus `tick_restart_ns` in
//! `tick_restart` (`crates/twin/src/sim/tick_sched.rs`), and not the `reprogram` after it
//! (`clockevent_program_ns`). The catch-up is not subtracted: with the other CPU ticking
//! the jiffies are current at nearly every exit, and the twin then charges none.
//!
//! Only exits whose `cpu_idle` line carries the need-resched flag count: the loop goes on
//! idling after an exit without it, and when the tick is already stopped a changed next
//! expiry re-queues the tick there too (a re-stop, not a restart). An exit where the tick
//! was never stopped has no `hrtimer_start` next (the switch follows) and gives no sample.
//! The two events are recorded in the frames phase only ([`FRAMES_EVENTS`]), over every CPU:
//! H's own 1 ms frame timer is nearer than the next tick, so H's tick is rarely stopped.
//!
//! # Not measured: `tick_stop_ns`
//!
//! `timer:tick_stop` fires inside the stop, after the next-event computation the twin's
//! `tick_stop_ns` stands for and before the device is re-armed; the interval around it (the
//! switch to the idle task → `power:cpu_idle`) also holds the context switch, the idle loop
//! and the device programming the twin charges separately, so it stays a preset.

use std::collections::BTreeMap;
use std::time::Duration;

use ticklab_schema::machine::Machine;

use super::error::CalibrateError;
use super::ledger::CostLedger;
use super::measurements::{Timed, TimerTracepoints};
use super::specs::RunPhase;
use crate::harness::Stop;
use crate::probe::tracefs::TraceSession;
use crate::procfs::trace::{TraceEvent, parse_trace_line_raw, payload_field};

/// The events recorded (`system:name`).
pub(crate) const EVENTS: [&str; 8] = [
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:timer_expire_entry",
    "timer:timer_expire_exit",
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
];

/// Recorded in the frames phase only (module docs, "The tick's restart"): `hrtimer_start`
/// inside the hog phase would fall inside the re-arm interval timed there.
pub(crate) const FRAMES_EVENTS: [&str; 2] = ["timer:hrtimer_start", "power:cpu_idle"];

/// The tick's hrtimer callback: `tick_nohz_handler` on current kernels, `tick_sched_timer`
/// before it was renamed.
pub(crate) const TICK_CALLBACKS: [&str; 2] = ["tick_nohz_handler", "tick_sched_timer"];

/// The callback of a task's sleep timer (`clock_nanosleep`, the frame worker).
const WAKEUP_CALLBACK: &str = "hrtimer_wakeup";

/// Trace clocks in order of preference: `x86-tsc` prints its raw count, `mono` microseconds.
const CLOCKS: [&str; 2] = ["x86-tsc", "mono"];

/// Ring buffer per CPU, KiB: a 1 kHz frame phase records ~6 events per ms on H (~0.3 MB/s).
const BUFFER_KB: u32 = 8192;

/// Fewer samples than this leave the cost at its preset.
pub(crate) const MIN_SAMPLES: usize = 20;

/// The callbacks the intervals tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Callback {
    Tick(&'static str),
    Wakeup,
    Other,
}

/// One recorded event, reduced to what the intervals need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    LocalTimerEntry,
    LocalTimerExit,
    HrtimerEntry(Callback),
    HrtimerExit,
    TimerEntry,
    TimerExit,
    SoftirqEntry,
    SoftirqExit,
    /// `power:cpu_idle` leaving idle; `resched`: the need-resched flag was set, so the idle
    /// loop ends and the tick, if stopped, restarts.
    IdleExit {
        resched: bool,
    },
    /// `timer:hrtimer_start` of the tick's timer.
    TickStart,
    Other,
}

/// An event of the trace: CPU, timestamp (trace clock units) and, for `hrtimer_expire_entry`,
/// the `now=` field (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    cpu: u32,
    ts: u64,
    mark: Mark,
    now_ns: Option<u64>,
}

/// The events of a `trace` text with the parser of [`crate::procfs::trace`]; lines that are
/// not events are skipped.
fn stamps(text: &str) -> Vec<Stamp> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(parse_trace_line_raw)
        .map(|(line, name, payload)| {
            let mut now_ns = None;
            let mark = match (&line.event, name) {
                (TraceEvent::HrtimerExpireEntry { function, .. }, _) => {
                    now_ns = payload_field(payload, "now").and_then(|n| n.parse().ok());
                    Mark::HrtimerEntry(
                        match TICK_CALLBACKS.iter().find(|t| **t == function.as_str()) {
                            Some(t) => Callback::Tick(t),
                            None if function == WAKEUP_CALLBACK => Callback::Wakeup,
                            None => Callback::Other,
                        },
                    )
                }
                (TraceEvent::LocalTimerEntry, _) => Mark::LocalTimerEntry,
                (TraceEvent::CpuIdle { state: None }, _) => Mark::IdleExit {
                    resched: line.need_resched,
                },
                (_, "hrtimer_start")
                    if payload_field(payload, "function")
                        .is_some_and(|f| TICK_CALLBACKS.contains(&f)) =>
                {
                    Mark::TickStart
                }
                (_, "local_timer_exit") => Mark::LocalTimerExit,
                (_, "hrtimer_expire_exit") => Mark::HrtimerExit,
                (_, "timer_expire_entry") => Mark::TimerEntry,
                (_, "timer_expire_exit") => Mark::TimerExit,
                (_, "softirq_entry") => Mark::SoftirqEntry,
                (_, "softirq_exit") => Mark::SoftirqExit,
                _ => Mark::Other,
            };
            Stamp {
                cpu: line.cpu,
                ts: line.ts_ns,
                mark,
                now_ns,
            }
        })
        .collect()
}

/// The intervals of one CPU, in trace clock units (module docs, "Intervals").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Intervals {
    tick: Vec<u64>,
    wakeup: Vec<u64>,
    wheel: Vec<u64>,
    program: Vec<u64>,
    back_to_back: Vec<u64>,
    restart: Vec<u64>,
}

/// Each CPU's [`Intervals`]: a pair counts only when its second event is the next event of
/// that CPU after its first.
fn intervals(stamps: &[Stamp]) -> BTreeMap<u32, Intervals> {
    let mut out: BTreeMap<u32, Intervals> = BTreeMap::new();
    // Per CPU: the previous event, and whether the current local timer interrupt ran the tick.
    let mut prev: BTreeMap<u32, (Stamp, bool)> = BTreeMap::new();
    for s in stamps {
        let iv = out.entry(s.cpu).or_default();
        let (p, mut ran_tick) = match prev.get(&s.cpu) {
            Some(&(p, t)) => (Some(p), t),
            None => (None, false),
        };
        let gap = p.map(|p| (p.mark, s.ts.saturating_sub(p.ts)));
        match (s.mark, gap) {
            (Mark::LocalTimerEntry, _) => ran_tick = false,
            (Mark::HrtimerExit, Some((Mark::HrtimerEntry(cb), d))) => match cb {
                Callback::Tick(_) => {
                    iv.tick.push(d);
                    ran_tick = true;
                }
                Callback::Wakeup => iv.wakeup.push(d),
                Callback::Other => {}
            },
            (Mark::TimerExit, Some((Mark::TimerEntry, d))) => iv.wheel.push(d),
            (Mark::LocalTimerExit, Some((Mark::HrtimerExit, d))) if ran_tick => iv.program.push(d),
            (Mark::SoftirqEntry, Some((Mark::SoftirqExit, d))) => iv.back_to_back.push(d),
            (Mark::TickStart, Some((Mark::IdleExit { resched: true }, d))) => iv.restart.push(d),
            _ => {}
        }
        if s.mark == Mark::LocalTimerExit {
            ran_tick = false;
        }
        prev.insert(s.cpu, (*s, ran_tick));
    }
    out
}

/// ns per trace-clock count: the slope of `hrtimer_expire_entry`'s `now=` (ns) against its
/// timestamp, between the earliest and the latest such event. `None` with fewer than two, or
/// when they span less than 50 ms (`now` is read a few µs before the event's timestamp, a
/// jitter that must stay small against the span).
fn ns_per_count(stamps: &[Stamp]) -> Option<f64> {
    let with_now = || stamps.iter().filter_map(|s| Some((s.ts, s.now_ns?)));
    let first = with_now().min_by_key(|(ts, _)| *ts)?;
    let last = with_now().max_by_key(|(ts, _)| *ts)?;
    let (dts, dnow) = (
        last.0.checked_sub(first.0)? as f64,
        last.1.checked_sub(first.1)? as f64,
    );
    (dnow >= 50e6 && dts > 0.0)
        .then_some(dnow / dts)
        .filter(|s| s.is_finite())
}

/// Median of `v` (mean of the middle two for an even count), `None` when empty.
fn median(v: &mut [u64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    })
}

fn timed(v: &mut [u64], scale: f64) -> Option<Timed> {
    median(v).map(|m| Timed {
        median_ns: m * scale,
        samples: v.len(),
    })
}

/// Longest softirq exit → entry gap taken as back to back (ns): one pass of the softirq loop
/// between two vectors is a few hundred instructions; 5 µs is over ten times the ~0.3 µs one
/// recorded event measured on this project's guest.
pub(crate) const MAX_BACK_TO_BACK_NS: f64 = 5_000.0;

/// Why two trace texts give no medians.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TracepointsError {
    /// The `x86-tsc` counts cannot be converted to ns.
    #[error(
        "trace clock x86-tsc: fewer than two hrtimer_expire_entry events 50 ms apart, no conversion to ns"
    )]
    NoTscScale,
}

/// The medians of the two phases' trace texts on CPU `cpu` recorded with `clock` (a pure
/// function of the texts; module docs, "Intervals").
///
/// The one-event estimate keeps only softirq exit → entry gaps up to [`MAX_BACK_TO_BACK_NS`].
pub(crate) fn from_traces(
    hog: &str,
    frames: &str,
    cpu: u32,
    clock: &str,
) -> Result<TimerTracepoints, TracepointsError> {
    let (hog, frames) = (stamps(hog), stamps(frames));
    let counts = clock == "x86-tsc";
    let scale = if counts {
        // The two phases follow each other on one TSC: the slope over both is the longest span.
        let both: Vec<Stamp> = hog.iter().chain(&frames).copied().collect();
        ns_per_count(&both).ok_or(TracepointsError::NoTscScale)?
    } else {
        1.0
    };
    let (h, f) = (intervals(&hog), intervals(&frames));
    let on_h = |m: &BTreeMap<u32, Intervals>| m.get(&cpu).cloned().unwrap_or_default();
    let (mut hh, mut fh) = (on_h(&h), on_h(&f));
    let every = |pick: fn(&Intervals) -> &[u64]| -> Vec<u64> {
        h.values()
            .chain(f.values())
            .flat_map(|iv| pick(iv).iter().copied())
            .collect()
    };
    let mut wheel = every(|iv| &iv.wheel);
    // A gap longer than MAX_BACK_TO_BACK_NS is two softirq runs from different interrupts
    // (one not traced here: a device, an IPI), not one pass of the loop.
    let mut back_to_back: Vec<u64> = every(|iv| &iv.back_to_back)
        .into_iter()
        .filter(|&d| d as f64 * scale <= MAX_BACK_TO_BACK_NS)
        .collect();
    // The restart: frames phase only (its events are recorded there), every CPU: H's own
    // 1 ms frame timer keeps its tick from stopping, the other CPUs idle long.
    let mut restart: Vec<u64> = f.values().flat_map(|iv| iv.restart.clone()).collect();
    let tick_function = hog.iter().chain(&frames).find_map(|s| match s.mark {
        Mark::HrtimerEntry(Callback::Tick(name)) => Some(name.to_string()),
        _ => None,
    });
    Ok(TimerTracepoints {
        cpu,
        clock: clock.to_string(),
        resolution_ns: if counts { scale } else { 1000.0 },
        tick_function,
        event: timed(&mut back_to_back, scale),
        tick_handler: timed(&mut hh.tick, scale),
        hrtimer_callback: timed(&mut fh.wakeup, scale),
        wheel_timer: timed(&mut wheel, scale),
        clockevent_program: timed(&mut hh.program, scale),
        tick_restart: timed(&mut restart, scale),
        overruns: 0,
    })
}

/// Records the two phases of `phase` each on CPU `cpu` (module docs) and returns their
/// medians. Without root or tracefs, or when the trace gives nothing to convert, the phase is
/// skipped: a warning says why and `None` leaves the costs at their presets. A stop request
/// ends it with [`CalibrateError::Interrupted`]; the trace instance is removed in every case.
pub(super) fn measure(
    cpu: u32,
    phase: Duration,
    run: RunPhase<'_>,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
    stop: &Stop,
) -> Result<Option<TimerTracepoints>, CalibrateError> {
    let skip = |why: String, warnings: &mut Vec<String>, progress: &mut dyn FnMut(&str)| {
        let w = format!(
            "tracepoints: {why}; tick_handler_ns, hrtimer_callback_ns, wheel_timer_ns, \
             clockevent_program_ns and tick_restart_ns stay presets"
        );
        progress(&w);
        warnings.push(w);
        Ok(None)
    };
    if !crate::probe::is_root() {
        return skip("not root (tracefs needs root)".into(), warnings, progress);
    }
    let mut texts = Vec::new();
    let mut clock = String::new();
    let mut overruns = 0;
    let frames_events: Vec<&str> = EVENTS.iter().chain(&FRAMES_EVENTS).copied().collect();
    for (spec, what, events) in [
        (format!("hogs:1@{cpu}"), "tracepoints hog", &EVENTS[..]),
        (
            format!("frames:1000@{cpu}:loop=0"),
            "tracepoints frames",
            &frames_events[..],
        ),
    ] {
        if stop.is_set() {
            return Err(CalibrateError::Interrupted);
        }
        progress(&format!(
            "{what}: {spec} under a tracefs instance, {:.1} s",
            phase.as_secs_f64()
        ));
        let session = match TraceSession::start_with_clock(events, BUFFER_KB, None, &CLOCKS) {
            Ok(s) => s,
            Err(e) => return skip(format!("no trace instance: {e}"), warnings, progress),
        };
        if !session.missing.is_empty() {
            warnings.push(format!(
                "tracepoints: this kernel lacks {}; the costs they time stay presets",
                session.missing.join(", ")
            ));
        }
        // On an error or a stop `?` returns and the session's Drop removes the instance.
        run(spec, phase, what, warnings)?;
        // tracefs is shared with every other tracer of the host: losing the instance skips
        // this phase, it does not fail the calibration.
        let text = match session.stop().and_then(|()| session.read_trace()) {
            Ok(t) => t,
            Err(e) => return skip(e.to_string(), warnings, progress),
        };
        overruns += session.overruns();
        clock.clone_from(&session.clock);
        texts.push(text);
    }
    let mut kt = match from_traces(&texts[0], &texts[1], cpu, &clock) {
        Ok(kt) => kt,
        Err(e) => return skip(e.to_string(), warnings, progress),
    };
    kt.overruns = overruns;
    if overruns > 0 {
        warnings.push(format!(
            "tracepoints: the ring buffers overwrote {overruns} events; medians are over the \
             pairs that survived"
        ));
    }
    Ok(Some(kt))
}

/// Sets the five traced costs on `mach` (module docs), each the median less one event's cost
/// (and, for the tick, less what the twin charges inside the same callback besides
/// `tick_handler_ns`), registered in `ledger` with a note line each. A cost with fewer than
/// [`MIN_SAMPLES`] intervals, or whose correction leaves nothing, keeps its preset (noted).
pub(crate) fn fit(
    kt: Option<&TimerTracepoints>,
    mach: &mut Machine,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    let Some(kt) = kt else {
        notes.push(
            "tracepoints: not recorded; tick_handler_ns, hrtimer_callback_ns, wheel_timer_ns, \
             clockevent_program_ns, tick_restart_ns are presets"
                .into(),
        );
        return;
    };
    let event_ns = kt.event.map_or(0.0, |e| e.median_ns);
    notes.push(format!(
        "tracepoints: clock {} (resolution {:.2} ns), one recorded event {}; {} events lost",
        kt.clock,
        kt.resolution_ns,
        match kt.event {
            Some(e) => format!(
                "{:.0} ns (median softirq exit -> entry, {} samples), subtracted from each median",
                e.median_ns, e.samples
            ),
            None => "not measured (no back-to-back softirqs), nothing subtracted".into(),
        },
        kt.overruns
    ));
    let c = &mut mach.costs;
    // Inside its tick callback the twin also charges the timekeeping read and, on the CPU
    // holding the jiffies duty (the busy one while the others idle), the jiffies update.
    let in_tick = c.xtime_read_ns as f64 + c.jiffies_update_ns as f64;
    let tick_fn = kt.tick_function.as_deref().unwrap_or(TICK_CALLBACKS[0]);
    let h = kt.cpu;
    let rows: [(&str, Option<Timed>, f64, String, &mut u64); 5] = [
        (
            "tick_handler_ns",
            kt.tick_handler,
            in_tick,
            format!(
                "median {tick_fn} callback on busy CPU {h} less xtime_read_ns + jiffies_update_ns"
            ),
            &mut c.tick_handler_ns,
        ),
        (
            "hrtimer_callback_ns",
            kt.hrtimer_callback,
            0.0,
            format!("median hrtimer_wakeup callback on CPU {h}"),
            &mut c.hrtimer_callback_ns,
        ),
        (
            "wheel_timer_ns",
            kt.wheel_timer,
            0.0,
            "median timer_expire_entry -> exit, every CPU".into(),
            &mut c.wheel_timer_ns,
        ),
        (
            "clockevent_program_ns",
            kt.clockevent_program,
            0.0,
            format!(
                "median last hrtimer_expire_exit -> local_timer_exit in tick interrupts on CPU {h}"
            ),
            &mut c.clockevent_program_ns,
        ),
        (
            "tick_restart_ns",
            kt.tick_restart,
            0.0,
            format!(
                "median idle-exit cpu_idle (need-resched) -> {tick_fn} hrtimer_start, every CPU, frames phase"
            ),
            &mut c.tick_restart_ns,
        ),
    ];
    for (name, t, less, how, field) in rows {
        let cost = TracedCost {
            name,
            timed: t,
            less,
            event_ns,
            how,
        };
        cost.fit(field, &kt.clock, ledger, notes);
    }
}

/// One traced cost: its median, what is subtracted from it, and how it was timed.
struct TracedCost<'a> {
    name: &'a str,
    timed: Option<Timed>,
    /// What the twin charges inside the same callback besides this cost, ns.
    less: f64,
    /// One recorded event's cost, ns.
    event_ns: f64,
    how: String,
}

impl TracedCost<'_> {
    /// Sets `field` to the median less one event and `less` (a note line, a ledger entry), or
    /// keeps the preset and says why.
    fn fit(self, field: &mut u64, clock: &str, ledger: &mut CostLedger, notes: &mut Vec<String>) {
        let TracedCost {
            name,
            timed: t,
            less,
            event_ns,
            how,
        } = self;
        let Some(t) = t.filter(|t| t.samples >= MIN_SAMPLES) else {
            notes.push(format!(
                "tracepoints: {name}: {} samples (< {MIN_SAMPLES}); preset {} ns kept",
                t.map_or(0, |t| t.samples),
                field
            ));
            return;
        };
        let v = t.median_ns - event_ns - less;
        if v < 1.0 {
            notes.push(format!(
                "tracepoints: {name}: median {:.0} ns less {:.0} (tracing, twin's other charges) leaves nothing; preset {} ns kept",
                t.median_ns,
                event_ns + less,
                field
            ));
            return;
        }
        *field = v.round() as u64;
        notes.push(format!(
            "tracepoints: {name} = {:.0} - {event_ns:.0} (one event){} = {} ns ({how}, {} samples)",
            t.median_ns,
            if less > 0.0 {
                format!(" - {less:.0} (twin's other charges)")
            } else {
                String::new()
            },
            *field,
            t.samples
        ));
        ledger.fitted(
            &format!("costs.{name}"),
            format!(
                "{how}, {} samples, tracepoints ({clock}), less one event's {event_ns:.0} ns",
                t.samples
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handmade x86-tsc trace: one count is 0.5 ns (the `now` fields advance 100 ms per
    /// 200 M counts). CPU 1 busy: two tick interrupts; CPU 0: a wheel timer and softirqs.
    const HOG: &str = "\
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
              hog-7   [001] d.h..  1000000000: local_timer_entry: vector=236
              hog-7   [001] d.h..  1000002000: hrtimer_expire_entry: hrtimer=00 function=tick_nohz_handler now=500000000
              hog-7   [001] d.h..  1000012000: hrtimer_expire_exit: hrtimer=00
              hog-7   [001] d.h..  1000018000: local_timer_exit: vector=236
              hog-7   [001] ..s..  1000019000: softirq_entry: vec=1 [action=TIMER]
              hog-7   [001] ..s..  1000020000: timer_expire_entry: timer=01 function=process_timeout now=4294 baseclk=4294
              hog-7   [001] ..s..  1000026000: timer_expire_exit: timer=01
              hog-7   [001] ..s..  1000027000: softirq_exit: vec=1 [action=TIMER]
              hog-7   [001] ..s..  1000027600: softirq_entry: vec=7 [action=SCHED]
              hog-7   [001] ..s..  1000030000: softirq_exit: vec=7 [action=SCHED]
           <idle>-0   [000] d.h1.  1100000000: local_timer_entry: vector=236
           <idle>-0   [000] d.h1.  1100001000: hrtimer_expire_entry: hrtimer=02 function=hrtimer_wakeup now=550000000
           <idle>-0   [000] dNh1.  1100005000: hrtimer_expire_exit: hrtimer=02
           <idle>-0   [000] dNh1.  1100009000: local_timer_exit: vector=236
              hog-7   [001] d.h..  1200000000: local_timer_entry: vector=236
              hog-7   [001] d.h..  1200002000: hrtimer_expire_entry: hrtimer=00 function=tick_nohz_handler now=600000000
              hog-7   [001] d.h..  1200016000: hrtimer_expire_exit: hrtimer=00
              hog-7   [001] d.h..  1200017000: hrtimer_expire_entry: hrtimer=03 function=it_real_fn now=600000000
              hog-7   [001] d.h..  1200019000: hrtimer_expire_exit: hrtimer=03
              hog-7   [001] d.h..  1200027000: local_timer_exit: vector=236
              hog-7   [001] ..s..  1200028000: softirq_exit: vec=7 [action=SCHED]
              hog-7   [001] ..s..  1200028800: softirq_entry: vec=9 [action=RCU]
";

    /// CPU 1 idle between frames: two wake-ups (one interrupt also runs the tick), and one
    /// wake-up interrupted by a nested event, which must not count.
    const FRAMES: &str = "\
           <idle>-0   [001] d.h1.  2000000000: local_timer_entry: vector=236
           <idle>-0   [001] d.h1.  2000001000: hrtimer_expire_entry: hrtimer=04 function=hrtimer_wakeup now=1000000000
           <idle>-0   [001] dNh1.  2000007000: hrtimer_expire_exit: hrtimer=04
           <idle>-0   [001] dNh1.  2000012000: local_timer_exit: vector=236
           <idle>-0   [001] d.h1.  2100000000: local_timer_entry: vector=236
           <idle>-0   [001] d.h1.  2100001000: hrtimer_expire_entry: hrtimer=00 function=tick_nohz_handler now=1050000000
           <idle>-0   [001] d.h1.  2100009000: hrtimer_expire_exit: hrtimer=00
           <idle>-0   [001] d.h1.  2100010000: hrtimer_expire_entry: hrtimer=04 function=hrtimer_wakeup now=1050000000
           <idle>-0   [001] dNh1.  2100018000: hrtimer_expire_exit: hrtimer=04
           <idle>-0   [001] dNh1.  2100022000: local_timer_exit: vector=236
           <idle>-0   [001] d.h1.  2200002000: hrtimer_expire_entry: hrtimer=04 function=hrtimer_wakeup now=1100000000
           <idle>-0   [001] d.h1.  2200003000: softirq_entry: vec=1 [action=TIMER]
           <idle>-0   [001] dNh1.  2200030000: hrtimer_expire_exit: hrtimer=04
";

    /// Idle exits in the frames phase, after FRAMES in time (lines shaped like a capture of
    /// this host, kernel 6.18): two restarts (one per CPU) and every exit that must not count.
    const RESTART: &str = "\
          <idle>-0       [000] dN.1.  2300000000: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] dN.2.  2300008000: hrtimer_start: hrtimer=05 function=tick_nohz_handler expires=1150000000 softexpires=1150000000 mode=ABS|PINNED|HARD was_armed=0
          <idle>-0       [000] d..2.  2300030000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ticklab next_pid=9 next_prio=120
          <idle>-0       [000] d..1.  2310000000: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] d..1.  2310002000: tick_stop: success=1 dependency=NONE
          <idle>-0       [000] d..2.  2310004000: hrtimer_start: hrtimer=05 function=tick_nohz_handler expires=9000000000 softexpires=9000000000 mode=ABS|PINNED|HARD was_armed=1
          <idle>-0       [000] d..1.  2310010000: cpu_idle: state=1 cpu_id=0
          <idle>-0       [000] d..1.  2320000000: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] d..2.  2320005000: hrtimer_start: hrtimer=05 function=tick_nohz_handler expires=9100000000 softexpires=9100000000 mode=ABS|PINNED|HARD was_armed=1
          <idle>-0       [000] d..1.  2320010000: cpu_idle: state=1 cpu_id=0
          <idle>-0       [000] dN.1.  2330000000: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] d..2.  2330007000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rcu_preempt next_pid=15 next_prio=120
          <idle>-0       [000] dN.1.  2340000000: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0       [000] dN.2.  2340003000: hrtimer_start: hrtimer=06 function=dl_task_timer expires=1170000000 softexpires=1170000000 mode=ABS|HARD was_armed=0
          <idle>-0       [000] dN.2.  2340009000: hrtimer_start: hrtimer=05 function=tick_nohz_handler expires=1172000000 softexpires=1172000000 mode=ABS|PINNED|HARD was_armed=0
          <idle>-0       [001] dN.1.  2350000000: cpu_idle: state=4294967295 cpu_id=1
          <idle>-0       [001] dN.2.  2350006000: hrtimer_start: hrtimer=00 function=tick_nohz_handler expires=1176000000 softexpires=1176000000 mode=ABS|PINNED|HARD was_armed=0
";

    #[test]
    fn the_restart_counts_only_exits_to_a_task_followed_by_the_ticks_requeue() {
        let iv = intervals(&stamps(RESTART));
        // (CPU, restart intervals in counts)
        let table: [(u32, &[u64]); 2] = [
            // 8000: exit with N, then the tick's hrtimer_start. Not counted: the exit without N
            // then tick_stop (a stop), the exit without N then the tick's requeue (a re-stop),
            // the exit with N then the switch (tick not stopped), the exit with N then another
            // timer's start (not adjacent to the tick's).
            (0, &[8_000]),
            (1, &[6_000]),
        ];
        for (cpu, want) in table {
            assert_eq!(iv[&cpu].restart, want, "CPU {cpu}");
        }
        // The hog and wake-up traces have no idle-exit events: no restart there.
        assert!(
            intervals(&stamps(HOG))
                .values()
                .all(|i| i.restart.is_empty())
        );
    }

    #[test]
    fn intervals_pair_adjacent_events_per_cpu() {
        let iv = intervals(&stamps(HOG));
        let one = &iv[&1];
        // (kind, got, want) in counts
        let table: [(&str, &[u64], &[u64]); 5] = [
            ("tick callbacks", &one.tick, &[10_000, 14_000]),
            // Only the first interrupt: the second's last callback (it_real_fn) ends 8000
            // counts before the exit, and it did run the tick, so it counts too.
            ("re-arm after the tick", &one.program, &[6_000, 8_000]),
            ("wheel callbacks", &one.wheel, &[6_000]),
            (
                "back-to-back softirq events",
                &one.back_to_back,
                &[600, 800],
            ),
            ("wake-ups on the busy CPU", &one.wakeup, &[]),
        ];
        for (what, got, want) in table {
            assert_eq!(got, want, "{what}");
        }
        // CPU 0's interrupt ran no tick: its re-arm is not the tick's.
        assert_eq!(iv[&0].wakeup, vec![4_000]);
        assert!(iv[&0].program.is_empty());

        let iv = intervals(&stamps(FRAMES));
        // The third wake-up has a softirq event inside it: dropped.
        assert_eq!(iv[&1].wakeup, vec![6_000, 8_000]);
        assert_eq!(iv[&1].tick, vec![8_000]);
        // After the first wake-up the interrupt ran no tick; after the second it did.
        assert_eq!(iv[&1].program, vec![4_000]);
    }

    #[test]
    fn counts_convert_by_the_slope_of_now() {
        // HOG: now 500 ms → 600 ms over 1000002000 → 1200017000 counts (the second callback
        // of an interrupt carries the interrupt's `now`): 0.49996 ns per count.
        let s = ns_per_count(&stamps(HOG)).unwrap();
        assert!((s - 100e6 / 200_015_000.0).abs() < 1e-12, "{s}");
        // One event, or a span under 50 ms, gives no slope.
        let one = "  a-1 [000] d.h..  10: hrtimer_expire_entry: hrtimer=0 function=f now=5\n";
        assert_eq!(ns_per_count(&stamps(one)), None);
        let short = format!(
            "{one}  a-1 [000] d.h..  20: hrtimer_expire_entry: hrtimer=0 function=f now=40000005\n"
        );
        assert_eq!(ns_per_count(&stamps(&short)), None);
    }

    #[test]
    fn medians_from_both_phases() {
        let kt = from_traces(HOG, FRAMES, 1, "x86-tsc").unwrap();
        // Over both traces: now 500 ms → 1100 ms over 1000002000 → 2200002000 counts.
        assert_eq!(kt.resolution_ns, 0.5);
        assert_eq!(kt.tick_function.as_deref(), Some("tick_nohz_handler"));
        let med = |t: Option<Timed>| t.map(|t| (t.median_ns, t.samples));
        // Tick: hog phase on CPU 1 only (the frames phase's idle tick is not a busy one).
        assert_eq!(med(kt.tick_handler), Some((6_000.0, 2)));
        assert_eq!(med(kt.hrtimer_callback), Some((3_500.0, 2)));
        assert_eq!(med(kt.wheel_timer), Some((3_000.0, 1)));
        assert_eq!(med(kt.clockevent_program), Some((3_500.0, 2)));
        assert_eq!(med(kt.event), Some((350.0, 2)));
        // A softirq run from an interrupt the trace does not record: its entry follows the
        // last exit by 8 ms, which is not one event's cost.
        let far = "  a-1 [003] ..s..  2300000000: softirq_exit: vec=1 [action=TIMER]\n  \
                   a-1 [003] ..s..  2316000000: softirq_entry: vec=9 [action=RCU]\n";
        let kt_far = from_traces(HOG, &format!("{FRAMES}{far}"), 1, "x86-tsc").unwrap();
        assert_eq!(med(kt_far.event), Some((350.0, 2)));
        // No idle-exit events in FRAMES: no restart; with RESTART after it, both CPUs count
        // (8000 and 6000 counts of 0.5 ns).
        assert_eq!(kt.tick_restart, None);
        let frames = format!("{FRAMES}{RESTART}");
        let kt = from_traces(HOG, &frames, 1, "x86-tsc").unwrap();
        assert_eq!(med(kt.tick_restart), Some((3_500.0, 2)));
        // Recorded in the frames phase only: the same lines in the hog text do not count.
        let hog = format!("{HOG}{RESTART}");
        assert_eq!(
            from_traces(&hog, FRAMES, 1, "x86-tsc")
                .unwrap()
                .tick_restart,
            None
        );

        // With the mono clock the timestamps are ns already (printed in µs).
        let mono = HOG
            .replace("  1000", "  1.000")
            .replace("  1100", "  1.100");
        let kt = from_traces(&mono, "", 1, "mono").unwrap();
        assert_eq!(kt.resolution_ns, 1000.0);
        assert_eq!(kt.hrtimer_callback, None);

        let err = from_traces("", "", 1, "x86-tsc").unwrap_err().to_string();
        assert!(err.contains("no conversion"), "{err}");
    }

    #[test]
    fn costs_are_medians_less_tracing_and_the_twins_other_charges() {
        let mut kt = from_traces(HOG, FRAMES, 1, "x86-tsc").unwrap();
        let many = |t: Option<Timed>| {
            t.map(|t| Timed {
                samples: MIN_SAMPLES,
                ..t
            })
        };
        kt.tick_handler = many(kt.tick_handler);
        kt.hrtimer_callback = many(kt.hrtimer_callback);
        kt.clockevent_program = many(kt.clockevent_program);
        let mut mach = ticklab_schema::machine::kvm_guest(2);
        let (xtime, jiffies) = (mach.costs.xtime_read_ns, mach.costs.jiffies_update_ns);
        let wheel_preset = mach.costs.wheel_timer_ns;
        let (mut ledger, mut notes) = (CostLedger::new(), Vec::new());
        fit(Some(&kt), &mut mach, &mut ledger, &mut notes);
        let c = &mach.costs;
        assert_eq!(c.tick_handler_ns, 6_000 - 350 - xtime - jiffies);
        assert_eq!(c.hrtimer_callback_ns, 3_500 - 350);
        assert_eq!(c.clockevent_program_ns, 3_500 - 350);
        // No restart sample in FRAMES: preset kept, and said.
        assert!(
            notes
                .iter()
                .any(|n| n.contains("tick_restart_ns: 0 samples"))
        );
        assert!(ledger.how("costs.tick_restart_ns").is_none());
        // One wheel sample: preset kept, and said.
        assert_eq!(c.wheel_timer_ns, wheel_preset);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("wheel_timer_ns: 1 samples"))
        );
        assert!(ledger.how("costs.wheel_timer_ns").is_none());
        let how = ledger.how("costs.tick_handler_ns").unwrap();
        assert!(
            how.contains("tick_nohz_handler") && how.contains("20 samples"),
            "{how}"
        );

        // Nothing recorded: presets, one note.
        let mut fresh = ticklab_schema::machine::kvm_guest(2);
        let (mut ledger, mut notes) = (CostLedger::new(), Vec::new());
        fit(None, &mut fresh, &mut ledger, &mut notes);
        assert_eq!(fresh, ticklab_schema::machine::kvm_guest(2));
        assert!(ledger.entries().is_empty());
        assert_eq!(notes.len(), 1);
    }

    fn fixture(name: &str) -> String {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/x86-kvm-6.18/");
        std::fs::read_to_string(format!("{p}{name}")).unwrap()
    }

    /// Captured on the development host (fixtures/README.md): the x86-tsc slope of `now`
    /// matches the TSC frequency the kernel logged at boot, and the medians are the ones the
    /// intervals give (a regression check of the extraction on real text).
    #[test]
    fn a_captured_trace() {
        let kt = from_traces(
            &fixture("trace_timer_costs_hog"),
            &fixture("trace_timer_costs_frames"),
            1,
            "x86-tsc",
        )
        .unwrap();
        // dmesg: "tsc: Detected 2445.406 MHz processor".
        let tsc_ns = 1e3 / 2445.406;
        assert!(
            (kt.resolution_ns / tsc_ns - 1.0).abs() < 1e-4,
            "{} ns per count",
            kt.resolution_ns
        );
        let got = |t: Option<Timed>| t.map(|t| (t.median_ns.round(), t.samples));
        // (cost, median ns, samples)
        let table = [
            ("tick callback, busy CPU 1", kt.tick_handler, 19161.0, 26),
            ("hrtimer_wakeup, CPU 1", kt.hrtimer_callback, 3512.0, 30),
            ("wheel callbacks, both CPUs", kt.wheel_timer, 5931.0, 18),
            (
                "re-arm after the tick, CPU 1",
                kt.clockevent_program,
                6482.0,
                26,
            ),
            // 14 exit -> entry pairs, 3 of them over 5 µs apart (softirqs of two interrupts).
            ("one event", kt.event, 231.0, 11),
        ];
        for (what, t, median, n) in table {
            assert_eq!(got(t), Some((median, n)), "{what}");
        }
        assert_eq!(kt.tick_function.as_deref(), Some("tick_nohz_handler"));
    }

    #[test]
    #[ignore = "needs root and tracefs"]
    fn live_tracepoints_time_every_cost_and_leave_no_instance() {
        use crate::harness::RunConfig;
        use ticklab_schema::workload::Workload;
        let stop = Stop::new();
        let nr = crate::calibrate::phases::host_facts().unwrap().nr_cpus;
        let run = |spec: String, d: Duration, what: &str, _: &mut Vec<String>| {
            let w = Workload::parse(&spec, nr).unwrap();
            let config = RunConfig {
                duration: d,
                ..RunConfig::default()
            };
            crate::harness::run::run_with_warnings(&w, &config, &stop)
                .map(|(r, _)| r)
                .map_err(|source| CalibrateError::Harness {
                    phase: what.to_string(),
                    source,
                })
        };
        let mut warnings = Vec::new();
        let kt = measure(
            nr - 1,
            Duration::from_secs(1),
            &run,
            &mut |_| {},
            &mut warnings,
            &stop,
        )
        .unwrap()
        .unwrap_or_else(|| panic!("not recorded: {warnings:?}"));
        for (what, t) in [
            ("tick", kt.tick_handler),
            ("hrtimer_wakeup", kt.hrtimer_callback),
            ("re-arm", kt.clockevent_program),
            ("one event", kt.event),
        ] {
            let t = t.unwrap_or_else(|| panic!("{what}: no interval"));
            assert!(t.median_ns > 0.0, "{what}: {t:?}");
        }
        assert!(kt.tick_handler.unwrap().samples >= MIN_SAMPLES);
        // The session removed its instance (and unmounted tracefs if it mounted it).
        let own = format!("ticklab-{}", std::process::id());
        let left = std::fs::read_dir("/sys/kernel/tracing/instances")
            .map(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with(&own))
            })
            .unwrap_or(false);
        assert!(!left, "instance {own}-* left behind");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3, 1, 2]), Some(2.0));
        assert_eq!(median(&mut [4, 1, 3, 2]), Some(2.5));
    }
}
