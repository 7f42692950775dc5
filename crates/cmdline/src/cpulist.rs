//! The kernel's cpulist grammar, as `bitmap_parselist` reads it, release by release.
//!
//! The grammar (docs/kernel-behaviour.md §4.8) is read left to right as *regions*:
//!
//! * Regions are separated by any run of commas and whitespace; separators before the first
//!   region and after the last are skipped, so `""`, `",,"` and `" , "` are all the empty set.
//!   A newline counts as whitespace there, but one right after a number or range (`A`, `A-B`,
//!   `all`) ends the text: `"0-3\n"` (a sysfs file) is `0-3`, and in `"1\n2"` the `2` is
//!   never read. A NUL always ends the text.
//! * A region is `A`, `A-B`, `A-B:used/group` or `all[:used/group]`. Numbers are plain decimal
//!   (no sign, no `0x`); the letter `N` anywhere a number goes is the last bit (`nbits - 1`).
//!   `all` (any case) is `0-N`. With `:used/group` the range is cut into chunks of `group` bits
//!   and the first `used` bits of each chunk are set; `used = 0` sets nothing and is allowed.
//! * Checks after each region: start > end, group 0 or used > group is `-EINVAL`; an end at or
//!   beyond `nbits` is `-ERANGE`. A number that does not fit 32 bits is `-EOVERFLOW`. Any other
//!   character where the grammar expects something is `-EINVAL`. The first bad region stops the
//!   parse; the kernel's caller then discards the whole list.
//! * After `/group` the kernel does not look for a separator: `0-7:1/2N` is the region
//!   `0-7:1/2` followed by the region `N`. ticklab reads it the same way.
//!
//! Which parts exist depends on the release ([`CpulistGrammar::of_kernel`]): `:used/group`
//! from 4.9, `N` from 5.12, `all` from 5.14. A kernel that predates a part stops at its first
//! character with `-EINVAL`, which is what ticklab reports for it.
//!
//! [`parse_cpulist`] reads with the current mainline grammar; [`parse_cpulist_as`] with the
//! grammar of a given release. Both take the CPU count the kernel uses as `nbits`
//! (`nr_cpu_ids`); `u32::MAX` means "not known" (see [`UNKNOWN_CPU_LIMIT`]).

use crate::cpuset::CpuSet;
use crate::ctype::is_space;
use serde::{Deserialize, Serialize};
use std::fmt;

/// First mainline release whose cpulists take `A-B:used/group` (docs/kernel-behaviour.md §4.8).
pub const GROUPS_SINCE: (u32, u32) = (4, 9);
/// First mainline release whose cpulists take `N` for the last CPU (docs/kernel-behaviour.md §4.8).
pub const LAST_CPU_N_SINCE: (u32, u32) = (5, 12);
/// First mainline release whose cpulists take `all` (docs/kernel-behaviour.md §4.8).
pub const ALL_SINCE: (u32, u32) = (5, 14);

/// The bit count used when the caller does not know the CPU count (`nr_cpus = u32::MAX`).
///
/// No architecture lets `CONFIG_NR_CPUS` go above 8192 (x86-64 `MAXSMP`), so a CPU number at
/// or above it cannot name a CPU of any machine; refusing it also keeps a hostile list from
/// making ticklab allocate a bitmap of four billion bits. With an unknown count `N` and `all`
/// have no meaning and are refused.
pub const UNKNOWN_CPU_LIMIT: u32 = 8192;

/// Which parts of the cpulist grammar a kernel release understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CpulistGrammar {
    /// `A-B:used/group` (from 4.9).
    pub groups: bool,
    /// `N` for the last CPU, in any number position (from 5.12).
    pub last_cpu_n: bool,
    /// `all`, any case, optionally with `:used/group` (from 5.14).
    pub all: bool,
}

impl CpulistGrammar {
    /// Today's mainline grammar: every part.
    pub const MAINLINE: CpulistGrammar = CpulistGrammar {
        groups: true,
        last_cpu_n: true,
        all: true,
    };

    /// The grammar of mainline release `version` (`(major, minor)`).
    pub fn of_kernel(version: (u32, u32)) -> CpulistGrammar {
        CpulistGrammar {
            groups: version >= GROUPS_SINCE,
            last_cpu_n: version >= LAST_CPU_N_SINCE,
            all: version >= ALL_SINCE,
        }
    }
}

