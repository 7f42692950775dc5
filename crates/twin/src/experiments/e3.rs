//! E3: the futex ping-pong in a KVM guest under every idle path, against the published
//! figures of the 2017 proposal's later revision (docs/experiments.md E3, docs/costs.md §3b).
//!
//! Each [`Config`] becomes a [`GuestSetup`] — the guest's own costs, the host's exit and
//! wake-up costs, host halt polling, the guest idle path, the benchmark's loop — and runs
//! [`SWITCHES`] context switches in [`GuestPingPong`], counted as the published benchmark
//! counts them: `timectxsw` divides a run by `iterations << 2`, so a round trip is
//! [`SWITCHES_PER_ROUND_TRIP`] switches and one of its "switches" is half of one wake. Every
//! row is given in that unit, the blocking pipe row included. Nothing here is fitted to the
//! published rows: the costs are those of [`KvmCosts::skylake_2017`], the guest's native
//! estimates and the spin loop's syscalls as measured on this project's host.
//!
//! Assumptions (also printed with the table, [`assumptions`]):
//! * the futex rows run `timectxsw`'s loop ([`PingPongLoop::Timectxsw`]: each task spins
//!   until the other has written, the writer retries its wake until the spinner is queued),
//!   the spinner noticing the word half a spin pass after the write (the mean over the pass's
//!   phase); 4.x `try_to_wake_up` waits for the spinner's switch-out and its idle task has
//!   made the tick-stop decision before NEED_RESCHED arrives (so no wake reaches a halted
//!   vCPU with these costs); the pipe row runs a blocking ping-pong;
//! * the ping-pong runs on two vCPUs, each pinned 1:1 on an otherwise idle host CPU (the
//!   publication gives neither); the guest has [`PUBLISHED_VCPUS`] vCPUs in all, the count its
//!   `idle=poll` host CPU of 1003 % implies, the others idle;
//! * the 2017 rows run that era's idle loop ([`IdleEntryTick::LoopEntry`]: every idle entry
//!   stops the tick, `idle=poll` included); the cpuidle-haltpoll rows today's;
//! * the guest is quiet: no timer but the tick, so every idle entry that may stop the tick
//!   does, and every idle exit restarts it (two TSC-deadline exits);
//! * the 2017 kernel stopped the tick before polling (§9.7, unverified:
//!   [`GuestPollPlacement::AfterTickStop`], [`VERDICT_PLACEMENT`]); the four guest-poll rows
//!   are run again with the poll before the stop ([`GuestPollPlacement::BeforeTickStop`]) and
//!   shown beside, not as the verdict ([`placement_reading`]);
//! * the guest's own costs are the project's native estimates (`xps13-7390` preset, a
//!   Skylake-family core), the spin loop's syscalls [`SpinCosts::measured_here`]; the host's
//!   are [`KvmCosts::skylake_2017`];
//! * the host halt-polls at its kernel's default (`halt_poll_ns` 200 µs, 4.x grow/shrink
//!   rule) in the baseline and the guest-poll rows: the publication names no host setting
//!   for them, and its host CPU column (200.3 % for the baseline, two vCPU threads that never
//!   block) says the host polled; the `halt_poll_ns` rows change only the cap (with no halt
//!   on the path they change nothing). The other reading (host polling off) is run too
//!   (`Config::HltHostPollOff`) and checked beside;
//! * a vCPU thread that blocks leaves its host CPU idle under the host's menu governor and
//!   C-state table ([`HostIdleParams::skx_intel_idle_4x`]); the cpuidle-haltpoll driver
//!   switches host polling off through the poll-control MSR.

use ticklab_cmdline::HaltpollParams;
use ticklab_schema::experiment::e3::{
    CONFIGS, Config, CostRow, DiffPart, DiffParts, PlacementReading, Results, Row, SWITCHES,
    SWITCHES_PER_ROUND_TRIP, published,
};
use ticklab_schema::machine::{Costs, xps13_7390};

