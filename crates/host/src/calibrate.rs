//! `host calibrate`: a bounded measurement of this host, fitted into a twin scenario.
//!
//! [`measure`] runs the phases below inside one time budget (60 s by default; every phase gets
//! a fixed share of it, so a 20 s budget runs the same phases shorter). [`fit`] turns the
//! [`Measurements`] into a [`Scenario`] that `ticklab sim --scenario FILE` loads, and
//! [`Calibration::file_text`] writes it with a comment header holding what the scenario has
//! no field for (wake-up latency, raw round trips, the fit log).
//!
//! # Phases (share of the budget)
//!
//! 1. **inspect** (fixed ~0.3 s): HZ, command line, kernel version, cpuidle driver and states,
//!    nohz_full list, via [`crate::probe::inspect`].
//! 2. **idle** (40 %): the calling thread sleeps in one piece (no polling) between two
//!    `/proc/interrupts` + `/proc/stat` snapshots: per-CPU LOC/s and busy fraction.
//! 3. **one hog** (20 %): `hogs:1@H` on the last CPU through the harness: LOC/s of a CPU
//!    whose tick cannot stop, and of the others while one CPU is busy.
//! 4. **syscall** (8 %): `syscall:getpid@0`, capped by the phase time.
//! 5. **ping-pong** (8 % each): `pingpong:pipe@0,0` (same CPU) and, with two CPUs or more,
//!    `pingpong:pipe@0,1` (cross-CPU), processes as in `perf bench sched pipe`.
//! 6. **frames** (12 %): `frames:1000@0:loop=0`: wake-up latency of a timer sleep.
//!
//! # Fits
//!
//! * `syscall_ns` = getpid ns/call.
//! * `context_switch_ns` = same-CPU pipe round trip / 2 − 2 × `syscall_ns`: one round trip is
//!   two switches, and each half does one `write` and one `read`, taken as null syscalls.
//! * `ipi_ns` = cross-CPU round trip / 2 − 2 × `syscall_ns` − `context_switch_ns`: what the
//!   wake-up of a task on another CPU (reschedule IPI, the target leaving idle) adds over a
//!   same-CPU switch. When that comes out ≤ 0 (the two sides overlap on two CPUs) the preset
//!   value is kept and the header says so.
//! * Wake-up latency (frames at 1 kHz, min / median / p99) has no field in the machine model:
//!   it goes into the header. The per-tick handler cost is not measured (the hog harness does
//!   not count loop iterations); the preset estimate is kept and the header says so.
//! * `nohz`: `full` if the kernel reports nohz_full CPUs; otherwise `idle` when the idle CPUs'
//!   LOC/s, corrected for their busy fraction, stays below half of HZ while the hogged CPU
//!   reaches 90 % of HZ (the tick stops on idle CPUs); otherwise `periodic`.
//! * **Background sources** (the part that sets LOC/s): the E1-fitted default sources are
//!   dropped; the softlockup watchdog (a kernel constant) is kept. Each CPU `c` has a target:
//!   the idle LOC/s that is not the tick, `t_c = LOC_idle_c − HZ × busy_c` (the tick runs while
//!   something else keeps the CPU busy).
//! * **Split by the one-hog phase**: on the hogged CPU `h`, the wake-ups above its own tick and
//!   the coordinator's share, `LOC_hog_h − HZ − coordinator`, are the part of `t_h` that
//!   persists on a busy CPU: hrtimers, which keep their own interrupts. The rest were
//!   timer-wheel timers, which a running tick absorbs (they run from its softirq). The fraction
//!   `p = clamp((LOC_hog_h − HZ − coordinator) / t_h, 0, 1)` is applied to every CPU: each CPU
//!   gets a Poisson hrtimer source (slack 50 µs, wakes a task) at `p × r_c` and a Poisson wheel
//!   source at `(1 − p) × r_c`, both restricted to that CPU.
//! * **Rate fit**: the twin's own idle CPU also takes ticks around each wake-up, so `r_c` is
//!   fitted by simulation: start with `r_c = t_c`, simulate idle, rescale
//!   `r_c ← r_c × t_c / twin_c` until every CPU is within 2 % or after [`FIT_ROUNDS`] rounds
//!   (each round logged).
//! * **Harness coordinator**: `ticklab host run` keeps its window by sleeping in 100 ms slices
//!   during timed workloads (`harness::run::COORDINATOR_POLL_NS`), 10 wake-ups per second on
//!   the CPU the unpinned coordinator last ran on. The scenario describes this host *as
//!   measured by the harness*, so it carries that source: per-CPU, period 100 ms × number of
//!   CPUs (an even spread over CPUs, an estimate). The twin's prediction of `hogs:1` is logged
//!   next to the measurement as a check.