impl Default for CpulistGrammar {
    fn default() -> Self {
        CpulistGrammar::MAINLINE
    }
}

/// How the kernel classifies a cpulist it refuses (the value `bitmap_parselist` returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CpulistErrno {
    /// `-EINVAL`: a character the grammar does not allow there, start > end, a group of 0, or
    /// more used than the group holds.
    Einval,
    /// `-ERANGE`: a CPU at or beyond the CPU count.
    Erange,
    /// `-EOVERFLOW`: a number that does not fit 32 bits.
    Eoverflow,
    /// Not a kernel outcome: `N` or `all` with no CPU count given (the kernel always knows
    /// its count; ticklab's callers that read sysfs files do not).
    NeedsCpuCount,
}

impl CpulistErrno {
    /// The kernel's name for the outcome (`-EINVAL`), or `None` for ticklab's own.
    pub fn kernel_name(self) -> Option<&'static str> {
        match self {
            CpulistErrno::Einval => Some("-EINVAL"),
            CpulistErrno::Erange => Some("-ERANGE"),
            CpulistErrno::Eoverflow => Some("-EOVERFLOW"),
            CpulistErrno::NeedsCpuCount => None,
        }
    }
}

impl fmt::Display for CpulistErrno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kernel_name().unwrap_or("no CPU count"))
    }
}

/// Why a cpulist did not parse: the first region the kernel would stop at.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cpulist {list:?}: {what} at byte {offset} ({item:?}, {errno})")]
pub struct CpulistError {
    /// The whole list.
    pub list: String,
    /// The offending region, up to the next comma, whitespace or end.
    pub item: String,
    /// Byte offset of the region in the list.
    pub offset: usize,
    /// What was expected.
    pub what: String,
    /// How the kernel classifies the failure.
    pub errno: CpulistErrno,
}

/// Parses a kernel cpulist with today's mainline grammar for `nr_cpus` possible CPUs
/// (`u32::MAX`: unknown, see [`UNKNOWN_CPU_LIMIT`]).
pub fn parse_cpulist(list: &str, nr_cpus: u32) -> Result<CpuSet, CpulistError> {
    parse_cpulist_as(list, nr_cpus, CpulistGrammar::MAINLINE)
}

/// Parses a sysfs cpulist file's text (`/sys/devices/system/cpu/online`, `nohz_full`, ...)
/// for a machine whose CPU count is not known.
///
/// Besides the grammar's own `"0-3\n"` and `"\n"`, it takes `(null)`: kernels that print a
/// mask that was never allocated (`nohz_full` with no `nohz_full=` on some releases, as
/// `%*pbl` of a NULL pointer) show that word, and it means no CPU.
pub fn parse_sysfs_cpulist(text: &str) -> Result<CpuSet, CpulistError> {
    if text.trim() == "(null)" {
        return Ok(CpuSet::new());
    }
    parse_cpulist(text, u32::MAX)
}

/// End of the text for the kernel: NUL or newline.
fn end_of_str(b: u8) -> bool {
    b == 0 || b == b'\n'
}

/// Separators between regions.
fn separator(b: u8) -> bool {
    is_space(b) || b == b','
}

fn end_of_region(b: u8) -> bool {
    separator(b) || end_of_str(b)
}

/// One parsed region: bits `start..=end`, `used` of every `group`.
#[derive(Debug, Clone, Copy)]
struct Region {
    start: u32,
    end: u32,
    used: u32,
    group: u32,
}

/// The reader's state over one list.
struct Reader<'a> {
    bytes: &'a [u8],
    list: &'a str,
    grammar: CpulistGrammar,
    /// `nbits` as the kernel sees it.
    nbits: u32,
    /// Whether `nbits` is a real CPU count (else `N` and `all` are refused).
    known: bool,
    /// Start of the region being read, for errors.
    region_at: usize,
}

