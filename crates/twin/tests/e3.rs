//! E3: the futex ping-pong in a KVM guest under every idle path (docs/experiments.md E3).

use ticklab_schema::experiment::e3::{CONFIGS, Config};
use ticklab_twin::experiments::e3;

fn row(
    r: &ticklab_schema::experiment::e3::Results,
    c: Config,
) -> &ticklab_schema::experiment::e3::Row {
    r.rows.iter().find(|x| x.config == c).expect("row")
}

#[test]
fn e3_rows_follow_the_mechanism() {
    let r = e3::results(20_000);
    assert_eq!(r.rows.len(), CONFIGS.len());
    assert_eq!(r.switches_per_round_trip, 4);
    let hlt = row(&r, Config::Hlt);
    // timectxsw's retried wake lands while the spinner switches out: its idle task stops the
    // tick with the polling flag up (no IPI, no HLT), then restarts it. Per switch as the
    // benchmark counts them (half a wake): one TSC-deadline exit, no HLT, no ICR.
    assert_eq!(hlt.hlt_exits, 0.0, "{hlt:?}");
    assert_eq!(hlt.icr_exits, 0.0);
    assert!((hlt.tsc_deadline_exits - 1.0).abs() < 1e-3, "{hlt:?}");
    assert!(hlt.ipi_skipped_pct > 99.9, "{hlt:?}");
    // The spinner's CPU never halts: its busy share is well above a strict alternation's.
    let pipe = row(&r, Config::HltPipe);
    assert!(
        hlt.guest_busy_pct > 2.0 * pipe.guest_busy_pct,
        "{hlt:?} {pipe:?}"
    );
    // The blocking pipe ping-pong halts and sends an IPI on every wake (two per round trip,
    // half a wake per switch of the table's unit).
    assert!((pipe.hlt_exits - 0.5).abs() < 1e-3, "{pipe:?}");
    assert!((pipe.icr_exits - 0.5).abs() < 1e-3, "{pipe:?}");
    for ns in [10_000, 20_000, 30_000, 500_000] {
        let p = row(&r, Config::GuestPoll { ns });
        // The 2017 guest stops the tick before polling (the assumption): the wake lands in
        // that stop as on the HLT path, and the poll only adds its notice.
        assert_eq!(p.hlt_exits + p.icr_exits, 0.0);
        let notice = 40.0 / 2.0;
        assert!(
            (p.ns_per_switch - hlt.ns_per_switch - notice).abs() < 1.0,
            "{p:?}"
        );
    }
    // No wake reaches a halted vCPU: the host's polling setting changes nothing.
    for c in [
        Config::HostPoll { ns: 10_000 },
        Config::HostPoll { ns: 500_000 },
        Config::HltHostPollOff,
    ] {
        let x = row(&r, c);
        assert_eq!(x.ns_per_switch, hlt.ns_per_switch, "{x:?}");
        assert_eq!(x.host_poll_pct, 0.0);
    }
    // idle=poll in the 2017 guest stops the tick on every entry (pre-4.17 loop); ten vCPUs,
    // the eight idle ones spinning (the published 1003 %).
    let idle_poll = row(&r, Config::IdlePoll);
    assert!((idle_poll.tsc_deadline_exits - 1.0).abs() < 1e-3);
    assert!(
        (idle_poll.host_cpu_pct - 1000.0).abs() < 1.0,
        "{idle_poll:?}"
    );
    // Today's haltpoll driver polls at idle entry without stopping the tick: the wake is
    // noticed at once, no stop, no restart.
    let haltpoll = row(&r, Config::Haltpoll { ns: 200_000 });
    assert!(haltpoll.tsc_deadline_exits < 0.01, "{haltpoll:?}");
    assert!(haltpoll.ns_per_switch < hlt.ns_per_switch - 1000.0);
    // One vCPU: four real switches per round trip, none on an idle path.
    let one = row(&r, Config::HltOneCpu);
    assert_eq!(one.hlt_exits + one.icr_exits, 0.0);
    assert!((one.ns_per_switch - 1400.0).abs() < 5.0, "{one:?}");
    // The checks compare HLT − poll against the published difference, one per poll row.
    assert_eq!(r.checks.len(), 4);
}

