//! The observation seam: a listener plugged into `Sim<O>` hears what the report counts, and
//! plugging one in changes nothing in the report.

use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::e1;
use ticklab_twin::sim::{Event, NoTimeline, Observer};
use ticklab_twin::{Sim, simulate};

/// Counts interrupts from `from` (the window's start) and tick stops/restarts over the run.
#[derive(Default)]
struct Counter {
    from: u64,
    irqs: u64,
    stops: u64,
    restarts: u64,
}

impl Observer for Counter {
    fn on(&mut self, at: u64, ev: Event) {
        match ev {
            Event::IrqEntry { .. } if at >= self.from => self.irqs += 1,
            Event::TickStopped { .. } => self.stops += 1,
            Event::TickRestarted { .. } => self.restarts += 1,
            _ => {}
        }
    }
}

#[test]
fn a_listener_hears_what_the_report_counts() {
    let warmup_ns = 200_000_000;
    for hogs in [0, 2] {
        let run = Run {
            duration_ns: 1_000_000_000,
            warmup_ns,
            seed: 3,
        };
        let s = e1::scenario(e1::Mode::NohzFull, hogs, run);
        let counter = Counter {
            from: warmup_ns,
            ..Counter::default()
        };
        // A tuple plugs two listeners in.
        let mut sim = Sim::with_observer(&s, (counter, NoTimeline)).unwrap();
        sim.run(|_| {});
        let report = sim.report();
        let (heard, _) = sim.observer();
        let loc: u64 = report.cpus.iter().map(|c| c.loc).sum();
        assert_eq!(heard.irqs, loc, "{hogs} hogs");
        assert!(heard.stops > 0, "{hogs} hogs: idle CPUs stop their ticks");
        assert!(
            heard.restarts <= heard.stops,
            "{hogs} hogs: a restart follows a stop"
        );
        let plain = simulate(&s, |_| {}).unwrap();
        assert_eq!(
            serde_json::to_string(&report).unwrap(),
            serde_json::to_string(&plain).unwrap(),
            "a listener changes nothing"
        );
    }
}
