//! Setting cpuidle / halt-polling parameters for the length of a run, and always putting them
//! back.
//!
//! A run may ask for writable kernel parameters (`--set haltpoll.guest_halt_poll_ns=0`):
//! [`ParamGuard::apply`] reads each current value, writes a *restore record* (one `path` and
//! old value per line) under [`RESTORE_RECORD`] and syncs it, and only then writes the new
//! values. Dropping the guard writes the old values back and removes the record: on a normal
//! end, on an error (the guard is dropped on the way out) and on Ctrl-C / SIGTERM (the
//! harness's [`Stop`](super::Stop) turns the signal into an orderly end). A SIGKILL leaves the
//! record behind; [`restore_leftover`] applies it at the start of the next run.
//!
//! The record is input the next run (as root) acts on, so it is trusted only as far as it
//! checks out: a regular file (not a link) owned by this user and writable by no one else, in
//! a directory of the same kind, at most [`MAX_RECORD_BYTES`], UTF-8, and every line naming
//! the sysfs file of a parameter in [`PARAMS`] with a value that parameter takes. Anything else
//! is refused whole, naming the record, and nothing is written.
//!
//! Two runs never share the parameters: a guard holds an exclusive `flock` on
//! [`RESTORE_LOCK`] (with its process id inside, for the message) from before it reads the
//! old values until it has put them back. A second `--set` run meanwhile is refused, and the
//! live run's record is not mistaken for a killed run's: the kernel drops a killed process's
//! lock, so a record whose lock is free was left by a run that is gone.
//!
//! Which parameters: [`PARAMS`] lists the writable ones ticklab knows, each with its sysfs
//! file: the guest haltpoll module's five (`haltpoll.*`, docs/kernel-behaviour.md §9.3), the
//! host-side `kvm.halt_poll_ns*` (§9.5; present only where the KVM module is loaded) and
//! `cpuidle.governor` (sysfs `current_governor`). Writing needs root: without it the guard
//! refuses before touching anything. A value is checked against what the parameter takes
//! (an unsigned integer, `Y`/`N`, or a governor named in `available_governors`).

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::HarnessError;

/// Where the restore record lives (tmpfs: gone after a reboot, when the kernel's own
/// defaults are back anyway).
pub const RESTORE_RECORD: &str = "/run/ticklab/params-restore";

/// The lock a run holds while parameters are set (beside the record).
pub const RESTORE_LOCK: &str = "/run/ticklab/params.lock";

/// Largest restore record read: one line per parameter of [`PARAMS`] is far below it.
pub const MAX_RECORD_BYTES: u64 = 64 << 10;

/// What a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// An unsigned integer.
    Unsigned,
    /// `Y` or `N` (also `1`/`0`).
    Bool,
    /// A cpuidle governor name from `available_governors`.
    Governor,
}

/// The writable parameters: (name on the command line, sysfs path below `/sys`, kind).
pub const PARAMS: [(&str, &str, ParamKind); 10] = [
    (
        "haltpoll.guest_halt_poll_ns",
        "module/haltpoll/parameters/guest_halt_poll_ns",
        ParamKind::Unsigned,
    ),
    (
        "haltpoll.guest_halt_poll_grow",
        "module/haltpoll/parameters/guest_halt_poll_grow",
        ParamKind::Unsigned,
    ),
    (
        "haltpoll.guest_halt_poll_grow_start",
        "module/haltpoll/parameters/guest_halt_poll_grow_start",
        ParamKind::Unsigned,
    ),
    (
        "haltpoll.guest_halt_poll_shrink",
        "module/haltpoll/parameters/guest_halt_poll_shrink",
        ParamKind::Unsigned,
    ),
    (
        "haltpoll.guest_halt_poll_allow_shrink",
        "module/haltpoll/parameters/guest_halt_poll_allow_shrink",
        ParamKind::Bool,
    ),
    (
        "kvm.halt_poll_ns",
        "module/kvm/parameters/halt_poll_ns",
        ParamKind::Unsigned,
    ),
    (
        "kvm.halt_poll_ns_grow",
        "module/kvm/parameters/halt_poll_ns_grow",
        ParamKind::Unsigned,
    ),
    (
        "kvm.halt_poll_ns_grow_start",
        "module/kvm/parameters/halt_poll_ns_grow_start",
        ParamKind::Unsigned,
    ),
    (
        "kvm.halt_poll_ns_shrink",
        "module/kvm/parameters/halt_poll_ns_shrink",
        ParamKind::Unsigned,
    ),
    (
        "cpuidle.governor",
        "devices/system/cpu/cpuidle/current_governor",
        ParamKind::Governor,
    ),
];

