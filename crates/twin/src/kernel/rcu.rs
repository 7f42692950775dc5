//! Tree RCU's grace-period bookkeeping as of 3.0 (`kernel/rcutree.c`), the part that takes
//! the leaf `rcu_node` lock (docs/kernel-behaviour.md §12.6, docs/model.md "E2 mechanisms").
//!
//! A grace period (GP) starts when callbacks are waiting and none is in progress; every online
//! CPU then owes a quiescent state (QS). From the tick (`rcu_check_callbacks`, then the RCU
//! softirq, modelled at the same point of the interrupt):
//!
//! 1. a CPU whose recorded GP number is behind the global one **notices** the new GP under a
//!    `raw_spin_trylock` of its leaf (`note_new_gpnum`): on failure it tries again at its next
//!    tick; on success it owes a QS and its passed-quiescent flag is cleared;
//! 2. at a later tick in user mode or idle (a QS), it **reports** under the leaf lock
//!    (`rcu_report_qs_rdp`, a real spin); the last report ends the GP;
//! 3. CPUs in dyntick-idle report nothing: `RCU_JIFFIES_TILL_FORCE_QS` (3) jiffies after the
//!    start, and every 3 jiffies after, the first CPU whose tick sees the deadline **forces**
//!    quiescent states: under the leaf lock it reads every owing CPU's dynticks counter (one
//!    remote line each) and reports those idle ones.
//!
//! Without skew every ticking CPU notices a new GP at the same tick (one CPU wins the trylock
//! per hold, the rest retry) and reports at the next: the storm once per GP that the leaf
//! fan-out limit of 2012 fought.
//!
//! Callbacks: the isolated CPUs post none (their workers do not free RCU-protected data); the
//! housekeeping CPUs' daemons are taken to have callbacks waiting every
//! [`CALLBACK_INTERVAL_NS`] (E), so a new GP starts at the duty CPU's first tick after that
//! once the previous one ended.
//!
//! [`RcuState::check_callbacks`] is the whole sequence one tick runs on its leaf lock (start a
//! GP, then notice / report / force), with the lock's waits; it returns what happened as an
//! [`RcuTick`] for the event loop to charge and report.

use crate::engine::Time;
use crate::hw::lock::{Acquired, ContendedLock, TransferCost};

/// `RCU_JIFFIES_TILL_FORCE_QS` of 3.0: jiffies from a GP's start to the first forcing.
pub(crate) const JIFFIES_TILL_FORCE_QS: u64 = 3;

/// Interval at which the housekeeping CPUs have new callbacks waiting for a GP: 10 ms.
///
/// E (docs/costs.md §5a): a quiet server's housekeeping CPUs free RCU-protected objects
/// (dentries, files, sockets of its daemons) continually; with a GP lasting a few jiffies at
/// HZ=1000 a new GP is then needed every few to tens of milliseconds. 10 ms is the middle of
/// that range, not derived from any E2 figure.
pub(crate) const CALLBACK_INTERVAL_NS: u64 = 10_000_000;

/// What a CPU's tick must do for RCU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RcuWork {
    /// Nothing shared.
    None,
    /// Notice a new GP (`note_new_gpnum`, trylock of the leaf).
    Notice,
    /// Report a QS (`rcu_report_qs_rdp`, leaf lock).
    Report,
    /// Force quiescent states (`force_quiescent_state`, leaf lock and a scan).
    ForceQs,
}

/// The leaf `rcu_node` of `cpu` when every leaf covers `fanout` CPUs (`CONFIG_RCU_FANOUT_LEAF`
/// or `rcu_fanout_leaf=`): CPUs are numbered into leaves in order.
#[inline]
pub(crate) fn leaf_of(cpu: usize, fanout: u32) -> usize {
    cpu / fanout as usize
}

/// The tick that runs RCU's work: on which CPU, when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RcuTickInput {
    /// CPU number.
    pub(crate) cpu: usize,
    /// Its socket (for the lock line's transfer).
    pub(crate) socket: u32,
    /// A housekeeping CPU (its daemons post callbacks, so it may start a GP).
    pub(crate) housekeeping: bool,
    /// Jiffies at the tick.
    pub(crate) jiffies: u64,
    /// Arrival at RCU's work in the tick.
    pub(crate) at: Time,
}

/// One leaf-lock step of a tick's RCU work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RcuLeafStep {
    /// The leaf lock was taken by a CPU arriving at `at`.
    Acquired {
        /// Arrival at the lock.
        at: Time,
        /// The acquisition (its wait).
        got: Acquired,
    },
    /// The trylock of a CPU arriving at `at` found the leaf held (it retries at its next tick).
    TrylockFailed {
        /// Arrival at the lock.
        at: Time,
    },
}

