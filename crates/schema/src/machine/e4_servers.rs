//! The three servers of experiment E4 (docs/experiments.md E4): what NO_HZ_FULL costs a
//! system call on a 2 × Xeon E5-2650 v3, a 128-CPU arm64 server with 4 NUMA nodes and a
//! 2 × EPYC 7252, all on kernel 5.15.
//!
//! Only the syscall path and the tick matter to E4: the entry/exit cost of a null syscall per
//! architecture (`Costs::syscall_ns`) and the parts of a context-tracking transition
//! (`Costs::context_tracking`). Every number carries its tag from docs/costs.md (§2 for the
//! syscall rows). Power is not an E4 observable and is not modelled (all 0, as for the KVM
//! guest); the idle states are the minimum each platform has, since the loop's CPU never idles.

use super::presets::{x86_context_tracking, xps13_7390};
use super::spec::{
    ClockEventSpec, ClocksourceSpec, ContextTrackingCosts, IdleState, Machine, PowerModel,
    TSC_MAX_IDLE_NS, Topology, state,
};

/// The x86 polling state (`POLL`, 0/0 µs).
fn poll_state() -> IdleState {
    let mut poll = state("POLL", 0, 0, 0.0, 0.0, 0.0);
    poll.polling = true;
    poll
}

/// A server built on the laptop's estimates (docs/costs.md §7 table) where nothing
/// server-specific is known: tick handler, interrupt entry/exit, device programming.
fn server_base(name: &str, description: &str, topology: Topology) -> Machine {
    let mut m = xps13_7390();
    m.name = name.into();
    m.description = description.into();
    m.topology = topology;
    // M: intra-socket line transfer 44-51 ns on server ring/mesh parts, cross-socket
    // 108-197 ns (docs/costs.md §5); E: 45 / 150 as for the E2 server.
    m.costs.cacheline_local_ns = 45;
    m.costs.cacheline_remote_ns = 150;
    // E: several sockets or NUMA nodes spread interrupt delivery more than one socket does.
    m.costs.timer_delivery_jitter_ns = 100;
    // Power is not an E4 observable: not modelled (every figure 0, reports say so).
    m.power = PowerModel::not_modelled();
    m
}

/// 2 × Intel Xeon E5-2650 v3 (Haswell-EP): 10 cores and 20 threads per socket, 40 logical CPUs
/// on 2 NUMA nodes (one per socket), numbered as x86 Linux does (CPUs n and n + 20 are SMT
/// siblings; 0-9 and 20-29 on node 0). The E4 Intel machine.
pub fn xeon_e5_2650v3_2s() -> Machine {
    let mut m = server_base(
        "xeon-e5-2650v3-2s",
        "2 × Xeon E5-2650 v3 (Haswell-EP), 2 × 10C/20T (40 CPUs), 2 NUMA nodes",
        Topology {
            sockets: 2,
            cores_per_socket: 10,
            threads_per_core: 2,
        },
    );
    // E: docs/costs.md §2 puts an x86 null syscall at 250-600 ns with KPTI/IBRS-era
    // mitigations. Haswell-EP is affected by Meltdown and MDS, so 5.15's defaults switch page
    // tables on every entry and exit (KPTI, with PCID) and clear CPU buffers on every return to
    // user; take the middle of the band, 400 ns.
    m.costs.syscall_ns = 400;
    m.costs.context_tracking = Some(x86_context_tracking());
    // E: C1 2/2 µs and C1E 10/20 µs exit latency / target residency, the shallow states of
    // intel_idle's Skylake table (C, docs/costs.md §4), taken for Haswell-EP; deeper states
    // are left out (E4's loop never idles its CPU and power is not modelled).
    m.idle_states = vec![
        poll_state(),
        state("C1", 2, 2, 0.0, 0.0, 0.0),
        state("C1E", 10, 20, 0.0, 0.0, 0.0),
    ];
    m
}

/// 2 × AMD EPYC 7252 (Zen 2): 8 cores and 16 threads per socket, 32 logical CPUs on 2 NUMA
/// nodes (NPS1, one per socket), CPUs n and n + 16 SMT siblings. The E4 AMD machine.
pub fn epyc_7252_2s() -> Machine {
    let mut m = server_base(
        "epyc-7252-2s",
        "2 × EPYC 7252 (Zen 2), 2 × 8C/16T (32 CPUs), 2 NUMA nodes",
        Topology {
            sockets: 2,
            cores_per_socket: 8,
            threads_per_core: 2,
        },
    );
    // E: docs/costs.md §2 puts an x86 null syscall at 100-250 ns without KPTI. Zen 2 is not
    // affected by Meltdown or MDS (no page-table switch, no buffer clearing); take the middle
    // of that band, 175 ns. Later mitigations (retbleed's return thunks, 5.19 on) are not
    // modelled: the same figure serves kernel 6.2.
    m.costs.syscall_ns = 175;
    m.costs.context_tracking = Some(x86_context_tracking());
    // E: acpi_idle's C1 (HLT) at about 1 µs; deeper ACPI states left out as for Intel.
    m.cpuidle_driver = "acpi_idle".into();
    m.idle_states = vec![poll_state(), state("C1", 1, 1, 0.0, 0.0, 0.0)];
    // E: Zen 2 has no TSC-deadline mode; the local APIC timer in one-shot mode, same floor.
    m.clockevent.name = "lapic".into();
    m
}

