//! The modelled machine: topology, costs, cpuidle states, power and timer hardware.
//!
//! Every number in a preset names its source with a tag from `docs/costs.md`'s legend:
//! `C` (constant from code or docs), `M` (measured, quoted), `D` (derived), `E` (estimate, with
//! the reasoning) or `CAL` (calibrated, naming the experiment it was fitted to). Presets are
//! functions so the provenance comments sit beside the values.

use serde::{Deserialize, Serialize};

mod e4_servers;
pub use e4_servers::{arm64_128_4n, epyc_7252_2s, x86_context_tracking, xeon_e5_2650v3_2s};
mod halt_wake;
pub use halt_wake::{HaltWake, HaltWakePoint};
mod kvm_host;
pub use kvm_host::KvmHost;

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
    /// Whether the model says anything: some power figure is not 0. A guest's model is all
    /// zeros ([`kvm_guest`]): its reports carry no energy section and say "not modelled".
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

/// Names of the built-in machine presets.
pub const PRESETS: &[&str] = &[
    "xps13-7390",
    "kvm-guest-2",
    "server-2012-64",
    "xeon-e5-2650v3-2s",
    "arm64-128-4n",
    "epyc-7252-2s",
];

/// Looks a preset up by name.
pub fn preset(name: &str) -> Option<Machine> {
    match name {
        "xps13-7390" | "laptop-8" => Some(xps13_7390()),
        "kvm-guest-2" => Some(kvm_guest(2)),
        "server-2012-64" | "e2-server" => Some(server_2012_64()),
        "xeon-e5-2650v3-2s" => Some(xeon_e5_2650v3_2s()),
        "arm64-128-4n" => Some(arm64_128_4n()),
        "epyc-7252-2s" => Some(epyc_7252_2s()),
        _ => None,
    }
}

/// A KVM guest with the cpuidle-haltpoll driver (POLL + haltpoll idle), like the machine
/// ticklab is developed on; `host calibrate` replaces its costs with measured ones.
///
/// Power is not modelled for a guest (the host's package is shared and invisible): every power
/// figure is 0 ([`PowerModel::is_modelled`] is false), so the twin's reports carry no energy
/// section and the text says "not modelled".
pub fn kvm_guest(nr_cpus: u32) -> Machine {
    let mut poll = state("POLL", 0, 0, 0.0, 0.0, 0.0);
    poll.polling = true;
    let mut m = xps13_7390();
    m.name = format!("kvm-guest-{nr_cpus}");
    m.description = format!("KVM guest, {nr_cpus} vCPUs, cpuidle-haltpoll");
    m.topology = Topology {
        sockets: 1,
        cores_per_socket: nr_cpus,
        threads_per_core: 1,
    };
    // C: haltpoll driver states, exit latency / target residency 1 µs (docs/costs.md §3b).
    m.idle_states = vec![poll, state("haltpoll", 1, 1, 0.0, 0.0, 0.0)];
    m.cpuidle_driver = "haltpoll".into();
    // E: every deadline-MSR write is a VM exit, ~1-2 µs round trip (docs/kernel-behaviour.md §12.2).
    m.costs.clockevent_program_ns = 1500;
    // M: host handling of an external-interrupt exit, avg 0.71 µs, plus injection and guest
    // entry/exit (docs/costs.md §1); E: ~2 µs in all.
    m.costs.irq_entry_exit_ns = 2000;
    // E: the guest's deadline timer is a host hrtimer; its expiry reaches each vCPU through
    // the host's own interrupt and exit path, which spreads delivery by about a microsecond.
    m.costs.timer_delivery_jitter_ns = 1000;
    // D/E: context tracking as on bare x86 (docs/costs.md §2): the atomic, the TSC read and
    // the accounting run inside the guest without exits (the TSC is offset, not trapped).
    m.costs.context_tracking = Some(x86_context_tracking());
    m.power = PowerModel {
        core_active_w: 0.0,
        smt_extra_w: 0.0,
        package_active_w: 0.0,
        package_idle_w: 0.0,
        package_states: Vec::new(),
        power_limit_w: None,
        auto_demotion: None,
    };
    // M: kvm-clock max_idle_ns ~880 s (docs/kernel-behaviour.md §1.3); the TSC is used here.
    m
}

