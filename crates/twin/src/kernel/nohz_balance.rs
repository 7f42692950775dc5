//! The shared state that entering and leaving nohz touched in 3.0, and the scheduler tick's
//! idle-load-balance trigger (`kernel/time/tick-sched.c`, `kernel/sched_fair.c`: the global
//! `nohz` structure; docs/model.md "E2 mechanisms").
//!
//! * Stopping the idle tick sets the CPU's bit in `nohz_cpu_mask` and, through
//!   `select_nohz_load_balancer(1)`, in `nohz.idle_cpus_mask`; a CPU that held one of the
//!   two idle-balance "pick" slots gives it up. Restarting the tick clears both bits
//!   (`select_nohz_load_balancer(0)`). Each is a locked bit operation on a line every CPU
//!   entering or leaving nohz writes.
//! * RCU's dynticks counter (`rcu_enter_nohz`/`rcu_exit_nohz`): an atomic increment between
//!   full barriers on a per-CPU line — no sharing, but a cost on every stop and restart
//!   ([`RCU_DYNTICKS_NS`]).
//! * Every busy tick runs `nohz_kick_needed`: it reads `nohz.first_pick_cpu` and
//!   `second_pick_cpu` (one line) and, when a slot is free or is its own, claims or refreshes
//!   it with `atomic_cmpxchg` — a write even when the value does not change, so the other
//!   CPUs reading the line at the same tick fetch it again and wait while it is held.
//!
//! Simplification (E): `nohz_kick_needed` first returns early while `jiffies` is before
//! `nohz.next_balance`; the isolated CPUs have no scheduling domains, so no balancing pass
//! moves that deadline for them and the model takes it as passed.

use crate::engine::Time;
use crate::hw::cacheline::TransferTable;
use crate::hw::lock::{AtomicLine, LOCKED_OP_NS, TransferCost};

/// `rcu_enter_nohz` / `rcu_exit_nohz`: one atomic increment of the per-CPU dynticks counter
/// between two full barriers (`smp_mb__before/after_atomic_inc`): 60 ns.
///
/// E (docs/costs.md §5a): three serialising operations on a line the CPU owns, each
/// [`LOCKED_OP_NS`].
pub(crate) const RCU_DYNTICKS_NS: u64 = 3 * LOCKED_OP_NS;

/// The global `nohz` lines.
#[derive(Debug, Clone)]
pub(crate) struct NohzBalance {
    nohz_cpu_mask: AtomicLine,
    idle_cpus_mask: AtomicLine,
    /// `first_pick_cpu` / `second_pick_cpu`.
    picks: AtomicLine,
    first: Option<u32>,
    second: Option<u32>,
    /// Per CPU: last-seen write number of the pick line.
    seen: Vec<u64>,
    /// The machine's socket-to-socket transfers for the mask writes, built at the first one
    /// (`None` past eight sockets): a row look-up instead of branches on sockets, which
    /// mispredict when a burst's CPUs come from mixed sockets.
    table: Option<TransferTable>,
}

impl NohzBalance {
    /// Nobody idle, no picks.
    pub(crate) fn new(nr_cpus: usize) -> NohzBalance {
        NohzBalance {
            nohz_cpu_mask: AtomicLine::default(),
            idle_cpus_mask: AtomicLine::default(),
            picks: AtomicLine::default(),
            first: None,
            second: None,
            seen: vec![0; nr_cpus],
            table: None,
        }
    }

    /// The first stop of `cpu`'s idle tick at `at`: the two mask bits, the pick slot given up,
    /// the dynticks counter. Returns the time spent and the longest single wait.
    pub(crate) fn enter(
        &mut self,
        cpu: u32,
        socket: u32,
        at: Time,
        cost: TransferCost,
    ) -> (u64, u64) {
        let (mut now, mut worst) = self.flip_masks(cpu, socket, at, cost);
        if self.first == Some(cpu) || self.second == Some(cpu) {
            if self.first == Some(cpu) {
                self.first = None;
            } else {
                self.second = None;
            }
            let got = self.picks.write(now, LOCKED_OP_NS, cpu, socket, cost);
            worst = worst.max(got.wait_ns);
            now += got.wait_ns + LOCKED_OP_NS;
        }
        now += RCU_DYNTICKS_NS;
        (now - at, worst)
    }

