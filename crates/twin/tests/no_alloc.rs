//! The hot path allocates nothing per event: after a warm-up (which sizes the pending-change
//! heap and the scratch vectors once), stepping the simulation performs zero heap allocations.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use ticklab_schema::scenario::Run;
use ticklab_twin::Sim;
use ticklab_twin::experiments::{e1, e2, e4};

struct Counting;

thread_local! {
    /// Allocations made by this thread. Per thread, so that the test harness's own threads
    /// (its "has been running for over 60 seconds" notice on a slow machine) are not counted:
    /// a global counter made this test fail under load. A `const` initialiser without a
    /// destructor, so reading it from inside the allocator allocates nothing.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one allocation of the calling thread.
fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

/// The calling thread's allocations so far.
fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged,
// so `Counting` upholds `GlobalAlloc`'s contract exactly as `System` does; it only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller guarantees `layout` has a non-zero size (`GlobalAlloc::alloc`).
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: `ptr` came from `System` with `layout`, and the caller guarantees `new_size`
        // is non-zero and fits `isize` when rounded to the alignment.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Steps `sim` past `warmup_ns`, then to its end, and asserts that the second part made at
/// least `min_events` events and no heap allocation.
fn assert_steps_without_allocating(mut sim: Sim, warmup_ns: u64, min_events: u64, what: &str) {
    while sim.now() < warmup_ns && sim.step() {}
    let before = allocs();
    let events_before = sim.events();
    while sim.step() {}
    let allocs = allocs() - before;
    let events = sim.events() - events_before;
    assert!(events > min_events, "{events} events ({what})");
    assert_eq!(
        allocs, 0,
        "{allocs} allocations over {events} events ({what})"
    );
}

/// One test, not several: the counter is per thread, so several would also work, but one
/// keeps the scenarios' setup out of each other's way on a small machine.
// Over 100 lines: one scenario after another (E1, E2, frames, the syscall loop, ...), each a
// few lines of setup and the same count; kept in one function for the reason above.
#[test]
fn stepping_does_not_allocate() {
    // The counter sees this thread's allocations (else every check below would pass).
    let b = allocs();
    drop(std::hint::black_box(vec![1u8; 16]));
    assert!(allocs() > b, "the per-thread counter counts");
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
        let sim = Sim::new(&e1::scenario(mode, hogs, run)).unwrap();
        assert_steps_without_allocating(sim, 1_000_000_000, 300, &format!("{mode:?}, {hogs} hogs"));
    }
    // E2: 64 CPUs, frame workers, lock hand-offs; with the power model (its pending-change
    // deque) and without it, as the experiment runs.
    for (skew, power) in [(false, true), (false, false), (true, false)] {
        let run = Run {
            duration_ns: 2_000_000_000,
            warmup_ns: 0,
            seed: 3,
        };
        let sim = if power {
            Sim::new(&e2::scenario(skew, run)).unwrap()
        } else {
            e2::sim(skew, run, 10_000).unwrap()
        };
        let what = format!("E2 skew {skew}, power {power}");
        assert_steps_without_allocating(sim, 500_000_000, 100_000, &what);
    }
    // --histogram: every frame worker's cyclictest buckets, allocated before the run; some
    // frames overflow the 5 buckets (their indices go into reserved capacity).
    {
        let run = Run {
            duration_ns: 2_000_000_000,
            warmup_ns: 0,
            seed: 3,
        };
        let mut sim = e2::sim(true, run, 10_000).unwrap();
        sim.set_frame_histogram(5);
        assert_steps_without_allocating(sim, 500_000_000, 100_000, "E2 with histograms");
    }
    // E4: the syscall loop, its interrupts, preemption by woken tasks, the vtime passes at its
    // end, the residual 1 Hz tick (4.14) and the remote tick (5.15).
    for (case, pinned, version) in [
        (e4::Case::NohzIdle, false, "5.15"),
        (e4::Case::FullActive, true, "5.15"),
        (e4::Case::FullActive, true, "4.14"),
    ] {
        let p = e4::Point {
            server: e4::Server::Intel,
            kernel: "5.15",
            case,
            pinned,
        };
        let mut s = e4::scenario(p, 2);
        s.kernel.version = version.into();
        s.run.duration_ns = 5_000_000_000;
        // 6 M calls end inside the run (about 2.4-2.8 s), so the end event is stepped too.
        s.workload.groups = vec![ticklab_schema::workload::TaskGroup::Syscall {
            cpu: pinned.then_some(4),
            calls: 6_000_000,
        }];
        let sim = Sim::new(&s).unwrap();
        let what = format!("E4 {case:?} pinned {pinned} {version}");
        assert_steps_without_allocating(sim, 1_000_000_000, 500, &what);
        // The same with the noise report kept (`--noise`): the syscall loop's detours.
        let mut sim = Sim::new(&s).unwrap();
        sim.set_noise();
        assert_steps_without_allocating(sim, 1_000_000_000, 500, &format!("{what}, noise"));
    }
    // Noise accounting on hogs (E1, 8 hogs) and a BSP job on E2's 64 CPUs (its barrier,
    // blame and iteration histogram are sized at setup), with and without skew_tick, and with
    // a synthetic noise source drawing every iteration.
    {
        let run = Run {
            duration_ns: 3_000_000_000,
            warmup_ns: 0,
            seed: 5,
        };
        let mut sim = Sim::new(&e1::scenario(e1::Mode::NohzFull, 8, run)).unwrap();
        sim.set_noise();
        assert_steps_without_allocating(sim, 1_000_000_000, 300, "E1 8 hogs, noise");
        for (cmdline, synthetic) in [("", false), ("skew_tick=1", false), ("", true)] {
            let mut s = e2::scenario(false, run);
            s.kernel.cmdline = cmdline.into();
            s.workload =
                ticklab_schema::workload::Workload::parse("bsp:64@0-63:work=300us", 64).unwrap();
            let mut sim = Sim::new(&s).unwrap();
            if synthetic {
                use ticklab_twin::workloads::bsp::{SyntheticMode, SyntheticNoise};
                assert!(sim.set_synthetic_noise(SyntheticNoise {
                    len_ns: 10_000,
                    p: 0.01,
                    mode: SyntheticMode::Independent,
                }));
            }
            let what = format!("bsp 64 ranks {cmdline:?} synthetic {synthetic}");
            assert_steps_without_allocating(sim, 1_000_000_000, 10_000, &what);
        }
    }
}
