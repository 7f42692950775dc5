//! Snapshots of the machine around a run, and what their difference says.
//!
//! [`Snapshot::take`] reads `/proc/interrupts`, `/proc/stat`, the cpuidle sysfs tree and the
//! RAPL package counter (through the parsers in [`crate::procfs`]); the pure functions below
//! turn a start/end pair into [`CpuReport`]s, an [`EnergyReport`] and contamination warnings.
//! Anything unreadable degrades into `None` plus a warning, never into a failed run.

use std::collections::BTreeMap;
use std::path::Path;

use ticklab_schema::report::{
    Contamination, CpuReport, CpuRole, EnergyReport, IdleStateReport, STEAL_THRESHOLD_PCT,
};

use crate::probe::hz::{self, HzReport, HzSourceMissing};
use crate::procfs::schedstat::{SchedStat, parse_schedstat};
use crate::procfs::{
    Cpuidle, Interrupts, IrqKind, ProcStat, TimerList, parse_interrupts, parse_stat,
    parse_timer_list, read_cpuidle,
};

use super::os::now_ns;

/// The RAPL package zone.
pub(crate) const RAPL_ZONE: &str = "/sys/class/powercap/intel-rapl:0";

/// The machine's counters at one instant.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// `CLOCK_MONOTONIC` when taken.
    pub at_ns: u64,
    /// `/proc/interrupts`, if readable.
    pub interrupts: Option<Interrupts>,
    /// `/proc/stat`, if readable.
    pub stat: Option<ProcStat>,
    /// The cpuidle tree.
    pub cpuidle: Cpuidle,
    /// RAPL package energy counter in µJ, if present.
    pub energy_uj: Option<u64>,
    /// `/proc/timer_list` (root only), for HZ.
    pub timer_list: Option<TimerList>,
    /// `/proc/schedstat`, when the scheduler's statistics are on.
    pub schedstat: Option<SchedStat>,
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

impl Snapshot {
    /// Reads everything now.
    pub(crate) fn take() -> Snapshot {
        let interrupts = std::fs::read_to_string("/proc/interrupts")
            .ok()
            .and_then(|t| parse_interrupts(&t).ok());
        let stat = read_stat();
        Snapshot {
            at_ns: now_ns(),
            interrupts,
            stat,
            cpuidle: read_cpuidle(Path::new("/sys/devices/system/cpu")),
            energy_uj: read_u64(&Path::new(RAPL_ZONE).join("energy_uj")),
            timer_list: std::fs::read_to_string("/proc/timer_list")
                .ok()
                .and_then(|t| parse_timer_list(&t).ok()),
            schedstat: read_schedstat(),
        }
    }
}

/// `/proc/schedstat` now, only when its counters move (`kernel.sched_schedstats` reads 1);
/// switched-off counters would read as a CPU that never went idle.
fn read_schedstat() -> Option<SchedStat> {
    (read_u64(Path::new("/proc/sys/kernel/sched_schedstats"))? == 1).then_some(())?;
    parse_schedstat(&std::fs::read_to_string("/proc/schedstat").ok()?)
}

/// `/proc/stat` now, parsed (`None` when unreadable).
pub(crate) fn read_stat() -> Option<ProcStat> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_stat(&text).ok()
}

/// `/proc/interrupts` and `/proc/stat` at one instant: what a live view (`host run --live`,
/// the progress line's rate so far) reads once a second, far less than a full `Snapshot`.
#[derive(Debug, Clone)]
pub struct LiveSample {
    /// `CLOCK_MONOTONIC` when taken, ns.
    pub at_ns: u64,
    interrupts: Option<Interrupts>,
    stat: Option<ProcStat>,
}

/// One CPU's rates between two [`LiveSample`]s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveRow {
    /// CPU number.
    pub cpu: u32,
    /// Local timer interrupts per second (`LOC` in `/proc/interrupts`).
    pub loc_per_s: f64,
    /// Busy share of the interval, % (the interval less idle, iowait and steal, as the run's
    /// report counts it); `None` without `/proc/stat`.
    pub busy_pct: Option<f64>,
    /// Steal share of the interval, %; `None` without `/proc/stat`.
    pub steal_pct: Option<f64>,
}