/// A 2012-era 64-CPU x86 server: the E2 machine (docs/experiments.md E2 gives only "64 logical
/// CPUs, large x86 server of 2011-2012, MAXSMP").
///
/// Topology (E): 4 sockets × 8 cores × 2 threads, a Sandy Bridge-EP 4-socket part (Xeon
/// E5-4600 family, 2012) — the commonest way to reach 64 logical CPUs in that year. Costs
/// inherit the laptop's estimates except where the server differs (below).
///
/// Idle states: E2 runs real-time frame workers that sleep most of a frame; an RT setup of the
/// era limits C-states (`intel_idle.max_cstate=1` or BIOS), so only C1 and C1E are listed
/// (C: intel_idle `snb_cstates` C1 1/1 µs, C1E 10/20 µs exit/target). Power is not an E2
/// observable; the figures are rough server estimates (E) and are not calibrated.
pub fn server_2012_64() -> Machine {
    let mut poll = state("POLL", 0, 0, 0.0, 0.0, 0.0);
    poll.polling = true;
    let mut m = xps13_7390();
    m.name = "server-2012-64".into();
    m.description = "2012 x86 server, 4 × Sandy Bridge-EP 8C/16T (64 CPUs), MAXSMP".into();
    m.topology = Topology {
        sockets: 4,
        cores_per_socket: 8,
        threads_per_core: 2,
    };
    // M: intra-socket line transfer 44-51 ns on server ring/mesh parts (§3a/§5; no Sandy
    // Bridge-EP figure, E: the E5-2695 v4 ring value 44 ns is the closest design).
    m.costs.cacheline_local_ns = 45;
    // M: cross-socket 108-197 ns (§5); E: 4-socket QPI topologies add a hop for some pairs,
    // so take the upper-middle of the two-socket Intel range, 150 ns.
    m.costs.cacheline_remote_ns = 150;
    // E: four sockets add cross-socket TSC skew and longer interrupt paths: up to 100 ns.
    m.costs.timer_delivery_jitter_ns = 100;
    // E: LOOP unit cost. E2 fixes LOOP × FREQ ≈ 48 M units/s for every group, i.e. each
    // worker is busy 48 M × unit of every second. A synthetic frame loop body is a short
    // dependent arithmetic chain; ~27 cycles at 2.7 GHz = 10 ns per unit, so workers compute
    // 48 % of each frame (A: 500 µs of 1042 µs). Chosen from the loop, not from any result.
    m.costs.work_unit_ns = 10.0;
    // E: 2.7 GHz part vs the laptop's ~2.5-4.9 GHz turbo; the per-tick work without locks is
    // taken as the same ~1 µs (docs/costs.md §1).
    m.idle_states = vec![
        poll,
        state("C1", 1, 1, 1.0, 1.0, 0.5),
        state("C1E", 10, 20, 0.8, 0.8, 1.0),
    ];
    m.power = PowerModel {
        // E: a ~130 W 8-core part: ~10 W per busy core, ~30 W uncore.
        core_active_w: 10.0,
        smt_extra_w: 2.0,
        package_active_w: 30.0,
        package_idle_w: 25.0,
        package_states: Vec::new(),
        power_limit_w: None,
        auto_demotion: None,
    };
    m
}

