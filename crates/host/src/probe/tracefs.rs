//! A private tracefs instance for the duration of one observation.
//!
//! `TraceSession::start` finds tracefs (mounting it at `/sys/kernel/tracing` when it is not
//! mounted anywhere and we are root), creates `instances/ticklab-<pid>-<start>` (the owner's
//! pid and its start time in clock ticks since boot, field 22 of `/proc/<pid>/stat`) so the
//! global buffer and other users' instances are untouched, selects the `mono` trace clock (timestamps then
//! compare with `CLOCK_MONOTONIC` and `/proc/timer_list`), enables the requested events that
//! exist, and starts recording. Dropping the session — normally, on an error path, or after
//! Ctrl-C was turned into an early stop — disables the events and removes the instance. If
//! this session mounted tracefs it unmounts it again, but only when no other live ticklab
//! process has an instance there (`unmount_decision`): a second `host why` that started
//! meanwhile found tracefs mounted, did not mount it, and must not lose it under its feet.
//! The unmount is lazy (`MNT_DETACH`), so files another process already holds open stay
//! readable until it closes them.
//!
//! A process killed with SIGKILL runs no Drop: its instance stays, recording. Every start
//! first removes such *stale* instances (`remove_stale_instances`): a `ticklab-*` instance
//! whose owner is dead — no process with that pid, or one with another start time (the pid was
//! reused). Instances of live ticklab processes, and names that record no owner, are left
//! alone (`is_stale`).

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

/// Where tracefs is normally mounted.
pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";

/// Why a trace session could not start, stop or be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Tracing needs root.
    #[error("tracing needs root")]
    NotRoot,
    /// tracefs is mounted nowhere and its usual mount point is missing.
    #[error("tracefs is not mounted and {TRACEFS} does not exist")]
    NoMountPoint,
    /// A path holds a NUL byte.
    #[error("{0}")]
    Path(#[from] std::ffi::NulError),
    /// Mounting tracefs failed.
    #[error("mount tracefs at {}: {error}", at.display())]
    Mount {
        /// The mount point.
        at: PathBuf,
        /// The error of `mount(2)` (part of the message, not a separate cause).
        error: std::io::Error,
    },
    /// A tracefs file could not be written, created or read (`what` names the operation
    /// and the path).
    #[error("{what}: {error}")]
    Io {
        /// `write "1" to …/enable`, `create trace instance …`, `read …/trace`.
        what: String,
        /// The I/O error (part of the message, not a separate cause).
        error: std::io::Error,
    },
    /// None of the events asked for exists in this kernel.
    #[error("none of the events exist: {}", .0.join(", "))]
    NoEvents(Vec<String>),
}

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

fn mount_tracefs(at: &Path) -> Result<(), TraceError> {
    let target = CString::new(at.as_os_str().as_encoded_bytes())?;
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
        Err(TraceError::Mount {
            at: at.to_path_buf(),
            error: std::io::Error::last_os_error(),
        })
    }
}

