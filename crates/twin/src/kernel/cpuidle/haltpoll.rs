//! The haltpoll governor (§9.3): adaptive guest-side polling in front of HLT, for KVM guests.
//!
//! # Design note
//!
//! A vCPU that executes HLT exits to the host, and its waker must send an IPI that exits too.
//! Polling for a short while first avoids both when the wakeup comes soon. haltpoll keeps one
//! poll window per vCPU (`poll_limit_ns`, starting at 0) and alternates between two states of
//! the cpuidle-haltpoll driver ([`haltpoll_driver_states`](super::haltpoll_driver_states)):
//!
//! * window 0 → HALT (the tick may stop);
//! * after a POLL that ran out its window → HALT; after a POLL that was woken → POLL again;
//! * after a HALT → POLL;
//! * every POLL keeps the tick, and no states or a PM QoS limit of 0 means POLL too.
//!
//! The window adapts after each HALT, from how long the vCPU was blocked ([`adjust`]): a block
//! longer than the window but within `guest_halt_poll_ns` grows it (× grow, at least
//! grow_start, at most guest_halt_poll_ns): polling that long would have caught the wakeup. A
//! block beyond `guest_halt_poll_ns` shrinks it (÷ shrink, or to 0 when shrink is 0) if
//! shrinking is allowed: polling would not have helped. With the defaults the window goes
//! 0 → 50 µs → 100 µs → 200 µs.
//!
//! Modelling choices: with a single state the governor answers state 0 where the kernel would
//! name a missing HALT state; and the POLL spin limit is the window when it is non-zero, else
//! the generic rule of §9.2 (the kernel caches that value in the same per-CPU field; that
//! interaction is not modelled).

use ticklab_cmdline::HaltpollParams;

use super::governor::{
    Governor, IdleStateParams, Reflect, SelectInput, Selection, default_poll_limit_ns,
};

/// The poll window after a HALT that blocked for `block_ns`, given the current window.
pub fn adjust(poll_limit_ns: u64, block_ns: u64, p: &HaltpollParams) -> u64 {
    if block_ns > poll_limit_ns && block_ns <= p.guest_halt_poll_ns {
        poll_limit_ns
            .saturating_mul(p.guest_halt_poll_grow)
            .max(p.guest_halt_poll_grow_start)
            .min(p.guest_halt_poll_ns)
    } else if block_ns > p.guest_halt_poll_ns && p.guest_halt_poll_allow_shrink {
        match p.guest_halt_poll_shrink {
            0 => 0,
            shrink => poll_limit_ns / shrink,
        }
    } else {
        poll_limit_ns
    }
}

/// Per-vCPU state of the haltpoll governor.
#[derive(Clone, Debug)]
pub struct Haltpoll {
    params: HaltpollParams,
    poll_limit_ns: u64,
    last_state: usize,
    last_poll_timed_out: bool,
}

impl Haltpoll {
    /// A governor as enabled on a vCPU: poll window 0.
    pub fn new(params: HaltpollParams) -> Self {
        Haltpoll {
            params,
            poll_limit_ns: 0,
            last_state: 0,
            last_poll_timed_out: false,
        }
    }

    /// The module parameters in force.
    pub fn params(&self) -> &HaltpollParams {
        &self.params
    }

    /// The current poll window.
    pub fn window_ns(&self) -> u64 {
        self.poll_limit_ns
    }
}

