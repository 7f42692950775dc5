//! Workload specifications shared by the twin and the host lab.
//!
//! A workload is a list of task groups, each written as a short spec string on the command
//! line (`--workload hogs:4@4-7`) or as a table in a scenario file. The same spec runs on
//! modelled CPUs in the twin and on pinned threads in the host lab.
//!
//! | spec | meaning |
//! |---|---|
//! | `idle` | nothing runs |
//! | `hogs:N` / `hogs:N@LIST` | N busy-looping tasks, default or explicit placement |
//! | `frames:FREQ@LIST:loop=UNITS[:name=G]` | a synchronized frame group: one worker per CPU |
//! | `pingpong:futex\|pipe@A,B[:n=ROUNDS]` | two tasks waking each other, on CPUs A and B |
//! | `syscall:getpid[@CPU][:n=CALLS]` | a raw getpid loop |
//! | `bsp:N@LIST:work=DUR[:iters=K][:barrier=spin\|futex]` | a bulk-synchronous job: N ranks compute `work`, then meet at a barrier |

use serde::{Deserialize, Serialize};
use ticklab_cmdline::{CpuSet, parse_cpulist};

/// One task group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskGroup {
    /// Busy-looping tasks.
    Hogs {
        /// How many.
        count: u32,
        /// Explicit CPUs (one hog per listed CPU, in order); `None` for the default placement.
        cpus: Option<CpuSet>,
    },
    /// A periodic frame scheduler group: every worker starts frame k at `k / frequency`.
    Frames {
        /// Group name used in tables.
        name: String,
        /// Frames per second.
        frequency_hz: f64,
        /// Work units per frame (cost of one unit comes from the machine).
        loop_units: u64,
        /// One worker per CPU.
        cpus: CpuSet,
    },
    /// Two tasks waking each other.
    PingPong {
        /// How they wake each other.
        method: PingPongMethod,
        /// CPU of the first task.
        cpu_a: u32,
        /// CPU of the second task.
        cpu_b: u32,
        /// Round trips (each is two context switches).
        round_trips: u64,
    },
    /// A syscall loop.
    Syscall {
        /// CPU to pin to, or unpinned.
        cpu: Option<u32>,
        /// Number of calls.
        calls: u64,
    },
    /// A bulk-synchronous job (docs/noise.md): one rank per listed CPU; each iteration every
    /// rank computes `work_ns`, then waits at a barrier, and the iteration ends when the last
    /// rank arrives.
    Bsp {
        /// Ranks (one per CPU of `cpus`).
        ranks: u32,
        /// The ranks' CPUs, in rank order.
        cpus: CpuSet,
        /// Undisturbed compute of one rank in one iteration (ns).
        work_ns: u64,
        /// Iterations to run; `None` for as many as the window holds.
        iterations: Option<u64>,
        /// How a rank waits at the barrier.
        barrier: Barrier,
    },
}

/// How the ranks of a [`TaskGroup::Bsp`] wait for each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Barrier {
    /// Busy-wait on a shared counter (the CPU stays busy in user mode).
    Spin,
    /// Sleep in FUTEX_WAIT; the last rank wakes the others with FUTEX_WAKE.
    Futex,
}

impl Barrier {
    /// The spelling in a spec (`spin`, `futex`).
    pub fn name(self) -> &'static str {
        match self {
            Barrier::Spin => "spin",
            Barrier::Futex => "futex",
        }
    }
}

/// Wake-up mechanism of a ping-pong pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PingPongMethod {
    /// FUTEX_WAIT / FUTEX_WAKE on a shared word.
    Futex,
    /// A pair of pipes, one byte each way (as `perf bench sched pipe`).
    Pipe,
}

impl PingPongMethod {
    /// The name a workload spec and a report use (`futex`, `pipe`), as serialised.
    pub fn name(self) -> &'static str {
        match self {
            PingPongMethod::Futex => "futex",
            PingPongMethod::Pipe => "pipe",
        }
    }
}

impl std::fmt::Display for PingPongMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A whole workload: zero or more groups (empty = idle).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Workload {
    /// The groups, in the order given.
    pub groups: Vec<TaskGroup>,
}

/// Why a workload spec did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("workload {spec:?}: {what}")]
pub struct WorkloadError {
    /// The spec string.
    pub spec: String,
    /// What was expected.
    pub what: String,
}

