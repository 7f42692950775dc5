//! The menu governor (§9.3), the default cpuidle governor of NO_HZ kernels.
//!
//! # Design note
//!
//! menu predicts how long the CPU will stay idle and picks the deepest state that pays off
//! within that prediction and within the latency limit. The prediction has three parts:
//!
//! 1. **Next timer.** The sleep length (time to the next timer if the tick were stopped).
//! 2. **Correction factor.** A per-bucket running average of measured ÷ expected idle time,
//!    where the bucket is the order of magnitude of the sleep length ([`which_bucket`]). It is
//!    a fixed-point number: [`UNITY`] = 1024 × 8 means 1.0. Each update keeps 7/8 of the old
//!    value and adds 1024 × measured ÷ expected ([`updated_factor`]), so it converges on
//!    8 × 1024 × the average ratio.
//! 3. **Typical interval.** If the last 8 measured idle durations cluster (standard deviation
//!    ≤ 20 µs, or mean > 6 × standard deviation with at least 6 samples left), their mean caps
//!    the prediction. Upper outliers are dropped one value at a time, down to three quarters
//!    of the samples ([`typical_interval_us`]).
//!
//! The tick decision follows: the tick is kept when the choice is POLL or the prediction is
//! shorter than a tick, and the state is then stepped down until it fits before the next
//! programmed event (`delta_next`, which includes the tick). With the tick already stopped a
//! short prediction is distrusted and `delta_next` used instead, so that a CPU is not left in
//! a shallow state for a long tickless sleep.
//!
//! This is the behaviour of the ~5.4–5.10 kernels without I/O-wait buckets or the performance
//! multiplier (their effect vanishes with no I/O waiters: the latency limit becomes
//! `min(PM QoS, predicted)` while the tick runs). The 6.x rewrite that skips reading the
//! sleep length when the typical interval is short is not modelled. Like the kernel, a fresh
//! [`Menu`] has an all-zero interval history, so its first predictions are 0 and it polls
//! until eight idle periods have been recorded.
//!
//! # Files
//!
//! * `correction.rs`: part 2, the correction factors ([`which_bucket`], [`updated_factor`],
//!   [`scale_by_factor`]).
//! * `interval.rs`: part 3, the typical interval of the history ([`typical_interval_us`]) and
//!   the incremental history that computes it on every idle entry without a division.
//! * this file: the governor, [`Menu`]: the prediction and the state and tick decision.
//! * `tests.rs`: the governor's selection and reflection tables.

mod correction;
mod interval;

pub use correction::{
    BUCKETS, DECAY, MAX_INTERESTING_NS, RESOLUTION, UNITY, scale_by_factor, updated_factor,
    which_bucket,
};
pub use interval::{INTERVALS, TYPICAL_MAX_VARIANCE_US2, typical_interval_us};

use super::governor::{Governor, IdleStateParams, Reflect, SelectInput, Selection};
use interval::History;

/// Per-CPU state of the menu governor.
#[derive(Clone, Debug)]
pub struct Menu {
    correction: [u32; BUCKETS],
    /// Last measured idle durations in µs.
    history: History,
    /// Bucket and sleep length of the last selection, used by the next reflect.
    bucket: usize,
    next_timer_ns: u64,
    tick_period_ns: u64,
}

impl Default for Menu {
    fn default() -> Self {
        Self::new()
    }
}

impl Menu {
    /// A governor as enabled on a CPU: correction factors 1.0, empty (all-zero) history.
    pub fn new() -> Self {
        Menu {
            correction: [UNITY as u32; BUCKETS],
            history: History::new([0; INTERVALS]),
            bucket: 0,
            next_timer_ns: 0,
            tick_period_ns: 0,
        }
    }

    /// The correction factors (fixed point, [`UNITY`] = 1.0), by bucket.
    pub fn correction_factors(&self) -> &[u32; BUCKETS] {
        &self.correction
    }

    /// The interval history in µs (a ring; order is not meaningful).
    pub fn intervals_us(&self) -> &[u32; INTERVALS] {
        self.history.ring()
    }

