//! `/proc/timer_list`: per-CPU hrtimer bases, tick-sched state and tick devices.
//!
//! The file comes in several versions (v0.8, v0.9, v0.10 are handled; see
//! `docs/kernel-behaviour.md` §10.1). The parser is keyed on field *names*, never on line
//! positions: every `.name: value` line of a CPU section is stored in [`CpuTimers::fields`] and
//! the well-known ones are also lifted into typed fields. Unknown lines are kept in
//! [`TimerList::unparsed`] instead of failing, so a future version degrades gracefully.
//!
//! Two facts change across versions and are handled here rather than by callers:
//!
//! * the tick's hrtimer callback is `tick_sched_timer` up to 6.8 and `tick_nohz_handler` from
//!   6.9 on — use [`is_tick_timer_callback`] or [`CpuTimers::tick_timer`];
//! * v0.9 and older print `.nohz_mode` (0 inactive, 1 lowres, 2 highres) where v0.10 prints the
//!   two flags `.nohz` and `.highres` — both end up in [`CpuTimers::nohz`] and
//!   [`CpuTimers::highres`].

use serde::Serialize;
use std::collections::BTreeMap;

/// `KTIME_MAX`: the kernel prints it for "no event".
pub const KTIME_MAX: i64 = i64::MAX;

/// hrtimer callback names that are the tick, across kernel versions.
///
/// `tick_sched_timer` (high-res tick up to 6.8) and `tick_nohz_handler` (6.9 and later, where
/// the tick hrtimer callback was renamed). In a *lowres* kernel up to 6.8 `tick_nohz_handler` is
/// an event handler, not an hrtimer callback, so it never appears in a timer list there.
pub const TICK_TIMER_CALLBACKS: [&str; 2] = ["tick_sched_timer", "tick_nohz_handler"];

/// Whether an hrtimer callback name (from `/proc/timer_list` or the
/// `timer:hrtimer_expire_entry` trace event) is the tick, in any supported kernel version.
pub fn is_tick_timer_callback(name: &str) -> bool {
    TICK_TIMER_CALLBACKS.contains(&name.trim())
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TimerList {
    /// `Timer List Version:` value, e.g. `v0.10`.
    pub version: Option<String>,
    /// `HRTIMER_MAX_CLOCK_BASES:`.
    pub max_clock_bases: Option<u32>,
    /// `now at <ns> nsecs` (CLOCK_MONOTONIC).
    pub now_ns: Option<i64>,
    /// One entry per online CPU, in file order.
    pub cpus: Vec<CpuTimers>,
    /// The broadcast tick device, if the kernel prints one.
    pub broadcast: Option<TickDevice>,
    /// `tick_broadcast_mask:` (hex bitmap as printed).
    pub tick_broadcast_mask: Option<String>,
    /// `tick_broadcast_oneshot_mask:` (hex bitmap as printed).
    pub tick_broadcast_oneshot_mask: Option<String>,
    /// Per-CPU tick devices, in file order.
    pub tick_devices: Vec<TickDevice>,
    /// Non-empty lines the parser did not recognise (with their 1-based line numbers).
    pub unparsed: Vec<(usize, String)>,
}

impl TimerList {
    /// The section of CPU `cpu`, if present.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuTimers> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }

    /// The per-CPU tick device of CPU `cpu`, if present.
    pub fn tick_device(&self, cpu: u32) -> Option<&TickDevice> {
        self.tick_devices.iter().find(|d| d.cpu == Some(cpu))
    }
}

/// One CPU's hrtimer and tick-sched state.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CpuTimers {
    /// CPU number from `cpu: <n>`.
    pub cpu: u32,
    /// The clock bases (`clock 0:` ... `clock 7:`), in file order.
    pub clock_bases: Vec<ClockBase>,
    /// `.expires_next` (ns): next programmed clock-event expiry.
    pub expires_next_ns: Option<i64>,
    /// `.hres_active`.
    pub hres_active: Option<bool>,
    /// `.nr_events`: hrtimer interrupts handled.
    pub nr_events: Option<u64>,
    /// `.nr_retries`.
    pub nr_retries: Option<u64>,
    /// `.nr_hangs`.
    pub nr_hangs: Option<u64>,
    /// `.max_hang_time` (ns).
    pub max_hang_time_ns: Option<u64>,
    /// `.nohz_mode` as printed by v0.9 and older (0 inactive, 1 lowres, 2 highres).
    pub nohz_mode: Option<u8>,
    /// NO_HZ active on this CPU: `.nohz` (v0.10) or `.nohz_mode != 0` (older).
    pub nohz: Option<bool>,
    /// High-resolution tick: `.highres` (v0.10) or `.nohz_mode == 2` (older; unknown when
    /// `.nohz_mode` is 0, because a high-res kernel with nohz off also prints 0).
    pub highres: Option<bool>,
    /// `.tick_stopped`.
    pub tick_stopped: Option<bool>,
    /// `.idle_calls`.
    pub idle_calls: Option<u64>,
    /// `.idle_sleeps`.
    pub idle_sleeps: Option<u64>,
    /// `.last_tick` (ns).
    pub last_tick_ns: Option<i64>,
    /// `.next_timer` (ns; [`KTIME_MAX`] when none).
    pub next_timer_ns: Option<i64>,
    /// `.idle_expires` (ns; [`KTIME_MAX`] when none).
    pub idle_expires_ns: Option<i64>,
    /// `jiffies:` printed after the CPU section.
    pub jiffies: Option<u64>,
    /// Every `.name: value` field of the CPU section (outside the clock bases), raw, unit
    /// suffix removed — including the ones lifted above and ones this parser has no field for.
    pub fields: BTreeMap<String, String>,
}

