//! The kernel command line, in the kernel's own syntax.
//!
//! CONTRACT: [`KernelCmdline::parse`] reads a boot line such as
//! `nohz_full=2-19,22-39 isolcpus=domain,nohz,2-19 skew_tick=1 idle=poll` into typed fields;
//! [`TickConfig::resolve`] turns it, together with the kernel build and the CPU count, into the
//! effective tick configuration plus the messages the kernel would print at boot.
//!
//! # Syntax (what [`KernelCmdline::parse`] accepts)
//!
//! * Tokens are separated by ASCII whitespace. A token is `key` or `key=value`; the first `=`
//!   splits. Double quotes group: `key="a b"` gives the value `a b`, and a token that starts with
//!   a quote (`"key=value"`) loses its leading and trailing quote, as in the kernel's tokenizer.
//!   An unterminated quote runs to the end of the line.
//! * A bare `--` ends kernel parameters; everything after it is kept in
//!   [`KernelCmdline::init_args`] (the kernel hands those to init).
//! * Names of early and module parameters (`nohz`, `skew_tick`, `cpuidle.off`,
//!   `haltpoll.guest_halt_poll_ns`, ...) match with `-` and `_` interchangeable, like the
//!   kernel's `parameq`; the `__setup` ones (`nohz_full=`, `isolcpus=`, `clocksource=`,
//!   `watchdog_thresh=`, `nowatchdog`) must be spelt exactly.
//! * Booleans: `1/0`, `y/n`, `yes/no`, `on/off`, `true/false`, any case. (The kernel's
//!   `kstrtobool` only looks at the first one or two characters, so it would also take `yup`;
//!   ticklab refuses such spellings so that a typo is seen.) A bare module boolean
//!   (`cpuidle_haltpoll.force`) means true, as in the kernel.
//! * Integers follow the kernel's base-0 rule: `0x` prefix is hex, a leading `0` is octal,
//!   otherwise decimal.
//! * Cpulists use [`parse_cpulist`] (`N`, `all`, `a-b:used/group`).
//! * Unknown parameters (`quiet`, `root=/dev/sda1`, `BOOT_IMAGE=...`) are kept as written in
//!   [`KernelCmdline::unknown`], never an error. A known parameter with a malformed value is a
//!   [`CmdlineError`] naming the token, its number and byte offset, and what was expected. (The
//!   kernel would print a warning and ignore such a parameter; ticklab prefers to stop.)
//! * Scalar parameters given twice: the last one wins (each occurrence re-runs the kernel's
//!   handler). `nohz_full=` and `isolcpus=` are kept in line order in
//!   [`KernelCmdline::housekeeping`], because the kernel's housekeeping setup is order dependent.
//!
//! # Meaning (what [`TickConfig::resolve`] decides)
//!
//! See the documentation of [`TickConfig::resolve`] for the rules and the boot messages. The
//! messages use the kernel's wording; ticklab's own remarks are marked [`MessageOrigin::Ticklab`].

use crate::cpuset::{CpuSet, parse_cpulist};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How the tick configuration treats a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuRole {
    /// Housekeeping CPU that holds (or held) the timekeeping duty.
    Timekeeping,
    /// Other housekeeping CPU.
    Housekeeping,
    /// Full dynticks (nohz_full) CPU.
    NohzFull,
}

/// Who says a boot (or run-time) message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageOrigin {
    /// The kernel prints it, in its own wording.
    Kernel,
    /// ticklab's own remark (shown with a `ticklab: ` prefix, never part of the text).
    Ticklab,
}

/// A message [`TickConfig::resolve`] produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootMessage {
    /// The kernel's, or ticklab's remark.
    pub origin: MessageOrigin,
    /// The text, without any origin prefix.
    pub text: String,
}

impl BootMessage {
    /// Whether this is ticklab's remark rather than the kernel's.
    pub fn is_ticklab(&self) -> bool {
        self.origin == MessageOrigin::Ticklab
    }
}

impl fmt::Display for BootMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ticklab() {
            f.write_str("ticklab: ")?;
        }
        f.write_str(&self.text)
    }
}

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
        // Defaults: Documentation/virt/guest-halt-polling.rst (kernel-tick-behaviour.md §9.3).
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
    /// Whether the text uses the word `all` (kernel ≥5.13).
    pub fn uses_all(&self) -> bool {
        self.text.trim().eq_ignore_ascii_case("all")
    }

    /// Whether the text uses the letter `N` for the last CPU (kernel ≥5.12).
    pub fn uses_n(&self) -> bool {
        self.text
            .split(',')
            .flat_map(|item| item.split(':').next().unwrap_or("").split('-'))
            .any(|part| part.trim() == "N")
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
}

/// A known parameter with a malformed value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel command line, token {token_number} \"{token}\" at byte {byte_offset}: {expected}")]
pub struct CmdlineError {
    /// The token as written.
    pub token: String,
    /// 1-based number of the token on the line.
    pub token_number: usize,
    /// Byte offset of the token's first character in the line.
    pub byte_offset: usize,
    /// What was expected instead.
    pub expected: String,
}

/// One token of the line.
struct Token<'a> {
    raw: &'a str,
    number: usize,
    offset: usize,
    key: &'a str,
    value: Option<&'a str>,
}

impl Token<'_> {
    fn error(&self, expected: impl Into<String>) -> CmdlineError {
        CmdlineError {
            token: self.raw.to_string(),
            token_number: self.number,
            byte_offset: self.offset,
            expected: expected.into(),
        }
    }

    fn value_or(&self, expected: &str) -> Result<&str, CmdlineError> {
        self.value.ok_or_else(|| self.error(expected))
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Splits a line like the kernel's argument tokenizer: whitespace outside double quotes ends a
/// token; the first `=` separates key and value; quotes around a value (or around the whole
/// token) are removed.
fn tokenize(line: &str) -> Vec<Token<'_>> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            break;
        }
        let start = i;
        let mut in_quote = false;
        let mut equals = None;
        while i < bytes.len() && (in_quote || !is_space(bytes[i])) {
            match bytes[i] {
                b'=' if equals.is_none() => equals = Some(i),
                b'"' => in_quote = !in_quote,
                _ => {}
            }
            i += 1;
        }
        let raw = &line[start..i];
        // All byte positions used below are ASCII characters, so the slices stay on char
        // boundaries.
        let whole_quoted = bytes[start] == b'"';
        let key_start = if whole_quoted { start + 1 } else { start };
        let (key, value) = match equals {
            Some(eq) if eq >= key_start => {
                let mut v = &line[eq + 1..i];
                if let Some(rest) = v.strip_prefix('"') {
                    v = rest;
                    v = v.strip_suffix('"').unwrap_or(v);
                } else if whole_quoted {
                    v = v.strip_suffix('"').unwrap_or(v);
                }
                (&line[key_start..eq], Some(v))
            }
            _ => {
                let mut k = &line[key_start..i];
                if whole_quoted {
                    k = k.strip_suffix('"').unwrap_or(k);
                }
                (k, None)
            }
        };
        out.push(Token {
            raw,
            number: out.len() + 1,
            offset: start,
            key,
            value,
        });
    }
    out
}

/// Kernel boolean spellings accepted by ticklab (see the module documentation).
fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "on" | "true" => Some(true),
        "0" | "n" | "no" | "off" | "false" => Some(false),
        _ => None,
    }
}

const BOOL_EXPECTED: &str = "a boolean: on/off, 1/0, y/n, yes/no or true/false";

/// Integer with the kernel's base-0 rule (`0x` hex, leading `0` octal, else decimal) and an
/// optional sign.
fn parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, body) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i64::from_str_radix(body, radix).ok()?;
    Some(if neg { -v } else { v })
}

fn parse_u32(s: &str) -> Option<u32> {
    parse_int(s).and_then(|v| u32::try_from(v).ok())
}

/// Parameter names whose `-` and `_` are interchangeable (early and module parameters).
fn normalize_key(key: &str) -> String {
    key.replace('-', "_")
}

fn cpulist_value(tok: &Token<'_>, text: &str, nr_cpus: u32) -> Result<CpulistArg, CmdlineError> {
    let cpus = parse_cpulist(text, nr_cpus)
        .map_err(|e| tok.error(format!("{}, in cpulist item {:?}", e.what, e.item)))?;
    Ok(CpulistArg {
        text: text.to_string(),
        cpus,
    })
}

fn is_flag_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
        && s != "N"
        && !s.eq_ignore_ascii_case("all")
}

fn parse_isolcpus(tok: &Token<'_>, v: &str, nr_cpus: u32) -> Result<IsolcpusArg, CmdlineError> {
    // Leading comma-separated words are flags; the rest is the cpulist. (`N` and `all` are
    // cpulist words, not flags.)
    let mut flags = Vec::new();
    let mut rest = v;
    while let Some((word, tail)) = rest.split_once(',') {
        if !is_flag_word(word) {
            break;
        }
        flags.push(match word {
            "nohz" => IsolcpusFlag::Nohz,
            "domain" => IsolcpusFlag::Domain,
            "managed_irq" => IsolcpusFlag::ManagedIrq,
            other => IsolcpusFlag::Unknown(other.to_string()),
        });
        rest = tail;
    }
    if is_flag_word(rest) {
        return Err(tok.error(format!(
            "isolcpus=[flags,]<cpulist>: a cpulist after the flags, found {rest:?}"
        )));
    }
    let list = cpulist_value(tok, rest, nr_cpus)?;
    Ok(IsolcpusArg { flags, list })
}

