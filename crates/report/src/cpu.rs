//! The per-CPU table of one run.
//!
//! Layout of [`cpu_table`]:
//!
//! ```text
//! <label> on <machine> (<source>): HZ=<hz>, <window> measured
//! cmdline: <cmdline>
//! +-----+-------------+-------+---------+-----------+--------+--------+------+
//! | CPU | role        | LOC/s | ticks/s | stopped % | busy % | POLL % | C1 % |
//! +=========================================================================+
//! | 0   | timekeeping | ...
//! | all |             | <sums of rates, means of percentages>
//! +-----+-------------+-------+---------+-----------+--------+--------+------+
//! package: <W> W, <J> J, all cores idle <x> % (<modelled|RAPL>)
//!   (a twin run on a machine without a power model: `package: not modelled (...)`)
//! kernel messages:
//!   [    0.000000] <text>            (ticklab's own remarks prefixed `ticklab: `)
//! timekeeping: ...
//! hrtimer: ...
//! tick lock waits: ...               (one indented line per lock follows)
//! background <name> (<kind>) expired ...
//! warning: ...
//! ```
//!
//! Column rules: `LOC/s` and `ticks/s` are counts divided by the window; `stopped %`, `busy %`,
//! `steal %` (host runs: `/proc/stat` steal, time the hypervisor ran something else while
//! the vCPU wanted to run; only when read) and the C-state columns are shares of the window. There is one C-state column per state
//! name, in the order names are first seen walking the CPUs in report order; a CPU without
//! that state shows `-`. In the `all` row rates are summed (a rate is `-` if any CPU lacks
//! it) and percentages are averaged over the CPUs that report them.

use crate::format::right_align_from;
use crate::format::{MISSING, duration, fixed, new_table, opt_fixed, per_second, percent};
use ticklab_schema::report::{CpuReport, CpuRole, MessageOrigin, Report, Source};

/// The name of a role as shown in tables.
pub fn role_name(role: CpuRole) -> &'static str {
    match role {
        CpuRole::Timekeeping => "timekeeping",
        CpuRole::Housekeeping => "housekeeping",
        CpuRole::NohzFull => "nohz_full",
    }
}

/// One line naming the run: label, machine, source, HZ and window.
pub fn title(r: &Report) -> String {
    let source = match &r.source {
        Source::Twin { seed } => format!("twin, seed {seed}"),
        Source::Host { hostname, kernel } => format!("host {hostname}, kernel {kernel}"),
    };
    format!(
        "{} on {} ({source}): HZ={}, {} measured",
        r.label,
        r.machine,
        r.hz,
        duration(r.duration_ns)
    )
}

/// The line of its own a boot line asking for nohz_full on a kernel built without it gets
/// (the kernel's own message stays among the kernel messages below): the same words as
/// `host run`'s prediction line, so that the two read alike.
fn nohz_unsupported_line(r: &Report) -> Option<String> {
    r.messages
        .iter()
        .any(|m| m.origin == MessageOrigin::Kernel && m.text == ticklab_cmdline::NOHZ_UNSUPPORTED)
        .then(|| {
            "nohz_full: not possible on this kernel: built without CONFIG_NO_HZ_FULL \
             (the kernel ignored the boot line's nohz_full= / isolcpus=nohz as a whole: \
             no CPU is nohz_full, and a busy CPU keeps its tick)"
                .to_string()
        })
}

