//! Timekeeping: jiffies, the duty CPU (`tick_do_timer_cpu`) and how stale time gets.
//!
//! Jiffy edges lie on the global TICK_NSEC grid of the monotonic clock (the run starts at an
//! edge). Only the duty CPU, or a CPU that finds jiffies stale on interrupt entry, advances
//! them: an update adds every whole period that has elapsed in one go (missed ticks are
//! absorbed arithmetically, never replayed), then runs the wall-time update. Coarse clocks
//! change only then, so they freeze while nobody does the duty — which is exactly what the
//! `nohz_full_aggressive` proposal allows, and what `TimekeepingStats` measures.
//!
//! The check-then-lock race (`tick_do_update_jiffies64`, docs/kernel-behaviour.md §2.4): a
//! CPU first checks without the lock whether a period has elapsed since
//! `last_jiffies_update`, then takes the write side and checks again. An update becomes
//! visible to the lockless check only when its writer leaves the write section
//! (`Timekeeping::publish`); until then every CPU that checks sees the old value, passes,
//! and queues for the write side only to find the work done. `Timekeeping::quick_check`
//! answers what a CPU checking at a given instant sees.

use crate::engine::Time;
use crate::hw::lock::LOCKED_OP_NS;

/// A CPU that lost the check-then-lock race: `write_seqlock`, the re-check, nothing to do,
/// `write_sequnlock` — the sequence bumped twice on the owned line: one locked operation
/// (E, docs/costs.md §5a).
pub(crate) const RECHECK_NS: u64 = LOCKED_OP_NS;

/// `INITIAL_JIFFIES`: jiffies start 300 s before the 32-bit wrap.
pub(crate) fn initial_jiffies(hz: u32) -> u64 {
    (u32::MAX as u64 + 1) - 300 * hz as u64
}

/// Who holds the jiffies duty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Duty {
    /// This CPU (`tick_do_timer_cpu = cpu`).
    Cpu(u32),
    /// Nobody (`TICK_DO_TIMER_NONE`): the next CPU whose tick fires takes it.
    None,
}

/// What the timekeeping duty cost and how stale time got.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct TimekeepingStats {
    /// Longest interval between two jiffies updates (ns).
    pub(crate) max_gap_ns: u64,
    /// Most jiffies added by one update.
    pub(crate) max_catch_up: u64,
    /// Worst `now - last_jiffies_update` seen by a reader at interrupt entry (ns).
    pub(crate) max_reader_staleness_ns: u64,
    /// Integral of coarse-time staleness over time (ns²), for the time-weighted mean.
    pub(crate) staleness_integral: f64,
    /// Duty changes of hands.
    pub(crate) handovers: u64,
    /// Jiffies updates performed.
    pub(crate) updates: u64,
}

/// Global timekeeping state.
///
/// Invariants (checked by `check` after every change in debug builds): `jiffies` never
/// decreases; `tick_next_period == last_jiffies_update + tick_nsec`; `last_jiffies_update <= now`
/// at every update. The duty changes hands only through [`Timekeeping::take_duty_if_free`] and
/// [`Timekeeping::on_tick_stop`], each counted once in `stats.handovers`.
#[derive(Debug, Clone)]
pub(crate) struct Timekeeping {
    /// TICK_NSEC.
    tick_nsec: u64,
    /// jiffies_64.
    jiffies: u64,
    /// Mono time of the jiffy edge matching `jiffies`.
    last_jiffies_update: Time,
    /// Next edge.
    tick_next_period: Time,
    /// Duty holder (`tick_do_timer_cpu`).
    duty: Duty,
    /// Last holder before the duty went to NONE (DO_TIMER_LAST).
    last_holder: Option<u32>,
    /// `timekeeping_max_deferment()`: the clocksource's `max_idle_ns`.
    max_deferment_ns: u64,
    last_update_at: Time,
    /// When the last update leaves its write section (becomes visible to lockless checks).
    published_at: Time,
    /// `last_jiffies_update` before that update (what a check before `published_at` sees).
    before_publish: Time,
    window_start: Time,
    /// Statistics since the window started.
    stats: TimekeepingStats,
}