impl KernelCmdline {
    /// Parse a boot line for a machine with `nr_cpus` possible CPUs.
    pub fn parse(line: &str, nr_cpus: u32) -> Result<KernelCmdline, CmdlineError> {
        let mut c = KernelCmdline::default();
        let mut tokens = tokenize(line).into_iter();
        for tok in tokens.by_ref() {
            if tok.key == "--" && tok.value.is_none() {
                break;
            }
            // `__setup` parameters: exact spelling.
            match tok.key {
                "nohz_full" => {
                    let v = tok.value_or("nohz_full=<cpulist>")?;
                    let arg = cpulist_value(&tok, v, nr_cpus)?;
                    c.housekeeping.push(HousekeepingArg::NohzFull(arg));
                    continue;
                }
                "isolcpus" => {
                    let v = tok.value_or("isolcpus=[flags,]<cpulist>")?;
                    let arg = parse_isolcpus(&tok, v, nr_cpus)?;
                    c.housekeeping.push(HousekeepingArg::Isolcpus(arg));
                    continue;
                }
                "clocksource" => {
                    let v = tok.value_or("clocksource=<name>")?;
                    if v.is_empty() {
                        return Err(tok.error("clocksource=<name> with a non-empty name"));
                    }
                    c.clocksource = Some(v.to_string());
                    continue;
                }
                "watchdog_thresh" => {
                    let v = tok.value_or("watchdog_thresh=<seconds>")?;
                    let n = parse_u32(v)
                        .ok_or_else(|| tok.error("watchdog_thresh=<seconds>, an integer >= 0"))?;
                    c.watchdog_thresh = Some(n);
                    continue;
                }
                "nowatchdog" => {
                    if tok.value.is_some() {
                        return Err(tok.error("bare `nowatchdog` without a value"));
                    }
                    c.nowatchdog = true;
                    continue;
                }
                _ => {}
            }
            // Early and module parameters: `-` and `_` are the same.
            let key = normalize_key(tok.key);
            match key.as_str() {
                "nohz" => {
                    let v = tok.value_or("nohz=on|off")?;
                    c.nohz = Some(
                        parse_bool(v)
                            .ok_or_else(|| tok.error(format!("nohz=: {BOOL_EXPECTED}")))?,
                    );
                }
                "highres" => {
                    let v = tok.value_or("highres=on|off")?;
                    c.highres = Some(
                        parse_bool(v)
                            .ok_or_else(|| tok.error(format!("highres=: {BOOL_EXPECTED}")))?,
                    );
                }
                "rcu_nocbs" => {
                    c.rcu_nocbs = Some(match tok.value {
                        None => RcuNocbsArg::Bare,
                        Some(v) => RcuNocbsArg::List(cpulist_value(&tok, v, nr_cpus)?),
                    });
                }
                "rcu_nocb_poll" => {
                    if tok.value.is_some() {
                        return Err(tok.error("bare `rcu_nocb_poll` without a value"));
                    }
                    c.rcu_nocb_poll = true;
                }
                "skew_tick" => {
                    let v = tok.value_or("skew_tick=<int>")?;
                    c.skew_tick =
                        Some(parse_int(v).ok_or_else(|| {
                            tok.error("skew_tick=<int>: 0 (off) or non-zero (on)")
                        })?);
                }
                "idle" => {
                    let v = tok.value_or("idle=poll|halt|nomwait")?;
                    c.idle = Some(match v {
                        "poll" => IdleOverride::Poll,
                        "halt" => IdleOverride::Halt,
                        "nomwait" => IdleOverride::NoMwait,
                        _ => return Err(tok.error("idle=poll, idle=halt or idle=nomwait")),
                    });
                }
                "cpuidle.off" => {
                    let v = tok.value_or("cpuidle.off=<int>")?;
                    let n = parse_int(v)
                        .filter(|n| i32::try_from(*n).is_ok())
                        .ok_or_else(|| tok.error("cpuidle.off=<int>, e.g. cpuidle.off=1"))?;
                    c.cpuidle_off = Some(n != 0);
                }
                "cpuidle.governor" => {
                    let v = tok.value_or("cpuidle.governor=<name>")?;
                    // The kernel keeps at most CPUIDLE_NAME_LEN (16) bytes including the NUL.
                    if v.is_empty() || v.len() > 15 {
                        return Err(tok.error("cpuidle.governor=<name> of 1 to 15 characters"));
                    }
                    c.cpuidle_governor = Some(v.to_string());
                }
                "cpuidle_haltpoll.force" => {
                    c.cpuidle_haltpoll_force = Some(module_bool(&tok)?);
                }
                "haltpoll.guest_halt_poll_ns" => {
                    c.haltpoll.guest_halt_poll_ns = Some(module_uint(&tok)?);
                }
                "haltpoll.guest_halt_poll_shrink" => {
                    c.haltpoll.guest_halt_poll_shrink = Some(module_uint(&tok)?);
                }
                "haltpoll.guest_halt_poll_grow" => {
                    c.haltpoll.guest_halt_poll_grow = Some(module_uint(&tok)?);
                }
                "haltpoll.guest_halt_poll_grow_start" => {
                    c.haltpoll.guest_halt_poll_grow_start = Some(module_uint(&tok)?);
                }
                "haltpoll.guest_halt_poll_allow_shrink" => {
                    c.haltpoll.guest_halt_poll_allow_shrink = Some(module_bool(&tok)?);
                }
                "intel_idle.max_cstate" => {
                    c.intel_idle_max_cstate = Some(module_uint(&tok)? as u32);
                }
                "processor.max_cstate" => {
                    c.processor_max_cstate = Some(module_uint(&tok)? as u32);
                }
                "nohz_full_aggressive" => {
                    c.nohz_full_aggressive = Some(match tok.value {
                        None => true,
                        Some(v) => parse_bool(v).ok_or_else(|| {
                            tok.error(format!("bare nohz_full_aggressive or ={BOOL_EXPECTED}"))
                        })?,
                    });
                }
                _ => c.unknown.push(tok.raw.to_string()),
            }
        }
        c.init_args = tokens.map(|t| t.raw.to_string()).collect();
        Ok(c)
    }

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

fn module_bool(tok: &Token<'_>) -> Result<bool, CmdlineError> {
    match tok.value {
        None | Some("") => Ok(true),
        Some(v) => parse_bool(v).ok_or_else(|| tok.error(format!("{}=: {BOOL_EXPECTED}", tok.key))),
    }
}

fn module_uint(tok: &Token<'_>) -> Result<u64, CmdlineError> {
    let v = tok.value.unwrap_or("");
    parse_u32(v).map(u64::from).ok_or_else(|| {
        tok.error(format!(
            "{}=<uint>, an integer from 0 to 4294967295",
            tok.key
        ))
    })
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

/// The kernel's tick build option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NohzBuild {
    /// `CONFIG_HZ_PERIODIC`: every CPU ticks at HZ, always.
    Periodic,
    /// `CONFIG_NO_HZ_IDLE`: idle CPUs may stop their tick.
    Idle,
    /// `CONFIG_NO_HZ_FULL`: also full dynticks for `nohz_full=` CPUs.
    Full,
}

/// What the kernel was built with, as far as the command line's meaning depends on it.
///
/// The architecture is assumed to be a typical x86-64 distribution build: irq_work
/// self-IPIs available, `CONFIG_PM_SLEEP_SMP=y` without `PM_SLEEP_SMP_NONZERO_CPU` (so the
/// boot CPU is always removed from `nohz_full`), `CONFIG_RCU_NOCB_CPU=y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelBuild {
    /// Tick build option.
    pub nohz: NohzBuild,
    /// `CONFIG_HIGH_RES_TIMERS`.
    pub high_res: bool,
    /// Mainline version `(major, minor)`, e.g. `(6, 10)`.
    pub version: (u32, u32),
    /// A vendor build that carries `skew_tick=` back to a kernel older than 3.4 (as the
    /// server kernel of experiment E2 did).
    pub skew_tick_backport: bool,
}

