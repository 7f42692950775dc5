//! The KVM part of `host calibrate`: on a KVM guest, learn the guest's context switch and its
//! host's wake-up of a blocked vCPU from the futex ping-pong at `guest_halt_poll_ns=0` only
//! (docs/model.md, "This host").
//!
//! [`measure`] sets `haltpoll.guest_halt_poll_ns=0` for the two runs (through a
//! [`ParamGuard`]: restored after them, on error and on Ctrl-C; a record under /run covers a
//! killed run) where the parameter exists, and runs the ping-pong with both tasks on CPU A,
//! then across A and B. [`fit`] turns the two figures into [`KvmGuestCosts`]:
//!
//! * the guest's one-way context switch = the one-CPU ns per switch (**CAL**);
//! * the host's wake-up of a blocked vCPU = the value for which the twin's two-CPU ping-pong
//!   equals the measured one, by bisection (the twin's ns per switch does not fall as the
//!   wake-up grows); a measurement below what the fixed costs already explain leaves it at 0
//!   and shows as a positive residual.
//!
//! The host crate does not depend on the twin: the caller passes the model ([`KvmModel`]; the
//! CLI's `host haltpoll-sweep` passes `ticklab_twin::experiments::e3::HostTwin`). What a
//! cpuidle driver other than `haltpoll` means for the parameter (nothing reads it) is said by
//! [`crate::harness::haltpoll_sweep::IdleSetup::verdict`].
//!
//! # In `host calibrate`
//!
//! [`measure_guest`] runs the two ping-pongs right after the general phases, and
//! [`fit_scenario`] fits the host's wake-up *inside the scenario being fitted*, before its
//! fit-quality checks: the model is the scenario's own guest ping-pong (what `sim` and
//! `host run --twin` run for a `pingpong:` workload) with the candidate wake-up in
//! `[machine.kvm_host]`, so the fitted file reproduces the two-CPU futex figure with exactly
//! the costs it carries, and its `pingpong:pipe@0,1` check uses that wake-up.
//!
//! One guest switch: the scenario keeps the general fit's `context_switch_ns` (the same-CPU
//! pipe round trip, [`super::fitting`]), which the event loop and the ping-pong model both
//! charge, and the wake-up is fitted with it. The one-CPU futex figure is reported in the
//! header, not written as a second switch cost; what it differs by from the pipe fit ends up
//! in the fitted wake-up.

use std::path::Path;
use std::time::Duration;

use ticklab_schema::machine::KvmHost;
use ticklab_schema::report::WorkloadResult;
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::{Workload, WorkloadError};

use super::error::{CalibrateError, SimulatorError, TwinRunError};
use super::ledger::CostLedger;
use super::specs::Simulator;
use crate::harness::haltpoll_sweep::{IdleSetup, pingpong};
use crate::harness::sysfs_params::{ParamGuard, ParamSetting, current_values};
use crate::harness::{HarnessError, RunConfig, Stop};

/// The sysfs file of the parameter calibration pins to 0.
pub(crate) const GUEST_HALT_POLL_NS: &str = "module/haltpoll/parameters/guest_halt_poll_ns";

/// What the twin of a guest is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvmGuestCosts {
    /// cpuidle `current_driver` (`none`, `haltpoll`).
    pub driver: String,
    /// cpuidle `current_governor`.
    pub governor: String,
    /// The guest's HZ.
    pub hz: u32,
    /// The guest's one-way context switch, ns.
    pub context_switch_ns: u64,
    /// The host's wake-up of a blocked vCPU (its idle-state exit and scheduler work), ns.
    pub host_wake_ns: u64,
}

/// The twin: ns per switch of the two-CPU futex ping-pong for these costs at a
/// `guest_halt_poll_ns` value. Err names what the twin does not model.
pub type KvmModel<'a> = &'a dyn Fn(&KvmGuestCosts, u64) -> Result<f64, SimulatorError>;

