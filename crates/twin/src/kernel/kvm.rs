//! The KVM host under a guest: VM exits by reason and what they cost, the host's handling of
//! a halted vCPU (halt polling with its grow/shrink rule, else block), waking a blocked vCPU,
//! and the host CPU time each path burns (docs/kernel-behaviour.md §9.4–9.5, docs/costs.md
//! §3b).
//!
//! # Design note
//!
//! The guest sees the host only through exits: an instruction the hypervisor intercepts (HLT,
//! a write to the TSC-deadline MSR or to the x2APIC ICR) or an interrupt for the host
//! (external interrupt) stops the vCPU, the host handles it, and re-enters. Each exit is
//! charged as a round trip from [`KvmCosts`]; the model counts them per [`ExitReason`].
//!
//! A halted vCPU ([`HostHaltPoll`]): after the HLT exit the host polls for up to the vCPU's
//! poll window (`vcpu->halt_poll_ns`) if host polling is on and the guest has not switched it
//! off through the poll-control MSR (the cpuidle-haltpoll driver does, §9.4); an interrupt
//! arriving within the window re-enters the guest at once. Otherwise the vCPU thread blocks
//! and must be woken through the host scheduler ([`HostCpuIdle`]). After every halt the
//! window adapts from the whole halt time (poll included), by the rule of the 4.x kernels
//! the 2017 experiment ran on: a halt within the window changes nothing; a halt longer than
//! `halt_poll_ns` shrinks a non-zero window (÷ shrink, 0 when shrink is 0); a shorter halt
//! grows it (× grow, from `grow_start` when 0, capped at `halt_poll_ns`). Newer kernels also
//! drop a shrunk window below `grow_start` to 0; that is not modelled.
//!
//! Waking a blocked vCPU ([`HostCpuIdle`]): once its thread has blocked, the vCPU's host CPU
//! is idle under the host's own cpuidle governor, which picks a state from the host's C-state
//! table like on any idle CPU. The waker (the ICR-write handler on the other host CPU) runs
//! `try_to_wake_up`, which skips the reschedule IPI when the target's idle task has its
//! polling flag set (`set_nr_and_not_polling`): in the POLL state, and in every MWAIT state
//! of `intel_idle` (MWAIT monitors the thread flags). So the wake costs the IPI only for a
//! non-polling state (e.g. ACPI HLT), plus the state's exit latency, plus the switch from the
//! host idle task to the vCPU thread ([`KvmCosts::host_switch_ns`]).
//!
//! Host CPU time: a vCPU's thread burns host CPU whenever it is not blocked — guest code
//! (tasks, guest idle polling), exit handling, host halt polling. [`VcpuHostTime`] keeps the
//! parts apart, so that "host polling burns host CPU but not guest CPU" is visible.

use super::cpuidle::{
    Governor, IdleStateParams, Menu, Reflect, SelectInput, default_poll_limit_ns,
};

/// Why a vCPU left guest mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// The guest executed HLT (its idle instruction).
    Hlt,
    /// A write to `IA32_TSC_DEADLINE`: the guest programmed its clock event device.
    MsrTscDeadline,
    /// A write to the x2APIC ICR: the guest sent an IPI.
    MsrIcr,
    /// An interrupt for the host arrived while the vCPU ran (e.g. the host's kick IPI).
    ExternalInterrupt,
}

impl ExitReason {
    /// Every reason, in table order.
    pub const ALL: [ExitReason; 4] = [
        ExitReason::Hlt,
        ExitReason::MsrTscDeadline,
        ExitReason::MsrIcr,
        ExitReason::ExternalInterrupt,
    ];

    /// Short name for tables (`hlt`, `msr_tsc_deadline`, `msr_icr`, `ext_int`).
    pub fn name(self) -> &'static str {
        match self {
            ExitReason::Hlt => "hlt",
            ExitReason::MsrTscDeadline => "msr_tsc_deadline",
            ExitReason::MsrIcr => "msr_icr",
            ExitReason::ExternalInterrupt => "ext_int",
        }
    }

    /// Index into [`ExitReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Costs of the host paths, in nanoseconds. Every value names its source in the preset that