/// The effective tick configuration of a boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickConfig {
    /// Dyntick-idle active: the build has NO_HZ_COMMON and `nohz=off` was not given. When
    /// false no CPU ever stops its tick, nohz_full ones included.
    pub nohz_idle: bool,
    /// Effective full-dynticks CPUs (after the boot-CPU rule). They keep context tracking and
    /// RCU offloading even when `nohz_idle` is false, but then cannot stop their tick.
    pub nohz_full: CpuSet,
    /// Possible CPUs minus `nohz_full` (tick housekeeping).
    pub housekeeping: CpuSet,
    /// CPUs isolated from scheduler domains (`isolcpus=` with `domain` or no flag).
    pub isolated_domain: CpuSet,
    /// CPUs whose RCU callbacks are offloaded; includes the `nohz_full` CPUs.
    pub rcu_nocbs: CpuSet,
    /// `rcu_nocb_poll`: offload kthreads poll instead of being woken.
    pub rcu_nocb_poll: bool,
    /// Per-CPU tick phase offsets (`skew_tick` non-zero).
    pub skew_tick: bool,
    /// High-resolution mode (build has it and not `highres=off`); false means low-res nohz or
    /// periodic.
    pub highres: bool,
    /// `idle=` override.
    pub idle: IdleOverride,
    /// `cpuidle.off=1`: no cpuidle driver, the default idle instruction is used.
    pub cpuidle_off: bool,
    /// `cpuidle.governor=` as given.
    pub governor: Option<String>,
    /// Guest halt-polling parameters (defaults plus overrides).
    pub haltpoll: HaltpollParams,
    /// `cpuidle_haltpoll.force=Y`.
    pub haltpoll_force: bool,
    /// `nohz_full_aggressive` in force: given, dyntick-idle active and `nohz_full` non-empty.
    pub aggressive: bool,
    /// The CPU that initially holds the jiffies duty: the boot CPU (always housekeeping after
    /// the boot-CPU rule), else the first housekeeping CPU.
    pub timekeeping_cpu: u32,
    /// Softlockup watchdog threshold in seconds (default 10; 0 with `nowatchdog`).
    pub watchdog_thresh_s: u32,
    /// `clocksource=` as given.
    pub clocksource: Option<String>,
    /// `intel_idle.max_cstate=` as given.
    pub intel_idle_max_cstate: Option<u32>,
    /// `processor.max_cstate=` as given.
    pub processor_max_cstate: Option<u32>,
}

/// Housekeeping kinds touched by a parameter (a reduced version of the kernel's types).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct HkFlags {
    /// Tick (`nohz_full=`, `isolcpus=nohz`).
    tick: bool,
    /// The other kinds `nohz_full=` sets (workqueues, timers, RCU, misc, kthreads).
    noise: bool,
    /// Scheduler domains.
    domain: bool,
    /// Managed interrupts.
    managed_irq: bool,
}

impl HkFlags {
    fn any(self) -> bool {
        self.tick || self.noise || self.domain || self.managed_irq
    }
    fn and(self, o: HkFlags) -> HkFlags {
        HkFlags {
            tick: self.tick && o.tick,
            noise: self.noise && o.noise,
            domain: self.domain && o.domain,
            managed_irq: self.managed_irq && o.managed_irq,
        }
    }
    fn or(self, o: HkFlags) -> HkFlags {
        HkFlags {
            tick: self.tick || o.tick,
            noise: self.noise || o.noise,
            domain: self.domain || o.domain,
            managed_irq: self.managed_irq || o.managed_irq,
        }
    }
}

/// Known cpuidle governors.
const GOVERNORS: [&str; 4] = ["menu", "teo", "ladder", "haltpoll"];

