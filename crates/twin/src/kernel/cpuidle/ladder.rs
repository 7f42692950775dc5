//! The ladder governor (§9.3): one rung at a time, for periodic-tick systems.
//!
//! # Design note
//!
//! ladder does not predict. It remembers the state it used last and moves at most one state
//! per idle period, from how long the CPU stayed there (the residency minus that state's exit
//! latency, "net residency"):
//!
//! * **promote** to the next deeper state once the net residency has exceeded the current
//!   state's promotion threshold 4 times, provided the deeper state is enabled and its exit
//!   latency is within the PM QoS limit;
//! * **demote** to the next shallower state the first time the net residency falls below the
//!   current state's demotion threshold;
//! * **fall** straight to the deepest acceptable shallower state when the current state is
//!   disabled or too slow to leave for the PM QoS limit; a limit of 0 means state 0.
//!
//! Thresholds, as read from the kernel's setup: both the promotion and the demotion threshold
//! of a state are that state's own exit latency. So a CPU climbs after 4 stays longer than
//! twice the current state's exit latency, and steps down after one stay shorter than that.
//! The lowest rung has no demotion threshold and the deepest no promotion. The lowest rung is
//! state 1 when state 0 is POLL (x86's `CPUIDLE_DRIVER_STATE_START`), else state 0.
//!
//! The promotion count is reset only by a demotion step or a move, not by a stay that is too
//! short to count; on the lowest rung, where there is no demotion, the 4 long stays therefore
//! need not be consecutive. This follows the kernel.
//!
//! ladder was written for systems where the tick keeps running; it never asks to keep the
//! tick, so [`Selection::stop_tick`] is always true (on a periodic kernel the idle loop ignores
//! it anyway).

use super::governor::{
    CPUIDLE_STATE_MAX, Governor, IdleStateParams, Reflect, SelectInput, Selection,
};

/// Long stays needed before a promotion.
pub const PROMOTION_COUNT: u32 = 4;
/// Short stays needed before a demotion.
pub const DEMOTION_COUNT: u32 = 1;

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    promotion: u32,
    demotion: u32,
}

/// Per-CPU state of the ladder governor.
#[derive(Clone, Debug, Default)]
pub struct Ladder {
    /// The current rung; `None` until the first selection (then the lowest rung).
    last_state: Option<usize>,
    last_residency_ns: u64,
    counts: [Counts; CPUIDLE_STATE_MAX],
}

/// The lowest rung: 1 when state 0 is POLL, else 0.
pub fn lowest_rung(states: &[IdleStateParams]) -> usize {
    usize::from(states.first().is_some_and(|s| s.polling))
}

impl Ladder {
    /// A governor as enabled on a CPU, on the lowest rung.
    pub fn new() -> Self {
        Self::default()
    }

    /// The state the ladder currently stands on, if it has selected before.
    pub fn rung(&self) -> Option<usize> {
        self.last_state
    }

    fn step(&mut self, from: usize, to: usize) -> Selection {
        self.counts[from] = Counts::default();
        self.last_state = Some(to);
        Selection {
            state: to,
            stop_tick: true,
        }
    }
}

impl Governor for Ladder {
    fn name(&self) -> &'static str {
        "ladder"
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        let n = states.len().min(CPUIDLE_STATE_MAX);
        if n == 0 {
            return Selection {
                state: 0,
                stop_tick: true,
            };
        }
        let start = lowest_rung(states).min(n - 1);
        let last = self.last_state.unwrap_or(start).min(n - 1);
        self.last_state = Some(last);
        let latency_req = input.latency_req_ns;
        if latency_req == 0 {
            return self.step(last, 0);
        }
        let net = i128::from(self.last_residency_ns) - i128::from(states[last].exit_latency_ns);
        let promotion_threshold = if last >= start && last + 1 < n {
            states[last].exit_latency_ns
        } else {
            0
        };
        let demotion_threshold = if last > start {
            states[last].exit_latency_ns
        } else {
            0
        };

        if last + 1 < n
            && !states[last + 1].disabled
            && net > i128::from(promotion_threshold)
            && states[last + 1].exit_latency_ns <= latency_req
        {
            let c = &mut self.counts[last];
            c.promotion += 1;
            c.demotion = 0;
            if c.promotion >= PROMOTION_COUNT {
                return self.step(last, last + 1);
            }
        }

        if last > start && (states[last].disabled || states[last].exit_latency_ns > latency_req) {
            let mut to = last - 1;
            while to > start && states[to].exit_latency_ns > latency_req {
                to -= 1;
            }
            return self.step(last, to);
        }

        if last > start && net < i128::from(demotion_threshold) {
            let c = &mut self.counts[last];
            c.demotion += 1;
            c.promotion = 0;
            if c.demotion >= DEMOTION_COUNT {
                return self.step(last, last - 1);
            }
        }

