//! tick-sched: the per-CPU tick state and the rules that decide when the tick may stop.
//!
//! The tick is an hrtimer (the `sched_timer`) with period TICK_NSEC on a per-CPU phase (the
//! jiffy grid plus the skew offset). The functions here are the rules, free of the rest of the
//! machine so they can be tested at their boundaries; `sim` wires them to hrtimers, the timer
//! wheel and timekeeping.

use crate::engine::{NEVER, Time};

/// The `skew_tick=1` phase offset of `cpu`: half a tick spread evenly over the possible CPUs,
/// in integer arithmetic (`floor(floor(TICK_NSEC / 2) / possible) * cpu`).
#[inline]
pub fn skew_offset(tick_nsec: u64, nr_possible: u32, cpu: u32) -> u64 {
    (tick_nsec / 2) / nr_possible.max(1) as u64 * cpu as u64
}

/// Expiry for a restarted tick: `last_tick` if still ahead, else the first point of its phase
/// grid after `now` (so skewed CPUs stay skewed across idle periods).
#[inline]
pub fn restart_expiry(last_tick: Time, now: Time, tick_nsec: u64) -> Time {
    crate::kernel::hrtimer::forward(last_tick, now, tick_nsec).expires
}

/// Why a tick cannot be stopped (the `timer:tick_stop` dependency names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickDep {
    /// More than one runnable fair task (or an RR pair / a deadline task).
    Sched,
    /// RCU needs this CPU.
    Rcu,
    /// The CPU holds the timekeeping duty while nohz_full is configured.
    Timekeeping,
}

/// Inputs of the next-event computation (`tick_nohz_next_event`).
#[derive(Debug, Clone, Copy)]
pub struct NextEventInput {
    /// `last_jiffies_update`.
    pub basemono: Time,
    /// TICK_NSEC.
    pub tick_nsec: u64,
    /// First non-deferrable timer-wheel expiry, as mono time (`NEVER` if none).
    pub next_wheel: Time,
    /// RCU / irq_work / a pending TIMER softirq want one more tick.
    pub needs_tick: bool,
    /// The tick is already stopped.
    pub tick_stopped: bool,
    /// This CPU holds the duty.
    pub is_duty: bool,
    /// Somebody holds the duty.
    pub duty_held: bool,
    /// This CPU was the last duty holder (DO_TIMER_LAST).
    pub was_last_holder: bool,
    /// `timekeeping_max_deferment()`.
    pub max_deferment: u64,
    /// `nohz_full_aggressive`: the duty holder also sleeps without a cap.
    pub aggressive: bool,
}

/// `Some(expires)` to stop (or re-target) the tick until `expires` (`NEVER` = no event at all),
/// `None` to keep it running.
#[inline]
pub fn next_event(i: &NextEventInput) -> Option<Time> {
    let next = if i.needs_tick {
        i.basemono + i.tick_nsec
    } else {
        i.next_wheel
    };
    if !i.tick_stopped && next.saturating_sub(i.basemono) <= i.tick_nsec {
        return None;
    }
    // Only the duty holder, or the last holder while nobody holds it, is capped by the
    // clocksource's max deferment. The aggressive proposal lets the current holder go uncapped.
    let capped = if i.is_duty {
        !i.aggressive
    } else {
        !i.duty_held && i.was_last_holder
    };
    let limit = if capped {
        i.basemono.saturating_add(i.max_deferment)
    } else {
        NEVER
    };
    Some(next.min(limit))
}

/// Per-CPU tick-sched state (`struct tick_sched`, the parts the model uses).
///
/// `repr(C)`: the fields read on every tick and idle entry come first.
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct TickSched {
    /// The periodic tick is stopped.
    pub stopped: bool,
    /// Inside the idle loop.
    pub inidle: bool,
    /// sched_timer expiries (tick handler runs).
    pub ticks: u64,
    /// Expiry programmed while stopped (`NEVER` if none).
    pub next_tick: Time,
    /// Expiry of the tick pending when it was stopped (restart keeps this phase).
    pub last_tick: Time,
    /// Since when the tick is stopped (valid while `stopped`).
    pub stopped_since: Time,
    /// Stop attempts that passed the gate (`.idle_calls`, ≥4.17 semantics).
    pub idle_calls: u64,
    /// Of those, the ones that stopped or kept the tick stopped (`.idle_sleeps`).
    pub idle_sleeps: u64,
    /// Accumulated stopped time in the window (ns).
    pub stopped_ns: u64,
    /// Failed stop attempts on a busy nohz_full CPU, by dependency.
    pub dep_sched: u64,
}

