//! Pure parsers for the kernel's text interfaces, tested against captured fixtures.
//!
//! Every parser takes the file's text (`&str`) and returns typed data; nothing here touches
//! the live system except [`cpuidle::read_cpuidle`], which reads a directory tree given as a
//! root path so that tests can point it at a fixture copy.
//!
//! * [`timer_list`] — `/proc/timer_list` v0.8–v0.10, keyed by field name; the tick's hrtimer
//!   is recognised across versions by [`timer_list::is_tick_timer_callback`].
//! * [`interrupts`] — `/proc/interrupts` (x86 and arm64), with architecture-neutral
//!   [`interrupts::IrqKind`] lookups.
//! * [`stat`] — `/proc/stat`.
//! * [`kconfig`] — the kernel build configuration (`CONFIG_HZ`, `CONFIG_NO_HZ_*`).
//! * [`cpuidle`] — the cpuidle sysfs tree.
//! * [`cgroup`] — `/proc/self/cgroup` and the cgroup mounts of `/proc/self/mountinfo` (where
//!   the process's cpuset is).
//! * [`schedstat`] — `/proc/schedstat`'s per-CPU trips to idle.
//! * [`task`] — one task's `/proc/PID/stat`, `status` and `sched`.
//! * [`trace`] — the text of a tracefs `trace` file (timer, irq_vectors, power and sched
//!   events).
//!
//! `/proc/cmdline` is parsed by the workspace's own kernel command-line parser,
//! `ticklab_schema::cmdline`.

pub mod cgroup;
pub mod cpuidle;
pub mod interrupts;
pub mod kconfig;
pub mod schedstat;
pub mod stat;
pub mod task;
pub mod timer_list;
pub mod trace;

pub use cpuidle::{Cpuidle, read_cpuidle};
pub use interrupts::{Interrupts, IrqKind, parse_interrupts};
pub use kconfig::{Kconfig, parse_kconfig};
pub use stat::{ProcStat, parse_stat};
pub use timer_list::{TimerList, is_tick_timer_callback, parse_timer_list};
pub use trace::{TraceText, parse_trace};
