//! Simulated events per second on E1 points (idle: few events, mostly the housekeeping tick;
//! 8 hogs: the busiest E1 point) and on the two E2 configurations (64 CPUs, 60 frame
//! workers). `cargo bench -p ticklab-twin`, or `ticklab bench`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ticklab_spec::scenario::Run;
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
        let s = e2::scenario(skew, run);
        let mut probe = Sim::new(&s).unwrap();
        probe.run(|_| {});
        g.throughput(Throughput::Elements(probe.events()));
        g.bench_function(if skew { "skew" } else { "no-skew" }, |b| {
            b.iter(|| {
                let mut sim = Sim::new(&s).unwrap();
                sim.run(|_| {});
                sim.events()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, events);
criterion_main!(benches);
