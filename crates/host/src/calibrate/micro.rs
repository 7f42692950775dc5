//! The machine costs a user-space micro-benchmark can reach: one timekeeping read, one cache
//! line moved between two cores (of one package, and across packages), and the run time of the
//! task a background timer wakes.
//!
//! # Measurements ([`measure`], two short phases)
//!
//! * **Clock read** → `costs.xtime_read_ns`: a thread pinned to CPU 0 reads
//!   `clock_gettime(CLOCK_MONOTONIC)` in batches (the harness's `clock_read` module); the
//!   figure is the **median** batch's ns per read. The vDSO read does what the kernel's
//!   `ktime_get` does — seqcount begin, clocksource read (`rdtsc`, or the pvclock page then
//!   `rdtsc` for `kvm-clock`), mult/shift scaling, retry check — but with no kernel entry, on
//!   the copy of the timekeeper the kernel publishes to a read-only page mapped into every
//!   process, and with a final conversion to a `timespec`. The clocksource in use is read from
//!   sysfs and named in the notes; with one the vDSO cannot read ([`VDSO_CLOCKSOURCES`]) the C
//!   library falls back to the system call and the figure includes it (the note says so).
//! * **Cache-line bounce** → `costs.cacheline_local_ns` / `costs.cacheline_remote_ns`: two
//!   threads pinned to two CPUs bounce one line (the harness's `cacheline` module: each waits
//!   for the other's write, then writes); ns per round trip / 2 is one line transfer, and the
//!   figure is the **median** batch. The CPUs come from the sysfs topology: two CPUs of one
//!   package on different cores for the local figure; one CPU on each of two packages for the
//!   remote figure, which on a one-package host stays a preset (the twin charges it only
//!   between sockets). On a VM the topology is the one the hypervisor shows: the two vCPUs may
//!   run on two threads of one physical core, on two cores, or on two sockets, and may move;
//!   the figure is the transfer between wherever they ran, and the notes say so.
//!
//! Both are plain SCHED_OTHER threads: a batch during which a thread was preempted (or its
//! vCPU descheduled) is slower, never faster. The median keeps such batches out as long as
//! fewer than half are disturbed; the minimum is logged beside it as the undisturbed bound. A
//! figure from fewer than [`MIN_BATCHES`] batches is not fitted (the preset stays, the note
//! says so).
//!
//! # Background task ([`background_task`], from the idle phase)
//!
//! `costs.background_task_ns` is computed from the idle phase, without a phase of its own:
//! on each CPU `c`, the busy time per second (`idle_busy_c` × 1 s) over the wake-ups per
//! second that are not the tick, `t_c = LOC_idle_c − HZ × busy_c` (the same targets the
//! background-rate fit uses, `measurements::non_tick_rate`), averaged over the CPUs that
//! qualify: at most `specs::OTHER_WORK_BUSY` (5 %) busy (above it the CPU ran other work,
//! not timer-woken tasks), at least [`MIN_BACKGROUND_WAKEUPS`] such wake-ups in the window,
//! and some busy time accounted at all. With no CPU qualifying the preset stays, and the notes
//! say why, CPU by CPU. What the figure is:
//!
//! * it is every non-tick wake-up's share of the busy time, so it includes the interrupt
//!   handling and idle exit/entry of each wake-up, which the twin also charges separately
//!   (small against tens of µs);
//! * the idle phase's calling thread sleeps in one piece, so the harness coordinator's 10
//!   wake-ups per second (`harness_coordinator`, present in the fitted scenario) are *not* in
//!   it: it is the host's own daemons and kernel threads. The twin applies it to every source
//!   that wakes a task, the coordinator's included, whose real wake-up (a clock read, a flag
//!   check, a sleep) is a few µs: on a timed `host run` workload the twin overcharges those
//!   wake-ups by the difference;
//! * `/proc/stat` busy time (tick-sampled where the kernel uses tick-based accounting, as
//!   here) is reported in USER_HZ units: the resolution per wake-up is one unit (10 ms) over
//!   the wake-ups in the window, logged with the figure. Tick sampling is fair to a wake-up at
//!   a random phase of the tick (an hrtimer), and misses a task woken by a timer-wheel timer
//!   (at a tick) that ends before the next tick.

use std::path::Path;
use std::time::Duration;

