//! The scenario and machine loader, then the twin: a scenario the validation layer accepts
//! (and whose compute estimate is under the limit) must build and run 1 ms without a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ticklab_schema::scenario::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mut s) = Scenario::from_toml(text, "fuzz") else { return };
    s.run.warmup_ns = s.run.warmup_ns.min(1_000_000);
    s.run.duration_ns = s.run.duration_ns.min(1_000_000);
    if s.validate().is_err() || s.check_compute("--yes").is_err() {
        return;
    }
    let _ = ticklab_twin::simulate(&s, |_| {});
});