impl Timekeeping {
    /// Boot state: time 0 is a jiffy edge, `duty` holds the duty.
    pub(crate) fn new(hz: u32, tick_nsec: u64, duty: u32, max_deferment_ns: u64) -> Self {
        Timekeeping {
            tick_nsec,
            jiffies: initial_jiffies(hz),
            last_jiffies_update: 0,
            tick_next_period: tick_nsec,
            duty: Duty::Cpu(duty),
            last_holder: None,
            max_deferment_ns,
            last_update_at: 0,
            published_at: 0,
            before_publish: 0,
            window_start: 0,
            stats: TimekeepingStats::default(),
        }
    }

    /// Starts the measured window.
    pub(crate) fn start_window(&mut self, now: Time) {
        self.stats = TimekeepingStats::default();
        self.window_start = now;
        self.last_update_at = now.max(self.last_update_at);
    }

    /// Mono time of jiffy `j` on the current grid.
    #[inline]
    pub(crate) fn jiffy_to_mono(&self, j: u64) -> Time {
        if j >= self.jiffies {
            self.last_jiffies_update + (j - self.jiffies) * self.tick_nsec
        } else {
            self.last_jiffies_update
                .saturating_sub((self.jiffies - j) * self.tick_nsec)
        }
    }

    /// The lockless staleness check of a CPU at `now`: whether a period has elapsed since the
    /// `last_jiffies_update` it can see. With `race`, an update whose write section has not
    /// ended is not seen yet (the check-then-lock race); without, every update is seen from
    /// the instant its writer took the lock.
    #[inline]
    pub(crate) fn quick_check(&self, now: Time, race: bool) -> bool {
        let seen = if race && now < self.published_at {
            self.before_publish
        } else {
            self.last_jiffies_update
        };
        now.saturating_sub(seen) >= self.tick_nsec
    }

    /// The update that moved `last_jiffies_update` from `before` leaves its write section at
    /// `at`: from then on lockless checks see it.
    #[inline]
    pub(crate) fn publish(&mut self, before: Time, at: Time) {
        debug_assert!(before <= self.last_jiffies_update);
        self.before_publish = before;
        self.published_at = at;
    }

    /// Advances jiffies to `now` if due; returns the number of jiffies added.
    #[inline]
    pub(crate) fn update_jiffies(&mut self, now: Time) -> u64 {
        if now < self.tick_next_period {
            return 0;
        }
        let ticks = 1 + (now - self.tick_next_period) / self.tick_nsec;
        self.last_jiffies_update += ticks * self.tick_nsec;
        self.jiffies += ticks;
        self.tick_next_period = self.last_jiffies_update + self.tick_nsec;
        // Statistics: the wall-time update happens now.
        let gap = now.saturating_sub(self.last_update_at);
        self.stats.max_gap_ns = self.stats.max_gap_ns.max(gap);
        self.stats.max_catch_up = self.stats.max_catch_up.max(ticks);
        self.stats.staleness_integral += (gap as f64) * (gap as f64) / 2.0;
        self.stats.updates += 1;
        self.last_update_at = self.last_update_at.max(now);
        self.check(now);
        ticks
    }

    /// A reader (interrupt entry on a tick-stopped CPU) looks at jiffies at `now`.
    #[inline]
    pub(crate) fn observe_reader(&mut self, now: Time) {
        let stale = now.saturating_sub(self.last_jiffies_update);
        self.stats.max_reader_staleness_ns = self.stats.max_reader_staleness_ns.max(stale);
    }

    /// Hands the duty to `to` (or to nobody), counting a change of hands.
    fn set_duty(&mut self, to: Duty) {
        if self.duty != to {
            self.stats.handovers += 1;
            self.duty = to;
        }
    }

