//! ticklab's timelines as Chrome trace-event JSON: one vocabulary and one writer for the twin's
//! and the host lab's timelines, and the checker.
//!
//! The format is the Trace Event Format's JSON object (`{"traceEvents": [...]}`), which
//! ui.perfetto.dev, chrome://tracing and speedscope import. ticklab writes it in one
//! vocabulary for both halves, so a twin trace and a host trace of the same workload open
//! side by side (docs/trace.md):
//!
//! * one **process** per run (`pid` 1, 2, … in run order), one **thread** per CPU
//!   (`tid` = CPU number, named `CPU n`);
//! * on each CPU track, complete slices (`ph: "X"`) nest by [`Kind`]: a [`Kind::Task`] slice
//!   (the idle task is named [`IDLE_TASK`]) is always open, so the task slices of a CPU tile
//!   the window exactly; inside it [`Kind::IdleState`] (named by C-state), [`Kind::Irq`]
//!   (named by source: `tick`, `hrtimer`, `IPI reschedule`, `irq 11 virtio0` …),
//!   [`Kind::Softirq`] (`TIMER`, `RCU` …), [`Kind::Hrtimer`] (a callback) and
//!   [`Kind::LockWait`] (the holder named in `args`);
//! * instants (`ph: "i"`) for tick stop / restart ([`TICK_STOP`], [`TICK_RESTART`]) and the
//!   jiffies duty moving ([`DUTY_MOVED`]);
//! * counters (`ph: "C"`) per process ([`STALENESS`], [`PACKAGE_POWER`]).
//!
//! Timestamps are written in microseconds with three decimals from integer nanoseconds, so
//! the same run gives the same bytes. Slices are written when they close (children before
//! their parent); viewers sort by time.
//!
//! A [`TraceWriter`] collects one run's records into memory, clipped to its [`TraceWindow`]
//! and bounded by a byte limit (past the limit the window ends early, see
//! [`TraceWriter::full`]); [`write_trace`] puts the runs' records into one file; [`check`]
//! verifies a file's invariants (nesting, window, tiling), and says which record broke which
//! one ([`CheckError`]).
//!
//! The twin writes its timeline from its event loop and the host lab from tracefs; this crate
//! depends on the shared schema only (for the duration parser of [`TraceWindow::parse`]), so
//! that neither half depends on the other or on the renderers.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::io::{self, Write};
use std::sync::Arc;

mod check;
pub use check::{CheckError, SliceAt, TraceCheck, check};
mod vocabulary;
pub use vocabulary::{
    DEFAULT_LIMIT_BYTES, DUTY_MOVED, IDLE_TASK, KINDS, Kind, PACKAGE_POWER, STALENESS,
    TICK_RESTART, TICK_STOP,
};

/// An argument value of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A number.
    U64(u64),
    /// A string.
    Str(Arc<str>),
}

/// The span of time a trace covers, in the run's nanoseconds (simulated time since boot for
/// the twin, time since the observation started for the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceWindow {
    /// First nanosecond.
    pub start_ns: u64,
    /// Last nanosecond (`None`: the end of the run).
    pub end_ns: Option<u64>,
}

/// Why a `--trace-window` was refused: the text as given and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace window {input:?}: {kind}")]
pub struct TraceWindowError {
    /// The text as given.
    pub input: String,
    /// What is wrong with it.
    pub kind: TraceWindowErrorKind,
}

/// What is wrong with a refused trace window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceWindowErrorKind {
    /// No `..` between the two ends.
    #[error("expected START..END such as 2s..3s")]
    NoRange,
    /// One end is not a duration.
    #[error("{0}")]
    Side(ticklab_schema::units::DurationError),
    /// The end is not after the start.
    #[error("the end must be after the start")]
    EndNotAfterStart,
}

impl TraceWindow {
    /// The whole run.
    pub const WHOLE: TraceWindow = TraceWindow {
        start_ns: 0,
        end_ns: None,
    };

