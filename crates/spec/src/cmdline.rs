//! The kernel command line, in the kernel's own syntax.
//!
//! CONTRACT (filled in by the cmdline work): [`KernelCmdline::parse`] reads a boot line such as
//! `nohz_full=2-19,22-39 isolcpus=domain,nohz,2-19 skew_tick=1 idle=poll` into typed fields;
//! [`TickConfig::resolve`] turns it, together with the kernel build and the CPU count, into the
//! effective tick configuration plus the messages the kernel would print at boot.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// `idle=` override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum IdleOverride {
    /// No `idle=` given: the cpuidle driver and governor decide.
    #[default]
    Default,
    /// `idle=poll`: always spin, never stop the tick.
    Poll,
    /// `idle=halt`: HLT only.
    Halt,
    /// `idle=nomwait`: no MWAIT states.
    NoMwait,
}

/// guest halt-polling parameters (`haltpoll.*`), kernel defaults in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaltpollParams {
    /// `guest_halt_poll_ns`, default 200000.
    pub guest_halt_poll_ns: u64,
    /// `guest_halt_poll_shrink`, default 2.
    pub guest_halt_poll_shrink: u64,
    /// `guest_halt_poll_grow`, default 2.
    pub guest_halt_poll_grow: u64,
    /// `guest_halt_poll_grow_start`, default 50000.
    pub guest_halt_poll_grow_start: u64,
    /// `guest_halt_poll_allow_shrink`, default true.
    pub guest_halt_poll_allow_shrink: bool,
}

impl Default for HaltpollParams {
    fn default() -> Self {
        // Defaults: Documentation/virt/guest-halt-polling.rst (kernel-tick-behaviour.md §9.3).
        HaltpollParams {
            guest_halt_poll_ns: 200_000,
            guest_halt_poll_shrink: 2,
            guest_halt_poll_grow: 2,
            guest_halt_poll_grow_start: 50_000,
            guest_halt_poll_allow_shrink: true,
        }
    }
}
