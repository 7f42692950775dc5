//! Table tests of the validation layer: every reproducer of issue 17 that reaches the model
//! through a scenario, each refused with its key.

use super::*;
use crate::machine::{AutoDemotion, IdleState, kvm_guest, xps13_7390};
use crate::scenario::{Placement, TimerKind, default_background};
use crate::workload::Workload;
use ticklab_cmdline::CpuSet;

fn scenario(machine: Machine) -> Scenario {
    let text =
        "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.10\"\nhz = 1000\nnohz = \"full\"\n";
    let mut s = Scenario::from_toml(text, "t").expect("the base scenario is valid");
    s.machine = machine;
    s
}

fn source(kind: TimerKind, period_ns: Option<u64>, rate_hz: Option<f64>) -> BackgroundSource {
    BackgroundSource {
        name: "b".into(),
        kind,
        placement: Placement::PerCpu,
        period_ns,
        rate_hz,
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
    }
}

type Edit = fn(&mut Scenario);

#[test]
// Over 100 lines because it is one table: a row per refused value and the key its error must name.
fn every_bad_value_is_refused_naming_its_key() {
    let cases: &[(&str, Edit, &str)] = &[
        (
            "65 idle states",
            |s| {
                let st = s.machine.idle_states[1].clone();
                s.machine.idle_states = vec![st; 65];
            },
            "machine.idle_states",
        ),
        (
            "no idle state",
            |s| s.machine.idle_states.clear(),
            "machine.idle_states",
        ),
        (
            "core_w = nan",
            |s| s.machine.idle_states[1].core_w = f64::NAN,
            "machine.idle_states[1].core_w",
        ),
        (
            "wake energy -1",
            |s| s.machine.idle_states[0].wake_energy_uj = -1.0,
            "machine.idle_states[0].wake_energy_uj",
        ),
        (
            "max_delta_ns = 0",
            |s| s.machine.clockevent.max_delta_ns = 0,
            "machine.clockevent",
        ),
        (
            "min_delta_ns = u64::MAX",
            |s| s.machine.clockevent.min_delta_ns = u64::MAX,
            "machine.clockevent",
        ),
        (
            "cores_per_socket = 2^31 + 1",
            |s| s.machine.topology.cores_per_socket = 2_147_483_649,
            "machine.topology",
        ),
        (
            "2 × 2147483650 wraps to 4",
            |s| {
                s.machine.topology.sockets = 2;
                s.machine.topology.cores_per_socket = 2_147_483_650;
            },
            "machine.topology",
        ),
        (
            "4097 CPUs",
            |s| s.machine.topology.cores_per_socket = 4097,
            "machine.topology",
        ),
        (
            "0 sockets",
            |s| s.machine.topology.sockets = 0,
            "machine.topology.sockets",
        ),
        (
            "work_unit_ns = nan",
            |s| s.machine.costs.work_unit_ns = f64::NAN,
            "machine.costs.work_unit_ns",
        ),
        (
            "work_unit_ns = -1",
            |s| s.machine.costs.work_unit_ns = -1.0,
            "machine.costs.work_unit_ns",
        ),
        (
            "irq cost u64::MAX",
            |s| s.machine.costs.irq_entry_exit_ns = u64::MAX,
            "machine.costs.irq_entry_exit_ns",
        ),
        (
            "softirq thread runs 0 ns",
            |s| s.machine.costs.softirq_thread_ns = Some(0),
            "machine.costs.softirq_thread_ns",
        ),
        (
            "softirq thread runs u64::MAX",
            |s| s.machine.costs.softirq_thread_ns = Some(u64::MAX),
            "machine.costs.softirq_thread_ns",
        ),
        (
            "core_active_w = -5",
            |s| s.machine.power.core_active_w = -5.0,
            "machine.power.core_active_w",
        ),
        (
            "package_active_w = inf",
            |s| s.machine.power.package_active_w = f64::INFINITY,
            "machine.power.package_active_w",
        ),
        (
            "power limit 0",
            |s| s.machine.power.power_limit_w = Some(0.0),
            "machine.power.power_limit_w",
        ),
        (
            "auto-demotion window 0",
            |s| {
                s.machine.power.auto_demotion = Some(AutoDemotion {
                    min_mean_residency_ns: 1,
                    window: 0,
                    demote_to: 0,
                });
            },
            "machine.power.auto_demotion.window",
        ),
        (
            "auto-demotion past the states",
            |s| {
                s.machine.power.auto_demotion = Some(AutoDemotion {
                    min_mean_residency_ns: 1,
                    window: 8,
                    demote_to: 9,
                });
            },
            "machine.power.auto_demotion.demote_to",
        ),
        (
            "max_idle_ns = 0",
            |s| s.machine.clocksource.max_idle_ns = 0,
            "machine.clocksource.max_idle_ns",
        ),
        (
            "rate_hz = inf",
            |s| {
                s.background
                    .push(source(TimerKind::Hrtimer, None, Some(f64::INFINITY)))
            },
            "background[4].rate_hz",
        ),
        (
            "rate_hz = nan",
            |s| {
                s.background
                    .push(source(TimerKind::Hrtimer, None, Some(f64::NAN)))
            },
            "background[4].rate_hz",
        ),
        (
            "period_ns = 0",
            |s| s.background.push(source(TimerKind::Wheel, Some(0), None)),
            "background[4].period_ns",
        ),
        (
            "both period and rate",
            |s| {
                s.background
                    .push(source(TimerKind::Wheel, Some(1_000_000), Some(1.0)))
            },
            "background[4]",
        ),
        (
            "cpus = 99999 on 2 CPUs",
            |s| {
                let mut b = source(TimerKind::Hrtimer, Some(1_000_000), None);
                b.cpus = Some(CpuSet::from_iter([5]));
                s.background.push(b);
            },
            "background[4].cpus",
        ),
        (
            "follows_task without wakes_task",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                b.follows_task = true;
                s.background.push(b);
            },
            "background[4].follows_task",
        ),
        (
            "task_ns without wakes_task",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                b.task_ns = Some(30_000);
                s.background.push(b);
            },
            "background[4].task_ns",
        ),
        (
            "task_ns = 0",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                (b.wakes_task, b.task_ns) = (true, Some(0));
                s.background.push(b);
            },
            "background[4].task_ns",
        ),
        (
            "task_ns of a day",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                (b.wakes_task, b.task_ns) = (true, Some(86_400_000_000_000));
                s.background.push(b);
            },
            "background[4].task_ns",
        ),
        (
            "timer_migrates without cpus",
            |s| {
                let mut b = source(TimerKind::Hrtimer, Some(1_000_000), None);
                (b.wakes_task, b.timer_migrates) = (true, true);
                s.background.push(b);
            },
            "background[4].timer_migrates",
        ),
        (
            "hard on a wheel timer",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                b.hard = true;
                s.background.push(b);
            },
            "background[4].hard",
        ),
        (
            "timer_migrates on a wheel timer",
            |s| {
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                (b.wakes_task, b.timer_migrates) = (true, true);
                b.cpus = Some(CpuSet::from_iter([1]));
                s.background.push(b);
            },
            "background[4].timer_migrates",
        ),
        (
            "timer_migrates with follows_task",
            |s| {
                let mut b = source(TimerKind::Hrtimer, Some(1_000_000), None);
                (b.wakes_task, b.follows_task, b.timer_migrates) = (true, true, true);
                b.cpus = Some(CpuSet::from_iter([1]));
                s.background.push(b);
            },
            "background[4].timer_migrates",
        ),
        (
            "64 following sources on 256 CPUs",
            |s| {
                s.machine.topology.cores_per_socket = 256;
                let mut b = source(TimerKind::Wheel, Some(1_000_000), None);
                (b.wakes_task, b.follows_task) = (true, true);
                s.background = vec![b; 64];
            },
            "background",
        ),
        (
            "65 background sources",
            |s| {
                s.background = vec![source(TimerKind::Hrtimer, Some(1_000_000), None); 65];
            },
            "background",
        ),
        (
            "frame work wraps",
            |s| {
                s.workload =
                    Workload::parse("frames:1000@1:loop=18446744073000000000", 2).expect("parses");
            },
            "workload",
        ),
        (
            "ping-pong forever",
            |s| {
                s.workload = Workload::parse("pingpong:futex@0,1:n=18446744073709551615", 2)
                    .expect("parses");
            },
            "workload",
        ),
        (
            "run of three weeks",
            |s| {
                s.run.duration_ns = MAX_RUN_NS;
                s.run.warmup_ns = 1;
            },
            "run",
        ),
        (
            "run of u64::MAX",
            |s| {
                s.run.duration_ns = u64::MAX;
                s.run.warmup_ns = u64::MAX;
            },
            "run",
        ),
        ("kernel hz 1001", |s| s.kernel.hz = 1001, "kernel.hz"),
        (
            "kvm host wake u64::MAX",
            |s| {
                s.machine.kvm_host = Some(crate::machine::KvmHost {
                    host_wake_ns: u64::MAX,
                    host_halt_poll_ns: None,
                })
            },
            "machine.kvm_host.host_wake_ns",
        ),
        (
            "kvm host halt_poll_ns 2 s",
            |s| {
                s.machine.kvm_host = Some(crate::machine::KvmHost {
                    host_wake_ns: 3000,
                    host_halt_poll_ns: Some(2_000_000_000),
                })
            },
            "machine.kvm_host.host_halt_poll_ns",
        ),
        (
            "halt wake with no point",
            |s| s.machine.halt_wake = Some(crate::machine::HaltWake { points: vec![] }),
            "machine.halt_wake.points",
        ),
        (
            "halt wake sleeps not rising",
            |s| s.machine.halt_wake = Some(halt_wake(&[(1000, 5), (1000, 6)])),
            "machine.halt_wake.points.1.slept_ns",
        ),
        (
            "halt wake cost falling",
            |s| s.machine.halt_wake = Some(halt_wake(&[(1000, 6), (2000, 5)])),
            "machine.halt_wake.points.1.exit_ns",
        ),
        (
            "halt wake cost past a second",
            |s| s.machine.halt_wake = Some(halt_wake(&[(1000, 2_000_000_000)])),
            "machine.halt_wake.points.0.exit_ns",
        ),
        (
            "kernel version x",
            |s| s.kernel.version = "x".into(),
            "kernel.version",
        ),
    ];
    for (name, edit, key) in cases {
        let mut s = scenario(kvm_guest(2));
        edit(&mut s);
        let e = s.validate().expect_err(name);
        assert_eq!(e.key, *key, "{name}: {e}");
    }
}

