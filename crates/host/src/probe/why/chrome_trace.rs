//! `host why --trace`: the tracefs events of the window as a timeline in the vocabulary the
//! twin writes ([`ticklab_trace`], docs/trace.md), so a host trace and a twin trace of
//! the same workload open side by side.
//!
//! Per CPU, walking its events in order (timestamps relative to the window's start):
//! * `sched_switch` ends the task slice and starts the next, named by `next_comm` (the idle
//!   task as [`IDLE_TASK`]); the first task is the first switch's `prev_comm`, or the task
//!   column of the CPU's first event;
//! * `cpu_idle` with a state starts an idle-state slice named by the cpuidle state (sysfs
//!   `name`, or `state N` without a cpuidle driver); it ends at `cpu_idle` exit or, as in the
//!   twin, at the interrupt that woke the CPU;
//! * `local_timer_entry/exit` an interrupt slice named `tick` when the tick's callback ran in
//!   it ([`is_tick_timer_callback`]), else `hrtimer` when another callback did, else
//!   `local_timer`; `reschedule`, `call_function`, `call_function_single`, `irq_work` entry /
//!   exit `IPI …` slices; `irq_handler_entry/exit` `irq N NAME` slices;
//! * `hrtimer_expire_entry/exit` callback slices named by the function, `softirq_entry/exit`
//!   softirq slices named by the action (`TIMER`, `RCU`, `SCHED` …);
//! * `tick_stop` instants ([`TICK_STOP`], or `tick_stop failed` with the dependency); a
//!   [`TICK_RESTART`] instant where the restart is inferred, as `host why` infers it: the
//!   first switch away from the idle task, or the first tick callback, after a stop.
//!
//! An exit whose entry came before the window is ignored; a handler still open at a task
//! switch or an idle entry (its exit event was not recorded) ends there. The host trace has
//! no lock waits, no duty moves and no counters: tracefs has no event for them here.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::procfs::is_tick_timer_callback;
use crate::procfs::trace::{
    SchedSwitch, TraceEvent, parse_trace_line_raw, payload_field, payload_last_field,
};
use ticklab_trace::{
    Arg, CpuTrack, IDLE_TASK, Kind, TICK_RESTART, TICK_STOP, TraceWindow, TraceWriter,
};

/// Events recorded in addition to [`super::EVENTS`] when a timeline is asked for.
pub const TIMELINE_EVENTS: [&str; 14] = [
    "timer:hrtimer_expire_exit",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "irq_vectors:reschedule_entry",
    "irq_vectors:reschedule_exit",
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_exit",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:call_function_single_exit",
    "irq_vectors:irq_work_entry",
    "irq_vectors:irq_work_exit",
    "irq_vectors:local_timer_exit",
];

/// The interrupt vectors with entry/exit events, and their slice names.
const VECTORS: [(&str, &str); 5] = [
    ("local_timer", "local_timer"),
    ("reschedule", "IPI reschedule"),
    ("call_function", "IPI call_function"),
    ("call_function_single", "IPI call_function_single"),
    ("irq_work", "IPI irq_work"),
];

/// One CPU as the converter follows it.
#[derive(Debug)]
struct CpuLine {
    track: CpuTrack,
    irq_tick: bool,
    irq_callback: bool,
    tick_stopped: bool,
    /// The open task slice is the idle task's.
    in_idle_task: bool,
}

/// Interns names so repeated slices share one allocation.
#[derive(Debug, Default)]
struct Names(BTreeMap<String, Arc<str>>);

impl Names {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.0.get(s) {
            return Arc::clone(a);
        }
        let a: Arc<str> = Arc::from(s);
        self.0.insert(s.to_string(), Arc::clone(&a));
        a
    }
}

/// The task name of a `comm` and pid (the idle task is [`IDLE_TASK`]).
fn task_name(comm: &str, pid: u32) -> &str {
    if pid == 0 { IDLE_TASK } else { comm }
}

