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
//!
//! A CPU whose idle tick is stopped takes no ticks, so a busy CPU's tick balances on its
//! behalf: the idle load balancer (`NohzIdleBalance`, `nohz_balancer_kick`, `kick_ilb` and
//! `_nohz_idle_balance`, 6.1). A CPU enters `nohz.idle_cpus_mask` when its idle tick stops and
//! leaves it at its next *busy* tick (a tick that finds a task running), not when its tick
//! restarts. Each busy tick, while the mask is not empty, asks for a kick: a blocked-load update
//! (`NOHZ_STATS_KICK`) when the last one is older than `LOAD_AVG_PERIOD` (32 ms), a full balance
//! (`NOHZ_BALANCE_KICK`) when `nohz.next_balance` has come and the ticking CPU runs two tasks or
//! its cache domain counts more than one CPU outside the mask, and a refresh of
//! `nohz.next_balance` (`NOHZ_NEXT_KICK`) after a CPU has entered the mask. The kick is a
//! function-call IPI to the first idle CPU of the mask that may balance (`HK_TYPE_MISC`: not
//! `nohz_full`), whose softirq then updates or balances every idle CPU of the mask. On
//! PREEMPT_RT that softirq runs in the kicked CPU's softirq thread: the kick wakes a task there,
//! which ends its idle loop and restarts its tick.
//!
//! Simplifications (E): every idle CPU is taken to keep some blocked load (PELT decays it over
//! hundreds of milliseconds, and the CPUs this models run a task at least every few hundred), so
//! blocked-load kicks go on every 32 ms while a busy tick asks; a CPU going newly idle does not
//! update the blocked load itself (on PREEMPT_RT the softirq threads make two tasks runnable
//! at once often enough to keep the root domain's overload flag up, which sends `newidle_balance`
//! past that update); the asymmetric-capacity and asymmetric-packing kicks are left out (the
//! modelled machines are symmetric).

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

    /// When `cpu`, idle, balances next (`rq->next_balance`); `None` on the null domain.
    #[inline]
    pub(crate) fn next_balance(&self, cpu: usize) -> Option<u64> {
        self.interval[cpu].map(|(idle_j, _)| self.last[cpu] + idle_j)
    }
}

/// `LOAD_AVG_PERIOD`: how often the idle load balancer updates the idle CPUs' blocked load, ms.
const LOAD_AVG_PERIOD_MS: u64 = 32;

/// What a kick asks of the idle load balancer (`NOHZ_STATS_KICK`, `NOHZ_BALANCE_KICK`,
/// `NOHZ_NEXT_KICK`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kick {
    /// Update the idle CPUs' blocked load.
    pub stats: bool,
    /// Balance on behalf of the idle CPUs whose balance is due.
    pub balance: bool,
    /// Recompute `nohz.next_balance`.
    pub next: bool,
}

impl Kick {
    fn any(self) -> bool {
        self.stats || self.balance || self.next
    }
}

/// The global `nohz` state of the idle load balancer (see the module documentation).
///
/// Invariants: `nr_stopped` counts the `true` entries of `stopped`; per cache domain,
/// `nr_busy` counts its CPUs outside the mask; a CPU in the mask may enter it (is in the
/// scheduler domains).
#[derive(Debug, Clone)]
pub(crate) struct NohzIdleBalance {
    /// Per CPU: in `nohz.idle_cpus_mask` (`rq->nohz_tick_stopped`).
    stopped: Vec<bool>,
    nr_stopped: u32,
    /// Per CPU: its cache domain (`sd_llc`), `None` on the null domain, which never enters
    /// the mask (`HK_TYPE_SCHED`, the other condition, is every CPU in 6.1).
    llc: Vec<Option<u32>>,
    /// Per CPU: may be kicked (`HK_TYPE_MISC`: not `nohz_full`).
    may_balance: Vec<bool>,
    /// Per cache domain: its CPUs outside the mask (`sd_llc_shared->nr_busy_cpus`).
    nr_busy: Vec<u32>,
    /// `nohz.has_blocked`.
    has_blocked: bool,
    /// `nohz.next_blocked`, jiffies.
    next_blocked: u64,
    /// `nohz.needs_update`.
    needs_update: bool,
    /// `nohz.next_balance`, jiffies.
    next_balance: u64,
    /// `LOAD_AVG_PERIOD` in jiffies.
    blocked_period: u64,
    /// 60 s in jiffies: where a balancing pass starts its search for the next balance.
    far: u64,
}

