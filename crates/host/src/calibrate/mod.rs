//! `host calibrate`: a bounded measurement of this host, fitted into a twin scenario.
//!
//! [`calibrate`] is a pipeline of three stages, each a function here:
//!
//! 1. **measure** ([`measure`]): the phases inside one time budget (60 s by default; every
//!    phase gets a fixed share of it, so a 20 s budget runs the same phases shorter), then on
//!    a VM guest the wake-up against sleep length (`halt_wake`, about 10 s) and on a KVM guest
//!    the guest's ping-pongs (`kvm`);
//! 2. **fit** ([`fit_scenario`]): the [`Measurements`] turned into a [`Scenario`] that
//!    `ticklab sim --scenario FILE` loads, with the twin in the loop;
//! 3. **check** ([`check`]): every phase re-run in the fitted twin beside its measurement, and
//!    every preset cost varied to see which ones a checked figure depends on.
//!
//! `ticklab_report::calibrate` writes the result (`scenario_file`: a comment header holding
//! what the scenario has no field for, such as wake-up latency, raw round trips and the fit
//! log, then the TOML) and the lines `host calibrate` prints; this crate keeps the typed
//! results, and the sensitivity summary its own progress line ends with.
//!
//! # Modules
//!
//! The pipeline here is the only module that knows every stage; each module below it depends
//! only on the ones listed after it (`scripts/module-cycles.py` checks that no two files
//! import each other):
//!
//! * `sensitivity` (check) — each preset doubled and halved in the twin: which of them a
//!   checked figure depends on (needed, but not measured here);
//! * `fit_quality` (check) — every phase re-run in the fitted twin beside its measurement
//!   (measured, twin, ratio, a miss above 20 % flagged);
//! * `fitting` (fit) — costs, the work unit, the tick build and the background sources
//!   fitted to the phases' measurements, with the twin in the loop; the machine's costs take
//!   `micro`'s and `timer_tracepoints`'s fits;
//! * the evidence modules, each exporting its `measure` and its `fit`:
//!   `wakeup_fit` (the frame worker's wake-ups: interrupt entry/exit, timer-delivery spread
//!   and the idle exit latency, bisected with the twin), `micro` (a clock read, a cache line
//!   bounced between cores, the background task's run time), `timer_tracepoints` (the tick,
//!   hrtimer, timer-wheel and clock-event costs timed by the kernel's tracepoints, root and
//!   tracefs), `kvm` (on a KVM guest, its host's wake-up of a blocked vCPU, from the futex
//!   ping-pong at `guest_halt_poll_ns=0`, fitted into `[machine.kvm_host]` before the checks),
//!   `halt_wake` (on a VM guest, the idle-CPU wake-up at six sleep lengths, fitted into
//!   `[machine.halt_wake]`: the exit of a halted vCPU against how long it slept);
//! * `live_sweep` — not part of `calibrate()`: E3's sweep of `guest_halt_poll_ns` on top of
//!   `kvm` (measure every value, fit at 0, predict the rest), for `host haltpoll-sweep`;
//! * `phases` — the phases with no module of their own (inspect, idle, one hog, syscall,
//!   ping-pong) and the harness runner every phase uses;
//! * `measurements` — what was measured, as data; `ledger` — which costs were fitted and
//!   how (the rest are presets); `specs` — the specs, windows and thresholds every stage
//!   shares; `error` — [`CalibrateError`].
//!
//! The modules are private to the crate; what the CLI uses is re-exported here.

use std::time::Duration;

use ticklab_schema::scenario::{Run, Scenario};

use crate::harness::Stop;

pub(crate) mod error;
pub(crate) mod fit_quality;
pub(crate) mod fitting;
pub(crate) mod halt_wake;
pub(crate) mod kvm;
pub(crate) mod ledger;
pub(crate) mod live_sweep;
pub(crate) mod measurements;
pub(crate) mod micro;
pub(crate) mod phases;
pub(crate) mod sensitivity;
pub(crate) mod specs;
pub(crate) mod timer_tracepoints;
pub(crate) mod wakeup_fit;

pub use error::{CalibrateError, Contaminant, ContaminatedPhase, SimulatorError, TwinRunError};
pub use fit_quality::{FitCheck, twin_checks};
pub use fitting::{infer_nohz, inspected_scenario, kernel_version, major_minor};
pub use kvm::{
    GuestKvm, KvmCalibration, KvmFitError, KvmGuestCosts, KvmMeasurements, KvmModel,
    fit as fit_kvm, measure as measure_kvm,
};
pub use ledger::{CostLedger, Fitted};
pub use live_sweep::{FixedCosts, live_sweep};
pub use measurements::SleepWake;
pub use measurements::{
    BatchFigure, HostFacts, LineTransfer, Measurements, MicroMeasurements, Timed, TimerTracepoints,
};
pub use phases::host_facts;
pub use sensitivity::{
    CostSensitivity, Move, NEEDED_REL, Step, Trial, Verdict as SensitivityVerdict, ZERO_STEP_NS,
    summary as sensitivity_summary,
};
pub use specs::{
    CHECK_SIM_NS, FIT_ROUNDS, FIT_WINDOWS, HARNESS_POLL_NS, Simulator, Windows, harness_poll_for,
    harness_where_measured, loc_per_s,
};