fn state(
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
const TSC_MAX_IDLE_NS: u64 = 440_795_312_435;

/// Dell XPS 13 7390, Intel Core i7-10510U (Comet Lake U): the E1 machine.
///
/// Topology: 1 socket, 4 cores, 2 threads (CPUs n and n+4 are siblings) — docs/experiments.md E1.
/// Idle states: intel_idle's Skylake client table (`skl_cstates`: exit latency / target
/// residency in µs), used for Comet Lake by estimate (CML-U is not in intel_idle's id table; same
/// Skylake core) — docs/costs.md §4.
///
/// Power: no per-C-state power figures were found for SKL/CML (docs/costs.md §4, "gap").
/// The structure is mechanistic (core states, shared voltage plane, package states needing all
/// cores idle, wake energy, hardware auto-demotion, RAPL limit); the values marked CAL(E1) were
/// fitted to E1's published watts and are estimates everywhere else.
pub fn xps13_7390() -> Machine {
    let mut poll = state("POLL", 0, 0, 0.0, 0.0, 0.0);
    poll.polling = true;
    Machine {
        name: "xps13-7390".into(),
        description: "Dell XPS 13 7390, i7-10510U (Comet Lake U), 4C/8T, Skylake-family C-states"
            .into(),
        topology: Topology {
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 2,
        },
        costs: Costs {
            // E: 200-500 cycles rule of thumb plus vector entry; ~1000 cycles at ~2.5 GHz.
            irq_entry_exit_ns: 400,
            // E: docs/costs.md §1 "full tick handling 0.5-1.5 µs, typ. ~1 µs".
            tick_handler_ns: 1000,
            // E: docs/kernel-behaviour.md §12.2 "jiffies/tk critical section ~0.2-2 µs".
            jiffies_update_ns: 300,
            // E: one more loop iteration of the accumulation per jiffy, a few ns.
            jiffies_catch_up_per_tick_ns: 5,
            // E: wakeup callback, ~0.2 µs.
            hrtimer_callback_ns: 200,
            // E: one MSR write (TSC deadline), native.
            clockevent_program_ns: 100,
            // M with ftrace overhead: tick_nohz_next_event 1.4 µs (docs/costs.md §1);
            // E: ~0.5 µs without tracing.
            tick_stop_ns: 500,
            // E: like stop, jiffies catch-up is charged separately.
            tick_restart_ns: 500,
            // E: a short kernel timer callback.
            wheel_timer_ns: 300,
            // E: x86 null syscall 100-250 ns without KPTI (docs/costs.md §2).
            syscall_ns: 150,
            // D: +44 ns per syscall post-2016 (two transitions) -> ~25 per transition; E: the
            // 2026 cyclictest datapoint suggests 100-200 on RT; take 100.
            ct_transition_ns: 100,
            // E: same-CPU switch ~1.4 µs per perf bench pipe half round trip (§3a, KVM 2.79 µs/op).
            context_switch_ns: 1400,
            // E: native IPI < 1 µs (§3a).
            ipi_ns: 700,
            // E: 1 ns per LOOP unit; the E2 machine overrides this.
            work_unit_ns: 1.0,
            // M: 20-50 ns intra-socket (core-to-core-latency, §5).
            cacheline_local_ns: 40,
            // M: 108-197 ns cross-socket (§5); single socket here, unused.
            cacheline_remote_ns: 150,
            // E: a leaf rcu_node report is a lock, a few mask updates and a grace-period check;
            // ~40 loads/stores on lines the holder just pulled in, ~150 ns at 2-3 GHz.
            rcu_node_hold_ns: 150,
            // E: TSC read ~20-30 ns (rdtsc) plus the seqcount loads and the scaling, ~50 ns.
            xtime_read_ns: 50,
            // E: a daemon waking for a timer runs ~30 µs.
            background_task_ns: 30_000,
            // E: one socket; TSC-deadline interrupts of cores programmed for the same
            // deadline arrive within a few tens of ns of each other (TSCs are synchronised to
            // well under 100 ns, docs/costs.md §5 puts a line transfer at ~40-50 ns).
            timer_delivery_jitter_ns: 50,
            context_tracking: None,
        },
        cpuidle_driver: "intel_idle".into(),
        idle_states: vec![
            poll,
            // C (skl_cstates) EL/TR; power: E/CAL(E1) — clock-gated states keep leaking.
            state("C1", 2, 2, 0.05, 1.25, 0.5),
            state("C1E", 10, 20, 0.04, 1.0, 1.0),
            state("C3", 70, 100, 0.02, 0.1, 10.0),
            state("C6", 85, 200, 0.0, 0.0, 20.0),
            state("C7s", 124, 800, 0.0, 0.0, 25.0),
            state("C8", 200, 800, 0.0, 0.0, 30.0),
            state("C9", 480, 5000, 0.0, 0.0, 40.0),
            state("C10", 890, 5000, 0.0, 0.0, 50.0),
        ],
        power: PowerModel {
            // CAL(E1): 1 hog and 4 hogs rows; E: ~1 W per busy core of a 15 W 4C part.
            core_active_w: 0.9,
            // E: a second thread adds ~20-30 % of a core's dynamic power.
            smt_extra_w: 0.25,
            // CAL(E1): package (uncore, ring, LLC at active voltage) with one core busy.
            package_active_w: 1.2,
            // CAL(E1): all cores idle but one held shallow (nohz_full idle row).
            package_idle_w: 0.42,
            package_states: vec![
                // E: package C-states track the shallowest core (index into idle_states);
                // CAL(E1): PC10 level from the aggressive idle row (0.301 W at ~99 wakes/s).
                PackageState {
                    name: "PC3".into(),
                    min_core_state: 3,
                    power_w: 0.38,
                    exit_energy_uj: 20.0,
                },
                PackageState {
                    name: "PC6".into(),
                    min_core_state: 4,
                    power_w: 0.33,
                    exit_energy_uj: 40.0,
                },
                PackageState {
                    name: "PC7".into(),
                    min_core_state: 5,
                    power_w: 0.31,
                    exit_energy_uj: 60.0,
                },
                PackageState {
                    name: "PC8".into(),
                    min_core_state: 6,
                    power_w: 0.29,
                    exit_energy_uj: 80.0,
                },
                PackageState {
                    name: "PC9".into(),
                    min_core_state: 7,
                    power_w: 0.27,
                    exit_energy_uj: 100.0,
                },
                PackageState {
                    name: "PC10".into(),
                    min_core_state: 8,
                    power_w: 0.26,
                    exit_energy_uj: 120.0,
                },
            ],
            // CAL(E1): 4 and 8 hogs converge at ~6 W in both modes: a sustained limit.
            power_limit_w: Some(6.1),
            // E: Intel parts demote deep C-state requests to C1 when a core wakes too often
            // (SDM: C-state auto-demotion, MSR_PKG_CST_CONFIG_CONTROL); the threshold is
            // undocumented. CAL(E1): between the 1 kHz housekeeping tick and ~100 wakes/s.
            auto_demotion: Some(AutoDemotion {
                min_mean_residency_ns: 2_000_000,
                window: 8,
                demote_to: 1,
            }),
        },
        clockevent: ClockEventSpec {
            // C: TSC-deadline LAPIC, 1000 ns floor (docs/kernel-behaviour.md §8.1).
            name: "lapic-deadline".into(),
            min_delta_ns: 1000,
            max_delta_ns: u64::MAX / 2,
        },
        clocksource: ClocksourceSpec {
            name: "tsc".into(),
            max_idle_ns: TSC_MAX_IDLE_NS,
        },
        kvm_host: None,
        halt_wake: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xps_topology_siblings() {
        let t = xps13_7390().topology;
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.core_of(1), t.core_of(5));
        assert_ne!(t.core_of(1), t.core_of(2));
        assert_eq!(t.threads_of_core(3).collect::<Vec<_>>(), vec![3, 7]);
    }

    #[test]
    fn server_2012_has_64_cpus_on_4_sockets() {
        let m = server_2012_64();
        assert_eq!(m.topology.nr_cpus(), 64);
        assert_eq!(m.topology.socket_of(4), 0);
        assert_eq!(m.topology.socket_of(8), 1);
        assert_eq!(m.topology.socket_of(40), 1);
        assert_eq!(preset("server-2012-64"), Some(m));
    }

    #[test]
    fn package_states_are_ordered() {
        let m = xps13_7390();
        let p = &m.power.package_states;
        for w in p.windows(2) {
            assert!(w[0].min_core_state < w[1].min_core_state);
            assert!(w[0].power_w >= w[1].power_w);
        }
        assert!(p.iter().all(|s| s.min_core_state < m.idle_states.len()));
    }
}