impl TickSched {
    /// Marks the tick stopped at `now` (first stop of a period saves `last_tick`).
    pub fn mark_stopped(&mut self, now: Time, last_tick: Time) {
        if !self.stopped {
            self.stopped = true;
            self.stopped_since = now;
            self.last_tick = last_tick;
        }
    }

    /// Marks the tick running again at `now`, accounting the stopped interval from `window`.
    pub fn mark_running(&mut self, now: Time, window: Time) {
        if self.stopped {
            self.stopped = false;
            self.stopped_ns += now.saturating_sub(self.stopped_since.max(window));
            self.next_tick = NEVER;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_offsets_table() {
        // kernel-tick-behaviour.md §6.1 examples.
        assert_eq!(skew_offset(1_000_000, 40, 1), 12_500);
        assert_eq!(skew_offset(1_000_000, 40, 39), 487_500);
        assert_eq!(skew_offset(4_000_000, 64, 1), 31_250);
        assert_eq!(skew_offset(4_000_000, 64, 63), 1_968_750);
        assert_eq!(skew_offset(1_000_000, 8, 0), 0);
        // Integer rounding: HZ=300 with 7 CPUs.
        assert_eq!(skew_offset(3_333_333, 7, 1), 1_666_666 / 7);
        // Every offset stays below half a tick.
        for cpus in [1u32, 2, 3, 40, 64, 1024] {
            for c in [0, cpus - 1] {
                assert!(skew_offset(1_000_000, cpus, c) < 500_000);
            }
        }
    }

    #[test]
    fn restart_keeps_phase() {
        let t = 1_000_000;
        // (last_tick, now, expected)
        for (last, now, want) in [
            (5_012_500, 5_000_000, 5_012_500),
            (5_012_500, 5_012_500, 6_012_500),
            (5_012_500, 9_999_999, 10_012_500),
            (5_012_500, 10_012_500, 11_012_500),
        ] {
            let e = restart_expiry(last, now, t);
            assert_eq!(e, want);
            assert_eq!((e - last) % t, 0);
        }
    }

    fn input() -> NextEventInput {
        NextEventInput {
            basemono: 10_000_000,
            tick_nsec: 1_000_000,
            next_wheel: NEVER,
            needs_tick: false,
            tick_stopped: false,
            is_duty: false,
            duty_held: true,
            was_last_holder: false,
            max_deferment: 440_000_000_000,
            aggressive: false,
        }
    }

    #[test]
    fn next_event_table() {
        let base = input();
        // Nothing pending, not the duty: sleep forever.
        assert_eq!(next_event(&base), Some(NEVER));
        // A wheel timer exactly one tick away keeps the tick (<= TICK_NSEC)...
        let one = NextEventInput {
            next_wheel: 11_000_000,
            ..base
        };
        assert_eq!(next_event(&one), None);
        // ...unless the tick is already stopped: then it is re-targeted.
        assert_eq!(
            next_event(&NextEventInput {
                tick_stopped: true,
                ..one
            }),
            Some(11_000_000)
        );
        // One nanosecond beyond a tick: stop until then.
        assert_eq!(
            next_event(&NextEventInput {
                next_wheel: 11_000_001,
                ..base
            }),
            Some(11_000_001)
        );
        // RCU wants a tick: keep it.
        assert_eq!(
            next_event(&NextEventInput {
                needs_tick: true,
                ..base
            }),
            None
        );
        // Duty holder: capped by max deferment.
        assert_eq!(
            next_event(&NextEventInput {
                is_duty: true,
                ..base
            }),
            Some(10_000_000 + 440_000_000_000)
        );
        // Duty holder in aggressive mode: uncapped.
        assert_eq!(
            next_event(&NextEventInput {
                is_duty: true,
                aggressive: true,
                ..base
            }),
            Some(NEVER)
        );
        // Last holder while nobody holds it: capped, aggressive or not.
        let last = NextEventInput {
            duty_held: false,
            was_last_holder: true,
            ..base
        };
        assert_eq!(next_event(&last), Some(10_000_000 + 440_000_000_000));
        assert_eq!(
            next_event(&NextEventInput {
                aggressive: true,
                ..last
            }),
            Some(10_000_000 + 440_000_000_000)
        );
        // Not last holder while nobody holds it: uncapped.
        assert_eq!(
            next_event(&NextEventInput {
                duty_held: false,
                ..base
            }),
            Some(NEVER)
        );
    }
}