impl Reader<'_> {
    /// The byte at `i`, or NUL past the end (the kernel's string is NUL-terminated).
    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn error(&self, errno: CpulistErrno, what: impl Into<String>) -> CpulistError {
        let mut end = self.region_at;
        while !end_of_region(self.at(end)) {
            end += 1;
        }
        CpulistError {
            list: self.list.to_string(),
            item: String::from_utf8_lossy(&self.bytes[self.region_at..end]).into_owned(),
            offset: self.region_at,
            what: what.into(),
            errno,
        }
    }

    /// The last bit, `nbits - 1`, wrapping like the kernel's unsigned arithmetic.
    fn last_bit(&self) -> u32 {
        self.nbits.wrapping_sub(1)
    }

    /// A number at `i` (decimal digits or `N`); returns it and the position after it.
    fn number(&self, i: usize, role: &str) -> Result<(u32, usize), CpulistError> {
        let c = self.at(i);
        if c == b'N' {
            if !self.grammar.last_cpu_n {
                return Err(self.error(
                    CpulistErrno::Einval,
                    format!(
                        "{role}: `N` for the last CPU needs kernel {}.{} or later; this kernel \
                         reads it as an invalid character",
                        LAST_CPU_N_SINCE.0, LAST_CPU_N_SINCE.1
                    ),
                ));
            }
            if !self.known {
                return Err(self.error(
                    CpulistErrno::NeedsCpuCount,
                    format!("{role}: `N` needs a known CPU count"),
                ));
            }
            return Ok((self.last_bit(), i + 1));
        }
        let mut j = i;
        let mut value: u64 = 0;
        let mut overflow = false;
        while self.at(j).is_ascii_digit() {
            let d = u64::from(self.at(j) - b'0');
            match value.checked_mul(10).and_then(|v| v.checked_add(d)) {
                Some(v) => value = v,
                None => overflow = true,
            }
            j += 1;
        }
        if j == i {
            let found = match c {
                0 => "the end of the list".to_string(),
                b'\n' => "a newline".to_string(),
                _ => format!("{:?}", char_at(self.list, i)),
            };
            return Err(self.error(
                CpulistErrno::Einval,
                format!("{role}: a decimal CPU number or `N`, found {found}"),
            ));
        }
        match u32::try_from(value) {
            Ok(v) if !overflow => Ok((v, j)),
            _ => Err(self.error(
                CpulistErrno::Eoverflow,
                format!(
                    "{role}: a number that fits 32 bits, found {}",
                    String::from_utf8_lossy(&self.bytes[i..j])
                ),
            )),
        }
    }

    /// A region without `:used/group` that ended at `i`: the kernel encodes it as one group
    /// of `end + 1` bits (wrapping like its unsigned arithmetic), and a NUL or newline at `i`
    /// ends the text.
    fn plain(&self, start: u32, end: u32, i: usize) -> (Region, Option<usize>) {
        let r = Region {
            start,
            end,
            used: end.wrapping_add(1),
            group: end.wrapping_add(1),
        };
        (r, (!end_of_str(self.at(i))).then_some(i))
    }

    /// Reads the region at `i`; returns it and where reading goes on (`None`: the text ends
    /// here, a NUL or newline right after a number or range).
    fn region(&self, i: usize) -> Result<(Region, Option<usize>), CpulistError> {
        let starts_all = self
            .bytes
            .get(i..i + 3)
            .is_some_and(|w| w.eq_ignore_ascii_case(b"all"));
        let (start, end, mut i) = if starts_all && self.grammar.all {
            if !self.known {
                return Err(
                    self.error(CpulistErrno::NeedsCpuCount, "`all` needs a known CPU count")
                );
            }
            (0, self.last_bit(), i + 3)
        } else {
            if starts_all {
                return Err(self.error(
                    CpulistErrno::Einval,
                    format!(
                        "`all` needs kernel {}.{} or later; this kernel reads it as an invalid \
                         character",
                        ALL_SINCE.0, ALL_SINCE.1
                    ),
                ));
            }
            let (start, i) = self.number(i, "first CPU")?;
            if end_of_region(self.at(i)) {
                return Ok(self.plain(start, start, i));
            }
            if self.at(i) != b'-' {
                return Err(self.error(
                    CpulistErrno::Einval,
                    format!(
                        "`-`, `,` or the end after a CPU number, found {:?}",
                        char_at(self.list, i)
                    ),
                ));
            }
            let (end, i) = self.number(i + 1, "last CPU of the range")?;
            (start, end, i)
        };
        if end_of_region(self.at(i)) {
            return Ok(self.plain(start, end, i));
        }
        if self.at(i) != b':' {
            return Err(self.error(
                CpulistErrno::Einval,
                format!(
                    "`:used/group`, `,` or the end after a range, found {:?}",
                    char_at(self.list, i)
                ),
            ));
        }
        if !self.grammar.groups {
            return Err(self.error(
                CpulistErrno::Einval,
                format!(
                    "`:used/group` needs kernel {}.{} or later; this kernel reads `:` as an \
                     invalid character",
                    GROUPS_SINCE.0, GROUPS_SINCE.1
                ),
            ));
        }
        let (used, j) = self.number(i + 1, "used CPUs of each group")?;
        i = j;
        if self.at(i) != b'/' {
            let found = match self.at(i) {
                0 => "the end".to_string(),
                _ => format!("{:?}", char_at(self.list, i)),
            };
            return Err(self.error(
                CpulistErrno::Einval,
                format!("`/group` after `:{used}`, found {found}"),
            ));
        }
        let (group, i) = self.number(i + 1, "group size")?;
        Ok((
            Region {
                start,
                end,
                used,
                group,
            },
            Some(i),
        ))
    }

    /// The kernel's checks on a whole region, in its order.
    fn check(&self, r: &Region) -> Result<(), CpulistError> {
        if r.start > r.end {
            return Err(self.error(
                CpulistErrno::Einval,
                format!("a range with start <= end, found {}-{}", r.start, r.end),
            ));
        }
        if r.group == 0 {
            return Err(self.error(CpulistErrno::Einval, "a group size of at least 1"));
        }
        if r.used > r.group {
            return Err(self.error(
                CpulistErrno::Einval,
                format!(
                    "used <= group, found {}/{} (more used than the group holds)",
                    r.used, r.group
                ),
            ));
        }
        if r.end >= self.nbits {
            let what = if self.known {
                format!(
                    "CPUs below {} (the machine has CPUs 0-{})",
                    self.nbits,
                    self.last_bit()
                )
            } else {
                format!(
                    "CPUs below {UNKNOWN_CPU_LIMIT} (no kernel is built for more CPUs), found {}",
                    r.end
                )
            };
            return Err(self.error(CpulistErrno::Erange, what));
        }
        Ok(())
    }
}

