//! tick-sched (`kernel/time/tick-sched.c`): the per-CPU tick state and the rules that decide
//! when the tick may stop, and what the idle loop tells the governor about the time ahead
//! (`tick_nohz_get_sleep_length`, `get_sleep_length`).
//!
//! The tick is an hrtimer (the `sched_timer`) with period TICK_NSEC on a per-CPU phase (the
//! jiffy grid plus the skew offset). The functions here are the rules, free of the rest of the
//! machine so they can be tested at their boundaries; `sim` wires them to hrtimers, the timer
//! wheel and timekeeping.

use crate::engine::{NEVER, Time};
use crate::kernel::hrtimer::{HrtimerCpuBase, TimerId, forward};

/// The `skew_tick=1` phase offset of `cpu`: half a tick spread evenly over the possible CPUs,
/// in integer arithmetic (`floor(floor(TICK_NSEC / 2) / possible) * cpu`).
#[inline]
pub fn skew_offset(tick_nsec: u64, nr_possible: u32, cpu: u32) -> u64 {
    (tick_nsec / 2) / nr_possible.max(1) as u64 * cpu as u64
}

/// Expiry for a restarted tick: `last_tick` if still ahead, else the first point of its phase
/// grid after `now` (so skewed CPUs stay skewed across idle periods).
#[inline]
pub(crate) fn restart_expiry(last_tick: Time, now: Time, tick_nsec: u64) -> Time {
    forward(last_tick, now, tick_nsec).expires
}

/// How the tick may stop on this machine: the nohz modes of the build and command line, and
/// the `nohz_full_aggressive` proposal. Every rule that depends on the aggressive flag is a
/// method here, so the proposal is decided in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NohzMode {
    /// Idle dynticks are on (`CONFIG_NO_HZ_IDLE`/`FULL` and not `nohz=off`).
    nohz_idle: bool,
    /// Some CPU is in the nohz_full set.
    any_nohz_full: bool,
    /// `nohz_full_aggressive`: the duty holder may stop its tick and sleep uncapped.
    aggressive: bool,
    /// The cpuidle governor decides whether the idle tick stops (4.17 on). Before 4.17 the
    /// idle loop stopped the tick on every idle entry the next-event computation allowed
    /// (docs/kernel-behaviour.md §11, §3.6).
    governor_decides: bool,
}

impl NohzMode {
    /// The modes of a run.
    pub(crate) fn new(nohz_idle: bool, any_nohz_full: bool, aggressive: bool) -> Self {
        NohzMode {
            nohz_idle,
            any_nohz_full,
            aggressive,
            governor_decides: true,
        }
    }

    /// The same modes for a kernel where the governor decides the idle tick (`yes`, 4.17 on)
    /// or not (before 4.17: every idle entry stops it when the next event allows).
    pub(crate) fn governor_decides_tick(self, yes: bool) -> Self {
        NohzMode {
            governor_decides: yes,
            ..self
        }
    }

    /// Whether the idle loop stops the tick, given the governor's `stop_tick` wish: the
    /// governor's word from 4.17, always before.
    #[inline]
    pub(crate) fn idle_stops_tick(&self, governor_stop: bool) -> bool {
        governor_stop || !self.governor_decides
    }

    /// Whether the `nohz_full_aggressive` proposal is on (for messages that name it).
    #[inline]
    pub(crate) fn aggressive(&self) -> bool {
        self.aggressive
    }

    /// The idle-tick gate (`can_stop_idle_tick`): with nohz_full configured the duty holder
    /// keeps ticking, unless aggressive.
    #[inline]
    pub(crate) fn can_stop_idle_tick(&self, is_duty: bool) -> bool {
        self.nohz_idle && !(self.any_nohz_full && !self.aggressive && is_duty)
    }

    /// Whether a stopped tick's sleep is capped by the clocksource's max deferment: only the
    /// duty holder, or the last holder while nobody holds it, is capped. The aggressive
    /// proposal lets the current holder go uncapped.
    #[inline]
    pub(crate) fn deferment_capped(&self, i: &NextEventInput) -> bool {
        if i.is_duty {
            !self.aggressive
        } else {
            !i.duty_held && i.was_last_holder
        }
    }

