//! Scenarios: machine + kernel + workload + background + run, and the TOML file format.
//!
//! A scenario file names a machine preset (or spells a machine out), the kernel build and
//! command line, the workload spec and the run length:
//!
//! ```toml
//! name = "my laptop, two hogs"
//! machine = "xps13-7390"
//! workload = "hogs:2"
//!
//! [kernel]
//! version = "6.3"
//! hz = 1000
//! nohz = "full"
//! cmdline = "nohz_full=all"
//!
//! [run]
//! duration = "10s"
//! seed = 1
//! ```
//!
//! Unknown keys are errors (a typo must not silently fall back to a default).

use crate::machine::{self, Machine};
use crate::units::parse_duration;
use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use ticklab_cmdline::{CmdlineError, KernelBuild, NohzBuild, ResolvedKernel};

/// The kernel being modelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// Version `major.minor` or `major.minor.sublevel` (a stable release such as `6.1.192`);
    /// selects era switches (lock layout, governor-driven tick stop, and for stable series the
    /// fixes they took later, see [`Kernel::sublevel`]).
    pub version: String,
    /// CONFIG_HZ.
    pub hz: u32,
    /// Tick build option.
    pub nohz: NohzBuild,
    /// CONFIG_HIGH_RES_TIMERS.
    #[serde(default = "yes")]
    pub high_res: bool,
    /// The boot command line.
    #[serde(default)]
    pub cmdline: String,
    /// CPUs per leaf `rcu_node` (CONFIG_RCU_FANOUT_LEAF, or CONFIG_RCU_FANOUT before the leaf
    /// option existed); `None` = the default of 16.
    #[serde(default)]
    pub rcu_fanout_leaf: Option<u32>,
    /// The build carries the `skew_tick` patch before 3.4 (the -rt tree of 2012 had it
    /// before mainline did); with it, `skew_tick=` is honoured on older versions.
    #[serde(default)]
    pub skew_tick_backport: bool,
    /// The spinlock implementation, overriding the one the version implies
    /// ([`Spinlock::for_version`]): `"ticket"` or `"queued"`. `None` (the default, and older
    /// scenario files) takes the version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spinlock: Option<Spinlock>,
    /// A PM QoS CPU latency limit held for the whole run (µs), as a process holding
    /// `/dev/cpu_dma_latency` open sets it (cyclictest holds 0, `host run
    /// --cpu-dma-latency`): the cpuidle governor picks no state whose exit latency exceeds it.
    /// `None` (the default, and older scenario files): no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_dma_latency_us: Option<u32>,
    /// The build has `CONFIG_PREEMPT_RT`: a softirq a hard interrupt raises runs in the CPU's
    /// softirq thread, so on an idle CPU it is a task wake-up (docs/model.md "PREEMPT_RT").
    /// Absent in older scenario files, meaning false; written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preempt_rt: bool,
}

/// How the kernel's spinning locks hand over (docs/model.md "Spinlocks by era").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Spinlock {
    /// The x86 ticket lock (2.6.25 to 4.1): every waiter spins on the lock's own line, so a
    /// release is followed by all spinners' reads and the hand-off grows with their number.
    Ticket,
    /// The queued (MCS-style) spinlock x86 uses from 4.2: each waiter spins on its own node,
    /// so a hand-off is one line transfer whatever the number of waiters.
    Queued,
}

impl Spinlock {
    /// The implementation of an x86 kernel `version` (`(major, minor)`): ticket locks before
    /// 4.2, queued locks from 4.2 on.
    pub fn for_version(version: (u32, u32)) -> Spinlock {
        if version < (4, 2) {
            Spinlock::Ticket
        } else {
            Spinlock::Queued
        }
    }
}

fn yes() -> bool {
    true
}

impl Kernel {
    /// A kernel of `version` built with `hz` and `nohz`, booted with `cmdline`, and otherwise
    /// as a scenario file leaves it by default: high-resolution timers on, the default RCU
    /// fanout, no `skew_tick` backport.
    pub fn new(
        version: impl Into<String>,
        hz: u32,
        nohz: NohzBuild,
        cmdline: impl Into<String>,
    ) -> Kernel {
        Kernel {
            version: version.into(),
            hz,
            nohz,
            high_res: yes(),
            cmdline: cmdline.into(),
            rcu_fanout_leaf: None,
            skew_tick_backport: false,
            spinlock: None,
            cpu_dma_latency_us: None,
            preempt_rt: false,
        }
    }

