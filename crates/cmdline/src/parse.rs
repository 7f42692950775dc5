//! Reading a kernel command line: the kernel's tokenizer, its value spellings, and
//! [`KernelCmdline::parse`], which fills the typed parameters of [`crate::params`].
//!
//! # Syntax (what [`KernelCmdline::parse`] accepts; docs/kernel-behaviour.md §4.9)
//!
//! * Tokens are separated by whitespace outside double quotes, as the kernel's `next_arg`
//!   splits them. A token is `key` or `key=value`; the first `=` splits, except an `=` that is
//!   the token's very first character (the kernel's tokenizer cannot tell it from "no `=`", so
//!   `=a=b` is the key `=a` with the value `b`). Double quotes group: `key="a b"` gives the value
//!   `a b`, and a token that starts with a quote (`"key=value"`) loses its leading and trailing
//!   quote. An unterminated quote runs to the end of the line.
//! * A bare `--` (also `"--"`) ends kernel parameters; everything after it is kept in
//!   [`KernelCmdline::init_args`] (the kernel hands those to init and never reads them itself).
//! * Parameter names match with `-` and `_` interchangeable, like the kernel's `parameq` (today
//!   also for `__setup` names such as `nohz_full=`). `nowatchdog` and `rcu_nocb_poll` are
//!   `__setup` prefixes whose handlers ignore what follows, so `nowatchdog=1` is `nowatchdog`.
//! * Booleans: `1/0`, `y/n`, `yes/no`, `on/off`, `true/false`, any case. (The kernel's
//!   `kstrtobool` only looks at the first one or two characters, so it would also take `yup`;
//!   ticklab refuses such spellings so that a typo is seen.) A bare module boolean
//!   (`cpuidle_haltpoll.force`) means true, as in the kernel.
//! * Integers follow the kernel's base-0 rule: `0x` prefix is hex, a leading `0` is octal,
//!   otherwise decimal.
//! * Cpulists use the kernel's grammar ([`crate::cpulist`]) of the release being parsed for
//!   ([`KernelCmdline::parse_for_kernel`]; [`KernelCmdline::parse`] reads today's grammar).
//! * `isolcpus=` reads its flags the way its handler does: while the value starts with a
//!   letter, `nohz,`, `domain,` and `managed_irq,` (5.6+) are flags, another word of letters
//!   and `_` followed by a comma is an unknown flag the kernel skips (5.6+; before it refuses the
//!   parameter), and any other word is an invalid flag that makes the kernel ignore the
//!   parameter. So `isolcpus=all` and `isolcpus=domain,N` are not cpulists to the kernel.
//! * Unknown parameters (`quiet`, `root=/dev/sda1`, `BOOT_IMAGE=...`) are kept as written in
//!   [`KernelCmdline::unknown`], never an error. A known parameter with a value its handler
//!   refuses is a [`CmdlineError`]: it names the token, its number and byte offset, what was
//!   expected, the kernel's error class for a cpulist, and what the kernel would do at boot
//!   (typically: print a warning and ignore the parameter). ticklab stops instead.
//! * A parameter given twice runs its handler twice; [`KernelCmdline::repeated`] records how
//!   each resolved (most: the last wins; `idle=poll` stays in force once given; `nohz_full=` and
//!   `isolcpus=` are kept in line order in [`KernelCmdline::housekeeping`], because the kernel's
//!   housekeeping setup compares a second one with the first).

use crate::cpulist::{CpulistErrno, CpulistGrammar, parse_cpulist_as};
use crate::ctype::is_space;
use crate::params::{
    CpulistArg, HousekeepingArg, IdleOverride, IsolcpusArg, IsolcpusFlag, KernelCmdline,
    RcuNocbsArg, RepeatedParam,
};

/// First release with `nohz_full=` (docs/kernel-behaviour.md §11).
const NOHZ_FULL_SINCE: (u32, u32) = (3, 10);
/// First release whose `nohz_full=` / `isolcpus=` go through the housekeeping code
/// (docs/kernel-behaviour.md §4.1).
const HOUSEKEEPING_SINCE: (u32, u32) = (4, 15);
/// First release whose `isolcpus=` knows `managed_irq` and skips unknown flags
/// (docs/kernel-behaviour.md §4.9).
const ISOLCPUS_SKIP_SINCE: (u32, u32) = (5, 6);

/// Most bytes of a command line ticklab reads: 32 times x86's `COMMAND_LINE_SIZE` (2048), the
/// buffer the kernel copies the boot line into (docs/validation.md). Longer is not a boot line.
pub const MAX_CMDLINE_BYTES: usize = 65_536;

