//! What a kernel command line means for the tick: [`TickConfig::resolve`].
//!
//! [`TickConfig::resolve`] turns a parsed [`KernelCmdline`], together with the kernel build
//! ([`KernelBuild`]) and the CPU count, into the effective tick configuration plus the
//! messages the kernel would print at boot. See its documentation for the rules and the boot
//! messages. The messages use the kernel's wording; ticklab's own remarks are marked
//! [`MessageOrigin::Ticklab`]. [`TickConfig::role`] names each CPU's [`CpuRole`].

use crate::cpulist::{ALL_SINCE, LAST_CPU_N_SINCE};
use crate::cpuset::CpuSet;
use crate::messages::{BootMessage, MessageOrigin};
use crate::params::{
    CpulistArg, HaltpollParams, HousekeepingArg, IdleOverride, IsolcpusFlag, KernelCmdline,
    RcuNocbsArg,
};
use serde::{Deserialize, Serialize};

/// How the tick configuration treats a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuRole {
    /// Housekeeping CPU that holds (or held) the timekeeping duty.
    Timekeeping,
    /// Other housekeeping CPU.
    Housekeeping,
    /// Full dynticks (nohz_full) CPU.
    NohzFull,
}

/// The kernel's tick build option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NohzBuild {
    /// `CONFIG_HZ_PERIODIC`: every CPU ticks at HZ, always.
    Periodic,
    /// `CONFIG_NO_HZ_IDLE`: idle CPUs may stop their tick.
    Idle,
    /// `CONFIG_NO_HZ_FULL`: also full dynticks for `nohz_full=` CPUs.
    Full,
}

/// What the kernel was built with, as far as the command line's meaning depends on it.
///
/// The architecture is assumed to be a typical x86-64 distribution build: irq_work
/// self-IPIs available, `CONFIG_PM_SLEEP_SMP=y` without `PM_SLEEP_SMP_NONZERO_CPU` (so the
/// boot CPU is always removed from `nohz_full`), `CONFIG_RCU_NOCB_CPU=y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelBuild {
    /// Tick build option.
    pub nohz: NohzBuild,
    /// `CONFIG_HIGH_RES_TIMERS`.
    pub high_res: bool,
    /// Mainline version `(major, minor)`, e.g. `(6, 10)`.
    pub version: (u32, u32),
    /// A vendor build that carries `skew_tick=` back to a kernel older than 3.4 (as the
    /// server kernel of experiment E2 did).
    pub skew_tick_backport: bool,
}

/// The effective tick configuration of a boot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickConfig {
    /// Dyntick-idle active: the build has NO_HZ_COMMON and `nohz=off` was not given. When
    /// false no CPU ever stops its tick, nohz_full ones included.
    pub nohz_idle: bool,
    /// Effective full-dynticks CPUs (after the boot-CPU rule). They keep context tracking and
    /// RCU offloading even when `nohz_idle` is false, but then cannot stop their tick.
    pub nohz_full: CpuSet,
    /// Possible CPUs minus `nohz_full` (tick housekeeping).
    pub housekeeping: CpuSet,
    /// CPUs isolated from scheduler domains (`isolcpus=` with `domain` or no flag).
    pub isolated_domain: CpuSet,
    /// The `HK_TYPE_TIMER` mask: CPUs that may take other CPUs' unpinned timers
    /// (`get_nohz_timer_target`). `nohz_full=` takes CPUs out of it; `isolcpus=nohz` does
    /// not before the housekeeping types were merged into one (`HK_TYPE_KERNEL_NOISE`, 6.15).
    /// Before 4.15 it is the possible CPUs minus `nohz_full`.
    #[serde(default)]
    pub timer_housekeeping: CpuSet,
    /// CPUs whose RCU callbacks are offloaded; includes the `nohz_full` CPUs.
    pub rcu_nocbs: CpuSet,
    /// `rcu_nocb_poll`: offload kthreads poll instead of being woken.
    pub rcu_nocb_poll: bool,
    /// Per-CPU tick phase offsets (`skew_tick` non-zero).
    pub skew_tick: bool,
    /// High-resolution mode (build has it and not `highres=off`); false means low-res nohz or
    /// periodic.
    pub highres: bool,
    /// `idle=` override.
    pub idle: IdleOverride,
    /// `cpuidle.off=1`: no cpuidle driver, the default idle instruction is used.
    pub cpuidle_off: bool,
    /// `cpuidle.governor=` as given.
    pub governor: Option<String>,
    /// Guest halt-polling parameters (defaults plus overrides).
    pub haltpoll: HaltpollParams,
    /// `cpuidle_haltpoll.force=Y`.
    pub haltpoll_force: bool,
    /// `nohz_full_aggressive` in force: given, dyntick-idle active and `nohz_full` non-empty.
    pub aggressive: bool,
    /// The CPU that initially holds the jiffies duty: the boot CPU (always housekeeping after
    /// the boot-CPU rule), else the first housekeeping CPU.
    pub timekeeping_cpu: u32,
    /// Softlockup watchdog threshold in seconds (default 10; 0 with `nowatchdog`).
    pub watchdog_thresh_s: u32,
    /// `clocksource=` as given.
    pub clocksource: Option<String>,
    /// `intel_idle.max_cstate=` as given.
    pub intel_idle_max_cstate: Option<u32>,
    /// `processor.max_cstate=` as given.
    pub processor_max_cstate: Option<u32>,
}

