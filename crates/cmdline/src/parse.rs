//! Reading a kernel command line: the kernel's tokenizer, its value spellings, and
//! [`KernelCmdline::parse`], which fills the typed parameters of [`crate::params`].
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

use crate::cpuset::parse_cpulist;
use crate::params::{
    CpulistArg, HousekeepingArg, IdleOverride, IsolcpusArg, IsolcpusFlag, KernelCmdline,
    RcuNocbsArg,
};

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

/// ASCII whitespace as the kernel's `isspace` sees it: it ends a token outside quotes.
pub(crate) fn is_space(b: u8) -> bool {
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
