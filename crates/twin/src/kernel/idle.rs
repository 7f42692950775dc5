//! The idle loop's own tick rule when no cpuidle driver is registered (`kernel/sched/idle.c`,
//! docs/kernel-behaviour.md §9.1).
//!
//! With a driver, the governor says whether the tick may stop (from 4.17). Without one (a
//! guest under QEMU TCG, `cpuidle.off=1`, a Firecracker guest) there is no governor to ask,
//! and kernels differ:
//!
//! * [`NoDriverTick::EveryEntry`]: every idle entry tries to stop the tick. This is the rule
//!   of the kernels as first released, up to 6.18 at least.
//! * [`NoDriverTick::AfterIdleTick`]: the idle loop keeps the tick on an entry unless the tick
//!   is already stopped or the previous idle pass was ended by the tick itself. A CPU woken
//!   by a timer that runs a short task therefore takes one more tick before its tick stops:
//!   two local timer interrupts per timer wake-up instead of one. Stable 6.1 took this in
//!   6.1.167 (the Debian changelog of 6.1.192 lists "sched: idle: Consolidate the handling of
//!   two special cases" and "sched: idle: Make skipping governor callbacks more consistent"
//!   under ChangeLog-6.1.167). Stable 6.18 has it at 6.18.44: on this project's host
//!   (Firecracker, 6.18.44, no cpuidle driver) `ticklab host run --workload frames:10@1:loop=0`
//!   raises CPU 1 from 9.4 LOC/s idle to 30.3, two interrupts per wake-up, and a 1 kHz frame
//!   worker keeps its CPU's tick running (1250 LOC/s: 1000 wake-ups and 250 ticks). Stable
//!   6.12 took it in 6.12.78: the Debian changelog of `linux-source-6.12` (6.12.117) lists both
//!   commits under ChangeLog-6.12.78, and the 6.12.117 `kernel/sched/idle.c` sends the
//!   no-driver branch of `cpuidle_idle_call()` through the same stop-or-retain helper as
//!   6.1.192 does. Which 6.18 sublevel first carried it, and which mainline release, was not
//!   verified here, so the twin applies it only where the version names a 6.1 sublevel of 167
//!   or later, a 6.12 sublevel of 78 or later, or a 6.18 sublevel of 44 or later.
//!
//! Independently of the driver, *where* the idle loop stops the tick changed in 4.17
//! ([`IdleEntryTick`]): before it, `do_idle()` called `tick_nohz_idle_enter()` once at the top,
//! before choosing a path, so every idle entry stopped the tick (if no timer was due within a
//! tick), `idle=poll` included, and `tick_nohz_idle_exit()` restarted it after the loop; from
//! 4.17 the stop moved into the cpuidle path, and the poll path keeps the tick running. The
//! pre-4.17 order is read in a public copy of a 4.13/4.14-era `kernel/sched/idle.c` (its
//! `do_idle` calls `tick_nohz_idle_enter()` before the `cpu_idle_force_poll` branch) and in that
//! era's `tick-sched.c` (`__tick_nohz_idle_enter` stops the tick whenever
//! `can_stop_idle_tick()` allows); the 4.17+ order in 5.x `idle.c`, whose poll branch calls
//! `tick_nohz_idle_restart_tick()` before `cpu_idle_poll()` (docs/costs.md §12).
//!
//! Where the 2017 guest-polling patch ran its poll in the pre-4.17 loop, before or after
//! `tick_nohz_idle_enter()`, is not known (its text was not found): [`GuestPollPlacement`]
//! models both readings, and says which step of that path reaches the loop's tick stop.
//!
//! The rule was found by the QEMU validation (docs/vm-validation.md): a function-graph trace
//! of `do_idle` in a Debian 6.1.192 guest shows the first entry after a task calling
//! `tick_nohz_tick_stopped()` then `tick_nohz_idle_retain_tick()`, and the entry after the
//! next tick calling `tick_nohz_idle_stop_tick()` directly.

/// What the idle loop does with the tick when no cpuidle driver is registered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoDriverTick {
    /// Try to stop the tick on every idle entry.
    EveryEntry,
    /// Stop it only if it is already stopped or the last idle pass ended with the tick.
    AfterIdleTick,
}

/// The first 6.1 stable release with [`NoDriverTick::AfterIdleTick`].
const STABLE_6_1_SUBLEVEL: u32 = 167;
/// The first 6.12 stable release with [`NoDriverTick::AfterIdleTick`].
const STABLE_6_12_SUBLEVEL: u32 = 78;
/// The 6.18 stable release [`NoDriverTick::AfterIdleTick`] was observed on (the first one
/// carrying it is not known).
const STABLE_6_18_SUBLEVEL: u32 = 44;

