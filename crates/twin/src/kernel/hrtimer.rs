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
pub(crate) const MAX_CLOCK_BASES: usize = 8;

/// Clock base indices (the low four are hard, the high four soft).
///
/// The twin's timers all use CLOCK_MONOTONIC so far; the other bases exist so that the
/// active-bases mask and the expiry order are the kernel's (the tests use them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[allow(
    dead_code,
    reason = "only CLOCK_MONOTONIC timers are modelled so far; the tests and the instruction \
              benchmark (kernel::hrtimer_bench) use the others"
)]
pub(crate) enum ClockBase {
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
    /// CLOCK_REALTIME, soft.
    RealtimeSoft = 5,
    /// CLOCK_BOOTTIME, soft.
    BoottimeSoft = 6,
    /// CLOCK_TAI, soft.
    TaiSoft = 7,
}

/// `HrtimerCpuBase::firsts` of an empty base (no timer has id `u16::MAX`).
const NO_TIMER: u16 = u16::MAX;

/// Index of a timer in its CPU's slab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct TimerId(pub u16);

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
pub(crate) struct Forwarded {
    /// New expiry, strictly after `now`, on the original phase grid.
    pub expires: Time,
    /// Whole intervals skipped (0 if `now < expires`).
    pub overruns: u64,
}

/// Moves `expires` forward by whole `interval`s until it lies after `now`
/// (`hrtimer_forward` semantics). Unchanged with 0 overruns if `now < expires`.
#[inline]
pub(crate) fn forward(expires: Time, now: Time, interval: u64) -> Forwarded {
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

/// hrtimer cap on the hang back-off (100 ms).
pub(crate) const HANG_BACKOFF_CAP_NS: u64 = 100_000_000;
/// Expiry passes per interrupt before the hang rule triggers.
pub(crate) const HRTIMER_MAX_PASSES: u32 = 3;

/// One interrupt's progress through the expiry loop (`hrtimer_interrupt`'s `entry_time` and
/// `retries`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExpiryLoop {
    entry: Time,
    passes: u32,
}

/// What the expiry loop does after a pass, given whether the device took the programming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rearm {
    /// The device is armed for the first timer: the interrupt ends.
    Armed,
    /// The first timer was already due: run another pass (`.nr_retries` counts it).
    Retry,
    /// The retry limit was hit: give up and force the device to fire `backoff_ns` after `now`
    /// (at most [`HANG_BACKOFF_CAP_NS`]); `hang_ns` is how long the interrupt has run.
    /// Reprogramming from outside the interrupt is suppressed until the next interrupt.
    Hang {
        /// The interrupt's run time so far (`delta`; `.max_hang_time` candidate).
        hang_ns: u64,
        /// When the device must fire (`now + min(delta, 100 ms)`).
        expires: Time,
    },
}

/// One CPU's hrtimer bases. `F` is what a timer does when it expires (the twin's callback enum).
///
/// `repr(C)`: what every interrupt reads comes first; the statistics last.
#[derive(Debug, Clone)]
#[repr(C)]
pub(crate) struct HrtimerCpuBase<F> {
    /// The expiry the clock event device is programmed for.
    expires_next: Time,
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
    in_hrtirq: bool,
    /// The last interrupt gave up re-arming; earlier re-arms are suppressed until the next one.
    hang_detected: bool,
}

impl<F: Copy> HrtimerCpuBase<F> {
    /// An empty base with room for `capacity` timers.
    pub(crate) fn new(capacity: usize) -> Self {
        HrtimerCpuBase {
            timers: Vec::with_capacity(capacity),
            firsts: [NO_TIMER; MAX_CLOCK_BASES],
            active_bases: 0,
            expires_next: NEVER,
            in_hrtirq: false,
            hang_detected: false,
        }
    }

    /// Where the timer slab lies in memory, as (address, bytes), for a prefetch hint
    /// (`engine::prefetch`). It does not move once set up: [`HrtimerCpuBase::init`] never
    /// grows the slab past the capacity it was allocated with.
    pub(crate) fn slab_span(&self) -> (usize, usize) {
        (
            self.timers.as_ptr() as usize,
            std::mem::size_of_val(self.timers.as_slice()),
        )
    }

