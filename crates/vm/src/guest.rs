//! One whole guest boot: a fresh work directory, the initramfs, QEMU, and the result.
//!
//! [`boot_guest`] writes `initrd.cpio` into a new directory under the system's temporary
//! directory (or `--keep DIR`, which is then left in place with `console.log` and
//! `data.txt`), boots, and removes the directory afterwards unless asked to keep it.
//! [`GuestBoot::host_run`] reads the data port's JSON as the host lab's
//! [`ticklab_host::harness::HostRun`].

use std::path::{Path, PathBuf};
use std::time::Duration;
use ticklab_host::harness::HostRun;

use crate::initramfs::{self, GuestProbe, InitramfsSpec};
use crate::kconfig::GuestKernel;
use crate::qemu::{self, AccelChoice, VmOutput, VmSpec};

/// Everything one boot needs.
#[derive(Debug, Clone)]
pub struct BootOptions {
    /// The kernel and its config.
    pub kernel: GuestKernel,
    /// `qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// busybox-static.
    pub busybox: PathBuf,
    /// The ticklab binary to run inside.
    pub ticklab: PathBuf,
    /// The user's boot line.
    pub cmdline: String,
    /// vCPUs.
    pub vcpus: u32,
    /// Guest memory, MiB.
    pub memory_mib: u32,
    /// What ticklab does inside.
    pub probe: GuestProbe,
    /// Seconds of quiet between boot and the measurement.
    pub settle_s: u32,
    /// KVM, TCG or automatic.
    pub accel: AccelChoice,
    /// Keep the work files in this directory.
    pub keep: Option<PathBuf>,
    /// Kill QEMU after this long.
    pub timeout: Duration,
}

/// Why a boot failed.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    /// The initramfs could not be built.
    #[error("initramfs: {0}")]
    Initramfs(#[from] initramfs::InitramfsError),
    /// QEMU or the guest failed.
    #[error(transparent)]
    Vm(#[from] qemu::VmError),
    /// The work directory.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Why a finished boot's data port holds no host run report.
#[derive(Debug, thiserror::Error)]
pub enum GuestRunError {
    /// ticklab in the guest exited with an error.
    #[error("ticklab in the guest exited with {rc}; console tail:\n{console_tail}")]
    Exited {
        /// Its exit code.
        rc: i32,
        /// The last lines of the console.
        console_tail: String,
    },
    /// The data port's text is not a report.
    #[error("the guest's output is not a host run report: {error}; it begins {begins:?}")]
    NotAReport {
        /// The JSON error (part of the message).
        error: serde_json::Error,
        /// Its first 200 characters.
        begins: String,
    },
}

/// A finished boot.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestBoot {
    /// QEMU's output.
    pub output: VmOutput,
    /// Size of the initramfs, bytes.
    pub initramfs_bytes: usize,
}

impl GuestBoot {
    /// The data port's text as the host lab's run report; the error says what the guest
    /// printed instead.
    pub fn host_run(&self) -> Result<HostRun, GuestRunError> {
        if self.output.guest_rc != 0 {
            return Err(GuestRunError::Exited {
                rc: self.output.guest_rc,
                console_tail: tail(&self.output.console, 10),
            });
        }
        serde_json::from_str(&self.output.data).map_err(|error| GuestRunError::NotAReport {
            error,
            begins: self.output.data.chars().take(200).collect::<String>(),
        })
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A work directory unique to this process and call.
fn fresh_workdir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    std::env::temp_dir().join(format!(
        "ticklab-vm-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Builds the initramfs, boots, and returns what the guest reported.
pub fn boot_guest(o: &BootOptions) -> Result<GuestBoot, BootError> {
    boot_guest_with(o, &mut |_| {})
}

/// [`boot_guest`], telling `on_phase` where the boot is (see [`qemu::BootPhase`]) about ten
/// times a second.
pub fn boot_guest_with(
    o: &BootOptions,
    on_phase: &mut dyn FnMut(qemu::BootPhase),
) -> Result<GuestBoot, BootError> {
    let dir = o.keep.clone().unwrap_or_else(fresh_workdir);
    std::fs::create_dir_all(&dir).map_err(|source| BootError::Io {
        path: dir.clone(),
        source,
    })?;
    let result = boot_in(o, &dir, on_phase);
    if o.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn boot_in(
    o: &BootOptions,
    dir: &Path,
    on_phase: &mut dyn FnMut(qemu::BootPhase),
) -> Result<GuestBoot, BootError> {
    let archive = initramfs::build(&InitramfsSpec {
        busybox: &o.busybox,
        ticklab: &o.ticklab,
        probe: &o.probe,
        settle_s: o.settle_s,
    })?;
    let initrd = dir.join("initrd.cpio");
    std::fs::write(&initrd, &archive).map_err(|source| BootError::Io {
        path: initrd.clone(),
        source,
    })?;
    let spec = VmSpec {
        qemu: &o.qemu,
        kernel: &o.kernel.image,
        initrd: &initrd,
        cmdline: &o.cmdline,
        vcpus: o.vcpus,
        memory_mib: o.memory_mib,
        workdir: dir,
        timeout: o.timeout,
    };
    let output = qemu::boot_with(&spec, o.accel, on_phase)?;
    Ok(GuestBoot {
        output,
        initramfs_bytes: archive.len(),
    })
}
