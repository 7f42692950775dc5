//! The discrete-event engine: virtual time, the event queue and the seeded RNG.
//!
//! Time is an integer number of nanoseconds ([`Time`]). Each modelled CPU owns a handful of
//! event slots (its clock event device, the end of what it is running, a poll timeout), so the
//! engine only has to answer "which CPU has the earliest pending event?". That question sits
//! behind the [`EventQueue`] trait. The default [`TournamentTree`], a binary winner tree over
//! packed `(time, cpu)` keys, replays one fixed-length path per update and allocates nothing
//! after construction. The 8-ary [`DaryTree`] (fewer levels, one cache line per level) and
//! the plain [`BinaryHeapQueue`] sit behind the same trait for comparison: in E2 the 8-ary
//! tree executes fewer instructions but ran 4-7 % slower (`ticklab bench`, A/B interleaved),
//! and on a queue-only hold workload the binary tree does 109 M updates/s against 77 M for
//! the 8-ary tree and 24 M for the heap (`cargo bench -p ticklab-twin -- queue`).
//!
//! Ties are broken by CPU number, so the order of simultaneous events is deterministic.

pub(crate) mod prefetch;
pub(crate) mod rng;

/// Simulated time in nanoseconds since the start of the run.
pub type Time = u64;

/// "Never": no event pending.
pub const NEVER: Time = u64::MAX;

/// The earliest-event index over CPUs.
pub trait EventQueue {
    /// Sets CPU `cpu`'s earliest pending event time (`NEVER` for none).
    fn set(&mut self, cpu: usize, time: Time);
    /// The earliest `(time, cpu)`, ties broken by the lower CPU; `None` when nothing is pending.
    fn peek(&mut self) -> Option<(Time, usize)>;
}

/// Bits of a packed queue key that hold the CPU number (4096 CPUs, the most a machine may have).
pub const CPU_BITS: u32 = 12;

/// The latest event time that packs with a CPU number (about 2^52 ns, 52 days). One below
/// the top of the range, so that no real `(time, cpu)` packs to `u64::MAX`, the "none" key.
pub const MAX_EVENT_TIME: Time = (1 << (64 - CPU_BITS)) - 2;

/// `(time, cpu)` packed into one integer whose order is the tuple's order: the time in the
/// high bits, the CPU in the low [`CPU_BITS`]. `NEVER` packs to `u64::MAX`, above every real
/// event of every CPU.
#[inline]
fn pack(time: Time, cpu: usize) -> u64 {
    if time == NEVER {
        u64::MAX
    } else {
        debug_assert!(
            time <= MAX_EVENT_TIME,
            "event time {time} beyond MAX_EVENT_TIME"
        );
        (time << CPU_BITS) | cpu as u64
    }
}

/// Panics unless CPUs `0..n` fit the packed key's CPU field (`Sim::new` rejects larger
/// machines with an error first).
fn assert_packable(n: usize) {
    assert!(
        n <= 1 << CPU_BITS,
        "{n} CPUs: at most {} fit a packed key",
        1 << CPU_BITS
    );
}

/// The `(time, cpu)` of a packed key; `None` for `u64::MAX`.
#[inline]
fn unpack(key: u64) -> Option<(Time, usize)> {
    (key != u64::MAX).then_some((key >> CPU_BITS, (key & ((1 << CPU_BITS) - 1)) as usize))
}

/// A winner tree over CPUs: every internal node holds the smallest packed `(time, cpu)` key
/// of the leaves below it, so an update compares one integer per level on the way up and
/// never chases indices back to the leaves.
///
/// Invariant: `nodes[i] == min(nodes[2i], nodes[2i+1])` for every internal node `i`
/// (`1 <= i < size`); leaf `size + c` holds CPU `c`'s packed key (padding leaves and idle CPUs
/// hold `u64::MAX`). Integer order of packed keys is tuple order, so ties go to the lower CPU.
#[derive(Debug, Clone)]
pub struct TournamentTree {
    size: usize,
    nodes: Vec<u64>,
}

impl TournamentTree {
    /// A tree for `n` CPUs (at most `1 << CPU_BITS`), all idle (`NEVER`).
    pub fn new(n: usize) -> Self {
        assert_packable(n);
        let size = n.max(1).next_power_of_two();
        TournamentTree {
            size,
            nodes: vec![u64::MAX; 2 * size],
        }
    }
}