/// First release in which `isolcpus=nohz` also takes CPUs out of the timers' housekeeping
/// mask: "sched/isolation: Consolidate housekeeping cpumasks that are always equal" folded
/// the tick, timer, RCU, workqueue, misc and kthread types into `HK_TYPE_KERNEL_NOISE`.
/// The release is the one the merge is remembered in; it was not checked against a tag here.
pub(crate) const HK_KERNEL_NOISE: (u32, u32) = (6, 15);

/// Housekeeping kinds touched by a parameter (a reduced version of the kernel's types).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct HkFlags {
    /// Tick (`nohz_full=`, `isolcpus=nohz`).
    tick: bool,
    /// The other kinds `nohz_full=` sets (workqueues, timers, RCU, misc, kthreads).
    noise: bool,
    /// Scheduler domains.
    domain: bool,
    /// Managed interrupts.
    managed_irq: bool,
}

impl HkFlags {
    fn any(self) -> bool {
        self.tick || self.noise || self.domain || self.managed_irq
    }
    fn and(self, o: HkFlags) -> HkFlags {
        HkFlags {
            tick: self.tick && o.tick,
            noise: self.noise && o.noise,
            domain: self.domain && o.domain,
            managed_irq: self.managed_irq && o.managed_irq,
        }
    }
    fn or(self, o: HkFlags) -> HkFlags {
        HkFlags {
            tick: self.tick || o.tick,
            noise: self.noise || o.noise,
            domain: self.domain || o.domain,
            managed_irq: self.managed_irq || o.managed_irq,
        }
    }
}

/// The boot message of a kernel built without `CONFIG_NO_HZ_FULL` given `nohz_full=` or
/// `isolcpus=nohz,...` (from 4.15): the parameter is ignored as a whole. Renderers look for it
/// to say so on a line of its own.
pub const NOHZ_UNSUPPORTED: &str = "Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL";

/// Known cpuidle governors.
const GOVERNORS: [&str; 4] = ["menu", "teo", "ladder", "haltpoll"];

