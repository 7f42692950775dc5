//! The JSON-lines reader behind `merge`, `plot`, `report` and the sweep journal
//! (`lines::for_each_line`, then `ticklab_sweep::read_rows`): no panic on any input, no line
//! handed over longer than the per-line cap, line numbers counting up from 1, and the input
//! never read past the total cap.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ticklab_schema::lines::{LinesError, for_each_line};
use ticklab_sweep::read_rows;

fuzz_target!(|data: &[u8]| {
    // Small caps, so that the fuzzer reaches both limits with short inputs.
    let (max_line, max_total) = (256usize, 4096u64);
    let mut next = 1u64;
    let mut held = 0usize;
    let r = for_each_line(data, max_line, max_total, |n, line| {
        assert_eq!(n, next, "lines are numbered from 1 without gaps");
        next += 1;
        held = held.max(line.len());
        Ok::<(), std::convert::Infallible>(())
    });
    assert!(
        held <= max_line,
        "a line longer than the cap was handed over"
    );
    assert!(
        !matches!(r, Err(LinesError::Line { .. })),
        "the callback refuses no line"
    );
    // The rows reader itself, with its own limits: any answer but a panic.
    let _ = read_rows(data);
});
