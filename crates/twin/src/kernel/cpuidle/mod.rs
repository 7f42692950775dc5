//! cpuidle: idle states as the governors see them, and the governors themselves.
//!
//! # Design note
//!
//! In the kernel's idle loop (§9.1 of `docs/kernel-behaviour.md`) a governor is asked two
//! questions each time a CPU goes idle: which state to enter, and whether the tick may be
//! stopped. It is told what happened afterwards. Here those are [`Governor::select`] and
//! [`Governor::reflect`], with plain-data inputs ([`SelectInput`], [`Reflect`]) and a
//! plain-data answer ([`Selection`]), so that a governor is a pure state machine the twin can
//! run without any clock or callback. The twin computes the inputs (sleep length and
//! `delta_next` from §3.4, the PM QoS limit) and acts on the answer (enter the state, keep or
//! stop the tick, bound a POLL spin with [`Governor::poll_limit_ns`]).
//!
//! * [`menu`]: the default with NO_HZ; predicts the idle duration from the next timer,
//!   per-magnitude correction factors and a repeating-interval detector.
//! * [`haltpoll`]: for KVM guests; an adaptive poll window in front of HLT.
//! * [`ladder`]: for periodic-tick systems; steps one state deeper or shallower at a time.
//! * [`teo`]: timer-events oriented (Linux 6.6 rules): the sleep length, corrected by how
//!   often the CPU was woken earlier ("intercepts").
//! * [`guest_idle`]: not a governor: the idle paths a KVM guest can take (HLT, `idle=poll`,
//!   the 2017 poll-before-HLT proposal, a cpuidle driver with a governor), for the E3 model.
//!
//! [`AnyGovernor`] dispatches statically over the four governors. [`default_governor`] applies the
//! kernel's rating rule.
//!
//! Governors are deterministic and never allocate in `select` or `reflect`. All times are in
//! nanoseconds: this follows the kernels (≥ 5.8) that moved cpuidle from microseconds to
//! nanoseconds; where a rule is stated in microseconds (menu's interval statistics) it is
//! kept in microseconds.
//!
//! State tables are ordered shallowest first, as drivers register them. On x86 state 0 is the
//! POLL state ([`IdleStateParams::poll`]).

mod governor;
pub mod guest_idle;
pub mod haltpoll;
pub mod ladder;
pub mod menu;
pub mod teo;

pub use governor::{
    CPUIDLE_STATE_MAX, Governor, IdleStateParams, POLL_MIN_NS, Reflect, SelectInput, Selection,
    StayVerdict, default_poll_limit_ns, haltpoll_driver_states, stay_verdict,
};
pub use haltpoll::Haltpoll;
pub use ladder::Ladder;
pub use menu::Menu;
pub use teo::Teo;
use ticklab_cmdline::HaltpollParams;

/// Any of the implemented governors, dispatched statically.
#[derive(Clone, Debug)]
pub enum AnyGovernor {
    /// The menu governor.
    Menu(Menu),
    /// The haltpoll governor.
    Haltpoll(Haltpoll),
    /// The ladder governor.
    Ladder(Ladder),
    /// The teo governor.
    Teo(Teo),
}

impl Governor for AnyGovernor {
    fn name(&self) -> &'static str {
        match self {
            AnyGovernor::Menu(g) => g.name(),
            AnyGovernor::Haltpoll(g) => g.name(),
            AnyGovernor::Ladder(g) => g.name(),
            AnyGovernor::Teo(g) => g.name(),
        }
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        match self {
            AnyGovernor::Menu(g) => g.select(states, input),
            AnyGovernor::Haltpoll(g) => g.select(states, input),
            AnyGovernor::Ladder(g) => g.select(states, input),
            AnyGovernor::Teo(g) => g.select(states, input),
        }
    }

    fn reflect(&mut self, states: &[IdleStateParams], r: &Reflect) {
        match self {
            AnyGovernor::Menu(g) => g.reflect(states, r),
            AnyGovernor::Haltpoll(g) => g.reflect(states, r),
            AnyGovernor::Ladder(g) => g.reflect(states, r),
            AnyGovernor::Teo(g) => g.reflect(states, r),
        }
    }

    fn poll_limit_ns(&self, states: &[IdleStateParams], tick_period_ns: u64) -> u64 {
        match self {
            AnyGovernor::Menu(g) => g.poll_limit_ns(states, tick_period_ns),
            AnyGovernor::Haltpoll(g) => g.poll_limit_ns(states, tick_period_ns),
            AnyGovernor::Ladder(g) => g.poll_limit_ns(states, tick_period_ns),
            AnyGovernor::Teo(g) => g.poll_limit_ns(states, tick_period_ns),
        }
    }
}

/// A fresh governor by name (`menu`, `haltpoll`, `ladder`, `teo`); `haltpoll` takes its module
/// parameters from `haltpoll`. `None` for unknown governors.
pub fn governor_by_name(name: &str, haltpoll: HaltpollParams) -> Option<AnyGovernor> {
    match name {
        "menu" => Some(AnyGovernor::Menu(Menu::new())),
        "haltpoll" => Some(AnyGovernor::Haltpoll(Haltpoll::new(haltpoll))),
        "ladder" => Some(AnyGovernor::Ladder(Ladder::new())),
        "teo" => Some(AnyGovernor::Teo(Teo::new())),
        _ => None,
    }
}

/// The governors the kernel knows, in registration order.
pub const KNOWN_GOVERNORS: [&str; 4] = ["ladder", "menu", "teo", "haltpoll"];

