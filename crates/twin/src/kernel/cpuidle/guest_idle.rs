//! The idle paths of a KVM guest (docs/kernel-behaviour.md §9.1, §9.4, §9.6, §9.7).
//!
//! # Design note
//!
//! In a guest, what the idle loop does decides whether the vCPU exits to the host: HLT exits,
//! polling does not. While the idle task spins it keeps the polling flag set, so that a waker
//! only sets NEED_RESCHED and sends no reschedule IPI (no ICR-write exit on the waker, no
//! interrupt injection on the target). The paths:
//!
//! * [`GuestIdlePath::Hlt`] — no cpuidle driver (`default_idle`): the tick is stopped (the
//!   guest is assumed quiet: no timer within a tick) and HLT executes, every time.
//! * [`GuestIdlePath::IdlePoll`] — `idle=poll`: spin forever with the flag set; the tick is
//!   never stopped.
//! * [`GuestIdlePath::PollThenHlt`] — the 2017 proposal (`poll_threshold_ns`, §9.7): the vCPU
//!   polls for the threshold with the flag set, then executes HLT. Whether the tick stops
//!   before the poll (that era's idle entry stopping it first) or only after a poll that ran
//!   out is the unverified [`GuestPollPlacement`] the path carries. The fixed-window variant,
//!   which is what the published figures tried; the adaptive v2 is the haltpoll rule below.
//! * [`GuestIdlePath::Cpuidle`] — the cpuidle-haltpoll driver (POLL, then HLT with 1 µs
//!   exit latency and target residency) with a governor: `haltpoll` (the driver's choice, with
//!   its adaptive window), or `teo` / `menu` / `ladder` when `cpuidle.governor=` says so. The
//!   governor decides the state and the tick; a POLL that runs out its limit asks again. The
//!   driver also switches host-side halt polling off through the poll-control MSR (§9.4).
//!
//! [`GuestIdle`] is one vCPU's idle loop: [`GuestIdle::step`] says what to do next, and
//! [`GuestIdle::reflect`] reports what happened to the governor.

use ticklab_cmdline::HaltpollParams;

use crate::kernel::idle::GuestPollPlacement;

use super::{
    AnyGovernor, Governor, IdleStateParams, Reflect, SelectInput, governor_by_name,
    haltpoll_driver_states,
};

/// Which idle path the guest takes.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestIdlePath {
    /// No cpuidle driver: stop the tick, HLT.
    Hlt,
    /// `idle=poll`.
    IdlePoll,
    /// The 2017 proposal: poll `threshold_ns`, then HLT; the tick stopped before the poll or
    /// only before the HLT, as `placement` says.
    PollThenHlt {
        /// `poll_threshold_ns`.
        threshold_ns: u64,
        /// Where the poll sat relative to the idle loop's tick stop.
        placement: GuestPollPlacement,
    },
    /// The cpuidle-haltpoll driver with a governor.
    Cpuidle {
        /// Governor name (`haltpoll`, `teo`, `menu`, `ladder`).
        governor: String,
        /// The haltpoll module parameters (used by the haltpoll governor).
        params: HaltpollParams,
    },
}

impl GuestIdlePath {
    /// The driver with its own governor and the given module parameters.
    pub fn haltpoll(params: HaltpollParams) -> Self {
        GuestIdlePath::Cpuidle {
            governor: "haltpoll".into(),
            params,
        }
    }

    /// Whether the guest switches host halt polling off (the cpuidle-haltpoll driver does).
    pub fn disables_host_polling(&self) -> bool {
        matches!(self, GuestIdlePath::Cpuidle { .. })
    }

    /// Whether the step that starts now (at the idle entry, or after a poll that ran out) is
    /// where the pre-4.17 idle loop calls `tick_nohz_idle_enter()`
    /// ([`IdleEntryTick::LoopEntry`](crate::kernel::idle::IdleEntryTick::LoopEntry)): the
    /// first step of the entry, except on the 2017 path with its poll before the tick stop
    /// ([`GuestPollPlacement::at_idle_enter`]).
    pub fn at_idle_enter(&self, after_poll_timeout: bool) -> bool {
        match self {
            GuestIdlePath::PollThenHlt { placement, .. } => {
                placement.at_idle_enter(after_poll_timeout)
            }
            _ => !after_poll_timeout,
        }
    }
}

/// What the idle loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleStep {
    /// Spin with the polling flag set for at most `limit_ns` (`u64::MAX`: until woken).
    Poll {
        /// The spin limit.
        limit_ns: u64,
        /// Stop the tick first (if it runs).
        stop_tick: bool,
    },
    /// Execute HLT (the flag is cleared just before), stopping the tick first if asked.
    Halt {
        /// Stop the tick first (if it runs).
        stop_tick: bool,
    },
}

/// One vCPU's idle loop.
#[derive(Debug, Clone)]
pub struct GuestIdle {
    path: GuestIdlePath,
    states: Vec<IdleStateParams>,
    gov: Option<AnyGovernor>,
    /// Index of the state the last step entered (cpuidle path).
    state: usize,
}

