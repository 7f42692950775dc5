//! Tests of [`TickConfig::resolve`]: the housekeeping, boot-CPU, dyntick, aggressive, skew and
//! idle rules across kernel versions and builds, tables at the version boundaries, and a
//! property that every resolved line keeps the configuration's invariants.

use super::*;
use crate::cpulist::parse_cpulist;

/// How a ticklab remark reads when shown.
const TICKLAB_NOTE: &str = "ticklab: ";

fn set(list: &str) -> CpuSet {
    parse_cpulist(list, 1024).unwrap()
}

fn build(nohz: NohzBuild, version: (u32, u32)) -> KernelBuild {
    KernelBuild {
        nohz,
        high_res: true,
        version,
        skew_tick_backport: false,
    }
}

fn resolve(line: &str, nr: u32, b: KernelBuild) -> (TickConfig, Vec<String>) {
    let c = KernelCmdline::parse(line, nr).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let (cfg, msgs) = TickConfig::resolve(&c, &b, nr, 0);
    (cfg, msgs.iter().map(BootMessage::to_string).collect())
}

const FULL_6_10: KernelBuild = KernelBuild {
    nohz: NohzBuild::Full,
    high_res: true,
    version: (6, 10),
    skew_tick_backport: false,
};
// Over 100 lines because it is one table: a row per (line, release) of the boot-CPU rule,
// read top to bottom as the rule's history; split, the releases would no longer sit together.
#[test]
fn boot_cpu_rule_across_versions() {
    struct Case {
        line: &'static str,
        version: (u32, u32),
        boot: u32,
        nohz_full: &'static str,
        housekeeping: &'static str,
        timekeeping: u32,
        messages: &'static [&'static str],
    }
    const MUST0: &str = "Housekeeping: must include one present CPU, using boot CPU:0";
    const CLEAR0: &str = "NO_HZ: Clearing 0 from nohz_full range for timekeeping";
    const FULL17: &str = "NO_HZ: Full dynticks CPUs: 1-7.";
    let cases = [
        // nohz_full=all: ≥6.10 drops the boot CPU in the housekeeping code (no clearing).
        Case {
            line: "nohz_full=all",
            version: (6, 10),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[MUST0, FULL17],
        },
        Case {
            line: "nohz_full=all",
            version: (6, 12),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[MUST0, FULL17],
        },
        // 5.14..6.9: the tick code still has to clear it.
        Case {
            line: "nohz_full=all",
            version: (6, 9),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[MUST0, CLEAR0, FULL17],
        },
        Case {
            line: "nohz_full=all",
            version: (5, 14),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[MUST0, CLEAR0, FULL17],
        },
        // Before 5.14 `all` is not a cpulist word: the kernel rejects the parameter.
        Case {
            line: "nohz_full=all",
            version: (5, 13),
            boot: 0,
            nohz_full: "",
            housekeeping: "0-7",
            timekeeping: 0,
            messages: &["Housekeeping: nohz_full= or isolcpus= incorrect CPU range"],
        },
        Case {
            line: "nohz_full=1-N",
            version: (5, 12),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[FULL17],
        },
        Case {
            line: "nohz_full=1-N",
            version: (5, 11),
            boot: 0,
            nohz_full: "",
            housekeeping: "0-7",
            timekeeping: 0,
            messages: &["Housekeeping: nohz_full= or isolcpus= incorrect CPU range"],
        },
        // Every CPU listed, 5.1..6.9: the warning, then the clearing.
        Case {
            line: "nohz_full=0-7",
            version: (5, 1),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[MUST0, CLEAR0, FULL17],
        },
        // 3.10–5.0: only the clearing message.
        Case {
            line: "nohz_full=0-7",
            version: (5, 0),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[CLEAR0, FULL17],
        },
        Case {
            line: "nohz_full=0-7",
            version: (4, 14),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[CLEAR0, FULL17],
        },
        Case {
            line: "nohz_full=0-7",
            version: (3, 10),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[CLEAR0, FULL17],
        },
        // Boot CPU listed but housekeeping not empty: clearing in every version.
        Case {
            line: "nohz_full=0-3",
            version: (6, 10),
            boot: 0,
            nohz_full: "1-3",
            housekeeping: "0,4-7",
            timekeeping: 0,
            messages: &[CLEAR0, "NO_HZ: Full dynticks CPUs: 1-3."],
        },
        Case {
            line: "nohz_full=0-3",
            version: (4, 19),
            boot: 0,
            nohz_full: "1-3",
            housekeeping: "0,4-7",
            timekeeping: 0,
            messages: &[CLEAR0, "NO_HZ: Full dynticks CPUs: 1-3."],
        },
        // Boot CPU not listed: nothing to clear.
        Case {
            line: "nohz_full=1-7",
            version: (6, 10),
            boot: 0,
            nohz_full: "1-7",
            housekeeping: "0",
            timekeeping: 0,
            messages: &[FULL17],
        },
        // A boot CPU other than 0 holds the duty.
        Case {
            line: "nohz_full=0-3",
            version: (6, 10),
            boot: 2,
            nohz_full: "0-1,3",
            housekeeping: "2,4-7",
            timekeeping: 2,
            messages: &[
                "NO_HZ: Clearing 2 from nohz_full range for timekeeping",
                "NO_HZ: Full dynticks CPUs: 0-1,3.",
            ],
        },
        Case {
            line: "nohz_full=all",
            version: (6, 10),
            boot: 3,
            nohz_full: "0-2,4-7",
            housekeeping: "3",
            timekeeping: 3,
            messages: &[
                "Housekeeping: must include one present CPU, using boot CPU:3",
                "NO_HZ: Full dynticks CPUs: 0-2,4-7.",
            ],
        },
        // Only the boot CPU listed: nohz_full ends up empty and inert.
        Case {
            line: "nohz_full=0",
            version: (6, 10),
            boot: 0,
            nohz_full: "",
            housekeeping: "0-7",
            timekeeping: 0,
            messages: &[
                CLEAR0,
                "NO_HZ: Full dynticks CPUs: .",
                "ticklab: no CPU is left in nohz_full after the boot-CPU rule; full \
                 dynticks is inert",
            ],
        },
        // Empty list: no-op.
        Case {
            line: "nohz_full=",
            version: (6, 10),
            boot: 0,
            nohz_full: "",
            housekeeping: "0-7",
            timekeeping: 0,
            messages: &[],
        },
    ];
    for c in &cases {
        let cmd = KernelCmdline::parse(c.line, 8).unwrap();
        let (cfg, msgs) = TickConfig::resolve(&cmd, &build(NohzBuild::Full, c.version), 8, c.boot);
        let ctx = format!("{} on {:?} boot {}", c.line, c.version, c.boot);
        assert_eq!(cfg.nohz_full, set(c.nohz_full), "{ctx}");
        assert_eq!(cfg.housekeeping, set(c.housekeeping), "{ctx}");
        assert_eq!(cfg.timekeeping_cpu, c.timekeeping, "{ctx}");
        let msgs: Vec<String> = msgs.iter().map(BootMessage::to_string).collect();
        assert_eq!(msgs, c.messages, "{ctx}");
        assert!(!cfg.nohz_full.contains(c.boot), "{ctx}");
    }
}

