//! The kernel model, one module per kernel concept, named as a kernel engineer would look for
//! it. Each module holds state and rules that can be tested on their own; `sim` wires them.

pub mod context_tracking;
pub mod cpuidle;
pub mod hrtimer;
pub mod sched;
pub mod tick;
pub mod timekeeping;
pub mod timer_wheel;
