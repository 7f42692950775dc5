//! The kernel command line: parse as some release reads it for some CPU count, resolve it
//! against a build, and ask for near misses. Nothing may panic; an error names its token.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ticklab_cmdline::{KernelBuild, KernelCmdline, NohzBuild, TickConfig};

fuzz_target!(|data: &[u8]| {
    // Byte 0: CPU count 1..=256; byte 1: release; the rest is the line.
    let [a, b, rest @ ..] = data else { return };
    let Ok(line) = std::str::from_utf8(rest) else { return };
    let nr = u32::from(*a) + 1;
    let versions = [(3, 0), (3, 10), (4, 9), (4, 15), (4, 17), (5, 6), (5, 12), (5, 14), (5, 18), (6, 10)];
    let version = versions[usize::from(*b) % versions.len()];
    let _ = KernelCmdline::split_init_args(line);
    if let Ok(c) = KernelCmdline::parse_for_kernel(line, nr, version) {
        let _ = c.near_misses();
        let _ = c.to_string();
        for nohz in [NohzBuild::Periodic, NohzBuild::Idle, NohzBuild::Full] {
            let build = KernelBuild {
                nohz,
                high_res: b & 0x80 != 0,
                version,
                skew_tick_backport: b & 0x40 != 0,
            };
            let (cfg, _msgs) = TickConfig::resolve(&c, &build, nr, 0);
            for cpu in 0..nr.min(8) {
                let _ = cfg.role(cpu);
            }
        }
    } else if let Err(e) = KernelCmdline::parse(line, nr) {
        assert!(!e.to_string().is_empty());
    }
});
