//! Which sources ran during each detour, and how often each ran at all.
//!
//! Pure functions of the sampler's detours and of the kernel's records, so fixtures test them.
//!
//! # From tracefs events
//!
//! [`runs_from_trace`] turns one CPU's events into *runs*: one per execution of a source, with
//! its start, end and *net* time (its length less the runs nested inside it, as an interrupt
//! inside a softirq or a thread). Entries and exits pair on a stack:
//!
//! * `irq_handler_entry/exit` (device interrupts, by action name), the x86 `irq_vectors`
//!   `*_entry/*_exit` pairs (`local_timer`, `reschedule`, `call_function`, ...) → [`Irq`];
//! * `softirq_entry/exit` → [`Softirq`] by vector name (`TIMER`, `RCU`, ...);
//! * `nmi_handler` (one event, after the handler, with its `delta_ns`) → [`Nmi`];
//! * `sched_switch` away from the sampler opens a [`Thread`] run of the task switched in,
//!   the next switch closes it (and may open the next task's), the switch back to the sampler
//!   closes the last.
//!
//! An exit whose entry came before the trace started is dropped; a run still open at the end
//! closes there.
//!
//! On a PREEMPT_RT kernel softirqs are not a context of their own: they run in threads
//! (`ktimers/N`, `ksoftirqd/N`, or the task that raised them), so the osnoise tracer does not
//! hook the softirq events there and their time is the thread's. [`SoftirqContext::InThreads`]
//! reads a trace the same way, so that the two tools count the same thing on such a kernel.
//!
//! [`attribute`] then counts every run that began inside the window (the interference count),
//! and hands each detour the runs that overlap it: their sources in the order they began, their
//! net time added to the source's noise. A detour with no run inside it is [`Hardware`].
//!
//! # From count deltas
//!
//! Without tracefs, [`from_count_deltas`] gives each `/proc/interrupts` row and each
//! `/proc/softirqs` vector whose CPU column moved an interference count (no time), the
//! sampler's involuntary context switches the [`Thread`] count, and no detour a source.
//!
//! [`Irq`]: NoiseClass::Irq
//! [`Softirq`]: NoiseClass::Softirq
//! [`Nmi`]: NoiseClass::Nmi
//! [`Thread`]: NoiseClass::Thread
//! [`Hardware`]: NoiseClass::Hardware

use std::collections::BTreeMap;

use ticklab_schema::host_noise::SourceRef;
use ticklab_schema::noise::{NoiseClass, NoiseSource};

use crate::procfs::Interrupts;
use crate::procfs::trace::{SchedSwitch, parse_trace_line_raw, payload_field, payload_last_field};

/// One execution of a source, times in ns from the window's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Run {
    /// The source.
    pub source: SourceRef,
    /// Start, ns (may be before 0: it began before the window).
    pub start: i64,
    /// End, ns.
    pub end: i64,
    /// Its length less the runs nested inside it, ns.
    pub net: u64,
}

/// One detour, ns from the window's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Detour {
    /// Start (the last clock read before the gap).
    pub start: i64,
    /// Length.
    pub ns: u64,
}

impl Detour {
    fn end(&self) -> i64 {
        self.start + self.ns as i64
    }
}

#[derive(Debug)]
struct Open {
    source: SourceRef,
    start: i64,
    nested: u64,
}

fn src(class: NoiseClass, name: &str) -> SourceRef {
    SourceRef {
        class,
        name: name.to_string(),
    }
}

/// The x86 `irq_vectors` event base names, `X` of `X_entry` / `X_exit` (the local timer's
/// included); the events this kernel lacks are skipped when tracing starts.
pub(crate) const IRQ_VECTORS: [&str; 12] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "x86_platform_ipi",
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
    "error_apic",
    "spurious_apic",
    "reboot",
];