impl ParamKind {
    /// Whether a parameter of this kind takes `value` (as written by `--set` or read back
    /// from sysfs into a restore record).
    pub fn takes(self, value: &str) -> bool {
        match self {
            ParamKind::Unsigned => value.parse::<u64>().is_ok(),
            ParamKind::Bool => matches!(value, "Y" | "N" | "y" | "n" | "1" | "0"),
            ParamKind::Governor => {
                !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
        }
    }
}

/// One requested setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSetting {
    /// The name as given (`haltpoll.guest_halt_poll_ns`).
    pub name: String,
    /// The sysfs path below `/sys`.
    rel_path: &'static str,
    kind: ParamKind,
    /// The value to write.
    pub value: String,
}

impl ParamSetting {
    /// Parses `NAME=VALUE` (bad input → [`HarnessError::Input`] naming it and what is
    /// expected).
    pub fn parse(spec: &str) -> Result<ParamSetting, HarnessError> {
        let bad = |what: String| HarnessError::Input(format!("--set {spec:?}: {what}"));
        let (name, value) = spec
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=VALUE".into()))?;
        let (name, value) = (name.trim(), value.trim());
        let &(_, rel_path, kind) = PARAMS.iter().find(|p| p.0 == name).ok_or_else(|| {
            let names: Vec<&str> = PARAMS.iter().map(|p| p.0).collect();
            bad(format!(
                "unknown parameter; expected one of {}",
                names.join(", ")
            ))
        })?;
        if !kind.takes(value) {
            let expected = match kind {
                ParamKind::Unsigned => "an unsigned integer",
                ParamKind::Bool => "Y or N",
                ParamKind::Governor => "a governor name (e.g. menu, teo, haltpoll)",
            };
            return Err(bad(format!("{value:?} is not {expected}")));
        }
        Ok(ParamSetting {
            name: name.to_string(),
            rel_path,
            kind,
            value: value.to_string(),
        })
    }

    /// The sysfs file under `sys_root` (normally `/sys`).
    pub fn path(&self, sys_root: &Path) -> PathBuf {
        sys_root.join(self.rel_path)
    }
}

/// Reads one parameter file (trimmed).
pub fn read_param(path: &Path) -> io::Result<String> {
    Ok(fs::read_to_string(path)?.trim().to_string())
}

/// The current value of every known parameter present under `sys_root`: (name, value).
pub fn current_values(sys_root: &Path) -> Vec<(&'static str, String)> {
    PARAMS
        .iter()
        .filter_map(|&(name, rel, _)| Some((name, read_param(&sys_root.join(rel)).ok()?)))
        .collect()
}

fn write_param(path: &Path, value: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(value.as_bytes())
}

/// Parameters set for a run; dropping it restores them and removes the restore record.
#[derive(Debug)]
pub struct ParamGuard {
    /// (path, old value), in the order they were set.
    saved: Vec<(PathBuf, String)>,
    record: PathBuf,
    /// What was done, for the report: (name, old, new).
    changes: Vec<(String, String, String)>,
    /// Held from before the old values are read until they are back (dropped after
    /// [`Drop::drop`] restored them).
    _lock: Option<ParamLock>,
}

impl ParamGuard {
    /// Sets `settings` under `/sys`, with the record at [`RESTORE_RECORD`]; refuses without
    /// root.
    pub fn apply(settings: &[ParamSetting]) -> Result<ParamGuard, HarnessError> {
        if !settings.is_empty() && !crate::probe::is_root() {
            return Err(HarnessError::Input(format!(
                "--set {}: changing kernel parameters needs root (run as root, or drop --set)",
                settings[0].name
            )));
        }
        Self::apply_at(settings, Path::new("/sys"), Path::new(RESTORE_RECORD))
    }

    /// The lock beside `record` (`params.lock` in its directory).
    fn lock_path(record: &Path) -> PathBuf {
        record.with_file_name("params.lock")
    }

