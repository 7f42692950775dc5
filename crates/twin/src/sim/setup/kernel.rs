//! The kernel at boot: the boot line resolved against the build (the tick configuration, the
//! release and the boot messages, with ticklab's notes on what it keeps but does not model),
//! the idle states as cpuidle registers them, and the timer-migration state.

use super::super::TimerMigrationState;
use crate::error::SimError;
use crate::kernel::cpuidle::IdleStateParams;
use ticklab_cmdline::{NohzBuild, ResolvedKernel, TickConfig};
use ticklab_schema::report::KernelMessage;
use ticklab_schema::scenario::Scenario;

/// The kernel as resolved at boot.
pub(super) struct Kernel {
    /// The tick configuration the command line and build give.
    pub(super) cfg: TickConfig,
    /// `(major, minor)`.
    pub(super) version: (u32, u32),
    /// Boot messages.
    pub(super) messages: Vec<KernelMessage>,
}

/// Parses the command line and resolves it against the kernel build: the tick
/// configuration, the kernel version and the boot messages.
pub(super) fn resolve_kernel(scenario: &Scenario, nr: u32) -> Result<Kernel, SimError> {
    let k = &scenario.kernel;
    let ResolvedKernel {
        cmdline: cmd,
        config: cfg,
        messages: boot_msgs,
    } = k.resolve(nr)?;
    let version = k.build()?.version;
    let mut messages: Vec<KernelMessage> = boot_msgs
        .into_iter()
        .map(|m| KernelMessage {
            at_ns: 0,
            origin: m.origin,
            text: m.text,
        })
        .collect();
    if !cmd.unknown.is_empty() {
        // Unknown parameters are kept and listed, never fatal (they may matter to a kernel
        // the twin does not model).
        messages.push(KernelMessage::ticklab(
            0,
            format!(
                "parameters kept but not modelled: {}",
                cmd.unknown.join(" ")
            ),
        ));
        for (raw, known) in cmd.near_misses() {
            messages.push(KernelMessage::ticklab(
                0,
                format!("unknown parameter `{raw}`: did you mean `{known}`?"),
            ));
        }
    }
    if !cfg.highres && k.nohz != NohzBuild::Periodic {
        messages.push(KernelMessage::ticklab(
            0,
            "highres=off is modelled with high-resolution hrtimer expiry",
        ));
    }
    Ok(Kernel {
        cfg,
        version,
        messages,
    })
}

/// The machine's idle states as cpuidle sees them (`intel_idle.max_cstate` disables deeper ones).
pub(super) fn idle_states(scenario: &Scenario, cfg: &TickConfig) -> Vec<IdleStateParams> {
    scenario
        .machine
        .idle_states
        .iter()
        .enumerate()
        .map(|(i, s)| IdleStateParams {
            name: s.name.clone().into(),
            exit_latency_ns: s.exit_latency_ns,
            target_residency_ns: s.target_residency_ns,
            polling: s.polling,
            disabled: cfg
                .intel_idle_max_cstate
                .is_some_and(|max| i > max as usize),
        })
        .collect()
}

/// The timer-migration state of a boot: on while dyntick idle is active (`nohz=off` or a
/// periodic build never enables `timers_migration_enabled`).
pub(super) fn timer_migration_state(
    cfg: &TickConfig,
    version: (u32, u32),
    nohz_idle: bool,
    nr: u32,
) -> TimerMigrationState {
    TimerMigrationState {
        enabled: nohz_idle,
        version,
        timer_housekeeping: (0..nr)
            .map(|c| cfg.timer_housekeeping.contains(c))
            .collect(),
        in_domains: (0..nr).map(|c| !cfg.isolated_domain.contains(c)).collect(),
    }
}

/// The load balance of a PREEMPT_RT boot: each CPU's lowest scheduler domain among the CPUs
/// `isolcpus=domain` leaves in the domains (the others are on the null domain and never
/// balance), every CPU balanced last at `jiffies`, the boot's; the idle load balancer with
/// each CPU in the domains in its socket's cache domain and the `nohz_full` CPUs never kicked.
pub(super) fn sched_balance(
    scenario: &Scenario,
    cfg: &TickConfig,
    jiffies: u64,
) -> crate::kernel::sched_balance::SchedBalance {
    use crate::kernel::sched_balance::{
        NohzIdleBalance, PeriodicBalance, SchedBalance, lowest_domain_weight,
    };
    let t = &scenario.machine.topology;
    let nr = t.nr_cpus();
    let in_domains = (0..nr)
        .filter(|&c| !cfg.isolated_domain.contains(c))
        .count() as u32;
    let weight = lowest_domain_weight(
        t.sockets,
        t.cores_per_socket,
        t.threads_per_core,
        in_domains,
    );
    let weights: Vec<Option<u32>> = (0..nr)
        .map(|c| weight.filter(|_| !cfg.isolated_domain.contains(c)))
        .collect();
    let hz = scenario.kernel.hz;
    let llc = (0..nr)
        .map(|c| weights[c as usize].map(|_| t.socket_of(c)))
        .collect();
    let may_balance = (0..nr).map(|c| !cfg.nohz_full.contains(c)).collect();
    SchedBalance {
        periodic: PeriodicBalance::new(&weights, hz, jiffies),
        nohz: NohzIdleBalance::new(llc, may_balance, hz, jiffies),
    }
}
