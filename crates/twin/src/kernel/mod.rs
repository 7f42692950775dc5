//! The kernel model, one module per kernel concept, named as a kernel engineer would look for
//! it. Each module owns its state and the rules that change it: fields are private, the
//! decisions are methods (stop the tick, hand over the duty, re-arm after an expiry pass, may
//! the idle tick stop), invariants are written beside the code and `debug_assert!`ed, and
//! table tests pin each rule at its boundaries. `crate::sim` wires the modules together and
//! never writes their fields.
//!
//! * `hrtimer` — per-CPU hrtimer bases, the expiry order, forwarding, and
//!   `hrtimer_interrupt`'s re-arm/retry/hang decision (`HrtimerCpuBase::rearm`).
//! * [`tick_sched`] — tick-sched (`kernel/time/tick-sched.c`): `TickSched::stop` / `restart` (keeping the phase), the skew offset,
//!   `tick_nohz_next_event` and the idle-stop gate, both in `NohzMode`, the one place that
//!   knows `nohz_full_aggressive`.
//! * [`timekeeping`] — jiffies, the duty CPU and its hand-over (`take_duty_if_free`,
//!   `on_tick_stop`), staleness statistics.
//! * `timer_migration` — where an unpinned timer is queued when armed (the nohz timer
//!   target, the hrtimer's remote check, the wheel's pull model).
//! * [`timer_wheel`] — the timer wheel; [`cpuidle`] — idle states and governors; [`idle`] —
//!   the idle loop's tick rule when no cpuidle driver is registered.
//! * [`kvm`] — the KVM host under a guest: exits by reason and their costs, host halt polling
//!   (grow/shrink), waking a blocked vCPU, host CPU time per path (E3).
//! * [`sched_balance`] — which ticks raise `SCHED_SOFTIRQ` (the periodic load balance's
//!   interval by domain size and HZ) and when a busy tick kicks the idle load balancer;
//!   [`softirq`] — where a raised softirq runs (at interrupt exit, or in the CPU's thread on
//!   PREEMPT_RT, which ends an idle CPU's idle loop).
//! * `sched` — run queues, the SCHED tick dependency and the busy tick's deferment limit;
//!   `context_tracking` — the cost of user/kernel transitions, by CPU and kernel version.
//! * [`hrtimer_bench`] — start / cancel / expire cycles on the hrtimer bases for the
//!   instruction-count benchmark (`scripts/hrtimer-callgrind.sh`); [`cpupri_bench`] — a
//!   burst of `cpupri_set` calls on 64 CPUs for the criterion `hot` group, and
//!   [`nohz_balance_bench`] one of nohz idle entries and exits and one of busy ticks' kick
//!   checks; [`rcu_bench`] a run of 64 CPUs' ticks through RCU's grace-period work;
//!   [`timekeeping_bench`] one through the jiffies update and its seqlock.
//! * Shared lines of the 3.0 era (docs/model.md "E2 mechanisms"): `rcu` — grace periods on
//!   the leaf `rcu_node` lock; `cpupri` — the RT priority vectors and the overload count;
//!   `loadavg` — the `LOAD_FREQ` fold; `nohz_balance` — the nohz masks, the idle-balance
//!   pick slots and RCU's dynticks counter.

pub(crate) mod context_tracking;
pub mod cpuidle;
pub(crate) mod cpupri;
pub mod cpupri_bench;
pub(crate) mod hrtimer;
pub mod hrtimer_bench;
pub mod idle;
pub mod kvm;
pub(crate) mod loadavg;
pub(crate) mod nohz_balance;
pub mod nohz_balance_bench;
pub(crate) mod rcu;
pub mod rcu_bench;
pub(crate) mod sched;
pub mod sched_balance;
pub mod softirq;
pub mod tick_sched;
pub mod timekeeping;
pub mod timekeeping_bench;
pub(crate) mod timer_migration;
pub mod timer_wheel;