impl CpuTimers {
    /// The tick's hrtimer if it is queued (found by callback name, on any base).
    pub fn tick_timer(&self) -> Option<&ActiveTimer> {
        self.timers().find(|t| is_tick_timer_callback(&t.callback))
    }

    /// All active timers of all bases, in file order.
    pub fn timers(&self) -> impl Iterator<Item = &ActiveTimer> {
        self.clock_bases.iter().flat_map(|b| b.timers.iter())
    }
}

/// One hrtimer clock base of one CPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClockBase {
    /// `clock <i>:` number.
    pub index: u32,
    /// `.resolution` (ns).
    pub resolution_ns: Option<u64>,
    /// `.get_time` (absent in recent kernels).
    pub get_time: Option<String>,
    /// `.offset` (ns).
    pub offset_ns: Option<i64>,
    /// Active timers in expiry order.
    pub timers: Vec<ActiveTimer>,
}

/// One queued hrtimer.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ActiveTimer {
    /// `#<k>` position in the queue.
    pub slot: u32,
    /// Callback symbol, e.g. `hrtimer_wakeup`.
    pub callback: String,
    /// `S:xx` state as printed (hex).
    pub state: Option<String>,
    /// Soft expiry (ns, base time).
    pub soft_expires_ns: Option<i64>,
    /// Hard expiry (ns, base time).
    pub hard_expires_ns: Option<i64>,
    /// Extra comma-separated items after the state (v0.8 with timer stats: start site, comm/pid).
    pub extra: Vec<String>,
}

/// A tick device block of the second pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TickDevice {
    /// `Per CPU device: <n>`; `None` for the broadcast device.
    pub cpu: Option<u32>,
    /// `Tick Device: mode:` (0 periodic, 1 oneshot).
    pub tick_mode: Option<u8>,
    /// `Clock Event Device:` name; `None` when printed as `<NULL>`.
    pub device: Option<String>,
    /// `max_delta_ns`.
    pub max_delta_ns: Option<u64>,
    /// `min_delta_ns`.
    pub min_delta_ns: Option<u64>,
    /// Clock event device `mode:` (see [`clockevent_state_name`]).
    pub mode: Option<u8>,
    /// `next_event` (ns; [`KTIME_MAX`] when none).
    pub next_event_ns: Option<i64>,
    /// `event_handler` symbol.
    pub event_handler: Option<String>,
    /// `retries`.
    pub retries: Option<u64>,
    /// `Wakeup Device:` name (`None` if absent or `<NULL>`).
    pub wakeup_device: Option<String>,
    /// Every `name: value` line of the block, raw, unit suffix removed.
    pub fields: BTreeMap<String, String>,
}

