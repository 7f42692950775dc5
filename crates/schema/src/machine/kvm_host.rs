//! What a KVM guest cannot see of its host, but `host calibrate` learnt from inside it: the
//! `[machine.kvm_host]` section of a scenario (docs/model.md, "This host"; docs/costs.md §3b).
//!
//! A guest sees its host only through the time its exits and wake-ups take. The ping-pong
//! model of a guest (`ticklab_twin::experiments::e3`) charges the host's side from the
//! 2017 Skylake estimates unless the machine carries this section; with it, the host's
//! wake-up of a blocked vCPU is the calibrated figure and the host's idle states, which the
//! guest cannot read, are folded into that figure.

use serde::{Deserialize, Serialize};

/// The host under a KVM guest, as far as calibration inside the guest learnt it.
///
/// Named after the side it describes (the KVM host of this guest), like the twin's
/// `kernel::kvm` module that charges it. Absent for machines that are not guests, for the
/// presets (the published host estimates apply) and in scenario files written before it
/// existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvmHost {
    /// The host's wake-up of a blocked vCPU, in ns: from the pending interrupt to the vCPU
    /// thread running again (the host CPU's idle-state exit, the reschedule, the switch from
    /// the host's idle task to the vCPU thread). **CAL**: `host calibrate` bisects it until
    /// the guest ping-pong model reproduces the two-CPU futex ping-pong measured at
    /// `haltpoll.guest_halt_poll_ns=0`. It absorbs whatever the host does that the guest
    /// cannot see, host halt polling included when `host_halt_poll_ns` is unknown.
    pub host_wake_ns: u64,
    /// The host's `kvm.halt_poll_ns`, when known; `None` (what calibration writes): unknown.
    /// From inside a guest host halt polling is invisible, so the twin then runs the host
    /// without polling and lets `host_wake_ns` absorb it. `Some(0)` says the host does not
    /// poll; `Some(n)` makes the twin poll up to `n` ns by the host's grow/shrink rule before
    /// it blocks the vCPU (docs/kernel-behaviour.md §9.5), `host_wake_ns` then being the wake
    /// of a vCPU that did block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_halt_poll_ns: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::kvm_guest;
    use crate::scenario::Scenario;

    fn guest_scenario(kvm_host: Option<KvmHost>) -> Scenario {
        let text =
            "machine = \"kvm-guest-2\"\n[kernel]\nversion = \"6.1\"\nhz = 250\nnohz = \"idle\"\n";
        let mut s = Scenario::from_toml(text, "t").expect("the base scenario is valid");
        s.machine.kvm_host = kvm_host;
        s
    }

    #[test]
    fn the_section_round_trips_and_older_files_load_without_it() {
        // (section, text the TOML must hold)
        let table = [
            (None, None),
            (
                Some(KvmHost {
                    host_wake_ns: 2861,
                    host_halt_poll_ns: None,
                }),
                Some("[machine.kvm_host]\nhost_wake_ns = 2861\n"),
            ),
            (
                Some(KvmHost {
                    host_wake_ns: 2861,
                    host_halt_poll_ns: Some(200_000),
                }),
                Some("[machine.kvm_host]\nhost_wake_ns = 2861\nhost_halt_poll_ns = 200000\n"),
            ),
        ];
        for (section, holds) in table {
            let text = guest_scenario(section).to_toml();
            match holds {
                Some(h) => assert!(text.contains(h), "{text}"),
                None => assert!(!text.contains("kvm_host"), "{text}"),
            }
            let back = Scenario::from_toml(&text, "t.toml").expect("loads");
            assert_eq!(back.machine.kvm_host, section);
        }
        assert_eq!(
            kvm_guest(2).kvm_host,
            None,
            "presets carry no calibrated host"
        );
        let typo = guest_scenario(Some(KvmHost {
            host_wake_ns: 1,
            host_halt_poll_ns: None,
        }))
        .to_toml()
        .replace("host_wake_ns", "host_wake");
        let e = Scenario::from_toml(&typo, "t.toml").expect_err("unknown key");
        assert!(e.to_string().contains("host_wake"), "{e}");
    }
}
