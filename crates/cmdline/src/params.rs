//! The typed parameters of a kernel command line: [`KernelCmdline`] and its argument types.
//!
//! A field is `None` / `false` / empty when the line does not give the parameter. The
//! parameters are those that matter for the tick: dynticks and isolation (`nohz`,
//! `nohz_full=`, `isolcpus=`, `rcu_nocbs`), timers (`highres`, `skew_tick`, `clocksource=`,
//! `watchdog_thresh=`), idle (`idle=`, `cpuidle.*`, `haltpoll.*`, the `max_cstate` ones) and
//! ticklab's `nohz_full_aggressive`. Reading a line into them is [`crate::parse`]'s job
//! ([`KernelCmdline::parse`]); writing them back as a canonical line is the [`fmt::Display`]
//! of [`KernelCmdline`] here. What they mean together is [`crate::tick_config`].

use crate::cpuset::CpuSet;
use crate::ctype::is_space;
use serde::{Deserialize, Serialize};
use std::fmt;

/// `idle=` override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum IdleOverride {
    /// No `idle=` given: the cpuidle driver and governor decide.
    #[default]
    Default,
    /// `idle=poll`: always spin, never stop the tick.
    Poll,
    /// `idle=halt`: HLT only.
    Halt,
    /// `idle=nomwait`: no MWAIT states.
    NoMwait,
}

impl IdleOverride {
    /// The `idle=` value, or `None` for [`IdleOverride::Default`].
    pub fn as_param(self) -> Option<&'static str> {
        match self {
            IdleOverride::Default => None,
            IdleOverride::Poll => Some("poll"),
            IdleOverride::Halt => Some("halt"),
            IdleOverride::NoMwait => Some("nomwait"),
        }
    }
}

/// guest halt-polling parameters (`haltpoll.*`), kernel defaults in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaltpollParams {
    /// `guest_halt_poll_ns`, default 200000.
    pub guest_halt_poll_ns: u64,
    /// `guest_halt_poll_shrink`, default 2.
    pub guest_halt_poll_shrink: u64,
    /// `guest_halt_poll_grow`, default 2.
    pub guest_halt_poll_grow: u64,
    /// `guest_halt_poll_grow_start`, default 50000.
    pub guest_halt_poll_grow_start: u64,
    /// `guest_halt_poll_allow_shrink`, default true.
    pub guest_halt_poll_allow_shrink: bool,
}

impl Default for HaltpollParams {
    fn default() -> Self {
        // Defaults: Documentation/virt/guest-halt-polling.rst (docs/kernel-behaviour.md §9.3).
        HaltpollParams {
            guest_halt_poll_ns: 200_000,
            guest_halt_poll_shrink: 2,
            guest_halt_poll_grow: 2,
            guest_halt_poll_grow_start: 50_000,
            guest_halt_poll_allow_shrink: true,
        }
    }
}

/// The `haltpoll.*` values given on the command line (`None` = not given, kernel default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HaltpollArgs {
    /// `haltpoll.guest_halt_poll_ns=`.
    pub guest_halt_poll_ns: Option<u64>,
    /// `haltpoll.guest_halt_poll_shrink=`.
    pub guest_halt_poll_shrink: Option<u64>,
    /// `haltpoll.guest_halt_poll_grow=`.
    pub guest_halt_poll_grow: Option<u64>,
    /// `haltpoll.guest_halt_poll_grow_start=`.
    pub guest_halt_poll_grow_start: Option<u64>,
    /// `haltpoll.guest_halt_poll_allow_shrink=`.
    pub guest_halt_poll_allow_shrink: Option<bool>,
}

impl HaltpollArgs {
    /// The kernel defaults with the given values applied.
    pub fn apply(&self) -> HaltpollParams {
        let d = HaltpollParams::default();
        HaltpollParams {
            guest_halt_poll_ns: self.guest_halt_poll_ns.unwrap_or(d.guest_halt_poll_ns),
            guest_halt_poll_shrink: self
                .guest_halt_poll_shrink
                .unwrap_or(d.guest_halt_poll_shrink),
            guest_halt_poll_grow: self.guest_halt_poll_grow.unwrap_or(d.guest_halt_poll_grow),
            guest_halt_poll_grow_start: self
                .guest_halt_poll_grow_start
                .unwrap_or(d.guest_halt_poll_grow_start),
            guest_halt_poll_allow_shrink: self
                .guest_halt_poll_allow_shrink
                .unwrap_or(d.guest_halt_poll_allow_shrink),
        }
    }
}

/// A cpulist parameter value: the text as written and the CPUs it names on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpulistArg {
    /// The list as written (`all`, `1-N`, `2-19,22-39`).
    pub text: String,
    /// The CPUs it names for the `nr_cpus` given to [`KernelCmdline::parse`].
    pub cpus: CpuSet,
}

impl CpulistArg {
    /// Whether the text uses the word `all`, which kernels read from 5.14
    /// ([`crate::ALL_SINCE`]).
    pub fn uses_all(&self) -> bool {
        self.text.to_ascii_lowercase().contains("all")
    }

