//! Context tracking: what a user/kernel transition costs on a nohz_full CPU.
//!
//! On a CPU in the nohz_full set every transition between user and kernel mode (syscall entry
//! and exit, an interrupt from user mode and its return) pays the RCU extended-quiescent-state
//! update and virtual CPU-time accounting; elsewhere only a static-key test, charged as 0.

use ticklab_schema::machine::Costs;

/// Transitions of a syscall (enter + exit) and of an interrupt taken from user mode.
pub(crate) const TRANSITIONS_PER_ENTRY: u64 = 2;

/// Extra cost of entering and leaving the kernel once (syscall or interrupt from user).
#[inline]
pub(crate) fn transition_overhead(costs: &Costs, nohz_full_cpu: bool) -> u64 {
    if nohz_full_cpu {
        TRANSITIONS_PER_ENTRY * costs.ct_transition_ns
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::machine::xps13_7390;

    #[test]
    fn only_nohz_full_cpus_pay() {
        let c = xps13_7390().costs;
        assert_eq!(transition_overhead(&c, false), 0);
        assert_eq!(transition_overhead(&c, true), 2 * c.ct_transition_ns);
    }
}
