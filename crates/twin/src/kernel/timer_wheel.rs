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
//! `kernel-tick-behaviour.md`) and how wakeups batch together (§12.3).
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

use std::fmt;

/// log2 of the granularity ratio between neighbouring levels (8).
pub const LVL_CLK_SHIFT: u32 = 3;
/// log2 of the number of buckets per level.
pub const LVL_BITS: u32 = 6;
/// Buckets per level.
pub const LVL_SIZE: usize = 1 << LVL_BITS;
/// Mask selecting a bucket within a level.
const LVL_MASK: u64 = (LVL_SIZE as u64) - 1;
/// The most levels a wheel can have (HZ > 100).
pub const MAX_DEPTH: usize = 9;

/// Number of timer bases: non-deferrable and deferrable.
const BASES: usize = 2;
const BASE_STD: usize = 0;
const BASE_DEF: usize = 1;
/// End-of-list / not-linked marker in the intrusive lists.
const NIL: u32 = u32::MAX;
/// `Entry::bucket` value of a timer that is not pending.
const NOT_PENDING: u16 = u16::MAX;

/// Number of levels of the wheel for a given HZ: 9 when HZ > 100, else 8.
pub const fn depth_for_hz(hz: u32) -> usize {
    if hz > 100 { 9 } else { 8 }
}

/// log2 of the granularity of `level`, in jiffies.
pub const fn level_shift(level: usize) -> u32 {
    level as u32 * LVL_CLK_SHIFT
}

/// Granularity of `level` in jiffies: `8^level`.
pub const fn level_granularity(level: usize) -> u64 {
    1 << level_shift(level)
}

/// Smallest delta (requested expiry minus wheel clock, in jiffies) that is filed at `level`.
///
/// Level `n ≥ 1` starts at `63 · 8^(n-1)`: one granule below the end of the previous level,
/// because rounding up adds up to one granule and the rounded expiry must still fit.
pub const fn level_start(level: usize) -> u64 {
    if level == 0 {
        0
    } else {
        (LVL_SIZE as u64 - 1) << level_shift(level - 1)
    }
}

/// Deltas at or beyond this many jiffies exceed the capacity of a wheel of `depth` levels.
pub const fn timeout_cutoff(depth: usize) -> u64 {
    level_start(depth)
}

/// The delta a too-long timeout is clamped to: the cutoff minus one granule of the last level.
pub const fn timeout_max(depth: usize) -> u64 {
    timeout_cutoff(depth) - level_granularity(depth - 1)
}

/// The level a timer `delta` jiffies ahead of the wheel clock is filed in, for a wheel of
/// `depth` levels (deltas beyond the last level's range go to the last level).
pub const fn level_for(delta: u64, depth: usize) -> usize {
    let last = depth - 1;
    let mut level = 0;
    while level < last {
        if delta < level_start(level + 1) {
            return level;
        }
        level += 1;
    }
    last
}

/// The effective expiry of a timer requested for `expires` and filed at `level`: the smallest
/// multiple of the level's granularity strictly greater than `expires`.
///
/// # Panics
///
/// On overflow, i.e. when `expires` is within one granule of `u64::MAX`.
pub const fn round_up(expires: u64, level: usize) -> u64 {
    let shift = level_shift(level);
    ((expires >> shift) + 1) << shift
}

/// The bucket (0..64) within `level` of a timer requested for `expires`.
pub const fn bucket_for(expires: u64, level: usize) -> usize {
    (((expires >> level_shift(level)) + 1) & LVL_MASK) as usize
}

/// Where a timer goes: the answer of [`place`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Level (0..depth).
    pub level: usize,
    /// Bucket within the level (0..64).
    pub bucket: usize,
    /// Effective expiry in jiffies: the jiffy at which the timer will fire.
    pub expiry: u64,
}