/// Lazily unmounts `at` (`MNT_DETACH`): detached from the tree now, released when the last
/// open file in it is closed.
fn umount_lazy(at: &Path) {
    if let Ok(target) = CString::new(at.as_os_str().as_encoded_bytes()) {
        // SAFETY: valid NUL-terminated path. Failure is ignored: this is best-effort cleanup.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// What a session does with tracefs when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unmount {
    /// Leave tracefs mounted.
    Keep,
    /// Unmount it lazily (`MNT_DETACH`).
    Lazy,
}

/// Whether a session that ends unmounts tracefs: only if it mounted it, the `instances/`
/// directory could be listed (`instances`, `None` if not) and no *other* live ticklab instance
/// is there — every `ticklab-*` name except `own` that is not stale ([`is_stale`], with
/// `start_time` as there). Instances of other tools are not counted: instances outlive a mount,
/// so an old foreign one would otherwise keep tracefs mounted for good.
pub(crate) fn unmount_decision(
    mounted_by_us: bool,
    own: &str,
    instances: Option<&[String]>,
    start_time: impl Fn(i32) -> Option<u64>,
) -> Unmount {
    if !mounted_by_us {
        return Unmount::Keep;
    }
    let Some(names) = instances else {
        return Unmount::Keep;
    };
    let other_live = names
        .iter()
        .any(|n| n != own && instance_owner(n).is_some() && !is_stale(n, &start_time));
    if other_live {
        Unmount::Keep
    } else {
        Unmount::Lazy
    }
}

/// The names under `tracefs/instances`, `None` if the directory cannot be listed.
fn instance_names(tracefs: &Path) -> Option<Vec<String>> {
    let dir = fs::read_dir(tracefs.join("instances")).ok()?;
    Some(
        dir.flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
    )
}

fn write(path: &Path, value: &str) -> Result<(), TraceError> {
    fs::write(path, value).map_err(|error| TraceError::Io {
        what: format!("write {value:?} to {}", path.display()),
        error,
    })
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

/// The owner an instance name records: `ticklab-<pid>-<start>` → (pid, Some(start));
/// `ticklab-<pid>` (the form before start times were recorded) → (pid, None); anything else →
/// `None` (not ours to judge).
pub(crate) fn instance_owner(name: &str) -> Option<(i32, Option<u64>)> {
    let rest = name.strip_prefix("ticklab-")?;
    let (pid, start) = match rest.split_once('-') {
        Some((p, s)) => (p, Some(s.parse::<u64>().ok()?)),
        None => (rest, None),
    };
    let pid: i32 = pid.parse().ok().filter(|&p| p > 0)?;
    Some((pid, start))
}

/// Whether the instance `name` is stale: it records an owner, and that owner is gone.
/// `start_time(pid)` is the start time of the live process `pid`, `None` when there is none.
/// An instance without a recorded start time is stale only when its pid is gone.
pub(crate) fn is_stale(name: &str, start_time: impl Fn(i32) -> Option<u64>) -> bool {
    match instance_owner(name) {
        None => false,
        Some((pid, recorded)) => match (start_time(pid), recorded) {
            (None, _) => true,
            (Some(now), Some(then)) => now != then,
            (Some(_), None) => false,
        },
    }
}

/// The start time of process `pid` in clock ticks after boot (field 22 of `/proc/<pid>/stat`),
/// `None` when there is no such process.
pub(crate) fn process_start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The name of this process's instance: `ticklab-<pid>-<start>`.
fn own_instance_name() -> String {
    let pid = std::process::id();
    match process_start_time(pid as i32) {
        Some(start) => format!("ticklab-{pid}-{start}"),
        None => format!("ticklab-{pid}"),
    }
}

/// Stops and removes every stale `ticklab-*` instance under `tracefs` ([`is_stale`]); returns
/// the names removed, and the ones that could not be, with the error.
pub(crate) fn remove_stale_instances(tracefs: &Path) -> Vec<Result<String, TraceError>> {
    let Ok(dir) = fs::read_dir(tracefs.join("instances")) else {
        return Vec::new();
    };
    let mut done = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_stale(&name, process_start_time) {
            continue;
        }
        let path = entry.path();
        let _ = fs::write(path.join("tracing_on"), "0");
        let _ = fs::write(path.join("events/enable"), "0");
        done.push(
            fs::remove_dir(&path)
                .map(|()| name.clone())
                .map_err(|error| TraceError::Io {
                    what: path.display().to_string(),
                    error,
                }),
        );
    }
    done
}

/// Removes stale instances when tracefs is mounted and we are root. `host why` does this
/// before it observes, with or without tracing.
pub(crate) fn clean_up_stale_instances() {
    if super::is_root()
        && let Some(tracefs) = find_tracefs()
    {
        clean_up_stale_instances_in(&tracefs);
    }
}

/// [`remove_stale_instances`], saying on stderr what was removed.
fn clean_up_stale_instances_in(tracefs: &Path) {
    for r in remove_stale_instances(tracefs) {
        match r {
            Ok(name) => {
                eprintln!("ticklab: removed trace instance {name} left by a process that is gone")
            }
            Err(e) => eprintln!("ticklab: could not remove stale trace instance {e}"),
        }
    }
}

impl TraceSession {
    /// Creates the instance and starts recording `events` (`system:name`). Events this
    /// kernel does not have are listed in [`TraceSession::missing`]; it is an error only if
    /// none exists. `cpus` restricts recording to those CPUs.
    pub(crate) fn start(
        events: &[&str],
        buffer_kb: u32,
        cpus: Option<&[u32]>,
    ) -> Result<TraceSession, TraceError> {
        Self::start_with_clock(events, buffer_kb, cpus, &["mono"])
    }

    /// [`TraceSession::start`] with the first trace clock of `clocks` this kernel offers
    /// (`local` when it offers none of them). `host calibrate` asks for `x86-tsc` first: the
    /// text prints a counter clock's raw count, where the ns clocks print microseconds.
    pub(crate) fn start_with_clock(
        events: &[&str],
        buffer_kb: u32,
        cpus: Option<&[u32]>,
        clocks: &[&str],
    ) -> Result<TraceSession, TraceError> {
        if !super::is_root() {
            return Err(TraceError::NotRoot);
        }
        let (tracefs, mounted_by_us) = match find_tracefs() {
            Some(p) => (p, false),
            None => {
                let at = PathBuf::from(TRACEFS);
                if !at.is_dir() {
                    return Err(TraceError::NoMountPoint);
                }
                mount_tracefs(&at)?;
                (at, true)
            }
        };
        clean_up_stale_instances_in(&tracefs);
        let instance = tracefs.join("instances").join(own_instance_name());
        let mut session = TraceSession {
            tracefs,
            instance: PathBuf::new(),
            mounted_by_us,
            enabled: Vec::new(),
            missing: Vec::new(),
            clock: String::new(),
        };
        // From here on Drop cleans up whatever was set up.
        fs::create_dir(&instance).map_err(|error| TraceError::Io {
            what: format!("create trace instance {}", instance.display()),
            error,
        })?;
        session.instance = instance;
        let inst = session.instance.clone();
        write(&inst.join("tracing_on"), "0")?;
        write(&inst.join("buffer_size_kb"), &buffer_kb.to_string())?;
        let offered = fs::read_to_string(inst.join("trace_clock")).unwrap_or_default();
        let offered: Vec<&str> = offered
            .split_whitespace()
            .map(|c| c.trim_matches(['[', ']']))
            .collect();
        let clock = match clocks.iter().find(|c| offered.contains(c)) {
            Some(c) => {
                write(&inst.join("trace_clock"), c)?;
                c
            }
            None => "local",
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
            return Err(TraceError::NoEvents(
                events.iter().map(|e| e.to_string()).collect(),
            ));
        }
        write(&inst.join("tracing_on"), "1")?;
        Ok(session)
    }

    /// Stops recording (the buffer stays readable).
    pub(crate) fn stop(&self) -> Result<(), TraceError> {
        write(&self.instance.join("tracing_on"), "0")
    }

    /// The text of the instance's `trace` file.
    pub(crate) fn read_trace(&self) -> Result<String, TraceError> {
        let p = self.instance.join("trace");
        fs::read_to_string(&p).map_err(|error| TraceError::Io {
            what: format!("read {}", p.display()),
            error,
        })
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

    /// Whether this session mounted tracefs (and will unmount it, unless another live
    /// ticklab instance is using it then: [`unmount_decision`]).
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
            let own = self
                .instance
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let names = instance_names(&self.tracefs);
            match unmount_decision(true, &own, names.as_deref(), process_start_time) {
                Unmount::Lazy => umount_lazy(&self.tracefs),
                Unmount::Keep => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_stale_only_when_its_recorded_owner_is_gone() {
        // Live processes: pid 100 started at 5000, pid 200 at 7000.
        let live = |pid: i32| match pid {
            100 => Some(5000),
            200 => Some(7000),
            _ => None,
        };
        // (instance name, stale)
        let table = [
            ("ticklab-100-5000", false), // its owner runs
            ("ticklab-100-4999", true),  // pid 100 was reused by another process
            ("ticklab-300-5000", true),  // no pid 300
            ("ticklab-300", true),       // old form, owner gone
            ("ticklab-200", false),      // old form, a process 200 runs: leave it
            ("ticklab-0-1", false),      // no such owner can be recorded
            ("ticklab--5", false),
            ("ticklab-abc", false),
            ("ticklab-100-x", false),
            ("ticklab-300-", false),
            ("ticklab", false),
            ("perf-300", false), // not ours
            ("", false),
        ];
        for (name, stale) in table {
            assert_eq!(is_stale(name, live), stale, "{name:?}");
        }
        assert_eq!(instance_owner("ticklab-42-7"), Some((42, Some(7))));
        assert_eq!(instance_owner("ticklab-42"), Some((42, None)));
    }

    #[test]
    fn tracefs_is_unmounted_only_by_its_mounter_and_only_when_no_other_ticklab_uses_it() {
        // Live processes: us (pid 100, started at 5000) and pid 200 (started at 7000).
        let live = |pid: i32| match pid {
            100 => Some(5000),
            200 => Some(7000),
            _ => None,
        };
        let own = "ticklab-100-5000";
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // (mounted by us, instances left (None: not listable), decision)
        let table: &[(bool, Option<Vec<String>>, Unmount)] = &[
            (true, Some(names(&[])), Unmount::Lazy),
            (true, Some(names(&[own])), Unmount::Lazy), // our own removal failed
            (true, Some(names(&["ticklab-200-7000"])), Unmount::Keep), // another live one
            (true, Some(names(&["ticklab-200"])), Unmount::Keep), // old form, pid 200 runs
            (true, Some(names(&["ticklab-200-6999"])), Unmount::Lazy), // pid 200 reused
            (true, Some(names(&["ticklab-300-1"])), Unmount::Lazy), // owner gone
            (true, Some(names(&["perf", "ticklab-x"])), Unmount::Lazy), // not ticklab's
            (
                true,
                Some(names(&["ticklab-300-1", own, "ticklab-200-7000"])),
                Unmount::Keep,
            ),
            (true, None, Unmount::Keep), // cannot tell: leave it
            (false, Some(names(&[])), Unmount::Keep), // someone else mounted it
            (false, None, Unmount::Keep),
        ];
        for (mounted, left, want) in table {
            assert_eq!(
                unmount_decision(*mounted, own, left.as_deref(), live),
                *want,
                "{mounted} {left:?}"
            );
        }
    }

    #[test]
    fn this_process_has_a_start_time_and_its_own_instance_is_not_stale() {
        let me = std::process::id() as i32;
        assert!(process_start_time(me).is_some());
        assert!(!is_stale(&own_instance_name(), process_start_time));
    }

    #[test]
    fn cpumasks() {
        assert_eq!(cpumask_hex(&[0]), "00000001");
        assert_eq!(cpumask_hex(&[1, 3]), "0000000a");
        assert_eq!(cpumask_hex(&[0, 33]), "00000002,00000001");
        assert_eq!(cpumask_hex(&[]), "00000000");
    }
}