/// The events [`runs_from_trace`] reads, as `system:name`.
pub(crate) fn trace_events() -> Vec<String> {
    let mut v: Vec<String> = [
        "irq:irq_handler_entry",
        "irq:irq_handler_exit",
        "irq:softirq_entry",
        "irq:softirq_exit",
        "sched:sched_switch",
        "nmi:nmi_handler",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for base in IRQ_VECTORS {
        v.push(format!("irq_vectors:{base}_entry"));
        v.push(format!("irq_vectors:{base}_exit"));
    }
    v
}

/// Whether softirqs are a source of their own on the traced kernel (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SoftirqContext {
    /// Softirqs run on interrupt exit or in `ksoftirqd`: each execution is a `Softirq` run.
    Own,
    /// PREEMPT_RT: softirqs run inside threads; their events are ignored and their time stays
    /// with the thread (or the interrupted run) they ran in.
    InThreads,
}

/// A softirq's vector name from `softirq_entry`'s `vec=N [action=NAME]`.
fn softirq_name(payload: &str) -> String {
    if let Some(rest) = payload.split_once("action=").map(|(_, r)| r) {
        return rest.trim_end_matches(']').trim().to_string();
    }
    payload_field(payload, "vec").map_or_else(|| "?".into(), |v| format!("vec {v}"))
}

/// Closes the top of the stack if it is of `class`, crediting its length to its parent.
fn close(
    stack: &mut Vec<Open>,
    thread: &mut Option<Open>,
    class: NoiseClass,
    at: i64,
    runs: &mut Vec<Run>,
) {
    if stack.last().is_none_or(|o| o.source.class != class) {
        return;
    }
    let o = stack.pop().expect("checked above");
    let len = (at - o.start).max(0) as u64;
    match stack.last_mut() {
        Some(parent) => parent.nested += len,
        None => {
            if let Some(t) = thread.as_mut() {
                t.nested += len;
            }
        }
    }
    runs.push(Run {
        source: o.source,
        start: o.start,
        end: at,
        net: len.saturating_sub(o.nested),
    });
}

/// The runs on `cpu` in a trace text (module docs). `to_ns` maps a trace timestamp (the
/// sampler's clock) to ns from the window's start; `sampler` is the sampler's tid;
/// `softirqs` says whether softirq events open runs of their own.
pub(crate) fn runs_from_trace(
    text: &str,
    cpu: u32,
    sampler: u32,
    softirqs: SoftirqContext,
    to_ns: impl Fn(u64) -> i64,
) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut thread: Option<Open> = None;
    let mut last = i64::MIN;
    for line in text.lines() {
        let Some((l, name, payload)) = parse_trace_line_raw(line) else {
            continue;
        };
        if l.cpu != cpu {
            continue;
        }
        let at = to_ns(l.ts_ns);
        last = last.max(at);
        let open = |source| Open {
            source,
            start: at,
            nested: 0,
        };
        match name {
            "irq_handler_entry" => {
                let n = payload_last_field(payload, "name").unwrap_or("?");
                stack.push(open(src(NoiseClass::Irq, n)));
            }
            "irq_handler_exit" => close(&mut stack, &mut thread, NoiseClass::Irq, at, &mut runs),
            "softirq_entry" | "softirq_exit" if softirqs == SoftirqContext::InThreads => {}
            "softirq_entry" => stack.push(open(src(NoiseClass::Softirq, &softirq_name(payload)))),
            "softirq_exit" => close(&mut stack, &mut thread, NoiseClass::Softirq, at, &mut runs),
            "nmi_handler" => {
                let delta: u64 = payload_field(payload, "delta_ns")
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(0);
                let handler = payload_field(payload, "handler").unwrap_or("NMI");
                let len = delta as i64;
                if let Some(parent) = stack.last_mut() {
                    parent.nested += delta;
                } else if let Some(t) = thread.as_mut() {
                    t.nested += delta;
                }
                runs.push(Run {
                    source: src(NoiseClass::Nmi, handler),
                    start: at - len,
                    end: at,
                    net: delta,
                });
            }
            "sched_switch" => {
                let Some(s) = SchedSwitch::parse(payload) else {
                    continue;
                };
                if let Some(t) = thread.take() {
                    let len = (at - t.start).max(0) as u64;
                    runs.push(Run {
                        source: t.source,
                        start: t.start,
                        end: at,
                        net: len.saturating_sub(t.nested),
                    });
                }
                if s.next_pid != sampler {
                    thread = Some(open(src(NoiseClass::Thread, s.next_comm)));
                }
            }
            other => {
                if let Some(base) = other.strip_suffix("_entry")
                    && IRQ_VECTORS.contains(&base)
                {
                    stack.push(open(src(NoiseClass::Irq, base)));
                } else if let Some(base) = other.strip_suffix("_exit")
                    && IRQ_VECTORS.contains(&base)
                {
                    close(&mut stack, &mut thread, NoiseClass::Irq, at, &mut runs);
                }
            }
        }
    }
    // Runs still open at the end close at the last event.
    while let Some(class) = stack.last().map(|o| o.source.class) {
        close(&mut stack, &mut thread, class, last, &mut runs);
    }
    if let Some(t) = thread.take() {
        let len = (last - t.start).max(0) as u64;
        runs.push(Run {
            source: t.source,
            start: t.start,
            end: last,
            net: len.saturating_sub(t.nested),
        });
    }
    runs.sort_by_key(|r| (r.start, r.end));
    runs
}