#[test]
fn presets_and_default_background_are_valid() {
    for name in crate::machine::PRESETS {
        let m = crate::machine::preset(name).expect("a preset");
        m.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut s = scenario(xps13_7390());
    s.background = default_background();
    s.validate().expect("the default scenario is valid");
}

#[test]
fn compute_estimate_refuses_weeks_on_thousands_of_cpus() {
    let mut s = scenario(kvm_guest(4096));
    s.run.duration_ns = 7 * 24 * 3600 * 1_000_000_000;
    s.validate().expect("each value is in range");
    let e = s.check_compute("--yes").expect_err("hours of compute");
    assert!(e.what.contains("--yes"), "{e}");
    let small = scenario(kvm_guest(2));
    small
        .check_compute("--yes")
        .expect("a 10 s run on 2 CPUs is cheap");
}

#[test]
fn a_typo_in_an_inline_machine_names_the_key() {
    let base = scenario(kvm_guest(2)).to_toml();
    let typo = base.replace("threads_per_core = 1", "threads_per_cor = 1");
    let e = Scenario::from_toml(&typo, "t.toml").expect_err("a typo");
    assert!(e.to_string().contains("threads_per_cor"), "{e}");
    let nan = base.replacen("core_w = 0.0", "core_w = nan", 1);
    let e = Scenario::from_toml(&nan, "t.toml").expect_err("nan");
    assert!(
        e.to_string().contains("machine.idle_states[0].core_w"),
        "{e}"
    );
    let wide = base.replace("cores_per_socket = 2", "cores_per_socket = 2147483649");
    let e = Scenario::from_toml(&wide, "t.toml").expect_err("too many CPUs");
    assert!(e.to_string().contains("machine.topology"), "{e}");
}

#[test]
fn a_scenario_file_past_the_size_limit_is_refused() {
    let e = Scenario::load("/dev/zero").expect_err("not a scenario");
    assert!(e.to_string().contains("MiB"), "{e}");
}

#[test]
fn idle_state_fields_are_checked_one_by_one() {
    let good = IdleState {
        name: "C1".into(),
        exit_latency_ns: 1000,
        target_residency_ns: 1000,
        polling: false,
        core_w: 0.5,
        core_w_pkg_active: 0.5,
        wake_energy_uj: 1.0,
    };
    let mut m = kvm_guest(2);
    m.idle_states = vec![good.clone(); MAX_IDLE_STATES];
    m.validate().expect("ten states are allowed");
    m.idle_states[9].exit_latency_ns = MAX_COST_NS + 1;
    let e = m.validate().expect_err("a latency past a second");
    assert_eq!(e.key, "machine.idle_states[9].exit_latency_ns");
}

fn halt_wake(points: &[(u64, u64)]) -> crate::machine::HaltWake {
    crate::machine::HaltWake {
        points: points
            .iter()
            .map(|&(slept_ns, exit_ns)| crate::machine::HaltWakePoint { slept_ns, exit_ns })
            .collect(),
    }
}

#[test]
fn a_rising_halt_wake_curve_is_accepted() {
    let mut s = scenario(kvm_guest(2));
    s.machine.halt_wake = Some(halt_wake(&[
        (50_000, 9_000),
        (1_000_000, 9_000),
        (100_000_000, 30_000),
    ]));
    s.validate().expect("a flat then rising curve is valid");
}
