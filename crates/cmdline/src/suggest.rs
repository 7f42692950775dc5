//! Near-miss warnings: an unknown parameter close to one ticklab knows (`nohz_ful=1-3`) gets
//! "did you mean `nohz_full`?". The kernel keeps an unknown parameter without a word (it
//! passes it to init), so this stays a warning; a known parameter with a malformed value is
//! still an error ([`crate::CmdlineError`]).

use crate::params::KernelCmdline;

/// The parameter names [`KernelCmdline::parse`] reads (with `_`, as the kernel's `parameq`
/// compares `-` and `_` alike).
pub const KNOWN_PARAMS: &[&str] = &[
    "nohz_full",
    "isolcpus",
    "clocksource",
    "watchdog_thresh",
    "nohz",
    "highres",
    "rcu_nocbs",
    "rcu_nocb_poll",
    "nowatchdog",
    "skew_tick",
    "idle",
    "cpuidle.off",
    "cpuidle.governor",
    "cpuidle_haltpoll.force",
    "haltpoll.guest_halt_poll_ns",
    "haltpoll.guest_halt_poll_shrink",
    "haltpoll.guest_halt_poll_grow",
    "haltpoll.guest_halt_poll_grow_start",
    "haltpoll.guest_halt_poll_allow_shrink",
    "intel_idle.max_cstate",
    "processor.max_cstate",
    "nohz_full_aggressive",
];

/// Edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between
/// two short ASCII-ish names, in O(len²) with two rows; `None` once it exceeds `max`.
fn distance(a: &[u8], b: &[u8], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut prev2: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + sub);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    prev.last().copied().filter(|&d| d <= max)
}

/// The known parameter an unknown `key` is probably a typo of: within one edit for names of
/// up to five characters, two for longer ones (closest first, then list order).
pub fn did_you_mean(key: &str) -> Option<&'static str> {
    // Longer keys than any known name plus two are not typos of one (and keep this cheap).
    if key.len() > 40 {
        return None;
    }
    let key = key.replace('-', "_").to_ascii_lowercase();
    let max = if key.len() <= 5 { 1 } else { 2 };
    KNOWN_PARAMS
        .iter()
        .filter(|k| **k != key)
        .filter_map(|k| distance(key.as_bytes(), k.as_bytes(), max).map(|d| (d, *k)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

impl KernelCmdline {
    /// The unknown parameters that look like typos of known ones, each with its suggestion:
    /// `("nohz_ful=1-3", "nohz_full")`.
    pub fn near_misses(&self) -> Vec<(String, &'static str)> {
        self.unknown
            .iter()
            .filter_map(|raw| {
                let key = raw.split_once('=').map_or(raw.as_str(), |(k, _)| k);
                let key = key.trim_matches('"');
                did_you_mean(key).map(|s| (raw.clone(), s))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_table() {
        // (unknown key, suggestion)
        let cases = [
            ("nohz_ful", Some("nohz_full")),
            ("nohz-fulll", Some("nohz_full")),
            ("nohz_flul", Some("nohz_full")),
            ("isolcpu", Some("isolcpus")),
            ("cpuidle.governr", Some("cpuidle.governor")),
            ("skewtick", Some("skew_tick")),
            ("idel", Some("idle")),
            ("quiet", None),
            ("root", None),
            ("BOOT_IMAGE", None),
            ("nmi_watchdog", None),
            ("console", None),
            ("mitigations", None),
        ];
        for (key, want) in cases {
            assert_eq!(did_you_mean(key), want, "{key}");
        }
    }

    #[test]
    fn every_known_name_is_read_by_the_parser() {
        for name in KNOWN_PARAMS {
            for tok in [name.to_string(), format!("{name}=1")] {
                if let Ok(c) = KernelCmdline::parse(&tok, 8) {
                    assert!(c.unknown.is_empty(), "{tok} is not read: {:?}", c.unknown);
                }
            }
        }
    }

    #[test]
    fn a_typo_warns_and_stays_non_fatal() {
        let c = KernelCmdline::parse("quiet nohz_ful=1-3 root=/dev/sda1", 8).expect("parses");
        assert_eq!(
            c.near_misses(),
            vec![("nohz_ful=1-3".to_string(), "nohz_full")]
        );
        // A malformed value of a known parameter stays an error.
        assert!(KernelCmdline::parse("nohz_full=1-3x", 8).is_err());
    }
}
