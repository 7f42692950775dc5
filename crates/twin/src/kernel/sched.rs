//! Scheduler basics: what is runnable on a CPU and whether that needs the tick.

/// A scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedClass {
    /// SCHED_OTHER (CFS/EEVDF).
    Fair,
    /// SCHED_FIFO.
    Fifo,
}

/// Runnable tasks on one CPU, by class.
///
/// Invariant: a task leaves only a class it was enqueued in (no count goes below 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RunQueue {
    /// SCHED_OTHER tasks.
    nr_fair: u32,
    /// SCHED_FIFO tasks.
    nr_fifo: u32,
    /// SCHED_RR tasks.
    nr_rr: u32,
    /// SCHED_DEADLINE tasks.
    nr_dl: u32,
}

impl RunQueue {
    fn count(&mut self, class: SchedClass) -> &mut u32 {
        match class {
            SchedClass::Fair => &mut self.nr_fair,
            SchedClass::Fifo => &mut self.nr_fifo,
        }
    }

    /// A task of `class` becomes runnable.
    #[inline]
    pub(crate) fn enqueue(&mut self, class: SchedClass) {
        *self.count(class) += 1;
    }

    /// A runnable task of `class` sleeps or exits.
    #[inline]
    pub(crate) fn dequeue(&mut self, class: SchedClass) {
        let n = self.count(class);
        debug_assert!(*n > 0, "dequeue from an empty {class:?} queue");
        *n -= 1;
    }

    /// The SCHED tick-dependency rule (`sched_can_stop_tick`): a deadline task needs the tick;
    /// more than one RR task needs it (one can stop); otherwise any FIFO task can stop; otherwise
    /// more than one fair task needs it.
    #[inline]
    pub(crate) fn can_stop_tick(&self) -> bool {
        if self.nr_dl > 0 {
            return false;
        }
        if self.nr_rr > 0 {
            return self.nr_rr == 1;
        }
        if self.nr_fifo > 0 {
            return true;
        }
        self.nr_fair <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sched_dependency_table() {
        let rq = |fair, fifo, rr, dl| RunQueue {
            nr_fair: fair,
            nr_fifo: fifo,
            nr_rr: rr,
            nr_dl: dl,
        };
        // (runqueue, can stop)
        let cases = [
            (rq(0, 0, 0, 0), true),
            (rq(1, 0, 0, 0), true),
            (rq(2, 0, 0, 0), false),
            (rq(0, 0, 0, 1), false),
            (rq(0, 0, 1, 0), true),
            (rq(0, 0, 2, 0), false),
            (rq(3, 0, 1, 0), true), // one RR task runs; fair tasks wait behind it
            (rq(0, 2, 0, 0), true),
            (rq(5, 1, 0, 0), true),
        ];
        for (q, want) in cases {
            assert_eq!(q.can_stop_tick(), want, "{q:?}");
        }
    }

    #[test]
    fn enqueue_dequeue_table() {
        let mut q = RunQueue::default();
        // (operation, can stop the tick after)
        let steps = [
            (Some(SchedClass::Fair), true),
            (Some(SchedClass::Fair), false), // two fair tasks
            (Some(SchedClass::Fifo), true),  // a FIFO task runs, fair ones wait
            (None, false),                   // the FIFO task sleeps
        ];
        for (op, want) in steps {
            match op {
                Some(c) => q.enqueue(c),
                None => q.dequeue(SchedClass::Fifo),
            }
            assert_eq!(q.can_stop_tick(), want, "{q:?}");
        }
    }
}