#[test]
fn e3_is_deterministic() {
    assert_eq!(e3::results(4_000), e3::results(4_000));
}

#[test]
fn host_twin_follows_the_driver_and_its_wake_up() {
    // A guest without a cpuidle driver (HLT): guest_halt_poll_ns is read by nothing.
    let t = e3::HostTwin::new(1500, 3000, "none", "menu", 250).unwrap();
    let at0 = t.predict(0).ns_per_switch();
    assert_eq!(t.predict(200_000).ns_per_switch(), at0);
    // With the haltpoll driver and governor a window makes the ping-pong poll: faster.
    let h = e3::HostTwin::new(1500, 3000, "haltpoll", "haltpoll", 250).unwrap();
    assert!(h.predict(200_000).ns_per_switch() < h.predict(0).ns_per_switch());
    // The calibration's bisection needs ns per switch not to fall as the wake-up grows.
    let mut last = 0.0;
    for wake in [0, 500, 1_000, 5_000, 50_000] {
        let ns = e3::HostTwin::new(1500, wake, "none", "menu", 250)
            .unwrap()
            .predict(0)
            .ns_per_switch();
        assert!(ns >= last, "wake {wake}: {ns} < {last}");
        last = ns;
    }
    assert!(e3::HostTwin::new(1500, 3000, "intel_idle", "menu", 250).is_err());
    assert!(e3::HostTwin::new(0, 3000, "none", "menu", 250).is_err());
    assert!(e3::HostTwin::new(1500, 3000, "haltpoll", "performance", 250).is_err());
}

#[test]
fn the_difference_is_the_sum_of_its_critical_path_parts() {
    let r = e3::results(20_000);
    assert_eq!(r.parts.len(), 3);
    for d in &r.parts {
        let diff = row(&r, d.baseline).ns_per_switch - row(&r, d.poll).ns_per_switch;
        // Terms under 0.05 ns per switch are left out.
        assert!(
            (diff - d.total()).abs() < 0.05 * d.parts.len().max(1) as f64 + 0.1,
            "{:?}: simulated {diff} against parts {}",
            d.baseline,
            d.total()
        );
    }
    // With the tick stopped before the poll, the two paths differ only by the poll's notice
    // of NEED_RESCHED (and the rare tick).
    let base = &r.parts[0];
    assert!(base.parts.iter().any(|p| p.name.contains("poller notices")));
    assert!(base.parts.iter().all(|p| p.ns.abs() < 25.0), "{base:?}");
    assert_eq!(r.other_reading.len(), 8);
}

#[test]
fn every_row_is_its_critical_path() {
    let r = e3::results(20_000);
    for x in &r.rows {
        // The parts are the model's own walk: they add up to the row, shares to 100 %.
        let sum: f64 = x.path.iter().map(|p| p.ns_per_switch).sum();
        let share: f64 = x.path.iter().map(|p| p.share_pct).sum();
        assert!((sum - x.ns_per_switch).abs() < 1e-6, "{}: {sum}", x.label);
        assert!((share - 100.0).abs() < 1e-6, "{}: {share}", x.label);
        assert!(x.path.iter().all(|p| !p.source.is_empty()));
    }
    // The timectxsw rows' paths hold the handshake (the spinner's notice, the writer's retry,
    // the wait for the switch-out) and no ICR exit; the blocking pipe row's holds the ICR
    // exit and none of the handshake.
    let names =
        |c: Config| -> Vec<String> { row(&r, c).path.iter().map(|p| p.name.clone()).collect() };
    for c in [
        Config::Hlt,
        Config::GuestPoll { ns: 10_000 },
        Config::IdlePoll,
    ] {
        let n = names(c);
        assert!(n.iter().any(|n| n.contains("p->on_cpu")), "{c:?}: {n:?}");
        assert!(n.iter().any(|n| n.contains("retry")), "{c:?}: {n:?}");
        assert!(!n.iter().any(|n| n.contains("ICR")), "{c:?}: {n:?}");
    }
    let pipe = names(Config::HltPipe);
    assert!(pipe.iter().any(|n| n.contains("ICR")), "{pipe:?}");
    assert!(!pipe.iter().any(|n| n.contains("p->on_cpu")), "{pipe:?}");
    // Every row with a published figure gets an absolute check.
    assert_eq!(r.absolute.len(), 10);
}

