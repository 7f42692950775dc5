//! The machine as data: topology, costs, cpuidle states, power and timer hardware. The
//! presets (`presets.rs`, `e4_servers.rs`) fill these in; this file names no preset.

use super::halt_wake::HaltWake;
use super::kvm_host::KvmHost;
use serde::{Deserialize, Serialize};

/// A machine the twin can run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Preset name (`xps13-7390`).
    pub name: String,
    /// One line for tables.
    pub description: String,
    /// Sockets, cores, SMT.
    pub topology: Topology,
    /// Per-operation costs.
    pub costs: Costs,
    /// cpuidle driver name (`intel_idle`, `haltpoll`, `none`).
    pub cpuidle_driver: String,
    /// The driver's idle states, shallowest first. Index 0 may be a polling state.
    pub idle_states: Vec<IdleState>,
    /// Power model of one package.
    pub power: PowerModel,
    /// The per-CPU clock event device.
    pub clockevent: ClockEventSpec,
    /// The clocksource used for timekeeping.
    pub clocksource: ClocksourceSpec,
    /// On a KVM guest, what calibration learnt of its host (`[machine.kvm_host]`). `None`
    /// for the presets and in older scenario files: the published host estimates apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kvm_host: Option<KvmHost>,
    /// On a VM guest, the exit cost of a halted vCPU against how long it slept
    /// (`[machine.halt_wake]`, [`HaltWake`]), which then replaces the constant exit latency
    /// of the idle states that halt. `None` for the presets and in older scenario files: every
    /// state keeps its own latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_wake: Option<HaltWake>,
}

/// CPU topology. Logical CPUs are numbered like x86 Linux enumerates them: first one thread of
/// every core (socket by socket), then the SMT siblings, so CPU `n` and `n + cores` share a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Sockets (packages).
    pub sockets: u32,
    /// Cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core.
    pub threads_per_core: u32,
}

impl Topology {
    /// Number of logical CPUs (saturating: a product past `u32::MAX` reads as `u32::MAX`,
    /// which [`Machine::validate`] refuses, never as a wrapped small number).
    pub fn nr_cpus(&self) -> u32 {
        self.sockets
            .saturating_mul(self.cores_per_socket)
            .saturating_mul(self.threads_per_core)
    }

    /// Number of physical cores (saturating, like [`Topology::nr_cpus`]).
    pub fn nr_cores(&self) -> u32 {
        self.sockets.saturating_mul(self.cores_per_socket)
    }

    /// Core of a logical CPU (`0..nr_cores`).
    pub fn core_of(&self, cpu: u32) -> u32 {
        cpu % self.nr_cores()
    }

    /// Socket of a logical CPU.
    pub fn socket_of(&self, cpu: u32) -> u32 {
        self.core_of(cpu) / self.cores_per_socket
    }

    /// Logical CPUs of a core, lowest first.
    pub fn threads_of_core(&self, core: u32) -> impl Iterator<Item = u32> + '_ {
        (0..self.threads_per_core).map(move |t| core + t * self.nr_cores())
    }
}