/// The character starting at byte `i` of `s` (or the replacement character inside one).
fn char_at(s: &str, i: usize) -> char {
    s.get(i..)
        .and_then(|t| t.chars().next())
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Parses a kernel cpulist as release `grammar` reads it, for `nr_cpus` possible CPUs
/// (`u32::MAX`: unknown, see [`UNKNOWN_CPU_LIMIT`]).
///
/// Never panics; the work is bounded by the text's length and the CPU count.
pub fn parse_cpulist_as(
    list: &str,
    nr_cpus: u32,
    grammar: CpulistGrammar,
) -> Result<CpuSet, CpulistError> {
    let known = nr_cpus != u32::MAX;
    let r = Reader {
        bytes: list.as_bytes(),
        list,
        grammar,
        nbits: if known { nr_cpus } else { UNKNOWN_CPU_LIMIT },
        known,
        region_at: 0,
    };
    let mut set = CpuSet::new();
    let mut r = r;
    let mut i = 0;
    loop {
        while separator(r.at(i)) {
            i += 1;
        }
        if end_of_str(r.at(i)) {
            return Ok(set);
        }
        r.region_at = i;
        let (region, next) = r.region(i)?;
        r.check(&region)?;
        // Invariant after `check`: start <= end < nbits and 0 < group, used <= group.
        debug_assert!(region.start <= region.end && region.end < r.nbits && region.group > 0);
        let end = u64::from(region.end);
        let mut chunk = u64::from(region.start);
        while chunk <= end {
            let len = (end - chunk + 1).min(u64::from(region.used));
            // Both fit u32: chunk <= end < nbits and len <= used.
            set.insert_range(chunk as u32, len as u32);
            chunk += u64::from(region.group);
        }
        match next {
            Some(n) => i = n,
            None => return Ok(set),
        }
    }
}

/// A set reads back from its cpulist text, the form [`CpuSet`]'s `Serialize` writes. Without a
/// CPU count only explicit numbers are accepted: `N` and `all` need a machine.
impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_cpulist(&s, u32::MAX).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