/// C-state names in first-seen order over the CPUs.
fn state_names(r: &Report) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in &r.cpus {
        for s in &c.idle_states {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

fn state_percent(c: &CpuReport, name: &str, window: u64) -> Option<f64> {
    let s = c.idle_states.iter().find(|s| s.name == name)?;
    percent(s.time_ns, window)
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let known: Vec<f64> = values.flatten().collect();
    (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
}

/// Sum of per-CPU rates; `None` if any CPU lacks the counter or the window is empty.
fn sum_rate(r: &Report, f: impl Fn(&CpuReport) -> Option<u64>) -> Option<f64> {
    if r.cpus.is_empty() {
        return None;
    }
    let total: Option<u64> = r.cpus.iter().map(&f).sum();
    per_second(total?, r.duration_ns)
}

/// Mean tick-stopped share over the CPUs that report it, in percent.
pub fn mean_stopped_percent(r: &Report) -> Option<f64> {
    mean(
        r.cpus
            .iter()
            .map(|c| c.tick_stopped_ns.and_then(|ns| percent(ns, r.duration_ns))),
    )
}

/// Total ticks per second over the machine, `None` unless every CPU reports ticks.
pub fn ticks_per_s(r: &Report) -> Option<f64> {
    sum_rate(r, |c| c.ticks)
}

/// Total local timer interrupts per second, `None` for an empty window or no CPUs.
pub fn loc_per_s(r: &Report) -> Option<f64> {
    sum_rate(r, |c| Some(c.loc))
}

/// Renders one run: the per-CPU table, totals, then energy, messages, timekeeping, hrtimer
/// and warnings (each section only when present). See the module documentation for layout
/// and number rules.
pub fn cpu_table(r: &Report) -> String {
    let w = r.duration_ns;
    let mut out = vec![title(r), format!("cmdline: {}", r.cmdline)];
    out.extend(nohz_unsupported_line(r));
    out.push(per_cpu_table(r));
    out.extend(energy_lines(r));
    out.extend(message_lines(r));
    out.extend(timekeeping_lines(r));
    out.extend(lock_lines(r));
    for b in &r.background {
        out.push(format!(
            "background {} ({}) expired {} times ({}/s)",
            b.name,
            b.kind.name(),
            b.expiries,
            opt_fixed(per_second(b.expiries, w), 2)
        ));
    }
    for wmsg in &r.warnings {
        out.push(format!("warning: {wmsg}"));
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// The table itself: one row per CPU (the steal column only when a CPU read its steal time,
/// one column per idle state), then the machine's totals.
fn per_cpu_table(r: &Report) -> String {
    let w = r.duration_ns;
    let states = state_names(r);
    // The steal column is there when a CPU read its steal time (host runs).
    let steal = r.cpus.iter().any(|c| c.steal_ns.is_some());
    let mut header: Vec<String> = ["CPU", "role", "LOC/s", "ticks/s", "stopped %", "busy %"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if steal {
        header.push("steal %".into());
    }
    header.extend(states.iter().map(|s| format!("{s} %")));
    let mut t = new_table(header);
    for c in &r.cpus {
        let mut row = vec![
            c.cpu.to_string(),
            role_name(c.role).to_string(),
            opt_fixed(per_second(c.loc, w), 1),
            opt_fixed(c.ticks.and_then(|n| per_second(n, w)), 1),
            opt_fixed(c.tick_stopped_ns.and_then(|ns| percent(ns, w)), 1),
            opt_fixed(c.busy_ns.and_then(|ns| percent(ns, w)), 1),
        ];
        if steal {
            row.push(opt_fixed(c.steal_ns.and_then(|ns| percent(ns, w)), 1));
        }
        row.extend(states.iter().map(|s| opt_fixed(state_percent(c, s, w), 1)));
        t.add_row(row);
    }
    let mut total = vec![
        "all".to_string(),
        String::new(),
        opt_fixed(loc_per_s(r), 1),
        opt_fixed(ticks_per_s(r), 1),
        opt_fixed(mean_stopped_percent(r), 1),
        opt_fixed(
            mean(
                r.cpus
                    .iter()
                    .map(|c| c.busy_ns.and_then(|ns| percent(ns, w))),
            ),
            1,
        ),
    ];
    if steal {
        total.push(opt_fixed(
            mean(
                r.cpus
                    .iter()
                    .map(|c| c.steal_ns.and_then(|ns| percent(ns, w))),
            ),
            1,
        ));
    }
    total.extend(
        states
            .iter()
            .map(|s| opt_fixed(mean(r.cpus.iter().map(|c| state_percent(c, s, w))), 1)),
    );
    t.add_row(total);
    right_align_from(&mut t, 2);
    t.to_string()
}

/// The package's energy line (and its breakdown), or why a twin run has none.
fn energy_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = &r.energy {
        out.push(format!(
            "package: {} W, {} J, all cores idle {} % ({})",
            fixed(e.watts, 3),
            fixed(e.joules, 3),
            fixed(e.package_idle_fraction * 100.0, 1),
            if e.modelled { "modelled" } else { "RAPL" }
        ));
        if !e.breakdown.is_empty() {
            let parts: Vec<String> = e
                .breakdown
                .iter()
                .map(|(name, j)| format!("{name} {} J", fixed(*j, 3)))
                .collect();
            out.push(format!("  energy by component: {}", parts.join(", ")));
        }
    } else if matches!(r.source, Source::Twin { .. }) {
        // The twin leaves energy out only where the machine has no power model (a guest).
        out.push("package: not modelled (this machine has no power model)".to_string());
    }
    out
}

/// The kernel's boot messages, dmesg style.
fn message_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if !r.messages.is_empty() {
        out.push("kernel messages:".to_string());
        for m in &r.messages {
            // dmesg style: seconds with microseconds, right-aligned in 12 characters.
            let secs = m.at_ns / 1_000_000_000;
            let micros = (m.at_ns % 1_000_000_000) / 1_000;
            let origin = match m.origin {
                MessageOrigin::Kernel => "",
                MessageOrigin::Ticklab => "ticklab: ",
            };
            out.push(format!("  [{:>5}.{micros:06}] {origin}{}", secs, m.text));
        }
    }
    out
}

/// The timekeeping and hrtimer summaries, each when the run has it.
fn timekeeping_lines(r: &Report) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(tk) = &r.timekeeping {
        out.push(format!(
            "timekeeping: max jiffies gap {}, max catch-up {} jiffies, max reader staleness {}, \
             mean coarse staleness {}, duty hand-overs {}",
            duration(tk.max_jiffies_gap_ns),
            tk.max_jiffies_catch_up,
            duration(tk.max_reader_staleness_ns),
            mean_ns(tk.mean_coarse_staleness_ns),
            tk.duty_handovers
        ));
    }
    if let Some(h) = &r.hrtimer {
        out.push(format!(
            "hrtimer: {} events, {} retries, {} hangs, max hang time {}, longest interrupt {}",
            h.nr_events,
            h.nr_retries,
            h.nr_hangs,
            duration(h.max_hang_time_ns),
            duration(h.max_irq_ns)
        ));
    }
    out
}

/// The shared-lock section of a report: machine-wide tick waits, then one indented line per
/// lock; empty when the report has no lock statistics.
pub fn lock_lines(r: &Report) -> Vec<String> {
    let Some(l) = &r.locks else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "tick lock waits: {} us/s machine-wide, longest in one tick {} us",
        fixed(l.tick_wait_us_per_s(r.seconds()), 1),
        fixed(l.max_tick_wait_ns as f64 / 1e3, 2)
    )];
    for lock in &l.locks {
        out.push(format!(
            "  {}: {} acquisitions, {} contended, {} us waited in all",
            lock.lock,
            lock.acquisitions,
            lock.contended,
            fixed(lock.wait_ns as f64 / 1e3, 1)
        ));
    }
    out
}

/// A mean in nanoseconds (fractional) with [`duration`]'s units, `-` when not finite.
fn mean_ns(v: f64) -> String {
    if v.is_finite() && v >= 0.0 {
        duration(v.round() as u64)
    } else {
        MISSING.to_string()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ticklab_schema::report::{
        BackgroundReport, EnergyReport, HrtimerReport, IdleStateReport, KernelMessage, LockName,
        LockReport, LocksReport, TimekeepingReport,
    };

    fn state(name: &str, usage: u64, time_ns: u64) -> IdleStateReport {
        IdleStateReport {
            name: name.to_string(),
            usage,
            time_ns,
            above: usage / 10,
            below: 0,
        }
    }

    /// An 8-CPU `nohz_full=all` twin run of 10 s, idle (E1-like numbers).
    // Over 100 lines because it is one fixture literal: a report with every section filled, so
    // that each renderer's snapshot shows every line it can write.
    pub(crate) fn twin_report(aggressive: bool) -> Report {
        let secs = 10u64;
        let w = secs * 1_000_000_000;
        let cpus = (0..8u32)
            .map(|cpu| {
                let tk = cpu == 0;
                let loc = if tk && !aggressive {
                    10_170
                } else {
                    12 + cpu as u64 * 3
                };
                let stopped = if tk && !aggressive { 0 } else { w - 40_000_000 };
                let mut states = vec![state("POLL", 5, 20_000), state("C1", 40, 15_000_000)];
                // CPU 3 has no C6 counters (e.g. the state was disabled); it must show `-`.
                // CPU 5 alone also reports C10 (a state only one CPU has, to check first-seen
                // column order); its C6 share is smaller by as much.
                let c10 = if cpu == 5 { 1_000_000_000 } else { 0 };
                if cpu != 3 {
                    states.push(state("C6", loc, w - 300_000_000 - c10));
                }
                if cpu == 5 {
                    states.push(state("C10", 2, c10));
                }
                CpuReport {
                    cpu,
                    role: if tk {
                        CpuRole::Timekeeping
                    } else {
                        CpuRole::NohzFull
                    },
                    loc,
                    res: Some(3),
                    cal: Some(1),
                    iwi: 0,
                    ticks: Some(loc),
                    tick_stopped_ns: Some(stopped),
                    busy_ns: Some(55_000_000 + cpu as u64 * 1_000_000),
                    idle_states: states,
                    steal_ns: None,
                    idle_entries: None,
                }
            })
            .collect();
        Report {
            cpus,
            energy: Some(EnergyReport {
                watts: if aggressive { 0.301 } else { 0.502 },
                joules: if aggressive { 3.01 } else { 5.02 },
                package_idle_fraction: if aggressive { 0.93 } else { 0.41 },
                breakdown: {
                    let j = if aggressive { 3.01 } else { 5.02 };
                    vec![
                        ("cores".to_string(), j * 0.75),
                        ("uncore".to_string(), j * 0.25),
                    ]
                },
                modelled: true,
            }),
            messages: vec![
                KernelMessage::kernel(
                    0,
                    "Housekeeping: must include one present CPU, using boot CPU:0",
                ),
                KernelMessage::kernel(0, "NO_HZ: Full dynticks CPUs: 1-7."),
                KernelMessage::kernel(4_203_117_250, "hrtimer: interrupt took 61234 ns"),
            ],
            timekeeping: Some(TimekeepingReport {
                max_jiffies_gap_ns: if aggressive { 412_000_000 } else { 1_000_000 },
                max_jiffies_catch_up: if aggressive { 412 } else { 1 },
                max_reader_staleness_ns: 3_999_000,
                mean_coarse_staleness_ns: 512_345.6,
                duty_handovers: if aggressive { 57 } else { 0 },
            }),
            hrtimer: Some(HrtimerReport {
                nr_events: 10_342,
                nr_retries: 2,
                nr_hangs: u64::from(aggressive),
                max_hang_time_ns: if aggressive { 61_234 } else { 0 },
                max_irq_ns: 61_234,
            }),
            locks: Some(LocksReport {
                locks: vec![
                    LockReport {
                        lock: LockName::JiffiesLock,
                        acquisitions: 1_000,
                        contended: 12,
                        wait_ns: 3_400,
                    },
                    LockReport {
                        lock: LockName::RcuNodeLeaves {
                            leaves: 1,
                            fanout: 16,
                        },
                        acquisitions: 8_000,
                        contended: 310,
                        wait_ns: 91_000,
                    },
                ],
                tick_wait_ns: 94_400,
                max_tick_wait_ns: 1_250,
            }),
            background: vec![BackgroundReport {
                name: "clocksource_watchdog".to_string(),
                kind: ticklab_schema::scenario::TimerKind::Wheel,
                expiries: 4,
            }],
            ..Report::new(
                Source::Twin { seed: 1 },
                if aggressive {
                    "aggressive"
                } else {
                    "nohz_full"
                }
                .to_string(),
                "xps13-7390".to_string(),
                if aggressive {
                    "nohz_full=all nohz_full_aggressive"
                } else {
                    "nohz_full=all"
                }
                .to_string(),
                1000,
                w,
            )
        }
    }

    /// A 4-CPU host measurement without tick or energy counters.
    pub(crate) fn host_report() -> Report {
        let w = 2_500_000_000;
        Report {
            cpus: (0..4u32)
                .map(|cpu| CpuReport {
                    cpu,
                    role: if cpu == 0 {
                        CpuRole::Timekeeping
                    } else {
                        CpuRole::Housekeeping
                    },
                    loc: 40 + cpu as u64,
                    res: Some(7),
                    cal: Some(2),
                    iwi: 1,
                    ticks: None,
                    tick_stopped_ns: None,
                    busy_ns: Some(25_000_000),
                    idle_states: vec![state("POLL", 1, 1_000), state("C1", 30, 2_400_000_000)],
                    // CPU 3 lost 3 % of the window to the hypervisor; CPU 2's was not read.
                    steal_ns: match cpu {
                        3 => Some(75_000_000),
                        2 => None,
                        _ => Some(0),
                    },
                    idle_entries: None,
                })
                .collect(),
            warnings: vec![
                "/proc/timer_list not readable (needs root): ticks and tick-stopped time unknown"
                    .to_string(),
            ],
            ..Report::new(
                Source::Host {
                    hostname: "lab1".to_string(),
                    kernel: "6.8.0-45-generic".to_string(),
                },
                "host idle".to_string(),
                "lab1".to_string(),
                "BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet".to_string(),
                250,
                w,
            )
        }
    }

    #[test]
    fn twin_snapshot() {
        insta::assert_snapshot!(cpu_table(&twin_report(false)));
    }

    #[test]
    fn host_snapshot() {
        insta::assert_snapshot!(cpu_table(&host_report()));
    }

    #[test]
    fn columns_follow_first_seen_state_order_and_missing_states_show_dash() {
        let out = cpu_table(&twin_report(false));
        let header = out.lines().find(|l| l.contains("CPU")).unwrap();
        let cols: Vec<&str> = header
            .split('|')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(
            cols,
            [
                "CPU",
                "role",
                "LOC/s",
                "ticks/s",
                "stopped %",
                "busy %",
                "POLL %",
                "C1 %",
                "C6 %",
                "C10 %"
            ]
        );
        let row3 = out.lines().find(|l| l.starts_with("| 3 ")).unwrap();
        let cells: Vec<&str> = row3.split('|').map(str::trim).collect();
        assert_eq!(cells[9], "-", "{row3}");
        assert!(out.is_ascii());
    }

    #[test]
    fn totals_sum_rates_and_average_percentages() {
        let r = twin_report(false);
        let loc: u64 = r.cpus.iter().map(|c| c.loc).sum();
        let out = cpu_table(&r);
        let all = out.lines().find(|l| l.starts_with("| all ")).unwrap();
        let cells: Vec<&str> = all.split('|').map(str::trim).collect();
        assert_eq!(cells[3], fixed(loc as f64 / 10.0, 1));
        // stopped %: CPU 0 keeps ticking (0 %), the seven others are stopped 99.6 %; the mean,
        // 87.15, sits on a rounding edge, so compare numerically.
        let stopped: f64 = cells[5].parse().unwrap();
        assert!((stopped - 87.15).abs() <= 0.05 + 1e-9, "{all}");
        // C10 is reported by one CPU only: its mean is that CPU's share (10 %).
        assert_eq!(cells[10], "10.0");
    }

    #[test]
    fn zero_window_and_no_cpus_do_not_divide_by_zero() {
        let mut r = host_report();
        r.duration_ns = 0;
        let out = cpu_table(&r);
        assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
        r.cpus.clear();
        let out = cpu_table(&r);
        assert!(out.contains("| all "), "{out}");
    }
}