        Selection {
            state: last,
            stop_tick: true,
        }
    }

    fn reflect(&mut self, _states: &[IdleStateParams], r: &Reflect) {
        self.last_residency_ns = r.residency_ns;
        if r.state > 0 {
            self.last_state = Some(r.state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{long_sleep as input, skx};
    use super::*;

    /// Select, then reflect a stay of `residency` in the selected state; returns the state.
    fn idle(g: &mut Ladder, s: &[IdleStateParams], latency: u64, residency: u64) -> usize {
        let sel = g.select(s, &input(latency));
        assert!(sel.stop_tick, "ladder never keeps the tick");
        g.reflect(
            s,
            &Reflect {
                state: sel.state,
                residency_ns: residency,
                woken_by_tick: false,
                poll_timed_out: false,
            },
        );
        sel.state
    }

    #[test]
    fn lowest_rung_skips_poll() {
        assert_eq!(lowest_rung(&skx()), 1);
        assert_eq!(lowest_rung(&skx()[1..]), 0);
        assert_eq!(lowest_rung(&[]), 0);
        let mut g = Ladder::new();
        assert_eq!(g.select(&skx(), &input(u64::MAX)).state, 1);
    }

    /// Climbs from C1 to C1E and leaves a long C1E stay (30 µs) as the last residency.
    fn climb_to_c1e(g: &mut Ladder, s: &[IdleStateParams]) {
        for _ in 0..4 {
            assert_eq!(idle(g, s, u64::MAX, 4_001), 1);
        }
        assert_eq!(idle(g, s, u64::MAX, 30_000), 2);
        assert_eq!(g.rung(), Some(2));
    }

    #[test]
    fn promotes_after_four_long_stays() {
        let s = skx();
        let mut g = Ladder::new();
        // C1: exit 2 µs, so a stay must exceed 4 µs (net > 2 µs). The first selection sees
        // no history; the next four each see a long stay, and the fourth promotes.
        let states: Vec<usize> = (0..5).map(|_| idle(&mut g, &s, u64::MAX, 4_001)).collect();
        assert_eq!(states, [1, 1, 1, 1, 2]);
    }

    #[test]
    fn promotion_threshold_is_strict() {
        let s = skx();
        let mut g = Ladder::new();
        for _ in 0..10 {
            assert_eq!(idle(&mut g, &s, u64::MAX, 4_000), 1, "net == threshold");
        }
    }

    #[test]
    fn demotes_after_one_short_stay() {
        let s = skx();
        let mut g = Ladder::new();
        climb_to_c1e(&mut g, &s);
        // C1E: exit 10 µs; net must drop below 10 µs, i.e. a stay under 20 µs. Each selection
        // judges the stay reflected just before it.
        assert_eq!(idle(&mut g, &s, u64::MAX, 20_000), 2, "sees 30 µs");
        assert_eq!(
            idle(&mut g, &s, u64::MAX, 19_999),
            2,
            "sees 20 µs: net == threshold"
        );
        assert_eq!(
            idle(&mut g, &s, u64::MAX, 4_001),
            1,
            "sees 19.999 µs: demote"
        );
    }

    #[test]
    fn lowest_rung_promotion_count_survives_short_stays() {
        let s = skx();
        let mut g = Ladder::new();
        let residencies = [0, 4_001, 4_001, 1_000, 4_001, 1_000, 4_001];
        let states: Vec<usize> = residencies
            .iter()
            .map(|&r| idle(&mut g, &s, u64::MAX, r))
            .collect();
        assert_eq!(states, [1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(idle(&mut g, &s, u64::MAX, 0), 2, "fourth long stay");
    }

    #[test]
    fn short_stay_demotes_despite_promotion_progress() {
        let s = skx();
        let mut g = Ladder::new();
        climb_to_c1e(&mut g, &s);
        // Three long C1E stays counted towards C6, then a short one.
        assert_eq!(idle(&mut g, &s, u64::MAX, 30_000), 2);
        assert_eq!(idle(&mut g, &s, u64::MAX, 30_000), 2);
        assert_eq!(
            idle(&mut g, &s, u64::MAX, 15_000),
            2,
            "third long stay seen"
        );
        assert_eq!(idle(&mut g, &s, u64::MAX, 30_000), 1, "sees 15 µs: demote");
    }

    #[test]
    fn latency_limits() {
        let s = skx();
        let mut g = Ladder::new();
        climb_to_c1e(&mut g, &s);
        // Promotion to C6 is blocked while its exit latency exceeds the limit...
        for _ in 0..6 {
            assert_eq!(idle(&mut g, &s, 132_999, 1_000_000), 2);
        }
        // ...and counts only while admissible, so four long stays are needed once the limit
        // equals C6's exit latency.
        let states: Vec<usize> = (0..4)
            .map(|_| idle(&mut g, &s, 133_000, 1_000_000))
            .collect();
        assert_eq!(states, [2, 2, 2, 3]);
        // A limit below the current state's exit latency drops to an acceptable state.
        assert_eq!(idle(&mut g, &s, 9_999, 1_000_000), 1);
        // A limit of 0 means state 0 (POLL).
        assert_eq!(idle(&mut g, &s, 0, 1_000_000), 0);
        assert_eq!(g.rung(), Some(0));
        // From POLL (exit 0) any stay counts towards climbing back to C1.
        let states: Vec<usize> = (0..4).map(|_| idle(&mut g, &s, u64::MAX, 1)).collect();
        assert_eq!(states, [0, 0, 0, 1]);
    }

    #[test]
    fn disabled_states() {
        let mut s = skx();
        let mut g = Ladder::new();
        climb_to_c1e(&mut g, &s);
        // The current state becomes disabled: fall one rung at once.
        s[2].disabled = true;
        assert_eq!(idle(&mut g, &s, u64::MAX, 1_000_000), 1);
        // A disabled next state blocks promotion.
        for _ in 0..8 {
            assert_eq!(idle(&mut g, &s, u64::MAX, 1_000_000), 1);
        }
    }
}
