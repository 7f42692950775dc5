//! Spinlocks by era: the x86 ticket lock, whose hand-off grows with the number of spinners,
//! and the queued lock of 4.2 on, whose hand-off does not (docs/model.md "Spinlocks by era",
//! docs/costs.md §5b).
//!
//! **Queued (4.2 on).** Each waiter spins on a node of its own; a release writes the lock
//! word, which only the head of the queue is reading, so a hand-off is one line transfer
//! from the releaser to the next owner whatever the number of waiters. That is
//! [`ContendedLock`](super::lock::ContendedLock)'s FIFO hand-off without a `TicketQueue`.
//!
//! **Ticket (2.6.25 to 4.1).** Every waiter takes a ticket and spins reading the lock's own
//! line. A release writes the line: every spinner's copy is invalidated, every spinner reads
//! the line again, and the line's owner answers those reads one after another. The next
//! owner's read is somewhere among them; Boyd-Wickizer, Kaashoek, Morris and Zeldovich
//! ("Non-scalable locks are dangerous", Linux Symposium 2012) take its place as uniform, so it
//! waits on average for half of the other spinners' reads. With `k` CPUs holding or waiting
//! and one transfer cost `c` their Markov model serves a release in `s + c·k/2`. The twin
//! computes the same expectation from the machine's costs and topology, with no constant of
//! its own: the hand-off after a release by `r` is
//!
//! ```text
//! transfer(r → next owner) + ½ · Σ transfer(r → o)   over the other spinners o
//! ```
//!
//! which is `c·k/2` when every transfer costs `c` (`k − 1` spinners at the release).
//!
//! Spinners are the waiters queued for the lock and the seqcount readers spinning on the same
//! line (3.0's `seqlock_t` keeps its sequence and its spinlock side by side: `xtime_lock`'s
//! readers spin on the line its writers queue on). A spinner slows every release it spins
//! through, so its arrival delays the hand-offs still to come and every grant after them.
//!
//! Causality (the twin's handlers are atomic, docs/model.md "Event model"): a CPU's wait is
//! computed when it reaches the lock, so it counts the spinners that reached the lock before
//! it; a spinner that arrives later slows the later grants, never one already computed. For
//! `N` simultaneous arrivals the last one served, and the time the lock is free again, are the
//! Markov model's exactly; the `k`-th served waits what the model gives the `k`-th of a burst
//! of `k`, so the burst's total wait lies between half the model's (for large `N`) and all of
//! it (tests: `burst_*`).
//!
//! The pending releases live in a ring sized when the lock is built (no allocation per
//! event); when it is full the earliest release is forgotten (its spinners' share of the
//! hand-off is then not charged to later arrivals). Capacity is four entries per CPU, which
//! the twin never fills: a CPU spins at one lock at a time.

use super::cacheline::{TransferCost, TransferFrom, TransferTable};
use crate::engine::Time;

pub use ticklab_schema::scenario::Spinlock;

/// Ring entries per CPU of the machine ([`TicketQueue::new`]).
pub(crate) const RING_PER_CPU: usize = 4;

/// A release still to come on a ticket lock's line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Release {
    /// When the holder releases (ns).
    at: Time,
    /// The holder.
    cpu: u32,
    /// The holder's socket.
    socket: u32,
    /// Σ transfer(holder → spinner) over the spinners at this release that are not its next
    /// owner (ns); half of it is the next owner's expected queueing.
    others_ns: u64,
}

/// Half of `sum + c` minus half of `sum`: what one more spinner of transfer `c` adds to the
/// expected queueing at a release whose other spinners' transfers add to `sum` (rounded so
/// the halves of the running sum add up exactly).
#[inline]
fn added_half(sum: u64, c: u64) -> u64 {
    (sum + c) / 2 - sum / 2
}

