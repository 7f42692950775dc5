//! The ping-pong model's tests: wake paths, the host's halt polling, the guest idle paths.

use super::*;
use crate::kernel::idle::GuestPollPlacement;
use ticklab_schema::machine::xps13_7390;

fn guest(idle: GuestIdlePath, host_poll: HostHaltPollParams) -> GuestPingPong {
    GuestPingPong::new(GuestSetup {
        benchmark: PingPongLoop::Blocking,
        costs: xps13_7390().costs,
        kvm: KvmCosts::skylake_2017(),
        host_poll,
        host_idle: HostIdleParams::skx_intel_idle_4x(),
        idle,
        tick_period_ns: 4_000_000,
        no_driver_tick: NoDriverTick::EveryEntry,
        idle_entry_tick: IdleEntryTick::PerPath,
        idle_vcpus: 0,
    })
    .unwrap()
}

/// vCPU 1 goes idle at 0 through the 2017 path with a 10 µs threshold, its poll placed as
/// given, under the idle loop's tick rule `rule`; vCPU 0 wakes it at `t`. Returns the guest
/// after that one wake.
fn wake_2017_guest_at(placement: GuestPollPlacement, rule: IdleEntryTick, t: u64) -> GuestPingPong {
    let mut g = guest(
        GuestIdlePath::PollThenHlt {
            threshold_ns: 10_000,
            placement,
        },
        HostHaltPollParams::off(),
    );
    g.setup.idle_entry_tick = rule;
    g.vcpus[1].phase = Phase::Running {
        since: 0,
        idle_at: 0,
    };
    g.wake(0, t);
    g
}

/// [`wake_2017_guest_at`] with the poll after the stop (from 4.17's rule: the path asks for
/// it). Returns (ICR exits, HLT exits, IPIs skipped).
fn wake_threshold_guest_at(t: u64) -> (u64, u64, u64) {
    let g = wake_2017_guest_at(GuestPollPlacement::AfterTickStop, IdleEntryTick::PerPath, t);
    (
        g.exits[ExitReason::MsrIcr.index()],
        g.exits[ExitReason::Hlt.index()],
        g.ipis_skipped,
    )
}

#[test]
fn ipi_is_skipped_exactly_while_the_target_polls() {
    let c = xps13_7390().costs;
    // The tick stop (work + TSC-deadline exit) comes first; polling starts after it.
    let poll_from = c.tick_stop_ns + KvmCosts::skylake_2017().msr_write_exit_ns;
    let poll_end = poll_from + 10_000;
    // (wake time, ICR exits, HLT exits, skipped)
    let table = [
        (0, 0, 0, 1),                 // during the tick stop: flag set, no IPI
        (poll_from, 0, 0, 1),         // first instant of the spin
        (poll_end - 1, 0, 0, 1),      // last instant of the spin
        (poll_end, 1, 1, 0),          // the spin ran out: HLT executed, IPI needed
        (poll_end + 50_000, 1, 1, 0), // long halted
    ];
    for (t, icr, hlt, skipped) in table {
        assert_eq!(
            wake_threshold_guest_at(t),
            (icr, hlt, skipped),
            "wake at {t} ns"
        );
    }
}

#[test]
fn host_polling_burns_host_cpu_not_guest_cpu() {
    let n = 5_000;
    // Without ticks: a tick can delay a sleep past the next wake, which would make the
    // two runs differ for a reason other than host polling.
    let no_ticks = |g: GuestPingPong| GuestPingPong {
        setup: GuestSetup {
            tick_period_ns: 1 << 62,
            ..g.setup.clone()
        },
        ..g
    };
    let hlt = no_ticks(guest(GuestIdlePath::Hlt, HostHaltPollParams::off())).run(n, false);
    let polled = no_ticks(guest(
        GuestIdlePath::Hlt,
        HostHaltPollParams::with_max(500_000),
    ))
    .run(n, false);
    let busy = |o: &PingPongOutcome| o.host.iter().map(|h| h.guest_busy_ns).sum::<u64>();
    let poll = |o: &PingPongOutcome| o.host.iter().map(|h| h.host_poll_ns).sum::<u64>();
    assert_eq!(poll(&hlt), 0);
    assert!(poll(&polled) > 0, "the host polled");
    assert!(polled.host_polled_wakes > 0);
    // The guest runs the same code either way: same busy time, same exits.
    assert_eq!(busy(&hlt), busy(&polled));
    assert_eq!(hlt.exits, polled.exits);
    // Only each vCPU's first halt blocks: the window starts at 0, then grows.
    assert!(polled.blocked_wakes <= 2, "{}", polled.blocked_wakes);
    assert!(polled.host_cpu_pct() > hlt.host_cpu_pct());
    // Per switch, the host-polled wake is cheaper by the block/wake it avoids.
    assert!(polled.ns_per_switch() < hlt.ns_per_switch());
}

