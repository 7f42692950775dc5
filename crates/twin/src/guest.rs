//! The twin's second engine: a scenario whose workload is one ping-pong group, run in the
//! modelled KVM guest ([`GuestPingPong`], walked wake point by wake point) instead of the
//! event loop. [`simulate_pingpong`] reads the guest's idle path and host from the scenario;
//! [`HostTwin`] is the same model set up from the costs `host calibrate` fitted, for the live
//! `guest_halt_poll_ns` sweep.

pub use crate::error::GuestModelError;
use ticklab_cmdline::HaltpollParams;
use ticklab_schema::machine::{Costs, KvmHost, Machine, xps13_7390};

use crate::kernel::cpuidle::governor_by_name;
use crate::kernel::cpuidle::guest_idle::GuestIdlePath;
use crate::kernel::idle::IdleEntryTick;
use crate::kernel::idle::NoDriverTick;
use crate::kernel::kvm::{HostHaltPollParams, HostIdleParams, KvmCosts};
use crate::workloads::pingpong::{GuestPingPong, GuestSetup, PingPongLoop, PingPongOutcome};
use ticklab_schema::report::{PingPongReport, Report, Source, WorkloadResult};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::TaskGroup;

/// The host under a modelled guest, as the ping-pong model charges it: its exit and wake-up
/// costs, its halt polling, and the idle states a blocked vCPU's host CPU rests in. The one
/// place that decides these for a guest, whether published ([`GuestHost::published_2017`])
/// or learnt by calibration ([`GuestHost::calibrated`]); [`HostTwin`] and
/// [`simulate_pingpong`] both build theirs here.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestHost {
    /// Exit and wake-up costs.
    pub kvm: KvmCosts,
    /// Host halt polling.
    pub host_poll: HostHaltPollParams,
    /// Where a blocked vCPU's host CPU idles.
    pub host_idle: HostIdleParams,
}

impl GuestHost {
    /// The host of the published 2017 experiment: [`KvmCosts::skylake_2017`], the host
    /// kernel's default halt polling, a Skylake server's `intel_idle` table under the 4.x
    /// menu governor (the assumptions of [`results`](crate::experiments::e3::results)).
    pub fn published_2017() -> GuestHost {
        GuestHost {
            kvm: KvmCosts::skylake_2017(),
            host_poll: HostHaltPollParams::kvm_default(),
            host_idle: HostIdleParams::skx_intel_idle_4x(),
        }
    }

    /// The host a guest's calibration learnt (`[machine.kvm_host]`, docs/model.md "This
    /// host"): the wake-up of a blocked vCPU is [`KvmCosts::host_switch_ns`], the host's idle
    /// states are unknown and folded into it ([`HostIdleParams::absorbed`]), and host halt
    /// polling is off unless the section says what it is (invisible from inside the guest,
    /// so an unknown one is absorbed in the wake-up too). The other exit costs stay the
    /// estimates of [`KvmCosts::skylake_2017`].
    pub fn calibrated(k: &KvmHost) -> GuestHost {
        let mut kvm = KvmCosts::skylake_2017();
        kvm.host_switch_ns = k.host_wake_ns;
        GuestHost {
            kvm,
            host_poll: k
                .host_halt_poll_ns
                .map_or_else(HostHaltPollParams::off, HostHaltPollParams::with_max),
            host_idle: HostIdleParams::absorbed(),
        }
    }

    /// The host of a scenario's machine: [`GuestHost::calibrated`] when the machine carries
    /// `[machine.kvm_host]`, else [`GuestHost::published_2017`].
    pub fn of_machine(m: &Machine) -> GuestHost {
        m.kvm_host
            .as_ref()
            .map_or_else(GuestHost::published_2017, GuestHost::calibrated)
    }

    /// The ping-pong setup of a guest with `costs` on this host.
    pub fn setup(self, costs: Costs, idle: GuestIdlePath, tick_period_ns: u64) -> GuestSetup {
        GuestSetup {
            // The host lab's harness (and `sim`'s ping-pong spec): a strict alternation.
            benchmark: PingPongLoop::Blocking,
            costs,
            kvm: self.kvm,
            host_poll: self.host_poll,
            host_idle: self.host_idle,
            idle,
            tick_period_ns,
            // The published and calibrated setups say nothing of the kernel's release;
            // `simulate_pingpong` sets the scenario's rule. Current kernels' idle loop (a
            // calibrated guest runs one).
            no_driver_tick: NoDriverTick::EveryEntry,
            idle_entry_tick: IdleEntryTick::PerPath,
            idle_vcpus: 0,
        }
    }
}

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
    guest_report(
        scenario,
        PingPongReport {
            method,
            cpus,
            round_trips: o.round_trips,
            ns_per_switch: o.ns_per_switch(),
            ns_per_round_trip: o.ns_per_round_trip(),
        },
        o.elapsed_ns,
    )
}

/// The report of a guest ping-pong run: the header, the round trip, no per-CPU counters
/// (the model has none), and a warning saying so.
pub(crate) fn guest_report(
    scenario: &Scenario,
    pingpong: ticklab_schema::report::PingPongReport,
    elapsed_ns: u64,
) -> Report {
    Report {
        workloads: vec![WorkloadResult::PingPong(pingpong)],
        warnings: vec![
            "the E3 guest model gives the ping-pong's round trip, no per-CPU counters".into(),
        ],
        ..Report::new(
            Source::Twin {
                seed: scenario.run.seed,
            },
            scenario.name.clone(),
            scenario.machine.name.clone(),
            scenario.kernel.cmdline.clone(),
            scenario.kernel.hz,
            elapsed_ns,
        )
    }
}

/// Events the guest model is counted for when `switches` context switches run, for the
/// compute limit: four per round trip, as [`Scenario::estimated_events`] counts a ping-pong.
///
/// [`Scenario::estimated_events`]: ticklab_schema::scenario::Scenario::estimated_events
pub fn estimated_events(switches: u64) -> f64 {
    2.0 * switches as f64
}
