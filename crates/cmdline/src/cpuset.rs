//! CPU sets and the kernel's cpulist grammar.
//!
//! The grammar accepted by [`parse_cpulist`] is the one the kernel uses for `nohz_full=`,
//! `isolcpus=`, `rcu_nocbs=` and the sysfs cpulist files: comma-separated items, each `N`
//! (a CPU number, or the letter `N` for the highest CPU), `A-B`, or `A-B:used/group` (the first
//! `used` CPUs of every `group`-sized chunk of the range), and the word `all` (any case) for every
//! CPU. An empty string is the empty set. Out-of-range CPUs are an error here, not a silent
//! truncation, because a typo in a boot line deserves to be seen.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A set of logical CPU numbers, stored as a bitmap.
///
/// Invariant: `bits` never has trailing zero words, so two equal sets compare equal.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    bits: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// CPUs `0..n`.
    pub fn first_n(n: u32) -> Self {
        let mut s = Self::new();
        for c in 0..n {
            s.insert(c);
        }
        s
    }

    /// Adds `cpu`.
    pub fn insert(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        self.bits[w] |= 1 << (cpu % 64);
    }

    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if let Some(word) = self.bits.get_mut(w) {
            *word &= !(1 << (cpu % 64));
        }
        self.trim();
    }

    fn trim(&mut self) {
        while self.bits.last() == Some(&0) {
            self.bits.pop();
        }
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.bits
            .get((cpu / 64) as usize)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u32 * 64 + b)
        })
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        let (i, w) = self.bits.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
        Some(i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// Set difference `self \ other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let mut bits: Vec<u64> = self.bits.clone();
        for (i, w) in bits.iter_mut().enumerate() {
            *w &= !other.bits.get(i).copied().unwrap_or(0);
        }
        let mut s = CpuSet { bits };
        s.trim();
        s
    }

    /// Set intersection.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let bits = self
            .bits
            .iter()
            .zip(&other.bits)
            .map(|(a, b)| a & b)
            .collect();
        let mut s = CpuSet { bits };
        s.trim();
        s
    }

    /// Set union.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.bits.len().max(other.bits.len());
        let bits = (0..n)
            .map(|i| {
                self.bits.get(i).copied().unwrap_or(0) | other.bits.get(i).copied().unwrap_or(0)
            })
            .collect();
        CpuSet { bits }
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.difference(other).is_empty()
    }

    /// The canonical cpulist text (`0-3,8,10-11`), as the kernel prints it in sysfs.
    pub fn to_cpulist(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end = it.next().unwrap_or(end);
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_cpulist())
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_cpulist())
    }
}

impl Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_cpulist())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        // Without a CPU count we can only accept explicit numbers; `N`/`all` need a machine.
        parse_cpulist(&s, u32::MAX).map_err(serde::de::Error::custom)
    }
}

/// Why a cpulist did not parse. `offset` is the byte offset of the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cpulist {list:?}: {what} at byte {offset} ({item:?})")]
pub struct CpulistError {
    /// The whole list.
    pub list: String,
    /// The offending item.
    pub item: String,
    /// Byte offset of the item in the list.
    pub offset: usize,
    /// What was expected.
    pub what: String,
}

