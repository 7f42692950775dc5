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
use ticklab_schema::machine::{Machine, arm64_128_4n, epyc_7252_2s, kvm_guest, xeon_e5_2650v3_2s};
use ticklab_schema::report::{Report, SyscallBreakdown, WorkloadResult};
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::{TaskGroup, Workload};

pub use ticklab_schema::experiment::e4::{
    CALLS, Case, HZ, HostPrediction, PINNED_CPU, POINTS, Point, PredictedLoop, Results, Row,
    Server, points,
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
        kernel: Kernel::new(
            p.kernel,
            HZ,
            if p.case.full_built_in() {
                NohzBuild::Full
            } else {
                NohzBuild::Idle
            },
            p.case.cmdline(p.server),
        ),
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
        let (ns, b) =
            syscall_result(&r).ok_or_else(|| SimError::NoSyscallResult { run: name(*p) })?;
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

/// What the twin of a host predicts for the getpid loop `host run` measured there
/// (`measured_ns_per_call` over `calls` calls, on `measured_cpu` or unpinned): the host is
/// modelled as the KVM guest preset with its CPU count, kernel `version` and `hz` (as
/// `host calibrate` does), with the measured ns per call as the syscall's entry/exit cost.
/// The twin then adds what it knows: interrupts and woken tasks on a housekeeping CPU as the
/// host is booted, and context tracking on a nohz_full CPU (the last CPU, booted with
/// `nohz_full=<it>`).
pub fn predict_host(
    nr_cpus: u32,
    version: &str,
    hz: u32,
    measured_ns_per_call: f64,
    measured_cpu: Option<u32>,
    calls: u64,
) -> Result<HostPrediction, SimError> {
    let mut machine = kvm_guest(nr_cpus.max(1));
    let entry_exit_ns = measured_ns_per_call.round().max(1.0) as u64;
    machine.costs.syscall_ns = entry_exit_ns;
    let calls = calls.max(1);
    // Long enough for every call at three times the measured cost, at least a second.
    let window = calls
        .saturating_mul(3 * entry_exit_ns + 1_000)
        .max(1_000_000_000);
    let one = |cmdline: String, cpu: Option<u32>| -> Result<PredictedLoop, SimError> {
        let s = Scenario {
            name: format!("twin of this host, getpid × {calls}"),
            machine: machine.clone(),
            kernel: Kernel::new(version, hz, NohzBuild::Full, cmdline.clone()),
            workload: Workload {
                groups: vec![TaskGroup::Syscall { cpu, calls }],
            },
            background: default_background(),
            run: Run {
                duration_ns: window,
                warmup_ns: WARMUP_NS,
                seed: 1,
            },
        };
        let r = simulate(&s, |_| {})?;
        let (ns_per_call, breakdown) =
            syscall_result(&r).ok_or_else(|| SimError::NoSyscallResult {
                run: "twin of this host".into(),
            })?;
        Ok(PredictedLoop {
            cmdline,
            ns_per_call,
            breakdown,
        })
    };
    let housekeeping = one(String::new(), measured_cpu)?;
    let nohz_full = if nr_cpus >= 2 {
        let c = nr_cpus - 1;
        Some(one(format!("nohz_full={c}"), Some(c))?)
    } else {
        None
    };
    Ok(HostPrediction {
        machine: machine.name.clone(),
        kernel: version.into(),
        hz,
        entry_exit_ns,
        housekeeping,
        nohz_full,
        nohz_full_not_possible: None,
    })
}