#[test]
fn nohz_full_needs_the_build_and_the_version() {
    let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Idle, (6, 1)));
    assert!(cfg.nohz_full.is_empty());
    assert_eq!(cfg.housekeeping, set("0-7"));
    assert!(cfg.nohz_idle);
    assert_eq!(
        msgs,
        ["Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL"]
    );
    // Before the housekeeping code (4.15) the parameter is simply not read.
    let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Idle, (4, 14)));
    assert!(cfg.nohz_full.is_empty());
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with(TICKLAB_NOTE), "{msgs:?}");
    let (cfg, msgs) = resolve("nohz_full=1-7", 8, build(NohzBuild::Full, (3, 9)));
    assert!(cfg.nohz_full.is_empty());
    assert!(msgs[0].contains("arrived in 3.10"), "{msgs:?}");
}

// Over 100 lines because it is one table of lines and releases (rows, not steps).
#[test]
fn isolcpus_and_nohz_full_interplay() {
    let mismatch = "Housekeeping: nohz_full= must match isolcpus=";
    // (line, version, nohz_full, isolated_domain, mismatch expected)
    type Case = (&'static str, (u32, u32), &'static str, &'static str, bool);
    let cases: &[Case] = &[
        (
            "nohz_full=2-7 isolcpus=nohz,domain,2-5",
            (6, 6),
            "2-7",
            "",
            true,
        ),
        (
            "isolcpus=nohz,domain,2-5 nohz_full=2-7",
            (6, 6),
            "2-5",
            "2-5",
            true,
        ),
        (
            "isolcpus=nohz,domain,2-7 nohz_full=2-7",
            (6, 6),
            "2-7",
            "2-7",
            false,
        ),
        (
            "nohz_full=2-7 isolcpus=domain,2-7",
            (6, 6),
            "2-7",
            "2-7",
            false,
        ),
        // From 5.18 a domain-only isolcpus= is not compared with nohz_full=...
        (
            "isolcpus=domain,2-5 nohz_full=2-7",
            (6, 6),
            "2-7",
            "2-5",
            false,
        ),
        ("isolcpus=2-5 nohz_full=2-7", (5, 18), "2-7", "2-5", false),
        // ... before, there is one housekeeping mask and any difference clashes.
        ("isolcpus=2-5 nohz_full=2-7", (5, 15), "", "2-5", true),
        ("nohz_full=2-7 isolcpus=2-5", (4, 15), "2-7", "", true),
        // isolcpus=nohz alone acts as nohz_full.
        ("isolcpus=nohz,domain,1-7", (6, 10), "1-7", "1-7", false),
        ("isolcpus=nohz,1-7", (6, 10), "1-7", "", false),
        // The same parameter twice: identical is fine, different clashes.
        ("nohz_full=1-3 nohz_full=1-3", (6, 10), "1-3", "", false),
        ("nohz_full=1-3 nohz_full=1-4", (6, 10), "1-3", "", true),
        // E4's line.
        (
            "isolcpus=2-5 nohz_full=2-5 rcu_nocbs=2-5",
            (5, 15),
            "2-5",
            "2-5",
            false,
        ),
    ];
    for (line, v, nf, dom, clash) in cases {
        let (cfg, msgs) = resolve(line, 8, build(NohzBuild::Full, *v));
        let ctx = format!("{line} on {v:?}: {msgs:?}");
        assert_eq!(cfg.nohz_full, set(nf), "{ctx}");
        assert_eq!(cfg.isolated_domain, set(dom), "{ctx}");
        assert_eq!(msgs.iter().any(|m| m == mismatch), *clash, "{ctx}");
        if *clash {
            let i = msgs.iter().position(|m| m == mismatch).unwrap();
            assert!(
                msgs.iter().skip(i).any(|m| m.starts_with(TICKLAB_NOTE)),
                "{ctx}"
            );
        }
    }
    // isolcpus=nohz on a build without NO_HZ_FULL: the whole parameter is dropped.
    let (cfg, msgs) = resolve(
        "isolcpus=nohz,domain,1-7",
        8,
        build(NohzBuild::Idle, (6, 6)),
    );
    assert!(cfg.isolated_domain.is_empty() && cfg.nohz_full.is_empty());
    assert_eq!(
        msgs,
        ["Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL"]
    );
    // Unknown flags: notice, default domain.
    let (cfg, msgs) = resolve("isolcpus=foo,1-3", 8, FULL_6_10);
    assert_eq!(cfg.isolated_domain, set("1-3"));
    assert_eq!(msgs, ["isolcpus: Skipped unknown flag foo"]);
    // Pre-4.15 isolcpus takes no flags.
    let (cfg, msgs) = resolve("isolcpus=nohz,1-3", 8, build(NohzBuild::Full, (4, 14)));
    assert!(cfg.isolated_domain.is_empty() && cfg.nohz_full.is_empty());
    assert!(msgs[0].starts_with(TICKLAB_NOTE));
    let (cfg, _) = resolve("isolcpus=1-3", 8, build(NohzBuild::Full, (4, 14)));
    assert_eq!(cfg.isolated_domain, set("1-3"));
    // isolcpus covering every CPU keeps the boot CPU as housekeeping.
    let (cfg, msgs) = resolve("isolcpus=0-N", 8, FULL_6_10);
    assert_eq!(cfg.isolated_domain, set("1-7"));
    assert_eq!(
        msgs,
        ["Housekeeping: must include one present CPU, using boot CPU:0"]
    );
}

#[test]
fn nohz_off_and_periodic() {
    let (cfg, msgs) = resolve("nohz=off", 8, build(NohzBuild::Idle, (6, 6)));
    assert!(!cfg.nohz_idle);
    assert!(msgs.is_empty());
    let (cfg, _) = resolve("nohz=on", 8, build(NohzBuild::Idle, (6, 6)));
    assert!(cfg.nohz_idle);
    let (cfg, _) = resolve("", 8, build(NohzBuild::Periodic, (6, 6)));
    assert!(!cfg.nohz_idle);
    let (cfg, msgs) = resolve("nohz=on", 8, build(NohzBuild::Periodic, (6, 6)));
    assert!(!cfg.nohz_idle);
    assert!(msgs[0].starts_with(TICKLAB_NOTE));
    // nohz=off keeps the nohz_full set (isolation side effects) with a note.
    let (cfg, msgs) = resolve("nohz_full=1-7 nohz=off", 8, FULL_6_10);
    assert!(!cfg.nohz_idle);
    assert_eq!(cfg.nohz_full, set("1-7"));
    assert_eq!(cfg.rcu_nocbs, set("1-7"));
    assert!(
        msgs.last().unwrap().contains("never stop their tick"),
        "{msgs:?}"
    );
}

#[test]
fn aggressive_gating() {
    // (line, build, aggressive, inert note expected)
    let idle = build(NohzBuild::Idle, (6, 3));
    let cases: &[(&str, KernelBuild, bool, bool)] = &[
        ("nohz_full=all nohz_full_aggressive", FULL_6_10, true, false),
        (
            "nohz_full=all nohz_full_aggressive=1",
            FULL_6_10,
            true,
            false,
        ),
        (
            "nohz_full=all nohz_full_aggressive=0",
            FULL_6_10,
            false,
            false,
        ),
        ("nohz_full=all", FULL_6_10, false, false),
        ("nohz_full_aggressive", FULL_6_10, false, true),
        ("nohz_full=0 nohz_full_aggressive", FULL_6_10, false, true),
        (
            "nohz_full=all nohz_full_aggressive nohz=off",
            FULL_6_10,
            false,
            true,
        ),
        ("nohz_full=all nohz_full_aggressive", idle, false, true),
    ];
    for (line, b, want, inert) in cases {
        let (cfg, msgs) = resolve(line, 8, *b);
        assert_eq!(cfg.aggressive, *want, "{line}: {msgs:?}");
        let has_note = msgs.iter().any(|m| {
            m.starts_with(TICKLAB_NOTE) && m.contains("nohz_full_aggressive accepted but inert")
        });
        assert_eq!(has_note, *inert, "{line}: {msgs:?}");
    }
}

#[test]
fn skew_highres_idle_watchdog_rcu() {
    let b = FULL_6_10;
    let skew: &[(&str, (u32, u32), bool)] = &[
        ("", (6, 10), false),
        ("skew_tick=0", (6, 10), false),
        ("skew_tick=1", (6, 10), true),
        ("skew_tick=-3", (6, 10), true),
        ("skew_tick=1", (3, 4), true),
        ("skew_tick=1", (3, 3), false),
    ];
    for (line, v, want) in skew {
        let (cfg, _) = resolve(line, 8, build(NohzBuild::Full, *v));
        assert_eq!(cfg.skew_tick, *want, "{line} {v:?}");
    }
    assert!(resolve("", 8, b).0.highres);
    assert!(!resolve("highres=off", 8, b).0.highres);
    let lowres = KernelBuild {
        high_res: false,
        ..b
    };
    assert!(!resolve("highres=on", 8, lowres).0.highres);
    assert!(resolve("highres=on", 8, lowres).1[0].starts_with(TICKLAB_NOTE));

    assert_eq!(resolve("idle=poll", 8, b).0.idle, IdleOverride::Poll);
    assert_eq!(resolve("idle=halt", 8, b).0.idle, IdleOverride::Halt);
    assert_eq!(resolve("idle=nomwait", 8, b).0.idle, IdleOverride::NoMwait);
    assert_eq!(resolve("", 8, b).0.idle, IdleOverride::Default);
    assert!(resolve("cpuidle.off=1", 8, b).0.cpuidle_off);

    assert_eq!(resolve("", 8, b).0.watchdog_thresh_s, 10);
    assert_eq!(resolve("watchdog_thresh=20", 8, b).0.watchdog_thresh_s, 20);
    assert_eq!(
        resolve("watchdog_thresh=20 nowatchdog", 8, b)
            .0
            .watchdog_thresh_s,
        0
    );

    let (cfg, msgs) = resolve("rcu_nocbs=1-2 nohz_full=4-7 rcu_nocb_poll", 8, b);
    assert_eq!(cfg.rcu_nocbs, set("1-2,4-7"));
    assert!(cfg.rcu_nocb_poll);
    assert_eq!(msgs, ["NO_HZ: Full dynticks CPUs: 4-7."]);
    assert_eq!(
        resolve("rcu_nocbs nohz_full=2-3", 8, b).0.rcu_nocbs,
        set("2-3")
    );
    let (cfg, msgs) = resolve(
        "rcu_nocbs=all nohz_full=3",
        8,
        build(NohzBuild::Full, (5, 4)),
    );
    assert_eq!(cfg.rcu_nocbs, set("0-7"));
    // Early parameter messages come before housekeeping and tick-init ones.
    assert_eq!(
        msgs,
        [
            "rcu_nocbs= bad CPU range, all CPUs set",
            "NO_HZ: Full dynticks CPUs: 3."
        ]
    );
}

#[test]
fn idle_driver_and_haltpoll() {
    let line = "haltpoll.guest_halt_poll_ns=50000 haltpoll.guest_halt_poll_grow=4 \
                haltpoll.guest_halt_poll_allow_shrink=N cpuidle_haltpoll.force=Y";
    let (cfg, msgs) = resolve(line, 4, FULL_6_10);
    assert_eq!(
        cfg.haltpoll,
        HaltpollParams {
            guest_halt_poll_ns: 50_000,
            guest_halt_poll_grow: 4,
            guest_halt_poll_allow_shrink: false,
            ..HaltpollParams::default()
        }
    );
    assert!(cfg.haltpoll_force);
    assert!(msgs.is_empty());
    let (cfg, msgs) = resolve("cpuidle_haltpoll.force=1 idle=poll", 4, FULL_6_10);
    assert!(cfg.haltpoll_force);
    assert!(msgs[0].contains("does not load"), "{msgs:?}");
    let (cfg, msgs) = resolve("cpuidle.governor=teo", 4, FULL_6_10);
    assert_eq!(cfg.governor.as_deref(), Some("teo"));
    assert!(msgs.is_empty());
    let (_, msgs) = resolve("cpuidle.governor=fancy", 4, FULL_6_10);
    assert!(msgs[0].starts_with(TICKLAB_NOTE) && msgs[0].contains("fancy"));
    let (cfg, _) = resolve(
        "intel_idle.max_cstate=1 processor.max_cstate=2 clocksource=hpet",
        4,
        FULL_6_10,
    );
    assert_eq!(cfg.intel_idle_max_cstate, Some(1));
    assert_eq!(cfg.processor_max_cstate, Some(2));
    assert_eq!(cfg.clocksource.as_deref(), Some("hpet"));
}

#[test]
fn roles() {
    let (cfg, _) = resolve("nohz_full=2-3", 4, FULL_6_10);
    let roles: Vec<CpuRole> = (0..4).map(|c| cfg.role(c)).collect();
    assert_eq!(
        roles,
        [
            CpuRole::Timekeeping,
            CpuRole::Housekeeping,
            CpuRole::NohzFull,
            CpuRole::NohzFull
        ]
    );
}

#[test]
fn serde_names_for_scenarios() {
    assert_eq!(serde_json::to_string(&NohzBuild::Full).unwrap(), "\"full\"");
    let b: NohzBuild = serde_json::from_str("\"periodic\"").unwrap();
    assert_eq!(b, NohzBuild::Periodic);
}

proptest::proptest! {
    #[test]
    fn parsed_lines_roundtrip_and_resolve_holds_invariants(
        pieces in proptest::collection::vec(
            proptest::sample::select(vec![
                "nohz=off", "nohz=on", "nohz_full=all", "nohz_full=1-N", "nohz_full=0-3",
                "nohz_full=", "isolcpus=nohz,domain,2-5", "isolcpus=foo,1", "isolcpus=0-7",
                "rcu_nocbs", "rcu_nocbs=0-1", "rcu_nocb_poll", "skew_tick=1", "skew_tick=0",
                "highres=off", "idle=poll", "cpuidle.off=1", "cpuidle.governor=menu",
                "cpuidle_haltpoll.force", "haltpoll.guest_halt_poll_ns=1000",
                "nohz_full_aggressive", "nohz_full_aggressive=0", "clocksource=tsc",
                "watchdog_thresh=5", "nowatchdog", "quiet", "x=\"a b\"", "--", "\"", "=",
                "nohz_full=9", "idle=bogus", " ", "\t",
            ]),
            0..10,
        ),
        nohz in proptest::sample::select(vec![NohzBuild::Periodic, NohzBuild::Idle, NohzBuild::Full]),
        version in proptest::sample::select(vec![(3, 9), (4, 14), (5, 0), (5, 10), (5, 15), (6, 9), (6, 10)]),
        nr in 1u32..10,
        boot_pick in 0u32..10,
    ) {
        let line = pieces.join(" ");
        let _ = KernelCmdline::parse(&line, nr);
        if let Ok(c) = KernelCmdline::parse(&line, 8) {
            // The canonical line writes each parameter once, so only the record of repeats
            // differs.
            let again = KernelCmdline::parse(&c.to_string(), 8);
            let mut once = c.clone();
            once.repeated.clear();
            proptest::prop_assert_eq!(again.as_ref(), Ok(&once), "{}", line);
            let boot = boot_pick % 8;
            let b = KernelBuild {
                nohz,
                high_res: true,
                version,
                skew_tick_backport: false,
            };
            let (cfg, _) = TickConfig::resolve(&c, &b, 8, boot);
            let all = CpuSet::first_n(8);
            proptest::prop_assert_eq!(cfg.housekeeping.union(&cfg.nohz_full), all);
            proptest::prop_assert!(cfg.housekeeping.intersection(&cfg.nohz_full).is_empty());
            proptest::prop_assert!(cfg.housekeeping.contains(cfg.timekeeping_cpu));
            proptest::prop_assert!(!cfg.nohz_full.contains(boot));
            proptest::prop_assert!(cfg.nohz_full.is_subset(&cfg.rcu_nocbs));
            proptest::prop_assert!(!cfg.aggressive || (!cfg.nohz_full.is_empty() && cfg.nohz_idle));
            proptest::prop_assert!(nohz == NohzBuild::Full || cfg.nohz_full.is_empty());
        }
    }
}

#[test]
fn repeated_parameters_as_the_kernel_resolves_them() {
    // Two different nohz_full= lists: from 4.15 the second is compared with the first and
    // dropped with the housekeeping message; the first stays.
    let (cfg, msgs) = resolve("nohz_full=1-3 nohz_full=2-3", 8, FULL_6_10);
    assert_eq!(cfg.nohz_full, set("1-3"));
    assert_eq!(msgs[0], "Housekeeping: nohz_full= must match isolcpus=");
    assert!(
        msgs.iter()
            .any(|m| m.starts_with(TICKLAB_NOTE) && m.contains("drops this nohz_full=2-3"))
    );
    // The same list twice: the second matches, nothing is printed for it.
    let (cfg, msgs) = resolve("nohz_full=1-3 nohz_full=1-3", 8, FULL_6_10);
    assert_eq!(cfg.nohz_full, set("1-3"));
    assert_eq!(msgs, ["NO_HZ: Full dynticks CPUs: 1-3."]);
    // Before 4.15 the tick code's own handler replaces the mask: the last one counts.
    let (cfg, msgs) = resolve(
        "nohz_full=1-3 nohz_full=2-3",
        8,
        build(NohzBuild::Full, (4, 14)),
    );
    assert_eq!(cfg.nohz_full, set("2-3"));
    assert!(
        msgs.iter()
            .any(|m| m.contains("before 4.15 its handler replaces the mask"))
    );
    // Scalars: one ticklab note naming the values and the rule.
    let (cfg, msgs) = resolve("skew_tick=1 skew_tick=0", 8, FULL_6_10);
    assert!(!cfg.skew_tick);
    assert_eq!(
        msgs,
        [
            "ticklab: skew_tick is given 2 times (1, 0): its handler runs for each and stores \
          the value, so the last one counts"
        ]
    );
    let (cfg, _) = resolve("idle=poll idle=halt", 8, FULL_6_10);
    assert_eq!(cfg.idle, IdleOverride::Poll);
}

#[test]
fn arguments_after_dashes_go_to_init() {
    let (cfg, msgs) = resolve("nohz_full=1-3 -- nohz_full=0 single", 8, FULL_6_10);
    assert_eq!(cfg.nohz_full, set("1-3"));
    assert_eq!(
        msgs,
        [
            "NO_HZ: Full dynticks CPUs: 1-3.",
            "ticklab: the kernel stops reading parameters at `--` and hands the rest to init \
             unread: nohz_full=0 single"
        ]
    );
}

/// Issue 17: repeating a housekeeping parameter (up to the token limit) resolves as one does,
/// and each repeat is compared with one mask, not with every earlier repeat.
#[test]
fn repeated_housekeeping_resolves_like_one() {
    let b = build(NohzBuild::Full, (6, 10));
    let one = KernelCmdline::parse("nohz_full=1-7", 8).expect("parses");
    let many_line = vec!["nohz_full=1-7"; crate::MAX_CMDLINE_TOKENS].join(" ");
    let many = KernelCmdline::parse(&many_line, 8).expect("parses");
    let (a, _) = TickConfig::resolve(&one, &b, 8, 0);
    let (z, _) = TickConfig::resolve(&many, &b, 8, 0);
    assert_eq!(a.nohz_full, z.nohz_full);
    assert_eq!(a.housekeeping, z.housekeeping);
}

#[test]
fn timer_housekeeping_mask_by_parameter_and_release() {
    // (line, version, the HK_TYPE_TIMER mask on 4 CPUs)
    let cases = [
        ("", (6, 1), "0-3"),
        ("nohz_full=1-3", (6, 1), "0"),
        // nohz_full=0-3 leaves no present CPU: the boot CPU is kept for housekeeping.
        ("nohz_full=0-3", (6, 1), "0"),
        ("isolcpus=1-3", (6, 1), "0-3"),
        // isolcpus=nohz takes the tick's type only, not the timers', until the merge.
        ("isolcpus=nohz,domain,1-3", (6, 1), "0-3"),
        ("isolcpus=nohz,domain,1-3", (6, 14), "0-3"),
        ("isolcpus=nohz,domain,1-3", HK_KERNEL_NOISE, "0"),
        ("isolcpus=nohz,domain,2-3 nohz_full=2-3", (6, 1), "0-1"),
        // Before 4.15 the housekeeping CPUs are those outside nohz_full.
        ("nohz_full=1-3", (4, 14), "0"),
        ("isolcpus=2-3", (4, 14), "0-3"),
    ];
    for (line, version, want) in cases {
        let (cfg, _) = resolve(line, 4, build(NohzBuild::Full, version));
        assert_eq!(cfg.timer_housekeeping, set(want), "{line:?} on {version:?}");
    }
}