#[test]
fn ticks_land_only_where_the_tick_runs() {
    let n = 20_000;
    let hlt = guest(GuestIdlePath::Hlt, HostHaltPollParams::with_max(200_000)).run(n, false);
    let ext = |o: &PingPongOutcome| o.exits[ExitReason::ExternalInterrupt.index()];
    // HLT stops the tick at each idle entry: ticks land only in busy stretches, about
    // busy share × run length / tick period of them.
    let run_ticks = hlt.elapsed_ns / 4_000_000;
    assert!(ext(&hlt) > 0 && ext(&hlt) <= 2 * run_ticks, "{}", ext(&hlt));
    // idle=poll never stops it: every period of both vCPUs brings a tick.
    let poll = guest(GuestIdlePath::IdlePoll, HostHaltPollParams::off()).run(n, false);
    let expected = 2 * (poll.elapsed_ns / 4_000_000);
    assert!(
        ext(&poll) + 2 >= expected && ext(&poll) <= expected,
        "{} vs {expected}",
        ext(&poll)
    );
    // One vCPU switching alone keeps its tick: one per period.
    let one = guest(GuestIdlePath::Hlt, HostHaltPollParams::off()).run(n, true);
    assert_eq!(ext(&one), one.elapsed_ns / 4_000_000);
}

#[test]
fn haltpoll_driver_switches_host_polling_off() {
    let p = ticklab_cmdline::HaltpollParams {
        guest_halt_poll_ns: 0,
        ..Default::default()
    };
    let o = guest(
        GuestIdlePath::haltpoll(p),
        HostHaltPollParams::with_max(500_000),
    )
    .run(1_000, false);
    assert_eq!(
        o.host_poll_pct(),
        0.0,
        "the poll-control MSR turned host polling off"
    );
    // Every wake but the first (its target was still on the way into HLT) blocked.
    assert_eq!(o.blocked_wakes, o.switches - 1);
    assert_eq!(o.exits[ExitReason::MsrIcr.index()], o.blocked_wakes);
}

#[test]
fn runs_the_host_labs_spec() {
    let spec = |s: &str| {
        ticklab_schema::workload::Workload::parse(s, 2)
            .unwrap()
            .groups[0]
            .clone()
    };
    let g = || guest(GuestIdlePath::Hlt, HostHaltPollParams::off());
    let cross = g().run_group(&spec("pingpong:futex@0,1:n=1000")).unwrap();
    assert_eq!(cross.switches, 2000);
    assert!(cross.exits[ExitReason::Hlt.index()] > 0);
    let one = g().run_group(&spec("pingpong:pipe@1,1:n=1000")).unwrap();
    assert_eq!(one.exits[ExitReason::Hlt.index()], 0);
    assert!(g().run_group(&spec("hogs:1")).is_err());
}