/// Name of a `Tick Device: mode:` value.
pub fn tick_device_mode_name(mode: u8) -> &'static str {
    match mode {
        0 => "periodic",
        1 => "oneshot",
        _ => "unknown",
    }
}

/// Name of a clock event device `mode:` value (clock_event_state numbering, kernels ≥ 4.3;
/// older kernels printed a different enum where 4 meant "resume").
pub fn clockevent_state_name(mode: u8) -> &'static str {
    match mode {
        0 => "detached",
        1 => "shutdown",
        2 => "periodic",
        3 => "oneshot",
        4 => "oneshot-stopped",
        _ => "unknown",
    }
}

/// What a clock event device's `event_handler` says about the tick mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerMode {
    /// `hrtimer_interrupt`: high-resolution mode, the tick is an hrtimer.
    HighRes,
    /// `tick_handle_periodic`: periodic tick.
    Periodic,
    /// `tick_nohz_lowres_handler` (≥ 6.9) or `tick_nohz_handler` (≤ 6.8): low-res NO_HZ.
    LowResNohz,
    /// `tick_handle_oneshot_broadcast` / `tick_handle_periodic_broadcast`.
    Broadcast,
    /// `clockevents_handle_noop` or anything else.
    Other,
}

/// Classifies an `event_handler` symbol. Note the ≤ 6.8 lowres handler shares its name with
/// the ≥ 6.9 tick hrtimer callback; as an *event handler* it always means lowres NO_HZ.
pub fn handler_mode(event_handler: &str) -> HandlerMode {
    match event_handler.trim() {
        "hrtimer_interrupt" => HandlerMode::HighRes,
        "tick_handle_periodic" => HandlerMode::Periodic,
        "tick_nohz_lowres_handler" | "tick_nohz_handler" => HandlerMode::LowResNohz,
        "tick_handle_oneshot_broadcast" | "tick_handle_periodic_broadcast" => {
            HandlerMode::Broadcast
        }
        _ => HandlerMode::Other,
    }
}

/// Why a text is not a timer list at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a /proc/timer_list: {0}")]
pub struct TimerListError(pub String);

/// Strips a trailing `nsecs` unit.
fn strip_unit(v: &str) -> &str {
    let v = v.trim();
    v.strip_suffix("nsecs").map(str::trim_end).unwrap_or(v)
}

fn int<T: std::str::FromStr>(v: &str) -> Option<T> {
    strip_unit(v).parse().ok()
}