/// A fitted scenario with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The scenario (workload idle).
    pub scenario: Scenario,
    /// The measurements it was fitted to.
    pub measurements: Measurements,
    /// Fit log and caveats, one line each (written as `#` comments).
    pub notes: Vec<String>,
    /// Each phase re-run in the fitted twin beside its measurement (`fit_quality`).
    pub fit_quality: Vec<FitCheck>,
    /// Which costs were fitted and how (`ledger`).
    pub ledger: ledger::CostLedger,
    /// Each preset cost doubled and halved in the twin: whether a checked figure depends on
    /// it (`sensitivity`), in `ledger::cost_names` order.
    pub sensitivity: Vec<sensitivity::CostSensitivity>,
}

/// The measure stage: every phase within `budget` (module docs of `phases` for the list and
/// their shares), reporting progress lines to `progress`.
pub fn measure(
    budget: Duration,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> Result<Measurements, CalibrateError> {
    use specs::{MICRO_SHARES, SHARES};
    phases::check_budget(budget)?;
    let phase = |share: f64| budget.mul_f64(share);
    progress("inspect: HZ, command line, cpuidle");
    let facts = host_facts()?;
    let nr_cpus = facts.nr_cpus;
    // /proc/stat around every phase: the steal per CPU the text and the file show.
    let stat_start = crate::harness::sample::read_stat();
    let started = std::time::Instant::now();
    let mut warnings = Vec::new();
    let p = phases::Phases::new(nr_cpus, stop);
    let run = |spec: String, d: Duration, what: &str, w: &mut Vec<String>| p.run(spec, d, what, w);
    let idle = p.idle(phase(SHARES[0]), progress, &mut warnings)?;
    let hog_cpu = nr_cpus - 1;
    let hog_loc = p.hog(hog_cpu, phase(SHARES[1]), progress, &mut warnings)?;
    let syscall_ns = p.syscall(phase(SHARES[2]), progress, &mut warnings)?;
    let (same_cpu_rt_ns, cross_cpu_rt_ns) =
        p.round_trips(phase(SHARES[3]), progress, &mut warnings)?;
    let (wakeup, work_unit_ns) =
        wakeup_fit::measure_idle(&run, phase(SHARES[4]), progress, &mut warnings)?;
    let micro = micro::measure(
        nr_cpus,
        phase(MICRO_SHARES[0]),
        phase(MICRO_SHARES[1]),
        stop,
        progress,
    )?;
    let kernel_trace = timer_tracepoints::measure(
        hog_cpu,
        phase(SHARES[5]) / 2,
        &run,
        progress,
        &mut warnings,
        stop,
    )?;
    let busy_wakeup =
        wakeup_fit::measure_busy(&run, hog_cpu, phase(SHARES[6]), progress, &mut warnings)?;
    let measured = started.elapsed();
    // The phases that can refuse the calibration end here.
    let contaminated = p.take_contaminated();
    // Outside the budget, like the KVM ping-pongs: only a guest halts into its hypervisor.
    let halt_wake = if crate::probe::is_vm_guest(std::path::Path::new("/proc")) {
        halt_wake::measure(&run, progress, &mut warnings)?
    } else {
        Vec::new()
    };
    // A contaminated halt-wake point is left out of the curve (`halt_wake::fit`), so it does
    // not refuse the calibration: it is said, and the curve is fitted from the rest.
    for c in p.take_contaminated() {
        warnings.push(format!(
            "{}: {}: left out of the halt-wake curve",
            c.phase, c.why
        ));
    }
    let cpus: Vec<u32> = (0..nr_cpus).collect();
    let steal_pct = match (stat_start, crate::harness::sample::read_stat()) {
        (Some(a), Some(b)) => crate::harness::sample::steal_pct(&a, &b, &cpus, measured),
        _ => {
            warnings.push("/proc/stat unreadable: steal not measured".into());
            vec![None; cpus.len()]
        }
    };
    Ok(Measurements {
        hostname: facts.hostname,
        release: facts.release,
        hz: facts.hz,
        cmdline: facts.cmdline,
        cpuidle_driver: facts.cpuidle_driver,
        idle_states: facts.idle_states,
        nohz_full: facts.nohz_full,
        nr_cpus,
        idle_s: idle.idle_s,
        idle_loc: idle.idle_loc,
        idle_busy: idle.idle_busy,
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
        contaminated,
        steal_pct,
        measured_s: measured.as_secs_f64(),
        halt_wake,
    })
}

/// What the fit stage gives the check stage: the fitted scenario (its run still the fit's
/// window), the fit log and the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedScenario {
    /// The fitted scenario.
    pub scenario: Scenario,
    /// Fit log and caveats, one line each.
    pub notes: Vec<String>,
    /// Which costs were fitted and how.
    pub ledger: CostLedger,
}

