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
//! Which parameters: [`PARAMS`] lists the writable ones ticklab knows, each with its sysfs
//! file: the guest haltpoll module's five (`haltpoll.*`, docs/kernel-behaviour.md §9.3), the
//! host-side `kvm.halt_poll_ns*` (§9.5; present only where the KVM module is loaded) and
//! `cpuidle.governor` (sysfs `current_governor`). Writing needs root: without it the guard
//! refuses before touching anything. A value is checked against what the parameter takes
//! (an unsigned integer, `Y`/`N`, or a governor named in `available_governors`).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::HarnessError;

/// Where the restore record lives (tmpfs: gone after a reboot, when the kernel's own
/// defaults are back anyway).
pub const RESTORE_RECORD: &str = "/run/ticklab/params-restore";

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
        let ok = match kind {
            ParamKind::Unsigned => value.parse::<u64>().is_ok(),
            ParamKind::Bool => matches!(value, "Y" | "N" | "y" | "n" | "1" | "0"),
            ParamKind::Governor => {
                !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }
        };
        if !ok {
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
        };
        if settings.is_empty() {
            return Ok(guard);
        }
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
        fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for (path, old) in olds {
        text.push_str(&format!("{}\t{}\n", path.display(), old));
    }
    let mut f = fs::File::create(record)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Applies a restore record a killed run left behind, then removes it. Returns the
/// parameters restored as (path, value); an empty list when there was no record.
pub fn restore_leftover(record: &Path) -> Result<Vec<(String, String)>, HarnessError> {
    let text = match fs::read_to_string(record) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(super::os_error("reading the restore record", e)),
    };
    let mut done = Vec::new();
    // Last set first, as the guard does.
    for line in text.lines().rev().filter(|l| !l.trim().is_empty()) {
        let Some((path, value)) = line.split_once('\t') else {
            return Err(HarnessError::Input(format!(
                "{}: malformed line {line:?} (expected PATH<TAB>VALUE); remove it after checking the parameters by hand",
                record.display()
            )));
        };
        write_param(Path::new(path), value).map_err(|e| {
            super::os_error(&format!("restoring {path} from {}", record.display()), e)
        })?;
        done.push((path.to_string(), value.to_string()));
    }
    fs::remove_file(record).map_err(|e| super::os_error("removing the restore record", e))?;
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
        let guard =
            ParamGuard::apply_at(&[set("haltpoll.guest_halt_poll_ns=7")], &root, &record).unwrap();
        // A SIGKILL: the guard never runs its drop.
        std::mem::forget(guard);
        assert_eq!(read_param(&p).unwrap(), "7");
        let done = restore_leftover(&record).unwrap();
        assert_eq!(done.len(), 1);
        assert_eq!(read_param(&p).unwrap(), "200000");
        assert!(!record.exists());
        assert!(
            restore_leftover(&record).unwrap().is_empty(),
            "no record: nothing to do"
        );
        fs::write(&record, "no tab here\n").unwrap();
        assert!(restore_leftover(&record).is_err());
        fs::remove_dir_all(root).unwrap();
    }
}
