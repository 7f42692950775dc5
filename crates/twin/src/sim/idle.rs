//! The idle loop (`do_idle` / `cpuidle_idle_call`): ask the governor, decide the tick, enter
//! a C-state (with the hardware's auto-demotion), leave it on an interrupt or a POLL timeout.

use super::{IdleStay, Running, SLOT_POLL, Sim};
use crate::engine::{NEVER, Time};
use crate::hw::energy::Activity;
use crate::kernel::cpuidle::{Governor, Reflect, SelectInput};
use crate::kernel::tick::next_event;
use ticklab_cmdline::IdleOverride;

impl Sim {
    /// Leaves the idle state at `t` (interrupt arrival); returns when the CPU executes again.
    pub(super) fn idle_wake(&mut self, c: usize, t: Time, poll_timed_out: bool) -> Time {
        let cpu = &mut self.cpus[c];
        let Some(stay) = cpu.idle.take() else {
            return t;
        };
        cpu.slots[SLOT_POLL] = NEVER;
        let residency = t.saturating_sub(stay.since);
        let req = stay.requested as usize;
        let counters = &mut cpu.cstates[req];
        counters.time_ns += residency;
        if residency < self.states[req].target_residency_ns {
            counters.above += 1;
        } else if let Some(deeper) = self.states.get(req + 1)
            && residency >= deeper.target_residency_ns
        {
            counters.below += 1;
        }
        let woken_by_tick = cpu.hrt.is_queued(cpu.tick_timer)
            && cpu.hrt.hard_expires(cpu.tick_timer) <= t
            && !cpu.ts.stopped;
        cpu.gov.reflect(
            &self.states,
            &Reflect {
                state: req,
                residency_ns: residency,
                woken_by_tick,
                poll_timed_out,
            },
        );
        if self.auto_demotion.is_some() {
            cpu.residencies[cpu.residency_idx % cpu.residencies.len()] = residency;
            cpu.residency_idx += 1;
        }
        cpu.busy_since = t;
        // The exit latency is spent leaving the state (its energy is the state's wake energy);
        // the core executes from the end of it.
        let exec = if stay.polling {
            t
        } else {
            t + self.states[stay.actual as usize].exit_latency_ns
        };
        if let Some(e) = &mut self.energy {
            e.set(c, exec, Activity::Executing);
        }
        exec
    }

    /// The hardware's auto-demotion of a requested state.
    pub(super) fn demote(&self, c: usize, requested: usize) -> usize {
        let Some(d) = &self.auto_demotion else {
            return requested;
        };
        if requested <= d.demote_to {
            return requested;
        }
        let cpu = &self.cpus[c];
        let window = (d.window as usize).min(cpu.residencies.len());
        if cpu.residency_idx < window {
            return requested;
        }
        let sum: u64 = (0..window)
            .map(|k| cpu.residencies[(cpu.residency_idx - 1 - k) % cpu.residencies.len()])
            .sum();
        if sum / window as u64 <= d.min_mean_residency_ns {
            d.demote_to
        } else {
            requested
        }
    }

    /// One iteration of the idle loop at `now`: governor, tick decision, state entry.
    pub(super) fn enter_idle(&mut self, c: usize, mut now: Time) {
        self.cpus[c].ts.inidle = true;
        self.cpus[c].running = Running::Idle;
        if self.idle_mode == IdleOverride::Poll {
            // idle=poll: restart the tick if stopped and spin; no C-state, no tick stop.
            if self.cpus[c].ts.stopped {
                now = self.tick_restart(c, now);
            }
            self.cpus[c].idle = Some(IdleStay {
                requested: 0,
                actual: 0,
                since: now,
                polling: true,
            });
            self.account_busy(c, now);
            self.cpus[c].busy_until(now);
            return;
        }
        let no_driver = self.cpuidle_off || self.states.len() <= 1;
        let gate = self.can_stop_idle_tick(c);
        // The next-event computation serves both the governor's sleep length and the stop
        // decision; the governor changes nothing it depends on.
        let ne = next_event(&self.next_event_input(c));
        let (state, stop_tick) = if no_driver {
            (self.states.len().saturating_sub(1).min(1), true)
        } else {
            let cpu = &self.cpus[c];
            let stop_target = match ne {
                Some(e) => e,
                None => cpu.hrt.hard_expires(cpu.tick_timer),
            };
            let other = cpu.hrt.next_hard_expiry_except(cpu.tick_timer);
            let delta_next = cpu.dev.next_event.saturating_sub(now);
            // A CPU that may not stop its tick reports the time to its next programmed event.
            let sleep_length = if gate {
                stop_target.min(other).saturating_sub(now)
            } else {
                delta_next
            };
            let input = SelectInput {
                sleep_length_ns: sleep_length,
                delta_next_ns: delta_next,
                tick_stopped: cpu.ts.stopped,
                latency_req_ns: u64::MAX,
                tick_period_ns: self.tick_nsec,
            };
            let states = &self.states;
            let sel = self.cpus[c].gov.select(states, &input);
            (sel.state, sel.stop_tick)
        };
        if gate && (stop_tick || self.cpus[c].ts.stopped) {
            now += self.costs.tick_stop_ns;
            self.cpus[c].ts.idle_calls += 1;
            if let Some(expires) = ne {
                self.cpus[c].ts.idle_sleeps += 1;
                now = self.tick_stop(c, expires, now);
            }
        }
        let polling = self.states[state].polling;
        let actual = if polling {
            state
        } else {
            self.demote(c, state)
        };
        let cpu = &mut self.cpus[c];
        cpu.cstates[state].usage += 1;
        cpu.idle = Some(IdleStay {
            requested: state as u8,
            actual: actual as u8,
            since: now,
            polling,
        });
        if polling {
            let limit = cpu.gov.poll_limit_ns(&self.states, self.tick_nsec);
            cpu.slots[SLOT_POLL] = now + limit.max(1);
        }
        self.account_busy(c, now);
        let act = if polling {
            Activity::Executing
        } else {
            Activity::Idle(actual as u8)
        };
        if let Some(e) = &mut self.energy {
            e.set(c, now, act);
        }
        self.cpus[c].busy_until(now);
    }

    pub(super) fn poll_timeout(&mut self, c: usize, t: Time) {
        let now = self.idle_wake(c, t, true);
        self.enter_idle(c, now);
    }
}
