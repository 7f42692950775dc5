//! A fixed run of ticks through the jiffies update and its seqlock for the `hot` criterion
//! group (crates/twin/benches): E2 (a)'s pattern, where the 64 CPUs of a four-socket machine
//! tick together on the 3.0 kernel, the CPU with the jiffies duty updates jiffies inside the
//! write side of `xtime_lock` (a ticket spinlock there) and the other 63 read the time under
//! its sequence count, spinning on the line while the writer is inside
//! (`Timekeeping::update_jiffies` in `kernel/timekeeping.rs`, the seqlock of `hw/lock.rs`).

use super::timekeeping::Timekeeping;
use crate::hw::lock::{SeqLock, TransferCost};
use crate::hw::spinlock::Spinlock;

/// CPUs that tick together.
pub const CPUS: u32 = 64;
/// The tick period (HZ=1000).
const TICK_NS: u64 = 1_000_000;
/// One jiffy's update inside the write section, and each further jiffy caught up (E2's
/// machine, docs/costs.md).
const UPDATE_NS: u64 = 300;
const CATCH_UP_NS: u64 = 5;

/// `rounds` ticks of [`CPUS`] CPUs of four sockets at the same instant: CPU 0 holds the duty
/// and writes, the others read. Returns the sum of the writer's section and the readers'
/// waits (consumed by the benchmark).
pub fn ticks(spinlock: Spinlock, rounds: u32) -> u64 {
    let cost = TransferCost::new(45, 150, 4);
    let mut tk = Timekeeping::new(1000, TICK_NS, 0, u64::MAX);
    let mut xtime = SeqLock::with_spinlock(spinlock, CPUS as usize);
    let mut seen = vec![0; CPUS as usize];
    let mut total = 0;
    for round in 1..=u64::from(rounds) {
        let at = round * TICK_NS;
        let inside = at + xtime.write_wait(at, 0, 0, cost);
        let before = tk.last_jiffies_update();
        let n = tk.update_jiffies(inside);
        let hold = UPDATE_NS + n * CATCH_UP_NS;
        if n > 0 {
            tk.publish(before, inside + hold);
        }
        let got = xtime.write(at, hold, 0, 0, cost);
        total += got.wait_ns + hold;
        for cpu in 1..CPUS {
            let socket = cpu / (CPUS / 4);
            total += xtime.read(at, &mut seen[cpu as usize], cpu, socket, cost);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_wait_for_the_writer_and_the_ticket_line_costs_more() {
        // Each round the 63 readers arrive while the writer is inside: all of them wait
        // at least its section, so a round costs more than 64 sections.
        let queued = ticks(Spinlock::Queued, 10);
        assert!(queued > 10 * u64::from(CPUS) * UPDATE_NS, "{queued}");
        // On a ticket lock the readers spin on the writers' line and queue their reads.
        assert!(ticks(Spinlock::Ticket, 10) > queued);
    }
}
