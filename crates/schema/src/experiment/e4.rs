//! E4: what NO_HZ_FULL costs a system call (a distribution kernel's evaluation, 2023;
//! docs/experiments.md E4). A getpid loop of 100 000 000 calls on three servers, in four
//! kernel configurations, unpinned and pinned; the published outcome is not given, so every
//! figure here is a prediction of the twin's mechanisms.
//!
//! This module holds what the experiment is — its [`Server`]s, its [`Case`]s, the [`POINTS`]
//! they are run at — and what a run yields: one [`Row`] per point with the per-call breakdown
//! the twin measured, gathered in [`Results`]. The twin builds the scenarios
//! (`ticklab_twin::experiments::e4`); `ticklab-report` renders them.

use crate::report::SyscallBreakdown;
use serde::{Deserialize, Serialize};

/// Calls of the published test program.
pub const CALLS: u64 = 100_000_000;

/// CONFIG_HZ of the modelled distribution kernels: not stated by the evaluation; 250 is the
/// Kconfig default and what general-purpose distribution kernels of 2023 used (E).
pub const HZ: u32 = 250;

/// The CPU the pinned runs of cases 1 to 3 use (a nohz_full CPU in case 3).
pub const PINNED_CPU: u32 = 4;

/// The three machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Server {
    /// 2 × Xeon E5-2650 v3, 40 CPUs.
    Intel,
    /// 128-CPU arm64, 4 NUMA nodes.
    Arm64,
    /// 2 × EPYC 7252, 32 CPUs.
    Amd,
}

impl Server {
    /// All three, in table order.
    pub const ALL: [Server; 3] = [Server::Intel, Server::Arm64, Server::Amd];

    /// The machine preset (`crate::machine::preset`).
    pub fn preset(self) -> &'static str {
        match self {
            Server::Intel => "xeon-e5-2650v3-2s",
            Server::Arm64 => "arm64-128-4n",
            Server::Amd => "epyc-7252-2s",
        }
    }

    /// Table / JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Server::Intel => "intel",
            Server::Arm64 => "arm64",
            Server::Amd => "amd",
        }
    }

    /// The isolated / nohz_full / rcu_nocbs list of case 3.
    pub fn isolated_list(self) -> &'static str {
        match self {
            Server::Intel => "2-19,22-39",
            Server::Arm64 => "2-63,66-127",
            Server::Amd => "2-15,18-31",
        }
    }

    /// The housekeeping CPU case 4 pins to.
    pub fn housekeeping_cpu(self) -> u32 {
        match self {
            Server::Intel => 20,
            Server::Arm64 => 64,
            Server::Amd => 16,
        }
    }
}

/// The four kernel configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    /// (1) A kernel without NO_HZ_FULL (NO_HZ_IDLE).
    NohzIdle,
    /// (2) NO_HZ_FULL built in, nothing on the command line.
    FullBuiltIn,
    /// (3) NO_HZ_FULL active: `isolcpus= nohz_full= rcu_nocbs=`.
    FullActive,
    /// (4) As (3), pinned to a housekeeping CPU.
    FullHousekeeping,
}

impl Case {
    /// All four, in table order.
    pub const ALL: [Case; 4] = [
        Case::NohzIdle,
        Case::FullBuiltIn,
        Case::FullActive,
        Case::FullHousekeeping,
    ];

    /// The case's number in docs/experiments.md E4.
    pub fn number(self) -> u32 {
        match self {
            Case::NohzIdle => 1,
            Case::FullBuiltIn => 2,
            Case::FullActive => 3,
            Case::FullHousekeeping => 4,
        }
    }

    /// NO_HZ_FULL is built in.
    pub fn full_built_in(self) -> bool {
        self != Case::NohzIdle
    }

    /// The kernel command line on `server`.
    pub fn cmdline(self, server: Server) -> String {
        match self {
            Case::NohzIdle | Case::FullBuiltIn => String::new(),
            Case::FullActive | Case::FullHousekeeping => {
                let l = server.isolated_list();
                format!("isolcpus={l} nohz_full={l} rcu_nocbs={l}")
            }
        }
    }

    /// Where the pinned run of this case runs on `server`.
    pub fn pinned_cpu(self, server: Server) -> u32 {
        match self {
            Case::FullHousekeeping => server.housekeeping_cpu(),
            _ => PINNED_CPU,
        }
    }

