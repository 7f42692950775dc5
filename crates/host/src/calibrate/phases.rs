//! The measurement phases of `host calibrate`, each a fixed share of the budget.
//!
//! # Phases (share of the budget)
//!
//! 1. **inspect** (fixed ~0.3 s): HZ, command line, kernel version, cpuidle driver and states,
//!    nohz_full list, via [`crate::probe::inspect`].
//! 2. **idle** (31 %): the calling thread sleeps in one piece (no polling) between two
//!    `/proc/interrupts` + `/proc/stat` snapshots: per-CPU LOC/s and busy fraction.
//! 3. **one hog** (18 %): `hogs:1@H` on the last CPU through the harness: LOC/s of a CPU
//!    whose tick cannot stop, and of the others while one CPU is busy.
//! 4. **syscall** (6 %): `syscall:getpid@0`, capped by the phase time.
//! 5. **ping-pong** (7 % each): `pingpong:pipe@0,0` (same CPU) and, with two CPUs or more,
//!    `pingpong:pipe@0,1` (cross-CPU), processes as in `perf bench sched pipe`.
//! 6. **frames** (12 %): `frames:1000@0:loop=0`: wake-up latency of a timer sleep.
//! 7. **frames beside a hog** (6 %): `hogs:1@H+frames:1000@H:loop=0`: the same worker
//!    (SCHED_FIFO) waking on the hog's CPU, which never idles: wake-up latency without the
//!    cost of leaving an idle state ([`super::wakeup_fit`] sets the two apart).
//! 8. **micro-benchmarks** (1 % + 2 %): vDSO clock reads pinned on CPU 0, then a cache line
//!    bounced between two CPUs of one package (and of two packages, where there are two):
//!    [`super::micro`].
//! 9. **tracepoints** (10 %, half each): `hogs:1@H` then `frames:1000@H:loop=0` under a tracefs
//!    instance, root only ([`super::timer_tracepoints`]).
//!
//! Harness warnings are kept in the [`Measurements`] (phase-prefixed), except the energy ones
//! (no RAPL counter, what the package idle fraction means): calibration measures no energy;
//! and the note that a counted phase (syscall, ping-pong) ended before its time cap, which is
//! how those phases are meant to end.

use std::time::Duration;

use ticklab_schema::report::WorkloadResult;
use ticklab_schema::workload::Workload;

use super::{CalibrateError, Measurements, loc_per_s};
use crate::harness::report::WarningTopic;
use crate::harness::sample::{Snapshot, cpu_times, ns_per_user_tick};
use crate::harness::{self, HarnessError, RunConfig, Stop};
use crate::probe::inspect::{InspectOptions, inspect};
use crate::procfs::interrupts::IrqKind;

/// The frames phase: the 1 kHz frame worker waking on an idle CPU.
pub(crate) const IDLE_FRAMES: &str = "frames:1000@0:loop=0";

/// The frames-beside-a-hog phase: the 1 kHz frame worker (SCHED_FIFO) waking on the hog's CPU
/// `h`, which a SCHED_OTHER hog keeps busy.
pub(crate) fn busy_frames_spec(h: u32) -> String {
    format!("hogs:1@{h}+frames:1000@{h}:loop=0")
}

/// Shares of the budget per phase: idle, hog, syscall, each ping-pong, frames, tracepoints,
/// frames beside a hog. With [`MICRO_SHARES`] they add up to the whole budget.
const SHARES: [f64; 7] = [0.31, 0.18, 0.06, 0.07, 0.12, 0.10, 0.06];
/// Shares of the micro-benchmarks ([`super::micro`]): clock reads, cache-line bounces. Short:
/// both are tight loops timed in batches of well under a millisecond, so even a 5 s budget
/// gives them hundreds of batches.
const MICRO_SHARES: [f64; 2] = [0.01, 0.02];

/// Busy fraction above which a CPU of the idle phase ran other work (a warning; and the
/// background-task figure leaves the CPU out, [`super::micro`]).
pub(super) const OTHER_WORK_BUSY: f64 = 0.05;