    /// [`ParamGuard::apply`] under another sysfs root and record path (no root check: for
    /// tests on plain files).
    pub fn apply_at(
        settings: &[ParamSetting],
        sys_root: &Path,
        record: &Path,
    ) -> Result<ParamGuard, HarnessError> {
        let mut guard = ParamGuard {
            saved: Vec::new(),
            record: record.to_path_buf(),
            changes: Vec::new(),
            _lock: None,
        };
        if settings.is_empty() {
            return Ok(guard);
        }
        let lock_path = Self::lock_path(record);
        guard._lock = Some(ParamLock::take(&lock_path)?.map_err(|holder| {
            let who = holder.map_or("another ticklab run".to_string(), |pid| {
                format!("another ticklab run (pid {pid})")
            });
            super::os_error(
                &format!(
                    "--set {}: {who} has kernel parameters set and holds {}; wait for it to \
                     end (it puts them back), or drop --set",
                    settings[0].name,
                    lock_path.display()
                ),
                io::Error::from(io::ErrorKind::WouldBlock),
            )
        })?);
        // Under the lock, a record left here is a killed run's: put its values back first.
        restore_record(record, sys_root)?;
        // Read every old value first; a missing parameter refuses the run untouched.
        let mut olds = Vec::new();
        for s in settings {
            let path = s.path(sys_root);
            let old = read_param(&path).map_err(|e| {
                HarnessError::Input(format!(
                    "--set {}: {} cannot be read ({e}); this kernel does not have that parameter",
                    s.name,
                    path.display()
                ))
            })?;
            if s.kind == ParamKind::Governor {
                check_governor(s, sys_root)?;
            }
            olds.push((path, old));
        }
        // The record goes to disk before anything changes.
        write_record(record, &olds)
            .map_err(|e| super::os_error("writing the restore record", e))?;
        for (s, (path, old)) in settings.iter().zip(olds) {
            // Kept before the write: a write that fails halfway still gets restored.
            guard.saved.push((path.clone(), old.clone()));
            write_param(&path, &s.value).map_err(|e| {
                super::os_error(&format!("--set {}: writing {}", s.name, path.display()), e)
            })?;
            let new = read_param(&path).unwrap_or_else(|_| s.value.clone());
            guard.changes.push((s.name.clone(), old, new));
        }
        Ok(guard)
    }

    /// What was changed: (name, old value, value read back after the write).
    pub fn changes(&self) -> &[(String, String, String)] {
        &self.changes
    }

    /// Restores now (also done on drop); returns the parameters that could not be restored.
    pub fn restore(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        for (path, old) in self.saved.drain(..).rev() {
            if let Err(e) = write_param(&path, &old) {
                failed.push(format!("{}: {e}", path.display()));
            }
        }
        if failed.is_empty() {
            let _ = fs::remove_file(&self.record);
        }
        failed
    }
}

impl Drop for ParamGuard {
    fn drop(&mut self) {
        for f in self.restore() {
            eprintln!("ticklab: could not restore {f}; the restore record stays for the next run");
        }
    }
}

fn check_governor(s: &ParamSetting, sys_root: &Path) -> Result<(), HarnessError> {
    let avail_path = sys_root.join("devices/system/cpu/cpuidle/available_governors");
    let avail = read_param(&avail_path).unwrap_or_default();
    if avail.split_whitespace().any(|g| g == s.value) {
        Ok(())
    } else {
        Err(HarnessError::Input(format!(
            "--set {}={}: not an available governor (this kernel has: {})",
            s.name, s.value, avail
        )))
    }
}

fn write_record(record: &Path, olds: &[(PathBuf, String)]) -> io::Result<()> {
    if let Some(dir) = record.parent() {
        private_dir(dir)?;
    }
    let mut text = String::new();
    for (path, old) in olds {
        text.push_str(&format!("{}\t{}\n", path.display(), old));
    }
    // A new file, never through a link planted at the record's name (O_EXCL), mode 0600.
    match fs::remove_file(record) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(record)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Creates `dir` (mode 0700) if missing and checks it is a directory of this user that no
/// one else may write to.
fn private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let m = fs::symlink_metadata(dir)?;
    if let Err(why) = trusted(&m, true) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", dir.display()),
        ));
    }
    Ok(())
}

