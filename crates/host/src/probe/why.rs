//! `host why`: why did each CPU take timer interrupts, and how long was its tick stopped?
//!
//! **With tracing** (root and tracefs): a private instance (`probe/tracefs.rs`) records
//! `irq_vectors:local_timer_entry/exit` (x86), `timer:hrtimer_expire_entry`,
//! `timer:tick_stop`, `power:cpu_idle` and `sched:sched_switch` for the window, on the
//! `mono` trace clock. [`attribute`] then walks each CPU's events in order:
//!
//! * every local timer interrupt is attributed to the hrtimer callbacks that expired inside
//!   it (between its entry and exit events): to the tick if the tick's callback ran (the name
//!   differs across versions, see [`is_tick_timer_callback`]), else to the first other
//!   callback, else to "no hrtimer expired";
//! * hrtimer callbacks outside a local timer interrupt (soft hrtimers run from softirq, or
//!   the low-res tick path) are counted separately;
//! * **tick-stopped time** is a state machine started from `.tick_stopped` in a
//!   `/proc/timer_list` read just before tracing: a `tick_stop` event with `success=1` stops
//!   the tick; a switch away from the idle task restarts it (the idle-exit path restarts a
//!   stopped tick on CPUs that are not `nohz_full`); a `tick_stop` with `success=0` (full
//!   dynticks: the tick could not stop because of the printed dependency) marks it running.
//!   `cpu_idle` events give the number of idle entries.
//!
//! **Without tracing** the window is covered by sampling `/proc/timer_list` every
//! [`SAMPLE_PERIOD`] (root only): the stopped fraction is the share of samples with
//! `.tick_stopped: 1` and the hrtimers are the ones seen queued — no per-interrupt
//! attribution. Without root only the `/proc/interrupts` counts remain. The report says
//! which method was used and what is missing.

use super::HostRoot;
use super::irqs;
use super::tracefs::TraceSession;
use crate::harness::stop::Stop;
use crate::procfs::trace::{TraceEvent, TraceText, parse_trace};
use crate::procfs::{IrqKind, TimerList, is_tick_timer_callback, parse_timer_list};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

/// Events recorded by the tracing method.
pub const EVENTS: [&str; 6] = [
    "irq_vectors:local_timer_entry",
    "irq_vectors:local_timer_exit",
    "timer:hrtimer_expire_entry",
    "timer:tick_stop",
    "power:cpu_idle",
    "sched:sched_switch",
];

/// Sampling period of the `/proc/timer_list` fallback.
pub const SAMPLE_PERIOD: Duration = Duration::from_millis(20);

/// Label for local timer interrupts in which no hrtimer expired.
pub const NO_HRTIMER: &str = "(no hrtimer expired)";

/// How to observe.
#[derive(Debug, Clone)]
pub struct WhyOptions {
    /// Window length.
    pub window: Duration,
    /// CPUs to report (all online CPUs when `None`).
    pub cpus: Option<Vec<u32>>,
    /// Force the sampling method even when tracing is possible.
    pub no_trace: bool,
    /// Write the raw trace text here (tracing method only).
    pub save_trace: Option<std::path::PathBuf>,
}

/// Why [`observe`] could not produce a report. The caller matches on the variant: a CPU that is
/// not online is the user's input at fault, the rest are the host's.
#[derive(Debug, thiserror::Error)]
pub enum WhyError {
    /// A CPU asked for is not online.
    #[error("CPU {cpu} is not online (online: {online:?})")]
    CpuNotOnline {
        /// The CPU asked for.
        cpu: u32,
        /// The online CPUs (the columns of `/proc/interrupts`).
        online: Vec<u32>,
    },
    /// `/proc/interrupts` could not be read or parsed.
    #[error("{0}")]
    Interrupts(String),
    /// The trace instance could not be stopped or read after the window.
    #[error("{0}")]
    Trace(String),
    /// The raw trace could not be written where `--save-trace` asked.
    #[error("--save-trace {}: {source}", path.display())]
    SaveTrace {
        /// Where it was to be written.
        path: std::path::PathBuf,
        /// The write error.
        #[source]
        source: std::io::Error,
    },
}

