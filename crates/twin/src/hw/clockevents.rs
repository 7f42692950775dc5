//! The per-CPU clock event device in oneshot mode (e.g. `lapic-deadline`).
//!
//! The device holds one absolute deadline. Programming follows the clockevents rules: a
//! deadline already in the past fails with [`Etime`] unless forced, in which case the device
//! fires `min_delta_ns` from now; a delta beyond `max_delta_ns` is clamped, so the device fires
//! early and the handler finds nothing due; programming "never" puts the device into
//! ONESHOT_STOPPED. [`ClockEventDevice::program`] returns the instant the interrupt will
//! actually be raised, which is what the engine schedules.

use crate::engine::{NEVER, Time};

/// Device state, numbered like `/proc/timer_list`'s `mode:` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CeState {
    /// 3: oneshot, armed or idle.
    Oneshot = 3,
    /// 4: oneshot-stopped (nothing to do).
    OneshotStopped = 4,
}

/// Programming a deadline that has already passed (non-forced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Etime;

/// One CPU's clock event device.
///
/// Invariant: `fire_at == NEVER` iff `state == OneshotStopped` or nothing is armed; otherwise
/// `fire_at >= the time of the programming call + min_delta` clamped as documented.
///
/// `repr(C)`: the fields every programming touches come first, in one cache line.
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct ClockEventDevice {
    /// Absolute time the kernel asked for (`next_event`).
    pub next_event: Time,
    /// When the interrupt will be raised.
    fire_at: Time,
    /// Current state.
    pub state: CeState,
    /// Minimum programmable delta.
    pub min_delta_ns: u64,
    /// Maximum programmable delta.
    pub max_delta_ns: u64,
    /// Forced min-delta programmings (`retries` in timer_list).
    pub retries: u64,
    /// Programmings done (each costs `clockevent_program_ns`, a VM exit in a guest).
    pub programmings: u64,
}

impl ClockEventDevice {
    /// A stopped device with the given limits.
    pub(crate) fn new(min_delta_ns: u64, max_delta_ns: u64) -> Self {
        ClockEventDevice {
            min_delta_ns,
            max_delta_ns,
            next_event: NEVER,
            fire_at: NEVER,
            state: CeState::OneshotStopped,
            retries: 0,
            programmings: 0,
        }
    }

    /// Programs the device for `expires` at time `now`. Returns the fire time, or `Etime` if
    /// `expires <= now` and not `force`.
    #[inline]
    pub(crate) fn program(&mut self, expires: Time, now: Time, force: bool) -> Result<Time, Etime> {
        self.next_event = expires;
        if expires == NEVER {
            self.state = CeState::OneshotStopped;
            self.fire_at = NEVER;
            return Ok(NEVER);
        }
        self.state = CeState::Oneshot;
        if expires <= now {
            if !force {
                return Err(Etime);
            }
            self.retries += 1;
            self.programmings += 1;
            self.fire_at = now + self.min_delta_ns;
            return Ok(self.fire_at);
        }
        let delta = (expires - now).clamp(self.min_delta_ns, self.max_delta_ns);
        self.programmings += 1;
        self.fire_at = now + delta;
        Ok(self.fire_at)
    }

    /// The interrupt was taken: nothing is pending until the next programming.
    #[inline]
    pub(crate) fn fired(&mut self) {
        self.fire_at = NEVER;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programming_rules_table() {
        // (expires, now, force, expected)
        let cases: &[(Time, Time, bool, Result<Time, Etime>)] = &[
            (NEVER, 100, false, Ok(NEVER)),
            (100, 100, false, Err(Etime)),
            (99, 100, false, Err(Etime)),
            (99, 100, true, Ok(100 + 1000)),
            (100, 100, true, Ok(100 + 1000)),
            (101, 100, false, Ok(100 + 1000)), // below min delta: clamped up
            (1100, 100, false, Ok(1100)),      // exactly min delta
            (1101, 100, false, Ok(1101)),
            (100 + 5000, 100, false, Ok(100 + 5000)), // exactly max delta
            (100 + 5001, 100, false, Ok(100 + 5000)), // beyond max: fires early
        ];
        for &(expires, now, force, want) in cases {
            let mut d = ClockEventDevice::new(1000, 5000);
            assert_eq!(
                d.program(expires, now, force),
                want,
                "{expires} {now} {force}"
            );
            let stopped = want == Ok(NEVER);
            assert_eq!(d.state == CeState::OneshotStopped, stopped);
        }
    }
}