impl TickConfig {
    /// Resolve a parsed command line for a build and CPU count; returns the config and the boot
    /// messages the kernel would print (as Strings, in boot order). boot_cpu is normally 0.
    ///
    /// Rules (docs/kernel-behaviour.md §4.1–4.2, §5, §6, §9):
    ///
    /// * **Housekeeping setup** runs for each `nohz_full=` / `isolcpus=` in line order.
    ///   * Before 3.10 `nohz_full=` does not exist; before 4.15 it is handled by the tick code
    ///     alone (last one wins) and `isolcpus=` takes no flags.
    ///   * From 4.15: a parameter with the tick kind (`nohz_full=`, `isolcpus=nohz,...`) on a
    ///     build without NO_HZ_FULL prints "Housekeeping: nohz unsupported. Build with
    ///     CONFIG_NO_HZ_FULL" and is ignored as a whole (domain isolation included). `all`
    ///     before 5.14 or `N` before 5.12 is "Housekeeping: nohz_full= or isolcpus= incorrect
    ///     CPU range" and ignored (a line read with [`KernelCmdline::parse_for_kernel`] never
    ///     gets here: it is refused at parsing). Housekeeping = possible minus the list; if that is empty the
    ///     boot CPU is kept (with "Housekeeping: must include one present CPU, using boot
    ///     CPU:N" from 5.1 on, for the first such parameter; ≥6.10 also drops the boot CPU from
    ///     the list itself). An empty list is a no-op.
    ///   * The first parameter wins. A later one is compared with it — before 5.18 on the
    ///     single housekeeping mask whatever the flags, from 5.18 only where their kinds
    ///     overlap (i.e. `isolcpus=` has `nohz`) — and, if different, "Housekeeping:
    ///     nohz_full= must match isolcpus=" is printed and the later parameter is dropped
    ///     entirely. So `nohz_full=` is kept when it comes first; when `isolcpus=nohz,...`
    ///     comes first, the kernel keeps that one. (Boundary versions 5.1 and 5.18 are from
    ///     memory of the kernel history, not verified.)
    /// * **Boot-CPU rule** (tick init): with the typical x86 config every version removes the
    ///   boot CPU from nohz_full with "NO_HZ: Clearing N from nohz_full range for
    ///   timekeeping" (3.10–5.0 unconditionally, later because `PM_SLEEP_SMP=y`), then prints
    ///   `NO_HZ: Full dynticks CPUs: <list>.`.
    /// * `nohz=off` (or a periodic build): no dyntick-idle; nohz_full CPUs stay configured
    ///   (context tracking, RCU offload, housekeeping) but never stop their tick, because NOHZ
    ///   mode is never activated on any CPU.
    /// * `nohz_full_aggressive` needs dyntick-idle and a non-empty nohz_full, else it is inert
    ///   (a ticklab note says so).
    /// * `skew_tick`: 0 off, non-zero on (ignored before 3.4). `highres=off`: low-res mode.
    /// * RCU: `rcu_nocbs=` ∪ nohz_full; a list the kernel cannot parse (`all`/`N` too early)
    ///   gives "rcu_nocbs= bad CPU range, all CPUs set" and offloads every CPU.
    ///
    /// * Repeated parameters ([`KernelCmdline::repeated`]): one ticklab note each, with the
    ///   values in line order and the handler's rule. Arguments after `--`
    ///   ([`KernelCmdline::init_args`]): one note that the kernel hands them to init unread.
    ///
    /// Message order: early parameters (`rcu_nocbs`), then housekeeping in line order, then
    /// tick init, then ticklab's notes ([`MessageOrigin::Ticklab`]).
    pub fn resolve(
        cmdline: &KernelCmdline,
        build: &KernelBuild,
        nr_cpus: u32,
        boot_cpu: u32,
    ) -> (TickConfig, Vec<BootMessage>) {
        let mut boot = Boot::new(build, nr_cpus, boot_cpu);
        // The kernel's own order: the early parameter, the `__setup` handlers in line order,
        // then tick init.
        let rcu_nocbs = boot.rcu_nocb_setup(cmdline);
        let (nohz_full_mask, isolated_domain, timer_mask) = if build.version < (4, 15) {
            let (full, isolated) = boot.housekeeping_setup_before_4_15(cmdline);
            (full, isolated, None)
        } else {
            boot.housekeeping_setup(cmdline)
        };
        let nohz_full = boot.tick_nohz_init(nohz_full_mask);
        let mut config = boot.tick_params(cmdline, nohz_full, isolated_domain, rcu_nocbs);
        // From 4.15 the timers' mask is its own (all CPUs unless a parameter of its kind set
        // it); before, tick_params's possible-minus-nohz_full stands.
        if build.version >= (4, 15) {
            config.timer_housekeeping = timer_mask.unwrap_or_else(|| boot.possible.clone());
        }
        boot.cmdline_notes(cmdline);
        (config, boot.messages())
    }

