//! The validation layer's promise (crates/schema/src/validate.rs, docs/validation.md): any
//! scenario it accepts, with a compute estimate under the limit, builds and runs one second
//! of simulated time without a panic. The generated scenarios push every checked value
//! across its limits (zero, huge, NaN, negative), so that both sides of each rule are tried.

use proptest::prelude::*;
use ticklab_schema::machine::{AutoDemotion, Machine, kvm_guest, xps13_7390};
use ticklab_schema::scenario::{BackgroundSource, Placement, Scenario, TimerKind};
use ticklab_schema::workload::Workload;

/// A u64 mostly in range, sometimes at or past a limit (0, a second, `u64::MAX`), so that
/// about a third of the generated scenarios pass validation and run.
fn wide_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        96 => 1u64..10_000_000,
        1 => Just(0u64),
        1 => Just(1_000_000_000),
        1 => Just(1_000_000_001),
        1 => Just(u64::MAX / 2),
        1 => Just(u64::MAX),
    ]
}

/// An f64 mostly in range, sometimes NaN, infinite, negative or huge.
fn wide_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        96 => 0.0f64..20.0,
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(1e300),
    ]
}

fn machine() -> impl Strategy<Value = Machine> {
    (
        prop_oneof![Just(None), (1u32..5).prop_map(Some)],
        prop_oneof![8 => 1u32..3, 1 => Just(0u32)],
        (wide_u64(), wide_u64(), wide_u64(), wide_u64()),
        (wide_f64(), wide_f64(), wide_f64()),
        (
            prop_oneof![12 => 1usize..10, 1 => Just(0usize), 1 => Just(11usize)],
            wide_u64(),
            wide_u64(),
        ),
        (
            any::<bool>(),
            prop_oneof![8 => 1u32..=16, 1 => Just(0u32), 1 => Just(20u32)],
            0usize..3,
        ),
    )
        .prop_map(
            |(
                guest,
                threads,
                (irq, tick, min_d, max_d),
                (w, core, pkg),
                (nstates, lat, res),
                (demote, window, to),
            )| {
                let mut m = match guest {
                    Some(n) => kvm_guest(n),
                    None => xps13_7390(),
                };
                m.topology.threads_per_core = threads.max(u32::from(guest.is_none()));
                m.costs.irq_entry_exit_ns = irq;
                m.costs.tick_handler_ns = tick;
                m.clockevent.min_delta_ns = min_d;
                m.clockevent.max_delta_ns = min_d.saturating_add(max_d);
                m.costs.work_unit_ns = w;
                m.power.core_active_w = core;
                m.power.package_active_w = pkg;
                if guest.is_some() {
                    // The guest has no package C-states indexing its idle states.
                    let st = m.idle_states[m.idle_states.len() - 1].clone();
                    m.idle_states.resize(nstates, st);
                }
                if let Some(s) = m.idle_states.last_mut() {
                    s.exit_latency_ns = lat;
                    s.target_residency_ns = res;
                }
                if demote {
                    m.power.auto_demotion = Some(AutoDemotion {
                        min_mean_residency_ns: 1_000_000,
                        window,
                        demote_to: to,
                    });
                }
                m
            },
        )
}

fn source() -> impl Strategy<Value = BackgroundSource> {
    (
        any::<bool>(),
        0u8..3,
        prop_oneof![
            Just(None),
            wide_u64().prop_map(|p| Some(p.saturating_mul(1000)))
        ],
        prop_oneof![Just(None), wide_f64().prop_map(Some)],
        wide_u64(),
        prop_oneof![4 => Just(None), 1 => (0u32..12).prop_map(|c| Some(c.to_string()))],
    )
        .prop_map(
            |(hr, place, period_ns, rate_hz, slack_ns, cpus)| BackgroundSource {
                name: "generated".into(),
                kind: if hr {
                    TimerKind::Hrtimer
                } else {
                    TimerKind::Wheel
                },
                placement: [
                    Placement::PerCpu,
                    Placement::Housekeeping,
                    Placement::WatchdogCpus,
                ][usize::from(place)],
                period_ns,
                rate_hz,
                deferrable: !hr,
                slack_ns,
                wakes_task: place == 0,
                follows_task: false,
                timer_migrates: false,
                hard: false,
                task_ns: None,
                relative: false,
                provenance: "proptest".into(),
                cpus: cpus.and_then(|c| ticklab_cmdline::parse_cpulist(&c, u32::MAX).ok()),
            },
        )
}

