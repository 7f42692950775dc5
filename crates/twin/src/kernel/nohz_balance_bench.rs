//! A fixed burst of nohz idle entries and exits for the `hot` criterion group
//! (crates/twin/benches): E2 (a)'s pattern, where the CPUs of a 64-CPU, four-socket machine
//! stop their ticks together and restart them together, each flipping its bits in the two
//! global nohz masks (`NohzBalance::enter` / `exit`, `kernel/nohz_balance.rs`); and the
//! busy ticks' check whether to kick the idle load balancer (`NohzBalance::kick_needed`),
//! which every busy CPU's tick runs on the shared pick slots.

use super::nohz_balance::NohzBalance;
use crate::hw::lock::TransferCost;

/// CPUs of the burst.
pub const CPUS: u32 = 64;

/// `rounds` bursts of [`CPUS`] idle entries then as many exits, 100 µs apart, on fresh nohz
/// lines. Returns the sum of the times they took (consumed by the benchmark).
pub fn bursts(rounds: u32) -> u64 {
    let cost = TransferCost::new(45, 150, 4);
    let mut nohz = NohzBalance::new(CPUS as usize);
    let mut total = 0;
    for round in 0..u64::from(rounds) {
        let at = round * 100_000;
        for cpu in 0..CPUS {
            total += nohz.enter(cpu, cpu / (CPUS / 4), at, cost).0;
        }
        for cpu in 0..CPUS {
            total += nohz.exit(cpu, cpu / (CPUS / 4), at + 50_000, cost).0;
        }
    }
    total
}

/// `rounds` ticks of [`CPUS`] busy CPUs together, 1 ms apart, each checking whether to kick
/// the idle load balancer (reading the shared pick slots, taking a free one). Returns the sum
/// of the times the checks took (consumed by the benchmark).
pub fn kicks(rounds: u32) -> u64 {
    let cost = TransferCost::new(45, 150, 4);
    let mut nohz = NohzBalance::new(CPUS as usize);
    let mut total = 0;
    for round in 0..u64::from(rounds) {
        let at = round * 1_000_000;
        for cpu in 0..CPUS {
            total += nohz.kick_needed(cpu, cpu / (CPUS / 4), at, cost).0;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_ticks_pay_for_the_pick_slots() {
        // Every check reads the slots' line; the ones that take a slot write it, so the
        // later readers fetch it again: more than the reads of a line nobody writes.
        let one = kicks(1);
        assert!(one > 0);
        assert!(kicks(4) > one);
    }

    #[test]
    fn a_burst_queues_on_the_masks() {
        // Alone, an entry and an exit cost their two locked operations and the dynticks
        // counter each; 64 CPUs together wait for one another.
        let alone =
            2 * (2 * crate::hw::lock::LOCKED_OP_NS + super::super::nohz_balance::RCU_DYNTICKS_NS);
        assert!(bursts(1) > u64::from(CPUS) * alone);
    }
}
