//! The hot path allocates nothing per event: after a warm-up (which sizes the pending-change
//! heap and the scratch vectors once), stepping the simulation performs zero heap allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use ticklab_spec::scenario::Run;
use ticklab_twin::Sim;
use ticklab_twin::experiments::{e1, e2};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn stepping_does_not_allocate() {
    for (mode, hogs) in [
        (e1::Mode::NohzFull, 0),
        (e1::Mode::Aggressive, 2),
        (e1::Mode::NohzFull, 8),
    ] {
        let run = Run {
            duration_ns: 4_000_000_000,
            warmup_ns: 0,
            seed: 5,
        };
        let mut sim = Sim::new(&e1::scenario(mode, hogs, run)).unwrap();
        // Warm-up: one simulated second.
        while sim.now() < 1_000_000_000 && sim.step() {}
        let before = ALLOCS.load(Ordering::Relaxed);
        let events_before = sim.events();
        while sim.step() {}
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        let events = sim.events() - events_before;
        assert!(events > 300, "{events} events");
        assert_eq!(
            allocs, 0,
            "{allocs} allocations over {events} events ({mode:?}, {hogs} hogs)"
        );
    }
    e2_stepping_does_not_allocate();
}

/// Part of `stepping_does_not_allocate`: the counter is global, so the checks must not run
/// in parallel test threads.
fn e2_stepping_does_not_allocate() {
    // 64 CPUs, frame workers, lock hand-offs; with the power model (its pending-change deque)
    // and without it, as the experiment runs.
    for (skew, power) in [(false, true), (false, false), (true, false)] {
        let run = Run {
            duration_ns: 2_000_000_000,
            warmup_ns: 0,
            seed: 3,
        };
        let mut sim = if power {
            Sim::new(&e2::scenario(skew, run)).unwrap()
        } else {
            e2::sim(skew, run, 10_000).unwrap()
        };
        while sim.now() < 500_000_000 && sim.step() {}
        let before = ALLOCS.load(Ordering::Relaxed);
        let events_before = sim.events();
        while sim.step() {}
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        let events = sim.events() - events_before;
        assert!(events > 100_000, "{events} events");
        assert_eq!(
            allocs, 0,
            "{allocs} allocations over {events} events (skew {skew}, power {power})"
        );
    }
}