    /// `(major, minor)` parsed from `version`, which must be what a kernel release string
    /// can be: `MAJOR.MINOR[.SUBLEVEL]` in plain digits (no sign, no leading zero; MAJOR 1 to
    /// 255 and MINOR at most 255, the byte each has in the kernel's version code), then
    /// optionally a local part starting with `-` or `+` (`6.1.0-9-amd64`, `6.18.44+`), in at
    /// most 64 printable ASCII characters (the kernel's release field).
    pub fn version_tuple(&self) -> Result<(u32, u32), VersionError> {
        let v = self.version.as_str();
        let err = |kind| VersionError {
            version: v.to_string(),
            kind,
        };
        if v.len() > 64 || !v.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(err(VersionErrorKind::NotPrintable));
        }
        let cut = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(v.len());
        let (numbers, local) = v.split_at(cut);
        if !(local.is_empty() || local.starts_with('-') || local.starts_with('+')) {
            return Err(err(VersionErrorKind::Local));
        }
        let parts: Vec<&str> = numbers.split('.').collect();
        let number_ok =
            |p: &&str| !p.is_empty() && p.len() <= 9 && !(p.len() > 1 && p.starts_with('0'));
        if !(2..=3).contains(&parts.len()) || !parts.iter().all(number_ok) {
            return Err(err(VersionErrorKind::NotNumbers));
        }
        let (major, minor): (u32, u32) = (
            parts[0].parse().map_err(|_| err(VersionErrorKind::Major))?,
            parts[1].parse().map_err(|_| err(VersionErrorKind::Minor))?,
        );
        if !(1..=255).contains(&major) || minor > 255 {
            return Err(err(VersionErrorKind::OutOfRange));
        }
        Ok((major, minor))
    }

    /// The stable sublevel of `version` (`192` in `6.1.192`), if it names one. Rules that a
    /// stable series took in a later release (docs/model.md) need it; without it the twin
    /// takes the series as first released.
    pub fn sublevel(&self) -> Option<u32> {
        self.version.split('.').nth(2).and_then(|s| {
            let digits = s.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
            digits.parse().ok()
        })
    }

    /// CPUs per leaf `rcu_node`: the configured value or the default 16 (C: RCU_FANOUT_LEAF
    /// default, docs/kernel-behaviour.md §2.5).
    pub fn rcu_leaf_fanout(&self) -> u32 {
        self.rcu_fanout_leaf.unwrap_or(16).max(1)
    }

    /// TICK_NSEC for this HZ: `(1e9 + HZ/2) / HZ`.
    pub fn tick_nsec(&self) -> u64 {
        tick_nsec(self.hz)
    }

    /// The build as the command line's meaning depends on it.
    pub fn build(&self) -> Result<KernelBuild, KernelError> {
        Ok(KernelBuild {
            nohz: self.nohz,
            high_res: self.high_res,
            version: self.version_tuple().map_err(KernelError::Version)?,
            skew_tick_backport: self.skew_tick_backport,
        })
    }

    /// This kernel's boot line on `nr_cpus` CPUs, read and resolved once
    /// ([`ticklab_cmdline::Kernel::resolve`]: the release's grammar, the build's rules).
    pub fn resolve(&self, nr_cpus: u32) -> Result<ResolvedKernel, KernelError> {
        let kernel = ticklab_cmdline::Kernel {
            build: self.build()?,
            nr_cpus,
        };
        Ok(kernel.resolve(&self.cmdline)?)
    }
}

/// Why a kernel version was refused ([`Kernel::version_tuple`]): the version as given, what
/// is wrong with it, and what a kernel release looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel version {version:?}: {kind}; expected a kernel release like 6.3, 6.1.192 or \
     6.1.0-9-amd64 (MAJOR.MINOR[.SUBLEVEL][-LOCAL], MAJOR 1 to 255, MINOR 0 to 255)"
)]
pub struct VersionError {
    /// The version as given.
    pub version: String,
    /// What is wrong with it.
    pub kind: VersionErrorKind,
}

