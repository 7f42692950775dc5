//! ticklab-vm: real kernels under QEMU as a second reality.
//!
//! `ticklab vm` boots a kernel (by default the distribution kernel the project's
//! `scripts/setup.sh` installs) with a boot line, a vCPU count and a workload, runs ticklab's
//! host lab inside, and reads the host lab's JSON back; `ticklab vm compare` sets the twin of
//! that guest beside it. The pieces, one module each, in the order a boot uses them:
//!
//! * [`kconfig`] — the guest kernel's image and the build options read from its config file
//!   (HZ, NO_HZ choice, high-res timers, version).
//! * [`cpio`] — the `newc` archive format, written in Rust.
//! * [`elf`] — the ELF interpreter and shared libraries the ticklab binary needs.
//! * [`initramfs`] — the guest's root: busybox-static, ticklab and its libraries, and the
//!   `/init` script that measures once and powers off.
//! * [`qemu`] — QEMU's command line, KVM-or-TCG, the bounded run, the data port read back.
//! * [`twin_guest`] — the twin scenario of a guest boot: its vCPUs, kernel, boot line,
//!   workload, and only the background that runs in the initramfs.
//! * [`compare`] — kernel versus twin per CPU, on counts only, with the validation bands.
//! * [`oversubscription`] — points whose always-runnable vCPUs outnumber the host's CPUs,
//!   shown but not judged.
//! * [`render`] — the comparison as text and the validation table as Markdown.
//! * [`guest`] — one whole boot: work directory, initramfs, QEMU, result.
//! * [`rtla`] — the noise probe's peer: `rtla osnoise top` read back and set beside
//!   ticklab's noise report from the same guest.
//! * [`kbuild`] — guest kernels built from Debian's source packages with the project's
//!   config fragment, a tick choice and patches, kept in a cache keyed by their inputs.
//!
//! Honesty about emulation: under TCG guest timers follow real time, instruction costs do
//! not; only counts are compared with the twin (see [`compare`]).

pub mod compare;
pub mod cpio;
pub mod elf;
pub mod guest;
pub mod initramfs;
pub mod kbuild;
pub mod kconfig;
pub mod oversubscription;
pub mod qemu;
pub mod render;
pub mod rtla;
pub mod twin_guest;

pub use compare::{
    Band, BootPoint, CompareError, CompareRecord, CpuComparison, MissReason, VmComparison,
    compare_cpus, retwin, with_twin,
};
pub use guest::{BootOptions, GuestBoot, GuestRunError, boot_guest, boot_guest_with};
pub use initramfs::GuestProbe;
pub use kconfig::{BuiltTimers, GuestKernel, GuestKernelError, KconfigError, KernelConfig};
pub use qemu::{Accel, AccelChoice, BootPhase};