/// A 128-CPU arm64 server with 4 NUMA nodes (E4's machine (ii); the part is not named:
/// a two-socket 64-core HiSilicon Kunpeng 920 or a 128-core Ampere Altra Max in quadrant mode
/// both match). No SMT. The twin has no NUMA level of its own: the 4 nodes are modelled as 4
/// "sockets" of 32 cores, which is what the cache-line costs need.
pub fn arm64_128_4n() -> Machine {
    let mut m = server_base(
        "arm64-128-4n",
        "arm64 server, 128 cores (no SMT), 4 NUMA nodes of 32",
        Topology {
            sockets: 4,
            cores_per_socket: 32,
            threads_per_core: 1,
        },
    );
    // E: no public arm64 null-syscall measurement exists (docs/costs.md §2 and §9). The
    // estimate band is 100-300 ns for Neoverse / Cortex-A7x class cores; arm64 has no
    // page-table switch on these parts (not affected by Meltdown) and its entry saves and
    // restores registers much as x86 does, so take the middle of the band, 200 ns.
    m.costs.syscall_ns = 200;
    m.costs.context_tracking = Some(ContextTrackingCosts {
        // E: arm64's fully ordered atomic (LSE `ldaddal`, or an LL/SC loop with `dmb ish`) on a
        // line the CPU owns costs tens of cycles like x86's locked add, at a similar clock
        // (2.6-3.0 GHz): the x86 figure (D, 21 ns) is used.
        rcu_eqs_ns: 21,
        // E: as x86, one load and a compare.
        vtime_jiffy_check_ns: 1,
        // E: arm64 sched_clock reads the generic timer's counter (CNTVCT_EL0 after an `isb`,
        // which drains the pipeline, 20-40 cycles) through the generic sched_clock's own
        // seqcount read: about twice x86's rdtsc path, 20 ns.
        vtime_clock_ns: 20,
        // E: the same accounting work as x86 (D, 75 ns); no arm64 figure exists.
        vtime_account_ns: 75,
        // E: as x86, the call with its recursion counter and two per-CPU reads.
        percpu_check_ns: 3,
    });
    // E: cpuidle-psci's WFI state (1 µs); no deeper PSCI states listed.
    m.cpuidle_driver = "psci_idle".into();
    m.idle_states = vec![state("WFI", 1, 1, 0.0, 0.0, 0.0)];
    m.clockevent = ClockEventSpec {
        // C: the arm architected timer registers a 0xf-tick minimum delta; E: a 100 MHz
        // counter, so 150 ns.
        name: "arch_sys_timer".into(),
        min_delta_ns: 150,
        max_delta_ns: u64::MAX / 2,
    };
    m.clocksource = ClocksourceSpec {
        // E: a 56-bit counter at 100 MHz; max_idle_ns is bounded by the mult/shift overflow,
        // hundreds of seconds as for the TSC: the TSC figure (docs/costs.md §6) is used.
        name: "arch_sys_counter".into(),
        max_idle_ns: TSC_MAX_IDLE_NS,
    };
    m
}

#[cfg(test)]
mod tests {
    use super::super::preset;
    use super::*;

    #[test]
    fn e4_topologies_match_the_published_machines() {
        // CPU counts, SMT siblings of the housekeeping CPUs, and nodes as docs/experiments.md E4
        // numbers them.
        let intel = xeon_e5_2650v3_2s().topology;
        assert_eq!(intel.nr_cpus(), 40);
        assert_eq!(intel.core_of(0), intel.core_of(20));
        assert_eq!(intel.socket_of(19), 1);
        assert_eq!(intel.socket_of(20), 0);
        let amd = epyc_7252_2s().topology;
        assert_eq!(amd.nr_cpus(), 32);
        assert_eq!(amd.core_of(0), amd.core_of(16));
        assert_eq!(amd.socket_of(15), 1);
        let arm = arm64_128_4n().topology;
        assert_eq!(arm.nr_cpus(), 128);
        assert_eq!(arm.socket_of(64), 2);
        for name in ["xeon-e5-2650v3-2s", "arm64-128-4n", "epyc-7252-2s"] {
            let m = preset(name).expect(name);
            assert_eq!(m.name, name);
            assert!(m.costs.context_tracking.is_some(), "{name}");
        }
    }
}