    /// `tick_sched_do_timer`: a CPU whose tick fires while nobody holds the duty takes it,
    /// unless it is a nohz_full CPU (`housekeeping == false`). Returns whether it took it.
    #[inline]
    pub(crate) fn take_duty_if_free(&mut self, cpu: u32, housekeeping: bool) -> bool {
        if self.duty == Duty::None && housekeeping {
            self.set_duty(Duty::Cpu(cpu));
            return true;
        }
        false
    }

    /// `tick_nohz_stop_tick`'s duty rule: the holder stopping its tick gives the duty up and
    /// is remembered as the last holder (DO_TIMER_LAST); a former last holder stopping again
    /// while someone else holds the duty is forgotten. Returns whether the duty changed hands.
    #[inline]
    pub(crate) fn on_tick_stop(&mut self, cpu: u32) -> bool {
        if self.duty == Duty::Cpu(cpu) {
            self.set_duty(Duty::None);
            self.last_holder = Some(cpu);
            return true;
        }
        if self.duty != Duty::None && self.last_holder == Some(cpu) {
            self.last_holder = None;
        }
        false
    }

    /// Who holds the duty.
    #[inline]
    pub(crate) fn duty(&self) -> Duty {
        self.duty
    }

    /// `cpu` holds the duty.
    #[inline]
    pub(crate) fn is_duty(&self, cpu: u32) -> bool {
        self.duty == Duty::Cpu(cpu)
    }

    /// Somebody holds the duty.
    #[inline]
    pub(crate) fn duty_held(&self) -> bool {
        self.duty != Duty::None
    }

    /// `cpu` was the last holder (DO_TIMER_LAST).
    #[inline]
    pub(crate) fn was_last_holder(&self, cpu: u32) -> bool {
        self.last_holder == Some(cpu)
    }

    /// `cpu` keeps time for the machine: it holds the duty or was its last holder.
    pub(crate) fn keeps_time(&self, cpu: u32) -> bool {
        self.is_duty(cpu) || self.was_last_holder(cpu)
    }

    /// jiffies_64.
    #[inline]
    pub(crate) fn jiffies(&self) -> u64 {
        self.jiffies
    }

    /// Mono time of the current jiffy edge (`last_jiffies_update`).
    #[inline]
    pub(crate) fn last_jiffies_update(&self) -> Time {
        self.last_jiffies_update
    }

    /// `timekeeping_max_deferment()`.
    #[inline]
    pub(crate) fn max_deferment_ns(&self) -> u64 {
        self.max_deferment_ns
    }

    /// Statistics since the window started.
    pub(crate) fn stats(&self) -> &TimekeepingStats {
        &self.stats
    }

    /// Checks the invariants (debug builds).
    #[inline]
    fn check(&self, now: Time) {
        debug_assert_eq!(
            self.tick_next_period,
            self.last_jiffies_update + self.tick_nsec
        );
        debug_assert!(self.last_jiffies_update <= now);
    }

