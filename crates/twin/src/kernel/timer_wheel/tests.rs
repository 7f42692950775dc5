//! Tests of the wheel: behaviour tables (lateness, deferrable timers, order of expiry, re-arm
//! shortcuts, forwarding) and a brute-force reference model that property tests run against
//! the wheel operation by operation.

use super::*;
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BTreeMap;

#[test]
fn concrete_hz1000_lateness() {
    // A 1 s timeout at HZ=1000 lands in level 2 (64 ms granules) and fires at 1024 ms.
    let mut w = TimerWheel::new(1000, 4);
    assert_eq!(w.add(WheelTimerId(0), 1000, false), 1024);
    // A 10 ms timeout fires one jiffy late (11 ms).
    assert_eq!(w.add(WheelTimerId(1), 10, false), 11);
    assert_eq!(w.next_expiry(false), Some(11));
    let mut fired = Vec::new();
    w.advance(10, |id| fired.push(id));
    assert!(fired.is_empty());
    w.advance(11, |id| fired.push(id));
    assert_eq!(fired, [WheelTimerId(1)]);
    w.advance(1023, |id| fired.push(id));
    assert_eq!(fired.len(), 1);
    w.advance(1024, |id| fired.push(id));
    assert_eq!(fired, [WheelTimerId(1), WheelTimerId(0)]);
    assert!(w.is_empty());
    assert_eq!(w.next_expiry(true), None);
}

#[test]
fn deferrable_ignored_only_on_request() {
    let mut w = TimerWheel::new(250, 4);
    w.add(WheelTimerId(0), 100, true);
    assert_eq!(w.next_expiry(false), None);
    assert_eq!(w.next_expiry(true), Some(104));
    w.add(WheelTimerId(1), 200, false);
    assert_eq!(w.next_expiry(false), Some(208));
    assert_eq!(w.next_expiry(true), Some(104));
    // Deferrable timers still fire when the softirq runs.
    let mut fired = Vec::new();
    w.advance(300, |id| fired.push(id));
    assert_eq!(
        fired,
        [WheelTimerId(1), WheelTimerId(0)],
        "standard base first"
    );
}

#[test]
fn order_within_an_instant() {
    let mut w = TimerWheel::new(1000, 8);
    // Level 1 bucket at 72: requested 64..=71 from clk 0.
    w.add(WheelTimerId(0), 64, false);
    w.add(WheelTimerId(1), 65, false);
    // Level 0 bucket at 72 once the clock is at 20: requested 71.
    w.advance(20, |_| {});
    w.add(WheelTimerId(2), 71, false);
    w.add(WheelTimerId(3), 71, true);
    let mut fired = Vec::new();
    w.advance(72, |id| fired.push(id.0));
    assert_eq!(
        fired,
        [1, 0, 2, 3],
        "higher level first, LIFO within a bucket"
    );
}

#[test]
fn rearm_shortcuts_keep_the_bucket() {
    let mut w = TimerWheel::new(1000, 4);
    // 97 and 99 are level-1 timers of the bucket at 104.
    assert_eq!(w.add(WheelTimerId(0), 97, false), 104);
    assert_eq!(w.add(WheelTimerId(1), 99, false), 104);
    // Same bucket: only the requested expiry changes, the list position is kept.
    assert_eq!(w.add(WheelTimerId(0), 100, false), 104);
    assert_eq!(w.requested_expiry(WheelTimerId(0)), Some(100));
    // Different bucket: moves.
    assert_eq!(w.add(WheelTimerId(2), 99, false), 104);
    assert_eq!(w.add(WheelTimerId(2), 200, false), 208);
    assert_eq!(w.len(), 3);
    // Unchanged expiry after the clock moved: placement kept even though a fresh add
    // would now pick level 0.
    w.advance(90, |_| {});
    assert_eq!(w.add(WheelTimerId(0), 100, false), 104);
    assert_eq!(place(100, 90, 9).expiry, 101);
    let mut fired = Vec::new();
    w.advance(104, |id| fired.push(id.0));
    assert_eq!(fired, [1, 0], "re-armed timer kept its place behind id 1");
    // Changing the deferrable flag moves the timer to the other base.
    w.add(WheelTimerId(0), 150, false);
    assert_eq!(w.add(WheelTimerId(0), 150, true), 151);
    assert_eq!(w.next_expiry(false), Some(208));
    assert_eq!(w.next_expiry(true), Some(151));
}