impl LiveSample {
    /// Reads `/proc/interrupts` and `/proc/stat` now (either may be missing).
    pub fn take() -> LiveSample {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        LiveSample::parse(now_ns(), &read("/proc/interrupts"), &read("/proc/stat"))
    }

    /// A sample from the two files' text, taken at `at_ns` (text that does not parse leaves
    /// that half missing).
    pub fn parse(at_ns: u64, interrupts: &str, stat: &str) -> LiveSample {
        LiveSample {
            at_ns,
            interrupts: parse_interrupts(interrupts).ok(),
            stat: parse_stat(stat).ok(),
        }
    }

    /// The CPUs `/proc/interrupts` has a column for.
    pub fn cpus(&self) -> Vec<u32> {
        self.interrupts
            .as_ref()
            .map(|i| i.cpus.clone())
            .unwrap_or_default()
    }
}

/// Per-CPU rates from `prev` to `next`, for `cpus` (every CPU of `next` when `None`). Empty
/// when the interval is not positive.
pub fn live_rows(prev: &LiveSample, next: &LiveSample, cpus: Option<&[u32]>) -> Vec<LiveRow> {
    let window_ns = next.at_ns.saturating_sub(prev.at_ns);
    if window_ns == 0 {
        return Vec::new();
    }
    let all = next.cpus();
    let cpus = cpus.unwrap_or(&all);
    let times = match (&prev.stat, &next.stat) {
        (Some(s), Some(e)) => cpu_times_in(s, e, ns_per_user_tick(), Some(window_ns)),
        _ => BTreeMap::new(),
    };
    let secs = window_ns as f64 / 1e9;
    let pct = |ns: u64| (ns as f64 / window_ns as f64 * 100.0).min(100.0);
    cpus.iter()
        .map(|&cpu| LiveRow {
            cpu,
            loc_per_s: irq_delta(
                prev.interrupts.as_ref(),
                next.interrupts.as_ref(),
                IrqKind::LocalTimer,
                cpu,
            ) as f64
                / secs,
            busy_pct: times.get(&cpu).map(|t| pct(t.busy_ns)),
            steal_pct: times.get(&cpu).map(|t| pct(t.steal_ns)),
        })
        .collect()
}

/// HZ from the two snapshots' `/proc/timer_list`: the jiffies rate over the window, checked
/// against the tick alignment of the first snapshot, and the build configuration's
/// `CONFIG_HZ` as `host inspect` reads it (see [`crate::probe::hz`]).
pub(crate) fn hz_between(start: &Snapshot, end: &Snapshot, skew_tick: bool) -> HzReport {
    let alignment = start
        .timer_list
        .as_ref()
        .map(|tl| hz::hz_from_timer_list(tl, skew_tick))
        .ok_or(HzSourceMissing::TimerListUnreadable);
    let jiffies = match (&start.timer_list, &end.timer_list) {
        (Some(a), Some(b)) => hz::hz_from_jiffies(a, b).ok_or(HzSourceMissing::NoJiffiesRate),
        _ => Err(HzSourceMissing::TimerListUnreadable),
    };
    // The build configuration, read as `host inspect` reads it: the fallback when
    // /proc/timer_list is unreadable (no root) and a cross-check otherwise.
    let config = crate::probe::inspect::probes::build_config_hz(&crate::probe::HostRoot::live());
    HzReport::combine(alignment, jiffies, config)
}

/// Nanoseconds per `/proc/stat` tick (`USER_HZ`, normally 100).
pub(crate) fn ns_per_user_tick() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        1_000_000_000 / hz as u64
    } else {
        10_000_000
    }
}

