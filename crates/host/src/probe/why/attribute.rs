//! Attribution of a recorded trace, with no I/O: each CPU's local timer interrupts by the
//! hrtimer callbacks that expired inside them, its tick-stopped time from the tick-state
//! events, and the tick-gap estimate (module docs of [`super`]).

use std::collections::BTreeMap;

use crate::probe::hz;
use crate::procfs::is_tick_timer_callback;
use crate::procfs::trace::{TraceEvent, TraceText};

use super::report::{ARMED_BEFORE, ArmedTimers, CpuWhy, NO_HRTIMER, TaskShare};

pub(super) fn sorted(map: BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<_> = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Per-CPU attribution from trace lines between `start_ns` and `end_ns` (trace clock).
///
/// `initially_stopped` gives each CPU's tick state at `start_ns`; `nohz_full` CPUs keep a
/// stopped tick across idle exit. Only CPUs in `cpus` are reported.
///
/// Long (about 120 lines) on purpose: one ordered walk of each CPU's events with a state
/// machine (inside a timer interrupt or not, tick stopped or running) whose states the counts
/// are taken in; a split would pass that state to every piece.
pub fn attribute(
    trace: &TraceText,
    start_ns: u64,
    end_ns: u64,
    cpus: &[u32],
    initially_stopped: &BTreeMap<u32, bool>,
    nohz_full: &[u32],
    tick_ns: Option<u64>,
) -> Vec<CpuWhy> {
    let armers = armers(trace);
    cpus.iter()
        .map(|&cpu| {
            let mut tasks = TaskClock::new(start_ns);
            let mut armed: BTreeMap<(String, String, u32), Vec<u64>> = BTreeMap::new();
            let mut idle_ticks = 0u64;
            let mut causes: BTreeMap<String, u64> = BTreeMap::new();
            let mut outside: BTreeMap<String, u64> = BTreeMap::new();
            let mut failures: BTreeMap<String, u64> = BTreeMap::new();
            let (mut loc, mut ticks, mut stops, mut idles) = (0u64, 0u64, 0u64, 0u64);
            let (mut into_idle, mut out_of_idle) = (0u64, 0u64);
            let mut tick_times: Vec<u64> = Vec::new();
            // Callbacks of the interrupt in progress (None = not inside one).
            let mut in_irq: Option<Vec<String>> = None;
            let mut stopped = initially_stopped.get(&cpu).copied().unwrap_or(false);
            let mut since = start_ns;
            let mut stopped_ns = 0u64;
            let close_irq = |cbs: Vec<String>, causes: &mut BTreeMap<String, u64>| {
                let cause = if cbs.iter().any(|c| is_tick_timer_callback(c)) {
                    "tick".to_string()
                } else {
                    cbs.into_iter()
                        .next()
                        .unwrap_or_else(|| NO_HRTIMER.to_string())
                };
                *causes.entry(cause).or_default() += 1;
            };
            let mut set_stopped = |now: u64, to: bool, stopped: &mut bool, since: &mut u64| {
                if *stopped {
                    stopped_ns += now.saturating_sub(*since);
                }
                *stopped = to;
                *since = now;
            };
            for (i, l) in trace
                .lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.cpu == cpu && l.ts_ns >= start_ns && l.ts_ns <= end_ns)
            {
                // Every event is recorded under the CPU's current task.
                tasks.current_is(l.ts_ns, &l.task, l.pid);
                match &l.event {
                    TraceEvent::LocalTimerEntry => {
                        if let Some(cbs) = in_irq.take() {
                            // Exit event lost: close the previous interrupt here.
                            close_irq(cbs, &mut causes);
                        }
                        loc += 1;
                        in_irq = Some(Vec::new());
                    }
                    TraceEvent::Other { name } if name == "local_timer_exit" => {
                        if let Some(cbs) = in_irq.take() {
                            close_irq(cbs, &mut causes);
                        }
                    }
                    TraceEvent::HrtimerExpireEntry { function, .. } => {
                        if is_tick_timer_callback(function) {
                            ticks += 1;
                            tick_times.push(l.ts_ns);
                            idle_ticks += u64::from(l.pid == 0);
                        } else {
                            let (comm, pid) = armers
                                .get(&i)
                                .map_or((ARMED_BEFORE, 0), |(c, p)| (c.as_str(), *p));
                            armed
                                .entry((function.clone(), comm.to_string(), pid))
                                .or_default()
                                .push(l.ts_ns);
                        }
                        match in_irq.as_mut() {
                            Some(cbs) => cbs.push(function.clone()),
                            None => *outside.entry(function.clone()).or_default() += 1,
                        }
                    }
                    TraceEvent::TickStop { success: true, .. } => {
                        stops += 1;
                        set_stopped(l.ts_ns, true, &mut stopped, &mut since);
                    }
                    TraceEvent::TickStop {
                        success: false,
                        dependency,
                    } => {
                        *failures.entry(dependency.clone()).or_default() += 1;
                        set_stopped(l.ts_ns, false, &mut stopped, &mut since);
                    }
                    TraceEvent::SchedSwitch {
                        prev_pid,
                        next_pid,
                        next_comm,
                        ..
                    } => {
                        tasks.switch(l.ts_ns, next_comm, *next_pid);
                        if *next_pid == 0 {
                            into_idle += 1;
                        }
                        if *prev_pid == 0 {
                            out_of_idle += 1;
                            if !nohz_full.contains(&cpu) {
                                set_stopped(l.ts_ns, false, &mut stopped, &mut since);
                            }
                        }
                    }
                    TraceEvent::CpuIdle { state: Some(_) } => idles += 1,
                    _ => {}
                }
            }
            if let Some(cbs) = in_irq.take() {
                close_irq(cbs, &mut causes);
            }
            let s = stopped;
            set_stopped(end_ns, s, &mut stopped, &mut since);
            let window = end_ns.saturating_sub(start_ns);
            let (busy_fraction, task_shares) = tasks.finish(end_ns, window);
            let idle_events_missing = into_idle > 0 && out_of_idle == 0 && idles == 0;
            CpuWhy {
                cpu,
                loc_traced: Some(loc),
                interrupts_by_cause: sorted(causes),
                tick_callbacks: Some(ticks),
                outside_irq: sorted(outside),
                tick_stopped_fraction: (window > 0 && !idle_events_missing)
                    .then(|| stopped_ns as f64 / window as f64),
                tick_gap_fraction: tick_ns.filter(|_| window > 0).map(|p| {
                    gap_stopped_ns(&tick_times, start_ns, end_ns, p) as f64 / window as f64
                }),
                idle_events_missing,
                tick_stops: Some(stops),
                stop_failures: sorted(failures),
                idle_entries: Some(idles),
                busy_fraction,
                tasks: task_shares,
                idle_ticks: Some(idle_ticks),
                armed_timers: armed_timers(armed),
                ..CpuWhy::default()
            }
        })
        .collect()
}

