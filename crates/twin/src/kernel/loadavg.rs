//! The global load average's per-CPU fold as of 3.0 (`kernel/sched.c`: `calc_load_*`), the
//! part that touches shared lines (docs/model.md "E2 mechanisms").
//!
//! Every run queue carries `calc_load_update`, set at boot to the same `jiffies + LOAD_FREQ`
//! for all CPUs (`LOAD_FREQ` = 5 s + 1 tick). The first tick of a CPU at or after it folds the
//! CPU's change of active tasks into the global `calc_load_tasks` with an atomic add (only if
//! the count changed since its last fold), first collecting what idle CPUs left in
//! `calc_load_tasks_idle` (a read, then an exchange when non-zero), and moves its
//! `calc_load_update` on by `LOAD_FREQ`. A CPU that goes idle adds its change to
//! `calc_load_tasks_idle` (`calc_load_account_idle`). The duty CPU, ten ticks after the fold,
//! reads `calc_load_tasks` inside the jiffies write section to compute the averages.
//!
//! Without skew every ticking CPU folds at the same tick, one atomic after another on one line.

use crate::engine::Time;
use crate::hw::lock::{AtomicLine, LOCKED_OP_NS, TransferCost};

/// `LOAD_FREQ` in jiffies: `5 * HZ + 1`.
pub(crate) fn load_freq(hz: u32) -> u64 {
    5 * hz as u64 + 1
}

/// The load-average lines and each CPU's fold schedule.
///
/// Invariant: every CPU's `next_fold` is `first + k · LOAD_FREQ` for some `k ≥ 0`.
#[derive(Debug, Clone)]
pub(crate) struct LoadAvg {
    load_freq: u64,
    calc_load_tasks: AtomicLine,
    calc_load_tasks_idle: AtomicLine,
    /// `calc_load_tasks_idle` is non-zero.
    idle_pending: bool,
    /// Per CPU: `rq->calc_load_update` (jiffies).
    next_fold: Vec<u64>,
    /// Per CPU: `rq->calc_load_active` (the CPU counted a running task at its last fold).
    active: Vec<bool>,
    /// Per CPU: last-seen write numbers of the two lines.
    seen: Vec<(u64, u64)>,
    /// The global `calc_load_update` (jiffies).
    global_update: u64,
}

impl LoadAvg {
    /// Boot at jiffies `j0`: every CPU folds first at `j0 + LOAD_FREQ`.
    pub(crate) fn new(nr_cpus: usize, hz: u32, j0: u64) -> LoadAvg {
        let lf = load_freq(hz);
        LoadAvg {
            load_freq: lf,
            calc_load_tasks: AtomicLine::default(),
            calc_load_tasks_idle: AtomicLine::default(),
            idle_pending: false,
            next_fold: vec![j0 + lf; nr_cpus],
            active: vec![false; nr_cpus],
            seen: vec![(0, 0); nr_cpus],
            global_update: j0 + lf,
        }
    }

    /// `calc_load_account_active` in `cpu`'s tick at `jiffies`, arriving at `at`, with a task
    /// running (`busy`) or not. Returns the time spent on the shared lines (0 when no fold is
    /// due).
    pub(crate) fn tick(
        &mut self,
        cpu: u32,
        socket: u32,
        busy: bool,
        jiffies: u64,
        at: Time,
        cost: TransferCost,
    ) -> u64 {
        let c = cpu as usize;
        if jiffies < self.next_fold[c] {
            return 0;
        }
        while self.next_fold[c] <= jiffies {
            self.next_fold[c] += self.load_freq;
        }
        let mut now = at;
        // calc_load_fold_idle: read, exchange when non-zero.
        now += self
            .calc_load_tasks_idle
            .read(now, &mut self.seen[c].1, cpu, socket, cost);
        let collected = self.idle_pending;
        if collected {
            self.idle_pending = false;
            let got = self
                .calc_load_tasks_idle
                .write(now, LOCKED_OP_NS, cpu, socket, cost);
            now += got.wait_ns + LOCKED_OP_NS;
        }
        // calc_load_fold_active: an atomic add when the count changed (the idle delta folded
        // above counts too: it is added in the same atomic).
        if self.active[c] != busy || collected {
            self.active[c] = busy;
            let got = self
                .calc_load_tasks
                .write(now, LOCKED_OP_NS, cpu, socket, cost);
            now += got.wait_ns + LOCKED_OP_NS;
        }
        now - at
    }

    /// `calc_load_account_idle` when `cpu` switches to the idle task at `at`: an atomic add
    /// to `calc_load_tasks_idle` when its count changed since its last fold.
    pub(crate) fn account_idle(
        &mut self,
        cpu: u32,
        socket: u32,
        at: Time,
        cost: TransferCost,
    ) -> u64 {
        let c = cpu as usize;
        if !self.active[c] {
            return 0;
        }
        self.active[c] = false;
        self.idle_pending = true;
        let got = self
            .calc_load_tasks_idle
            .write(at, LOCKED_OP_NS, cpu, socket, cost);
        got.wait_ns + LOCKED_OP_NS
    }

    /// `calc_global_load` in the duty CPU's jiffies update at `jiffies`: ten ticks after the
    /// fold it reads `calc_load_tasks` (from whoever wrote it last). Returns the time.
    pub(crate) fn global(
        &mut self,
        cpu: u32,
        socket: u32,
        jiffies: u64,
        at: Time,
        cost: TransferCost,
    ) -> u64 {
        if jiffies < self.global_update + 10 {
            return 0;
        }
        self.global_update += self.load_freq;
        let mut seen = u64::MAX;
        self.calc_load_tasks.read(at, &mut seen, cpu, socket, cost)
    }

    /// `cpu`'s next fold (jiffies).
    pub(crate) fn next_fold(&self, cpu: u32) -> u64 {
        self.next_fold[cpu as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: TransferCost = crate::hw::lock::TEST_COST;

    #[test]
    fn folds_once_per_load_freq() {
        assert_eq!(load_freq(1000), 5001);
        let mut l = LoadAvg::new(2, 1000, 100);
        // (jiffies, busy, next fold after the tick)
        for (j, busy, next) in [
            (5100, true, 5101),
            (5101, true, 10_102),
            (5102, true, 10_102),
            (10_101, true, 10_102),
            (10_102, false, 15_103),
            (30_000, false, 30_106), // a CPU that slept through folds folds once
        ] {
            l.tick(0, 0, busy, j, 0, COST);
            assert_eq!(l.next_fold(0), next, "jiffies {j}");
        }
    }

    #[test]
    fn simultaneous_folds_queue_on_the_line() {
        let mut l = LoadAvg::new(4, 1000, 0);
        let t: Vec<u64> = (0..4)
            .map(|c| l.tick(c, 0, true, 5001, 1_000, COST))
            .collect();
        assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
        // The duty CPU reads the line ten ticks later, from the last writer.
        assert_eq!(l.global(0, 0, 5010, 2_000, COST), 0);
        assert_eq!(l.global(0, 0, 5011, 2_000, COST), 40);
        assert_eq!(l.global(0, 0, 5012, 2_000, COST), 0, "once per LOAD_FREQ");
    }
}
