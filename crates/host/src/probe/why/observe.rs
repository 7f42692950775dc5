//! Observing the live host for a window: with a private tracefs instance when root and
//! tracefs allow it (then [`super::attribute`]), else by sampling `/proc/timer_list` every
//! [`SAMPLE_PERIOD`] (root only), else with the `/proc/interrupts` counts alone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::harness::stop::Stop;
use crate::probe::tracefs::{TraceError, TraceSession};
use crate::probe::{HostRoot, Probe, irqs};
use crate::procfs::task::{parse_task_stat, pid_of};
use crate::procfs::timer_list::TimerListError;
use crate::procfs::trace::{TraceEvent, parse_trace};
use crate::procfs::{IrqKind, TimerList, parse_timer_list};

use super::attribute::{attribute, sorted, tick_period_from_trace};
use super::report::{CpuWhy, EVENTS, SAMPLE_PERIOD, WhyError, WhyOptions, WhyReport};

/// Why `/proc/timer_list` gave no snapshot (said in the report's `missing` lines).
#[derive(Debug, Clone, thiserror::Error)]
enum NoTimerList {
    /// The file is not available (the probe's reason: needs root, absent).
    #[error("{0}")]
    NotAvailable(String),
    /// The file does not parse.
    #[error(transparent)]
    Parse(#[from] TimerListError),
}

/// Why the window is not traced (the report says so and samples instead).
#[derive(Debug, thiserror::Error)]
enum NoTrace {
    /// `--no-trace`.
    #[error("tracing not requested (--no-trace)")]
    NotRequested,
    /// No `/proc/timer_list` snapshot to start from.
    #[error("tracing skipped: {0}")]
    Skipped(#[source] NoTimerList),
    /// The trace instance did not start.
    #[error(transparent)]
    Start(#[from] TraceError),
}

fn read_timer_list(root: &HostRoot) -> Result<TimerList, NoTimerList> {
    match root.read("/proc/timer_list") {
        Probe::Ok(t) => Ok(parse_timer_list(&t)?),
        Probe::NotAvailable(why) => Err(NoTimerList::NotAvailable(why)),
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

/// Tasks in state R (running or runnable) now, with the CPU each last ran on: (cpu, comm,
/// tid) from `/proc/PID/task/TID/stat` (field 3 the state, field 39 the CPU).
fn running_tasks(root: &HostRoot) -> Vec<(u32, String, u32)> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir(root.path("/proc")) else {
        return out;
    };
    for p in procs.flatten() {
        if pid_of(&p).is_none() {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            if let Some(t) = parse_task_stat(&stat).filter(|t| t.state == 'R')
                && let Some(cpu) = t.processor
            {
                out.push((cpu, t.comm, t.pid));
            }
        }
    }
    out
}

/// Observes the live host for `opts.window`.
///
/// Long (about 160 lines) on purpose: the trace session, the two `/proc/interrupts` snapshots
/// and the wait form one bracket around the window (the session's Drop removes the instance on
/// every early return), and the sampling fallback is already its own function.
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
    // A `host why` killed by SIGKILL left its instance recording: remove it (and any other
    // whose owner is gone) before observing, with or without tracing.
    crate::probe::tracefs::clean_up_stale_instances();

    let session = if opts.no_trace {
        Err(NoTrace::NotRequested)
    } else {
        match &tl0 {
            Ok(_) => {
                let mut events = EVENTS.to_vec();
                if opts.timeline.is_some() {
                    events.extend(super::chrome_trace::TIMELINE_EVENTS);
                }
                TraceSession::start(&events, 4096, opts.cpus.as_deref()).map_err(NoTrace::from)
            }
            Err(why) => Err(NoTrace::Skipped(why.clone())),
        }
    };

    match session {
        Ok(session) => {
            let tl0 = tl0.expect("checked above");
            let start_ns = monotonic_ns();
            let before = irqs::snapshot(&root).map_err(WhyError::Interrupts)?;
            // One sleep (a signal or Stop::request ends it early): no wake-ups of ours in
            // the window beyond the stop poll.
            let interrupted = stop.sleep(opts.window);
            let after = irqs::snapshot(&root).map_err(WhyError::Interrupts)?;
            let running = running_tasks(&root);
            let end_ns = monotonic_ns();
            session.stop()?;
            let text = session.read_trace()?;
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
            let timeline = opts
                .timeline
                .map(|w| super::chrome_trace::live_timeline(&text, (start, end), &cpus, w));
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
            let nohz_full = nohz_full_cpus(&root);
            let release = crate::probe::inspect::probes::kernel_info(&root)
                .ok()
                .map(|k| k.release.clone());
            // A nohz_full CPU is proof of the build; else the build config, when readable.
            let nohz_full_built = if nohz_full.is_empty() {
                crate::probe::inspect::probes::kconfig(&root, release.as_deref())
                    .ok()
                    .map(|(k, _)| k.is_y("NO_HZ_FULL"))
            } else {
                Some(true)
            };
            // A CPU that recorded no event names no task: /proc says what runs there.
            for c in cpus_why.iter_mut().filter(|c| c.busy_fraction.is_none()) {
                c.running_at_end = running
                    .iter()
                    .filter(|(cpu, _, _)| *cpu == c.cpu)
                    .map(|(_, comm, pid)| (comm.clone(), *pid))
                    .collect();
            }
            let me = std::process::id();
            if cpus_why.iter().any(|c| {
                c.armed_timers.iter().any(|t| t.pid == me) || c.tasks.iter().any(|t| t.pid == me)
            }) {
                missing.push(format!(
                    "PID {me} is this host why (it sleeps through the window in steps of {} ms)",
                    crate::harness::stop::STOP_POLL_NS / 1_000_000
                ));
            }
            let elapsed_s = (end_ns - start_ns) as f64 / 1e9;
            for c in &mut cpus_why {
                let k = super::conclude::KernelTick {
                    nohz_full_built,
                    nohz_full_cpu: nohz_full.contains(&c.cpu),
                    nohz_full_running: !nohz_full.is_empty(),
                };
                c.conclusion = Some(super::conclude::conclude(c, k, elapsed_s));
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
                let observed_full: Vec<String> = cpus
                    .iter()
                    .filter(|c| nohz_full.contains(c))
                    .map(u32::to_string)
                    .collect();
                missing.push(if nohz_full_built == Some(false) {
                    "no failed tick_stop events: this kernel is built without \
                     CONFIG_NO_HZ_FULL, and only a nohz_full CPU reports a failed stop with \
                     its dependency"
                        .into()
                } else if observed_full.is_empty() {
                    "no failed tick_stop events: the kernel reports a failed stop, with its \
                     dependency, only on nohz_full CPUs, and none is observed here"
                        .into()
                } else {
                    format!(
                        "no failed tick_stop events on nohz_full CPU {}: no tick dependency \
                         held their tick in the window",
                        observed_full.join(",")
                    )
                });
            }
            Ok(WhyReport {
                method: std::iter::once(method)
                    .chain(method_notes)
                    .collect::<Vec<_>>()
                    .join("; "),
                missing,
                elapsed_s: (end_ns - start_ns) as f64 / 1e9,
                interrupted,
                workload: None,
                cpus: cpus_why,
                timeline,
            })
        }
        Err(trace_why) => {
            missing.push(trace_why.to_string());
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
    tl0: Result<TimerList, NoTimerList>,
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
        workload: None,
        cpus: cpus_why,
        timeline: None,
    })
}