/// builds it ([`KvmCosts::skylake_2017`]) or in the calibration that measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvmCosts {
    /// A bare VM exit plus re-entry (the world switch alone, no handling).
    pub exit_entry_ns: u64,
    /// A whole MSR-write exit (TSC deadline or ICR): exit, handling, re-entry.
    pub msr_write_exit_ns: u64,
    /// From the guest's ICR write to the IPI pending at the target vCPU (inside that exit).
    pub icr_delivery_ns: u64,
    /// A reschedule IPI to the blocked vCPU's host CPU, paid only when that CPU's idle state
    /// does not keep the polling flag set ([`HostCpuIdle`]).
    pub host_ipi_ns: u64,
    /// The host CPU, out of its idle state, switches from its idle task to the vCPU thread,
    /// which returns from its block into the run loop (host scheduler work).
    pub host_switch_ns: u64,
    /// Host CPU time to block a halted vCPU (schedule away from its thread).
    pub host_block_ns: u64,
    /// An external-interrupt exit while the vCPU runs (the host's timer for the guest's TSC
    /// deadline fires): exit, host handling, injection, entry.
    pub ext_int_exit_ns: u64,
}

impl KvmCosts {
    /// Clock assumed for converting published cycle counts: the publication of the 2017
    /// experiment does not name its host; 2.5 GHz is the Skylake server of the §3b IPI rows
    /// (docs/costs.md §3b). **E**.
    pub const ASSUMED_GHZ: f64 = 2.5;

    /// The host of the published 2017 experiment as far as docs/costs.md §3b describes such a
    /// host. None of these values is fitted to the experiment's results.
    pub fn skylake_2017() -> KvmCosts {
        let cycles = |c: f64| (c / Self::ASSUMED_GHZ).round() as u64;
        // M (AMD SVM VMRUN round trip 1344–1376 cycles, §3b), D at the assumed clock: 1360
        // cycles → 544 ns.
        let exit_entry_ns = cycles(1360.0);
        // E (§3b: MSR-write exit round trip 1000–2500 cycles on recent Intel VMX; no direct
        // number): the middle, 1750 cycles → 700 ns.
        let msr_write_exit_ns = cycles(1750.0);
        KvmCosts {
            exit_entry_ns,
            msr_write_exit_ns,
            // D: the IPI is made pending at the end of the handler: the exit's half of the
            // world switch plus the handling (whole exit − bare round trip) = 272 + 156.
            icr_delivery_ns: exit_entry_ns / 2 + (msr_write_exit_ns - exit_entry_ns),
            // E: a native IPI (< 1 µs, §3a; the project's `ipi_ns` 700). Paid only if the
            // host CPU's idle state does not poll the flag (HostCpuIdle).
            host_ipi_ns: 700,
            // E: the switch from the host's idle task to the vCPU thread: the §3a same-CPU
            // switch (1.4 µs, E) minus the two ~150 ns syscalls it includes (§2): 1.1 µs.
            // The host C-state exit is not in it: it comes from the host's state table.
            host_switch_ns: 1100,
            // E: the switch away from the vCPU thread, same 1.1 µs (host CPU only: the guest
            // is halted meanwhile).
            host_block_ns: 1100,
            // M: host time per external-interrupt exit, `perf kvm stat` average 0.71 µs on a
            // Skylake server (docs/costs.md §1).
            ext_int_exit_ns: 710,
        }
    }

    /// The rows of a cost table: (name, ns), for reports.
    pub fn rows(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("vm exit + entry (bare)", self.exit_entry_ns),
            ("msr-write exit (tsc deadline, icr)", self.msr_write_exit_ns),
            ("icr write → ipi pending", self.icr_delivery_ns),
            ("host ipi to a non-polling idle cpu", self.host_ipi_ns),
            ("host switch idle task → vcpu thread", self.host_switch_ns),
            ("host block of a halted vcpu", self.host_block_ns),
            (
                "external-interrupt exit (guest timer)",
                self.ext_int_exit_ns,
            ),
        ]
    }
}

