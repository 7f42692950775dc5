//! Snapshots of what a user reads: the twin's per-CPU table for short, seeded E1 runs. The twin
//! is deterministic, so any change here is a change of the model or of the renderer, and the
//! diff shows which numbers moved.

use ticklab_schema::scenario::Run;
use ticklab_twin::experiments::e1;

fn table(mode: e1::Mode, hogs: u32) -> String {
    let run = Run {
        duration_ns: 3_000_000_000,
        warmup_ns: 1_000_000_000,
        seed: 11,
    };
    let r = ticklab_twin::simulate(&e1::scenario(mode, hogs, run), |_| {}).unwrap();
    ticklab_report::cpu_table(&r)
}

#[test]
fn e1_nohz_full_idle_table() {
    insta::assert_snapshot!(table(e1::Mode::NohzFull, 0));
}

#[test]
fn e1_aggressive_two_hogs_table() {
    insta::assert_snapshot!(table(e1::Mode::Aggressive, 2));
}
