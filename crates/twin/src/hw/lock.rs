//! Contended cache lines and the locks on them, as a FIFO hand-off.
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
//! before one that would have reached the lock earlier. Ticket spinlocks (x86 since 2.6.25)
//! are FIFO, so a FIFO model is the right shape for the order that is simulated.

use crate::engine::Time;

/// Cache-line transfer costs of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferCost {
    /// Between cores of one socket (ns).
    pub local_ns: u64,
    /// Between sockets (ns).
    pub remote_ns: u64,
}

impl TransferCost {
    /// Cost of moving a line last held by (`from_cpu`, `from_socket`) to (`cpu`, `socket`).
    #[inline]
    pub fn between(&self, from_cpu: u32, from_socket: u32, cpu: u32, socket: u32) -> u64 {
        if from_cpu == cpu {
            0
        } else if from_socket == socket {
            self.local_ns
        } else {
            self.remote_ns
        }
    }
}

/// No CPU has touched the line yet.
const NOBODY: u32 = u32::MAX;

/// A spinlock (or the write side of a seqlock) on one contended line. It keeps only what the
/// queueing needs; what acquisitions cost is returned as an [`Acquired`] for the caller's
/// statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContendedLock {
    /// When the current holder releases it.
    free_at: Time,
    last_cpu: u32,
    last_socket: u32,
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
        }
    }
}

impl ContendedLock {
    /// A free lock nobody has touched.
    pub fn new() -> ContendedLock {
        ContendedLock::default()
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
        let transfer = if self.last_cpu == NOBODY {
            0
        } else {
            cost.between(self.last_cpu, self.last_socket, cpu, socket)
        };
        let contended = self.free_at > arrival;
        let start = arrival.max(self.free_at) + transfer;
        self.free_at = start + hold_ns;
        self.last_cpu = cpu;
        self.last_socket = socket;
        Acquired {
            wait_ns: start - arrival,
            contended,
        }
    }
}

/// A seqlock/seqcount: one writer section at a time (a [`ContendedLock`]) and lock-free
/// readers that retry while a writer is inside.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SeqLock {
    /// The write side.
    writer: ContendedLock,
    /// Write sections since boot (the sequence count / 2). Not the writer's acquisitions: that
    /// statistic restarts with the measured window, the sequence never does.
    writes: u64,
}

impl SeqLock {
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
        self.writes += 1;
        self.writer.acquire(arrival, hold_ns, cpu, socket, cost)
    }

    /// A read at `arrival` by a CPU that last saw write number `*seen`: it spins until the
    /// writer is out (retries), then reads the line — fetched from the writer if a write
    /// happened since this CPU last read (readers share the line, so they do not queue behind
    /// each other). Returns the extra time over an uncontended cached read.
    #[inline]
    pub(crate) fn read(
        &self,
        arrival: Time,
        seen: &mut u64,
        cpu: u32,
        socket: u32,
        cost: TransferCost,
    ) -> u64 {
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

    const COST: TransferCost = TransferCost {
        local_ns: 40,
        remote_ns: 150,
    };

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