/// What RCU did in one tick (`rcu_check_callbacks`, then the RCU softirq), for the event
/// loop to charge and report in this order: the GP start, then the step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RcuTick {
    /// A GP was started (`rcu_start_gp`) under the leaf lock: the arrival and acquisition.
    pub(crate) gp_started: Option<(Time, Acquired)>,
    /// The notice / report / forcing step, if the tick had one.
    pub(crate) step: Option<RcuLeafStep>,
    /// Time spent from the arrival at RCU's work to its end (waits included).
    pub(crate) spent_ns: u64,
    /// Of which waiting for the leaf lock.
    pub(crate) wait_ns: u64,
}

/// Per-CPU RCU state (`struct rcu_data`, the fields the model uses).
#[derive(Debug, Clone, Copy, Default)]
struct RcuData {
    /// The GP number this CPU has noticed.
    gpnum: u64,
    /// It owes a QS for `gpnum`.
    qs_pending: bool,
}

/// The global GP state and each CPU's view of it.
///
/// Invariants: `completed <= gpnum <= completed + 1`; while a GP is in progress
/// (`gpnum > completed`) `owing` counts the CPUs whose bit is set in `qsmask`; no CPU's
/// `gpnum` is ahead of the global one.
#[derive(Debug, Clone)]
pub(crate) struct RcuState {
    gpnum: u64,
    completed: u64,
    /// CPUs still owing a QS for the current GP.
    qsmask: Vec<bool>,
    owing: u32,
    /// Jiffies at which quiescent states are forced next.
    force_at: u64,
    /// Callbacks are waiting from this time on.
    callbacks_at: Time,
    rdp: Vec<RcuData>,
}

impl RcuState {
    /// No GP yet; the first callbacks wait at `CALLBACK_INTERVAL_NS`.
    pub(crate) fn new(nr_cpus: usize) -> RcuState {
        RcuState {
            gpnum: 0,
            completed: 0,
            qsmask: vec![false; nr_cpus],
            owing: 0,
            force_at: 0,
            callbacks_at: CALLBACK_INTERVAL_NS,
            rdp: vec![RcuData::default(); nr_cpus],
        }
    }

    /// A GP is in progress.
    #[inline]
    pub(crate) fn gp_in_progress(&self) -> bool {
        self.gpnum != self.completed
    }

    /// `cpu_needs_another_gp`: no GP runs and callbacks wait at `now`.
    #[inline]
    pub(crate) fn needs_gp(&self, now: Time) -> bool {
        !self.gp_in_progress() && now >= self.callbacks_at
    }

    /// `rcu_start_gp` by `starter` at `jiffies`: every CPU owes a QS; the starter has noticed.
    pub(crate) fn start_gp(&mut self, starter: usize, jiffies: u64, now: Time) {
        debug_assert!(!self.gp_in_progress());
        self.gpnum += 1;
        self.qsmask.fill(true);
        self.owing = self.qsmask.len() as u32;
        self.force_at = jiffies + JIFFIES_TILL_FORCE_QS;
        // Callbacks arriving from now on wait for the next GP.
        while self.callbacks_at <= now {
            self.callbacks_at += CALLBACK_INTERVAL_NS;
        }
        self.rdp[starter] = RcuData {
            gpnum: self.gpnum,
            qs_pending: true,
        };
        self.check();
    }

    /// What `cpu`'s tick at `jiffies` must do (`rcu_pending` and the softirq's order: a new
    /// GP is noticed first, a QS reported at a later tick, forcing when the deadline passed).
    #[inline]
    pub(crate) fn work(&self, cpu: usize, jiffies: u64) -> RcuWork {
        let r = &self.rdp[cpu];
        if r.gpnum != self.gpnum {
            RcuWork::Notice
        } else if r.qs_pending && self.qsmask[cpu] {
            RcuWork::Report
        } else if self.gp_in_progress() && jiffies >= self.force_at {
            RcuWork::ForceQs
        } else {
            RcuWork::None
        }
    }

    /// Hints the processor to fetch `cpu`'s `rcu_data`, which its next tick reads first
    /// ([`RcuState::work`]); see `engine::prefetch`.
    #[inline]
    pub(crate) fn prefetch_cpu(&self, cpu: usize) {
        if let Some(r) = self.rdp.get(cpu) {
            crate::engine::prefetch::prefetch_bytes(
                r as *const RcuData as usize,
                size_of::<RcuData>(),
            );
        }
    }