    /// `tick_nohz_full_update_tick` at interrupt exit on a busy CPU: a nohz_full CPU whose
    /// run queue lets the tick stop stops (or re-targets) it per [`NohzMode::next_event`]
    /// (`next` computes its input, only when needed); one whose run queue needs the tick (the
    /// SCHED dependency) restarts a stopped tick; everything else keeps the tick as it is.
    #[inline]
    pub(crate) fn full_update(
        &self,
        nohz_full_cpu: bool,
        rq_can_stop: bool,
        tick_stopped: bool,
        next: impl FnOnce() -> NextEventInput,
    ) -> TickAction {
        if !nohz_full_cpu || !self.nohz_idle {
            return TickAction::Keep;
        }
        if rq_can_stop {
            match self.next_event(&next()) {
                Some(expires) => TickAction::Stop(expires),
                None => TickAction::Keep,
            }
        } else if tick_stopped {
            TickAction::Restart
        } else {
            TickAction::Keep
        }
    }

    /// `tick_nohz_next_event`: `Some(expires)` to stop (or re-target) the tick until
    /// `expires` (`NEVER` = no event at all), `None` to keep it running.
    #[inline]
    pub(crate) fn next_event(&self, i: &NextEventInput) -> Option<Time> {
        let next = if i.needs_tick {
            i.basemono + i.tick_nsec
        } else {
            i.next_wheel
        };
        if !i.tick_stopped && next.saturating_sub(i.basemono) <= i.tick_nsec {
            return None;
        }
        let limit = if self.deferment_capped(i) {
            i.basemono.saturating_add(i.max_deferment)
        } else {
            NEVER
        };
        Some(next.min(limit))
    }
}

/// Inputs of the next-event computation (`tick_nohz_next_event`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NextEventInput {
    /// `last_jiffies_update`.
    pub(crate) basemono: Time,
    /// TICK_NSEC.
    pub(crate) tick_nsec: u64,
    /// First non-deferrable timer-wheel expiry, as mono time (`NEVER` if none).
    pub(crate) next_wheel: Time,
    /// RCU / irq_work / a pending TIMER softirq want one more tick.
    pub(crate) needs_tick: bool,
    /// The tick is already stopped.
    pub(crate) tick_stopped: bool,
    /// This CPU holds the duty.
    pub(crate) is_duty: bool,
    /// Somebody holds the duty.
    pub(crate) duty_held: bool,
    /// This CPU was the last duty holder (DO_TIMER_LAST).
    pub(crate) was_last_holder: bool,
    /// `timekeeping_max_deferment()`.
    pub(crate) max_deferment: u64,
}

/// What `tick_nohz_get_sleep_length` looks at when the idle loop asks it at `now`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SleepLengthInput {
    /// The time of the question.
    pub(crate) now: Time,
    /// The idle-tick gate passed ([`NohzMode::can_stop_idle_tick`]).
    pub(crate) may_stop: bool,
    /// [`NohzMode::next_event`]'s answer: `Some(expires)` if the tick may stop until then.
    pub(crate) next_event: Option<Time>,
    /// The tick's own hard expiry (where a tick that must keep running fires next).
    pub(crate) tick_expires: Time,
    /// The first hrtimer other than the tick (`hrtimer_next_event_without`).
    pub(crate) next_other_timer: Time,
    /// The event the clock event device is programmed for now (`dev->next_event`).
    pub(crate) next_programmed: Time,
}

/// `tick_nohz_get_sleep_length`'s two answers, in ns from the question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SleepLength {
    /// How long the CPU could sleep if the tick were stopped: to the stop target (or the
    /// tick's own expiry when it may not stop) or the first other hrtimer, whichever is
    /// first; a CPU the gate keeps ticking reports `delta_next` instead.
    pub(crate) sleep_length_ns: u64,
    /// To the event already programmed, the tick included if it keeps running.
    pub(crate) delta_next_ns: u64,
}

/// `tick_nohz_get_sleep_length` (the governor's view of the time to the next event).
#[inline]
pub(crate) fn get_sleep_length(i: &SleepLengthInput) -> SleepLength {
    let delta_next_ns = i.next_programmed.saturating_sub(i.now);
    let sleep_length_ns = if i.may_stop {
        let stop_target = i.next_event.unwrap_or(i.tick_expires);
        stop_target.min(i.next_other_timer).saturating_sub(i.now)
    } else {
        delta_next_ns
    };
    SleepLength {
        sleep_length_ns,
        delta_next_ns,
    }
}

