//! The cpuidle sysfs tree: driver, governor and per-CPU idle-state statistics.
//!
//! Read from a directory root that stands for `/sys/devices/system/cpu`, so tests point it at
//! a fixture tree. Layout used:
//!
//! ```text
//! <root>/cpuidle/current_driver                 e.g. haltpoll, intel_idle, acpi_idle, none
//! <root>/cpuidle/current_governor[_ro]          e.g. haltpoll, menu, teo, ladder
//! <root>/cpuidle/available_governors
//! <root>/cpu<N>/cpuidle/state<K>/{name,desc,latency,residency,usage,time,above,below,disable}
//! ```
//!
//! `latency` and `residency` are in µs, `time` in µs. A file that is missing or unreadable
//! leaves its field `None`; this is a reader, not a validator.

use serde::Serialize;
use std::fs;
use std::path::Path;

/// Everything the tree says.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cpuidle {
    /// `current_driver` (`none` when no driver registered).
    pub driver: Option<String>,
    /// `current_governor`, else `current_governor_ro`.
    pub governor: Option<String>,
    /// `available_governors`, split.
    pub available_governors: Vec<String>,
    /// CPUs that have a `cpuidle` directory, in CPU order.
    pub cpus: Vec<CpuIdle>,
}

/// One CPU's idle states.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuIdle {
    /// CPU number.
    pub cpu: u32,
    /// States in index order.
    pub states: Vec<IdleState>,
}

/// One idle state of one CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IdleState {
    /// `K` of `state<K>`.
    pub index: u32,
    /// `name`, e.g. `POLL`, `C1`, `haltpoll`.
    pub name: Option<String>,
    /// `desc`.
    pub desc: Option<String>,
    /// `latency`: exit latency, µs.
    pub latency_us: Option<u64>,
    /// `residency`: target residency, µs.
    pub residency_us: Option<u64>,
    /// `usage`: times entered.
    pub usage: Option<u64>,
    /// `time`: total time in the state, µs.
    pub time_us: Option<u64>,
    /// `above`: entries where the state was too deep for the actual idle time.
    pub above: Option<u64>,
    /// `below`: entries where a deeper state would have fit.
    pub below: Option<u64>,
    /// `disable` (true = disabled for this CPU).
    pub disable: Option<bool>,
}

fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_num(path: &Path) -> Option<u64> {
    read_trimmed(path)?.parse().ok()
}

/// Numbered children `<prefix><N>` of `dir`, sorted by N.
fn numbered_children(dir: &Path, prefix: &str) -> Vec<(u32, std::path::PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out
}

fn read_state(index: u32, dir: &Path) -> IdleState {
    IdleState {
        index,
        name: read_trimmed(&dir.join("name")),
        desc: read_trimmed(&dir.join("desc")),
        latency_us: read_num(&dir.join("latency")),
        residency_us: read_num(&dir.join("residency")),
        usage: read_num(&dir.join("usage")),
        time_us: read_num(&dir.join("time")),
        above: read_num(&dir.join("above")),
        below: read_num(&dir.join("below")),
        disable: read_num(&dir.join("disable")).map(|d| d != 0),
    }
}

/// Reads the cpuidle tree under `root` (normally `/sys/devices/system/cpu`).
pub fn read_cpuidle(root: &Path) -> Cpuidle {
    let top = root.join("cpuidle");
    let governor = read_trimmed(&top.join("current_governor"))
        .or_else(|| read_trimmed(&top.join("current_governor_ro")));
    let cpus = numbered_children(root, "cpu")
        .into_iter()
        .filter_map(|(cpu, dir)| {
            let idle = dir.join("cpuidle");
            idle.is_dir().then(|| CpuIdle {
                cpu,
                states: numbered_children(&idle, "state")
                    .into_iter()
                    .map(|(k, d)| read_state(k, &d))
                    .collect(),
            })
        })
        .collect();
    Cpuidle {
        driver: read_trimmed(&top.join("current_driver")),
        governor,
        available_governors: read_trimmed(&top.join("available_governors"))
            .map(|s| s.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default(),
        cpus,
    }
}