/// What is wrong with a refused kernel version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionErrorKind {
    /// Over 64 characters, or a character that is not printable ASCII.
    #[error("longer than 64 characters or not printable ASCII")]
    NotPrintable,
    /// Something after the numbers that does not start with `-` or `+`.
    #[error("the part after the numbers must start with - or +")]
    Local,
    /// Not two or three dot-separated plain numbers.
    #[error("not MAJOR.MINOR or MAJOR.MINOR.SUBLEVEL in plain digits")]
    NotNumbers,
    /// MAJOR does not read as a number.
    #[error("MAJOR")]
    Major,
    /// MINOR does not read as a number.
    #[error("MINOR")]
    Minor,
    /// MAJOR outside 1 to 255 or MINOR above 255.
    #[error("MAJOR or MINOR out of range")]
    OutOfRange,
}

/// Why a scenario's kernel does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// `version` is not `MAJOR.MINOR[...]` (says what was found).
    #[error("{0}")]
    Version(VersionError),
    /// The release refuses a parameter of the command line (names the token).
    #[error("{0}")]
    Cmdline(#[from] CmdlineError),
}

/// TICK_NSEC for a HZ value, rounded half up as the kernel does.
pub fn tick_nsec(hz: u32) -> u64 {
    (1_000_000_000 + hz as u64 / 2) / hz as u64
}

/// The `CONFIG_HZ` values a kernel can be built with (the choices `kernel/Kconfig.hz` offers).
pub const CONFIG_HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

/// Largest scenario file read (bytes). The largest file ticklab writes (`host calibrate` on a
/// 256-CPU machine, one background source per CPU) is far below it; anything bigger is not a
/// scenario, and `--scenario /dev/zero` must not read until memory runs out.
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// Checks that `hz` is one of [`CONFIG_HZ_CHOICES`]; the error names the value and the
/// choices.
pub fn check_hz(hz: u32) -> Result<u32, HzError> {
    if CONFIG_HZ_CHOICES.contains(&hz) {
        Ok(hz)
    } else {
        Err(HzError(hz))
    }
}

/// A `CONFIG_HZ` no kernel is built with ([`check_hz`]): the value, and the choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}: expected one of {choices} (CONFIG_HZ)", choices = hz_choices())]
pub struct HzError(pub u32);

/// [`CONFIG_HZ_CHOICES`], comma-separated.
fn hz_choices() -> String {
    let choices: Vec<String> = CONFIG_HZ_CHOICES.iter().map(u32::to_string).collect();
    choices.join(", ")
}

/// How a background source is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// An hrtimer (ns resolution, own interrupt unless it rides another one).
    Hrtimer,
    /// A timer-wheel timer (jiffy granularity; runs from the tick's softirq).
    Wheel,
}

impl TimerKind {
    /// The name used in scenario files and reports (`hrtimer`, `wheel`).
    pub fn name(self) -> &'static str {
        match self {
            TimerKind::Hrtimer => "hrtimer",
            TimerKind::Wheel => "wheel",
        }
    }
}

/// Where a background source's timers live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// One independent instance on every CPU.
    PerCpu,
    /// Unpinned kernel work: with nohz_full it runs on housekeeping CPUs only (timer
    /// migration / housekeeping cpumasks); otherwise on any CPU. One stream for the machine.
    Housekeeping,
    /// On the CPUs of `kernel.watchdog_cpumask` (housekeeping CPUs under nohz_full), one per CPU.
    WatchdogCpus,
}

