//! ticklab's reading of a Linux kernel command line.
//!
//! Kernel engineers configure the tick in the kernel's own language: a boot line such as
//! `nohz_full=2-19,22-39 isolcpus=domain,nohz,2-19 skew_tick=1 idle=poll`. This crate reads
//! that language and says what it means for the tick, so that the twin, the host lab and the
//! CLI all interpret a boot line the same way:
//!
//! * [`CpuSet`] and [`parse_cpulist`]: the kernel's cpulist grammar (`N`, `all`,
//!   `a-b:used/group`), release by release ([`CpulistGrammar`], [`parse_cpulist_as`]), with
//!   the kernel's own error classes ([`CpulistErrno`]).
//! * [`KernelCmdline`]: a boot line parsed into typed parameters, unknown ones kept as written,
//!   a malformed known one refused with a [`CmdlineError`] naming the token.
//! * [`TickConfig`]: what the parameters mean together with the kernel build
//!   ([`KernelBuild`]) and the CPU count: housekeeping and nohz_full CPUs, skew, idle mode,
//!   each CPU's [`CpuRole`], and the messages the kernel would print at boot.
//! * [`Kernel::resolve`]: both at once for one kernel (build and CPU count), with the grammar
//!   of its release: what every caller uses.
//!
//! This crate knows nothing of scenarios or reports; `ticklab-schema` builds on it.
//!
//! # Files
//!
//! Read `cpuset` and `cpulist` first (every other part speaks in their terms), then `params`,
//! then `tick_config`:
//!
//! | file             | holds                                                               |
//! |------------------|---------------------------------------------------------------------|
//! | `cpuset.rs`      | [`CpuSet`], the set type                                            |
//! | `cpulist.rs`     | the kernel's cpulist grammar ([`parse_cpulist`], [`parse_cpulist_as`]) and its errors |
//! | `ctype.rs`       | the kernel's `isspace`, shared by the tokenizer and the cpulist parser |
//! | `params.rs`      | the typed parameters: [`KernelCmdline`] and its argument types, and the canonical line it writes back ([`std::fmt::Display`]) |
//! | `parse.rs`       | the kernel's tokenizer and value spellings, [`KernelCmdline::parse`] and its [`CmdlineError`] |
//! | `tick_config.rs` | the meaning: [`KernelBuild`], [`TickConfig::resolve`] as the kernel's setup steps, [`CpuRole`] |
//! | `kernel.rs`      | [`Kernel::resolve`]: a boot line parsed for one release and resolved, the one entry every user calls |
//! | `messages.rs`    | what a boot says: [`BootMessage`] and its [`MessageOrigin`]          |
//! | `suggest.rs`     | near-miss warnings for unknown parameters ([`suggest::did_you_mean`]) |
//!
//! Each of `cpulist`, `params`, `parse` and `tick_config` keeps its tests in a sibling `tests.rs`. The
//! modules are private; everything public is re-exported here, at the crate root.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod cpulist;
pub mod cpuset;
mod ctype;
mod kernel;
mod messages;
mod params;
mod parse;
pub mod suggest;
mod tick_config;

pub use cpulist::{
    ALL_SINCE, CpulistErrno, CpulistError, CpulistGrammar, GROUPS_SINCE, LAST_CPU_N_SINCE,
    UNKNOWN_CPU_LIMIT, parse_cpulist, parse_cpulist_as, parse_sysfs_cpulist,
};
pub use cpuset::CpuSet;
pub use kernel::{Kernel, ResolvedKernel};
pub use messages::{BootMessage, MessageOrigin};
pub use params::{
    CpulistArg, HaltpollArgs, HaltpollParams, HousekeepingArg, IdleOverride, IsolcpusArg,
    IsolcpusFlag, KernelCmdline, RcuNocbsArg, RepeatedParam,
};
pub use parse::{CmdlineError, MAX_CMDLINE_BYTES, MAX_CMDLINE_TOKENS, release_version};
pub use tick_config::{CpuRole, KernelBuild, NOHZ_UNSUPPORTED, NohzBuild, TickConfig};