/// The report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhyReport {
    /// How the data was gathered.
    pub method: String,
    /// What could not be observed, and caveats.
    pub missing: Vec<String>,
    /// Window length actually observed, seconds.
    pub elapsed_s: f64,
    /// Whether the window was cut short (Ctrl-C).
    pub interrupted: bool,
    /// Per CPU.
    pub cpus: Vec<CpuWhy>,
}

/// One CPU's attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuWhy {
    /// CPU number.
    pub cpu: u32,
    /// Local timer interrupts per `/proc/interrupts` over the window.
    pub loc_proc: Option<u64>,
    /// Local timer interrupts seen in the trace.
    pub loc_traced: Option<u64>,
    /// Traced local timer interrupts by cause: `tick`, a callback name, or [`NO_HRTIMER`];
    /// largest first.
    pub interrupts_by_cause: Vec<(String, u64)>,
    /// Tick callbacks run (inside or outside interrupts).
    pub tick_callbacks: Option<u64>,
    /// hrtimer callbacks run outside a local timer interrupt, by name.
    pub outside_irq: Vec<(String, u64)>,
    /// Fraction of the window the tick was stopped (0..1), from the tick-state events; `None`
    /// when the trace lacks the idle task's events on this CPU (see
    /// [`CpuWhy::idle_events_missing`]).
    pub tick_stopped_fraction: Option<f64>,
    /// Fraction of the window not covered by a running tick, from the gaps between
    /// consecutive tick callbacks: every gap longer than 1.5 tick periods counts minus one
    /// period (so does the stretch before the first and after the last tick). Needs only
    /// interrupt-context events; a vCPU the hypervisor did not run also shows as a gap.
    pub tick_gap_fraction: Option<f64>,
    /// The trace has switches into the idle task on this CPU but no idle-task events after
    /// them (no `cpu_idle`, no switch out of idle): those events were not recorded, so the
    /// event-based tick-stopped time cannot be derived.
    pub idle_events_missing: bool,
    /// Successful tick stops.
    pub tick_stops: Option<u64>,
    /// Failed stops by dependency name (`tick_stop success=0`).
    pub stop_failures: Vec<(String, u64)>,
    /// Idle entries (`cpu_idle` with a state).
    pub idle_entries: Option<u64>,
    /// Sampling method: hrtimers seen queued, with the number of samples.
    pub queued_hrtimers: Vec<(String, u64)>,
    /// Sampling method: hrtimer interrupts (`.nr_events` delta).
    pub hrtimer_interrupts: Option<u64>,
}