/// Host-side halt-polling parameters (module `kvm`; §9.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostHaltPollParams {
    /// `halt_poll_ns`: the cap of every vCPU's window; 0 switches host polling off.
    pub halt_poll_ns: u64,
    /// `halt_poll_ns_grow` (2).
    pub grow: u64,
    /// `halt_poll_ns_grow_start` (10 µs).
    pub grow_start: u64,
    /// `halt_poll_ns_shrink` (0 in the 4.x kernels: reset to 0).
    pub shrink: u64,
}

impl HostHaltPollParams {
    /// Host polling off (`halt_poll_ns=0`).
    pub fn off() -> Self {
        Self::with_max(0)
    }

    /// The host kernel's default: `halt_poll_ns` = `KVM_HALT_POLL_NS_DEFAULT` on x86,
    /// 200 000 ns (C, docs/costs.md §3b), with the 4.x grow/shrink defaults. For a ping-pong
    /// whose halts last microseconds any cap of 10 µs or more behaves the same.
    pub fn kvm_default() -> Self {
        Self::with_max(200_000)
    }

    /// The 4.x defaults (grow 2, grow start 10 µs, shrink 0, C: docs/costs.md §3b) with the
    /// given `halt_poll_ns`.
    pub fn with_max(halt_poll_ns: u64) -> Self {
        HostHaltPollParams {
            halt_poll_ns,
            grow: 2,
            grow_start: 10_000,
            shrink: 0,
        }
    }
}

/// One vCPU's host halt-polling window.
///
/// Invariant: the window never exceeds `halt_poll_ns` and is 0 when host polling is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostHaltPoll {
    params: HostHaltPollParams,
    window_ns: u64,
}

impl HostHaltPoll {
    /// A vCPU as created: window 0.
    pub fn new(params: HostHaltPollParams) -> Self {
        HostHaltPoll {
            params,
            window_ns: 0,
        }
    }

    /// How long the host polls after the next HLT exit.
    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// Adapts the window after a halt that lasted `halt_ns` in all (poll included).
    pub fn after_halt(&mut self, halt_ns: u64) {
        let p = &self.params;
        if p.halt_poll_ns == 0 {
            self.window_ns = 0;
        } else if halt_ns <= self.window_ns {
            // Within the window: nothing to learn.
        } else if self.window_ns > 0 && halt_ns > p.halt_poll_ns {
            self.window_ns = match p.shrink {
                0 => 0,
                s => self.window_ns / s,
            };
        } else if self.window_ns < p.halt_poll_ns && halt_ns < p.halt_poll_ns {
            self.window_ns = if p.grow == 0 {
                self.window_ns
            } else if self.window_ns == 0 {
                p.grow_start
            } else {
                self.window_ns.saturating_mul(p.grow)
            }
            .min(p.halt_poll_ns);
        }
        debug_assert!(self.window_ns <= self.params.halt_poll_ns);
    }
}

/// Which menu rule the host kernel applies between POLL and C1 (docs/kernel-behaviour.md §9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostMenuRule {
    /// Linux 4.x before 4.17 (the 2017 hosts): menu starts its search at C1, not POLL, unless
    /// the next timer is within max(20 µs, C1's target residency) or the PM QoS limit is below
    /// C1's exit latency. A short predicted idle therefore still gets C1.
    Linux4x,
    /// Later kernels (the twin's [`Menu`], 5.4–5.10 rules): POLL is left for a real state only
    /// if that state's exit latency is within the latency bound, which is capped by the
    /// predicted idle while the tick runs; a prediction shorter than C1's exit latency polls.
    Current,
}

/// The host CPU under a vCPU: its cpuidle states and how the governor picks among them.
#[derive(Debug, Clone, PartialEq)]
pub struct HostIdleParams {
    /// The host driver's states, shallowest first (state 0 POLL on x86).
    pub states: Vec<IdleStateParams>,
    /// The driver enters its non-POLL states with MWAIT on the idle task's flags
    /// (`intel_idle`, `mwait_idle_with_hints`), which keeps the polling flag set: a waker
    /// writing NEED_RESCHED wakes the CPU without an IPI. False for HLT-based states.
    pub mwait: bool,
    /// The host menu governor's rule at the POLL/C1 boundary.
    pub rule: HostMenuRule,
    /// The host's tick period.
    pub tick_period_ns: u64,
}