    /// Whether the text uses the letter `N` for the last CPU, which kernels read from 5.12
    /// ([`crate::LAST_CPU_N_SINCE`]). In a list that parsed, `N` can be nothing else.
    pub fn uses_n(&self) -> bool {
        self.text.contains('N')
    }
}

/// A flag of `isolcpus=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsolcpusFlag {
    /// `nohz`: the list also becomes full-dynticks (tick housekeeping), like `nohz_full=`.
    Nohz,
    /// `domain`: the CPUs leave the scheduler domains (the default without flags).
    Domain,
    /// `managed_irq`: keep managed interrupts off the CPUs where possible.
    ManagedIrq,
    /// A flag the kernel does not know; it skips it with a notice.
    Unknown(String),
}

impl IsolcpusFlag {
    fn name(&self) -> &str {
        match self {
            IsolcpusFlag::Nohz => "nohz",
            IsolcpusFlag::Domain => "domain",
            IsolcpusFlag::ManagedIrq => "managed_irq",
            IsolcpusFlag::Unknown(s) => s,
        }
    }
}

/// The value of `isolcpus=[flags,]<cpulist>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolcpusArg {
    /// Flags in the order written.
    pub flags: Vec<IsolcpusFlag>,
    /// The cpulist after the flags.
    pub list: CpulistArg,
}

impl IsolcpusArg {
    /// Whether the `nohz` flag was given.
    pub fn nohz(&self) -> bool {
        self.flags.contains(&IsolcpusFlag::Nohz)
    }

    /// Whether the list isolates from scheduler domains: the `domain` flag, or no known flag
    /// at all (the kernel's default).
    pub fn domain(&self) -> bool {
        self.flags.contains(&IsolcpusFlag::Domain)
            || !self
                .flags
                .iter()
                .any(|f| !matches!(f, IsolcpusFlag::Unknown(_)))
    }

    /// Whether the `managed_irq` flag was given.
    pub fn managed_irq(&self) -> bool {
        self.flags.contains(&IsolcpusFlag::ManagedIrq)
    }
}

/// One of the two parameters that set up CPU isolation (housekeeping), in line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HousekeepingArg {
    /// `nohz_full=<cpulist>`.
    NohzFull(CpulistArg),
    /// `isolcpus=[flags,]<cpulist>`.
    Isolcpus(IsolcpusArg),
}

/// `rcu_nocbs` with or without a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RcuNocbsArg {
    /// Bare `rcu_nocbs`: offloading can be switched on at run time, no CPU offloaded at boot.
    Bare,
    /// `rcu_nocbs=<cpulist>`.
    List(CpulistArg),
}

/// A parameter given more than once, and how the kernel resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedParam {
    /// The parameter's name (`skew_tick`, `idle`).
    pub name: String,
    /// Its values in line order, as written (`(bare)` for a bare `rcu_nocbs`).
    pub values: Vec<String>,
    /// How the kernel's handler resolves the repetition.
    pub rule: String,
}

/// A parsed kernel command line. `None` / `false` / empty means "not given".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelCmdline {
    /// `nohz=on|off`.
    pub nohz: Option<bool>,
    /// `nohz_full=` and `isolcpus=` occurrences, in line order.
    pub housekeeping: Vec<HousekeepingArg>,
    /// `rcu_nocbs[=<cpulist>]`.
    pub rcu_nocbs: Option<RcuNocbsArg>,
    /// `rcu_nocb_poll`.
    pub rcu_nocb_poll: bool,
    /// `skew_tick=<int>`.
    pub skew_tick: Option<i64>,
    /// `highres=on|off`.
    pub highres: Option<bool>,
    /// `idle=poll|halt|nomwait`.
    pub idle: Option<IdleOverride>,
    /// `cpuidle.off=<int>` (non-zero = true).
    pub cpuidle_off: Option<bool>,
    /// `cpuidle.governor=<name>`.
    pub cpuidle_governor: Option<String>,
    /// `cpuidle_haltpoll.force=<bool>`.
    pub cpuidle_haltpoll_force: Option<bool>,
    /// `haltpoll.guest_halt_poll_*=`.
    pub haltpoll: HaltpollArgs,
    /// `intel_idle.max_cstate=<int>`.
    pub intel_idle_max_cstate: Option<u32>,
    /// `processor.max_cstate=<int>`.
    pub processor_max_cstate: Option<u32>,
    /// `nohz_full_aggressive[=<bool>]` (the 2023 proposal, never merged).
    pub nohz_full_aggressive: Option<bool>,
    /// `clocksource=<name>`.
    pub clocksource: Option<String>,
    /// `watchdog_thresh=<seconds>`.
    pub watchdog_thresh: Option<u32>,
    /// `nowatchdog`.
    pub nowatchdog: bool,
    /// Parameters ticklab does not interpret, as written (quotes included).
    pub unknown: Vec<String>,
    /// Tokens after a bare `--`, as written (arguments for init).
    pub init_args: Vec<String>,
    /// Parameters given more than once (other than `nohz_full=` / `isolcpus=`, which
    /// [`Self::housekeeping`] keeps in order), in order of their first repetition. Not part of
    /// the canonical line, which writes each parameter once.
    pub repeated: Vec<RepeatedParam>,
}