#[test]
fn past_timers_fire_at_next_advance() {
    let mut w = TimerWheel::new(1000, 2);
    w.advance(500, |_| {});
    assert_eq!(w.add(WheelTimerId(0), 100, false), 500);
    assert_eq!(w.next_expiry(false), Some(500));
    let mut fired = 0;
    w.advance(499, |_| fired += 1);
    assert_eq!((fired, w.clk()), (0, 500), "advance backwards is a no-op");
    w.advance(500, |_| fired += 1);
    assert_eq!(fired, 1);
}

#[test]
fn forward_stops_at_the_first_pending_expiry() {
    let mut w = TimerWheel::new(1000, 2);
    w.forward(50);
    assert_eq!(w.clk(), 50);
    w.add(WheelTimerId(0), 60, false); // fires at 61
    w.forward(1_000);
    assert_eq!(w.clk(), 61);
    assert!(w.is_pending(WheelTimerId(0)));
    w.forward(10);
    assert_eq!(w.clk(), 61, "never backwards");
}

#[test]
fn long_gap_is_skipped() {
    let mut w = TimerWheel::new(1000, 512);
    for i in 0..512u32 {
        w.add(WheelTimerId(i), u64::from(i) * 1_000_003, i % 3 == 0);
    }
    let mut fired = 0;
    w.advance(1 << 50, |_| fired += 1);
    assert_eq!(fired, 512);
    assert_eq!(w.clk(), 1 << 50);
    let far = (1u64 << 50) + timeout_cutoff(9) * 1000;
    let e = w.add(WheelTimerId(0), far, false);
    assert_eq!(e, round_up((1 << 50) + timeout_max(9), 8));
    w.advance(u64::MAX / 2, |_| fired += 1);
    assert_eq!(fired, 513);
}

#[test]
#[should_panic(expected = "beyond wheel capacity")]
fn id_beyond_capacity_panics() {
    TimerWheel::new(1000, 2).add(WheelTimerId(2), 5, false);
}

// ---- brute-force model --------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct ModelTimer {
    expires: u64,
    place: Placement,
    deferrable: bool,
    seq: u64,
}

#[derive(Default)]
struct Model {
    clk: u64,
    seq: u64,
    timers: BTreeMap<u32, ModelTimer>,
}

impl Model {
    fn add(&mut self, id: u32, expires: u64, deferrable: bool, depth: usize) -> u64 {
        let place = place(expires, self.clk, depth);
        if let Some(t) = self.timers.get_mut(&id)
            && t.deferrable == deferrable
            && (t.expires == expires
                || (t.place.level, t.place.bucket) == (place.level, place.bucket))
        {
            t.expires = expires;
            return t.place.expiry;
        }
        self.seq += 1;
        let t = ModelTimer {
            expires,
            place,
            deferrable,
            seq: self.seq,
        };
        self.timers.insert(id, t);
        place.expiry
    }

    fn advance(&mut self, now: u64) -> Vec<u32> {
        if now < self.clk {
            return Vec::new();
        }
        let mut due: Vec<(u32, ModelTimer)> = self
            .timers
            .iter()
            .filter(|(_, t)| t.place.expiry <= now)
            .map(|(&id, &t)| (id, t))
            .collect();
        due.sort_by_key(|(_, t)| {
            (
                t.deferrable,
                t.place.expiry,
                Reverse(t.place.level),
                Reverse(t.seq),
            )
        });
        for (id, _) in &due {
            self.timers.remove(id);
        }
        self.clk = now;
        due.into_iter().map(|(id, _)| id).collect()
    }

    fn next(&self, include_deferrable: bool) -> Option<u64> {
        self.timers
            .values()
            .filter(|t| include_deferrable || !t.deferrable)
            .map(|t| t.place.expiry)
            .min()
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// Arm `id` at `clk + delta` (or `clk - back` when `back` is set).
    Add {
        id: u32,
        delta: u64,
        back: bool,
        deferrable: bool,
    },
    Remove {
        id: u32,
    },
    Advance {
        step: u64,
    },
    Forward {
        step: u64,
    },
}

const IDS: u32 = 24;

fn delta_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..80,
        0u64..5_000,
        0u64..300_000,
        0u64..2_000_000_000,
        // Exactly at level boundaries ±1.
        (1usize..MAX_DEPTH, 0u64..3).prop_map(|(l, d)| level_start(l) + d - 1),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..IDS, delta_strategy(), prop::bool::weighted(0.05), any::<bool>())
            .prop_map(|(id, delta, back, deferrable)| Op::Add { id, delta, back, deferrable }),
        1 => (0..IDS).prop_map(|id| Op::Remove { id }),
        3 => prop_oneof![0u64..10, 0u64..1_000, 0u64..100_000, 0u64..3_000_000_000]
            .prop_map(|step| Op::Advance { step }),
        1 => (0u64..2_000).prop_map(|step| Op::Forward { step }),
    ]
}

