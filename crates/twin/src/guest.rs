//! The twin's second engine: a scenario whose workload is one ping-pong group, run in the
//! modelled KVM guest ([`GuestPingPong`], walked wake point by wake point) instead of the
//! event loop. [`simulate_pingpong`] reads the guest's idle path and host from the scenario;
//! [`HostTwin`] is the same model set up from the costs `host calibrate` fitted, for the live
//! `guest_halt_poll_ns` sweep.

use ticklab_cmdline::HaltpollParams;
use ticklab_schema::machine::{Costs, KvmHost, xps13_7390};

use crate::experiments::e3::GuestHost;
use crate::kernel::cpuidle::governor_by_name;
use crate::kernel::cpuidle::guest_idle::GuestIdlePath;
use crate::kernel::idle::NoDriverTick;
use crate::kernel::kvm::ExitReason;
use crate::workloads::pingpong::{GuestPingPong, PingPongGroupError, PingPongOutcome};
use ticklab_schema::report::{GuestPingPongRun, PingPongReport, Report};
use ticklab_schema::scenario::KernelError;
use ticklab_schema::workload::TaskGroup;

/// Why [`HostTwin::new`] refused a setup: a cost or an idle path the guest twin does not model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostTwinError {
    /// The guest's one-way context switch is 0 ns.
    #[error("the guest's context switch must be positive")]
    ZeroContextSwitch,
    /// A cpuidle driver other than `none` and `haltpoll`.
    #[error("cpuidle driver {driver:?}: the guest twin models `none` (HLT) and `haltpoll`")]
    Driver {
        /// The driver as given.
        driver: String,
    },
    /// A governor the haltpoll driver cannot run under.
    #[error("cpuidle governor {governor:?}: the guest twin models haltpoll, teo, menu and ladder")]
    Governor {
        /// The governor as given.
        governor: String,
    },
}

/// Why [`simulate_pingpong`] refused a scenario: what the guest ping-pong model does not
/// model, or a kernel section it cannot read.
#[derive(Debug, thiserror::Error)]
pub enum GuestModelError {
    /// The workload is not one ping-pong group alone.
    #[error("workload {workload}: the guest model runs one ping-pong group alone")]
    NotOnePingPong {
        /// The workload's label.
        workload: String,
    },
    /// The machine is not a KVM guest (its cpuidle driver is neither `haltpoll` nor `none`).
    #[error(
        "machine {machine}: the ping-pong is modelled in a KVM guest (cpuidle driver haltpoll or none, e.g. --machine kvm-guest-2), not on driver {driver:?}"
    )]
    NotAGuest {
        /// The machine's name.
        machine: String,
        /// Its cpuidle driver.
        driver: String,
    },
    /// The kernel section's version or command line does not resolve.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// `cpuidle.governor=` names a governor the model does not have.
    #[error("cpuidle.governor={governor}: not modelled")]
    Governor {
        /// The governor as given.
        governor: String,
    },
    /// The guest idle path names a governor the model does not have.
    #[error("unknown governor")]
    UnknownGovernor,
    /// The ping-pong group cannot run in the two-vCPU guest.
    #[error(transparent)]
    Group(#[from] PingPongGroupError),
}

/// The twin of a live guest, built from the costs `host calibrate` learnt at
/// `guest_halt_poll_ns=0` (the fitting is in `ticklab_host::calibrate::kvm`):
///
/// * the guest's one-way context switch (**CAL**: the one-CPU ping-pong);
/// * the host's wake-up of a blocked vCPU, [`KvmCosts::host_switch_ns`](crate::kernel::kvm::KvmCosts::host_switch_ns) with the host's idle
///   states unknown and so absorbed in it ([`HostIdleParams::absorbed`](crate::kernel::kvm::HostIdleParams::absorbed)) (**CAL**: the
///   two-CPU ping-pong).
///
/// Everything else stays at the estimates of [`KvmCosts::skylake_2017`](crate::kernel::kvm::KvmCosts::skylake_2017) and the native guest
/// costs; host halt polling is taken as off (it is invisible from inside the guest, and the
/// fitted wake-up absorbs whatever the host does).
#[derive(Debug, Clone)]
pub struct HostTwin {
    costs: Costs,
    host: GuestHost,
    driver: String,
    governor: String,
    tick_period_ns: u64,
}

