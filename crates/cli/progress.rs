//! Progress on stderr for long runs. Two shapes, one module: [`Progress`] / [`with_progress`]
//! count items (sweep points, simulated ms) with a bar after about two seconds; [`Phases`]
//! names the phase of a host or vm run (booting, settling, measuring, powering off) with a
//! bar through it and the rate so far, after a second, and carries the `--live` table of
//! `host run` and `host noise` ([`measure`], [`vm_boot`], [`steps`] for commands that tell
//! their progress as lines). Both are off with `-q`; [`Phases`] also when stderr is
//! not a terminal. stdout is never touched, so a command's output is the same with or without
//! a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `-q/--quiet`: no bar at all (set once, from the command line, before any work starts).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Turns every progress bar off (`-q/--quiet`).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given: no progress and no timing lines on stderr.
pub(crate) fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// A progress bar on stderr, shown only for runs that last more than about two seconds.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    started: Instant,
    unit: &'static str,
}

impl Progress {
    /// A bar counting up to `total` `unit`s (`points`, `simulated ms`), not shown yet.
    pub(crate) fn new(total: u64, unit: &'static str) -> Progress {
        Progress {
            bar: None,
            total,
            started: Instant::now(),
            unit,
        }
    }

    /// Moves to `pos`; shows the bar once the run has taken more than two seconds.
    pub(crate) fn set(&mut self, pos: u64) {
        if self.bar.is_none() && !is_quiet() && self.started.elapsed() > Duration::from_secs(2) {
            let bar = ProgressBar::new(self.total);
            let style = ProgressStyle::with_template(&format!(
                "{{spinner}} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} {} (eta {{eta}})",
                self.unit
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    /// Clears the bar, if it was shown.
    pub(crate) fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs `work` with a progress callback that worker threads may call with the number of items
/// done (of `total`), then clears the bar.
pub(crate) fn with_progress<T>(
    total: u64,
    unit: &'static str,
    work: impl FnOnce(&(dyn Fn(usize) + Sync)) -> T,
) -> T {
    let p = Mutex::new(Progress::new(total, unit));
    let out = work(&|done| {
        if let Ok(mut p) = p.lock() {
            p.set(done as u64);
        }
    });
    if let Ok(p) = p.into_inner() {
        p.finish();
    }
    out
}

/// What time it is for a [`Phases`] line: the monotonic clock in a run, a fake in tests.
pub(crate) trait Clock {
    /// Time since the clock's start.
    fn now(&self) -> Duration;
}

/// [`Clock`] of a run: [`Instant`] since construction.
pub(crate) struct RealClock(Instant);

impl RealClock {
    /// Starts now.
    pub(crate) fn start() -> RealClock {
        RealClock(Instant::now())
    }
}

impl Clock for RealClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Width of the phase bar, in characters.
const PHASE_BAR: usize = 20;

/// A run shorter than this shows no progress at all.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The phase line of a run: `ticklab: measuring [#####...] 2.0/4.0 s · LOC/s so far: CPU1 250`.
/// Pure: what [`Phases`] draws.
pub(crate) fn phase_line(
    phase: &str,
    in_phase: Duration,
    total: Option<Duration>,
    rate: Option<&str>,
) -> String {
    let secs = in_phase.as_secs_f64();
    let mut s = format!("ticklab: {phase}");
    match total {
        Some(t) if !t.is_zero() => {
            let frac = (secs / t.as_secs_f64()).clamp(0.0, 1.0);
            let filled = (frac * PHASE_BAR as f64).round() as usize;
            s += &format!(
                " [{}{}] {secs:.1}/{:.1} s",
                "#".repeat(filled),
                ".".repeat(PHASE_BAR - filled),
                t.as_secs_f64()
            );
        }
        _ => s += &format!(" {secs:.1} s"),
    }
    if let Some(r) = rate {
        s += " · ";
        s += r;
    }
    s
}

/// Progress of a run on a terminal: the phase it is in (booting, settling, measuring, powering
/// off), how far through it, the rate so far, and below it an optional block (the `--live`
/// table), redrawn in place at most once per `every`. Nothing is drawn for a run under a
/// second, with `-q`, or when the output is not a terminal ([`Phases::stderr`]); a block asked
/// for explicitly (`--live`) is printed frame after frame when the output is not a terminal.
/// Writer and clock are parameters so that tests drive it with fakes.
pub(crate) struct Phases<W: Write, C: Clock> {
    out: W,
    clock: C,
    /// The phase line is drawn at all (a terminal, not `-q`).
    enabled: bool,
    /// The output is a terminal: redraw in place.
    terminal: bool,
    every: Duration,
    phase: String,
    phase_since: Duration,
    total: Option<Duration>,
    rate: Option<String>,
    block: Option<String>,
    last_draw: Option<Duration>,
    /// Lines on screen from the last draw (0: nothing to clear).
    lines_drawn: usize,
}

impl Phases<std::io::Stderr, RealClock> {
    /// Progress on stderr, redrawn at most once per `every`: off with `-q` or when stderr is
    /// not a terminal.
    pub(crate) fn stderr(every: Duration) -> Self {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        Phases::new(
            std::io::stderr(),
            RealClock::start(),
            terminal && !is_quiet(),
            terminal,
            every,
        )
    }
}

impl<W: Write, C: Clock> Phases<W, C> {
    /// Progress on `out` with `clock`; `enabled` draws the phase line, `terminal` redraws in
    /// place (else a block is appended frame after frame).
    pub(crate) fn new(out: W, clock: C, enabled: bool, terminal: bool, every: Duration) -> Self {
        Phases {
            out,
            clock,
            enabled,
            terminal,
            every,
            phase: "starting".to_string(),
            phase_since: Duration::ZERO,
            total: None,
            rate: None,
            block: None,
            last_draw: None,
            lines_drawn: 0,
        }
    }

    /// Whether anything will ever be drawn (callers skip their sampling otherwise).
    pub(crate) fn active(&self) -> bool {
        self.enabled
    }

    /// Enters `phase`, expected to last `total` (a bar) or open-ended, and draws.
    pub(crate) fn phase(&mut self, phase: &str, total: Option<Duration>) {
        if self.phase == phase {
            return;
        }
        self.phase = phase.to_string();
        self.phase_since = self.clock.now();
        self.total = total;
        self.rate = None;
        self.draw();
    }

    /// The rate so far (`LOC/s so far: CPU1 250.0`), shown at the next draw.
    pub(crate) fn rate(&mut self, rate: Option<String>) {
        self.rate = rate;
    }

    /// The block below the phase line (the `--live` table), printed now.
    pub(crate) fn block(&mut self, block: String) {
        if !self.terminal {
            // Not a terminal: each frame after the last, nothing redrawn.
            let _ = writeln!(self.out, "{block}");
            let _ = self.out.flush();
            return;
        }
        self.block = Some(block);
        self.draw();
    }

    /// Redraws if `every` has passed since the last draw.
    pub(crate) fn tick(&mut self) {
        let now = self.clock.now();
        if self
            .last_draw
            .is_none_or(|t| now.saturating_sub(t) >= self.every)
        {
            self.draw();
        }
    }

    /// Moves the cursor back over what the last draw left and clears it.
    fn clear(&mut self) {
        if self.lines_drawn > 0 {
            let _ = write!(self.out, "\r");
            if self.lines_drawn > 1 {
                let _ = write!(self.out, "\x1b[{}A", self.lines_drawn - 1);
            }
            let _ = write!(self.out, "\x1b[J");
            self.lines_drawn = 0;
        }
    }

    fn draw(&mut self) {
        let now = self.clock.now();
        let show_line = self.enabled && now >= SHOW_AFTER;
        if !self.terminal || (!show_line && self.block.is_none()) {
            return;
        }
        self.last_draw = Some(now);
        let mut text = String::new();
        if show_line {
            text = phase_line(
                &self.phase,
                now.saturating_sub(self.phase_since),
                self.total,
                self.rate.as_deref(),
            );
        }
        if let Some(b) = &self.block {
            if !text.is_empty() {
                text.push('\n');
            }
            text += b.trim_end_matches('\n');
        }
        self.clear();
        let _ = write!(self.out, "{text}");
        let _ = self.out.flush();
        self.lines_drawn = text.lines().count().max(1);
    }

    /// Clears the line (and block) at the end of the run.
    pub(crate) fn finish(&mut self) {
        self.clear();
        let _ = self.out.flush();
    }

    /// The writer (tests read what was drawn).
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> W {
        self.out
    }
}

/// Runs `work` while a thread redraws `phases` once per `every`, calling `sample` first on
/// each (to refresh the rate or the live table). The thread is spawned only when something
/// is drawn or `always` (the `--live` table) asks for it; its wake-ups are the cost.
pub(crate) fn while_running<T, C: Clock + Send>(
    phases: &std::sync::Mutex<Phases<std::io::Stderr, C>>,
    every: Duration,
    always: bool,
    mut sample: impl FnMut(&mut Phases<std::io::Stderr, C>) + Send,
    work: impl FnOnce() -> T,
) -> T {
    let active = always || phases.lock().is_ok_and(|p| p.active());
    if !active {
        return work();
    }
    let (done, wait) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(every) {
                if let Ok(mut p) = phases.lock() {
                    sample(&mut p);
                    p.tick();
                }
            }
        });
        let out = work();
        drop(done);
        out
    })
}

/// Runs `work`, which tells its progress as lines (`host calibrate`'s phases, `host
/// haltpoll-sweep`'s points), through the one phase line: on a terminal each line becomes the
/// phase (`ticklab: calibrate (idle: 18.6 s) 3.2 s · 21 s in all`), redrawn in place once a
/// second; off a terminal each is printed once with the time since the start (`[  1.2 s]
/// calibrate: idle: 18.6 s`), the run's log; nothing with `-q`.
pub(crate) fn steps<T>(command: &str, work: impl FnOnce(&mut dyn FnMut(&str)) -> T) -> T {
    let phases = Mutex::new(Phases::stderr(Duration::from_secs(1)));
    let redraw = phases.lock().is_ok_and(|p| p.active());
    let log = !redraw && !is_quiet();
    let started = Instant::now();
    let out = while_running(
        &phases,
        Duration::from_secs(1),
        false,
        |p| {
            p.rate(Some(format!(
                "{:.0} s in all",
                started.elapsed().as_secs_f64()
            )))
        },
        || {
            work(&mut |line: &str| {
                if redraw {
                    if let Ok(mut p) = phases.lock() {
                        p.phase(&step_phase(command, line), None);
                    }
                } else if log {
                    eprintln!("{}", step_log_line(command, line, started.elapsed()));
                }
            })
        },
    );
    if let Ok(mut p) = phases.lock() {
        p.finish();
    }
    out
}

/// The phase a step line makes on a terminal: `calibrate (idle: 18.6 s)`.
fn step_phase(command: &str, line: &str) -> String {
    format!("{command} ({line})")
}

/// A step line off a terminal: `[  1.2 s] calibrate: idle: 18.6 s`.
fn step_log_line(command: &str, line: &str, since_start: Duration) -> String {
    format!("[{:5.1} s] {command}: {line}", since_start.as_secs_f64())
}

/// A measured window as the progress line shows it: an optional settle phase first, then
/// `measuring` for `window` with the LOC/s so far of `cpus` (all when `None`), then `after`
/// until the work returns; `live` adds the per-CPU table of the last second below the line.
pub(crate) struct Window<'a> {
    /// Time before the window (a workload settling).
    pub(crate) settle: Duration,
    /// The window.
    pub(crate) window: Duration,
    /// The CPUs whose LOC/s are shown.
    pub(crate) cpus: Option<&'a [u32]>,
    /// The phase after the window (`reading the trace`, `reporting`).
    pub(crate) after: &'static str,
    /// `--live`: the table of the last second under the line.
    pub(crate) live: bool,
    /// The command, for the live table's title (`host run`).
    pub(crate) command: &'static str,
}

