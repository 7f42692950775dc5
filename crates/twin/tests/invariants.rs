//! Invariants checked while stepping whole simulations: time never goes backwards and jiffies
//! never move backwards, across random seeds, loads and command lines.

use proptest::prelude::*;
use ticklab_schema::scenario::Run;
use ticklab_twin::Sim;
use ticklab_twin::experiments::e1;

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn time_and_jiffies_are_monotonic(seed in 0u64..1000, load in 0usize..5, aggressive in any::<bool>()) {
        let mode = if aggressive { e1::Mode::Aggressive } else { e1::Mode::NohzFull };
        let run = Run { duration_ns: 300_000_000, warmup_ns: 0, seed };
        let s = e1::scenario(mode, e1::LOADS[load], run);
        let mut sim = Sim::new(&s).unwrap();
        let (mut t, mut j) = (sim.now(), sim.jiffies());
        while sim.step() {
            prop_assert!(sim.now() >= t);
            prop_assert!(sim.jiffies() >= j);
            t = sim.now();
            j = sim.jiffies();
        }
        prop_assert!(sim.events() > 0);
    }
}
