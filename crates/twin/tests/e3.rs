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
    let hlt = row(&r, Config::Hlt);
    // Every HLT switch: the target halts (HLT exit), the waker writes the ICR, the target's
    // tick is stopped and restarted (two TSC-deadline exits).
    assert!((hlt.hlt_exits - 1.0).abs() < 1e-3, "{hlt:?}");
    assert!((hlt.icr_exits - 1.0).abs() < 1e-3);
    assert!((hlt.tsc_deadline_exits - 2.0).abs() < 1e-3);
    // Only the first wake finds its target still on the way into HLT, and the rare one whose
    // target a tick kept busy past the wake (its wait then finds the word changed).
    assert!(hlt.ipi_skipped_pct < 0.1, "{hlt:?}");
    assert!(
        hlt.ext_int_exits > 0.0 && hlt.ext_int_exits < 0.001,
        "{hlt:?}"
    );
    for ns in [10_000, 20_000, 30_000, 500_000] {
        let p = row(&r, Config::GuestPoll { ns });
        // Guest polling: no HLT, no IPI, faster than HLT, burns more host CPU.
        assert_eq!(p.hlt_exits, 0.0);
        assert_eq!(p.icr_exits, 0.0);
        assert!(p.ipi_skipped_pct > 99.9);
        assert!(p.ns_per_switch < hlt.ns_per_switch);
        assert!(p.host_cpu_pct > hlt.host_cpu_pct);
    }
    // Host polling keeps the guest-side exits; its CPU shows as host polling.
    let host = row(&r, Config::HostPoll { ns: 500_000 });
    assert_eq!(host.hlt_exits, hlt.hlt_exits);
    assert!(host.host_poll_pct > 0.0);
    // idle=poll and cpuidle-haltpoll with its defaults never halt. The 2017 guest's idle
    // loop stops the tick on every entry, idle=poll included (two TSC-deadline exits per
    // switch, the restart on the path: it costs what the guest-poll rows cost); today's
    // haltpoll driver keeps it.
    for c in [Config::IdlePoll, Config::Haltpoll { ns: 200_000 }] {
        let x = row(&r, c);
        assert!(x.hlt_exits < 0.01 && x.icr_exits < 0.01, "{x:?}");
    }
    let idle_poll = row(&r, Config::IdlePoll);
    assert!((idle_poll.tsc_deadline_exits - 2.0).abs() < 1e-3);
    assert_eq!(
        idle_poll.ns_per_switch,
        row(&r, Config::GuestPoll { ns: 10_000 }).ns_per_switch
    );
    assert!(row(&r, Config::Haltpoll { ns: 200_000 }).tsc_deadline_exits < 0.01);
    // Ten vCPUs, the eight idle ones spinning under idle=poll (the published 1003 %).
    assert!(
        (idle_poll.host_cpu_pct - 1000.0).abs() < 1.0,
        "{idle_poll:?}"
    );
    // guest_halt_poll_ns=0 is HLT with host polling off (the driver's poll-control MSR).
    let zero = row(&r, Config::Haltpoll { ns: 0 });
    assert_eq!(
        zero.ns_per_switch,
        row(&r, Config::HltHostPollOff).ns_per_switch
    );
    // One vCPU: no idle on the switch path; no exits but the other vCPU's single idle entry
    // and the busy vCPU's ticks (each an external-interrupt and a TSC-deadline exit).
    let one = row(&r, Config::HltOneCpu);
    assert_eq!(one.hlt_exits + one.icr_exits, 0.0);
    let per_run = |x: f64| (x * 20_000.0).round();
    assert!(per_run(one.ext_int_exits) >= 1.0);
    assert!(per_run(one.tsc_deadline_exits) <= per_run(one.ext_int_exits) + 1.0);
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
    let poll = row(&r, Config::GuestPoll { ns: 10_000 }).ns_per_switch;
    for d in &r.parts {
        let hlt = row(&r, d.baseline).ns_per_switch;
        // The first wakes (window 0, fresh governor) and the ticks (a 2.8 µs tick in about
        // 0.1 % of switches) move it by a few ns at most.
        assert!(
            ((hlt - poll) - d.total() as f64).abs() < 5.0,
            "{:?}: simulated {} against parts {}",
            d.baseline,
            hlt - poll,
            d.total()
        );
    }
    // The baseline's wakes are host-polled: no host C-state, no host switch on the path.
    let base = &r.parts[0];
    assert!(base.parts.iter().all(|p| !p.name.contains("exit latency")));
    // The published baseline used 200.3 % host CPU: with host polling the twin's vCPU threads
    // never block (200 %); with host polling off they would block on every switch.
    assert!(row(&r, Config::Hlt).host_cpu_pct > 199.0);
    assert!(row(&r, Config::HltHostPollOff).host_cpu_pct < 190.0);
    // With the 4.x host menu a blocked vCPU's CPU sits in C1 (MWAIT: no host IPI); a current
    // menu polls for such short idles.
    let host_state = |c: Config| row(&r, c).host_idle.as_ref().map(|h| h.0.clone());
    assert_eq!(host_state(Config::HltHostPollOff).as_deref(), Some("C1"));
    assert_eq!(
        host_state(Config::HltHostPollOffCurrentMenu).as_deref(),
        Some("POLL")
    );
    // Where the host polls, no vCPU thread blocks after the window has grown.
    assert_eq!(host_state(Config::Hlt), None);
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
    // The HLT row's path holds its ICR exit and VM entry; a guest-poll row's does not.
    let names =
        |c: Config| -> Vec<String> { row(&r, c).path.iter().map(|p| p.name.clone()).collect() };
    assert!(names(Config::Hlt).iter().any(|n| n.contains("ICR")));
    assert!(
        !names(Config::GuestPoll { ns: 10_000 })
            .iter()
            .any(|n| n.contains("ICR"))
    );
    // Every row with a published figure gets an absolute check.
    assert_eq!(r.absolute.len(), 10);
}