impl EventQueue for TournamentTree {
    #[inline]
    fn set(&mut self, cpu: usize, time: Time) {
        let key = pack(time, cpu);
        let mut i = cpu + self.size;
        let nodes = &mut self.nodes[..];
        if nodes[i] == key {
            return;
        }
        nodes[i] = key;
        // Always replay the whole path: a fixed trip count is predicted perfectly, where an
        // early exit at a data-dependent level cost a branch miss on most updates.
        while i > 1 {
            let best = nodes[i].min(nodes[i ^ 1]);
            i /= 2;
            nodes[i] = best;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<(Time, usize)> {
        unpack(self.nodes[1])
    }
}

impl TournamentTree {
    /// The CPU of the second-earliest pending event (the earliest is [`EventQueue::peek`]'s),
    /// `None` when fewer than two CPUs have one. It is the next event's CPU unless handling the
    /// earliest one schedules something earlier still: a guess to prefetch by
    /// (the `prefetch` module), not an order to rely on.
    ///
    /// The runner-up lost to the winner somewhere on the winner's path to the root, so it is
    /// the smallest of that path's siblings: one compare per level, on nodes the last update
    /// has just walked.
    #[inline]
    pub fn runner_up(&self) -> Option<usize> {
        let (_, winner) = unpack(self.nodes[1])?;
        let mut i = winner + self.size;
        let mut best = u64::MAX;
        while i > 1 {
            best = best.min(self.nodes[i ^ 1]);
            i /= 2;
        }
        unpack(best).map(|(_, cpu)| cpu)
    }
}

/// Fan-out of [`DaryTree`]: eight packed keys are one 64-byte cache line.
pub const DARY_FANOUT: usize = 8;

/// An 8-ary winner tree over CPUs, kept for comparison with [`TournamentTree`] (see the
/// module note for measurements). Each level holds, for every group of eight nodes of the
/// level below, the smallest packed `(time, cpu)` key of the group, so an update rescans one
/// cache line per level: two levels for 64 CPUs, four for 4096. It executes fewer
/// instructions than the binary tree but more compares on its critical path.
///
/// Invariant: `nodes[up + g] == min(nodes[down + 8g .. down + 8g + 8])` for every level
/// (`down` and `up` the offsets of a level and the one above it, from `offsets`); padding
/// holds `u64::MAX`. The root is the last node.
#[derive(Debug, Clone)]
pub struct DaryTree {
    nodes: Vec<u64>,
    /// Start of each level in `nodes`, leaves first; every level's length is a multiple of
    /// [`DARY_FANOUT`] except the root's (1).
    offsets: Vec<usize>,
}

impl DaryTree {
    /// A tree for `n` CPUs (at most `1 << CPU_BITS`), all idle (`NEVER`).
    pub fn new(n: usize) -> Self {
        assert_packable(n);
        let mut offsets = vec![0];
        let mut len = n.max(1).next_multiple_of(DARY_FANOUT);
        let mut total = len;
        while len > 1 {
            len = (len / DARY_FANOUT).max(1);
            let padded = if len > 1 {
                len.next_multiple_of(DARY_FANOUT)
            } else {
                1
            };
            offsets.push(total);
            total += padded;
            len = padded;
        }
        DaryTree {
            nodes: vec![u64::MAX; total],
            offsets,
        }
    }
}

/// The smallest of eight keys as a pairwise reduction: three dependent compares instead of
/// a chain of seven, which is what the update's latency is made of.
#[inline]
fn min8(g: &[u64; DARY_FANOUT]) -> u64 {
    let a = g[0].min(g[1]).min(g[2].min(g[3]));
    let b = g[4].min(g[5]).min(g[6].min(g[7]));
    a.min(b)
}

impl EventQueue for DaryTree {
    #[inline]
    fn set(&mut self, cpu: usize, time: Time) {
        let key = pack(time, cpu);
        let nodes = &mut self.nodes[..];
        if nodes[cpu] == key {
            return;
        }
        nodes[cpu] = key;
        let mut i = cpu;
        for w in self.offsets.windows(2) {
            let (down, up) = (w[0], w[1]);
            let group = (i - down) / DARY_FANOUT;
            let start = down + group * DARY_FANOUT;
            let keys: &[u64; DARY_FANOUT] = nodes[start..start + DARY_FANOUT]
                .try_into()
                .expect("a group is DARY_FANOUT nodes");
            let best = min8(keys);
            i = up + group;
            nodes[i] = best;
        }
    }

    #[inline]
    fn peek(&mut self) -> Option<(Time, usize)> {
        unpack(*self.nodes.last().expect("a tree has a root"))
    }
}

/// A binary heap with lazy deletion, for comparison with [`TournamentTree`].
#[derive(Debug, Clone)]
pub struct BinaryHeapQueue {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Time, usize)>>,
    current: Vec<Time>,
}

impl BinaryHeapQueue {
    /// A queue for `n` CPUs.
    pub fn new(n: usize) -> Self {
        BinaryHeapQueue {
            heap: std::collections::BinaryHeap::with_capacity(4 * n),
            current: vec![NEVER; n],
        }
    }
}

impl EventQueue for BinaryHeapQueue {
    fn set(&mut self, cpu: usize, time: Time) {
        if self.current[cpu] == time {
            return;
        }
        self.current[cpu] = time;
        if time != NEVER {
            self.heap.push(std::cmp::Reverse((time, cpu)));
        }
    }

