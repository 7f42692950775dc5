//! CPU sets: [`CpuSet`], the set of logical CPU numbers every part of ticklab speaks in.
//!
//! Reading the kernel's cpulist text into a set is the job of the `cpulist` module
//! ([`crate::parse_cpulist`], which also reads a set back from JSON); [`CpuSet::to_cpulist`]
//! writes the canonical text back the way sysfs prints it.

use serde::Serialize;
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

    /// Adds the `len` CPUs `start..start + len` (a word at a time, so that a long range costs
    /// little).
    pub fn insert_range(&mut self, start: u32, len: u32) {
        if len == 0 {
            return;
        }
        let first = u64::from(start);
        let last = first + u64::from(len) - 1;
        let words = (last / 64 + 1) as usize;
        if self.bits.len() < words {
            self.bits.resize(words, 0);
        }
        let mut bit = first;
        while bit <= last {
            let w = (bit / 64) as usize;
            let lo = bit % 64;
            let hi = if last / 64 == bit / 64 { last % 64 } else { 63 };
            let mask = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
            self.bits[w] |= mask;
            bit = (bit / 64 + 1) * 64;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpulist::parse_cpulist;

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

    #[test]
    fn insert_range_across_words() {
        // (start, len, canonical list)
        for (start, len, want) in [
            (0, 0, ""),
            (0, 1, "0"),
            (60, 10, "60-69"),
            (64, 64, "64-127"),
            (1, 200, "1-200"),
            (127, 2, "127-128"),
        ] {
            let mut s = CpuSet::new();
            s.insert_range(start, len);
            assert_eq!(s.to_cpulist(), want, "{start}+{len}");
            let one_by_one: CpuSet = (start..start + len).collect();
            assert_eq!(s, one_by_one);
        }
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
