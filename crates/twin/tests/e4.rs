//! Scenario tests of E4 (docs/experiments.md E4): the syscall loop in the event loop.
//!
//! * context tracking costs only on nohz_full CPUs;
//! * an unpinned task under `isolcpus=` never runs on an isolated CPU;
//! * the cost changes with the kernel version across the 2016 vtime change;
//! * a busy nohz_full CPU has its own residual 1 Hz tick before 4.17 and none after, when a
//!   housekeeping CPU runs the remote tick instead;
//! * the scenario files in `experiments/` are the experiment's own scenarios;
//! * the per-call breakdown adds up to the measured ns per call.

use ticklab_schema::report::{Report, SyscallBreakdown};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::workload::TaskGroup;
use ticklab_twin::experiments::e4::{self, Case, Point, Server};
use ticklab_twin::simulate;

/// The E4 scenario of a point, with `calls` calls, on kernel `version`, run for `secs`.
fn scenario(
    server: Server,
    case: Case,
    pinned: bool,
    version: &str,
    calls: u64,
    secs: u64,
) -> Scenario {
    let p = Point {
        server,
        kernel: "5.15",
        case,
        pinned,
    };
    let mut s = e4::scenario(p, 1);
    s.kernel.version = version.into();
    if let TaskGroup::Syscall { calls: n, .. } = &mut s.workload.groups[0] {
        *n = calls;
    }
    s.run.duration_ns = secs * 1_000_000_000;
    s
}

fn run(s: &Scenario) -> (Report, f64, SyscallBreakdown) {
    let r = simulate(s, |_| {}).expect("E4 scenario simulates");
    let (ns, b) = e4::syscall_result(&r).expect("a syscall loop result");
    (r, ns, b)
}

#[test]
fn context_tracking_costs_only_on_nohz_full_cpus() {
    // (case, pinned, CPU it must run on, pays context tracking)
    let cases = [
        (Case::NohzIdle, true, 4, false),
        (Case::FullBuiltIn, true, 4, false),
        (Case::FullActive, true, 4, true),
        (Case::FullHousekeeping, true, 20, false),
        (Case::FullActive, false, 0, false),
    ];
    for (case, pinned, cpu, pays) in cases {
        let (_, ns, b) = run(&scenario(Server::Intel, case, pinned, "5.15", 1_000_000, 2));
        assert_eq!(b.ran_on, cpu, "{case:?}");
        assert!(b.finished, "{case:?}");
        assert_eq!(b.rcu_eqs_ns > 0.0, pays, "{case:?}: {b:?}");
        assert_eq!(b.vtime_ns > 0.0, pays, "{case:?}: {b:?}");
        if pays {
            assert!(ns > b.entry_exit_ns + 60.0, "{case:?}: {ns}");
        } else {
            // Only the static-key / per-CPU test, and only while some CPU is nohz_full.
            assert!(b.static_key_ns <= 6.0, "{case:?}: {b:?}");
            assert_eq!(
                b.static_key_ns > 0.0,
                case == Case::FullActive || case == Case::FullHousekeeping
            );
        }
    }
}

#[test]
fn unpinned_under_isolcpus_never_runs_on_an_isolated_cpu() {
    for server in Server::ALL {
        let s = scenario(server, Case::FullActive, false, "5.15", 100_000, 1);
        let (r, _, b) = run(&s);
        let isolated = ticklab_cmdline::parse_cpulist(server.isolated_list(), 1024).unwrap();
        assert!(
            !isolated.contains(b.ran_on),
            "{server:?} ran on {}",
            b.ran_on
        );
        // The isolated CPUs stay idle: nothing of the loop lands there.
        for c in isolated.iter() {
            assert_eq!(r.cpus[c as usize].busy_ns, Some(0), "{server:?} CPU {c}");
        }
    }
}

#[test]
fn the_2016_vtime_change_shows_with_the_kernel_version() {
    // (version, context tracking per call on the Intel preset: 2 × (EQS + vtime part))
    let cases = [
        ("4.4", 2 * (21 + 75)),
        ("4.8", 2 * (21 + 1)),
        ("5.15", 2 * (21 + 12)),
    ];
    for (v, ct) in cases {
        let (_, ns, b) = run(&scenario(
            Server::Intel,
            Case::FullActive,
            true,
            v,
            1_000_000,
            2,
        ));
        assert_eq!((b.rcu_eqs_ns + b.vtime_ns) as u64, ct, "{v}");
        assert!(ns >= 400.0 + ct as f64, "{v}: {ns}");
    }
    // Before 4.6 every transition accounts: no passes of pending time.
    let (_, _, old) = run(&scenario(
        Server::Intel,
        Case::FullActive,
        true,
        "4.4",
        10_000_000,
        5,
    ));
    let (_, _, new) = run(&scenario(
        Server::Intel,
        Case::FullActive,
        true,
        "4.8",
        10_000_000,
        5,
    ));
    assert_eq!(old.vtime_flushes, 0);
    assert!(new.vtime_flushes > 0);
}