use ticklab_schema::machine::Costs;

use super::error::CalibrateError;
use super::ledger::CostLedger;
use super::measurements::{
    BatchFigure, LineTransfer, Measurements, MicroMeasurements, non_tick_rate,
};
use super::specs::OTHER_WORK_BUSY;
use crate::harness::Stop;
use crate::harness::cacheline::{BATCH_ROUND_TRIPS, bounce};
use crate::harness::clock_read::{BATCH_READS, clock_reads};
use crate::harness::topology::CpuTopology;
use crate::probe::HostRoot;

/// Clocksources the x86 and arm64 vDSO read in user space (the kernel marks them with a vDSO
/// clock mode): `tsc`, `kvm-clock` (pvclock page), `hyperv_clocksource_tsc_page`, and arm64's
/// `arch_sys_counter`. With any other (`hpet`, `acpi_pm`, `jiffies`) `clock_gettime` is a
/// system call.
pub(crate) const VDSO_CLOCKSOURCES: [&str; 4] = [
    "tsc",
    "kvm-clock",
    "hyperv_clocksource_tsc_page",
    "arch_sys_counter",
];

/// Fewest non-tick wake-ups in the idle window for a CPU's background-task figure: a Poisson
/// count of 100 is known to ±10 %.
pub(crate) const MIN_BACKGROUND_WAKEUPS: f64 = 100.0;

/// Fewest batches behind a fitted micro-benchmark figure: below it the loop rarely ran
/// undisturbed (on a loaded host the two bouncing threads seldom run at the same time), the
/// median is not protected from disturbed batches, and the preset stays.
pub(crate) const MIN_BATCHES: usize = 20;

/// Runs the clock-read phase (`clock_d`) and the cache-line bounces (`line_d`, split between
/// the local and, with two packages, the remote pair) on CPUs `0..nr_cpus`.
pub(crate) fn measure(
    nr_cpus: u32,
    clock_d: Duration,
    line_d: Duration,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> Result<MicroMeasurements, CalibrateError> {
    let root = HostRoot::live();
    let harness_err = |phase: &str, source| CalibrateError::Harness {
        phase: phase.to_string(),
        source,
    };
    let interrupted = || {
        if stop.is_set() {
            Err(CalibrateError::Interrupted)
        } else {
            Ok(())
        }
    };
    let mut out = MicroMeasurements {
        clocksource: root
            .read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .ok()
            .cloned(),
        vm_guest: crate::probe::is_vm_guest(Path::new("/proc")),
        ..MicroMeasurements::default()
    };
    progress(&format!(
        "clock reads (vDSO clock_gettime) on CPU 0: {:.1} s",
        clock_d.as_secs_f64()
    ));
    let reads =
        clock_reads(0, duration_ns(clock_d), stop).map_err(|e| harness_err("clock reads", e))?;
    interrupted()?;
    out.clock_read = BatchFigure::of(&reads);

    match CpuTopology::read(&root, 0..nr_cpus) {
        Err(why) => out
            .skipped
            .push(format!("cache line: topology unreadable ({why})")),
        Ok(topo) => {
            out.packages = topo.packages();
            let remote = topo.cross_package_pair();
            let share = if remote.is_some() { 2 } else { 1 };
            let each = duration_ns(line_d) / share;
            match topo.same_package_pair() {
                Some((a, b, siblings)) => {
                    progress(&format!(
                        "cache-line bounce CPUs {a},{b} (one package): {:.1} s",
                        each as f64 / 1e9
                    ));
                    let v = bounce(a, b, each, stop)
                        .map_err(|e| harness_err("cache-line bounce", e))?;
                    interrupted()?;
                    out.line_local = BatchFigure::of(&v).map(|figure| LineTransfer {
                        cpus: (a, b),
                        siblings,
                        figure,
                    });
                }
                None => out
                    .skipped
                    .push("cache line: no package holds two of the CPUs".into()),
            }
            if let Some((a, b)) = remote {
                progress(&format!(
                    "cache-line bounce CPUs {a},{b} (two packages): {:.1} s",
                    each as f64 / 1e9
                ));
                let v =
                    bounce(a, b, each, stop).map_err(|e| harness_err("cache-line bounce", e))?;
                interrupted()?;
                out.line_remote = BatchFigure::of(&v).map(|figure| LineTransfer {
                    cpus: (a, b),
                    siblings: false,
                    figure,
                });
            }
        }
    }
    Ok(out)
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One CPU's part of the background-task figure.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CpuBackground {
    /// The CPU.
    pub cpu: u32,
    /// Busy fraction in the idle window.
    pub busy: f64,
    /// Non-tick wake-ups per second, `t_c`.
    pub wakeups_per_s: f64,
    /// Non-tick wake-ups in the window.
    pub wakeups: f64,
    /// Busy ns per wake-up, when the CPU qualifies.
    pub task_ns: Option<f64>,
    /// Why it does not qualify.
    pub excluded: Option<String>,
}

/// The background task's run time from the idle phase (module docs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackgroundTask {
    /// Per CPU, in CPU order.
    pub cpus: Vec<CpuBackground>,
    /// Mean of the qualifying CPUs' figures (`None`: no CPU qualifies).
    pub task_ns: Option<f64>,
    /// `/proc/stat`'s unit over the fewest wake-ups of a qualifying CPU: the figure's
    /// resolution, ns.
    pub resolution_ns: Option<f64>,
}

