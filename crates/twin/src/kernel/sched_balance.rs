//! The scheduler's periodic load balance as the tick triggers it (`trigger_load_balance` and
//! `rebalance_domains` in `kernel/sched/fair.c`, the domains' intervals from `sd_init` in
//! `kernel/sched/topology.c`): which ticks raise `SCHED_SOFTIRQ` on a CPU.
//!
//! Each scheduler domain balances every `balance_interval` milliseconds. A domain of `w` CPUs
//! starts at `w` ms and doubles the interval after each pass that finds nothing to move, up
//! to `2·w` ms; on a quiet machine the interval therefore sits at `2·w` ms. A busy CPU
//! stretches it by the domain's `busy_factor` (16) and takes one jiffy off. Milliseconds
//! become jiffies rounding up, and an interval is at least one jiffy. A CPU's next balance is
//! the earliest over its domains, so the lowest domain (the fewest CPUs) sets it; a CPU on the
//! null domain (`isolcpus=domain`, or alone in its domains) never balances.
//!
//! The tick raises `SCHED_SOFTIRQ` when jiffies have reached the CPU's next balance. Where
//! that softirq runs is [`crate::kernel::softirq`]'s rule; only on PREEMPT_RT does it change
//! what the tick counters show, so the event loop keeps this state only there.
//!
//! Worked cases (idle CPU): 2 CPUs in one domain at HZ=250 balance every 4 ms, one jiffy, so
//! every tick raises the softirq; 4 CPUs at HZ=250, every 8 ms, every other tick; 2 CPUs at
//! HZ=1000, every 4 ticks.

/// The `busy_factor` of every domain `sd_init` builds.
const BUSY_FACTOR: u64 = 16;

/// `msecs_to_jiffies` for a tick rate of `hz`: rounds up.
#[inline]
fn msecs_to_jiffies(ms: u64, hz: u32) -> u64 {
    (ms * u64::from(hz)).div_ceil(1000)
}

/// The balance interval, in jiffies, of a domain of `weight` CPUs at its quiet-machine
/// `balance_interval` (`2·weight` ms), for an idle or a busy CPU (`get_sd_balance_interval`).
pub fn interval_jiffies(weight: u32, hz: u32, busy: bool) -> u64 {
    let ms = 2 * u64::from(weight);
    let j = if busy {
        msecs_to_jiffies(ms * BUSY_FACTOR, hz).saturating_sub(1)
    } else {
        msecs_to_jiffies(ms, hz)
    };
    j.max(1)
}

/// The number of CPUs in the lowest non-degenerate scheduler domain of a CPU, on a machine of
/// `sockets` × `cores` × `threads` whose CPUs in the domains number `in_domains` (the others
/// are on the null domain): the SMT siblings where a core has more than one thread, else the
/// socket's cores, else the sockets, each counted among the CPUs left in the domains. `None`
/// when that leaves the CPU alone: a domain of one CPU is degenerate, and the CPU is on the
/// null domain.
///
/// The machine's CPUs are taken as evenly spread: `in_domains` of `sockets·cores·threads`
/// scale each level's span in proportion, which is exact for the flat topology of a guest
/// (one socket) and for a machine with nothing isolated.
pub fn lowest_domain_weight(
    sockets: u32,
    cores: u32,
    threads: u32,
    in_domains: u32,
) -> Option<u32> {
    let all = sockets.saturating_mul(cores).saturating_mul(threads);
    if in_domains < 2 || all == 0 {
        return None;
    }
    let span = if threads > 1 {
        threads
    } else if cores > 1 {
        cores
    } else {
        sockets
    };
    // The level's span among the CPUs left in the domains, at least the two a domain needs.
    let w = (u64::from(span) * u64::from(in_domains)).div_ceil(u64::from(all));
    Some((w as u32).clamp(2, in_domains))
}

/// Per CPU, when its periodic balance last ran and how often it runs (`sd->last_balance`,
/// the lowest domain's interval). Sized once at setup: a tick allocates nothing.
#[derive(Debug, Clone)]
pub(crate) struct PeriodicBalance {
    /// Jiffies of each CPU's last balance.
    last: Vec<u64>,
    /// Each CPU's idle and busy intervals in jiffies; `None` on the null domain.
    interval: Vec<Option<(u64, u64)>>,
}

