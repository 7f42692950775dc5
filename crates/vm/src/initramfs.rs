//! The guest's root filesystem, generated: busybox for the shell, ticklab for the measuring,
//! and an `/init` that measures once and powers off.
//!
//! Layout of the archive [`build`] returns:
//!
//! ```text
//! /init                    the script of [`init_script`]
//! /bin/busybox             busybox-static (the only shell and tools)
//! /bin/ticklab             the running ticklab binary
//! /bin/rtla                rtla, for the noise probe's peer (`rtla osnoise`), when asked
//! /lib/..., /lib64/...     its ELF interpreter and shared libraries (and rtla's), at their
//!                          host paths
//! /proc /sys /dev /tmp     mount points; /sys/kernel/tracing for tracefs
//! ```
//!
//! `/init` mounts proc, sysfs, devtmpfs and tracefs, waits `settle`, writes the begin marker
//! to the data port (`/dev/ttyS1`), runs the [`GuestProbe`] with its JSON or text on the
//! data port and its stderr on the console (`/dev/ttyS0`), writes the end marker with the
//! exit status, and powers off. Nothing else runs in the guest: besides the kernel's own
//! threads, busybox's `sh` (waiting for ticklab) and ticklab are all there is — the twin of
//! the guest ([`crate::twin_guest`]) models exactly that.

use crate::cpio::NewcArchive;
use crate::elf;
use std::path::{Path, PathBuf};

/// The line `/init` writes on the data port before the probe's output.
pub const BEGIN_MARKER: &str = "@@ticklab-vm begin@@";
/// The start of the line written after it: `@@ticklab-vm end rc=N@@`.
pub const END_MARKER: &str = "@@ticklab-vm end rc=";
/// The line `/init` writes on the console (`/dev/ttyS0`) when it starts, before the settle
/// time: the host's sign that the kernel has booted (the kernel's own "Run /init" line is
/// below the console log level ticklab boots with).
pub const SETTLE_MARKER: &str = "@@ticklab-vm settling@@";
/// The line between ticklab's noise report and the peer's (`rtla osnoise top`) output.
pub const PEER_MARKER: &str = "@@ticklab-vm peer rtla@@";

/// What ticklab does inside the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestProbe {
    /// `host run --workload SPEC --duration D --json`.
    Run {
        /// Workload spec (already validated for the guest's CPU count).
        workload: String,
        /// Window, in the project's duration syntax (`5s`).
        duration: String,
    },
    /// `host inspect` (text).
    Inspect,
    /// `host audit` (text) of the guest's isolated set (its `nohz_full=` / `isolcpus=`),
    /// with the guest kernel's build config packed as `/boot/config-$(uname -r)` so that the
    /// audit can hold the boot line against the build.
    Audit {
        /// The guest kernel's config file on the host.
        config: PathBuf,
    },
    /// `host why --duration D [--workload SPEC]` (text; tracefs is mounted).
    Why {
        /// Observation window (`5s`).
        duration: String,
        /// Workload run during the window (`host why --workload`); `None` for an idle guest.
        workload: Option<String>,
    },
    /// `host noise -c CPUS -D D --json`, then, with a peer, `rtla osnoise top` on the same
    /// CPUs for as long (after [`PEER_MARKER`]); one after the other, so neither disturbs the
    /// other's CPU.
    Noise {
        /// The CPUs (a cpulist already checked for the guest).
        cpus: String,
        /// Window, whole seconds (rtla takes seconds).
        seconds: u32,
        /// The host's rtla binary, packed as `/bin/rtla`, if the peer runs.
        peer: Option<PathBuf>,
    },
    /// `host staleness --cpu N --duration D --json`.
    Staleness {
        /// The CPU the reader spins on.
        cpu: u32,
        /// Window (`5s`).
        duration: String,
    },
}

impl GuestProbe {
    /// ticklab's arguments for this probe, always quiet (`-q`): ticklab's stderr is the
    /// serial console, a terminal, and progress lines there would raise ttyS0 interrupts on
    /// the CPUs being measured, noise of ticklab's own making.
    pub fn args(&self) -> Vec<String> {
        let mut a = self.probe_args();
        a.push("-q".into());
        a
    }

