//! The plan of a run, before any thread starts: how to run ([`RunConfig`]), whether this host
//! can run the workload at all ([`validate`]), and which CPU each hog goes to
//! (`hog_placement`).
//!
//! Everything here is decided from the workload, the configuration and the CPUs this process
//! may place threads on ([`CpuPlacement`]: online ∩ its cgroup's cpuset — not the affinity it
//! inherited, which `isolcpus=` and `taskset` shrink); nothing is measured. Errors are [`HarnessError::Input`]: the request, not the host,
//! is at fault.

use std::time::Duration;

use ticklab_schema::workload::{TaskGroup, Workload};

use super::error::HarnessError;
use super::hogs;
use super::pingpong::PingPongMode;
use super::placement::CpuPlacement;

/// Highest frame rate a frame group may ask for.
pub const MAX_FRAME_HZ: f64 = 100_000.0;

/// How to run a workload on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Window length for hogs and frames; a cap for counted groups.
    pub duration: Duration,
    /// Frames with jitter strictly above this are fliers, µs.
    pub flier_threshold_us: f64,
    /// SCHED_FIFO priority for frame workers; `None` to use timer slack 1 ns only.
    pub fifo_priority: Option<i32>,
    /// `mlockall` when a frame group runs (if permitted).
    pub lock_memory: bool,
    /// Ping-pong side B as a process or a thread.
    pub pingpong_mode: PingPongMode,
    /// Keep `cyclictest -h` histograms of this many 1 µs buckets per frame worker
    /// (`--histogram`); `None`: no histograms.
    pub histogram_us: Option<u32>,
    /// Hold `/dev/cpu_dma_latency` at this many µs for the run (PM QoS, as cyclictest does);
    /// `None` leaves the idle states alone.
    pub cpu_dma_latency_us: Option<u32>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            duration: Duration::from_secs(10),
            flier_threshold_us: 10.0,
            fifo_priority: Some(50),
            lock_memory: true,
            pingpong_mode: PingPongMode::Processes,
            histogram_us: None,
            cpu_dma_latency_us: None,
        }
    }
}