/// Costs of the operations the twin charges time for, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// Interrupt entry plus exit (vector dispatch, irq_enter/irq_exit, return).
    pub irq_entry_exit_ns: u64,
    /// Per-tick process work (accounting, scheduler tick, RCU check), without shared locks.
    pub tick_handler_ns: u64,
    /// The duty CPU's jiffies + wall-time update critical section.
    pub jiffies_update_ns: u64,
    /// Extra cost per jiffy caught up in one update (load-average folding etc.).
    pub jiffies_catch_up_per_tick_ns: u64,
    /// A non-tick hrtimer callback (e.g. `hrtimer_wakeup`).
    pub hrtimer_callback_ns: u64,
    /// Programming the clock event device once.
    pub clockevent_program_ns: u64,
    /// nohz next-event computation and tick-stop bookkeeping at idle entry.
    pub tick_stop_ns: u64,
    /// Tick restart at idle exit (jiffies check, re-arm).
    pub tick_restart_ns: u64,
    /// Running one timer-wheel callback from the TIMER softirq.
    pub wheel_timer_ns: u64,
    /// A null syscall on a CPU without context tracking.
    pub syscall_ns: u64,
    /// One user/kernel transition's context-tracking cost on a nohz_full CPU.
    pub ct_transition_ns: u64,
    /// A context switch on one CPU.
    pub context_switch_ns: u64,
    /// Sending a reschedule IPI and taking it on the target.
    pub ipi_ns: u64,
    /// One unit of frame work (`LOOP` unit).
    pub work_unit_ns: f64,
    /// Moving a contended cache line between cores of one socket.
    pub cacheline_local_ns: u64,
    /// Moving a contended cache line across sockets.
    pub cacheline_remote_ns: u64,
    /// Critical section of one RCU quiescent-state report under a leaf `rcu_node` lock
    /// (lock held, excluding the wait and the line transfer).
    pub rcu_node_hold_ns: u64,
    /// One timekeeping read (`ktime_get`: seqcount begin, clocksource read, retry check)
    /// when no writer is inside and the line is already cached.
    pub xtime_read_ns: u64,
    /// Run time of the task a background timer wakes.
    pub background_task_ns: u64,
    /// Run time of a softirq thread woken on an idle CPU (`ksoftirqd/N`, on a
    /// `kernel.preempt_rt` build only). `None` (the presets, older scenario files) runs
    /// `background_task_ns`; the twin of a VM guest sets it from the guest's own softirq
    /// threads. Written only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub softirq_thread_ns: Option<u64>,
    /// Spread of timer-interrupt delivery: a CPU's interrupt arrives uniformly up to this
    /// long after its programmed expiry (per-core TSC skew, APIC delivery). It decides which
    /// of several CPUs programmed for the same instant reaches a shared lock first; 0 keeps
    /// them in CPU-number order. Absent in older scenario files, meaning 0.
    #[serde(default)]
    pub timer_delivery_jitter_ns: u64,
    /// The parts of a context-tracking transition, for machines whose presets spell them out
    /// (the E4 servers). `None` (older scenario files, the other presets) charges
    /// `ct_transition_ns` as one lump per transition on nohz_full CPUs, whatever the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tracking: Option<ContextTrackingCosts>,
}

/// What one user/kernel transition costs in context tracking, part by part (docs/costs.md §2,
/// docs/kernel-behaviour.md §4.6). Which parts a transition pays depends on the kernel version
/// and on whether the CPU is nohz_full; that rule is the twin's (`kernel::context_tracking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextTrackingCosts {
    /// RCU's extended-quiescent-state exit or entry: the fully ordered atomic on the per-CPU
    /// dynticks (later context-tracking) counter, with the context-tracking state write.
    pub rcu_eqs_ns: u64,
    /// Jiffy-granular vtime (4.6 to 4.14): read jiffies, compare with the task's snapshot.
    pub vtime_jiffy_check_ns: u64,
    /// Nanosecond vtime (4.15 on): read `sched_clock`, add the delta to the task's pending
    /// user or system time inside the task's vtime seqcount write section.
    pub vtime_clock_ns: u64,
    /// One full accounting pass (`account_user_time` / `account_system_time`: task, CPU and
    /// cgroup statistics), with its clock read: every transition before 4.6, once per jiffy
    /// (or per TICK_NSEC of pending time) after.
    pub vtime_account_ns: u64,
    /// On a CPU that is not nohz_full while context tracking is on elsewhere: the call past
    /// the enabled static key that finds the CPU's tracking inactive (recursion counter, state
    /// and `active` reads). While no CPU is nohz_full the key is a patched jump, 0 ns.
    pub percpu_check_ns: u64,
}