/// A ring of releases, earliest first: a buffer of a power-of-two length, so that wrapping
/// an index is a mask rather than the compare and subtract of a `VecDeque`. In E2 three
/// acquisitions in five find nothing pending, so the pushes and pops are most of their work;
/// with this ring the ticket acquisitions of E2 (a) run 12 % fewer instructions
/// (docs/model.md, "The fifth round of issue 34"). Sized once; never grows.
///
/// Invariant: `len <= buf.len()`, and `buf.len()` is a power of two.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReleaseRing {
    buf: Box<[Release]>,
    /// Index of the earliest release.
    head: usize,
    len: usize,
}

impl ReleaseRing {
    /// An empty ring that holds at least `capacity` releases.
    fn with_capacity(capacity: usize) -> ReleaseRing {
        ReleaseRing {
            buf: vec![Release::default(); capacity.next_power_of_two()].into_boxed_slice(),
            head: 0,
            len: 0,
        }
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn mask(&self) -> usize {
        debug_assert!(self.buf.len().is_power_of_two());
        self.buf.len() - 1
    }

    /// The `i`-th release from the earliest (`i < len`).
    #[inline]
    fn get(&self, i: usize) -> &Release {
        debug_assert!(i < self.len);
        &self.buf[(self.head + i) & self.mask()]
    }

    #[inline]
    fn back(&self) -> Option<&Release> {
        (self.len > 0).then(|| self.get(self.len - 1))
    }

    /// Drops the earliest release (the ring must not be empty).
    #[inline]
    fn pop_front(&mut self) {
        debug_assert!(self.len > 0);
        self.head = (self.head + 1) & self.mask();
        self.len -= 1;
    }

    /// Drops the releases at or before `t` from the front (`at` is non-decreasing, so they
    /// are all there is to drop).
    #[inline]
    fn pop_until(&mut self, t: Time) {
        let mask = self.mask();
        while self.len > 0 && self.buf[self.head & mask].at <= t {
            self.head = (self.head + 1) & mask;
            self.len -= 1;
        }
    }

    /// Appends `r` as the latest release (the ring must not be full).
    #[inline]
    fn push_back(&mut self, r: Release) {
        debug_assert!(self.len < self.buf.len(), "release ring full");
        let i = (self.head + self.len) & self.mask();
        self.buf[i] = r;
        self.len += 1;
    }

    /// Index of the first release after `t` (`at` is non-decreasing: a binary search).
    #[inline]
    fn partition_point(&self, pred: impl Fn(&Release) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The releases in order, as the part up to the buffer's end and the part wrapped to its
    /// start.
    #[inline]
    fn as_mut_slices(&mut self) -> (&mut [Release], &mut [Release]) {
        let cap = self.buf.len();
        let end = self.head + self.len;
        if end <= cap {
            (&mut self.buf[self.head..end], &mut [][..])
        } else {
            let (wrapped, first) = self.buf.split_at_mut(self.head);
            (first, &mut wrapped[..end - cap])
        }
    }

    /// The releases in order.
    fn iter(&self) -> impl Iterator<Item = &Release> {
        (0..self.len).map(|i| self.get(i))
    }
}

/// The ticket lock's pending releases, earliest first (invariant: `at` non-decreasing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TicketQueue {
    pending: ReleaseRing,
    capacity: usize,
    /// The machine's transfers between sockets, built at the first arrival (the lock does not
    /// know the machine's costs before) and again only if an arrival brings other costs;
    /// `None` on a machine of more sockets than the table holds, where each arrival builds
    /// its own `TransferTo`.
    table: Option<TransferTable>,
}

impl TicketQueue {
    /// A queue for a lock on a machine of `nr_cpus` CPUs.
    pub(crate) fn new(nr_cpus: usize) -> TicketQueue {
        let capacity = (nr_cpus * RING_PER_CPU).max(RING_PER_CPU);
        TicketQueue {
            pending: ReleaseRing::with_capacity(capacity),
            capacity,
            table: None,
        }
    }

    /// Index of the first release after `t`.
    #[inline]
    fn first_after(&self, t: Time) -> usize {
        self.pending.partition_point(|r| r.at <= t)
    }