/// The fit stage: the machine's costs, the work unit, the tick build, the background sources,
/// the wake-path costs and the one-hog check (`fitting`, `wakeup_fit`), then on a KVM
/// guest `[machine.kvm_host]` fitted to `kvm` (`kvm`), each with `sim` as the twin.
pub fn fit_scenario(
    m: &Measurements,
    kvm: Option<&KvmMeasurements>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<FittedScenario, CalibrateError> {
    let mut notes = Vec::new();
    let mut ledger = CostLedger::new();
    let mut machine = fitting::machine(m, &mut ledger, &mut notes);
    fitting::fit_work_unit(m, &mut machine, &mut ledger, &mut notes);
    let kernel = fitting::kernel(m, &mut notes)?;
    let mut scenario = fitting::background(m, machine, kernel, &mut notes, sim, progress)?;
    // The wake-path costs, with every cost `machine()` fitted and the background in place.
    wakeup_fit::fit(m, &mut scenario, &mut ledger, &mut notes, sim, progress);
    // With every wake-path cost in place: what leaving a halt adds, by sleep length.
    halt_wake::fit(
        &m.halt_wake,
        &mut scenario,
        &mut ledger,
        &mut notes,
        sim,
        progress,
    );
    fitting::check_hog(m, &scenario, &mut notes, sim, progress)?;
    if let Some(k) = kvm {
        kvm::fit_scenario(k, &mut scenario, &mut ledger, &mut notes, sim, progress);
    }
    Ok(FittedScenario {
        scenario,
        notes,
        ledger,
    })
}

/// The check stage: every phase re-run in the twin of the fitted scenario (`fit_quality`)
/// and every preset varied (`sensitivity`); the scenario's run then back to the default.
pub fn check(
    m: &Measurements,
    fitted: FittedScenario,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Calibration {
    let FittedScenario {
        mut scenario,
        notes,
        ledger,
    } = fitted;
    let fit_quality = fit_quality::fit_quality(m, &scenario, sim, progress);
    let sensitivity = sensitivity::sensitivity(m, &scenario, &ledger, sim, progress);
    scenario.run = Run::default();
    Calibration {
        scenario,
        measurements: m.clone(),
        notes,
        fit_quality,
        ledger,
        sensitivity,
    }
}

/// [`fit_scenario`] without KVM measurements, then [`check`].
pub fn fit(
    m: &Measurements,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    let fitted = fit_scenario(m, None, sim, progress)?;
    Ok(check(m, fitted, sim, progress))
}

/// Which contaminated phases [`calibrate`] fits from instead of refusing the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tolerate {
    /// None: any contaminated phase refuses the fit (the CLI's default).
    Nothing,
    /// Phases the hypervisor stole from ([`Contaminant::Steal`]); other load still refuses
    /// (`--tolerate-steal`): what a guest on a shared host can get.
    Steal,
    /// Every contaminated phase (`--force`).
    Everything,
}

impl Tolerate {
    /// Whether a phase contaminated `by` is fitted from.
    pub fn tolerates(self, by: Contaminant) -> bool {
        match self {
            Tolerate::Nothing => false,
            Tolerate::Steal => by == Contaminant::Steal,
            Tolerate::Everything => true,
        }
    }
}

/// The whole pipeline: [`measure`], on a KVM guest `kvm`'s measurement, [`fit_scenario`]
/// (the guest's host wake-up goes into the scenario before the checks run), [`check`].
/// A measurement with a contaminated phase that `tolerate` does not cover is refused
/// ([`CalibrateError::Contaminated`], every contaminated phase listed).
pub fn calibrate(
    budget: Duration,
    stop: &Stop,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
    tolerate: Tolerate,
) -> Result<Calibration, CalibrateError> {
    let m = measure(budget, stop, progress)?;
    // Tolerated, the contaminated phases stay in `m.contaminated` for the caller to report
    // after the run (a progress line would only flash them).
    if m.contaminated.iter().any(|c| !tolerate.tolerates(c.by)) {
        return Err(CalibrateError::Contaminated(m.contaminated));
    }
    let guest = kvm::measure_guest(kvm::CALIBRATE_ROUND_TRIPS, stop, progress)?;
    let fitted = fit_scenario(&m, guest.measured(), sim, progress)?;
    let mut c = check(&m, fitted, sim, progress);
    if let GuestKvm::Skipped(why) = guest {
        c.notes.push(why);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerate_covers_what_its_flag_says() {
        use Contaminant::{OtherLoad, Steal};
        let table = [
            (Tolerate::Nothing, Steal, false),
            (Tolerate::Nothing, OtherLoad, false),
            (Tolerate::Steal, Steal, true),
            (Tolerate::Steal, OtherLoad, false),
            (Tolerate::Everything, Steal, true),
            (Tolerate::Everything, OtherLoad, true),
        ];
        for (tolerate, by, want) in table {
            assert_eq!(tolerate.tolerates(by), want, "{tolerate:?} {by:?}");
        }
    }
}
