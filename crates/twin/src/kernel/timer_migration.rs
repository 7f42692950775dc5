//! Where an unpinned timer is queued when it is armed: the nohz timer target
//! (`get_nohz_timer_target`, kernel/sched/core.c) and the hrtimer's own check of the remote
//! CPU (`get_target_base` / `switch_hrtimer_base` and `hrtimer_suitable_target`, before 6.14
//! `hrtimer_check_target`, kernel/time/hrtimer.c).
//!
//! The rule, as the 6.1 sources have it (checked in linux-source-6.1, 6.1.192):
//!
//! * Migration is on only while the static key `timers_migration_enabled` is: the
//!   `kernel.timer_migration` sysctl (default 1) and NO_HZ active (`nohz=off` never activates
//!   it). A pinned timer (`HRTIMER_MODE_*_PINNED`) never moves. A task's `clock_nanosleep`
//!   sleeper is **not** pinned.
//! * The arming CPU keeps the timer when it is a timer-housekeeping CPU (`HK_TYPE_TIMER`) that
//!   is not idle — a sleeper is armed by the running task, so a housekeeping CPU always keeps
//!   its own sleepers.
//! * Otherwise (the arming CPU is `nohz_full`, or idle): the first non-idle timer-housekeeping
//!   CPU of the arming CPU's scheduling domains, in CPU order; without one (or with no domains,
//!   `isolcpus=domain`), the arming CPU if it is timer housekeeping, else the first
//!   timer-housekeeping CPU (`housekeeping_any_cpu`: the closest NUMA node's first, which on a
//!   one-node machine is the lowest-numbered).
//! * An hrtimer moves to that CPU only if it does not expire before the CPU's programmed next
//!   event (`expires_next`): its device cannot be reprogrammed from here. Otherwise it stays on
//!   the arming CPU.
//!
//! `HK_TYPE_TIMER` is cleared by `nohz_full=` only; `isolcpus=nohz` clears the tick's type but
//! not the timers' in 6.1, so an `isolcpus=nohz,domain` CPU without `nohz_full=` keeps its
//! sleepers ([`ticklab_cmdline::TickConfig::timer_housekeeping`]).
//!
//! Releases: the housekeeping test on the arming CPU came with "nohz: Affine unpinned timers
//! to housekeepers" (4.3); before it a timer armed by a running task stayed on its CPU
//! whatever that CPU was ([`MIGRATES_OFF_BUSY_NOHZ_FULL`]). The hrtimer side is unchanged by
//! 6.9's pull-model timer migration (kernel/time/timer_migration.c), which changed the timer
//! wheel only: from 6.9 an unpinned wheel timer is queued on the arming CPU's global base and,
//! when that CPU goes idle, expired by an active CPU of the migration hierarchy, instead of
//! being pushed to the nohz timer target at arming ([`wheel_timer_cpu`]).

use crate::engine::Time;

/// First release whose nohz timer target moves a running `nohz_full` CPU's unpinned timers to
/// a housekeeping CPU ("nohz: Affine unpinned timers to housekeepers", 2015).
pub(crate) const MIGRATES_OFF_BUSY_NOHZ_FULL: (u32, u32) = (4, 3);

/// First release with the pull model for timer-wheel timers.
pub(crate) const WHEEL_PULL_MODEL: (u32, u32) = (6, 9);

/// What the placement of an unpinned timer depends on, for one machine and boot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimerMigration<'a> {
    /// `timers_migration_enabled`: NO_HZ active and the sysctl on.
    pub enabled: bool,
    /// The kernel release (major, minor).
    pub version: (u32, u32),
    /// Per CPU: in the `HK_TYPE_TIMER` mask.
    pub timer_housekeeping: &'a [bool],
    /// Per CPU: attached to the scheduling domains (not `isolcpus=domain`). The twin's
    /// machines have one domain level over all attached CPUs.
    pub in_domains: &'a [bool],
}

impl TimerMigration<'_> {
    /// `get_nohz_timer_target` for a timer armed on `this`; `idle(c)` is `idle_cpu(c)`.
    pub(crate) fn nohz_timer_target(&self, this: usize, idle: impl Fn(usize) -> bool) -> usize {
        let hk = self.timer_housekeeping;
        debug_assert!(
            hk.iter().any(|&h| h),
            "the kernel keeps one timer-housekeeping CPU"
        );
        let mut default = None;
        if hk[this] {
            if !idle(this) {
                return this;
            }
            default = Some(this);
        }
        if self.in_domains[this]
            && let Some(busy) =
                (0..hk.len()).find(|&i| i != this && hk[i] && self.in_domains[i] && !idle(i))
        {
            return busy;
        }
        default
            .or_else(|| hk.iter().position(|&h| h))
            .unwrap_or(this)
    }

    /// The CPU an unpinned (`pinned == false`) hrtimer expiring at `expires` is queued on when
    /// `this` arms it; `expires_next(c)` is CPU `c`'s programmed next event.
    pub(crate) fn hrtimer_cpu(
        &self,
        this: usize,
        pinned: bool,
        expires: Time,
        idle: impl Fn(usize) -> bool,
        expires_next: impl Fn(usize) -> Time,
    ) -> usize {
        if pinned || !self.enabled {
            return this;
        }
        if self.version < MIGRATES_OFF_BUSY_NOHZ_FULL && !idle(this) {
            return this;
        }
        let target = self.nohz_timer_target(this, idle);
        if target != this && expires < expires_next(target) {
            // It would be the remote CPU's first event: stay where the device can be set.
            return this;
        }
        target
    }
}

