//! Booting the guest: QEMU's command line, the accelerator choice, the run with a deadline,
//! and the data port read back.
//!
//! The guest gets two serial ports: COM1 (`ttyS0`) is the kernel console and ticklab's
//! stderr, written to `console.log`; COM2 (`ttyS1`) is the data port, written to `data.txt`,
//! where `/init` puts the begin marker, the probe's output and the end marker
//! ([`crate::initramfs`]). No network, no disk, no display: `-nodefaults`.
//!
//! Accelerator ([`Accel`]): KVM when `/dev/kvm` can be opened and a KVM boot reaches the
//! begin marker; otherwise TCG, multi-threaded (`-accel tcg,thread=multi -cpu max`), and the
//! result records why KVM was not used ([`VmOutput::kvm_fallback`]).

use crate::initramfs::{BEGIN_MARKER, END_MARKER};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which engine runs the guest's instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Accel {
    /// Hardware virtualisation: guest instructions run natively.
    Kvm,
    /// QEMU's binary translator: guest time follows real time for timers, but instruction
    /// costs and latencies are the emulator's, not hardware's.
    Tcg,
}

impl Accel {
    /// QEMU arguments selecting it.
    fn qemu_args(self) -> [&'static str; 4] {
        match self {
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
            Accel::Tcg => ["-accel", "tcg,thread=multi", "-cpu", "max"],
        }
    }

    /// `kvm` / `tcg`.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// Whether latencies and instruction costs are emulated (not comparable with hardware).
    pub fn emulated(self) -> bool {
        self == Accel::Tcg
    }
}

/// The user's accelerator choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM if it runs the guest, else TCG.
    Auto,
    /// Only this one.
    Only(Accel),
}

/// One boot.
#[derive(Debug, Clone)]
pub struct VmSpec<'a> {
    /// `qemu-system-x86_64` (or another path).
    pub qemu: &'a Path,
    /// Kernel image.
    pub kernel: &'a Path,
    /// The initramfs file.
    pub initrd: &'a Path,
    /// The user's boot line (the console and power-off parameters are added before it).
    pub cmdline: &'a str,
    /// vCPUs.
    pub vcpus: u32,
    /// Guest memory, MiB.
    pub memory_mib: u32,
    /// Where console.log and data.txt go.
    pub workdir: &'a Path,
    /// Give up (and kill QEMU) after this long.
    pub timeout: Duration,
}

/// The parameters ticklab adds before the user's boot line: the console on COM1, no
/// messages below warnings on it (they would only slow the emulated UART), a reboot (so
/// QEMU exits, `-no-reboot`) if `/init` ever dies, and the scheduler's statistics switched on
/// (`schedstats=enable`: `/proc/schedstat` counts each vCPU's trips to idle, which the twin
/// of the guest needs for its kernel threads' wake-ups; a kernel built without
/// `CONFIG_SCHEDSTATS` ignores it). None of them changes the tick.
pub const FIXED_CMDLINE: &str = "console=ttyS0 loglevel=4 panic=-1 schedstats=enable";

/// What a boot produced.
#[derive(Debug, Clone, PartialEq)]
pub struct VmOutput {
    /// The accelerator that ran it.
    pub accel: Accel,
    /// Why KVM was not used under [`AccelChoice::Auto`] (`None` when KVM ran, or TCG was
    /// asked for).
    pub kvm_fallback: Option<String>,
    /// The probe's output between the markers (CRs removed).
    pub data: String,
    /// The probe's exit status in the guest.
    pub guest_rc: i32,
    /// Boot to power-off, wall-clock seconds.
    pub wall_s: f64,
    /// The whole console log (kernel messages and ticklab's stderr).
    pub console: String,
    /// How long QEMU's threads waited for a host CPU while the probe ran, when it could be
    /// read (see [`HostWait`]).
    pub host_wait: Option<HostWait>,
    /// The host's online CPUs when the guest ran (`None` when
    /// `/sys/devices/system/cpu/online` could not be read).
    pub host_cpus: Option<u32>,
}

/// QEMU's threads' host run-queue wait (`/proc/<pid>/task/*/schedstat`, second field: time
/// runnable but not running) between the begin and end markers. Under TCG a vCPU thread
/// that waits for a host CPU delivers the guest's timer interrupts late, and the guest's
/// `hrtimer_forward` then skips the periods it missed: ticks are lost. This is the measure of
/// how much the host let the emulator down during the window.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostWait {
    /// Wall-clock seconds between the markers (to the 100 ms the runner polls at).
    pub wall_s: f64,
    /// Run-queue wait summed over QEMU's threads in that time, seconds.
    pub run_delay_s: f64,
}

