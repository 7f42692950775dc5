//! The per-CPU jiffy-granular timer wheel (`timer_list` timers), as in Linux ≥ 4.8.
//!
//! # Design note
//!
//! The kernel's timer wheel stopped cascading in 4.8. A timer is filed once, in the level whose
//! range covers its distance from the wheel clock, and it stays there until it expires or is
//! removed. The cost of not cascading is granularity: every level is coarser than the one
//! below it by a factor of 8, and an expiry is rounded **up** to the next multiple of its
//! level's granularity. That is why a long timeout fires late, and the twin needs it: the
//! jiffy on which a timer really fires decides when a stopped tick must wake up (§3.4 of
//! `docs/kernel-behaviour.md`) and how wakeups batch together (§12.3).
//!
//! | level | granularity (jiffies) | first delta (jiffies) | HZ=1000 granularity |
//! |------:|----------------------:|----------------------:|--------------------:|
//! | 0     | 1                     | 0                     | 1 ms                |
//! | 1     | 8                     | 63                    | 8 ms                |
//! | 2     | 64                    | 504                   | 64 ms               |
//! | 3     | 512                   | 4 032                 | 512 ms              |
//! | 4     | 4 096                 | 32 256                | ~4 s                |
//! | 5     | 32 768                | 258 048               | ~33 s               |
//! | 6     | 262 144               | 2 064 384             | ~4.4 min            |
//! | 7     | 2 097 152             | 16 515 072            | ~35 min             |
//! | 8     | 16 777 216            | 132 120 576           | ~4.7 h              |
//!
//! Each level has 64 buckets. Level 8 exists only when HZ > 100 ([`depth_for_hz`]). Deltas
//! at or beyond [`timeout_cutoff`] (~12 days at HZ=1000) are clamped to [`timeout_max`] and
//! land in the last level: those timers, and only those, fire before their requested jiffy.
//! A timer whose expiry is already behind the wheel clock goes into the level-0 bucket of the
//! clock itself and fires at the next [`TimerWheel::advance`].
//!
//! ## Rounding, exactly
//!
//! For a timer filed in level `n` with granularity `g = 8^n`, the effective expiry is the
//! smallest multiple of `g` that is **strictly** greater than the requested expiry. Even at
//! level 0 this adds one jiffy, because the kernel must not fire a timer armed just before a
//! jiffy edge early. The bucket is that multiple divided by `g`, modulo 64 ([`bucket_for`]).
//!
//! ## Why buckets never alias
//!
//! Every pending timer has an effective expiry at or after the wheel clock `clk`, and a timer
//! filed at level `n` has `expiry / g` in `[ceil(clk / g), ceil(clk / g) + 63]`. That window
//! holds 64 values, so each bucket of a level holds timers of a single effective expiry. Moving
//! `clk` forward keeps every remaining timer inside the (moving) window, as long as every timer
//! at or before the new clock has been fired first, which [`TimerWheel::advance`] does and
//! [`TimerWheel::forward`] respects. This is what lets [`TimerWheel::next_expiry`] read the
//! earliest expiry of a level straight off its 64-bit occupancy bitmap: rotate the bitmap so
//! the window's first bucket is bit 0, and count trailing zeros.
//!
//! ## Storage
//!
//! Timers are identified by [`WheelTimerId`], an index into the caller's slab. The wheel
//! preallocates one slab entry per possible id in [`TimerWheel::new`] and links entries into
//! intrusive doubly-linked bucket lists, so nothing allocates afterwards. Deferrable timers
//! live in a second set of buckets and bitmaps (the kernel's `BASE_DEF`), so that the next
//! expiry of an idle CPU can ignore them.
//!
//! ## Order of expiry
//!
//! [`TimerWheel::advance`] fires deterministically, in the kernel's order: all due
//! non-deferrable timers first, then all due deferrable ones (the TIMER softirq runs the
//! standard base before the deferrable one); within a base by effective expiry; within one
//! expiry the higher level first; within one bucket the most recently filed timer first (the
//! kernel pushes onto the head of a bucket list and expires from the head).
//!
//! Re-arming a pending timer with the same requested expiry, or with an expiry that maps to the
//! bucket it already occupies, leaves it where it is (the kernel's `mod_timer` shortcut), so its
//! place in the bucket's order and its effective expiry are kept.
//!
//! ## What is not modelled
//!
//! The kernel keeps the clock one jiffy ahead while it runs expired timers and forwards an idle
//! base's clock lazily when a timer is armed; here the clock is simply the jiffy passed to the
//! last [`TimerWheel::advance`] or [`TimerWheel::forward`]. Callers that let jiffies run while
//! the wheel is idle should call [`TimerWheel::forward`] before [`TimerWheel::add`], as the
//! kernel does on every arm. Timer migration between CPUs, pinning and the ≥ 6.9 global
//! timer hierarchy belong to the caller.
//!
//! ## Files
//!
//! * `level.rs`: the pure index math of the levels, [`place`] and its parts
//!   ([`level_for`], [`round_up`], [`bucket_for`]), with their boundary tests.
//! * this file: the wheel itself, [`TimerWheel`], its slab and bucket lists.
//! * `tests.rs`: the wheel's behaviour tables and a brute-force reference model it is checked
//!   against by property tests.

