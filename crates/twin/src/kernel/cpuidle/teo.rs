//! The teo governor ("timer events oriented", §9.3), as in Linux 6.6.
//!
//! # Design note
//!
//! Which version: the rules below follow the upstream `teo.c` of the 6.3 – 6.10 series (read
//! at torvalds/linux commit 04bae4e2): util-awareness (added in 6.3) and the nine "recent"
//! intercepts (dropped in a later rework) are both present. We name Linux 6.6, the long-term
//! release of that series, as the modelled version. Older (5.1 – 6.2) and newer teo differ.
//!
//! The idea: timers are the commonest wakeup, and the time to the next one (the sleep length)
//! is known. teo starts from the deepest enabled state whose target residency fits the sleep
//! length and moves shallower only if the past says the CPU is usually woken earlier by
//! something else.
//!
//! * **Bins.** Bin `i` covers idle durations from state `i`'s target residency up to state
//!   `i + 1`'s (the last bin is open). Each bin keeps two decayed metrics, `hits` (the measured
//!   idle duration fell in the same bin as the sleep length) and `intercepts` (it fell in a
//!   shallower bin: something woke the CPU early), and `recent`: how many of the last
//!   [`NR_RECENT`] wakeups were intercepts in that bin.
//! * **Update** (after every wakeup, [`Teo::reflect`]): every metric loses an eighth
//!   (`DECAY_SHIFT` 3); the bin of the sleep length and the bin of the measured duration (the
//!   residency minus half the state's exit latency) are found; equal bins add [`PULSE`] to that
//!   bin's hits, different bins add it to the measured bin's intercepts and count it as recent.
//!   A wakeup by a safety net (POLL ran out of time, or the tick woke a CPU whose sleep length
//!   was longer than a tick) is taken as "idle for the whole sleep length": a hit.
//! * **Select** ([`Teo::select`]): the candidate is the deepest enabled state with target
//!   residency ≤ sleep length (and within the latency limit). If the intercepts below it
//!   outweigh the hits and intercepts from it upward, or more than half of the recent wakeups
//!   were intercepts below it, teo walks shallower and takes the deepest state below which more
//!   than half of those intercepts lie (skipping states whose bin middle is shorter than a
//!   tick when the tick is already stopped). A utilised CPU (scheduler utilisation above 1/64
//!   of capacity) takes the next shallower non-polling state instead; with only two states and
//!   a utilised CPU, state 1 unless state 0 is a usable non-polling state.
//! * **Tick:** the tick may be stopped unless the chosen state polls or the expected duration
//!   is shorter than a tick; when it is kept, a state whose target residency exceeds the time
//!   to the next programmed event is swapped for a shallower one that fits.
//!
//! Modelling choices: the kernel updates the metrics at the start of the next selection; here
//! [`Teo::reflect`] does it at once (same data, same order). The CPU's utilisation comes from
//! the caller ([`SelectInput::utilized`]).

use super::governor::{
    CPUIDLE_STATE_MAX, Governor, IdleStateParams, Reflect, SelectInput, Selection,
};

/// Added to a metric when it grows.
pub const PULSE: u32 = 1024;
/// Metrics lose `1 >> DECAY_SHIFT` of their value at every update.
pub const DECAY_SHIFT: u32 = 3;
/// Recent wakeups that count for early-wakeup pattern detection.
pub const NR_RECENT: usize = 9;

/// `recent_idx` entry of a wake that was a hit.
const NO_BIN: u8 = u8::MAX;

/// Per-CPU state of the teo governor. The metrics are kept as parallel arrays (not one struct
/// per bin) so that the governor is no larger than menu inside the per-CPU governor enum.
///
/// Invariant: `total` is the sum of every bin's hits and intercepts after the last update, and
/// each bin's `recent` equals the number of `recent_idx` entries naming it.
#[derive(Clone, Debug)]
pub struct Teo {
    hits: [u32; CPUIDLE_STATE_MAX],
    intercepts: [u32; CPUIDLE_STATE_MAX],
    recent: [u8; CPUIDLE_STATE_MAX],
    /// The bins of the last [`NR_RECENT`] intercepts ([`NO_BIN`] for a hit).
    recent_idx: [u8; NR_RECENT],
    next_recent: u8,
    total: u32,
    /// Sleep length at the last selection.
    sleep_length_ns: u64,
    tick_period_ns: u64,
}