impl HostWait {
    /// Milliseconds of run-queue wait per second of window, summed over QEMU's threads.
    pub fn ms_per_s(&self) -> f64 {
        self.run_delay_s * 1e3 / self.wall_s.max(1e-9)
    }
}

/// The second field of a `schedstat` line (run-queue wait, ns).
fn schedstat_run_delay(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run-queue wait of every live thread of `pid`, summed, ns.
fn run_delay_ns(pid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0u64;
    for t in dir.filter_map(Result::ok) {
        let text = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        sum += schedstat_run_delay(&text).unwrap_or(0);
    }
    Some(sum)
}

/// Why a boot gave no result.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// QEMU could not be started.
    #[error("{qemu}: cannot start: {source} (install qemu-system-x86; scripts/setup.sh does)")]
    Spawn {
        /// The binary.
        qemu: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// QEMU failed or the guest never reported.
    #[error("guest ({accel}) gave no result: {what}\n--- console tail ---\n{tail}")]
    NoResult {
        /// Accelerator name.
        accel: &'static str,
        /// What happened.
        what: String,
        /// The last lines of the console and of QEMU's stderr.
        tail: String,
    },
    /// Files in the work directory.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The QEMU command line for one boot.
pub fn qemu_command(spec: &VmSpec<'_>, accel: Accel) -> Command {
    let mut c = Command::new(spec.qemu);
    c.args(accel.qemu_args());
    c.args(["-smp", &spec.vcpus.to_string()]);
    c.args(["-m", &spec.memory_mib.to_string()]);
    c.args(["-nodefaults", "-no-user-config", "-nographic", "-no-reboot"]);
    c.args(["-monitor", "none", "-display", "none"]);
    c.arg("-kernel").arg(spec.kernel);
    c.arg("-initrd").arg(spec.initrd);
    let line = if spec.cmdline.trim().is_empty() {
        FIXED_CMDLINE.to_string()
    } else {
        format!("{FIXED_CMDLINE} {}", spec.cmdline.trim())
    };
    c.args(["-append", &line]);
    c.arg("-serial").arg(format!(
        "file:{}",
        spec.workdir.join("console.log").display()
    ));
    c.arg("-serial")
        .arg(format!("file:{}", spec.workdir.join("data.txt").display()));
    c
}

/// The probe's output and exit status from the data port's text, once the end marker is
/// there; `None` before.
pub fn parse_data(text: &str) -> Option<(String, i32)> {
    let text = text.replace('\r', "");
    let start = text.find(BEGIN_MARKER)? + BEGIN_MARKER.len();
    let rest = &text[start..];
    let end = rest.find(END_MARKER)?;
    let after = &rest[end + END_MARKER.len()..];
    let rc = after.split("@@").next()?.trim().parse().ok()?;
    Some((rest[..end].trim_matches('\n').to_string(), rc))
}

/// Whether `/dev/kvm` can be opened for reading and writing.
pub fn kvm_device_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Boots once with `choice`; under [`AccelChoice::Auto`] a KVM boot that fails before the
/// begin marker (QEMU error, or no marker within `kvm_probe`) is retried under TCG.
/// Where a boot is, as the host sees it from the console and the data port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootPhase {
    /// QEMU started; the kernel has not run `/init` yet.
    Booting,
    /// `/init` runs (its [`SETTLE_MARKER`](crate::initramfs::SETTLE_MARKER) is on the
    /// console) and waits the settle time.
    Settling,
    /// The begin marker is on the data port: ticklab measures inside.
    Measuring,
    /// The end marker is on the data port: the guest syncs and powers off.
    PoweringOff,
}

impl BootPhase {
    /// The phase's words for a progress line.
    pub fn name(self) -> &'static str {
        match self {
            BootPhase::Booting => "booting",
            BootPhase::Settling => "settling",
            BootPhase::Measuring => "measuring",
            BootPhase::PoweringOff => "powering off",
        }
    }

    /// The phase from what the console and the data port hold so far.
    pub fn of(console: &str, data: &str) -> BootPhase {
        if data.contains(END_MARKER) {
            BootPhase::PoweringOff
        } else if data.contains(BEGIN_MARKER) {
            BootPhase::Measuring
        } else if console.contains(INIT_STARTED) {
            BootPhase::Settling
        } else {
            BootPhase::Booting
        }
    }
}

/// What `/init` prints on the console when it starts.
const INIT_STARTED: &str = crate::initramfs::SETTLE_MARKER;