/// Most tokens of a command line ticklab reads: a line of `COMMAND_LINE_SIZE` bytes holds at
/// most 1024 (one character and a space each); four times that leaves room for generated
/// lines while keeping the work per line bounded (docs/validation.md).
pub const MAX_CMDLINE_TOKENS: usize = 4096;

/// A known parameter with a value the kernel's handler refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel command line, token {token_number} \"{token}\" at byte {byte_offset}: {expected}. \
     At boot {at_boot}"
)]
pub struct CmdlineError {
    /// The token as written.
    pub token: String,
    /// 1-based number of the token on the line.
    pub token_number: usize,
    /// Byte offset of the token's first character in the line.
    pub byte_offset: usize,
    /// What was expected instead.
    pub expected: String,
    /// For a cpulist: how the kernel's parser classifies the failure.
    pub errno: Option<CpulistErrno>,
    /// What the kernel does with this token at boot (its handler's message and outcome).
    pub at_boot: String,
}

/// One token of the line.
struct Token<'a> {
    raw: &'a str,
    number: usize,
    offset: usize,
    key: &'a str,
    value: Option<&'a str>,
    /// Byte offset of the value's first character in the line (after a stripped quote).
    value_offset: usize,
}

/// The release being parsed for, as far as parsing depends on it.
#[derive(Clone, Copy)]
struct Release {
    /// `(major, minor)`; `None`: today's mainline.
    version: Option<(u32, u32)>,
    grammar: CpulistGrammar,
    nr_cpus: u32,
}

impl Release {
    /// Whether the release is at least `v` (mainline is newer than everything).
    fn at_least(&self, v: (u32, u32)) -> bool {
        self.version.is_none_or(|have| have >= v)
    }
}

impl Token<'_> {
    fn error(&self, expected: impl Into<String>) -> CmdlineError {
        CmdlineError {
            token: self.raw.to_string(),
            token_number: self.number,
            byte_offset: self.offset,
            expected: expected.into(),
            errno: None,
            at_boot: at_boot(self),
        }
    }

    fn value_or(&self, expected: &str) -> Result<&str, CmdlineError> {
        self.value.ok_or_else(|| self.error(expected))
    }
}

/// What the kernel does at boot with a token of a known parameter whose value its handler
/// refuses (the cpulist parameters have their own, [`cpulist_at_boot`]).
fn at_boot(tok: &Token<'_>) -> String {
    let key = normalize_key(tok.key);
    let val = tok.value.unwrap_or("");
    match (key.as_str(), tok.value) {
        (
            "nohz_full" | "isolcpus" | "clocksource" | "watchdog_thresh" | "nohz" | "highres",
            None,
        ) => {
            format!(
                "the kernel's handler is registered as `{key}=` and never sees a bare `{key}`; \
                 the word goes to init as an argument and nothing changes"
            )
        }
        ("nohz" | "highres", Some(_)) => format!(
            "the `{key}=` handler refuses the value and the kernel passes `{}` to init's \
             environment; {key} keeps its default (on)",
            tok.raw
        ),
        ("idle", _) => "the kernel prints \"Malformed early option 'idle'\" and keeps its default \
                        idle routine"
            .into(),
        ("skew_tick" | "watchdog_thresh", _) => format!(
            "the kernel reads a leading number if there is one (`get_option`) and otherwise keeps \
             the default of {key}, without a message"
        ),
        ("clocksource", Some(_)) => "the kernel keeps its own choice of clocksource".into(),
        ("nohz_full_aggressive", _) => "the RFC's handler refuses the value and the parameter \
                                        has no effect"
            .into(),
        _ => format!(
            "the kernel prints \"Booting kernel: `{val}' invalid for parameter `{key}'\" and \
             keeps the parameter's default"
        ),
    }
}

/// Which cpulist parameter a list belongs to, for the kernel's message about it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CpulistParam {
    NohzFull,
    Isolcpus,
    RcuNocbs,
}