/// Parses a kernel cpulist for a machine with `nr_cpus` possible CPUs.
///
/// `nr_cpus = u32::MAX` means "unknown": `N` and `all` are then rejected.
pub fn parse_cpulist(list: &str, nr_cpus: u32) -> Result<CpuSet, CpulistError> {
    let mut set = CpuSet::new();
    let trimmed = list.trim();
    if trimmed.is_empty() {
        return Ok(set);
    }
    let err = |item: &str, offset: usize, what: String| CpulistError {
        list: list.to_string(),
        item: item.to_string(),
        offset,
        what,
    };
    if trimmed.eq_ignore_ascii_case("all") {
        if nr_cpus == u32::MAX {
            return Err(err(trimmed, 0, "`all` needs a known CPU count".into()));
        }
        return Ok(CpuSet::first_n(nr_cpus));
    }
    let mut offset = 0;
    for item in list.split(',') {
        let item_offset = offset;
        offset += item.len() + 1;
        if item.is_empty() {
            return Err(err(
                item,
                item_offset,
                "an empty item between commas".into(),
            ));
        }
        let number = |s: &str| -> Result<u32, CpulistError> {
            if s == "N" {
                if nr_cpus == u32::MAX || nr_cpus == 0 {
                    return Err(err(item, item_offset, "`N` needs a known CPU count".into()));
                }
                return Ok(nr_cpus - 1);
            }
            s.parse::<u32>().map_err(|_| {
                err(
                    item,
                    item_offset,
                    format!("a CPU number or `N`, found {s:?}"),
                )
            })
        };
        let (range, stride) = match item.split_once(':') {
            Some((r, g)) => {
                let (used, group) = g
                    .split_once('/')
                    .ok_or_else(|| err(item, item_offset, "`used/group` after `:`".into()))?;
                let used: u32 = used.parse().map_err(|_| {
                    err(
                        item,
                        item_offset,
                        format!("a number of used CPUs, found {used:?}"),
                    )
                })?;
                let group: u32 = group.parse().map_err(|_| {
                    err(item, item_offset, format!("a group size, found {group:?}"))
                })?;
                if used == 0 || group == 0 || used > group {
                    return Err(err(
                        item,
                        item_offset,
                        format!("0 < used <= group, found {used}/{group}"),
                    ));
                }
                (r, Some((used, group)))
            }
            None => (item, None),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                if stride.is_some() {
                    return Err(err(
                        item,
                        item_offset,
                        "a range `A-B` before `:used/group`".into(),
                    ));
                }
                let n = number(range)?;
                (n, n)
            }
        };
        if a > b {
            return Err(err(
                item,
                item_offset,
                format!("a range with start <= end, found {a}-{b}"),
            ));
        }
        if nr_cpus != u32::MAX && b >= nr_cpus {
            return Err(err(
                item,
                item_offset,
                format!(
                    "CPUs below {nr_cpus} (the machine has CPUs 0-{})",
                    nr_cpus.saturating_sub(1)
                ),
            ));
        }
        let (used, group) = stride.unwrap_or((1, 1));
        for c in a..=b {
            if (c - a) % group < used {
                set.insert(c);
            }
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_table() {
        // (input, nr_cpus, expected canonical list or None for error)
        let cases: &[(&str, u32, Option<&str>)] = &[
            ("", 8, Some("")),
            ("0", 8, Some("0")),
            ("7", 8, Some("7")),
            ("8", 8, None),
            ("0-7", 8, Some("0-7")),
            ("0-8", 8, None),
            ("N", 8, Some("7")),
            ("1-N", 8, Some("1-7")),
            ("all", 8, Some("0-7")),
            ("ALL", 4, Some("0-3")),
            ("2-19,22-39", 40, Some("2-19,22-39")),
            ("0-7:2/4", 8, Some("0-1,4-5")),
            ("1,2,10-20,100-2000:2/25", 2001, None), // 2001 CPUs: 100-2000 fits; check below
            ("0-9:3/3", 10, Some("0-9")),
            ("0-9:1/5", 10, Some("0,5")),
            ("0-9:0/5", 10, None),
            ("0-9:6/5", 10, None),
            ("3-1", 8, None),
            ("1,,2", 8, None),
            ("x", 8, None),
            ("1-", 8, None),
            ("-1", 8, None),
            ("2:1/2", 8, None),
            ("0-3:1", 8, None),
            ("N", u32::MAX, None),
        ];
        for (input, n, want) in cases {
            if *input == "1,2,10-20,100-2000:2/25" {
                let s = parse_cpulist(input, *n).unwrap();
                assert!(s.contains(100) && s.contains(101) && !s.contains(102) && s.contains(125));
                continue;
            }
            let got = parse_cpulist(input, *n).map(|s| s.to_cpulist());
            match want {
                Some(w) => assert_eq!(got.as_deref(), Ok(*w), "input {input:?}"),
                None => assert!(got.is_err(), "input {input:?} should fail, got {got:?}"),
            }
        }
    }

    #[test]
    fn error_names_item_and_offset() {
        let e = parse_cpulist("0-3,9,5", 8).unwrap_err();
        assert_eq!(e.item, "9");
        assert_eq!(e.offset, 4);
        assert!(e.to_string().contains("CPUs below 8"), "{e}");
    }

    #[test]
    fn set_ops_and_last() {
        let a: CpuSet = [0, 1, 2, 70].into_iter().collect();
        let b: CpuSet = [1, 70].into_iter().collect();
        assert_eq!(a.difference(&b).to_cpulist(), "0,2");
        assert_eq!(a.intersection(&b).to_cpulist(), "1,70");
        assert_eq!(a.last(), Some(70));
        assert!(b.is_subset(&a));
        let mut c = b.clone();
        c.remove(70);
        assert_eq!(c, [1].into_iter().collect());
    }

    proptest::proptest! {
        #[test]
        fn canonical_roundtrip(cpus in proptest::collection::btree_set(0u32..256, 0..40)) {
            let s: CpuSet = cpus.iter().copied().collect();
            let back = parse_cpulist(&s.to_cpulist(), 256).unwrap();
            proptest::prop_assert_eq!(back, s);
        }
    }
}