use crate::kernel::cpuidle::guest_idle::GuestIdlePath;
use crate::kernel::idle::{GuestPollPlacement, IdleEntryTick, NoDriverTick};
use crate::kernel::kvm::{ExitReason, HostHaltPollParams, HostIdleParams, KvmCosts};
use crate::workloads::critical_path::PathTerm;
use crate::workloads::pingpong::{
    GuestPingPong, GuestSetup, PingPongLoop, PingPongOutcome, SpinCosts,
};
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
        "The benchmark is contextswitch's timectxsw (C: its name and its 2 000 000 switches match the publication): a switch is a quarter of a round trip (it divides by iterations << 2), every row here in that unit; the pipe row is a blocking ping-pong converted to it.",
        "timectxsw's handshake: after waking the other, a task spins (sched_yield + a FUTEX_WAIT that fails) until the other has written the word, then queues and switches out; the writer retries FUTEX_WAKE after each sched_yield until it is queued. The spinner notices half a spin pass after the write (the mean over the pass's phase); the measured sleeper always switched out (M, this host: one voluntary switch per task per round trip).",
        "4.x try_to_wake_up waits for the queued task's switch-out (p->on_cpu, C); its idle task raises the polling flag and makes the tick-stop decision before the writer can have enqueued it and set NEED_RESCHED (D from the code paths): no IPI, the stop runs, then the restart.",
        "The ping-pong on 2 vCPUs, each pinned 1:1 on an otherwise idle host CPU (not published); 10 vCPUs in all, as the idle=poll row's 1003 % host CPU implies (D), the other 8 idle (host CPU only: they spin under idle=poll, halt otherwise).",
        "The 2017 rows run a pre-4.17 idle loop: every idle entry stops the tick, idle=poll included (kernel/sched/idle.c of that era, C); the cpuidle-haltpoll rows run today's (the governor decides, idle=poll keeps the tick).",
        "Quiet guest: no timer but the tick; every idle entry that may stop the tick does, every idle exit restarts it.",
        "The 2017 kernel stopped the tick before polling (docs/kernel-behaviour.md §9.7, unverified; the patch text was not found); the guest-poll rows are run again with the poll before the stop and shown beside, not as the verdict.",
        "Guest code costs: the project's native estimates (xps13-7390), the spin loop's syscalls as measured on this project's host (a KVM guest, 2025 kernel; used as the 2017 figures); host costs: KvmCosts::skylake_2017 at an assumed 2.5 GHz.",
        "Host halt polling at the kernel default (halt_poll_ns 200 us; 4.x rule: grow 2, grow_start 10 us, shrink 0) in the baseline and guest-poll rows: the published host CPU of the baseline (200.3 %) means its vCPU threads never blocked. The halt_poll_ns rows set the cap; the halt_poll_ns=0 rows are the other reading.",
        "Host CPU of a blocked vCPU: Skylake server, intel_idle (POLL, C1 2/2 us, C1E 10/20 us, C6 133/600 us; MWAIT keeps the polling flag, so no host IPI), menu governor of 4.x (starts at C1 unless a timer is within 20 us), HZ=1000; quiet otherwise.",
        "Guest ticks (HZ=250) land wherever a vCPU's tick runs: an external-interrupt exit (0.71 us, M), interrupt entry and tick handler, a TSC-deadline re-arm exit; under 1 ns per switch here.",
    ]
    .map(String::from)
    .to_vec()
}

/// Where the verdict's guest-poll rows put the 2017 poll: after the idle loop's tick stop,
/// the documented and unverified assumption (docs/kernel-behaviour.md §9.7). It stays until
/// the patch text is found; the other placement is shown beside ([`placement_reading`]).
pub const VERDICT_PLACEMENT: GuestPollPlacement = GuestPollPlacement::AfterTickStop;

// Invariant: the reading shown beside the verdict (`Results::poll_before_tick_stop`) is the
// other placement; switching the verdict means renaming that field too.
const _: () = assert!(matches!(
    VERDICT_PLACEMENT,
    GuestPollPlacement::AfterTickStop
));

