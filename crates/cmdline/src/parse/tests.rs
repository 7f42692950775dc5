//! Tests of the tokenizer, the value spellings and [`KernelCmdline::parse`]: boundary tables and
//! a property that no line makes the parser panic.

use super::*;
use crate::cpulist::parse_cpulist;
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
    // Today's kernel compares `__setup` names the same way.
    let c = p("nohz-full=1-3");
    assert_eq!(c.nohz_full().unwrap().cpus, set("1-3"));
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
        // Empty items and whitespace are skipped, as the kernel does.
        ("1,,2", 8, Some("1-2")),
        (" 1 2 ", 8, Some("1-2")),
        ("1-", 8, None),
        // A used count of 0 sets nothing but is allowed.
        ("0-7:0/4", 8, Some("")),
        ("0-7:5/4", 8, None),
        ("x", 8, None),
    ];
    for (v, nr, want) in cases {
        for key in ["nohz_full", "rcu_nocbs", "isolcpus"] {
            // `isolcpus=` reads a leading word as a flag.
            if key == "isolcpus" && v.starts_with(|c: char| c.is_ascii_alphabetic()) {
                continue;
            }
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
    // `N` and `all` at the start of the list read as flags, as in the kernel's handler; after
    // a digit they are cpulist syntax.
    for bad in [
        "isolcpus=all",
        "isolcpus=domain,N",
        "isolcpus=N-7",
        "isolcpus=nohz,All",
    ] {
        assert!(KernelCmdline::parse(bad, 8).is_err(), "{bad}");
    }
    assert_eq!(
        p("isolcpus=domain,1-N").isolcpus().unwrap().list.cpus,
        set("1-7")
    );
    assert_eq!(
        p("isolcpus=0,all").isolcpus().unwrap().list.cpus,
        set("0-7")
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
        ("isolcpus=foo1,2", 1, 0, "is not one"),
        ("isolcpus=nohz,9", 1, 0, "CPUs below 8"),
        ("haltpoll.guest_halt_poll_ns=-1", 1, 0, "<uint>"),
        ("cpuidle.governor=", 1, 0, "1 to 15 characters"),
        (
            "cpuidle.governor=abcdefghijklmnop",
            1,
            0,
            "1 to 15 characters",
        ),
        ("watchdog_thresh=-5", 1, 0, "integer >= 0"),
        ("clocksource=", 1, 0, "non-empty"),
        ("x \"nohz_full=1,x\"", 2, 2, "decimal CPU number"),
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

#[test]
fn tokenizer_follows_next_arg() {
    // (line, unknown tokens as written, init args)
    let cases: &[(&str, &[&str], &[&str])] = &[
        // A quoted value keeps its spaces; the token is kept as written.
        (
            "dyndbg=\"file foo.c +p\" quiet",
            &["dyndbg=\"file foo.c +p\"", "quiet"],
            &[],
        ),
        // `--` ends the kernel's parameters, quoted or not; the rest goes to init unread.
        (
            "ro -- nohz_full=0 \"a b\"",
            &["ro"],
            &["nohz_full=0", "\"a b\""],
        ),
        ("\"--\" nohz_full=x", &[], &["nohz_full=x"]),
        ("-- ", &[], &[]),
        // `--x` and `--=1` are parameters, not the separator.
        ("--x --=1", &["--x", "--=1"], &[]),
        // An `=` as the first character does not split.
        ("=nohz_full", &["=nohz_full"], &[]),
    ];
    for (line, unknown, init) in cases {
        let c = p(line);
        assert_eq!(c.unknown, *unknown, "{line}");
        assert_eq!(c.init_args, *init, "{line}");
    }
    // `=a=b` is the key `=a` with the value `b`, as in the kernel.
    let toks = tokenize("=a=b \"x=\\\"y\"");
    assert_eq!((toks[0].key, toks[0].value), ("=a", Some("b")));
    assert_eq!(toks[0].value_offset, 3);
    // This machine's own boot line: everything after `--` is Firecracker's init.
    let live = "console=ttyS0 quiet rdinit=/process_api -- --firecracker-init --addr \
                0.0.0.0:2024 nohz_full=1";
    let c = p(live);
    assert!(c.housekeeping.is_empty());
    assert_eq!(c.init_args[0], "--firecracker-init");
    assert_eq!(c.init_args.last().map(String::as_str), Some("nohz_full=1"));
}

#[test]
fn split_at_the_dashes() {
    // (line, kernel part, init part)
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("", "", None),
        ("quiet ro\n", "quiet ro", None),
        ("a -- b c\n", "a", Some("b c")),
        ("-- x", "", Some("x")),
        ("a --", "a", Some("")),
        ("a \"x -- y\" --x b", "a \"x -- y\" --x b", None),
        ("a \"--\" b", "a", Some("b")),
        ("a -- b -- c", "a", Some("b -- c")),
    ];
    for (line, kernel, init) in cases {
        assert_eq!(
            KernelCmdline::split_init_args(line),
            (*kernel, *init),
            "{line:?}"
        );
    }
}

#[test]
fn repeated_parameters_follow_their_handlers() {
    let c = p("skew_tick=1 skew_tick=0 skew_tick=2");
    assert_eq!(c.skew_tick, Some(2));
    assert_eq!(c.repeated.len(), 1);
    assert_eq!(c.repeated[0].values, ["1", "0", "2"]);
    // Once idle=poll has forced polling, a later idle= does not undo it.
    let c = p("idle=poll idle=halt");
    assert_eq!(c.idle, Some(IdleOverride::Poll));
    assert!(c.repeated[0].rule.contains("idle=poll"), "{:?}", c.repeated);
    assert_eq!(p("idle=halt idle=poll").idle, Some(IdleOverride::Poll));
    assert_eq!(
        p("idle=halt idle=nomwait").idle,
        Some(IdleOverride::NoMwait)
    );
    // rcu_nocbs: the last one counts, bare or not.
    let c = p("rcu_nocbs=1-3 rcu_nocbs");
    assert_eq!(c.rcu_nocbs, Some(RcuNocbsArg::Bare));
    assert_eq!(c.repeated[0].values, ["1-3", "(bare)"]);
    // nohz_full= and isolcpus= are kept in order for the housekeeping rules; no record.
    let c = p("nohz_full=1-3 nohz_full=2-3");
    assert_eq!(c.housekeeping.len(), 2);
    assert!(c.repeated.is_empty());
    // A parameter given once is no repeat.
    assert!(p("skew_tick=1 nohz=off").repeated.is_empty());
}

#[test]
fn setup_prefixes_ignore_the_rest() {
    assert!(p("nowatchdog=1").nowatchdog);
    assert!(p("rcu_nocb_poll=0").rcu_nocb_poll);
    assert!(p("nowatchdog_please").nowatchdog);
}

// Over 100 lines because it is one table: a row per refused value with the kernel's own
// reaction, so that every error message is checked the same way.
#[test]
fn errors_say_what_the_kernel_does_at_boot() {
    /// (line, release or mainline, errno, what the boot does, words of the expectation)
    type Case = (
        &'static str,
        Option<(u32, u32)>,
        Option<CpulistErrno>,
        &'static str,
        &'static str,
    );
    let cases: &[Case] = &[
        (
            "nohz_full=1-8",
            None,
            Some(CpulistErrno::Erange),
            "\"Housekeeping: nohz_full= or isolcpus= incorrect CPU range\" and ignores",
            "CPUs below 8",
        ),
        (
            "nohz_full=1-N",
            Some((5, 11)),
            Some(CpulistErrno::Einval),
            "incorrect CPU range",
            "5.12",
        ),
        (
            "nohz_full=all",
            Some((5, 13)),
            Some(CpulistErrno::Einval),
            "incorrect CPU range",
            "5.14",
        ),
        (
            "nohz_full=1-3:1/2",
            Some((4, 8)),
            Some(CpulistErrno::Einval),
            "\"NO_HZ: Incorrect nohz_full cpumask\"",
            "4.9",
        ),
        (
            "rcu_nocbs=99999999999",
            None,
            Some(CpulistErrno::Eoverflow),
            "all CPUs set\" and offloads the RCU callbacks of every CPU",
            "32 bits",
        ),
        (
            "isolcpus=domain,N-7",
            None,
            None,
            "\"isolcpus: Invalid flag N-7\" and ignores",
            "digit",
        ),
        (
            "isolcpus=all",
            None,
            None,
            "Skipped unknown flag all\" and then reads on past the end",
            "`N` and `all` are read as flags",
        ),
        (
            "isolcpus=managed_irq,1",
            Some((5, 5)),
            None,
            "\"isolcpus: Error, unknown flag\"",
            "nohz and domain only",
        ),
        (
            "idle=mwait",
            None,
            None,
            "\"Malformed early option 'idle'\"",
            "idle=poll",
        ),
        (
            "haltpoll.guest_halt_poll_ns=-1",
            None,
            None,
            "\"Booting kernel: `-1' invalid for parameter `haltpoll.guest_halt_poll_ns'\"",
            "<uint>",
        ),
        (
            "nohz_full",
            None,
            None,
            "goes to init as an argument",
            "nohz_full=<cpulist>",
        ),
    ];
    for (line, release, errno, at_boot, expected) in cases {
        let e = match release {
            Some(v) => KernelCmdline::parse_for_kernel(line, 8, *v),
            None => KernelCmdline::parse(line, 8),
        }
        .unwrap_err();
        assert_eq!(e.errno, *errno, "{line}: {e}");
        assert!(e.at_boot.contains(at_boot), "{line}: {e}");
        assert!(e.expected.contains(expected), "{line}: {e}");
        assert!(
            e.to_string().contains(". At boot the kernel")
                || e.to_string().contains(". At boot this"),
            "{e}"
        );
    }
    // The cpulist item's offset is a byte offset in the whole line.
    let e = KernelCmdline::parse("quiet nohz_full=\"1, x\"", 8).unwrap_err();
    assert!(e.expected.contains("item \"x\" at byte 20"), "{e}");
    // What the release reads is accepted.
    assert!(KernelCmdline::parse_for_kernel("nohz_full=1-N", 8, (5, 12)).is_ok());
    assert!(KernelCmdline::parse_for_kernel("nohz_full=all", 8, (5, 14)).is_ok());
    // Before 4.15 isolcpus= has no flags: the flag word is a bad cpulist.
    let e = KernelCmdline::parse_for_kernel("isolcpus=nohz,1", 8, (4, 14)).unwrap_err();
    assert!(e.at_boot.contains("sched: Error"), "{e}");
}

proptest::proptest! {
    #[test]
    fn no_line_panics_for_any_release(
        line in "[a-z_=\",\\-0-9N ]{0,60}",
        major in 2u32..8,
        minor in 0u32..21,
        nr in 0u32..70,
    ) {
        let _ = KernelCmdline::parse_for_kernel(&line, nr, (major, minor));
        let _ = KernelCmdline::parse(&format!("nohz_full={line}"), nr);
        let _ = KernelCmdline::parse(&format!("isolcpus={line}"), nr);
    }
}

/// Issue 17: a line past the token or byte limit is refused naming the first token past it;
/// one at the limit is read.
#[test]
fn size_limits_table() {
    let at_limit = vec!["quiet"; MAX_CMDLINE_TOKENS].join(" ");
    assert!(KernelCmdline::parse(&at_limit, 8).is_ok());
    let past = format!("{at_limit} nohz_full=1");
    let e = KernelCmdline::parse(&past, 8).expect_err("one token too many");
    assert_eq!(e.token_number, MAX_CMDLINE_TOKENS + 1);
    assert_eq!(e.token, "nohz_full=1");
    assert!(e.expected.contains("at most 4096 parameters"), "{e}");
    let long = format!("nohz_full=1 {}", "x".repeat(MAX_CMDLINE_BYTES));
    let e = KernelCmdline::parse(&long, 8).expect_err("too many bytes");
    // The token that crosses the limit: the second one, at byte 12.
    assert_eq!((e.token_number, e.byte_offset), (2, 12));
    assert!(e.expected.contains("65536 bytes"), "{e}");
    // A multi-byte character across the limit is cut on a character boundary.
    let wide = format!("{}é", "x".repeat(MAX_CMDLINE_BYTES - 1));
    assert!(KernelCmdline::parse(&wide, 8).is_err());
}

#[test]
fn a_release_string_chooses_the_grammar() {
    for (release, want) in [
        ("6.18.0-1-amd64", Some((6, 18))),
        ("5.10.0-28-amd64", Some((5, 10))),
        ("4.9", Some((4, 9))),
        ("3.0.101-rt130", Some((3, 0))),
        ("6", None),
        ("x.10", None),
        ("", None),
    ] {
        assert_eq!(release_version(release), want, "{release:?}");
    }
    // `N` in a cpulist is read from 5.12 on: a 5.10 host refuses it, a 6.18 host and an
    // unknown release (today's grammar) read it.
    let line = "nohz_full=1-N";
    assert!(KernelCmdline::parse_for_release(line, 8, Some("5.10.0-28-amd64")).is_err());
    for release in [Some("6.18.0-1-amd64"), Some("garbage"), None] {
        let c = KernelCmdline::parse_for_release(line, 8, release).expect("parses");
        assert_eq!(
            c.nohz_full().map(|a| a.cpus.to_cpulist()),
            Some("1-7".to_string()),
            "{release:?}"
        );
    }
}