/// Files a timer requested for `expires` into a wheel of `depth` levels whose clock is `clk`.
///
/// * `expires < clk` (already due): level 0, the clock's own bucket, effective expiry `clk`.
/// * delta ≥ [`timeout_cutoff`]: clamped to `clk + timeout_max(depth)` in the last level.
/// * otherwise: level [`level_for`], expiry [`round_up`], bucket [`bucket_for`].
pub const fn place(expires: u64, clk: u64, depth: usize) -> Placement {
    if expires < clk {
        return Placement {
            level: 0,
            bucket: (clk & LVL_MASK) as usize,
            expiry: clk,
        };
    }
    let delta = expires - clk;
    let level = level_for(delta, depth);
    let expires = if delta >= timeout_cutoff(depth) {
        clk + timeout_max(depth)
    } else {
        expires
    };
    Placement {
        level,
        bucket: bucket_for(expires, level),
        expiry: round_up(expires, level),
    }
}

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
pub struct TimerWheel {
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
    /// Memo of [`TimerWheel::next_expiry`] (index: `include_deferrable`), asked on every tick.
    /// Invariant: cleared by every change of a bucket list or of the clock.
    next_memo: [std::cell::Cell<Option<Option<u64>>>; 2],
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
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BTreeMap;

    const DEPTHS: [usize; 2] = [8, 9];

    #[test]
    fn depth_follows_hz() {
        for (hz, depth) in [(100, 8), (101, 9), (250, 9), (300, 9), (1000, 9), (24, 8)] {
            assert_eq!(depth_for_hz(hz), depth, "hz {hz}");
        }
    }

    #[test]
    fn level_constants() {
        let starts = [
            0u64,
            63,
            504,
            4_032,
            32_256,
            258_048,
            2_064_384,
            16_515_072,
            132_120_576,
        ];
        for (level, &start) in starts.iter().enumerate() {
            assert_eq!(level_start(level), start, "level {level}");
            assert_eq!(
                level_granularity(level),
                8u64.pow(level as u32),
                "level {level}"
            );
        }
        assert_eq!(timeout_cutoff(9), 1_056_964_608);
        assert_eq!(timeout_max(9), 1_056_964_608 - 16_777_216);
        assert_eq!(timeout_cutoff(8), 132_120_576);
        assert_eq!(timeout_max(8), 132_120_576 - 2_097_152);
    }

    #[test]
    fn level_for_every_boundary() {
        for depth in DEPTHS {
            assert_eq!(level_for(0, depth), 0);
            assert_eq!(level_for(1, depth), 0);
            for level in 1..depth {
                let start = level_start(level);
                assert_eq!(
                    level_for(start - 1, depth),
                    level - 1,
                    "depth {depth} level {level}"
                );
                assert_eq!(
                    level_for(start, depth),
                    level,
                    "depth {depth} level {level}"
                );
                assert_eq!(
                    level_for(start + 1, depth),
                    level,
                    "depth {depth} level {level}"
                );
            }
            // Beyond the last level's range everything stays in the last level.
            let cutoff = timeout_cutoff(depth);
            for delta in [cutoff - 1, cutoff, cutoff + 1, u64::MAX] {
                assert_eq!(
                    level_for(delta, depth),
                    depth - 1,
                    "depth {depth} delta {delta}"
                );
            }
        }
        // The ninth level exists only in the deeper wheel.
        assert_eq!(level_for(level_start(8), 9), 8);
        assert_eq!(level_for(level_start(8), 8), 7);
    }