    /// Forgets the releases at or before `t` (they are over for an arrival at `t`). The same
    /// as draining up to [`TicketQueue::first_after`], since `at` is non-decreasing, but a
    /// walk from the front: each release is pushed once and popped once, so an arrival pays
    /// for the releases it forgets, not a binary search over the ones still to come.
    #[inline]
    fn drop_released(&mut self, t: Time) {
        self.pending.pop_until(t);
        debug_assert_eq!(self.first_after(t), 0);
    }

    /// The grant of `cpu` on `socket` arriving at `t` behind the pending releases, without
    /// changing anything; `None` when no release is pending after `t`.
    #[inline]
    pub(crate) fn grant(&self, t: Time, cpu: u32, socket: u32, cost: TransferCost) -> Option<Time> {
        let live = self.first_after(t);
        let last = *self.pending.back()?;
        if live == self.pending.len() {
            return None;
        }
        // Through every release but the last the CPU spins as one more reader.
        let to = cost.to(cpu, socket);
        let shift: u64 = (live..self.pending.len() - 1)
            .map(|i| self.pending.get(i))
            .map(|r| added_half(r.others_ns, to.from(r.cpu, r.socket)))
            .sum();
        Some(last.at + shift + to.from(last.cpu, last.socket) + last.others_ns / 2)
    }

    /// Takes the lock for `cpu` arriving at `t`, holding it `hold_ns` once granted: spins
    /// through the pending releases (slowing their hand-offs), is served after the last one,
    /// and queues its own release. `free_grant` is the grant when nothing is pending after `t`
    /// (the queued rule: the lock's free time plus the transfer). Returns the grant.
    pub(crate) fn acquire(
        &mut self,
        t: Time,
        hold_ns: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
        free_grant: Time,
    ) -> Time {
        self.drop_released(t);
        let grant = match self.spin_through(cpu, socket, cost, false) {
            Some(g) => g,
            None => free_grant,
        };
        if self.pending.len() == self.capacity {
            self.pending.pop_front();
        }
        self.pending.push_back(Release {
            at: grant + hold_ns,
            cpu,
            socket,
            others_ns: 0,
        });
        self.check();
        grant
    }

