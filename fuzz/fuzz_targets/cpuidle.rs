//! The cpuidle sysfs tree (`ticklab_host::procfs::cpuidle::read_cpuidle`): the input is split
//! at NUL bytes into the files of a two-CPU, two-state tree (driver, governor, available
//! governors, then each state's name, desc, latency, residency, usage, time, above, below,
//! disable), written to a private directory and read back.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

const STATE_FILES: [&str; 9] = [
    "name", "desc", "latency", "residency", "usage", "time", "above", "below", "disable",
];

fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ticklab-fuzz-cpuidle-{}", std::process::id()));
        for cpu in 0..2 {
            for state in 0..2 {
                let d = dir.join(format!("cpu{cpu}/cpuidle/state{state}"));
                std::fs::create_dir_all(&d).expect("temp dir");
            }
        }
        std::fs::create_dir_all(dir.join("cpuidle")).expect("temp dir");
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let root = root();
    let mut parts = data.split(|b| *b == 0);
    let mut next = || parts.next().unwrap_or(b"");
    for f in ["current_driver", "current_governor", "available_governors"] {
        std::fs::write(root.join("cpuidle").join(f), next()).expect("write");
    }
    for cpu in 0..2 {
        for state in 0..2 {
            for f in STATE_FILES {
                let p = root.join(format!("cpu{cpu}/cpuidle/state{state}/{f}"));
                std::fs::write(p, next()).expect("write");
            }
        }
    }
    let _ = ticklab_host::procfs::cpuidle::read_cpuidle(root);
});