    fn probe_args(&self) -> Vec<String> {
        let v = |s: &[&str]| s.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        match self {
            GuestProbe::Run { workload, duration } => {
                let mut a = v(&["host", "run", "--workload"]);
                a.push(workload.clone());
                a.push("--duration".into());
                a.push(duration.clone());
                a.push("--json".into());
                a
            }
            GuestProbe::Inspect => v(&["host", "inspect"]),
            GuestProbe::Audit { .. } => v(&["host", "audit"]),
            GuestProbe::Why { duration, workload } => {
                let mut a = v(&["host", "why", "--duration"]);
                a.push(duration.clone());
                if let Some(w) = workload {
                    a.push("--workload".into());
                    a.push(w.clone());
                }
                a
            }
            GuestProbe::Noise { cpus, seconds, .. } => {
                let mut a = v(&["host", "noise", "-c"]);
                a.push(cpus.clone());
                a.push("-D".into());
                a.push(format!("{seconds}s"));
                a.push("--json".into());
                a
            }
            GuestProbe::Staleness { cpu, duration } => {
                let mut a = v(&["host", "staleness", "--cpu"]);
                a.push(cpu.to_string());
                a.push("--duration".into());
                a.push(duration.clone());
                a.push("--json".into());
                a
            }
        }
    }

    /// The peer's command line (`rtla osnoise top`, threshold 1 µs as ticklab's, quiet: the
    /// summary once at the end), if this probe has a peer.
    pub fn peer_args(&self) -> Option<Vec<String>> {
        match self {
            GuestProbe::Noise {
                cpus,
                seconds,
                peer: Some(_),
            } => Some(
                [
                    "/bin/rtla",
                    "osnoise",
                    "top",
                    "-c",
                    cpus,
                    "-d",
                    &format!("{seconds}s"),
                    "-T",
                    "1",
                    "-q",
                ]
                .iter()
                .map(|a| a.to_string())
                .collect(),
            ),
            _ => None,
        }
    }
}

/// Quotes one word for the busybox shell (single quotes; a `'` inside is closed, escaped and
/// reopened).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The `/init` script for a probe, after `settle_s` seconds of quiet after boot.
pub fn init_script(probe: &GuestProbe, settle_s: u32) -> String {
    let args: Vec<String> = probe.args().iter().map(|a| sh_quote(a)).collect();
    let peer = match probe.peer_args() {
        Some(p) => {
            let p: Vec<String> = p.iter().map(|a| sh_quote(a)).collect();
            format!(
                "echo '{PEER_MARKER}' > /dev/ttyS1\n{} > /dev/ttyS1 2>&1\n",
                p.join(" ")
            )
        }
        None => String::new(),
    };
    // The packed build config under the name the running release looks for.
    let config = match probe {
        GuestProbe::Audit { .. } => "$B ln -s config \"/boot/config-$($B uname -r)\"\n",
        _ => "",
    };
    format!(
        "#!/bin/busybox sh\n\
         # Generated by ticklab vm (crates/vm/src/initramfs.rs): measure once, power off.\n\
         B=/bin/busybox\n\
         $B mount -t proc proc /proc\n\
         $B mount -t sysfs sysfs /sys\n\
         $B mount -t devtmpfs devtmpfs /dev\n\
         $B mount -t tracefs tracefs /sys/kernel/tracing\n\
         {config}\
         $B stty -F /dev/ttyS1 raw -echo 2>/dev/null\n\
         echo '{SETTLE_MARKER}' > /dev/ttyS0\n\
         $B sleep {settle_s}\n\
         echo '{BEGIN_MARKER}' > /dev/ttyS1\n\
         /bin/ticklab {args} > /dev/ttyS1 2> /dev/ttyS0\n\
         rc=$?\n\
         {peer}\
         echo \"{END_MARKER}$rc@@\" > /dev/ttyS1\n\
         $B sync\n\
         $B poweroff -f\n",
        args = args.join(" ")
    )
}

/// Why the initramfs could not be built.
#[derive(Debug, thiserror::Error)]
pub enum InitramfsError {
    /// A file to pack could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The binary's libraries could not be found.
    #[error(transparent)]
    Elf(#[from] elf::ElfError),
    /// busybox is dynamically linked: it would need its own libraries.
    #[error("{0}: busybox is not static (install busybox-static; scripts/setup.sh does)")]
    NotStatic(PathBuf),
}

/// What goes into the archive.
#[derive(Debug, Clone)]
pub struct InitramfsSpec<'a> {
    /// busybox-static.
    pub busybox: &'a Path,
    /// The ticklab binary to run inside (normally the running one).
    pub ticklab: &'a Path,
    /// What it runs.
    pub probe: &'a GuestProbe,
    /// Seconds between boot and the measurement.
    pub settle_s: u32,
}

