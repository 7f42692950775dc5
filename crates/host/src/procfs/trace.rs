//! The text of a tracefs `trace` file (nop tracer with events enabled).
//!
//! A line looks like
//!
//! ```text
//!           <idle>-0       [001] d.h1.   513.805209: hrtimer_expire_entry: hrtimer=0000... function=tick_nohz_handler now=513788026384
//! ```
//!
//! i.e. `TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: PAYLOAD`. The task name (the kernel's `comm`)
//! may itself contain dashes, spaces and brackets (`lto cgu.14`, `Web Content`), so the parser
//! never splits the header on whitespace: it anchors on the `[CPU]` field that is followed by a
//! timestamp, and takes the PID from the right of the text before it (after the last dash, past
//! the `(TGID)` column the `record-tgid` option adds). Candidates are tried left to right, so
//! an event payload that happens to contain a header-like `x-1 [000] 1.0:` cannot be mistaken
//! for the header. The flags column is optional (the `irq-info` trace option removes it).
//! Comment lines (`#`) and lines that do not have this shape are skipped and counted.
//!
//! Payload fields are `key=value` pairs separated by spaces, but a task name inside a payload
//! (`sched_switch`'s `prev_comm` / `next_comm`) may contain spaces too: [`SchedSwitch`] parses
//! that payload by its fixed keys instead of by whitespace.
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
    /// The flags column (`dN.1.`, after the CPU field) shows a pending reschedule: its second
    /// character is `N` or one of the partial / lazy letters, where `.` means none. `false`
    /// when the line has no flags column (the `nop` tracer without irq-info). Not serialised:
    /// a reading of the line, not part of the decoded event.
    #[serde(skip)]
    pub need_resched: bool,
}

/// The events ticklab understands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceEvent {
    /// `timer:hrtimer_expire_entry`: an hrtimer callback is about to run.
    HrtimerExpireEntry {
        /// Callback symbol.
        function: String,
        /// The timer's address as printed (hashed by the kernel, stable within a boot): the
        /// key that ties an expiry to the [`TraceEvent::HrtimerStart`] that armed it. Empty
        /// when the payload has no `hrtimer=` field.
        hrtimer: String,
    },
    /// `timer:hrtimer_start`: an hrtimer is armed, by the task the line's header names (the
    /// task current on that CPU when it was armed; from an interrupt, the interrupted task).
    HrtimerStart {
        /// Callback symbol.
        function: String,
        /// The timer's address as printed (see [`TraceEvent::HrtimerExpireEntry`]).
        hrtimer: String,
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
        /// Name of the task switched away from (the kernel's `comm`, may hold spaces).
        prev_comm: String,
        /// Name of the task switched to.
        next_comm: String,
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

/// The value of `key=value` that runs to the end of the payload (the last field of an event
/// whose value may contain spaces, e.g. `irq_handler_entry`'s `name`).
pub fn payload_last_field<'a>(payload: &'a str, key: &str) -> Option<&'a str> {
    if let Some(v) = payload.strip_prefix(key).and_then(|r| r.strip_prefix('=')) {
        return Some(v);
    }
    let (_, v) = payload.split_once(&format!(" {key}="))?;
    Some(v)
}

/// The payload of `sched:sched_switch`, parsed by its fixed keys:
/// `prev_comm=C prev_pid=N prev_prio=N prev_state=S ==> next_comm=C next_pid=N next_prio=N`.
///
/// Both task names may contain spaces (and in principle any text), so they are not split on
/// whitespace: the trailing `next_pid` / `next_prio` are taken from the right, and `prev_comm`
/// ends at the first ` prev_pid=` that is followed by the complete middle part
/// (`N prev_prio=N prev_state=S ==> next_comm=`); the rest is `next_comm`. A task name is at
/// most 15 bytes (TASK_COMM_LEN less the NUL), too short to hold a complete middle part, so
/// the split is unique for any name the kernel can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedSwitch<'a> {
    /// Task switched away from.
    pub prev_comm: &'a str,
    /// Its PID (0 = idle task).
    pub prev_pid: u32,
    /// Its priority as printed (kernel `prio`, 0..=139, -1 for deadline tasks).
    pub prev_prio: i32,
    /// Its state letters as printed (`S`, `R+`, `D|K`, …).
    pub prev_state: &'a str,
    /// Task switched to.
    pub next_comm: &'a str,
    /// Its PID (0 = idle task).
    pub next_pid: u32,
    /// Its priority as printed.
    pub next_prio: i32,
}