impl Governor for Haltpoll {
    fn name(&self) -> &'static str {
        "haltpoll"
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        const POLL: Selection = Selection {
            state: 0,
            stop_tick: false,
        };
        if states.is_empty() || input.latency_req_ns == 0 {
            return POLL;
        }
        let halt = Selection {
            state: 1.min(states.len() - 1),
            stop_tick: true,
        };
        if self.poll_limit_ns == 0 {
            return halt;
        }
        if self.last_state == 0 && self.last_poll_timed_out {
            return halt;
        }
        POLL
    }

    fn reflect(&mut self, _states: &[IdleStateParams], r: &Reflect) {
        self.last_state = r.state;
        self.last_poll_timed_out = r.poll_timed_out;
        if r.state != 0 {
            self.poll_limit_ns = adjust(self.poll_limit_ns, r.residency_ns, &self.params);
        }
    }

    fn poll_limit_ns(&self, states: &[IdleStateParams], tick_period_ns: u64) -> u64 {
        if self.poll_limit_ns > 0 {
            self.poll_limit_ns
        } else {
            default_poll_limit_ns(states, tick_period_ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TICK, long_sleep as input};
    use super::super::haltpoll_driver_states;
    use super::*;

    fn params(f: impl FnOnce(&mut HaltpollParams)) -> HaltpollParams {
        let mut p = HaltpollParams::default();
        f(&mut p);
        p
    }

    #[test]
    fn adjust_table() {
        let d = HaltpollParams::default();
        let no_shrink = params(|p| p.guest_halt_poll_allow_shrink = false);
        let shrink0 = params(|p| p.guest_halt_poll_shrink = 0);
        let grow3 = params(|p| p.guest_halt_poll_grow = 3);
        let table: &[(&HaltpollParams, u64, u64, u64, &str)] = &[
            // (params, window, block, new window)
            (&d, 0, 1, 50_000, "grow from zero starts at grow_start"),
            (&d, 0, 0, 0, "a zero block is not longer than the window"),
            (&d, 50_000, 50_001, 100_000, "grow ×2"),
            (&d, 50_000, 50_000, 50_000, "block == window: unchanged"),
            (&d, 100_000, 150_000, 200_000, "grow to the cap"),
            (
                &d,
                150_000,
                200_000,
                200_000,
                "×2 capped at guest_halt_poll_ns",
            ),
            (
                &d,
                200_000,
                200_000,
                200_000,
                "block == cap, not above the window",
            ),
            (
                &d,
                100_000,
                200_000,
                200_000,
                "block == guest_halt_poll_ns still grows",
            ),
            (
                &d,
                200_000,
                200_001,
                100_000,
                "block above guest_halt_poll_ns shrinks ÷2",
            ),
            (
                &d,
                50_000,
                1_000_000,
                25_000,
                "shrinking goes below grow_start",
            ),
            (&d, 1, 1_000_000, 0, "and down to zero"),
            (&no_shrink, 200_000, 1_000_000, 200_000, "allow_shrink=N"),
            (&no_shrink, 0, 100, 50_000, "allow_shrink=N still grows"),
            (&shrink0, 200_000, 200_001, 0, "shrink=0 resets"),
            (&grow3, 50_000, 60_000, 150_000, "grow ×3"),
            (
                &d,
                20_000,
                10_000,
                20_000,
                "block within the window: unchanged",
            ),
        ];
        for &(p, window, block, want, what) in table {
            assert_eq!(adjust(window, block, p), want, "{what}");
        }
    }

    fn halt_blocked(g: &mut Haltpoll, states: &[IdleStateParams], block_ns: u64) {
        g.reflect(
            states,
            &Reflect {
                state: 1,
                residency_ns: block_ns,
                woken_by_tick: false,
                poll_timed_out: false,
            },
        );
    }

    const POLL: Selection = Selection {
        state: 0,
        stop_tick: false,
    };
    const HALT: Selection = Selection {
        state: 1,
        stop_tick: true,
    };

    #[test]
    fn growth_from_zero_with_defaults() {
        let s = haltpoll_driver_states();
        let mut g = Haltpoll::new(HaltpollParams::default());
        assert_eq!(g.window_ns(), 0);
        assert_eq!(g.select(&s, &input(u64::MAX)), HALT, "window 0: halt");
        let mut windows = Vec::new();
        for _ in 0..4 {
            halt_blocked(&mut g, &s, 150_000);
            windows.push(g.window_ns());
        }
        assert_eq!(windows, [50_000, 100_000, 200_000, 200_000]);
        // Long blocks shrink it back.
        halt_blocked(&mut g, &s, 1_000_000);
        assert_eq!(g.window_ns(), 100_000);
    }

    #[test]
    fn select_rules() {
        let s = haltpoll_driver_states();
        let mut g = Haltpoll::new(HaltpollParams::default());
        halt_blocked(&mut g, &s, 10_000);
        assert_eq!(g.window_ns(), 50_000);
        assert_eq!(
            g.poll_limit_ns(&s, TICK),
            50_000,
            "POLL spins for the window"
        );
        // Last state HALT → POLL, keeping the tick.
        assert_eq!(g.select(&s, &input(u64::MAX)), POLL);
        // POLL woken by an event → POLL again.
        let poll_end = |timed_out| Reflect {
            state: 0,
            residency_ns: 30_000,
            woken_by_tick: false,
            poll_timed_out: timed_out,
        };
        g.reflect(&s, &poll_end(false));
        assert_eq!(g.select(&s, &input(u64::MAX)), POLL);
        // POLL timed out → HALT, tick may stop.
        g.reflect(&s, &poll_end(true));
        assert_eq!(g.select(&s, &input(u64::MAX)), HALT);
        // POLL reflections never move the window.
        assert_eq!(g.window_ns(), 50_000);
        // PM QoS 0 or no states → POLL whatever the history.
        assert_eq!(g.select(&s, &input(0)), POLL);
        assert_eq!(g.select(&[], &input(u64::MAX)), POLL);
        // With the window back at 0 the vCPU halts even after a HALT.
        let shrink0 = params(|p| p.guest_halt_poll_shrink = 0);
        let mut g = Haltpoll::new(shrink0);
        halt_blocked(&mut g, &s, 10_000);
        halt_blocked(&mut g, &s, 300_000);
        assert_eq!(g.window_ns(), 0);
        assert_eq!(g.select(&s, &input(u64::MAX)), HALT);
        assert_eq!(
            g.poll_limit_ns(&s, TICK),
            TICK,
            "generic rule when no window"
        );
    }

    #[test]
    fn single_state_stays_in_range() {
        let s = [IdleStateParams::poll()];
        let mut g = Haltpoll::new(HaltpollParams::default());
        assert_eq!(
            g.select(&s, &input(u64::MAX)),
            Selection {
                state: 0,
                stop_tick: true
            }
        );
    }
}
