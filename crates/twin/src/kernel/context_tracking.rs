//! Context tracking: what a user/kernel transition costs, by CPU and by kernel version
//! (docs/kernel-behaviour.md §4.6 and §12.7, figures in docs/costs.md §2).
//!
//! On a CPU in the nohz_full set every transition between user and kernel mode (syscall entry
//! and exit, an interrupt taken from user mode and its return) pays:
//! * RCU's extended-quiescent-state exit or entry: a fully ordered atomic on the per-CPU
//!   dynticks counter (merged into the context-tracking counter in 6.x, still one atomic);
//! * generic virtual CPU-time accounting (`kernel/sched/cputime.c`), whose cost changed twice:
//!   before 4.6 every transition did a full accounting pass; the 2016 series made it
//!   jiffy-granular (4.6 to 4.14: a jiffies compare per transition, a pass once per jiffy);
//!   from 4.15 every transition reads `sched_clock` and adds the delta to the task's pending
//!   time under its seqcount, and the pending time is accounted once it reaches TICK_NSEC.
//!
//! On other CPUs only the static key is tested: a patched jump (0 ns) while no CPU is
//! nohz_full; while some are, the call behind the key that finds this CPU's tracking inactive
//! (its recursion counter and per-CPU `active` flag).
//!
//! A machine without a per-part breakdown (`Costs::context_tracking` is `None`) charges its
//! `ct_transition_ns` as one lump per transition on nohz_full CPUs, whatever the version.

use ticklab_schema::machine::{ContextTrackingCosts, Costs};

/// Transitions of a syscall (enter + exit) and of an interrupt taken from user mode.
pub(crate) const TRANSITIONS_PER_ENTRY: u64 = 2;

/// How generic vtime accounting books time on a transition, by kernel version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VtimeEra {
    /// Before 4.6: a full accounting pass on every transition.
    EveryTransition,
    /// 4.6 to 4.14 (the 2016 series): compare jiffies on each transition, account once per
    /// jiffy.
    JiffyGranular,
    /// 4.15 on: read `sched_clock` on each transition, account once TICK_NSEC is pending.
    NsecPending,
}

impl VtimeEra {
    /// The era of kernel `(major, minor)`.
    pub(crate) fn of(version: (u32, u32)) -> VtimeEra {
        if version < (4, 6) {
            VtimeEra::EveryTransition
        } else if version < (4, 15) {
            VtimeEra::JiffyGranular
        } else {
            VtimeEra::NsecPending
        }
    }
}

/// What one transition costs on one CPU, part by part (ns). The parts sum to the total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TransitionCost {
    /// RCU EQS atomic and state write (nohz_full CPUs).
    pub(crate) rcu_eqs_ns: u64,
    /// vtime's per-transition part (nohz_full CPUs).
    pub(crate) vtime_ns: u64,
    /// The static-key / per-CPU flag test (other CPUs).
    pub(crate) check_ns: u64,
}

impl TransitionCost {
    /// The whole transition.
    #[inline]
    pub(crate) fn total(&self) -> u64 {
        self.rcu_eqs_ns + self.vtime_ns + self.check_ns
    }
}

/// Context tracking of one machine and kernel: what a transition costs on a nohz_full CPU and
/// elsewhere, and what a vtime accounting pass costs when pending time is flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextTracking {
    /// Some CPU is nohz_full: the static key is on.
    enabled: bool,
    on_nohz_full: TransitionCost,
    elsewhere: TransitionCost,
    /// A flush of pending vtime (0 where none happens: before 4.6 every transition accounts,
    /// and the lump model has no parts).
    flush_ns: u64,
}

impl ContextTracking {
    /// Context tracking for a machine's costs on kernel `version`, enabled when some CPU is
    /// nohz_full.
    pub(crate) fn new(costs: &Costs, version: (u32, u32), enabled: bool) -> ContextTracking {
        let (on_nohz_full, elsewhere, flush_ns) = match &costs.context_tracking {
            None => (
                TransitionCost {
                    rcu_eqs_ns: costs.ct_transition_ns,
                    ..TransitionCost::default()
                },
                TransitionCost::default(),
                0,
            ),
            Some(p) => Self::parts(p, VtimeEra::of(version), enabled),
        };
        ContextTracking {
            enabled,
            on_nohz_full,
            elsewhere,
            flush_ns,
        }
    }

