//! Contended cache lines and the locks on them, as a FIFO hand-off.
//!
//! How a hand-off costs depends on the spinlock of the era ([`super::spinlock`]): one line
//! transfer with the queued locks of 4.2 on (what this file describes), a transfer plus half
//! of the other spinners' reads with the ticket locks before ([`Spinlock::Ticket`]).
//!
//! A lock word (or a seqcount) lives in one cache line. A CPU that takes the lock must first
//! pull the line into its cache: free if it held the line last, `cacheline_local_ns` from a
//! core of the same socket, `cacheline_remote_ns` from another socket (docs/costs.md §3a,
//! §5). While the lock is held, later arrivals wait; the lock passes to them one at a time in
//! arrival order, each paying the transfer, so the k-th of N simultaneous arrivals waits about
//! the sum of the k − 1 critical sections and transfers before it (docs/costs.md §5,
//! "≈ N × t_transfer"; docs/kernel-behaviour.md §12.6).
//!
//! Approximation: the twin runs each interrupt handler as one atomic event, and events are
//! taken in order of their start time (ties by CPU id). Acquisitions are therefore granted in
//! the order the *handlers started*, not the order the CPUs reached the lock inside them. With
//! simultaneous ticks every CPU does the same work before the lock, so the two orders agree;
//! when handlers start at different times and do different work first, a CPU may be served
//! before one that would have reached the lock earlier. Ticket spinlocks (x86 2.6.25 to 4.1)
//! and queued spinlocks (4.2 on) are both FIFO, so a FIFO model is the right shape for the
//! order that is simulated.
//!
//! An atomic variable (a counter, a CPU mask word) is a line too: a locked read-modify-write
//! holds it exclusively for [`LOCKED_OP_NS`] once it has arrived, so simultaneous atomics on
//! one line queue exactly like lock acquisitions; plain reads share it and only pay the
//! transfer after a write. `AtomicLine` is that pairing (`SeqLock`'s write and read
//! sides).
//!
//! Socket distance: sockets linked in a ring (a four-socket Sandy Bridge-EP board has two QPI
//! links per socket, so opposite sockets are two hops apart). A one-hop transfer costs
//! `remote_ns`, a two-hop one `far_ns` (docs/costs.md §5a).

pub use super::cacheline::TransferCost;
use super::cacheline::{TransferFrom, TransferTable};
use super::spinlock::{Spinlock, TicketQueue};
use crate::engine::Time;

/// A locked read-modify-write (`lock inc`, `lock bts`, `lock cmpxchg`) on a line this CPU
/// already owns, including the fence it implies: 20 ns.
///
/// E (docs/costs.md §5a): a LOCK-prefixed instruction drains the store buffer and executes
/// in roughly 20–50 cycles on cores of the 2011–2012 generation, 7–18 ns at 2.7 GHz; the
/// SMT-sibling transfer of §3a (7.3–7.6 ns) bounds the cheapest line hand-off from below.
/// Rounded up to 20 ns to include the surrounding non-atomic work on the same line.
pub const LOCKED_OP_NS: u64 = 20;

/// No CPU has touched the line yet.
const NOBODY: u32 = u32::MAX;

/// A spinlock (or the write side of a seqlock) on one contended line. It keeps only what the
/// queueing needs; what acquisitions cost is returned as an [`Acquired`] for the caller's
/// statistics.
///
/// Every lock the twin models is a raw spinlock in the kernels it models (on PREEMPT_RT too,
/// where only raw locks spin: `xtime_lock`, `rcu_node->lock`, the cpupri vector locks of 3.0;
/// docs/model.md "Spinlocks by era").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContendedLock {
    /// When the current holder releases it.
    free_at: Time,
    last_cpu: u32,
    last_socket: u32,
    /// The pending releases of a ticket lock; `None` for a queued lock (and an atomic line).
    ticket: Option<Box<TicketQueue>>,
}

/// One acquisition of a [`ContendedLock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    /// The wait: queueing behind the holder plus the line transfer (ns).
    pub wait_ns: u64,
    /// The lock was held when the CPU arrived.
    pub contended: bool,
}

impl Default for ContendedLock {
    fn default() -> Self {
        ContendedLock {
            free_at: 0,
            last_cpu: NOBODY,
            last_socket: NOBODY,
            ticket: None,
        }
    }
}