impl HostIdleParams {
    /// The host assumed for the 2017 publication (which names none): a Skylake server with
    /// `intel_idle` (docs/costs.md §4, SKX column, **C**: POLL, C1 2/2 µs, C1E 10/20 µs,
    /// C6 133/600 µs), the 4.x menu governor, HZ=1000 (**E**: the RHEL/CentOS 7 setting).
    pub fn skx_intel_idle_4x() -> Self {
        HostIdleParams {
            states: vec![
                IdleStateParams::poll(),
                IdleStateParams::new("C1", 2_000, 2_000),
                IdleStateParams::new("C1E", 10_000, 20_000),
                IdleStateParams::new("C6", 133_000, 600_000),
            ],
            mwait: true,
            rule: HostMenuRule::Linux4x,
            tick_period_ns: 1_000_000,
        }
    }

    /// The same host with a current menu governor.
    pub fn skx_intel_idle_current() -> Self {
        HostIdleParams {
            rule: HostMenuRule::Current,
            ..Self::skx_intel_idle_4x()
        }
    }

    /// A host whose idle states are unknown (the host of a guest being calibrated): one
    /// state without exit latency that keeps the flag, so that the calibrated
    /// [`KvmCosts::host_switch_ns`] holds the whole wake-up.
    pub fn absorbed() -> Self {
        HostIdleParams {
            states: vec![IdleStateParams::poll()],
            mwait: true,
            rule: HostMenuRule::Current,
            tick_period_ns: 1_000_000,
        }
    }
}

/// How a blocked vCPU's host CPU left idle when the vCPU was woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostWake {
    /// The host idle state it was in (index into [`HostIdleParams::states`]).
    pub state: usize,
    /// The waker had to send a reschedule IPI (the state does not keep the polling flag).
    pub ipi: bool,
    /// From the waker's NEED_RESCHED to the host CPU executing again: IPI (if any) + exit
    /// latency of the state.
    pub latency_ns: u64,
}

/// The host CPU of one vCPU, idle while the vCPU thread is blocked, under the host's menu
/// governor.
///
/// Invariant: `state` indexes `params.states` and is the state entered at `since`.
#[derive(Debug, Clone)]
pub struct HostCpuIdle {
    params: HostIdleParams,
    /// `params.states` with POLL disabled: what the 4.x rule searches when it starts at C1.
    from_c1: Vec<IdleStateParams>,
    menu: Menu,
    state: usize,
    since: u64,
    usage: [u64; super::cpuidle::CPUIDLE_STATE_MAX],
}

impl HostCpuIdle {
    /// A host CPU with a fresh governor. `params.states` must hold 1..=CPUIDLE_STATE_MAX states.
    pub fn new(params: HostIdleParams) -> Self {
        debug_assert!(
            !params.states.is_empty() && params.states.len() <= super::cpuidle::CPUIDLE_STATE_MAX
        );
        let mut from_c1 = params.states.clone();
        if from_c1.len() > 1 {
            from_c1[0].disabled = true;
        }
        HostCpuIdle {
            params,
            from_c1,
            menu: Menu::new(),
            state: 0,
            since: 0,
            usage: [0; super::cpuidle::CPUIDLE_STATE_MAX],
        }
    }

    /// The states and the rule.
    pub fn params(&self) -> &HostIdleParams {
        &self.params
    }

    /// Entries per state so far.
    pub fn usage(&self) -> &[u64] {
        &self.usage[..self.params.states.len()]
    }

    /// The 4.x rule with a quiet host (no timer within 20 µs, no PM QoS limit): the search
    /// starts at C1.
    fn starts_at_c1(&self) -> bool {
        let s = &self.params.states;
        self.params.rule == HostMenuRule::Linux4x && s.len() > 1 && !s[1].disabled && s[0].polling
    }