impl Workload {
    /// Parses one or more specs separated by `+` (`hogs:2+frames:1000@3:loop=1000`).
    pub fn parse(spec: &str, nr_cpus: u32) -> Result<Workload, WorkloadError> {
        Self::parse_with_interval(spec, nr_cpus, None)
    }

    /// [`Workload::parse`] with a frame period given apart, in µs (`host run --interval`, as
    /// cyclictest's `-i`): a frame group may then leave its rate out (`frames@1:loop=0` or
    /// `frames:@1:loop=0`) and runs at 10^6 / `interval_us` Hz; one that states a rate must
    /// state that one. The period is at least 10 µs (the 100 kHz the rate allows).
    pub fn parse_with_interval(
        spec: &str,
        nr_cpus: u32,
        interval_us: Option<u32>,
    ) -> Result<Workload, WorkloadError> {
        let frame_hz = match interval_us {
            Some(us) if us >= 10 => Some(1e6 / f64::from(us)),
            Some(us) => {
                return Err(WorkloadError {
                    spec: spec.to_string(),
                    what: format!("--interval {us}: a frame period of at least 10 us (100000 Hz)"),
                });
            }
            None => None,
        };
        let mut groups = Vec::new();
        for part in spec.split('+') {
            if let Some(g) = TaskGroup::parse_at(part.trim(), nr_cpus, groups.len(), frame_hz)? {
                groups.push(g);
            }
        }
        Ok(Workload { groups })
    }

    /// Whether nothing runs.
    pub fn is_idle(&self) -> bool {
        self.groups.is_empty()
    }

    /// Short label, e.g. `idle` or `hogs:2`.
    pub fn label(&self) -> String {
        if self.groups.is_empty() {
            return "idle".into();
        }
        self.groups
            .iter()
            .map(TaskGroup::label)
            .collect::<Vec<_>>()
            .join("+")
    }
}

impl TaskGroup {
    /// Parses one spec; `idle` gives `None`. `index` names unnamed frame groups (A, B, ...).
    pub fn parse(
        spec: &str,
        nr_cpus: u32,
        index: usize,
    ) -> Result<Option<TaskGroup>, WorkloadError> {
        Self::parse_at(spec, nr_cpus, index, None)
    }