    /// Parses `START..END` (`2s..3s`, `..500ms`, `1s..`), each side a duration of
    /// [`ticklab_schema::units::parse_duration`] (or `0`), END after START.
    pub fn parse(s: &str) -> Result<TraceWindow, TraceWindowError> {
        let refuse = |kind| TraceWindowError {
            input: s.to_string(),
            kind,
        };
        let Some((a, b)) = s.split_once("..") else {
            return Err(refuse(TraceWindowErrorKind::NoRange));
        };
        let side = |x: &str| -> Result<Option<u64>, TraceWindowError> {
            match x.trim() {
                "" => Ok(None),
                "0" => Ok(Some(0)),
                t => {
                    // A zero start with a unit (`0s`) is fine here; the parser refuses zero.
                    let split = t
                        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                        .unwrap_or(t.len());
                    let (num, unit) = t.split_at(split);
                    if num.parse::<f64>() == Ok(0.0)
                        && ticklab_schema::units::parse_duration(&format!("1{unit}")).is_ok()
                    {
                        return Ok(Some(0));
                    }
                    ticklab_schema::units::parse_duration(t)
                        .map(Some)
                        .map_err(|e| refuse(TraceWindowErrorKind::Side(e)))
                }
            }
        };
        let start_ns = side(a)?.unwrap_or(0);
        let end_ns = side(b)?;
        if let Some(e) = end_ns
            && e <= start_ns
        {
            return Err(refuse(TraceWindowErrorKind::EndNotAfterStart));
        }
        Ok(TraceWindow { start_ns, end_ns })
    }

    /// The window resolved against a run that ends at `run_end_ns`.
    pub fn resolve(self, run_end_ns: u64) -> (u64, u64) {
        let end = self.end_ns.map_or(run_end_ns, |e| e.min(run_end_ns));
        (self.start_ns.min(end), end)
    }
}

/// A slice open on a track.
#[derive(Debug, Clone)]
struct Open {
    kind: Kind,
    name: Arc<str>,
    start: u64,
    arg: Option<(&'static str, Arg)>,
}

/// One CPU's track: the stack of open slices (innermost last).
#[derive(Debug, Clone)]
pub struct CpuTrack {
    tid: u32,
    stack: Vec<Open>,
}

impl CpuTrack {
    /// The track of CPU `cpu`.
    pub fn new(cpu: u32) -> CpuTrack {
        CpuTrack {
            tid: cpu,
            stack: Vec::with_capacity(8),
        }
    }

    /// The innermost open slice's kind.
    pub fn top(&self) -> Option<Kind> {
        self.stack.last().map(|o| o.kind)
    }

    /// Whether a slice of `kind` is open.
    pub fn is_open(&self, kind: Kind) -> bool {
        self.stack.iter().any(|o| o.kind == kind)
    }

    /// Renames the innermost open slice of `kind` (an interrupt is named by the callbacks
    /// that ran in it, known only later).
    pub fn rename(&mut self, kind: Kind, name: &Arc<str>) {
        if let Some(o) = self.stack.iter_mut().rev().find(|o| o.kind == kind) {
            o.name = Arc::clone(name);
        }
    }
}

/// Appends `s` to `out` as a JSON string.
fn json_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut b = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Appends nanoseconds as microseconds with three decimals.
fn json_us(out: &mut Vec<u8>, ns: u64) {
    let _ = write!(out, "{}.{:03}", ns / 1000, ns % 1000);
}

/// One run's records, clipped to a window (see the module documentation).
///
/// Invariant: every slice written lies inside `[start, end]`, and once the byte limit is
/// reached `end` is moved to the latest time already written, so nothing written lies
/// outside the final window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceWriter {
    out: Vec<u8>,
    pid: u32,
    start: u64,
    end: u64,
    limit: usize,
    /// The latest end of anything written.
    written_to: u64,
    truncated: bool,
}

impl TraceWriter {
    /// Records of process `pid` (named `name`) inside `[start_ns, end_ns]`, at most about
    /// `limit_bytes`.
    pub fn new(pid: u32, name: &str, start_ns: u64, end_ns: u64, limit_bytes: usize) -> Self {
        let mut w = TraceWriter {
            out: Vec::new(),
            pid,
            start: start_ns,
            end: end_ns.max(start_ns),
            limit: limit_bytes,
            written_to: start_ns,
            truncated: false,
        };
        w.meta("process_name", None, "name", name);
        w.meta_sort("process_sort_index", None, pid);
        w
    }