#[test]
fn accounting_adds_up() {
    for idle in [
        GuestIdlePath::Hlt,
        GuestIdlePath::IdlePoll,
        GuestIdlePath::PollThenHlt {
            threshold_ns: 1_000,
            placement: GuestPollPlacement::AfterTickStop,
        },
        GuestIdlePath::PollThenHlt {
            threshold_ns: 1_000,
            placement: GuestPollPlacement::BeforeTickStop,
        },
    ] {
        for benchmark in [
            PingPongLoop::Blocking,
            PingPongLoop::Timectxsw(SpinCosts::measured_here()),
        ] {
            let mut g = guest(idle.clone(), HostHaltPollParams::with_max(20_000));
            g.setup.benchmark = benchmark;
            let o = g.run(2_000, false);
            for h in &o.host {
                assert!(h.host_cpu_ns() <= o.elapsed_ns, "{idle:?}: {h:?}");
            }
            assert!(o.host_cpu_pct() <= 200.0 + 1e-9);
            assert!(o.guest_busy_pct() <= o.host_cpu_pct());
            // The critical path is the whole run.
            assert_eq!(o.critical_path.total_ns(), o.elapsed_ns, "{idle:?}");
        }
    }
}

#[test]
fn idle_poll_stops_the_tick_only_before_4_17() {
    let run = |rule: IdleEntryTick| {
        let mut g = guest(GuestIdlePath::IdlePoll, HostHaltPollParams::off());
        g.setup.idle_entry_tick = rule;
        g.setup.idle_vcpus = 8;
        g.run(2_000, false)
    };
    let old = run(IdleEntryTick::LoopEntry);
    let new = run(IdleEntryTick::PerPath);
    let tsc = |o: &PingPongOutcome| o.exits_per_switch(ExitReason::MsrTscDeadline);
    // Before 4.17 every idle entry stops the tick and the exit restarts it: two
    // TSC-deadline writes per switch, the restart (work + exit) on the path.
    assert!((tsc(&old) - 2.0).abs() < 1e-3, "{}", tsc(&old));
    let restart = old.critical_path.ns(PathTerm::TickRestart)
        + old.critical_path.ns(PathTerm::TickRestartExit);
    let c = xps13_7390().costs;
    let each = c.tick_restart_ns + KvmCosts::skylake_2017().msr_write_exit_ns;
    // Every wake but the rare one whose target was not asleep yet (no tick to restart).
    assert!(restart <= old.switches * each, "{restart}");
    assert!(restart >= (old.switches - 2) * each, "{restart}");
    // From 4.17 idle=poll keeps the tick: only the ticks' own re-arms.
    assert!(tsc(&new) < 0.01, "{}", tsc(&new));
    assert!(old.ns_per_switch() - new.ns_per_switch() > each as f64 - 1.0);
    // Neither needs an IPI: the polling flag is set throughout.
    assert_eq!(old.exits[ExitReason::MsrIcr.index()], 0);
    // The eight idle vCPUs spin too: 800 % on top of the two busy ones.
    assert!(
        (old.host_cpu_pct() - 1000.0).abs() < 1e-6,
        "{}",
        old.host_cpu_pct()
    );
}

/// The 2017 HLT guest running `timectxsw` with the given spin costs, vCPU 1's task spinning
/// since 0; vCPU 0's task writes the word at 0. Returns (ICR exits, HLT exits, IPIs
/// skipped) after that one wake.
fn handshake_once(spin: SpinCosts) -> (u64, u64, u64) {
    let mut g = guest(GuestIdlePath::Hlt, HostHaltPollParams::off());
    g.setup.benchmark = PingPongLoop::Timectxsw(spin);
    g.setup.idle_entry_tick = IdleEntryTick::LoopEntry;
    g.vcpus[1].phase = Phase::Running {
        since: 0,
        idle_at: u64::MAX,
    };
    g.handshake(0, 0, spin);
    (
        g.exits[ExitReason::MsrIcr.index()],
        g.exits[ExitReason::Hlt.index()],
        g.ipis_skipped,
    )
}