#[test]
fn the_2017_poll_placement_switch_moves_the_guest_poll_rows_and_only_them() {
    let r = e3::results(20_000);
    let before = &r.poll_before_tick_stop;
    let polls: Vec<Config> = CONFIGS
        .iter()
        .copied()
        .filter(|c| matches!(c, Config::GuestPoll { .. }))
        .collect();
    assert_eq!(
        before.rows.iter().map(|x| x.config).collect::<Vec<_>>(),
        polls
    );
    let names = |path: &[ticklab_schema::experiment::e3::PathPart]| -> Vec<String> {
        path.iter().map(|p| p.name.clone()).collect()
    };
    let has_tick_work = |n: &[String]| {
        n.iter()
            .any(|n| n.contains("tick stop") || n.contains("tick restart"))
    };
    let haltpoll = row(&r, Config::Haltpoll { ns: 200_000 });
    for b in &before.rows {
        // Before the stop: a wake lands in the poll with the tick running, so no stop, no
        // restart, no TSC-deadline write; the path is today's haltpoll driver's.
        let n = names(&b.path);
        assert!(!has_tick_work(&n), "{}: {n:?}", b.label);
        assert!(b.tsc_deadline_exits < 0.01, "{b:?}");
        // Today's driver halts on its first few wakes (window 0) and ticks land in either:
        // compare the terms of 1 ns per switch or more.
        let shape = |path: &[ticklab_schema::experiment::e3::PathPart]| -> Vec<String> {
            path.iter()
                .filter(|p| p.ns_per_switch >= 1.0)
                .map(|p| p.name.clone())
                .collect()
        };
        assert_eq!(shape(&b.path), shape(&haltpoll.path), "{}", b.label);
        assert!(
            (b.ns_per_switch - haltpoll.ns_per_switch).abs() < 1.0,
            "{b:?}"
        );
        // After the stop (the verdict): the same row pays both.
        let a = row(&r, b.config);
        assert!(has_tick_work(&names(&a.path)), "{a:?}");
        assert!((a.tsc_deadline_exits - 1.0).abs() < 1e-3, "{a:?}");
        assert!(a.ns_per_switch - b.ns_per_switch > 1000.0, "{a:?} {b:?}");
    }
    // The checks: one absolute per row, one difference per row against the verdict's HLT,
    // whose path is the sum of its terms.
    assert_eq!((before.absolute.len(), before.checks.len()), (4, 4));
    let hlt = row(&r, Config::Hlt).ns_per_switch;
    for (c, b) in before.checks.iter().zip(&before.rows) {
        assert!((c.value - (hlt - b.ns_per_switch)).abs() < 1e-9, "{c:?}");
    }
    let [d] = &before.parts[..] else {
        panic!("one difference path: {:?}", before.parts)
    };
    assert_eq!((d.baseline, d.poll), (Config::Hlt, e3::DIFFERENCE_POLL_ROW));
    let diff = hlt - row_of(&before.rows, d.poll).ns_per_switch;
    assert!(
        (diff - d.total()).abs() < 0.5,
        "{diff} against {}",
        d.total()
    );
    assert!(
        d.parts.iter().any(|p| p.name.contains("tick restart")),
        "{d:?}"
    );
    // The verdict stays on the documented placement: its rows are unchanged by the reading.
    assert_eq!(
        e3::VERDICT_PLACEMENT,
        ticklab_twin::kernel::idle::GuestPollPlacement::AfterTickStop
    );
}

fn row_of(
    rows: &[ticklab_schema::experiment::e3::Row],
    c: Config,
) -> &ticklab_schema::experiment::e3::Row {
    rows.iter().find(|x| x.config == c).expect("row")
}