/// The newc archive of the module documentation's layout.
pub fn build(spec: &InitramfsSpec<'_>) -> Result<Vec<u8>, InitramfsError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| InitramfsError::Read {
            path: p.to_path_buf(),
            source,
        })
    };
    if elf::interpreter(spec.busybox)?.is_some() {
        return Err(InitramfsError::NotStatic(spec.busybox.to_path_buf()));
    }
    let mut libs = elf::shared_libraries(spec.ticklab)?;
    let peer = match spec.probe {
        GuestProbe::Noise { peer: Some(p), .. } => Some(p.as_path()),
        _ => None,
    };
    if let Some(p) = peer {
        for lib in elf::shared_libraries(p)? {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    let mut a = NewcArchive::new();
    let mut dirs = std::collections::BTreeSet::new();
    for d in [
        "bin",
        "dev",
        "proc",
        "sys",
        "tmp",
        "sys/kernel",
        "sys/kernel/tracing",
    ] {
        dirs.insert(d.to_string());
    }
    for lib in &libs {
        let rel = lib.strip_prefix("/").unwrap_or(lib);
        let mut parent = rel.parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            dirs.insert(p.to_string_lossy().into_owned());
            parent = p.parent();
        }
    }
    // BTreeSet order puts every parent before its children.
    for d in &dirs {
        a.dir(d, 0o755);
    }
    a.file("bin/busybox", 0o755, &read(spec.busybox)?);
    a.file("bin/ticklab", 0o755, &read(spec.ticklab)?);
    if let Some(p) = peer {
        a.file("bin/rtla", 0o755, &read(p)?);
    }
    if let GuestProbe::Audit { config } = spec.probe {
        a.dir("boot", 0o755);
        a.file("boot/config", 0o644, &read(config)?);
    }
    for lib in &libs {
        // Follow symlinks: the archive holds the library's contents under the path the
        // interpreter resolved.
        let rel = lib.strip_prefix("/").unwrap_or(lib);
        a.file(&rel.to_string_lossy(), 0o755, &read(lib)?);
    }
    a.file(
        "init",
        0o755,
        init_script(spec.probe, spec.settle_s).as_bytes(),
    );
    Ok(a.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_probe_runs_its_peer_after_ticklab_before_the_end_marker() {
        let p = GuestProbe::Noise {
            cpus: "1".into(),
            seconds: 10,
            peer: Some(PathBuf::from("/usr/bin/rtla")),
        };
        let s = init_script(&p, 2);
        let lines: Vec<&str> = s.lines().collect();
        let pos = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap();
        let run = pos("/bin/ticklab");
        assert_eq!(
            lines[run],
            "/bin/ticklab 'host' 'noise' '-c' '1' '-D' '10s' '--json' '-q' > /dev/ttyS1 2> /dev/ttyS0"
        );
        let peer = pos("/bin/rtla");
        assert_eq!(
            lines[peer],
            "'/bin/rtla' 'osnoise' 'top' '-c' '1' '-d' '10s' '-T' '1' '-q' > /dev/ttyS1 2>&1"
        );
        assert!(run < pos(PEER_MARKER) && pos(PEER_MARKER) < peer && peer < pos(END_MARKER));
        // The end marker carries ticklab's status, not the peer's.
        assert!(lines[pos(END_MARKER)].contains("$rc"));
        let without = GuestProbe::Noise {
            cpus: "1".into(),
            seconds: 10,
            peer: None,
        };
        assert!(!init_script(&without, 2).contains("rtla"));
    }

    #[test]
    fn init_script_runs_the_probe_between_markers() {
        let p = GuestProbe::Run {
            workload: "hogs:1@1".into(),
            duration: "5s".into(),
        };
        let s = init_script(&p, 2);
        let lines: Vec<&str> = s.lines().collect();
        let pos = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap();
        assert!(pos("mount -t proc") < pos("sleep 2"));
        assert!(pos("tracefs") < pos(BEGIN_MARKER));
        let run = pos("/bin/ticklab");
        assert_eq!(
            lines[run],
            "/bin/ticklab 'host' 'run' '--workload' 'hogs:1@1' '--duration' '5s' '--json' '-q' > /dev/ttyS1 2> /dev/ttyS0"
        );
        assert!(pos(BEGIN_MARKER) < run && run < pos(END_MARKER));
        assert!(pos(END_MARKER) < pos("poweroff -f"));
    }

    #[test]
    fn probe_args_table() {
        let cases = [
            (GuestProbe::Inspect, "host inspect -q"),
            (
                GuestProbe::Audit {
                    config: PathBuf::from("/boot/config-6.1.0-57-amd64"),
                },
                "host audit -q",
            ),
            (
                GuestProbe::Why {
                    duration: "3s".into(),
                    workload: None,
                },
                "host why --duration 3s -q",
            ),
            (
                GuestProbe::Why {
                    duration: "3s".into(),
                    workload: Some("hogs:1@1+hogs:1@2+hogs:1@2".into()),
                },
                "host why --duration 3s --workload hogs:1@1+hogs:1@2+hogs:1@2 -q",
            ),
        ];
        for (p, want) in cases {
            assert_eq!(p.args().join(" "), want);
        }
        assert_eq!(sh_quote("a'b"), "'a'\\''b'");
    }
}
