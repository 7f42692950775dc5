//! The measurement phases of `host calibrate` that need no evidence module of their own
//! (inspect, idle, one hog, syscall, ping-pong), and the harness runner every phase uses.
//! [`super::measure`] runs them in this order, each a fixed share of the budget
//! ([`super::specs::SHARES`]), with the other modules' phases between them.
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
//! 6. **frames** (12 %): `frames:1000@0:loop=0`: wake-up latency of a timer sleep
//!    ([`super::wakeup_fit::measure_idle`]).
//! 7. **frames beside a hog** (6 %): `hogs:1@H+frames:1000@H:loop=0`: the same worker
//!    (SCHED_FIFO) waking on the hog's CPU, which never idles: wake-up latency without the
//!    cost of leaving an idle state ([`super::wakeup_fit::measure_busy`]; its fit sets the two
//!    apart).
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

use ticklab_schema::report::{Contamination, WorkloadResult};
use ticklab_schema::workload::Workload;

use super::error::{CalibrateError, Contaminant};
use super::measurements::HostFacts;
use super::specs::{OTHER_WORK_BUSY, loc_per_s};
use crate::harness::report::WarningTopic;
use crate::harness::sample::{Snapshot, cpu_times, ns_per_user_tick};
use crate::harness::{self, HostRun, RunConfig, Stop};
use crate::probe::inspect::{InspectOptions, inspect};
use crate::procfs::interrupts::IrqKind;

/// Refuses a budget under 5 s and a host that is not Linux, before anything runs.
pub(crate) fn check_budget(budget: Duration) -> Result<(), CalibrateError> {
    if budget < Duration::from_secs(5) {
        return Err(CalibrateError::Input(format!(
            "duration {:.1} s: calibration needs at least 5s",
            budget.as_secs_f64()
        )));
    }
    if !cfg!(target_os = "linux") {
        return Err(CalibrateError::Unsupported("not Linux".into()));
    }
    Ok(())
}

/// What the idle phase measured.
pub(crate) struct Idle {
    /// The window, s.
    pub(crate) idle_s: f64,
    /// LOC/s per CPU.
    pub(crate) idle_loc: Vec<f64>,
    /// Busy fraction per CPU (other processes).
    pub(crate) idle_busy: Vec<f64>,
}

/// The phases' harness runner on CPUs `0..nr_cpus`: runs a workload spec for a phase's time
/// and keeps the harness's warnings, phase-prefixed (module docs).
pub(crate) struct Phases<'a> {
    nr_cpus: u32,
    stop: &'a Stop,
    /// The phases whose runs other load contaminated, in the order seen.
    contaminated: std::cell::RefCell<Vec<super::error::ContaminatedPhase>>,
}