/// The guest and host of one configuration, with the 2017 poll (the guest-poll rows) placed
/// as `placement`, and the given host costs and guest costs.
pub fn setup(
    config: Config,
    placement: GuestPollPlacement,
    kvm: KvmCosts,
    costs: Costs,
) -> GuestSetup {
    let GuestHost {
        host_poll: host,
        mut host_idle,
        ..
    } = GuestHost::published_2017();
    let (idle, host_poll) = match config {
        Config::Hlt | Config::HltOneCpu | Config::HltPipe => (GuestIdlePath::Hlt, host),
        Config::GuestPoll { ns } => (
            GuestIdlePath::PollThenHlt {
                threshold_ns: ns,
                placement,
            },
            host,
        ),
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
    // The published benchmark's loop; the pipe row is a blocking ping-pong.
    let benchmark = match config {
        Config::HltPipe => PingPongLoop::Blocking,
        _ => PingPongLoop::Timectxsw(SpinCosts::measured_here()),
    };
    GuestSetup {
        benchmark,
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

/// Runs one configuration, the 2017 poll placed as `placement`, for `switches` switches of the
/// table's unit ([`SWITCHES_PER_ROUND_TRIP`] per round trip; at least one round trip).
pub fn run_config(
    config: Config,
    placement: GuestPollPlacement,
    kvm: KvmCosts,
    costs: Costs,
    switches: u64,
) -> PingPongOutcome {
    let model = GuestPingPong::new(setup(config, placement, kvm, costs))
        .expect("every E3 configuration names a known governor");
    let round_trips = (switches / SWITCHES_PER_ROUND_TRIP).max(1);
    model.run(round_trips, config == Config::HltOneCpu)
}

/// Switches of a run in the table's unit ([`SWITCHES_PER_ROUND_TRIP`] per round trip),
/// whatever the loop's own count.
fn table_switches(o: &PingPongOutcome) -> f64 {
    (o.round_trips * SWITCHES_PER_ROUND_TRIP).max(1) as f64
}

/// [`path_term_text`] for the three terms of `timectxsw`'s handshake.
fn handshake_term_text(term: PathTerm, costs: &Costs) -> (&'static str, String) {
    let spin = SpinCosts::measured_here();
    match term {
        PathTerm::SleeperNotice => (
            "spinner's FUTEX_WAIT sees the word changed, queues",
            format!(
                "(sched_yield {} + FUTEX_WAIT EAGAIN {})/2 (M here, §12.2)",
                spin.sched_yield_ns, spin.futex_wait_fail_ns
            ),
        ),
        PathTerm::WakerRetry => (
            "writer's FUTEX_WAKE retry finds it queued",
            format!(
                "pass FUTEX_WAKE {} + sched_yield {} (M here, §12.2)",
                spin.futex_wake_none_ns, spin.sched_yield_ns
            ),
        ),
        _ => {
            debug_assert_eq!(term, PathTerm::OnCpuWait);
            (
                "try_to_wake_up waits for its switch-out (p->on_cpu)",
                format!(
                    "context_switch_ns/2 {} (E, costs §3a) less the retry",
                    costs.context_switch_ns / 2
                ),
            )
        }
    }
}

/// What a critical-path term is and where its cost comes from (cost field, value, source
/// tag, docs/costs.md §7 and §12), for the given host and guest costs.
pub fn path_term_text(term: PathTerm, kvm: &KvmCosts, costs: &Costs) -> (&'static str, String) {
    match term {
        PathTerm::SleeperNotice | PathTerm::WakerRetry | PathTerm::OnCpuWait => {
            handshake_term_text(term, costs)
        }
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
    let switches = table_switches(o);
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
    let switches = table_switches(o);
    let per_switch = |r: ExitReason| o.exits[r.index()] as f64 / switches;
    Row {
        config,
        label: config.label(),
        ns_per_switch: o.elapsed_ns as f64 / switches,
        hlt_exits: per_switch(ExitReason::Hlt),
        tsc_deadline_exits: per_switch(ExitReason::MsrTscDeadline),
        icr_exits: per_switch(ExitReason::MsrIcr),
        ext_int_exits: per_switch(ExitReason::ExternalInterrupt),
        // Each round trip is two wakes.
        ipi_skipped_pct: 100.0 * o.ipis_skipped as f64 / (2 * o.round_trips).max(1) as f64,
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
    if o.blocked_wakes * 100 < 2 * o.round_trips {
        return None;
    }
    let total: u64 = o.host_idle_usage.iter().map(|(_, n)| n).sum();
    let (name, n) = o.host_idle_usage.iter().max_by_key(|(_, n)| *n)?;
    Some((name.clone(), 100.0 * *n as f64 / total.max(1) as f64))
}

/// The guest-poll row the critical path of the difference is taken against (the twin's four
/// guest-poll rows walk the same path).
pub const DIFFERENCE_POLL_ROW: Config = Config::GuestPoll { ns: 10_000 };

/// The critical path of `baseline` − `poll`, term by term from the two rows' own walks: each
/// term of either row (with its source), the baseline's ns per switch less the poll row's,
/// where they differ by 0.05 ns or more. The terms add up to the rows' difference (tested).
pub fn difference_path(baseline: &Row, poll: &Row) -> DiffParts {
    let ns = |row: &Row, name: &str| {
        row.path
            .iter()
            .find(|p| p.name == name)
            .map_or(0.0, |p| p.ns_per_switch)
    };
    let mut names: Vec<(&str, &str)> = Vec::new();
    for p in baseline.path.iter().chain(&poll.path) {
        if !names.iter().any(|(n, _)| *n == p.name) {
            names.push((&p.name, &p.source));
        }
    }
    let parts = names
        .into_iter()
        .map(|(name, source)| DiffPart {
            name: format!("{name} [{source}]"),
            ns: ns(baseline, name) - ns(poll, name),
        })
        .filter(|p| p.ns.abs() >= 0.05)
        .collect();
    DiffParts {
        baseline: baseline.config,
        poll: poll.config,
        parts,
    }
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
        (
            "sched_yield, nothing else runnable (M here)",
            SpinCosts::measured_here().sched_yield_ns,
        ),
        (
            "FUTEX_WAIT, word changed: EAGAIN (M here)",
            SpinCosts::measured_here().futex_wait_fail_ns,
        ),
        (
            "FUTEX_WAKE, no waiter (M here)",
            SpinCosts::measured_here().futex_wake_none_ns,
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
    // Whole round trips, at least one.
    let switches = (switches / SWITCHES_PER_ROUND_TRIP).max(1) * SWITCHES_PER_ROUND_TRIP;
    let kvm = KvmCosts::skylake_2017();
    let costs = xps13_7390().costs;
    let outcomes: Vec<(Config, PingPongOutcome)> = CONFIGS
        .iter()
        .map(|&c| {
            (
                c,
                run_config(c, VERDICT_PLACEMENT, kvm, costs.clone(), switches),
            )
        })
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
    let find = |c: Config| rows.iter().find(|r| r.config == c);
    let parts = [
        Config::Hlt,
        Config::HltHostPollOff,
        Config::HltHostPollOffCurrentMenu,
    ]
    .into_iter()
    .filter_map(|c| Some(difference_path(find(c)?, find(DIFFERENCE_POLL_ROW)?)))
    .collect();
    let poll_before_tick_stop = placement_reading(
        GuestPollPlacement::BeforeTickStop,
        &rows,
        &kvm,
        &costs,
        switches,
    );
    Results {
        switches,
        switches_per_round_trip: SWITCHES_PER_ROUND_TRIP,
        rows,
        costs: cost_rows(&kvm, &costs),
        checks,
        other_reading,
        parts,
        absolute,
        poll_before_tick_stop,
        assumptions: assumptions(),
    }
}

/// The four guest-poll rows run with the 2017 poll placed as `placement` (the other reading
/// of the patch, [`GuestPollPlacement`]), each with its absolute check, the difference checks
/// of the verdict's HLT row (from `rows`) less each of them, and the critical path of HLT −
/// [`DIFFERENCE_POLL_ROW`] under this reading. Shown beside the verdict, not as it: the
/// placement is not chosen by which reading passes (docs/costs.md §12.2).
pub fn placement_reading(
    placement: GuestPollPlacement,
    rows: &[Row],
    kvm: &KvmCosts,
    costs: &Costs,
    switches: u64,
) -> PlacementReading {
    let polls: Vec<Row> = CONFIGS
        .iter()
        .filter(|c| matches!(c, Config::GuestPoll { .. }))
        .map(|&c| {
            let o = run_config(c, placement, *kvm, costs.clone(), switches);
            row(c, &o, kvm, costs)
        })
        .collect();
    let hlt = rows.iter().find(|r| r.config == Config::Hlt);
    let checks = hlt.map_or_else(Vec::new, |h| Results::difference_checks_between(h, &polls));
    let parts = hlt
        .zip(polls.iter().find(|r| r.config == DIFFERENCE_POLL_ROW))
        .map(|(h, p)| difference_path(h, p))
        .into_iter()
        .collect();
    PlacementReading {
        absolute: Results::absolute_checks(&polls),
        rows: polls,
        checks,
        parts,
    }
}

/// [`results`] with the published switch count.
pub fn published_results() -> Results {
    results(SWITCHES)
}

// The scenario → guest ping-pong engine and the live guest's twin live in `crate::guest`.
pub use crate::guest::{HOST_TWIN_SWITCHES, HostTwin, simulate_pingpong};