/// For each `hrtimer_expire_entry` line (by index), the task (name, PID) under which the
/// latest `hrtimer_start` of the same timer address was recorded, on any CPU. The tick's own
/// timer is left out (re-armed from its interrupt, it names whatever task it interrupted).
fn armers(trace: &TraceText) -> BTreeMap<usize, (String, u32)> {
    let mut by_timer: BTreeMap<&str, (&str, u32)> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (i, l) in trace.lines.iter().enumerate() {
        match &l.event {
            TraceEvent::HrtimerStart { function, hrtimer }
                if !hrtimer.is_empty() && !is_tick_timer_callback(function) =>
            {
                by_timer.insert(hrtimer, (&l.task, l.pid));
            }
            TraceEvent::HrtimerExpireEntry { hrtimer, .. } => {
                if let Some((comm, pid)) = by_timer.get(hrtimer.as_str()) {
                    out.insert(i, (comm.to_string(), *pid));
                }
            }
            _ => {}
        }
    }
    out
}

/// The armed-timer groups, most expiries first, each with its median expiry interval.
fn armed_timers(armed: BTreeMap<(String, String, u32), Vec<u64>>) -> Vec<ArmedTimers> {
    let mut v: Vec<ArmedTimers> = armed
        .into_iter()
        .map(|((function, comm, pid), times)| {
            let mut gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
            gaps.sort_unstable();
            ArmedTimers {
                function,
                comm,
                pid,
                expiries: times.len() as u64,
                median_interval_ms: (!gaps.is_empty()).then(|| gaps[gaps.len() / 2] as f64 / 1e6),
            }
        })
        .collect();
    v.sort_by(|a, b| {
        b.expiries
            .cmp(&a.expiries)
            .then_with(|| a.comm.cmp(&b.comm))
    });
    v
}