/// Computes [`BackgroundTask`] from the idle phase of `m`; `user_tick_ns` is `/proc/stat`'s
/// unit (10 ms at USER_HZ 100).
pub(crate) fn background_task(m: &Measurements, user_tick_ns: f64) -> BackgroundTask {
    let cpus: Vec<CpuBackground> = (0..m.nr_cpus as usize)
        .map(|c| {
            let busy = m.idle_busy.get(c).copied().unwrap_or(0.0);
            let rate = non_tick_rate(m, c);
            let wakeups = rate * m.idle_s;
            let excluded = if busy > OTHER_WORK_BUSY {
                Some(format!(
                    "{:.1} % busy: other work, not timer-woken tasks",
                    busy * 100.0
                ))
            } else if wakeups < MIN_BACKGROUND_WAKEUPS {
                Some(format!(
                    "{wakeups:.0} non-tick wake-ups in {:.1} s, fewer than {MIN_BACKGROUND_WAKEUPS:.0}",
                    m.idle_s
                ))
            } else if busy <= 0.0 {
                Some(format!(
                    "no busy time accounted: below /proc/stat's resolution of {:.0} ns per wake-up",
                    user_tick_ns / wakeups
                ))
            } else {
                None
            };
            CpuBackground {
                cpu: c as u32,
                busy,
                wakeups_per_s: rate,
                wakeups,
                task_ns: excluded.is_none().then(|| busy * 1e9 / rate),
                excluded,
            }
        })
        .collect();
    let used: Vec<&CpuBackground> = cpus.iter().filter(|c| c.task_ns.is_some()).collect();
    let task_ns = (!used.is_empty())
        .then(|| used.iter().filter_map(|c| c.task_ns).sum::<f64>() / used.len() as f64);
    let resolution_ns = used
        .iter()
        .map(|c| c.wakeups)
        .min_by(f64::total_cmp)
        .map(|w| user_tick_ns / w);
    BackgroundTask {
        cpus,
        task_ns,
        resolution_ns,
    }
}

/// Sets the four costs on `costs` from `m` where measured, registering each in `ledger`, with
/// one note line each (a kept preset says why).
pub(super) fn fit(
    m: &Measurements,
    costs: &mut Costs,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
    user_tick_ns: f64,
) {
    fit_clock_read(&m.micro, costs, ledger, notes);
    fit_lines(&m.micro, costs, ledger, notes);
    fit_background_task(m, costs, ledger, notes, user_tick_ns);
}

/// The note of a figure from fewer than [`MIN_BATCHES`] batches: the preset stays.
fn few_batches(what: &str, f: &BatchFigure, preset: u64) -> String {
    format!(
        "{what}: only {} batches (median {:.1} ns), fewer than {MIN_BATCHES}; preset {preset} ns kept",
        f.batches, f.median_ns
    )
}