    /// [`TaskGroup::parse`] with the frame rate `frame_hz` of `--interval`
    /// ([`Workload::parse_with_interval`]).
    // Over 100 lines because it is the grammar of a task group, one arm per kind (hogs, frames, pingpong,
    // syscall, bsp) with its options; split, the spec's grammar would no longer read in one place.
    fn parse_at(
        spec: &str,
        nr_cpus: u32,
        index: usize,
        frame_hz: Option<f64>,
    ) -> Result<Option<TaskGroup>, WorkloadError> {
        let err = |what: String| WorkloadError {
            spec: spec.to_string(),
            what,
        };
        // `frames@LIST:...` (the rate left out for --interval) reads as `frames:@LIST:...`.
        let (kind, rest) = match spec.strip_prefix("frames@") {
            Some(_) => ("frames", &spec["frames".len()..]),
            None => spec.split_once(':').unwrap_or((spec, "")),
        };
        let mut fields = rest.split(':');
        let head = fields.next().unwrap_or("");
        let mut opts: Vec<(&str, &str)> = Vec::new();
        for f in fields {
            let (k, v) = f
                .split_once('=')
                .ok_or_else(|| err(format!("an option `key=value` after `:`, found {f:?}")))?;
            opts.push((k, v));
        }
        let (what, at) = match head.split_once('@') {
            Some((w, a)) => (w, Some(a)),
            None => (head, None),
        };
        let cpus = |list: &str| parse_cpulist(list, nr_cpus).map_err(|e| err(e.to_string()));
        let one_cpu = |s: &str| -> Result<u32, WorkloadError> {
            let c: u32 = s
                .parse()
                .map_err(|_| err(format!("a CPU number, found {s:?}")))?;
            if c >= nr_cpus {
                return Err(err(format!("a CPU below {nr_cpus}, found {c}")));
            }
            Ok(c)
        };
        let take = |opts: &mut Vec<(&str, &str)>, key: &str| -> Option<String> {
            let i = opts.iter().position(|(k, _)| *k == key)?;
            Some(opts.remove(i).1.to_string())
        };
        let number = |s: &str, what: &str| -> Result<u64, WorkloadError> {
            s.replace('_', "")
                .parse::<u64>()
                .map_err(|_| err(format!("{what} as a whole number, found {s:?}")))
        };
        let group = match kind {
            "idle" if rest.is_empty() => return Ok(None),
            "hogs" => {
                // Checked, never truncated: `hogs:4294967297` is not `hogs:1`.
                let count = u32::try_from(number(what, "the hog count")?).map_err(|_| {
                    err(format!(
                        "the hog count: at most {nr_cpus} hogs on {nr_cpus} CPUs, found {what}"
                    ))
                })?;
                let cpus = at.map(cpus).transpose()?;
                if let Some(c) = &cpus {
                    if c.len() != count as usize {
                        return Err(err(format!(
                            "{count} CPUs after `@` (one per hog), found {} ({c})",
                            c.len()
                        )));
                    }
                } else if count > nr_cpus {
                    return Err(err(format!(
                        "at most {nr_cpus} hogs on {nr_cpus} CPUs, found {count}"
                    )));
                }
                TaskGroup::Hogs { count, cpus }
            }
            "frames" => {
                let frequency_hz: f64 = match (what, frame_hz) {
                    ("", Some(hz)) => hz,
                    (_, given) => {
                        let f: f64 = what.parse().map_err(|_| {
                            err(format!(
                                "a frame rate in Hz (or, on host run, --interval US), found {what:?}"
                            ))
                        })?;
                        if let Some(hz) = given
                            && (f - hz).abs() > 1e-9 * hz
                        {
                            return Err(err(format!(
                                "a frame rate of {f} Hz, but --interval asks for {hz} Hz: give one of them"
                            )));
                        }
                        f
                    }
                };
                if !(frequency_hz > 0.0 && frequency_hz <= 100_000.0) {
                    return Err(err(format!(
                        "a frame rate in (0, 100000] Hz, found {frequency_hz}"
                    )));
                }
                let cpus = cpus(at.ok_or_else(|| err("`@CPULIST` after the frame rate".into()))?)?;
                if cpus.is_empty() {
                    return Err(err("at least one CPU for the frame workers".into()));
                }
                let loop_units = number(
                    &take(&mut opts, "loop").ok_or_else(|| err("`:loop=UNITS`".into()))?,
                    "loop",
                )?;
                let name = take(&mut opts, "name")
                    .unwrap_or_else(|| ((b'A' + (index % 26) as u8) as char).to_string());
                TaskGroup::Frames {
                    name,
                    frequency_hz,
                    loop_units,
                    cpus,
                }
            }
            "pingpong" => {
                let method = match what {
                    "futex" => PingPongMethod::Futex,
                    "pipe" => PingPongMethod::Pipe,
                    _ => return Err(err(format!("`futex` or `pipe`, found {what:?}"))),
                };
                let at = at.ok_or_else(|| err("`@A,B` with the two CPUs".into()))?;
                let (a, b) = at
                    .split_once(',')
                    .ok_or_else(|| err(format!("two CPUs `A,B`, found {at:?}")))?;
                let round_trips = match take(&mut opts, "n") {
                    Some(n) => number(&n, "n")?,
                    None => 100_000,
                };
                TaskGroup::PingPong {
                    method,
                    cpu_a: one_cpu(a)?,
                    cpu_b: one_cpu(b)?,
                    round_trips,
                }
            }
            "syscall" => {
                if what != "getpid" {
                    return Err(err(format!("`getpid`, found {what:?}")));
                }
                let cpu = at.map(one_cpu).transpose()?;
                let calls = match take(&mut opts, "n") {
                    Some(n) => number(&n, "n")?,
                    None => 10_000_000,
                };
                TaskGroup::Syscall { cpu, calls }
            }
            "bsp" => {
                let ranks = u32::try_from(number(what, "the rank count")?).map_err(|_| {
                    err(format!(
                        "the rank count: at most {nr_cpus} ranks on {nr_cpus} CPUs, found {what}"
                    ))
                })?;
                if ranks == 0 {
                    return Err(err("at least one rank".into()));
                }
                let cpus = cpus(at.ok_or_else(|| err("`@CPULIST` with one CPU per rank".into()))?)?;
                if cpus.len() != ranks as usize {
                    return Err(err(format!(
                        "{ranks} CPUs after `@` (one per rank), found {} ({cpus})",
                        cpus.len()
                    )));
                }
                let work = take(&mut opts, "work").ok_or_else(|| err("`:work=DURATION`".into()))?;
                let work_ns =
                    crate::units::parse_duration(&work).map_err(|e| err(format!("work: {e}")))?;
                if !(MIN_BSP_WORK_NS..=MAX_BSP_WORK_NS).contains(&work_ns) {
                    return Err(err(format!("work between 1us and 10s, found {work:?}")));
                }
                let iterations = match take(&mut opts, "iters") {
                    Some(k) => {
                        let k = number(&k, "iters")?;
                        if k == 0 {
                            return Err(err("iters at least 1".into()));
                        }
                        Some(k)
                    }
                    None => None,
                };
                let barrier = match take(&mut opts, "barrier").as_deref() {
                    None | Some("spin") => Barrier::Spin,
                    Some("futex") => Barrier::Futex,
                    Some(b) => return Err(err(format!("barrier `spin` or `futex`, found {b:?}"))),
                };
                TaskGroup::Bsp {
                    ranks,
                    cpus,
                    work_ns,
                    iterations,
                    barrier,
                }
            }
            _ => {
                return Err(err(format!(
                    "one of idle, hogs:N[@LIST], frames:HZ@LIST:loop=N, pingpong:futex|pipe@A,B, syscall:getpid[@CPU], bsp:N@LIST:work=DUR; found {kind:?}"
                )));
            }
        };
        if let Some((k, _)) = opts.first() {
            return Err(err(format!("no option {k:?} for {kind}")));
        }
        Ok(Some(group))
    }