    /// The window `(start, end)` in ns (the end may have moved, see [`TraceWriter::full`]).
    pub fn window(&self) -> (u64, u64) {
        (self.start, self.end)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the byte limit cut the window short.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Nothing written yet.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Whether `at` lies inside the window.
    pub fn in_window(&self, at: u64) -> bool {
        (self.start..=self.end).contains(&at)
    }

    /// The records (each starts with `,\n`), for [`write_trace`].
    pub fn into_records(self) -> Vec<u8> {
        self.out
    }

    /// Checks the byte limit at `at`: once over it the window ends at `at` (or at the latest
    /// time already written, if later) and the caller should [`TraceWriter::close`] its
    /// tracks. Returns whether the limit was reached now.
    pub fn full(&mut self, at: u64) -> bool {
        if self.truncated || self.out.len() < self.limit {
            return false;
        }
        self.truncated = true;
        self.end = at.max(self.written_to).clamp(self.start, self.end);
        true
    }

    fn record_head(&mut self, ph: &str, name: &str, tid: Option<u32>) {
        self.out.extend_from_slice(b",\n{\"ph\":\"");
        self.out.extend_from_slice(ph.as_bytes());
        self.out.extend_from_slice(b"\",\"name\":");
        json_str(&mut self.out, name);
        let _ = write!(self.out, ",\"pid\":{}", self.pid);
        if let Some(t) = tid {
            let _ = write!(self.out, ",\"tid\":{t}");
        }
    }

    fn meta(&mut self, what: &str, tid: Option<u32>, key: &str, value: &str) {
        self.record_head("M", what, tid);
        self.out.extend_from_slice(b",\"args\":{");
        json_str(&mut self.out, key);
        self.out.push(b':');
        json_str(&mut self.out, value);
        self.out.extend_from_slice(b"}}");
    }

    fn meta_sort(&mut self, what: &str, tid: Option<u32>, index: u32) {
        self.record_head("M", what, tid);
        let _ = write!(self.out, ",\"args\":{{\"sort_index\":{index}}}}}");
    }

    /// Names the track of `track` (`CPU n`).
    pub fn name_track(&mut self, track: &CpuTrack) {
        self.meta(
            "thread_name",
            Some(track.tid),
            "name",
            &format!("CPU {}", track.tid),
        );
        self.meta_sort("thread_sort_index", Some(track.tid), track.tid);
    }

    /// Opens a slice of `kind` on `track` at `at`.
    pub fn begin(
        &mut self,
        track: &mut CpuTrack,
        kind: Kind,
        name: &Arc<str>,
        at: u64,
        arg: Option<(&'static str, Arg)>,
    ) {
        // A child never starts before its parent (handlers are atomic per CPU).
        let start = track.stack.last().map_or(at, |p| at.max(p.start));
        track.stack.push(Open {
            kind,
            name: Arc::clone(name),
            start,
            arg,
        });
    }

    /// Closes the innermost slice of `kind` on `track` at `at`, and any slice opened inside
    /// it that is still open. Returns false if no slice of `kind` was open.
    pub fn end(&mut self, track: &mut CpuTrack, kind: Kind, at: u64) -> bool {
        let Some(i) = track.stack.iter().rposition(|o| o.kind == kind) else {
            return false;
        };
        while track.stack.len() > i {
            let o = track.stack.pop().expect("len > i");
            self.slice(track.tid, &o, at.max(o.start));
        }
        true
    }

    /// Closes every open slice of `track` at the window's end.
    pub fn close(&mut self, track: &mut CpuTrack) {
        let end = self.end;
        while let Some(o) = track.stack.pop() {
            self.slice(track.tid, &o, end.max(o.start));
        }
    }

    /// Writes a complete slice, clipped to the window; empty ones are left out.
    fn slice(&mut self, tid: u32, o: &Open, end: u64) {
        let s = o.start.max(self.start);
        let e = end.min(self.end);
        if e <= s {
            return;
        }
        self.written_to = self.written_to.max(e);
        self.record_head("X", &o.name, Some(tid));
        self.out.extend_from_slice(b",\"cat\":\"");
        self.out.extend_from_slice(o.kind.category().as_bytes());
        self.out.extend_from_slice(b"\",\"ts\":");
        json_us(&mut self.out, s);
        self.out.extend_from_slice(b",\"dur\":");
        json_us(&mut self.out, e - s);
        self.args(o.arg.as_ref());
        self.out.push(b'}');
    }

    fn args(&mut self, arg: Option<&(&'static str, Arg)>) {
        if let Some((k, v)) = arg {
            self.out.extend_from_slice(b",\"args\":{");
            json_str(&mut self.out, k);
            self.out.push(b':');
            match v {
                Arg::U64(n) => {
                    let _ = write!(self.out, "{n}");
                }
                Arg::Str(s) => json_str(&mut self.out, s),
            }
            self.out.push(b'}');
        }
    }

    /// An instant on `track` at `at` (left out outside the window).
    pub fn instant(
        &mut self,
        track: &CpuTrack,
        name: &str,
        at: u64,
        arg: Option<(&'static str, Arg)>,
    ) {
        if !self.in_window(at) {
            return;
        }
        self.written_to = self.written_to.max(at);
        self.record_head("i", name, Some(track.tid));
        self.out.extend_from_slice(b",\"s\":\"t\",\"ts\":");
        json_us(&mut self.out, at);
        self.args(arg.as_ref());
        self.out.push(b'}');
    }

    /// A counter sample of the process: `name` is `milli / 1000` from `at` on.
    pub fn counter(&mut self, name: &str, at: u64, milli: i64) {
        if !self.in_window(at) {
            return;
        }
        self.written_to = self.written_to.max(at);
        self.record_head("C", name, None);
        self.out.extend_from_slice(b",\"ts\":");
        json_us(&mut self.out, at);
        let sign = if milli < 0 { "-" } else { "" };
        let m = milli.unsigned_abs();
        let _ = write!(
            self.out,
            ",\"args\":{{\"value\":{sign}{}.{:03}}}}}",
            m / 1000,
            m % 1000
        );
    }
}

/// Writes a trace file from runs' records (in the order given); `other` goes into
/// `otherData` beside each run's window (`window pid N` = `START_NS..END_NS`).
pub fn write_trace(
    mut out: impl Write,
    runs: Vec<TraceWriter>,
    other: &[(&str, String)],
) -> io::Result<()> {
    out.write_all(b"{\"traceEvents\":[")?;
    let mut first = true;
    let mut windows = Vec::new();
    for w in runs {
        windows.push((w.pid, w.window(), w.truncated()));
        let r = w.into_records();
        // Every record starts with ",\n": the first of the file drops its comma.
        let body = if first && !r.is_empty() {
            first = false;
            &r[1..]
        } else {
            &r[..]
        };
        out.write_all(body)?;
    }
    out.write_all(b"\n],\"displayTimeUnit\":\"ns\",\"otherData\":{")?;
    let mut buf = Vec::new();
    let mut sep = "";
    for (k, v) in other {
        buf.extend_from_slice(sep.as_bytes());
        json_str(&mut buf, k);
        buf.push(b':');
        json_str(&mut buf, v);
        sep = ",";
    }
    for (pid, (s, e), truncated) in windows {
        buf.extend_from_slice(sep.as_bytes());
        json_str(&mut buf, &format!("window pid {pid}"));
        buf.push(b':');
        json_str(&mut buf, &format!("{s}..{e}"));
        if truncated {
            let _ = write!(buf, ",\"truncated pid {pid}\":\"yes\"");
        }
        sep = ",";
    }
    out.write_all(&buf)?;
    out.write_all(b"}}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse() {
        // (input, (start, end) or None for an error)
        type Want = Option<(u64, Option<u64>)>;
        let cases: &[(&str, Want)] = &[
            ("2s..3s", Some((2_000_000_000, Some(3_000_000_000)))),
            ("..500ms", Some((0, Some(500_000_000)))),
            ("0..1s", Some((0, Some(1_000_000_000)))),
            ("0s..1ms", Some((0, Some(1_000_000)))),
            ("0x..1ms", None),
            ("1s..", Some((1_000_000_000, None))),
            ("3s..2s", None),
            ("2s", None),
            ("2x..3s", None),
        ];
        for (s, want) in cases {
            let got = TraceWindow::parse(s).ok().map(|w| (w.start_ns, w.end_ns));
            assert_eq!(got, *want, "{s}");
        }
        assert_eq!(
            TraceWindow::parse("1s..").unwrap().resolve(5_000),
            (5_000, 5_000)
        );
    }

    fn name(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    #[test]
    fn a_small_trace_is_valid_and_clipped() {
        let mut w = TraceWriter::new(1, "run \"a\"", 100, 1_000, DEFAULT_LIMIT_BYTES);
        let mut t = CpuTrack::new(0);
        w.name_track(&t);
        w.begin(&mut t, Kind::Task, &name(IDLE_TASK), 0, None);
        w.begin(&mut t, Kind::IdleState, &name("C1"), 50, None);
        w.end(&mut t, Kind::IdleState, 300);
        w.begin(&mut t, Kind::Irq, &name("local_timer"), 310, None);
        w.begin(
            &mut t,
            Kind::LockWait,
            &name("timekeeping"),
            320,
            Some(("holder", Arg::U64(1))),
        );
        w.end(&mut t, Kind::LockWait, 330);
        t.rename(Kind::Irq, &name("tick"));
        w.instant(&t, TICK_STOP, 340, None);
        w.end(&mut t, Kind::Irq, 400);
        w.end(&mut t, Kind::Task, 500);
        w.begin(&mut t, Kind::Task, &name("hog"), 500, None);
        w.counter(STALENESS, 600, 1_500);
        w.counter(STALENESS, 2_000, 1_500);
        w.close(&mut t);
        let mut out = Vec::new();
        write_trace(&mut out, vec![w], &[("source", "test".into())]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let c = check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!((c.slices, c.instants, c.counters), (5, 1, 1), "{text}");
        assert!(text.contains("\"name\":\"tick\""), "{text}");
        assert!(text.contains("\"ts\":0.100,\"dur\":0.200"), "{text}");
        assert!(text.contains("\"name\":\"run \\\"a\\\"\""), "{text}");
    }

    #[test]
    fn the_checker_finds_overlaps_and_gaps() {
        let mk = |slices: &[(u64, u64, &str)]| {
            let mut w = TraceWriter::new(1, "x", 0, 100, DEFAULT_LIMIT_BYTES);
            let t = CpuTrack::new(0);
            for &(s, e, cat) in slices {
                let kind = match cat {
                    "task" => Kind::Task,
                    _ => Kind::Irq,
                };
                let mut tt = t.clone();
                w.begin(&mut tt, kind, &name("n"), s, None);
                w.end(&mut tt, kind, e);
            }
            let mut out = Vec::new();
            write_trace(&mut out, vec![w], &[]).unwrap();
            check(&String::from_utf8(out).unwrap())
        };
        assert!(mk(&[(0, 100, "task"), (10, 20, "irq")]).is_ok());
        assert!(mk(&[(0, 100, "task"), (10, 20, "irq"), (15, 30, "irq")]).is_err());
        assert!(mk(&[(0, 50, "task"), (60, 100, "task")]).is_err());
        assert!(mk(&[(0, 50, "task"), (40, 100, "irq")]).is_err());
        assert!(mk(&[(0, 90, "task")]).is_err());
    }

    #[test]
    fn past_the_limit_the_window_ends_at_what_was_written() {
        let mut w = TraceWriter::new(1, "x", 0, 1_000_000, 1);
        let mut t = CpuTrack::new(0);
        w.begin(&mut t, Kind::Task, &name("hog"), 0, None);
        w.begin(&mut t, Kind::Irq, &name("tick"), 10, None);
        w.end(&mut t, Kind::Irq, 20);
        assert!(w.full(15));
        assert_eq!(w.window(), (0, 20));
        w.close(&mut t);
        let mut out = Vec::new();
        write_trace(&mut out, vec![w], &[]).unwrap();
        check(&String::from_utf8(out).unwrap()).unwrap();
    }
}
