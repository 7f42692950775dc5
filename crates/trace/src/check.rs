//! The checker of a written trace ([`check`]): every record inside its run's window, slices
//! nesting per CPU track, task slices tiling the window, idle-state slices inside idle.
//! Apart from the writer: it reads a trace back and shares only the vocabulary with it.

use std::collections::BTreeMap;

use crate::vocabulary::{IDLE_TASK, KINDS, Kind};

/// What [`check`] found in a valid trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceCheck {
    /// Processes (runs).
    pub processes: usize,
    /// CPU tracks with slices.
    pub tracks: usize,
    /// Complete slices.
    pub slices: usize,
    /// Instants.
    pub instants: usize,
    /// Counter samples.
    pub counters: usize,
    /// Slices per category.
    pub by_category: BTreeMap<String, usize>,
}

/// A slice as [`check`] reads it: start and end (ns), category, name.
type Span = (u64, u64, String, String);

/// Why [`check`] refused a trace file: the record, key or slice it read, and the invariant it
/// breaks. Records are shown as JSON, times in the run's nanoseconds.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The file is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The top-level object has no `traceEvents` array.
    #[error("no traceEvents array")]
    NoEvents,
    /// An `otherData` key `window pid N` whose N is not a process id.
    #[error("bad key {0}")]
    WindowKey(String),
    /// A window in `otherData` that is not `START_NS..END_NS`.
    #[error("bad window {0}")]
    Window(serde_json::Value),
    /// A record without a phase (`ph`).
    #[error("no ph: {0}")]
    NoPhase(serde_json::Value),
    /// A record without a process id (`pid`).
    #[error("no pid: {0}")]
    NoPid(serde_json::Value),
    /// A record of a process with no `window pid N` in `otherData`.
    #[error("pid {0} has no window")]
    NoWindow(u64),
    /// A time field (`ts`, `dur`) that is not a number of microseconds.
    #[error("{field}: not a number: {value}")]
    NotANumber {
        /// The field.
        field: &'static str,
        /// What it holds.
        value: serde_json::Value,
    },
    /// A time field below zero.
    #[error("{field}: negative: {us}")]
    Negative {
        /// The field.
        field: &'static str,
        /// Its value, µs.
        us: f64,
    },
    /// A record that starts outside its run's window.
    #[error("outside the window {start}..{end}: {record}")]
    OutsideWindow {
        /// The window's start, ns.
        start: u64,
        /// The window's end, ns.
        end: u64,
        /// The record.
        record: serde_json::Value,
    },
    /// A slice that ends after its run's window.
    #[error("ends after the window {start}..{end}: {record}")]
    EndsAfterWindow {
        /// The window's start, ns.
        start: u64,
        /// The window's end, ns.
        end: u64,
        /// The record.
        record: serde_json::Value,
    },
    /// A slice without a thread (`tid`, the CPU).
    #[error("no tid: {0}")]
    NoTid(serde_json::Value),
    /// A phase other than `M`, `X`, `i` or `C`.
    #[error("unexpected phase {phase}: {record}")]
    Phase {
        /// The phase.
        phase: String,
        /// The record.
        record: serde_json::Value,
    },
    /// A slice that starts inside another on its CPU track and ends after it.
    #[error(
        "pid {pid} CPU {tid}: {} {}..{} overlaps {} {}..{}",
        .slice.name, .slice.start, .slice.end, .parent.name, .parent.start, .parent.end
    )]
    Overlap {
        /// The process.
        pid: u64,
        /// The CPU.
        tid: u64,
        /// The later slice.
        slice: SliceAt,
        /// The slice it overlaps.
        parent: SliceAt,
    },
    /// An outermost slice that is not a task slice.
    #[error(
        "pid {pid} CPU {tid}: {} {}..{} outside any task slice",
        .slice.name, .slice.start, .slice.end
    )]
    OutsideTask {
        /// The process.
        pid: u64,
        /// The CPU.
        tid: u64,
        /// The slice.
        slice: SliceAt,
    },
    /// A gap between the task slices of a CPU track.
    #[error("pid {pid} CPU {tid}: no task slice {from}..{to}")]
    TaskGap {
        /// The process.
        pid: u64,
        /// The CPU.
        tid: u64,
        /// Where the gap starts, ns.
        from: u64,
        /// Where the next task slice starts, ns.
        to: u64,
    },
    /// An idle-state slice outside an idle-task slice.
    #[error(
        "pid {pid} CPU {tid}: idle state {} {}..{} outside the idle task",
        .slice.name, .slice.start, .slice.end
    )]
    IdleStateOutsideIdle {
        /// The process.
        pid: u64,
        /// The CPU.
        tid: u64,
        /// The idle-state slice.
        slice: SliceAt,
    },
    /// Task slices of a CPU track that do not add up to the window.
    #[error("pid {pid} CPU {tid}: task slices cover {tiled} ns of the {window} ns window")]
    NotTiled {
        /// The process.
        pid: u64,
        /// The CPU.
        tid: u64,
        /// What the task slices cover, ns.
        tiled: u64,
        /// The window's length, ns.
        window: u64,
    },
}

/// A slice named in a [`CheckError`]: its name and span (ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceAt {
    /// The slice's name.
    pub name: String,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
}

impl SliceAt {
    fn of(s: &Span) -> SliceAt {
        SliceAt {
            name: s.3.clone(),
            start: s.0,
            end: s.1,
        }
    }
}