    /// Short label for tables.
    pub fn label(&self) -> String {
        match self {
            TaskGroup::Hogs { count, cpus: None } => format!("hogs:{count}"),
            TaskGroup::Hogs {
                count,
                cpus: Some(c),
            } => format!("hogs:{count}@{c}"),
            TaskGroup::Frames {
                name,
                frequency_hz,
                loop_units,
                cpus,
            } => {
                format!("frames:{frequency_hz}@{cpus}:loop={loop_units}:name={name}")
            }
            TaskGroup::PingPong {
                method,
                cpu_a,
                cpu_b,
                ..
            } => {
                format!("pingpong:{method}@{cpu_a},{cpu_b}")
            }
            TaskGroup::Syscall { cpu: Some(c), .. } => format!("syscall:getpid@{c}"),
            TaskGroup::Syscall { cpu: None, .. } => "syscall:getpid".into(),
            TaskGroup::Bsp {
                ranks,
                cpus,
                work_ns,
                iterations,
                barrier,
            } => {
                let mut l = format!(
                    "bsp:{ranks}@{cpus}:work={}",
                    crate::units::format_duration(*work_ns)
                );
                if let Some(k) = iterations {
                    l.push_str(&format!(":iters={k}"));
                }
                l.push_str(&format!(":barrier={}", barrier.name()));
                l
            }
        }
    }
}