    /// `cpu` noticed the current GP (its trylock succeeded).
    #[inline]
    pub(crate) fn noticed(&mut self, cpu: usize) {
        self.rdp[cpu] = RcuData {
            gpnum: self.gpnum,
            qs_pending: self.qsmask[cpu],
        };
    }

    /// `cpu` reports its QS; returns whether that ended the GP.
    #[inline]
    pub(crate) fn report(&mut self, cpu: usize) -> bool {
        self.rdp[cpu].qs_pending = false;
        self.clear(cpu)
    }

    fn clear(&mut self, cpu: usize) -> bool {
        if self.qsmask[cpu] {
            self.qsmask[cpu] = false;
            self.owing -= 1;
            if self.owing == 0 {
                self.completed = self.gpnum;
            }
        }
        self.check();
        !self.gp_in_progress()
    }

    /// CPUs the forcing scan reads (those still owing).
    #[inline]
    pub(crate) fn owing(&self) -> u32 {
        self.owing
    }

    /// `force_quiescent_state` at `jiffies`: reports every owing CPU for which
    /// `dyntick_idle(cpu)` holds; the next forcing is 3 jiffies on. Returns whether the GP
    /// ended.
    pub(crate) fn force_qs(&mut self, jiffies: u64, dyntick_idle: impl Fn(usize) -> bool) -> bool {
        self.force_at = jiffies + JIFFIES_TILL_FORCE_QS;
        let mut ended = false;
        for cpu in 0..self.qsmask.len() {
            if self.qsmask[cpu] && dyntick_idle(cpu) {
                ended = self.clear(cpu);
            }
        }
        ended
    }

    /// RCU's work in the tick `t` on its CPU's leaf lock `leaf`, held `hold_ns` per step: a housekeeping CPU starts a GP when callbacks wait
    /// ([`RcuState::needs_gp`], under the lock: the root is the leaf with one node level);
    /// then [`RcuState::work`] says whether it notices the GP (a trylock: on failure it only
    /// read the lock word and tries again at its next tick), reports its QS, or forces
    /// quiescent states (under the lock, reading each owing CPU's dynticks counter, one remote
    /// line each, and reporting those for which `dyntick_idle` holds).
    pub(crate) fn check_callbacks(
        &mut self,
        leaf: &mut ContendedLock,
        t: RcuTickInput,
        hold_ns: u64,
        transfer: TransferCost,
        dyntick_idle: impl Fn(usize) -> bool,
    ) -> RcuTick {
        let (c, cpu_id, socket, jiffies, at) = (t.cpu, t.cpu as u32, t.socket, t.jiffies, t.at);
        let mut now = at;
        let mut waited = 0;
        let mut gp_started = None;
        if t.housekeeping && self.needs_gp(now) {
            let got = leaf.acquire(now, hold_ns, cpu_id, socket, transfer);
            self.start_gp(c, jiffies, now);
            gp_started = Some((now, got));
            waited += got.wait_ns;
            now += got.wait_ns + hold_ns;
        }
        let step = match self.work(c, jiffies) {
            RcuWork::None => None,
            RcuWork::Notice => match leaf.try_acquire(now, hold_ns, cpu_id, socket, transfer) {
                Ok(got) => {
                    self.noticed(c);
                    let step = RcuLeafStep::Acquired { at: now, got };
                    waited += got.wait_ns;
                    now += got.wait_ns + hold_ns;
                    Some(step)
                }
                Err(line) => {
                    let step = RcuLeafStep::TrylockFailed { at: now };
                    now += line;
                    Some(step)
                }
            },
            RcuWork::Report => {
                let got = leaf.acquire(now, hold_ns, cpu_id, socket, transfer);
                self.report(c);
                let step = RcuLeafStep::Acquired { at: now, got };
                waited += got.wait_ns;
                now += got.wait_ns + hold_ns;
                Some(step)
            }
            RcuWork::ForceQs => {
                let scan = hold_ns + u64::from(self.owing()) * transfer.remote_ns;
                let got = leaf.acquire(now, scan, cpu_id, socket, transfer);
                self.force_qs(jiffies, dyntick_idle);
                let step = RcuLeafStep::Acquired { at: now, got };
                waited += got.wait_ns;
                now += got.wait_ns + scan;
                Some(step)
            }
        };
        RcuTick {
            gp_started,
            step,
            spent_ns: now - at,
            wait_ns: waited,
        }
    }

