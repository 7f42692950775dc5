//! Cpulists: every grammar, known and unknown CPU counts; an accepted list prints back to a
//! canonical list that parses to the same set.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ticklab_cmdline::{CpulistGrammar, parse_cpulist_as};

fuzz_target!(|data: &[u8]| {
    let [a, b, rest @ ..] = data else { return };
    let Ok(list) = std::str::from_utf8(rest) else { return };
    let nr = if *a == 0 { u32::MAX } else { u32::from(*a) * 33 };
    let versions = [(4, 8), (4, 9), (5, 12), (5, 14), (6, 10)];
    let grammar = CpulistGrammar::of_kernel(versions[usize::from(*b) % versions.len()]);
    if let Ok(set) = parse_cpulist_as(list, nr, grammar) {
        let text = set.to_cpulist();
        // Read back with the same CPU count: `N` on 8415 CPUs is CPU 8414, past the 8192
        // limit of an unknown count (the first crash this target found was this harness).
        let back = parse_cpulist_as(&text, nr, grammar).expect("a canonical list parses");
        assert_eq!(back, set, "{list:?} -> {text:?}");
    }
});