/// What to do with the tick (the outcome of a tick-sched rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TickAction {
    /// Leave it as it is.
    Keep,
    /// Stop (or re-target) it until the given expiry (`NEVER`: no event at all).
    Stop(Time),
    /// Restart it on its saved phase.
    Restart,
}

/// What [`TickSched::stop`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TickStop {
    /// Already stopped with this very expiry armed: nothing to do (no device reprogramming).
    Unchanged,
    /// The tick was running and is now stopped (its pending expiry saved as the phase).
    Stopped,
    /// Already stopped; the sched_timer was re-targeted to the new expiry.
    Retargeted,
}

/// Per-CPU tick-sched state (`struct tick_sched`, the parts the model uses).
///
/// Invariants: `next_tick == NEVER` while the tick runs; while it is stopped, `last_tick` is
/// the expiry that was pending when it stopped, and the sched_timer is queued at `next_tick`
/// unless that is `NEVER`. Only [`TickSched::stop`] and [`TickSched::restart`] change
/// `stopped`, and a restart re-arms the tick on the phase of `last_tick`.
#[derive(Debug, Clone)]
pub(crate) struct TickSched {
    /// The periodic tick is stopped.
    stopped: bool,
    /// The tick's hrtimer (`ts->sched_timer`).
    sched_timer: TimerId,
    /// Expiry programmed while stopped (`NEVER` if none).
    next_tick: Time,
    /// Expiry of the tick pending when it was stopped (restart keeps this phase).
    last_tick: Time,
    /// The last idle pass ended with the tick's own interrupt (`ts->got_idle_tick`, read by
    /// the idle loop's no-driver rule, [`crate::kernel::idle`]).
    got_idle_tick: bool,
}

impl TickSched {
    /// A running tick driven by hrtimer `sched_timer`.
    pub(crate) fn new(sched_timer: TimerId) -> Self {
        TickSched {
            stopped: false,
            sched_timer,
            next_tick: NEVER,
            last_tick: 0,
            got_idle_tick: false,
        }
    }

    /// Records how an idle pass ended: by the tick's interrupt or by something else.
    #[inline]
    pub(crate) fn idle_pass_ended(&mut self, by_tick: bool) {
        self.got_idle_tick = by_tick;
    }

    /// The idle loop was left for a task (`do_idle` returns): the next idle entry is a new
    /// `do_idle`, whose record of how the last pass ended starts empty.
    #[inline]
    pub(crate) fn idle_loop_left(&mut self) {
        self.got_idle_tick = false;
    }

    /// Whether the last idle pass ended with the tick (`tick_nohz_idle_got_tick`).
    #[inline]
    pub(crate) fn got_idle_tick(&self) -> bool {
        self.got_idle_tick
    }

    /// The periodic tick is stopped (`ts->tick_stopped`).
    #[inline]
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The tick's hrtimer.
    #[inline]
    pub(crate) fn sched_timer(&self) -> TimerId {
        self.sched_timer
    }

    /// Whether the tick's expiry is what woke the CPU at `t` (for the governor's reflect): the
    /// tick runs and its timer was due.
    #[inline]
    pub(crate) fn woke_at<F: Copy>(&self, hrt: &HrtimerCpuBase<F>, t: Time) -> bool {
        hrt.is_queued(self.sched_timer) && hrt.hard_expires(self.sched_timer) <= t && !self.stopped
    }

    /// `tick_nohz_stop_tick`: stop the tick (or re-target a stopped one) until `expires`
    /// (`NEVER` cancels the sched_timer). The first stop saves the pending expiry as the phase
    /// a restart returns to.
    pub(crate) fn stop<F: Copy>(&mut self, hrt: &mut HrtimerCpuBase<F>, expires: Time) -> TickStop {
        let armed = expires == NEVER || hrt.is_queued(self.sched_timer);
        if self.stopped && self.next_tick == expires && armed {
            return TickStop::Unchanged;
        }
        let outcome = if self.stopped {
            TickStop::Retargeted
        } else {
            self.stopped = true;
            self.last_tick = hrt.soft_expires(self.sched_timer);
            TickStop::Stopped
        };
        if expires == NEVER {
            hrt.cancel(self.sched_timer);
        } else {
            hrt.start(self.sched_timer, expires, 0);
        }
        self.next_tick = expires;
        self.check(hrt);
        outcome
    }