    /// Time-weighted mean staleness of coarse time over the window ending at `now` (ns).
    pub(crate) fn mean_staleness(&self, now: Time) -> f64 {
        let span = now.saturating_sub(self.window_start);
        if span == 0 {
            return 0.0;
        }
        let open = now.saturating_sub(self.last_update_at) as f64;
        (self.stats.staleness_integral + open * open / 2.0) / span as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn initial_jiffies_wraps_after_300_seconds() {
        assert_eq!(initial_jiffies(1000), 4_294_667_296);
        assert_eq!(initial_jiffies(250) + 300 * 250, 1 << 32);
    }

    #[test]
    fn update_boundaries() {
        let mut tk = Timekeeping::new(1000, 1_000_000, 0, u64::MAX);
        let j0 = tk.jiffies;
        // (now, jiffies added)
        for (now, added) in [
            (999_999, 0),
            (1_000_000, 1),
            (1_999_999, 0),
            (2_000_000, 1),
            (7_500_000, 5),
        ] {
            assert_eq!(tk.update_jiffies(now), added, "now {now}");
        }
        assert_eq!(tk.jiffies, j0 + 7);
        assert_eq!(tk.last_jiffies_update, 7_000_000);
        assert_eq!(tk.tick_next_period, 8_000_000);
        assert_eq!(tk.stats.max_catch_up, 5);
        assert_eq!(tk.jiffy_to_mono(tk.jiffies + 3), 10_000_000);
    }

    #[test]
    fn duty_handover_table() {
        #[derive(Clone, Copy)]
        enum Step {
            /// The CPU stops its tick.
            Stop,
            /// The tick of a housekeeping CPU fires.
            Tick,
            /// The tick of a nohz_full CPU fires.
            FullTick,
        }
        use Step::*;
        // Boot: CPU 0 holds the duty. (step, CPU) and the state after it:
        // (duty, last holder, handovers).
        let steps = [
            // Not the holder: nothing changes.
            (Stop, 1, Duty::Cpu(0), None, 0),
            // Held: not taken.
            (Tick, 1, Duty::Cpu(0), None, 0),
            // The holder gives it up and is remembered as the last holder.
            (Stop, 0, Duty::None, Some(0), 1),
            // A nohz_full CPU never takes it.
            (FullTick, 2, Duty::None, Some(0), 1),
            // The first housekeeping tick takes it.
            (Tick, 1, Duty::Cpu(1), Some(0), 2),
            // The former last holder stops again while someone holds it: forgotten.
            (Stop, 0, Duty::Cpu(1), None, 2),
            (Stop, 1, Duty::None, Some(1), 3),
            // The last holder may take it back.
            (Tick, 1, Duty::Cpu(1), Some(1), 4),
        ];
        let mut tk = Timekeeping::new(1000, 1_000_000, 0, u64::MAX);
        for (i, (step, cpu, duty, last, handovers)) in steps.into_iter().enumerate() {
            let changed = match step {
                Stop => tk.on_tick_stop(cpu),
                Tick => tk.take_duty_if_free(cpu, true),
                FullTick => tk.take_duty_if_free(cpu, false),
            };
            assert_eq!(
                (tk.duty(), tk.last_holder, tk.stats.handovers),
                (duty, last, handovers),
                "step {i}"
            );
            assert_eq!(changed, i > 0 && handovers != steps[i - 1].4, "step {i}");
        }
        assert!(tk.keeps_time(1));
        assert!(!tk.keeps_time(0));
    }

    #[test]
    fn quick_check_sees_an_update_only_once_published() {
        let mut tk = Timekeeping::new(1000, 1_000_000, 0, u64::MAX);
        // The writer enters at 1.0 ms, updates, and leaves at 1.0003 ms.
        let before = tk.last_jiffies_update();
        assert_eq!(tk.update_jiffies(1_000_000), 1);
        tk.publish(before, 1_000_300);
        // (now, race, passes)
        for (now, race, passes) in [
            (1_000_000, true, true), // inside the write section: still stale
            (1_000_299, true, true),
            (1_000_300, true, false),  // published
            (1_000_100, false, false), // no race: seen at once
            (2_000_000, true, true),   // the next period
        ] {
            assert_eq!(tk.quick_check(now, race), passes, "{now} {race}");
        }
    }

    proptest! {
        #[test]
        fn jiffies_never_move_backwards(steps in proptest::collection::vec(0u64..5_000_000, 1..100)) {
            let mut tk = Timekeeping::new(250, 4_000_000, 0, u64::MAX);
            let mut now = 0;
            let mut last = tk.jiffies;
            for s in steps {
                now += s;
                tk.update_jiffies(now);
                prop_assert!(tk.jiffies >= last);
                prop_assert!(tk.last_jiffies_update <= now);
                prop_assert!(now < tk.tick_next_period);
                prop_assert_eq!(tk.tick_next_period, tk.last_jiffies_update + tk.tick_nsec);
                last = tk.jiffies;
            }
        }
    }
}