/// What the kernel does at boot with a cpulist it cannot parse, for this parameter and release.
fn cpulist_at_boot(param: CpulistParam, rel: &Release) -> String {
    match param {
        CpulistParam::NohzFull if !rel.at_least(NOHZ_FULL_SINCE) => {
            "this kernel has no nohz_full= (3.10+); it passes the parameter to init".into()
        }
        CpulistParam::NohzFull if !rel.at_least(HOUSEKEEPING_SINCE) => {
            "the kernel prints \"NO_HZ: Incorrect nohz_full cpumask\" and no CPU becomes \
             nohz_full"
                .into()
        }
        CpulistParam::Isolcpus if !rel.at_least(HOUSEKEEPING_SINCE) => format!(
            "the kernel prints \"sched: Error, all isolcpus= values must be between 0 and {}\" \
             and isolates nothing (wording unverified)",
            rel.nr_cpus
        ),
        CpulistParam::NohzFull | CpulistParam::Isolcpus => {
            "the kernel prints \"Housekeeping: nohz_full= or isolcpus= incorrect CPU range\" and \
             ignores the parameter"
                .into()
        }
        CpulistParam::RcuNocbs => "the kernel prints \"rcu_nocbs= bad CPU range, all CPUs set\" \
                                   and offloads the RCU callbacks of every CPU"
            .into(),
    }
}

/// Splits a line like the kernel's argument tokenizer (`next_arg`): whitespace outside double
/// quotes ends a token; the first `=` (unless it is the token's first character) separates key
/// and value; quotes around a value (or around the whole token) are removed.
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
        let whole_quoted = bytes[start] == b'"';
        let key_start = if whole_quoted { start + 1 } else { start };
        let mut in_quote = false;
        let mut equals = None;
        while i < bytes.len() && (in_quote || !is_space(bytes[i])) {
            match bytes[i] {
                // An `=` at the key's first position reads as "no `=` yet" in the kernel.
                b'=' if equals.is_none() && i > key_start => equals = Some(i),
                b'"' => in_quote = !in_quote,
                _ => {}
            }
            i += 1;
        }
        let raw = &line[start..i];
        // All byte positions used below are ASCII characters, so the slices stay on char
        // boundaries.
        let (key, value, value_offset) = match equals {
            Some(eq) => {
                let mut v = &line[eq + 1..i];
                let mut v_at = eq + 1;
                if let Some(rest) = v.strip_prefix('"') {
                    v = rest;
                    v_at += 1;
                    v = v.strip_suffix('"').unwrap_or(v);
                } else if whole_quoted {
                    v = v.strip_suffix('"').unwrap_or(v);
                }
                (&line[key_start..eq], Some(v), v_at)
            }
            None => {
                let mut k = &line[key_start..i];
                if whole_quoted {
                    k = k.strip_suffix('"').unwrap_or(k);
                }
                (k, None, i)
            }
        };
        out.push(Token {
            raw,
            number: out.len() + 1,
            offset: start,
            key,
            value,
            value_offset,
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

/// Parameter names with `-` and `_` made the same, as the kernel's `parameq` compares them.
fn normalize_key(key: &str) -> String {
    key.replace('-', "_")
}

/// Parses the cpulist `text`, which starts at byte `at` of the line.
fn cpulist_value(
    tok: &Token<'_>,
    text: &str,
    at: usize,
    rel: &Release,
    param: CpulistParam,
) -> Result<CpulistArg, CmdlineError> {
    let cpus = parse_cpulist_as(text, rel.nr_cpus, rel.grammar).map_err(|e| CmdlineError {
        expected: format!(
            "{}, in cpulist item {:?} at byte {} ({})",
            e.what,
            e.item,
            at + e.offset,
            e.errno
        ),
        errno: Some(e.errno),
        at_boot: cpulist_at_boot(param, rel),
        ..tok.error("")
    })?;
    Ok(CpulistArg {
        text: text.to_string(),
        cpus,
    })
}

/// `isolcpus=[flags,]<cpulist>` the way `housekeeping_isolcpus_setup` reads it.
fn parse_isolcpus(tok: &Token<'_>, v: &str, rel: &Release) -> Result<IsolcpusArg, CmdlineError> {
    if !rel.at_least(HOUSEKEEPING_SINCE) {
        // No flags before 4.15: the whole value is the cpulist.
        let list = cpulist_value(tok, v, tok.value_offset, rel, CpulistParam::Isolcpus)?;
        return Ok(IsolcpusArg {
            flags: Vec::new(),
            list,
        });
    }
    let with_managed_irq = rel.at_least(ISOLCPUS_SKIP_SINCE);
    let mut flags = Vec::new();
    let mut rest = v;
    while rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
        let known = [
            ("nohz,", IsolcpusFlag::Nohz),
            ("domain,", IsolcpusFlag::Domain),
            ("managed_irq,", IsolcpusFlag::ManagedIrq),
        ]
        .into_iter()
        .find(|(word, flag)| {
            rest.starts_with(word) && (with_managed_irq || *flag != IsolcpusFlag::ManagedIrq)
        });
        if let Some((word, flag)) = known {
            flags.push(flag);
            rest = &rest[word.len()..];
            continue;
        }
        let word = rest.split(',').next().unwrap_or(rest);
        let word_at = tok.value_offset + (v.len() - rest.len());
        let flag_error = |expected: String, at_boot: String| CmdlineError {
            expected,
            at_boot,
            ..tok.error("")
        };
        if !with_managed_irq {
            return Err(flag_error(
                format!(
                    "isolcpus=[nohz,][domain,]<cpulist>: this kernel knows the flags nohz and \
                     domain only, found {word:?} at byte {word_at}"
                ),
                "the kernel prints \"isolcpus: Error, unknown flag\" and ignores the parameter"
                    .into(),
            ));
        }
        if !word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            return Err(flag_error(
                format!(
                    "isolcpus=[flags,]<cpulist>: a word starting with a letter is a flag, and \
                     {word:?} at byte {word_at} is not one (a cpulist here must start with a \
                     digit: `N` and `all` are read as flags)"
                ),
                format!(
                    "the kernel prints \"isolcpus: Invalid flag {word}\" and ignores the parameter"
                ),
            ));
        }
        if word.len() == rest.len() {
            return Err(flag_error(
                format!(
                    "isolcpus=[flags,]<cpulist>: a cpulist after the flags, found only the word \
                     {word:?} at byte {word_at} (`N` and `all` are read as flags here)"
                ),
                format!(
                    "the kernel prints \"isolcpus: Skipped unknown flag {word}\" and then reads \
                     on past the end of the parameter, into whatever follows on the command line"
                ),
            ));
        }
        flags.push(IsolcpusFlag::Unknown(word.to_string()));
        rest = &rest[word.len() + 1..];
    }
    let at = tok.value_offset + (v.len() - rest.len());
    let list = cpulist_value(tok, rest, at, rel, CpulistParam::Isolcpus)?;
    Ok(IsolcpusArg { flags, list })
}

