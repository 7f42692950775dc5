//! One sentence per CPU before the evidence: why its tick ran or what stopped it, and which
//! boot-line change would stop it. Pure: from a [`CpuWhy`] and what the kernel is
//! ([`KernelTick`]).
//!
//! The kernel's own reasons come first: a failed `tick_stop` (full dynticks only) names the
//! dependency that kept the tick (`SCHED`: more than one task runnable, `POSIX_TIMER`,
//! `PERF_EVENTS`, `CLOCK_UNSTABLE`, `RCU`, `RCU_EXP`). Without one, the sentence is derived
//! from what was observed: the share of the window the tick was stopped, the idle entries,
//! and whether the CPU could have stopped a busy tick at all (`nohz_full`, and the build).

use super::report::{Conclusion, CpuWhy};

/// What the kernel allows a CPU's tick to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelTick {
    /// `CONFIG_NO_HZ_FULL` in the build; `None` when the build config is unreadable.
    pub nohz_full_built: Option<bool>,
    /// The CPU is in `/sys/devices/system/cpu/nohz_full`.
    pub nohz_full_cpu: bool,
}

/// A tick stopped for at least this share of the window is "mostly stopped".
const MOSTLY_STOPPED: f64 = 0.5;

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

/// The conclusion for one CPU over a window of `elapsed_s` seconds.
pub fn conclude(c: &CpuWhy, k: KernelTick, elapsed_s: f64) -> Conclusion {
    let cpu = c.cpu;
    let rate = c
        .tick_callbacks
        .map(|n| n as f64 / elapsed_s.max(1e-9))
        .unwrap_or_default();
    if let Some((dep, n)) = c.stop_failures.first() {
        let (why, lift) = dependency(dep);
        return Conclusion {
            sentence: format!(
                "CPU {cpu} keeps its tick ({rate:.1}/s) because the kernel refused to stop it {n} times for {dep}: {why}"
            ),
            boot_change: None,
            other_change: (!lift.is_empty()).then(|| lift.to_string()),
        };
    }
    let stopped = c.tick_stopped_fraction.or(c.tick_gap_fraction);
    let idle = c.idle_entries.unwrap_or(0);
    if let Some(s) = stopped.filter(|&s| s >= MOSTLY_STOPPED) {
        let what = if idle > 0 || !k.nohz_full_cpu {
            format!("idle ({idle} idle entries)")
        } else {
            "a single task ran tickless (nohz_full)".to_string()
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
    if idle == 0 && c.tick_stops.unwrap_or(0) == 0 {
        // Busy all window.
        let (because, boot_change) = match (k.nohz_full_built, k.nohz_full_cpu) {
            (Some(false), _) => (
                "this kernel is built without CONFIG_NO_HZ_FULL, so a CPU running a task keeps its tick".to_string(),
                Some("none on this kernel: nohz_full= needs a kernel built with CONFIG_NO_HZ_FULL".to_string()),
            ),
            (_, false) => (
                "it is not a nohz_full CPU, so a task running there keeps the tick".to_string(),
                Some(format!("nohz_full={cpu} (with one task on it)")),
            ),
            (_, true) => (
                "the kernel reported no tick dependency: the tick was kept for a reason it does not trace (the timekeeping duty, or a timer due within a tick)".to_string(),
                None,
            ),
        };
        let idle_words = if c.idle_events_missing {
            "the trace holds no idle entry for it (this host does not record the idle task's events)"
        } else {
            "it never went idle"
        };
        return Conclusion {
            sentence: format!(
                "CPU {cpu}'s tick ran all window ({rate:.1}/s{stopped_pct}): {idle_words}, and {because}"
            ),
            boot_change,
            other_change: None,
        };
    }
    Conclusion {
        sentence: format!(
            "CPU {cpu}'s tick ran most of the window ({rate:.1}/s{stopped_pct}) though it went idle {idle} times: \
             the idle periods were short, or a timer was due within the next tick"
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
    fn conclusions_table() {
        let idle_kernel = KernelTick {
            nohz_full_built: Some(false),
            nohz_full_cpu: false,
        };
        let full = KernelTick {
            nohz_full_built: Some(true),
            nohz_full_cpu: true,
        };
        let full_built_not_cpu = KernelTick {
            nohz_full_built: Some(true),
            nohz_full_cpu: false,
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
