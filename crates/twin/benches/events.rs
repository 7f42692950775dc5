//! Simulated events per second on E1 points (idle: few events, mostly the housekeeping tick;
//! 8 hogs: the busiest E1 point) and on the two E2 configurations (64 CPUs, 60 frame
//! workers, built as the experiment builds them), plus the event-queue structures on a
//! 64-CPU hold workload, and the profile's hot functions alone (group `hot`).
//! `cargo bench -p ticklab-twin`, or `ticklab bench` for the simulation points with thread
//! CPU time.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ticklab_schema::scenario::Run;
use ticklab_twin::Sim;
use ticklab_twin::experiments::{e1, e2};

fn events(c: &mut Criterion) {
    let mut g = c.benchmark_group("e1");
    g.sample_size(10);
    for (mode, hogs) in [
        (e1::Mode::NohzFull, 0),
        (e1::Mode::NohzFull, 8),
        (e1::Mode::Aggressive, 2),
    ] {
        let run = Run {
            duration_ns: 5_000_000_000,
            warmup_ns: 0,
            seed: 1,
        };
        let s = e1::scenario(mode, hogs, run);
        let mut probe = Sim::new(&s).unwrap();
        probe.run(|_| {});
        g.throughput(Throughput::Elements(probe.events()));
        g.bench_function(format!("{}-{}", mode.name(), e1::load_label(hogs)), |b| {
            b.iter(|| {
                let mut sim = Sim::new(&s).unwrap();
                sim.run(|_| {});
                sim.events()
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("e2");
    g.sample_size(10);
    for skew in [false, true] {
        let run = Run {
            duration_ns: 1_000_000_000,
            warmup_ns: 0,
            seed: 1,
        };
        // Built as `ticklab experiment e2` builds it (no power integration).
        let flier = ticklab_twin::workloads::frames::DEFAULT_FLIER_NS;
        let mut probe = e2::sim(skew, run, flier).unwrap();
        probe.run(|_| {});
        g.throughput(Throughput::Elements(probe.events()));
        g.bench_function(if skew { "skew" } else { "no-skew" }, |b| {
            b.iter(|| {
                let mut sim = e2::sim(skew, run, flier).unwrap();
                sim.run(|_| {});
                sim.events()
            })
        });
    }
    g.finish();
}

/// The queue alone: 64 CPUs, each step takes the earliest CPU and moves it a pseudo-random
/// 1–1024 µs later (the "hold" model of priority-queue benchmarks), as `Sim::step` does.
fn queues(c: &mut Criterion) {
    use ticklab_twin::engine::{BinaryHeapQueue, DaryTree, EventQueue, TournamentTree};
    fn hold(q: &mut impl EventQueue, steps: u64) -> u64 {
        for cpu in 0..64 {
            q.set(cpu, cpu as u64 * 997);
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut sum = 0;
        for _ in 0..steps {
            let (t, cpu) = q.peek().expect("64 CPUs are always pending");
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            q.set(cpu, t + 1_000 + (x & 0xF_FFFF));
            sum += t;
        }
        sum
    }
    let steps = 1_000_000;
    let mut g = c.benchmark_group("queue");
    g.sample_size(20);
    g.throughput(Throughput::Elements(steps));
    g.bench_function("dary-8", |b| b.iter(|| hold(&mut DaryTree::new(64), steps)));
    g.bench_function("binary-tree", |b| {
        b.iter(|| hold(&mut TournamentTree::new(64), steps))
    });
    g.bench_function("binary-heap", |b| {
        b.iter(|| hold(&mut BinaryHeapQueue::new(64), steps))
    });
    // The runner-up the twin prefetches by on thousands of CPUs (`Sim::set_prefetch`), asked
    // once per step of a 4096-CPU hold.
    g.bench_function("binary-tree-runner-up-4096", |b| {
        b.iter(|| {
            let mut q = TournamentTree::new(4096);
            for cpu in 0..4096 {
                q.set(cpu, cpu as u64 * 997);
            }
            let mut sum = 0;
            for _ in 0..steps {
                let (t, cpu) = q.peek().expect("4096 CPUs are always pending");
                sum += q.runner_up().unwrap_or(0);
                q.set(cpu, t + 1_000_000);
            }
            sum
        })
    });
    g.finish();
}

/// The hot functions of the last profile (README "Speed"), each alone, so that a regression
/// in one shows without the rest of the event loop around it:
/// * a ticket and a queued spinlock taken by 64 CPUs of four sockets arriving together (E2's
///   cpupri vectors and seqlock: the ticket lock's spin through its pending releases);
/// * `cpupri_set` by 64 CPUs waking together and sleeping together, on ticket and queued
///   vector locks (E2 (a)'s burst, the ticket walk and the vectors' hand-off transfers);
/// * 64 CPUs entering and leaving nohz idle together (the two nohz masks' bit flips), and 64
///   busy ticks checking whether to kick the idle load balancer (the pick slots' line);
/// * 64 CPUs' ticks through RCU's grace-period work on four leaf locks (notice, report,
///   grace-period start), on ticket leaf locks;
/// * 64 CPUs' ticks through the jiffies update: one writer in `xtime_lock`, 63 readers of
///   its sequence count, on a ticket and on a queued write side;
/// * hrtimer start and expiry passes with two active clock bases (a tick and one more timer);
/// * the menu governor's select and reflect around one idle stay;
/// * the frame histogram's recorder (E2 counts each frame's jitter and wake-up latency).
fn hot(c: &mut Criterion) {
    use ticklab_twin::kernel::cpuidle::{Governor, IdleStateParams, Menu, Reflect, SelectInput};
    use ticklab_twin::kernel::hrtimer_bench::{Layout, Op, run};
    let mut g = c.benchmark_group("hot");
    shared_lines(&mut g);
    for (name, op) in [("hrtimer-start", Op::Start), ("hrtimer-expire", Op::Expire)] {
        g.throughput(Throughput::Elements(1_000));
        g.bench_function(name, |b| b.iter(|| run(op, Layout::ActiveBases(2), 1_000)));
    }
    let states = [
        IdleStateParams::new("C1", 2_000, 2_000),
        IdleStateParams::new("C1E", 10_000, 20_000),
        IdleStateParams::new("C6", 133_000, 400_000),
    ];
    g.throughput(Throughput::Elements(1_000));
    g.bench_function("menu-select-reflect", |b| {
        b.iter(|| {
            let mut menu = Menu::new();
            let mut picked = 0;
            for i in 0..1_000u64 {
                let sleep = 50_000 + (i * 7_919) % 900_000;
                let sel = menu.select(
                    &states,
                    &SelectInput {
                        sleep_length_ns: sleep,
                        delta_next_ns: sleep,
                        tick_stopped: false,
                        latency_req_ns: u64::MAX,
                        tick_period_ns: 1_000_000,
                        utilized: false,
                    },
                );
                picked += sel.state;
                menu.reflect(
                    &states,
                    &Reflect {
                        state: sel.state,
                        residency_ns: sleep / 2,
                        woken_by_tick: i % 3 == 0,
                        poll_timed_out: false,
                    },
                );
            }
            picked
        })
    });
    let mut hist = ticklab_schema::hdr::HdrRecorder::new(60_000_000_000, 3).unwrap();
    g.throughput(Throughput::Elements(1_000));
    g.bench_function("hdr-record", |b| {
        b.iter(|| {
            // E2's jitters: a few µs, with a tail to hundreds.
            for i in 0..1_000u64 {
                hist.record(1_000 + (i * 7_919) % 300_000);
            }
        })
    });
    g.finish();
}

/// The `hot` group's functions of the shared lines and locks (the first five items of
/// [`hot`]'s list): what E2's 64 CPUs contend for when their ticks, wake-ups and idle
/// entries come together.
fn shared_lines(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    use ticklab_twin::hw::lock::{ContendedLock, TransferCost};
    use ticklab_twin::hw::spinlock::Spinlock;
    use ticklab_twin::kernel::{cpupri_bench, nohz_balance_bench, rcu_bench, timekeeping_bench};
    let cost = TransferCost::new(45, 150, 4);
    for (name, spinlock) in [
        ("spinlock-ticket-64", Spinlock::Ticket),
        ("spinlock-queued-64", Spinlock::Queued),
    ] {
        g.throughput(Throughput::Elements(64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut lock = ContendedLock::with_spinlock(spinlock, 64);
                (0..64u32)
                    .map(|cpu| lock.acquire(1_000, 200, cpu, cpu / 16, cost).wait_ns)
                    .sum::<u64>()
            })
        });
    }
    for (name, spinlock) in [
        ("cpupri-set-ticket-64", Spinlock::Ticket),
        ("cpupri-set-queued-64", Spinlock::Queued),
    ] {
        // One wake-and-sleep burst: 128 calls, 256 vector-lock acquisitions.
        g.throughput(Throughput::Elements(2 * u64::from(cpupri_bench::CPUS)));
        g.bench_function(name, |b| b.iter(|| cpupri_bench::bursts(spinlock, 1)));
    }
    // 64 idle entries and 64 exits, each flipping two nohz mask bits.
    g.throughput(Throughput::Elements(
        2 * u64::from(nohz_balance_bench::CPUS),
    ));
    g.bench_function("nohz-flip-masks-64", |b| {
        b.iter(|| nohz_balance_bench::bursts(1))
    });
    // 64 busy ticks' kick checks.
    g.throughput(Throughput::Elements(u64::from(nohz_balance_bench::CPUS)));
    g.bench_function("nohz-kick-needed-64", |b| {
        b.iter(|| nohz_balance_bench::kicks(1))
    });
    // 20 ticks of 64 CPUs through RCU's work: 1 280 calls of check_callbacks.
    g.throughput(Throughput::Elements(20 * rcu_bench::CPUS as u64));
    g.bench_function("rcu-check-callbacks-64", |b| {
        b.iter(|| rcu_bench::ticks(Spinlock::Ticket, 20).spent_ns)
    });
    for (name, spinlock) in [
        ("jiffies-seqlock-ticket-64", Spinlock::Ticket),
        ("jiffies-seqlock-queued-64", Spinlock::Queued),
    ] {
        // 20 ticks: 20 writes and 1 260 reads.
        g.throughput(Throughput::Elements(
            20 * u64::from(timekeeping_bench::CPUS),
        ));
        g.bench_function(name, |b| b.iter(|| timekeeping_bench::ticks(spinlock, 20)));
    }
}

criterion_group!(benches, events, queues, hot);
criterion_main!(benches);