    fn select(&mut self, t: u64) {
        let tick = self.params.tick_period_ns.max(1);
        let input = SelectInput {
            // A quiet host: no timer but its tick, which keeps running (the prediction is short).
            sleep_length_ns: u64::MAX,
            delta_next_ns: tick - t % tick,
            tick_stopped: false,
            latency_req_ns: u64::MAX,
            tick_period_ns: tick,
            utilized: false,
        };
        let table = if self.starts_at_c1() {
            &self.from_c1
        } else {
            &self.params.states
        };
        self.state = self.menu.select(table, &input).state;
        self.since = t;
        self.usage[self.state] += 1;
        debug_assert!(self.state < self.params.states.len());
    }

    /// The vCPU thread blocked at `t`: the host CPU goes idle.
    pub fn enter(&mut self, t: u64) {
        self.select(t);
    }

    /// NEED_RESCHED is set for the host CPU at `t` (the vCPU is woken): how it leaves idle.
    /// A POLL spin that ran out its limit before `t` re-selects first, as the idle loop does.
    pub fn wake(&mut self, t: u64, costs: &KvmCosts) -> HostWake {
        loop {
            let s = &self.params.states[self.state];
            if !s.polling {
                break;
            }
            let limit = default_poll_limit_ns(&self.params.states, self.params.tick_period_ns);
            let end = self.since.saturating_add(limit);
            if end >= t {
                break;
            }
            let r = Reflect {
                state: self.state,
                residency_ns: limit,
                woken_by_tick: false,
                poll_timed_out: true,
            };
            self.menu.reflect(&self.params.states, &r);
            self.select(end);
        }
        let s = &self.params.states[self.state];
        let ipi = super::sched::wake_needs_ipi(s.polling || self.params.mwait);
        let latency_ns = if ipi { costs.host_ipi_ns } else { 0 } + s.exit_latency_ns;
        let r = Reflect {
            state: self.state,
            residency_ns: t.saturating_sub(self.since) + latency_ns,
            woken_by_tick: false,
            poll_timed_out: false,
        };
        self.menu.reflect(&self.params.states, &r);
        HostWake {
            state: self.state,
            ipi,
            latency_ns,
        }
    }
}

/// Where a vCPU thread's host CPU time went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VcpuHostTime {
    /// Guest mode, the guest running a task (its busy time).
    pub guest_busy_ns: u64,
    /// Guest mode, the guest in its idle loop (polling or between states).
    pub guest_idle_ns: u64,
    /// Handling exits (world switches and handlers).
    pub exits_ns: u64,
    /// Host halt polling.
    pub host_poll_ns: u64,
    /// Blocking and being woken (host scheduler work on the vCPU's pCPU).
    pub host_sched_ns: u64,
}