    /// The role of `cpu` in this configuration (for reports).
    pub fn role(&self, cpu: u32) -> CpuRole {
        if cpu == self.timekeeping_cpu {
            CpuRole::Timekeeping
        } else if self.nohz_full.contains(cpu) {
            CpuRole::NohzFull
        } else {
            CpuRole::Housekeeping
        }
    }
}

/// One boot being resolved ([`TickConfig::resolve`]): the build, the possible CPUs, and the
/// messages of each phase, kept apart so they come out in the kernel's order.
struct Boot<'b> {
    build: &'b KernelBuild,
    nr_cpus: u32,
    boot_cpu: u32,
    possible: CpuSet,
    /// Early parameters (`rcu_nocbs=`).
    early: Vec<String>,
    /// The housekeeping `__setup` handlers.
    setup: Vec<String>,
    /// Tick init.
    init: Vec<String>,
    /// ticklab's own notes ([`MessageOrigin::Ticklab`]).
    notes: Vec<String>,
}

impl<'b> Boot<'b> {
    fn new(build: &'b KernelBuild, nr_cpus: u32, boot_cpu: u32) -> Boot<'b> {
        let mut notes = Vec::new();
        let boot_cpu = if boot_cpu < nr_cpus || nr_cpus == 0 {
            boot_cpu
        } else {
            notes.push(format!(
                "boot CPU {boot_cpu} is not a possible CPU (0-{}); using 0",
                nr_cpus - 1
            ));
            0
        };
        Boot {
            build,
            nr_cpus,
            boot_cpu,
            possible: CpuSet::first_n(nr_cpus),
            early: Vec::new(),
            setup: Vec::new(),
            init: Vec::new(),
            notes,
        }
    }

    /// A list this release cannot parse (`all` before 5.14, `N` before 5.12).
    fn too_new(&self, a: &CpulistArg) -> bool {
        let v = self.build.version;
        (a.uses_all() && v < ALL_SINCE) || (a.uses_n() && v < LAST_CPU_N_SINCE)
    }

    /// Restricted to possible CPUs, in case the line was parsed for a different count.
    fn clip(&self, s: &CpuSet) -> CpuSet {
        s.intersection(&self.possible)
    }

    /// `rcu_nocb_setup`: the early `rcu_nocbs=` parameter (nohz_full CPUs join at tick init).
    fn rcu_nocb_setup(&mut self, cmdline: &KernelCmdline) -> CpuSet {
        let Some(RcuNocbsArg::List(a)) = &cmdline.rcu_nocbs else {
            return CpuSet::new();
        };
        if self.too_new(a) {
            self.early
                .push("rcu_nocbs= bad CPU range, all CPUs set".into());
            self.possible.clone()
        } else {
            self.clip(&a.cpus)
        }
    }

    /// `housekeeping_setup` before 4.15: `nohz_full=` belongs to the tick code alone (last
    /// one wins) and `isolcpus=` takes no flags. Returns the nohz_full mask and the
    /// domain-isolated CPUs.
    fn housekeeping_setup_before_4_15(
        &mut self,
        cmdline: &KernelCmdline,
    ) -> (Option<CpuSet>, CpuSet) {
        let v = self.build.version;
        let full_build = self.build.nohz == NohzBuild::Full;
        let mut nohz_full_mask: Option<CpuSet> = None;
        let mut isolated_domain = CpuSet::new();
        for h in &cmdline.housekeeping {
            match h {
                HousekeepingArg::NohzFull(a) => {
                    if v < (3, 10) || !full_build {
                        self.notes.push(format!(
                            "nohz_full={} is not read by this kernel ({}); it goes to init",
                            a.text,
                            if v < (3, 10) {
                                "nohz_full= arrived in 3.10"
                            } else {
                                "built without CONFIG_NO_HZ_FULL"
                            }
                        ));
                    } else if self.too_new(a) {
                        self.setup.push("NO_HZ: Incorrect nohz_full cpumask".into());
                    } else {
                        if nohz_full_mask.is_some() {
                            self.notes.push(format!(
                                "nohz_full= is given again: before 4.15 its handler replaces \
                                 the mask, so nohz_full={} counts",
                                a.text
                            ));
                        }
                        nohz_full_mask = Some(self.clip(&a.cpus));
                    }
                }
                HousekeepingArg::Isolcpus(a) => {
                    if !a.flags.is_empty() || self.too_new(&a.list) {
                        self.notes.push(format!(
                            "isolcpus flags and the words N/all need 4.15 or later; this \
                             kernel ignores isolcpus={}",
                            a.list.text
                        ));
                    } else {
                        isolated_domain = self.clip(&a.list.cpus);
                    }
                }
            }
        }
        (nohz_full_mask, isolated_domain)
    }

    /// The entry points of the housekeeping parameters (`housekeeping_nohz_full_setup`,
    /// `housekeeping_isolcpus_setup`): the kinds a parameter isolates, its CPU list and its
    /// name; unknown `isolcpus=` flags are skipped with the kernel's message.
    fn housekeeping_flags<'h>(
        &mut self,
        h: &'h HousekeepingArg,
    ) -> (HkFlags, &'h CpulistArg, &'static str) {
        match h {
            HousekeepingArg::NohzFull(a) => (
                HkFlags {
                    tick: true,
                    noise: true,
                    ..HkFlags::default()
                },
                a,
                "nohz_full",
            ),
            HousekeepingArg::Isolcpus(a) => {
                for fl in &a.flags {
                    if let IsolcpusFlag::Unknown(u) = fl {
                        self.setup
                            .push(format!("isolcpus: Skipped unknown flag {u}"));
                    }
                }
                (
                    HkFlags {
                        tick: a.nohz(),
                        domain: a.domain(),
                        managed_irq: a.managed_irq(),
                        ..HkFlags::default()
                    },
                    &a.list,
                    "isolcpus",
                )
            }
        }
    }