/// Steal per CPU of `cpus` between two `/proc/stat` readings, % of `window` (`None` for a
/// CPU either reading lacks): what `host irqs` and `host calibrate` show per CPU.
pub(crate) fn steal_pct(
    before: &ProcStat,
    after: &ProcStat,
    cpus: &[u32],
    window: std::time::Duration,
) -> Vec<Option<f64>> {
    let times = cpu_times(before, after, ns_per_user_tick());
    let w = window.as_nanos().max(1) as f64;
    cpus.iter()
        .map(|c| times.get(c).map(|t| 100.0 * t.steal_ns as f64 / w))
        .collect()
}

/// Busy and stolen time of one CPU between two snapshots, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CpuTime {
    /// user + nice + system + irq + softirq.
    pub busy_ns: u64,
    /// steal: time the hypervisor ran something else while this vCPU wanted to run.
    pub steal_ns: u64,
}

/// Per-CPU busy and steal time between two `/proc/stat` readings.
///
/// Busy is the user, nice, system, irq and softirq columns. The kernel fills those by sampling
/// at the tick, so a load that keeps a fixed phase to the tick is mis-counted: a 1 kHz frame
/// worker whose work always ends before the next 250 Hz tick shows as idle. The idle column
/// is exact on a NO_HZ kernel (it is the time between idle entry and exit). With the
/// `window_ns` the snapshots span, busy is therefore the window less the idle, iowait and steal
/// time instead; without it, the sampled columns.
pub(crate) fn cpu_times(
    start: &ProcStat,
    end: &ProcStat,
    ns_per_tick: u64,
) -> BTreeMap<u32, CpuTime> {
    cpu_times_in(start, end, ns_per_tick, None)
}

/// [`cpu_times`] over a known window (see there).
pub(crate) fn cpu_times_in(
    start: &ProcStat,
    end: &ProcStat,
    ns_per_tick: u64,
    window_ns: Option<u64>,
) -> BTreeMap<u32, CpuTime> {
    let mut out = BTreeMap::new();
    for (cpu, e) in &end.cpus {
        let Some((_, s)) = start.cpus.iter().find(|(c, _)| c == cpu) else {
            continue;
        };
        let busy =
            |t: &crate::procfs::stat::CpuTimes| t.user + t.nice + t.system + t.irq + t.softirq;
        let steal_ns = e.steal.saturating_sub(s.steal) * ns_per_tick;
        let busy_ns = match window_ns {
            Some(w) => {
                let not_busy = |t: &crate::procfs::stat::CpuTimes| t.idle + t.iowait;
                let idle_ns = not_busy(e).saturating_sub(not_busy(s)) * ns_per_tick;
                w.saturating_sub(idle_ns).saturating_sub(steal_ns)
            }
            None => busy(e).saturating_sub(busy(s)) * ns_per_tick,
        };
        out.insert(*cpu, CpuTime { busy_ns, steal_ns });
    }
    out
}

fn irq_delta(start: Option<&Interrupts>, end: Option<&Interrupts>, kind: IrqKind, cpu: u32) -> u64 {
    let count = |i: Option<&Interrupts>| i.and_then(|i| i.count(i.row_of(kind)?, cpu));
    match (count(start), count(end)) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    }
}

/// One [`CpuReport`] per CPU in `cpus` from a start/end pair. CPUs in `nohz_full` get
/// [`CpuRole::NohzFull`], the others [`CpuRole::Housekeeping`] (user space cannot see which CPU
/// holds the timekeeping duty at a given moment).
pub(crate) fn cpu_reports(
    start: &Snapshot,
    end: &Snapshot,
    cpus: &[u32],
    nohz_full: &[u32],
) -> Vec<CpuReport> {
    let times = match (&start.stat, &end.stat) {
        (Some(s), Some(e)) => cpu_times_in(
            s,
            e,
            ns_per_user_tick(),
            Some(end.at_ns.saturating_sub(start.at_ns)),
        ),
        _ => BTreeMap::new(),
    };
    cpus.iter()
        .map(|&cpu| {
            let d = |k| irq_delta(start.interrupts.as_ref(), end.interrupts.as_ref(), k, cpu);
            CpuReport {
                cpu,
                role: if nohz_full.contains(&cpu) {
                    CpuRole::NohzFull
                } else {
                    CpuRole::Housekeeping
                },
                loc: d(IrqKind::LocalTimer),
                res: Some(d(IrqKind::Reschedule)),
                cal: Some(d(IrqKind::FunctionCall)),
                iwi: d(IrqKind::IrqWork),
                ticks: None,
                tick_stopped_ns: None,
                busy_ns: times.get(&cpu).map(|t| t.busy_ns),
                idle_states: idle_deltas(&start.cpuidle, &end.cpuidle, cpu),
                steal_ns: times.get(&cpu).map(|t| t.steal_ns),
                idle_entries: idle_entries(start.schedstat.as_ref(), end.schedstat.as_ref(), cpu),
            }
        })
        .collect()
}

