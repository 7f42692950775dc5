//! E2: frame workload, the 3.0-era shared lines, skew_tick on the 64-CPU server, and the
//! jitter / wake-up split. Each mechanism's test drives the simulation and listens to its
//! events (docs/model.md "E2 mechanisms").

use std::collections::BTreeMap;
use ticklab_cmdline::CpuSet;
use ticklab_schema::machine::server_2012_64;
use ticklab_schema::report::{Report, WorkloadResult};
use ticklab_schema::scenario::{Run, Scenario};
use ticklab_schema::workload::TaskGroup;
use ticklab_twin::Sim;
use ticklab_twin::experiments::e2::{self, Config, Mechanism};
use ticklab_twin::hw::lock::{ContendedLock, TransferCost};
use ticklab_twin::kernel::tick_sched::skew_offset;
use ticklab_twin::sim::{Event, LockId, Observer, SharedLine};

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
    for config in Config::ALL {
        let o = e2::run_one(config, short(500), 10_000).unwrap();
        let rows = frame_counts(&o.report);
        assert_eq!(rows.len(), 60);
        for (g, hz, cpu, frames) in rows {
            assert_eq!(frames, hz / 2, "group {g} cpu {cpu} {config:?}");
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
        TransferCost::new(
            m.costs.cacheline_local_ns,
            m.costs.cacheline_remote_ns,
            m.topology.sockets,
        ),
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
    assert!(last >= 63 * (hold + cost.local_ns) && last <= 63 * (hold + cost.far_ns));
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
    for o in e2::run(&Config::ALL, short(100), 10_000, 2, |_| {}).unwrap() {
        out.push_str(&format!("config={:?}\n", o.config));
        for g in o.groups() {
            out.push_str(&ticklab_report::frame_table(g));
            out.push_str(&ticklab_report::wakeup_table(g));
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

/// Configuration (a)'s scenario with one frame group of `n` workers at `hz` on CPUs 4.., a
/// timer delivery spread of `jitter_ns`.
fn one_group(n: u32, hz: f64, jitter_ns: u64, ms: u64) -> Scenario {
    let mut s = e2::scenario(Config::A, short(ms));
    s.workload.groups = vec![TaskGroup::Frames {
        name: "X".into(),
        frequency_hz: hz,
        loop_units: 20_000,
        cpus: CpuSet::from_iter(4..4 + n),
    }];
    s.machine.costs.timer_delivery_jitter_ns = jitter_ns;
    s
}

/// Runs `s` with `mechanisms`, listening with `o`.
fn listen<O: Observer>(s: &Scenario, mechanisms: e2::Mechanisms, o: O) -> (O, Report) {
    let mut sim = Sim::with_observer(s, o).unwrap();
    sim.without_energy();
    sim.set_mechanisms(mechanisms);
    sim.run(|_| {});
    let r = sim.report();
    (sim.into_observer(), r)
}

/// The jiffies write sections, as (arrival, cpu, wait, updated, left).
#[derive(Default)]
struct Writes(Vec<(u64, u32, u64, bool, u64)>);

impl Observer for Writes {
    fn on(&mut self, at: u64, ev: Event) {
        if let Event::JiffiesWrite {
            cpu,
            wait_ns,
            updated,
            left_at,
        } = ev
        {
            self.0.push((at, cpu, wait_ns, updated, left_at));
        }
    }
}

/// Groups the writes into episodes: an update and every write that arrived before it left.
/// Returns (CPUs in the episode, of which lost the race and queued).
fn episodes(w: &Writes) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut section_end = 0;
    for &(at, _, wait, updated, left) in &w.0 {
        if updated {
            out.push((1, 0));
            section_end = left;
        } else {
            assert!(at < section_end, "a loser arrives before the update leaves");
            assert!(wait > 0, "a loser queued behind the writer");
            let e = out.last_mut().expect("a loser follows an update");
            e.0 += 1;
            e.1 += 1;
        }
    }
    out
}

#[test]
fn n_cpus_passing_the_jiffies_check_together_queue_n_minus_1_writers() {
    // 500 Hz: every frame starts on a jiffy edge, when jiffies are a period stale. The eight
    // workers' ticks are stopped while they sleep; they wake together and all check.
    let s = one_group(8, 500.0, 0, 200);
    let all = e2::mechanisms(Config::A, None);
    let (race, _) = listen(&s, all, Writes::default());
    let eps = episodes(&race);
    let big: Vec<&(usize, usize)> = eps.iter().filter(|e| e.0 >= 8).collect();
    assert!(
        big.len() >= 90,
        "a race at (nearly) every frame start: {}",
        big.len()
    );
    for &&(n, lost) in &big {
        assert_eq!(
            lost,
            n - 1,
            "N CPUs in the write section -> N-1 queued losers"
        );
    }
    // Without the race, a CPU sees the update at once: nobody ever queues for nothing.
    let (plain, _) = listen(&s, all.without(Mechanism::JiffiesRace), Writes::default());
    assert!(episodes(&plain).iter().all(|e| e.1 == 0));
}

#[test]
fn arrivals_spread_wider_than_the_write_section_do_not_queue() {
    // The same wake-ups, spread over 200 µs by timer delivery: the first CPU's section
    // (~0.3 µs) has ended before most others check.
    let together = one_group(8, 500.0, 0, 200);
    let spread = one_group(8, 500.0, 200_000, 200);
    let all = e2::mechanisms(Config::A, None);
    let lost = |s| -> usize {
        episodes(&listen(s, all, Writes::default()).0)
            .iter()
            .map(|e| e.1)
            .sum()
    };
    let (t, sp) = (lost(&together), lost(&spread));
    assert!(t >= 700, "{t}");
    // `episodes` asserts every loser arrived inside the section; spread, few arrive there.
    assert!(sp * 20 < t, "spread {sp} vs together {t}");
}

/// Longest cpupri wait and the number of cpupri acquisitions.
#[derive(Default)]
struct Cpupri {
    max_wait: u64,
    n: u64,
}

impl Observer for Cpupri {
    fn on(&mut self, _: u64, ev: Event) {
        if let Event::LockAcquired {
            lock: LockId::Line(SharedLine::CpupriVectors),
            wait_ns,
            ..
        } = ev
        {
            self.max_wait = self.max_wait.max(wait_ns);
            self.n += 1;
        }
    }
}

#[test]
fn cpupri_contention_grows_with_simultaneous_wakers_and_vanishes_without_push_pull() {
    let waits: Vec<u64> = [1, 4, 16]
        .iter()
        .map(|&n| {
            let s = one_group(n, 500.0, 0, 100);
            let (c, _) = listen(&s, e2::mechanisms(Config::A, None), Cpupri::default());
            assert!(c.n > 0);
            c.max_wait
        })
        .collect();
    assert!(waits[0] < waits[1] && waits[1] < waits[2], "{waits:?}");
    // Push/pull off (configurations b-d): nothing shared, nothing taken.
    let s = one_group(16, 500.0, 0, 100);
    let (c, _) = listen(&s, e2::mechanisms(Config::C, None), Cpupri::default());
    assert_eq!((c.n, c.max_wait), (0, 0));
}

/// Grace-period starts (jiffy), and per jiffy the CPUs that collided on the leaf lock: a
/// trylock that found it held, or an acquisition that had to queue.
#[derive(Default)]
struct Rcu {
    starts: Vec<u64>,
    collisions: BTreeMap<u64, u64>,
}

impl Observer for Rcu {
    fn on(&mut self, at: u64, ev: Event) {
        match ev {
            Event::RcuGpStarted { .. } => self.starts.push(at / 1_000_000),
            Event::LockAcquired {
                lock: LockId::RcuNodeLeaf(_),
                contended: true,
                ..
            }
            | Event::RcuTrylockFailed { .. } => {
                *self.collisions.entry(at / 1_000_000).or_default() += 1
            }
            _ => {}
        }
    }
}

impl Rcu {
    /// Storms: runs of consecutive jiffies in which at least 48 of the 64 CPUs collided;
    /// returns the first jiffy of each.
    fn storms(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut last = None;
        for (&j, &n) in &self.collisions {
            if n >= 48 {
                if last != Some(j - 1) {
                    out.push(j);
                }
                last = Some(j);
            }
        }
        out
    }
}

#[test]
fn the_grace_period_storm_comes_once_per_grace_period() {
    // Configuration (d): every CPU ticks, unskewed; 300 ms of ticks.
    let s = e2::scenario(Config::D, short(300));
    let (r, _) = listen(&s, e2::mechanisms(Config::D, None), Rcu::default());
    let storms = r.storms();
    assert!(r.starts.len() >= 5, "grace periods: {:?}", r.starts);
    // One storm per grace period, in the first tick after its start (the start may fall in
    // the warm-up, the last storm after the end).
    let window: Vec<u64> = r.starts.iter().copied().filter(|&j| j >= 1000).collect();
    for &j in &window {
        assert!(
            storms.iter().any(|&s| s == j || s == j + 1),
            "GP at {j}: storms {storms:?}"
        );
    }
    // ...and none elsewhere: every storm follows a start within a few ticks (the trylock
    // lets a few CPUs through per tick, so the collisions take some ticks to die down).
    for &st in storms.iter().filter(|&&st| st >= 1000) {
        assert!(
            r.starts.iter().any(|&j| j <= st && st - j <= 10),
            "storm at {st} without a GP start: starts {:?}",
            r.starts
        );
    }
    // Skewed ticks come one after another: nobody collides.
    let s = e2::scenario(Config::B, short(300));
    let (r, _) = listen(&s, e2::mechanisms(Config::B, None), Rcu::default());
    assert!(r.starts.len() >= 20, "{:?}", r.starts);
    assert!(r.storms().is_empty());
    // Switched off: no grace periods, no leaf traffic.
    let (r, _) = listen(
        &s,
        e2::mechanisms(Config::B, Some(Mechanism::RcuGracePeriod)),
        Rcu::default(),
    );
    assert!(r.starts.is_empty() && r.collisions.is_empty());
}

/// Per CPU, the times of its load folds.
#[derive(Default)]
struct Folds(BTreeMap<u32, Vec<u64>>);

impl Observer for Folds {
    fn on(&mut self, at: u64, ev: Event) {
        if let Event::LoadFolded { cpu } = ev {
            self.0.entry(cpu).or_default().push(at);
        }
    }
}

#[test]
fn the_load_fold_comes_every_load_freq() {
    // Periodic ticks (d): each CPU folds at its first tick of jiffies j0 + k × 5001.
    let s = e2::scenario(Config::D, short(10_500));
    let (f, _) = listen(&s, e2::mechanisms(Config::D, None), Folds::default());
    assert_eq!(f.0.len(), 64, "every CPU folds");
    for (cpu, at) in &f.0 {
        assert_eq!(at.len(), 2, "cpu {cpu}: folds at ~5 s and ~10 s: {at:?}");
        let gap = at[1] - at[0];
        // LOAD_FREQ = 5 s + 1 tick, give or take the tick's delivery and path.
        // The fold waits for the tick that sees the jiffy; a tick that runs just before the
        // duty CPU's update sees the previous one and folds a tick later.
        assert!(gap.abs_diff(5_001_000_000) < 1_020_000, "cpu {cpu}: {gap}");
    }
    // Off: none.
    let s = e2::scenario(Config::D, short(5_500));
    let (f, _) = listen(
        &s,
        e2::mechanisms(Config::D, Some(Mechanism::LoadFold)),
        Folds::default(),
    );
    assert!(f.0.is_empty());
}

#[test]
fn jitter_counts_from_the_worker_start_and_the_wakeup_is_reported_apart() {
    let o = e2::run_one(Config::B, short(500), 10_000).unwrap();
    // Groups A and B compute 500 and 721 us per frame, shorter than the 1 ms tick period, so
    // some frames see no interrupt at all; group C's 1.6 ms always contains a tick.
    for g in o.groups().into_iter().take(2) {
        let p = g.wakeup.expect("wake-up percentiles");
        assert!(p.p50_us > 1.0, "a timer wake-up takes microseconds: {p:?}");
        for r in &g.rows {
            let w = r.wakeup.as_ref().expect("wake-up columns");
            assert!(r.min_us < 0.1, "cpu {}: min jitter {} us", r.cpu, r.min_us);
            assert!(w.min_us > r.min_us, "cpu {}", r.cpu);
            assert!(r.max_lock_wait_us.is_some());
        }
    }
}
