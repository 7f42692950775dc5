//! E2: frame workload, tick-time contention and skew_tick on the 64-CPU server.

use ticklab_schema::machine::server_2012_64;
use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::e2;
use ticklab_twin::hw::lock::{ContendedLock, TransferCost};
use ticklab_twin::kernel::tick::skew_offset;

fn short(duration_ms: u64) -> Run {
    Run {
        duration_ns: duration_ms * 1_000_000,
        warmup_ns: 1_000_000_000,
        seed: 1,
    }
}

fn frame_counts(r: &Report) -> Vec<(String, u64, u32, u64)> {
    r.workloads
        .iter()
        .filter_map(|w| match w {
            WorkloadResult::Frames(g) => Some(g),
            _ => None,
        })
        .flat_map(|g| {
            g.rows
                .iter()
                .map(move |row| (g.group.clone(), g.frequency_hz as u64, row.cpu, row.frames))
        })
        .collect()
}

#[test]
fn frame_counts_equal_frequency_times_duration() {
    for skew in [false, true] {
        let o = e2::run_one(skew, short(500), 10_000).unwrap();
        let rows = frame_counts(&o.report);
        assert_eq!(rows.len(), 60);
        for (g, hz, cpu, frames) in rows {
            assert_eq!(frames, hz / 2, "group {g} cpu {cpu} skew {skew}");
        }
    }
}

/// Longest wait of N CPUs that take one line/lock at the same instants `step` apart.
fn worst_wait(n: u32, step: u64, hold: u64, cost: TransferCost) -> (u64, u64) {
    let mut l = ContendedLock::new();
    let m = server_2012_64();
    let (mut worst, mut contended) = (0, 0);
    for cpu in 0..n {
        let socket = m.topology.socket_of(cpu);
        let a = l.acquire(1_000_000 + step * cpu as u64, hold, cpu, socket, cost);
        worst = worst.max(a.wait_ns);
        contended += u64::from(a.contended);
    }
    (worst, contended)
}

fn server_cost() -> (u64, TransferCost) {
    let m = server_2012_64();
    (
        m.costs.rcu_node_hold_ns,
        TransferCost {
            local_ns: m.costs.cacheline_local_ns,
            remote_ns: m.costs.cacheline_remote_ns,
        },
    )
}

#[test]
fn skew_offsets_follow_the_formula_on_64_cpus() {
    // floor(floor(TICK_NSEC / 2) / 64) = 7812 ns per CPU at HZ=1000 (docs/kernel-behaviour.md §6.1).
    assert_eq!(skew_offset(1_000_000, 64, 1), 7_812);
    assert_eq!(skew_offset(1_000_000, 64, 63), 63 * 7_812);
    assert!(skew_offset(1_000_000, 64, 63) < 500_000);
}

#[test]
fn contention_vanishes_when_the_skew_step_exceeds_the_critical_section() {
    let (hold, cost) = server_cost();
    let step = skew_offset(1_000_000, 64, 1);
    assert!(step > hold + cost.remote_ns);
    let (worst, contended) = worst_wait(64, step, hold, cost);
    assert_eq!(contended, 0);
    assert!(
        worst <= cost.remote_ns,
        "only the line transfer remains: {worst}"
    );
    // A step shorter than hold + transfer brings the queue back.
    let (worst, contended) = worst_wait(64, hold / 2, hold, cost);
    assert!(
        contended > 0 && worst > 10 * cost.remote_ns,
        "{worst} {contended}"
    );
}

#[test]
fn contention_grows_with_the_number_of_simultaneous_tickers() {
    let (hold, cost) = server_cost();
    let waits: Vec<u64> = [2, 8, 16, 32, 64]
        .iter()
        .map(|&n| worst_wait(n, 0, hold, cost).0)
        .collect();
    for w in waits.windows(2) {
        assert!(w[1] > w[0], "{waits:?}");
    }
    // The last of 64 waits for the 63 sections and hand-offs before it.
    let last = waits[4];
    assert!(last >= 63 * (hold + cost.local_ns) && last <= 63 * (hold + cost.remote_ns));
}

#[test]
fn skew_cuts_the_tail_and_the_tick_lock_waits() {
    let a = e2::run_one(false, short(300), 10_000).unwrap();
    let b = e2::run_one(true, short(300), 10_000).unwrap();
    let max = |o: &e2::Outcome| {
        o.groups()
            .iter()
            .map(|g| e2::summary(g).max_us)
            .fold(0.0, f64::max)
    };
    assert!(max(&a) > 2.0 * max(&b), "{} vs {}", max(&a), max(&b));
    let longest = |o: &e2::Outcome| -> f64 {
        let locks = o.report.locks.as_ref().expect("the twin reports its locks");
        locks.max_tick_wait_ns as f64 / 1e3
    };
    // 64 CPUs on one leaf: the last waits ~63 hand-offs; skewed, at most a transfer or two.
    assert!(longest(&a) > 8.0, "{}", longest(&a));
    assert!(longest(&b) < 1.0, "{}", longest(&b));
}

#[test]
fn frame_tables_snapshot() {
    let mut out = String::new();
    for o in e2::run(short(100), 10_000, 2, |_| {}).unwrap() {
        out.push_str(&format!("skew={}\n", o.skew));
        for g in o.groups() {
            out.push_str(&ticklab_report::frame_table(g));
        }
    }
    insta::assert_snapshot!(out);
}

#[test]
fn same_seed_same_json() {
    let a = e2::run_one(false, short(50), 10_000).unwrap();
    let b = e2::run_one(false, short(50), 10_000).unwrap();
    assert_eq!(
        serde_json::to_string(&a.report).unwrap(),
        serde_json::to_string(&b.report).unwrap()
    );
}

/// Spread of the per-CPU mean jitter across group A (largest ÷ smallest) without skew.
fn group_a_mean_spread(jitter_ns: u64) -> f64 {
    let mut s = e2::scenario(false, short(2_000));
    s.machine.costs.timer_delivery_jitter_ns = jitter_ns;
    let mut sim = ticklab_twin::Sim::new(&s).unwrap();
    sim.without_energy();
    sim.run(|_| {});
    let r = sim.report();
    let a = r
        .workloads
        .iter()
        .find_map(|w| match w {
            WorkloadResult::Frames(g) if g.group == "A" => Some(g),
            _ => None,
        })
        .expect("group A");
    let means: Vec<f64> = a.rows.iter().map(|row| row.avg_us).collect();
    let max = means.iter().copied().fold(f64::MIN, f64::max);
    let min = means.iter().copied().fold(f64::MAX, f64::min);
    max / min
}

#[test]
fn delivery_jitter_removes_the_cpu_number_gradient() {
    // Ticks programmed for the same instant reach the rcu_node lock in a random order when
    // their delivery is spread; in CPU-number order (no spread) the last CPU of the group
    // always waits longest and the per-CPU means climb with the CPU number.
    let ordered = group_a_mean_spread(0);
    let spread = group_a_mean_spread(100);
    assert!(ordered > 1.3, "without jitter: spread {ordered:.3}");
    assert!(spread < 1.05, "with jitter: spread {spread:.3}");
}
