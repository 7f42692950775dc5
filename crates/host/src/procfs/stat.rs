//! `/proc/stat`: CPU time per CPU, interrupt and context-switch totals.
//!
//! CPU times are in `USER_HZ` units (normally 1/100 s, *not* the kernel's HZ). Older kernels
//! print fewer time columns; missing ones read as 0 and [`CpuTimes::columns`] says how many
//! were present.

use serde::Serialize;

/// The time columns of one `cpu` line, in `USER_HZ` units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    /// user
    pub user: u64,
    /// nice
    pub nice: u64,
    /// system
    pub system: u64,
    /// idle
    pub idle: u64,
    /// iowait
    pub iowait: u64,
    /// irq
    pub irq: u64,
    /// softirq
    pub softirq: u64,
    /// steal
    pub steal: u64,
    /// guest
    pub guest: u64,
    /// guest_nice
    pub guest_nice: u64,
    /// How many columns the line had.
    pub columns: usize,
}

impl CpuTimes {
    /// Sum of all columns except guest time (already counted in user/nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// The parsed file (the lines ticklab uses).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: CpuTimes,
    /// `cpuN` lines: `(N, times)`, in file order.
    pub cpus: Vec<(u32, CpuTimes)>,
    /// First number of the `intr` line: all interrupts, including architecture per-CPU ones.
    pub intr_total: Option<u64>,
    /// `ctxt`: context switches since boot.
    pub ctxt: Option<u64>,
    /// `btime`: boot time, seconds since the epoch.
    pub btime: Option<u64>,
    /// `processes`: forks since boot.
    pub processes: Option<u64>,
    /// `procs_running`.
    pub procs_running: Option<u64>,
    /// `procs_blocked`.
    pub procs_blocked: Option<u64>,
    /// First number of the `softirq` line.
    pub softirq_total: Option<u64>,
}

/// Why a text is not `/proc/stat`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a /proc/stat: {0}")]
pub struct StatError(pub String);

fn parse_times(fields: &[&str]) -> Option<CpuTimes> {
    let v: Vec<u64> = fields
        .iter()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 4 {
        return None;
    }
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        user: at(0),
        nice: at(1),
        system: at(2),
        idle: at(3),
        iowait: at(4),
        irq: at(5),
        softirq: at(6),
        steal: at(7),
        guest: at(8),
        guest_nice: at(9),
        columns: v.len(),
    })
}

/// Parses the text of `/proc/stat`.
pub fn parse_stat(text: &str) -> Result<ProcStat, StatError> {
    let mut st = ProcStat::default();
    let mut saw_cpu = false;
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some((&key, rest)) = fields.split_first() else {
            continue;
        };
        let first = || rest.first().and_then(|v| v.parse().ok());
        let bad = || StatError(format!("line {}: cannot read {line:?}", i + 1));
        match key {
            "cpu" => {
                st.total = parse_times(rest).ok_or_else(bad)?;
                saw_cpu = true;
            }
            k if k.starts_with("cpu") => {
                let n = k[3..].parse().map_err(|_| bad())?;
                st.cpus.push((n, parse_times(rest).ok_or_else(bad)?));
            }
            "intr" => st.intr_total = first(),
            "ctxt" => st.ctxt = first(),
            "btime" => st.btime = first(),
            "processes" => st.processes = first(),
            "procs_running" => st.procs_running = first(),
            "procs_blocked" => st.procs_blocked = first(),
            "softirq" => st.softirq_total = first(),
            _ => {}
        }
    }
    if !saw_cpu {
        return Err(StatError("no aggregate `cpu` line".into()));
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines() {
        type UserIdleColumns = Option<(u64, u64, usize)>;
        let cases: &[(&str, UserIdleColumns)] = &[
            (
                "5834 0 1344 87377 243 0 38 102 0 0",
                Some((5834, 87377, 10)),
            ),
            // 2.6-era kernels: seven columns.
            ("1 2 3 4 5 6 7", Some((1, 4, 7))),
            ("1 2 3", None),
            ("1 2 x 4", None),
        ];
        for (line, want) in cases {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let got = parse_times(&fields).map(|t| (t.user, t.idle, t.columns));
            assert_eq!(got, *want, "{line}");
        }
    }

    #[test]
    fn totals() {
        let st = parse_stat(
            "cpu 1 0 1 10 0 0 0 0 0 0\ncpu7 1 0 1 10 0 0 0 0 0 0\nintr 42 0 1\nctxt 9\nprocs_running 3\n",
        )
        .unwrap();
        assert_eq!(st.cpus[0].0, 7);
        assert_eq!(
            (st.intr_total, st.ctxt, st.procs_running),
            (Some(42), Some(9), Some(3))
        );
        assert!(parse_stat("intr 1\n").is_err());
        assert!(parse_stat("cpu 1 2 3 4\ncpuX 1 2 3 4\n").is_err());
    }
}
