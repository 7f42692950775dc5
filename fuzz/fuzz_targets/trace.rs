//! tracefs `trace` text (`ticklab_host::procfs::trace`): the whole text and each line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = ticklab_host::procfs::trace::parse_trace(text);
    for line in text.lines() {
        let _ = ticklab_host::procfs::trace::parse_trace_line(line);
    }
});
