//! `host why`: why did each CPU take timer interrupts, and how long was its tick stopped?
//!
//! **With tracing** (root and tracefs): a private instance (`probe/tracefs.rs`) records
//! `irq_vectors:local_timer_entry/exit` (x86), `timer:hrtimer_expire_entry`,
//! `timer:tick_stop`, `power:cpu_idle` and `sched:sched_switch` for the window, on the
//! `mono` trace clock. [`attribute`] then walks each CPU's events in order:
//!
//! * every local timer interrupt is attributed to the hrtimer callbacks that expired inside
//!   it (between its entry and exit events): to the tick if the tick's callback ran (the name
//!   differs across versions, see
//!   [`is_tick_timer_callback`](crate::procfs::is_tick_timer_callback)), else to the first
//!   other callback, else to "no hrtimer expired";
//! * hrtimer callbacks outside a local timer interrupt (soft hrtimers run from softirq, or
//!   the low-res tick path) are counted separately;
//! * **tick-stopped time** is a state machine started from `.tick_stopped` in a
//!   `/proc/timer_list` read just before tracing: a `tick_stop` event with `success=1` stops
//!   the tick; a switch away from the idle task restarts it (the idle-exit path restarts a
//!   stopped tick on CPUs that are not `nohz_full`); a `tick_stop` with `success=0` (full
//!   dynticks: the tick could not stop because of the printed dependency) marks it running.
//!   `cpu_idle` events give the number of idle entries.
//! * **tasks**: the CPU's current task is the task column of its events (the kernel records
//!   every event under the task current on that CPU) and the `sched_switch` events between
//!   them; each task's share of the window is the time it was current, so a switch the trace
//!   lost shows as the old task running until the next event names the new one;
//! * **who armed a timer**: an `hrtimer_start` event is recorded under the task that armed
//!   the timer (from an interrupt, the interrupted one); every later expiry of that timer
//!   address, on any CPU, is attributed to that task (`hrtimer_wakeup` is a sleeping task's
//!   own timer, armed from its own context).
//!
//! **Without tracing** the window is covered by sampling `/proc/timer_list` every
//! [`SAMPLE_PERIOD`] (root only): the stopped fraction is the share of samples with
//! `.tick_stopped: 1` and the hrtimers are the ones seen queued — no per-interrupt
//! attribution. Without root only the `/proc/interrupts` counts remain. The report says
//! which method was used and what is missing.
//!
//! Files: `report.rs` holds the options, the report and the errors; `attribute.rs` the pure
//! attribution of a trace ([`attribute`], [`gap_stopped_ns`], [`tick_period_from_trace`]);
//! [`conclude`] the one sentence each CPU's block starts with; `observe.rs` the live observation ([`observe`]: tracing, or the sampling fallback);
//! `screen.rs` the report as text (`Display`); `chrome_trace.rs` the timeline export
//! (`--trace`).

mod attribute;
pub mod chrome_trace;
pub mod conclude;
mod observe;
mod report;
mod screen;

pub use attribute::{attribute, gap_stopped_ns, tick_period_from_trace};
pub use observe::observe;
pub use report::{
    ARMED_BEFORE, ArmedTimers, Conclusion, CpuWhy, EVENTS, NO_HRTIMER, SAMPLE_PERIOD, TaskShare,
    WhyError, WhyOptions, WhyReport,
};