    /// A seqcount read by `cpu` at `t` while writers are inside or queued: the reader spins
    /// through every pending release and reads the line after the last one, behind half of
    /// the other spinners' reads there; it stays registered there, so later spinners queue
    /// behind it. Returns when its read completes, or `None` when nothing is pending after
    /// `t` (no writer inside: the caller's plain read).
    pub(crate) fn read(
        &mut self,
        t: Time,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> Option<Time> {
        self.drop_released(t);
        let done = self.spin_through(cpu, socket, cost, true);
        self.check();
        done
    }

    /// Adds `cpu` as a spinner to every pending release (all are after the arrival) and
    /// shifts the later ones by what it adds to each hand-off; returns when its read after the
    /// last release completes (`None` if none is pending). With `stay`, the CPU is also
    /// registered at the last release (a reader; a lock waiter instead queues a release of
    /// its own). Inlined into its two callers (a call and its register saves were about a
    /// tenth of the instructions of a short walk).
    #[inline(always)]
    fn spin_through(
        &mut self,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
        stay: bool,
    ) -> Option<Time> {
        if self.pending.is_empty() {
            return None;
        }
        if self.table.as_ref().is_none_or(|t| t.cost() != cost) {
            self.table = TransferTable::new(cost);
        }
        match &self.table {
            Some(table) => walk(&mut self.pending, table.to(cpu, socket), stay),
            None => walk(&mut self.pending, cost.to(cpu, socket), stay),
        }
    }

    /// The lock's socket-to-socket transfer table, when it has one for `cost` (built at the
    /// first arrival that found a release pending).
    #[inline]
    pub(crate) fn table(&self, cost: TransferCost) -> Option<&TransferTable> {
        self.table.as_ref().filter(|t| t.cost() == cost)
    }

    /// When the last pending release happens, if any.
    #[inline]
    pub(crate) fn last_release(&self) -> Option<Time> {
        self.pending.back().map(|r| r.at)
    }

    #[inline]
    fn check(&self) {
        debug_assert!(self.pending.len() <= self.capacity);
        debug_assert!(
            self.pending
                .iter()
                .zip(self.pending.iter().skip(1))
                .all(|(a, b)| a.at <= b.at),
            "pending releases out of order"
        );
    }
}

/// [`TicketQueue::spin_through`]'s walk, with the arriving CPU's transfers from each holder
/// given by `to`.
#[inline(always)]
fn walk(pending: &mut ReleaseRing, to: impl TransferFrom, stay: bool) -> Option<Time> {
    // The ring's two halves, the last release apart: every earlier one gains the spinner
    // and passes on the delay it adds; the last one serves it.
    let (front, back) = pending.as_mut_slices();
    let (front, back, last) = match back.split_last_mut() {
        Some((last, back)) => (front, back, last),
        None => {
            let (last, front) = front.split_last_mut()?;
            (front, &mut [][..], last)
        }
    };
    let mut shift = 0;
    for r in front.iter_mut().chain(back.iter_mut()) {
        r.at += shift;
        let c = to.from(r.cpu, r.socket);
        shift += added_half(r.others_ns, c);
        r.others_ns += c;
    }
    last.at += shift;
    let c = to.from(last.cpu, last.socket);
    let done = last.at + c + last.others_ns / 2;
    if stay {
        last.others_ns += c;
    }
    Some(done)
}

#[cfg(test)]
mod tests {
    use super::super::lock::{ContendedLock, SeqLock, TEST_COST};
    use super::*;
    use proptest::prelude::*;

    const COST: TransferCost = TEST_COST;
    /// In-socket transfer of [`TEST_COST`]: every CPU below on socket 0 pays it.
    const C: u64 = 40;

    fn lock(s: Spinlock) -> ContendedLock {
        ContendedLock::with_spinlock(s, 64)
    }

    /// `m` waiters (CPUs 1..=m, socket 0) arrive at 10 ns while CPU 0 holds the lock from 0
    /// for `hold`; returns the waits in the order served.
    fn queue_behind_holder(s: Spinlock, m: u32, hold: u64) -> Vec<u64> {
        let mut l = lock(s);
        l.acquire(0, hold, 0, 0, COST);
        (1..=m)
            .map(|c| l.acquire(10, hold, c, 0, COST).wait_ns)
            .collect()
    }

    #[test]
    fn ticket_hand_off_grows_with_the_spinners_and_the_queued_one_does_not() {
        // Mean hand-off over the m releases: the last waiter's grant, less the holds and
        // the arrival offset, over m. Ticket: releases with m, m − 1, ..., 1 spinners cost
        // c(k + 1)/2 each; queued: c each.
        let hold = 100;
        let mut previous = 0;
        for (m, ticket_mean) in [
            (1, 40),
            (2, 50),
            (4, 70),
            (8, 110),
            (16, 190),
            (32, 350),
            (63, 660),
        ] {
            let mean = |s| {
                let w = *queue_behind_holder(s, m, hold).last().unwrap();
                (w + 10 - u64::from(m) * hold) / u64::from(m)
            };
            let t = mean(Spinlock::Ticket);
            assert_eq!(t, ticket_mean, "ticket, {m} waiters");
            assert!(t > previous || m == 1, "grows: {previous} -> {t}");
            previous = t;
            assert_eq!(mean(Spinlock::Queued), C, "queued, {m} waiters");
        }
    }

    #[test]
    fn one_waiter_costs_the_same_in_both_eras() {
        for s in [Spinlock::Ticket, Spinlock::Queued] {
            assert_eq!(queue_behind_holder(s, 1, 100), vec![90 + C], "{s:?}");
        }
    }