#[test]
fn residual_1hz_tick_before_4_17_remote_tick_after() {
    // 11-12 s of loop on a nohz_full CPU: its own ticks (one a second before 4.17), and the
    // remote tick's expiries (after).
    for (v, own_ticks, remote) in [
        ("4.14", 10..=13, false),
        ("4.16", 10..=13, false),
        ("4.17", 0..=1, true),
        ("5.15", 0..=1, true),
    ] {
        let s = scenario(Server::Intel, Case::FullActive, true, v, 25_000_000, 13);
        let (r, _, b) = run(&s);
        assert!(b.finished, "{v}");
        assert!(b.elapsed_ns > 10_000_000_000, "{v}: {}", b.elapsed_ns);
        assert!(
            own_ticks.contains(&b.ticks),
            "{v}: {} ticks of its own",
            b.ticks
        );
        let remote_runs = r
            .background
            .iter()
            .find(|x| x.name == "sched_tick_remote")
            .map_or(0, |x| x.expiries);
        assert_eq!(remote_runs > 0, remote, "{v}: {remote_runs} remote ticks");
        if remote {
            // One per nohz_full CPU (36) per second, all on housekeeping CPUs.
            assert!(remote_runs >= 36 * 11, "{v}: {remote_runs}");
        }
    }
}

#[test]
fn breakdown_adds_up_and_runs_are_deterministic() {
    let s = scenario(Server::Amd, Case::NohzIdle, false, "5.15", 10_000_000, 3);
    let (r1, ns, b) = run(&s);
    let sum = b.per_call_sum();
    assert!((sum - ns).abs() < 1e-6, "{sum} vs {ns}");
    assert!(b.ticks > 0 && b.interrupts >= b.ticks);
    let (r2, _, _) = run(&s);
    assert_eq!(
        serde_json::to_string(&r1).unwrap(),
        serde_json::to_string(&r2).unwrap()
    );
}

#[test]
fn scenario_files_are_the_experiments_own() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut seen = 0;
    for p in e4::points() {
        let file = dir.join(e4::file_name(p));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let parsed = Scenario::from_toml(&text, &file.display().to_string()).unwrap();
        let built = e4::scenario(p, 1);
        assert_eq!(parsed.machine, built.machine, "{}", file.display());
        assert_eq!(parsed.kernel, built.kernel, "{}", file.display());
        assert_eq!(parsed.workload, built.workload, "{}", file.display());
        assert_eq!(parsed.run, built.run, "{}", file.display());
        assert_eq!(parsed.background, built.background, "{}", file.display());
        seen += 1;
    }
    assert_eq!(seen, e4::POINTS);
}

#[test]
fn host_prediction_adds_context_tracking_on_the_nohz_full_cpu_only() {
    // A 2-CPU guest that measured 163 ns per call on CPU 0.
    let p = e4::predict_host(2, "6.18", 250, 163.0, Some(0), 1_000_000).unwrap();
    assert_eq!(p.entry_exit_ns, 163);
    let hk = &p.housekeeping;
    assert_eq!(hk.breakdown.ran_on, 0);
    assert_eq!(hk.breakdown.rcu_eqs_ns, 0.0);
    assert!(
        hk.ns_per_call >= 163.0 && hk.ns_per_call < 170.0,
        "{}",
        hk.ns_per_call
    );
    let f = p
        .nohz_full
        .as_ref()
        .expect("two CPUs: one can be nohz_full");
    assert_eq!(f.cmdline, "nohz_full=1");
    assert_eq!(f.breakdown.ran_on, 1);
    // x86 parts on 6.18: 2 × (21 + 12) ns.
    assert_eq!(f.breakdown.rcu_eqs_ns + f.breakdown.vtime_ns, 66.0);
    assert!(f.ns_per_call > hk.ns_per_call + 60.0);
    // One CPU: the kernel keeps it housekeeping, so there is no nohz_full prediction.
    assert!(
        e4::predict_host(1, "6.18", 250, 163.0, None, 1000)
            .unwrap()
            .nohz_full
            .is_none()
    );
}
