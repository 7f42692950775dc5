//! The text of a tracefs `trace` file (nop tracer with events enabled).
//!
//! A line looks like
//!
//! ```text
//!           <idle>-0       [001] d.h1.   513.805209: hrtimer_expire_entry: hrtimer=0000... function=tick_nohz_handler now=513788026384
//! ```
//!
//! i.e. `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: PAYLOAD`. The task name may itself contain
//! dashes, spaces and brackets, so the parser anchors on the `[CPU]` field that is followed by
//! a timestamp, not on the start of the line. The flags column is optional (the `irq-info`
//! trace option removes it). Comment lines (`#`) and lines that do not have this shape are
//! skipped and counted.
//!
//! Only the payloads ticklab needs are decoded into [`TraceEvent`] variants; everything else
//! is kept as [`TraceEvent::Other`].

use serde::Serialize;

/// One trace line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceLine {
    /// Task name as printed (`<idle>` for the idle task).
    pub task: String,
    /// Task PID.
    pub pid: u32,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// Trace timestamp in nanoseconds (the trace clock's units, printed as seconds); with a
    /// counter clock (`x86-tsc`, printed without a fraction), the raw count.
    pub ts_ns: u64,
    /// Decoded event.
    pub event: TraceEvent,
}

/// The events ticklab understands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceEvent {
    /// `timer:hrtimer_expire_entry`: an hrtimer callback is about to run.
    HrtimerExpireEntry {
        /// Callback symbol.
        function: String,
    },
    /// `timer:tick_stop`: the tick was stopped (`success`), or could not be because of
    /// `dependency` (`NONE`, `POSIX_TIMER`, `PERF_EVENTS`, `SCHED`, `CLOCK_UNSTABLE`, `RCU`,
    /// `RCU_EXP`).
    TickStop {
        /// Whether the tick was stopped.
        success: bool,
        /// The dependency name as printed.
        dependency: String,
    },
    /// `irq_vectors:local_timer_entry` (x86): a local timer interrupt.
    LocalTimerEntry,
    /// `power:cpu_idle`: entering idle state `state`, or leaving idle (`state` = None,
    /// printed as 4294967295).
    CpuIdle {
        /// State index entered, `None` on exit.
        state: Option<u32>,
    },
    /// `sched:sched_switch`.
    SchedSwitch {
        /// PID switched away from (0 = idle task).
        prev_pid: u32,
        /// PID switched to (0 = idle task).
        next_pid: u32,
    },
    /// Any other event, or one of the above whose payload did not decode.
    Other {
        /// Event name.
        name: String,
    },
}

/// Result of parsing a whole trace text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TraceText {
    /// Decoded lines in file order.
    pub lines: Vec<TraceLine>,
    /// Non-comment, non-empty lines that did not have the trace-line shape.
    pub skipped: usize,
    /// `entries-in-buffer/entries-written: A/B` from the header, if present: when B > A the
    /// ring buffer overwrote events.
    pub entries: Option<(u64, u64)>,
}

/// Parses `SECONDS.FRACTION` into nanoseconds (any number of fraction digits up to 9). A
/// timestamp without a fraction is a counter clock's raw count (`x86-tsc`, `counter`: the
/// kernel prints those as plain integers, every clock counting in ns as `SECONDS.MICROS`) and
/// is kept as the count.
fn parse_ts(s: &str) -> Option<u64> {
    let Some((secs, frac)) = s.split_once('.') else {
        return s.parse().ok();
    };
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// `key=value` lookup in an event payload (space-separated).
fn field<'a>(payload: &'a str, key: &str) -> Option<&'a str> {
    payload
        .split_whitespace()
        .find_map(|tok| tok.strip_prefix(key)?.strip_prefix('='))
}

fn decode(name: &str, payload: &str) -> TraceEvent {
    let decoded = match name {
        "hrtimer_expire_entry" => {
            field(payload, "function").map(|f| TraceEvent::HrtimerExpireEntry {
                function: f.to_string(),
            })
        }
        "tick_stop" => field(payload, "success")
            .zip(field(payload, "dependency"))
            .and_then(|(s, d)| {
                Some(TraceEvent::TickStop {
                    success: s.parse::<u32>().ok()? != 0,
                    dependency: d.to_string(),
                })
            }),
        "local_timer_entry" => Some(TraceEvent::LocalTimerEntry),
        "cpu_idle" => field(payload, "state")
            .and_then(|s| s.parse::<u64>().ok())
            .map(|s| TraceEvent::CpuIdle {
                state: u32::try_from(s).ok().filter(|&s| s != u32::MAX),
            }),
        "sched_switch" => {
            let pid = |k| field(payload, k)?.parse().ok();
            pid("prev_pid")
                .zip(pid("next_pid"))
                .map(|(prev_pid, next_pid)| TraceEvent::SchedSwitch { prev_pid, next_pid })
        }
        _ => None,
    };
    decoded.unwrap_or_else(|| TraceEvent::Other {
        name: name.to_string(),
    })
}

/// Parses one line; `None` if it is not a trace event line.
pub fn parse_trace_line(line: &str) -> Option<TraceLine> {
    parse_trace_line_raw(line).map(|(l, _, _)| l)
}

/// The value of `key=value` in an event payload (space-separated), for events
/// [`TraceEvent`] does not decode.
pub fn payload_field<'a>(payload: &'a str, key: &str) -> Option<&'a str> {
    field(payload, key)
}

