//! Scheduler basics: what is runnable on a CPU and whether that needs the tick.

/// Runnable tasks on one CPU, by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunQueue {
    /// SCHED_OTHER tasks.
    pub nr_fair: u32,
    /// SCHED_FIFO tasks.
    pub nr_fifo: u32,
    /// SCHED_RR tasks.
    pub nr_rr: u32,
    /// SCHED_DEADLINE tasks.
    pub nr_dl: u32,
}

impl RunQueue {
    /// Total runnable.
    #[inline]
    pub fn nr_running(&self) -> u32 {
        self.nr_fair + self.nr_fifo + self.nr_rr + self.nr_dl
    }

    /// The SCHED tick-dependency rule (`sched_can_stop_tick`): a deadline task needs the tick;
    /// more than one RR task needs it (one can stop); otherwise any FIFO task can stop; otherwise
    /// more than one fair task needs it.
    #[inline]
    pub fn can_stop_tick(&self) -> bool {
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
}