/// One cpuidle state with its power.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    /// sysfs `name`.
    pub name: String,
    /// Exit latency in ns (sysfs `latency` is µs).
    pub exit_latency_ns: u64,
    /// Target residency in ns.
    pub target_residency_ns: u64,
    /// The state spins (POLL): the core stays in C0 and the polling flag is set.
    pub polling: bool,
    /// Power of a core resting in this state while every core of the package is idle (W).
    pub core_w: f64,
    /// Power of a core resting in this state while another core of the package runs (W):
    /// client parts share one voltage plane, so a clock-gated but powered core leaks more.
    pub core_w_pkg_active: f64,
    /// Energy of one exit from this state (µJ): voltage/clock ramp, cache refill.
    pub wake_energy_uj: f64,
}

/// Package power model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerModel {
    /// A core executing (task, interrupt, or polling), one thread busy (W).
    pub core_active_w: f64,
    /// Extra when both SMT threads of a core execute (W).
    pub smt_extra_w: f64,
    /// Uncore/package power while any core executes (W).
    pub package_active_w: f64,
    /// Uncore/package power while every core is idle but no package C-state is reachable (W).
    pub package_idle_w: f64,
    /// Package C-states, shallowest first.
    pub package_states: Vec<PackageState>,
    /// Sustained package power limit (RAPL PL1), if it binds for this machine (W).
    pub power_limit_w: Option<f64>,
    /// Hardware C-state auto-demotion, if the part does it.
    pub auto_demotion: Option<AutoDemotion>,
}

impl PowerModel {
    /// The model of a machine whose power is not an observable: every figure 0, no package
    /// states, no limit, no auto-demotion ([`is_modelled`](Self::is_modelled) is false).
    pub fn not_modelled() -> Self {
        Self {
            core_active_w: 0.0,
            smt_extra_w: 0.0,
            package_active_w: 0.0,
            package_idle_w: 0.0,
            package_states: Vec::new(),
            power_limit_w: None,
            auto_demotion: None,
        }
    }

    /// Whether the model says anything: some power figure is not 0. A guest's model is all
    /// zeros ([`kvm_guest`](super::kvm_guest)): its reports carry no energy section and say "not modelled".
    pub fn is_modelled(&self) -> bool {
        self.core_active_w != 0.0
            || self.smt_extra_w != 0.0
            || self.package_active_w != 0.0
            || self.package_idle_w != 0.0
            || self.package_states.iter().any(|s| s.power_w != 0.0)
    }
}

/// A package C-state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageState {
    /// Name (`PC6`).
    pub name: String,
    /// Every core must rest in this idle-state index or deeper.
    pub min_core_state: usize,
    /// Package power in this state (W).
    pub power_w: f64,
    /// Energy of one exit from this package state (µJ).
    pub exit_energy_uj: f64,
}

/// Hardware C-state auto-demotion: a request deeper than `demote_to` is executed as `demote_to`
/// while the core's recent idle periods are short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoDemotion {
    /// Demote when the mean of the last `window` idle residencies of the core is below this.
    pub min_mean_residency_ns: u64,
    /// Idle periods averaged.
    pub window: u32,
    /// Index of the state requests are demoted to.
    pub demote_to: usize,
}

/// Per-CPU clock event device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockEventSpec {
    /// Device name (`lapic-deadline`).
    pub name: String,
    /// Minimum programmable delta.
    pub min_delta_ns: u64,
    /// Maximum programmable delta.
    pub max_delta_ns: u64,
}

/// Timekeeping clocksource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClocksourceSpec {
    /// Name (`tsc`).
    pub name: String,
    /// `max_idle_ns`: the longest the timekeeper may go without an update.
    pub max_idle_ns: u64,
}

pub(super) fn state(
    name: &str,
    exit_latency_us: u64,
    target_residency_us: u64,
    core_w: f64,
    core_w_pkg_active: f64,
    wake_energy_uj: f64,
) -> IdleState {
    IdleState {
        name: name.into(),
        exit_latency_ns: exit_latency_us * 1000,
        target_residency_ns: target_residency_us * 1000,
        polling: false,
        core_w,
        core_w_pkg_active,
        wake_energy_uj,
    }
}

/// M: a typical TSC clocksource's `max_idle_ns` (docs/costs.md §6); presets of other
/// counters with a like bound take it too.
pub(super) const TSC_MAX_IDLE_NS: u64 = 440_795_312_435;
