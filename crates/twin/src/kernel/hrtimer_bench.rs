//! Fixed cycles of hrtimer operations for the instruction-count benchmark of the twin's
//! hrtimer core (docs/experiments.md E5, `scripts/hrtimer-callgrind.sh`).
//!
//! E5's bar for the twin: per-CPU hrtimer state is compact and an empty clock base costs
//! nothing, because the active-bases mask means it is never looked at. [`run`] performs
//! `rounds` of one operation on one layout of timers over the eight clock bases; the script
//! counts the instructions of two round counts under callgrind and divides the difference by
//! the extra rounds, which removes the set-up and leaves the cost of one operation.
//!
//! Every round is the operation as the event loop performs it:
//! * [`Op::Start`]: re-arm one timer one period later (`hrtimer_start` of a periodic timer)
//!   and ask for the device's next expiry (`hrtimer_reprogram`);
//! * [`Op::Cancel`]: cancel one timer, ask for the next expiry, and start it again;
//! * [`Op::Expire`]: the interrupt's expiry pass: take the due timer (`__hrtimer_run_queues`),
//!   re-arm it from its callback, end the pass with the next expiry.

use super::hrtimer::{ClockBase, HrtimerCpuBase, TimerId};

/// The operation measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Re-arm one timer and find the next expiry.
    Start,
    /// Cancel one timer, find the next expiry, start it again.
    Cancel,
    /// One expiry pass taking the due timer and re-arming it.
    Expire,
}

/// Where the timers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `n` timers, one in each of the first `n` clock bases (1 to 8): `n` active bases.
    ActiveBases(u8),
    /// `n` timers all in CLOCK_MONOTONIC (1 to 8): one base populated, seven empty.
    OneBase(u8),
    /// One timer in the highest base (index 7): the seven empty bases lie below it.
    HighestBaseOnly,
}

const BASES: [ClockBase; 8] = [
    ClockBase::Monotonic,
    ClockBase::Realtime,
    ClockBase::Boottime,
    ClockBase::Tai,
    ClockBase::MonotonicSoft,
    ClockBase::RealtimeSoft,
    ClockBase::BoottimeSoft,
    ClockBase::TaiSoft,
];

/// The period every timer is re-armed with (ns): the tick at HZ=1000.
const PERIOD: u64 = 1_000_000;

/// Runs `rounds` of `op` on `layout` and returns a checksum of the expiries seen (so the work
/// cannot be optimised away). `None` if the layout asks for 0 or more than 8 timers.
pub fn run(op: Op, layout: Layout, rounds: u64) -> Option<u64> {
    let placed: Vec<ClockBase> = match layout {
        Layout::ActiveBases(n) if (1..=8).contains(&n) => BASES[..n as usize].to_vec(),
        Layout::OneBase(n) if (1..=8).contains(&n) => vec![ClockBase::Monotonic; n as usize],
        Layout::HighestBaseOnly => vec![ClockBase::TaiSoft],
        _ => return None,
    };
    let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(placed.len());
    let ids: Vec<TimerId> = placed
        .iter()
        .enumerate()
        .map(|(i, &base)| b.init(base, i as u8))
        .collect();
    // Timer i first expires at (i + 1) periods / n: they take turns being due.
    let n = ids.len() as u64;
    for (i, &id) in ids.iter().enumerate() {
        b.start(id, (i as u64 + 1) * PERIOD / n, 0);
    }
    b.program_first();
    let mut sum = 0u64;
    let mut now = 0u64;
    for r in 0..rounds {
        let id = ids[(r % n) as usize];
        match op {
            Op::Start => {
                let next = b.hard_expires(id).saturating_add(PERIOD);
                b.start(id, next, 0);
                sum = sum.wrapping_add(b.reprogram_target().unwrap_or(0));
            }
            Op::Cancel => {
                let at = b.hard_expires(id);
                b.cancel(id);
                sum = sum.wrapping_add(b.reprogram_target().unwrap_or(0));
                b.start(id, at, 0);
            }
            Op::Expire => {
                now = now.max(b.next_hard_expiry());
                b.pass_begin();
                while let Some(t) = b.pop_expired(now) {
                    let due = b.hard_expires(t);
                    b.start(t, due + PERIOD, 0);
                    sum = sum.wrapping_add(u64::from(b.func(t)));
                }
                sum = sum.wrapping_add(b.pass_end());
            }
        }
    }
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_runs_and_expire_takes_turns() {
        for op in [Op::Start, Op::Cancel, Op::Expire] {
            for layout in [
                Layout::ActiveBases(1),
                Layout::ActiveBases(2),
                Layout::ActiveBases(8),
                Layout::OneBase(2),
                Layout::OneBase(8),
                Layout::HighestBaseOnly,
            ] {
                assert!(run(op, layout, 100).is_some(), "{op:?} {layout:?}");
            }
        }
        assert_eq!(run(Op::Start, Layout::ActiveBases(0), 1), None);
        assert_eq!(run(Op::Start, Layout::OneBase(9), 1), None);
        // 8 timers expiring in turn: over 8 rounds every timer's function id is summed once
        // (0 + 1 + ... + 7 = 28) besides the pass ends.
        let with = run(Op::Expire, Layout::ActiveBases(8), 8).unwrap();
        let none = run(Op::Expire, Layout::ActiveBases(8), 0).unwrap();
        assert_eq!(none, 0);
        assert!(with >= 28);
    }
}