/// Events named `event` on `cpu` whose timestamp (the trace clock's) lies in `from..=to`.
pub(crate) fn count_events(text: &str, cpu: u32, event: &str, from: u64, to: u64) -> u64 {
    text.lines()
        .filter_map(parse_trace_line_raw)
        .filter(|(l, name, _)| l.cpu == cpu && *name == event && (from..=to).contains(&l.ts_ns))
        .count() as u64
}

/// The attribution of one CPU's detours.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attribution {
    /// Per source (hardware included), largest noise then count first.
    pub sources: Vec<NoiseSource>,
    /// For each detour (same order), the sources inside it, in the order they began.
    pub inside: Vec<Vec<SourceRef>>,
}

#[derive(Debug, Default)]
struct Tally {
    count: u64,
    noise: u64,
    max: u64,
}

fn ordered(tallies: BTreeMap<SourceRef, Tally>, with_time: bool) -> Vec<NoiseSource> {
    let mut v: Vec<NoiseSource> = tallies
        .into_iter()
        .map(|(s, t)| NoiseSource {
            class: s.class,
            name: s.name,
            count: t.count,
            noise_ns: with_time.then_some(t.noise),
            max_ns: with_time.then_some(t.max),
            // A tracer's sources are each an interruption of their own.
            nested: false,
        })
        .collect();
    v.sort_by(|a, b| {
        b.noise_ns
            .cmp(&a.noise_ns)
            .then(b.count.cmp(&a.count))
            .then(a.class.cmp(&b.class))
            .then(a.name.cmp(&b.name))
    });
    v
}

/// Counts and attributes (module docs). `runtime` is the window's length, ns; `detours` are
/// in order and do not overlap.
pub(crate) fn attribute(detours: &[Detour], runs: &[Run], runtime: u64) -> Attribution {
    debug_assert!(detours.windows(2).all(|w| w[0].end() <= w[1].start));
    let mut tallies: BTreeMap<SourceRef, Tally> = BTreeMap::new();
    let mut inside: Vec<Vec<SourceRef>> = vec![Vec::new(); detours.len()];
    for r in runs {
        let began_inside = r.start >= 0 && r.start <= runtime as i64;
        // The first detour that ends after the run starts, then every one it overlaps.
        let first = detours.partition_point(|d| d.end() <= r.start);
        let mut overlapped = false;
        for (i, d) in detours.iter().enumerate().skip(first) {
            if d.start >= r.end {
                break;
            }
            overlapped = true;
            if !inside[i].contains(&r.source) {
                inside[i].push(r.source.clone());
            }
        }
        if !began_inside && !overlapped {
            continue;
        }
        let t = tallies.entry(r.source.clone()).or_default();
        if began_inside {
            t.count += 1;
        }
        t.max = t.max.max(r.net);
        if overlapped {
            t.noise += r.net;
        }
    }
    let hw: Vec<&Detour> = detours
        .iter()
        .zip(&inside)
        .filter(|(_, s)| s.is_empty())
        .map(|(d, _)| d)
        .collect();
    if !hw.is_empty() {
        tallies.insert(
            src(NoiseClass::Hardware, "hardware"),
            Tally {
                count: hw.len() as u64,
                noise: hw.iter().map(|d| d.ns).sum(),
                max: hw.iter().map(|d| d.ns).max().unwrap_or(0),
            },
        );
    }
    Attribution {
        sources: ordered(tallies, true),
        inside,
    }
}