    /// The Markov model of Boyd-Wickizer et al. for a burst: `n` cores arrive together at an
    /// untouched lock, none comes back. With `k` cores holding or waiting, a release is
    /// served in `s + c·k/2`; the first holder pays nothing. Returns the expected wait of the
    /// `j`-th served (j = 1..=n).
    fn markov_burst(n: u64, s: u64, c: u64) -> Vec<u64> {
        let mut waits = vec![0];
        for k in (2..=n).rev() {
            // The release with k in the system hands over to the next one.
            let last = *waits.last().unwrap();
            waits.push(last + s + c * k / 2);
        }
        waits
    }

    /// The twin's burst: `n` CPUs of socket 0 at 0 ns, holding `s` each.
    fn twin_burst(spin: Spinlock, n: u32, s: u64) -> (Vec<u64>, u64) {
        let mut l = lock(spin);
        let waits = (0..n)
            .map(|c| l.acquire(0, s, c, 0, COST).wait_ns)
            .collect();
        (waits, l.free_at())
    }

    #[test]
    fn burst_drain_and_last_wait_are_the_markov_models() {
        // Tolerance: none. With one transfer cost c (even) the expectation is an integer.
        for n in [2u32, 3, 8, 16, 32, 64] {
            let s = 150;
            let model = markov_burst(u64::from(n), s, C);
            let (waits, free_at) = twin_burst(Spinlock::Ticket, n, s);
            assert_eq!(waits.last(), model.last(), "last of {n}");
            assert_eq!(free_at, model.last().unwrap() + s, "drain of {n}");
        }
    }

    #[test]
    fn burst_total_wait_against_the_markov_model() {
        // The k-th served waits what the model gives the last of a burst of k (causal: it
        // cannot see the spinners behind it), so the total lies between the model's half
        // (large n) and all of it; the gap is the documented approximation.
        for n in [2u32, 8, 16, 64] {
            let s = 150;
            let model = markov_burst(u64::from(n), s, C);
            let (waits, _) = twin_burst(Spinlock::Ticket, n, s);
            let causal: Vec<u64> = (1..=u64::from(n))
                .map(|k| *markov_burst(k, s, C).last().unwrap())
                .collect();
            assert_eq!(
                waits, causal,
                "each waits the model's last of its own burst ({n})"
            );
            let total: u64 = waits.iter().sum();
            let want: u64 = model.iter().sum();
            let ratio = total as f64 / want as f64;
            assert!(
                (0.5..=1.0).contains(&ratio),
                "{n}: {total} / {want} = {ratio}"
            );
        }
        // With 64 CPUs, s = 150 and c = 40: 0.59 of the model's total (1.216 ms of 2.050 ms);
        // the serial sections count fully, the hand-offs about half.
        let (waits, _) = twin_burst(Spinlock::Ticket, 64, 150);
        let total: u64 = waits.iter().sum();
        let want: u64 = markov_burst(64, 150, C).iter().sum();
        assert_eq!((total, want), (1_216_320, 2_049_600));
        // The queued lock: the k-th waits (k − 1)(s + c), whatever n.
        let (waits, _) = twin_burst(Spinlock::Queued, 64, 150);
        for (k, w) in waits.iter().enumerate().skip(1) {
            assert_eq!(*w, k as u64 * (150 + C), "queued {k}");
        }
    }