/// `costs.xtime_read_ns` from the clock reads (module docs).
fn fit_clock_read(
    u: &MicroMeasurements,
    costs: &mut Costs,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    let clocksource = u.clocksource.as_deref().unwrap_or("unknown");
    let vdso = if VDSO_CLOCKSOURCES.contains(&clocksource) {
        "read in user space by the vDSO: the seqcount and clocksource read of ktime_get, no syscall"
    } else {
        "not one the vDSO reads: clock_gettime is a syscall here and the figure includes it"
    };
    match u.clock_read {
        Some(f) if f.batches < MIN_BATCHES => {
            notes.push(few_batches("xtime_read_ns", &f, costs.xtime_read_ns))
        }
        Some(f) => {
            costs.xtime_read_ns = f.median_ns.round().max(1.0) as u64;
            ledger.fitted(
                "costs.xtime_read_ns",
                "median ns per clock_gettime(CLOCK_MONOTONIC) (vDSO), pinned loop on CPU 0",
            );
            notes.push(format!(
                "xtime_read_ns = {} (median of {} batches of {BATCH_READS} reads, fastest {:.1} ns); clocksource {clocksource}, {vdso}",
                costs.xtime_read_ns, f.batches, f.min_ns
            ));
        }
        None => notes.push(format!(
            "xtime_read_ns: no clock-read batch; preset {} ns kept",
            costs.xtime_read_ns
        )),
    }
}

/// `costs.cacheline_local_ns` and `costs.cacheline_remote_ns` from the bounces (module docs).
fn fit_lines(
    u: &MicroMeasurements,
    costs: &mut Costs,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    let vm = if u.vm_guest {
        "; a VM guest: the hypervisor may run these vCPUs on two threads of one core, two cores or two sockets, and move them, so this is the transfer between wherever it ran them"
    } else {
        ""
    };
    match u.line_local {
        Some(l) if l.figure.batches < MIN_BATCHES => notes.push(few_batches(
            "cacheline_local_ns",
            &l.figure,
            costs.cacheline_local_ns,
        )),
        Some(l) if !l.siblings => fit_line(
            "cacheline_local_ns",
            "of one package, different cores in sysfs",
            &l,
            &mut costs.cacheline_local_ns,
            vm,
            ledger,
            notes,
        ),
        Some(l) => notes.push(format!(
            "cacheline_local_ns: CPUs {},{} are threads of one core (the line stays in the core, {:.1} ns); preset {} ns kept",
            l.cpus.0, l.cpus.1, l.figure.median_ns, costs.cacheline_local_ns
        )),
        None => notes.push(format!(
            "cacheline_local_ns: not measured ({}); preset {} ns kept",
            skipped_or(&u.skipped, "no batch"),
            costs.cacheline_local_ns
        )),
    }
    match u.line_remote {
        Some(l) if l.figure.batches < MIN_BATCHES => notes.push(few_batches(
            "cacheline_remote_ns",
            &l.figure,
            costs.cacheline_remote_ns,
        )),
        Some(l) => fit_line(
            "cacheline_remote_ns",
            "on two packages",
            &l,
            &mut costs.cacheline_remote_ns,
            vm,
            ledger,
            notes,
        ),
        None if u.packages == 1 => notes.push(format!(
            "cacheline_remote_ns: one package, no second socket to bounce a line to; preset {} ns kept (the twin charges it only between sockets)",
            costs.cacheline_remote_ns
        )),
        None => notes.push(format!(
            "cacheline_remote_ns: not measured ({}); preset {} ns kept",
            skipped_or(&u.skipped, "no batch"),
            costs.cacheline_remote_ns
        )),
    }
}

/// `costs.background_task_ns` from the idle phase ([`background_task`]).
fn fit_background_task(
    m: &Measurements,
    costs: &mut Costs,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
    user_tick_ns: f64,
) {
    let bg = background_task(m, user_tick_ns);
    let per_cpu = bg
        .cpus
        .iter()
        .map(|c| match (&c.task_ns, &c.excluded) {
            (Some(ns), _) => format!(
                "CPU {} {:.2} % busy / {:.1} wake-ups/s = {:.0} ns",
                c.cpu,
                c.busy * 100.0,
                c.wakeups_per_s,
                ns
            ),
            (None, Some(why)) => format!("CPU {} left out: {why}", c.cpu),
            (None, None) => format!("CPU {} left out", c.cpu),
        })
        .collect::<Vec<_>>()
        .join("; ");
    match bg.task_ns {
        Some(ns) => {
            costs.background_task_ns = ns.round().max(1.0) as u64;
            ledger.fitted(
                "costs.background_task_ns",
                "idle phase: busy ns/s over non-tick wake-ups/s, mean over quiet CPUs",
            );
            notes.push(format!(
                "background_task_ns = {} ({per_cpu}; resolution {:.0} ns per wake-up; the idle phase has no harness coordinator wake-ups)",
                costs.background_task_ns,
                bg.resolution_ns.unwrap_or(f64::NAN)
            ));
        }
        None => notes.push(format!(
            "background_task_ns: no CPU qualifies ({per_cpu}); preset {} ns kept",
            costs.background_task_ns
        )),
    }
}

