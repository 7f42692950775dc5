//! The critical path of the ping-pong ([`super::pingpong`]): where the time from one wake
//! point to the next goes, term by term, as the model walks it (docs/experiments.md E3,
//! docs/costs.md §12).
//!
//! # Design note
//!
//! The ping-pong is a chain of steps, each from a wake point to the next one, and the model
//! computes each step as a sum of costs (an ICR exit, a host poll that notices, a VM entry, a
//! tick restart, half a guest switch, ...). [`CriticalPath`] adds every such cost to its
//! [`PathTerm`] as the step is taken, so that the terms of a run add up to its elapsed time
//! exactly; a report divides them by the switch count. Work that runs beside the path (the
//! waker's ICR exit after the IPI is pending, the sleeper's HLT exit, ticks while a vCPU
//! polls) is not on it and is not counted here.
//!
//! Invariant: the sum of the terms equals the time walked (checked with `debug_assert!` by
//! the model at the end of a run, and tested).

/// One kind of time on the ping-pong's critical path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathTerm {
    /// `timectxsw`: the spinner's next `FUTEX_WAIT` sees the word changed and queues it (half
    /// its spin pass, the mean over the pass's phase).
    SleeperNotice,
    /// `timectxsw`: the writer's `FUTEX_WAKE` retry (after a `sched_yield`) finds the spinner
    /// queued.
    WakerRetry,
    /// `timectxsw`: `try_to_wake_up` waits for the queued task to finish switching out
    /// (`p->on_cpu`, 4.x).
    OnCpuWait,
    /// The woken task was not asleep yet: its wait found the word changed (the target's
    /// previous step had not reached its idle entry).
    NotYetIdle,
    /// The target was still entering idle (its tick stop), polling flag set: the wake waits
    /// for that to end (the last check before HLT, or the start of the poll).
    IdleEntryWait,
    /// A polling guest vCPU notices NEED_RESCHED: one cache-line transfer.
    GuestPollNotice,
    /// The waker's ICR-write exit until the IPI is pending at the target.
    IcrDelivery,
    /// The target's HLT exit had not reached the host yet when the IPI became pending.
    HltExitWait,
    /// The host's halt poll notices the pending interrupt: one cache-line transfer.
    HostPollNotice,
    /// The vCPU thread was still blocking when the IPI became pending.
    HostBlockWait,
    /// A reschedule IPI to the host CPU of a blocked vCPU (its idle state clears the
    /// polling flag).
    HostIpi,
    /// The exit latency of the host C-state a blocked vCPU's CPU rested in.
    HostIdleExit,
    /// The host switches from its idle task to the vCPU thread.
    HostSwitch,
    /// The VM entry back into the guest (half the world switch).
    VmEntry,
    /// The guest takes the injected reschedule interrupt (entry + exit).
    GuestIrq,
    /// Tick restart at idle exit, the guest's own work.
    TickRestart,
    /// Tick restart at idle exit, its TSC-deadline write exit.
    TickRestartExit,
    /// The woken task's half of the guest's one-way switch (switched in → its wake point).
    HalfSwitch,
    /// Both tasks on one vCPU: the whole one-way switch.
    SameCpuSwitch,
    /// Guest ticks landing in a busy stretch (external-interrupt exit, tick handler, re-arm
    /// exit).
    BusyTicks,
}

impl PathTerm {
    /// Number of terms.
    pub const COUNT: usize = 20;

    /// Every term, in path order.
    pub const ALL: [PathTerm; PathTerm::COUNT] = [
        PathTerm::SleeperNotice,
        PathTerm::WakerRetry,
        PathTerm::OnCpuWait,
        PathTerm::NotYetIdle,
        PathTerm::IdleEntryWait,
        PathTerm::GuestPollNotice,
        PathTerm::IcrDelivery,
        PathTerm::HltExitWait,
        PathTerm::HostPollNotice,
        PathTerm::HostBlockWait,
        PathTerm::HostIpi,
        PathTerm::HostIdleExit,
        PathTerm::HostSwitch,
        PathTerm::VmEntry,
        PathTerm::GuestIrq,
        PathTerm::TickRestart,
        PathTerm::TickRestartExit,
        PathTerm::HalfSwitch,
        PathTerm::SameCpuSwitch,
        PathTerm::BusyTicks,
    ];

    /// Index into [`PathTerm::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Nanoseconds on the critical path per [`PathTerm`], summed over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CriticalPath {
    ns: [u64; PathTerm::COUNT],
}

impl CriticalPath {
    /// Adds `ns` to `term`.
    #[inline]
    pub fn add(&mut self, term: PathTerm, ns: u64) {
        self.ns[term.index()] += ns;
    }

    /// The nanoseconds of one term.
    pub fn ns(&self, term: PathTerm) -> u64 {
        self.ns[term.index()]
    }

    /// The sum of every term: the time walked.
    pub fn total_ns(&self) -> u64 {
        self.ns.iter().sum()
    }

    /// The terms with time on them, in path order: (term, ns).
    pub fn nonzero(&self) -> impl Iterator<Item = (PathTerm, u64)> + '_ {
        PathTerm::ALL
            .into_iter()
            .map(|t| (t, self.ns(t)))
            .filter(|(_, ns)| *ns > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_index_in_order_and_add_up() {
        for (i, t) in PathTerm::ALL.into_iter().enumerate() {
            assert_eq!(t.index(), i, "{t:?}");
        }
        let mut p = CriticalPath::default();
        p.add(PathTerm::IcrDelivery, 428);
        p.add(PathTerm::HalfSwitch, 700);
        p.add(PathTerm::IcrDelivery, 428);
        assert_eq!(p.ns(PathTerm::IcrDelivery), 856);
        assert_eq!(p.total_ns(), 1556);
        let terms: Vec<_> = p.nonzero().map(|(t, _)| t).collect();
        assert_eq!(terms, [PathTerm::IcrDelivery, PathTerm::HalfSwitch]);
    }
}
