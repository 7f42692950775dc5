//! Tests of the tokenizer, the value spellings and [`KernelCmdline::parse`]: boundary tables and
//! a property that no line makes the parser panic.

use super::*;
use crate::cpuset::CpuSet;

fn p(line: &str) -> KernelCmdline {
    KernelCmdline::parse(line, 8).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

fn set(list: &str) -> CpuSet {
    parse_cpulist(list, 1024).unwrap()
}

#[test]
fn tokenizer_quotes_and_whitespace() {
    let c = p("clocksource=\"tsc\"");
    assert_eq!(c.clocksource.as_deref(), Some("tsc"));
    let c = p("\"nohz_full=1-3\"");
    assert_eq!(c.nohz_full().unwrap().cpus, set("1-3"));
    let c = p("foo=\"a b\" nohz=off");
    assert_eq!(c.unknown, vec!["foo=\"a b\"".to_string()]);
    assert_eq!(c.nohz, Some(false));
    let c = p("  nohz=off\tskew_tick=1\nquiet  ");
    assert_eq!((c.nohz, c.skew_tick), (Some(false), Some(1)));
    assert_eq!(c.unknown, vec!["quiet".to_string()]);
    // An unterminated quote swallows the rest of the line, as in the kernel.
    let c = p("foo=\"a b nohz=off");
    assert_eq!(c.nohz, None);
    assert_eq!(c.unknown, vec!["foo=\"a b nohz=off".to_string()]);
    // A quoted value may contain `=`.
    let c = p("cpuidle.governor=\"te=o\"");
    assert_eq!(c.cpuidle_governor.as_deref(), Some("te=o"));
    assert_eq!(p("").unknown.len(), 0);
    assert_eq!(p("   ").unknown.len(), 0);
}

#[test]
fn double_dash_ends_kernel_parameters() {
    let c = p("quiet -- single nohz=off");
    assert_eq!(c.unknown, vec!["quiet".to_string()]);
    assert_eq!(
        c.init_args,
        vec!["single".to_string(), "nohz=off".to_string()]
    );
    assert_eq!(c.nohz, None);
    // `--=x` is a parameter, not the separator.
    assert_eq!(p("--=x nohz=on").nohz, Some(true));
}

#[test]
fn dash_underscore_equivalence_only_for_early_and_module_params() {
    assert_eq!(p("skew-tick=1").skew_tick, Some(1));
    assert_eq!(
        p("cpuidle-haltpoll.force=1").cpuidle_haltpoll_force,
        Some(true)
    );
    assert_eq!(
        p("haltpoll.guest-halt-poll-ns=5")
            .haltpoll
            .guest_halt_poll_ns,
        Some(5)
    );
    // `__setup` parameters need the exact name.
    let c = p("nohz-full=1-3");
    assert!(c.housekeeping.is_empty());
    assert_eq!(c.unknown, vec!["nohz-full=1-3".to_string()]);
}

#[test]
fn booleans_table() {
    let cases: &[(&str, Option<bool>)] = &[
        ("on", Some(true)),
        ("ON", Some(true)),
        ("On", Some(true)),
        ("off", Some(false)),
        ("OFF", Some(false)),
        ("1", Some(true)),
        ("0", Some(false)),
        ("y", Some(true)),
        ("Y", Some(true)),
        ("n", Some(false)),
        ("N", Some(false)),
        ("yes", Some(true)),
        ("No", Some(false)),
        ("true", Some(true)),
        ("FALSE", Some(false)),
        ("2", None),
        ("onn", None),
        ("of", None),
        ("", None),
        ("yup", None),
    ];
    for (v, want) in cases {
        for key in ["nohz", "highres", "nohz_full_aggressive"] {
            let line = format!("{key}={v}");
            let got = KernelCmdline::parse(&line, 8).ok().map(|c| match key {
                "nohz" => c.nohz.unwrap(),
                "highres" => c.highres.unwrap(),
                _ => c.nohz_full_aggressive.unwrap(),
            });
            assert_eq!(got, *want, "{line}");
        }
        let line = format!("haltpoll.guest_halt_poll_allow_shrink={v}");
        let got = KernelCmdline::parse(&line, 8).map(|c| c.haltpoll.guest_halt_poll_allow_shrink);
        // A module boolean with an empty value means true.
        let want = if v.is_empty() { Some(true) } else { *want };
        assert_eq!(got.ok().flatten(), want, "{line}");
    }
    // Bare forms.
    assert_eq!(p("nohz_full_aggressive").nohz_full_aggressive, Some(true));
    assert_eq!(
        p("cpuidle_haltpoll.force").cpuidle_haltpoll_force,
        Some(true)
    );
    assert!(KernelCmdline::parse("nohz", 8).is_err());
    assert!(KernelCmdline::parse("highres", 8).is_err());
}

#[test]
fn integers_table() {
    let cases: &[(&str, Option<i64>)] = &[
        ("0", Some(0)),
        ("1", Some(1)),
        ("-1", Some(-1)),
        ("+7", Some(7)),
        ("0x10", Some(16)),
        ("0X1f", Some(31)),
        ("010", Some(8)),
        ("00", Some(0)),
        ("08", None),
        ("1a", None),
        ("", None),
        ("0x", None),
        ("-", None),
        ("99999999999999999999", None),
    ];
    for (v, want) in cases {
        let line = format!("skew_tick={v}");
        let got = KernelCmdline::parse(&line, 8)
            .ok()
            .and_then(|c| c.skew_tick);
        assert_eq!(got, *want, "{line}");
    }
    // Module uints are 32-bit and unsigned.
    let uint: &[(&str, Option<u64>)] = &[
        ("50000", Some(50_000)),
        ("4294967295", Some(4_294_967_295)),
        ("4294967296", None),
        ("-1", None),
        ("", None),
    ];
    for (v, want) in uint {
        let line = format!("haltpoll.guest_halt_poll_ns={v}");
        let got = KernelCmdline::parse(&line, 8)
            .ok()
            .and_then(|c| c.haltpoll.guest_halt_poll_ns);
        assert_eq!(got, *want, "{line}");
    }
    assert_eq!(p("cpuidle.off=1").cpuidle_off, Some(true));
    assert_eq!(p("cpuidle.off=0").cpuidle_off, Some(false));
    assert_eq!(p("cpuidle.off=2").cpuidle_off, Some(true));
    assert!(KernelCmdline::parse("cpuidle.off=yes", 8).is_err());
    assert_eq!(p("intel_idle.max_cstate=1").intel_idle_max_cstate, Some(1));
    assert_eq!(p("processor.max_cstate=0").processor_max_cstate, Some(0));
    assert_eq!(p("watchdog_thresh=0x14").watchdog_thresh, Some(20));
}

#[test]
fn cpulist_edge_cases_through_the_parser() {
    // (value, nr_cpus, expected canonical list or None for an error)
    let cases: &[(&str, u32, Option<&str>)] = &[
        ("all", 8, Some("0-7")),
        ("ALL", 8, Some("0-7")),
        ("N", 8, Some("7")),
        ("1-N", 8, Some("1-7")),
        ("0-7:2/4", 8, Some("0-1,4-5")),
        ("1,3,5", 8, Some("1,3,5")),
        ("", 8, Some("")),
        ("0", 1, Some("0")),
        ("all", 1, Some("0")),
        ("8", 8, None),
        ("0-8", 8, None),
        ("3-1", 8, None),
        ("1,,2", 8, None),
        ("1-", 8, None),
        ("0-7:0/4", 8, None),
        ("x", 8, None),
        ("1 2", 8, None),
    ];
    for (v, nr, want) in cases {
        for key in ["nohz_full", "rcu_nocbs", "isolcpus"] {
            let line = format!("{key}=\"{v}\"");
            let got = KernelCmdline::parse(&line, *nr).map(|c| match key {
                "nohz_full" => c.nohz_full().unwrap().cpus.to_cpulist(),
                "isolcpus" => c.isolcpus().unwrap().list.cpus.to_cpulist(),
                _ => match c.rcu_nocbs.unwrap() {
                    RcuNocbsArg::List(a) => a.cpus.to_cpulist(),
                    RcuNocbsArg::Bare => "bare".into(),
                },
            });
            assert_eq!(got.ok().as_deref(), *want, "{line} on {nr} CPUs");
        }
    }
    assert_eq!(p("rcu_nocbs").rcu_nocbs, Some(RcuNocbsArg::Bare));
    let a = p("nohz_full=1-N").nohz_full().unwrap().clone();
    assert!(a.uses_n() && !a.uses_all());
    let a = p("nohz_full=All").nohz_full().unwrap().clone();
    assert!(a.uses_all() && !a.uses_n());
    assert!(!p("nohz_full=1-7:1/2").nohz_full().unwrap().uses_n());
}

#[test]
fn isolcpus_flags() {
    let c = p("isolcpus=nohz,domain,managed_irq,2-3");
    let a = c.isolcpus().unwrap();
    assert!(a.nohz() && a.domain() && a.managed_irq());
    assert_eq!(a.list.cpus, set("2-3"));
    let a = p("isolcpus=2-3").isolcpus().unwrap().clone();
    assert!(a.flags.is_empty() && a.domain() && !a.nohz());
    let a = p("isolcpus=managed_irq,2-3").isolcpus().unwrap().clone();
    assert!(!a.domain() && a.managed_irq());
    // Unknown flags are kept; with no known flag the default (domain) applies.
    let a = p("isolcpus=foo,2-3").isolcpus().unwrap().clone();
    assert_eq!(a.flags, vec![IsolcpusFlag::Unknown("foo".into())]);
    assert!(a.domain());
    let a = p("isolcpus=nohz,bar_baz,4").isolcpus().unwrap().clone();
    assert_eq!(
        a.flags,
        vec![IsolcpusFlag::Nohz, IsolcpusFlag::Unknown("bar_baz".into())]
    );
    assert!(!a.domain());
    // `N` and `all` are cpulists, not flags.
    assert_eq!(p("isolcpus=all").isolcpus().unwrap().list.cpus, set("0-7"));
    assert_eq!(
        p("isolcpus=domain,N").isolcpus().unwrap().list.cpus,
        set("7")
    );
    // An empty list after the flags is accepted (and is a no-op, as in the kernel).
    assert!(
        p("isolcpus=domain,")
            .isolcpus()
            .unwrap()
            .list
            .cpus
            .is_empty()
    );
    // Flags without a list are an error.
    for bad in ["isolcpus=nohz,domain", "isolcpus=nohz", "isolcpus"] {
        assert!(KernelCmdline::parse(bad, 8).is_err(), "{bad}");
    }
}

#[test]
fn unknown_parameters_are_kept_in_order() {
    let line = "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=ab-cd ro quiet splash nohz=on \
                vt.handoff=7 \"x y\"";
    let c = p(line);
    assert_eq!(
        c.unknown,
        [
            "BOOT_IMAGE=/vmlinuz-6.8.0",
            "root=UUID=ab-cd",
            "ro",
            "quiet",
            "splash",
            "vt.handoff=7",
            "\"x y\""
        ]
    );
    assert_eq!(c.nohz, Some(true));
}

#[test]
fn error_names_token_position_and_expectation() {
    let e = KernelCmdline::parse("root=/dev/vda ro nohz_full=2-99", 8).unwrap_err();
    assert_eq!((e.token_number, e.byte_offset), (3, 17));
    assert_eq!(e.token, "nohz_full=2-99");
    let shown = e.to_string();
    assert!(
        shown.starts_with(
            "kernel command line, token 3 \"nohz_full=2-99\" at byte 17: CPUs below 8"
        ),
        "{shown}"
    );
    assert!(shown.contains("\"2-99\""), "{shown}");

    // (line, token number, byte offset, fragment of the expectation)
    let cases: &[(&str, usize, usize, &str)] = &[
        ("idle=mwait", 1, 0, "idle=poll"),
        ("quiet nohz", 2, 6, "nohz=on|off"),
        ("nohz=maybe", 1, 0, "boolean"),
        ("a b  skew_tick", 3, 5, "skew_tick=<int>"),
        ("skew_tick=one", 1, 0, "skew_tick=<int>"),
        ("isolcpus=nohz,domain", 1, 0, "a cpulist after the flags"),
        ("isolcpus=nohz,9", 1, 0, "CPUs below 8"),
        ("haltpoll.guest_halt_poll_ns=-1", 1, 0, "<uint>"),
        ("cpuidle.governor=", 1, 0, "1 to 15 characters"),
        (
            "cpuidle.governor=abcdefghijklmnop",
            1,
            0,
            "1 to 15 characters",
        ),
        ("nowatchdog=1", 1, 0, "bare `nowatchdog`"),
        ("rcu_nocb_poll=1", 1, 0, "bare `rcu_nocb_poll`"),
        ("watchdog_thresh=-5", 1, 0, "integer >= 0"),
        ("clocksource=", 1, 0, "non-empty"),
        ("x \"nohz_full=1,,2\"", 2, 2, "empty item"),
        ("nohz_full_aggressive=sure", 1, 0, "boolean"),
    ];
    for (line, n, off, frag) in cases {
        let e = KernelCmdline::parse(line, 8).unwrap_err();
        assert_eq!((e.token_number, e.byte_offset), (*n, *off), "{line}: {e}");
        assert!(e.expected.contains(frag), "{line}: {e}");
        assert!(line[e.byte_offset..].starts_with(&e.token), "{line}: {e}");
    }
}

#[test]
fn last_scalar_wins_housekeeping_keeps_order() {
    let c = p("skew_tick=1 nohz=off skew_tick=0 nohz=on");
    assert_eq!((c.skew_tick, c.nohz), (Some(0), Some(true)));
    let c = p("isolcpus=1 nohz_full=2 nohz_full=3");
    assert_eq!(c.housekeeping.len(), 3);
    assert!(matches!(c.housekeeping[0], HousekeepingArg::Isolcpus(_)));
    assert_eq!(c.nohz_full().unwrap().text, "2");
}

proptest::proptest! {
    #[test]
    fn parse_never_panics(line in "\\PC{0,80}") {
        let _ = KernelCmdline::parse(&line, 8);
    }
}