impl NoDriverTick {
    /// The rule of a kernel `version` (`(major, minor)`) at stable `sublevel`.
    pub fn for_kernel(version: (u32, u32), sublevel: Option<u32>) -> Self {
        match (version, sublevel) {
            ((6, 1), Some(s)) if s >= STABLE_6_1_SUBLEVEL => NoDriverTick::AfterIdleTick,
            ((6, 12), Some(s)) if s >= STABLE_6_12_SUBLEVEL => NoDriverTick::AfterIdleTick,
            ((6, 18), Some(s)) if s >= STABLE_6_18_SUBLEVEL => NoDriverTick::AfterIdleTick,
            _ => NoDriverTick::EveryEntry,
        }
    }

    /// Whether this idle entry tries to stop the tick: `tick_stopped` is the tick's state at
    /// the entry, `last_pass_ended_by_tick` whether the previous idle pass on this CPU was
    /// ended by the tick's own interrupt (`tick_nohz_idle_got_tick()`).
    #[inline]
    pub fn stops_tick(self, tick_stopped: bool, last_pass_ended_by_tick: bool) -> bool {
        match self {
            NoDriverTick::EveryEntry => true,
            NoDriverTick::AfterIdleTick => tick_stopped || last_pass_ended_by_tick,
        }
    }
}

/// The state a CPU without a cpuidle driver rests in (`default_idle_call`, the architecture's
/// HLT or WFI) in a table of `nr_states`: state 1 when the table has one past POLL, else
/// state 0 (nothing to index past it; an empty table has no state to enter either).
#[inline]
pub fn no_driver_state(nr_states: usize) -> usize {
    nr_states.saturating_sub(1).min(1)
}

/// Where the idle loop stops the tick, by kernel version (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleEntryTick {
    /// Before 4.17: at the top of `do_idle()`, once per idle entry, whatever path follows
    /// (HLT, a cpuidle state, `idle=poll`); the governor's own stop decision is not asked.
    LoopEntry,
    /// From 4.17: on the cpuidle path only, as the governor (or, without a driver,
    /// [`NoDriverTick`]) decides; the `idle=poll` path keeps the tick.
    PerPath,
}

/// The first release with [`IdleEntryTick::PerPath`] (the idle loop rework of 4.17).
const PER_PATH_SINCE: (u32, u32) = (4, 17);

impl IdleEntryTick {
    /// The rule of a kernel `version` (`(major, minor)`).
    pub fn for_kernel(version: (u32, u32)) -> Self {
        if version < PER_PATH_SINCE {
            IdleEntryTick::LoopEntry
        } else {
            IdleEntryTick::PerPath
        }
    }

    /// Whether an idle step stops a running tick: `at_idle_enter` is whether the step starts
    /// where the pre-4.17 `do_idle()` calls `tick_nohz_idle_enter()` (the first step of an
    /// idle entry, unless the 2017 guest poll ran before it: [`GuestPollPlacement`]),
    /// `path_stops` what the path or its governor asks for.
    #[inline]
    pub fn stops_tick(self, at_idle_enter: bool, path_stops: bool) -> bool {
        match self {
            IdleEntryTick::LoopEntry => at_idle_enter || path_stops,
            IdleEntryTick::PerPath => path_stops,
        }
    }
}

/// Where the 2017 guest-polling patch (Yang Zhang, RFC v2, patch 3/7 "sched/idle: Add poll
/// before enter real idle path", lkml 2017-08-29) ran its poll relative to the pre-4.17 idle
/// loop's tick stop, `tick_nohz_idle_enter()` (docs/kernel-behaviour.md §9.7). The patch
/// text was not found (three searches, docs/costs.md §12.2), so both readings are modelled:
/// E3's verdict keeps the documented assumption ([`GuestPollPlacement::AfterTickStop`]) and
/// shows the other beside it.
///
/// Either way the idle task's polling flag is up during the poll (`do_idle()` raises it
/// before `tick_nohz_idle_enter()`), so a wake during the poll needs no IPI; what differs is
/// whether that wake has paid for a tick stop, and so for a restart at the idle exit.
#[doc(alias = "tick_nohz_idle_enter")]
#[doc(alias = "poll_threshold_ns")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestPollPlacement {
    /// The poll ran after `tick_nohz_idle_enter()`: every idle entry stops the tick before
    /// polling, and the idle exit restarts it, wherever the wake lands. The documented
    /// assumption (§9.7), E3's verdict.
    AfterTickStop,
    /// The poll ran before `tick_nohz_idle_enter()`, with the tick still running: a wake
    /// landing in the poll skips both the stop and the restart; a poll that runs out goes on
    /// into the idle loop proper, which stops the tick before HLT. The other reading.
    BeforeTickStop,
}

impl GuestPollPlacement {
    /// Whether the poll step at the idle entry asks for the tick to be stopped first.
    #[inline]
    pub fn stops_tick_before_poll(self) -> bool {
        match self {
            GuestPollPlacement::AfterTickStop => true,
            GuestPollPlacement::BeforeTickStop => false,
        }
    }

