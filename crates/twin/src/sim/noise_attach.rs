//! Where the OS-noise listener ([`super::noise`]) meets the machine: attached before the
//! first step to the CPUs that run a busy task, and read out into the report's noise
//! section. Apart from `noise.rs` so that the listener, which the `Sim` holds, does not
//! import the `Sim` back.

use super::Sim;
use super::noise::NoiseStats;

use super::observe::Observer;
use crate::engine::Time;
use crate::engine::rng::synthetic_stream;
use crate::workloads::bsp::SyntheticNoise;
use ticklab_schema::noise::NoiseReport;

impl<O: Observer> Sim<O> {
    /// Keeps the noise report ([`ticklab_schema::noise`]) of every CPU that runs a hog or the
    /// syscall loop (the ranks of a BSP job have it already). Call before the first
    /// [`Sim::step`]: the counters are allocated here, not per event.
    pub fn set_noise(&mut self) {
        if self.noise.is_some() {
            return;
        }
        let mut n = self.noise_stats();
        if self.window_open {
            // No warm-up: the window opened at boot, before this listener existed.
            n.reset(self.window_start);
        }
        self.noise = Some(Box::new(n));
    }

    /// The listener with this machine's costs, measuring every busy CPU (a hog or a syscall
    /// loop on it).
    pub(super) fn noise_stats(&self) -> NoiseStats {
        let guest = self.is_guest.then_some(self.costs.irq_entry_exit_ns);
        NoiseStats::new(
            self.cpus
                .iter()
                .map(|c| (c.hogs > 0 || c.syscall_runnable, c.running)),
            self.sources.len(),
            guest.unwrap_or(0),
            self.costs.rcu_node_hold_ns,
        )
    }

    /// Adds a synthetic noise source to the BSP job (docs/noise.md, the closed-form checks):
    /// `false` when the workload has no BSP job. Call before the first [`Sim::step`].
    pub fn set_synthetic_noise(&mut self, s: SyntheticNoise) -> bool {
        let seed = self.seed;
        match self.noise.as_mut().and_then(|n| n.bsp.as_mut()) {
            Some(b) => {
                b.set_synthetic(s, synthetic_stream(seed));
                true
            }
            None => false,
        }
    }

    /// The noise report at `end`, if noise is kept; the BSP job's report beside it.
    pub(super) fn noise_report(
        &mut self,
        end: Time,
    ) -> (Option<NoiseReport>, Option<ticklab_schema::bsp::BspReport>) {
        let Some(n) = self.noise.as_mut() else {
            return (None, None);
        };
        let names: Vec<String> = self.sources.iter().map(|s| s.name.clone()).collect();
        let bsp = n
            .bsp
            .as_mut()
            .map(|b| b.report(end, |i| NoiseStats::part_name(i, &names)));
        let report = n.report(&names, |c| self.stats.busy_ns(c, end));
        (Some(report), bsp)
    }
}