/// The time each task was a CPU's current task, from the task column of its events and its
/// `sched_switch` events (module docs of [`super`]).
struct TaskClock {
    /// The current task (name, PID) and since when; `None` before the CPU's first event.
    current: Option<(String, u32)>,
    since: u64,
    /// By PID: name, ns current, switches in.
    by_pid: BTreeMap<u32, (String, u64, u64)>,
}

impl TaskClock {
    fn new(start_ns: u64) -> TaskClock {
        TaskClock {
            current: None,
            since: start_ns,
            by_pid: BTreeMap::new(),
        }
    }

    /// Credits the current task up to `now` and makes (`comm`, `pid`) current.
    fn set(&mut self, now: u64, comm: &str, pid: u32, switched_in: bool) {
        let (old_comm, old_pid) = self
            .current
            .take()
            .unwrap_or_else(|| (comm.to_string(), pid));
        let e = self.by_pid.entry(old_pid).or_insert((old_comm, 0, 0));
        e.1 += now.saturating_sub(self.since);
        let e = self.by_pid.entry(pid).or_insert((comm.to_string(), 0, 0));
        e.2 += u64::from(switched_in);
        self.current = Some((comm.to_string(), pid));
        self.since = now;
    }

    /// An event recorded under (`task`, `pid`): that task is current (a switch to it the
    /// trace lost is implied here; the idle task's column reads `<idle>`).
    fn current_is(&mut self, now: u64, task: &str, pid: u32) {
        if self.current.as_ref().is_none_or(|(_, p)| *p != pid) {
            let implied_switch = self.current.is_some();
            self.set(now, task, pid, implied_switch);
        }
    }

    /// A `sched_switch` to (`comm`, `pid`).
    fn switch(&mut self, now: u64, comm: &str, pid: u32) {
        self.set(now, comm, pid, true);
    }

    /// (busy share, tasks other than idle by share) over a window of `window` ns ending at
    /// `end`; `None` and nothing when the CPU recorded no event.
    fn finish(mut self, end: u64, window: u64) -> (Option<f64>, Vec<TaskShare>) {
        let Some((comm, pid)) = self.current.clone() else {
            return (None, Vec::new());
        };
        self.set(end, &comm, pid, false);
        if window == 0 {
            return (None, Vec::new());
        }
        let mut tasks: Vec<TaskShare> = self
            .by_pid
            .into_iter()
            .filter(|(pid, _)| *pid != 0)
            .map(|(pid, (comm, ns, switches_in))| TaskShare {
                comm,
                pid,
                share: ns as f64 / window as f64,
                switches_in,
            })
            .collect();
        tasks.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.pid.cmp(&b.pid)));
        let busy: f64 = tasks.iter().map(|t| t.share).sum();
        debug_assert!(
            busy <= 1.0 + 1e-9,
            "tasks share more than the window: {busy}"
        );
        (Some(busy.min(1.0)), tasks)
    }
}

/// Time in `[start, end]` not covered by a running tick, given the tick callback times:
/// each gap (including the edges of the window) longer than 1.5 periods contributes its
/// length minus one period.
pub fn gap_stopped_ns(ticks: &[u64], start: u64, end: u64, period: u64) -> u64 {
    let mut edges = Vec::with_capacity(ticks.len() + 2);
    edges.push(start);
    edges.extend(ticks.iter().copied().filter(|&t| t >= start && t <= end));
    edges.push(end);
    edges
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&gap| 2 * gap > 3 * period)
        .map(|gap| gap - period)
        .sum()
}