/// Times `cpu` went idle between the two readings of `/proc/schedstat`.
fn idle_entries(start: Option<&SchedStat>, end: Option<&SchedStat>, cpu: u32) -> Option<u64> {
    let (s, e) = (start?.goidle.get(&cpu)?, end?.goidle.get(&cpu)?);
    Some(e.saturating_sub(*s))
}

/// cpuidle counters of `cpu` accumulated between the two readings.
pub(crate) fn idle_deltas(start: &Cpuidle, end: &Cpuidle, cpu: u32) -> Vec<IdleStateReport> {
    let (Some(s), Some(e)) = (
        start.cpus.iter().find(|c| c.cpu == cpu),
        end.cpus.iter().find(|c| c.cpu == cpu),
    ) else {
        return Vec::new();
    };
    e.states
        .iter()
        .map(|es| {
            let ss = s.states.iter().find(|x| x.index == es.index);
            let d = |f: fn(&crate::procfs::cpuidle::IdleState) -> Option<u64>| {
                f(es)
                    .unwrap_or(0)
                    .saturating_sub(ss.and_then(f).unwrap_or(0))
            };
            IdleStateReport {
                name: es
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("state{}", es.index)),
                usage: d(|x| x.usage),
                time_ns: d(|x| x.time_us) * 1000,
                above: d(|x| x.above),
                below: d(|x| x.below),
            }
        })
        .collect()
}

/// Package energy between two RAPL readings (µJ), allowing for one wrap of the counter at
/// `max_range_uj`. `package_idle_fraction` is the lower bound 1 − Σ busy fraction (Bonferroni),
/// the best user space can say without package C-state counters.
pub(crate) fn energy_between(
    start_uj: u64,
    end_uj: u64,
    max_range_uj: Option<u64>,
    window_ns: u64,
    busy_fraction_sum: f64,
) -> Option<EnergyReport> {
    let delta = if end_uj >= start_uj {
        end_uj - start_uj
    } else {
        max_range_uj?.checked_sub(start_uj)? + end_uj
    };
    if window_ns == 0 {
        return None;
    }
    let joules = delta as f64 / 1e6;
    Some(EnergyReport {
        watts: joules / (window_ns as f64 / 1e9),
        joules,
        package_idle_fraction: (1.0 - busy_fraction_sum).clamp(0.0, 1.0),
        breakdown: Vec::new(),
        modelled: false,
    })
}

/// How much busy time the workload itself explains on each CPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ExpectedBusy {
    /// Busy nanoseconds the workload's pinned threads may account for, per CPU.
    pub per_cpu: BTreeMap<u32, u64>,
    /// Busy nanoseconds of unpinned threads, which may land on any CPU.
    pub floating_ns: u64,
}

impl ExpectedBusy {
    /// Adds `ns` of expected busy time on `cpu`.
    pub(crate) fn add(&mut self, cpu: u32, ns: u64) {
        *self.per_cpu.entry(cpu).or_default() += ns;
    }
}

/// Warnings about load the workload does not explain, and about stolen time: the texts of
/// [`contamination`].
pub(crate) fn contamination_warnings(
    times: &BTreeMap<u32, CpuTime>,
    expected: &ExpectedBusy,
    window_ns: u64,
    ns_per_tick: u64,
) -> Vec<String> {
    contamination(times, expected, window_ns, ns_per_tick)
        .iter()
        .map(Contamination::text)
        .collect()
}