    /// `housekeeping_setup` from 4.15: one staging mask per housekeeping kind once set
    /// (before 5.18 all kinds share one), the first parameter wins and a later one that
    /// does not match is dropped. Returns the nohz_full mask and the domain-isolated CPUs.
    fn housekeeping_setup(
        &mut self,
        cmdline: &KernelCmdline,
    ) -> (Option<CpuSet>, CpuSet, Option<CpuSet>) {
        let v = self.build.version;
        let mut timer_mask: Option<CpuSet> = None;
        let full_build = self.build.nohz == NohzBuild::Full;
        let boot_cpu = self.boot_cpu;
        let mut nohz_full_mask: Option<CpuSet> = None;
        let mut isolated_domain = CpuSet::new();
        let split_masks = v >= (5, 18);
        let mut set_flags = HkFlags::default();
        let mut masks: Vec<(HkFlags, CpuSet)> = Vec::new();
        for h in &cmdline.housekeeping {
            let (flags, list, name) = self.housekeeping_flags(h);
            if flags.tick && !set_flags.tick && !full_build {
                self.setup.push(NOHZ_UNSUPPORTED.into());
                continue;
            }
            if self.too_new(list) {
                self.setup
                    .push("Housekeeping: nohz_full= or isolcpus= incorrect CPU range".into());
                continue;
            }
            let mut isolated = self.clip(&list.cpus);
            let mut staging = self.possible.difference(&isolated);
            if staging.is_empty() && self.nr_cpus > 0 {
                staging.insert(boot_cpu);
                if v >= (6, 10) {
                    isolated.remove(boot_cpu);
                }
                if !set_flags.any() && v >= (5, 1) {
                    self.setup.push(format!(
                        "Housekeeping: must include one present CPU, using boot CPU:{boot_cpu}"
                    ));
                }
            }
            if isolated.is_empty() {
                continue;
            }
            if set_flags.any() {
                let clash = masks.iter().any(|(kinds, mask)| {
                    let compare = !split_masks || kinds.and(flags).any();
                    compare && *mask != staging
                });
                if clash {
                    self.setup
                        .push("Housekeeping: nohz_full= must match isolcpus=".into());
                    self.notes.push(format!(
                        "the kernel keeps the housekeeping parameter that came first and drops \
                         this {name}={}",
                        list.text
                    ));
                    continue;
                }
            }
            // A repeat of a parameter already in force adds no new mask: without this,
            // `masks` grows with every repeat and each token is compared with all earlier
            // ones (quadratic in the line: 200 000 `nohz_full=1-7` took 54 s).
            if !masks.iter().any(|(k, m)| *k == flags && *m == staging) {
                masks.push((flags, staging.clone()));
            }
            if flags.tick && !set_flags.tick {
                nohz_full_mask = Some(isolated.clone());
            }
            if flags.domain && !set_flags.domain {
                isolated_domain = self.possible.difference(&staging);
            }
            let timer_kind = flags.noise || (flags.tick && v >= HK_KERNEL_NOISE);
            if timer_kind && timer_mask.is_none() {
                timer_mask = Some(staging.clone());
            }
            set_flags = set_flags.or(flags);
        }
        (nohz_full_mask, isolated_domain, timer_mask)
    }