    /// `tick_nohz_restart`: restart a stopped tick at `now` on its saved phase (the first
    /// point of the `last_tick` grid not before `now`, see [`restart_expiry`]).
    pub(crate) fn restart<F: Copy>(
        &mut self,
        hrt: &mut HrtimerCpuBase<F>,
        now: Time,
        tick_nsec: u64,
    ) {
        debug_assert!(self.stopped, "restart of a running tick");
        self.stopped = false;
        self.next_tick = NEVER;
        hrt.start(
            self.sched_timer,
            restart_expiry(self.last_tick, now, tick_nsec),
            0,
        );
        self.check(hrt);
    }

    /// The end of `tick_sched_timer`: a running tick re-arms one period on (`hrtimer_forward`
    /// to after `now`, keeping its phase); a stopped one stays off.
    #[inline]
    pub(crate) fn rearm<F: Copy>(&self, hrt: &mut HrtimerCpuBase<F>, now: Time, tick_nsec: u64) {
        if !self.stopped {
            let next = forward(hrt.soft_expires(self.sched_timer), now, tick_nsec).expires;
            hrt.start(self.sched_timer, next, 0);
        }
    }

    /// Checks the invariants (debug builds).
    #[inline]
    fn check<F: Copy>(&self, hrt: &HrtimerCpuBase<F>) {
        debug_assert!(self.stopped || self.next_tick == NEVER);
        debug_assert!(
            !self.stopped
                || self.next_tick == NEVER
                || (hrt.is_queued(self.sched_timer)
                    && hrt.soft_expires(self.sched_timer) == self.next_tick)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_offsets_table() {
        // docs/kernel-behaviour.md §6.1 examples.
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
        }
    }

    #[test]
    fn next_event_table() {
        let base = input();
        let plain = NohzMode::new(true, true, false);
        let aggr = NohzMode::new(true, true, true);
        let next_event = |i: &NextEventInput| plain.next_event(i);
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
            aggr.next_event(&NextEventInput {
                is_duty: true,
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
        assert_eq!(aggr.next_event(&last), Some(10_000_000 + 440_000_000_000));
        // Not last holder while nobody holds it: uncapped.
        assert_eq!(
            next_event(&NextEventInput {
                duty_held: false,
                ..base
            }),
            Some(NEVER)
        );
    }

    #[test]
    fn sleep_length_table() {
        let base = SleepLengthInput {
            now: 10_000_000,
            may_stop: true,
            next_event: Some(50_000_000),
            tick_expires: 11_000_000,
            next_other_timer: NEVER,
            next_programmed: 11_000_000,
        };
        // (input, sleep length, delta_next)
        let cases = [
            // The tick may stop until 50 ms: 40 ms of sleep, the device still set for the tick.
            (base, 40_000_000, 1_000_000),
            // Another hrtimer first: it bounds the sleep.
            (
                SleepLengthInput {
                    next_other_timer: 30_000_000,
                    ..base
                },
                20_000_000,
                1_000_000,
            ),
            // The tick must keep running: to its own expiry.
            (
                SleepLengthInput {
                    next_event: None,
                    ..base
                },
                1_000_000,
                1_000_000,
            ),
            // Nothing at all: NEVER from now.
            (
                SleepLengthInput {
                    next_event: Some(NEVER),
                    ..base
                },
                NEVER - 10_000_000,
                1_000_000,
            ),
            // The gate keeps the tick: the time to the programmed event, whatever else.
            (
                SleepLengthInput {
                    may_stop: false,
                    next_programmed: 10_400_000,
                    ..base
                },
                400_000,
                400_000,
            ),
            // A programmed event already past: zero, never negative.
            (
                SleepLengthInput {
                    may_stop: false,
                    next_programmed: 9_000_000,
                    ..base
                },
                0,
                0,
            ),
        ];
        for (i, sleep, delta) in cases {
            assert_eq!(
                get_sleep_length(&i),
                SleepLength {
                    sleep_length_ns: sleep,
                    delta_next_ns: delta
                },
                "{i:?}"
            );
        }
    }

    #[test]
    fn idle_tick_gate_table() {
        // (nohz_idle, any nohz_full, aggressive, is duty) -> may stop the idle tick
        let cases = [
            ((false, false, false, false), false), // nohz=off: never
            ((false, true, true, false), false),
            ((true, false, false, true), true), // plain NO_HZ_IDLE: the duty holder stops too
            ((true, true, false, false), true),
            ((true, true, false, true), false), // nohz_full: the duty holder keeps ticking
            ((true, true, true, true), true),   // ...unless aggressive
        ];
        for ((idle, full, aggressive, duty), want) in cases {
            let m = NohzMode::new(idle, full, aggressive);
            assert_eq!(m.can_stop_idle_tick(duty), want, "{m:?} duty={duty}");
        }
    }

    #[test]
    fn full_update_table() {
        let stop_at = |e| {
            move || NextEventInput {
                next_wheel: e,
                tick_stopped: true,
                ..input()
            }
        };
        let full = NohzMode::new(true, true, false);
        // (nohz_full CPU, run queue can stop, tick stopped, next event) -> action
        let cases = [
            ((false, true, false, NEVER), TickAction::Keep), // not a nohz_full CPU
            ((true, true, false, NEVER), TickAction::Stop(NEVER)),
            ((true, true, true, 12_000_000), TickAction::Stop(12_000_000)),
            ((true, false, true, NEVER), TickAction::Restart), // the SCHED dependency
            ((true, false, false, NEVER), TickAction::Keep),
        ];
        for ((cpu_full, can_stop, stopped, e), want) in cases {
            let got = full.full_update(cpu_full, can_stop, stopped, stop_at(e));
            assert_eq!(got, want, "{cpu_full} {can_stop} {stopped} {e}");
        }
        // A wheel timer within a tick keeps a running tick.
        let soon = || NextEventInput {
            next_wheel: 10_500_000,
            ..input()
        };
        assert_eq!(full.full_update(true, true, false, soon), TickAction::Keep);
        // nohz=off: never.
        let off = NohzMode::new(false, true, false);
        assert_eq!(
            off.full_update(true, false, true, stop_at(NEVER)),
            TickAction::Keep
        );
    }

    #[test]
    fn stop_restart_keep_the_phase() {
        let mut hrt: HrtimerCpuBase<u8> = HrtimerCpuBase::new(2);
        let timer = hrt.init(crate::kernel::hrtimer::ClockBase::Monotonic, 0);
        let mut ts = TickSched::new(timer);
        // Tick pending at 5_012_500 (skewed phase), period 1 ms.
        hrt.start(timer, 5_012_500, 0);
        // (step, expected outcome, stopped after, sched_timer queued at)
        assert_eq!(ts.stop(&mut hrt, 9_000_000), TickStop::Stopped);
        assert!(ts.is_stopped());
        assert_eq!(hrt.soft_expires(timer), 9_000_000);
        assert_eq!(ts.stop(&mut hrt, 9_000_000), TickStop::Unchanged);
        assert_eq!(ts.stop(&mut hrt, NEVER), TickStop::Retargeted);
        assert!(!hrt.is_queued(timer));
        assert_eq!(ts.stop(&mut hrt, NEVER), TickStop::Unchanged);
        ts.restart(&mut hrt, 7_300_000, 1_000_000);
        assert!(!ts.is_stopped());
        // Back on the saved phase: the first 5_012_500 + k ms after 7.3 ms.
        assert_eq!(hrt.soft_expires(timer), 8_012_500);
        // A running tick re-arms one period on; a stopped one does not.
        ts.rearm(&mut hrt, 8_012_500, 1_000_000);
        assert_eq!(hrt.soft_expires(timer), 9_012_500);
        assert_eq!(ts.stop(&mut hrt, 20_000_000), TickStop::Stopped);
        ts.rearm(&mut hrt, 20_000_000, 1_000_000);
        assert_eq!(hrt.soft_expires(timer), 20_000_000);
        ts.restart(&mut hrt, 20_000_000, 1_000_000);
        assert_eq!(hrt.soft_expires(timer), 20_012_500);
    }
}
