//! One step of the `contextswitch` benchmark's `timectxsw` loop
//! ([`PingPongLoop::Timectxsw`](super::PingPongLoop::Timectxsw),
//! docs/costs.md §12.2): the spinner notices the word, queues itself and switches out; the
//! writer's retried wake finds it queued and waits for the switch-out to finish.
//!
//! # Design note
//!
//! The writer (on `w`) has just resumed and written the word; the other task (on `x`) has
//! been spinning since its own wake point. Its next `FUTEX_WAIT` sees the word changed and
//! queues it: half a spin pass after the write, the mean over the pass's phase (the phase is
//! set by the whole previous wake's latency, exits and cache misses included, so no phase is
//! favoured). It then switches out to its idle task, which takes half the one-way switch, the
//! same split the blocking loop uses. The writer's first `FUTEX_WAKE` finds no waiter; it
//! retries after each `sched_yield` and succeeds at the first retry at or after the queueing.
//! `try_to_wake_up` (4.x) waits on `p->on_cpu` until the switch-out is done, so the wake
//! lands at the later of that retry and the idle entry; at the idle entry the idle task has
//! raised its polling flag and made its tick-stop decision before the writer, which still has
//! to pick the run queue and enqueue, can set NEED_RESCHED (docs/costs.md §12.2, D from the
//! code paths). From there the wake is the blocking loop's ([`GuestPingPong::reach`]): a poll
//! notices it, a vCPU on its way into HLT skips the HLT, a halted one needs the IPI.
//!
//! The writer does not sleep after its wake: it spins in turn, so its ICR exit (when the
//! wake needed an IPI) delays only its own spin, not the path. The measured sleeper always
//! switched out (one voluntary switch per task per round trip, docs/costs.md §12.2): the
//! model has no wake that finds the spinner still on its run queue.

use super::{ExitReason, GuestPingPong, Phase, SpinCosts};
use crate::workloads::critical_path::PathTerm;

impl GuestPingPong {
    /// The task on `w` reaches its wake point at `t` (word written, first `FUTEX_WAKE`
    /// issued). Returns when the woken task on the other vCPU reaches its own wake point.
    pub(super) fn handshake(&mut self, w: usize, t: u64, spin: SpinCosts) -> u64 {
        let x = 1 - w;
        let at = match self.vcpus[x].phase {
            Phase::Running { since, idle_at } => {
                // Invariant: in `timectxsw` a running task spins until it is written to; only
                // this step sets when it goes idle.
                debug_assert_eq!(idle_at, u64::MAX, "a spinner with an idle entry set");
                self.spinner_queues(x, since, t, spin)
            }
            // Asleep already (the first wake of a run): the first `FUTEX_WAKE` finds it.
            Phase::Poll { .. } | Phase::Halt { .. } => t,
        };
        self.advance(x, at);
        let (ipi, resume) = self.reach(x, at);
        if ipi {
            let exit = self.setup.kvm.msr_write_exit_ns;
            self.exit(w, ExitReason::MsrIcr, exit);
            self.vcpus[w].busy_exits_ns += exit;
        }
        self.switch_in(x, resume)
    }

    /// The spinner on `x` (running since `since`) sees the word the other task wrote at `t`,
    /// queues itself and switches out; sets its idle entry and returns when the writer's
    /// wake reaches it, adding the critical path up to there.
    fn spinner_queues(&mut self, x: usize, since: u64, t: u64, spin: SpinCosts) -> u64 {
        let half = self.setup.costs.context_switch_ns / 2;
        // Ticks during the spin cost CPU and exits; the spin absorbs their delay.
        let from = self.vcpus[x].wake_point;
        let _ = self.busy_until(x, from, t.max(from));
        // Half a pass to notice, then queue and switch out; a tick on the way delays both.
        let notice = spin.spin_pass_ns() / 2;
        let idle_at = self.busy_until(x, t, t + notice + half);
        let queued = idle_at - half;
        self.path.add(PathTerm::SleeperNotice, notice);
        self.path.add(PathTerm::BusyTicks, queued - t - notice);
        self.vcpus[x].phase = Phase::Running { since, idle_at };
        // The writer retries `FUTEX_WAKE` every pass until the spinner is queued.
        let pass = spin.retry_pass_ns().max(1);
        let woken = t + (queued - t).div_ceil(pass) * pass;
        self.path.add(PathTerm::WakerRetry, woken - queued);
        // `try_to_wake_up` waits for the switch-out (`p->on_cpu`).
        let at = woken.max(idle_at);
        self.path.add(PathTerm::OnCpuWait, at - woken);
        at
    }
}
