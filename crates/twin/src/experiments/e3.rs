//! E3: the futex ping-pong in a KVM guest under every idle path, against the published
//! figures of the 2017 proposal's later revision (docs/experiments.md E3, docs/costs.md §3b).
//!
//! Each [`Config`] becomes a [`GuestSetup`] — the guest's own costs, the host's exit and
//! wake-up costs, host halt polling, the guest idle path — and runs
//! [`SWITCHES`] context switches in [`GuestPingPong`]. Nothing here is fitted to the published
//! rows: the costs are those of [`KvmCosts::skylake_2017`] and the guest's native estimates.
//!
//! Assumptions (also printed with the table, [`assumptions`]):
//! * the ping-pong runs on two vCPUs, each pinned 1:1 on an otherwise idle host CPU (the
//!   publication gives neither); the guest has [`PUBLISHED_VCPUS`] vCPUs in all, the count its
//!   `idle=poll` host CPU of 1003 % implies, the others idle;
//! * the 2017 rows run that era's idle loop ([`IdleEntryTick::LoopEntry`]: every idle entry
//!   stops the tick, `idle=poll` included); the cpuidle-haltpoll rows today's;
//! * the guest is quiet: no timer but the tick, so every idle entry that may stop the tick
//!   does, and every idle exit restarts it (two TSC-deadline exits);
//! * the 2017 kernel stopped the tick before polling (§9.7, unverified);
//! * the guest's own costs are the project's native estimates (`xps13-7390` preset, a
//!   Skylake-family core); the host's are [`KvmCosts::skylake_2017`];
//! * the host halt-polls at its kernel's default (`halt_poll_ns` 200 µs, 4.x grow/shrink
//!   rule) in the baseline and the guest-poll rows: the publication names no host setting
//!   for them, and its host CPU column (200.3 % for the baseline, two vCPU threads that never
//!   block) says the host polled; the `halt_poll_ns` rows change only the cap. The other
//!   reading (host polling off) is run too (`Config::HltHostPollOff`) and checked beside;
//! * a vCPU thread that blocks leaves its host CPU idle under the host's menu governor and
//!   C-state table ([`HostIdleParams::skx_intel_idle_4x`]); the cpuidle-haltpoll driver
//!   switches host polling off through the poll-control MSR.

use ticklab_cmdline::HaltpollParams;
use ticklab_schema::experiment::e3::{
    CONFIGS, Config, CostRow, DiffPart, DiffParts, Results, Row, SWITCHES, published,
};
use ticklab_schema::machine::{Costs, xps13_7390};

use crate::kernel::cpuidle::guest_idle::GuestIdlePath;
use crate::kernel::idle::{IdleEntryTick, NoDriverTick};
use crate::kernel::kvm::{ExitReason, HostHaltPollParams, HostIdleParams, KvmCosts};
use crate::workloads::critical_path::PathTerm;
use crate::workloads::pingpong::{GuestPingPong, GuestSetup, PingPongOutcome};
use ticklab_schema::experiment::e3::PathPart;

/// The guest's tick period: HZ=250, the commonest distribution setting (E: not published).
pub const TICK_NSEC: u64 = 4_000_000;

/// vCPUs of the published guest (**D**): its `idle=poll` row used 1003 % host CPU, and under
/// `idle=poll` every vCPU thread spins all the time, so 1003 % / 100 % ≈ 10 vCPUs (the
/// extra 3 % is QEMU's own threads or rounding). The ping-pong runs on two of them.
pub const PUBLISHED_VCPUS: u32 = 10;

/// The kernel release of the 2017 publication's guest (**E**: the RFC was posted against
/// 4.13-rc; the idle loop's tick order is that of every release before 4.17, so any of them
/// gives the same rows).
pub const PUBLISHED_KERNEL: (u32, u32) = (4, 13);

pub use crate::guest::GuestHost;