/// The two measurements at `guest_halt_poll_ns=0`.
#[derive(Debug, Clone, PartialEq)]
pub struct KvmMeasurements {
    /// Driver and governor in force.
    pub idle: IdleSetup,
    /// HZ as the runs reported it.
    pub hz: u32,
    /// ns per switch, both tasks on CPU A.
    pub same_cpu_ns: f64,
    /// ns per switch, tasks on CPUs A and B.
    pub cross_cpu_ns: f64,
    /// The known cpuidle / halt-polling parameters before and after the runs.
    pub params_before: Vec<(String, String)>,
    /// The same after (restored).
    pub params_after: Vec<(String, String)>,
}

/// Why the KVM costs could not be fitted.
#[derive(Debug, thiserror::Error)]
pub enum KvmFitError {
    /// A measured ns per switch is not a positive number.
    #[error(
        "calibration needs positive measurements (one CPU {same_cpu_ns}, two CPUs {cross_cpu_ns})"
    )]
    NotPositive {
        /// One CPU, ns per switch.
        same_cpu_ns: f64,
        /// Two CPUs, ns per switch.
        cross_cpu_ns: f64,
    },
    /// The twin (the [`KvmModel`]) refused a run: what it does not model.
    #[error(transparent)]
    Model(#[from] SimulatorError),
    /// A live sweep measured no point, so there is no calibration point to fit at.
    #[error("no point was measured")]
    NoPoint,
}

/// How [`fit`] takes the guest's switch: the one-CPU futex figure.
pub(crate) const FUTEX_SWITCH: &str = "CAL: one-CPU futex ping-pong, guest_halt_poll_ns=0";

/// Round trips of the two ping-pongs in `host calibrate`.
pub(crate) const CALIBRATE_ROUND_TRIPS: u64 = 20_000;

/// The fitted costs with their provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct KvmCalibration {
    /// The costs.
    pub costs: KvmGuestCosts,
    /// Where the guest's switch in `costs` came from (`FUTEX_SWITCH`, or the scenario's).
    pub switch_how: String,
    /// The twin's two-CPU ns per switch with them, minus the measured one.
    pub residual_ns: f64,
    /// The measurements.
    pub measured: KvmMeasurements,
}

impl KvmCalibration {
    /// The calibrated costs: (name, ns, how obtained).
    pub fn rows(&self) -> Vec<(String, u64, String)> {
        vec![
            (
                "guest one-way context switch".into(),
                self.costs.context_switch_ns,
                self.switch_how.clone(),
            ),
            (
                "host wake of a blocked vcpu".into(),
                self.costs.host_wake_ns,
                format!(
                    "CAL: two-CPU futex ping-pong, guest_halt_poll_ns=0 (residual {:+.1} ns)",
                    self.residual_ns
                ),
            ),
        ]
    }

    /// Lines for the calibration file's comment header.
    pub fn notes(&self) -> Vec<String> {
        let m = &self.measured;
        let mut v = vec![format!(
            "kvm guest (cpuidle driver {}, governor {}): futex ping-pong at guest_halt_poll_ns=0: one CPU {:.1} ns/switch, two CPUs {:.1} ns/switch",
            m.idle.driver, m.idle.governor, m.same_cpu_ns, m.cross_cpu_ns
        )];
        v.extend(
            self.rows()
                .into_iter()
                .map(|(name, ns, how)| format!("kvm {name}: {ns} ns ({how})")),
        );
        v.push(format!("kvm: {}", m.idle.verdict()));
        v
    }

    /// The twin's prediction at `guest_halt_poll_ns` = `ns`.
    pub fn predict(&self, model: KvmModel<'_>, ns: u64) -> Result<f64, KvmFitError> {
        model(&self.costs, ns).map_err(KvmFitError::Model)
    }
}