/// One CPU's runs, indexed to find the runs that overlap a span quickly: sorted by start,
/// with the latest end of every prefix (a long run that began early still overlaps a later
/// span, so the start alone does not bound the search).
///
/// Invariant: `reach[i]` is the largest `end` of `runs[..=i]`, so it never decreases.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunIndex {
    runs: Vec<Run>,
    reach: Vec<i64>,
}

impl RunIndex {
    /// Indexes `runs` (as [`runs_from_trace`] returns them, or in any order).
    pub(crate) fn new(mut runs: Vec<Run>) -> RunIndex {
        runs.sort_by_key(|r| (r.start, r.end));
        let mut reach = Vec::with_capacity(runs.len());
        let mut far = i64::MIN;
        for r in &runs {
            far = far.max(r.end);
            reach.push(far);
        }
        debug_assert!(reach.windows(2).all(|w| w[0] <= w[1]));
        RunIndex { runs, reach }
    }

    /// The source that took the most of `span`, with that time (ns): every run overlapping
    /// it gives its source the smaller of its net time and its overlap with the span (a run
    /// nested in another counts once, in its own source; the outer one's net time already
    /// excludes it). Ties go to the run that began first. `None` when no run overlaps:
    /// nothing the trace records ran in the span (firmware, the hypervisor: [`Hardware`]).
    ///
    /// [`Hardware`]: NoiseClass::Hardware
    pub(crate) fn largest_inside(&self, span: Detour) -> Option<(SourceRef, u64)> {
        let (from, to) = (span.start, span.end());
        let lo = self.reach.partition_point(|&e| e <= from);
        let hi = self.runs.partition_point(|r| r.start < to);
        let mut by: Vec<(&SourceRef, u64)> = Vec::new();
        for r in self.runs.get(lo..hi).unwrap_or_default() {
            if r.end <= from {
                continue;
            }
            let overlap = (r.end.min(to) - r.start.max(from)).max(0) as u64;
            let part = overlap.min(r.net);
            match by.iter_mut().find(|(s, _)| **s == r.source) {
                Some(e) => e.1 += part,
                None => by.push((&r.source, part)),
            }
        }
        // First of the largest: `by` is in the order the sources' first runs began.
        let mut best: Option<(&SourceRef, u64)> = None;
        for (s, ns) in by {
            if best.is_none_or(|(_, b)| ns > b) {
                best = Some((s, ns));
            }
        }
        best.map(|(s, ns)| (s.clone(), ns))
    }
}

/// The name a `/proc/interrupts` row gets as a source: the x86 mnemonics by the name of the
/// trace event that counts them (`LOC` → `local_timer`), a numbered device interrupt by its
/// last description word (the action, as `irq_handler_entry` names it), anything else as
/// printed.
pub(crate) fn irq_row_source(name: &str, description: &str) -> SourceRef {
    let class = if name == "NMI" {
        NoiseClass::Nmi
    } else {
        NoiseClass::Irq
    };
    let n = match name {
        "LOC" => "local_timer",
        "RES" => "reschedule",
        "CAL" => "call_function",
        "IWI" => "irq_work",
        "TLB" => "tlb_shootdown",
        "PLT" => "x86_platform_ipi",
        "TRM" => "thermal_apic",
        "THR" => "threshold_apic",
        "DFR" => "deferred_error_apic",
        "SPU" => "spurious_apic",
        _ if name.bytes().all(|b| b.is_ascii_digit()) => {
            description.split_whitespace().next_back().unwrap_or(name)
        }
        _ => name,
    };
    src(class, n)
}