impl GuestIdle {
    /// The idle loop of one vCPU; `None` names an unknown governor.
    pub fn new(path: GuestIdlePath) -> Option<Self> {
        let (states, gov) = match &path {
            GuestIdlePath::Cpuidle { governor, params } => (
                haltpoll_driver_states().to_vec(),
                Some(governor_by_name(governor, *params)?),
            ),
            _ => (Vec::new(), None),
        };
        Some(GuestIdle {
            path,
            states,
            gov,
            state: 0,
        })
    }

    /// The path.
    pub fn path(&self) -> &GuestIdlePath {
        &self.path
    }

    /// The next step: at idle entry (`after_poll_timeout` false) or after a poll that ran
    /// out its limit.
    pub fn step(&mut self, input: &SelectInput, after_poll_timeout: bool) -> IdleStep {
        match &self.path {
            GuestIdlePath::Hlt => IdleStep::Halt { stop_tick: true },
            GuestIdlePath::IdlePoll => IdleStep::Poll {
                limit_ns: u64::MAX,
                stop_tick: false,
            },
            GuestIdlePath::PollThenHlt {
                threshold_ns,
                placement,
            } => {
                if after_poll_timeout {
                    IdleStep::Halt { stop_tick: true }
                } else {
                    IdleStep::Poll {
                        limit_ns: *threshold_ns,
                        stop_tick: placement.stops_tick_before_poll(),
                    }
                }
            }
            GuestIdlePath::Cpuidle { .. } => {
                let gov = self.gov.as_mut().expect("cpuidle path has a governor");
                let sel = gov.select(&self.states, input);
                self.state = sel.state;
                if self.states[sel.state].polling {
                    IdleStep::Poll {
                        limit_ns: gov.poll_limit_ns(&self.states, input.tick_period_ns),
                        stop_tick: sel.stop_tick,
                    }
                } else {
                    IdleStep::Halt {
                        stop_tick: sel.stop_tick,
                    }
                }
            }
        }
    }

    /// Reports the end of the last step to the governor: `residency_ns` in it, and whether a
    /// poll ran out its limit.
    pub fn reflect(&mut self, residency_ns: u64, poll_timed_out: bool) {
        if let Some(gov) = &mut self.gov {
            gov.reflect(
                &self.states,
                &Reflect {
                    state: self.state,
                    residency_ns,
                    woken_by_tick: false,
                    poll_timed_out,
                },
            );
        }
    }

    /// The haltpoll governor's current window, if that is the governor.
    pub fn haltpoll_window_ns(&self) -> Option<u64> {
        match &self.gov {
            Some(AnyGovernor::Haltpoll(h)) => Some(h.window_ns()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> SelectInput {
        SelectInput {
            sleep_length_ns: u64::MAX,
            delta_next_ns: 4_000_000,
            tick_stopped: false,
            latency_req_ns: u64::MAX,
            tick_period_ns: 4_000_000,
            utilized: true,
        }
    }

    #[test]
    fn each_path_steps_by_its_rule() {
        let mut hlt = GuestIdle::new(GuestIdlePath::Hlt).unwrap();
        assert_eq!(
            hlt.step(&input(), false),
            IdleStep::Halt { stop_tick: true }
        );
        let mut poll = GuestIdle::new(GuestIdlePath::IdlePoll).unwrap();
        assert_eq!(
            poll.step(&input(), false),
            IdleStep::Poll {
                limit_ns: u64::MAX,
                stop_tick: false
            }
        );
        for (placement, poll_stops, at_enter) in [
            (GuestPollPlacement::AfterTickStop, true, [true, false]),
            (GuestPollPlacement::BeforeTickStop, false, [false, true]),
        ] {
            let path = GuestIdlePath::PollThenHlt {
                threshold_ns: 10_000,
                placement,
            };
            // (at the entry, after the poll ran out): where tick_nohz_idle_enter() runs
            assert_eq!(
                [path.at_idle_enter(false), path.at_idle_enter(true)],
                at_enter,
                "{placement:?}"
            );
            let mut p17 = GuestIdle::new(path).unwrap();
            assert_eq!(
                p17.step(&input(), false),
                IdleStep::Poll {
                    limit_ns: 10_000,
                    stop_tick: poll_stops
                },
                "{placement:?}"
            );
            assert_eq!(p17.step(&input(), true), IdleStep::Halt { stop_tick: true });
        }
        assert!(GuestIdlePath::Hlt.at_idle_enter(false));
        assert!(!GuestIdlePath::IdlePoll.at_idle_enter(true));
        // haltpoll: window 0 → HALT; after a short halt the window is 50 µs → POLL, tick kept.
        let mut hp = GuestIdle::new(GuestIdlePath::haltpoll(HaltpollParams::default())).unwrap();
        assert_eq!(hp.step(&input(), false), IdleStep::Halt { stop_tick: true });
        hp.reflect(3_000, false);
        assert_eq!(hp.haltpoll_window_ns(), Some(50_000));
        assert_eq!(
            hp.step(&input(), false),
            IdleStep::Poll {
                limit_ns: 50_000,
                stop_tick: false
            }
        );
        assert!(hp.path().disables_host_polling());
        assert!(!GuestIdlePath::Hlt.disables_host_polling());
        assert!(
            GuestIdle::new(GuestIdlePath::Cpuidle {
                governor: "nope".into(),
                params: HaltpollParams::default()
            })
            .is_none()
        );
    }
}