mod level;

pub use level::{
    LVL_BITS, LVL_CLK_SHIFT, LVL_SIZE, MAX_DEPTH, Placement, bucket_for, depth_for_hz, level_for,
    level_granularity, level_shift, level_start, place, round_up, timeout_cutoff, timeout_max,
};

use level::LVL_MASK;

use std::fmt;

/// Number of timer bases: non-deferrable and deferrable.
const BASES: usize = 2;
const BASE_STD: usize = 0;
const BASE_DEF: usize = 1;
/// End-of-list / not-linked marker in the intrusive lists.
const NIL: u32 = u32::MAX;
/// `Entry::bucket` value of a timer that is not pending.
const NOT_PENDING: u16 = u16::MAX;

/// Identifies a timer in the caller's slab; the wheel stores it, never interprets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WheelTimerId(pub u32);

/// One slab slot: the intrusive list links and the timer's expiries.
#[derive(Clone, Copy, Debug)]
struct Entry {
    prev: u32,
    next: u32,
    /// Requested expiry (jiffies).
    expires: u64,
    /// Effective (bucket) expiry (jiffies).
    effective: u64,
    /// Global bucket index, or [`NOT_PENDING`].
    bucket: u16,
    deferrable: bool,
}

impl Entry {
    const IDLE: Entry = Entry {
        prev: NIL,
        next: NIL,
        expires: 0,
        effective: 0,
        bucket: NOT_PENDING,
        deferrable: false,
    };
}

/// A per-CPU timer wheel over jiffies. See the [module documentation](self) for the design.
///
/// Layout: `repr(C)` with the memo first, the one field every tick reads: the twin's `Cpu`
/// record places the wheel right after its hrtimer base so that the memo shares that line
/// (docs/model.md, "Speed of the event loop").
#[repr(C)]
pub struct TimerWheel {
    /// Memo of [`TimerWheel::next_expiry`] (index: `include_deferrable`), asked on every tick.
    /// Invariant: cleared by every change of a bucket list or of the clock.
    next_memo: [std::cell::Cell<Option<Option<u64>>>; 2],
    hz: u32,
    depth: usize,
    /// The wheel clock (jiffies): every pending timer's effective expiry is at or after it.
    clk: u64,
    /// Number of pending timers.
    len: usize,
    /// One entry per possible [`WheelTimerId`].
    entries: Vec<Entry>,
    /// Head of each bucket list, indexed by [`TimerWheel::bucket_index`].
    heads: Vec<u32>,
    /// Per base and level: bit `b` set ⇔ bucket `b` is non-empty.
    occupied: [[u64; MAX_DEPTH]; BASES],
}