    /// The idle duration menu would predict for `sleep_length_ns`: the corrected sleep length,
    /// capped by the typical interval.
    pub fn predict_ns(&self, sleep_length_ns: u64) -> u64 {
        let corrected = scale_by_factor(
            sleep_length_ns,
            self.correction[which_bucket(sleep_length_ns)],
        );
        match self.history.typical_us() {
            Some(us) => corrected.min(u64::from(us) * 1_000),
            None => corrected,
        }
    }
}

impl Governor for Menu {
    fn name(&self) -> &'static str {
        "menu"
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        let sleep = input.sleep_length_ns;
        let tick = input.tick_period_ns;
        self.next_timer_ns = sleep;
        self.tick_period_ns = tick;
        self.bucket = which_bucket(sleep);

        let Some(first) = states.first() else {
            return Selection {
                state: 0,
                stop_tick: true,
            };
        };
        // State 0 will be used no matter what: return it, keeping the tick if it polls.
        let shallow_only = states.len() == 1
            || input.latency_req_ns == 0
            || ((sleep < states[1].target_residency_ns
                || input.latency_req_ns < states[1].exit_latency_ns)
                && !first.disabled);
        if shallow_only {
            return Selection {
                state: 0,
                stop_tick: !first.polling,
            };
        }

        let mut predicted = self.predict_ns(sleep);
        let mut latency_req = input.latency_req_ns;
        if input.tick_stopped {
            if predicted < tick {
                predicted = input.delta_next_ns;
            }
        } else {
            latency_req = latency_req.min(predicted);
        }

        let mut chosen: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if s.disabled {
                continue;
            }
            let current = *chosen.get_or_insert(i);
            if s.target_residency_ns > predicted {
                // Prefer a real state to busy polling if a timer is due late enough.
                if states[current].polling
                    && s.exit_latency_ns <= latency_req
                    && s.target_residency_ns <= sleep
                {
                    predicted = s.target_residency_ns;
                    chosen = Some(i);
                    break;
                }
                if predicted < tick {
                    break;
                }
                if !input.tick_stopped {
                    // Shallow so far: keep the tick and let the next iteration decide.
                    predicted = states[current].target_residency_ns;
                    break;
                }
                // Tick stopped: don't get stuck shallow if this state fits the next event.
                let state = if states[current].target_residency_ns < tick
                    && s.target_residency_ns <= input.delta_next_ns
                {
                    i
                } else {
                    current
                };
                return Selection {
                    state,
                    stop_tick: true,
                };
            }
            if s.exit_latency_ns > latency_req {
                break;
            }
            chosen = Some(i);
        }
        let mut state = chosen.unwrap_or(0);

        let mut stop_tick = true;
        if (states[state].polling || predicted < tick) && !input.tick_stopped {
            stop_tick = false;
            // The tick stays: step down to a state that fits before the next event.
            if state > 0 && states[state].target_residency_ns > input.delta_next_ns {
                for i in (0..state).rev() {
                    if states[i].disabled {
                        continue;
                    }
                    state = i;
                    if states[i].target_residency_ns <= input.delta_next_ns {
                        break;
                    }
                }
            }
        }
        Selection { state, stop_tick }
    }

    fn reflect(&mut self, states: &[IdleStateParams], r: &Reflect) {
        let target = &states[r.state];
        let measured = if r.woken_by_tick && self.next_timer_ns > self.tick_period_ns {
            // nohz promised no event within the tick, yet the tick woke us: the tick was not
            // stopped after all, so the CPU might have slept long. Count it as long.
            9 * MAX_INTERESTING_NS / 10
        } else if target.polling && r.poll_timed_out {
            // A better prediction would have slept until the timer.
            self.next_timer_ns
        } else if r.residency_ns > target.exit_latency_ns.saturating_mul(2) {
            r.residency_ns - target.exit_latency_ns
        } else {
            // Too short to have really reached the state: assume no exit latency was paid.
            r.residency_ns / 2
        };
        let measured = measured.min(self.next_timer_ns);
        let factor = &mut self.correction[self.bucket];
        *factor = updated_factor(*factor, measured, self.next_timer_ns);
        self.history
            .push(u32::try_from(measured / 1_000).unwrap_or(u32::MAX));
    }
}

#[cfg(test)]
mod tests;