impl RunConfig {
    /// The window in nanoseconds. [`validate`] guarantees `1 ..= u64::MAX`, so a frame group
    /// always has at least one frame that starts inside it (frame 0 starts at t0).
    pub(crate) fn duration_ns(&self) -> u64 {
        u64::try_from(self.duration.as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Checks a workload against this host before anything starts: every CPU placeable
/// ([`CpuPlacement::live`]), a window of at least 1 ns (and at most `u64::MAX` ns), frame rates
/// in (0, 100 kHz], counts above zero. Returns the placeable CPUs; errors are
/// [`HarnessError::Input`].
pub fn validate(workload: &Workload, config: &RunConfig) -> Result<Vec<u32>, HarnessError> {
    validate_with(workload, config, &CpuPlacement::live())
}

/// [`validate`] against a given placement (tests pass a made-up host).
// Over 100 lines because it is a list of independent checks in the order a user would fix them
// (window, thresholds, then each group's CPUs), each a few lines naming its input.
pub(crate) fn validate_with(
    workload: &Workload,
    config: &RunConfig,
    placement: &CpuPlacement,
) -> Result<Vec<u32>, HarnessError> {
    let input = |m: String| Err(HarnessError::Input(m));
    let usable = placement.placeable();
    let check = |cpu: u32, group: &TaskGroup| {
        placement
            .check(cpu)
            .map_err(|e| HarnessError::Input(format!("workload {}: {e}", group.label())))
    };
    // A zero window holds no frame (FrameClock::frames_in(0) == 0) and no measurement.
    if config.duration.is_zero() {
        return input("duration: must be longer than zero".into());
    }
    if config.duration.as_nanos() > u128::from(u64::MAX) {
        return input(format!(
            "duration: {:.0} s is longer than this harness can count in nanoseconds",
            config.duration.as_secs_f64()
        ));
    }
    if !(config.flier_threshold_us >= 0.0 && config.flier_threshold_us.is_finite()) {
        return input(format!(
            "flier threshold: expected a non-negative number of µs, found {}",
            config.flier_threshold_us
        ));
    }
    if let Some(p) = config.fifo_priority
        && !(1..=99).contains(&p)
    {
        return input(format!("SCHED_FIFO priority: expected 1–99, found {p}"));
    }
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { count, cpus } => {
                if *count == 0 {
                    return input(format!("workload {}: zero hogs", g.label()));
                }
                if let Some(c) = cpus {
                    for cpu in c.iter() {
                        check(cpu, g)?;
                    }
                }
            }
            TaskGroup::Frames {
                frequency_hz, cpus, ..
            } => {
                if !(*frequency_hz > 0.0 && *frequency_hz <= MAX_FRAME_HZ) {
                    return input(format!(
                        "workload {}: frame rate {frequency_hz} Hz is outside (0, {MAX_FRAME_HZ}] Hz",
                        g.label()
                    ));
                }
                if cpus.is_empty() {
                    return input(format!(
                        "workload {}: no CPUs for the frame workers",
                        g.label()
                    ));
                }
                for cpu in cpus.iter() {
                    check(cpu, g)?;
                }
            }
            TaskGroup::PingPong {
                cpu_a,
                cpu_b,
                round_trips,
                ..
            } => {
                if *round_trips == 0 {
                    return input(format!("workload {}: zero round trips (n=0)", g.label()));
                }
                check(*cpu_a, g)?;
                check(*cpu_b, g)?;
            }
            TaskGroup::Syscall { cpu, calls } => {
                if *calls == 0 {
                    return input(format!("workload {}: zero calls (n=0)", g.label()));
                }
                if let Some(c) = cpu {
                    check(*c, g)?;
                }
            }
            TaskGroup::Bsp { ranks, cpus, .. } => {
                // The spec parser keeps ranks == CPUs listed; checked again since a rank
                // without its CPU would never arrive.
                if *ranks == 0 || *ranks as usize != cpus.len() {
                    return input(format!(
                        "workload {}: expected one listed CPU per rank, found {ranks} ranks on {} CPUs",
                        g.label(),
                        cpus.len()
                    ));
                }
                for cpu in cpus.iter() {
                    check(cpu, g)?;
                }
            }
        }
    }
    Ok(usable.iter().collect())
}

/// A group that runs to a count (ping-pong, syscall loop, a bsp job with `iters=`) rather
/// than for the window.
pub(crate) fn is_counted(g: &TaskGroup) -> bool {
    matches!(
        g,
        TaskGroup::PingPong { .. }
            | TaskGroup::Syscall { .. }
            | TaskGroup::Bsp {
                iterations: Some(_),
                ..
            }
    )
}

/// The CPUs of each group's hogs, in workload order (empty for groups that are not hogs).
///
/// An explicit list is taken as given. A default placement avoids every CPU that any group
/// placed a thread on explicitly, and the default placements of earlier groups, as long as
/// `usable` has such CPUs ([`hogs::default_placement`]).
pub(crate) fn hog_placement(workload: &Workload, usable: &[u32]) -> Vec<Vec<u32>> {
    // Explicit placements first, so default hogs can avoid them.
    let mut taken: Vec<u32> = Vec::new();
    for g in &workload.groups {
        match g {
            TaskGroup::Hogs { cpus: Some(c), .. } | TaskGroup::Frames { cpus: c, .. } => {
                taken.extend(c.iter())
            }
            TaskGroup::PingPong { cpu_a, cpu_b, .. } => taken.extend([*cpu_a, *cpu_b]),
            TaskGroup::Syscall { cpu: Some(c), .. } => taken.push(*c),
            TaskGroup::Bsp { cpus, .. } => taken.extend(cpus.iter()),
            _ => {}
        }
    }
    // Default placements also avoid each other, group by group.
    let mut hog_cpus: Vec<Vec<u32>> = Vec::new();
    for g in &workload.groups {
        let placed: Vec<u32> = match g {
            TaskGroup::Hogs { cpus: Some(c), .. } => c.iter().collect(),
            TaskGroup::Hogs { count, cpus: None } => {
                let p = hogs::default_placement(*count, usable, &taken);
                taken.extend(&p);
                p
            }
            _ => Vec::new(),
        };
        hog_cpus.push(placed);
    }
    debug_assert_eq!(hog_cpus.len(), workload.groups.len());
    hog_cpus
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_isolated_cpu_outside_the_inherited_affinity_validates_and_a_cgroup_refusal_names_it() {
        use super::super::placement::CpusetLimit;
        let set = |c: &[u32]| c.iter().copied().collect::<ticklab_cmdline::CpuSet>();
        let mut p = CpuPlacement {
            online: set(&[0, 1]),
            cpuset: CpusetLimit::Cgroup {
                cgroup: "/ticklab-test".into(),
                file: "/sys/fs/cgroup/cpuset.cpus.effective".into(),
                cpus: set(&[0, 1]),
            },
            inherited: Some(set(&[0])),
            isolated: set(&[1]),
        };
        let cfg = RunConfig::default();
        for spec in [
            "hogs:1@1",
            "frames:100@1:loop=0",
            "pingpong:pipe@0,1",
            "syscall:getpid@1",
        ] {
            let w = Workload::parse(spec, 2).unwrap();
            assert_eq!(validate_with(&w, &cfg, &p).unwrap(), vec![0, 1], "{spec}");
        }
        p.cpuset = CpusetLimit::Cgroup {
            cgroup: "/ticklab-test".into(),
            file: "/sys/fs/cgroup/ticklab-test/cpuset.cpus.effective".into(),
            cpus: set(&[0]),
        };
        let w = Workload::parse("hogs:1@1", 2).unwrap();
        let e = validate_with(&w, &cfg, &p).unwrap_err();
        assert!(e.is_input());
        assert_eq!(
            e.to_string(),
            "workload hogs:1@1: CPU 1 is outside the cpuset of this process's cgroup /ticklab-test \
             (/sys/fs/cgroup/ticklab-test/cpuset.cpus.effective: 0): sched_setaffinity cannot move \
             a thread there; run ticklab from a cgroup whose cpuset includes CPU 1"
        );
    }

    #[test]
    fn bsp_ranks_must_be_placeable_and_default_hogs_avoid_them() {
        use super::super::placement::CpusetLimit;
        let set = |c: &[u32]| c.iter().copied().collect::<ticklab_cmdline::CpuSet>();
        let p = CpuPlacement {
            online: set(&[0, 1, 2, 3]),
            cpuset: CpusetLimit::Cgroup {
                cgroup: "/ticklab-test".into(),
                file: "/sys/fs/cgroup/ticklab-test/cpuset.cpus.effective".into(),
                cpus: set(&[0, 1, 2]),
            },
            inherited: None,
            isolated: set(&[]),
        };
        let cfg = RunConfig::default();
        // (spec, error text or None when it validates)
        let table: &[(&str, Option<&str>)] = &[
            ("bsp:2@0-1:work=100us", None),
            ("bsp:3@0-2:work=100us:barrier=futex", None),
            (
                "bsp:2@2-3:work=100us",
                Some("workload bsp:2@2-3:work=100us:barrier=spin: CPU 3"),
            ),
        ];
        for (spec, want) in table {
            let w = Workload::parse(spec, 4).unwrap();
            match (validate_with(&w, &cfg, &p), want) {
                (Ok(_), None) => {}
                (Err(e), Some(text)) => {
                    assert!(e.is_input(), "{spec}");
                    assert!(e.to_string().starts_with(text), "{spec}: {e}");
                }
                (got, _) => panic!("{spec}: {got:?}"),
            }
        }
        let w = Workload::parse("bsp:2@0-1:work=100us+hogs:1", 4).unwrap();
        assert_eq!(hog_placement(&w, &[0, 1, 2, 3]), vec![vec![], vec![2]]);
        let counted = |s: &str| is_counted(&Workload::parse(s, 4).unwrap().groups[0]);
        assert!(counted("bsp:1@0:work=1ms:iters=10"));
        assert!(!counted("bsp:1@0:work=1ms"));
    }

    #[test]
    fn default_hogs_avoid_explicit_threads_and_each_other() {
        let w = Workload::parse("hogs:1+frames:100@0:loop=0+hogs:1", 4).unwrap();
        assert_eq!(
            hog_placement(&w, &[0, 1, 2, 3]),
            vec![vec![1], vec![], vec![2]]
        );
    }
}