    #[inline]
    fn check(&self) {
        debug_assert!(self.completed <= self.gpnum && self.gpnum <= self.completed + 1);
        debug_assert!(
            !self.gp_in_progress()
                || self.owing as usize == self.qsmask.iter().filter(|&&b| b).count()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grace_period_step_by_step() {
        let mut r = RcuState::new(3);
        assert!(!r.needs_gp(CALLBACK_INTERVAL_NS - 1));
        assert!(r.needs_gp(CALLBACK_INTERVAL_NS));
        r.start_gp(0, 100, CALLBACK_INTERVAL_NS);
        assert!(!r.needs_gp(CALLBACK_INTERVAL_NS + 1));
        // (cpu, jiffies, expected work) then the step taken.
        assert_eq!(r.work(0, 100), RcuWork::Report, "the starter has noticed");
        assert_eq!(r.work(1, 100), RcuWork::Notice);
        r.noticed(1);
        assert_eq!(r.work(1, 101), RcuWork::Report);
        assert!(!r.report(1));
        assert!(!r.report(0));
        // CPU 2 never ticks (dyntick-idle): forcing is due 3 jiffies after the start.
        assert_eq!(r.work(0, 102), RcuWork::None);
        assert_eq!(r.work(0, 103), RcuWork::ForceQs);
        assert_eq!(r.owing(), 1);
        assert!(r.force_qs(103, |c| c == 2));
        assert!(!r.gp_in_progress());
        assert_eq!(
            r.work(2, 104),
            RcuWork::Notice,
            "it notices the ended GP later"
        );
        r.noticed(2);
        assert_eq!(
            r.work(2, 104),
            RcuWork::None,
            "nothing owed for an ended GP"
        );
    }

    #[test]
    fn one_tick_on_the_leaf_lock() {
        let mut r = RcuState::new(2);
        let mut leaf = ContendedLock::new();
        let cost = TransferCost::new(50, 200, 1);
        let hold = 100;
        let tick = |cpu, housekeeping, at| RcuTickInput {
            cpu,
            socket: 0,
            housekeeping,
            jiffies: 7,
            at,
        };
        // The housekeeping CPU starts the GP (untouched lock: no wait) and, as the starter
        // has noticed, reports its QS in the same tick, after the start's hold.
        let a = r.check_callbacks(
            &mut leaf,
            tick(0, true, CALLBACK_INTERVAL_NS),
            hold,
            cost,
            |_| false,
        );
        let free = Acquired {
            wait_ns: 0,
            contended: false,
        };
        assert_eq!(a.gp_started, Some((CALLBACK_INTERVAL_NS, free)));
        assert_eq!(
            a.step,
            Some(RcuLeafStep::Acquired {
                at: CALLBACK_INTERVAL_NS + hold,
                got: free
            })
        );
        assert_eq!((a.spent_ns, a.wait_ns), (2 * hold, 0));
        // CPU 1 arrives while CPU 0 holds the leaf: its trylock fails, costing the line.
        let b = r.check_callbacks(
            &mut leaf,
            tick(1, false, CALLBACK_INTERVAL_NS + hold + 1),
            hold,
            cost,
            |_| false,
        );
        assert_eq!(b.gp_started, None);
        assert_eq!(
            b.step,
            Some(RcuLeafStep::TrylockFailed {
                at: CALLBACK_INTERVAL_NS + hold + 1
            })
        );
        assert_eq!((b.spent_ns, b.wait_ns), (50, 0));
        assert_eq!(r.work(1, 7), RcuWork::Notice, "it notices at a later tick");
        // Nothing to do for a CPU that is not housekeeping while no GP is owed by it.
        let mut idle = RcuState::new(1);
        let c = idle.check_callbacks(
            &mut leaf,
            tick(0, false, CALLBACK_INTERVAL_NS),
            hold,
            cost,
            |_| false,
        );
        assert_eq!((c.gp_started, c.step, c.spent_ns), (None, None, 0));
    }

    #[test]
    fn forcing_spares_busy_cpus_and_rearms() {
        let mut r = RcuState::new(2);
        r.start_gp(0, 10, CALLBACK_INTERVAL_NS);
        assert!(!r.force_qs(13, |_| false));
        assert_eq!(r.work(0, 15), RcuWork::Report);
        assert!(!r.report(0));
        assert_eq!(r.work(0, 15), RcuWork::None, "next forcing at 16");
        assert_eq!(r.work(0, 16), RcuWork::ForceQs);
    }
}