    #[test]
    fn hand_off_cost_comes_from_the_topology() {
        // Holder CPU 0 on socket 0; the next owner on socket 2 (two hops, 260), then three
        // more waiters on sockets 0, 1 and 3. Each hand-off is the transfer from the releaser
        // to the next owner plus half the transfers from the releaser to the other spinners,
        // as the ring of four sockets prices them; the last arrival sees every one.
        let mut l = lock(Spinlock::Ticket);
        l.acquire(0, 1000, 0, 0, COST);
        assert_eq!(l.acquire(0, 100, 16, 2, COST).wait_ns, 1000 + 260);
        l.acquire(0, 100, 1, 0, COST);
        l.acquire(0, 100, 8, 1, COST);
        let last = l.acquire(0, 100, 24, 3, COST).wait_ns;
        // 0 → 16 with 1, 8, 24 spinning besides: 260 + ½ (40 + 150 + 150).
        let r0 = 1000 + 260 + 170;
        let r1 = r0 + 100 + cost(16, 2, 1, 0) + (cost(16, 2, 8, 1) + cost(16, 2, 24, 3)) / 2;
        let r2 = r1 + 100 + cost(1, 0, 8, 1) + cost(1, 0, 24, 3) / 2;
        let g3 = r2 + 100 + cost(8, 1, 24, 3);
        assert_eq!(last, g3);
    }

    fn cost(fc: u32, fs: u32, c: u32, s: u32) -> u64 {
        COST.between(fc, fs, c, s)
    }

    #[test]
    fn seqcount_readers_spin_and_queue_their_reads_at_the_release() {
        for (spin, extra) in [
            (Spinlock::Ticket, [0, 20, 40, 60]),
            (Spinlock::Queued, [0; 4]),
        ] {
            let mut s = SeqLock::with_spinlock(spin, 64);
            s.write(1000, 300, 0, 0, COST);
            // Four readers of socket 0 arrive 100 ns into the write section.
            for (k, e) in extra.iter().enumerate() {
                let mut seen = 0;
                let got = s.read(1100, &mut seen, k as u32 + 1, 0, COST);
                assert_eq!(got, 200 + C + e, "{spin:?} reader {k}");
            }
            // A writer queued behind them reads behind half of their reads (ticket).
            let w = s.write(1200, 100, 9, 0, COST).wait_ns;
            let behind = if spin == Spinlock::Ticket {
                4 * C / 2
            } else {
                0
            };
            assert_eq!(w, 100 + C + behind, "{spin:?} writer");
            // Once nobody is inside, a read pays only the transfer after the write.
            let mut seen = 0;
            assert_eq!(s.read(10_000, &mut seen, 5, 1, COST), 150);
        }
    }

    #[test]
    fn wait_for_agrees_with_acquire() {
        let mut l = lock(Spinlock::Ticket);
        for (i, (t, cpu, socket)) in [(0, 0, 0), (5, 9, 1), (7, 17, 2), (9, 2, 0), (400, 30, 3)]
            .into_iter()
            .enumerate()
        {
            let predicted = l.wait_for(t, cpu, socket, COST);
            assert_eq!(
                l.acquire(t, 120, cpu, socket, COST).wait_ns,
                predicted,
                "{i}"
            );
        }
    }

    /// Arrivals: (offset from the previous arrival, hold, cpu, socket).
    fn arrivals() -> impl Strategy<Value = Vec<(u64, u64, u32, u32)>> {
        prop::collection::vec((0u64..400, 1u64..500, 0u32..64, 0u32..4), 1..80)
    }