impl TickConfig {
    /// Resolve a parsed command line for a build and CPU count; returns the config and the boot
    /// messages the kernel would print (as Strings, in boot order). boot_cpu is normally 0.
    ///
    /// Rules (kernel-tick-behaviour.md §4.1–4.2, §5, §6, §9):
    ///
    /// * **Housekeeping setup** runs for each `nohz_full=` / `isolcpus=` in line order.
    ///   * Before 3.10 `nohz_full=` does not exist; before 4.15 it is handled by the tick code
    ///     alone (last one wins) and `isolcpus=` takes no flags.
    ///   * From 4.15: a parameter with the tick kind (`nohz_full=`, `isolcpus=nohz,...`) on a
    ///     build without NO_HZ_FULL prints "Housekeeping: nohz unsupported. Build with
    ///     CONFIG_NO_HZ_FULL" and is ignored as a whole (domain isolation included). `all`
    ///     before 5.13 or `N` before 5.12 is "Housekeeping: nohz_full= or isolcpus= incorrect
    ///     CPU range" and ignored. Housekeeping = possible minus the list; if that is empty the
    ///     boot CPU is kept (with "Housekeeping: must include one present CPU, using boot
    ///     CPU:N" from 5.1 on, for the first such parameter; ≥6.10 also drops the boot CPU from
    ///     the list itself). An empty list is a no-op.
    ///   * The first parameter wins. A later one is compared with it — before 5.18 on the
    ///     single housekeeping mask whatever the flags, from 5.18 only where their kinds
    ///     overlap (i.e. `isolcpus=` has `nohz`) — and, if different, "Housekeeping:
    ///     nohz_full= must match isolcpus=" is printed and the later parameter is dropped
    ///     entirely. So `nohz_full=` is kept when it comes first; when `isolcpus=nohz,...`
    ///     comes first, the kernel keeps that one. (Boundary versions 5.1 and 5.18 are from
    ///     memory of the kernel history, not verified.)
    /// * **Boot-CPU rule** (tick init): with the typical x86 config every version removes the
    ///   boot CPU from nohz_full with "NO_HZ: Clearing N from nohz_full range for
    ///   timekeeping" (3.10–5.0 unconditionally, later because `PM_SLEEP_SMP=y`), then prints
    ///   `NO_HZ: Full dynticks CPUs: <list>.`.
    /// * `nohz=off` (or a periodic build): no dyntick-idle; nohz_full CPUs stay configured
    ///   (context tracking, RCU offload, housekeeping) but never stop their tick, because NOHZ
    ///   mode is never activated on any CPU.
    /// * `nohz_full_aggressive` needs dyntick-idle and a non-empty nohz_full, else it is inert
    ///   (a ticklab note says so).
    /// * `skew_tick`: 0 off, non-zero on (ignored before 3.4). `highres=off`: low-res mode.
    /// * RCU: `rcu_nocbs=` ∪ nohz_full; a list the kernel cannot parse (`all`/`N` too early)
    ///   gives "rcu_nocbs= bad CPU range, all CPUs set" and offloads every CPU.
    ///
    /// Message order: early parameters (`rcu_nocbs`), then housekeeping in line order, then
    /// tick init, then ticklab's notes ([`MessageOrigin::Ticklab`]).
    pub fn resolve(
        cmdline: &KernelCmdline,
        build: &KernelBuild,
        nr_cpus: u32,
        boot_cpu: u32,
    ) -> (TickConfig, Vec<BootMessage>) {
        let v = build.version;
        let possible = CpuSet::first_n(nr_cpus);
        let mut early: Vec<String> = Vec::new();
        let mut setup: Vec<String> = Vec::new();
        let mut init: Vec<String> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let note = |notes: &mut Vec<String>, s: String| notes.push(s);

        let boot_cpu = if boot_cpu < nr_cpus || nr_cpus == 0 {
            boot_cpu
        } else {
            note(
                &mut notes,
                format!(
                    "boot CPU {boot_cpu} is not a possible CPU (0-{}); using 0",
                    nr_cpus - 1
                ),
            );
            0
        };
        let too_new = |a: &CpulistArg| (a.uses_all() && v < (5, 13)) || (a.uses_n() && v < (5, 12));
        // Restrict to possible CPUs in case the line was parsed for a different count.
        let clip = |s: &CpuSet| s.intersection(&possible);

        // --- RCU (early parameter) -------------------------------------------------------
        let mut rcu_nocbs = CpuSet::new();
        if let Some(RcuNocbsArg::List(a)) = &cmdline.rcu_nocbs {
            if too_new(a) {
                early.push("rcu_nocbs= bad CPU range, all CPUs set".into());
                rcu_nocbs = possible.clone();
            } else {
                rcu_nocbs = clip(&a.cpus);
            }
        }

        // --- Housekeeping setup (__setup parameters, line order) -------------------------
        let mut nohz_full_mask: Option<CpuSet> = None;
        let mut isolated_domain = CpuSet::new();
        let full_build = build.nohz == NohzBuild::Full;
        if v < (4, 15) {
            for h in &cmdline.housekeeping {
                match h {
                    HousekeepingArg::NohzFull(a) => {
                        if v < (3, 10) || !full_build {
                            note(
                                &mut notes,
                                format!(
                                    "nohz_full={} is not read by this kernel ({}); it goes to \
                                     init",
                                    a.text,
                                    if v < (3, 10) {
                                        "nohz_full= arrived in 3.10"
                                    } else {
                                        "built without CONFIG_NO_HZ_FULL"
                                    }
                                ),
                            );
                        } else if too_new(a) {
                            setup.push("NO_HZ: Incorrect nohz_full cpumask".into());
                        } else {
                            nohz_full_mask = Some(clip(&a.cpus));
                        }
                    }
                    HousekeepingArg::Isolcpus(a) => {
                        if !a.flags.is_empty() || too_new(&a.list) {
                            note(
                                &mut notes,
                                format!(
                                    "isolcpus flags and the words N/all need 4.15 or later; \
                                     this kernel ignores isolcpus={}",
                                    a.list.text
                                ),
                            );
                        } else {
                            isolated_domain = clip(&a.list.cpus);
                        }
                    }
                }
            }
        } else {
            // One staging mask per kind once set; before 5.18 all kinds share one mask.
            let split_masks = v >= (5, 18);
            let mut set_flags = HkFlags::default();
            let mut masks: Vec<(HkFlags, CpuSet)> = Vec::new();
            for h in &cmdline.housekeeping {
                let (flags, list, name) = match h {
                    HousekeepingArg::NohzFull(a) => (
                        HkFlags {
                            tick: true,
                            noise: true,
                            ..HkFlags::default()
                        },
                        a,
                        "nohz_full",
                    ),
                    HousekeepingArg::Isolcpus(a) => {
                        for fl in &a.flags {
                            if let IsolcpusFlag::Unknown(u) = fl {
                                setup.push(format!("isolcpus: Skipped unknown flag {u}"));
                            }
                        }
                        (
                            HkFlags {
                                tick: a.nohz(),
                                domain: a.domain(),
                                managed_irq: a.managed_irq(),
                                ..HkFlags::default()
                            },
                            &a.list,
                            "isolcpus",
                        )
                    }
                };
                if flags.tick && !set_flags.tick && !full_build {
                    setup.push(
                        "Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL".into(),
                    );
                    continue;
                }
                if too_new(list) {
                    setup.push("Housekeeping: nohz_full= or isolcpus= incorrect CPU range".into());
                    continue;
                }
                let mut isolated = clip(&list.cpus);
                let mut staging = possible.difference(&isolated);
                if staging.is_empty() && nr_cpus > 0 {
                    staging.insert(boot_cpu);
                    if v >= (6, 10) {
                        isolated.remove(boot_cpu);
                    }
                    if !set_flags.any() && v >= (5, 1) {
                        setup.push(format!(
                            "Housekeeping: must include one present CPU, using boot CPU:{boot_cpu}"
                        ));
                    }
                }
                if isolated.is_empty() {
                    continue;
                }
                if set_flags.any() {
                    let clash = masks.iter().any(|(kinds, mask)| {
                        let compare = !split_masks || kinds.and(flags).any();
                        compare && *mask != staging
                    });
                    if clash {
                        setup.push("Housekeeping: nohz_full= must match isolcpus=".into());
                        note(
                            &mut notes,
                            format!(
                                "the kernel keeps the housekeeping parameter that came first \
                                 and drops this {name}={}",
                                list.text
                            ),
                        );
                        continue;
                    }
                }
                masks.push((flags, staging.clone()));
                if flags.tick && !set_flags.tick {
                    nohz_full_mask = Some(isolated.clone());
                }
                if flags.domain && !set_flags.domain {
                    isolated_domain = possible.difference(&staging);
                }
                set_flags = set_flags.or(flags);
            }
        }

        // --- Tick init: boot-CPU rule and the full-dynticks banner -----------------------
        let mut nohz_full = CpuSet::new();
        if let Some(mut mask) = nohz_full_mask {
            if mask.contains(boot_cpu) {
                init.push(format!(
                    "NO_HZ: Clearing {boot_cpu} from nohz_full range for timekeeping"
                ));
                mask.remove(boot_cpu);
            }
            init.push(format!("NO_HZ: Full dynticks CPUs: {}.", mask.to_cpulist()));
            if mask.is_empty() {
                note(
                    &mut notes,
                    "no CPU is left in nohz_full after the boot-CPU rule; full dynticks is \
                     inert"
                        .into(),
                );
            }
            nohz_full = mask;
        }
        let housekeeping = possible.difference(&nohz_full);
        let rcu_nocbs = rcu_nocbs.union(&nohz_full);

        // --- Dyntick idle, high-res, skew ------------------------------------------------
        let nohz_idle = build.nohz != NohzBuild::Periodic && cmdline.nohz != Some(false);
        if build.nohz == NohzBuild::Periodic && cmdline.nohz.is_some() {
            note(
                &mut notes,
                "nohz= has no effect on a CONFIG_HZ_PERIODIC build (the kernel passes it to \
                 init)"
                    .into(),
            );
        }
        if !nohz_idle && build.nohz != NohzBuild::Periodic && !nohz_full.is_empty() {
            note(
                &mut notes,
                format!(
                    "nohz=off: CPUs {} stay nohz_full (context tracking, RCU offload) but never \
                     stop their tick",
                    nohz_full.to_cpulist()
                ),
            );
        }
        let highres = build.high_res && cmdline.highres != Some(false);
        if !build.high_res && cmdline.highres.is_some() {
            note(
                &mut notes,
                "highres= has no effect without CONFIG_HIGH_RES_TIMERS".into(),
            );
        }
        let mut skew_tick = cmdline.skew_tick.is_some_and(|s| s != 0);
        if skew_tick && v < (3, 4) && !build.skew_tick_backport {
            note(
                &mut notes,
                "skew_tick= arrived in 3.4; this kernel passes it to init".into(),
            );
            skew_tick = false;
        }

        // --- Aggressive (2023 RFC) -------------------------------------------------------
        let asked = cmdline.nohz_full_aggressive == Some(true);
        let aggressive = asked && nohz_idle && !nohz_full.is_empty();
        if asked && !aggressive {
            let why = if !nohz_idle {
                "dyntick-idle is off, so no CPU stops its tick anyway"
            } else {
                "there are no nohz_full CPUs, so the timekeeping CPU already stops its idle tick \
                 under plain NO_HZ_IDLE rules"
            };
            note(
                &mut notes,
                format!("nohz_full_aggressive accepted but inert: {why}"),
            );
        }

        // --- Idle ------------------------------------------------------------------------
        let idle = cmdline.idle.unwrap_or_default();
        let haltpoll_force = cmdline.cpuidle_haltpoll_force.unwrap_or(false);
        if haltpoll_force && idle != IdleOverride::Default {
            note(
                &mut notes,
                "cpuidle-haltpoll does not load when an idle= override is given".into(),
            );
        }
        if let Some(g) = &cmdline.cpuidle_governor
            && !GOVERNORS.contains(&g.as_str())
        {
            note(
                &mut notes,
                format!(
                    "cpuidle.governor={g} names no known governor; the kernel keeps its default"
                ),
            );
        }

        let timekeeping_cpu = if housekeeping.contains(boot_cpu) {
            boot_cpu
        } else {
            housekeeping.first().unwrap_or(boot_cpu)
        };

        let config = TickConfig {
            nohz_idle,
            nohz_full,
            housekeeping,
            isolated_domain,
            rcu_nocbs,
            rcu_nocb_poll: cmdline.rcu_nocb_poll,
            skew_tick,
            highres,
            idle,
            cpuidle_off: cmdline.cpuidle_off.unwrap_or(false),
            governor: cmdline.cpuidle_governor.clone(),
            haltpoll: cmdline.haltpoll.apply(),
            haltpoll_force,
            aggressive,
            timekeeping_cpu,
            watchdog_thresh_s: if cmdline.nowatchdog {
                0
            } else {
                cmdline.watchdog_thresh.unwrap_or(10)
            },
            clocksource: cmdline.clocksource.clone(),
            intel_idle_max_cstate: cmdline.intel_idle_max_cstate,
            processor_max_cstate: cmdline.processor_max_cstate,
        };
        let kernel = |text: String| BootMessage {
            origin: MessageOrigin::Kernel,
            text,
        };
        let mut messages: Vec<BootMessage> = early.into_iter().map(kernel).collect();
        messages.extend(setup.into_iter().map(kernel));
        messages.extend(init.into_iter().map(kernel));
        messages.extend(notes.into_iter().map(|text| BootMessage {
            origin: MessageOrigin::Ticklab,
            text,
        }));
        (config, messages)
    }

    /// The role of `cpu` in this configuration (for reports).
    pub fn role(&self, cpu: u32) -> CpuRole {
        if cpu == self.timekeeping_cpu {
            CpuRole::Timekeeping
        } else if self.nohz_full.contains(cpu) {
            CpuRole::NohzFull
        } else {
            CpuRole::Housekeeping
        }
    }
}

#[cfg(test)]
mod tests {
    /// How a ticklab remark reads when shown.
    const TICKLAB_NOTE: &str = "ticklab: ";
    use super::*;