/// Shortest compute part of a [`TaskGroup::Bsp`] iteration (1 µs).
pub const MIN_BSP_WORK_NS: u64 = 1_000;
/// Longest compute part of a [`TaskGroup::Bsp`] iteration (10 s).
pub const MAX_BSP_WORK_NS: u64 = 10_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_table() {
        let ok: &[(&str, &str)] = &[
            ("idle", "idle"),
            ("hogs:4", "hogs:4"),
            ("hogs:4@4-7", "hogs:4@4-7"),
            (
                "frames:960@4-23:loop=50000",
                "frames:960@4-23:loop=50000:name=A",
            ),
            (
                "frames:300@1:loop=1_000:name=C",
                "frames:300@1:loop=1000:name=C",
            ),
            ("pingpong:pipe@0,1", "pingpong:pipe@0,1"),
            ("syscall:getpid@3:n=5", "syscall:getpid@3"),
            ("hogs:1+hogs:1@3", "hogs:1+hogs:1@3"),
            ("bsp:4@0-3:work=1ms", "bsp:4@0-3:work=1ms:barrier=spin"),
            (
                "bsp:2@5,7:work=250us:iters=1_000:barrier=futex",
                "bsp:2@5,7:work=250us:iters=1000:barrier=futex",
            ),
        ];
        for (spec, label) in ok {
            let w = Workload::parse(spec, 64).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(w.label(), *label);
        }
        let bad = [
            "hogs",
            "hogs:x",
            "hogs:2@1",
            "hogs:65",
            "frames:0@1:loop=1",
            "frames:200000@1:loop=1",
            "frames:1000@1",
            "frames:1000@64:loop=1",
            "pingpong:tcp@0,1",
            "pingpong:pipe@0",
            "syscall:getppid",
            "syscall:getpid@99",
            "hogs:1:bogus=1",
            "hgos:1",
            // Counts that do not fit are refused, not truncated (issue 17).
            "hogs:4294967296",
            "hogs:4294967297",
            "hogs:18446744073709551616",
            // BSP: ranks and CPUs agree, work is a duration in range, options known.
            "bsp:4@0-2:work=1ms",
            "bsp:0@0:work=1ms",
            "bsp:2:work=1ms",
            "bsp:2@0,1",
            "bsp:2@0,1:work=1",
            "bsp:2@0,1:work=0ns",
            "bsp:2@0,1:work=11s",
            "bsp:2@0,1:work=1ms:iters=0",
            "bsp:2@0,1:work=1ms:barrier=mpi",
            "bsp:2@0,64:work=1ms",
            "bsp:2@0,1:work=1ms:bogus=1",
        ];
        for spec in bad {
            assert!(Workload::parse(spec, 64).is_err(), "{spec} should fail");
        }
    }

    #[test]
    fn an_interval_stands_for_the_frame_rate() {
        let rate = |spec: &str, us: Option<u32>| {
            Workload::parse_with_interval(spec, 4, us).map(|w| match &w.groups[..] {
                [TaskGroup::Frames { frequency_hz, .. }] => *frequency_hz,
                other => panic!("{other:?}"),
            })
        };
        // (spec, --interval, rate) ; None = refused
        let cases: &[(&str, Option<u32>, Option<f64>)] = &[
            ("frames:1000@1:loop=0", None, Some(1000.0)),
            ("frames:1000@1:loop=0", Some(1000), Some(1000.0)),
            ("frames@1:loop=0", Some(1000), Some(1000.0)),
            ("frames:@1:loop=0", Some(250), Some(4000.0)),
            ("frames@1:loop=0", Some(10), Some(100_000.0)),
            ("frames:1000@1:loop=0", Some(500), None),
            ("frames@1:loop=0", None, None),
            ("frames:@1:loop=0", None, None),
            ("frames@1:loop=0", Some(9), None),
            ("frames@1:loop=0", Some(0), None),
        ];
        for &(spec, us, want) in cases {
            assert_eq!(rate(spec, us).ok(), want, "{spec} {us:?}");
        }
        let e = rate("frames:1000@1:loop=0", Some(500)).unwrap_err();
        assert!(e.to_string().contains("--interval"), "{e}");
        // Other groups are untouched.
        let w = Workload::parse_with_interval("hogs:1@0+frames@1:loop=5", 4, Some(1000)).unwrap();
        assert_eq!(w.label(), "hogs:1@0+frames:1000@1:loop=5:name=B");
    }
}

/// Every kind of workload spec: (syntax, what it runs, an example that parses on an 8-CPU
/// machine), for `--help` and the docs.
pub const SPECS: &[(&str, &str, &str)] = &[
    ("idle", "nothing runs", "idle"),
    (
        "hogs:N[@LIST]",
        "N busy-looping tasks, placed by the scheduler or one per listed CPU",
        "hogs:2@1,3",
    ),
    (
        "frames:FREQ@LIST:loop=UNITS[:name=G]",
        "a frame-scheduler group, one worker per CPU, FREQ frames per second",
        "frames:1000@4-7:loop=50000",
    ),
    (
        "pingpong:futex|pipe@A,B[:n=ROUNDS]",
        "two tasks waking each other on CPUs A and B (twin: machine kvm-guest-2)",
        "pingpong:futex@0,1",
    ),
    (
        "syscall:getpid[@CPU][:n=CALLS]",
        "a getpid() loop, pinned or not",
        "syscall:getpid@3",
    ),
    (
        "bsp:N@LIST:work=DUR[:iters=K][:barrier=spin|futex]",
        "a bulk-synchronous job: N ranks, one per listed CPU, compute DUR then meet at a barrier",
        "bsp:4@4-7:work=1ms",
    ),
    (
        "SPEC+SPEC",
        "several groups at once",
        "hogs:1+frames:300@3:loop=1000",
    ),
];

#[cfg(test)]
mod spec_examples {
    #[test]
    fn every_example_parses() {
        for (syntax, _, example) in super::SPECS {
            assert!(
                super::Workload::parse(example, 8).is_ok(),
                "{syntax}: {example}"
            );
        }
    }
}