    #[test]
    fn round_up_and_bucket_every_level() {
        // (expires, level, effective expiry, bucket)
        let table: &[(u64, usize, u64, usize)] = &[
            (0, 0, 1, 1),
            (100, 0, 101, 37),
            (62, 0, 63, 63),
            (63, 0, 64, 0),
            (800, 1, 808, 37),
            (807, 1, 808, 37),
            (808, 1, 816, 38),
            (799, 1, 800, 36),
            (511, 1, 512, 0),
            (512, 1, 520, 1),
            (4_096, 2, 4_160, 1),
            (4_095, 2, 4_096, 0),
            (4_159, 2, 4_160, 1),
        ];
        for &(expires, level, effective, bucket) in table {
            assert_eq!(round_up(expires, level), effective, "{expires} @ {level}");
            assert_eq!(bucket_for(expires, level), bucket, "{expires} @ {level}");
        }
        // At every level, around every multiple of the granularity.
        for level in 0..MAX_DEPTH {
            let g = level_granularity(level);
            for k in [1u64, 2, 63, 64, 65, 1000] {
                let m = k * g;
                assert_eq!(round_up(m - 1, level), m, "level {level} k {k}");
                assert_eq!(round_up(m, level), m + g, "level {level} k {k}");
                assert_eq!(bucket_for(m - 1, level), (k % 64) as usize);
                assert_eq!(bucket_for(m, level), ((k + 1) % 64) as usize);
                if level > 0 {
                    // m + 1 is inside the same granule only when granules are wider than 1.
                    assert_eq!(round_up(m + 1, level), m + g, "level {level} k {k}");
                    assert_eq!(bucket_for(m + 1, level), ((k + 1) % 64) as usize);
                }
            }
        }
    }

    #[test]
    fn place_at_every_boundary() {
        for depth in DEPTHS {
            for clk in [0u64, 1, 7, 8, 4_294_667_296, 1 << 40] {
                // Past timers go into the clock's own level-0 bucket.
                if clk > 0 {
                    let p = place(clk - 1, clk, depth);
                    assert_eq!(
                        p,
                        Placement {
                            level: 0,
                            bucket: (clk % 64) as usize,
                            expiry: clk
                        }
                    );
                }
                for level in 0..depth {
                    let start = level_start(level);
                    for delta in [start.saturating_sub(1), start, start + 1] {
                        let p = place(clk + delta, clk, depth);
                        let want = level_for(delta, depth);
                        assert_eq!(p.level, want, "depth {depth} clk {clk} delta {delta}");
                        let g = level_granularity(want);
                        assert!(p.expiry > clk + delta && p.expiry - (clk + delta) <= g);
                        assert_eq!(p.expiry % g, 0);
                        assert_eq!(p.bucket, ((p.expiry / g) % 64) as usize);
                    }
                }
                // Clamping at the cutoff.
                let cutoff = timeout_cutoff(depth);
                let last = depth - 1;
                let capped = round_up(clk + timeout_max(depth), last);
                for delta in [cutoff, cutoff + 1, cutoff * 10] {
                    let p = place(clk + delta, clk, depth);
                    assert_eq!(
                        (p.level, p.expiry),
                        (last, capped),
                        "depth {depth} delta {delta}"
                    );
                }
                let below = place(clk + cutoff - 1, clk, depth);
                assert_eq!(below.level, last);
                assert_eq!(below.expiry, round_up(clk + cutoff - 1, last));
                assert!(below.expiry >= capped);
            }
        }
    }

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
        fn lateness_is_bounded_by_the_level(
            hz in prop::sample::select(vec![100u32, 1000]),
            clk in 0u64..1 << 40,
            delta in prop_oneof![0u64..2_000_000_000, 0u64..1 << 40],
        ) {
            let depth = depth_for_hz(hz);
            let p = place(clk + delta, clk, depth);
            if delta < timeout_cutoff(depth) {
                // Level n is used only for deltas ≥ 63·8^(n-1), so a granule is ≤ 8/63 of the
                // delta: timers fire at most ~12.7 % (and at least one jiffy) late.
                let late = p.expiry - (clk + delta);
                prop_assert!(late >= 1);
                prop_assert!(late <= (delta * 8).div_ceil(63).max(1));
            } else {
                // Beyond the wheel's capacity timers are clamped, i.e. fire early.
                prop_assert_eq!(p.expiry, round_up(clk + timeout_max(depth), depth - 1));
                prop_assert!(p.expiry < clk + delta);
            }
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
}