/// Converts the text of a tracefs `trace` file recorded from `start_ns` to `end_ns` (trace
/// clock) on `cpus` into one process (`pid`, named `label`) of a timeline, keeping `window`
/// (relative to `start_ns`) and at most about `limit_bytes`. `state_names` are the cpuidle
/// states' names by index.
///
/// Long (about 180 lines) on purpose: one ordered pass over the trace that keeps every CPU's
/// open slices (interrupt, callback, idle state, running task) in local state and closes them
/// as events arrive; split at the event kinds, each piece would take the whole state.
pub fn timeline(
    text: &str,
    (start_ns, end_ns): (u64, u64),
    cpus: &[u32],
    state_names: &[String],
    (pid, label): (u32, &str),
    window: TraceWindow,
    limit_bytes: usize,
) -> TraceWriter {
    let rel = |ts: u64| ts.saturating_sub(start_ns);
    let (w0, w1) = window.resolve(end_ns.saturating_sub(start_ns));
    let mut w = TraceWriter::new(pid, label, w0, w1, limit_bytes);
    let mut names = Names::default();
    let lines: Vec<_> = text.lines().filter_map(parse_trace_line_raw).collect();
    let mut by_cpu: BTreeMap<u32, CpuLine> = BTreeMap::new();
    for &c in cpus {
        let mut track = CpuTrack::new(c);
        w.name_track(&track);
        // The first task: the first switch's prev, else the task column of the first event.
        let first = lines.iter().find(|(l, _, _)| l.cpu == c).map(|(l, _, p)| {
            match (&l.event, SchedSwitch::parse(p)) {
                (TraceEvent::SchedSwitch { prev_pid, .. }, Some(s)) => {
                    task_name(s.prev_comm, *prev_pid).to_string()
                }
                _ if l.task == "<idle>" => IDLE_TASK.to_string(),
                _ => task_name(&l.task, l.pid).to_string(),
            }
        });
        let first = first.as_deref().unwrap_or(IDLE_TASK);
        let name = names.get(first);
        w.begin(&mut track, Kind::Task, &name, 0, None);
        by_cpu.insert(
            c,
            CpuLine {
                track,
                irq_tick: false,
                irq_callback: false,
                tick_stopped: false,
                in_idle_task: first == IDLE_TASK,
            },
        );
    }
    let (tick, hrtimer) = (names.get("tick"), names.get("hrtimer"));
    for (l, name, payload) in &lines {
        let Some(c) = by_cpu.get_mut(&l.cpu) else {
            continue;
        };
        let at = rel(l.ts_ns);
        if w.full(at) {
            break;
        }
        let t = &mut c.track;
        // Outside any handler: whatever is still open ended before (its exit not recorded).
        let leave_handlers = |w: &mut TraceWriter, t: &mut CpuTrack| {
            for k in [Kind::Irq, Kind::Softirq, Kind::Hrtimer] {
                while w.end(t, k, at) {}
            }
        };
        match &l.event {
            TraceEvent::SchedSwitch {
                prev_pid, next_pid, ..
            } => {
                leave_handlers(&mut w, t);
                w.end(t, Kind::Task, at);
                // Parsed by key: a task name may contain spaces (`Web Content`).
                let comm = SchedSwitch::parse(payload).map_or("?", |s| s.next_comm);
                let n = names.get(task_name(comm, *next_pid));
                w.begin(t, Kind::Task, &n, at, None);
                c.in_idle_task = *next_pid == 0;
                if *prev_pid == 0 && c.tick_stopped {
                    c.tick_stopped = false;
                    let why = Arg::Str(names.get("switch away from idle"));
                    w.instant(t, TICK_RESTART, at, Some(("inferred from", why)));
                }
            }
            TraceEvent::CpuIdle { state: Some(s) } => {
                leave_handlers(&mut w, t);
                while w.end(t, Kind::IdleState, at) {}
                // Only the idle task enters an idle state: a switch to it that the trace lost
                // (a line the parser could not read, a full buffer) is implied here.
                if !c.in_idle_task {
                    w.end(t, Kind::Task, at);
                    let idle = names.get(IDLE_TASK);
                    w.begin(t, Kind::Task, &idle, at, None);
                    c.in_idle_task = true;
                }
                let n = match state_names.get(*s as usize) {
                    Some(n) => names.get(n),
                    None => names.get(&format!("state {s}")),
                };
                w.begin(t, Kind::IdleState, &n, at, None);
            }
            TraceEvent::CpuIdle { state: None } => {
                w.end(t, Kind::IdleState, at);
            }
            TraceEvent::TickStop {
                success,
                dependency,
            } => {
                if *success {
                    c.tick_stopped = true;
                    w.instant(t, TICK_STOP, at, None);
                } else {
                    let dep = Arg::Str(names.get(dependency));
                    w.instant(t, "tick_stop failed", at, Some(("dependency", dep)));
                }
            }
            TraceEvent::HrtimerExpireEntry { function, .. } => {
                let is_tick = is_tick_timer_callback(function);
                if t.is_open(Kind::Irq) {
                    if is_tick {
                        c.irq_tick = true;
                        t.rename(Kind::Irq, &tick);
                    } else if !c.irq_tick && !c.irq_callback {
                        t.rename(Kind::Irq, &hrtimer);
                    }
                    c.irq_callback = true;
                }
                if is_tick && c.tick_stopped {
                    c.tick_stopped = false;
                    let why = Arg::Str(names.get("tick callback"));
                    w.instant(t, TICK_RESTART, at, Some(("inferred from", why)));
                }
                let n = names.get(function);
                w.begin(t, Kind::Hrtimer, &n, at, None);
            }
            TraceEvent::LocalTimerEntry => {
                w.end(t, Kind::IdleState, at);
                c.irq_tick = false;
                c.irq_callback = false;
                let n = names.get("local_timer");
                w.begin(t, Kind::Irq, &n, at, None);
            }
            // Arming a timer is not a slice of the timeline.
            TraceEvent::HrtimerStart { .. } => {}
            TraceEvent::Other { .. } => match *name {
                "hrtimer_expire_exit" => {
                    w.end(t, Kind::Hrtimer, at);
                }
                "irq_handler_entry" => {
                    w.end(t, Kind::IdleState, at);
                    let irq = payload_field(payload, "irq").unwrap_or("?");
                    // `name` is the last field and may contain spaces.
                    let dev = payload_last_field(payload, "name").unwrap_or("?");
                    let n = names.get(&format!("irq {irq} {dev}"));
                    w.begin(t, Kind::Irq, &n, at, None);
                }
                "softirq_entry" => {
                    let action = payload_field(payload, "[action")
                        .map(|a| a.trim_end_matches(']'))
                        .or_else(|| payload_field(payload, "vec"))
                        .unwrap_or("?");
                    let n = names.get(action);
                    w.begin(t, Kind::Softirq, &n, at, None);
                }
                "softirq_exit" => {
                    w.end(t, Kind::Softirq, at);
                }
                "irq_handler_exit" => {
                    w.end(t, Kind::Irq, at);
                }
                other => {
                    if let Some(v) = other.strip_suffix("_exit")
                        && VECTORS.iter().any(|(n, _)| *n == v)
                    {
                        w.end(t, Kind::Irq, at);
                    } else if let Some(v) = other.strip_suffix("_entry")
                        && let Some((_, label)) = VECTORS.iter().find(|(n, _)| *n == v)
                    {
                        w.end(t, Kind::IdleState, at);
                        let n = names.get(label);
                        w.begin(t, Kind::Irq, &n, at, None);
                    }
                }
            },
        }
    }
    for c in by_cpu.values_mut() {
        w.close(&mut c.track);
    }
    w
}