/// The CPUs whose time the workload does not explain, and those the hypervisor stole from.
///
/// A CPU is contaminated when it was busier than the workload explains by more than 5 % of the
/// window plus two `/proc/stat` ticks (its resolution). Unpinned work is first charged against
/// the excess. Steal above [`STEAL_THRESHOLD_PCT`] of the window on any CPU is reported too:
/// the hypervisor ran something else while this guest wanted the CPU.
pub(crate) fn contamination(
    times: &BTreeMap<u32, CpuTime>,
    expected: &ExpectedBusy,
    window_ns: u64,
    ns_per_tick: u64,
) -> Vec<Contamination> {
    let mut out = Vec::new();
    if window_ns == 0 {
        return out;
    }
    let tolerance = window_ns / 20 + 2 * ns_per_tick;
    let mut floating = expected.floating_ns;
    let pct = |ns: u64| 100.0 * ns as f64 / window_ns as f64;
    for (&cpu, t) in times {
        let explained = expected
            .per_cpu
            .get(&cpu)
            .copied()
            .unwrap_or(0)
            .min(window_ns);
        let mut excess = t.busy_ns.saturating_sub(explained);
        let absorbed = excess.min(floating);
        floating -= absorbed;
        excess -= absorbed;
        if excess > tolerance {
            out.push(Contamination::OtherLoad {
                cpu,
                busy_pct: pct(t.busy_ns),
                explained_pct: pct(explained),
            });
        }
        if pct(t.steal_ns) > STEAL_THRESHOLD_PCT {
            out.push(Contamination::Steal {
                cpu,
                steal_pct: pct(t.steal_ns),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: u64 = 10_000_000;

    fn times(v: &[(u32, u64, u64)]) -> BTreeMap<u32, CpuTime> {
        v.iter()
            .map(|&(c, b, s)| {
                (
                    c,
                    CpuTime {
                        busy_ns: b,
                        steal_ns: s,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn contamination_table() {
        let w = 10_000_000_000; // 10 s; tolerance 0.5 s + 20 ms
        let mut hog0 = ExpectedBusy::default();
        hog0.add(0, w);
        let floating = ExpectedBusy {
            floating_ns: 2_000_000_000,
            ..Default::default()
        };
        // (times, expected, number of warnings, a word the first must contain)
        let table: Vec<(BTreeMap<u32, CpuTime>, ExpectedBusy, usize, &str)> = vec![
            (
                times(&[(0, 0, 0), (1, 0, 0)]),
                ExpectedBusy::default(),
                0,
                "",
            ),
            (
                times(&[(0, 520_000_000, 0)]),
                ExpectedBusy::default(),
                0,
                "",
            ),
            (
                times(&[(0, 530_000_000, 0)]),
                ExpectedBusy::default(),
                1,
                "CPU 0",
            ),
            (
                times(&[(0, w, 0), (1, 3_000_000_000, 0)]),
                hog0.clone(),
                1,
                "CPU 1 was 30.0 %",
            ),
            (times(&[(0, w, 0), (1, 100_000_000, 0)]), hog0, 0, ""),
            (times(&[(1, 2_400_000_000, 0)]), floating.clone(), 0, ""),
            (times(&[(1, 2_600_000_000, 0)]), floating, 1, "CPU 1"),
            (
                times(&[(0, 0, 400_000_000)]),
                ExpectedBusy::default(),
                0,
                "",
            ),
            (
                times(&[(0, 0, 510_000_000)]),
                ExpectedBusy::default(),
                1,
                "stole 5.1 %",
            ),
        ];
        for (i, (t, e, n, word)) in table.into_iter().enumerate() {
            let got = contamination_warnings(&t, &e, w, TICK);
            assert_eq!(got.len(), n, "case {i}: {got:?}");
            if n > 0 {
                assert!(got[0].contains(word), "case {i}: {got:?}");
            }
        }
    }

    #[test]
    fn energy_table() {
        let e = energy_between(1_000_000, 3_000_000, None, 1_000_000_000, 0.25).unwrap();
        assert_eq!((e.joules, e.watts, e.modelled), (2.0, 2.0, false));
        assert_eq!(e.package_idle_fraction, 0.75);
        // Wrapped once.
        let e = energy_between(9_000_000, 1_000_000, Some(10_000_000), 2_000_000_000, 3.0).unwrap();
        assert_eq!(
            (e.joules, e.watts, e.package_idle_fraction),
            (2.0, 1.0, 0.0)
        );
        // Wrapped without a known range, or no window: unknown.
        assert_eq!(energy_between(9, 1, None, 1_000, 0.0), None);
        assert_eq!(energy_between(1, 9, None, 0, 0.0), None);
    }

    #[test]
    fn cpu_times_and_reports_from_text() {
        let s = parse_stat(
            "cpu 0 0 0 0\ncpu0 100 0 50 1000 0 5 5 1 0 0\ncpu1 10 0 0 900 0 0 0 0 0 0\n",
        )
        .unwrap();
        let e = parse_stat(
            "cpu 0 0 0 0\ncpu0 200 1 60 1100 3 5 6 4 0 0\ncpu1 10 0 0 1000 0 0 0 0 0 0\n",
        )
        .unwrap();
        let t = cpu_times(&s, &e, TICK);
        assert_eq!(
            t[&0],
            CpuTime {
                busy_ns: 112 * TICK,
                steal_ns: 3 * TICK
            }
        );
        assert_eq!(t[&1], CpuTime::default());
        // Over a window of 120 ticks: CPU 0 was idle 103 (idle 100 + iowait 3) and stolen 3,
        // so busy 14 whatever the sampled columns say; CPU 1 idle 100 of 120: busy 20.
        let w = cpu_times_in(&s, &e, TICK, Some(120 * TICK));
        assert_eq!(w[&0].busy_ns, 14 * TICK);
        assert_eq!(w[&0].steal_ns, 3 * TICK);
        assert_eq!(w[&1].busy_ns, 20 * TICK);
        // A window shorter than the accounted idle time (clock skew) gives 0, not a wrap.
        assert_eq!(cpu_times_in(&s, &e, TICK, Some(50 * TICK))[&0].busy_ns, 0);
        let irq = |loc0: u64| {
            parse_interrupts(&format!(
                "           CPU0       CPU1\nLOC:  {loc0}  7   Local timer interrupts\nRES: 1 2 Rescheduling interrupts\n"
            ))
            .unwrap()
        };
        let goidle = |n: u64| SchedStat {
            goidle: BTreeMap::from([(0, n)]),
        };
        let snap = |i, st, sched| Snapshot {
            at_ns: 0,
            interrupts: Some(i),
            stat: Some(st),
            cpuidle: Cpuidle::default(),
            energy_uj: None,
            timer_list: None,
            schedstat: sched,
        };
        let r = cpu_reports(
            &snap(irq(10), s.clone(), Some(goidle(100))),
            &snap(irq(260), e.clone(), Some(goidle(142))),
            &[0, 1],
            &[1],
        );
        // Trips to idle where both readings have the CPU; none for a CPU the file lacks.
        assert_eq!((r[0].idle_entries, r[1].idle_entries), (Some(42), None));
        let off = cpu_reports(
            &snap(irq(10), s.clone(), None),
            &snap(irq(260), e.clone(), Some(goidle(1))),
            &[0],
            &[],
        );
        assert_eq!(off[0].idle_entries, None, "statistics off at the start");
        let r = cpu_reports(
            &snap(irq(10), s, None),
            &snap(irq(260), e, None),
            &[0, 1],
            &[1],
        );
        assert_eq!(
            (r[0].loc, r[0].res, r[0].cal, r[0].role),
            (250, Some(0), Some(0), CpuRole::Housekeeping)
        );
        assert_eq!((r[1].loc, r[1].role), (0, CpuRole::NohzFull));
        assert!(r[0].busy_ns.is_some());
    }
}
