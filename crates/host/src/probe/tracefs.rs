//! A private tracefs instance for the duration of one observation.
//!
//! [`TraceSession::start`] finds tracefs (mounting it at `/sys/kernel/tracing` when it is not
//! mounted anywhere and we are root), creates `instances/ticklab-<pid>` so the global buffer
//! and other users' instances are untouched, selects the `mono` trace clock (timestamps then
//! compare with `CLOCK_MONOTONIC` and `/proc/timer_list`), enables the requested events that
//! exist, and starts recording. Dropping the session — normally, on an error path, or after
//! Ctrl-C was turned into an early stop — disables the events, removes the instance and
//! unmounts tracefs if this session mounted it.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// Where tracefs is normally mounted.
pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";

/// A live tracing instance.
#[derive(Debug)]
pub(crate) struct TraceSession {
    tracefs: PathBuf,
    instance: PathBuf,
    mounted_by_us: bool,
    /// Events enabled (`system:name`).
    pub enabled: Vec<String>,
    /// Requested events this kernel does not have.
    pub missing: Vec<String>,
    /// The trace clock in use.
    pub clock: String,
}

/// Finds a mounted tracefs in `/proc/mounts` (tracefs itself, or debugfs's `tracing/`).
fn find_tracefs() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    let mut debugfs = None;
    for line in mounts.lines() {
        let mut f = line.split_whitespace();
        let (_, dir, kind) = (f.next()?, f.next()?, f.next()?);
        match kind {
            "tracefs" => return Some(PathBuf::from(dir)),
            "debugfs" => debugfs = Some(Path::new(dir).join("tracing")),
            _ => {}
        }
    }
    debugfs.filter(|p| p.join("instances").is_dir())
}

fn mount_tracefs(at: &Path) -> Result<(), String> {
    let target = CString::new(at.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    let fstype = CString::new("tracefs").expect("no NUL");
    let source = CString::new("nodev").expect("no NUL");
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the call;
    // data is null, which tracefs accepts.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "mount tracefs at {}: {}",
            at.display(),
            std::io::Error::last_os_error()
        ))
    }
}

fn umount(at: &Path) {
    if let Ok(target) = CString::new(at.as_os_str().as_encoded_bytes()) {
        // SAFETY: valid NUL-terminated path. Failure is ignored: this is best-effort cleanup.
        unsafe { libc::umount2(target.as_ptr(), 0) };
    }
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, value).map_err(|e| format!("write {value:?} to {}: {e}", path.display()))
}

/// The hex `tracing_cpumask` value for a set of CPUs (comma-separated 32-bit words, most
/// significant first, as the kernel prints bitmaps).
pub(crate) fn cpumask_hex(cpus: &[u32]) -> String {
    let words = cpus.iter().map(|&c| c / 32 + 1).max().unwrap_or(1) as usize;
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[(c / 32) as usize] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .map(|x| format!("{x:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl TraceSession {
    /// Creates the instance and starts recording `events` (`system:name`). Events this
    /// kernel does not have are listed in [`TraceSession::missing`]; it is an error only if
    /// none exists. `cpus` restricts recording to those CPUs.
    pub(crate) fn start(
        events: &[&str],
        buffer_kb: u32,
        cpus: Option<&[u32]>,
    ) -> Result<TraceSession, String> {
        if !super::is_root() {
            return Err("tracing needs root".into());
        }
        let (tracefs, mounted_by_us) = match find_tracefs() {
            Some(p) => (p, false),
            None => {
                let at = PathBuf::from(TRACEFS);
                if !at.is_dir() {
                    return Err(format!(
                        "tracefs is not mounted and {TRACEFS} does not exist"
                    ));
                }
                mount_tracefs(&at)?;
                (at, true)
            }
        };
        let instance = tracefs
            .join("instances")
            .join(format!("ticklab-{}", std::process::id()));
        let mut session = TraceSession {
            tracefs,
            instance: PathBuf::new(),
            mounted_by_us,
            enabled: Vec::new(),
            missing: Vec::new(),
            clock: String::new(),
        };
        // From here on Drop cleans up whatever was set up.
        fs::create_dir(&instance)
            .map_err(|e| format!("create trace instance {}: {e}", instance.display()))?;
        session.instance = instance;
        let inst = session.instance.clone();
        write(&inst.join("tracing_on"), "0")?;
        write(&inst.join("buffer_size_kb"), &buffer_kb.to_string())?;
        let clocks = fs::read_to_string(inst.join("trace_clock")).unwrap_or_default();
        let clock = if clocks
            .split_whitespace()
            .any(|c| c.trim_matches(['[', ']']) == "mono")
        {
            write(&inst.join("trace_clock"), "mono")?;
            "mono"
        } else {
            "local"
        };
        session.clock = clock.to_string();
        if let Some(cpus) = cpus {
            write(&inst.join("tracing_cpumask"), &cpumask_hex(cpus))?;
        }
        for ev in events {
            let (sys, name) = ev.split_once(':').unwrap_or(("", ev));
            let enable = inst.join("events").join(sys).join(name).join("enable");
            if enable.exists() {
                write(&enable, "1")?;
                session.enabled.push(ev.to_string());
            } else {
                session.missing.push(ev.to_string());
            }
        }
        if session.enabled.is_empty() {
            return Err(format!("none of the events exist: {}", events.join(", ")));
        }
        write(&inst.join("tracing_on"), "1")?;
        Ok(session)
    }

    /// Stops recording (the buffer stays readable).
    pub(crate) fn stop(&self) -> Result<(), String> {
        write(&self.instance.join("tracing_on"), "0")
    }

    /// The text of the instance's `trace` file.
    pub(crate) fn read_trace(&self) -> Result<String, String> {
        let p = self.instance.join("trace");
        fs::read_to_string(&p).map_err(|e| format!("read {}: {e}", p.display()))
    }

    /// Events lost to ring-buffer overruns, summed over CPUs (`per_cpu/cpuN/stats`).
    pub(crate) fn overruns(&self) -> u64 {
        let Ok(dirs) = fs::read_dir(self.instance.join("per_cpu")) else {
            return 0;
        };
        dirs.flatten()
            .filter_map(|d| fs::read_to_string(d.path().join("stats")).ok())
            .flat_map(|s| {
                s.lines()
                    .filter_map(|l| l.strip_prefix("overrun:")?.trim().parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// The instance directory.
    pub(crate) fn instance(&self) -> &Path {
        &self.instance
    }

    /// Whether this session mounted tracefs (and will unmount it).
    pub(crate) fn mounted_by_us(&self) -> bool {
        self.mounted_by_us
    }
}

impl Drop for TraceSession {
    fn drop(&mut self) {
        if !self.instance.as_os_str().is_empty() {
            let _ = fs::write(self.instance.join("tracing_on"), "0");
            let _ = fs::write(self.instance.join("events/enable"), "0");
            if let Err(e) = fs::remove_dir(&self.instance) {
                eprintln!(
                    "ticklab: could not remove trace instance {}: {e}",
                    self.instance.display()
                );
            }
        }
        if self.mounted_by_us {
            umount(&self.tracefs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumasks() {
        assert_eq!(cpumask_hex(&[0]), "00000001");
        assert_eq!(cpumask_hex(&[1, 3]), "0000000a");
        assert_eq!(cpumask_hex(&[0, 33]), "00000002,00000001");
        assert_eq!(cpumask_hex(&[]), "00000000");
    }
}