fn sorted(map: BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<_> = map.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// Per-CPU attribution from trace lines between `start_ns` and `end_ns` (trace clock).
///
/// `initially_stopped` gives each CPU's tick state at `start_ns`; `nohz_full` CPUs keep a
/// stopped tick across idle exit. Only CPUs in `cpus` are reported.
pub fn attribute(
    trace: &TraceText,
    start_ns: u64,
    end_ns: u64,
    cpus: &[u32],
    initially_stopped: &BTreeMap<u32, bool>,
    nohz_full: &[u32],
    tick_ns: Option<u64>,
) -> Vec<CpuWhy> {
    cpus.iter()
        .map(|&cpu| {
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
            for l in trace
                .lines
                .iter()
                .filter(|l| l.cpu == cpu && l.ts_ns >= start_ns && l.ts_ns <= end_ns)
            {
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
                    TraceEvent::HrtimerExpireEntry { function } => {
                        if is_tick_timer_callback(function) {
                            ticks += 1;
                            tick_times.push(l.ts_ns);
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
                    TraceEvent::SchedSwitch { prev_pid, next_pid } => {
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
                ..CpuWhy::default()
            }
        })
        .collect()
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
        if let TraceEvent::HrtimerExpireEntry { function } = &l.event
            && is_tick_timer_callback(function)
            && let Some(prev) = last.insert(l.cpu, l.ts_ns)
        {
            intervals.push(l.ts_ns.saturating_sub(prev));
        }
    }
    ticklab_schema::scenario::CONFIG_HZ_CHOICES
        .iter()
        .map(|&hz| {
            let p = super::hz::tick_nsec(hz) as u64;
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

fn read_timer_list(root: &HostRoot) -> Result<TimerList, String> {
    match root.read("/proc/timer_list") {
        super::Probe::Ok(t) => parse_timer_list(&t).map_err(|e| e.to_string()),
        super::Probe::NotAvailable(why) => Err(why),
    }
}

fn monotonic_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Sleeps for `window` in short steps, returning early if `stop` is set.
fn wait(window: Duration, stop: &Stop, mut each: impl FnMut()) -> bool {
    let end = Instant::now() + window;
    loop {
        let now = Instant::now();
        if now >= end {
            return false;
        }
        if stop.is_set() {
            return true;
        }
        std::thread::sleep((end - now).min(SAMPLE_PERIOD));
        each();
    }
}

fn loc_deltas(
    before: &irqs::IrqSnapshot,
    after: &irqs::IrqSnapshot,
    cpus: &[u32],
) -> BTreeMap<u32, u64> {
    let r = irqs::rates_between(before, after, false);
    let mut out = BTreeMap::new();
    if let Some(loc) = r
        .rows
        .iter()
        .find(|r| r.name == IrqKind::LocalTimer.mnemonic())
    {
        for (i, c) in r.cpus.iter().enumerate() {
            if cpus.contains(c) {
                out.insert(*c, loc.per_cpu_delta[i]);
            }
        }
    }
    out
}

fn nohz_full_cpus(root: &HostRoot) -> Vec<u32> {
    root.read_line("/sys/devices/system/cpu/nohz_full")
        .ok()
        .and_then(|s| ticklab_cmdline::parse_cpulist(s, u32::MAX).ok())
        .map(|set| set.iter().collect())
        .unwrap_or_default()
}

/// Observes the live host for `opts.window`.
pub fn observe(opts: &WhyOptions, stop: &Stop) -> Result<WhyReport, WhyError> {
    let root = HostRoot::live();
    let first = irqs::snapshot(&root).map_err(WhyError::Interrupts)?;
    let cpus: Vec<u32> = match &opts.cpus {
        Some(list) => {
            let online = &first.interrupts.cpus;
            if let Some(bad) = list.iter().find(|c| !online.contains(c)) {
                return Err(WhyError::CpuNotOnline {
                    cpu: *bad,
                    online: online.clone(),
                });
            }
            list.clone()
        }
        None => first.interrupts.cpus.clone(),
    };
    let mut missing = Vec::new();
    let tl0 = read_timer_list(&root);

    let session = if opts.no_trace {
        Err("tracing not requested (--no-trace)".to_string())
    } else {
        match &tl0 {
            Ok(_) => TraceSession::start(&EVENTS, 4096, opts.cpus.as_deref()),
            Err(why) => Err(format!("tracing skipped: {why}")),
        }
    };

    match session {
        Ok(session) => {
            let tl0 = tl0.expect("checked above");
            let start_ns = monotonic_ns();
            let before = irqs::snapshot(&root).map_err(WhyError::Interrupts)?;
            let interrupted = wait(opts.window, stop, || {});
            let after = irqs::snapshot(&root).map_err(WhyError::Interrupts)?;
            let end_ns = monotonic_ns();
            session.stop().map_err(WhyError::Trace)?;
            let text = session.read_trace().map_err(WhyError::Trace)?;
            if let Some(path) = &opts.save_trace {
                std::fs::write(path, &text).map_err(|source| WhyError::SaveTrace {
                    path: path.clone(),
                    source,
                })?;
            }
            let overruns = session.overruns();
            missing.extend(
                session
                    .missing
                    .iter()
                    .map(|e| format!("event {e} not in this kernel")),
            );
            if session.clock != "mono" {
                missing
                    .push("trace clock `mono` unavailable: window bounds are approximate".into());
            }
            if overruns > 0 {
                missing.push(format!("{overruns} events lost to ring-buffer overruns"));
            }
            let mono = session.clock == "mono";
            let method = format!(
                "tracefs instance {} ({}clock {}), events: {}; tick-stopped time from \
                 tick_stop events and switches away from the idle task, starting from \
                 /proc/timer_list .tick_stopped",
                session.instance().display(),
                if session.mounted_by_us() {
                    "tracefs mounted for this run, "
                } else {
                    ""
                },
                session.clock,
                session.enabled.join(", ")
            );
            drop(session);
            let trace = parse_trace(&text);
            let mut method_notes: Vec<String> = Vec::new();
            if trace.skipped > 0 {
                missing.push(format!("{} trace lines not understood", trace.skipped));
            }
            let initially: BTreeMap<u32, bool> = tl0
                .cpus
                .iter()
                .filter_map(|c| Some((c.cpu, c.tick_stopped?)))
                .collect();
            let (start, end) = if mono {
                (start_ns, end_ns)
            } else {
                (
                    trace.lines.first().map_or(0, |l| l.ts_ns),
                    trace.lines.last().map_or(0, |l| l.ts_ns),
                )
            };
            let period = tick_period_from_trace(&trace);
            let mut cpus_why = attribute(
                &trace,
                start,
                end,
                &cpus,
                &initially,
                &nohz_full_cpus(&root),
                period.map(|(_, p)| p),
            );
            match period {
                Some((hz, p)) => method_notes.push(format!(
                    "tick period in the trace: {:.3} ms (HZ {hz})",
                    p as f64 / 1e6
                )),
                None => missing.push(
                    "too few tick callbacks to find the tick period: no gap-based estimate".into(),
                ),
            }
            for c in cpus_why.iter().filter(|c| c.idle_events_missing) {
                missing.push(format!(
                    "CPU {}: the trace has switches into idle but no idle-task events after \
                     them (cpu_idle, tick_stop, switch out of idle were not recorded); its \
                     tick-stopped time comes from the gaps between ticks only",
                    c.cpu
                ));
            }
            let locs = loc_deltas(&before, &after, &cpus);
            for c in &mut cpus_why {
                c.loc_proc = locs.get(&c.cpu).copied();
            }
            if !trace
                .lines
                .iter()
                .any(|l| matches!(l.event, TraceEvent::TickStop { success: false, .. }))
            {
                missing.push(
                    "no failed tick_stop events: a NO_HZ_IDLE kernel reports only successful \
                     stops; dependencies are reported on nohz_full CPUs"
                        .into(),
                );
            }
            Ok(WhyReport {
                method: std::iter::once(method)
                    .chain(method_notes)
                    .collect::<Vec<_>>()
                    .join("; "),
                missing,
                elapsed_s: (end_ns - start_ns) as f64 / 1e9,
                interrupted,
                cpus: cpus_why,
            })
        }
        Err(trace_why) => {
            missing.push(trace_why);
            sample_fallback(&root, opts, stop, &cpus, tl0, missing)
        }
    }
}

/// The sampling method: `/proc/timer_list` every [`SAMPLE_PERIOD`] when readable, and
/// `/proc/interrupts` at both ends.
fn sample_fallback(
    root: &HostRoot,
    opts: &WhyOptions,
    stop: &Stop,
    cpus: &[u32],
    tl0: Result<TimerList, String>,
    mut missing: Vec<String>,
) -> Result<WhyReport, WhyError> {
    let start = Instant::now();
    let before = irqs::snapshot(root).map_err(WhyError::Interrupts)?;
    let mut stopped: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let mut queued: BTreeMap<u32, BTreeMap<String, u64>> = BTreeMap::new();
    let mut nr_events: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    let readable = tl0.is_ok();
    let mut record = |tl: &TimerList| {
        for c in tl.cpus.iter().filter(|c| cpus.contains(&c.cpu)) {
            if let Some(s) = c.tick_stopped {
                let e = stopped.entry(c.cpu).or_default();
                e.0 += u64::from(s);
                e.1 += 1;
            }
            let q = queued.entry(c.cpu).or_default();
            let mut names: Vec<&str> = c.timers().map(|t| t.callback.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            for n in names {
                *q.entry(n.to_string()).or_default() += 1;
            }
            if let Some(n) = c.nr_events {
                nr_events.entry(c.cpu).or_insert((n, n)).1 = n;
            }
        }
    };
    let method = match &tl0 {
        Ok(tl) => {
            record(tl);
            format!(
                "sampling /proc/timer_list every {} ms; tick-stopped time = share of samples \
                 with .tick_stopped 1 (the sampling itself wakes the CPU it runs on)",
                SAMPLE_PERIOD.as_millis()
            )
        }
        Err(why) => {
            missing.push(format!("no tick-stopped time or hrtimer names: {why}"));
            "/proc/interrupts at both ends of the window only".to_string()
        }
    };
    let interrupted = wait(opts.window, stop, || {
        if readable && let Ok(tl) = read_timer_list(root) {
            record(&tl);
        }
    });
    let after = irqs::snapshot(root).map_err(WhyError::Interrupts)?;
    let locs = loc_deltas(&before, &after, cpus);
    missing.push("no per-interrupt attribution without tracing".into());
    let cpus_why = cpus
        .iter()
        .map(|&cpu| CpuWhy {
            cpu,
            loc_proc: locs.get(&cpu).copied(),
            tick_stopped_fraction: stopped
                .get(&cpu)
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| *s as f64 / *n as f64),
            queued_hrtimers: queued.remove(&cpu).map(sorted).unwrap_or_default(),
            hrtimer_interrupts: nr_events.get(&cpu).map(|(a, b)| b.saturating_sub(*a)),
            ..CpuWhy::default()
        })
        .collect();
    Ok(WhyReport {
        method,
        missing,
        elapsed_s: start.elapsed().as_secs_f64(),
        interrupted,
        cpus: cpus_why,
    })
}

impl fmt::Display for WhyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "tick attribution over {:.2} s{}",
            self.elapsed_s,
            if self.interrupted {
                " (interrupted)"
            } else {
                ""
            }
        )?;
        writeln!(f, "method: {}", self.method)?;
        let per_s = |n: u64| n as f64 / self.elapsed_s.max(1e-9);
        for c in &self.cpus {
            writeln!(f)?;
            let mut head = Vec::new();
            if let Some(n) = c.loc_traced {
                head.push(format!(
                    "{n} local timer interrupts traced ({:.1}/s)",
                    per_s(n)
                ));
            }
            if let Some(n) = c.loc_proc {
                head.push(format!("LOC in /proc/interrupts {n} ({:.1}/s)", per_s(n)));
            }
            writeln!(f, "CPU {}: {}", c.cpu, head.join("; "))?;
            if let Some(frac) = c.tick_stopped_fraction {
                write!(f, "  tick stopped {:.1}% of the window", frac * 100.0)?;
                if let Some(s) = c.tick_stops {
                    write!(f, " ({s} stops")?;
                    if let Some(i) = c.idle_entries {
                        write!(f, ", {i} idle entries")?;
                    }
                    write!(f, ")")?;
                }
                if let Some(g) = c.tick_gap_fraction {
                    write!(f, "; from gaps between ticks {:.1}%", g * 100.0)?;
                }
                writeln!(f)?;
            } else if let Some(g) = c.tick_gap_fraction {
                writeln!(
                    f,
                    "  tick not running {:.1}% of the window (from gaps between ticks; \
                     tick-state events missing)",
                    g * 100.0
                )?;
            }
            if !c.interrupts_by_cause.is_empty() {
                writeln!(f, "  local timer interrupts by cause:")?;
                for (name, n) in &c.interrupts_by_cause {
                    writeln!(f, "    {name:<28} {n:>7} {:>9.1}/s", per_s(*n))?;
                }
            }
            if !c.outside_irq.is_empty() {
                writeln!(f, "  hrtimer callbacks outside a local timer interrupt:")?;
                for (name, n) in &c.outside_irq {
                    writeln!(f, "    {name:<28} {n:>7}")?;
                }
            }
            if !c.stop_failures.is_empty() {
                writeln!(
                    f,
                    "  tick could not stop (tick_stop success=0), by dependency:"
                )?;
                for (dep, n) in &c.stop_failures {
                    writeln!(f, "    {dep:<28} {n:>7}")?;
                }
            }
            if let Some(n) = c.hrtimer_interrupts {
                writeln!(f, "  hrtimer interrupts (.nr_events delta): {n}")?;
            }
            if !c.queued_hrtimers.is_empty() {
                writeln!(f, "  hrtimers seen queued (samples):")?;
                for (name, n) in &c.queued_hrtimers {
                    writeln!(f, "    {name:<28} {n:>7}")?;
                }
            }
        }
        if !self.missing.is_empty() {
            writeln!(f)?;
            for m in &self.missing {
                writeln!(f, "note: {m}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_not_online_is_a_variant_with_the_same_words() {
        let e = WhyError::CpuNotOnline {
            cpu: 7,
            online: vec![0, 1],
        };
        assert_eq!(e.to_string(), "CPU 7 is not online (online: [0, 1])");
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
