//! The timeline export (`--trace`, docs/trace.md): the trace of a run keeps its invariants
//! (slices nest per CPU, everything inside the window, task slices tile the window), the same
//! seed gives the same bytes, and tracing changes nothing in the report.

use ticklab_schema::scenario::{Run, Scenario};
use ticklab_trace::{DEFAULT_LIMIT_BYTES, TraceWindow, check, write_trace};
use ticklab_twin::experiments::e1;
use ticklab_twin::timeline::trace_run;

fn e1_scenario(mode: e1::Mode, hogs: u32, seed: u64) -> Scenario {
    e1::scenario(
        mode,
        hogs,
        Run {
            duration_ns: 300_000_000,
            warmup_ns: 100_000_000,
            seed,
        },
    )
}

fn trace(s: &Scenario, window: TraceWindow, limit: usize) -> (String, String) {
    let (report, w) = trace_run(s, 1, window, limit, |_| {}).unwrap();
    let mut out = Vec::new();
    write_trace(&mut out, vec![w], &[("source", "ticklab twin".into())]).unwrap();
    (
        String::from_utf8(out).unwrap(),
        serde_json::to_string(&report).unwrap(),
    )
}

#[test]
fn traces_keep_their_invariants() {
    let window = TraceWindow::parse("150ms..350ms").unwrap();
    for (mode, hogs) in [
        (e1::Mode::Aggressive, 2),
        (e1::Mode::NohzFull, 0),
        (e1::Mode::NohzFull, 8),
    ] {
        let s = e1_scenario(mode, hogs, 3);
        let (text, _) = trace(&s, window, DEFAULT_LIMIT_BYTES);
        let c = check(&text).unwrap_or_else(|e| panic!("{mode:?} {hogs}: {e}"));
        let nr = s.machine.topology.nr_cpus() as usize;
        assert_eq!(c.tracks, nr, "{mode:?} {hogs}: one track per CPU");
        for cat in ["task", "irq", "hrtimer"] {
            assert!(
                c.by_category.get(cat).is_some_and(|&n| n > 0),
                "{cat}: {c:?}"
            );
        }
        assert!(c.counters > 0, "{c:?}");
        if hogs < 8 {
            assert!(c.by_category.contains_key("idle_state"), "{c:?}");
        }
    }
}

#[test]
fn same_seed_same_bytes_and_the_report_is_unchanged() {
    let s = e1_scenario(e1::Mode::Aggressive, 2, 5);
    let (a, report) = trace(&s, TraceWindow::WHOLE, DEFAULT_LIMIT_BYTES);
    let (b, _) = trace(&s, TraceWindow::WHOLE, DEFAULT_LIMIT_BYTES);
    assert!(a == b, "same seed, different trace bytes");
    let c = check(&a).unwrap();
    assert!(
        c.instants > 0,
        "ticks stop and restart over a whole run: {c:?}"
    );
    let plain = serde_json::to_string(&ticklab_twin::simulate(&s, |_| {}).unwrap()).unwrap();
    assert_eq!(report, plain, "tracing changes nothing in the report");
    let (c, _) = trace(
        &e1_scenario(e1::Mode::Aggressive, 2, 6),
        TraceWindow::WHOLE,
        DEFAULT_LIMIT_BYTES,
    );
    assert!(a != c, "another seed, another trace");
}

#[test]
fn a_small_limit_ends_the_window_early_and_keeps_it_valid() {
    let s = e1_scenario(e1::Mode::NohzFull, 2, 3);
    let (text, _) = trace(&s, TraceWindow::WHOLE, 50_000);
    assert!(text.contains("\"truncated pid 1\":\"yes\""));
    check(&text).unwrap();
}

#[test]
fn a_short_trace_snapshot() {
    // 2 ms of the aggressive 2-hog run: hogs on CPUs 0-1, idle CPUs with stopped ticks.
    let s = e1_scenario(e1::Mode::Aggressive, 2, 1);
    let (text, _) = trace(&s, TraceWindow::parse("200ms..202ms").unwrap(), usize::MAX);
    check(&text).unwrap();
    insta::assert_snapshot!(text);
}
