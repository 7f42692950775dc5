//! `/proc/timer_list` text (`ticklab_host::procfs::timer_list::parse_timer_list`): any text gives a value or an error,
//! never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = ticklab_host::procfs::timer_list::parse_timer_list(text);
});
