//! `/proc/schedstat` (`CONFIG_SCHEDSTATS`): the scheduler's per-CPU counters. Only the `cpuN`
//! lines are read, and of them the count of switches to the idle task (`sched_goidle`): each is
//! the end of one busy stretch of that CPU, so its difference over a window is how many times
//! the CPU was woken from idle to run something.
//!
//! The counters only move while statistics are on (`kernel.sched_schedstats = 1`, or the boot
//! parameter `schedstats=enable`): the caller checks that, since a switched-off counter reads
//! as a steady 0. The layout of the `cpu` lines is the same in versions 15 to 17 (4.15 to
//! 6.x): `cpuN yld_count 0 sched_count sched_goidle ttwu_count ttwu_local rq_cpu_time
//! run_delay pcount`.

use std::collections::BTreeMap;

/// The versions whose `cpu` lines this parser knows.
const VERSIONS: std::ops::RangeInclusive<u32> = 15..=17;

/// The per-CPU counters of one read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// `sched_goidle` by CPU: times `schedule()` picked the idle task.
    pub goidle: BTreeMap<u32, u64>,
}

/// Parses `/proc/schedstat`; `None` for a version this parser does not know or a `cpu` line
/// cut short.
pub fn parse_schedstat(text: &str) -> Option<SchedStat> {
    let mut lines = text.lines();
    let version: u32 = lines
        .next()?
        .strip_prefix("version ")?
        .trim()
        .parse()
        .ok()?;
    if !VERSIONS.contains(&version) {
        return None;
    }
    let mut goidle = BTreeMap::new();
    for line in lines {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|c| c.strip_prefix("cpu")) else {
            continue;
        };
        let cpu: u32 = cpu.parse().ok()?;
        goidle.insert(cpu, f.nth(3)?.parse().ok()?);
    }
    Some(SchedStat { goidle })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_files() {
        let text = "version 15\ntimestamp 4295030116\n\
                    cpu0 0 0 9127 3907 5102 2563 812233454 97310231 5181\n\
                    domain0 00000003 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
                    cpu1 0 0 420 181 230 101 21544371 3188271 238\n";
        let s = parse_schedstat(text).unwrap();
        assert_eq!(s.goidle, BTreeMap::from([(0, 3907), (1, 181)]));
        for bad in [
            "",
            "version 14\ncpu0 0 0 1 2 3 4 5 6 7\n",
            "version 18\ncpu0 0 0 1 2 3 4 5 6 7\n",
            "version 15\ncpu0 0 0 1\n",
            "version 15\ncpux 0 0 1 2 3 4 5 6 7\n",
            "timestamp 1\n",
        ] {
            assert_eq!(parse_schedstat(bad), None, "{bad:?}");
        }
        assert_eq!(
            parse_schedstat("version 17\ntimestamp 1\n"),
            Some(SchedStat::default())
        );
    }
}