/// Why a file (or directory) of the restore record is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Untrusted {
    /// Not the kind expected: a link, or another kind of file.
    #[error("not a {} (a link or another kind of file)", if *.dir { "directory" } else { "regular file" })]
    Kind {
        /// A directory was expected (else a regular file).
        dir: bool,
    },
    /// Owned by another user.
    #[error("owned by uid {owner}, not by uid {me} (this user)")]
    Owner {
        /// The owner.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// Writable by the group or by others.
    #[error("mode {mode:o}: writable by others, so anyone could have written it")]
    Writable {
        /// The permission bits.
        mode: u32,
    },
}

/// Whether a file (or directory) of the restore record may be trusted: of the right type
/// (not a link), owned by this user, writable by no one else.
fn trusted(m: &fs::Metadata, dir: bool) -> Result<(), Untrusted> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let kind_ok = if dir { m.is_dir() } else { m.is_file() };
    if !kind_ok {
        return Err(Untrusted::Kind { dir });
    }
    if m.uid() != me {
        return Err(Untrusted::Owner { owner: m.uid(), me });
    }
    if m.mode() & 0o022 != 0 {
        return Err(Untrusted::Writable {
            mode: m.mode() & 0o7777,
        });
    }
    Ok(())
}

/// An exclusive `flock` on the lock file, released when dropped (or when the process dies).
#[derive(Debug)]
struct ParamLock {
    _file: fs::File,
}

impl ParamLock {
    /// Takes the lock at `path`, or says who holds it: `Ok(Err(pid))` when another process
    /// does (its process id, when the file names one).
    fn take(path: &Path) -> Result<Result<ParamLock, Option<u32>>, HarnessError> {
        use std::os::fd::AsRawFd;
        if let Some(dir) = path.parent() {
            private_dir(dir)
                .map_err(|e| super::os_error("preparing the restore record's directory", e))?;
        }
        let mut file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| super::os_error(&format!("opening {}", path.display()), e))?;
        // SAFETY: flock on a file descriptor this function owns; no memory is involved.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                let mut text = String::new();
                let _ = io::Read::read_to_string(&mut (&file).take(64), &mut text);
                return Ok(Err(text.trim().parse().ok()));
            }
            return Err(super::os_error(&format!("locking {}", path.display()), e));
        }
        // Ours now: say whose it is.
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(Ok(ParamLock { _file: file }))
    }
}

/// Applies a restore record a killed run left behind, then removes it. Returns the
/// parameters restored as (path, value); an empty list when there was no record, or when a
/// live run holds the lock (the record is that run's, which puts the values back itself).
pub fn restore_leftover(record: &Path) -> Result<Vec<(String, String)>, HarnessError> {
    restore_leftover_at(record, Path::new("/sys"))
}

/// [`restore_leftover`] for a record of parameters under another sysfs root (tests).
pub fn restore_leftover_at(
    record: &Path,
    sys_root: &Path,
) -> Result<Vec<(String, String)>, HarnessError> {
    if fs::symlink_metadata(record).is_err() {
        return Ok(Vec::new());
    }
    let Ok(_lock) = ParamLock::take(&ParamGuard::lock_path(record))? else {
        return Ok(Vec::new());
    };
    restore_record(record, sys_root)
}