    fn parts(
        p: &ContextTrackingCosts,
        era: VtimeEra,
        enabled: bool,
    ) -> (TransitionCost, TransitionCost, u64) {
        let (vtime_ns, flush_ns) = match era {
            VtimeEra::EveryTransition => (p.vtime_account_ns, 0),
            VtimeEra::JiffyGranular => (p.vtime_jiffy_check_ns, p.vtime_account_ns),
            VtimeEra::NsecPending => (p.vtime_clock_ns, p.vtime_account_ns),
        };
        let on = TransitionCost {
            rcu_eqs_ns: p.rcu_eqs_ns,
            vtime_ns,
            check_ns: 0,
        };
        let elsewhere = TransitionCost {
            check_ns: if enabled { p.percpu_check_ns } else { 0 },
            ..TransitionCost::default()
        };
        (on, elsewhere, flush_ns)
    }

    /// One transition on a CPU that is (`nohz_full_cpu`) or is not in the nohz_full set.
    #[inline]
    pub(crate) fn transition(&self, nohz_full_cpu: bool) -> TransitionCost {
        if nohz_full_cpu && self.enabled {
            self.on_nohz_full
        } else {
            self.elsewhere
        }
    }

    /// Extra cost of entering and leaving the kernel once (syscall or interrupt from user).
    #[inline]
    pub(crate) fn entry_exit_ns(&self, nohz_full_cpu: bool) -> u64 {
        TRANSITIONS_PER_ENTRY * self.transition(nohz_full_cpu).total()
    }

    /// One accounting pass of pending vtime on a nohz_full CPU (once per TICK_NSEC of run
    /// time from 4.6 on; 0 where every transition already accounts).
    #[inline]
    pub(crate) fn flush_ns(&self, nohz_full_cpu: bool) -> u64 {
        if nohz_full_cpu && self.enabled {
            self.flush_ns
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::machine::{xeon_e5_2650v3_2s, xps13_7390};

    #[test]
    fn vtime_eras_by_version() {
        // (version, era)
        let cases = [
            ((3, 10), VtimeEra::EveryTransition),
            ((4, 5), VtimeEra::EveryTransition),
            ((4, 6), VtimeEra::JiffyGranular),
            ((4, 14), VtimeEra::JiffyGranular),
            ((4, 15), VtimeEra::NsecPending),
            ((5, 15), VtimeEra::NsecPending),
        ];
        for (v, era) in cases {
            assert_eq!(VtimeEra::of(v), era, "{v:?}");
        }
    }

    #[test]
    fn only_nohz_full_cpus_pay_and_the_2016_change_shows() {
        let c = xeon_e5_2650v3_2s().costs;
        let p = c.context_tracking.unwrap();
        // (version, nohz_full CPU, key on, per entry/exit, flush)
        let cases = [
            (
                (5, 15),
                true,
                true,
                2 * (p.rcu_eqs_ns + p.vtime_clock_ns),
                p.vtime_account_ns,
            ),
            ((5, 15), false, true, 2 * p.percpu_check_ns, 0),
            ((5, 15), false, false, 0, 0),
            (
                (4, 8),
                true,
                true,
                2 * (p.rcu_eqs_ns + p.vtime_jiffy_check_ns),
                p.vtime_account_ns,
            ),
            (
                (4, 4),
                true,
                true,
                2 * (p.rcu_eqs_ns + p.vtime_account_ns),
                0,
            ),
        ];
        for (v, nohz_full, on, entry_exit, flush) in cases {
            let ct = ContextTracking::new(&c, v, on);
            assert_eq!(
                ct.entry_exit_ns(nohz_full),
                entry_exit,
                "{v:?} {nohz_full} {on}"
            );
            assert_eq!(ct.flush_ns(nohz_full), flush, "{v:?} {nohz_full} {on}");
        }
        // The documented figures (docs/costs.md §2): +194 ns per syscall before the 2016
        // series (192 from whole-ns parts), +44 ns after it.
        assert_eq!(
            ContextTracking::new(&c, (4, 4), true).entry_exit_ns(true),
            192
        );
        assert_eq!(
            ContextTracking::new(&c, (4, 8), true).entry_exit_ns(true),
            44
        );
    }

    #[test]
    fn lump_model_without_parts() {
        let c = xps13_7390().costs;
        let ct = ContextTracking::new(&c, (6, 3), true);
        assert_eq!(ct.entry_exit_ns(false), 0);
        assert_eq!(ct.entry_exit_ns(true), 2 * c.ct_transition_ns);
        assert_eq!(ct.flush_ns(true), 0);
    }
}