/// Per-CPU deltas of one counter file between two readings: (row, description, delta) for
/// every row whose `cpu` column moved.
fn deltas(a: &Interrupts, b: &Interrupts, cpu: u32) -> Vec<(String, String, u64)> {
    b.rows
        .iter()
        .filter_map(|rb| {
            let after = b.count(rb, cpu)?;
            let before = a.row(&rb.name).and_then(|ra| a.count(ra, cpu)).unwrap_or(0);
            let d = after.saturating_sub(before);
            (d > 0).then(|| (rb.name.clone(), rb.description.clone(), d))
        })
        .collect()
}

/// Sources of one CPU from count deltas (module docs): `interrupts` and `softirqs` as
/// (start, end) readings of `/proc/interrupts` and `/proc/softirqs` (the latter parsed by the
/// same parser: its layout is the same), and the sampler's involuntary context switches.
/// With [`SoftirqContext::InThreads`] the softirq counts are left out: those softirqs ran in
/// threads, which the switch count already holds.
pub(crate) fn from_count_deltas(
    cpu: u32,
    interrupts: Option<(&Interrupts, &Interrupts)>,
    softirqs: Option<(&Interrupts, &Interrupts)>,
    context: SoftirqContext,
    switches: Option<u64>,
) -> Vec<NoiseSource> {
    let mut tallies: BTreeMap<SourceRef, Tally> = BTreeMap::new();
    if let Some((a, b)) = interrupts {
        for (name, desc, d) in deltas(a, b, cpu) {
            tallies
                .entry(irq_row_source(&name, &desc))
                .or_default()
                .count += d;
        }
    }
    if let Some((a, b)) = softirqs.filter(|_| context == SoftirqContext::Own) {
        for (name, _, d) in deltas(a, b, cpu) {
            tallies
                .entry(src(NoiseClass::Softirq, &name))
                .or_default()
                .count += d;
        }
    }
    if let Some(n) = switches.filter(|&n| n > 0) {
        tallies
            .entry(src(NoiseClass::Thread, "other tasks"))
            .or_default()
            .count += n;
    }
    ordered(tallies, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::parse_interrupts;

    /// CPU 1, the sampler is pid 500; timestamps are counts = ns here.
    const TRACE: &str = "\
# tracer: nop
          ticklab-500   [001] d.h1.  1000: local_timer_entry: vector=236
          ticklab-500   [001] d.h1.  3000: local_timer_exit: vector=236
          ticklab-500   [001] ..s1.  3200: softirq_entry: vec=1 [action=TIMER]
          ticklab-500   [001] d.h2.  3500: irq_handler_entry: irq=24 name=virtio0-input.0
          ticklab-500   [001] d.h2.  3900: irq_handler_exit: irq=24 ret=handled
          ticklab-500   [001] ..s1.  5200: softirq_exit: vec=1 [action=TIMER]
          ticklab-500   [001] d..2. 20000: sched_switch: prev_comm=ticklab prev_pid=500 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=77 next_prio=120
      kworker/1:1-77    [001] d.h1. 21000: local_timer_entry: vector=236
      kworker/1:1-77    [001] d.h1. 22000: local_timer_exit: vector=236
      kworker/1:1-77    [001] d..2. 30000: sched_switch: prev_comm=kworker/1:1 prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=ticklab next_pid=500 next_prio=120
          ticklab-500   [000] d.h1. 40000: local_timer_entry: vector=236
          ticklab-500   [001] d.h1. 50000: local_timer_entry: vector=236
          ticklab-500   [001] d.h1. 50400: local_timer_exit: vector=236
          ticklab-500   [001] d.h1. 70000: nmi_handler: handler=perf_event_nmi_handler delta_ns=300 handled=1
";

    fn runs() -> Vec<Run> {
        runs_from_trace(TRACE, 1, 500, SoftirqContext::Own, |t| t as i64)
    }

    #[test]
    fn runs_pair_entries_and_exits_and_subtract_nesting() {
        let r = runs();
        let got: Vec<(&str, i64, i64, u64)> = r
            .iter()
            .map(|r| (r.source.name.as_str(), r.start, r.end, r.net))
            .collect();
        assert_eq!(
            got,
            vec![
                ("local_timer", 1000, 3000, 2000),
                ("TIMER", 3200, 5200, 1600), // 2000 less the nested 400 of the device IRQ
                ("virtio0-input.0", 3500, 3900, 400),
                ("kworker/1:1", 20000, 30000, 9000), // less its tick
                ("local_timer", 21000, 22000, 1000),
                ("local_timer", 50000, 50400, 400),
                ("perf_event_nmi_handler", 69700, 70000, 300),
            ]
        );
    }

    #[test]
    fn detours_get_every_source_inside_and_the_rest_is_hardware() {
        let detours = [
            Detour {
                start: 900,
                ns: 4400,
            }, // tick + softirq + device
            Detour {
                start: 19990,
                ns: 10020,
            }, // the kworker (and its tick)
            Detour {
                start: 60000,
                ns: 2000,
            }, // nothing inside: hardware
        ];
        let a = attribute(&detours, &runs(), 100_000);
        let names =
            |i: usize| -> Vec<&str> { a.inside[i].iter().map(|s| s.name.as_str()).collect() };
        assert_eq!(names(0), ["local_timer", "TIMER", "virtio0-input.0"]);
        assert_eq!(names(1), ["kworker/1:1", "local_timer"]);
        assert!(a.inside[2].is_empty());
        let by = |class, name: &str| {
            a.sources
                .iter()
                .find(|s| s.class == class && s.name == name)
                .cloned()
                .unwrap()
        };
        let tick = by(NoiseClass::Irq, "local_timer");
        // Three ticks on CPU 1 began in the window (the one on CPU 0 is not this CPU's); the
        // one at 50000 made no detour, so its 400 ns are not noise.
        assert_eq!(
            (tick.count, tick.noise_ns, tick.max_ns),
            (3, Some(3000), Some(2000))
        );
        let hw = by(NoiseClass::Hardware, "hardware");
        assert_eq!((hw.count, hw.noise_ns), (1, Some(2000)));
        let nmi = by(NoiseClass::Nmi, "perf_event_nmi_handler");
        assert_eq!((nmi.count, nmi.noise_ns), (1, Some(0)));
        // Largest noise first.
        assert_eq!(a.sources[0].name, "kworker/1:1");
    }

    /// The source that took most of a span: (span start, length) -> (name, ns).
    #[test]
    fn the_largest_source_inside_a_span() {
        let index = RunIndex::new(runs());
        // (span start, length, the source and its ns)
        type Case<'a> = (i64, u64, Option<(&'a str, u64)>);
        let table: &[Case<'_>] = &[
            (900, 4400, Some(("local_timer", 2000))),
            // Only the softirq's net time counts, not the device interrupt inside it.
            (3200, 2000, Some(("TIMER", 1600))),
            // Late in a thread run that began long before, after the tick nested in it.
            (25_000, 2_000, Some(("kworker/1:1", 2000))),
            (60_000, 2_000, None),
            // A span that touches a run's end only is not inside it.
            (3000, 100, None),
        ];
        for &(start, ns, want) in table {
            let got = index.largest_inside(Detour { start, ns });
            let got = got.as_ref().map(|(s, n)| (s.name.as_str(), *n));
            assert_eq!(got, want, "span {start}+{ns}");
        }
    }

    #[test]
    fn events_are_counted_in_a_window_on_one_cpu() {
        assert_eq!(count_events(TRACE, 1, "local_timer_entry", 0, 100_000), 3);
        assert_eq!(count_events(TRACE, 1, "local_timer_entry", 1000, 21000), 2);
        assert_eq!(count_events(TRACE, 0, "local_timer_entry", 0, 100_000), 1);
    }

    #[test]
    fn runs_outside_the_window_are_not_counted() {
        let a = attribute(&[], &runs(), 10_000);
        let tick = a.sources.iter().find(|s| s.name == "local_timer").unwrap();
        assert_eq!(tick.count, 1);
    }

    #[test]
    fn count_deltas_per_row_and_vector() {
        let i0 = parse_interrupts(
            "           CPU0       CPU1\n  24:   1   10   PCI-MSI 1-edge   virtio0-input.0\nLOC:   100   200   Local timer interrupts\nNMI:   0   0   Non-maskable interrupts\n",
        )
        .unwrap();
        let i1 = parse_interrupts(
            "           CPU0       CPU1\n  24:   1   13   PCI-MSI 1-edge   virtio0-input.0\nLOC:   150   2700   Local timer interrupts\nNMI:   0   1   Non-maskable interrupts\n",
        )
        .unwrap();
        let s0 = parse_interrupts(
            "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:       5       10\n         RCU:     1     1\n",
        )
        .unwrap();
        let s1 = parse_interrupts(
            "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:       9       400\n         RCU:     1     1\n",
        )
        .unwrap();
        let v = from_count_deltas(
            1,
            Some((&i0, &i1)),
            Some((&s0, &s1)),
            SoftirqContext::Own,
            Some(4),
        );
        let got: Vec<(NoiseClass, &str, u64)> = v
            .iter()
            .map(|s| (s.class, s.name.as_str(), s.count))
            .collect();
        assert_eq!(
            got,
            vec![
                (NoiseClass::Irq, "local_timer", 2500),
                (NoiseClass::Softirq, "TIMER", 390),
                (NoiseClass::Thread, "other tasks", 4),
                (NoiseClass::Irq, "virtio0-input.0", 3),
                (NoiseClass::Nmi, "NMI", 1),
            ]
        );
        assert!(v.iter().all(|s| s.noise_ns.is_none()));
        // PREEMPT_RT: the same deltas without the softirq rows (those ran in threads).
        let rt = from_count_deltas(
            1,
            Some((&i0, &i1)),
            Some((&s0, &s1)),
            SoftirqContext::InThreads,
            Some(4),
        );
        assert!(rt.iter().all(|s| s.class != NoiseClass::Softirq));
        assert_eq!(rt.len(), 4);
    }

    /// PREEMPT_RT: a softirq in a thread is that thread's time, one inside the sampler's own
    /// context leaves only the interrupt that raised it, and nothing is a `Softirq` run.
    #[test]
    fn on_preempt_rt_softirqs_are_the_thread_s_time() {
        let r = runs_from_trace(TRACE, 1, 500, SoftirqContext::InThreads, |t| t as i64);
        let got: Vec<(&str, i64, i64, u64)> = r
            .iter()
            .map(|r| (r.source.name.as_str(), r.start, r.end, r.net))
            .collect();
        assert_eq!(
            got,
            vec![
                ("local_timer", 1000, 3000, 2000),
                ("virtio0-input.0", 3500, 3900, 400),
                ("kworker/1:1", 20000, 30000, 9000),
                ("local_timer", 21000, 22000, 1000),
                ("local_timer", 50000, 50400, 400),
                ("perf_event_nmi_handler", 69700, 70000, 300),
            ]
        );
        const KTIMERS: &str = "\
          ticklab-500   [001] d..2.  1000: sched_switch: prev_comm=ticklab prev_pid=500 prev_prio=120 prev_state=R ==> next_comm=ktimers/1 next_pid=20 next_prio=98
        ktimers/1-20    [001] ..s1.  1200: softirq_entry: vec=1 [action=TIMER]
        ktimers/1-20    [001] ..s1.  4200: softirq_exit: vec=1 [action=TIMER]
        ktimers/1-20    [001] d..2.  5000: sched_switch: prev_comm=ktimers/1 prev_pid=20 prev_prio=98 prev_state=S ==> next_comm=ticklab next_pid=500 next_prio=120
";
        let r = runs_from_trace(KTIMERS, 1, 500, SoftirqContext::InThreads, |t| t as i64);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].source.class, r[0].net), (NoiseClass::Thread, 4000));
        let own = runs_from_trace(KTIMERS, 1, 500, SoftirqContext::Own, |t| t as i64);
        assert_eq!(
            own.len(),
            2,
            "off PREEMPT_RT the softirq is a run of its own"
        );
    }
}