    fn p(line: &str) -> KernelCmdline {
        KernelCmdline::parse(line, 8).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    fn set(list: &str) -> CpuSet {
        parse_cpulist(list, 1024).unwrap()
    }

    fn build(nohz: NohzBuild, version: (u32, u32)) -> KernelBuild {
        KernelBuild {
            nohz,
            high_res: true,
            version,
            skew_tick_backport: false,
        }
    }

    fn resolve(line: &str, nr: u32, b: KernelBuild) -> (TickConfig, Vec<String>) {
        let c = KernelCmdline::parse(line, nr).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        let (cfg, msgs) = TickConfig::resolve(&c, &b, nr, 0);
        (cfg, msgs.iter().map(BootMessage::to_string).collect())
    }

    const FULL_6_10: KernelBuild = KernelBuild {
        nohz: NohzBuild::Full,
        high_res: true,
        version: (6, 10),
        skew_tick_backport: false,
    };

    #[test]
    fn tokenizer_quotes_and_whitespace() {
        let c = p("clocksource=\"tsc\"");
        assert_eq!(c.clocksource.as_deref(), Some("tsc"));
        let c = p("\"nohz_full=1-3\"");
        assert_eq!(c.nohz_full().unwrap().cpus, set("1-3"));
        let c = p("foo=\"a b\" nohz=off");
        assert_eq!(c.unknown, vec!["foo=\"a b\"".to_string()]);
        assert_eq!(c.nohz, Some(false));
        let c = p("  nohz=off\tskew_tick=1\nquiet  ");
        assert_eq!((c.nohz, c.skew_tick), (Some(false), Some(1)));
        assert_eq!(c.unknown, vec!["quiet".to_string()]);
        // An unterminated quote swallows the rest of the line, as in the kernel.
        let c = p("foo=\"a b nohz=off");
        assert_eq!(c.nohz, None);
        assert_eq!(c.unknown, vec!["foo=\"a b nohz=off".to_string()]);
        // A quoted value may contain `=`.
        let c = p("cpuidle.governor=\"te=o\"");
        assert_eq!(c.cpuidle_governor.as_deref(), Some("te=o"));
        assert_eq!(p("").unknown.len(), 0);
        assert_eq!(p("   ").unknown.len(), 0);
    }

    #[test]
    fn double_dash_ends_kernel_parameters() {
        let c = p("quiet -- single nohz=off");
        assert_eq!(c.unknown, vec!["quiet".to_string()]);
        assert_eq!(
            c.init_args,
            vec!["single".to_string(), "nohz=off".to_string()]
        );
        assert_eq!(c.nohz, None);
        // `--=x` is a parameter, not the separator.
        assert_eq!(p("--=x nohz=on").nohz, Some(true));
    }

    #[test]
    fn dash_underscore_equivalence_only_for_early_and_module_params() {
        assert_eq!(p("skew-tick=1").skew_tick, Some(1));
        assert_eq!(
            p("cpuidle-haltpoll.force=1").cpuidle_haltpoll_force,
            Some(true)
        );
        assert_eq!(
            p("haltpoll.guest-halt-poll-ns=5")
                .haltpoll
                .guest_halt_poll_ns,
            Some(5)
        );
        // `__setup` parameters need the exact name.
        let c = p("nohz-full=1-3");
        assert!(c.housekeeping.is_empty());
        assert_eq!(c.unknown, vec!["nohz-full=1-3".to_string()]);
    }

    #[test]
    fn booleans_table() {
        let cases: &[(&str, Option<bool>)] = &[
            ("on", Some(true)),
            ("ON", Some(true)),
            ("On", Some(true)),
            ("off", Some(false)),
            ("OFF", Some(false)),
            ("1", Some(true)),
            ("0", Some(false)),
            ("y", Some(true)),
            ("Y", Some(true)),
            ("n", Some(false)),
            ("N", Some(false)),
            ("yes", Some(true)),
            ("No", Some(false)),
            ("true", Some(true)),
            ("FALSE", Some(false)),
            ("2", None),
            ("onn", None),
            ("of", None),
            ("", None),
            ("yup", None),
        ];
        for (v, want) in cases {
            for key in ["nohz", "highres", "nohz_full_aggressive"] {
                let line = format!("{key}={v}");
                let got = KernelCmdline::parse(&line, 8).ok().map(|c| match key {
                    "nohz" => c.nohz.unwrap(),
                    "highres" => c.highres.unwrap(),
                    _ => c.nohz_full_aggressive.unwrap(),
                });
                assert_eq!(got, *want, "{line}");
            }
            let line = format!("haltpoll.guest_halt_poll_allow_shrink={v}");
            let got =
                KernelCmdline::parse(&line, 8).map(|c| c.haltpoll.guest_halt_poll_allow_shrink);
            // A module boolean with an empty value means true.
            let want = if v.is_empty() { Some(true) } else { *want };
            assert_eq!(got.ok().flatten(), want, "{line}");
        }
        // Bare forms.
        assert_eq!(p("nohz_full_aggressive").nohz_full_aggressive, Some(true));
        assert_eq!(
            p("cpuidle_haltpoll.force").cpuidle_haltpoll_force,
            Some(true)
        );
        assert!(KernelCmdline::parse("nohz", 8).is_err());
        assert!(KernelCmdline::parse("highres", 8).is_err());
    }

    #[test]
    fn integers_table() {
        let cases: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("1", Some(1)),
            ("-1", Some(-1)),
            ("+7", Some(7)),
            ("0x10", Some(16)),
            ("0X1f", Some(31)),
            ("010", Some(8)),
            ("00", Some(0)),
            ("08", None),
            ("1a", None),
            ("", None),
            ("0x", None),
            ("-", None),
            ("99999999999999999999", None),
        ];
        for (v, want) in cases {
            let line = format!("skew_tick={v}");
            let got = KernelCmdline::parse(&line, 8)
                .ok()
                .and_then(|c| c.skew_tick);
            assert_eq!(got, *want, "{line}");
        }
        // Module uints are 32-bit and unsigned.
        let uint: &[(&str, Option<u64>)] = &[
            ("50000", Some(50_000)),
            ("4294967295", Some(4_294_967_295)),
            ("4294967296", None),
            ("-1", None),
            ("", None),
        ];
        for (v, want) in uint {
            let line = format!("haltpoll.guest_halt_poll_ns={v}");
            let got = KernelCmdline::parse(&line, 8)
                .ok()
                .and_then(|c| c.haltpoll.guest_halt_poll_ns);
            assert_eq!(got, *want, "{line}");
        }
        assert_eq!(p("cpuidle.off=1").cpuidle_off, Some(true));
        assert_eq!(p("cpuidle.off=0").cpuidle_off, Some(false));
        assert_eq!(p("cpuidle.off=2").cpuidle_off, Some(true));
        assert!(KernelCmdline::parse("cpuidle.off=yes", 8).is_err());
        assert_eq!(p("intel_idle.max_cstate=1").intel_idle_max_cstate, Some(1));
        assert_eq!(p("processor.max_cstate=0").processor_max_cstate, Some(0));
        assert_eq!(p("watchdog_thresh=0x14").watchdog_thresh, Some(20));
    }

    #[test]
    fn cpulist_edge_cases_through_the_parser() {
        // (value, nr_cpus, expected canonical list or None for an error)
        let cases: &[(&str, u32, Option<&str>)] = &[
            ("all", 8, Some("0-7")),
            ("ALL", 8, Some("0-7")),
            ("N", 8, Some("7")),
            ("1-N", 8, Some("1-7")),
            ("0-7:2/4", 8, Some("0-1,4-5")),
            ("1,3,5", 8, Some("1,3,5")),
            ("", 8, Some("")),
            ("0", 1, Some("0")),
            ("all", 1, Some("0")),
            ("8", 8, None),
            ("0-8", 8, None),
            ("3-1", 8, None),
            ("1,,2", 8, None),
            ("1-", 8, None),
            ("0-7:0/4", 8, None),
            ("x", 8, None),
            ("1 2", 8, None),
        ];
        for (v, nr, want) in cases {
            for key in ["nohz_full", "rcu_nocbs", "isolcpus"] {
                let line = format!("{key}=\"{v}\"");
                let got = KernelCmdline::parse(&line, *nr).map(|c| match key {
                    "nohz_full" => c.nohz_full().unwrap().cpus.to_cpulist(),
                    "isolcpus" => c.isolcpus().unwrap().list.cpus.to_cpulist(),
                    _ => match c.rcu_nocbs.unwrap() {
                        RcuNocbsArg::List(a) => a.cpus.to_cpulist(),
                        RcuNocbsArg::Bare => "bare".into(),
                    },
                });
                assert_eq!(got.ok().as_deref(), *want, "{line} on {nr} CPUs");
            }
        }
        assert_eq!(p("rcu_nocbs").rcu_nocbs, Some(RcuNocbsArg::Bare));
        let a = p("nohz_full=1-N").nohz_full().unwrap().clone();
        assert!(a.uses_n() && !a.uses_all());
        let a = p("nohz_full=All").nohz_full().unwrap().clone();
        assert!(a.uses_all() && !a.uses_n());
        assert!(!p("nohz_full=1-7:1/2").nohz_full().unwrap().uses_n());
    }

