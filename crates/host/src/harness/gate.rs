//! The start line every thread of a run crosses together.
//!
//! Each worker sets itself up (pins, sets its policy, calibrates), then calls [`Gate::wait`]
//! once. The coordinator calls [`Gate::open`] with the number of threads it spawned: it waits
//! until every one of them is ready, takes its start-of-window measurement, and then releases
//! all of them with the same `t0`, a little in the future ([`LEAD_NS`]) so that every worker is
//! asleep before the first frame is due.
//!
//! The gate knows nothing about workers or snapshots: the leaf workers (`frames`, `hogs`,
//! `pingpong`, `syscall`) and the orchestrator (`run`) both depend on it, never on each other.
//!
//! Invariant: `t0` is set once, after `ready >= workers`; a worker never returns from
//! [`Gate::wait`] before `t0` is set.

use std::sync::{Condvar, Mutex};

use super::os;

/// Time between the go signal and t0, so every worker is asleep before the first frame.
pub(crate) const LEAD_NS: u64 = 2_000_000;

/// Start line shared by all threads of a run: each worker calls [`Gate::wait`] once when it is
/// set up, and gets t0 when the coordinator opens the gate.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    /// Workers that called [`Gate::wait`].
    ready: usize,
    /// The start of the window, once the coordinator opened the gate.
    t0: Option<u64>,
}

impl Gate {
    /// Called by workers: "I am ready"; returns t0 once the coordinator has set it.
    pub(crate) fn wait(&self) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.ready += 1;
        self.changed.notify_all();
        loop {
            if let Some(t0) = st.t0 {
                return t0;
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Called by the coordinator: waits until `workers` threads are ready, runs `at_start`
    /// (the start-of-window snapshot), then releases everyone with t0 = now + [`LEAD_NS`].
    pub(crate) fn open<T>(&self, workers: usize, at_start: impl FnOnce() -> T) -> (T, u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.ready < workers {
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        debug_assert!(st.t0.is_none(), "a gate opens once");
        let snap = at_start();
        let t0 = os::now_ns() + LEAD_NS;
        st.t0 = Some(t0);
        self.changed.notify_all();
        (snap, t0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_gets_the_same_t0_after_the_snapshot() {
        let gate = Gate::default();
        let t0s: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3).map(|_| s.spawn(|| gate.wait())).collect();
            let (snap_at, t0) = gate.open(3, os::now_ns);
            assert!(t0 >= snap_at + LEAD_NS);
            let got: Vec<u64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert!(got.iter().all(|&t| t == t0));
            got
        });
        assert_eq!(t0s.len(), 3);
    }
}