/// The assumptions behind the rows, one sentence each.
pub fn assumptions() -> Vec<String> {
    [
        "The ping-pong on 2 vCPUs, each pinned 1:1 on an otherwise idle host CPU (not published); 10 vCPUs in all, as the idle=poll row's 1003 % host CPU implies (D), the other 8 idle (host CPU only: they spin under idle=poll, halt otherwise).",
        "The 2017 rows run a pre-4.17 idle loop: every idle entry stops the tick, idle=poll included (kernel/sched/idle.c of that era, C); the cpuidle-haltpoll rows run today's (the governor decides, idle=poll keeps the tick).",
        "Quiet guest: no timer but the tick; every idle entry that may stop the tick does, every idle exit restarts it.",
        "The 2017 kernel stopped the tick before polling (docs/kernel-behaviour.md §9.7, unverified).",
        "Guest code costs: the project's native estimates (xps13-7390); host costs: KvmCosts::skylake_2017 at an assumed 2.5 GHz.",
        "Host halt polling at the kernel default (halt_poll_ns 200 us; 4.x rule: grow 2, grow_start 10 us, shrink 0) in the baseline and guest-poll rows: the published host CPU of the baseline (200.3 %) means its vCPU threads never blocked. The halt_poll_ns rows set the cap; the halt_poll_ns=0 rows are the other reading.",
        "Host CPU of a blocked vCPU: Skylake server, intel_idle (POLL, C1 2/2 us, C1E 10/20 us, C6 133/600 us; MWAIT keeps the polling flag, so no host IPI), menu governor of 4.x (starts at C1 unless a timer is within 20 us), HZ=1000; quiet otherwise.",
        "Guest ticks (HZ=250) land wherever a vCPU's tick runs: an external-interrupt exit (0.71 us, M), interrupt entry and tick handler, a TSC-deadline re-arm exit; under 1 ns per switch here.",
    ]
    .map(String::from)
    .to_vec()
}

/// The guest and host of one configuration, with the given host costs and guest costs.
pub fn setup(config: Config, kvm: KvmCosts, costs: Costs) -> GuestSetup {
    let GuestHost {
        host_poll: host,
        mut host_idle,
        ..
    } = GuestHost::published_2017();
    let (idle, host_poll) = match config {
        Config::Hlt | Config::HltOneCpu | Config::HltPipe => (GuestIdlePath::Hlt, host),
        Config::GuestPoll { ns } => (GuestIdlePath::PollThenHlt { threshold_ns: ns }, host),
        Config::HostPoll { ns } => (GuestIdlePath::Hlt, HostHaltPollParams::with_max(ns)),
        Config::HltHostPollOff => (GuestIdlePath::Hlt, HostHaltPollParams::off()),
        Config::HltHostPollOffCurrentMenu => {
            host_idle = HostIdleParams::skx_intel_idle_current();
            (GuestIdlePath::Hlt, HostHaltPollParams::off())
        }
        Config::IdlePoll => (GuestIdlePath::IdlePoll, host),
        // The driver switches host polling off itself (poll-control MSR).
        Config::Haltpoll { ns } => (
            GuestIdlePath::haltpoll(HaltpollParams {
                guest_halt_poll_ns: ns,
                ..HaltpollParams::default()
            }),
            host,
        ),
        Config::HaltpollTeo => (
            GuestIdlePath::Cpuidle {
                governor: "teo".into(),
                params: HaltpollParams::default(),
            },
            host,
        ),
    };
    // The cpuidle-haltpoll rows are today's driver (5.4+); every other row is the 2017
    // guest's kernel.
    let idle_entry_tick = match config {
        Config::Haltpoll { .. } | Config::HaltpollTeo => IdleEntryTick::PerPath,
        _ => IdleEntryTick::for_kernel(PUBLISHED_KERNEL),
    };
    GuestSetup {
        costs,
        kvm,
        host_poll,
        host_idle,
        idle,
        tick_period_ns: TICK_NSEC,
        no_driver_tick: NoDriverTick::EveryEntry,
        idle_entry_tick,
        idle_vcpus: PUBLISHED_VCPUS - 2,
    }
}

