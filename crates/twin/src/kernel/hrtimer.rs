//! Per-CPU hrtimer base: eight clock bases, an active-bases mask, a cached first timer per
//! base, soft/hard expiry (slack) and forwarding.
//!
//! Design note. The kernel keeps each clock base's timers in an rbtree ordered by hard expiry
//! with a cached leftmost node. A CPU of the twin holds a handful of timers (the tick, a
//! watchdog, a task's nanosleep, background sources), so the queues are the timer slab itself,
//! preallocated at setup: each timer carries its base and a queued flag, start and cancel only
//! set fields, and each base's first timer, its smallest `(hard expiry, id)`, is cached like
//! the kernel's leftmost node (ids are unique, so the order is total). A cache is rescanned
//! only when its own timer leaves or moves later; nothing allocates after
//! [`HrtimerCpuBase::new`].
//! The active-bases mask means an empty base is never looked at (the 2015 "lean hrtimer" rule).
//!
//! All clock bases share the monotonic timeline here (no clock has been set during a run, so
//! every offset is 0 and `clock_was_set` never fires); they still exist so the mask, the
//! hard/soft split and `/proc/timer_list`-shaped output mean what they mean in the kernel.
//!
//! Expiry rule (`pop_expired`): bases in index order; within a base, timers in hard-expiry
//! order while `soft <= now`; the walk of a base stops at its first timer whose soft expiry is
//! still in the future. So a timer with slack rides an earlier interrupt instead of raising its
//! own, and no timer ever runs before its soft expiry.

use crate::engine::{NEVER, Time};

/// Number of clock bases (HRTIMER_MAX_CLOCK_BASES since 4.16).
pub const MAX_CLOCK_BASES: usize = 8;

/// Clock base indices (the low four are hard, the high four soft).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ClockBase {
    /// CLOCK_MONOTONIC, expired in hard interrupt context.
    Monotonic = 0,
    /// CLOCK_REALTIME.
    Realtime = 1,
    /// CLOCK_BOOTTIME.
    Boottime = 2,
    /// CLOCK_TAI.
    Tai = 3,
    /// CLOCK_MONOTONIC, expired from HRTIMER_SOFTIRQ.
    MonotonicSoft = 4,
}

/// `HrtimerCpuBase::firsts` of an empty base (no timer has id `u16::MAX`).
const NO_TIMER: u16 = u16::MAX;

/// Index of a timer in its CPU's slab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimerId(pub u16);

#[derive(Debug, Clone, Copy)]
struct Hrtimer<F> {
    soft: Time,
    hard: Time,
    base: u8,
    queued: bool,
    func: F,
}

/// Outcome of [`forward`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forwarded {
    /// New expiry, strictly after `now`, on the original phase grid.
    pub expires: Time,
    /// Whole intervals skipped (0 if `now < expires`).
    pub overruns: u64,
}

/// Moves `expires` forward by whole `interval`s until it lies after `now`
/// (`hrtimer_forward` semantics). Unchanged with 0 overruns if `now < expires`.
#[inline]
pub fn forward(expires: Time, now: Time, interval: u64) -> Forwarded {
    if now < expires {
        return Forwarded {
            expires,
            overruns: 0,
        };
    }
    let interval = interval.max(1);
    let behind = now - expires;
    // Nearly every forward is by one period (a tick re-arming itself): skip the division.
    let mut overruns = if behind < interval {
        0
    } else {
        behind / interval
    };
    let mut e = expires + overruns * interval;
    if e <= now {
        e += interval;
        overruns += 1;
    }
    Forwarded {
        expires: e,
        overruns,
    }
}