impl<'a> Phases<'a> {
    /// A runner on CPUs `0..nr_cpus`, ended by `stop`.
    pub(crate) fn new(nr_cpus: u32, stop: &'a Stop) -> Phases<'a> {
        Phases {
            nr_cpus,
            stop,
            contaminated: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The contaminated phases seen so far, handed over once.
    pub(crate) fn take_contaminated(&self) -> Vec<super::error::ContaminatedPhase> {
        self.contaminated.take()
    }

    fn contaminated_phase(&self, phase: &str, by: Contaminant, why: String) {
        self.contaminated
            .borrow_mut()
            .push(super::error::ContaminatedPhase {
                phase: phase.to_string(),
                by,
                why,
            });
    }

    /// Runs `spec` for `d` as phase `what`, its warnings added to `warnings`.
    pub(crate) fn run(
        &self,
        spec: String,
        d: Duration,
        what: &str,
        warnings: &mut Vec<String>,
    ) -> Result<HostRun, CalibrateError> {
        let w = Workload::parse(&spec, self.nr_cpus)
            .map_err(|e| CalibrateError::Input(format!("{spec}: {e}")))?;
        let config = RunConfig {
            duration: d,
            ..RunConfig::default()
        };
        let (r, run_warnings) = harness::run::run_with_warnings(&w, &config, self.stop)
            .map_err(|e| CalibrateError::harness(what, e))?;
        if self.stop.is_set() {
            return Err(CalibrateError::Interrupted);
        }
        warnings.extend(
            run_warnings
                .iter()
                .filter(|w| !matches!(w.topic, WarningTopic::Energy | WarningTopic::CountsDone))
                .map(|w| format!("{what}: {}", w.text)),
        );
        for c in &r.report.contamination {
            let by = match c {
                Contamination::OtherLoad { .. } => Contaminant::OtherLoad,
                Contamination::Steal { .. } => Contaminant::Steal,
            };
            self.contaminated_phase(what, by, c.text());
        }
        Ok(r)
    }

    /// The idle phase: one uninterrupted sleep of `d` between two snapshots.
    pub(crate) fn idle(
        &self,
        d: Duration,
        progress: &mut dyn FnMut(&str),
        warnings: &mut Vec<String>,
    ) -> Result<Idle, CalibrateError> {
        let nr_cpus = self.nr_cpus;
        progress(&format!("idle: {:.1} s", d.as_secs_f64()));
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
        sleep_checking(d, self.stop)?;
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
                self.contaminated_phase(
                    "idle",
                    Contaminant::OtherLoad,
                    format!(
                        "CPU {c} was {:.1} % busy where an idle host is at most {:.0} %",
                        b * 100.0,
                        OTHER_WORK_BUSY * 100.0
                    ),
                );
            }
        }
        Ok(Idle {
            idle_s,
            idle_loc,
            idle_busy,
        })
    }

    /// The one-hog phase on `hog_cpu` for `d`: LOC/s per CPU.
    pub(crate) fn hog(
        &self,
        hog_cpu: u32,
        d: Duration,
        progress: &mut dyn FnMut(&str),
        warnings: &mut Vec<String>,
    ) -> Result<Vec<f64>, CalibrateError> {
        progress(&format!(
            "one hog on CPU {hog_cpu}: {:.1} s",
            d.as_secs_f64()
        ));
        let hog = self.run(format!("hogs:1@{hog_cpu}"), d, "hog", warnings)?;
        Ok(loc_per_s(&hog.report))
    }

    /// The syscall phase for `d`: getpid ns/call.
    pub(crate) fn syscall(
        &self,
        d: Duration,
        progress: &mut dyn FnMut(&str),
        warnings: &mut Vec<String>,
    ) -> Result<f64, CalibrateError> {
        progress(&format!("syscall getpid: {:.1} s", d.as_secs_f64()));
        let sys = self.run(
            "syscall:getpid@0:n=1000000000".into(),
            d,
            "syscall",
            warnings,
        )?;
        sys.report
            .workloads
            .iter()
            .find_map(|w| match w {
                WorkloadResult::Syscall(s) if s.calls > 0 => Some(s.ns_per_call),
                _ => None,
            })
            .ok_or_else(|| CalibrateError::Unsupported("syscall phase made no calls".into()))
    }

    /// The pipe ping-pongs, `d` each: the same-CPU round trip, ns, and with two CPUs or more
    /// the cross-CPU one.
    pub(crate) fn round_trips(
        &self,
        d: Duration,
        progress: &mut dyn FnMut(&str),
        warnings: &mut Vec<String>,
    ) -> Result<(f64, Option<f64>), CalibrateError> {
        progress(&format!(
            "pipe ping-pong on CPU 0: {:.1} s",
            d.as_secs_f64()
        ));
        let same_cpu_rt_ns = self.round_trip(0, 0, d, warnings)?;
        let cross_cpu_rt_ns = if self.nr_cpus >= 2 {
            progress(&format!(
                "pipe ping-pong CPUs 0,1: {:.1} s",
                d.as_secs_f64()
            ));
            Some(self.round_trip(0, 1, d, warnings)?)
        } else {
            None
        };
        Ok((same_cpu_rt_ns, cross_cpu_rt_ns))
    }

    /// One pipe ping-pong between CPUs `a` and `b` for `d`: ns per round trip.
    fn round_trip(
        &self,
        a: u32,
        b: u32,
        d: Duration,
        warnings: &mut Vec<String>,
    ) -> Result<f64, CalibrateError> {
        let r = self.run(
            format!("pingpong:pipe@{a},{b}:n=100000000"),
            d,
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
    }
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
        .map_err(|e| CalibrateError::harness("usable CPUs", e))?;
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
    use super::*;

    #[test]
    fn a_budget_under_five_seconds_is_refused() {
        assert!(matches!(
            check_budget(Duration::from_secs(4)),
            Err(CalibrateError::Input(_))
        ));
    }
}