/// Switches per twin run when calibrating and predicting.
pub const HOST_TWIN_SWITCHES: u64 = 20_000;

impl HostTwin {
    /// The twin of a guest whose one-way switch costs `context_switch_ns` and whose host wakes
    /// a blocked vCPU in `host_wake_ns`, with the given cpuidle driver and governor (`none` or
    /// `haltpoll`) at `hz`. Err names an unsupported setup.
    pub fn new(
        context_switch_ns: u64,
        host_wake_ns: u64,
        driver: &str,
        governor: &str,
        hz: u32,
    ) -> Result<HostTwin, HostTwinError> {
        if context_switch_ns == 0 {
            return Err(HostTwinError::ZeroContextSwitch);
        }
        if !matches!(driver, "none" | "haltpoll") {
            return Err(HostTwinError::Driver {
                driver: driver.into(),
            });
        }
        if driver == "haltpoll" && governor_by_name(governor, HaltpollParams::default()).is_none() {
            return Err(HostTwinError::Governor {
                governor: governor.into(),
            });
        }
        let mut costs = xps13_7390().costs;
        costs.context_switch_ns = context_switch_ns;
        Ok(HostTwin {
            costs,
            host: GuestHost::calibrated(&KvmHost {
                host_wake_ns,
                host_halt_poll_ns: None,
            }),
            driver: driver.into(),
            governor: governor.into(),
            tick_period_ns: 1_000_000_000 / u64::from(hz.max(1)),
        })
    }

    /// The costs that stay estimates: (name, ns, source).
    pub fn fixed_costs(&self) -> Vec<(String, u64, String)> {
        vec![
            (
                "msr-write exit (tsc deadline, icr)".into(),
                self.host.kvm.msr_write_exit_ns,
                "E: KvmCosts::skylake_2017, not calibrated".into(),
            ),
            (
                "vm exit + entry (bare)".into(),
                self.host.kvm.exit_entry_ns,
                "M/D: KvmCosts::skylake_2017, not calibrated".into(),
            ),
        ]
    }

    /// The guest idle path this host takes with `guest_halt_poll_ns` = `ns`.
    pub fn idle_path(&self, ns: u64) -> GuestIdlePath {
        if self.driver == "haltpoll" {
            GuestIdlePath::Cpuidle {
                governor: self.governor.clone(),
                params: HaltpollParams {
                    guest_halt_poll_ns: ns,
                    ..HaltpollParams::default()
                },
            }
        } else {
            GuestIdlePath::Hlt
        }
    }

    /// The twin's ping-pong across two vCPUs at `guest_halt_poll_ns` = `ns`.
    pub fn predict(&self, ns: u64) -> PingPongOutcome {
        let setup =
            self.host
                .clone()
                .setup(self.costs.clone(), self.idle_path(ns), self.tick_period_ns);
        GuestPingPong::new(setup)
            .expect("HostTwin::new checked the governor")
            .run(HOST_TWIN_SWITCHES / 2, false)
    }
}