/// One CPU's hrtimer bases. `F` is what a timer does when it expires (the twin's callback enum).
///
/// `repr(C)`: what every interrupt reads comes first; the statistics last.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct HrtimerCpuBase<F> {
    /// The expiry the clock event device is programmed for.
    pub expires_next: Time,
    /// The CPU's timers, queued or not; a base's queue is its timers with `queued` set. A CPU
    /// has a handful, so this one small slab is all the per-CPU hrtimer memory an interrupt
    /// touches.
    timers: Vec<Hrtimer<F>>,
    /// Per base, the id of its first timer (smallest `(hard, id)` among its queued timers), or
    /// `NO_TIMER`. Invariant: always that minimum.
    firsts: [u16; MAX_CLOCK_BASES],
    /// Bit i set iff base i holds a queued timer.
    active_bases: u8,
    /// Inside the expiry interrupt (suppresses reprogramming from callbacks).
    pub in_hrtirq: bool,
    /// The last interrupt gave up re-arming; earlier re-arms are suppressed until the next one.
    pub hang_detected: bool,
    /// Expiry interrupts (`.nr_events`; counted on every interrupt, so kept with the hot part).
    pub nr_events: u64,
    /// Failed re-arms that caused another pass (`.nr_retries`).
    pub nr_retries: u64,
    /// Interrupts that hit the retry limit (`.nr_hangs`).
    pub nr_hangs: u64,
    /// Longest interrupt that hit the limit (`.max_hang_time`).
    pub max_hang_time: u64,
    capacity: usize,
}

impl<F: Copy> HrtimerCpuBase<F> {
    /// An empty base with room for `capacity` timers.
    pub fn new(capacity: usize) -> Self {
        HrtimerCpuBase {
            timers: Vec::with_capacity(capacity),
            firsts: [NO_TIMER; MAX_CLOCK_BASES],
            active_bases: 0,
            expires_next: NEVER,
            in_hrtirq: false,
            hang_detected: false,
            nr_events: 0,
            nr_retries: 0,
            nr_hangs: 0,
            max_hang_time: 0,
            capacity,
        }
    }

    /// Registers a timer (setup time only; `hrtimer_init`). Panics past the capacity, which is
    /// a model-construction bug, never an input error.
    pub fn init(&mut self, base: ClockBase, func: F) -> TimerId {
        assert!(self.timers.len() < self.capacity, "hrtimer slab full");
        assert!(
            self.timers.len() < usize::from(u16::MAX),
            "timer ids end below u16::MAX"
        );
        self.timers.push(Hrtimer {
            soft: NEVER,
            hard: NEVER,
            base: base as u8,
            queued: false,
            func,
        });
        TimerId((self.timers.len() - 1) as u16)
    }

    /// The mask of bases holding timers.
    #[inline]
    pub fn active_bases(&self) -> u8 {
        self.active_bases
    }

    /// What timer `id` does.
    #[inline]
    pub fn func(&self, id: TimerId) -> F {
        self.timers[id.0 as usize].func
    }

    /// Whether `id` is queued.
    #[inline]
    pub fn is_queued(&self, id: TimerId) -> bool {
        self.timers[id.0 as usize].queued
    }

    /// Soft expiry of `id` (meaningful while queued or just expired).
    #[inline]
    pub fn soft_expires(&self, id: TimerId) -> Time {
        self.timers[id.0 as usize].soft
    }

    /// Hard expiry of `id`.
    #[inline]
    pub fn hard_expires(&self, id: TimerId) -> Time {
        self.timers[id.0 as usize].hard
    }

    /// The first timer of base `b`: its smallest `(hard, id)`.
    #[inline]
    fn first(&self, b: usize) -> Option<(Time, u16)> {
        let id = self.firsts[b];
        (id != NO_TIMER).then(|| (self.timers[usize::from(id)].hard, id))
    }

    /// The smallest `(hard, id)` of base `b` by a scan of the timers.
    fn scan_first(&self, b: usize) -> Option<(Time, u16)> {
        self.timers
            .iter()
            .enumerate()
            .filter(|(_, t)| t.queued && usize::from(t.base) == b)
            .map(|(id, t)| (t.hard, id as u16))
            .min()
    }

    fn rescan(&mut self, b: usize) {
        match self.scan_first(b) {
            Some((_, id)) => self.firsts[b] = id,
            None => {
                self.firsts[b] = NO_TIMER;
                self.active_bases &= !(1 << b);
            }
        }
    }

    fn dequeue(&mut self, id: TimerId) {
        let t = self.timers[id.0 as usize];
        if !t.queued {
            return;
        }
        self.timers[id.0 as usize].queued = false;
        if self.firsts[t.base as usize] == id.0 {
            self.rescan(t.base as usize);
        }
    }

