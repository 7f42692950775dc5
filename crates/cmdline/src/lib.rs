//! ticklab's reading of a Linux kernel command line.
//!
//! Kernel engineers configure the tick in the kernel's own language: a boot line such as
//! `nohz_full=2-19,22-39 isolcpus=domain,nohz,2-19 skew_tick=1 idle=poll`. This crate reads
//! that language and says what it means for the tick, so that the twin, the host lab and the
//! CLI all interpret a boot line the same way:
//!
//! * [`CpuSet`] and [`parse_cpulist`]: the kernel's cpulist syntax (`N`, `all`, `a-b:used/group`).
//! * [`KernelCmdline`]: a boot line parsed into typed parameters, unknown ones kept as written,
//!   a malformed known one refused with a [`CmdlineError`] naming the token.
//! * [`TickConfig`]: what the parameters mean together with the kernel build
//!   ([`KernelBuild`]) and the CPU count: housekeeping and nohz_full CPUs, skew, idle mode,
//!   each CPU's [`CpuRole`], and the messages the kernel would print at boot.
//!
//! Read [`cpuset`] first: every other part speaks in its terms. This crate knows nothing of
//! scenarios or reports; `ticklab-schema` builds on it.

#![deny(missing_docs)]

pub mod cpuset;
mod tick_config;

pub use cpuset::{CpuSet, CpulistError, parse_cpulist};
pub use tick_config::*;