impl Default for Teo {
    fn default() -> Self {
        Self::new()
    }
}

impl Teo {
    /// A governor as enabled on a CPU: every metric 0.
    pub fn new() -> Self {
        Teo {
            hits: [0; CPUIDLE_STATE_MAX],
            intercepts: [0; CPUIDLE_STATE_MAX],
            recent: [0; CPUIDLE_STATE_MAX],
            recent_idx: [NO_BIN; NR_RECENT],
            next_recent: 0,
            total: 0,
            sleep_length_ns: u64::MAX,
            tick_period_ns: 0,
        }
    }

    /// The (hits, intercepts, recent) of bin `i` (for tests and tables).
    pub fn bin(&self, i: usize) -> (u32, u32, u32) {
        (self.hits[i], self.intercepts[i], u32::from(self.recent[i]))
    }

    /// Middle of bin `i`: halfway between state `i`'s and state `i + 1`'s target residency.
    fn middle_of_bin(states: &[IdleStateParams], i: usize) -> u64 {
        (states[i].target_residency_ns + states[i + 1].target_residency_ns) / 2
    }

    /// The deepest enabled state shallower than `idx` whose target residency fits
    /// `duration_ns`, or the shallowest enabled one tried (`no_poll` skips polling states).
    fn find_shallower(
        states: &[IdleStateParams],
        mut idx: usize,
        duration_ns: u64,
        no_poll: bool,
    ) -> usize {
        for i in (0..idx).rev() {
            if states[i].disabled || (no_poll && states[i].polling) {
                continue;
            }
            idx = i;
            if states[i].target_residency_ns <= duration_ns {
                break;
            }
        }
        idx
    }

    /// The metrics update after a wakeup from `state` with measured time `measured_ns`
    /// (`u64::MAX` = idle for the whole sleep length).
    fn update(&mut self, states: &[IdleStateParams], state: usize, span_ns: u64, residency: u64) {
        let measured = if span_ns >= self.sleep_length_ns {
            u64::MAX
        } else {
            let lat = states[state].exit_latency_ns;
            if residency >= lat {
                residency - lat / 2
            } else {
                residency / 2
            }
        };
        self.total = 0;
        let (mut idx_timer, mut idx_duration) = (0, 0);
        for (i, s) in states.iter().enumerate().take(CPUIDLE_STATE_MAX) {
            self.hits[i] -= self.hits[i] >> DECAY_SHIFT;
            self.intercepts[i] -= self.intercepts[i] >> DECAY_SHIFT;
            self.total += self.hits[i] + self.intercepts[i];
            if s.target_residency_ns <= self.sleep_length_ns {
                idx_timer = i;
                if s.target_residency_ns <= measured {
                    idx_duration = i;
                }
            }
        }
        let slot = usize::from(self.next_recent);
        self.next_recent = ((slot + 1) % NR_RECENT) as u8;
        let old = self.recent_idx[slot];
        if old != NO_BIN {
            self.recent[usize::from(old)] -= 1;
        }
        if idx_timer == idx_duration {
            self.hits[idx_timer] += PULSE;
            self.recent_idx[slot] = NO_BIN;
        } else {
            self.intercepts[idx_duration] += PULSE;
            self.recent[idx_duration] += 1;
            self.recent_idx[slot] = idx_duration as u8;
        }
        self.total += PULSE;
        debug_assert_eq!(
            self.recent.iter().map(|&r| usize::from(r)).sum::<usize>(),
            self.recent_idx.iter().filter(|&&b| b != NO_BIN).count(),
            "recent counts match the ring"
        );
    }