fn run_against_model(hz: u32, start: u64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut w = TimerWheel::with_clk(hz, IDS as usize, start);
    let mut m = Model {
        clk: start,
        ..Model::default()
    };
    let depth = w.depth();
    for op in ops {
        match *op {
            Op::Add {
                id,
                delta,
                back,
                deferrable,
            } => {
                let expires = if back {
                    w.clk().saturating_sub(delta)
                } else {
                    w.clk() + delta
                };
                let got = w.add(WheelTimerId(id), expires, deferrable);
                let want = m.add(id, expires, deferrable, depth);
                prop_assert_eq!(got, want);
                // Never early within the wheel's range: a future timer fires strictly after
                // its requested jiffy. Past timers fire at the next advance; timers beyond
                // the cutoff are clamped to the wheel's capacity.
                if expires < w.clk() {
                    prop_assert_eq!(got, w.clk());
                } else if expires - w.clk() < timeout_cutoff(depth) {
                    prop_assert!(got > expires);
                } else {
                    prop_assert!(got <= expires);
                }
            }
            Op::Remove { id } => {
                prop_assert_eq!(w.remove(WheelTimerId(id)), m.timers.remove(&id).is_some());
            }
            Op::Advance { step } => {
                let now = w.clk() + step;
                let mut fired = Vec::new();
                w.advance(now, |id| {
                    fired.push(id.0);
                });
                prop_assert_eq!(&fired, &m.advance(now));
                prop_assert_eq!(w.clk(), now);
            }
            Op::Forward { step } => {
                let now = w.clk() + step;
                w.forward(now);
                let target = m.next(true).map_or(now, |n| n.min(now));
                m.clk = m.clk.max(target);
                prop_assert_eq!(w.clk(), m.clk);
            }
        }
        prop_assert_eq!(w.len(), m.timers.len());
        prop_assert_eq!(w.next_expiry(false), m.next(false));
        prop_assert_eq!(w.next_expiry(true), m.next(true));
        for id in 0..IDS {
            let t = m.timers.get(&id);
            prop_assert_eq!(w.is_pending(WheelTimerId(id)), t.is_some());
            prop_assert_eq!(
                w.effective_expiry(WheelTimerId(id)),
                t.map(|t| t.place.expiry)
            );
            prop_assert_eq!(w.requested_expiry(WheelTimerId(id)), t.map(|t| t.expires));
        }
    }
    // Drain everything: each remaining timer fires exactly at its effective expiry.
    while let Some(next) = w.next_expiry(true) {
        prop_assert!(next >= w.clk());
        let mut fired = Vec::new();
        w.advance(next, |id| fired.push(id.0));
        prop_assert!(!fired.is_empty());
        prop_assert_eq!(&fired, &m.advance(next));
    }
    prop_assert!(m.timers.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn wheel_agrees_with_brute_force(
        hz in prop::sample::select(vec![100u32, 250, 1000]),
        start in prop_oneof![Just(0u64), Just(4_294_667_296u64), 0u64..1_000_000],
        ops in prop::collection::vec(op_strategy(), 1..120),
    ) {
        run_against_model(hz, start, &ops)?;
    }
    #[test]
    fn fires_at_the_first_advance_reaching_its_expiry(
        hz in prop::sample::select(vec![100u32, 250, 1000]),
        deltas in prop::collection::vec(0u64..50_000_000, 1..40),
        steps in prop::collection::vec(1u64..5_000_000, 1..40),
    ) {
        let mut w = TimerWheel::new(hz, deltas.len());
        let effective: Vec<u64> = deltas
            .iter()
            .enumerate()
            .map(|(i, &d)| w.add(WheelTimerId(i as u32), d, i % 2 == 0))
            .collect();
        // Advance in the given steps, then one jump past every possible expiry.
        let mut nows: Vec<u64> = steps
            .iter()
            .cycle()
            .take(200)
            .scan(0, |now, step| {
                *now += step;
                Some(*now)
            })
            .collect();
        nows.push(nows[nows.len() - 1] + 100_000_000);
        let mut fired_at = vec![None; deltas.len()];
        for &now in &nows {
            w.advance(now, |id| fired_at[id.0 as usize] = Some(now));
        }
        prop_assert!(w.is_empty());
        for i in 0..deltas.len() {
            prop_assert!(effective[i] > deltas[i], "never early");
            let first = nows.iter().copied().find(|&n| n >= effective[i]);
            prop_assert_eq!(fired_at[i], first);
        }
    }
}