impl PeriodicBalance {
    /// Every CPU of `weights` (its lowest domain's CPUs, `None` on the null domain) balanced
    /// last at `jiffies` (`sd_init` sets `last_balance` to the jiffies of the domain build).
    pub(crate) fn new(weights: &[Option<u32>], hz: u32, jiffies: u64) -> PeriodicBalance {
        PeriodicBalance {
            last: vec![jiffies; weights.len()],
            interval: weights
                .iter()
                .map(|w| {
                    w.map(|w| {
                        (
                            interval_jiffies(w, hz, false),
                            interval_jiffies(w, hz, true),
                        )
                    })
                })
                .collect(),
        }
    }

    /// The scheduler tick on `cpu` at `jiffies` (`idle`: the idle task is current): whether it
    /// raises `SCHED_SOFTIRQ`; the balance the softirq then runs is recorded at once, as
    /// `rebalance_domains` does in the same jiffy.
    ///
    /// An idle CPU's next balance is its last plus the idle interval even after a busy
    /// stretch set a longer one: `newidle_balance` pulls it in when the CPU goes idle.
    #[inline]
    pub(crate) fn tick(&mut self, cpu: usize, jiffies: u64, idle: bool) -> bool {
        let Some((idle_j, busy_j)) = self.interval[cpu] else {
            return false;
        };
        let due = self.last[cpu] + if idle { idle_j } else { busy_j };
        if jiffies < due {
            return false;
        }
        self.last[cpu] = jiffies;
        debug_assert!(
            self.last[cpu] + idle_j > jiffies,
            "the next balance is in the future"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_by_domain_size_and_hz() {
        // (CPUs in the domain, HZ, busy) -> jiffies
        for (w, hz, busy, want) in [
            (2, 250, false, 1),  // 4 ms: every tick
            (4, 250, false, 2),  // 8 ms
            (8, 250, false, 4),  // 16 ms
            (2, 1000, false, 4), // 4 ms
            (2, 100, false, 1),  // 4 ms rounds up to one 10 ms jiffy
            (5, 100, false, 1),  // 10 ms
            (6, 100, false, 2),  // 12 ms rounds up
            (2, 250, true, 15),  // 64 ms = 16 jiffies, less one
            (2, 1000, true, 63), // 64 ms less one
            (1, 100, true, 3),   // 32 ms = 4 jiffies rounded up, less one
        ] {
            assert_eq!(
                interval_jiffies(w, hz, busy),
                want,
                "w={w} HZ={hz} busy={busy}"
            );
        }
    }

    #[test]
    fn lowest_domain_by_topology() {
        // (sockets, cores, threads, CPUs in the domains) -> weight
        for (s, c, t, n, want) in [
            (1, 2, 1, 2, Some(2)), // a 2-vCPU guest
            (1, 4, 1, 4, Some(4)),
            (1, 4, 1, 3, Some(3)), // one CPU isolated from the domains
            (1, 2, 1, 1, None),    // the other one isolated: alone
            (1, 1, 1, 1, None),
            (4, 8, 2, 64, Some(2)), // SMT siblings
            (2, 1, 1, 2, Some(2)),  // two sockets of one core
            (2, 16, 1, 32, Some(16)),
        ] {
            assert_eq!(
                lowest_domain_weight(s, c, t, n),
                want,
                "{s}x{c}x{t} with {n}"
            );
        }
    }

    #[test]
    fn every_tick_raises_on_a_two_cpu_guest_at_hz_250() {
        let mut b = PeriodicBalance::new(&[Some(2), None], 250, 100);
        assert!(!b.tick(0, 100, true), "balanced at the build's jiffy");
        for j in 101..110 {
            assert!(b.tick(0, j, true), "jiffy {j}");
            assert!(!b.tick(0, j, true), "once per jiffy");
            assert!(!b.tick(1, j, true), "the null domain never balances");
        }
    }

    #[test]
    fn four_cpus_raise_every_other_tick_and_a_busy_cpu_waits_longer() {
        let mut b = PeriodicBalance::new(&[Some(4)], 250, 0);
        let raised: Vec<u64> = (1..=8).filter(|&j| b.tick(0, j, true)).collect();
        assert_eq!(raised, [2, 4, 6, 8]);
        // Busy: 8 ms·16 = 32 jiffies, less one.
        let raised: Vec<u64> = (9..=194).filter(|&j| b.tick(0, j, false)).collect();
        assert_eq!(raised, [39, 70, 101, 132, 163, 194]);
        // Idle again: due two jiffies after the last balance.
        assert!(!b.tick(0, 195, true));
        assert!(b.tick(0, 196, true));
    }
}
