//! One sentence per CPU before the evidence: why its tick ran or what stopped it, and which
//! boot-line change would stop it. Pure: from a [`CpuWhy`] and what the kernel is
//! ([`KernelTick`]).
//!
//! The kernel's own reasons come first: a failed `tick_stop` (full dynticks only) names the
//! dependency that kept the tick (`SCHED`: more than one task runnable, `POSIX_TIMER`,
//! `PERF_EVENTS`, `CLOCK_UNSTABLE`, `RCU`, `RCU_EXP`). Without one, the sentence is derived
//! from what was observed: the tasks that ran and their shares, the timekeeping duty (a
//! housekeeping CPU of a full-dynticks system that takes ticks in idle and never stops), the
//! share of the window the tick was stopped, the idle entries, the most frequent timer and
//! the task that armed it, and whether the CPU could have stopped a busy tick at all
//! (`nohz_full`, and the build).

use super::report::{ARMED_BEFORE, Conclusion, CpuWhy, TaskShare};

/// What the kernel allows a CPU's tick to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelTick {
    /// `CONFIG_NO_HZ_FULL` in the build; `None` when the build config is unreadable.
    pub nohz_full_built: Option<bool>,
    /// The CPU is in `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full_cpu: bool,
    /// Some CPU of the system is in `/sys/devices/system/cpu/nohz_full` (full dynticks is
    /// running: the timekeeping CPU then never hands its duty over, nor stops its tick).
    pub nohz_full_running: bool,
}

/// A tick stopped for at least this share of the window is "mostly stopped".
const MOSTLY_STOPPED: f64 = 0.5;

/// A task current for at least this share of the window is one the CPU was busy with; the
/// rest (kworkers, the tracer's own reads) "ran briefly".
const MAIN_TASK_SHARE: f64 = 0.05;

/// The kernel's words for a tick dependency, and what would lift it.
fn dependency(dep: &str) -> (&'static str, &'static str) {
    match dep {
        "SCHED" => (
            "more than one task was runnable (the scheduler needs the tick to share the CPU)",
            "leave one task on the CPU: move the others away (taskset, cpusets)",
        ),
        "POSIX_TIMER" => (
            "a POSIX CPU-time timer is armed (setitimer, timer_create on a CPU clock, RLIMIT_CPU)",
            "disarm the task's CPU-time timer",
        ),
        "PERF_EVENTS" => (
            "a perf event needs the tick to rotate or throttle",
            "stop the perf session (or the NMI watchdog: nmi_watchdog=0)",
        ),
        "CLOCK_UNSTABLE" => (
            "the scheduler clock is unstable",
            "a stable TSC (tsc=reliable only if it is)",
        ),
        "RCU" | "RCU_EXP" => (
            "RCU needs this CPU (callbacks or a grace period in progress)",
            "offload its callbacks: rcu_nocbs=<cpu>",
        ),
        _ => ("a dependency this tool does not know", ""),
    }
}

/// `name[pid] 50 %` for each task the CPU was busy with, and the count of the others.
fn task_words(tasks: &[TaskShare]) -> (Vec<String>, usize) {
    let main: Vec<String> = tasks
        .iter()
        .filter(|t| t.share >= MAIN_TASK_SHARE)
        .map(|t| format!("{}[{}] {:.0} %", t.comm, t.pid, t.share * 100.0))
        .collect();
    let others = tasks.len() - main.len();
    (main, others)
}

/// `busy 99 % with 1 task (hog[12] 99 %; 3 others ran briefly)`, from the task switches.
fn busy_words(c: &CpuWhy) -> Option<(String, usize)> {
    let busy = c.busy_fraction?;
    let (main, others) = task_words(&c.tasks);
    let n = main.len();
    let mut w = format!(
        "busy {:.0} % of the window with {n} task{}",
        busy * 100.0,
        if n == 1 { "" } else { "s" }
    );
    if n > 0 {
        w += &format!(" ({}", main.join(", "));
        if others > 0 {
            w += &format!(
                "; {others} other{} ran briefly",
                if others == 1 { "" } else { "s" }
            );
        }
        w += ")";
    } else if others > 0 {
        w = format!(
            "busy {:.0} % of the window ({others} task{} ran briefly, none {:.0} % of it)",
            busy * 100.0,
            if others == 1 { "" } else { "s" },
            MAIN_TASK_SHARE * 100.0
        );
    }
    Some((w, n))
}

