//! How long a halted vCPU takes to run again, as a function of how long it was halted:
//! `[machine.halt_wake]`, written by `host calibrate` on a VM guest (docs/host-lab.md, "The
//! unseen-load check").
//!
//! On bare metal an idle state's exit latency is a property of the state (sysfs
//! `stateN/latency`). In a guest, HLT leaves the vCPU to the hypervisor, which blocks its
//! thread; the guest's wake-up then waits for the host to notice the interrupt, wake that
//! thread, maybe take its own CPU out of a deeper C-state, and re-enter the guest. The longer
//! the vCPU slept, the deeper the host's CPU went and the colder its caches: the guest sees an
//! exit cost that grows with the time it slept, which no constant latency can show. The
//! twin's idle loop uses [`HaltWake::exit_ns`] in place of a halting state's constant exit
//! latency when the machine carries this section (`ticklab_twin` `sim/idle.rs`); a machine
//! without it behaves as before.

use serde::{Deserialize, Serialize};

/// One measured point: after sleeping `slept_ns`, leaving the halt took `exit_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaltWakePoint {
    /// Time spent halted, ns.
    pub slept_ns: u64,
    /// Exit cost after that sleep, ns (the state's own latency included).
    pub exit_ns: u64,
}

/// The exit cost of a halted vCPU against its sleep length: a monotone piecewise-linear
/// curve through calibrated points.
///
/// Invariants ([`crate::validate`] refuses a file that breaks them): at least one point;
/// `slept_ns` strictly rising; `exit_ns` never falling (a longer sleep is never cheaper to
/// leave: the fit pools any pair that falls, see `host calibrate`'s `halt_wake` module).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaltWake {
    /// The points, by rising sleep length.
    pub points: Vec<HaltWakePoint>,
}

impl HaltWake {
    /// The exit cost after sleeping `slept_ns`: linear between the two points around it,
    /// the first point's cost before the first point, the last one's after the last (no
    /// extrapolation beyond what was measured).
    pub fn exit_ns(&self, slept_ns: u64) -> u64 {
        let p = &self.points;
        debug_assert!(!p.is_empty(), "a halt-wake curve has at least one point");
        debug_assert!(
            p.windows(2)
                .all(|w| w[0].slept_ns < w[1].slept_ns && w[0].exit_ns <= w[1].exit_ns),
            "halt-wake points rise in sleep and never fall in cost"
        );
        let Some(first) = p.first() else {
            return 0;
        };
        if slept_ns <= first.slept_ns {
            return first.exit_ns;
        }
        for w in p.windows(2) {
            let (a, b) = (w[0], w[1]);
            if slept_ns <= b.slept_ns {
                let span = (b.slept_ns - a.slept_ns) as u128;
                let rise = (b.exit_ns - a.exit_ns) as u128;
                let into = (slept_ns - a.slept_ns) as u128;
                return a.exit_ns + (rise * into / span) as u64;
            }
        }
        p.last().map_or(0, |l| l.exit_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(u64, u64)]) -> HaltWake {
        HaltWake {
            points: points
                .iter()
                .map(|&(slept_ns, exit_ns)| HaltWakePoint { slept_ns, exit_ns })
                .collect(),
        }
    }

    #[test]
    fn exit_cost_at_the_boundaries() {
        let c = curve(&[(50_000, 10_000), (1_000_000, 20_000), (100_000_000, 30_000)]);
        // (slept, expected exit)
        let table = [
            (0, 10_000),           // before the first point: flat
            (50_000, 10_000),      // on the first point
            (525_000, 15_000),     // half way to the second
            (1_000_000, 20_000),   // on the second
            (1_000_001, 20_000),   // just past it (integer step below 1 ns)
            (50_500_000, 25_000),  // half way to the third
            (100_000_000, 30_000), // on the last
            (u64::MAX, 30_000),    // after the last: flat, no extrapolation
        ];
        for (slept, exit) in table {
            assert_eq!(c.exit_ns(slept), exit, "slept {slept}");
        }
        let one = curve(&[(1_000, 7)]);
        assert_eq!(one.exit_ns(0), 7);
        assert_eq!(one.exit_ns(1_000_000), 7);
    }

    #[test]
    fn the_section_round_trips_through_toml() {
        let c = curve(&[(50_000, 10_000), (1_000_000, 20_000)]);
        let text = toml::to_string(&c).expect("serializes");
        let back: HaltWake = toml::from_str(&text).expect("parses");
        assert_eq!(back, c);
    }
}