impl NohzIdleBalance {
    /// Nobody in the mask at `jiffies`, every CPU counted busy in its cache domain (`llc`:
    /// `None` on the null domain; `may_balance`: outside `nohz_full`).
    pub(crate) fn new(
        llc: Vec<Option<u32>>,
        may_balance: Vec<bool>,
        hz: u32,
        jiffies: u64,
    ) -> NohzIdleBalance {
        debug_assert_eq!(llc.len(), may_balance.len());
        let domains = llc.iter().flatten().max().map_or(0, |&l| l as usize + 1);
        let mut nr_busy = vec![0; domains];
        for &l in llc.iter().flatten() {
            nr_busy[l as usize] += 1;
        }
        NohzIdleBalance {
            stopped: vec![false; llc.len()],
            nr_stopped: 0,
            llc,
            may_balance,
            nr_busy,
            has_blocked: false,
            next_blocked: jiffies,
            needs_update: false,
            next_balance: jiffies,
            blocked_period: msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz),
            far: 60 * u64::from(hz),
        }
    }

    /// `cpu`'s idle tick stopped (`nohz_balance_enter_idle`).
    pub(crate) fn enter_idle(&mut self, cpu: usize) {
        let Some(l) = self.llc[cpu] else {
            return;
        };
        if !self.stopped[cpu] {
            self.stopped[cpu] = true;
            self.nr_stopped += 1;
            self.nr_busy[l as usize] -= 1;
            self.needs_update = true;
        }
        self.has_blocked = true;
    }

    /// A tick on `cpu` at `jiffies` that found a task running, `nr_running` runnable
    /// (`nohz_balancer_kick`): `cpu` leaves the mask, and the kick it sends, if any, with the
    /// CPU it goes to: the first of the mask that may balance, is not `cpu` and is idle
    /// (`find_new_ilb`, `idle` says which are).
    pub(crate) fn busy_tick(
        &mut self,
        cpu: usize,
        jiffies: u64,
        nr_running: u32,
        idle: impl Fn(usize) -> bool,
    ) -> Option<(usize, Kick)> {
        if self.stopped[cpu] {
            // nohz_balance_exit_idle
            self.stopped[cpu] = false;
            self.nr_stopped -= 1;
            if let Some(l) = self.llc[cpu] {
                self.nr_busy[l as usize] += 1;
            }
        }
        debug_assert_eq!(
            self.nr_stopped as usize,
            self.stopped.iter().filter(|&&s| s).count()
        );
        if self.nr_stopped == 0 {
            return None;
        }
        let mut kick = Kick {
            stats: self.has_blocked && jiffies > self.next_blocked,
            ..Kick::default()
        };
        if jiffies >= self.next_balance {
            let crowded = self.llc[cpu].is_some_and(|l| self.nr_busy[l as usize] > 1);
            if nr_running >= 2 || crowded {
                kick.stats = true;
                kick.balance = true;
            }
        }
        kick.next = self.needs_update;
        if !kick.any() {
            return None;
        }
        if kick.balance {
            self.next_balance = jiffies + 1;
        }
        let ilb = (0..self.stopped.len())
            .find(|&x| x != cpu && self.stopped[x] && self.may_balance[x] && idle(x))?;
        Some((ilb, kick))
    }

    /// The kicked CPU `ilb`'s softirq at `jiffies` (`_nohz_idle_balance`): the blocked-load
    /// update and, for a balance kick, the balance of every idle CPU of the mask whose balance
    /// is due (`periodic` records it), then `nohz.next_balance` from theirs. On PREEMPT_RT the
    /// softirq runs in `ilb`'s softirq thread, so `ilb` itself is not idle then and is passed
    /// over; `idle` says which of the others are.
    pub(crate) fn kicked(
        &mut self,
        ilb: usize,
        kick: Kick,
        jiffies: u64,
        periodic: &mut PeriodicBalance,
        idle: impl Fn(usize) -> bool,
    ) {
        if kick.stats {
            self.has_blocked = false;
        }
        if kick.next {
            self.needs_update = false;
        }
        let n = self.stopped.len();
        let mut next = jiffies + self.far;
        let mut found = false;
        let mut blocked = false;
        for b in (1..=n).map(|i| (ilb + i) % n) {
            if b == ilb || !self.stopped[b] || !idle(b) {
                continue;
            }
            // Every idle CPU keeps some blocked load (module documentation).
            blocked |= kick.stats;
            if kick.balance {
                // rebalance_domains(rq, CPU_IDLE): balances if due.
                periodic.tick(b, jiffies, true);
            }
            if let Some(nb) = periodic.next_balance(b) {
                next = next.min(nb);
                found = true;
            }
        }
        if found {
            self.next_balance = next;
        }
        if kick.stats {
            self.next_blocked = jiffies + self.blocked_period;
        }
        if blocked {
            self.has_blocked = true;
        }
    }
}

/// The load balance as the tick drives it on a PREEMPT_RT build: each CPU's periodic balance
/// and the idle load balancer.
#[derive(Debug, Clone)]
pub(crate) struct SchedBalance {
    /// Each CPU's periodic balance.
    pub periodic: PeriodicBalance,
    /// The idle load balancer.
    pub nohz: NohzIdleBalance,
}

