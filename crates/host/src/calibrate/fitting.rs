//! Fitting the twin to the measurements: the machine's costs, the tick build, and the
//! background sources that set the idle CPUs' interrupt rate.
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
//! * **Work unit**: `work_unit_ns` = the frame worker's calibrated minimum cost of one unit
//!   (the harness's `work` module), measured in the frames phase: the twin computes a frame of
//!   LOOP units in LOOP × `work_unit_ns`, the host's worker in LOOP × that minimum, so a frame
//!   workload keeps a CPU equally busy on both sides. Without it the preset's estimate stays,
//!   and the header says so.
//! * Wake-up latency (frames at 1 kHz, min / median / p99) has no field in the machine model:
//!   it goes into the header. The costs on the wake-up path (interrupt entry/exit, the
//!   timer-delivery spread, the driverless idle state's exit latency) are fitted to it by
//!   [`super::wakeup_fit`], after the background sources, with the twin in the loop.
//! * With a cpuidle driver, each idle state's exit latency and target residency are the
//!   kernel's own numbers (sysfs `stateN/latency`, `stateN/residency`) and are registered as
//!   fitted from there.
//! * Every other cost is a preset of the `kvm-guest` machine; the header lists them
//!   ([`super::ledger`]).
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
//!   source at `(1 − p) × r_c`, both starting on that CPU. The hrtimers stay there (they
//!   are what a busy CPU keeps); the wheel timers belong to unpinned tasks and follow them
//!   (`follows_task`, docs/kernel-behaviour.md §12.11): when their CPU is busy the task wakes
//!   on an idle CPU and re-arms its timer there. That all of them follow is an estimate (E);
//!   the one-hog check shows it: on this project's two-CPU host the idle CPU beside a hog takes
//!   nearly all of the hogged CPU's idle wake-ups.
//! * **Rate fit**: the twin's own idle CPU also takes ticks around each wake-up, so `r_c` is
//!   fitted by simulation: start with `r_c = t_c`, simulate idle, rescale
//!   `r_c ← r_c × t_c / twin_c` until every CPU is within 2 % or after [`FIT_ROUNDS`] rounds
//!   (each round logged).
//! * **Harness coordinator**: `ticklab host run` keeps its window by sleeping in 100 ms slices
//!   during timed workloads (`harness::run::COORDINATOR_POLL_NS`), 10 wake-ups per second on
//!   the CPU the unpinned coordinator last ran on. The scenario describes this host *as
//!   measured by the harness*, so it carries that source: per-CPU, period 100 ms × number of
//!   CPUs (an even spread over CPUs, an estimate), following the thread off a busy CPU. The
//!   twin's prediction of `hogs:1` is logged
//!   next to the measurement as a check.

use ticklab_cmdline::CpuSet;
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{Machine, kvm_guest};
use ticklab_schema::scenario::{
    BackgroundSource, Kernel, Placement, Run, Scenario, TimerKind, default_background,
};
use ticklab_schema::workload::Workload;

use super::error::CalibrateError;
use super::ledger::CostLedger;
use super::measurements::{HostFacts, Measurements, non_tick_rate};
use super::specs::{FIT_ROUNDS, FIT_SIM_NS, HARNESS_POLL_NS, Simulator, harness_source, loc_per_s};

/// Kernel `major.minor` from a release string (`6.18.44-fc` → `6.18`).
pub fn major_minor(release: &str) -> Option<String> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let a: u32 = it.next()?.parse().ok()?;
    let b: u32 = it.next()?.parse().ok()?;
    Some(format!("{a}.{b}"))
}

/// The kernel version the twin is given for a release string: `MAJOR.MINOR.SUBLEVEL`
/// (`6.18.44-fc` → `6.18.44`), or `MAJOR.MINOR` when no sublevel follows. Stable series took
/// some rules late (the idle loop's tick rule without a cpuidle driver, twin `kernel::idle`),
/// so the sublevel is kept.
pub fn kernel_version(release: &str) -> Option<String> {
    let mm = major_minor(release)?;
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let sub = it.nth(2).and_then(|s| s.parse::<u32>().ok());
    // Only a third number right after `MAJOR.MINOR.` is a sublevel (`6.18-rc1` has none).
    let dotted = release.starts_with(&format!("{mm}."));
    Some(match sub {
        Some(s) if dotted => format!("{mm}.{s}"),
        _ => mm,
    })
}