impl<'a> SchedSwitch<'a> {
    /// Parses a `sched_switch` payload; `None` if it does not have the shape above.
    pub fn parse(payload: &'a str) -> Option<Self> {
        let (rest, next_prio) = payload.trim_end().rsplit_once(" next_prio=")?;
        let (rest, next_pid) = rest.rsplit_once(" next_pid=")?;
        let (next_pid, next_prio) = (next_pid.parse().ok()?, next_prio.parse().ok()?);
        let body = rest.trim_start().strip_prefix("prev_comm=")?;
        // `body` is `PREV_COMM prev_pid=… ==> next_comm=NEXT_COMM`; try each ` prev_pid=`.
        let mut from = 0;
        while let Some(at) = body[from..].find(" prev_pid=").map(|i| i + from) {
            from = at + 1;
            if let Some((prev_pid, prev_prio, prev_state, next_comm)) =
                Self::middle(&body[at + " prev_pid=".len()..])
            {
                return Some(SchedSwitch {
                    prev_comm: &body[..at],
                    prev_pid,
                    prev_prio,
                    prev_state,
                    next_comm,
                    next_pid,
                    next_prio,
                });
            }
        }
        None
    }

    /// `N prev_prio=N prev_state=S ==> next_comm=REST` → (pid, prio, state, REST).
    fn middle(s: &'a str) -> Option<(u32, i32, &'a str, &'a str)> {
        let (pid, s) = s.split_once(' ')?;
        let (prio, s) = s.strip_prefix("prev_prio=")?.split_once(' ')?;
        let (state, s) = s.strip_prefix("prev_state=")?.split_once(' ')?;
        let next_comm = s.strip_prefix("==> next_comm=")?;
        Some((pid.parse().ok()?, prio.parse().ok()?, state, next_comm))
    }
}