/// [`parse_trace_line`], also returning the event's name and its undecoded payload.
pub fn parse_trace_line_raw(line: &str) -> Option<(TraceLine, &str, &str)> {
    // Try every `[digits]` candidate left to right; the first that is followed by a
    // timestamp (after an optional flags token) is the CPU field.
    let mut search = 0;
    while let Some(open) = line[search..].find('[').map(|o| o + search) {
        search = open + 1;
        let Some(close) = line[open..].find(']').map(|c| c + open) else {
            break;
        };
        let Ok(cpu) = line[open + 1..close].trim().parse::<u32>() else {
            continue;
        };
        let head = line[..open].trim_end();
        let Some((task, pid)) = head.rsplit_once('-') else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let rest = &line[close + 1..];
        let mut toks = rest.split_whitespace();
        let (mut ts_tok, after) = match toks.next() {
            Some(t) => (t, toks.next()),
            None => continue,
        };
        if !ts_tok.ends_with(':') {
            // That was the flags column; the timestamp follows.
            match after {
                Some(t) => ts_tok = t,
                None => continue,
            }
        }
        let Some(ts_ns) = ts_tok.strip_suffix(':').and_then(parse_ts) else {
            continue;
        };
        // Event name and payload follow the timestamp.
        let ts_end = rest.find(ts_tok).map(|p| p + ts_tok.len())?;
        let tail = rest[ts_end..].trim_start();
        let (name, payload) = tail.split_once(':').unwrap_or((tail, ""));
        let (name, payload) = (name.trim(), payload.trim());
        let l = TraceLine {
            task: task.trim().to_string(),
            pid,
            cpu,
            ts_ns,
            event: decode(name, payload),
        };
        return Some((l, name, payload));
    }
    None
}

/// Parses a whole `trace` file.
pub fn parse_trace(text: &str) -> TraceText {
    let mut out = TraceText::default();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(c) = trimmed.strip_prefix('#') {
            if let Some(v) = c.trim().strip_prefix("entries-in-buffer/entries-written:") {
                let nums = v
                    .split_whitespace()
                    .next()
                    .and_then(|ab| ab.split_once('/'));
                out.entries = nums.and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
            }
            continue;
        }
        match parse_trace_line(line) {
            Some(l) => out.lines.push(l),
            None => out.skipped += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        let cases: &[(&str, Option<u64>)] = &[
            ("513.805209", Some(513_805_209_000)),
            ("0.000000001", Some(1)),
            // A counter clock (x86-tsc) prints its raw count.
            ("51712499665103", Some(51_712_499_665_103)),
            ("1.2", Some(1_200_000_000)),
            ("1.0000000001", None),
            ("x.1", None),
            ("1.-1", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_ts(s), *want, "{s}");
        }
    }

    #[test]
    fn tricky_lines() {
        // Task name with a dash and digits: the PID is after the last dash.
        let l = parse_trace_line(
            " memfd:sealed-91-3148    [000] d..2.   545.735931: sched_switch: prev_comm=memfd:sealed-91 prev_pid=3148 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
        )
        .unwrap();
        assert_eq!(
            (l.task.as_str(), l.pid, l.cpu),
            ("memfd:sealed-91", 3148, 0)
        );
        assert_eq!(
            l.event,
            TraceEvent::SchedSwitch {
                prev_pid: 3148,
                next_pid: 0
            }
        );

        // Task name with a space and a bracketed number; no flags column.
        let l = parse_trace_line(
            "  kworker [7]-42  [003]  12.000001: tick_stop: success=0 dependency=SCHED",
        )
        .unwrap();
        assert_eq!((l.task.as_str(), l.pid, l.cpu), ("kworker [7]", 42, 3));
        assert_eq!(l.ts_ns, 12_000_001_000);
        assert_eq!(
            l.event,
            TraceEvent::TickStop {
                success: false,
                dependency: "SCHED".into()
            }
        );

        let l = parse_trace_line(
            "          <idle>-0       [000] dN.1.   513.802539: cpu_idle: state=4294967295 cpu_id=0",
        )
        .unwrap();
        assert_eq!(l.event, TraceEvent::CpuIdle { state: None });

        let l = parse_trace_line(
            "          <idle>-0       [001] d.h1.   513.805206: local_timer_entry: vector=236",
        )
        .unwrap();
        assert_eq!(l.event, TraceEvent::LocalTimerEntry);

        // A known event whose payload is missing a field is kept as Other.
        let l =
            parse_trace_line("  a-1 [000] ....  1.5: hrtimer_expire_entry: hrtimer=00").unwrap();
        assert_eq!(
            l.event,
            TraceEvent::Other {
                name: "hrtimer_expire_entry".into()
            }
        );

        assert!(parse_trace_line("CPU:1 [LOST 12 EVENTS]").is_none());
        assert!(parse_trace_line("no brackets at all").is_none());
    }

    #[test]
    fn header_entries() {
        let t = parse_trace(
            "# entries-in-buffer/entries-written: 182/190   #P:2\n#\n  a-1 [000] .... 1.0: x: y\njunk\n",
        );
        assert_eq!(t.entries, Some((182, 190)));
        assert_eq!((t.lines.len(), t.skipped), (1, 1));
    }
}
