//! A fixed run of ticks through RCU's grace-period work for the `hot` criterion group
//! (crates/twin/benches): E2 (a)'s pattern, where the 64 CPUs of a four-socket machine tick
//! together at HZ=1000 on the 3.0 kernel, sixteen to a leaf `rcu_node` lock, so that grace
//! periods start on the housekeeping CPU, every CPU notices each one and reports its
//! quiescent state under its leaf's lock (`RcuState::check_callbacks`, `kernel/rcu.rs`).
//! It exercises the rule and the leaf locks' hand-offs without the rest of the event loop.

use super::rcu::{RcuState, RcuTickInput, leaf_of};
use crate::hw::lock::{ContendedLock, TransferCost};
use crate::hw::spinlock::Spinlock;

/// CPUs that tick together.
pub const CPUS: usize = 64;
/// CPUs under one leaf `rcu_node` (`CONFIG_RCU_FANOUT_LEAF` of 16).
const FANOUT: u32 = 16;
/// The tick period (HZ=1000).
const TICK_NS: u64 = 1_000_000;
/// The leaf lock's hold for one RCU step (E2's machine, docs/costs.md).
const HOLD_NS: u64 = 150;

/// What a run of [`ticks`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcuRun {
    /// Sum of the times the ticks' RCU work took (consumed by the benchmark).
    pub spent_ns: u64,
    /// Grace periods started.
    pub grace_periods: u64,
    /// Ticks that took or tried a leaf lock (notice, report or forcing).
    pub leaf_steps: u64,
}

/// `jiffies` ticks of [`CPUS`] CPUs of four sockets, all at the same instant, on fresh RCU
/// state whose leaf locks are `spinlock`s. CPU 0 is the housekeeping CPU that starts the
/// grace periods.
pub fn ticks(spinlock: Spinlock, jiffies: u64) -> RcuRun {
    let cost = TransferCost::new(45, 150, 4);
    let mut rcu = RcuState::new(CPUS);
    let mut leaves: Vec<ContendedLock> = (0..CPUS.div_ceil(FANOUT as usize))
        .map(|_| ContendedLock::with_spinlock(spinlock, CPUS))
        .collect();
    let mut run = RcuRun {
        spent_ns: 0,
        grace_periods: 0,
        leaf_steps: 0,
    };
    for j in 0..jiffies {
        for cpu in 0..CPUS {
            let tick = RcuTickInput {
                cpu,
                socket: (cpu / (CPUS / 4)) as u32,
                housekeeping: cpu == 0,
                jiffies: j,
                at: j * TICK_NS,
            };
            let leaf = &mut leaves[leaf_of(cpu, FANOUT)];
            let done = rcu.check_callbacks(leaf, tick, HOLD_NS, cost, |_| false);
            run.spent_ns += done.spent_ns;
            run.grace_periods += u64::from(done.gp_started.is_some());
            run.leaf_steps += u64::from(done.step.is_some());
        }
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_periods_start_and_every_cpu_takes_its_leaf() {
        // 100 ms: callbacks wait from 10 ms on, and a grace period ends only once every CPU
        // has noticed it and reported on its leaf lock (tries that find the lock held come
        // back at the next tick), so several run one after another.
        let run = ticks(Spinlock::Ticket, 100);
        assert!(run.grace_periods >= 2, "{run:?}");
        assert!(run.leaf_steps >= run.grace_periods * CPUS as u64, "{run:?}");
    }
}