    proptest! {
        /// The release ring keeps the order and contents of a `VecDeque` fed the same pushes
        /// and drops, through wrap-arounds: its slices, its search and its back agree.
        #[test]
        fn the_release_ring_agrees_with_a_deque(
            ops in prop::collection::vec((any::<bool>(), 0u64..40), 1..300),
        ) {
            use std::collections::VecDeque;
            let mut ring = ReleaseRing::with_capacity(5);
            let mut model = VecDeque::new();
            let mut at = 0;
            for (push, dt) in ops {
                if push && model.len() < 8 {
                    at += dt;
                    let r = Release { at, cpu: dt as u32, socket: 0, others_ns: dt };
                    ring.push_back(r);
                    model.push_back(r);
                } else {
                    let t = at.saturating_sub(dt);
                    ring.pop_until(t);
                    while model.front().is_some_and(|r: &Release| r.at <= t) {
                        model.pop_front();
                    }
                }
                prop_assert_eq!(ring.len(), model.len());
                prop_assert_eq!(ring.back(), model.back());
                let t = at.saturating_sub(dt / 2);
                prop_assert_eq!(
                    ring.partition_point(|r| r.at <= t),
                    model.partition_point(|r| r.at <= t)
                );
                let (a, b) = ring.as_mut_slices();
                let joined: Vec<Release> = a.iter().chain(b.iter()).copied().collect();
                prop_assert_eq!(&joined, &model.iter().copied().collect::<Vec<_>>());
                prop_assert_eq!(ring.iter().copied().collect::<Vec<_>>(), joined);
            }
        }

        /// FIFO and mutual exclusion: each grant comes at or after its arrival and after the
        /// previous holder's committed release, in arrival order; no wait is negative (a
        /// grant before the arrival would underflow).
        #[test]
        fn grants_are_fifo_exclusive_and_never_early(arr in arrivals(), ticket in any::<bool>()) {
            let spin = if ticket { Spinlock::Ticket } else { Spinlock::Queued };
            let mut l = lock(spin);
            let (mut t, mut prev_release) = (0, 0);
            for (dt, hold, cpu, socket) in arr {
                t += dt;
                let got = l.acquire(t, hold, cpu, socket, COST);
                let grant = t + got.wait_ns;
                prop_assert!(grant >= prev_release, "grant {grant} before release {prev_release}");
                prop_assert_eq!(got.contended, prev_release > t);
                prev_release = grant + hold;
                prop_assert_eq!(l.free_at(), prev_release);
            }
        }

        /// Conservation: for a burst (all at one instant) the lock is busy exactly the holds
        /// plus the hand-offs the rule gives (transfer to the next owner plus half the other
        /// spinners' transfers), nothing lost or created; the queued lock's busy period is the
        /// holds plus the transfers, never longer than the ticket lock's.
        #[test]
        fn a_burst_keeps_the_lock_busy_for_holds_plus_hand_offs(
            arr in prop::collection::vec((1u64..500, 0u32..64, 0u32..4), 1..64),
        ) {
            let mut ticket = lock(Spinlock::Ticket);
            let mut queued = lock(Spinlock::Queued);
            for &(hold, cpu, socket) in &arr {
                ticket.acquire(1000, hold, cpu, socket, COST);
                queued.acquire(1000, hold, cpu, socket, COST);
            }
            let holds: u64 = arr.iter().map(|a| a.0).sum();
            let mut hand_offs = 0;
            let mut plain = 0;
            for i in 1..arr.len() {
                let (_, rc, rs) = arr[i - 1];
                let (_, nc, ns) = arr[i];
                let others: u64 = arr[i + 1..].iter().map(|&(_, c, s)| cost(rc, rs, c, s)).sum();
                hand_offs += cost(rc, rs, nc, ns) + others / 2;
                plain += cost(rc, rs, nc, ns);
            }
            prop_assert_eq!(ticket.free_at(), 1000 + holds + hand_offs);
            prop_assert_eq!(queued.free_at(), 1000 + holds + plain);
            prop_assert!(queued.free_at() <= ticket.free_at());
        }

        /// A seqcount read never completes before the writers queued at its arrival are
        /// out, and a reader only ever moves the writers' releases later.
        #[test]
        fn readers_wait_for_the_writers(
            arr in arrivals(),
            readers in prop::collection::vec((0u64..20_000, 0u32..64, 0u32..4), 0..40),
        ) {
            let mut s = SeqLock::with_spinlock(Spinlock::Ticket, 64);
            let mut t = 0;
            for (dt, hold, cpu, socket) in arr {
                t += dt;
                s.write(t, hold, cpu, socket, COST);
            }
            for (at, cpu, socket) in readers {
                let free = s.writer_free_at();
                let mut seen = 0;
                let done = at + s.read(at, &mut seen, cpu, socket, COST);
                if free > at {
                    prop_assert!(done >= free, "read done {done} before the writers' {free}");
                }
                prop_assert!(s.writer_free_at() >= free);
            }
        }
    }
}
