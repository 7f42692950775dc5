//! Same scenario and seed ⇒ byte-identical JSON report; a different seed differs.

use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::e1;

fn json(seed: u64, hogs: u32) -> String {
    let run = Run {
        duration_ns: 2_000_000_000,
        warmup_ns: 500_000_000,
        seed,
    };
    let s = e1::scenario(e1::Mode::Aggressive, hogs, run);
    serde_json::to_string(&ticklab_twin::simulate(&s, |_| {}).unwrap()).unwrap()
}

#[test]
fn same_seed_same_bytes() {
    for hogs in [0, 2] {
        assert_eq!(json(7, hogs), json(7, hogs));
    }
    assert_ne!(json(7, 0), json(8, 0));
}