fn flag(v: &str) -> Option<bool> {
    match strip_unit(v) {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Splits `name: value` at the first colon; `None` without a colon.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    Some((k.trim(), v.trim()))
}

/// Parses ` # expires at <soft>-<hard> nsecs [in ...]`. Values may be negative, so the
/// separator is the first `-` after the first character of the soft value.
fn parse_expiry(rest: &str) -> Option<(i64, i64)> {
    let rest = rest.trim().strip_prefix("expires at")?.trim();
    let range = rest.split_whitespace().next()?;
    let cut = range[1..].find('-')? + 1;
    Some((range[..cut].parse().ok()?, range[cut + 1..].parse().ok()?))
}

/// Parses ` #<k>: <ptr>, callback, S:xx[, extra...]`.
fn parse_timer_head(line: &str) -> Option<ActiveTimer> {
    let rest = line.trim().strip_prefix('#')?;
    let (slot, rest) = rest.split_once(':')?;
    let slot = slot.trim().parse().ok()?;
    let mut items = rest.split(',').map(str::trim);
    let _pointer = items.next()?;
    let callback = items.next()?.to_string();
    let mut timer = ActiveTimer {
        slot,
        callback,
        ..ActiveTimer::default()
    };
    for item in items {
        match item.strip_prefix("S:") {
            Some(s) if timer.state.is_none() => timer.state = Some(s.trim().to_string()),
            _ => timer.extra.push(item.to_string()),
        }
    }
    Some(timer)
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Header,
    /// Inside a CPU; `in_base` is true until a CPU-level field ends the last base.
    Cpu {
        in_base: bool,
    },
    Device,
}

const BASE_FIELDS: [&str; 5] = ["base", "index", "resolution", "get_time", "offset"];

/// Parses the text of `/proc/timer_list` (any of v0.8, v0.9, v0.10).
///
/// Fails only when the text has neither a version header nor a CPU section.
///
/// Long (about 160 lines) on purpose: one pass of a line-oriented state machine (the current
/// section, the device block being filled) in which each line's meaning depends on the lines
/// before it; the field parsers it calls are already their own functions.
pub fn parse_timer_list(text: &str) -> Result<TimerList, TimerListError> {
    let mut tl = TimerList::default();
    let mut section = Section::Header;
    // The device block being filled, and whether it is the broadcast one.
    let mut device: Option<(TickDevice, bool)> = None;

    let flush_device = |tl: &mut TimerList, device: &mut Option<(TickDevice, bool)>| {
        if let Some((d, broadcast)) = device.take() {
            if broadcast {
                tl.broadcast = Some(d);
            } else {
                tl.tick_devices.push(d);
            }
        }
    };

    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let lineno = i + 1;
        let unparsed = || tl_unparsed(lineno, raw);

        // Lines that mean the same thing wherever they appear.
        if let Some(v) = line.strip_prefix("Timer List Version:") {
            tl.version = Some(v.trim().to_string());
            continue;
        }
        if let Some(v) = line.strip_prefix("HRTIMER_MAX_CLOCK_BASES:") {
            tl.max_clock_bases = v.trim().parse().ok();
            continue;
        }
        if let Some(v) = line.strip_prefix("now at ") {
            tl.now_ns = int(v);
            continue;
        }
        if let Some(Ok(cpu)) = line.strip_prefix("cpu:").map(|v| v.trim().parse()) {
            tl.cpus.push(CpuTimers {
                cpu,
                ..CpuTimers::default()
            });
            section = Section::Cpu { in_base: false };
            continue;
        }
        if let Some(v) = line.strip_prefix("Tick Device:") {
            flush_device(&mut tl, &mut device);
            let mode = v
                .trim()
                .strip_prefix("mode:")
                .and_then(|m| m.trim().parse().ok());
            device = Some((
                TickDevice {
                    tick_mode: mode,
                    ..TickDevice::default()
                },
                false,
            ));
            section = Section::Device;
            continue;
        }
        if let Some(v) = line.strip_prefix("tick_broadcast_mask:") {
            flush_device(&mut tl, &mut device);
            tl.tick_broadcast_mask = Some(v.trim().to_string());
            continue;
        }
        if let Some(v) = line.strip_prefix("tick_broadcast_oneshot_mask:") {
            flush_device(&mut tl, &mut device);
            tl.tick_broadcast_oneshot_mask = Some(v.trim().to_string());
            continue;
        }

        match section {
            Section::Header => tl.unparsed.push(unparsed()),
            Section::Cpu { in_base } => {
                let Some(cpu) = tl.cpus.last_mut() else {
                    tl.unparsed.push(unparsed());
                    continue;
                };
                if let Some(v) = line.strip_prefix("clock ") {
                    match v.trim_end_matches(':').trim().parse() {
                        Ok(index) => {
                            cpu.clock_bases.push(ClockBase {
                                index,
                                ..ClockBase::default()
                            });
                            section = Section::Cpu { in_base: true };
                        }
                        Err(_) => tl.unparsed.push(unparsed()),
                    }
                } else if line == "active timers:" {
                    // The timers that follow belong to the last base.
                } else if let Some(rest) = line.strip_prefix("# ") {
                    // `# expires at ...` belongs to the last timer head.
                    let timer = cpu.clock_bases.last_mut().and_then(|b| b.timers.last_mut());
                    match (timer, parse_expiry(rest)) {
                        (Some(t), Some((soft, hard))) => {
                            t.soft_expires_ns = Some(soft);
                            t.hard_expires_ns = Some(hard);
                        }
                        _ => tl.unparsed.push(unparsed()),
                    }
                } else if line.starts_with('#') {
                    match (parse_timer_head(line), cpu.clock_bases.last_mut()) {
                        (Some(t), Some(base)) => base.timers.push(t),
                        _ => tl.unparsed.push(unparsed()),
                    }
                } else if let Some(v) = line.strip_prefix("jiffies:") {
                    cpu.jiffies = v.trim().parse().ok();
                } else if let Some(field) = line.strip_prefix('.') {
                    let Some((name, value)) = key_value(field) else {
                        tl.unparsed.push(unparsed());
                        continue;
                    };
                    let base = cpu.clock_bases.last_mut();
                    match base {
                        Some(base) if in_base && BASE_FIELDS.contains(&name) => {
                            set_base_field(base, name, value)
                        }
                        _ => {
                            section = Section::Cpu { in_base: false };
                            set_cpu_field(cpu, name, value);
                        }
                    }
                } else {
                    tl.unparsed.push(unparsed());
                }
            }
            Section::Device => {
                let Some((dev, broadcast)) = device.as_mut() else {
                    tl.unparsed.push(unparsed());
                    continue;
                };
                if line == "Broadcast device" {
                    *broadcast = true;
                } else if let Some(v) = line.strip_prefix("Per CPU device:") {
                    dev.cpu = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("Clock Event Device:") {
                    dev.device = name_or_null(v);
                } else if let Some(v) = line.strip_prefix("Wakeup Device:") {
                    dev.wakeup_device = name_or_null(v);
                } else if let Some((name, value)) = key_value(line) {
                    set_device_field(dev, name, value);
                } else {
                    tl.unparsed.push(unparsed());
                }
            }
        }
    }
    flush_device(&mut tl, &mut device);

    if tl.version.is_none() && tl.cpus.is_empty() {
        return Err(TimerListError(
            "no `Timer List Version:` header and no `cpu:` section".into(),
        ));
    }
    Ok(tl)
}

fn tl_unparsed(lineno: usize, raw: &str) -> (usize, String) {
    (lineno, raw.to_string())
}

fn name_or_null(v: &str) -> Option<String> {
    let v = v.trim();
    (v != "<NULL>" && !v.is_empty()).then(|| v.to_string())
}

fn set_base_field(base: &mut ClockBase, name: &str, value: &str) {
    match name {
        "resolution" => base.resolution_ns = int(value),
        "get_time" => base.get_time = Some(value.to_string()),
        "offset" => base.offset_ns = int(value),
        // `.base` is a hashed pointer, `.index` repeats the clock number.
        _ => {}
    }
}

fn set_cpu_field(cpu: &mut CpuTimers, name: &str, value: &str) {
    match name {
        "expires_next" => cpu.expires_next_ns = int(value),
        "hres_active" => cpu.hres_active = flag(value),
        "nr_events" => cpu.nr_events = int(value),
        "nr_retries" => cpu.nr_retries = int(value),
        "nr_hangs" => cpu.nr_hangs = int(value),
        "max_hang_time" => cpu.max_hang_time_ns = int(value),
        "nohz_mode" => {
            let mode: Option<u8> = int(value);
            cpu.nohz_mode = mode;
            cpu.nohz = mode.map(|m| m != 0);
            cpu.highres = match mode {
                Some(2) => Some(true),
                Some(1) => Some(false),
                _ => None,
            };
        }
        "nohz" => cpu.nohz = flag(value),
        "highres" => cpu.highres = flag(value),
        "tick_stopped" => cpu.tick_stopped = flag(value),
        "idle_calls" => cpu.idle_calls = int(value),
        "idle_sleeps" => cpu.idle_sleeps = int(value),
        "last_tick" => cpu.last_tick_ns = int(value),
        "next_timer" => cpu.next_timer_ns = int(value),
        "idle_expires" => cpu.idle_expires_ns = int(value),
        _ => {}
    }
    cpu.fields
        .insert(name.to_string(), strip_unit(value).to_string());
}

fn set_device_field(dev: &mut TickDevice, name: &str, value: &str) {
    match name {
        "max_delta_ns" => dev.max_delta_ns = int(value),
        "min_delta_ns" => dev.min_delta_ns = int(value),
        "mode" => dev.mode = int(value),
        "next_event" => dev.next_event_ns = int(value),
        "event_handler" => dev.event_handler = Some(value.to_string()),
        "retries" => dev.retries = int(value),
        _ => {}
    }
    dev.fields
        .insert(name.to_string(), strip_unit(value).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_lines() {
        let cases: &[(&str, Option<(i64, i64)>)] = &[
            (
                "expires at 475304000000-475304000000 nsecs [in 2232657 to 2232657 nsecs]",
                Some((475304000000, 475304000000)),
            ),
            (
                "expires at 479001431804-479001481804 nsecs [in 1 to 2 nsecs]",
                Some((479001431804, 479001481804)),
            ),
            // Negative base-relative values (a clock base with a large negative offset).
            ("expires at -5-10 nsecs [in -7 to 8 nsecs]", Some((-5, 10))),
            ("expires at -20--10 nsecs", Some((-20, -10))),
            ("expires at 12 nsecs", None),
            ("expired at 1-2 nsecs", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_expiry(line), *want, "{line}");
        }
    }

    #[test]
    fn timer_heads() {
        let t = parse_timer_head(" #0: <00000000e4495f4e>, tick_nohz_handler, S:01").unwrap();
        assert_eq!((t.slot, t.callback.as_str()), (0, "tick_nohz_handler"));
        assert_eq!(t.state.as_deref(), Some("01"));
        assert!(t.extra.is_empty());

        let t = parse_timer_head(
            " #3: <ffff88003fd0e8a0>, tick_sched_timer, S:01, hrtimer_start_range_ns, swapper/1/0",
        )
        .unwrap();
        assert_eq!((t.slot, t.callback.as_str()), (3, "tick_sched_timer"));
        assert_eq!(t.extra, vec!["hrtimer_start_range_ns", "swapper/1/0"]);

        assert!(parse_timer_head("# expires at 1-2 nsecs").is_none());
        assert!(parse_timer_head(" #x: <p>, f, S:01").is_none());
    }

    #[test]
    fn tick_timer_names_across_versions() {
        assert!(is_tick_timer_callback("tick_sched_timer"));
        assert!(is_tick_timer_callback("tick_nohz_handler"));
        assert!(!is_tick_timer_callback("tick_nohz_lowres_handler"));
        assert!(!is_tick_timer_callback("hrtimer_wakeup"));
        assert!(!is_tick_timer_callback("watchdog_timer_fn"));
    }

    #[test]
    fn handler_names() {
        assert_eq!(handler_mode("hrtimer_interrupt"), HandlerMode::HighRes);
        assert_eq!(handler_mode("tick_handle_periodic"), HandlerMode::Periodic);
        assert_eq!(handler_mode("tick_nohz_handler"), HandlerMode::LowResNohz);
        assert_eq!(
            handler_mode("tick_nohz_lowres_handler"),
            HandlerMode::LowResNohz
        );
        assert_eq!(
            handler_mode("tick_handle_oneshot_broadcast"),
            HandlerMode::Broadcast
        );
        assert_eq!(handler_mode("clockevents_handle_noop"), HandlerMode::Other);
    }

    #[test]
    fn nohz_mode_maps_to_flags() {
        for (mode, nohz, highres) in [
            ("0", Some(false), None),
            ("1", Some(true), Some(false)),
            ("2", Some(true), Some(true)),
        ] {
            let mut cpu = CpuTimers::default();
            set_cpu_field(&mut cpu, "nohz_mode", mode);
            assert_eq!((cpu.nohz, cpu.highres), (nohz, highres), "nohz_mode {mode}");
        }
    }

    #[test]
    fn base_fields_do_not_leak_into_cpu_fields() {
        let text = "Timer List Version: v0.10\ncpu: 3\n clock 0:\n  .base: 00\n  .index: 0\n  \
                    .resolution: 1 nsecs\n  .offset: 0 nsecs\nactive timers:\n  .expires_next : 9 nsecs\n  \
                    .offset: 5 nsecs\njiffies: 7\n";
        let tl = parse_timer_list(text).unwrap();
        let cpu = tl.cpu(3).unwrap();
        assert_eq!(cpu.clock_bases[0].offset_ns, Some(0));
        assert_eq!(cpu.expires_next_ns, Some(9));
        // Once a CPU-level field was seen, a repeated base-like name is a CPU field.
        assert_eq!(cpu.fields.get("offset").map(String::as_str), Some("5"));
        assert_eq!(cpu.jiffies, Some(7));
        assert!(tl.unparsed.is_empty());
    }

    #[test]
    fn rejects_other_text() {
        assert!(parse_timer_list("CPU0 CPU1\nLOC: 1 2\n").is_err());
        assert!(parse_timer_list("").is_err());
    }
}
