//! A fixed burst of nohz idle entries and exits for the `hot` criterion group
//! (crates/twin/benches): E2 (a)'s pattern, where the CPUs of a 64-CPU, four-socket machine
//! stop their ticks together and restart them together, each flipping its bits in the two
//! global nohz masks (`NohzBalance::enter` / `exit`, `kernel/nohz_balance.rs`).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_queues_on_the_masks() {
        // Alone, an entry and an exit cost their two locked operations and the dynticks
        // counter each; 64 CPUs together wait for one another.
        let alone =
            2 * (2 * crate::hw::lock::LOCKED_OP_NS + super::super::nohz_balance::RCU_DYNTICKS_NS);
        assert!(bursts(1) > u64::from(CPUS) * alone);
    }
}