#[test]
fn the_retried_wake_needs_no_ipi_until_the_spinner_has_halted() {
    let c = xps13_7390().costs;
    // The spinner notices 1 ns after the write (a 2 ns pass), switches out (half a switch),
    // stops the tick (work + TSC-deadline exit), then executes HLT.
    let hlt_at = 1 + c.context_switch_ns / 2 + c.tick_stop_ns + 700;
    let spin = |retry_pass: u64| SpinCosts {
        sched_yield_ns: 1,
        futex_wait_fail_ns: 1,
        futex_wake_none_ns: retry_pass - 1,
    };
    // (writer's retry pass, ICR exits, HLT exits, skipped)
    let table = [
        (2, 0, 0, 1),                   // lands in the switch-out: waits (on_cpu)
        (c.context_switch_ns, 0, 0, 1), // lands in the tick stop: flag up
        (hlt_at - 1, 0, 0, 1),          // last instant before HLT
        (hlt_at, 1, 1, 0),              // HLT executed: the IPI, an HLT exit
        (hlt_at + 20_000, 1, 1, 0),     // long halted
    ];
    for (pass, icr, hlt, skipped) in table {
        assert_eq!(
            handshake_once(spin(pass)),
            (icr, hlt, skipped),
            "retry pass {pass} ns"
        );
    }
}

#[test]
fn timectxsw_wakes_land_in_the_switch_out_where_a_blocking_ping_pong_halts() {
    let n = 2_000;
    let run = |benchmark: PingPongLoop| {
        let mut g = guest(GuestIdlePath::Hlt, HostHaltPollParams::off());
        g.setup.benchmark = benchmark;
        g.setup.idle_entry_tick = IdleEntryTick::LoopEntry;
        // No ticks: one landing in a spinner's notice would move its queueing, and with it
        // the split between the retry and the wait for the switch-out.
        g.setup.tick_period_ns = 1 << 62;
        g.run(n, false)
    };
    let spin = SpinCosts::measured_here();
    let blocking = run(PingPongLoop::Blocking);
    let timectxsw = run(PingPongLoop::Timectxsw(spin));
    let exits = |o: &PingPongOutcome, r: ExitReason| o.exits[r.index()];
    // The strict alternation halts on every wake (the first target is already on its way).
    assert!(exits(&blocking, ExitReason::Hlt) >= 2 * n - 1);
    // timectxsw's retried wake lands while the spinner switches out: never a halt, never an
    // IPI, but every wake waits for the switch-out and the tick stop, then the restart.
    assert_eq!(exits(&timectxsw, ExitReason::Hlt), 0);
    assert_eq!(exits(&timectxsw, ExitReason::MsrIcr), 0);
    assert_eq!(timectxsw.ipis_skipped, 2 * n);
    let path = &timectxsw.critical_path;
    let wakes = 2 * n - 1; // every wake but the first, whose target started asleep
    let notice = spin.spin_pass_ns() / 2;
    let retry = spin.retry_pass_ns() - notice;
    let xps = xps13_7390().costs;
    assert_eq!(path.ns(PathTerm::SleeperNotice), wakes * notice);
    assert_eq!(path.ns(PathTerm::WakerRetry), wakes * retry);
    assert_eq!(
        path.ns(PathTerm::OnCpuWait),
        wakes * (xps.context_switch_ns / 2 - retry)
    );
    assert_eq!(
        path.ns(PathTerm::TickRestartExit),
        2 * n * KvmCosts::skylake_2017().msr_write_exit_ns
    );
    // The benchmark's count: four switches per round trip, against two.
    assert_eq!((blocking.switches, timectxsw.switches), (2 * n, 4 * n));
    assert_eq!(timectxsw.critical_path.total_ns(), timectxsw.elapsed_ns);
}

#[test]
fn timectxsw_on_one_cpu_counts_four_real_switches_per_round_trip() {
    let mut g = guest(GuestIdlePath::Hlt, HostHaltPollParams::off());
    g.setup.benchmark = PingPongLoop::Timectxsw(SpinCosts::measured_here());
    g.setup.tick_period_ns = 1 << 62;
    let o = g.run(1_000, true);
    let c = xps13_7390().costs;
    assert_eq!(o.elapsed_ns, 4 * 1_000 * c.context_switch_ns);
    assert_eq!(o.ns_per_switch(), c.context_switch_ns as f64);
}