/// The tick period seen in a trace: the HZ candidate whose period most intervals between
/// consecutive tick callbacks (per CPU) match within 5 %. `None` with fewer than 5 matches.
pub fn tick_period_from_trace(trace: &TraceText) -> Option<(u32, u64)> {
    let mut last: BTreeMap<u32, u64> = BTreeMap::new();
    let mut intervals = Vec::new();
    for l in &trace.lines {
        if let TraceEvent::HrtimerExpireEntry { function, .. } = &l.event
            && is_tick_timer_callback(function)
            && let Some(prev) = last.insert(l.cpu, l.ts_ns)
        {
            intervals.push(l.ts_ns.saturating_sub(prev));
        }
    }
    ticklab_schema::scenario::CONFIG_HZ_CHOICES
        .iter()
        .map(|&hz| {
            let p = hz::tick_nsec(hz) as u64;
            let n = intervals
                .iter()
                .filter(|&&i| i.abs_diff(p) * 20 <= p)
                .count();
            (n, hz, p)
        })
        .filter(|&(n, _, _)| n >= 5)
        .max_by_key(|&(n, _, _)| n)
        .map(|(_, hz, p)| (hz, p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::parse_trace;

    #[test]
    fn timers_go_to_the_task_that_armed_them_and_tasks_get_their_share() {
        // CPU 1 runs `sleeper` (pid 42) from 1.000 to 1.100 and is idle to 1.400; the
        // sleeper's timer, armed on CPU 1, expires inside an interrupt at 1.300; a second
        // expiry of a timer never started in the trace is "armed before the window".
        let text = "\
 sleeper-42 [001] d..2. 1.000000: hrtimer_start: hrtimer=aa function=hrtimer_wakeup expires=1 softexpires=1 mode=REL
 sleeper-42 [001] d..2. 1.100000: sched_switch: prev_comm=sleeper prev_pid=42 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 <idle>-0 [001] d.h1. 1.300000: local_timer_entry: vector=236
 <idle>-0 [001] d.h1. 1.300001: hrtimer_expire_entry: hrtimer=aa function=hrtimer_wakeup now=1
 <idle>-0 [001] d.h1. 1.300002: hrtimer_expire_entry: hrtimer=bb function=hrtimer_wakeup now=1
 <idle>-0 [001] d.h1. 1.300003: local_timer_exit: vector=236
";
        let trace = parse_trace(text);
        assert_eq!(trace.skipped, 0);
        let got = attribute(
            &trace,
            1_000_000_000,
            1_400_000_000,
            &[1],
            &BTreeMap::new(),
            &[],
            None,
        );
        let c = &got[0];
        let armed: Vec<(&str, u32, u64)> = c
            .armed_timers
            .iter()
            .map(|t| (t.comm.as_str(), t.pid, t.expiries))
            .collect();
        assert_eq!(armed, vec![(ARMED_BEFORE, 0, 1), ("sleeper", 42, 1)]);
        assert_eq!(c.tasks.len(), 1);
        assert_eq!((c.tasks[0].comm.as_str(), c.tasks[0].pid), ("sleeper", 42));
        assert!((c.tasks[0].share - 0.25).abs() < 1e-9, "{:?}", c.tasks);
        assert!((c.busy_fraction.unwrap() - 0.25).abs() < 1e-9);
        assert_eq!(c.idle_ticks, Some(0));
    }
    #[test]
    fn gaps_between_ticks() {
        const P: u64 = 4_000_000;
        // (tick times, window start, end, expected stopped ns)
        let cases: &[(&[u64], u64, u64, u64)] = &[
            // A running tick: no gap over 1.5 periods.
            (
                &[4, 8, 12, 16].map(|k| k * 1_000_000),
                2_000_000,
                18_000_000,
                0,
            ),
            // One 40 ms gap inside: 36 ms not covered.
            (&[4_000_000, 44_000_000], 2_000_000, 46_000_000, 36_000_000),
            // No tick at all: the whole window minus one period.
            (&[], 0, 100_000_000, 96_000_000),
            // Edges: 10 ms before the first tick and 20 ms after the last count.
            (
                &[10_000_000, 14_000_000],
                0,
                34_000_000,
                6_000_000 + 16_000_000,
            ),
            // Exactly 1.5 periods is not a gap.
            (&[0, 6_000_000], 0, 6_000_000, 0),
        ];
        for (i, (ticks, s, e, want)) in cases.iter().enumerate() {
            assert_eq!(gap_stopped_ns(ticks, *s, *e, P), *want, "case {i}");
        }
    }
}