/// Parameter values as owned (name, value) pairs, as the schema keeps them.
pub(super) fn owned(v: Vec<(&'static str, String)>) -> Vec<(String, String)> {
    v.into_iter().map(|(n, x)| (n.to_string(), x)).collect()
}

/// Runs the two ping-pongs at `guest_halt_poll_ns=0` between `cpus` (root is needed where the
/// parameter exists; without it the runs use whatever is set, and say so through `progress`).
pub fn measure(
    cpus: (u32, u32),
    round_trips: u64,
    max_run: Duration,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> Result<KvmMeasurements, HarnessError> {
    let sys = Path::new("/sys");
    let idle = IdleSetup::read(sys);
    let params_before = owned(current_values(sys));
    let mut guard = if sys.join(GUEST_HALT_POLL_NS).exists() {
        let setting = ParamSetting::parse("haltpoll.guest_halt_poll_ns=0")?;
        Some(ParamGuard::apply(std::slice::from_ref(&setting))?)
    } else {
        progress("no haltpoll module parameters: measuring as the guest is");
        None
    };
    let config = RunConfig {
        duration: max_run,
        ..RunConfig::default()
    };
    let (a, b) = cpus;
    let same = pingpong(a, a, round_trips, &config, stop)?;
    progress(&format!(
        "kvm: one CPU (cpu {a}), guest_halt_poll_ns=0: {:.1} ns/switch",
        same.ns_per_switch
    ));
    let cross = if stop.is_set() {
        None
    } else {
        Some(pingpong(a, b, round_trips, &config, stop)?)
    };
    if let Some(g) = &mut guard {
        let failed = g.restore();
        if !failed.is_empty() {
            return Err(HarnessError::Input(format!(
                "could not restore {}; the restore record under /run stays",
                failed.join(", ")
            )));
        }
    }
    let Some(cross) = cross.filter(|_| !stop.is_set()) else {
        return Err(HarnessError::Input("interrupted".into()));
    };
    progress(&format!(
        "kvm: two CPUs ({a},{b}), guest_halt_poll_ns=0: {:.1} ns/switch",
        cross.ns_per_switch
    ));
    Ok(KvmMeasurements {
        idle,
        hz: cross.hz,
        same_cpu_ns: same.ns_per_switch,
        cross_cpu_ns: cross.ns_per_switch,
        params_before,
        params_after: owned(current_values(sys)),
    })
}

/// Fits the guest's switch (the one-CPU figure) and the host's wake-up to `m` with the twin
/// `model`.
pub fn fit(m: &KvmMeasurements, model: KvmModel<'_>) -> Result<KvmCalibration, KvmFitError> {
    fit_with_switch(m, m.same_cpu_ns.round() as u64, FUTEX_SWITCH, model)
}

/// Fits the host's wake-up to `m` with the twin `model`, the guest's one-way switch taken as
/// `context_switch_ns` (obtained as `switch_how` says).
pub(crate) fn fit_with_switch(
    m: &KvmMeasurements,
    context_switch_ns: u64,
    switch_how: &str,
    model: KvmModel<'_>,
) -> Result<KvmCalibration, KvmFitError> {
    if !(m.same_cpu_ns.is_finite()
        && m.same_cpu_ns >= 1.0
        && m.cross_cpu_ns.is_finite()
        && m.cross_cpu_ns >= 0.0)
    {
        return Err(KvmFitError::NotPositive {
            same_cpu_ns: m.same_cpu_ns,
            cross_cpu_ns: m.cross_cpu_ns,
        });
    }
    let mut costs = KvmGuestCosts {
        driver: m.idle.driver.clone(),
        governor: m.idle.governor.clone(),
        hz: m.hz,
        context_switch_ns,
        host_wake_ns: 0,
    };
    let target = m.cross_cpu_ns;
    let mut at = |wake: u64| -> Result<f64, KvmFitError> {
        costs.host_wake_ns = wake;
        model(&costs, 0).map_err(KvmFitError::Model)
    };
    // ns per switch does not fall as the wake-up grows: bisect for the measured value.
    let wake = if at(0)? >= target {
        0
    } else {
        let (mut lo, mut hi) = (0u64, (target as u64).saturating_mul(2) + 1_000);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if at(mid)? < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (flo, fhi) = (at(lo)?, at(hi)?);
        if (target - flo).abs() <= (fhi - target).abs() {
            lo
        } else {
            hi
        }
    };
    let fitted = at(wake)?;
    costs.host_wake_ns = wake;
    Ok(KvmCalibration {
        costs,
        switch_how: switch_how.to_string(),
        residual_ns: fitted - target,
        measured: m.clone(),
    })
}

/// What `host calibrate`'s KVM measurement found.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestKvm {
    /// The two ping-pongs at `guest_halt_poll_ns=0`.
    Measured(KvmMeasurements),
    /// Why there is nothing to measure (not a guest, one CPU, not root), as a header line.
    Skipped(String),
}

impl GuestKvm {
    /// The measurements, if any.
    pub fn measured(&self) -> Option<&KvmMeasurements> {
        match self {
            GuestKvm::Measured(m) => Some(m),
            GuestKvm::Skipped(_) => None,
        }
    }
}

/// The KVM part of `host calibrate`'s measurements: on a VM guest with two CPUs or more, the
/// ping-pongs at `guest_halt_poll_ns=0` on CPUs 0 and 1 (as root where the parameter exists:
/// it is written for the runs and restored). Elsewhere, why not.
pub(crate) fn measure_guest(
    round_trips: u64,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> Result<GuestKvm, CalibrateError> {
    if !crate::probe::is_vm_guest(Path::new("/proc")) {
        return Ok(GuestKvm::Skipped(
            "kvm: not a VM guest (no hypervisor CPU flag)".into(),
        ));
    }
    if crate::harness::os::possible_cpu_count() < 2 {
        return Ok(GuestKvm::Skipped(
            "kvm: one CPU: no two-CPU ping-pong, KVM calibration skipped".into(),
        ));
    }
    if Path::new("/sys").join(GUEST_HALT_POLL_NS).exists() && !crate::probe::is_root() {
        return Ok(GuestKvm::Skipped(
            "kvm: not root, so guest_halt_poll_ns cannot be pinned to 0: KVM calibration skipped"
                .into(),
        ));
    }
    let m = measure((0, 1), round_trips, Duration::from_secs(30), stop, progress).map_err(
        |source| {
            if stop.is_set() {
                CalibrateError::Interrupted
            } else {
                CalibrateError::Harness {
                    phase: "kvm ping-pong".into(),
                    source,
                }
            }
        },
    )?;
    Ok(GuestKvm::Measured(m))
}

/// The ping-pong the scenario's model runs to fit the wake-up: `futex@0,1`, as measured.
fn futex_spec(round_trips: u64) -> String {
    format!("pingpong:futex@0,1:n={round_trips}")
}

/// Round trips of each model run in [`fit_scenario`]'s bisection.
const MODEL_ROUND_TRIPS: u64 = 10_000;

/// `scenario` with the guest `c` and `guest_halt_poll_ns` = `ns`, running the futex ping-pong
/// across CPUs 0 and 1.
fn with_guest(scenario: &Scenario, c: &KvmGuestCosts, ns: u64) -> Result<Scenario, WorkloadError> {
    let mut s = scenario.clone();
    s.machine.costs.context_switch_ns = c.context_switch_ns;
    s.machine.kvm_host = Some(KvmHost {
        host_wake_ns: c.host_wake_ns,
        host_halt_poll_ns: None,
    });
    if s.machine.cpuidle_driver == "haltpoll" {
        s.kernel.cmdline = format!("{} haltpoll.guest_halt_poll_ns={ns}", s.kernel.cmdline)
            .trim()
            .to_string();
    }
    s.workload = Workload::parse(&futex_spec(MODEL_ROUND_TRIPS), s.machine.topology.nr_cpus())?;
    Ok(s)
}

/// Fits `[machine.kvm_host]` of `scenario` to `m` with the scenario's own guest ping-pong
/// (run through `sim`) and its own `context_switch_ns` (module docs), and registers it in the
/// ledger. A model that refuses the guest leaves the scenario without the section, and a note
/// says why.
pub(crate) fn fit_scenario(
    m: &KvmMeasurements,
    scenario: &mut Scenario,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
    sim: Simulator<'_>,
    progress: &mut dyn FnMut(&str),
) -> Option<KvmCalibration> {
    let switch = scenario.machine.costs.context_switch_ns;
    let run = |c: &KvmGuestCosts, ns: u64| -> Result<f64, TwinRunError> {
        let report = sim(&with_guest(scenario, c, ns)?)?;
        report
            .workloads
            .iter()
            .find_map(|w| match w {
                WorkloadResult::PingPong(p) if p.round_trips > 0 => Some(p.ns_per_switch),
                _ => None,
            })
            .ok_or(TwinRunError::NoPingPong)
    };
    // The scenario's guest model behind the KvmModel seam: its run's error, boxed whole.
    let model = |c: &KvmGuestCosts, ns: u64| run(c, ns).map_err(SimulatorError::new);
    progress("kvm: fitting the host wake-up in the scenario's guest ping-pong");
    let cal = match fit_with_switch(
        m,
        switch,
        "the scenario's costs.context_switch_ns (pipe fit)",
        &model,
    ) {
        Ok(cal) => cal,
        Err(e) => {
            notes.push(format!("kvm: no twin of this guest: {e}"));
            return None;
        }
    };
    for (name, ns, how) in cal.rows() {
        progress(&format!("kvm: {name} = {ns} ns ({how})"));
    }
    scenario.machine.kvm_host = Some(KvmHost {
        host_wake_ns: cal.costs.host_wake_ns,
        host_halt_poll_ns: None,
    });
    ledger.fitted(
        "kvm_host.host_wake_ns",
        format!(
            "two-CPU futex ping-pong at guest_halt_poll_ns=0, bisected in the scenario's guest ping-pong (residual {:+.1} ns/switch); host halt polling unknown, absorbed",
            cal.residual_ns
        ),
    );
    if let Some(how) = ledger.how("costs.context_switch_ns").map(str::to_string) {
        ledger.fitted(
            "costs.context_switch_ns",
            format!("{how}; the one guest switch: kvm_host.host_wake_ns was fitted with it"),
        );
    }
    notes.extend(cal.notes());
    notes.push(format!(
        "kvm: one guest switch in this file, costs.context_switch_ns = {switch} ns (the pipe fit), charged by the event loop and the guest ping-pong alike; the one-CPU futex ping-pong's {:.0} ns/switch is shown, not used, and what it differs by is inside host_wake_ns",
        m.same_cpu_ns
    ));
    Some(cal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(same: f64, cross: f64) -> KvmMeasurements {
        KvmMeasurements {
            idle: IdleSetup {
                driver: "none".into(),
                governor: "menu".into(),
            },
            hz: 250,
            same_cpu_ns: same,
            cross_cpu_ns: cross,
            params_before: Vec::new(),
            params_after: Vec::new(),
        }
    }

    #[test]
    fn fit_finds_the_wake_up_that_reproduces_the_measurement() {
        // A stand-in model: two switches' worth of fixed cost, plus the wake-up.
        let model = |c: &KvmGuestCosts, _ns: u64| {
            Ok(c.context_switch_ns as f64 + c.host_wake_ns as f64 + 500.0)
        };
        // (one CPU, two CPUs, fitted wake-up, residual)
        let table = [
            (1500.0, 9000.0, 7000, 0.0),
            (1500.0, 2000.0, 0, 0.0),
            (1500.0, 100.0, 0, 1900.0), // below what the fixed costs explain
            (1500.0, 2000.4, 0, -0.4),
        ];
        for (same, cross, wake, residual) in table {
            let c = fit(&measured(same, cross), &model).unwrap();
            assert_eq!(c.costs.host_wake_ns, wake, "{same} {cross}");
            assert!((c.residual_ns - residual).abs() < 1e-9, "{c:?}");
            assert_eq!(c.costs.context_switch_ns, 1500);
        }
        assert!(fit(&measured(f64::NAN, 9000.0), &model).is_err());
        let refusing = |_: &KvmGuestCosts, _: u64| Err(SimulatorError::new("not modelled"));
        assert!(fit(&measured(1500.0, 9000.0), &refusing).is_err());
    }

    /// A stand-in twin: the futex ping-pong costs the switch plus the scenario's host
    /// wake-up plus 500 ns; other workloads are refused.
    fn stand_in(s: &Scenario) -> Result<ticklab_schema::report::Report, SimulatorError> {
        let wake = s
            .machine
            .kvm_host
            .ok_or_else(|| SimulatorError::new("no kvm_host"))?
            .host_wake_ns;
        let ns = (s.machine.costs.context_switch_ns + wake + 500) as f64;
        use ticklab_schema::report::{Report, Source};
        let mut r = Report::new(Source::Twin { seed: 1 }, "t", "m", "", 250, 1);
        r.workloads.push(WorkloadResult::PingPong(
            ticklab_schema::report::PingPongReport {
                method: ticklab_schema::workload::PingPongMethod::Futex,
                cpus: (0, 1),
                round_trips: MODEL_ROUND_TRIPS,
                ns_per_switch: ns,
                ns_per_round_trip: 2.0 * ns,
            },
        ));
        Ok(r)
    }

    fn guest_scenario() -> Scenario {
        let text =
            "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.1\"\nhz = 250\nnohz = \"idle\"\n";
        let mut s = Scenario::from_toml(text, "t").unwrap();
        s.machine.cpuidle_driver = "none".into();
        s.machine.costs.context_switch_ns = 4000;
        s
    }

    #[test]
    fn the_scenario_carries_the_wake_up_fitted_with_its_own_switch() {
        let mut s = guest_scenario();
        let (mut ledger, mut notes) = (CostLedger::new(), Vec::new());
        ledger.fitted("costs.context_switch_ns", "pipe");
        // Two CPUs measured at 9000 ns/switch: 9000 − 4000 (the scenario's switch, not the
        // futex one-CPU 1500) − 500.
        let cal = fit_scenario(
            &measured(1500.0, 9000.0),
            &mut s,
            &mut ledger,
            &mut notes,
            &stand_in,
            &mut |_| {},
        )
        .expect("fitted");
        assert_eq!(cal.costs.host_wake_ns, 4500);
        assert_eq!(cal.costs.context_switch_ns, 4000);
        assert_eq!(
            s.machine.kvm_host,
            Some(KvmHost {
                host_wake_ns: 4500,
                host_halt_poll_ns: None
            })
        );
        assert_eq!(
            s.machine.costs.context_switch_ns, 4000,
            "one switch, unchanged"
        );
        assert!(ledger.how("kvm_host.host_wake_ns").is_some());
        assert!(
            ledger
                .how("costs.context_switch_ns")
                .is_some_and(|h| h.starts_with("pipe;") && h.contains("kvm_host")),
            "{ledger:?}"
        );
        let notes = notes.join("\n");
        assert!(
            notes.contains("1500 ns/switch is shown, not used"),
            "{notes}"
        );
        // A model that refuses the guest: no section, a note.
        let mut t = guest_scenario();
        let refuse = |_: &Scenario| -> Result<ticklab_schema::report::Report, SimulatorError> {
            Err(SimulatorError::new("not modelled"))
        };
        let mut notes = Vec::new();
        let none = fit_scenario(
            &measured(1500.0, 9000.0),
            &mut t,
            &mut CostLedger::new(),
            &mut notes,
            &refuse,
            &mut |_| {},
        );
        assert!(none.is_none());
        assert_eq!(t.machine.kvm_host, None);
        assert_eq!(notes, ["kvm: no twin of this guest: not modelled"]);
    }

    #[test]
    fn notes_name_every_learnt_cost_and_the_driver() {
        let model = |c: &KvmGuestCosts, _: u64| Ok(c.host_wake_ns as f64);
        let c = fit(&measured(1500.0, 9000.0), &model).unwrap();
        let notes = c.notes().join("\n");
        assert!(notes.contains("guest one-way context switch: 1500 ns"));
        assert!(notes.contains("host wake of a blocked vcpu: 9000 ns"));
        assert!(notes.contains("no effect"), "{notes}");
    }

    #[test]
    fn guest_detection_reads_the_hypervisor_flag() {
        use crate::probe::is_vm_guest;
        let dir = std::env::temp_dir().join(format!("ticklab-kvm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu vme hypervisor\n",
        )
        .unwrap();
        assert!(is_vm_guest(&dir));
        std::fs::write(dir.join("cpuinfo"), "processor\t: 0\nflags\t\t: fpu vme\n").unwrap();
        assert!(!is_vm_guest(&dir));
        assert!(!is_vm_guest(Path::new("/nonexistent-proc")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
