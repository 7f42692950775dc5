//! Tests of the menu governor: state and tick selection tables, reflection, and learning a
//! periodic wakeup.

use super::super::fixtures::{TICK, skx};
use super::*;

/// Intervals with no typical value (checked in `interval`'s `typical_table`).
pub(super) const SPREAD: [u32; INTERVALS] =
    [1_000, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000];

fn menu_with(intervals: [u32; INTERVALS]) -> Menu {
    Menu {
        history: History::new(intervals),
        ..Menu::new()
    }
}

fn input(sleep: u64, delta_next: u64, tick_stopped: bool, latency: u64) -> SelectInput {
    SelectInput {
        sleep_length_ns: sleep,
        delta_next_ns: delta_next,
        tick_stopped,
        latency_req_ns: latency,
        tick_period_ns: TICK,
        utilized: false,
    }
}

fn sel(state: usize, stop_tick: bool) -> Selection {
    Selection { state, stop_tick }
}
type SelectCase<'a> = (
    &'a [IdleStateParams],
    u64,
    u64,
    bool,
    u64,
    Selection,
    &'a str,
);
#[test]
fn select_table() {
    let s = skx();
    let mut c1e_off = skx();
    c1e_off[2].disabled = true;
    let mut poll_off = skx();
    poll_off[0].disabled = true;
    let max = u64::MAX;
    // (states, sleep, delta_next, tick_stopped, latency, expected, why)
    #[rustfmt::skip]
    let table: &[SelectCase] = &[
        (&s, 1_999, TICK, false, max, sel(0, false), "sleep below C1 residency: POLL"),
        (&s, 2_000, TICK, false, max, sel(1, false), "residency == predicted fits"),
        (&s, 100_000, TICK, false, 0, sel(0, false), "latency 0: POLL only"),
        (&s, 100_000, TICK, false, 1_999, sel(0, false), "latency below C1 exit"),
        (&s, 100_000, TICK, false, 2_000, sel(1, false), "latency == C1 exit"),
        (&s, 100_000, TICK, false, 10_000, sel(2, false), "latency == C1E exit"),
        (&s, 100_000, TICK, false, 9_999, sel(1, false), "latency just below C1E exit"),
        (&s, 100_000, TICK, false, max, sel(2, false), "C6 residency too long"),
        (&s, 5 * TICK, 5 * TICK, false, max, sel(3, true), "long sleep: deepest, stop"),
        (&s, TICK, TICK, false, max, sel(3, true), "predicted == tick: stop"),
        (&s, TICK - 1, TICK - 1, false, max, sel(3, false), "predicted < tick: keep"),
        (&s, TICK - 1, 600_000, false, max, sel(3, false), "C6 fits delta_next exactly"),
        (&s, TICK - 1, 599_999, false, max, sel(2, false), "step down to fit delta_next"),
        (&c1e_off, 100_000, TICK, false, max, sel(1, false), "disabled C1E skipped"),
        (&c1e_off, TICK - 1, 500_000, false, max, sel(1, false), "step-down skips C1E"),
        (&poll_off, 1_999, TICK, false, max, sel(1, false), "POLL disabled: C1 anyway"),
        (&s, 5 * TICK, 5 * TICK, true, max, sel(3, true), "tick stopped"),
        (&s, 5 * TICK, 5 * TICK, false, 133_000, sel(3, true), "latency == C6 exit"),
        (&s, 5 * TICK, 5 * TICK, false, 132_999, sel(2, true), "latency caps at C1E"),
        (&s, max, max, true, max, sel(3, true), "no timer at all"),
    ];
    for &(states, sleep, delta_next, stopped, latency, want, what) in table {
        let mut m = menu_with(SPREAD);
        let got = m.select(states, &input(sleep, delta_next, stopped, latency));
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn all_states_disabled_falls_back_to_state_zero() {
    let states: Vec<_> = skx().into_iter().map(|s| s.with_disabled(true)).collect();
    let mut m = menu_with(SPREAD);
    let got = m.select(&states, &input(5 * TICK, 5 * TICK, false, u64::MAX));
    // Nothing is enabled: state 0, and since it polls the tick is kept.
    assert_eq!(got, sel(0, false));
}

#[test]
fn prefer_a_real_state_over_polling() {
    let states = [
        IdleStateParams::poll(),
        IdleStateParams::new("C1", 1_000, 2_000),
    ];
    // Typical interval 1 µs → predicted 1 µs, below C1's residency.
    for (sleep, want) in [(2_000, sel(1, false)), (1_999, sel(0, false))] {
        let mut m = menu_with([1; INTERVALS]);
        let got = m.select(&states, &input(sleep, TICK, false, u64::MAX));
        assert_eq!(got, want, "sleep {sleep}");
    }
    // Latency limit (min(QoS, predicted) = 1 µs) admits C1's 1 µs exit exactly.
    let mut strict = states.clone();
    strict[1].exit_latency_ns = 1_001;
    let mut m = menu_with([1; INTERVALS]);
    assert_eq!(
        m.select(&strict, &input(100_000, TICK, false, u64::MAX)),
        sel(0, false)
    );
}

#[test]
fn stopped_tick_distrusts_short_predictions() {
    let s = skx();
    // Typical 1 µs would pick POLL with a running tick...
    let mut m = menu_with([1; INTERVALS]);
    assert_eq!(
        m.select(&s, &input(5 * TICK, TICK, false, u64::MAX)),
        sel(0, false)
    );
    // ...but with the tick stopped the time to the next event is used instead.
    let mut m = menu_with([1; INTERVALS]);
    assert_eq!(
        m.select(&s, &input(5 * TICK, 5 * TICK, true, u64::MAX)),
        sel(3, true)
    );
    let mut m = menu_with([1; INTERVALS]);
    assert_eq!(
        m.select(&s, &input(5 * TICK, 599_999, true, u64::MAX)),
        sel(2, true)
    );
}

#[test]
fn stopped_tick_promotes_from_shallow_when_the_event_is_far() {
    let mut s = skx();
    s[3].target_residency_ns = 2 * TICK;
    // predicted 1.5 ticks ≥ tick; C6 needs 2 ticks.
    let mut m = menu_with(SPREAD);
    let far = m.select(&s, &input(3 * TICK / 2, 2 * TICK, true, u64::MAX));
    assert_eq!(far, sel(3, true), "C6 fits the time to the next event");
    let near = m.select(&s, &input(3 * TICK / 2, 2 * TICK - 1, true, u64::MAX));
    assert_eq!(near, sel(2, true));
    // With the tick running, the shallow state is kept along with the tick.
    let running = m.select(&s, &input(3 * TICK / 2, TICK, false, u64::MAX));
    assert_eq!(running, sel(2, false));
}

#[test]
fn fresh_menu_polls_until_history_fills() {
    let s = skx();
    let mut m = Menu::new();
    let i = input(10 * TICK, TICK, false, u64::MAX);
    assert_eq!(m.select(&s, &i), sel(0, false));
    for _ in 0..INTERVALS {
        assert_eq!(m.select(&s, &i).state, 0);
        m.reflect(
            &s,
            &Reflect {
                state: 0,
                residency_ns: 62_500,
                woken_by_tick: false,
                poll_timed_out: true,
            },
        );
    }
    // Each timed-out poll counted as a full sleep: history says 10 ms.
    assert_eq!(m.intervals_us(), &[10_000; INTERVALS]);
    assert_eq!(m.select(&s, &i), sel(3, true));
}

fn reflect_once(states: &[IdleStateParams], sleep: u64, r: Reflect) -> Menu {
    let mut m = menu_with(SPREAD);
    m.select(states, &input(sleep, TICK, false, u64::MAX));
    m.reflect(states, &r);
    m
}

#[test]
fn reflect_table() {
    let s = skx();
    let r = |state, residency_ns, woken_by_tick, poll_timed_out| Reflect {
        state,
        residency_ns,
        woken_by_tick,
        poll_timed_out,
    };
    let unity = UNITY as u32;
    // (sleep, reflect, bucket, new factor, recorded µs)
    let table: &[(u64, Reflect, usize, u32, u32)] = &[
        // Tick wake although nohz promised nothing within the tick: a long sample.
        (
            100_000_000,
            r(3, 1_000_000, true, false),
            5,
            unity - 1_024 + 460,
            45_000,
        ),
        // ...capped at the sleep length.
        (20_000_000, r(3, 1_000_000, true, false), 4, unity, 20_000),
        // Sleep length exactly one tick: an ordinary sample.
        (
            TICK,
            r(3, 500_000, true, false),
            3,
            unity - 1_024 + 375,
            367,
        ),
        // Timed-out POLL counts as the full sleep.
        (5 * TICK, r(0, 62_500, false, true), 3, unity, 5_000),
        // POLL that ended by a wakeup: the residency.
        (
            5 * TICK,
            r(0, 62_500, false, false),
            3,
            unity - 1_024 + 12,
            62,
        ),
        // Exit latency deducted when the residency exceeds twice it...
        (
            5 * TICK,
            r(3, 266_001, false, false),
            3,
            unity - 1_024 + 27,
            133,
        ),
        // ...halved otherwise.
        (
            5 * TICK,
            r(3, 266_000, false, false),
            3,
            unity - 1_024 + 27,
            133,
        ),
        (
            5 * TICK,
            r(3, 100_000, false, false),
            3,
            unity - 1_024 + 10,
            50,
        ),
        // Longer than the sleep length (another wake source is impossible, but the
        // exit latency can overshoot): capped at 1.0.
        (5 * TICK, r(3, 9 * TICK, false, false), 3, unity, 5_000),
    ];
    for &(sleep, refl, bucket, factor, recorded) in table {
        let m = reflect_once(&s, sleep, refl);
        assert_eq!(m.correction_factors()[bucket], factor, "{sleep} {refl:?}");
        assert_eq!(m.intervals_us()[0], recorded, "{sleep} {refl:?}");
        for (b, &f) in m.correction_factors().iter().enumerate() {
            if b != bucket {
                assert_eq!(f, unity, "only the selected bucket moves");
            }
        }
    }
}

#[test]
fn learns_a_periodic_wakeup() {
    // Something wakes the CPU every 300 µs although the next timer is 10 ms away.
    let s = skx();
    let mut m = Menu::new();
    let i = input(10 * TICK, TICK, false, u64::MAX);
    let poll_limit = m.poll_limit_ns(&s, TICK);
    assert_eq!(poll_limit, 20_000);
    let mut last = m.select(&s, &i);
    for _ in 0..64 {
        // POLL gives up before the wakeup; other states see it.
        let polled = s[last.state].polling;
        m.reflect(
            &s,
            &Reflect {
                state: last.state,
                residency_ns: if polled { poll_limit } else { 300_000 },
                woken_by_tick: false,
                poll_timed_out: polled,
            },
        );
        last = m.select(&s, &i);
    }
    // The typical interval caps the prediction below C6's 600 µs: C1E, tick kept.
    assert_eq!(last, sel(2, false));
    assert!(m.predict_ns(10 * TICK) < 600_000);
}