/// Checks and applies the record at `record` (the caller holds the lock), then removes it.
fn restore_record(record: &Path, sys_root: &Path) -> Result<Vec<(String, String)>, HarnessError> {
    let shown = record.display();
    let refuse = |why: String| {
        HarnessError::Input(format!(
            "restore record {shown}: {why}; ticklab did not write it as it is: check the \
             parameters by hand (ticklab host inspect), then remove it"
        ))
    };
    let meta = match fs::symlink_metadata(record) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(super::os_error(&format!("reading {shown}"), e)),
    };
    trusted(&meta, false).map_err(|why| refuse(why.to_string()))?;
    if let Some(dir) = record.parent() {
        let m = fs::symlink_metadata(dir)
            .map_err(|e| super::os_error(&format!("reading {}", dir.display()), e))?;
        trusted(&m, true)
            .map_err(|why| refuse(format!("its directory {}: {why}", dir.display())))?;
    }
    if meta.len() > MAX_RECORD_BYTES {
        return Err(refuse(format!(
            "larger than {} KiB",
            MAX_RECORD_BYTES >> 10
        )));
    }
    let bytes = fs::read(record).map_err(|e| super::os_error(&format!("reading {shown}"), e))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| refuse(format!("not UTF-8 text (byte {})", e.valid_up_to())))?;
    // Every line is checked before anything is written.
    let mut todo = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some((path, value)) = line.split_once('\t') else {
            return Err(refuse(format!(
                "malformed line {line:?} (expected PATH<TAB>VALUE)"
            )));
        };
        let Some(&(name, _, kind)) = PARAMS
            .iter()
            .find(|p| Path::new(path) == sys_root.join(p.1))
        else {
            return Err(refuse(format!(
                "line {line:?} names {path}, not the file of a parameter --set may change"
            )));
        };
        if !kind.takes(value) {
            return Err(refuse(format!(
                "line {line:?}: {value:?} is not a value {name} takes"
            )));
        }
        todo.push((path, value));
    }
    let mut done = Vec::new();
    // Last set first, as the guard does.
    for (path, value) in todo.into_iter().rev() {
        write_param(Path::new(path), value)
            .map_err(|e| super::os_error(&format!("restoring {path} from {shown}"), e))?;
        done.push((path.to_string(), value.to_string()));
    }
    fs::remove_file(record).map_err(|e| super::os_error(&format!("removing {shown}"), e))?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fake sysfs tree in the temp directory with the haltpoll parameters and a governor.
    fn fake_sys() -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "ticklab-params-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        for (name, rel, _) in PARAMS.iter().filter(|p| !p.0.starts_with("kvm.")) {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let v = match *name {
                "haltpoll.guest_halt_poll_ns" => "200000",
                "haltpoll.guest_halt_poll_allow_shrink" => "Y",
                "cpuidle.governor" => "menu",
                _ => "2",
            };
            fs::write(&path, format!("{v}\n")).unwrap();
        }
        fs::write(
            root.join("devices/system/cpu/cpuidle/available_governors"),
            "ladder menu haltpoll \n",
        )
        .unwrap();
        root
    }

    fn set(spec: &str) -> ParamSetting {
        ParamSetting::parse(spec).unwrap()
    }

    #[test]
    fn parse_table() {
        // (input, ok)
        let cases = [
            ("haltpoll.guest_halt_poll_ns=0", true),
            ("haltpoll.guest_halt_poll_ns = 50000", true),
            ("haltpoll.guest_halt_poll_allow_shrink=N", true),
            ("kvm.halt_poll_ns=200000", true),
            ("cpuidle.governor=teo", true),
            ("haltpoll.guest_halt_poll_ns", false),
            ("haltpoll.guest_halt_poll_ns=-1", false),
            ("haltpoll.guest_halt_poll_ns=10us", false),
            ("haltpoll.guest_halt_poll_allow_shrink=maybe", false),
            ("cpuidle_haltpoll.force=Y", false),
            ("cpuidle.governor=../x", false),
            ("=5", false),
        ];
        for (input, ok) in cases {
            assert_eq!(ParamSetting::parse(input).is_ok(), ok, "{input}");
        }
        let e = ParamSetting::parse("nope=1").unwrap_err().to_string();
        assert!(
            e.contains("nope=1") && e.contains("haltpoll.guest_halt_poll_ns"),
            "{e}"
        );
    }

    #[test]
    fn guard_sets_then_restores_on_drop() {
        let root = fake_sys();
        let record = root.join("run/params-restore");
        let p = root.join("module/haltpoll/parameters/guest_halt_poll_ns");
        let g = root.join("devices/system/cpu/cpuidle/current_governor");
        {
            let guard = ParamGuard::apply_at(
                &[
                    set("haltpoll.guest_halt_poll_ns=0"),
                    set("cpuidle.governor=haltpoll"),
                ],
                &root,
                &record,
            )
            .unwrap();
            assert_eq!(read_param(&p).unwrap(), "0");
            assert_eq!(read_param(&g).unwrap(), "haltpoll");
            assert!(record.exists(), "the record is written before the change");
            assert_eq!(guard.changes()[0].1, "200000");
        }
        assert_eq!(read_param(&p).unwrap(), "200000");
        assert_eq!(read_param(&g).unwrap(), "menu");
        assert!(!record.exists(), "the record goes once restored");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn refuses_untouched_when_a_parameter_is_missing_or_bad() {
        let root = fake_sys();
        let record = root.join("run/params-restore");
        let p = root.join("module/haltpoll/parameters/guest_halt_poll_ns");
        for bad in ["kvm.halt_poll_ns=0", "cpuidle.governor=teo"] {
            let e = ParamGuard::apply_at(
                &[set("haltpoll.guest_halt_poll_ns=0"), set(bad)],
                &root,
                &record,
            )
            .unwrap_err();
            assert!(e.is_input(), "{e}");
            assert_eq!(
                read_param(&p).unwrap(),
                "200000",
                "nothing changed for {bad}"
            );
            assert!(!record.exists());
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_leftover_record_is_applied_by_the_next_run() {
        let root = fake_sys();
        let record = root.join("run/params-restore");
        let p = root.join("module/haltpoll/parameters/guest_halt_poll_ns");
        let mut guard =
            ParamGuard::apply_at(&[set("haltpoll.guest_halt_poll_ns=7")], &root, &record).unwrap();
        // A SIGKILL: the guard never runs its drop, and the kernel drops the lock.
        drop(guard._lock.take());
        std::mem::forget(guard);
        assert_eq!(read_param(&p).unwrap(), "7");
        let done = restore_leftover_at(&record, &root).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(read_param(&p).unwrap(), "200000");
        assert!(!record.exists());
        assert!(
            restore_leftover_at(&record, &root).unwrap().is_empty(),
            "no record: nothing to do"
        );
        fs::write(&record, "no tab here\n").unwrap();
        assert!(restore_leftover_at(&record, &root).is_err());
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_forged_or_unreadable_record_is_refused_whole_naming_it() {
        use std::os::unix::fs::PermissionsExt;
        let root = fake_sys();
        let record = root.join("run/params-restore");
        fs::create_dir_all(record.parent().unwrap()).unwrap();
        let p = root.join("module/haltpoll/parameters/guest_halt_poll_ns");
        let victim = root.join("victim");
        fs::write(&victim, "safe\n").unwrap();
        let write = |text: &[u8], mode: u32| {
            let _ = fs::remove_file(&record);
            fs::write(&record, text).unwrap();
            fs::set_permissions(&record, fs::Permissions::from_mode(mode)).unwrap();
        };
        // (record, mode, a word of the error)
        let good = format!("{}\t5\n", p.display());
        let cases: Vec<(Vec<u8>, u32, &str)> = vec![
            (
                format!("{good}{}\tHACKED\n", victim.display()).into_bytes(),
                0o600,
                "not the file of a parameter",
            ),
            (
                format!("{}\tHACKED\n", p.display()).into_bytes(),
                0o600,
                "not a value",
            ),
            (b"\xff\xfe\n".to_vec(), 0o600, "not UTF-8"),
            (good.clone().into_bytes(), 0o666, "writable by others"),
        ];
        for (text, mode, word) in cases {
            write(&text, mode);
            let e = restore_leftover_at(&record, &root).unwrap_err().to_string();
            assert!(
                e.contains(word) && e.contains(&record.display().to_string()),
                "{e}"
            );
            assert_eq!(
                read_param(&p).unwrap(),
                "200000",
                "nothing written ({word})"
            );
            assert_eq!(fs::read_to_string(&victim).unwrap(), "safe\n");
            assert!(record.exists(), "a refused record stays for a human");
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_second_run_is_refused_while_the_first_holds_the_parameters() {
        let root = fake_sys();
        let record = root.join("run/params-restore");
        let p = root.join("module/haltpoll/parameters/guest_halt_poll_ns");
        let first =
            ParamGuard::apply_at(&[set("haltpoll.guest_halt_poll_ns=7")], &root, &record).unwrap();
        // The live run's record is not a killed run's.
        assert!(restore_leftover_at(&record, &root).unwrap().is_empty());
        assert_eq!(read_param(&p).unwrap(), "7");
        let e = ParamGuard::apply_at(&[set("haltpoll.guest_halt_poll_ns=9")], &root, &record)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("pid {}", std::process::id())) && e.contains("wait"),
            "{e}"
        );
        assert_eq!(read_param(&p).unwrap(), "7");
        drop(first);
        assert_eq!(read_param(&p).unwrap(), "200000");
        fs::remove_dir_all(root).unwrap();
    }
}