/// Runs `work`, which measures `w`, with its progress on stderr (see [`Window`]).
pub(crate) fn measure<T>(w: Window<'_>, work: impl FnOnce() -> T) -> T {
    use ticklab_host::harness::{LiveSample, live_rows};
    let phases = Mutex::new(Phases::stderr(Duration::from_secs(1)));
    if let Ok(mut p) = phases.lock() {
        if w.settle.is_zero() {
            p.phase("measuring", Some(w.window));
        } else {
            p.phase("settling", Some(w.settle));
        }
    }
    let started = Instant::now();
    // With no settle time the window opens now: the first sample too, so that the first
    // redraw already has a second to show.
    let drawn = w.live || phases.lock().is_ok_and(|p| p.active());
    let mut first: Option<LiveSample> = (drawn && w.settle.is_zero()).then(LiveSample::take);
    let mut last: Option<LiveSample> = first.clone();
    let out = while_running(
        &phases,
        Duration::from_secs(1),
        w.live,
        |p| {
            let t = started.elapsed();
            if t < w.settle {
                p.phase("settling", Some(w.settle));
                return;
            }
            if t >= w.settle + w.window {
                p.phase(w.after, None);
                return;
            }
            p.phase("measuring", Some(w.window));
            let now = LiveSample::take();
            let base = first.get_or_insert_with(|| now.clone());
            p.rate(loc_rate(&live_rows(base, &now, w.cpus)));
            if w.live
                && let Some(prev) = &last
            {
                let rows = live_rows(prev, &now, w.cpus);
                p.block(live_frame(w.command, &rows, None, t - w.settle, w.window));
            }
            last = Some(now);
        },
        work,
    );
    if let Ok(mut p) = phases.lock() {
        p.finish();
    }
    out
}