/// A background timer source: the usual kernel and user-space wakeups of an "idle" system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSource {
    /// Name shown in reports (kernel callback name where there is one).
    pub name: String,
    /// hrtimer or timer wheel.
    pub kind: TimerKind,
    /// Where it runs.
    pub placement: Placement,
    /// Fixed period in ns (periodic source), or
    pub period_ns: Option<u64>,
    /// mean rate in events per second per instance (Poisson source).
    pub rate_hz: Option<f64>,
    /// Deferrable wheel timer: never wakes an idle CPU.
    #[serde(default)]
    pub deferrable: bool,
    /// hrtimer slack (soft to hard expiry) in ns.
    #[serde(default)]
    pub slack_ns: u64,
    /// The expiry wakes a task that runs `costs.background_task_ns`.
    #[serde(default)]
    pub wakes_task: bool,
    /// The woken task is not pinned and its timer goes where it runs: when the CPU the timer
    /// fired on is running something at that moment, the scheduler wakes the task on an idle
    /// CPU (`select_idle_sibling`, docs/kernel-behaviour.md §12.11) and the task re-arms its timer
    /// there, so the timer's later interrupts land on that CPU. `cpus` then only says where each
    /// instance starts. Needs `wakes_task`. Absent in older scenario files, meaning false
    /// (every instance stays on its CPU); written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follows_task: bool,
    /// The woken task sleeps `period_ns` counted from the end of its run (a relative sleep,
    /// `HRTIMER_MODE_REL`, as in a `sleep(period)` loop), not on a fixed grid: each period is
    /// the sleep plus the run, so the source's phase drifts against the tick grid instead of
    /// keeping the phase it started with. Needs `wakes_task`, `period_ns` and an hrtimer.
    /// Absent in older scenario files, meaning false; written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relative: bool,
    /// The woken task stays on its CPU, but its sleep is an unpinned hrtimer (a
    /// `clock_nanosleep` sleeper): each arming is placed by the timer-migration rule
    /// (docs/kernel-behaviour.md §12.12), so a sleep armed on a `nohz_full` CPU is queued on a
    /// timer-housekeeping CPU whose next event comes first, and that CPU's interrupt wakes the
    /// task with a reschedule IPI. Needs `wakes_task`, an hrtimer and `cpus` (the tasks'
    /// CPUs); excludes `follows_task`. Absent in older scenario files, meaning false (the
    /// sleep stays on the task's CPU); written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timer_migrates: bool,
    /// The hrtimer is armed `HRTIMER_MODE_HARD`: it expires in the hard interrupt even on a
    /// `kernel.preempt_rt` build, where every other hrtimer expires in the CPU's softirq thread
    /// (docs/model.md "PREEMPT_RT"); the tick, the soft-lockup watchdog and the sleeps of
    /// real-time tasks are hard. Without PREEMPT_RT it changes nothing. Needs an hrtimer.
    /// Absent in older scenario files, meaning false; written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hard: bool,
    /// How long each task this source wakes runs, ns (a kernel thread's measured CPU time per
    /// run, [`crate::report::KthreadRuns::ns_per_run`]); `None` = the machine's
    /// `costs.background_task_ns`. Needs `wakes_task`. Absent in older scenario files; written
    /// only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ns: Option<u64>,
    /// Where the numbers come from.
    pub provenance: String,
    /// Restricts `PerCpu` / `WatchdogCpus` instances to these CPUs (e.g. a per-CPU rate
    /// measured by `host calibrate`); `None` = every CPU the placement allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<ticklab_cmdline::CpuSet>,
}

impl BackgroundSource {
    /// This source as one instance per CPU that `wakeups` counts (a measured run's wake-ups
    /// of the thread behind it, [`crate::report::Report::coordinator_wakeups`]): each pinned
    /// there (`cpus` one CPU, `follows_task` off), named `NAME (CPU n)`, with the period
    /// that gives it that CPU's share of one wake-up per `period_ns`. CPUs without wake-ups
    /// get none; no wake-ups at all gives no instance.
    pub fn split_by_wakeups(
        &self,
        period_ns: u64,
        wakeups: &[crate::wakeups::CpuWakeups],
    ) -> Vec<BackgroundSource> {
        let total: u64 = wakeups.iter().map(|w| w.wakeups).sum();
        wakeups
            .iter()
            .filter(|w| w.wakeups > 0)
            .map(|w| {
                let mut on = self.clone();
                on.name = format!("{} (CPU {})", self.name, w.cpu);
                on.period_ns = Some(period_ns.saturating_mul(total) / w.wakeups);
                on.rate_hz = None;
                on.follows_task = false;
                on.cpus = Some(ticklab_cmdline::CpuSet::from_iter([w.cpu]));
                on.provenance = format!(
                    "M: {} of the run's {total} wake-ups on CPU {} (sched_getcpu); {}",
                    w.wakeups, w.cpu, self.provenance
                );
                on
            })
            .collect()
    }
}

/// Run parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// Measured window in ns.
    pub duration_ns: u64,
    /// Simulated time before the window, not counted.
    pub warmup_ns: u64,
    /// Seed of the run's single RNG.
    pub seed: u64,
}

impl Default for Run {
    fn default() -> Self {
        Run {
            duration_ns: 10_000_000_000,
            warmup_ns: 1_000_000_000,
            seed: 1,
        }
    }
}

