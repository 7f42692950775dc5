//! Live probes of the real host, and the `host inspect`, `host irqs` and `host why` views.
//!
//! Every probe returns a [`Probe`]: either a value or [`Probe::NotAvailable`] with the reason
//! (needs root, file absent, not Linux, ...), so one missing file never hides the rest.
//! Files are read through a [`HostRoot`], normally `/`, which tests point at a captured
//! fixture tree.
//!
//! * [`inspect`] — one-screen description of the host's tick configuration;
//! * [`hz`] — inferring HZ from `/proc/timer_list`, the jiffies rate and the build config;
//! * [`irqs`] — per-CPU interrupt rates over a window;
//! * [`irqs_metrics`] — the same rates as OpenMetrics gauges (`host irqs --format openmetrics`);
//! * [`coarse_staleness`] — how stale `CLOCK_MONOTONIC_COARSE` gets, read by a spinning
//!   thread (`host staleness`);
//! * [`why`] — per-CPU attribution of local timer interrupts over a window, using a private
//!   tracefs instance (`tracefs.rs`) or, without tracing, sampling `/proc/timer_list`.

pub mod coarse_staleness;
pub mod hz;
pub mod inspect;
pub mod irqs;
pub mod irqs_metrics;
pub mod tracefs;
pub mod why;

use serde::Serialize;
use std::io;
use std::path::{Path, PathBuf};

/// A probed value, or why it is not available.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe<T> {
    /// The value.
    Ok(T),
    /// Why there is no value (shown to the user as `not available: <why>`).
    NotAvailable(String),
}

impl<T> Probe<T> {
    /// The value, if any.
    pub fn ok(&self) -> Option<&T> {
        match self {
            Probe::Ok(v) => Some(v),
            Probe::NotAvailable(_) => None,
        }
    }

    /// Maps the value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Probe<U> {
        match self {
            Probe::Ok(v) => Probe::Ok(f(v)),
            Probe::NotAvailable(why) => Probe::NotAvailable(why),
        }
    }

    /// Chains a probe that may itself be unavailable.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Probe<U>) -> Probe<U> {
        match self {
            Probe::Ok(v) => f(v),
            Probe::NotAvailable(why) => Probe::NotAvailable(why),
        }
    }

    /// Converts a `Result`, keeping the error's text as the reason.
    pub fn from_result<E: std::fmt::Display>(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Probe::Ok(v),
            Err(e) => Probe::NotAvailable(e.to_string()),
        }
    }
}

/// Whether this process runs with effective UID 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `/proc/cpuinfo` under `proc_root` shows the `hypervisor` CPU flag (a guest).
pub fn is_vm_guest(proc_root: &Path) -> bool {
    std::fs::read_to_string(proc_root.join("cpuinfo")).is_ok_and(|s| {
        s.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

/// Where the host's `/proc` and `/sys` are: `/` for the live host, a fixture directory in
/// tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRoot {
    root: PathBuf,
}

impl HostRoot {
    /// The live host.
    pub fn live() -> Self {
        HostRoot {
            root: PathBuf::from("/"),
        }
    }

    /// A tree laid out like `/` (with `proc/` and `sys/` below it).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        HostRoot { root: root.into() }
    }

    /// Whether this is the live host.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The real path of an absolute host path such as `/proc/stat`.
    pub fn path(&self, host_path: &str) -> PathBuf {
        self.root.join(host_path.trim_start_matches('/'))
    }

    /// Reads a text file, explaining failures.
    pub fn read(&self, host_path: &str) -> Probe<String> {
        if !cfg!(target_os = "linux") && self.is_live() {
            return Probe::NotAvailable(format!("{host_path}: not Linux"));
        }
        match std::fs::read_to_string(self.path(host_path)) {
            Ok(s) => Probe::Ok(s),
            Err(e) => Probe::NotAvailable(explain_io(host_path, &e)),
        }
    }

    /// Reads a one-line file, trimmed.
    pub fn read_line(&self, host_path: &str) -> Probe<String> {
        self.read(host_path).map(|s| s.trim().to_string())
    }
}

/// The "not available" reason for an I/O error on `host_path`.
pub(crate) fn explain_io(host_path: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!("{host_path} is absent"),
        io::ErrorKind::PermissionDenied if !is_root() => {
            format!("{host_path}: needs root (permission denied)")
        }
        _ => format!("{host_path}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reasons() {
        let root = HostRoot::at(env!("CARGO_MANIFEST_DIR"));
        match root.read("/no/such/file") {
            Probe::NotAvailable(why) => assert_eq!(why, "/no/such/file is absent"),
            Probe::Ok(_) => panic!("read a missing file"),
        }
        assert!(root.read("/Cargo.toml").ok().is_some());
    }
}