use std::time::Duration;

use ticklab_cmdline::CpuSet;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{Machine, kvm_guest};
use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::{
    BackgroundSource, Kernel, Placement, Run, Scenario, TimerKind, default_background,
};
use ticklab_schema::workload::Workload;

use crate::harness::sample::{Snapshot, cpu_times, ns_per_user_tick};
use crate::harness::{self, HarnessError, LatencySummary, RunConfig, Stop};
use crate::probe::inspect::{InspectOptions, inspect};
use crate::procfs::interrupts::IrqKind;

/// Rescaling rounds of the background-rate fit.
pub const FIT_ROUNDS: usize = 4;
/// The harness coordinator's polling period during timed workloads (hogs, frames).
pub const HARNESS_POLL_NS: u64 = crate::harness::run::COORDINATOR_POLL_NS;
/// Simulated window of each fitting run.
const FIT_SIM_NS: u64 = 60_000_000_000;

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The budget is too short or otherwise unusable.
    #[error("{0}")]
    Input(String),
    /// This host lacks something calibration needs (not Linux, no LOC row, no HZ).
    #[error("cannot calibrate this host: {0}")]
    Unsupported(String),
    /// A harness phase failed.
    #[error("{phase}: {source}")]
    Harness {
        /// Which phase.
        phase: String,
        /// The harness error.
        #[source]
        source: HarnessError,
    },
    /// The twin refused a fitting run.
    #[error("twin: {0}")]
    Twin(String),
    /// A stop request (Ctrl-C) ended calibration.
    #[error("interrupted")]
    Interrupted,
}

/// Everything [`measure`] collected.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurements {
    /// `uname -n`.
    pub hostname: String,
    /// Kernel release (`6.18.44-...`).
    pub release: String,
    /// HZ inferred by `inspect`.
    pub hz: u32,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// cpuidle `current_driver` (`none` when no driver registered or no cpuidle).
    pub cpuidle_driver: String,
    /// Idle states of CPU 0: (name, exit latency µs, target residency µs, polling).
    pub idle_states: Vec<(String, u64, u64, bool)>,
    /// Whether the kernel lists nohz_full CPUs.
    pub nohz_full: bool,
    /// Number of CPUs measured (0..n).
    pub nr_cpus: u32,
    /// Idle window, s.
    pub idle_s: f64,
    /// Idle LOC/s per CPU.
    pub idle_loc: Vec<f64>,
    /// Busy fraction per CPU during the idle window (other processes).
    pub idle_busy: Vec<f64>,
    /// CPU of the one hog.
    pub hog_cpu: u32,
    /// LOC/s per CPU with the one hog.
    pub hog_loc: Vec<f64>,
    /// getpid ns/call.
    pub syscall_ns: f64,
    /// Same-CPU pipe round trip, ns.
    pub same_cpu_rt_ns: f64,
    /// Cross-CPU pipe round trip, ns (one CPU: none).
    pub cross_cpu_rt_ns: Option<f64>,
    /// Wake-up latency of a 1 kHz frame worker.
    pub wakeup: Option<LatencySummary>,
    /// Harness warnings (contamination etc.), phase-prefixed.
    pub warnings: Vec<String>,
}

/// A fitted scenario with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The scenario (workload idle).
    pub scenario: Scenario,
    /// The measurements it was fitted to.
    pub measurements: Measurements,
    /// Fit log and caveats, one line each (written as `#` comments).
    pub notes: Vec<String>,
}

