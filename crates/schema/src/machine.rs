//! The modelled machine: topology, costs, cpuidle states, power and timer hardware.
//!
//! Every number in a preset names its source with a tag from `docs/costs.md`'s legend:
//! `C` (constant from code or docs), `M` (measured, quoted), `D` (derived), `E` (estimate, with
//! the reasoning) or `CAL` (calibrated, naming the experiment it was fitted to). Presets are
//! functions so the provenance comments sit beside the values.

mod e4_servers;
pub use e4_servers::{arm64_128_4n, epyc_7252_2s, xeon_e5_2650v3_2s};
mod halt_wake;
pub use halt_wake::{HaltWake, HaltWakePoint};
mod kvm_host;
pub use kvm_host::KvmHost;
mod presets;
pub use presets::{kvm_guest, server_2012_64, x86_context_tracking, xps13_7390};
mod spec;
pub use spec::{
    AutoDemotion, ClockEventSpec, ClocksourceSpec, ContextTrackingCosts, Costs, IdleState, Machine,
    PackageState, PowerModel, Topology,
};

/// Names of the built-in machine presets.
pub const PRESETS: &[&str] = &[
    "xps13-7390",
    "kvm-guest-2",
    "server-2012-64",
    "xeon-e5-2650v3-2s",
    "arm64-128-4n",
    "epyc-7252-2s",
];

/// Looks a preset up by name.
pub fn preset(name: &str) -> Option<Machine> {
    match name {
        "xps13-7390" | "laptop-8" => Some(xps13_7390()),
        "kvm-guest-2" => Some(kvm_guest(2)),
        "server-2012-64" | "e2-server" => Some(server_2012_64()),
        "xeon-e5-2650v3-2s" => Some(xeon_e5_2650v3_2s()),
        "arm64-128-4n" => Some(arm64_128_4n()),
        "epyc-7252-2s" => Some(epyc_7252_2s()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xps_topology_siblings() {
        let t = xps13_7390().topology;
        assert_eq!(t.nr_cpus(), 8);
        assert_eq!(t.core_of(1), t.core_of(5));
        assert_ne!(t.core_of(1), t.core_of(2));
        assert_eq!(t.threads_of_core(3).collect::<Vec<_>>(), vec![3, 7]);
    }

    #[test]
    fn server_2012_has_64_cpus_on_4_sockets() {
        let m = server_2012_64();
        assert_eq!(m.topology.nr_cpus(), 64);
        assert_eq!(m.topology.socket_of(4), 0);
        assert_eq!(m.topology.socket_of(8), 1);
        assert_eq!(m.topology.socket_of(40), 1);
        assert_eq!(preset("server-2012-64"), Some(m));
    }

    #[test]
    fn package_states_are_ordered() {
        let m = xps13_7390();
        let p = &m.power.package_states;
        for w in p.windows(2) {
            assert!(w[0].min_core_state < w[1].min_core_state);
            assert!(w[0].power_w >= w[1].power_w);
        }
        assert!(p.iter().all(|s| s.min_core_state < m.idle_states.len()));
    }
}
