//! Tests of the canonical line ([`KernelCmdline`]'s `Display`): it is canonical and parses back
//! to an equal value.

use super::*;

fn p(line: &str) -> KernelCmdline {
    KernelCmdline::parse(line, 8).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn display_is_canonical_and_reparses() {
    let cases: &[(&str, &str)] = &[
        ("", ""),
        ("quiet nohz=0 highres=N", "nohz=off highres=off quiet"),
        (
            "nohz_full=\"1-N\" isolcpus=nohz,foo,1-7",
            "nohz_full=1-N isolcpus=nohz,foo,1-7",
        ),
        (
            "nohz_full_aggressive=yes nohz_full_aggressive=0",
            "nohz_full_aggressive=0",
        ),
        (
            "skew-tick=0x10 cpuidle_haltpoll.force",
            "skew_tick=16 cpuidle_haltpoll.force=Y",
        ),
        (
            "clocksource=\"my clock\" -- single",
            "clocksource=\"my clock\" -- single",
        ),
        (
            "rcu_nocbs rcu_nocb_poll idle=poll",
            "rcu_nocbs rcu_nocb_poll idle=poll",
        ),
    ];
    for (line, want) in cases {
        let c = p(line);
        let shown = c.to_string();
        assert_eq!(shown, *want, "{line}");
        let mut once = c.clone();
        once.repeated.clear();
        assert_eq!(p(&shown), once, "{line}");
    }
}