/// Runs `boot`, which boots a guest and calls its argument with each [`ticklab_vm::BootPhase`],
/// with the phase on stderr (`measuring` with a bar of `window`).
pub(crate) fn vm_boot<T>(
    window: Duration,
    boot: impl FnOnce(&mut dyn FnMut(ticklab_vm::BootPhase)) -> T,
) -> T {
    let mut p = Phases::stderr(Duration::from_millis(500));
    p.phase("packing the initramfs", None);
    let out = boot(&mut |phase| {
        let total = matches!(phase, ticklab_vm::BootPhase::Measuring).then_some(window);
        p.phase(phase.name(), total);
        p.tick();
    });
    p.finish();
    out
}

/// `LOC/s so far: CPU0 54.2 CPU1 250.0` from live rows (at most eight CPUs named).
pub(crate) fn loc_rate(rows: &[ticklab_host::harness::LiveRow]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = rows
        .iter()
        .take(8)
        .map(|r| format!("CPU{} {:.1}", r.cpu, r.loc_per_s))
        .collect();
    if rows.len() > 8 {
        parts.push(format!("+{} CPUs", rows.len() - 8));
    }
    Some(format!("LOC/s so far: {}", parts.join(" ")))
}

/// One `--live` frame of `command` (`host run`, `host noise`): a per-CPU table of the last
/// second, as `rtla osnoise top` and `turbostat` show theirs; with `noise` (`host noise`), each
/// sampled CPU's detours so far beside its row.
pub(crate) fn live_frame(
    command: &str,
    rows: &[ticklab_host::harness::LiveRow],
    noise: Option<&[ticklab_host::noise::CpuNoiseSoFar]>,
    elapsed: Duration,
    total: Duration,
) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let mut s = format!(
        "ticklab {command} --live: {:.0} s of {:.0} s, the last second per CPU{}\n",
        elapsed.as_secs_f64(),
        total.as_secs_f64(),
        if noise.is_some() {
            " (detours, noise and max: since the start)"
        } else {
            ""
        }
    );
    s += &format!(
        "{:>4} {:>9} {:>7} {:>8}",
        "CPU", "LOC/s", "busy %", "steal %"
    );
    if noise.is_some() {
        s += &format!(" {:>8} {:>12} {:>9}", "detours", "noise us", "max us");
    }
    s.push('\n');
    for r in rows {
        s += &format!(
            "{:>4} {:>9.1} {:>7} {:>8}",
            r.cpu,
            r.loc_per_s,
            pct(r.busy_pct),
            pct(r.steal_pct)
        );
        if let Some(n) = noise {
            match n.iter().find(|n| n.cpu == r.cpu) {
                Some(n) => {
                    s += &format!(" {:>8} {:>12.1} {:>9.1}", n.detours, n.noise_us, n.max_us)
                }
                None => s += &format!(" {:>8} {:>12} {:>9}", "-", "-", "-"),
            }
        }
        s.push('\n');
    }
    s
}