/// Everything one twin run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Label.
    pub name: String,
    /// The machine.
    pub machine: Machine,
    /// The kernel.
    pub kernel: Kernel,
    /// What runs.
    pub workload: Workload,
    /// Background wakeup sources.
    pub background: Vec<BackgroundSource>,
    /// How long and with which seed.
    pub run: Run,
}

/// Why a scenario could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("scenario {origin}: {what}")]
pub struct ScenarioError {
    /// File name or `--flags`.
    pub origin: String,
    /// What was wrong and what was expected.
    pub what: String,
}

/// A scenario file as written (see the module docs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: Option<String>,
    machine: MachineRef,
    kernel: Kernel,
    #[serde(default)]
    workload: Option<String>,
    #[serde(default)]
    background: Option<Vec<BackgroundSource>>,
    #[serde(default)]
    run: RunFile,
}

/// `machine = "preset"` or a `[machine]` table. Read by hand rather than as an untagged enum,
/// so that an error inside the table (a typo, a wrong type) names its key.
#[derive(Debug, Clone)]
enum MachineRef {
    Preset(String),
    Inline(Box<Machine>),
}

impl<'de> Deserialize<'de> for MachineRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = MachineRef;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a machine preset name or a [machine] table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MachineRef, E> {
                Ok(MachineRef::Preset(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<MachineRef, A::Error> {
                let m = Machine::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(MachineRef::Inline(Box::new(m)))
            }
        }
        d.deserialize_any(Visit)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    duration: Option<String>,
    warmup: Option<String>,
    seed: Option<u64>,
}

impl Scenario {
    /// Parses a scenario file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let err = |what: String| ScenarioError {
            origin: origin.to_string(),
            what,
        };
        let file: ScenarioFile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let machine = match file.machine {
            MachineRef::Preset(name) => machine::preset(&name).ok_or_else(|| {
                err(format!(
                    "machine {name:?}: expected a preset ({}) or a [machine] table",
                    machine::PRESETS.join(", ")
                ))
            })?,
            MachineRef::Inline(m) => *m,
        };
        // The machine first: the workload below is read against its CPU count.
        machine.validate().map_err(|e| err(e.to_string()))?;
        file.kernel
            .version_tuple()
            .map_err(|e| err(e.to_string()))?;
        check_hz(file.kernel.hz).map_err(|e| err(format!("kernel.hz = {e}")))?;
        let nr = machine.topology.nr_cpus();
        let workload = match &file.workload {
            Some(w) => Workload::parse(w, nr).map_err(|e| err(e.to_string()))?,
            None => Workload::default(),
        };
        let mut run = Run::default();
        if let Some(d) = &file.run.duration {
            run.duration_ns = parse_duration(d).map_err(|e| err(format!("run.duration: {e}")))?;
        }
        if let Some(d) = &file.run.warmup {
            run.warmup_ns =
                crate::units::parse_warmup(d).map_err(|e| err(format!("run.warmup: {e}")))?;
        }
        if let Some(s) = file.run.seed {
            run.seed = s;
        }
        let background = file.background.unwrap_or_else(default_background);
        let scenario = Scenario {
            name: file.name.unwrap_or_else(|| origin.to_string()),
            machine,
            kernel: file.kernel,
            workload,
            background,
            run,
        };
        scenario.validate().map_err(|e| err(e.to_string()))?;
        Ok(scenario)
    }

    /// Reads and parses a scenario file, or standard input for `-` (at most
    /// [`MAX_SCENARIO_BYTES`], so that `/dev/zero` or a
    /// log given by mistake is refused rather than read until memory runs out).
    pub fn load(path: &str) -> Result<Scenario, ScenarioError> {
        let limit = MAX_SCENARIO_BYTES;
        let err = |what: String| ScenarioError {
            origin: path.to_string(),
            what,
        };
        let read = if path == "-" {
            crate::lines::read_text(std::io::stdin().lock(), limit)
        } else {
            let file = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
            crate::lines::read_text(file, limit)
        };
        let text = read.map_err(|e| match e {
            crate::lines::LinesError::TooLarge { .. } => err(format!(
                "larger than {} MiB: not a scenario file",
                limit >> 20
            )),
            crate::lines::LinesError::NotUtf8 { at, .. } => {
                err(format!("not UTF-8 text (byte {at})"))
            }
            other => err(other.to_string()),
        })?;
        Scenario::from_toml(&text, if path == "-" { "<stdin>" } else { path })
    }

    /// Serialises back to a scenario file with the machine spelled out.
    pub fn to_toml(&self) -> String {
        #[derive(Serialize)]
        struct Out<'a> {
            name: &'a str,
            workload: String,
            kernel: &'a Kernel,
            run: RunOut,
            machine: &'a Machine,
            background: &'a [BackgroundSource],
        }
        #[derive(Serialize)]
        struct RunOut {
            duration: String,
            warmup: String,
            seed: u64,
        }
        let out = Out {
            name: &self.name,
            workload: self.workload.label(),
            kernel: &self.kernel,
            run: RunOut {
                duration: format!("{}ns", self.run.duration_ns),
                warmup: format!("{}ns", self.run.warmup_ns),
                seed: self.run.seed,
            },
            machine: &self.machine,
            background: &self.background,
        };
        toml::to_string(&out).unwrap_or_else(|e| format!("# could not serialise: {e}\n"))
    }
}