impl ContendedLock {
    /// A free queued lock nobody has touched.
    pub fn new() -> ContendedLock {
        ContendedLock::default()
    }

    /// A free lock of the implementation `spinlock` on a machine of `nr_cpus` CPUs (the
    /// ticket lock's ring of pending releases is sized here, once).
    pub fn with_spinlock(spinlock: Spinlock, nr_cpus: usize) -> ContendedLock {
        ContendedLock {
            ticket: match spinlock {
                Spinlock::Ticket => Some(Box::new(TicketQueue::new(nr_cpus))),
                Spinlock::Queued => None,
            },
            ..ContendedLock::default()
        }
    }

    /// `cpu` on `socket` arrives at `arrival` and holds the lock for `hold_ns` once it has it.
    /// Returns the wait (queueing plus the line transfer; the caller is busy until
    /// `arrival + wait + hold_ns`) and whether the lock was held at arrival.
    #[inline]
    pub fn acquire(
        &mut self,
        arrival: Time,
        hold_ns: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> Acquired {
        let transfer = self.transfer_to(cpu, socket, cost);
        self.acquire_after_transfer(arrival, hold_ns, transfer, cpu, socket, cost)
    }

    /// [`ContendedLock::acquire`] with the line's transfer to `cpu` already known
    /// ([`ContendedLock::ticket_transfer_to`]): for a caller that prices a critical section
    /// by that transfer before it takes the lock (`cpupri_set`'s vectors), so it is looked
    /// up once.
    #[inline]
    pub(crate) fn acquire_after_transfer(
        &mut self,
        arrival: Time,
        hold_ns: u64,
        transfer: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> Acquired {
        debug_assert_eq!(transfer, self.transfer_to(cpu, socket, cost));
        let contended = self.free_at > arrival;
        let free_grant = arrival.max(self.free_at) + transfer;
        let start = match self.ticket.as_deref_mut() {
            Some(q) => q.acquire(arrival, hold_ns, cpu, socket, cost, free_grant),
            None => free_grant,
        };
        debug_assert!(start >= arrival, "a grant before the arrival");
        self.free_at = start + hold_ns;
        self.last_cpu = cpu;
        self.last_socket = socket;
        Acquired {
            wait_ns: start - arrival,
            contended,
        }
    }

    /// The wait [`ContendedLock::acquire`] would give an arrival at `arrival` (queueing and
    /// the line transfer), without taking the lock.
    #[inline]
    pub fn wait_for(&self, arrival: Time, cpu: u32, socket: u32, cost: TransferCost) -> u64 {
        let free_grant = arrival.max(self.free_at) + self.transfer_to(cpu, socket, cost);
        let grant = match self.ticket.as_deref() {
            Some(q) => q.grant(arrival, cpu, socket, cost).unwrap_or(free_grant),
            None => free_grant,
        };
        grant - arrival
    }

    /// `raw_spin_trylock`: takes the lock only if it is free at `arrival` (then as
    /// [`ContendedLock::acquire`]); a failed try still pulls the line to read the lock word,
    /// which costs the transfer and changes nothing else. Returns the acquisition, or
    /// `Err(transfer_ns)` when the lock was held.
    #[inline]
    pub fn try_acquire(
        &mut self,
        arrival: Time,
        hold_ns: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> Result<Acquired, u64> {
        if self.free_at > arrival {
            return Err(cost.between(self.last_cpu, self.last_socket, cpu, socket));
        }
        Ok(self.acquire(arrival, hold_ns, cpu, socket, cost))
    }

    /// [`ContendedLock::transfer_to`], read from a ticket lock's transfer table when it has
    /// one (`hw::cacheline::TransferTable`): a row look-up instead of
    /// [`TransferCost::between`]'s branches on sockets, which mispredict when a burst's CPUs
    /// come from mixed sockets (E2's cpupri vectors). Kept apart from `transfer_to`, which
    /// every lock calls: the larger body took [`ContendedLock::acquire`] out of line there
    /// (docs/model.md, "Speed of the event loop").
    #[inline]
    pub(crate) fn ticket_transfer_to(&self, cpu: u32, socket: u32, cost: TransferCost) -> u64 {
        match self.ticket.as_deref().and_then(|q| q.table(cost)) {
            Some(table) => self.transfer_from_table(table, cpu, socket),
            None => self.transfer_to(cpu, socket, cost),
        }
    }

    /// [`ContendedLock::transfer_to`] from a transfer table the caller keeps for the machine
    /// (the same number, without [`TransferCost::between`]'s branches on sockets).
    #[inline]
    pub(crate) fn transfer_from_table(&self, table: &TransferTable, cpu: u32, socket: u32) -> u64 {
        if self.last_cpu == NOBODY {
            0
        } else {
            TransferFrom::from(&table.to(cpu, socket), self.last_cpu, self.last_socket)
        }
    }

    /// Cost of moving this lock's line (or a line that travels with it, written by the same
    /// holders) from the last holder to `cpu` (0 for the last holder or an untouched line).
    #[inline]
    pub fn transfer_to(&self, cpu: u32, socket: u32, cost: TransferCost) -> u64 {
        if self.last_cpu == NOBODY {
            0
        } else {
            cost.between(self.last_cpu, self.last_socket, cpu, socket)
        }
    }

    /// When the current holder releases it.
    #[inline]
    pub fn free_at(&self) -> Time {
        self.free_at
    }
}

#[cfg(test)]
impl SeqLock {
    /// When the last writer queued releases the write side.
    pub(crate) fn writer_free_at(&self) -> Time {
        self.writer.free_at
    }
}

/// Transfer costs for the kernel modules' table tests: 40 / 150 / 260 ns on four sockets.
#[cfg(test)]
pub(crate) const TEST_COST: TransferCost = TransferCost {
    local_ns: 40,
    remote_ns: 150,
    far_ns: 260,
    sockets: 4,
};

/// An atomic variable's line: locked read-modify-writes queue (the write side), plain reads
/// share it (the read side, paying the transfer after a write).
pub(crate) type AtomicLine = SeqLock;

/// A seqlock/seqcount: one writer section at a time (a [`ContendedLock`]) and lock-free
/// readers that retry while a writer is inside.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SeqLock {
    /// The write side.
    writer: ContendedLock,
    /// Write sections since boot (the sequence count / 2). Not the writer's acquisitions: that
    /// statistic restarts with the measured window, the sequence never does.
    writes: u64,
}

impl SeqLock {
    /// A seqlock whose write side is a spinlock of the implementation `spinlock`, on a
    /// machine of `nr_cpus` CPUs. With a ticket lock the readers spin on the same line as the
    /// writers queue on (3.0's `seqlock_t` keeps the sequence beside its spinlock).
    pub(crate) fn with_spinlock(spinlock: Spinlock, nr_cpus: usize) -> SeqLock {
        SeqLock {
            writer: ContendedLock::with_spinlock(spinlock, nr_cpus),
            writes: 0,
        }
    }

    /// A writer section of `hold_ns`; returns the wait (see [`ContendedLock::acquire`]).
    #[inline]
    pub(crate) fn write(
        &mut self,
        arrival: Time,
        hold_ns: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> Acquired {
        self.write_with_table(arrival, hold_ns, cpu, socket, cost, None)
    }

    /// [`SeqLock::write`] with the transfer to the writer read from `table` when the caller
    /// has one for `cost` (a line every idle entry and exit writes: the nohz masks).
    #[inline]
    pub(crate) fn write_with_table(
        &mut self,
        arrival: Time,
        hold_ns: u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
        table: Option<&TransferTable>,
    ) -> Acquired {
        self.writes += 1;
        let transfer = match table {
            Some(t) => self.writer.transfer_from_table(t, cpu, socket),
            None => self.writer.transfer_to(cpu, socket, cost),
        };
        self.writer
            .acquire_after_transfer(arrival, hold_ns, transfer, cpu, socket, cost)
    }

    /// The wait a writer arriving at `arrival` would have ([`ContendedLock::wait_for`]).
    #[inline]
    pub(crate) fn write_wait(
        &self,
        arrival: Time,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> u64 {
        self.writer.wait_for(arrival, cpu, socket, cost)
    }

    /// A read at `arrival` by a CPU that last saw write number `*seen`: it spins until the
    /// writer is out (retries), then reads the line — fetched from the writer if a write
    /// happened since this CPU last read (readers share the line, so they do not queue behind
    /// each other). Returns the extra time over an uncontended cached read.
    ///
    /// With a ticket write side, a reader that finds a writer inside or queued spins on the
    /// line with the waiters: it slows their hand-offs, and after the last writer's release
    /// its read queues behind half of the other spinners' reads ([`super::spinlock`]).
    ///
    /// As an [`AtomicLine`]: a plain load, which waits while a locked operation holds the
    /// line and fetches it after any write.
    #[inline]
    pub(crate) fn read(
        &mut self,
        arrival: Time,
        seen: &mut u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> u64 {
        if self.writer.free_at > arrival
            && let Some(q) = self.writer.ticket.as_deref_mut()
            && let Some(done) = q.read(arrival, cpu, socket, cost)
        {
            // The reader slowed the hand-offs it spun through: the last release moved.
            if let Some(last) = q.last_release() {
                self.writer.free_at = last;
            }
            *seen = self.writes;
            return done - arrival;
        }
        let spin = self.writer.free_at.saturating_sub(arrival);
        let transfer = if *seen != self.writes && self.writer.last_cpu != NOBODY {
            cost.between(self.writer.last_cpu, self.writer.last_socket, cpu, socket)
        } else {
            0
        };
        *seen = self.writes;
        spin + transfer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: TransferCost = TEST_COST;

    #[test]
    fn four_socket_ring_distances() {
        let c = TransferCost::new(45, 150, 4);
        assert_eq!(c.far_ns, 255);
        // (from cpu, from socket, cpu, socket, cost)
        for (fc, fs, tc, ts, want) in [
            (3, 0, 3, 0, 0),
            (3, 0, 4, 0, 45),
            (3, 0, 9, 1, 150),
            (3, 0, 25, 3, 150),
            (3, 0, 17, 2, 255),
            (9, 1, 25, 3, 255),
        ] {
            assert_eq!(c.between(fc, fs, tc, ts), want, "{fs} -> {ts}");
        }
        // Two sockets: every remote pair is one hop.
        assert_eq!(TransferCost::new(45, 150, 2).between(0, 0, 1, 1), 150);
    }

    #[test]
    fn trylock_fails_while_held_and_pays_the_read() {
        let mut l = ContendedLock::new();
        assert!(l.try_acquire(1000, 100, 0, 0, COST).is_ok());
        assert_eq!(l.try_acquire(1050, 100, 1, 1, COST), Err(150));
        assert_eq!(l.free_at(), 1100, "a failed try leaves the lock alone");
        assert_eq!(
            l.try_acquire(1100, 100, 1, 1, COST).map(|a| a.wait_ns),
            Ok(150)
        );
    }

    #[test]
    fn simultaneous_arrivals_queue_fifo() {
        let mut l = ContendedLock::new();
        // Four CPUs of one socket arrive together; each holds 100 ns.
        let got: Vec<Acquired> = (0..4).map(|c| l.acquire(1000, 100, c, 0, COST)).collect();
        // First: untouched line, no wait. Then each waits the sections before it + transfers.
        let waits: Vec<u64> = got.iter().map(|a| a.wait_ns).collect();
        assert_eq!(waits, vec![0, 100 + 40, 2 * 140, 3 * 140]);
        assert_eq!(got.iter().filter(|a| a.contended).count(), 3);
    }

    #[test]
    fn spaced_arrivals_do_not_wait_but_pay_the_transfer() {
        let mut l = ContendedLock::new();
        let free = |wait_ns| Acquired {
            wait_ns,
            contended: false,
        };
        assert_eq!(l.acquire(0, 100, 0, 0, COST), free(0));
        assert_eq!(l.acquire(1000, 100, 1, 1, COST), free(150));
        assert_eq!(
            l.acquire(2000, 100, 1, 1, COST),
            free(0),
            "same CPU keeps the line"
        );
    }

    #[test]
    fn readers_spin_while_the_writer_is_inside() {
        let mut s = SeqLock::default();
        let mut seen = 0;
        s.write(1000, 300, 0, 0, COST);
        // Reader on another socket arrives 100 ns into the 300 ns write section.
        assert_eq!(s.read(1100, &mut seen, 5, 1, COST), 200 + 150);
        // Reading again without a new write: cached, no wait.
        assert_eq!(s.read(5000, &mut seen, 5, 1, COST), 0);
    }
}
