//! What a governor is asked and what it answers: the idle states as a driver registers them
//! ([`IdleStateParams`]), the inputs of a selection ([`SelectInput`]) and of the feedback after
//! it ([`Reflect`]), the answer ([`Selection`]), the [`Governor`] trait the four governors
//! implement, and the kernel's default POLL limit. The governors depend on this file; it
//! depends on none of them.

use std::borrow::Cow;

/// The most states a cpuidle driver may register (`CPUIDLE_STATE_MAX`).
pub const CPUIDLE_STATE_MAX: usize = 10;

/// Deeper states with a target residency below this are not used to bound a POLL spin (§9.2).
pub const POLL_MIN_NS: u64 = 10_000;

/// One cpuidle state as the governors see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleStateParams {
    /// State name as in sysfs (`POLL`, `C1`, `C6`, `haltpoll idle`, ...).
    pub name: Cow<'static, str>,
    /// Worst-case time to leave the state (sysfs `latency`, here in ns).
    pub exit_latency_ns: u64,
    /// Minimum residency for the state to pay off (sysfs `residency`, here in ns).
    pub target_residency_ns: u64,
    /// The state busy-polls (CPUIDLE_FLAG_POLLING): the CPU spins with the polling flag set.
    pub polling: bool,
    /// Disabled by the user (sysfs `disable`) or the driver; governors never pick it, except
    /// state 0 when nothing else is enabled.
    pub disabled: bool,
}

impl IdleStateParams {
    /// An enabled, non-polling state.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        exit_latency_ns: u64,
        target_residency_ns: u64,
    ) -> Self {
        IdleStateParams {
            name: name.into(),
            exit_latency_ns,
            target_residency_ns,
            polling: false,
            disabled: false,
        }
    }

    /// The POLL state: no exit latency, no target residency, busy polling (§9.2).
    pub fn poll() -> Self {
        IdleStateParams {
            polling: true,
            ..Self::new("POLL", 0, 0)
        }
    }

    /// This state with `disabled` set as given.
    pub fn with_disabled(mut self, disabled: bool) -> Self {
        self.disabled = disabled;
        self
    }
}

/// The two states of the cpuidle-haltpoll driver (§9.4): POLL, then HLT with 1 µs exit
/// latency and 1 µs target residency.
pub fn haltpoll_driver_states() -> [IdleStateParams; 2] {
    [
        IdleStateParams::poll(),
        IdleStateParams::new("haltpoll idle", 1_000, 1_000),
    ]
}

/// What the idle loop tells the governor at selection time.
#[derive(Clone, Copy, Debug)]
pub struct SelectInput {
    /// Time to the next timer event if the tick were stopped (`tick_nohz_get_sleep_length`);
    /// `u64::MAX` for none.
    pub sleep_length_ns: u64,
    /// Time to the next event already programmed, including the tick if it keeps running.
    pub delta_next_ns: u64,
    /// The tick is already stopped.
    pub tick_stopped: bool,
    /// PM QoS resume-latency limit (`u64::MAX` = none; 0 = only POLL).
    pub latency_req_ns: u64,
    /// The tick period (`TICK_NSEC`).
    pub tick_period_ns: u64,
    /// The scheduler's utilisation of this CPU is above 1/64 of its capacity (teo's
    /// util-awareness, `sched_cpu_util`); the other governors ignore it.
    pub utilized: bool,
}

/// A governor's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Index of the state to enter.
    pub state: usize,
    /// Whether the tick may be stopped (ignored by the idle loop if it is already stopped).
    pub stop_tick: bool,
}

/// What happened after the state was left.
#[derive(Clone, Copy, Debug)]
pub struct Reflect {
    /// Index of the state actually entered.
    pub state: usize,
    /// Time spent in the state, from entry to wakeup including the exit latency.
    pub residency_ns: u64,
    /// The wakeup was the tick (`tick_nohz_idle_got_tick`).
    pub woken_by_tick: bool,
    /// The state was POLL and the spin ended because the poll limit ran out.
    pub poll_timed_out: bool,
}

/// `cpuidle_enter_state`'s verdict on a stay in a state (the `above` and `below` counters of
/// `struct cpuidle_state_usage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StayVerdict {
    /// Too short for the state: the residency fell below its target residency.
    pub above: bool,
    /// Long enough for a deeper one: the residency reached the next deeper state's target.
    pub below: bool,
}

/// The verdict on `residency_ns` spent in state `entered` of `states` (the next deeper state
/// is the next in the table; a stay is never both above and below).
pub fn stay_verdict(states: &[IdleStateParams], entered: usize, residency_ns: u64) -> StayVerdict {
    let above = residency_ns < states[entered].target_residency_ns;
    let below = !above
        && states
            .get(entered + 1)
            .is_some_and(|deeper| residency_ns >= deeper.target_residency_ns);
    debug_assert!(!(above && below));
    StayVerdict { above, below }
}

/// A cpuidle governor: one instance per CPU.
pub trait Governor {
    /// The governor's name as in `available_governors`.
    fn name(&self) -> &'static str;
    /// Chooses the state to enter and whether to stop the tick. `states` must not be empty.
    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection;
    /// Learns from the idle period that just ended. `r.state` must index `states` (the
    /// governors panic otherwise).
    fn reflect(&mut self, states: &[IdleStateParams], r: &Reflect);
    /// For the POLL state: how long to spin before giving up (poll_limit_ns rule of §9.2, or
    /// the haltpoll window).
    fn poll_limit_ns(&self, states: &[IdleStateParams], tick_period_ns: u64) -> u64 {
        default_poll_limit_ns(states, tick_period_ns)
    }
}

/// The POLL spin limit when the governor sets none (§9.2): the target residency of the first
/// enabled state after state 0 whose residency is at least [`POLL_MIN_NS`], capped at a
/// sixteenth of the tick; a whole tick period if no state qualifies.
pub fn default_poll_limit_ns(states: &[IdleStateParams], tick_period_ns: u64) -> u64 {
    states
        .iter()
        .skip(1)
        .filter(|s| !s.disabled)
        .find(|s| s.target_residency_ns >= POLL_MIN_NS)
        .map_or(tick_period_ns, |s| {
            s.target_residency_ns.min(tick_period_ns / 16)
        })
}