    /// This base with its slab moved to a new allocation of exactly its registered timers
    /// (no room left: [`HrtimerCpuBase::init`] then refuses more). Made for every CPU in turn
    /// once all timers are registered, the slabs come out side by side
    /// (`Sim::pack_hrtimer_slabs`).
    pub(crate) fn packed(&self) -> Self {
        let mut timers = Vec::with_capacity(self.timers.len());
        timers.extend_from_slice(&self.timers);
        HrtimerCpuBase {
            expires_next: self.expires_next,
            timers,
            firsts: self.firsts,
            active_bases: self.active_bases,
            in_hrtirq: self.in_hrtirq,
            hang_detected: self.hang_detected,
        }
    }

    /// The expiry the device is programmed for (`cpu_base->expires_next`; `NEVER` when none).
    pub(crate) fn expires_next(&self) -> Time {
        self.expires_next
    }

    /// Registers a timer (setup time only; `hrtimer_init`). Panics past the capacity, which is
    /// a model-construction bug, never an input error.
    pub(crate) fn init(&mut self, base: ClockBase, func: F) -> TimerId {
        // The slab never moves once set up (`slab_span`): full is a model-construction bug,
        // and so is a timer registered after the slab was packed to its length
        // (`Sim::pack_hrtimer_slabs`). The slab's own capacity is the limit, so the base
        // keeps no copy of it (eight bytes of the `Cpu` record's hot lines).
        assert!(
            self.timers.len() < self.timers.capacity(),
            "hrtimer slab full (or packed)"
        );
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
    #[cfg(test)]
    fn active_bases(&self) -> u8 {
        self.active_bases
    }

    /// What timer `id` does.
    #[inline]
    pub(crate) fn func(&self, id: TimerId) -> F {
        self.timers[id.0 as usize].func
    }

    /// Whether `id` is queued.
    #[inline]
    pub(crate) fn is_queued(&self, id: TimerId) -> bool {
        self.timers[id.0 as usize].queued
    }

    /// Soft expiry of `id` (meaningful while queued or just expired).
    #[inline]
    pub(crate) fn soft_expires(&self, id: TimerId) -> Time {
        self.timers[id.0 as usize].soft
    }

    /// Hard expiry of `id`.
    #[inline]
    pub(crate) fn hard_expires(&self, id: TimerId) -> Time {
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
        debug_assert_eq!(
            self.first(t.base as usize),
            self.scan_first(t.base as usize),
            "firsts cache"
        );
    }

    /// (Re)starts `id` with soft expiry `soft` and `slack` (hard = soft + slack). Returns true
    /// if it became the earliest hard expiry of the whole CPU (the caller then reprograms the
    /// device unless inside the interrupt or a hang back-off is active).
    #[inline]
    pub(crate) fn start(&mut self, id: TimerId, soft: Time, slack: u64) -> bool {
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
        debug_assert_eq!(self.first(b), self.scan_first(b), "firsts cache");
        hard < self.expires_next && self.firsts[b] == id.0
    }

    /// Removes `id` if queued; returns whether it was.
    #[inline]
    pub(crate) fn cancel(&mut self, id: TimerId) -> bool {
        let was = self.is_queued(id);
        self.dequeue(id);
        was
    }

    /// Earliest hard expiry over the hard bases (what the device must be programmed for).
    #[inline]
    pub(crate) fn next_hard_expiry(&self) -> Time {
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
    pub(crate) fn next_hard_expiry_except(&self, except: TimerId) -> Time {
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
    pub(crate) fn pop_expired(&mut self, now: Time) -> Option<TimerId> {
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

    /// `hrtimer_reprogram` outside the interrupt: `Some(first)` if the device must be
    /// reprogrammed for the first hard expiry (recorded as programmed), `None` inside the
    /// expiry loop, during a hang back-off, or when it is already programmed for it.
    #[inline]
    pub(crate) fn reprogram_target(&mut self) -> Option<Time> {
        if self.in_hrtirq || self.hang_detected {
            return None;
        }
        let next = self.next_hard_expiry();
        if next == self.expires_next {
            return None;
        }
        self.expires_next = next;
        Some(next)
    }

    /// Boot: the device is programmed for the first hard expiry; returns it.
    pub(crate) fn program_first(&mut self) -> Time {
        self.expires_next = self.next_hard_expiry();
        self.expires_next
    }

    /// `hrtimer_interrupt` entry at `now`: starts the expiry loop.
    #[inline]
    pub(crate) fn interrupt_enter(&self, now: Time) -> ExpiryLoop {
        ExpiryLoop {
            entry: now,
            passes: 0,
        }
    }

    /// Starts an expiry pass: callbacks that re-arm timers do not reprogram the device.
    #[inline]
    pub(crate) fn pass_begin(&mut self) {
        self.in_hrtirq = true;
        self.expires_next = NEVER;
    }

    /// Ends an expiry pass; returns the first hard expiry, which the device is to be
    /// programmed for.
    #[inline]
    pub(crate) fn pass_end(&mut self) -> Time {
        self.in_hrtirq = false;
        self.expires_next = self.next_hard_expiry();
        self.expires_next
    }

    /// The re-arm/retry/hang rule after a pass ended at `now`: `programmed` says whether the
    /// device accepted the first expiry (it refuses one already in the past).
    #[inline]
    pub(crate) fn rearm(&mut self, lp: &mut ExpiryLoop, programmed: bool, now: Time) -> Rearm {
        if programmed {
            self.hang_detected = false;
            return Rearm::Armed;
        }
        lp.passes += 1;
        if lp.passes < HRTIMER_MAX_PASSES {
            return Rearm::Retry;
        }
        self.hang_detected = true;
        let hang_ns = now - lp.entry;
        let expires = now + hang_ns.min(HANG_BACKOFF_CAP_NS);
        self.expires_next = expires;
        Rearm::Hang { hang_ns, expires }
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

    #[test]
    fn rearm_retry_hang_table() {
        // Device outcomes per pass and what the loop decides; the interrupt entered at 1000.
        // (programmed?, now) -> decision
        let hang = |ns: u64, now: u64| Rearm::Hang {
            hang_ns: ns,
            expires: now + ns.min(HANG_BACKOFF_CAP_NS),
        };
        let cases: [&[(bool, Time, Rearm)]; 4] = [
            &[(true, 1200, Rearm::Armed)],
            &[(false, 1200, Rearm::Retry), (true, 1400, Rearm::Armed)],
            &[
                (false, 1200, Rearm::Retry),
                (false, 1400, Rearm::Retry),
                (false, 1600, hang(600, 1600)),
            ],
            // A long interrupt: the back-off is capped at 100 ms.
            &[
                (false, 1200, Rearm::Retry),
                (false, 1400, Rearm::Retry),
                (false, 200_001_000, hang(200_000_000, 200_001_000)),
            ],
        ];
        for passes in cases {
            let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(2);
            let t = b.init(ClockBase::Monotonic, 0);
            let mut lp = b.interrupt_enter(1000);
            for &(programmed, now, want) in passes {
                b.pass_begin();
                b.pass_end();
                assert_eq!(b.rearm(&mut lp, programmed, now), want, "{passes:?}");
            }
            // After a hang, re-arms from outside the interrupt wait for the next interrupt.
            let hung = matches!(passes.last(), Some((_, _, Rearm::Hang { .. })));
            b.start(t, 5000, 0);
            assert_eq!(b.reprogram_target().is_none(), hung);
            if !hung {
                assert_eq!(b.reprogram_target(), None, "already programmed");
            }
        }
    }

    #[test]
    fn no_reprogram_inside_the_interrupt() {
        let mut b: HrtimerCpuBase<u8> = HrtimerCpuBase::new(2);
        let t = b.init(ClockBase::Monotonic, 0);
        b.pass_begin();
        b.start(t, 100, 0);
        assert_eq!(b.reprogram_target(), None);
        assert_eq!(b.pass_end(), 100);
        assert_eq!(b.reprogram_target(), None, "pass_end recorded it");
        b.start(t, 50, 0);
        assert_eq!(b.reprogram_target(), Some(50));
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