impl fmt::Debug for TimerWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerWheel")
            .field("hz", &self.hz)
            .field("depth", &self.depth)
            .field("clk", &self.clk)
            .field("len", &self.len)
            .field("capacity", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl TimerWheel {
    /// Bytes at the start of the wheel that a tick reads (the memo of
    /// [`TimerWheel::next_expiry`]): what a prefetch of the next event's CPU covers.
    pub(crate) const HOT_BYTES: usize =
        std::mem::size_of::<[std::cell::Cell<Option<Option<u64>>>; 2]>();

    /// An empty wheel for a kernel built with `hz`, with room for timer ids `0..capacity`.
    /// The clock starts at 0; use [`TimerWheel::with_clk`] to start elsewhere (e.g. the
    /// kernel's `INITIAL_JIFFIES`).
    ///
    /// # Panics
    ///
    /// If `capacity` exceeds `u32::MAX` (ids are `u32`; `u32::MAX` is reserved).
    pub fn new(hz: u32, capacity: usize) -> Self {
        Self::with_clk(hz, capacity, 0)
    }

    /// Like [`TimerWheel::new`], with the wheel clock starting at `clk` jiffies.
    pub fn with_clk(hz: u32, capacity: usize, clk: u64) -> Self {
        assert!(
            capacity < NIL as usize,
            "timer wheel capacity {capacity} too large"
        );
        let depth = depth_for_hz(hz);
        TimerWheel {
            hz,
            depth,
            clk,
            len: 0,
            entries: vec![Entry::IDLE; capacity],
            heads: vec![NIL; BASES * depth * LVL_SIZE],
            occupied: [[0; MAX_DEPTH]; BASES],
            next_memo: Default::default(),
        }
    }

    /// The HZ this wheel was built for.
    pub fn hz(&self) -> u32 {
        self.hz
    }

    /// Number of levels (8 or 9).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Largest number of timer ids this wheel can hold.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Current wheel clock in jiffies.
    pub fn clk(&self) -> u64 {
        self.clk
    }

    /// Number of pending timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is pending.
    ///
    /// # Panics
    ///
    /// If `id` is not below the capacity.
    pub fn is_pending(&self, id: WheelTimerId) -> bool {
        self.entry(id).bucket != NOT_PENDING
    }

    /// The requested expiry of a pending timer.
    pub fn requested_expiry(&self, id: WheelTimerId) -> Option<u64> {
        let e = self.entry(id);
        (e.bucket != NOT_PENDING).then_some(e.expires)
    }

    /// The effective (bucket) expiry of a pending timer: the jiffy it will fire at.
    pub fn effective_expiry(&self, id: WheelTimerId) -> Option<u64> {
        let e = self.entry(id);
        (e.bucket != NOT_PENDING).then_some(e.effective)
    }

    /// Arms `id` to expire at jiffy `expires`; `deferrable` timers do not wake an idle CPU.
    ///
    /// Returns the effective expiry (the jiffy at which [`TimerWheel::advance`] will fire it).
    /// Re-adding a pending id moves it, unless the requested expiry is unchanged or maps to
    /// the bucket it already occupies (then only the requested expiry is updated).
    ///
    /// # Panics
    ///
    /// If `id` is not below the capacity.
    pub fn add(&mut self, id: WheelTimerId, expires: u64, deferrable: bool) -> u64 {
        let p = place(expires, self.clk, self.depth);
        let base = if deferrable { BASE_DEF } else { BASE_STD };
        let bucket = self.bucket_index(base, p.level, p.bucket);
        let old = *self.entry(id);
        if old.bucket != NOT_PENDING && old.deferrable == deferrable {
            if old.expires == expires {
                return old.effective;
            }
            if usize::from(old.bucket) == bucket {
                debug_assert_eq!(old.effective, p.expiry, "bucket aliasing");
                self.entries[id.0 as usize].expires = expires;
                return old.effective;
            }
        }
        if old.bucket != NOT_PENDING {
            self.unlink(id.0);
        }
        let e = &mut self.entries[id.0 as usize];
        e.expires = expires;
        e.effective = p.expiry;
        e.deferrable = deferrable;
        self.link(id.0, bucket);
        p.expiry
    }

    /// Disarms `id`. Returns whether it was pending.
    ///
    /// # Panics
    ///
    /// If `id` is not below the capacity.
    pub fn remove(&mut self, id: WheelTimerId) -> bool {
        if self.is_pending(id) {
            self.unlink(id.0);
            true
        } else {
            false
        }
    }

    /// The earliest effective expiry among pending timers (jiffies), ignoring deferrable
    /// timers unless `include_deferrable` (an idle CPU ignores them, §3.4).
    pub fn next_expiry(&self, include_deferrable: bool) -> Option<u64> {
        let memo = &self.next_memo[include_deferrable as usize];
        if let Some(known) = memo.get() {
            return known;
        }
        let next = self.compute_next_expiry(include_deferrable);
        memo.set(Some(next));
        next
    }

    fn forget_next(&self) {
        self.next_memo[0].set(None);
        self.next_memo[1].set(None);
    }

    fn compute_next_expiry(&self, include_deferrable: bool) -> Option<u64> {
        let std = self.base_next(BASE_STD).map(|(t, _)| t);
        if !include_deferrable {
            return std;
        }
        match (std, self.base_next(BASE_DEF).map(|(t, _)| t)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves the clock towards `now` without firing anything: to `now`, or to the earliest
    /// pending expiry if that comes first (the kernel's `forward_timer_base`, done before a
    /// timer is armed so that its level is chosen from an up-to-date clock). Never moves the
    /// clock backwards.
    pub fn forward(&mut self, now: u64) {
        let target = match self.next_expiry(true) {
            Some(next) => now.min(next),
            None => now,
        };
        self.clk = self.clk.max(target);
        self.forget_next();
    }

    /// Expires every timer whose effective expiry is at or before `now`, calling `f` with each
    /// id after it has been removed, in the order given in the [module documentation](self);
    /// then sets the clock to `now`.
    ///
    /// Empty stretches are skipped with the occupancy bitmaps, so the cost depends on the
    /// number of buckets fired, not on the length of the gap. A `now` before the clock fires
    /// nothing and leaves the clock unchanged.
    pub fn advance(&mut self, now: u64, mut f: impl FnMut(WheelTimerId)) {
        if now < self.clk {
            return;
        }
        for base in [BASE_STD, BASE_DEF] {
            while let Some((expiry, levels)) = self.base_next(base) {
                if expiry > now {
                    break;
                }
                for level in (0..self.depth).rev() {
                    if levels & (1 << level) != 0 {
                        self.drain(base, level, expiry, &mut f);
                    }
                }
            }
        }
        self.clk = now;
        self.forget_next();
    }

    fn entry(&self, id: WheelTimerId) -> &Entry {
        let cap = self.entries.len();
        self.entries
            .get(id.0 as usize)
            .unwrap_or_else(|| panic!("timer id {} beyond wheel capacity {cap}", id.0))
    }

    fn bucket_index(&self, base: usize, level: usize, bucket: usize) -> usize {
        (base * self.depth + level) * LVL_SIZE + bucket
    }

    /// Splits a global bucket index into (base, level, bucket).
    fn bucket_coords(&self, index: usize) -> (usize, usize, usize) {
        let bucket = index % LVL_SIZE;
        let rest = index / LVL_SIZE;
        (rest / self.depth, rest % self.depth, bucket)
    }

    /// Earliest effective expiry of one level, with its bucket.
    fn level_next(&self, base: usize, level: usize) -> Option<(u64, usize)> {
        let occupied = self.occupied[base][level];
        if occupied == 0 {
            return None;
        }
        let shift = level_shift(level);
        // The window of this level starts at the first granule at or after the clock.
        let first = self.clk.div_ceil(level_granularity(level));
        let start = (first & LVL_MASK) as u32;
        let offset = u64::from(occupied.rotate_right(start).trailing_zeros());
        Some((
            (first + offset) << shift,
            ((first + offset) & LVL_MASK) as usize,
        ))
    }

    /// Earliest effective expiry of a base, with a bitmask of the levels holding it.
    fn base_next(&self, base: usize) -> Option<(u64, u32)> {
        let mut best: Option<(u64, u32)> = None;
        for level in 0..self.depth {
            if let Some((t, _)) = self.level_next(base, level) {
                best = match best {
                    Some((b, _)) if t > b => best,
                    Some((b, mask)) if t == b => Some((b, mask | 1 << level)),
                    _ => Some((t, 1 << level)),
                };
            }
        }
        best
    }

    /// Fires the bucket of `level` that holds `expiry`.
    fn drain(&mut self, base: usize, level: usize, expiry: u64, f: &mut impl FnMut(WheelTimerId)) {
        let bucket = ((expiry >> level_shift(level)) & LVL_MASK) as usize;
        let index = self.bucket_index(base, level, bucket);
        loop {
            let head = self.heads[index];
            if head == NIL {
                break;
            }
            debug_assert_eq!(self.entries[head as usize].effective, expiry);
            self.unlink(head);
            f(WheelTimerId(head));
        }
    }

    fn link(&mut self, id: u32, index: usize) {
        self.forget_next();
        let head = self.heads[index];
        {
            let e = &mut self.entries[id as usize];
            e.prev = NIL;
            e.next = head;
            e.bucket = index as u16;
        }
        if head != NIL {
            self.entries[head as usize].prev = id;
        }
        self.heads[index] = id;
        let (base, level, bucket) = self.bucket_coords(index);
        self.occupied[base][level] |= 1 << bucket;
        self.len += 1;
    }

    fn unlink(&mut self, id: u32) {
        self.forget_next();
        let Entry {
            prev, next, bucket, ..
        } = self.entries[id as usize];
        let index = usize::from(bucket);
        if prev == NIL {
            self.heads[index] = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        }
        let e = &mut self.entries[id as usize];
        e.prev = NIL;
        e.next = NIL;
        e.bucket = NOT_PENDING;
        if self.heads[index] == NIL {
            let (base, level, b) = self.bucket_coords(index);
            self.occupied[base][level] &= !(1 << b);
        }
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests;