/// Where an unpinned timer-wheel timer armed on `this` is queued, at arming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "the twin's wheel timers are placed by their sources (`Placement`), not re-armed \
              from a nohz_full CPU; the rule is kept beside the hrtimer's with its table test"
)]
pub(crate) enum WheelPlacement {
    /// On this CPU's wheel (pinned, migration off, or the pull model while `this` is busy).
    Local,
    /// Pushed at arming to another CPU's wheel (before 6.9).
    Pushed(usize),
    /// On this CPU's global base; an active CPU of the hierarchy expires it while `this`
    /// sleeps (6.9 on).
    GlobalBase,
}

/// The timer-wheel counterpart of [`TimerMigration::hrtimer_cpu`] (`get_target_base` of
/// kernel/time/timer.c before 6.9; the global base after): no check of the remote CPU's next
/// event (a remote idle CPU is kicked instead).
#[allow(dead_code, reason = "see `WheelPlacement`")]
pub(crate) fn wheel_timer_cpu(
    m: &TimerMigration<'_>,
    this: usize,
    pinned: bool,
    idle: impl Fn(usize) -> bool,
) -> WheelPlacement {
    if pinned || !m.enabled {
        return WheelPlacement::Local;
    }
    if m.version >= WHEEL_PULL_MODEL {
        return WheelPlacement::GlobalBase;
    }
    if m.version < MIGRATES_OFF_BUSY_NOHZ_FULL && !idle(this) {
        return WheelPlacement::Local;
    }
    match m.nohz_timer_target(this, idle) {
        t if t == this => WheelPlacement::Local,
        t => WheelPlacement::Pushed(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NEVER;

    const MS: Time = 1_000_000;

    /// (case, version, enabled, timer housekeeping, in domains, busy CPUs, arming CPU,
    /// pinned, expires, the target's next event, expected CPU).
    // Over 100 lines because it is one table: a row per placement case across the releases,
    // each row naming its case; the loop that checks them is a few lines.
    #[test]
    fn hrtimer_placement_table() {
        type Case = (
            &'static str,
            (u32, u32),
            bool,
            [bool; 3],
            [bool; 3],
            [bool; 3],
            usize,
            bool,
            Time,
            Time,
            usize,
        );
        let hk01 = [true, true, false];
        let hk0 = [true, false, false];
        let all = [true, true, true];
        let cases: [Case; 13] = [
            (
                "housekeeping, running: local",
                (6, 1),
                true,
                hk01,
                all,
                [false, true, false],
                1,
                false,
                16 * MS,
                4 * MS,
                1,
            ),
            (
                "nohz_full sleeper, CPU 0 idle: first housekeeping",
                (6, 1),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                4 * MS,
                0,
            ),
            (
                "nohz_full sleeper, a busy housekeeping CPU wins",
                (6, 1),
                true,
                hk01,
                all,
                [false, true, true],
                2,
                false,
                16 * MS,
                4 * MS,
                1,
            ),
            (
                "nohz_full sleeper, busy CPU 0 and 1: the first",
                (6, 1),
                true,
                hk01,
                all,
                [true, true, true],
                2,
                false,
                16 * MS,
                4 * MS,
                0,
            ),
            (
                "expires before the target's next event: local",
                (6, 1),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                3 * MS,
                4 * MS,
                2,
            ),
            (
                "target idle with its tick stopped: local",
                (6, 1),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                NEVER,
                2,
            ),
            (
                "pinned: local",
                (6, 1),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                true,
                16 * MS,
                4 * MS,
                2,
            ),
            (
                "nohz=off: migration disabled",
                (6, 1),
                false,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                4 * MS,
                2,
            ),
            (
                "isolcpus=domain: no domain, any housekeeping CPU",
                (6, 1),
                true,
                hk01,
                [true, true, false],
                [false, true, true],
                2,
                false,
                16 * MS,
                4 * MS,
                0,
            ),
            (
                "isolcpus=nohz only: still timer housekeeping",
                (6, 1),
                true,
                all,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                4 * MS,
                2,
            ),
            (
                "idle housekeeping CPU arms: busy CPU chosen",
                (6, 1),
                true,
                hk01,
                all,
                [false, true, false],
                0,
                false,
                16 * MS,
                4 * MS,
                1,
            ),
            (
                "before 4.3: the running task keeps it",
                (4, 2),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                4 * MS,
                2,
            ),
            (
                "6.9 pull model: hrtimers unchanged",
                (6, 12),
                true,
                hk0,
                all,
                [false, false, true],
                2,
                false,
                16 * MS,
                4 * MS,
                0,
            ),
        ];
        for (name, version, enabled, hk, dom, busy, this, pinned, expires, next, want) in cases {
            let m = TimerMigration {
                enabled,
                version,
                timer_housekeeping: &hk,
                in_domains: &dom,
            };
            let got = m.hrtimer_cpu(this, pinned, expires, |c| !busy[c], |_| next);
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn wheel_placement_by_release() {
        let hk = [true, false];
        let dom = [true, true];
        let busy = [false, true];
        for (version, want) in [
            ((4, 2), WheelPlacement::Local),
            ((6, 1), WheelPlacement::Pushed(0)),
            ((6, 9), WheelPlacement::GlobalBase),
        ] {
            let m = TimerMigration {
                enabled: true,
                version,
                timer_housekeeping: &hk,
                in_domains: &dom,
            };
            assert_eq!(
                wheel_timer_cpu(&m, 1, false, |c| !busy[c]),
                want,
                "{version:?}"
            );
            assert_eq!(
                wheel_timer_cpu(&m, 1, true, |c| !busy[c]),
                WheelPlacement::Local
            );
        }
    }
}