/// A governor's rating (§9.3): the highest-rated registered governor becomes the default.
/// Ladder rates above menu when the tick cannot be stopped (`nohz` off).
pub fn governor_rating(name: &str, nohz: bool) -> Option<u32> {
    match name {
        "menu" => Some(20),
        "teo" => Some(19),
        "ladder" => Some(if nohz { 10 } else { 25 }),
        "haltpoll" => Some(9),
        _ => None,
    }
}

/// The governor the kernel starts with: the one the driver asks for if it is known (the
/// cpuidle-haltpoll driver asks for `haltpoll`), else the highest rating.
pub fn default_governor(nohz: bool, driver_prefers: Option<&str>) -> &'static str {
    if let Some(name) = driver_prefers.and_then(|p| KNOWN_GOVERNORS.into_iter().find(|&g| g == p)) {
        return name;
    }
    KNOWN_GOVERNORS
        .into_iter()
        .max_by_key(|&g| governor_rating(g, nohz))
        .expect("KNOWN_GOVERNORS is not empty")
}

/// Test fixtures shared by the governor tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{IdleStateParams, SelectInput};

    /// A selection with a long sleep ahead (10 ticks), the tick running and due in one tick,
    /// under a latency limit of `latency` ns.
    pub(crate) fn long_sleep(latency: u64) -> SelectInput {
        SelectInput {
            sleep_length_ns: 10 * TICK,
            delta_next_ns: TICK,
            tick_stopped: false,
            latency_req_ns: latency,
            tick_period_ns: TICK,
            utilized: false,
        }
    }

    /// An intel_idle table for Skylake-SP: POLL, C1 (2/2 µs), C1E (10/20 µs), C6 (133/600 µs).
    pub(crate) fn skx() -> Vec<IdleStateParams> {
        vec![
            IdleStateParams::poll(),
            IdleStateParams::new("C1", 2_000, 2_000),
            IdleStateParams::new("C1E", 10_000, 20_000),
            IdleStateParams::new("C6", 133_000, 600_000),
        ]
    }

    /// HZ=1000.
    pub(crate) const TICK: u64 = 1_000_000;
}

#[cfg(test)]
mod tests {
    use super::fixtures::{TICK, skx};
    use super::*;

    #[test]
    fn default_governor_by_rating_and_driver() {
        let table: &[(bool, Option<&str>, &str)] = &[
            (true, None, "menu"),
            (false, None, "ladder"),
            (true, Some("haltpoll"), "haltpoll"),
            (false, Some("haltpoll"), "haltpoll"),
            (false, Some("menu"), "menu"),
            (true, Some("teo"), "teo"),
            (true, Some("no-such-governor"), "menu"),
            (false, Some("no-such-governor"), "ladder"),
        ];
        for &(nohz, prefers, want) in table {
            assert_eq!(default_governor(nohz, prefers), want, "{nohz} {prefers:?}");
        }
    }

    #[test]
    fn ratings() {
        assert_eq!(governor_rating("menu", true), Some(20));
        assert_eq!(governor_rating("teo", true), Some(19));
        assert_eq!(governor_rating("ladder", true), Some(10));
        assert_eq!(governor_rating("ladder", false), Some(25));
        assert_eq!(governor_rating("haltpoll", false), Some(9));
        assert_eq!(governor_rating("performance", true), None);
    }

    #[test]
    fn governors_by_name() {
        for name in ["menu", "haltpoll", "ladder", "teo"] {
            let g = governor_by_name(name, HaltpollParams::default()).expect(name);
            assert_eq!(g.name(), name);
        }
        assert!(governor_by_name("performance", HaltpollParams::default()).is_none());
        assert!(governor_by_name("", HaltpollParams::default()).is_none());
    }

    #[test]
    fn stay_verdict_table() {
        let s = skx();
        // (state, residency, above, below): C1E's target is 20 µs, C6's 600 µs.
        let cases = [
            (2, 19_999, true, false),
            (2, 20_000, false, false),
            (2, 599_999, false, false),
            (2, 600_000, false, true),
            (3, 599_999, true, false),
            (3, 10_000_000, false, false), // the deepest state: never below
            (0, 0, false, false),          // POLL: no target, C1 not reached
            (0, 2_000, false, true),
        ];
        for (state, residency, above, below) in cases {
            assert_eq!(
                stay_verdict(&s, state, residency),
                StayVerdict { above, below },
                "state {state} residency {residency}"
            );
        }
    }

    #[test]
    fn poll_limit_rule() {
        let hz250 = 4_000_000;
        let mut s = skx();
        // C1 (2 µs) is below the 10 µs floor, C1E (20 µs) qualifies.
        assert_eq!(default_poll_limit_ns(&s, hz250), 20_000);
        // Capped at TICK_NSEC / 16.
        s[2].disabled = true;
        assert_eq!(default_poll_limit_ns(&s, hz250), 250_000);
        assert_eq!(default_poll_limit_ns(&s, TICK), 62_500);
        // Residency exactly at the floor qualifies; one below does not.
        s[1].target_residency_ns = POLL_MIN_NS;
        assert_eq!(default_poll_limit_ns(&s, TICK), POLL_MIN_NS);
        s[1].target_residency_ns = POLL_MIN_NS - 1;
        assert_eq!(default_poll_limit_ns(&s, TICK), 62_500);
        // Nothing qualifies: a whole tick.
        s[3].disabled = true;
        assert_eq!(default_poll_limit_ns(&s, hz250), hz250);
        assert_eq!(
            default_poll_limit_ns(&haltpoll_driver_states(), hz250),
            hz250
        );
        // State 0 itself never counts.
        let only = [IdleStateParams::new("C6", 133_000, 600_000)];
        assert_eq!(default_poll_limit_ns(&only, hz250), hz250);
    }
}
