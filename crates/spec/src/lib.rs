//! ticklab's shared language.
//!
//! Everything the twin and the host lab must agree on lives here, so that a simulated run and
//! a measured one can be put side by side:
//!
//! * [`Scenario`](scenario::Scenario) = [`Machine`](machine::Machine) +
//!   [`Kernel`](scenario::Kernel) + [`Workload`](workload::Workload) + [`Run`](scenario::Run):
//!   what to run, on what, for how long.
//! * [`KernelCmdline`](cmdline::KernelCmdline) parses a boot line in the kernel's own syntax,
//!   and [`TickConfig`](cmdline::TickConfig) is what it means for the tick (housekeeping,
//!   nohz_full, skew, idle mode), with the boot messages the kernel would print.
//! * [`Report`](report::Report) is the versioned result schema both halves write.
//!
//! Read [`cpuset`] and [`cmdline`] first: every other module speaks in their terms.

#![deny(missing_docs)]

pub mod cmdline;
pub mod cpuset;
pub mod machine;
pub mod report;
pub mod scenario;
pub mod units;
pub mod workload;

pub use cmdline::{CmdlineError, KernelBuild, KernelCmdline, NohzBuild, TickConfig};
pub use cpuset::{CpuSet, parse_cpulist};