impl Calibration {
    /// The scenario file: a `#` comment header (measurements, fit log) then the TOML.
    pub fn file_text(&self) -> String {
        let m = &self.measurements;
        let mut s = format!(
            "# ticklab host calibrate: {} ({}), {} CPUs, HZ={}\n",
            m.hostname, m.release, m.nr_cpus, m.hz
        );
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        s += &format!(
            "# idle {:.1} s: LOC/s per CPU [{}], busy fraction [{}]\n",
            m.idle_s,
            list(&m.idle_loc),
            m.idle_busy
                .iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        s += &format!(
            "# one hog on CPU {}: LOC/s per CPU [{}]\n",
            m.hog_cpu,
            list(&m.hog_loc)
        );
        s += &format!(
            "# syscall getpid {:.1} ns; pipe round trip same CPU {:.0} ns, cross CPU {}\n",
            m.syscall_ns,
            m.same_cpu_rt_ns,
            m.cross_cpu_rt_ns
                .map_or("n/a (one CPU)".into(), |v| format!("{v:.0} ns"))
        );
        match &m.wakeup {
            Some(w) => {
                s += &format!(
                    "# wake-up latency (frames 1 kHz, {} samples): min {:.1} us, median {:.1} us, p99 {:.1} us\n",
                    w.samples, w.min_us, w.p50_us, w.p99_us
                )
            }
            None => s += "# wake-up latency: not measured\n",
        }
        for n in &self.notes {
            s += &format!("# {n}\n");
        }
        for w in &m.warnings {
            s += &format!("# warning: {w}\n");
        }
        s += &self.scenario.to_toml();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s
    }
}

/// Runs one twin simulation (the CLI passes `ticklab_twin::simulate`; the host crate does not
/// depend on the twin).
pub type Simulator<'a> = &'a dyn Fn(&Scenario) -> Result<Report, String>;

/// Per-CPU LOC/s of a report.
pub fn loc_per_s(r: &Report) -> Vec<f64> {
    let s = r.seconds().max(1e-9);
    r.cpus.iter().map(|c| c.loc as f64 / s).collect()
}

/// Shares of the budget per phase: idle, hog, syscall, each ping-pong, frames.
const SHARES: [f64; 5] = [0.40, 0.20, 0.08, 0.08, 0.12];

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
    let cmdline = std::fs::read_to_string("/proc/cmdline")
        .map(|s| s.trim().to_string())
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
            "CPUs 0..{nr_cpus} are not all online and allowed (usable: {usable:?})"
        )));
    }
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
        if *b > 0.05 {
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
        let r = harness::run_workload(&w, &config, stop).map_err(|e| harness_err(what, e))?;
        if stop.is_set() {
            return Err(CalibrateError::Interrupted);
        }
        warnings.extend(
            r.report
                .warnings
                .iter()
                .filter(|w| !w.contains("RAPL") && !w.contains("package_idle_fraction"))
                .map(|w| format!("{what}: {w}")),
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
    let fr = run("frames:1000@0:loop=0".into(), fr_d, "frames", &mut warnings)?;
    let wakeup = fr
        .host_run
        .frame_groups
        .first()
        .map(|g| g.wakeup)
        .filter(|w| w.samples > 0);

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
        warnings,
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

/// Kernel `major.minor` from a release string (`6.18.44-fc` → `6.18`).
pub fn major_minor(release: &str) -> Option<String> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let a: u32 = it.next()?.parse().ok()?;
    let b: u32 = it.next()?.parse().ok()?;
    Some(format!("{a}.{b}"))
}

/// The machine: `kvm_guest(nr)` with the measured costs and this host's cpuidle driver.
fn machine(m: &Measurements, notes: &mut Vec<String>) -> Machine {
    let mut mach = kvm_guest(m.nr_cpus);
    mach.name = format!("calibrated-{}", m.hostname);
    mach.description = format!(
        "{} ({}), {} CPUs, fitted by ticklab host calibrate",
        m.hostname, m.release, m.nr_cpus
    );
    let c = &mut mach.costs;
    c.syscall_ns = m.syscall_ns.round().max(1.0) as u64;
    let cs = m.same_cpu_rt_ns / 2.0 - 2.0 * m.syscall_ns;
    if cs > 0.0 {
        c.context_switch_ns = cs.round() as u64;
    } else {
        notes.push(format!(
            "context switch: same-CPU half round trip {:.0} ns is not above 2 syscalls; preset {} ns kept",
            m.same_cpu_rt_ns / 2.0,
            c.context_switch_ns
        ));
    }
    if let Some(x) = m.cross_cpu_rt_ns {
        let ipi = x / 2.0 - 2.0 * m.syscall_ns - c.context_switch_ns as f64;
        if ipi > 0.0 {
            c.ipi_ns = ipi.round() as u64;
        } else {
            notes.push(format!(
                "ipi: cross-CPU half round trip {:.0} ns is not above the same-CPU one; preset {} ns kept",
                x / 2.0,
                c.ipi_ns
            ));
        }
    }
    notes.push(format!(
        "fit: syscall_ns = getpid; context_switch_ns = same-CPU RT/2 - 2 syscalls = {}; ipi_ns = cross-CPU RT/2 - 2 syscalls - switch = {}",
        c.context_switch_ns, c.ipi_ns
    ));
    notes.push(format!(
        "not measured: tick_handler_ns {} (preset estimate), irq_entry_exit_ns {} (preset)",
        c.tick_handler_ns, c.irq_entry_exit_ns
    ));
    mach.cpuidle_driver = m.cpuidle_driver.clone();
    if m.cpuidle_driver == "none" || m.idle_states.is_empty() {
        mach.cpuidle_driver = "none".into();
        // The twin idles in state 1 when there is no driver: the default idle (HLT). The
        // preset's 1 µs exit latency is kept: sysfs has nothing for a driverless CPU.
        if let Some(s) = mach.idle_states.get_mut(1) {
            s.name = "HLT".into();
        }
        notes.push("cpuidle: no driver; the twin idles in HLT (state 1)".into());
    } else {
        let base = mach.idle_states[1].clone();
        mach.idle_states = m
            .idle_states
            .iter()
            .map(|(name, lat, res, polling)| {
                let mut s = base.clone();
                s.name = name.clone();
                s.exit_latency_ns = lat * 1000;
                s.target_residency_ns = res * 1000;
                s.polling = *polling;
                s
            })
            .collect();
    }
    mach
}

/// The tick build inferred from the measurements (see the module docs).
pub fn infer_nohz(m: &Measurements) -> NohzBuild {
    if m.nohz_full {
        return NohzBuild::Full;
    }
    let hz = m.hz as f64;
    let idle_ticks_low = (0..m.nr_cpus as usize)
        .filter(|&c| c as u32 != m.hog_cpu || m.nr_cpus == 1)
        .all(|c| m.idle_loc[c] - hz * m.idle_busy[c] < 0.5 * hz);
    let hog_ticks = m.hog_loc.get(m.hog_cpu as usize).copied().unwrap_or(0.0) >= 0.9 * hz;
    if idle_ticks_low && hog_ticks {
        NohzBuild::Idle
    } else {
        NohzBuild::Periodic
    }
}

fn cpu_source(c: u32, rate: f64, t: f64, kind: TimerKind) -> BackgroundSource {
    let name = match kind {
        TimerKind::Hrtimer => format!("host_wakeups_cpu{c}"),
        TimerKind::Wheel => format!("host_wheel_timers_cpu{c}"),
    };
    BackgroundSource {
        name,
        kind,
        placement: Placement::PerCpu,
        period_ns: None,
        rate_hz: Some(rate),
        deferrable: false,
        slack_ns: 50_000,
        wakes_task: true,
        provenance: format!(
            "CAL(host calibrate): idle LOC/s not from the tick on CPU {c} = {t:.2}/s, split into hrtimers and wheel timers by the one-hog phase, rescaled until the twin's idle CPU matches"
        ),
        cpus: Some({
            let mut one = CpuSet::new();
            one.insert(c);
            one
        }),
    }
}

fn harness_source(nr: u32) -> BackgroundSource {
    BackgroundSource {
        name: "harness_coordinator".into(),
        kind: TimerKind::Hrtimer,
        placement: Placement::PerCpu,
        period_ns: Some(HARNESS_POLL_NS * nr as u64),
        rate_hz: None,
        deferrable: false,
        slack_ns: 50_000,
        wakes_task: true,
        provenance: "C: ticklab host run's coordinator sleeps in 100 ms slices during timed workloads (harness::run::COORDINATOR_POLL_NS); E: the unpinned thread's wake-ups spread evenly over CPUs".into(),
        cpus: None,
    }
}

/// Fits the scenario to `m`, using `sim` for the background-rate iteration (module docs).
pub fn fit(
    m: &Measurements,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let mut notes = Vec::new();
    let machine = machine(m, &mut notes);
    let nohz = infer_nohz(m);
    notes.push(format!(
        "nohz = {nohz:?}: nohz_full listed = {}, idle CPUs' LOC/s minus HZ x busy vs HZ/2, hogged CPU vs 0.9 HZ",
        m.nohz_full
    ));
    let version = major_minor(&m.release).ok_or_else(|| {
        CalibrateError::Unsupported(format!("kernel release {:?}: no MAJOR.MINOR", m.release))
    })?;
    // Built through serde so that fields added later with a default keep their default.
    let kernel: Kernel = serde_json::from_value(serde_json::json!({
        "version": version,
        "hz": m.hz,
        "nohz": nohz,
        "high_res": true,
        "cmdline": m.cmdline,
    }))
    .map_err(|e| CalibrateError::Twin(format!("kernel section: {e}")))?;
    let watchdog: Vec<BackgroundSource> = default_background()
        .into_iter()
        .filter(|s| s.name == "watchdog_timer_fn")
        .collect();
    let hz = m.hz as f64;
    let target: Vec<f64> = (0..m.nr_cpus as usize)
        .map(|c| (m.idle_loc[c] - hz * m.idle_busy[c]).max(0.0))
        .collect();
    // Which part of an idle CPU's wake-ups survives when the CPU is busy: on the hogged CPU,
    // wake-ups above its own tick (and the harness coordinator's share) are hrtimers that keep
    // their own interrupts; the rest were timer-wheel timers, which a running tick absorbs.
    let hc = m.hog_cpu as usize;
    let coordinator = 1e9 / (HARNESS_POLL_NS as f64 * m.nr_cpus as f64);
    let persistent = if target[hc] > 0.0 {
        ((m.hog_loc[hc] - hz - coordinator) / target[hc]).clamp(0.0, 1.0)
    } else {
        1.0
    };
    notes.push(format!(
        "split: on the hogged CPU {hc}, {:.1} LOC/s above HZ + coordinator of {:.1} idle wake-ups/s persist: {:.0} % hrtimers, {:.0} % wheel timers",
        (m.hog_loc[hc] - hz - coordinator).max(0.0),
        target[hc],
        persistent * 100.0,
        (1.0 - persistent) * 100.0
    ));
    let mut rates = target.clone();
    let mut scenario = Scenario {
        name: format!("host calibrate: {} ({})", m.hostname, m.release),
        machine,
        kernel,
        workload: Workload::default(),
        background: Vec::new(),
        run: Run {
            duration_ns: FIT_SIM_NS,
            ..Run::default()
        },
    };
    let with_rates = |s: &mut Scenario, rates: &[f64]| {
        s.background = watchdog.clone();
        for (c, r) in rates.iter().enumerate() {
            let (hr, wheel) = (r * persistent, r * (1.0 - persistent));
            if hr > 0.0 {
                s.background
                    .push(cpu_source(c as u32, hr, target[c], TimerKind::Hrtimer));
            }
            if wheel > 0.0 {
                s.background
                    .push(cpu_source(c as u32, wheel, target[c], TimerKind::Wheel));
            }
        }
    };
    for round in 1..=FIT_ROUNDS {
        with_rates(&mut scenario, &rates);
        progress(&format!("fit round {round}: simulating idle"));
        let twin = loc_per_s(&sim(&scenario).map_err(CalibrateError::Twin)?);
        notes.push(format!(
            "fit round {round}: rates [{}] -> twin idle LOC/s [{}] vs target [{}]",
            fmt_list(&rates),
            fmt_list(&twin),
            fmt_list(&target)
        ));
        let done =
            (0..rates.len()).all(|c| (twin[c] - target[c]).abs() <= 0.02 * target[c].max(1.0));
        if done || round == FIT_ROUNDS {
            break;
        }
        for c in 0..rates.len() {
            if twin[c] > 0.0 && rates[c] > 0.0 {
                rates[c] *= target[c] / twin[c];
            }
        }
    }
    with_rates(&mut scenario, &rates);
    scenario.background.push(harness_source(m.nr_cpus));
    // The busy-side check: the twin's one-hog prediction next to the measurement.
    let mut hog = scenario.clone();
    hog.workload = Workload::parse(&format!("hogs:1@{}", m.hog_cpu), m.nr_cpus)
        .map_err(|e| CalibrateError::Twin(e.to_string()))?;
    hog.run.duration_ns = FIT_SIM_NS / 4;
    progress("check: simulating the one-hog phase");
    let twin_hog = loc_per_s(&sim(&hog).map_err(CalibrateError::Twin)?);
    notes.push(format!(
        "check hogs:1@{}: twin LOC/s [{}] vs measured [{}]",
        m.hog_cpu,
        fmt_list(&twin_hog),
        fmt_list(&m.hog_loc)
    ));
    scenario.run = Run::default();
    Ok(Calibration {
        scenario,
        measurements: m.clone(),
        notes,
    })
}

fn fmt_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`measure`] then [`fit`].
pub fn calibrate(
    budget: Duration,
    stop: &Stop,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let m = measure(budget, stop, progress)?;
    fit(&m, sim, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(idle_loc: Vec<f64>, idle_busy: Vec<f64>, hog_loc: Vec<f64>) -> Measurements {
        Measurements {
            hostname: "h".into(),
            release: "6.18.44-fc".into(),
            hz: 250,
            cmdline: String::new(),
            cpuidle_driver: "none".into(),
            idle_states: Vec::new(),
            nohz_full: false,
            nr_cpus: 2,
            idle_s: 10.0,
            idle_loc,
            idle_busy,
            hog_cpu: 1,
            hog_loc,
            syscall_ns: 200.0,
            same_cpu_rt_ns: 5000.0,
            cross_cpu_rt_ns: Some(20000.0),
            wakeup: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn release_to_major_minor() {
        assert_eq!(major_minor("6.18.44-fc-v657").as_deref(), Some("6.18"));
        assert_eq!(major_minor("5.4.0-150-generic").as_deref(), Some("5.4"));
        assert_eq!(major_minor("weird"), None);
    }

    #[test]
    fn nohz_from_tick_behaviour() {
        let idle = measured(vec![20.0, 30.0], vec![0.0, 0.0], vec![30.0, 280.0]);
        assert_eq!(infer_nohz(&idle), NohzBuild::Idle);
        let periodic = measured(vec![255.0, 258.0], vec![0.0, 0.0], vec![255.0, 280.0]);
        assert_eq!(infer_nohz(&periodic), NohzBuild::Periodic);
        // A CPU busy with other work ticks; its busy share is not evidence of a periodic tick.
        let busy = measured(vec![270.0, 30.0], vec![0.95, 0.0], vec![30.0, 280.0]);
        assert_eq!(infer_nohz(&busy), NohzBuild::Idle);
    }

    #[test]
    fn cost_fits() {
        let m = measured(vec![20.0, 30.0], vec![0.0, 0.0], vec![30.0, 280.0]);
        let mut notes = Vec::new();
        let mach = machine(&m, &mut notes);
        assert_eq!(mach.costs.syscall_ns, 200);
        // 5000 / 2 − 2 × 200
        assert_eq!(mach.costs.context_switch_ns, 2100);
        // 20000 / 2 − 2 × 200 − 2100
        assert_eq!(mach.costs.ipi_ns, 7500);
        assert_eq!(mach.cpuidle_driver, "none");
        assert_eq!(mach.idle_states[1].name, "HLT");
    }
}