    /// (Re)starts `id` with soft expiry `soft` and `slack` (hard = soft + slack). Returns true
    /// if it became the earliest hard expiry of the whole CPU (the caller then reprograms the
    /// device unless inside the interrupt or a hang back-off is active).
    #[inline]
    pub fn start(&mut self, id: TimerId, soft: Time, slack: u64) -> bool {
        let hard = soft.saturating_add(slack);
        let t = &mut self.timers[id.0 as usize];
        t.soft = soft;
        t.hard = hard;
        let base = t.base;
        t.queued = true;
        let key = (hard, id.0);
        self.active_bases |= 1 << base;
        let b = base as usize;
        match self.first(b) {
            // It was the first and has moved (its own expiry is already the new one).
            Some((_, first)) if first == id.0 => self.rescan(b),
            Some(first) if first <= key => {}
            _ => self.firsts[b] = id.0,
        }
        hard < self.expires_next && self.firsts[b] == id.0
    }

    /// Removes `id` if queued; returns whether it was.
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> bool {
        let was = self.is_queued(id);
        self.dequeue(id);
        was
    }

    /// Earliest hard expiry over the hard bases (what the device must be programmed for).
    #[inline]
    pub fn next_hard_expiry(&self) -> Time {
        let mut mask = self.active_bases;
        let mut best = NEVER;
        while mask != 0 {
            let b = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some((hard, _)) = self.first(b) {
                best = best.min(hard);
            }
        }
        best
    }

    /// Earliest hard expiry ignoring timer `except` (e.g. the tick when asking for the sleep
    /// length "if the tick were stopped").
    pub fn next_hard_expiry_except(&self, except: TimerId) -> Time {
        self.timers
            .iter()
            .enumerate()
            .filter(|&(id, t)| t.queued && id != usize::from(except.0))
            .map(|(_, t)| t.hard)
            .min()
            .unwrap_or(NEVER)
    }

    /// Dequeues and returns the next timer due at `now` per the module's expiry rule.
    #[inline]
    pub fn pop_expired(&mut self, now: Time) -> Option<TimerId> {
        let mut mask = self.active_bases;
        while mask != 0 {
            let b = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some((_, id)) = self.first(b)
                && self.timers[id as usize].soft <= now
            {
                let id = TimerId(id);
                self.dequeue(id);
                return Some(id);
            }
        }
        None
    }