const WORKLOADS: &[&str] = &[
    "idle",
    "hogs:1",
    "hogs:2@0-1",
    "frames:1000@1:loop=1000",
    "frames:100000@0:loop=18446744073709551615",
    "frames:960@0-1:loop=500000",
    "syscall:getpid@1:n=1000",
];

const CMDLINES: &[&str] = &[
    "",
    "nohz_full=1",
    "nohz_full=all nohz_full_aggressive",
    "skew_tick=1 idle=poll",
    "isolcpus=domain,nohz,1 nohz_full=1 cpuidle.governor=ladder",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn any_accepted_scenario_runs_a_second(
        m in machine(),
        sources in proptest::collection::vec(source(), 0..6),
        w in 0usize..WORKLOADS.len(),
        c in 0usize..CMDLINES.len(),
        hz in prop_oneof![4 => Just(100u32), 4 => Just(250), 4 => Just(1000), 1 => Just(0), 1 => Just(1001)],
        seed in any::<u64>(),
    ) {
        let base = "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.10\"\nhz = 1000\nnohz = \"full\"\n";
        let mut s = Scenario::from_toml(base, "proptest").expect("the base parses");
        let nr = m.topology.nr_cpus();
        s.machine = m;
        s.background.extend(sources);
        s.kernel.hz = hz;
        s.kernel.cmdline = CMDLINES[c].into();
        s.run.duration_ns = 1_000_000_000;
        s.run.warmup_ns = 10_000_000;
        s.run.seed = seed;
        let Ok(workload) = Workload::parse(WORKLOADS[w], nr) else { return Ok(()) };
        s.workload = workload;
        if s.validate().is_err() || s.check_compute("--yes").is_err() {
            return Ok(());
        }
        // Accepted: it must run (an error for what the twin does not model is fine).
        let _ = ticklab_twin::simulate(&s, |_| {});
    }
}

/// The reproducers of issue 17 that used to panic the twin now stop at the validation layer
/// with an error naming the key, through `simulate` itself (as `compare`'s workers call it).
#[test]
fn issue_17_panics_are_errors_of_simulate() {
    let base = "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.10\"\nhz = 1000\nnohz = \"full\"\n[run]\nduration = \"10ms\"\n";
    type Edit = fn(&mut Scenario);
    let cases: &[(Edit, &str)] = &[
        (
            |s| s.machine.idle_states = vec![s.machine.idle_states[1].clone(); 65],
            "machine.idle_states",
        ),
        (|s| s.machine.idle_states[1].core_w = f64::NAN, "core_w"),
        (
            |s| s.machine.clockevent.max_delta_ns = 0,
            "machine.clockevent",
        ),
        (
            |s| s.machine.clockevent.min_delta_ns = u64::MAX,
            "machine.clockevent",
        ),
        (
            |s| s.machine.topology.cores_per_socket = 2_147_483_649,
            "machine.topology",
        ),
    ];
    for (edit, key) in cases {
        let mut s = Scenario::from_toml(base, "t").expect("the base parses");
        edit(&mut s);
        let e = ticklab_twin::simulate(&s, |_| {}).expect_err(key);
        assert!(e.to_string().contains(key), "{e}");
    }
    // 16 hrtimer and 20 wheel background sources per CPU: the slab and the wheel grow.
    let mut s = Scenario::from_toml(base, "t").expect("the base parses");
    for i in 0..20 {
        for kind in [TimerKind::Hrtimer, TimerKind::Wheel] {
            s.background.push(BackgroundSource {
                name: format!("t{i}"),
                kind,
                placement: Placement::PerCpu,
                period_ns: Some(1_000_000),
                rate_hz: None,
                deferrable: false,
                slack_ns: 0,
                wakes_task: false,
                follows_task: false,
                timer_migrates: false,
                hard: false,
                task_ns: None,
                relative: false,
                provenance: "test".into(),
                cpus: None,
            });
        }
    }
    let r = ticklab_twin::simulate(&s, |_| {}).expect("44 sources fit");
    assert!(r.cpus.iter().all(|c| c.loc > 0));
}
