//! The built-in machines of E1-E3 and of the host lab's VM guest: the laptop of E1
//! ([`xps13_7390`]), a KVM guest ([`kvm_guest`]) and the 2012 server of E2
//! ([`server_2012_64`]). The E4 servers are in `e4_servers.rs`.

use super::spec::*;

/// Context tracking on x86, from the one public measurement (docs/costs.md §2, Rik van Riel's
/// 2016 series, an x86 machine of that year): the extra per null syscall was 194 ns on 4.4
/// and 44 ns once vtime went jiffy-granular; a syscall is two transitions.
pub fn x86_context_tracking() -> ContextTrackingCosts {
    ContextTrackingCosts {
        // D: 44 ns / 2 transitions = 22 ns per transition with jiffy-granular vtime, minus the
        // jiffies check below: the RCU EQS atomic with its ordering and the state write.
        rcu_eqs_ns: 21,
        // E: one load of jiffies (a read-mostly line) and a compare with the task's snapshot.
        vtime_jiffy_check_ns: 1,
        // E: x86 sched_clock is rdtsc plus the cyc2ns multiply/shift on per-CPU data, about
        // 25-35 cycles (~10-12 ns at the 2.3-3.2 GHz of the E4 parts); the seqcount write
        // begin/end are two increments with compiler-only barriers on x86: ~12 ns in all.
        vtime_clock_ns: 12,
        // D: (380 - 186) / 2 - (230 - 186) / 2 = 97 - 22 = 75 ns per transition: what the
        // 2016 series removed from each transition, i.e. one accounting pass with its clock read.
        vtime_account_ns: 75,
        // E: with the static key on, a CPU outside the set still calls the context-tracking
        // entry/exit function: recursion counter up and down, the per-CPU state and `active`
        // reads, about a dozen instructions on hot lines, ~3 ns.
        percpu_check_ns: 3,
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
    m.power = PowerModel::not_modelled();
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
// Over 100 lines because it is one data literal: the machine's every cost and state with its
// source beside it.
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
            softirq_thread_ns: None,
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
