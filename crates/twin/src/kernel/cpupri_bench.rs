//! A fixed burst of `cpupri_set` calls for the `hot` criterion group (crates/twin/benches):
//! E2 (a)'s pattern, where every frame worker of a 64-CPU, four-socket machine wakes at the
//! same instant (each CPU's priority goes NORMAL → RT, taking both vector locks) and goes
//! back to sleep at the same instant (RT → NORMAL), on the 3.0 kernel's ticket spinlocks.
//! It exercises `CpuPri::set` (`kernel/cpupri.rs`) with the vectors' hand-offs and the
//! ticket lock's walk, without the rest of the event loop.

use super::cpupri::{CpuPri, CpuPrio};
use crate::hw::lock::TransferCost;
use crate::hw::spinlock::Spinlock;

/// CPUs of the burst.
pub const CPUS: u32 = 64;

/// `rounds` wake-and-sleep bursts of [`CPUS`] CPUs of four sockets, 100 µs apart, on a
/// fresh `cpupri` whose vector locks are `spinlock`s. Returns the sum of the times the calls
/// took (a value the benchmark consumes, so that nothing is optimised away).
pub fn bursts(spinlock: Spinlock, rounds: u32) -> u64 {
    let cost = TransferCost::new(45, 150, 4);
    let mut pri = CpuPri::new(CPUS as usize, spinlock);
    let mut total = 0;
    for round in 0..u64::from(rounds) {
        let at = round * 100_000;
        for (prio, at) in [(CpuPrio::Rt, at), (CpuPrio::Normal, at + 50_000)] {
            for cpu in 0..CPUS {
                total += pri.set(cpu, cpu / (CPUS / 4), prio, at, cost).0;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_burst_costs_more_than_a_queued_one() {
        let ticket = bursts(Spinlock::Ticket, 2);
        let queued = bursts(Spinlock::Queued, 2);
        assert!(ticket > queued && queued > 0, "{ticket} vs {queued}");
    }
}