    #[test]
    fn isolcpus_flags() {
        let c = p("isolcpus=nohz,domain,managed_irq,2-3");
        let a = c.isolcpus().unwrap();
        assert!(a.nohz() && a.domain() && a.managed_irq());
        assert_eq!(a.list.cpus, set("2-3"));
        let a = p("isolcpus=2-3").isolcpus().unwrap().clone();
        assert!(a.flags.is_empty() && a.domain() && !a.nohz());
        let a = p("isolcpus=managed_irq,2-3").isolcpus().unwrap().clone();
        assert!(!a.domain() && a.managed_irq());
        // Unknown flags are kept; with no known flag the default (domain) applies.
        let a = p("isolcpus=foo,2-3").isolcpus().unwrap().clone();
        assert_eq!(a.flags, vec![IsolcpusFlag::Unknown("foo".into())]);
        assert!(a.domain());
        let a = p("isolcpus=nohz,bar_baz,4").isolcpus().unwrap().clone();
        assert_eq!(
            a.flags,
            vec![IsolcpusFlag::Nohz, IsolcpusFlag::Unknown("bar_baz".into())]
        );
        assert!(!a.domain());
        // `N` and `all` are cpulists, not flags.
        assert_eq!(p("isolcpus=all").isolcpus().unwrap().list.cpus, set("0-7"));
        assert_eq!(
            p("isolcpus=domain,N").isolcpus().unwrap().list.cpus,
            set("7")
        );
        // An empty list after the flags is accepted (and is a no-op, as in the kernel).
        assert!(
            p("isolcpus=domain,")
                .isolcpus()
                .unwrap()
                .list
                .cpus
                .is_empty()
        );
        // Flags without a list are an error.
        for bad in ["isolcpus=nohz,domain", "isolcpus=nohz", "isolcpus"] {
            assert!(KernelCmdline::parse(bad, 8).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_parameters_are_kept_in_order() {
        let line = "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=ab-cd ro quiet splash nohz=on \
                    vt.handoff=7 \"x y\"";
        let c = p(line);
        assert_eq!(
            c.unknown,
            [
                "BOOT_IMAGE=/vmlinuz-6.8.0",
                "root=UUID=ab-cd",
                "ro",
                "quiet",
                "splash",
                "vt.handoff=7",
                "\"x y\""
            ]
        );
        assert_eq!(c.nohz, Some(true));
    }

    #[test]
    fn error_names_token_position_and_expectation() {
        let e = KernelCmdline::parse("root=/dev/vda ro nohz_full=2-99", 8).unwrap_err();
        assert_eq!((e.token_number, e.byte_offset), (3, 17));
        assert_eq!(e.token, "nohz_full=2-99");
        let shown = e.to_string();
        assert!(
            shown.starts_with(
                "kernel command line, token 3 \"nohz_full=2-99\" at byte 17: CPUs below 8"
            ),
            "{shown}"
        );
        assert!(shown.contains("\"2-99\""), "{shown}");

        // (line, token number, byte offset, fragment of the expectation)
        let cases: &[(&str, usize, usize, &str)] = &[
            ("idle=mwait", 1, 0, "idle=poll"),
            ("quiet nohz", 2, 6, "nohz=on|off"),
            ("nohz=maybe", 1, 0, "boolean"),
            ("a b  skew_tick", 3, 5, "skew_tick=<int>"),
            ("skew_tick=one", 1, 0, "skew_tick=<int>"),
            ("isolcpus=nohz,domain", 1, 0, "a cpulist after the flags"),
            ("isolcpus=nohz,9", 1, 0, "CPUs below 8"),
            ("haltpoll.guest_halt_poll_ns=-1", 1, 0, "<uint>"),
            ("cpuidle.governor=", 1, 0, "1 to 15 characters"),
            (
                "cpuidle.governor=abcdefghijklmnop",
                1,
                0,
                "1 to 15 characters",
            ),
            ("nowatchdog=1", 1, 0, "bare `nowatchdog`"),
            ("rcu_nocb_poll=1", 1, 0, "bare `rcu_nocb_poll`"),
            ("watchdog_thresh=-5", 1, 0, "integer >= 0"),
            ("clocksource=", 1, 0, "non-empty"),
            ("x \"nohz_full=1,,2\"", 2, 2, "empty item"),
            ("nohz_full_aggressive=sure", 1, 0, "boolean"),
        ];
        for (line, n, off, frag) in cases {
            let e = KernelCmdline::parse(line, 8).unwrap_err();
            assert_eq!((e.token_number, e.byte_offset), (*n, *off), "{line}: {e}");
            assert!(e.expected.contains(frag), "{line}: {e}");
            assert!(line[e.byte_offset..].starts_with(&e.token), "{line}: {e}");
        }
    }

    #[test]
    fn last_scalar_wins_housekeeping_keeps_order() {
        let c = p("skew_tick=1 nohz=off skew_tick=0 nohz=on");
        assert_eq!((c.skew_tick, c.nohz), (Some(0), Some(true)));
        let c = p("isolcpus=1 nohz_full=2 nohz_full=3");
        assert_eq!(c.housekeeping.len(), 3);
        assert!(matches!(c.housekeeping[0], HousekeepingArg::Isolcpus(_)));
        assert_eq!(c.nohz_full().unwrap().text, "2");
    }

    #[test]
    fn display_is_canonical_and_reparses() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("quiet nohz=0 highres=N", "nohz=off highres=off quiet"),
            (
                "nohz_full=\"1-N\" isolcpus=nohz,foo,1-7",
                "nohz_full=1-N isolcpus=nohz,foo,1-7",
            ),
            (
                "nohz_full_aggressive=yes nohz_full_aggressive=0",
                "nohz_full_aggressive=0",
            ),
            (
                "skew-tick=0x10 cpuidle_haltpoll.force",
                "skew_tick=16 cpuidle_haltpoll.force=Y",
            ),
            (
                "clocksource=\"my clock\" -- single",
                "clocksource=\"my clock\" -- single",
            ),
            (
                "rcu_nocbs rcu_nocb_poll idle=poll",
                "rcu_nocbs rcu_nocb_poll idle=poll",
            ),
        ];
        for (line, want) in cases {
            let c = p(line);
            let shown = c.to_string();
            assert_eq!(shown, *want, "{line}");
            assert_eq!(p(&shown), c, "{line}");
        }
    }

    #[test]
    fn boot_cpu_rule_across_versions() {
        struct Case {
            line: &'static str,
            version: (u32, u32),
            boot: u32,
            nohz_full: &'static str,
            housekeeping: &'static str,
            timekeeping: u32,
            messages: &'static [&'static str],
        }
        const MUST0: &str = "Housekeeping: must include one present CPU, using boot CPU:0";
        const CLEAR0: &str = "NO_HZ: Clearing 0 from nohz_full range for timekeeping";
        const FULL17: &str = "NO_HZ: Full dynticks CPUs: 1-7.";
        let cases = [
            // nohz_full=all: ≥6.10 drops the boot CPU in the housekeeping code (no clearing).
            Case {
                line: "nohz_full=all",
                version: (6, 10),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[MUST0, FULL17],
            },
            Case {
                line: "nohz_full=all",
                version: (6, 12),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[MUST0, FULL17],
            },
            // 5.13..6.9: the tick code still has to clear it.
            Case {
                line: "nohz_full=all",
                version: (6, 9),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[MUST0, CLEAR0, FULL17],
            },
            Case {
                line: "nohz_full=all",
                version: (5, 13),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[MUST0, CLEAR0, FULL17],
            },
            // Before 5.13 `all` is not a cpulist word: the kernel rejects the parameter.
            Case {
                line: "nohz_full=all",
                version: (5, 12),
                boot: 0,
                nohz_full: "",
                housekeeping: "0-7",
                timekeeping: 0,
                messages: &["Housekeeping: nohz_full= or isolcpus= incorrect CPU range"],
            },
            Case {
                line: "nohz_full=1-N",
                version: (5, 12),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[FULL17],
            },
            Case {
                line: "nohz_full=1-N",
                version: (5, 11),
                boot: 0,
                nohz_full: "",
                housekeeping: "0-7",
                timekeeping: 0,
                messages: &["Housekeeping: nohz_full= or isolcpus= incorrect CPU range"],
            },
            // Every CPU listed, 5.1..6.9: the warning, then the clearing.
            Case {
                line: "nohz_full=0-7",
                version: (5, 1),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[MUST0, CLEAR0, FULL17],
            },
            // 3.10–5.0: only the clearing message.
            Case {
                line: "nohz_full=0-7",
                version: (5, 0),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[CLEAR0, FULL17],
            },
            Case {
                line: "nohz_full=0-7",
                version: (4, 14),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[CLEAR0, FULL17],
            },
            Case {
                line: "nohz_full=0-7",
                version: (3, 10),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[CLEAR0, FULL17],
            },
            // Boot CPU listed but housekeeping not empty: clearing in every version.
            Case {
                line: "nohz_full=0-3",
                version: (6, 10),
                boot: 0,
                nohz_full: "1-3",
                housekeeping: "0,4-7",
                timekeeping: 0,
                messages: &[CLEAR0, "NO_HZ: Full dynticks CPUs: 1-3."],
            },
            Case {
                line: "nohz_full=0-3",
                version: (4, 19),
                boot: 0,
                nohz_full: "1-3",
                housekeeping: "0,4-7",
                timekeeping: 0,
                messages: &[CLEAR0, "NO_HZ: Full dynticks CPUs: 1-3."],
            },
            // Boot CPU not listed: nothing to clear.
            Case {
                line: "nohz_full=1-7",
                version: (6, 10),
                boot: 0,
                nohz_full: "1-7",
                housekeeping: "0",
                timekeeping: 0,
                messages: &[FULL17],
            },
            // A boot CPU other than 0 holds the duty.
            Case {
                line: "nohz_full=0-3",
                version: (6, 10),
                boot: 2,
                nohz_full: "0-1,3",
                housekeeping: "2,4-7",
                timekeeping: 2,
                messages: &[
                    "NO_HZ: Clearing 2 from nohz_full range for timekeeping",
                    "NO_HZ: Full dynticks CPUs: 0-1,3.",
                ],
            },
            Case {
                line: "nohz_full=all",
                version: (6, 10),
                boot: 3,
                nohz_full: "0-2,4-7",
                housekeeping: "3",
                timekeeping: 3,
                messages: &[
                    "Housekeeping: must include one present CPU, using boot CPU:3",
                    "NO_HZ: Full dynticks CPUs: 0-2,4-7.",
                ],
            },
            // Only the boot CPU listed: nohz_full ends up empty and inert.
            Case {
                line: "nohz_full=0",
                version: (6, 10),
                boot: 0,
                nohz_full: "",
                housekeeping: "0-7",
                timekeeping: 0,
                messages: &[
                    CLEAR0,
                    "NO_HZ: Full dynticks CPUs: .",
                    "ticklab: no CPU is left in nohz_full after the boot-CPU rule; full \
                     dynticks is inert",
                ],
            },
            // Empty list: no-op.
            Case {
                line: "nohz_full=",
                version: (6, 10),
                boot: 0,
                nohz_full: "",
                housekeeping: "0-7",
                timekeeping: 0,
                messages: &[],
            },
        ];
        for c in &cases {
            let cmd = KernelCmdline::parse(c.line, 8).unwrap();
            let (cfg, msgs) =
                TickConfig::resolve(&cmd, &build(NohzBuild::Full, c.version), 8, c.boot);
            let ctx = format!("{} on {:?} boot {}", c.line, c.version, c.boot);
            assert_eq!(cfg.nohz_full, set(c.nohz_full), "{ctx}");
            assert_eq!(cfg.housekeeping, set(c.housekeeping), "{ctx}");
            assert_eq!(cfg.timekeeping_cpu, c.timekeeping, "{ctx}");
            let msgs: Vec<String> = msgs.iter().map(BootMessage::to_string).collect();
            assert_eq!(msgs, c.messages, "{ctx}");
            assert!(!cfg.nohz_full.contains(c.boot), "{ctx}");
        }
    }