/// `noise so far: CPU1 4 detours 12.5 us (max 4.1 us)` (at most eight CPUs named).
pub(crate) fn noise_rate(cpus: &[ticklab_host::noise::CpuNoiseSoFar]) -> Option<String> {
    if cpus.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = cpus
        .iter()
        .take(8)
        .map(|c| {
            format!(
                "CPU{} {} detours {:.1} us (max {:.1} us)",
                c.cpu, c.detours, c.noise_us, c.max_us
            )
        })
        .collect();
    if cpus.len() > 8 {
        parts.push(format!("+{} CPUs", cpus.len() - 8));
    }
    Some(format!("noise so far: {}", parts.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A clock the test moves.
    #[derive(Clone, Default)]
    struct FakeClock(Rc<Cell<Duration>>);

    impl FakeClock {
        fn set(&self, secs: f64) {
            self.0.set(Duration::from_secs_f64(secs));
        }
    }

    impl Clock for FakeClock {
        fn now(&self) -> Duration {
            self.0.get()
        }
    }

    fn phases(enabled: bool, terminal: bool) -> (Phases<Vec<u8>, FakeClock>, FakeClock) {
        let clock = FakeClock::default();
        let p = Phases::new(
            Vec::new(),
            clock.clone(),
            enabled,
            terminal,
            Duration::from_secs(1),
        );
        (p, clock)
    }

    #[test]
    fn phase_lines() {
        let s = |secs| Duration::from_secs_f64(secs);
        // (phase, in phase, total, rate, expected)
        let cases = [
            ("booting", s(3.0), None, None, "ticklab: booting 3.0 s"),
            (
                "measuring",
                s(2.0),
                Some(s(4.0)),
                Some("LOC/s so far: CPU1 250.0"),
                "ticklab: measuring [##########..........] 2.0/4.0 s · LOC/s so far: CPU1 250.0",
            ),
            (
                "measuring",
                s(9.0),
                Some(s(4.0)),
                None,
                "ticklab: measuring [####################] 9.0/4.0 s",
            ),
        ];
        for (phase, in_phase, total, rate, want) in cases {
            assert_eq!(phase_line(phase, in_phase, total, rate), want);
        }
    }

    #[test]
    fn nothing_in_the_first_second_then_redrawn_in_place() {
        let (mut p, clock) = phases(true, true);
        p.phase("booting", None);
        clock.set(0.5);
        p.tick();
        assert!(p.out.is_empty(), "drawn before a second had passed");
        clock.set(1.2);
        p.tick();
        clock.set(1.5);
        p.tick(); // under `every` since the last draw: nothing
        clock.set(2.0);
        p.phase("measuring", Some(Duration::from_secs(4)));
        clock.set(3.0);
        p.rate(Some("LOC/s so far: CPU1 250.0".into()));
        p.tick();
        p.finish();
        let out = String::from_utf8(p.into_inner()).unwrap();
        assert_eq!(
            out,
            "ticklab: booting 1.2 s\
             \r\x1b[Jticklab: measuring [....................] 0.0/4.0 s\
             \r\x1b[Jticklab: measuring [#####...............] 1.0/4.0 s · LOC/s so far: CPU1 250.0\
             \r\x1b[J"
        );
    }

    #[test]
    fn quiet_or_not_a_terminal_draws_nothing_but_an_asked_block() {
        for (enabled, terminal) in [(false, true), (false, false)] {
            let (mut p, clock) = phases(enabled, terminal);
            clock.set(5.0);
            p.phase("measuring", None);
            p.tick();
            p.finish();
            assert!(p.into_inner().is_empty(), "{enabled} {terminal}");
        }
        // A --live block off a terminal: appended, never redrawn.
        let (mut p, clock) = phases(false, false);
        clock.set(2.0);
        p.block("frame 1".into());
        p.block("frame 2".into());
        assert_eq!(
            String::from_utf8(p.into_inner()).unwrap(),
            "frame 1\nframe 2\n"
        );
        // On a terminal the block is redrawn under the line, clearing both lines.
        let (mut p, clock) = phases(true, true);
        clock.set(2.0);
        p.phase("measuring", None);
        p.block("A\nB".into());
        p.finish();
        let out = String::from_utf8(p.into_inner()).unwrap();
        assert!(
            out.ends_with("ticklab: measuring 0.0 s\nA\nB\r\x1b[2A\x1b[J"),
            "{out:?}"
        );
    }

    #[test]
    fn step_lines() {
        assert_eq!(
            step_phase("calibrate", "idle: 18.6 s"),
            "calibrate (idle: 18.6 s)"
        );
        assert_eq!(
            step_log_line("calibrate", "idle: 18.6 s", Duration::from_millis(1234)),
            "[  1.2 s] calibrate: idle: 18.6 s"
        );
        // What a terminal shows for a step, once a second.
        assert_eq!(
            phase_line(
                &step_phase("calibrate", "idle: 18.6 s"),
                Duration::from_secs_f64(3.2),
                None,
                Some("21 s in all")
            ),
            "ticklab: calibrate (idle: 18.6 s) 3.2 s · 21 s in all"
        );
    }

    /// `/proc/interrupts` and `/proc/stat` of two CPUs, one second apart: CPU 1 a hog.
    fn samples() -> (
        ticklab_host::harness::LiveSample,
        ticklab_host::harness::LiveSample,
    ) {
        let irq = |a: u64, b: u64| {
            format!(
                "           CPU0       CPU1\n LOC:   {a}   {b}   Local timer interrupts\n RES:   1   2   Rescheduling interrupts\n"
            )
        };
        let stat = |idle0: u64, idle1: u64, steal1: u64| {
            format!(
                "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 10 0 5 {idle0} 0 0 0 0 0 0\ncpu1 100 0 0 {idle1} 0 0 0 {steal1} 0 0\n"
            )
        };
        (
            ticklab_host::harness::LiveSample::parse(
                1_000_000_000,
                &irq(1000, 5000),
                &stat(500, 20, 3),
            ),
            ticklab_host::harness::LiveSample::parse(
                2_000_000_000,
                &irq(1054, 5250),
                &stat(590, 20, 5),
            ),
        )
    }

    #[test]
    fn one_live_frame() {
        let (a, b) = samples();
        let rows = ticklab_host::harness::live_rows(&a, &b, None);
        insta::assert_snapshot!(
            "live_frame",
            live_frame(
                "host run",
                &rows,
                None,
                Duration::from_secs(3),
                Duration::from_secs(8)
            )
        );
        // host noise: CPU 1 sampled, its detours beside its row, CPU 0's left blank.
        let noise = [ticklab_host::noise::CpuNoiseSoFar {
            cpu: 1,
            detours: 4,
            noise_us: 12.5,
            max_us: 4.125,
        }];
        insta::assert_snapshot!(
            "live_frame_noise",
            live_frame(
                "host noise",
                &rows,
                Some(&noise),
                Duration::from_secs(3),
                Duration::from_secs(8)
            )
        );
        assert_eq!(
            noise_rate(&noise).as_deref(),
            Some("noise so far: CPU1 4 detours 12.5 us (max 4.1 us)")
        );
        assert_eq!(noise_rate(&[]), None);
        assert_eq!(
            loc_rate(&rows).as_deref(),
            Some("LOC/s so far: CPU0 54.0 CPU1 250.0")
        );
    }
}