fn decode(name: &str, payload: &str) -> TraceEvent {
    let decoded = match name {
        "hrtimer_expire_entry" => {
            field(payload, "function").map(|f| TraceEvent::HrtimerExpireEntry {
                function: f.to_string(),
                hrtimer: field(payload, "hrtimer").unwrap_or_default().to_string(),
            })
        }
        "hrtimer_start" => field(payload, "function")
            .zip(field(payload, "hrtimer"))
            .map(|(f, h)| TraceEvent::HrtimerStart {
                function: f.to_string(),
                hrtimer: h.to_string(),
            }),
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
        "sched_switch" => SchedSwitch::parse(payload).map(|s| TraceEvent::SchedSwitch {
            prev_pid: s.prev_pid,
            next_pid: s.next_pid,
            prev_comm: s.prev_comm.to_string(),
            next_comm: s.next_comm.to_string(),
        }),
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
        let mut head = line[..open].trim_end();
        // The `record-tgid` option adds `(TGID)` (or `(-----)`) between the PID and the CPU.
        if let Some(h) = head.strip_suffix(')')
            && let Some((h, tgid)) = h.rsplit_once('(')
            && tgid.trim().bytes().all(|b| b.is_ascii_digit() || b == b'-')
        {
            head = h.trim_end();
        }
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
        let mut need_resched = false;
        if !ts_tok.ends_with(':') {
            // That was the flags column; the timestamp follows.
            need_resched = ts_tok.chars().nth(1).is_some_and(|c| c != '.');
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
            need_resched,
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
    fn need_resched_is_the_second_flag() {
        // (line, pending reschedule)
        let table = [
            (
                "  <idle>-0  [000] dN.1. 5: cpu_idle: state=4294967295 cpu_id=0",
                true,
            ),
            (
                "  <idle>-0  [000] d..1. 5: cpu_idle: state=4294967295 cpu_id=0",
                false,
            ),
            (
                "  <idle>-0  [000] dn.1. 5: cpu_idle: state=4294967295 cpu_id=0",
                true,
            ),
            // No flags column (irq-info off): the timestamp follows the CPU.
            (
                "  <idle>-0  [000] 5: cpu_idle: state=4294967295 cpu_id=0",
                false,
            ),
            // A task name with brackets does not pass for the CPU field.
            (
                "  a[1]-3  [001] .N... 5: cpu_idle: state=4294967295 cpu_id=1",
                true,
            ),
        ];
        for (line, want) in table {
            assert_eq!(
                parse_trace_line(line).map(|l| l.need_resched),
                Some(want),
                "{line}"
            );
        }
    }

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
                next_pid: 0,
                prev_comm: "memfd:sealed-91".into(),
                next_comm: "swapper/0".into(),
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
    fn task_names_with_spaces_in_the_header() {
        // (line, task, pid, cpu, ts_ns, event name)
        let cases: &[(&str, &str, u32, u32, u64, &str)] = &[
            (
                "      lto cgu.14-48213   [001] d..2.  7301.112233: sched_waking: comm=x pid=1",
                "lto cgu.14",
                48213,
                1,
                7_301_112_233_000,
                "sched_waking",
            ),
            (
                "     Web Content-3321    [000] .....   12.5: tick_stop: success=1 dependency=NONE",
                "Web Content",
                3321,
                0,
                12_500_000_000,
                "tick_stop",
            ),
            // A name that itself looks like `NAME-PID [CPU]`: the PID is after the last dash
            // before the real CPU field, which is the one followed by a timestamp.
            (
                " kworker/u4:1 x-7 [9]-77 [001] d.h1. 1.000001: local_timer_entry: vector=236",
                "kworker/u4:1 x-7 [9]",
                77,
                1,
                1_000_001_000,
                "local_timer_entry",
            ),
            // The `record-tgid` column, known and unknown.
            (
                "   Web Content-3321    ( 3300) [000] d..1.   2.000000: cpu_idle: state=1 cpu_id=0",
                "Web Content",
                3321,
                0,
                2_000_000_000,
                "cpu_idle",
            ),
            (
                "          <idle>-0       (-------) [001] d..1.   3.0: cpu_idle: state=1 cpu_id=1",
                "<idle>",
                0,
                1,
                3_000_000_000,
                "cpu_idle",
            ),
            // A payload with a header-like text does not move the anchor.
            (
                "  echo-5  [000] .....  4.0: tracing_mark_write: fake-9 [003] ..... 9.0: x: y",
                "echo",
                5,
                0,
                4_000_000_000,
                "tracing_mark_write",
            ),
        ];
        for &(line, task, pid, cpu, ts_ns, name) in cases {
            let (l, n, _) = parse_trace_line_raw(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(
                (l.task.as_str(), l.pid, l.cpu, l.ts_ns, n),
                (task, pid, cpu, ts_ns, name),
                "{line}"
            );
        }
    }

    #[test]
    fn sched_switch_payloads_by_key() {
        // (payload, Some((prev_comm, prev_pid, prev_state, next_comm, next_pid)))
        type Want = Option<(&'static str, u32, &'static str, &'static str, u32)>;
        let cases: &[(&str, Want)] = &[
            (
                "prev_comm=hog prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
                Some(("hog", 7, "S", "swapper/1", 0)),
            ),
            (
                "prev_comm=lto cgu.14 prev_pid=48213 prev_prio=120 prev_state=R+ ==> next_comm=Web Content next_pid=3321 next_prio=120",
                Some(("lto cgu.14", 48213, "R+", "Web Content", 3321)),
            ),
            // Names holding the keys themselves.
            (
                "prev_comm=a prev_pid=1 prev_pid=42 prev_prio=-1 prev_state=D|K ==> next_comm=b next_pid=9 next_pid=43 next_prio=98",
                Some(("a prev_pid=1", 42, "D|K", "b next_pid=9", 43)),
            ),
            // Empty names.
            (
                "prev_comm= prev_pid=5 prev_prio=120 prev_state=I ==> next_comm= next_pid=0 next_prio=120",
                Some(("", 5, "I", "", 0)),
            ),
            (
                "prev_comm=a prev_pid=x prev_prio=1 prev_state=S ==> next_comm=b next_pid=2 next_prio=1",
                None,
            ),
            (
                "prev_comm=a prev_pid=1 prev_prio=1 prev_state=S next_comm=b next_pid=2 next_prio=1",
                None,
            ),
            (
                "prev_comm=a prev_pid=1 prev_prio=1 prev_state=S ==> next_comm=b next_pid=2",
                None,
            ),
            ("", None),
        ];
        for &(payload, want) in cases {
            let got = SchedSwitch::parse(payload).map(|s| {
                (
                    s.prev_comm,
                    s.prev_pid,
                    s.prev_state,
                    s.next_comm,
                    s.next_pid,
                )
            });
            assert_eq!(got, want, "{payload}");
        }
        let l = parse_trace_line(
            "      lto cgu.14-48213   [001] d..2.  7.0: sched_switch: prev_comm=lto cgu.14 prev_pid=48213 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
        )
        .unwrap();
        assert_eq!(
            l.event,
            TraceEvent::SchedSwitch {
                prev_pid: 48213,
                next_pid: 0,
                prev_comm: "lto cgu.14".into(),
                next_comm: "swapper/1".into(),
            }
        );
    }

    #[test]
    fn last_fields_keep_their_spaces() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("irq=11 name=virtio0", "name", Some("virtio0")),
            (
                "irq=16 name=Intel PCH thermal",
                "name",
                Some("Intel PCH thermal"),
            ),
            ("name=a b", "name", Some("a b")),
            ("irq=11 rename=x", "name", None),
            ("irq=11", "name", None),
        ];
        for &(payload, key, want) in cases {
            assert_eq!(payload_last_field(payload, key), want, "{payload}");
        }
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