/// The background sources of a typical idle Linux system, used when a scenario names none.
///
/// Rates marked CAL(E1) were fitted on docs/experiments.md E1's idle rows (the only published
/// measurement of an idle machine's wakeups we have) and are estimates for other machines.
pub fn default_background() -> Vec<BackgroundSource> {
    vec![
        BackgroundSource {
            name: "watchdog_timer_fn".into(),
            kind: TimerKind::Hrtimer,
            placement: Placement::WatchdogCpus,
            // C: softlockup sample period = watchdog_thresh (10 s) * 2 / 5 = 4 s.
            period_ns: Some(4_000_000_000),
            rate_hz: None,
            deferrable: false,
            slack_ns: 0,
            wakes_task: false,
            follows_task: false,
            timer_migrates: false,
            hard: false,
            task_ns: None,
            relative: false,
            provenance:
                "C: watchdog_thresh=10 s, sample period 2/5 of it (docs/kernel-behaviour.md §4.5)"
                    .into(),
            cpus: None,
        },
        BackgroundSource {
            name: "vmstat_update".into(),
            kind: TimerKind::Wheel,
            placement: Placement::PerCpu,
            // C: vm.stat_interval = 1 s, deferrable (never wakes an idle CPU).
            period_ns: Some(1_000_000_000),
            rate_hz: None,
            deferrable: true,
            slack_ns: 0,
            wakes_task: false,
            follows_task: false,
            timer_migrates: false,
            hard: false,
            task_ns: None,
            relative: false,
            provenance: "C: vm.stat_interval=1 s, deferrable (docs/kernel-behaviour.md §4.5)"
                .into(),
            cpus: None,
        },
        BackgroundSource {
            name: "kernel_housekeeping_timers".into(),
            kind: TimerKind::Wheel,
            placement: Placement::Housekeeping,
            period_ns: None,
            // CAL(E1): aggressive idle 98.7 irq/s minus the per-CPU user wakeups; these
            // unbound timers (workqueues, writeback, net) go to housekeeping CPUs under
            // nohz_full and hide inside the housekeeping tick until aggressive stops it.
            rate_hz: Some(62.0),
            deferrable: false,
            slack_ns: 0,
            wakes_task: false,
            follows_task: false,
            timer_migrates: false,
            hard: false,
            task_ns: None,
            relative: false,
            provenance: "CAL(E1): aggressive idle row; unbound kernel timers".into(),
            cpus: None,
        },
        BackgroundSource {
            name: "user_hrtimers".into(),
            kind: TimerKind::Hrtimer,
            placement: Placement::PerCpu,
            period_ns: None,
            // CAL(E1): nohz_full idle 1036.7 irq/s = 1000 (housekeeping tick) + ~4.6/s on
            // each of 8 CPUs; 50 µs default timer slack (C).
            rate_hz: Some(4.6),
            deferrable: false,
            slack_ns: 50_000,
            wakes_task: true,
            follows_task: false,
            timer_migrates: false,
            hard: false,
            task_ns: None,
            relative: false,
            provenance: "CAL(E1): nohz_full idle row; user-space daemons' timers, slack 50 µs"
                .into(),
            cpus: None,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_nsec_table() {
        for (hz, ns) in [
            (100, 10_000_000),
            (250, 4_000_000),
            (300, 3_333_333),
            (1000, 1_000_000),
        ] {
            assert_eq!(tick_nsec(hz), ns);
        }
    }

    #[test]
    fn scenario_file_parses_and_rejects_typos() {
        let text = r#"
name = "t"
machine = "xps13-7390"
workload = "hogs:2"
[kernel]
version = "6.3"
hz = 1000
nohz = "full"
cmdline = "nohz_full=all"
[run]
duration = "2s"
seed = 7
"#;
        let s = Scenario::from_toml(text, "t.toml").unwrap();
        assert_eq!(s.run.duration_ns, 2_000_000_000);
        assert_eq!(s.run.seed, 7);
        assert_eq!(s.workload.label(), "hogs:2");
        let typo = text.replace("seed = 7", "sead = 7");
        let e = Scenario::from_toml(&typo, "t.toml").unwrap_err();
        assert!(e.to_string().contains("sead"), "{e}");
        let bad_hz = text.replace("hz = 1000", "hz = 1001");
        assert!(Scenario::from_toml(&bad_hz, "t.toml").is_err());
        let bad_machine = text.replace("xps13-7390", "xps");
        assert!(
            Scenario::from_toml(&bad_machine, "t.toml")
                .unwrap_err()
                .to_string()
                .contains("preset")
        );
    }

    #[test]
    fn spinlock_follows_the_version_unless_the_scenario_overrides_it() {
        for (version, want) in [
            ((2, 6), Spinlock::Ticket),
            ((3, 0), Spinlock::Ticket),
            ((4, 1), Spinlock::Ticket),
            ((4, 2), Spinlock::Queued),
            ((6, 3), Spinlock::Queued),
        ] {
            assert_eq!(Spinlock::for_version(version), want, "{version:?}");
        }
        let text =
            "machine = \"xps13-7390\"\n[kernel]\nversion = \"6.3\"\nhz = 1000\nnohz = \"idle\"\n";
        assert_eq!(
            Scenario::from_toml(text, "x").unwrap().kernel.spinlock,
            None
        );
        let ticket = format!("{text}spinlock = \"ticket\"\n");
        let s = Scenario::from_toml(&ticket, "x").unwrap();
        assert_eq!(s.kernel.spinlock, Some(Spinlock::Ticket));
        let back = Scenario::from_toml(&s.to_toml(), "x").unwrap();
        assert_eq!(back.kernel, s.kernel, "the override survives a round trip");
        let bad = format!("{text}spinlock = \"mcs\"\n");
        let e = Scenario::from_toml(&bad, "x").unwrap_err().to_string();
        assert!(
            e.contains("mcs") && e.contains("ticket") && e.contains("queued"),
            "{e}"
        );
    }

    #[test]
    fn toml_roundtrip() {
        let text =
            "machine = \"xps13-7390\"\n[kernel]\nversion = \"6.3\"\nhz = 1000\nnohz = \"idle\"\n";
        let s = Scenario::from_toml(text, "x").unwrap();
        let back = Scenario::from_toml(&s.to_toml(), "x").unwrap();
        assert_eq!(back.machine, s.machine);
        assert_eq!(back.kernel, s.kernel);
        assert_eq!(back.background, s.background);
    }

    #[test]
    fn preempt_rt_defaults_off_and_is_written_only_when_on() {
        let text = "machine = \"xps13-7390\"\n[kernel]\nversion = \"6.1.192\"\nhz = 250\nnohz = \"idle\"\n";
        let s = Scenario::from_toml(text, "x").unwrap();
        assert!(!s.kernel.preempt_rt);
        assert!(
            !s.to_toml().contains("preempt_rt"),
            "older files stay as they were"
        );
        let rt = Scenario::from_toml(&format!("{text}preempt_rt = true\n"), "x").unwrap();
        assert!(rt.kernel.preempt_rt);
        let back = Scenario::from_toml(&rt.to_toml(), "x").unwrap();
        assert_eq!(back.kernel, rt.kernel, "survives a round trip");
        let mut m = rt.machine.clone();
        m.costs.softirq_thread_ns = Some(27_000);
        let t = toml::to_string(&m.costs).unwrap();
        assert!(t.contains("softirq_thread_ns = 27000"), "{t}");
    }
}