impl VcpuHostTime {
    /// Host CPU the vCPU thread consumed.
    pub fn host_cpu_ns(&self) -> u64 {
        self.guest_busy_ns
            + self.guest_idle_ns
            + self.exits_ns
            + self.host_poll_ns
            + self.host_sched_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_window_grows_and_shrinks_by_the_4x_rule() {
        let p = HostHaltPollParams::with_max(30_000);
        // (window before, halt length, window after)
        let table = [
            (0, 5_000, 10_000),       // short halt from 0: grow_start
            (10_000, 15_000, 20_000), // longer than the window, under the cap: ×2
            (20_000, 25_000, 30_000), // ×2 capped at halt_poll_ns
            (30_000, 29_000, 30_000), // within the window: unchanged
            (30_000, 40_000, 0),      // longer than halt_poll_ns: shrink 0 resets
            (0, 40_000, 0),           // a long halt with window 0: stays 0
            (10_000, 30_000, 10_000), // == halt_poll_ns: neither shrink nor grow
        ];
        for (before, halt, after) in table {
            let mut h = HostHaltPoll {
                params: p,
                window_ns: before,
            };
            h.after_halt(halt);
            assert_eq!(h.window_ns(), after, "window {before}, halt {halt}");
        }
        let mut h = HostHaltPoll {
            params: HostHaltPollParams { shrink: 2, ..p },
            window_ns: 20_000,
        };
        h.after_halt(100_000);
        assert_eq!(h.window_ns(), 10_000, "shrink 2 halves");
        let mut off = HostHaltPoll::new(HostHaltPollParams::off());
        off.after_halt(1_000);
        assert_eq!(off.window_ns(), 0, "host polling off never grows");
    }

    /// Blocks the host CPU at 0 and wakes it after `idle_ns`, `n` times.
    fn idle_cycles(h: &mut HostCpuIdle, idle_ns: u64, n: u64) -> HostWake {
        let c = KvmCosts::skylake_2017();
        let mut t = 0;
        let mut w = None;
        for _ in 0..n {
            h.enter(t);
            w = Some(h.wake(t + idle_ns, &c));
            t += idle_ns + 5_000;
        }
        w.expect("n > 0")
    }

    #[test]
    fn host_idle_state_and_ipi_by_rule_and_driver() {
        let hlt_based = HostIdleParams {
            mwait: false,
            ..HostIdleParams::skx_intel_idle_4x()
        };
        // (host, idle length, cycles, state, ipi, latency)
        let table = [
            // 4.x menu starts at C1 with no timer near: C1 even for 1.5 µs idles; MWAIT keeps
            // the polling flag, so no IPI; the wake costs C1's exit latency.
            (
                HostIdleParams::skx_intel_idle_4x(),
                1_500,
                20,
                1,
                false,
                2_000,
            ),
            // Long idles under 4.x: deeper than C1 once menu has learnt them.
            (
                HostIdleParams::skx_intel_idle_4x(),
                50_000,
                20,
                2,
                false,
                10_000,
            ),
            // A current menu caps the latency bound by the prediction: POLL, no latency.
            (
                HostIdleParams::skx_intel_idle_current(),
                1_500,
                20,
                0,
                false,
                0,
            ),
            // An HLT-based C1 (no MWAIT) clears the flag: the waker must send the IPI.
            (hlt_based, 1_500, 20, 1, true, 700 + 2_000),
        ];
        for (i, (p, idle, n, state, ipi, latency)) in table.into_iter().enumerate() {
            let w = idle_cycles(&mut HostCpuIdle::new(p), idle, n);
            assert_eq!(
                (w.state, w.ipi, w.latency_ns),
                (state, ipi, latency),
                "row {i}"
            );
        }
    }

    #[test]
    fn host_poll_that_runs_out_reselects() {
        // A current menu predicting POLL (after short idles) then facing a long idle: each POLL
        // spin ends at its limit (C1E's 20 µs residency) and the CPU re-selects.
        let mut h = HostCpuIdle::new(HostIdleParams::skx_intel_idle_current());
        assert_eq!(idle_cycles(&mut h, 1_500, 20).state, 0);
        let before: u64 = h.usage().iter().sum();
        h.enter(1_000_000);
        let w = h.wake(1_000_000 + 500_000, &KvmCosts::skylake_2017());
        assert!(w.state > 0, "{w:?}");
        // Each timed-out spin is reported as a long idle, so menu leaves POLL within a few.
        let after: u64 = h.usage().iter().sum();
        assert!(
            after >= before + 2 && after <= before + 1 + 8,
            "{before} → {after}"
        );
        // An unknown host absorbs everything: no state latency.
        let mut a = HostCpuIdle::new(HostIdleParams::absorbed());
        assert_eq!(idle_cycles(&mut a, 1_500, 3).latency_ns, 0);
    }

    #[test]
    fn published_host_costs_are_consistent() {
        let c = KvmCosts::skylake_2017();
        assert_eq!(c.exit_entry_ns, 544);
        assert_eq!(c.msr_write_exit_ns, 700);
        assert_eq!(c.icr_delivery_ns, 272 + 156);
        assert!(c.icr_delivery_ns < c.msr_write_exit_ns);
        assert_eq!(ExitReason::ALL.map(ExitReason::index), [0, 1, 2, 3]);
    }

    #[test]
    fn host_cpu_counts_every_unblocked_part() {
        let t = VcpuHostTime {
            guest_busy_ns: 1,
            guest_idle_ns: 2,
            exits_ns: 4,
            host_poll_ns: 8,
            host_sched_ns: 16,
        };
        assert_eq!(t.host_cpu_ns(), 31);
    }
}