    /// The restart of `cpu`'s tick at `at`: dynticks counter, then the two mask bits cleared.
    /// Returns the time spent and the longest single wait.
    pub(crate) fn exit(
        &mut self,
        cpu: u32,
        socket: u32,
        at: Time,
        cost: TransferCost,
    ) -> (u64, u64) {
        let (now, worst) = self.flip_masks(cpu, socket, at + RCU_DYNTICKS_NS, cost);
        (now - at, worst)
    }

    /// The locked bit operations on `nohz_cpu_mask` then `nohz.idle_cpus_mask` from `at`:
    /// returns when they are done and the longest wait.
    fn flip_masks(&mut self, cpu: u32, socket: u32, at: Time, cost: TransferCost) -> (Time, u64) {
        if self.table.as_ref().is_none_or(|t| t.cost() != cost) {
            self.table = TransferTable::new(cost);
        }
        let table = self.table.as_ref();
        let mut now = at;
        let mut worst = 0;
        for line in [&mut self.nohz_cpu_mask, &mut self.idle_cpus_mask] {
            let got = line.write_with_table(now, LOCKED_OP_NS, cpu, socket, cost, table);
            worst = worst.max(got.wait_ns);
            now += got.wait_ns + LOCKED_OP_NS;
        }
        (now, worst)
    }

    /// `nohz_kick_needed` in a busy tick of `cpu` at `at`: read the pick line; claim a free
    /// slot or refresh one's own with a cmpxchg. Returns the time spent and the longest wait.
    pub(crate) fn kick_needed(
        &mut self,
        cpu: u32,
        socket: u32,
        at: Time,
        cost: TransferCost,
    ) -> (u64, u64) {
        let c = cpu as usize;
        let read = self.picks.read(at, &mut self.seen[c], cpu, socket, cost);
        let mut now = at + read;
        let mine = self.first == Some(cpu) || self.second == Some(cpu);
        let free = self.first.is_none() || self.second.is_none();
        if !mine && !free {
            return (now - at, read);
        }
        if !mine {
            if self.first.is_none() {
                self.first = Some(cpu);
            } else {
                self.second = Some(cpu);
            }
        }
        let got = self.picks.write(now, LOCKED_OP_NS, cpu, socket, cost);
        now += got.wait_ns + LOCKED_OP_NS;
        (now - at, read.max(got.wait_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: TransferCost = crate::hw::lock::TEST_COST;

    #[test]
    fn two_pickers_write_the_line_every_tick_and_the_rest_read_it() {
        let mut n = NohzBalance::new(8);
        // Tick at t = 1000 on CPUs 0..4, one after another in the loop's order.
        let t: Vec<u64> = (0..4).map(|c| n.kick_needed(c, 0, 1_000, COST).0).collect();
        // CPU 0 and 1 claim the slots (a locked write each); 2 and 3 only read, but must wait
        // for CPU 1's cmpxchg to release the line and then fetch it.
        assert_eq!(t[0], LOCKED_OP_NS);
        assert!(t[1] > LOCKED_OP_NS);
        assert!(t[2] > 0 && t[3] > 0);
        // A picker entering nohz gives its slot up; the next busy tick of another CPU takes it.
        n.enter(0, 0, 10_000, COST);
        assert_eq!(n.first, None);
        n.kick_needed(5, 0, 20_000, COST);
        assert_eq!(n.first, Some(5));
    }

    #[test]
    fn enter_and_exit_pay_the_dynticks_counter_and_queue_on_the_masks() {
        let mut n = NohzBalance::new(4);
        let (alone, wait) = n.enter(2, 0, 0, COST);
        assert_eq!((alone, wait), (2 * LOCKED_OP_NS + RCU_DYNTICKS_NS, 0));
        // Three CPUs leaving nohz at the same instant queue on the masks.
        let w: Vec<u64> = (0..3).map(|c| n.exit(c, 0, 1_000, COST).1).collect();
        assert!(w[2] > w[1] && w[1] > 0, "{w:?}");
    }
}