/// Boots the guest as [`boot_with`] does, with no one told of its phases.
pub fn boot(spec: &VmSpec<'_>, choice: AccelChoice) -> Result<VmOutput, VmError> {
    boot_with(spec, choice, &mut |_| {})
}

/// Boots the guest under `choice`, calling `on_phase` about ten times a second with the
/// [`BootPhase`] the boot is in (again from [`BootPhase::Booting`] when a KVM boot falls back
/// to TCG).
pub fn boot_with(
    spec: &VmSpec<'_>,
    choice: AccelChoice,
    on_phase: &mut dyn FnMut(BootPhase),
) -> Result<VmOutput, VmError> {
    // A KVM boot reaches the marker in a few seconds; give it a generous fraction of the
    // timeout before calling it stuck.
    let kvm_probe = Duration::from_secs(30).min(spec.timeout);
    match choice {
        AccelChoice::Only(a) => boot_once(spec, a, None, on_phase),
        AccelChoice::Auto if !kvm_device_usable() => {
            let mut out = boot_once(spec, Accel::Tcg, None, on_phase)?;
            out.kvm_fallback = Some("/dev/kvm cannot be opened read-write".into());
            Ok(out)
        }
        AccelChoice::Auto => match boot_once(spec, Accel::Kvm, Some(kvm_probe), on_phase) {
            Ok(o) => Ok(o),
            Err(VmError::NoResult { what, tail, .. }) => {
                let first = tail
                    .lines()
                    .find(|l| l.contains("qemu-system"))
                    .unwrap_or(&what)
                    .to_string();
                let mut out = boot_once(spec, Accel::Tcg, None, on_phase)?;
                out.kvm_fallback = Some(format!("KVM did not run the guest: {first}"));
                Ok(out)
            }
            Err(e) => Err(e),
        },
    }
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One boot under `accel`. `marker_deadline`: give up if the begin marker has not appeared
/// by then.
// Over 100 lines because it owns one QEMU child from spawn to reap: the output files, the
// pre-exec death signal, the marker deadline and the timeout all act on the same child and
// its pipes; the command line (qemu_command) and the output parsing are their own functions.
fn boot_once(
    spec: &VmSpec<'_>,
    accel: Accel,
    marker_deadline: Option<Duration>,
    on_phase: &mut dyn FnMut(BootPhase),
) -> Result<VmOutput, VmError> {
    let data_path = spec.workdir.join("data.txt");
    let console_path = spec.workdir.join("console.log");
    for p in [&data_path, &console_path] {
        std::fs::write(p, b"").map_err(|source| VmError::Io {
            path: p.clone(),
            source,
        })?;
    }
    let started = Instant::now();
    let mut cmd = qemu_command(spec, accel);
    // QEMU dies with ticklab (Ctrl-C, a killed validation run): no guest outlives its boot.
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the
    // parent; it runs in the forked child before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| VmError::Spawn {
            qemu: spec.qemu.to_path_buf(),
            source,
        })?;
    let mut stderr = child.stderr.take();
    // (wall, run delay) when the begin marker was first seen, then the latest sample before
    // the end marker.
    let mut wait_start: Option<(Instant, u64)> = None;
    let mut wait_end: Option<(Instant, u64)> = None;
    let no_result = |what: String, qemu_err: &str| VmError::NoResult {
        accel: accel.name(),
        what,
        tail: format!(
            "{}\n{}",
            tail_lines(&read_lossy(&console_path), 15),
            qemu_err.trim()
        ),
    };
    let mut phase = BootPhase::Booting;
    on_phase(phase);
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|source| VmError::Io {
            path: spec.qemu.to_path_buf(),
            source,
        })? {
            break st;
        }
        let elapsed = started.elapsed();
        let data_now = read_lossy(&data_path);
        let begun = data_now.contains(BEGIN_MARKER);
        // The console is read only until /init has started (it grows with the kernel's log).
        phase = match phase {
            BootPhase::Booting => BootPhase::of(&read_lossy(&console_path), &data_now),
            _ => BootPhase::of(INIT_STARTED, &data_now),
        };
        on_phase(phase);
        if begun
            && !data_now.contains(END_MARKER)
            && let Some(d) = run_delay_ns(child.id())
        {
            let sample = (Instant::now(), d);
            wait_start.get_or_insert(sample);
            wait_end = Some(sample);
        }
        let stuck_before_marker = marker_deadline.is_some_and(|d| elapsed > d && !begun);
        if elapsed > spec.timeout || stuck_before_marker {
            let _ = child.kill();
            let _ = child.wait();
            let mut err = String::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_string(&mut err);
            }
            let what = if stuck_before_marker {
                format!("no begin marker after {:.0} s", elapsed.as_secs_f64())
            } else {
                format!(
                    "killed after the {:.0} s timeout",
                    spec.timeout.as_secs_f64()
                )
            };
            return Err(no_result(what, &err));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let wall_s = started.elapsed().as_secs_f64();
    let mut err = String::new();
    if let Some(s) = stderr.as_mut() {
        let _ = s.read_to_string(&mut err);
    }
    let console = read_lossy(&console_path);
    let host_wait = match (wait_start, wait_end) {
        (Some((t0, d0)), Some((t1, d1))) if t1 > t0 => Some(HostWait {
            wall_s: (t1 - t0).as_secs_f64(),
            run_delay_s: d1.saturating_sub(d0) as f64 / 1e9,
        }),
        _ => None,
    };
    match parse_data(&read_lossy(&data_path)) {
        Some((data, guest_rc)) => Ok(VmOutput {
            accel,
            kvm_fallback: None,
            data,
            guest_rc,
            wall_s,
            console,
            host_wait,
            host_cpus: ticklab_host::harness::os::online_cpus().map(|c| c.len() as u32),
        }),
        None => Err(no_result(
            format!("QEMU exited ({status}) without the end marker"),
            &err,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_phases_table() {
        let begin = format!("{BEGIN_MARKER}\n");
        let end = format!("{BEGIN_MARKER}\n{{}}\n{END_MARKER}0@@\n");
        // (console, data port, phase)
        let cases = [
            ("", "", BootPhase::Booting),
            ("[    0.5] Linux version 6.1", "", BootPhase::Booting),
            // The kernel's own line is under the console log level: not the sign.
            (
                "[    1.2] Run /init as init process\n",
                "",
                BootPhase::Booting,
            ),
            (
                "[    1.2] x\r\n@@ticklab-vm settling@@\r\n",
                "",
                BootPhase::Settling,
            ),
            ("", begin.as_str(), BootPhase::Measuring),
            ("", end.as_str(), BootPhase::PoweringOff),
        ];
        for (console, data, want) in cases {
            assert_eq!(BootPhase::of(console, data), want, "{console:?} {data:?}");
        }
    }

    #[test]
    fn data_port_table() {
        let ok = format!("junk\r\n{BEGIN_MARKER}\r\n{{\"a\": 1}}\r\n{END_MARKER}0@@\r\n");
        let fail = format!("{BEGIN_MARKER}\n{END_MARKER}2@@\n");
        // (text, expected)
        let cases = [
            (ok.as_str(), Some(("{\"a\": 1}".to_string(), 0))),
            (fail.as_str(), Some((String::new(), 2))),
            (BEGIN_MARKER, None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_data(text), want, "{text:?}");
        }
    }

    #[test]
    fn schedstat_table() {
        // (line, run delay)
        let cases = [
            ("123456 7890 12\n", Some(7890)),
            ("1 2 3", Some(2)),
            ("1", None),
            ("", None),
        ];
        for (line, want) in cases {
            assert_eq!(schedstat_run_delay(line), want, "{line:?}");
        }
        let w = HostWait {
            wall_s: 5.0,
            run_delay_s: 0.5,
        };
        assert!((w.ms_per_s() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn command_line_puts_the_fixed_parameters_first() {
        let dir = Path::new("/tmp/x");
        let spec = VmSpec {
            qemu: Path::new("qemu-system-x86_64"),
            kernel: Path::new("/boot/vmlinuz"),
            initrd: Path::new("/tmp/x/initrd.cpio"),
            cmdline: "nohz_full=1",
            vcpus: 2,
            memory_mib: 512,
            workdir: dir,
            timeout: Duration::from_secs(60),
        };
        let c = qemu_command(&spec, Accel::Tcg);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let after = |flag: &str| {
            let i = args.iter().position(|a| a == flag).unwrap();
            args[i + 1].clone()
        };
        assert_eq!(after("-accel"), "tcg,thread=multi");
        assert_eq!(after("-cpu"), "max");
        assert_eq!(after("-smp"), "2");
        assert_eq!(after("-append"), format!("{FIXED_CMDLINE} nohz_full=1"));
        assert_eq!(after("-serial"), "file:/tmp/x/console.log");
        let kvm = qemu_command(&spec, Accel::Kvm);
        assert!(kvm.get_args().any(|a| a == "kvm"));
    }
}
