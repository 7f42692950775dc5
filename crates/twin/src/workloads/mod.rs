//! Workloads on modelled CPUs: where hogs go, the frame-scheduler groups ([`frames`]), the
//! syscall loop ([`syscall`]), the futex/pipe ping-pong in a KVM guest ([`pingpong`], E3)
//! with its critical path term by term ([`critical_path`]), and the barrier of a
//! bulk-synchronous job ([`bsp`]).

pub mod bsp;
pub mod critical_path;
pub mod frames;
pub mod pingpong;
pub mod syscall;

use ticklab_schema::machine::Topology;

/// Default hog placement: one hog per core first, then the SMT siblings; cores without a
/// housekeeping CPU come first, and inside a core the thread that is not housekeeping.
///
/// This mirrors the scheduler's preference for fully idle cores (`select_idle_core`) and the
/// fact that the timekeeping CPU carries the machine's kernel work, so load balancing sees it as
/// the busiest. It is a modelling choice; docs/experiments.md E1's interrupt counts (a hog on the
/// timekeeping CPU would add ~HZ interrupts/s at 1, 2 and 4 hogs, which the published rows do
/// not show) are consistent with it.
pub(crate) fn default_hog_cpus(count: u32, topo: &Topology, housekeeping: &[bool]) -> Vec<u32> {
    let cores = topo.nr_cores();
    let mut order: Vec<u32> = (0..cores).collect();
    let has_hk = |core: u32| topo.threads_of_core(core).any(|c| housekeeping[c as usize]);
    order.sort_by_key(|&core| (has_hk(core), core));
    let mut cpus = Vec::with_capacity(count as usize);
    for round in 0..topo.threads_per_core {
        for &core in &order {
            let mut threads: Vec<u32> = topo.threads_of_core(core).collect();
            threads.sort_by_key(|&c| (housekeeping[c as usize], c));
            if let Some(&c) = threads.get(round as usize) {
                cpus.push(c);
            }
        }
    }
    cpus.truncate(count as usize);
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e1_placement() {
        let t = Topology {
            sockets: 1,
            cores_per_socket: 4,
            threads_per_core: 2,
        };
        let mut hk = vec![false; 8];
        hk[0] = true;
        assert_eq!(default_hog_cpus(1, &t, &hk), vec![1]);
        assert_eq!(default_hog_cpus(2, &t, &hk), vec![1, 2]);
        assert_eq!(default_hog_cpus(4, &t, &hk), vec![1, 2, 3, 4]);
        let mut all = default_hog_cpus(8, &t, &hk);
        assert_eq!(all[7], 0, "the timekeeping CPU is filled last");
        all.sort();
        assert_eq!(all, (0..8).collect::<Vec<_>>());
        // Without nohz_full every CPU is housekeeping: plain spread over cores.
        assert_eq!(default_hog_cpus(4, &t, &[true; 8]), vec![0, 1, 2, 3]);
    }
}