    /// The intercepts correction of `teo_select`: when the CPU was woken before the
    /// candidate `idx`'s bin often enough (by the intercepts or the recent ones, `sums` being
    /// their totals below `idx`), walk to a shallower state whose bin holds the majority and
    /// that the tick allows (`time_ok`). Returns the state and the duration now expected.
    fn intercepts_pick(
        &self,
        states: &[IdleStateParams],
        mut idx: usize,
        mut duration: u64,
        sums: BinSums,
        time_ok: impl Fn(u64) -> bool,
    ) -> (usize, u64) {
        let alt_intercepts = 2 * sums.intercepts > self.total.saturating_sub(sums.hits);
        let alt_recent = sums.recent > (NR_RECENT / 2) as u32;
        if alt_recent || alt_intercepts {
            let mut first_span = duration;
            let mut first_idx = idx;
            let (mut isum, mut rsum) = (0u32, 0u32);
            for i in (0..idx).rev() {
                isum += self.intercepts[i];
                rsum += u32::from(self.recent[i]);
                let span = Self::middle_of_bin(states, i);
                if (!alt_recent || 2 * rsum > sums.recent)
                    && (!alt_intercepts || 2 * isum > sums.intercepts)
                {
                    if time_ok(span) && !states[i].disabled {
                        idx = i;
                        duration = span;
                    } else {
                        idx = first_idx;
                        duration = first_span;
                    }
                    break;
                }
                if states[i].disabled {
                    continue;
                }
                if !time_ok(span) {
                    if first_idx != idx {
                        continue;
                    }
                    break;
                }
                first_span = span;
                first_idx = i;
            }
        }
        (idx, duration)
    }
}

/// The intercepts, hits and recent intercepts of the bins below a candidate state.
#[derive(Clone, Copy, Debug)]
struct BinSums {
    intercepts: u32,
    hits: u32,
    recent: u32,
}