/// Records a parameter seen again: its values in line order and how the kernel resolves them.
fn repeated(c: &mut KernelCmdline, name: &str, earlier: Option<String>, now: &str, rule: &str) {
    let Some(earlier) = earlier else {
        return;
    };
    if let Some(r) = c.repeated.iter_mut().find(|r| r.name == name) {
        r.values.push(now.to_string());
        return;
    }
    c.repeated.push(RepeatedParam {
        name: name.to_string(),
        values: vec![earlier, now.to_string()],
        rule: rule.to_string(),
    });
}

/// Refuses a line longer than [`MAX_CMDLINE_BYTES`] or with more than [`MAX_CMDLINE_TOKENS`]
/// tokens, naming the first token past the limit.
fn check_size(line: &str) -> Result<(), CmdlineError> {
    let too_long = |token: &str, number: usize, offset: usize, expected: String| CmdlineError {
        token: token.chars().take(64).collect(),
        token_number: number,
        byte_offset: offset,
        expected,
        errno: None,
        at_boot: "the kernel keeps at most COMMAND_LINE_SIZE bytes of the boot line (2048 on \
                  x86) and drops the rest"
            .into(),
    };
    if line.len() > MAX_CMDLINE_BYTES {
        // The token that crosses the limit (linear: one pass of the tokenizer).
        let crossing = tokenize(line)
            .into_iter()
            .find(|t| t.offset + t.raw.len() > MAX_CMDLINE_BYTES);
        let (raw, number, offset) =
            crossing.map_or(("", 0, line.len()), |t| (t.raw, t.number, t.offset));
        return Err(too_long(
            raw,
            number,
            offset,
            format!(
                "a command line of at most {MAX_CMDLINE_BYTES} bytes, found {}",
                line.len()
            ),
        ));
    }
    if let Some(t) = tokenize(line).into_iter().nth(MAX_CMDLINE_TOKENS) {
        return Err(too_long(
            t.raw,
            t.number,
            t.offset,
            format!("at most {MAX_CMDLINE_TOKENS} parameters on one command line"),
        ));
    }
    Ok(())
}

/// `(major, minor)` of a `uname -r` release string (`5.10.0-28-amd64` → `(5, 10)`), `None`
/// when it does not start with two numbers separated by a dot.
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let (major, rest) = release.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Rule of the parameters whose handler simply stores its value.
const LAST_WINS: &str = "its handler runs for each and stores the value, so the last one counts";