impl KernelCmdline {
    /// The first `nohz_full=` on the line, if any.
    pub fn nohz_full(&self) -> Option<&CpulistArg> {
        self.housekeeping.iter().find_map(|h| match h {
            HousekeepingArg::NohzFull(a) => Some(a),
            HousekeepingArg::Isolcpus(_) => None,
        })
    }

    /// The first `isolcpus=` on the line, if any.
    pub fn isolcpus(&self) -> Option<&IsolcpusArg> {
        self.housekeeping.iter().find_map(|h| match h {
            HousekeepingArg::Isolcpus(a) => Some(a),
            HousekeepingArg::NohzFull(_) => None,
        })
    }
}

/// Writes `key=value`, quoting the value when it holds whitespace or is needed to keep a
/// leading quote.
fn kv(out: &mut Vec<String>, key: &str, value: &str) {
    if value.bytes().any(is_space) || value.starts_with('"') {
        out.push(format!("{key}=\"{value}\""));
    } else {
        out.push(format!("{key}={value}"));
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn y_n(b: bool) -> &'static str {
    if b { "Y" } else { "N" }
}

/// The canonical line: known parameters in a fixed order with canonical spellings
/// (`on/off` for `nohz`/`highres`, `Y/N` for module booleans), `nohz_full=`/`isolcpus=` in
/// their original order, then unknown parameters as written, then `-- <init args>`.
/// Parsing the output again gives an equal [`KernelCmdline`].
impl fmt::Display for KernelCmdline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t: Vec<String> = Vec::new();
        if let Some(b) = self.nohz {
            kv(&mut t, "nohz", on_off(b));
        }
        for h in &self.housekeeping {
            match h {
                HousekeepingArg::NohzFull(a) => kv(&mut t, "nohz_full", &a.text),
                HousekeepingArg::Isolcpus(a) => {
                    let mut v = String::new();
                    for fl in &a.flags {
                        v.push_str(fl.name());
                        v.push(',');
                    }
                    v.push_str(&a.list.text);
                    kv(&mut t, "isolcpus", &v);
                }
            }
        }
        match &self.rcu_nocbs {
            None => {}
            Some(RcuNocbsArg::Bare) => t.push("rcu_nocbs".into()),
            Some(RcuNocbsArg::List(a)) => kv(&mut t, "rcu_nocbs", &a.text),
        }
        if self.rcu_nocb_poll {
            t.push("rcu_nocb_poll".into());
        }
        if let Some(s) = self.skew_tick {
            kv(&mut t, "skew_tick", &s.to_string());
        }
        if let Some(b) = self.highres {
            kv(&mut t, "highres", on_off(b));
        }
        if let Some(p) = self.idle.and_then(IdleOverride::as_param) {
            kv(&mut t, "idle", p);
        }
        if let Some(b) = self.cpuidle_off {
            kv(&mut t, "cpuidle.off", if b { "1" } else { "0" });
        }
        if let Some(g) = &self.cpuidle_governor {
            kv(&mut t, "cpuidle.governor", g);
        }
        if let Some(b) = self.cpuidle_haltpoll_force {
            kv(&mut t, "cpuidle_haltpoll.force", y_n(b));
        }
        let h = &self.haltpoll;
        let uints = [
            ("haltpoll.guest_halt_poll_ns", h.guest_halt_poll_ns),
            ("haltpoll.guest_halt_poll_shrink", h.guest_halt_poll_shrink),
            ("haltpoll.guest_halt_poll_grow", h.guest_halt_poll_grow),
            (
                "haltpoll.guest_halt_poll_grow_start",
                h.guest_halt_poll_grow_start,
            ),
        ];
        for (k, v) in uints {
            if let Some(v) = v {
                kv(&mut t, k, &v.to_string());
            }
        }
        if let Some(b) = h.guest_halt_poll_allow_shrink {
            kv(&mut t, "haltpoll.guest_halt_poll_allow_shrink", y_n(b));
        }
        if let Some(n) = self.intel_idle_max_cstate {
            kv(&mut t, "intel_idle.max_cstate", &n.to_string());
        }
        if let Some(n) = self.processor_max_cstate {
            kv(&mut t, "processor.max_cstate", &n.to_string());
        }
        match self.nohz_full_aggressive {
            None => {}
            Some(true) => t.push("nohz_full_aggressive".into()),
            Some(false) => t.push("nohz_full_aggressive=0".into()),
        }
        if let Some(cs) = &self.clocksource {
            kv(&mut t, "clocksource", cs);
        }
        if let Some(n) = self.watchdog_thresh {
            kv(&mut t, "watchdog_thresh", &n.to_string());
        }
        if self.nowatchdog {
            t.push("nowatchdog".into());
        }
        t.extend(self.unknown.iter().cloned());
        if !self.init_args.is_empty() {
            t.push("--".into());
            t.extend(self.init_args.iter().cloned());
        }
        f.write_str(&t.join(" "))
    }
}

#[cfg(test)]
mod tests;