/// Sets `slot` (`costs.NAME`) to the median transfer of `l`, between CPUs `place`, with its
/// ledger entry and note (`vm`: the VM caveat, or empty).
fn fit_line(
    name: &str,
    place: &str,
    l: &LineTransfer,
    slot: &mut u64,
    vm: &str,
    ledger: &mut CostLedger,
    notes: &mut Vec<String>,
) {
    *slot = l.figure.median_ns.round().max(1.0) as u64;
    let (a, b) = l.cpus;
    ledger.fitted(
        &format!("costs.{name}"),
        format!("atomic ping-pong CPUs {a},{b} {place}: median round trip / 2"),
    );
    notes.push(format!(
        "{name} = {} (CPUs {a},{b} {place}; median of {} batches of {BATCH_ROUND_TRIPS} round trips, fastest {:.1} ns){vm}",
        *slot, l.figure.batches, l.figure.min_ns
    ));
}

fn skipped_or<'a>(skipped: &'a [String], default: &'a str) -> &'a str {
    skipped.first().map_or(default, String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::measurements::tests::measured;
    use ticklab_schema::machine::kvm_guest;

    #[test]
    fn batch_figures() {
        /// Expected (batches, min, median).
        type Want = Option<(usize, f64, f64)>;
        let rows: [(&[f64], Want); 5] = [
            (&[], None),
            (&[f64::NAN, 0.0, -1.0], None),
            (&[30.0], Some((1, 30.0, 30.0))),
            // A disturbed batch does not move the median of three.
            (&[20.0, 5000.0, 22.0], Some((3, 20.0, 22.0))),
            (
                &[40.0, 10.0, 30.0, 20.0, f64::INFINITY],
                Some((4, 10.0, 25.0)),
            ),
        ];
        for (v, want) in rows {
            let got = BatchFigure::of(v).map(|f| (f.batches, f.min_ns, f.median_ns));
            assert_eq!(got, want, "{v:?}");
        }
    }

    const USER_TICK: f64 = 10_000_000.0;

    #[test]
    fn background_task_arithmetic() {
        // HZ 250, 10 s idle. CPU 0: LOC 30.5/s at 0.2 % busy → t = 30.5 − 0.5 = 30 wake-ups/s,
        // 300 in the window; 2 ms/s busy / 30 = 66 667 ns. CPU 1: LOC 41/s at 0.4 % busy →
        // t = 40; 4 ms / 40 = 100 000 ns. Mean 83 333 ns; resolution 10 ms / 300.
        let m = measured(vec![30.5, 41.0], vec![0.002, 0.004], vec![30.0, 280.0]);
        let bg = background_task(&m, USER_TICK);
        let ns: Vec<Option<f64>> = bg.cpus.iter().map(|c| c.task_ns).collect();
        assert_eq!(ns.len(), 2);
        assert!((ns[0].unwrap() - 66_666.7).abs() < 0.1, "{ns:?}");
        assert!((ns[1].unwrap() - 100_000.0).abs() < 1e-6, "{ns:?}");
        assert!((bg.task_ns.unwrap() - 83_333.3).abs() < 0.1);
        assert!((bg.resolution_ns.unwrap() - USER_TICK / 300.0).abs() < 1e-6);

        // (idle LOC/s, busy, qualifies, reason fragment)
        let rows = [
            // Busy with other work: left out whatever its wake-ups.
            (300.0, 0.5, false, "50.0 % busy"),
            // 9 non-tick wake-ups/s × 10 s = 90 < 100.
            (9.0, 0.0, false, "90 non-tick wake-ups in 10.0 s"),
            // Enough wake-ups but nothing accounted.
            (
                30.0,
                0.0,
                false,
                "below /proc/stat's resolution of 33333 ns",
            ),
            (30.5, 0.002, true, ""),
        ];
        for (loc, busy, ok, why) in rows {
            let m = measured(vec![loc, loc], vec![busy, busy], vec![30.0, 280.0]);
            let bg = background_task(&m, USER_TICK);
            let c = &bg.cpus[0];
            assert_eq!(c.task_ns.is_some(), ok, "{loc} {busy}: {c:?}");
            assert_eq!(bg.task_ns.is_some(), ok);
            let reason = c.excluded.clone().unwrap_or_default();
            assert!(reason.contains(why), "{loc} {busy}: {reason}");
        }
    }

    #[test]
    fn fit_sets_measured_costs_and_keeps_presets_with_a_reason() {
        let figure = |x: f64| BatchFigure {
            batches: MIN_BATCHES,
            min_ns: x - 1.0,
            median_ns: x,
        };
        let mut m = measured(vec![30.5, 41.0], vec![0.002, 0.004], vec![30.0, 280.0]);
        m.micro = MicroMeasurements {
            clocksource: Some("tsc".into()),
            clock_read: Some(figure(23.4)),
            line_local: Some(LineTransfer {
                cpus: (0, 1),
                siblings: false,
                figure: figure(61.6),
            }),
            line_remote: None,
            packages: 1,
            vm_guest: true,
            skipped: Vec::new(),
        };
        let preset = kvm_guest(2).costs;
        let mut costs = preset.clone();
        let mut ledger = CostLedger::new();
        let mut notes = Vec::new();
        fit(&m, &mut costs, &mut ledger, &mut notes, USER_TICK);
        assert_eq!(costs.xtime_read_ns, 23);
        assert_eq!(costs.cacheline_local_ns, 62);
        assert_eq!(costs.cacheline_remote_ns, preset.cacheline_remote_ns);
        assert_eq!(costs.background_task_ns, 83_333);
        let fitted: Vec<&str> = ledger.entries().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            fitted,
            [
                "costs.xtime_read_ns",
                "costs.cacheline_local_ns",
                "costs.background_task_ns"
            ]
        );
        assert_eq!(notes.len(), 4);
        assert!(
            notes[0].contains("clocksource tsc, read in user space"),
            "{}",
            notes[0]
        );
        assert!(notes[1].contains("a VM guest"), "{}", notes[1]);
        assert!(notes[2].contains("no second socket"), "{}", notes[2]);

        // Too few batches, siblings only, topology unreadable, no quiet CPU: every preset
        // stays, each with its reason.
        m.micro = MicroMeasurements {
            clocksource: Some("hpet".into()),
            clock_read: Some(BatchFigure {
                batches: MIN_BATCHES - 1,
                ..figure(400.0)
            }),
            line_local: Some(LineTransfer {
                cpus: (0, 4),
                siblings: true,
                figure: figure(5.0),
            }),
            packages: 2,
            skipped: vec!["cache line: topology unreadable (x)".into()],
            ..MicroMeasurements::default()
        };
        m.idle_busy = vec![0.3, 0.3];
        let mut costs = preset.clone();
        let mut ledger = CostLedger::new();
        let mut notes = Vec::new();
        fit(&m, &mut costs, &mut ledger, &mut notes, USER_TICK);
        assert_eq!(costs, preset);
        assert!(ledger.entries().is_empty());
        assert!(notes[0].contains("only 19 batches"), "{}", notes[0]);
        assert!(notes[1].contains("threads of one core"), "{}", notes[1]);
        assert!(notes[2].contains("topology unreadable"), "{}", notes[2]);
        assert!(notes[3].contains("no CPU qualifies"), "{}", notes[3]);

        // A clocksource the vDSO cannot read: the figure is fitted and said to be a syscall.
        m.micro.clock_read = Some(figure(400.0));
        let mut notes = Vec::new();
        fit(
            &m,
            &mut preset.clone(),
            &mut CostLedger::new(),
            &mut notes,
            USER_TICK,
        );
        assert!(
            notes[0].contains("hpet, not one the vDSO reads"),
            "{}",
            notes[0]
        );
    }
}