/// Runs one configuration for `switches` switches.
pub fn run_config(config: Config, kvm: KvmCosts, costs: Costs, switches: u64) -> PingPongOutcome {
    let model = GuestPingPong::new(setup(config, kvm, costs))
        .expect("every E3 configuration names a known governor");
    model.run(switches / 2, config == Config::HltOneCpu)
}

/// What a critical-path term is and where its cost comes from (cost field, value, source
/// tag, docs/costs.md §7 and §12), for the given host and guest costs.
pub fn path_term_text(term: PathTerm, kvm: &KvmCosts, costs: &Costs) -> (&'static str, String) {
    match term {
        PathTerm::NotYetIdle => (
            "target not asleep yet: its wait finds the word changed",
            "model: the waker's half switch outran the wakee's".into(),
        ),
        PathTerm::IdleEntryWait => (
            "target still entering idle (tick stop), flag set: no IPI",
            format!(
                "tick_stop_ns {} (E) + TSC-deadline exit {} (E)",
                costs.tick_stop_ns, kvm.msr_write_exit_ns
            ),
        ),
        PathTerm::GuestPollNotice => (
            "guest poller notices NEED_RESCHED",
            format!(
                "cacheline_local_ns {} (M, costs §3a)",
                costs.cacheline_local_ns
            ),
        ),
        PathTerm::IcrDelivery => (
            "ICR write exit until the IPI is pending",
            format!(
                "icr_delivery_ns {} (D: exit half + handling)",
                kvm.icr_delivery_ns
            ),
        ),
        PathTerm::HltExitWait => (
            "target's HLT exit not yet in the host",
            format!("exit_entry_ns/2 {} (M/D)", kvm.exit_entry_ns / 2),
        ),
        PathTerm::HostPollNotice => (
            "host halt poll notices the pending interrupt",
            format!("cacheline_local_ns {} (M)", costs.cacheline_local_ns),
        ),
        PathTerm::HostBlockWait => (
            "vCPU thread still blocking in the host",
            format!("host_block_ns {} (E)", kvm.host_block_ns),
        ),
        PathTerm::HostIpi => (
            "host reschedule IPI to a non-polling idle CPU",
            format!("host_ipi_ns {} (E)", kvm.host_ipi_ns),
        ),
        PathTerm::HostIdleExit => (
            "host C-state exit latency",
            "intel_idle SKX table (C), state per wake".into(),
        ),
        PathTerm::HostSwitch => (
            "host switch idle task -> vCPU thread",
            format!("host_switch_ns {} (E)", kvm.host_switch_ns),
        ),
        PathTerm::VmEntry => (
            "VM entry",
            format!("exit_entry_ns/2 {} (M/D)", kvm.exit_entry_ns / 2),
        ),
        PathTerm::GuestIrq => (
            "guest takes the reschedule interrupt",
            format!("irq_entry_exit_ns {} (E)", costs.irq_entry_exit_ns),
        ),
        PathTerm::TickRestart => (
            "guest tick restart at idle exit (work)",
            format!("tick_restart_ns {} (E)", costs.tick_restart_ns),
        ),
        PathTerm::TickRestartExit => (
            "guest tick restart: TSC-deadline write exit",
            format!("msr_write_exit_ns {} (E)", kvm.msr_write_exit_ns),
        ),
        PathTerm::HalfSwitch => (
            "woken task's half switch (switched in -> its wake point)",
            format!(
                "context_switch_ns/2 {} (E, costs §3a)",
                costs.context_switch_ns / 2
            ),
        ),
        PathTerm::SameCpuSwitch => (
            "one-way switch on one vCPU",
            format!(
                "context_switch_ns {} (E, costs §3a)",
                costs.context_switch_ns
            ),
        ),
        PathTerm::BusyTicks => (
            "guest ticks landing in busy stretches",
            format!(
                "ext-int exit {} (M) + irq {} + tick {} (E) + re-arm exit {} (E)",
                kvm.ext_int_exit_ns,
                costs.irq_entry_exit_ns,
                costs.tick_handler_ns,
                kvm.msr_write_exit_ns
            ),
        ),
    }
}