/// The 2017 guest (pre-4.17 loop) with a 10 µs poll placed as given, running `timectxsw`
/// without ticks.
fn poll_2017_timectxsw(placement: GuestPollPlacement, n: u64) -> PingPongOutcome {
    let mut g = guest(
        GuestIdlePath::PollThenHlt {
            threshold_ns: 10_000,
            placement,
        },
        HostHaltPollParams::off(),
    );
    g.setup.benchmark = PingPongLoop::Timectxsw(SpinCosts::measured_here());
    g.setup.idle_entry_tick = IdleEntryTick::LoopEntry;
    g.setup.tick_period_ns = 1 << 62;
    g.run(n, false)
}

#[test]
fn the_2017_poll_placement_decides_the_tick_stop_and_restart() {
    let n = 2_000;
    let after = poll_2017_timectxsw(GuestPollPlacement::AfterTickStop, n);
    let before = poll_2017_timectxsw(GuestPollPlacement::BeforeTickStop, n);
    let c = xps13_7390().costs;
    let msr = KvmCosts::skylake_2017().msr_write_exit_ns;
    let terms = |o: &PingPongOutcome| {
        [
            o.critical_path.ns(PathTerm::IdleEntryWait),
            o.critical_path.ns(PathTerm::TickRestart),
            o.critical_path.ns(PathTerm::TickRestartExit),
        ]
    };
    // After the stop: every wake lands while its target stops the tick (the first one too:
    // its target entered idle at the same instant) and every idle exit restarts it.
    let wakes = 2 * n;
    assert_eq!(
        terms(&after),
        [
            wakes * (c.tick_stop_ns + msr),
            wakes * c.tick_restart_ns,
            wakes * msr
        ]
    );
    assert_eq!(after.exits[ExitReason::MsrTscDeadline.index()], 4 * n);
    // Before the stop: the wake lands in the poll with the tick running; no stop, no restart,
    // no TSC-deadline write at all (the first entry's stop only after a poll that ran out).
    assert_eq!(terms(&before), [0, 0, 0]);
    assert_eq!(before.exits[ExitReason::MsrTscDeadline.index()], 0);
    // Neither sends an IPI or halts: the flag is up in the poll either way.
    for o in [&after, &before] {
        assert_eq!(o.exits[ExitReason::MsrIcr.index()], 0);
        assert_eq!(o.exits[ExitReason::Hlt.index()], 0);
        assert_eq!(o.critical_path.total_ns(), o.elapsed_ns);
    }
    // The difference is the stop and the restart of every wake, nothing else.
    assert_eq!(
        after.elapsed_ns - before.elapsed_ns,
        wakes * (c.tick_stop_ns + msr + c.tick_restart_ns + msr)
    );
}

#[test]
fn a_poll_before_the_tick_stop_that_runs_out_stops_the_tick_before_hlt() {
    // vCPU 1 goes idle at 0 through the 2017 path, poll before the stop; vCPU 0 wakes it at
    // `t`. Returns (TSC-deadline exits, ICR exits, HLT exits).
    let wake_at = |t: u64| {
        let g = wake_2017_guest_at(
            GuestPollPlacement::BeforeTickStop,
            IdleEntryTick::LoopEntry,
            t,
        );
        (
            g.exits[ExitReason::MsrTscDeadline.index()],
            g.exits[ExitReason::MsrIcr.index()],
            g.exits[ExitReason::Hlt.index()],
        )
    };
    let c = xps13_7390().costs;
    let stop = c.tick_stop_ns + KvmCosts::skylake_2017().msr_write_exit_ns;
    // (wake time) -> (TSC-deadline, ICR, HLT exits)
    for (t, want) in [
        (0, (0, 0, 0)),     // first instant of the poll: tick kept, nothing to restart
        (9_999, (0, 0, 0)), // last instant of the poll
        // The poll ran out: the loop's stop runs (flag still up), the idle exit restarts.
        (10_000, (2, 0, 0)),
        (10_000 + stop - 1, (2, 0, 0)),
        // HLT executed: the IPI (ICR exit), the HLT exit, the stop and the restart.
        (10_000 + stop, (2, 1, 1)),
        (10_000 + stop + 50_000, (2, 1, 1)),
    ] {
        assert_eq!(wake_at(t), want, "wake at {t} ns");
    }
}