impl SchedBalance {
    /// A busy tick on `cpu` (see [`NohzIdleBalance::busy_tick`]): the CPU kicked, its softirq's
    /// pass already done ([`NohzIdleBalance::kicked`]), or `None`.
    pub(crate) fn kick(
        &mut self,
        cpu: usize,
        jiffies: u64,
        nr_running: u32,
        idle: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let (ilb, kick) = self.nohz.busy_tick(cpu, jiffies, nr_running, &idle)?;
        self.nohz
            .kicked(ilb, kick, jiffies, &mut self.periodic, &idle);
        Some(ilb)
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

    /// Two CPUs at HZ=250 in one cache domain, CPU 0 busy, CPU 1 idle with its tick stopped.
    fn two_cpus() -> (NohzIdleBalance, PeriodicBalance) {
        (
            NohzIdleBalance::new(vec![Some(0), Some(0)], vec![true, true], 250, 0),
            PeriodicBalance::new(&[Some(2), Some(2)], 250, 0),
        )
    }

    #[test]
    fn a_cpu_stays_in_the_mask_until_its_own_busy_tick() {
        let (mut n, _) = two_cpus();
        assert_eq!(n.busy_tick(0, 1, 1, |_| true), None, "nobody in the mask");
        n.enter_idle(1);
        assert!(n.stopped[1] && n.nr_stopped == 1 && n.nr_busy == [1]);
        // CPU 1's tick restarting changes nothing; only its own busy tick takes it out.
        n.enter_idle(1);
        assert_eq!(n.nr_stopped, 1, "entering twice counts once");
        assert_eq!(
            n.busy_tick(1, 2, 1, |_| true),
            None,
            "the mask is empty again"
        );
        assert!(!n.stopped[1] && n.nr_busy == [2]);
    }

    #[test]
    fn blocked_load_kicks_come_every_load_avg_period() {
        let (mut n, mut p) = two_cpus();
        let mut kicks = Vec::new();
        for j in 1..=40 {
            // CPU 1's tick stops again between kicks (its chain ended): it stays in the mask
            // and only says it has blocked load.
            n.enter_idle(1);
            if let Some((ilb, kick)) = n.busy_tick(0, j, 1, |x| x == 1) {
                assert_eq!(ilb, 1);
                n.kicked(ilb, kick, j, &mut p, |x| x == 1);
                kicks.push((j, kick.stats, kick.next));
            }
        }
        // The first kick also refreshes next_balance (CPU 1 had just entered); then one every
        // 32 ms = 8 jiffies, strictly after.
        assert_eq!(
            kicks,
            [
                (1, true, true),
                (10, true, false),
                (19, true, false),
                (28, true, false),
                (37, true, false)
            ]
        );
    }

    #[test]
    fn a_balance_kick_needs_two_busy_cpus_and_balances_the_idle_ones() {
        // Four CPUs: 0 and 1 busy, 2 and 3 stopped; balance every 2 jiffies when idle.
        let mut n = NohzIdleBalance::new(vec![Some(0); 4], vec![true; 4], 250, 0);
        let mut p = PeriodicBalance::new(&[Some(4); 4], 250, 0);
        n.enter_idle(2);
        n.enter_idle(3);
        let idle = |x: usize| x >= 2;
        let (ilb, kick) = n.busy_tick(0, 5, 1, idle).expect("two CPUs busy: balance");
        assert_eq!(ilb, 2, "the first idle CPU of the mask");
        assert!(kick.balance && kick.stats && kick.next);
        assert_eq!(n.next_balance, 6, "pushed one jiffy on");
        n.kicked(ilb, kick, 5, &mut p, idle);
        // CPU 3 was balanced on its behalf (due since jiffy 2); CPU 2, running the softirq
        // thread, was not.
        assert_eq!(p.next_balance(3), Some(7));
        assert_eq!(p.next_balance(2), Some(2));
        assert_eq!(
            n.next_balance, 7,
            "the next idle balance among those visited"
        );
        // Jiffy 6: before next_balance, nothing new to say.
        assert_eq!(n.busy_tick(1, 6, 1, idle), None);
        // One busy CPU alone asks for no balance, only the blocked-load update when due.
        let mut m = NohzIdleBalance::new(vec![Some(0); 2], vec![true; 2], 250, 0);
        m.enter_idle(1);
        let (_, k) = m.busy_tick(0, 5, 1, |x| x == 1).unwrap();
        assert!(!k.balance, "one busy CPU in the cache domain");
        let (_, k) = m.busy_tick(0, 5, 2, |x| x == 1).unwrap();
        assert!(k.balance, "two tasks on the ticking CPU");
    }

    #[test]
    fn who_may_enter_and_who_may_be_kicked() {
        // CPU 1 on the null domain (isolcpus=domain), CPU 2 nohz_full.
        let mut n = NohzIdleBalance::new(
            vec![Some(0), None, Some(0)],
            vec![true, true, false],
            250,
            0,
        );
        n.enter_idle(1);
        assert!(!n.stopped[1], "the null domain never enters the mask");
        n.enter_idle(2);
        assert!(n.stopped[2]);
        assert_eq!(
            n.busy_tick(0, 1, 1, |_| true),
            None,
            "a nohz_full CPU is never the idle load balancer"
        );
        n.enter_idle(0);
        assert_eq!(
            n.busy_tick(0, 2, 1, |_| true).map(|(c, _)| c),
            None,
            "a CPU's own busy tick takes it out of the mask before it looks for a balancer"
        );
    }
}
