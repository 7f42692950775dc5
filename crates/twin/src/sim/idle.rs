//! The idle loop (`do_idle` / `cpuidle_idle_call`): ask the governor, decide the tick, enter
//! a C-state (with the hardware's auto-demotion), leave it on an interrupt or a POLL timeout.
//!
//! The rules are the kernel modules' and the hardware's: the stay's `above`/`below` verdict
//! is [`crate::kernel::cpuidle::stay_verdict`], the sleep length the governor is told is
//! [`crate::kernel::tick_sched::get_sleep_length`], the no-driver tick rule is
//! [`crate::kernel::idle`]'s, and the executed state is [`crate::hw::auto_demotion::demote`]'s.
//! This file wires them and charges the time.

use super::observe::{Event, Observer};
use super::{IdleStay, Running, SLOT_POLL, Sim};
use crate::engine::{NEVER, Time};
use crate::hw::auto_demotion;
use crate::hw::energy::Activity;
use crate::kernel::cpuidle::{Governor, Reflect, SelectInput, stay_verdict};
use crate::kernel::idle::no_driver_state;
use crate::kernel::tick_sched::{SleepLengthInput, get_sleep_length};
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
        let verdict = stay_verdict(&self.states, req, residency);
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
            cpu.residencies.record(residency);
        }
        self.emit(
            t,
            Event::IdleLeft {
                cpu: c as u32,
                state: stay.requested,
                residency_ns: residency,
                above: verdict.above,
                below: verdict.below,
            },
        );
        // The exit latency is spent leaving the state (its energy is the state's wake energy);
        // the core executes from the end of it. On a guest with a calibrated halt-wake curve a
        // halting state's exit is the hypervisor's wake of the halted vCPU, which grows with
        // how long it was halted (`HaltWake::exit_ns`); a polling state never halts.
        let exec = if stay.polling {
            t
        } else {
            t + exit_cost(
                self.halt_wake.as_ref(),
                self.states[stay.actual as usize].exit_latency_ns,
                residency,
            )
        };
        if let Some(e) = &mut self.energy {
            e.set(c, exec, Activity::Executing);
        }
        exec
    }

    /// The state the hardware executes for a request of `requested` on `c`.
    #[inline]
    fn demote(&self, c: usize, requested: usize) -> usize {
        match &self.auto_demotion {
            Some(spec) => auto_demotion::demote(spec, &self.cpus[c].residencies, requested),
            None => requested,
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
            self.idle_poll(c, now);
            return;
        }
        let gate = self.can_stop_idle_tick(c);
        // The next-event computation serves both the governor's sleep length and the stop
        // decision; the governor changes nothing it depends on.
        let ne = self.nohz.next_event(&self.next_event_input(c));
        let (state, stop_tick) = self.select_idle_state(c, now, gate, ne);
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

    /// `idle=poll` (`cpu_idle_poll`): restart the tick if stopped and spin; no C-state, no
    /// tick stop.
    fn idle_poll(&mut self, c: usize, mut now: Time) {
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
    }

    /// The state to request and the governor's `stop_tick` wish at `now`: without a cpuidle
    /// driver the idle loop's own rule ([`crate::kernel::idle`]); with one, the governor's
    /// selection on the sleep length (`gate`: the idle-tick gate passed; `ne`: the next-event
    /// computation's answer).
    fn select_idle_state(
        &mut self,
        c: usize,
        now: Time,
        gate: bool,
        ne: Option<Time>,
    ) -> (usize, bool) {
        if self.cpuidle_off || self.states.len() <= 1 {
            let ts = &self.cpus[c].ts;
            let stop = self
                .no_driver_tick
                .stops_tick(ts.is_stopped(), ts.got_idle_tick());
            return (no_driver_state(self.states.len()), stop);
        }
        let cpu = &self.cpus[c];
        let tick = cpu.ts.sched_timer();
        let sleep = get_sleep_length(&SleepLengthInput {
            now,
            may_stop: gate,
            next_event: ne,
            tick_expires: cpu.hrt.hard_expires(tick),
            next_other_timer: cpu.hrt.next_hard_expiry_except(tick),
            next_programmed: cpu.dev.next_event,
        });
        let input = SelectInput {
            sleep_length_ns: sleep.sleep_length_ns,
            delta_next_ns: sleep.delta_next_ns,
            tick_stopped: cpu.ts.is_stopped(),
            // PM QoS (`/dev/cpu_dma_latency`): the governor picks no state slower to leave
            // than this.
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
    }

    pub(super) fn poll_timeout(&mut self, c: usize, t: Time) {
        let now = self.idle_wake(c, t, true);
        self.enter_idle(c, now);
    }
}

/// The time to leave a halting idle state after `residency_ns` in it: the machine's
/// halt-wake curve at that sleep length when it has one, else the state's own
/// `exit_latency_ns` (every machine without `[machine.halt_wake]` behaves as before).
#[inline]
fn exit_cost(
    halt_wake: Option<&ticklab_schema::machine::HaltWake>,
    exit_latency_ns: u64,
    residency_ns: u64,
) -> u64 {
    match halt_wake {
        Some(h) => h.exit_ns(residency_ns),
        None => exit_latency_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::exit_cost;
    use ticklab_schema::machine::{HaltWake, HaltWakePoint};

    #[test]
    fn a_halt_wake_curve_replaces_the_constant_exit_latency() {
        let curve = HaltWake {
            points: vec![
                HaltWakePoint {
                    slept_ns: 100_000,
                    exit_ns: 8_000,
                },
                HaltWakePoint {
                    slept_ns: 10_000_000,
                    exit_ns: 28_000,
                },
            ],
        };
        // (curve, state's latency, residency, expected exit)
        let table = [
            (None, 1_000, 0, 1_000),
            (None, 1_000, 50_000_000, 1_000),
            (Some(&curve), 1_000, 0, 8_000),
            (Some(&curve), 1_000, 5_050_000, 18_000),
            (Some(&curve), 1_000, 50_000_000, 28_000),
        ];
        for (c, lat, res, want) in table {
            assert_eq!(exit_cost(c, lat, res), want, "residency {res}");
        }
    }
}