fn ns_of(v: &serde_json::Value, field: &'static str) -> Result<u64, CheckError> {
    let us = v.as_f64().ok_or_else(|| CheckError::NotANumber {
        field,
        value: v.clone(),
    })?;
    if us < 0.0 {
        return Err(CheckError::Negative { field, us });
    }
    Ok((us * 1000.0).round() as u64)
}

/// Checks a trace file's invariants: every record of a run lies inside its window; on each
/// CPU track slices nest and never overlap; the outermost slices are task slices that tile
/// the window exactly (idle and running time add up to it); idle-state slices lie inside
/// an idle-task slice.
// Over 100 lines because it is one ordered pass over the events that keeps every track's open
// slices: the nesting, tiling and window invariants are checked against that shared state.
pub fn check(json: &str) -> Result<TraceCheck, CheckError> {
    let v: serde_json::Value = serde_json::from_str(json)?;
    let events = v["traceEvents"].as_array().ok_or(CheckError::NoEvents)?;
    let mut windows: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    if let Some(o) = v["otherData"].as_object() {
        for (k, val) in o {
            if let Some(pid) = k.strip_prefix("window pid ") {
                let pid: u64 = pid.parse().map_err(|_| CheckError::WindowKey(k.clone()))?;
                let bad = || CheckError::Window(val.clone());
                let (a, b) = val
                    .as_str()
                    .and_then(|s| s.split_once(".."))
                    .ok_or_else(bad)?;
                let a = a.parse().map_err(|_| bad())?;
                let b = b.parse().map_err(|_| bad())?;
                windows.insert(pid, (a, b));
            }
        }
    }
    let mut out = TraceCheck {
        processes: windows.len(),
        ..TraceCheck::default()
    };
    let mut tracks: BTreeMap<(u64, u64), Vec<Span>> = BTreeMap::new();
    for e in events {
        let ph = e["ph"]
            .as_str()
            .ok_or_else(|| CheckError::NoPhase(e.clone()))?;
        if ph == "M" {
            continue;
        }
        let pid = e["pid"]
            .as_u64()
            .ok_or_else(|| CheckError::NoPid(e.clone()))?;
        let (w0, w1) = *windows.get(&pid).ok_or(CheckError::NoWindow(pid))?;
        let ts = ns_of(&e["ts"], "ts")?;
        if ts < w0 || ts > w1 {
            return Err(CheckError::OutsideWindow {
                start: w0,
                end: w1,
                record: e.clone(),
            });
        }
        match ph {
            "X" => {
                let end = ts + ns_of(&e["dur"], "dur")?;
                if end > w1 {
                    return Err(CheckError::EndsAfterWindow {
                        start: w0,
                        end: w1,
                        record: e.clone(),
                    });
                }
                let tid = e["tid"]
                    .as_u64()
                    .ok_or_else(|| CheckError::NoTid(e.clone()))?;
                let cat = e["cat"].as_str().unwrap_or_default().to_string();
                *out.by_category.entry(cat.clone()).or_default() += 1;
                let name = e["name"].as_str().unwrap_or_default().to_string();
                tracks
                    .entry((pid, tid))
                    .or_default()
                    .push((ts, end, cat, name));
                out.slices += 1;
            }
            "i" => out.instants += 1,
            "C" => out.counters += 1,
            other => {
                return Err(CheckError::Phase {
                    phase: other.to_string(),
                    record: e.clone(),
                });
            }
        }
    }
    out.tracks = tracks.len();
    for ((pid, tid), mut slices) in tracks {
        let (w0, w1) = windows[&pid];
        // Parents first: earlier start, then longer, then the outer kind (a task before the
        // idle state or interrupt that spans all of it).
        let rank = |cat: &str| KINDS.iter().position(|k| k.category() == cat);
        slices.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(b.1.cmp(&a.1))
                .then(rank(&a.2).cmp(&rank(&b.2)))
        });
        let mut stack: Vec<&Span> = Vec::new();
        let mut tiled = 0;
        let mut last_task_end = w0;
        for s in &slices {
            while stack.last().is_some_and(|p| p.1 <= s.0) {
                stack.pop();
            }
            match stack.last() {
                Some(p) if s.1 > p.1 => {
                    return Err(CheckError::Overlap {
                        pid,
                        tid,
                        slice: SliceAt::of(s),
                        parent: SliceAt::of(p),
                    });
                }
                Some(_) => {}
                None => {
                    if s.2 != Kind::Task.category() {
                        return Err(CheckError::OutsideTask {
                            pid,
                            tid,
                            slice: SliceAt::of(s),
                        });
                    }
                    if s.0 != last_task_end {
                        return Err(CheckError::TaskGap {
                            pid,
                            tid,
                            from: last_task_end,
                            to: s.0,
                        });
                    }
                    last_task_end = s.1;
                    tiled += s.1 - s.0;
                }
            }
            if s.2 == Kind::IdleState.category()
                && !stack
                    .iter()
                    .any(|p| p.2 == Kind::Task.category() && p.3 == IDLE_TASK)
            {
                return Err(CheckError::IdleStateOutsideIdle {
                    pid,
                    tid,
                    slice: SliceAt::of(s),
                });
            }
            stack.push(s);
        }
        if tiled != w1 - w0 {
            return Err(CheckError::NotTiled {
                pid,
                tid,
                tiled,
                window: w1 - w0,
            });
        }
    }
    Ok(out)
}