/// Process id of a host trace: apart from the twin's 1, 2, … so that a host trace and a twin
/// trace can be merged into one file (docs/trace.md).
pub const HOST_PID: u32 = 1000;

/// [`timeline`] of this host's trace: process [`HOST_PID`], named after the host and its
/// kernel, with the cpuidle state names of CPU 0 and the default size limit.
pub fn live_timeline(
    text: &str,
    span: (u64, u64),
    cpus: &[u32],
    window: TraceWindow,
) -> TraceWriter {
    let states: Vec<String> =
        crate::procfs::read_cpuidle(std::path::Path::new("/sys/devices/system/cpu"))
            .cpus
            .first()
            .map(|c| {
                c.states
                    .iter()
                    .map(|s| {
                        s.name
                            .clone()
                            .unwrap_or_else(|| format!("state {}", s.index))
                    })
                    .collect()
            })
            .unwrap_or_default();
    let (host, kernel) = crate::harness::os::uname();
    let label = format!("host: {host} (Linux {kernel})");
    timeline(
        text,
        span,
        cpus,
        &states,
        (HOST_PID, &label),
        window,
        ticklab_trace::DEFAULT_LIMIT_BYTES,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_trace::{DEFAULT_LIMIT_BYTES, check, write_trace};

    const TRACE: &str = "\
# tracer: nop
           hog-7     [001] d.h..   10.000100: local_timer_entry: vector=236
           hog-7     [001] d.h..   10.000101: hrtimer_expire_entry: hrtimer=0000 function=tick_nohz_handler now=1
           hog-7     [001] d.h..   10.000103: hrtimer_expire_exit: hrtimer=0000
           hog-7     [001] d.h..   10.000104: local_timer_exit: vector=236
           hog-7     [001] ..s..   10.000105: softirq_entry: vec=1 [action=TIMER]
           hog-7     [001] ..s..   10.000107: softirq_exit: vec=1 [action=TIMER]
           hog-7     [001] d..2.   10.000200: sched_switch: prev_comm=hog prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0   [000] d..1.   10.000050: cpu_idle: state=1 cpu_id=0
          <idle>-0   [001] d..1.   10.000210: tick_stop: success=1 dependency=NONE
          <idle>-0   [001] d..1.   10.000211: cpu_idle: state=1 cpu_id=1
          <idle>-0   [000] d.h1.   10.000300: reschedule_entry: vector=253
          <idle>-0   [000] d.h1.   10.000302: reschedule_exit: vector=253
          <idle>-0   [000] d..1.   10.000303: cpu_idle: state=4294967295 cpu_id=0
          <idle>-0   [000] d..2.   10.000304: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/0:1 next_pid=9 next_prio=120
          <idle>-0   [001] d.h1.   10.000400: irq_handler_entry: irq=11 name=virtio0
          <idle>-0   [001] d.h1.   10.000401: irq_handler_exit: irq=11 ret=handled
     kworker/0:1-9   [000] d..2.   10.000450: sched_switch: prev_comm=kworker/0:1 prev_pid=9 prev_prio=120 prev_state=I ==> next_comm=Web Content next_pid=3321 next_prio=120
";

    fn convert(window: TraceWindow) -> String {
        let w = timeline(
            TRACE,
            (10_000_000_000, 10_000_500_000),
            &[0, 1],
            &["POLL".into(), "C1".into()],
            (1, "host"),
            window,
            DEFAULT_LIMIT_BYTES,
        );
        let mut out = Vec::new();
        write_trace(&mut out, vec![w], &[]).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tracefs_events_become_the_twin_vocabulary() {
        let text = convert(TraceWindow::WHOLE);
        let c = check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(c.tracks, 2);
        for want in [
            r#""name":"tick","pid":1,"tid":1,"cat":"irq","ts":100.000,"dur":4.000"#,
            r#""name":"tick_nohz_handler","pid":1,"tid":1,"cat":"hrtimer","ts":101.000,"dur":2.000"#,
            r#""name":"TIMER","pid":1,"tid":1,"cat":"softirq""#,
            r#""name":"hog","pid":1,"tid":1,"cat":"task","ts":0.000,"dur":200.000"#,
            r#""name":"C1","pid":1,"tid":0,"cat":"idle_state","ts":50.000,"dur":250.000"#,
            r#""name":"IPI reschedule","pid":1,"tid":0,"cat":"irq","ts":300.000,"dur":2.000"#,
            r#""name":"kworker/0:1","pid":1,"tid":0,"cat":"task","ts":304.000,"dur":146.000"#,
            r#""name":"Web Content","pid":1,"tid":0,"cat":"task","ts":450.000,"dur":50.000"#,
            r#""name":"irq 11 virtio0","pid":1,"tid":1,"cat":"irq""#,
            r#""name":"tick_stop","pid":1,"tid":1"#,
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
    }

    #[test]
    fn an_idle_entry_without_its_switch_implies_the_idle_task() {
        // The switch from `hog` to the idle task is missing (an unreadable line, a lost event).
        let text = "\
# tracer: nop
           hog-7     [001] d.h..   10.000100: local_timer_entry: vector=236
           hog-7     [001] d.h..   10.000104: local_timer_exit: vector=236
          <idle>-0   [001] d..1.   10.000211: cpu_idle: state=1 cpu_id=1
          <idle>-0   [001] d..1.   10.000300: cpu_idle: state=4294967295 cpu_id=1
";
        let w = timeline(
            text,
            (10_000_000_000, 10_000_500_000),
            &[1],
            &["POLL".into(), "C1".into()],
            (1, "host"),
            TraceWindow::WHOLE,
            DEFAULT_LIMIT_BYTES,
        );
        let mut out = Vec::new();
        write_trace(&mut out, vec![w], &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        for want in [
            r#""name":"hog","pid":1,"tid":1,"cat":"task","ts":0.000,"dur":211.000"#,
            r#""name":"idle","pid":1,"tid":1,"cat":"task","ts":211.000"#,
        ] {
            assert!(text.contains(want), "{want}\n{text}");
        }
    }

    #[test]
    fn a_window_clips_and_stays_valid() {
        let text = convert(TraceWindow::parse("101us..301us").unwrap());
        check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(!text.contains(
            "IPI reschedule\",\"pid\":1,\"tid\":0,\"cat\":\"irq\",\"ts\":300.000,\"dur\":2.000"
        ));
    }
}