    /// Whether the case has an unpinned run (case 4 is pinned only).
    pub fn has_unpinned(self) -> bool {
        self != Case::FullHousekeeping
    }
}

/// One point: a server on a kernel version in one case, pinned or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The machine.
    pub server: Server,
    /// `major.minor`.
    pub kernel: &'static str,
    /// The configuration.
    pub case: Case,
    /// Pinned to [`Case::pinned_cpu`].
    pub pinned: bool,
}

/// Every point: each server on 5.15 in every case (unpinned where the case has it, and
/// pinned), and the AMD server on 6.2 in cases 1 and 2.
pub fn points() -> Vec<Point> {
    let mut out = Vec::new();
    let mut add = |server: Server, kernel: &'static str, case: Case| {
        for pinned in [false, true] {
            if pinned || case.has_unpinned() {
                out.push(Point {
                    server,
                    kernel,
                    case,
                    pinned,
                });
            }
        }
    };
    for server in Server::ALL {
        for case in Case::ALL {
            add(server, "5.15", case);
        }
    }
    for case in [Case::NohzIdle, Case::FullBuiltIn] {
        add(Server::Amd, "6.2", case);
    }
    out
}

/// Number of points ([`points`]).
pub const POINTS: usize = 3 * 7 + 4;

/// One row of the E4 table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `intel`, `arm64` or `amd`.
    pub machine: Server,
    /// Kernel version.
    pub kernel: String,
    /// Case number, 1 to 4.
    pub case: u32,
    /// The CPU the loop was pinned to, or `None` (unpinned).
    pub pinned: Option<u32>,
    /// Average ns per call over the whole loop.
    pub ns_per_call: f64,
    /// Change against case 1 of the same machine, kernel and pinning (case 4 against case 1
    /// pinned), in per cent.
    pub change_pct: f64,
    /// Where the time went, as the twin measured it.
    pub breakdown: SyscallBreakdown,
}

/// A whole E4 run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Seed of every point.
    pub seed: u64,
    /// Calls per point.
    pub calls: u64,
    /// CONFIG_HZ.
    pub hz: u32,
    /// One row per point, in [`points`] order.
    pub rows: Vec<Row>,
}

/// What the twin of a host predicts for the getpid loop `host run` measured there: on a
/// housekeeping CPU as the host is booted, and on a nohz_full CPU after a reboot with
/// `nohz_full=` (a prediction the user can check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPrediction {
    /// The machine preset the twin of the host is built from.
    pub machine: String,
    /// Kernel `major.minor` modelled (the host's).
    pub kernel: String,
    /// CONFIG_HZ modelled.
    pub hz: u32,
    /// The syscall's entry, body and exit, taken from the measurement (ns): the twin cannot
    /// know this host's mitigations, only what it adds to them.
    pub entry_exit_ns: u64,
    /// The loop on a housekeeping CPU, the host as booted.
    pub housekeeping: PredictedLoop,
    /// The loop on a nohz_full CPU (`None` on a one-CPU machine: the kernel keeps one
    /// housekeeping CPU; `None` too when [`HostPrediction::nohz_full_not_possible`] says why).
    pub nohz_full: Option<PredictedLoop>,
    /// The kernel option the host kernel lacks for a nohz_full CPU (`CONFIG_NO_HZ_FULL`):
    /// then no nohz_full number is predicted, since no boot line gives this kernel one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nohz_full_not_possible: Option<String>,
}

/// One predicted loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedLoop {
    /// The kernel command line modelled.
    pub cmdline: String,
    /// Average ns per call.
    pub ns_per_call: f64,
    /// Where the time went (its `ran_on` is the CPU).
    pub breakdown: SyscallBreakdown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_cover_the_published_cases() {
        let p = points();
        assert_eq!(p.len(), POINTS);
        // Case 4 is pinned to the housekeeping CPU only.
        assert!(
            p.iter()
                .filter(|x| x.case == Case::FullHousekeeping)
                .all(|x| x.pinned)
        );
        assert_eq!(
            Case::FullActive.cmdline(Server::Amd),
            "isolcpus=2-15,18-31 nohz_full=2-15,18-31 rcu_nocbs=2-15,18-31"
        );
        assert_eq!(Case::FullHousekeeping.pinned_cpu(Server::Arm64), 64);
        assert_eq!(p.iter().filter(|x| x.kernel == "6.2").count(), 4);
    }
}