    fn peek(&mut self) -> Option<(Time, usize)> {
        while let Some(&std::cmp::Reverse((t, cpu))) = self.heap.peek() {
            if self.current[cpu] == t {
                return Some((t, cpu));
            }
            self.heap.pop();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(keys: &[Time]) -> Option<(Time, usize)> {
        keys.iter()
            .enumerate()
            .filter(|(_, t)| **t != NEVER)
            .map(|(c, t)| (*t, c))
            .min()
    }

    fn ties_go_to_lower_cpu_in(mut t: impl EventQueue) {
        assert_eq!(t.peek(), None);
        t.set(3, 10);
        t.set(1, 10);
        assert_eq!(t.peek(), Some((10, 1)));
        t.set(1, NEVER);
        assert_eq!(t.peek(), Some((10, 3)));
        t.set(4, 9);
        assert_eq!(t.peek(), Some((9, 4)));
    }

    #[test]
    fn ties_go_to_lower_cpu() {
        ties_go_to_lower_cpu_in(TournamentTree::new(5));
        ties_go_to_lower_cpu_in(DaryTree::new(5));
        ties_go_to_lower_cpu_in(BinaryHeapQueue::new(5));
    }

    #[test]
    fn runner_up_table() {
        // (CPUs, keys set in order, expected runner-up): none pending, one, a tie, the last
        // CPU of a full power-of-two tree and of a padded one.
        type Case = (usize, &'static [(usize, Time)], Option<usize>);
        let cases: [Case; 6] = [
            (4, &[], None),
            (4, &[(2, 5)], None),
            (4, &[(2, 5), (1, 5)], Some(2)),
            (4, &[(0, 1), (3, 2), (2, 3)], Some(3)),
            (5, &[(4, 1), (0, 9)], Some(0)),
            (4096, &[(4095, 7), (0, 7), (17, 6)], Some(0)),
        ];
        for (n, sets, want) in cases {
            let mut t = TournamentTree::new(n);
            for &(cpu, at) in sets {
                t.set(cpu, at);
            }
            assert_eq!(t.runner_up(), want, "{n} CPUs, {sets:?}");
        }
    }

    #[test]
    fn dary_tree_sizes() {
        // (CPUs, levels): every boundary of the 8-ary layout up to the 4096-CPU limit.
        let cases = [
            (1, 2),
            (8, 2),
            (9, 3),
            (64, 3),
            (65, 4),
            (512, 4),
            (513, 5),
            (4096, 5),
        ];
        for (n, levels) in cases {
            let mut t = DaryTree::new(n);
            assert_eq!(t.offsets.len(), levels, "{n} CPUs");
            assert_eq!(t.peek(), None, "{n}");
            t.set(n - 1, MAX_EVENT_TIME);
            assert_eq!(t.peek(), Some((MAX_EVENT_TIME, n - 1)), "{n}");
            t.set(0, MAX_EVENT_TIME);
            assert_eq!(t.peek(), Some((MAX_EVENT_TIME, 0)), "{n}");
            t.set(0, NEVER);
            t.set(n - 1, 0);
            assert_eq!(t.peek(), Some((0, n - 1)), "{n}");
            t.set(n - 1, NEVER);
            assert_eq!(t.peek(), None, "{n}");
        }
    }

    proptest! {
        #[test]
        fn queues_agree_with_brute_force(n in 1usize..70, ops in proptest::collection::vec((0usize..70, 0u64..50), 1..300)) {
            let mut tree = TournamentTree::new(n);
            let mut dary = DaryTree::new(n);
            let mut heap = BinaryHeapQueue::new(n);
            let mut keys = vec![NEVER; n];
            for (cpu, t) in ops {
                let cpu = cpu % n;
                let t = if t == 49 { NEVER } else { t };
                keys[cpu] = t;
                tree.set(cpu, t);
                dary.set(cpu, t);
                heap.set(cpu, t);
                prop_assert_eq!(tree.peek(), brute(&keys));
                prop_assert_eq!(dary.peek(), brute(&keys));
                prop_assert_eq!(heap.peek(), brute(&keys));
                // The runner-up: the earliest once the winner is taken away.
                let second = brute(&keys).and_then(|(_, w)| {
                    let mut rest = keys.clone();
                    rest[w] = NEVER;
                    brute(&rest).map(|(_, c)| c)
                });
                prop_assert_eq!(tree.runner_up(), second);
            }
        }
    }
}