    /// Whether a step of the 2017 path starts at the idle loop's `tick_nohz_idle_enter()`
    /// ([`IdleEntryTick::stops_tick`]): the poll at the idle entry when the poll comes after
    /// the stop; the halt after the poll ran out (`after_poll_timeout`) when it comes before.
    #[inline]
    pub fn at_idle_enter(self, after_poll_timeout: bool) -> bool {
        match self {
            GuestPollPlacement::AfterTickStop => !after_poll_timeout,
            GuestPollPlacement::BeforeTickStop => after_poll_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NoDriverTick::{AfterIdleTick, EveryEntry};
    use super::*;

    #[test]
    fn no_driver_state_table() {
        // (states in the table, state rested in)
        for (n, want) in [(0, 0), (1, 0), (2, 1), (4, 1), (10, 1)] {
            assert_eq!(no_driver_state(n), want, "{n} states");
        }
    }

    #[test]
    fn rule_by_kernel_version() {
        for (version, sublevel, want) in [
            ((6, 1), None, EveryEntry),
            ((6, 1), Some(166), EveryEntry),
            ((6, 1), Some(167), AfterIdleTick),
            ((6, 1), Some(192), AfterIdleTick),
            ((6, 6), Some(200), EveryEntry),
            ((6, 12), None, EveryEntry),
            ((6, 12), Some(77), EveryEntry),
            ((6, 12), Some(78), AfterIdleTick),
            ((6, 12), Some(117), AfterIdleTick),
            ((5, 15), Some(190), EveryEntry),
            ((6, 18), None, EveryEntry),
            ((6, 18), Some(43), EveryEntry),
            ((6, 18), Some(44), AfterIdleTick),
        ] {
            assert_eq!(
                NoDriverTick::for_kernel(version, sublevel),
                want,
                "{version:?} .{sublevel:?}"
            );
        }
    }

    #[test]
    fn stop_decision_table() {
        // (rule, tick stopped at entry, last pass ended by the tick) -> tries to stop
        for (rule, stopped, by_tick, want) in [
            (EveryEntry, false, false, true),
            (EveryEntry, true, false, true),
            (EveryEntry, false, true, true),
            (AfterIdleTick, false, false, false),
            (AfterIdleTick, true, false, true),
            (AfterIdleTick, false, true, true),
            (AfterIdleTick, true, true, true),
        ] {
            assert_eq!(
                rule.stops_tick(stopped, by_tick),
                want,
                "{rule:?} stopped={stopped} by_tick={by_tick}"
            );
        }
    }

    #[test]
    fn idle_entry_tick_by_version_and_step() {
        use IdleEntryTick::{LoopEntry, PerPath};
        for (version, want) in [
            ((3, 10), LoopEntry),
            ((4, 13), LoopEntry),
            ((4, 16), LoopEntry),
            ((4, 17), PerPath),
            ((5, 4), PerPath),
            ((6, 18), PerPath),
        ] {
            assert_eq!(IdleEntryTick::for_kernel(version), want, "{version:?}");
        }
        // (rule, step at tick_nohz_idle_enter(), path asks to stop) -> stops
        for (rule, first, path, want) in [
            (LoopEntry, true, false, true), // idle=poll before 4.17: stopped anyway
            (LoopEntry, true, true, true),
            (LoopEntry, false, false, false), // a re-select after a poll ran out
            (LoopEntry, false, true, true),
            (PerPath, true, false, false), // idle=poll from 4.17: tick kept
            (PerPath, true, true, true),
            (PerPath, false, true, true),
        ] {
            assert_eq!(
                rule.stops_tick(first, path),
                want,
                "{rule:?} first={first} path={path}"
            );
        }
    }

    #[test]
    fn guest_poll_placement_decides_where_the_loop_entry_stop_runs() {
        use GuestPollPlacement::{AfterTickStop, BeforeTickStop};
        use IdleEntryTick::LoopEntry;
        // (placement, after a poll ran out) -> the poll step asks for the stop, the step is
        // at tick_nohz_idle_enter(), a pre-4.17 loop stops a running tick there
        for (placement, after_timeout, poll_stops, at_enter) in [
            (AfterTickStop, false, true, true),    // the poll, after the stop
            (AfterTickStop, true, true, false),    // the halt: tick already stopped
            (BeforeTickStop, false, false, false), // the poll, tick running
            (BeforeTickStop, true, false, true),   // the halt: the loop's stop runs now
        ] {
            assert_eq!(
                placement.stops_tick_before_poll(),
                poll_stops,
                "{placement:?}"
            );
            assert_eq!(
                placement.at_idle_enter(after_timeout),
                at_enter,
                "{placement:?} after_timeout={after_timeout}"
            );
            // The poll step: what LoopEntry does with it.
            if !after_timeout {
                assert_eq!(
                    LoopEntry.stops_tick(placement.at_idle_enter(false), poll_stops),
                    placement == AfterTickStop,
                    "{placement:?}"
                );
            }
        }
    }
}