    #[test]
    fn nohz_full_needs_the_build_and_the_version() {
        let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Idle, (6, 1)));
        assert!(cfg.nohz_full.is_empty());
        assert_eq!(cfg.housekeeping, set("0-7"));
        assert!(cfg.nohz_idle);
        assert_eq!(
            msgs,
            ["Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL"]
        );
        // Before the housekeeping code (4.15) the parameter is simply not read.
        let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Idle, (4, 14)));
        assert!(cfg.nohz_full.is_empty());
        assert_eq!(msgs.len(), 1);
        assert!(msgs[0].starts_with(TICKLAB_NOTE), "{msgs:?}");
        let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Full, (3, 9)));
        assert!(cfg.nohz_full.is_empty());
        assert!(msgs[0].contains("arrived in 3.10"), "{msgs:?}");
    }

    #[test]
    fn isolcpus_and_nohz_full_interplay() {
        let mismatch = "Housekeeping: nohz_full= must match isolcpus=";
        // (line, version, nohz_full, isolated_domain, mismatch expected)
        type Case = (&'static str, (u32, u32), &'static str, &'static str, bool);
        let cases: &[Case] = &[
            (
                "nohz_full=2-7 isolcpus=nohz,domain,2-5",
                (6, 6),
                "2-7",
                "",
                true,
            ),
            (
                "isolcpus=nohz,domain,2-5 nohz_full=2-7",
                (6, 6),
                "2-5",
                "2-5",
                true,
            ),
            (
                "isolcpus=nohz,domain,2-7 nohz_full=2-7",
                (6, 6),
                "2-7",
                "2-7",
                false,
            ),
            (
                "nohz_full=2-7 isolcpus=domain,2-7",
                (6, 6),
                "2-7",
                "2-7",
                false,
            ),
            // From 5.18 a domain-only isolcpus= is not compared with nohz_full=...
            (
                "isolcpus=domain,2-5 nohz_full=2-7",
                (6, 6),
                "2-7",
                "2-5",
                false,
            ),
            ("isolcpus=2-5 nohz_full=2-7", (5, 18), "2-7", "2-5", false),
            // ... before, there is one housekeeping mask and any difference clashes.
            ("isolcpus=2-5 nohz_full=2-7", (5, 15), "", "2-5", true),
            ("nohz_full=2-7 isolcpus=2-5", (4, 15), "2-7", "", true),
            // isolcpus=nohz alone acts as nohz_full.
            ("isolcpus=nohz,domain,1-7", (6, 10), "1-7", "1-7", false),
            ("isolcpus=nohz,1-7", (6, 10), "1-7", "", false),
            // The same parameter twice: identical is fine, different clashes.
            ("nohz_full=1-3 nohz_full=1-3", (6, 10), "1-3", "", false),
            ("nohz_full=1-3 nohz_full=1-4", (6, 10), "1-3", "", true),
            // E4's line.
            (
                "isolcpus=2-5 nohz_full=2-5 rcu_nocbs=2-5",
                (5, 15),
                "2-5",
                "2-5",
                false,
            ),
        ];
        for (line, v, nf, dom, clash) in cases {
            let (cfg, msgs) = resolve(line, 8, build(NohzBuild::Full, *v));
            let ctx = format!("{line} on {v:?}: {msgs:?}");
            assert_eq!(cfg.nohz_full, set(nf), "{ctx}");
            assert_eq!(cfg.isolated_domain, set(dom), "{ctx}");
            assert_eq!(msgs.iter().any(|m| m == mismatch), *clash, "{ctx}");
            if *clash {
                let i = msgs.iter().position(|m| m == mismatch).unwrap();
                assert!(
                    msgs.iter().skip(i).any(|m| m.starts_with(TICKLAB_NOTE)),
                    "{ctx}"
                );
            }
        }
        // isolcpus=nohz on a build without NO_HZ_FULL: the whole parameter is dropped.
        let (cfg, msgs) = resolve(
            "isolcpus=nohz,domain,1-7",
            8,
            build(NohzBuild::Idle, (6, 6)),
        );
        assert!(cfg.isolated_domain.is_empty() && cfg.nohz_full.is_empty());
        assert_eq!(
            msgs,
            ["Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL"]
        );
        // Unknown flags: notice, default domain.
        let (cfg, msgs) = resolve("isolcpus=foo,1-3", 8, FULL_6_10);
        assert_eq!(cfg.isolated_domain, set("1-3"));
        assert_eq!(msgs, ["isolcpus: Skipped unknown flag foo"]);
        // Pre-4.15 isolcpus takes no flags.
        let (cfg, msgs) = resolve("isolcpus=nohz,1-3", 8, build(NohzBuild::Full, (4, 14)));
        assert!(cfg.isolated_domain.is_empty() && cfg.nohz_full.is_empty());
        assert!(msgs[0].starts_with(TICKLAB_NOTE));
        let (cfg, _) = resolve("isolcpus=1-3", 8, build(NohzBuild::Full, (4, 14)));
        assert_eq!(cfg.isolated_domain, set("1-3"));
        // isolcpus covering every CPU keeps the boot CPU as housekeeping.
        let (cfg, msgs) = resolve("isolcpus=all", 8, FULL_6_10);
        assert_eq!(cfg.isolated_domain, set("1-7"));
        assert_eq!(
            msgs,
            ["Housekeeping: must include one present CPU, using boot CPU:0"]
        );
    }

    #[test]
    fn nohz_off_and_periodic() {
        let (cfg, msgs) = resolve("nohz=off", 8, build(NohzBuild::Idle, (6, 6)));
        assert!(!cfg.nohz_idle);
        assert!(msgs.is_empty());
        let (cfg, _) = resolve("nohz=on", 8, build(NohzBuild::Idle, (6, 6)));
        assert!(cfg.nohz_idle);
        let (cfg, _) = resolve("", 8, build(NohzBuild::Periodic, (6, 6)));
        assert!(!cfg.nohz_idle);
        let (cfg, msgs) = resolve("nohz=on", 8, build(NohzBuild::Periodic, (6, 6)));
        assert!(!cfg.nohz_idle);
        assert!(msgs[0].starts_with(TICKLAB_NOTE));
        // nohz=off keeps the nohz_full set (isolation side effects) with a note.
        let (cfg, msgs) = resolve("nohz_full=1-7 nohz=off", 8, FULL_6_10);
        assert!(!cfg.nohz_idle);
        assert_eq!(cfg.nohz_full, set("1-7"));
        assert_eq!(cfg.rcu_nocbs, set("1-7"));
        assert!(
            msgs.last().unwrap().contains("never stop their tick"),
            "{msgs:?}"
        );
    }

    #[test]
    fn aggressive_gating() {
        // (line, build, aggressive, inert note expected)
        let idle = build(NohzBuild::Idle, (6, 3));
        let cases: &[(&str, KernelBuild, bool, bool)] = &[
            ("nohz_full=all nohz_full_aggressive", FULL_6_10, true, false),
            (
                "nohz_full=all nohz_full_aggressive=1",
                FULL_6_10,
                true,
                false,
            ),
            (
                "nohz_full=all nohz_full_aggressive=0",
                FULL_6_10,
                false,
                false,
            ),
            ("nohz_full=all", FULL_6_10, false, false),
            ("nohz_full_aggressive", FULL_6_10, false, true),
            ("nohz_full=0 nohz_full_aggressive", FULL_6_10, false, true),
            (
                "nohz_full=all nohz_full_aggressive nohz=off",
                FULL_6_10,
                false,
                true,
            ),
            ("nohz_full=all nohz_full_aggressive", idle, false, true),
        ];
        for (line, b, want, inert) in cases {
            let (cfg, msgs) = resolve(line, 8, *b);
            assert_eq!(cfg.aggressive, *want, "{line}: {msgs:?}");
            let has_note = msgs.iter().any(|m| {
                m.starts_with(TICKLAB_NOTE) && m.contains("nohz_full_aggressive accepted but inert")
            });
            assert_eq!(has_note, *inert, "{line}: {msgs:?}");
        }
    }

    #[test]
    fn skew_highres_idle_watchdog_rcu() {
        let b = FULL_6_10;
        let skew: &[(&str, (u32, u32), bool)] = &[
            ("", (6, 10), false),
            ("skew_tick=0", (6, 10), false),
            ("skew_tick=1", (6, 10), true),
            ("skew_tick=-3", (6, 10), true),
            ("skew_tick=1", (3, 4), true),
            ("skew_tick=1", (3, 3), false),
        ];
        for (line, v, want) in skew {
            let (cfg, _) = resolve(line, 8, build(NohzBuild::Full, *v));
            assert_eq!(cfg.skew_tick, *want, "{line} {v:?}");
        }
        assert!(resolve("", 8, b).0.highres);
        assert!(!resolve("highres=off", 8, b).0.highres);
        let lowres = KernelBuild {
            high_res: false,
            ..b
        };
        assert!(!resolve("highres=on", 8, lowres).0.highres);
        assert!(resolve("highres=on", 8, lowres).1[0].starts_with(TICKLAB_NOTE));

        assert_eq!(resolve("idle=poll", 8, b).0.idle, IdleOverride::Poll);
        assert_eq!(resolve("idle=halt", 8, b).0.idle, IdleOverride::Halt);
        assert_eq!(resolve("idle=nomwait", 8, b).0.idle, IdleOverride::NoMwait);
        assert_eq!(resolve("", 8, b).0.idle, IdleOverride::Default);
        assert!(resolve("cpuidle.off=1", 8, b).0.cpuidle_off);

        assert_eq!(resolve("", 8, b).0.watchdog_thresh_s, 10);
        assert_eq!(resolve("watchdog_thresh=20", 8, b).0.watchdog_thresh_s, 20);
        assert_eq!(
            resolve("watchdog_thresh=20 nowatchdog", 8, b)
                .0
                .watchdog_thresh_s,
            0
        );

        let (cfg, msgs) = resolve("rcu_nocbs=1-2 nohz_full=4-7 rcu_nocb_poll", 8, b);
        assert_eq!(cfg.rcu_nocbs, set("1-2,4-7"));
        assert!(cfg.rcu_nocb_poll);
        assert_eq!(msgs, ["NO_HZ: Full dynticks CPUs: 4-7."]);
        assert_eq!(
            resolve("rcu_nocbs nohz_full=2-3", 8, b).0.rcu_nocbs,
            set("2-3")
        );
        let (cfg, msgs) = resolve(
            "rcu_nocbs=all nohz_full=3",
            8,
            build(NohzBuild::Full, (5, 4)),
        );
        assert_eq!(cfg.rcu_nocbs, set("0-7"));
        // Early parameter messages come before housekeeping and tick-init ones.
        assert_eq!(
            msgs,
            [
                "rcu_nocbs= bad CPU range, all CPUs set",
                "NO_HZ: Full dynticks CPUs: 3."
            ]
        );
    }

    #[test]
    fn idle_driver_and_haltpoll() {
        let line = "haltpoll.guest_halt_poll_ns=50000 haltpoll.guest_halt_poll_grow=4 \
                    haltpoll.guest_halt_poll_allow_shrink=N cpuidle_haltpoll.force=Y";
        let (cfg, msgs) = resolve(line, 4, FULL_6_10);
        assert_eq!(
            cfg.haltpoll,
            HaltpollParams {
                guest_halt_poll_ns: 50_000,
                guest_halt_poll_grow: 4,
                guest_halt_poll_allow_shrink: false,
                ..HaltpollParams::default()
            }
        );
        assert!(cfg.haltpoll_force);
        assert!(msgs.is_empty());
        let (cfg, msgs) = resolve("cpuidle_haltpoll.force=1 idle=poll", 4, FULL_6_10);
        assert!(cfg.haltpoll_force);
        assert!(msgs[0].contains("does not load"), "{msgs:?}");
        let (cfg, msgs) = resolve("cpuidle.governor=teo", 4, FULL_6_10);
        assert_eq!(cfg.governor.as_deref(), Some("teo"));
        assert!(msgs.is_empty());
        let (_, msgs) = resolve("cpuidle.governor=fancy", 4, FULL_6_10);
        assert!(msgs[0].starts_with(TICKLAB_NOTE) && msgs[0].contains("fancy"));
        let (cfg, _) = resolve(
            "intel_idle.max_cstate=1 processor.max_cstate=2 clocksource=hpet",
            4,
            FULL_6_10,
        );
        assert_eq!(cfg.intel_idle_max_cstate, Some(1));
        assert_eq!(cfg.processor_max_cstate, Some(2));
        assert_eq!(cfg.clocksource.as_deref(), Some("hpet"));
    }

    #[test]
    fn roles() {
        let (cfg, _) = resolve("nohz_full=2-3", 4, FULL_6_10);
        let roles: Vec<CpuRole> = (0..4).map(|c| cfg.role(c)).collect();
        assert_eq!(
            roles,
            [
                CpuRole::Timekeeping,
                CpuRole::Housekeeping,
                CpuRole::NohzFull,
                CpuRole::NohzFull
            ]
        );
    }

    #[test]
    fn serde_names_for_scenarios() {
        assert_eq!(serde_json::to_string(&NohzBuild::Full).unwrap(), "\"full\"");
        let b: NohzBuild = serde_json::from_str("\"periodic\"").unwrap();
        assert_eq!(b, NohzBuild::Periodic);
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(line in "\\PC{0,80}") {
            let _ = KernelCmdline::parse(&line, 8);
        }

        #[test]
        fn parsed_lines_roundtrip_and_resolve_holds_invariants(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "nohz=off", "nohz=on", "nohz_full=all", "nohz_full=1-N", "nohz_full=0-3",
                    "nohz_full=", "isolcpus=nohz,domain,2-5", "isolcpus=foo,1", "isolcpus=0-7",
                    "rcu_nocbs", "rcu_nocbs=0-1", "rcu_nocb_poll", "skew_tick=1", "skew_tick=0",
                    "highres=off", "idle=poll", "cpuidle.off=1", "cpuidle.governor=menu",
                    "cpuidle_haltpoll.force", "haltpoll.guest_halt_poll_ns=1000",
                    "nohz_full_aggressive", "nohz_full_aggressive=0", "clocksource=tsc",
                    "watchdog_thresh=5", "nowatchdog", "quiet", "x=\"a b\"", "--", "\"", "=",
                    "nohz_full=9", "idle=bogus", " ", "\t",
                ]),
                0..10,
            ),
            nohz in proptest::sample::select(vec![NohzBuild::Periodic, NohzBuild::Idle, NohzBuild::Full]),
            version in proptest::sample::select(vec![(3, 9), (4, 14), (5, 0), (5, 10), (5, 15), (6, 9), (6, 10)]),
            nr in 1u32..10,
            boot_pick in 0u32..10,
        ) {
            let line = pieces.join(" ");
            let _ = KernelCmdline::parse(&line, nr);
            if let Ok(c) = KernelCmdline::parse(&line, 8) {
                let again = KernelCmdline::parse(&c.to_string(), 8);
                proptest::prop_assert_eq!(again.as_ref(), Ok(&c), "{}", line);
                let boot = boot_pick % 8;
                let b = KernelBuild {
                    nohz,
                    high_res: true,
                    version,
                    skew_tick_backport: false,
                };
                let (cfg, _) = TickConfig::resolve(&c, &b, 8, boot);
                let all = CpuSet::first_n(8);
                proptest::prop_assert_eq!(cfg.housekeeping.union(&cfg.nohz_full), all);
                proptest::prop_assert!(cfg.housekeeping.intersection(&cfg.nohz_full).is_empty());
                proptest::prop_assert!(cfg.housekeeping.contains(cfg.timekeeping_cpu));
                proptest::prop_assert!(!cfg.nohz_full.contains(boot));
                proptest::prop_assert!(cfg.nohz_full.is_subset(&cfg.rcu_nocbs));
                proptest::prop_assert!(!cfg.aggressive || (!cfg.nohz_full.is_empty() && cfg.nohz_idle));
                proptest::prop_assert!(nohz == NohzBuild::Full || cfg.nohz_full.is_empty());
            }
        }
    }
}