impl KernelCmdline {
    /// Parses a boot line for a machine with `nr_cpus` possible CPUs, with today's mainline
    /// grammar.
    pub fn parse(line: &str, nr_cpus: u32) -> Result<KernelCmdline, CmdlineError> {
        Self::parse_release(
            line,
            Release {
                version: None,
                grammar: CpulistGrammar::MAINLINE,
                nr_cpus,
            },
        )
    }

    /// Parses a boot line as kernel release `version` (`(major, minor)`) reads it: its cpulist
    /// grammar ([`CpulistGrammar::of_kernel`]) and its parameters' handlers. A list with `N`
    /// before 5.12 or `all` before 5.14 is then an error, with what that kernel does about it.
    pub fn parse_for_kernel(
        line: &str,
        nr_cpus: u32,
        version: (u32, u32),
    ) -> Result<KernelCmdline, CmdlineError> {
        Self::parse_release(
            line,
            Release {
                version: Some(version),
                grammar: CpulistGrammar::of_kernel(version),
                nr_cpus,
            },
        )
    }

    /// Parses a boot line as the kernel whose `uname -r` release string is `release` reads it
    /// (`6.18.0-1-amd64` is 6.18: [`KernelCmdline::parse_for_kernel`]); a release that does
    /// not start with `MAJOR.MINOR`, or none, reads it with today's grammar
    /// ([`KernelCmdline::parse`]). The one grammar policy for a running host's own line.
    pub fn parse_for_release(
        line: &str,
        nr_cpus: u32,
        release: Option<&str>,
    ) -> Result<KernelCmdline, CmdlineError> {
        match release.and_then(release_version) {
            Some(v) => Self::parse_for_kernel(line, nr_cpus, v),
            None => Self::parse(line, nr_cpus),
        }
    }

    /// Splits a boot line (`/proc/cmdline`) where the kernel stops reading parameters: the
    /// kernel's part (up to a bare `--`, trimmed) and, if there is a `--`, the text after it,
    /// which the kernel hands to init unread. Tokens are found as the kernel's tokenizer finds
    /// them, so a `--` inside quotes or in `--x` does not split.
    pub fn split_init_args(line: &str) -> (&str, Option<&str>) {
        match tokenize(line)
            .into_iter()
            .find(|t| t.key == "--" && t.value.is_none())
        {
            Some(t) => (
                line[..t.offset].trim(),
                Some(line[t.offset + t.raw.len()..].trim()),
            ),
            None => (line.trim(), None),
        }
    }