/// `; its most frequent timer: hrtimer_wakeup armed by sh[12], 40 expiries, every 100.0 ms`.
fn timer_words(c: &CpuWhy) -> String {
    match c.armed_timers.first() {
        Some(t) if t.comm != ARMED_BEFORE => format!(
            "; its most frequent timer: {} armed by {}[{}], {} expiries{}",
            t.function,
            t.comm,
            t.pid,
            t.expiries,
            t.median_interval_ms
                .map_or(String::new(), |ms| format!(", every {ms:.1} ms"))
        ),
        Some(t) => format!(
            "; its most frequent timer: {} ({} expiries, armed before the window)",
            t.function, t.expiries
        ),
        None => String::new(),
    }
}

/// The conclusion for one CPU over a window of `elapsed_s` seconds.
///
/// Long (about 130 lines) on purpose: one ordered list of cases, the kernel's own reason
/// first, each with its sentence and the boot-line change; a split would hide the order.
pub fn conclude(c: &CpuWhy, k: KernelTick, elapsed_s: f64) -> Conclusion {
    let cpu = c.cpu;
    let rate = c
        .tick_callbacks
        .map(|n| n as f64 / elapsed_s.max(1e-9))
        .unwrap_or_default();
    let busy = busy_words(c);
    if let Some((dep, n)) = c.stop_failures.first() {
        let (why, lift) = dependency(dep);
        let tasks = match (&busy, dep.as_str()) {
            (Some((w, _)), "SCHED") => format!("; it was {w}"),
            _ => String::new(),
        };
        return Conclusion {
            sentence: format!(
                "CPU {cpu} keeps its tick ({rate:.1}/s) because the kernel refused to stop it {n} times for {dep}: {why}{tasks}"
            ),
            boot_change: None,
            other_change: (!lift.is_empty()).then(|| lift.to_string()),
        };
    }
    let stopped = c.tick_stopped_fraction.or(c.tick_gap_fraction);
    let idle = c.idle_entries.unwrap_or(0);
    let idle_ticks = c.idle_ticks.unwrap_or(0);
    // The timekeeping CPU on a full-dynticks system: a housekeeping CPU that went idle,
    // took ticks in idle and never stopped its tick (the idle path refuses to stop the tick
    // of the CPU holding tick_do_timer_cpu while nohz_full CPUs exist, and records nothing).
    if k.nohz_full_built != Some(false)
        && k.nohz_full_running
        && !k.nohz_full_cpu
        && c.tick_stops == Some(0)
        && idle_ticks > 0
        && stopped.is_none_or(|s| s < MOSTLY_STOPPED)
    {
        let idle_share = c.busy_fraction.map_or(String::new(), |b| {
            format!(" idle {:.0} % of the window,", (1.0 - b) * 100.0)
        });
        return Conclusion {
            sentence: format!(
                "CPU {cpu} keeps its tick ({rate:.1}/s) for the timekeeping duty: it is the \
                 housekeeping CPU that holds tick_do_timer_cpu, which the kernel never lets stop \
                 its tick while nohz_full CPUs run (derived: it was{idle_share} went idle {idle} \
                 times, {idle_ticks} of its ticks came in idle, and it never stopped its tick)"
            ),
            boot_change: Some(
                "none: one housekeeping CPU keeps the tick for timekeeping while any CPU is nohz_full"
                    .to_string(),
            ),
            other_change: None,
        };
    }
    if let Some(s) = stopped.filter(|&s| s >= MOSTLY_STOPPED) {
        let what = if idle > 0 {
            format!("idle ({idle} idle entries)")
        } else if !k.nohz_full_cpu {
            // The trace missed the idle task's events (a guest's cpu_idle, say); the stopped
            // share then comes from the gaps between ticks, which is what the sentence says.
            "idle (no idle entry was traced: the stopped share is the gaps between its ticks)"
                .to_string()
        } else {
            match (&busy, c.running_at_end.as_slice()) {
                (Some((w, 1)), _) => format!("one task ran tickless (nohz_full): {w}"),
                (None, [(comm, pid)]) => format!(
                    "one task ran tickless (nohz_full): {comm}[{pid}], running there at the \
                     end of the window (/proc; the CPU recorded no event in it)"
                ),
                _ => "a single task ran tickless (nohz_full)".to_string(),
            }
        };
        return Conclusion {
            sentence: format!(
                "CPU {cpu}'s tick was stopped {:.0} % of the window: {what}",
                s * 100.0
            ),
            boot_change: None,
            other_change: None,
        };
    }
    let stopped_pct = stopped.map_or(String::new(), |s| {
        format!(", stopped {:.0} % of the window", s * 100.0)
    });
    let mostly_busy = c.busy_fraction.is_none_or(|b| b >= 1.0 - MAIN_TASK_SHARE);
    if idle == 0 && c.tick_stops.unwrap_or(0) == 0 && mostly_busy {
        let n_tasks = busy.as_ref().map_or(1, |(_, n)| *n);
        let sched = n_tasks > 1;
        let (because, boot_change) = match (k.nohz_full_built, k.nohz_full_cpu) {
            (Some(false), _) => (
                "this kernel is built without CONFIG_NO_HZ_FULL, so a CPU running a task keeps its tick".to_string(),
                Some("none on this kernel: nohz_full= needs a kernel built with CONFIG_NO_HZ_FULL".to_string()),
            ),
            (_, false) if sched => (
                format!("it is not a nohz_full CPU; with {n_tasks} tasks sharing it, nohz_full would not stop the tick either (the scheduler needs it)"),
                Some(format!("nohz_full={cpu}, once only one task runs there")),
            ),
            (_, false) => (
                "it is not a nohz_full CPU, so a task running there keeps the tick".to_string(),
                Some(format!("nohz_full={cpu} (with one task on it)")),
            ),
            (_, true) => (
                "the kernel reported no tick dependency: the tick was kept for a reason it does not trace (a timer due within a tick)".to_string(),
                None,
            ),
        };
        let what = match &busy {
            Some((w, _)) if !c.idle_events_missing || c.busy_fraction.is_some_and(|b| b > 0.99) => {
                format!("it was {w}")
            }
            _ if c.idle_events_missing => "the trace holds no idle entry for it (this host does not record the idle task's events)".to_string(),
            _ => "it never went idle".to_string(),
        };
        return Conclusion {
            sentence: format!(
                "CPU {cpu}'s tick ran all window ({rate:.1}/s{stopped_pct}): {what}, and {because}"
            ),
            boot_change,
            other_change: None,
        };
    }
    let busy_part = busy
        .as_ref()
        .map_or(String::new(), |(w, _)| format!("; it was {w}"));
    Conclusion {
        sentence: format!(
            "CPU {cpu}'s tick ran most of the window ({rate:.1}/s{stopped_pct}) though it went idle {idle} times \
             ({idle_ticks} ticks came in idle): the idle periods were short, or a timer was due within the next tick{busy_part}{}",
            timer_words(c)
        ),
        boot_change: None,
        other_change: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(stops: u64, idles: u64, stopped: f64, failures: &[(&str, u64)]) -> CpuWhy {
        CpuWhy {
            cpu: 1,
            tick_callbacks: Some(1000),
            tick_stops: Some(stops),
            idle_entries: Some(idles),
            tick_stopped_fraction: Some(stopped),
            stop_failures: failures.iter().map(|(d, n)| (d.to_string(), *n)).collect(),
            ..CpuWhy::default()
        }
    }

    #[test]
    // Over 100 lines because it is one table: a row per case of the conclusion, kernel and evidence
    // beside the sentence expected.
    fn conclusions_table() {
        let idle_kernel = KernelTick {
            nohz_full_built: Some(false),
            nohz_full_cpu: false,
            nohz_full_running: false,
        };
        let full = KernelTick {
            nohz_full_built: Some(true),
            nohz_full_cpu: true,
            nohz_full_running: true,
        };
        let full_built_not_cpu = KernelTick {
            nohz_full_built: Some(true),
            nohz_full_cpu: false,
            nohz_full_running: false,
        };
        let housekeeping = KernelTick {
            nohz_full_running: true,
            ..full_built_not_cpu
        };
        let task = |comm: &str, pid, share| TaskShare {
            comm: comm.into(),
            pid,
            share,
            switches_in: 1,
        };
        let busy = |tasks: Vec<TaskShare>| CpuWhy {
            busy_fraction: Some(tasks.iter().map(|t| t.share).sum()),
            tasks,
            ..cpu(0, 0, 0.0, &[])
        };
        // (cpu, kernel, sentence contains, boot change contains)
        let cases: Vec<(CpuWhy, KernelTick, &str, Option<&str>)> = vec![
            (
                cpu(0, 0, 0.0, &[]),
                idle_kernel,
                "built without CONFIG_NO_HZ_FULL",
                Some("none on this kernel"),
            ),
            (
                cpu(0, 0, 0.0, &[]),
                full_built_not_cpu,
                "not a nohz_full CPU",
                Some("nohz_full=1"),
            ),
            (
                cpu(0, 0, 0.0, &[("SCHED", 40)]),
                full,
                "refused to stop it 40 times for SCHED: more than one task",
                None,
            ),
            (
                cpu(300, 300, 0.9, &[]),
                idle_kernel,
                "stopped 90 % of the window: idle (300 idle entries)",
                None,
            ),
            (
                cpu(0, 0, 0.98, &[]),
                idle_kernel,
                "stopped 98 % of the window: idle (no idle entry was traced",
                None,
            ),
            (
                cpu(1, 0, 0.99, &[]),
                full,
                "a single task ran tickless",
                None,
            ),
            (
                CpuWhy {
                    idle_events_missing: true,
                    tick_stopped_fraction: None,
                    tick_gap_fraction: Some(0.01),
                    ..cpu(0, 0, 0.0, &[])
                },
                idle_kernel,
                "holds no idle entry for it",
                Some("none on this kernel"),
            ),
            (
                cpu(5, 50, 0.1, &[]),
                idle_kernel,
                "went idle 50 times",
                None,
            ),
            // Busy with one task, and with two: names and shares.
            (
                busy(vec![task("hog", 7, 0.99), task("kworker/1:1", 9, 0.001)]),
                idle_kernel,
                "busy 99 % of the window with 1 task (hog[7] 99 %; 1 other ran briefly)",
                Some("none on this kernel"),
            ),
            (
                busy(vec![task("a", 7, 0.5), task("b", 8, 0.5)]),
                full_built_not_cpu,
                "with 2 tasks sharing it, nohz_full would not stop the tick either",
                Some("once only one task runs there"),
            ),
            (
                CpuWhy {
                    busy_fraction: Some(1.0),
                    tasks: vec![task("a", 7, 0.5), task("b", 8, 0.5)],
                    ..cpu(0, 0, 0.0, &[("SCHED", 40)])
                },
                full,
                "for SCHED: more than one task was runnable (the scheduler needs the tick to share the CPU); it was busy 100 % of the window with 2 tasks (a[7] 50 %, b[8] 50 %)",
                None,
            ),
            // The timekeeper: housekeeping, idle, ticks in idle, never stopped.
            (
                CpuWhy {
                    idle_ticks: Some(900),
                    busy_fraction: Some(0.02),
                    ..cpu(0, 200, 0.0, &[])
                },
                housekeeping,
                "for the timekeeping duty",
                Some("none: one housekeeping CPU keeps the tick"),
            ),
            // The same CPU on a kernel without nohz_full CPUs: no timekeeping claim.
            (
                CpuWhy {
                    idle_ticks: Some(900),
                    ..cpu(0, 200, 0.0, &[])
                },
                full_built_not_cpu,
                "went idle 200 times (900 ticks came in idle)",
                None,
            ),
            // A nohz_full CPU that recorded nothing: the task from /proc.
            (
                CpuWhy {
                    running_at_end: vec![("hog".into(), 7)],
                    tick_stopped_fraction: Some(1.0),
                    ..cpu(0, 0, 1.0, &[])
                },
                full,
                "one task ran tickless (nohz_full): hog[7], running there at the end",
                None,
            ),
            (
                busy(vec![task("a", 7, 0.01), task("b", 8, 0.02)]),
                full_built_not_cpu,
                "busy 3 % of the window (2 tasks ran briefly, none 5 % of it)",
                None,
            ),
            // One task tickless on a nohz_full CPU, named.
            (
                CpuWhy {
                    tick_stopped_fraction: Some(0.99),
                    tick_stops: Some(1),
                    ..busy(vec![task("hog", 7, 1.0)])
                },
                full,
                "one task ran tickless (nohz_full): busy 100 % of the window with 1 task (hog[7] 100 %)",
                None,
            ),
        ];
        for (i, (c, k, want, boot)) in cases.into_iter().enumerate() {
            let got = conclude(&c, k, 4.0);
            assert!(got.sentence.contains(want), "case {i}: {}", got.sentence);
            assert_eq!(
                got.boot_change.is_some(),
                boot.is_some(),
                "case {i}: {got:?}"
            );
            if let (Some(b), Some(w)) = (&got.boot_change, boot) {
                assert!(b.contains(w), "case {i}: {b}");
            }
        }
    }
}