/// A row's critical path per switch from its outcome, every term with time on it.
pub fn path_parts(o: &PingPongOutcome, kvm: &KvmCosts, costs: &Costs) -> Vec<PathPart> {
    let switches = o.switches.max(1) as f64;
    let total = o.critical_path.total_ns().max(1) as f64;
    o.critical_path
        .nonzero()
        .map(|(term, ns)| {
            let (name, source) = path_term_text(term, kvm, costs);
            PathPart {
                name: name.into(),
                source,
                ns_per_switch: ns as f64 / switches,
                share_pct: 100.0 * ns as f64 / total,
            }
        })
        .collect()
}

/// One table row from an outcome, with its critical path costed from `kvm` and `costs`.
pub fn row(config: Config, o: &PingPongOutcome, kvm: &KvmCosts, costs: &Costs) -> Row {
    let p = published(config);
    Row {
        config,
        label: config.label(),
        ns_per_switch: o.ns_per_switch(),
        hlt_exits: o.exits_per_switch(ExitReason::Hlt),
        tsc_deadline_exits: o.exits_per_switch(ExitReason::MsrTscDeadline),
        icr_exits: o.exits_per_switch(ExitReason::MsrIcr),
        ext_int_exits: o.exits_per_switch(ExitReason::ExternalInterrupt),
        ipi_skipped_pct: 100.0 * o.ipis_skipped as f64 / o.switches.max(1) as f64,
        guest_busy_pct: o.guest_busy_pct(),
        host_cpu_pct: o.host_cpu_pct(),
        host_poll_pct: o.host_poll_pct(),
        host_idle: dominant_host_state(o),
        published_ns: p.map(|p| p.0),
        published_cpu: p.and_then(|p| (!p.1.is_empty()).then(|| p.1.to_string())),
        path: path_parts(o, kvm, costs),
    }
}

/// The commonest host idle state of the blocked vCPUs and its share of entries; `None` when
/// fewer than 1 % of the wakes found their vCPU blocked (e.g. only the first, before the host
/// poll window grew).
fn dominant_host_state(o: &PingPongOutcome) -> Option<(String, f64)> {
    if o.blocked_wakes * 100 < o.switches {
        return None;
    }
    let total: u64 = o.host_idle_usage.iter().map(|(_, n)| n).sum();
    let (name, n) = o.host_idle_usage.iter().max_by_key(|(_, n)| *n)?;
    Some((name.clone(), 100.0 * *n as f64 / total.max(1) as f64))
}

/// The critical-path terms of `baseline`'s HLT − guest-poll difference, from the costs and
/// from where the baseline's wakes went (host-polled, or blocked in the host state
/// `host_state` of `host_idle`). Each term names its source; the twin's simulated difference
/// must equal their sum (tested).
pub fn difference_parts(
    baseline: Config,
    kvm: &KvmCosts,
    costs: &Costs,
    host_polled: bool,
    host_idle: &HostIdleParams,
    host_state: usize,
) -> DiffParts {
    let part = |name: &str, ns: u64| DiffPart {
        name: name.into(),
        ns: ns as i64,
    };
    let mut parts = vec![part(
        "ICR write exit until the IPI is pending (D: exit half 272 + handler 156)",
        kvm.icr_delivery_ns,
    )];
    if host_polled {
        parts.push(part(
            "host halt poll notices it (E: one cache-line transfer)",
            costs.cacheline_local_ns,
        ));
    } else {
        let s = &host_idle.states[host_state.min(host_idle.states.len() - 1)];
        if !(s.polling || host_idle.mwait) {
            parts.push(part("host reschedule IPI (E: native IPI)", kvm.host_ipi_ns));
        }
        parts.push(DiffPart {
            name: format!("host {} exit latency (C: intel_idle table)", s.name),
            ns: s.exit_latency_ns as i64,
        });
        parts.push(part(
            "host switch idle task → vCPU thread (E: §3a switch less 2 syscalls)",
            kvm.host_switch_ns,
        ));
    }
    parts.push(part(
        "VM entry (M/D: half the VMRUN round trip)",
        kvm.exit_entry_ns / 2,
    ));
    parts.push(part(
        "guest interrupt entry + exit, reschedule IPI (E)",
        costs.irq_entry_exit_ns,
    ));
    parts.push(DiffPart {
        name: "less: guest poller notices NEED_RESCHED (E: one cache-line transfer)".into(),
        ns: -(costs.cacheline_local_ns as i64),
    });
    DiffParts { baseline, parts }
}