/// Runs every measurement phase within `budget`, reporting progress lines to `progress`.
pub fn measure(
    budget: Duration,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> Result<Measurements, CalibrateError> {
    if budget < Duration::from_secs(5) {
        return Err(CalibrateError::Input(format!(
            "duration {:.1} s: calibration needs at least 5s",
            budget.as_secs_f64()
        )));
    }
    if !cfg!(target_os = "linux") {
        return Err(CalibrateError::Unsupported("not Linux".into()));
    }
    let phase = |share: f64| budget.mul_f64(share);
    progress("inspect: HZ, command line, cpuidle");
    let HostFacts {
        hz,
        release,
        cmdline,
        cpuidle_driver,
        idle_states,
        nohz_full,
        nr_cpus,
        hostname: _,
    } = host_facts()?;
    let mut warnings = Vec::new();

    // Idle: one uninterrupted sleep between two snapshots.
    let idle_d = phase(SHARES[0]);
    progress(&format!("idle: {:.1} s", idle_d.as_secs_f64()));
    let a = Snapshot::take();
    if a.interrupts
        .as_ref()
        .and_then(|i| i.row_of(IrqKind::LocalTimer))
        .is_none()
    {
        return Err(CalibrateError::Unsupported(
            "/proc/interrupts has no local timer (LOC) row".into(),
        ));
    }
    sleep_checking(idle_d, stop)?;
    let b = Snapshot::take();
    let idle_s = b.at_ns.saturating_sub(a.at_ns) as f64 / 1e9;
    let idle_loc = loc_between(&a, &b, nr_cpus, idle_s);
    let idle_busy = match (&a.stat, &b.stat) {
        (Some(s), Some(e)) => {
            let t = cpu_times(s, e, ns_per_user_tick());
            (0..nr_cpus)
                .map(|c| {
                    t.get(&c)
                        .map_or(0.0, |t| (t.busy_ns as f64 / 1e9 / idle_s).min(1.0))
                })
                .collect()
        }
        _ => vec![0.0; nr_cpus as usize],
    };
    for (c, b) in idle_busy.iter().enumerate() {
        if *b > OTHER_WORK_BUSY {
            warnings.push(format!(
                "idle: CPU {c} was {:.0} % busy with other work; its tick share is subtracted but its wake-ups are not",
                b * 100.0
            ));
        }
    }

    let run = |spec: String, d: Duration, what: &str, warnings: &mut Vec<String>| {
        let w = Workload::parse(&spec, nr_cpus)
            .map_err(|e| CalibrateError::Input(format!("{spec}: {e}")))?;
        let config = RunConfig {
            duration: d,
            ..RunConfig::default()
        };
        let (r, run_warnings) =
            harness::run::run_with_warnings(&w, &config, stop).map_err(|e| harness_err(what, e))?;
        if stop.is_set() {
            return Err(CalibrateError::Interrupted);
        }
        warnings.extend(
            run_warnings
                .iter()
                .filter(|w| !matches!(w.topic, WarningTopic::Energy | WarningTopic::CountsDone))
                .map(|w| format!("{what}: {}", w.text)),
        );
        Ok(r)
    };

    let hog_cpu = nr_cpus - 1;
    let hog_d = phase(SHARES[1]);
    progress(&format!(
        "one hog on CPU {hog_cpu}: {:.1} s",
        hog_d.as_secs_f64()
    ));
    let hog = run(format!("hogs:1@{hog_cpu}"), hog_d, "hog", &mut warnings)?;
    let hog_loc = loc_per_s(&hog.report);

    let sys_d = phase(SHARES[2]);
    progress(&format!("syscall getpid: {:.1} s", sys_d.as_secs_f64()));
    let sys = run(
        "syscall:getpid@0:n=1000000000".into(),
        sys_d,
        "syscall",
        &mut warnings,
    )?;
    let syscall_ns = sys
        .report
        .workloads
        .iter()
        .find_map(|w| match w {
            WorkloadResult::Syscall(s) if s.calls > 0 => Some(s.ns_per_call),
            _ => None,
        })
        .ok_or_else(|| CalibrateError::Unsupported("syscall phase made no calls".into()))?;

    let pp_d = phase(SHARES[3]);
    let round_trip = |a: u32, b: u32, warnings: &mut Vec<String>| {
        let r = run(
            format!("pingpong:pipe@{a},{b}:n=100000000"),
            pp_d,
            &format!("pingpong {a},{b}"),
            warnings,
        )?;
        r.report
            .workloads
            .iter()
            .find_map(|w| match w {
                WorkloadResult::PingPong(p) if p.round_trips > 0 => Some(p.ns_per_round_trip),
                _ => None,
            })
            .ok_or_else(|| {
                CalibrateError::Unsupported(format!("ping-pong {a},{b} made no round trips"))
            })
    };
    progress(&format!(
        "pipe ping-pong on CPU 0: {:.1} s",
        pp_d.as_secs_f64()
    ));
    let same_cpu_rt_ns = round_trip(0, 0, &mut warnings)?;
    let cross_cpu_rt_ns = if nr_cpus >= 2 {
        progress(&format!(
            "pipe ping-pong CPUs 0,1: {:.1} s",
            pp_d.as_secs_f64()
        ));
        Some(round_trip(0, 1, &mut warnings)?)
    } else {
        None
    };

    let fr_d = phase(SHARES[4]);
    progress(&format!(
        "frames 1 kHz on CPU 0 (wake-up latency): {:.1} s",
        fr_d.as_secs_f64()
    ));
    let fr = run(IDLE_FRAMES.into(), fr_d, "frames", &mut warnings)?;
    let wakeup = first_wakeup(&fr);
    let work_unit_ns = measured_work_unit_ns(&fr);
    let micro = super::micro::measure(
        nr_cpus,
        phase(MICRO_SHARES[0]),
        phase(MICRO_SHARES[1]),
        stop,
        progress,
    )?;

    let kernel_trace = super::timer_tracepoints::measure(
        hog_cpu,
        phase(SHARES[5]) / 2,
        &run,
        progress,
        &mut warnings,
        stop,
    )?;

    let busy_d = phase(SHARES[6]);
    progress(&format!(
        "frames 1 kHz beside a hog on CPU {hog_cpu} (wake-up latency, busy CPU): {:.1} s",
        busy_d.as_secs_f64()
    ));
    let busy = run(
        busy_frames_spec(hog_cpu),
        busy_d,
        "frames beside a hog",
        &mut warnings,
    )?;
    let busy_wakeup = first_wakeup(&busy);

    let (hostname, _) = harness::os::uname();
    Ok(Measurements {
        hostname,
        release,
        hz,
        cmdline,
        cpuidle_driver,
        idle_states,
        nohz_full,
        nr_cpus,
        idle_s,
        idle_loc,
        idle_busy,
        hog_cpu,
        hog_loc,
        syscall_ns,
        same_cpu_rt_ns,
        cross_cpu_rt_ns,
        wakeup,
        busy_wakeup,
        work_unit_ns,
        kernel_trace,
        warnings,
        micro,
    })
}

/// The wake-up latency of a run's first frame group, `None` without samples.
fn first_wakeup(r: &crate::harness::HostRun) -> Option<crate::harness::LatencySummary> {
    r.host_run
        .frame_groups
        .first()
        .map(|g| g.wakeup)
        .filter(|w| w.samples > 0)
}

/// The frame worker's calibrated cost of one work unit (ns): the minimum over batches the
/// worker timed before its frames ([`crate::harness::work`]), the figure the twin's
/// `work_unit_ns` stands for. `None` when no worker reported one.
fn measured_work_unit_ns(fr: &crate::harness::HostRun) -> Option<f64> {
    fr.host_run
        .frame_groups
        .iter()
        .flat_map(|g| &g.workers)
        .map(|w| w.ns_per_unit)
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .min_by(f64::total_cmp)
}

/// What `host inspect` and the harness tell about this host without measuring anything: the
/// part of [`Measurements`] a twin of the host needs before any cost is fitted.
#[derive(Debug, Clone, PartialEq)]
pub struct HostFacts {
    /// HZ inferred by `inspect`.
    pub hz: u32,
    /// Kernel release.
    pub release: String,
    /// The kernel's part of `/proc/cmdline` (init's arguments after `--` removed).
    pub cmdline: String,
    /// cpuidle `current_driver` (`none` without one).
    pub cpuidle_driver: String,
    /// Idle states of CPU 0: (name, exit latency µs, target residency µs, polling).
    pub idle_states: Vec<(String, u64, u64, bool)>,
    /// Whether the kernel lists nohz_full CPUs.
    pub nohz_full: bool,
    /// CPUs 0..n, all placeable.
    pub nr_cpus: u32,
    /// `uname -n`.
    pub hostname: String,
}

/// Reads the [`HostFacts`] (about 0.3 s: `inspect` samples the tick to infer HZ).
pub fn host_facts() -> Result<HostFacts, CalibrateError> {
    let ins = inspect(&InspectOptions::live());
    let hz = ins
        .hz
        .hz
        .ok_or_else(|| CalibrateError::Unsupported(format!("HZ unknown: {}", ins.hz.basis)))?;
    let release = ins
        .kernel
        .ok()
        .map(|k| k.release.clone())
        .unwrap_or_default();
    // Only the kernel's part: what follows `--` is init's and would mean nothing to the twin.
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map(|s| {
            ticklab_cmdline::KernelCmdline::split_init_args(&s)
                .0
                .to_string()
        })
        .unwrap_or_default();
    let (cpuidle_driver, idle_states) = match ins.cpuidle.ok() {
        Some(ci) => (
            ci.driver.clone().unwrap_or_else(|| "none".into()),
            ci.cpus
                .first()
                .map(|c| {
                    c.states
                        .iter()
                        .map(|s| {
                            let name = s.name.clone().unwrap_or_default();
                            let polling = name == "POLL";
                            (
                                name,
                                s.latency_us.unwrap_or(0),
                                s.residency_us.unwrap_or(0),
                                polling,
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        None => ("none".into(), Vec::new()),
    };
    let nohz_full = ins
        .nohz_full_sysfs
        .ok()
        .is_some_and(|s| !s.trim().is_empty() && s.trim() != "(null)");
    let usable = harness::validate(&Workload::default(), &RunConfig::default())
        .map_err(|e| harness_err("usable CPUs", e))?;
    let nr_cpus = usable.iter().max().map_or(0, |m| m + 1);
    if usable.len() as u32 != nr_cpus {
        return Err(CalibrateError::Unsupported(format!(
            "CPUs 0..{nr_cpus} are not all placeable: online and in this process's cpuset (placeable: {usable:?})"
        )));
    }
    Ok(HostFacts {
        hz,
        release,
        cmdline,
        cpuidle_driver,
        idle_states,
        nohz_full,
        nr_cpus,
        hostname: harness::os::uname().0,
    })
}

fn harness_err(phase: &str, source: HarnessError) -> CalibrateError {
    CalibrateError::Harness {
        phase: phase.to_string(),
        source,
    }
}

fn sleep_checking(d: Duration, stop: &Stop) -> Result<(), CalibrateError> {
    let end = harness::os::now_ns() + d.as_nanos() as u64;
    // One sleep (a timer of our own would be a wake-up we measure); a signal cuts it short.
    while harness::os::now_ns() < end {
        if stop.is_set() {
            return Err(CalibrateError::Interrupted);
        }
        harness::os::sleep_until(end);
    }
    if stop.is_set() {
        return Err(CalibrateError::Interrupted);
    }
    Ok(())
}

fn loc_between(a: &Snapshot, b: &Snapshot, nr: u32, secs: f64) -> Vec<f64> {
    let count = |s: &Snapshot, c: u32| {
        s.interrupts
            .as_ref()
            .and_then(|i| i.count(i.row_of(IrqKind::LocalTimer)?, c))
    };
    (0..nr)
        .map(|c| match (count(a, c), count(b, c)) {
            (Some(x), Some(y)) => y.saturating_sub(x) as f64 / secs,
            _ => 0.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_phases_fit_in_the_budget() {
        // The ping-pong share is spent twice (same CPU, cross CPU); inspect's 0.3 s is extra.
        let total: f64 = super::SHARES.iter().sum::<f64>()
            + super::SHARES[3]
            + super::MICRO_SHARES.iter().sum::<f64>();
        assert!(total <= 1.0 + 1e-9, "phase shares add up to {total}");
    }
}