    /// `tick_nohz_init`: the boot-CPU rule and the full-dynticks banner; the effective
    /// nohz_full CPUs.
    fn tick_nohz_init(&mut self, nohz_full_mask: Option<CpuSet>) -> CpuSet {
        let boot_cpu = self.boot_cpu;
        let Some(mut mask) = nohz_full_mask else {
            return CpuSet::new();
        };
        if mask.contains(boot_cpu) {
            self.init.push(format!(
                "NO_HZ: Clearing {boot_cpu} from nohz_full range for timekeeping"
            ));
            mask.remove(boot_cpu);
        }
        self.init
            .push(format!("NO_HZ: Full dynticks CPUs: {}.", mask.to_cpulist()));
        if mask.is_empty() {
            self.notes.push(
                "no CPU is left in nohz_full after the boot-CPU rule; full dynticks is inert"
                    .into(),
            );
        }
        mask
    }

    /// The tick's other parameters (dyntick idle, high-res, skew, aggressive, idle) and the
    /// configuration they make with the CPU sets resolved before.
    fn tick_params(
        &mut self,
        cmdline: &KernelCmdline,
        nohz_full: CpuSet,
        isolated_domain: CpuSet,
        rcu_nocbs: CpuSet,
    ) -> TickConfig {
        let build = self.build;
        let v = build.version;
        let boot_cpu = self.boot_cpu;
        let housekeeping = self.possible.difference(&nohz_full);
        let rcu_nocbs = rcu_nocbs.union(&nohz_full);
        let notes = &mut self.notes;

        // --- Dyntick idle, high-res, skew ------------------------------------------------
        let nohz_idle = build.nohz != NohzBuild::Periodic && cmdline.nohz != Some(false);
        if build.nohz == NohzBuild::Periodic && cmdline.nohz.is_some() {
            notes.push(
                "nohz= has no effect on a CONFIG_HZ_PERIODIC build (the kernel passes it to \
                 init)"
                    .into(),
            );
        }
        if !nohz_idle && build.nohz != NohzBuild::Periodic && !nohz_full.is_empty() {
            notes.push(format!(
                "nohz=off: CPUs {} stay nohz_full (context tracking, RCU offload) but never \
                 stop their tick",
                nohz_full.to_cpulist()
            ));
        }
        let highres = build.high_res && cmdline.highres != Some(false);
        if !build.high_res && cmdline.highres.is_some() {
            notes.push("highres= has no effect without CONFIG_HIGH_RES_TIMERS".into());
        }
        let mut skew_tick = cmdline.skew_tick.is_some_and(|s| s != 0);
        if skew_tick && v < (3, 4) && !build.skew_tick_backport {
            notes.push("skew_tick= arrived in 3.4; this kernel passes it to init".into());
            skew_tick = false;
        }

        // --- Aggressive (2023 RFC) -------------------------------------------------------
        let asked = cmdline.nohz_full_aggressive == Some(true);
        let aggressive = asked && nohz_idle && !nohz_full.is_empty();
        if asked && !aggressive {
            let why = if !nohz_idle {
                "dyntick-idle is off, so no CPU stops its tick anyway"
            } else {
                "there are no nohz_full CPUs, so the timekeeping CPU already stops its idle tick \
                 under plain NO_HZ_IDLE rules"
            };
            notes.push(format!("nohz_full_aggressive accepted but inert: {why}"));
        }

        // --- Idle ------------------------------------------------------------------------
        let idle = cmdline.idle.unwrap_or_default();
        let haltpoll_force = cmdline.cpuidle_haltpoll_force.unwrap_or(false);
        if haltpoll_force && idle != IdleOverride::Default {
            notes.push("cpuidle-haltpoll does not load when an idle= override is given".into());
        }
        if let Some(g) = &cmdline.cpuidle_governor
            && !GOVERNORS.contains(&g.as_str())
        {
            notes.push(format!(
                "cpuidle.governor={g} names no known governor; the kernel keeps its default"
            ));
        }

        let timekeeping_cpu = if housekeeping.contains(boot_cpu) {
            boot_cpu
        } else {
            housekeeping.first().unwrap_or(boot_cpu)
        };

        TickConfig {
            nohz_idle,
            timer_housekeeping: housekeeping.clone(),
            nohz_full,
            housekeeping,
            isolated_domain,
            rcu_nocbs,
            rcu_nocb_poll: cmdline.rcu_nocb_poll,
            skew_tick,
            highres,
            idle,
            cpuidle_off: cmdline.cpuidle_off.unwrap_or(false),
            governor: cmdline.cpuidle_governor.clone(),
            haltpoll: cmdline.haltpoll.apply(),
            haltpoll_force,
            aggressive,
            timekeeping_cpu,
            watchdog_thresh_s: if cmdline.nowatchdog {
                0
            } else {
                cmdline.watchdog_thresh.unwrap_or(10)
            },
            clocksource: cmdline.clocksource.clone(),
            intel_idle_max_cstate: cmdline.intel_idle_max_cstate,
            processor_max_cstate: cmdline.processor_max_cstate,
        }
    }

    /// ticklab's notes on the line itself: arguments after `--`, repeated parameters.
    fn cmdline_notes(&mut self, cmdline: &KernelCmdline) {
        if !cmdline.init_args.is_empty() {
            self.notes.push(format!(
                "the kernel stops reading parameters at `--` and hands the rest to init \
                 unread: {}",
                cmdline.init_args.join(" ")
            ));
        }
        for r in &cmdline.repeated {
            self.notes.push(format!(
                "{} is given {} times ({}): {}",
                r.name,
                r.values.len(),
                r.values.join(", "),
                r.rule
            ));
        }
    }

    /// The messages in boot order: early parameters, housekeeping, tick init, then notes.
    fn messages(self) -> Vec<BootMessage> {
        let kernel = |text: String| BootMessage {
            origin: MessageOrigin::Kernel,
            text,
        };
        let mut messages: Vec<BootMessage> = self.early.into_iter().map(kernel).collect();
        messages.extend(self.setup.into_iter().map(kernel));
        messages.extend(self.init.into_iter().map(kernel));
        messages.extend(self.notes.into_iter().map(|text| BootMessage {
            origin: MessageOrigin::Ticklab,
            text,
        }));
        messages
    }
}

#[cfg(test)]
mod tests;
