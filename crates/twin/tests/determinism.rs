//! Same scenario and seed ⇒ byte-identical JSON report; a different seed differs. And
//! localised: every experiment's scenarios run twice with the window-digest listener agree
//! event for event, and a difference injected at a known time is found in its window,
//! naming the event.

use ticklab_schema::scenario::{Run, Scenario};
use ticklab_twin::determinism::{Recorder, divergence};
use ticklab_twin::experiments::{e1, e2, e4};
use ticklab_twin::sim::{Event, Observer};
use ticklab_twin::{Sim, SimError};

/// Digest windows: 10 ms of simulated time.
const WINDOW_NS: u64 = 10_000_000;

/// A short run, enough for every mechanism of the experiments to act several times.
const SHORT: Run = Run {
    duration_ns: 400_000_000,
    warmup_ns: 100_000_000,
    seed: 7,
};

/// Runs `sim` to its end and hands its recorder back.
fn finish(sim: Result<Sim<Recorder>, SimError>) -> Recorder {
    let mut sim = sim.expect("scenario runs");
    sim.run(|_| {});
    sim.observer().clone()
}

fn scenario_run(s: &Scenario) -> impl FnMut(Recorder) -> Recorder + '_ {
    move |r| finish(Sim::with_observer(s, r))
}

/// Every scenario the experiments run (E1's modes × loads, E2's configurations with their
/// mechanisms, E4's points), each run twice: no window differs. E3 runs the guest model,
/// which has no event loop to observe.
#[test]
fn every_experiment_scenario_runs_the_same_twice() {
    let mut checked = 0;
    for mode in e1::Mode::ALL {
        for load in e1::LOADS {
            let s = e1::scenario(mode, load, SHORT);
            let d = divergence(WINDOW_NS, scenario_run(&s), scenario_run(&s));
            assert!(d.is_none(), "E1 {mode:?} load {load}: {}", d.unwrap());
            checked += 1;
        }
    }
    for c in e2::Config::ALL {
        let run = |r| finish(e2::sim_with(c, SHORT, 10_000, r));
        let d = divergence(WINDOW_NS, run, run);
        assert!(d.is_none(), "E2 {c:?}: {}", d.unwrap());
        checked += 1;
    }
    for p in e4::points() {
        let s = e4::scenario(p, 1);
        let d = divergence(WINDOW_NS, scenario_run(&s), scenario_run(&s));
        assert!(d.is_none(), "E4 {p:?}: {}", d.unwrap());
        checked += 1;
    }
    assert!(checked > 20, "{checked} scenarios");
}

/// Passes every event on and adds one of its own before the first event at or after `at`.
#[derive(Clone)]
struct Inject {
    inner: Recorder,
    at: u64,
    extra: Event,
    done: bool,
}

impl Observer for Inject {
    fn on(&mut self, at: u64, ev: Event) {
        if !self.done && at >= self.at {
            self.inner.on(at, self.extra);
            self.done = true;
        }
        self.inner.on(at, ev);
    }
}

#[test]
fn an_injected_difference_is_named_by_its_window_and_event() {
    let s = e1::scenario(e1::Mode::Aggressive, 2, SHORT);
    let at = 123_456_789;
    let extra = Event::TickRestarted { cpu: 5 };
    let right = |r: Recorder| {
        let inject = Inject {
            inner: r,
            at,
            extra,
            done: false,
        };
        let mut sim = Sim::with_observer(&s, inject).expect("scenario runs");
        sim.run(|_| {});
        assert!(sim.observer().done, "the run reaches {at} ns");
        sim.observer().inner.clone()
    };
    let d = divergence(WINDOW_NS, scenario_run(&s), right).expect("the runs differ");
    assert_eq!(d.window, at / WINDOW_NS, "{d}");
    let (when, what) = d.right.expect("the injected event");
    assert_eq!(what, extra, "{d}");
    assert!(when >= at && when / WINDOW_NS == d.window, "{d}");
    assert!(d.left.is_some_and(|(_, ev)| ev != extra), "{d}");
    let text = d.to_string();
    assert!(text.contains("window 12 (120.000–130.000 ms"), "{text}");
    assert!(text.contains("TickRestarted { cpu: 5 }"), "{text}");
}

fn json(seed: u64, hogs: u32) -> String {
    let run = Run {
        duration_ns: 2_000_000_000,
        warmup_ns: 500_000_000,
        seed,
    };
    let s = e1::scenario(e1::Mode::Aggressive, hogs, run);
    serde_json::to_string(&ticklab_twin::simulate(&s, |_| {}).unwrap()).unwrap()
}

#[test]
fn same_seed_same_bytes() {
    for hogs in [0, 2] {
        assert_eq!(json(7, hogs), json(7, hogs));
    }
    assert_ne!(json(7, 0), json(8, 0));
}