    // Over 100 lines because it is the dispatch table of the parameters, one arm per key as
    // the kernel's `__setup` and `module_param` tables are: each arm is a few lines and reads
    // alone; split across functions the table would no longer show every key in one place.
    fn parse_release(line: &str, rel: Release) -> Result<KernelCmdline, CmdlineError> {
        let mut c = KernelCmdline::default();
        check_size(line)?;
        let mut tokens = tokenize(line).into_iter();
        for tok in tokens.by_ref() {
            if tok.key == "--" && tok.value.is_none() {
                break;
            }
            let key = normalize_key(tok.key);
            // `__setup` prefixes whose handlers ignore the rest of the token.
            if key.starts_with("nowatchdog") {
                c.nowatchdog = true;
                continue;
            }
            if key.starts_with("rcu_nocb_poll") {
                c.rcu_nocb_poll = true;
                continue;
            }
            match key.as_str() {
                "nohz_full" => {
                    let v = tok.value_or("nohz_full=<cpulist>")?;
                    let arg =
                        cpulist_value(&tok, v, tok.value_offset, &rel, CpulistParam::NohzFull)?;
                    c.housekeeping.push(HousekeepingArg::NohzFull(arg));
                }
                "isolcpus" => {
                    let v = tok.value_or("isolcpus=[flags,]<cpulist>")?;
                    let arg = parse_isolcpus(&tok, v, &rel)?;
                    c.housekeeping.push(HousekeepingArg::Isolcpus(arg));
                }
                "clocksource" => {
                    let v = tok.value_or("clocksource=<name>")?;
                    if v.is_empty() {
                        return Err(tok.error("clocksource=<name> with a non-empty name"));
                    }
                    let before = c.clocksource.replace(v.to_string());
                    repeated(&mut c, "clocksource", before, v, LAST_WINS);
                }
                "watchdog_thresh" => {
                    let v = tok.value_or("watchdog_thresh=<seconds>")?;
                    let n = parse_u32(v)
                        .ok_or_else(|| tok.error("watchdog_thresh=<seconds>, an integer >= 0"))?;
                    let before = c.watchdog_thresh.replace(n).map(|b| b.to_string());
                    repeated(&mut c, "watchdog_thresh", before, v, LAST_WINS);
                }
                "nohz" => {
                    let v = tok.value_or("nohz=on|off")?;
                    let b = parse_bool(v)
                        .ok_or_else(|| tok.error(format!("nohz=: {BOOL_EXPECTED}")))?;
                    let before = c.nohz.replace(b).map(|b| on_off(b).to_string());
                    repeated(&mut c, "nohz", before, v, LAST_WINS);
                }
                "highres" => {
                    let v = tok.value_or("highres=on|off")?;
                    let b = parse_bool(v)
                        .ok_or_else(|| tok.error(format!("highres=: {BOOL_EXPECTED}")))?;
                    let before = c.highres.replace(b).map(|b| on_off(b).to_string());
                    repeated(&mut c, "highres", before, v, LAST_WINS);
                }
                "rcu_nocbs" => {
                    let arg = match tok.value {
                        None => RcuNocbsArg::Bare,
                        Some(v) => RcuNocbsArg::List(cpulist_value(
                            &tok,
                            v,
                            tok.value_offset,
                            &rel,
                            CpulistParam::RcuNocbs,
                        )?),
                    };
                    let now = rcu_nocbs_text(&arg);
                    let before = c.rcu_nocbs.replace(arg).map(|a| rcu_nocbs_text(&a));
                    repeated(
                        &mut c,
                        "rcu_nocbs",
                        before,
                        &now,
                        "its handler allocates a fresh mask each time, so the last one counts",
                    );
                }
                "skew_tick" => {
                    let v = tok.value_or("skew_tick=<int>")?;
                    let n = parse_int(v)
                        .ok_or_else(|| tok.error("skew_tick=<int>: 0 (off) or non-zero (on)"))?;
                    let before = c.skew_tick.replace(n).map(|b| b.to_string());
                    repeated(&mut c, "skew_tick", before, v, LAST_WINS);
                }
                "idle" => {
                    let v = tok.value_or("idle=poll|halt|nomwait")?;
                    let now = match v {
                        "poll" => IdleOverride::Poll,
                        "halt" => IdleOverride::Halt,
                        "nomwait" => IdleOverride::NoMwait,
                        _ => return Err(tok.error("idle=poll, idle=halt or idle=nomwait")),
                    };
                    let before = c.idle;
                    // `idle=poll` raises the forced-polling count, which a later `idle=halt`
                    // or `idle=nomwait` does not lower: polling stays in force.
                    c.idle = Some(if before == Some(IdleOverride::Poll) {
                        IdleOverride::Poll
                    } else {
                        now
                    });
                    repeated(
                        &mut c,
                        "idle",
                        before.and_then(IdleOverride::as_param).map(str::to_string),
                        v,
                        "each runs its handler; the last sets the idle routine, but once \
                         idle=poll has forced polling no later idle= undoes it",
                    );
                }
                "cpuidle.off" => {
                    let v = tok.value_or("cpuidle.off=<int>")?;
                    let n = parse_int(v)
                        .filter(|n| i32::try_from(*n).is_ok())
                        .ok_or_else(|| tok.error("cpuidle.off=<int>, e.g. cpuidle.off=1"))?;
                    let before = c
                        .cpuidle_off
                        .replace(n != 0)
                        .map(|b| u8::from(b).to_string());
                    repeated(&mut c, "cpuidle.off", before, v, LAST_WINS);
                }
                "cpuidle.governor" => {
                    let v = tok.value_or("cpuidle.governor=<name>")?;
                    // The kernel keeps at most CPUIDLE_NAME_LEN (16) bytes including the NUL.
                    if v.is_empty() || v.len() > 15 {
                        return Err(tok.error("cpuidle.governor=<name> of 1 to 15 characters"));
                    }
                    let before = c.cpuidle_governor.replace(v.to_string());
                    repeated(&mut c, "cpuidle.governor", before, v, LAST_WINS);
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
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn rcu_nocbs_text(a: &RcuNocbsArg) -> String {
    match a {
        RcuNocbsArg::Bare => "(bare)".into(),
        RcuNocbsArg::List(l) => l.text.clone(),
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

#[cfg(test)]
mod tests;
