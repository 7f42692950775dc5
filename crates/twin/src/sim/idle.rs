//! The idle loop (`do_idle` / `cpuidle_idle_call`): ask the governor, decide the tick, enter
//! a C-state (with the hardware's auto-demotion), leave it on an interrupt or a POLL timeout.

use super::observe::{Event, Observer};
use super::{IdleStay, Running, SLOT_POLL, Sim};
use crate::engine::{NEVER, Time};
use crate::hw::energy::Activity;
use crate::kernel::cpuidle::{Governor, Reflect, SelectInput};
use ticklab_cmdline::IdleOverride;

impl<O: Observer> Sim<O> {
    /// Leaves the idle state at `t` (interrupt arrival); returns when the CPU executes again.
    pub(super) fn idle_wake(&mut self, c: usize, t: Time, poll_timed_out: bool) -> Time {
        let cpu = &mut self.cpus[c];
        let Some(stay) = cpu.idle.take() else {
            return t;
        };
        cpu.slots[SLOT_POLL] = NEVER;
        let residency = t.saturating_sub(stay.since);
        let req = stay.requested as usize;
        // cpuidle's `above`/`below`: too short for the state, or long enough for a deeper one.
        let above = residency < self.states[req].target_residency_ns;
        let below = !above
            && self
                .states
                .get(req + 1)
                .is_some_and(|deeper| residency >= deeper.target_residency_ns);
        let woken_by_tick = cpu.ts.woke_at(&cpu.hrt, t);
        cpu.ts.idle_pass_ended(woken_by_tick);
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
        self.emit(
            t,
            Event::IdleLeft {
                cpu: c as u32,
                state: stay.requested,
                residency_ns: residency,
                above,
                below,
            },
        );
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
        if self.cpus[c].running != Running::Idle {
            now = self.calc_load_account_idle(c, now);
            self.cpus[c].running = Running::Idle;
            self.emit(
                now,
                Event::TaskSwitched {
                    cpu: c as u32,
                    to: Running::Idle,
                },
            );
        }
        if self.idle_mode == IdleOverride::Poll {
            // idle=poll: restart the tick if stopped and spin; no C-state, no tick stop.
            if self.cpus[c].ts.is_stopped() {
                now = self.tick_restart(c, now);
            }
            self.cpus[c].idle = Some(IdleStay {
                requested: 0,
                actual: 0,
                since: now,
                polling: true,
            });
            self.emit(
                now,
                Event::IdleEntered {
                    cpu: c as u32,
                    state: 0,
                    actual: 0,
                    idle_poll: true,
                },
            );
            self.cpus[c].busy_until(now);
            return;
        }
        let no_driver = self.cpuidle_off || self.states.len() <= 1;
        let gate = self.can_stop_idle_tick(c);
        // The next-event computation serves both the governor's sleep length and the stop
        // decision; the governor changes nothing it depends on.
        let ne = self.nohz.next_event(&self.next_event_input(c));
        let (state, stop_tick) = if no_driver {
            let ts = &self.cpus[c].ts;
            let stop = self
                .no_driver_tick
                .stops_tick(ts.is_stopped(), ts.got_idle_tick());
            (self.states.len().saturating_sub(1).min(1), stop)
        } else {
            let cpu = &self.cpus[c];
            let tick = cpu.ts.sched_timer();
            let stop_target = match ne {
                Some(e) => e,
                None => cpu.hrt.hard_expires(tick),
            };
            let other = cpu.hrt.next_hard_expiry_except(tick);
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
                tick_stopped: cpu.ts.is_stopped(),
                // PM QoS (`/dev/cpu_dma_latency`): the governor picks no state slower to
                // leave than this.
                latency_req_ns: self.latency_req_ns,
                tick_period_ns: self.tick_nsec,
                // PELT utilisation is not modelled by the event loop: teo's util-awareness
                // does not fire here (docs/model.md).
                utilized: false,
            };
            let states = &self.states;
            let sel = self.cpus[c].gov.select(states, &input);
            // PM QoS: a limit of 0 leaves state 0 only, whatever the governor (each governor
            // applies a non-zero limit by its own rule: haltpoll, as in the kernel, ignores it).
            debug_assert!(
                self.latency_req_ns != 0 || sel.state == 0,
                "{} picked state {} under a PM QoS limit of 0",
                self.cpus[c].gov.name(),
                sel.state
            );
            (sel.state, sel.stop_tick)
        };
        if gate && (self.nohz.idle_stops_tick(stop_tick) || self.cpus[c].ts.is_stopped()) {
            now += self.costs.tick_stop_ns;
            if let Some(expires) = ne {
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
        self.emit(
            now,
            Event::IdleEntered {
                cpu: c as u32,
                state: state as u8,
                actual: actual as u8,
                idle_poll: false,
            },
        );
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