/// The cost table of a run: the host's costs and the guest costs the model charges.
pub fn cost_rows(kvm: &KvmCosts, costs: &Costs) -> Vec<CostRow> {
    let mut rows: Vec<CostRow> = kvm
        .rows()
        .into_iter()
        .map(|(name, ns)| CostRow {
            name: name.into(),
            ns,
        })
        .collect();
    for (name, ns) in [
        ("guest one-way context switch", costs.context_switch_ns),
        ("guest interrupt entry + exit", costs.irq_entry_exit_ns),
        (
            "guest tick stop (without the msr write)",
            costs.tick_stop_ns,
        ),
        (
            "guest tick restart (without the msr write)",
            costs.tick_restart_ns,
        ),
        (
            "cache-line transfer (poller notices)",
            costs.cacheline_local_ns,
        ),
    ] {
        rows.push(CostRow {
            name: name.into(),
            ns,
        });
    }
    rows
}

/// Runs E3: every configuration with [`SWITCHES`] switches (or `switches`), the published host
/// costs and the native guest costs.
pub fn results(switches: u64) -> Results {
    // Whole round trips: an odd count runs one switch fewer.
    let switches = switches / 2 * 2;
    let kvm = KvmCosts::skylake_2017();
    let costs = xps13_7390().costs;
    let outcomes: Vec<(Config, PingPongOutcome)> = CONFIGS
        .iter()
        .map(|&c| (c, run_config(c, kvm, costs.clone(), switches)))
        .collect();
    let rows: Vec<Row> = outcomes
        .iter()
        .map(|(c, o)| row(*c, o, &kvm, &costs))
        .collect();
    let checks = Results::difference_checks(&rows);
    let absolute = Results::absolute_checks(&rows);
    let mut other_reading = Results::difference_checks_from(&rows, Config::HltHostPollOff);
    other_reading.extend(Results::difference_checks_from(
        &rows,
        Config::HltHostPollOffCurrentMenu,
    ));
    let parts = outcomes
        .iter()
        .filter(|(c, _)| {
            matches!(
                c,
                Config::Hlt | Config::HltHostPollOff | Config::HltHostPollOffCurrentMenu
            )
        })
        .map(|(c, o)| parts_of(*c, o, &kvm, &costs))
        .collect();
    Results {
        switches,
        rows,
        costs: cost_rows(&kvm, &costs),
        checks,
        other_reading,
        parts,
        absolute,
        assumptions: assumptions(),
    }
}

/// [`difference_parts`] for a baseline row from its outcome: host-polled if most wakes were,
/// else blocked in the commonest host idle state.
pub fn parts_of(c: Config, o: &PingPongOutcome, kvm: &KvmCosts, costs: &Costs) -> DiffParts {
    let host_idle = setup(c, *kvm, costs.clone()).host_idle;
    let state = o
        .host_idle_usage
        .iter()
        .max_by_key(|(_, n)| *n)
        .and_then(|(name, _)| host_idle.states.iter().position(|s| s.name == *name))
        .unwrap_or(0);
    difference_parts(
        c,
        kvm,
        costs,
        o.host_polled_wakes >= o.blocked_wakes,
        &host_idle,
        state,
    )
}

/// [`results`] with the published switch count.
pub fn published_results() -> Results {
    results(SWITCHES)
}

// The scenario → guest ping-pong engine and the live guest's twin live in `crate::guest`.
pub use crate::guest::{HOST_TWIN_SWITCHES, HostTwin, simulate_pingpong};