/// A scenario whose workload is one ping-pong group, run in the modelled KVM guest (what
/// `ticklab sim --machine kvm-guest-2 --workload pingpong:…` does).
///
/// The scenario decides the guest's idle path: the machine's cpuidle driver (`haltpoll` or
/// `none`), and from the command line `idle=poll`, `cpuidle.off=1`, `cpuidle.governor=` and
/// the `haltpoll.*` parameters; its HZ gives the tick period. The guest's costs are the
/// machine's (`[machine.costs]`; note that the `kvm-guest` preset's interrupt and timer costs
/// already fold in exits, which this model charges again from the host's costs). The host is
/// [`GuestHost::of_machine`]: the calibrated one when the machine carries
/// `[machine.kvm_host]` (as `host calibrate` writes on a KVM guest), else the published 2017
/// host. Err names what is not modelled.
pub fn simulate_pingpong(
    scenario: &ticklab_schema::scenario::Scenario,
) -> Result<PingPongOutcome, GuestModelError> {
    use ticklab_cmdline::IdleOverride;
    let [group @ ticklab_schema::workload::TaskGroup::PingPong { .. }] =
        &scenario.workload.groups[..]
    else {
        return Err(GuestModelError::NotOnePingPong {
            workload: scenario.workload.label(),
        });
    };
    let m = &scenario.machine;
    if !matches!(m.cpuidle_driver.as_str(), "haltpoll" | "none") {
        return Err(GuestModelError::NotAGuest {
            machine: m.name.clone(),
            driver: m.cpuidle_driver.clone(),
        });
    }
    let k = &scenario.kernel;
    let nr = m.topology.nr_cpus();
    let build = k.build()?;
    let cfg = k.resolve(nr)?.config;
    let idle = if cfg.idle == IdleOverride::Poll {
        GuestIdlePath::IdlePoll
    } else if cfg.cpuidle_off || m.cpuidle_driver == "none" {
        GuestIdlePath::Hlt
    } else {
        let governor = cfg.governor.clone().unwrap_or_else(|| "haltpoll".into());
        if governor_by_name(&governor, cfg.haltpoll).is_none() {
            return Err(GuestModelError::Governor { governor });
        }
        GuestIdlePath::Cpuidle {
            governor,
            params: cfg.haltpoll,
        }
    };
    // The scenario's own machine: its costs are the guest's (a calibrated twin of this host
    // carries the switch and syscall costs `host calibrate` fitted), its `[machine.kvm_host]`
    // the host's wake-up calibration learnt.
    let mut setup = GuestHost::of_machine(m).setup(m.costs.clone(), idle, k.tick_nsec());
    setup.no_driver_tick = NoDriverTick::for_kernel(build.version, k.sublevel());
    Ok(GuestPingPong::new(setup)
        .ok_or(GuestModelError::UnknownGovernor)?
        .run_group(group)?)
}

/// The report of a guest ping-pong run of `scenario` (its one group) with outcome `o`.
pub fn report(scenario: &ticklab_schema::scenario::Scenario, o: &PingPongOutcome) -> Report {
    let (method, cpus) = match &scenario.workload.groups[..] {
        [
            TaskGroup::PingPong {
                method,
                cpu_a,
                cpu_b,
                ..
            },
        ] => (*method, (*cpu_a, *cpu_b)),
        _ => unreachable!("simulate_pingpong refuses any other workload"),
    };
    crate::entry::guest_report(
        scenario,
        PingPongReport {
            method,
            cpus,
            round_trips: o.switches / 2,
            ns_per_switch: o.ns_per_switch(),
            ns_per_round_trip: 2.0 * o.ns_per_switch(),
        },
        o.elapsed_ns,
    )
}

/// What `ticklab sim` shows of a guest ping-pong run: the model's own figures (exits by
/// reason, guest and host CPU), after the compute limit of `options`.
pub fn pingpong_run(
    scenario: &ticklab_schema::scenario::Scenario,
    options: &crate::RunOptions<'_>,
) -> Result<GuestPingPongRun, crate::SimError> {
    options.check_compute([scenario])?;
    let o = simulate_pingpong(scenario).map_err(crate::SimError::GuestModel)?;
    Ok(GuestPingPongRun {
        cmdline: scenario.kernel.cmdline.clone(),
        exits_per_switch: ExitReason::ALL
            .iter()
            .map(|&r| (r.name().to_string(), o.exits_per_switch(r)))
            .collect(),
        guest_busy_pct: o.guest_busy_pct(),
        host_cpu_pct: o.host_cpu_pct(),
        host_poll_pct: o.host_poll_pct(),
        machine: scenario.machine.name.clone(),
        ns_per_switch: o.ns_per_switch(),
        schema_version: ticklab_schema::report::REPORT_SCHEMA_VERSION,
        switches: o.switches,
        workload: scenario.workload.label(),
    })
}

/// Events the guest model is counted for when `switches` context switches run, for the
/// compute limit: four per round trip, as [`Scenario::estimated_events`] counts a ping-pong.
///
/// [`Scenario::estimated_events`]: ticklab_schema::scenario::Scenario::estimated_events
pub fn estimated_events(switches: u64) -> f64 {
    2.0 * switches as f64
}
