//! The kernel model, one module per kernel concept, named as a kernel engineer would look for
//! it. Each module owns its state and the rules that change it: fields are private, the
//! decisions are methods (stop the tick, hand over the duty, re-arm after an expiry pass, may
//! the idle tick stop), invariants are written beside the code and `debug_assert!`ed, and
//! table tests pin each rule at its boundaries. `crate::sim` wires the modules together and
//! never writes their fields.
//!
//! * `hrtimer` — per-CPU hrtimer bases, the expiry order, forwarding, and
//!   `hrtimer_interrupt`'s re-arm/retry/hang decision (`HrtimerCpuBase::rearm`).
//! * [`tick`] — tick-sched: `TickSched::stop` / `restart` (keeping the phase), the skew offset,
//!   `tick_nohz_next_event` and the idle-stop gate, both in `NohzMode`, the one place that
//!   knows `nohz_full_aggressive`.
//! * [`timekeeping`] — jiffies, the duty CPU and its hand-over (`take_duty_if_free`,
//!   `on_tick_stop`), staleness statistics.
//! * [`timer_wheel`] — the timer wheel; [`cpuidle`] — idle states and governors.
//! * [`kvm`] — the KVM host under a guest: exits by reason and their costs, host halt polling
//!   (grow/shrink), waking a blocked vCPU, host CPU time per path (E3).
//! * `sched` — run queues and the SCHED tick dependency; `context_tracking` — the cost of
//!   user/kernel transitions on nohz_full CPUs.

pub(crate) mod context_tracking;
pub mod cpuidle;
pub(crate) mod hrtimer;
pub mod kvm;
pub(crate) mod sched;
pub mod tick;
pub mod timekeeping;
pub mod timer_wheel;