    /// Number of queued timers.
    pub fn queued(&self) -> usize {
        self.timers.iter().filter(|t| t.queued).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn forward_table() {
        // (expires, now, interval, new expires, overruns)
        let cases = [
            (100, 99, 10, 100, 0),
            (100, 100, 10, 110, 1),
            (100, 101, 10, 110, 1),
            (100, 109, 10, 110, 1),
            (100, 110, 10, 120, 2),
            (100, 1_000_000, 1000, 1_000_100, 1000),
            (100, 100, 0, 101, 1), // interval clamped to 1
        ];
        for (e, n, i, want, ov) in cases {
            let f = forward(e, n, i);
            assert_eq!((f.expires, f.overruns), (want, ov), "{e} {n} {i}");
            assert!(f.expires > n);
            assert_eq!((f.expires - e) % i.max(1), 0, "phase kept");
        }
    }

    #[test]
    fn slack_rides_an_earlier_interrupt() {
        let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(4);
        let tick = b.init(ClockBase::Monotonic, 0);
        let user = b.init(ClockBase::Monotonic, 1);
        b.start(tick, 1000, 0);
        b.start(user, 990, 50); // soft 990, hard 1040
        assert_eq!(b.next_hard_expiry(), 1000);
        // At the tick's interrupt both are due: the user timer's soft expiry has passed.
        assert_eq!(b.pop_expired(1000), Some(tick));
        assert_eq!(b.pop_expired(1000), Some(user));
        assert_eq!(b.pop_expired(1000), None);
        assert_eq!(b.active_bases(), 0);
    }

    #[test]
    fn walk_stops_at_first_future_soft_expiry_in_a_base() {
        let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(4);
        let a = b.init(ClockBase::Monotonic, 0);
        let c = b.init(ClockBase::Monotonic, 1);
        b.start(a, 500, 1000); // hard 1500, soft 500
        b.start(c, 1200, 0); // hard 1200 sorts first, soft in the future at 1000
        assert_eq!(
            b.pop_expired(1000),
            None,
            "first in hard order is not soft-due"
        );
        assert_eq!(b.pop_expired(1200), Some(c));
        assert_eq!(b.pop_expired(1200), Some(a));
    }

    #[test]
    fn bases_expire_in_index_order_and_mask_tracks_them() {
        let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(4);
        let real = b.init(ClockBase::Realtime, 0);
        let mono = b.init(ClockBase::Monotonic, 1);
        b.start(real, 10, 0);
        b.start(mono, 20, 0);
        assert_eq!(b.active_bases(), 0b11);
        assert_eq!(b.pop_expired(30), Some(mono));
        assert_eq!(b.pop_expired(30), Some(real));
        assert!(!b.cancel(real));
    }

    #[test]
    fn start_reports_new_first_only_when_earlier_than_programmed() {
        let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(4);
        let a = b.init(ClockBase::Monotonic, 0);
        let c = b.init(ClockBase::Monotonic, 1);
        assert!(b.start(a, 100, 0));
        b.expires_next = 100;
        assert!(!b.start(c, 200, 0));
        assert!(!b.start(c, 100, 0), "equal to programmed: no reprogram");
        assert!(b.start(c, 99, 0));
    }

    proptest! {
        /// No timer ever fires before its soft expiry, and every due first timer fires.
        #[test]
        fn first_cache_matches_a_scan(ops in proptest::collection::vec((0u16..6, 0u8..3, 0u64..1_000, 0u64..50), 1..300)) {
            // Starts, re-starts, cancels and expiries in any order: each base's cached first
            // timer is always the minimum of its queue, and start's "became first" answer
            // agrees with a scan.
            let mut b: HrtimerCpuBase<u16> = HrtimerCpuBase::new(8);
            let ids: Vec<TimerId> = (0..6).map(|i| b.init(if i < 3 { ClockBase::Monotonic } else { ClockBase::Boottime }, i)).collect();
            for (i, op, t, slack) in ops {
                let id = ids[i as usize];
                match op {
                    0 => {
                        let became_first = b.start(id, t, slack);
                        let base = b.timers[id.0 as usize].base as usize;
                        let scan = b.scan_first(base);
                        let want = scan == Some((t + slack, id.0)) && t + slack < b.expires_next;
                        prop_assert_eq!(became_first, want);
                    }
                    1 => {
                        b.cancel(id);
                    }
                    _ => {
                        b.pop_expired(t);
                    }
                }
                for base in 0..MAX_CLOCK_BASES {
                    prop_assert_eq!(b.first(base), b.scan_first(base));
                    prop_assert_eq!(b.active_bases & (1 << base) != 0, b.first(base).is_some());
                }
            }
        }

        #[test]
        fn never_before_soft_expiry(ops in proptest::collection::vec((0u16..6, 0u64..10_000, 0u64..500), 1..200), now_steps in proptest::collection::vec(0u64..3000, 1..20)) {
            let mut b: HrtimerCpuBase<u16> = HrtimerCpuBase::new(8);
            let ids: Vec<TimerId> = (0..6).map(|i| b.init(if i % 2 == 0 { ClockBase::Monotonic } else { ClockBase::Boottime }, i)).collect();
            for (i, soft, slack) in ops {
                b.start(ids[i as usize], soft, slack);
            }
            let mut now = 0;
            for step in now_steps {
                now += step;
                while let Some(id) = b.pop_expired(now) {
                    prop_assert!(b.soft_expires(id) <= now);
                }
                // After the walk, the first timer of each base is not soft-due.
                for base in 0..MAX_CLOCK_BASES {
                    if let Some((_, id)) = b.first(base) {
                        prop_assert!(b.timers[id as usize].soft > now);
                    }
                }
            }
        }
    }
}