impl Governor for Teo {
    fn name(&self) -> &'static str {
        "teo"
    }

    fn select(&mut self, states: &[IdleStateParams], input: &SelectInput) -> Selection {
        let tick = input.tick_period_ns;
        self.tick_period_ns = tick;
        self.sleep_length_ns = input.sleep_length_ns;
        let time_ok = |ns: u64| !input.tick_stopped || ns >= tick;
        let keep = |state| Selection {
            state,
            stop_tick: false,
        };
        let mut duration = input.sleep_length_ns;
        if states.len() < 2 {
            return keep(0);
        }
        let mut idx: Option<usize> = None;
        if !states[0].disabled {
            idx = Some(0);
            if states[1].target_residency_ns > duration {
                return keep(0);
            }
        }
        let n = states.len().min(CPUIDLE_STATE_MAX);
        let idx = 'pick: {
            if n < 3 && input.utilized {
                // Utilised with two states: assume a short idle period.
                duration = Self::middle_of_bin(states, 0);
                if (idx == Some(0) && !states[0].polling && time_ok(duration)) || states[1].disabled
                {
                    return keep(0);
                }
                break 'pick 1;
            }
            let (mut intercept_sum, mut hit_sum, mut recent_sum) = (0u32, 0u32, 0u32);
            let (mut idx_intercept_sum, mut idx_hit_sum, mut idx_recent_sum) = (0, 0, 0);
            let mut idx0 = 0;
            let mut constraint_idx = 0;
            for (i, s) in states.iter().enumerate().take(n).skip(1) {
                intercept_sum += self.intercepts[i - 1];
                hit_sum += self.hits[i - 1];
                recent_sum += u32::from(self.recent[i - 1]);
                if s.disabled {
                    continue;
                }
                if idx.is_none() {
                    idx = Some(i);
                    idx0 = i;
                }
                if s.target_residency_ns > duration {
                    break;
                }
                idx = Some(i);
                if s.exit_latency_ns <= input.latency_req_ns {
                    constraint_idx = i;
                }
                idx_intercept_sum = intercept_sum;
                idx_hit_sum = hit_sum;
                idx_recent_sum = recent_sum;
            }
            let Some(mut idx) = idx else {
                return keep(0);
            };
            if idx == idx0 {
                // The first enabled state: the tick may stay if it is shallow.
                duration = states[idx].target_residency_ns;
                break 'pick idx;
            }
            let sums = BinSums {
                intercepts: idx_intercept_sum,
                hits: idx_hit_sum,
                recent: idx_recent_sum,
            };
            (idx, duration) = self.intercepts_pick(states, idx, duration, sums, time_ok);
            if idx > constraint_idx {
                idx = constraint_idx;
            }
            if input.utilized {
                let i = Self::find_shallower(states, idx, duration, true);
                let span = Self::middle_of_bin(states, i);
                if time_ok(span) {
                    idx = i;
                    duration = span;
                }
            }
            idx
        };
        if (!states[idx].polling && duration >= tick) || input.tick_stopped {
            return Selection {
                state: idx,
                stop_tick: true,
            };
        }
        let first_enabled = (0..n).find(|&i| !states[i].disabled).unwrap_or(0);
        let idx = if idx > first_enabled && states[idx].target_residency_ns > input.delta_next_ns {
            Self::find_shallower(states, idx, input.delta_next_ns, false)
        } else {
            idx
        };
        keep(idx)
    }

    fn reflect(&mut self, states: &[IdleStateParams], r: &Reflect) {
        let safety_net =
            r.poll_timed_out || (r.woken_by_tick && self.sleep_length_ns > self.tick_period_ns);
        let span = if safety_net {
            self.sleep_length_ns
        } else {
            r.residency_ns
        };
        self.update(states, r.state, span, r.residency_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TICK, skx};
    use super::super::haltpoll_driver_states;
    use super::*;

    fn input(sleep: u64, delta_next: u64, tick_stopped: bool, utilized: bool) -> SelectInput {
        SelectInput {
            sleep_length_ns: sleep,
            delta_next_ns: delta_next,
            tick_stopped,
            latency_req_ns: u64::MAX,
            tick_period_ns: TICK,
            utilized,
        }
    }

    fn woke(g: &mut Teo, states: &[IdleStateParams], state: usize, residency: u64) {
        g.reflect(
            states,
            &Reflect {
                state,
                residency_ns: residency,
                woken_by_tick: false,
                poll_timed_out: false,
            },
        );
    }

    fn sel(state: usize, stop_tick: bool) -> Selection {
        Selection { state, stop_tick }
    }

    /// A fresh governor picks states by the sleep length alone (the kernel's step 1 and 3).
    #[test]
    fn fresh_governor_follows_the_sleep_length() {
        let s = skx(); // POLL 0, C1 2 µs, C1E 20 µs, C6 600 µs (target residencies)
        // (sleep length, delta_next, tick stopped, expected)
        let table = [
            // Sleep shorter than C1's residency: POLL, tick kept.
            (1_000, TICK, false, sel(0, false)),
            // C1 fits (C1E does not): a 5 µs duration is shorter than a tick → keep it.
            (5_000, TICK, false, sel(1, false)),
            (100_000, TICK, false, sel(2, false)),
            // C6 fits but 600 µs < 1 ms tick: tick kept, C6 fits delta_next.
            (700_000, TICK, false, sel(3, false)),
            // C6 with a long sleep: the tick may stop.
            (10 * TICK, TICK, false, sel(3, true)),
            // Tick kept and C6 beyond the next tick event: step down to what fits.
            (700_000, 300_000, false, sel(2, false)),
            // Tick already stopped: stop_tick says true whatever the state.
            (5_000, TICK, true, sel(1, true)),
        ];
        for (sleep, dn, stopped, want) in table {
            let mut g = Teo::new();
            assert_eq!(
                g.select(&s, &input(sleep, dn, stopped, false)),
                want,
                "sleep {sleep}"
            );
        }
    }

    /// Hits and intercepts as the kernel counts them: decay by 1/8, PULSE to one bin.
    #[test]
    fn update_counts_hits_and_intercepts() {
        let s = skx();
        let mut g = Teo::new();
        g.select(&s, &input(10 * TICK, TICK, false, false));
        // Woken after 1 ms by a timer-like event: sleep 10 ms and 1 ms both in C6's bin → hit.
        woke(&mut g, &s, 3, TICK);
        assert_eq!(g.bin(3), (PULSE, 0, 0));
        g.select(&s, &input(10 * TICK, TICK, false, false));
        // Woken after 5 µs, less than C6's exit latency: measured = half, 2.5 µs, C1's bin
        // (2 µs ≤ 2.5 µs < 20 µs) → an intercept in bin 1, counted as recent.
        woke(&mut g, &s, 3, 5_000);
        assert_eq!(g.bin(3), (PULSE - (PULSE >> DECAY_SHIFT), 0, 0));
        assert_eq!(g.bin(1), (0, PULSE, 1));
        // A POLL timeout is a safety net: counted as a hit in the sleep length's bin.
        g.select(&s, &input(10 * TICK, TICK, false, false));
        g.reflect(
            &s,
            &Reflect {
                state: 0,
                residency_ns: 50_000,
                woken_by_tick: false,
                poll_timed_out: true,
            },
        );
        assert_eq!(g.bin(1).2, 1, "no new recent intercept");
        assert!(g.bin(3).0 > PULSE, "hit added to the timer bin");
    }

    /// Step 2: intercepts dominate → walk shallower to where more than half of them lie.
    #[test]
    fn intercepts_move_the_choice_shallower() {
        let s = skx();
        let mut g = Teo::new();
        // Long sleep lengths, but woken every time after 100 µs: measured 100 - 133/2 µs would
        // be negative, so half of it, 50 µs: C1E's bin. Intercepts.
        for _ in 0..20 {
            g.select(&s, &input(10 * TICK, TICK, false, false));
            woke(&mut g, &s, 3, 100_000);
        }
        // Candidate C6 (sleep 10 ms) → intercepts in bin 2 dominate → C1E; duration is the
        // middle of C1E's bin (310 µs) < tick → tick kept.
        assert_eq!(
            g.select(&s, &input(10 * TICK, TICK, false, false)),
            sel(2, false)
        );
        // With the tick already stopped, a state whose bin middle is under a tick is not
        // "time ok": teo stays with the candidate.
        assert_eq!(
            g.select(&s, &input(10 * TICK, TICK, true, false)),
            sel(3, true)
        );
    }

    /// Util-awareness: a utilised CPU takes a shallower non-polling state.
    #[test]
    fn utilised_cpu_goes_shallower() {
        let s = skx();
        let mut g = Teo::new();
        // Candidate C6 with a long sleep; utilised → the next shallower non-polling state
        // whose residency fits the duration: C1E (20 µs ≤ 10 ms); its bin middle 310 µs.
        assert_eq!(
            g.select(&s, &input(10 * TICK, TICK, false, true)),
            sel(2, false)
        );
        // The haltpoll driver's two states: utilised → state 1 (HLT), the tick may stop only
        // per the end rule: duration = middle of bin 0 = 0.5 µs < tick → kept.
        let hp = haltpoll_driver_states();
        let mut g = Teo::new();
        assert_eq!(
            g.select(&hp, &input(10 * TICK, TICK, false, true)),
            sel(1, false)
        );
        // Not utilised: the candidate is state 1 (fits the 10 ms sleep), a long duration:
        // the tick may stop.
        assert_eq!(
            g.select(&hp, &input(10 * TICK, TICK, false, false)),
            sel(1, true)
        );
        // Sleep shorter than state 1's 1 µs residency: POLL.
        assert_eq!(g.select(&hp, &input(500, TICK, false, true)), sel(0, false));
    }

    #[test]
    fn recent_ring_forgets_after_nr_recent() {
        let s = skx();
        let mut g = Teo::new();
        for _ in 0..NR_RECENT {
            g.select(&s, &input(10 * TICK, TICK, false, false));
            woke(&mut g, &s, 3, 100_000);
        }
        assert_eq!(g.bin(2).2, NR_RECENT as u32);
        for _ in 0..NR_RECENT {
            g.select(&s, &input(10 * TICK, TICK, false, false));
            woke(&mut g, &s, 3, 5 * TICK);
        }
        assert_eq!(g.bin(2).2, 0, "hits pushed every intercept out of the ring");
    }
}