/// The machine: `kvm_guest(nr)` with the measured costs and this host's cpuidle driver.
pub(crate) fn machine(
    m: &Measurements,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) -> Machine {
    let mut mach = kvm_guest(m.nr_cpus);
    mach.name = format!("calibrated-{}", m.hostname);
    mach.description = format!(
        "{} ({}), {} CPUs, fitted by ticklab host calibrate",
        m.hostname, m.release, m.nr_cpus
    );
    let c = &mut mach.costs;
    c.syscall_ns = m.syscall_ns.round().max(1.0) as u64;
    ledger.fitted("costs.syscall_ns", "getpid ns/call");
    let cs = m.same_cpu_rt_ns / 2.0 - 2.0 * m.syscall_ns;
    if cs > 0.0 {
        c.context_switch_ns = cs.round() as u64;
        ledger.fitted(
            "costs.context_switch_ns",
            "same-CPU pipe round trip / 2 - 2 syscalls",
        );
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
            ledger.fitted(
                "costs.ipi_ns",
                "cross-CPU pipe round trip / 2 - 2 syscalls - context switch",
            );
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
    super::micro::fit(
        m,
        c,
        ledger,
        notes,
        crate::harness::sample::ns_per_user_tick() as f64,
    );
    super::timer_tracepoints::fit(m.kernel_trace.as_ref(), &mut mach, ledger, notes);
    set_cpuidle(&mut mach, &m.cpuidle_driver, &m.idle_states, ledger, notes);
    mach
}

/// Sets the machine's `work_unit_ns` from the measurement (module docs, "Work unit").
pub(crate) fn fit_work_unit(
    m: &Measurements,
    mach: &mut Machine,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    match m.work_unit_ns {
        Some(ns) => {
            mach.costs.work_unit_ns = ns;
            ledger.fitted(
                "costs.work_unit_ns",
                "the frame worker's calibrated minimum cost of one unit",
            );
            notes.push(format!(
                "fit: work_unit_ns = the frame worker's calibrated minimum cost of one unit = {ns:.3}"
            ));
        }
        None => notes.push(format!(
            "work unit not measured: work_unit_ns {} kept (preset estimate)",
            mach.costs.work_unit_ns
        )),
    }
}

/// The host's cpuidle driver and states on the machine (no driver: the twin idles in HLT).
fn set_cpuidle(
    mach: &mut Machine,
    driver: &str,
    states: &[(String, u64, u64, bool)],
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    mach.cpuidle_driver = driver.to_string();
    if driver == "none" || states.is_empty() {
        mach.cpuidle_driver = "none".into();
        // The twin idles in state 1 when there is no driver: the default idle (HLT). sysfs
        // has no exit latency for a driverless CPU: `wakeup_fit` bisects it from the
        // idle-CPU wake-up (until then the preset's 1 µs stands).
        if let Some(s) = mach.idle_states.get_mut(1) {
            s.name = "HLT".into();
        }
        notes.push("cpuidle: no driver; the twin idles in HLT (state 1)".into());
    } else {
        let base = mach.idle_states[1].clone();
        mach.idle_states = states
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
        for i in 0..mach.idle_states.len() {
            ledger.fitted(
                &format!("idle_states.{i}.exit_latency_ns"),
                format!("from sysfs cpuidle state{i}/latency (the {driver} driver's own)"),
            );
            ledger.fitted(
                &format!("idle_states.{i}.target_residency_ns"),
                format!("from sysfs cpuidle state{i}/residency (the {driver} driver's own)"),
            );
        }
    }
}

/// The twin of this host before any calibration: what [`super::phases::host_facts`] read (HZ, boot
/// line, cpuidle, CPUs), the KVM-guest preset's costs, the preset background sources and the
/// harness coordinator. `NO_HZ_FULL` when the kernel lists nohz_full CPUs, else `NO_HZ_IDLE`
/// (the common distribution build; `host calibrate` infers it from the tick instead). What
/// `host run --twin` uses when no calibration file is given or found; `notes` says so.
pub fn inspected_scenario(
    f: &HostFacts,
    notes: &mut Vec<String>,
) -> Result<Scenario, CalibrateError> {
    let hostname = &f.hostname;
    let mut machine = kvm_guest(f.nr_cpus);
    machine.name = format!("inspected-{hostname}");
    machine.description = format!(
        "{hostname} ({}), {} CPUs, preset costs (not calibrated)",
        f.release, f.nr_cpus
    );
    // Not a calibration: its ledger is not kept.
    set_cpuidle(
        &mut machine,
        &f.cpuidle_driver,
        &f.idle_states,
        &mut CostLedger::new(),
        notes,
    );
    let nohz = if f.nohz_full {
        NohzBuild::Full
    } else {
        NohzBuild::Idle
    };
    notes.push(format!(
        "uncalibrated twin: kvm-guest preset costs, preset background sources, nohz {nohz:?} assumed; run `ticklab host calibrate --out FILE` and pass FILE to --twin for a fitted one"
    ));
    let kernel = kernel_section(&f.release, f.hz, nohz, &f.cmdline)?;
    let mut background = default_background();
    background.push(harness_source(f.nr_cpus));
    Ok(Scenario {
        name: format!("twin of {hostname} (inspected)"),
        machine,
        kernel,
        workload: Workload::default(),
        background,
        run: Run::default(),
    })
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
        follows_task: kind == TimerKind::Wheel,
        timer_migrates: false,
        hard: false,
        task_ns: None,
        relative: false,
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

/// The `[kernel]` section of a twin of a host running `release` (module docs): its version
/// ([`kernel_version`]), HZ, the tick build, high resolution timers, the boot line.
fn kernel_section(
    release: &str,
    hz: u32,
    nohz: NohzBuild,
    cmdline: &str,
) -> Result<Kernel, CalibrateError> {
    let version = kernel_version(release).ok_or_else(|| {
        CalibrateError::Unsupported(format!("kernel release {release:?}: no MAJOR.MINOR"))
    })?;
    // Built through serde so that fields added later with a default keep their default.
    serde_json::from_value(serde_json::json!({
        "version": version,
        "hz": hz,
        "nohz": nohz,
        "high_res": true,
        "cmdline": cmdline,
    }))
    .map_err(CalibrateError::KernelSection)
}

/// The `[kernel]` section of the calibrated scenario, its tick build inferred from the
/// measurements ([`infer_nohz`]; a note says how).
pub(crate) fn kernel(m: &Measurements, notes: &mut Vec<String>) -> Result<Kernel, CalibrateError> {
    let nohz = infer_nohz(m);
    notes.push(format!(
        "nohz = {nohz:?}: nohz_full listed = {}, idle CPUs' LOC/s minus HZ x busy vs HZ/2, hogged CPU vs 0.9 HZ",
        m.nohz_full
    ));
    kernel_section(&m.release, m.hz, nohz, &m.cmdline)
}

/// The scenario of `machine` and `kernel` with the background sources fitted to the idle
/// and one-hog phases (module docs, "Background sources" to "Harness coordinator"), each
/// rescaling round simulated with `sim`; the workload idle, the run [`FIT_SIM_NS`] long.
pub(crate) fn background(
    m: &Measurements,
    machine: Machine,
    kernel: Kernel,
    notes: &mut Vec<String>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Scenario, CalibrateError> {
    let watchdog: Vec<BackgroundSource> = default_background()
        .into_iter()
        .filter(|s| s.name == "watchdog_timer_fn")
        .collect();
    let hz = m.hz as f64;
    let target: Vec<f64> = (0..m.nr_cpus as usize)
        .map(|c| non_tick_rate(m, c))
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
    Ok(scenario)
}

/// The busy-side check: the twin's prediction of the one-hog phase next to the measurement,
/// one note line.
pub(crate) fn check_hog(
    m: &Measurements,
    scenario: &Scenario,
    notes: &mut Vec<String>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<(), CalibrateError> {
    let mut hog = scenario.clone();
    hog.workload = Workload::parse(&format!("hogs:1@{}", m.hog_cpu), m.nr_cpus)
        .map_err(CalibrateError::TwinWorkload)?;
    hog.run.duration_ns = FIT_SIM_NS / 4;
    progress("check: simulating the one-hog phase");
    let twin_hog = loc_per_s(&sim(&hog).map_err(CalibrateError::Twin)?);
    notes.push(format!(
        "check hogs:1@{}: twin LOC/s [{}] vs measured [{}]",
        m.hog_cpu,
        fmt_list(&twin_hog),
        fmt_list(&m.hog_loc)
    ));
    Ok(())
}

fn fmt_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::measurements::tests::measured;

    #[test]
    fn release_to_major_minor() {
        assert_eq!(major_minor("6.18.44-fc-v657").as_deref(), Some("6.18"));
        assert_eq!(major_minor("5.4.0-150-generic").as_deref(), Some("5.4"));
        assert_eq!(major_minor("weird"), None);
        // (release, twin version)
        for (release, want) in [
            ("6.18.44-fc-v1045", Some("6.18.44")),
            ("6.1.0-57-amd64", Some("6.1.0")),
            ("6.18-rc1", Some("6.18")),
            ("6.19", Some("6.19")),
            ("weird", None),
        ] {
            assert_eq!(kernel_version(release).as_deref(), want, "{release}");
        }
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
        let mut ledger = CostLedger::new();
        let mach = machine(&m, &mut ledger, &mut notes);
        assert_eq!(ledger.entries().len(), 3);
        assert_eq!(mach.costs.syscall_ns, 200);
        // 5000 / 2 − 2 × 200
        assert_eq!(mach.costs.context_switch_ns, 2100);
        // 20000 / 2 − 2 × 200 − 2100
        assert_eq!(mach.costs.ipi_ns, 7500);
        assert_eq!(mach.cpuidle_driver, "none");
        assert_eq!(mach.idle_states[1].name, "HLT");
    }

    #[test]
    fn a_drivers_idle_states_come_from_sysfs_into_the_ledger() {
        let mut mach = kvm_guest(2);
        let mut ledger = CostLedger::new();
        let states = [
            ("POLL".to_string(), 0, 0, true),
            ("haltpoll".to_string(), 1, 1, false),
        ];
        set_cpuidle(&mut mach, "haltpoll", &states, &mut ledger, &mut Vec::new());
        assert_eq!(mach.idle_states[1].exit_latency_ns, 1000);
        assert_eq!(
            ledger.how("idle_states.1.exit_latency_ns"),
            Some("from sysfs cpuidle state1/latency (the haltpoll driver's own)")
        );
        assert!(ledger.how("idle_states.0.target_residency_ns").is_some());
        // Without a driver sysfs has no number: nothing registered here.
        let mut none = CostLedger::new();
        set_cpuidle(&mut kvm_guest(2), "none", &[], &mut none, &mut Vec::new());
        assert!(none.entries().is_empty());
    }

    #[test]
    fn the_work_unit_is_the_measured_one() {
        let mut m = crate::calibrate::fit_quality::tests::measured();
        let mut mach = ticklab_schema::machine::kvm_guest(2);
        let mut notes = Vec::new();
        fit_work_unit(&m, &mut mach, &mut CostLedger::new(), &mut notes);
        assert_eq!(mach.costs.work_unit_ns, 6.5);
        assert!(notes[0].contains("6.500"), "{notes:?}");
        m.work_unit_ns = None;
        let mut preset = ticklab_schema::machine::kvm_guest(2);
        let before = preset.costs.work_unit_ns;
        fit_work_unit(&m, &mut preset, &mut CostLedger::new(), &mut notes);
        assert_eq!(preset.costs.work_unit_ns, before);
        assert!(notes[1].starts_with("work unit not measured"), "{notes:?}");
    }
}
