//! E4: what NO_HZ_FULL costs a system call, on three servers in four kernel configurations
//! (docs/experiments.md E4). The published outcome is not given: nothing here is fitted to it.
//!
//! Each point is a full twin run: the machine boots with the case's kernel build and command
//! line, a getpid loop of [`CALLS`] calls runs (pinned, or placed by the scheduler, which
//! keeps it off `isolcpus=` CPUs), and the loop's own clock gives ns per call. What differs
//! between cases comes out of the mechanisms: context tracking on nohz_full CPUs
//! (`kernel::context_tracking`), the static-key test elsewhere, the ticks and other interrupts
//! that land in the loop (a busy housekeeping CPU ticks at HZ, a busy nohz_full CPU stops its
//! tick), and where the task runs.

use crate::sim::{SimError, simulate};
use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::{Machine, arm64_128_4n, epyc_7252_2s, xeon_e5_2650v3_2s};
use ticklab_schema::report::{Report, SyscallBreakdown, WorkloadResult};
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

pub use ticklab_schema::experiment::e4::{
    CALLS, Case, HZ, PINNED_CPU, POINTS, Point, Results, Row, Server, points,
};

/// Simulated warm-up before the report's window (the loop itself starts at boot and is timed
/// by its own clock).
pub const WARMUP_NS: u64 = 1_000_000_000;

/// The report window after the warm-up: long enough for [`CALLS`] calls at well over 500 ns
/// each on every preset (the slowest undisturbed call is under 500 ns).
pub const DURATION_NS: u64 = 59_000_000_000;

/// The machine of a server.
pub fn machine(server: Server) -> Machine {
    match server {
        Server::Intel => xeon_e5_2650v3_2s(),
        Server::Arm64 => arm64_128_4n(),
        Server::Amd => epyc_7252_2s(),
    }
}

/// The scenario of one point.
pub fn scenario(p: Point, seed: u64) -> Scenario {
    let cpu = p.pinned.then(|| p.case.pinned_cpu(p.server));
    Scenario {
        name: name(p),
        machine: machine(p.server),
        kernel: Kernel {
            version: p.kernel.into(),
            hz: HZ,
            nohz: if p.case.full_built_in() {
                NohzBuild::Full
            } else {
                NohzBuild::Idle
            },
            high_res: true,
            cmdline: p.case.cmdline(p.server),
            rcu_fanout_leaf: None,
            skew_tick_backport: false,
        },
        workload: Workload {
            groups: vec![TaskGroup::Syscall { cpu, calls: CALLS }],
        },
        background: default_background(),
        run: Run {
            duration_ns: DURATION_NS,
            warmup_ns: WARMUP_NS,
            seed,
        },
    }
}

/// `e4 <server> <kernel> case <n> <pinned CPU | unpinned>`.
pub fn name(p: Point) -> String {
    let pin = if p.pinned {
        format!("pinned {}", p.case.pinned_cpu(p.server))
    } else {
        "unpinned".into()
    };
    format!(
        "e4 {} {} case {} {pin}",
        p.server.name(),
        p.kernel,
        p.case.number()
    )
}

/// The point's scenario file in `experiments/`: `e4-<server>-<kernel>-case<n>-<pinned|unpinned>.toml`.
pub fn file_name(p: Point) -> String {
    format!(
        "e4-{}-{}-case{}-{}.toml",
        p.server.name(),
        p.kernel,
        p.case.number(),
        if p.pinned { "pinned" } else { "unpinned" }
    )
}

/// The loop's result in a point's report.
pub fn syscall_result(r: &Report) -> Option<(f64, SyscallBreakdown)> {
    r.workloads.iter().find_map(|w| match w {
        WorkloadResult::Syscall(s) => s.breakdown.clone().map(|b| (s.ns_per_call, b)),
        _ => None,
    })
}

/// Runs every point, in parallel across `threads` OS threads (each run single-threaded and
/// deterministic), and fills the table. `progress(done_points)` is called as points finish.
pub fn results(
    seed: u64,
    threads: usize,
    progress: impl Fn(usize) + Sync,
) -> Result<Results, SimError> {
    let pts = points();
    let runs = crate::sweep::parallel_map(
        &pts,
        threads,
        |&p| simulate(&scenario(p, seed), |_| {}),
        &progress,
    );
    let mut measured: Vec<(Point, f64, SyscallBreakdown)> = Vec::with_capacity(pts.len());
    for (p, r) in pts.iter().zip(runs) {
        let r = r?;
        let (ns, b) = syscall_result(&r).ok_or_else(|| {
            SimError::Config(format!("{}: the report has no syscall loop", name(*p)))
        })?;
        measured.push((*p, ns, b));
    }
    let baseline = |p: &Point| {
        measured
            .iter()
            .find(|(q, _, _)| {
                q.server == p.server
                    && q.kernel == p.kernel
                    && q.case == Case::NohzIdle
                    && q.pinned == p.pinned
            })
            .map(|(_, ns, _)| *ns)
    };
    let rows = measured
        .iter()
        .map(|(p, ns, b)| Row {
            machine: p.server,
            kernel: p.kernel.into(),
            case: p.case.number(),
            pinned: p.pinned.then(|| p.case.pinned_cpu(p.server)),
            ns_per_call: *ns,
            change_pct: baseline(p).map_or(0.0, |base| (ns / base - 1.0) * 100.0),
            breakdown: b.clone(),
        })
        .collect();
    Ok(Results {
        seed,
        calls: CALLS,
        hz: HZ,
        rows,
    })
}
