//! A PM QoS CPU latency limit (`/dev/cpu_dma_latency`, scenario `kernel.cpu_dma_latency_us`)
//! keeps every CPU out of the idle states slower to leave than the limit, whatever the
//! governor; without a limit the run is the one it always was.

use ticklab_cmdline::NohzBuild;
use ticklab_schema::machine::xps13_7390;
use ticklab_schema::report::Report;
use ticklab_schema::scenario::{Kernel, Run, Scenario, default_background};
use ticklab_schema::workload::Workload;
use ticklab_twin::Sim;

fn scenario(workload: &str, cmdline: &str, limit_us: Option<u32>) -> Scenario {
    let machine = xps13_7390();
    let nr = machine.topology.nr_cpus();
    let mut kernel = Kernel::new("6.10", 1000, NohzBuild::Full, cmdline);
    kernel.cpu_dma_latency_us = limit_us;
    Scenario {
        name: "pm qos".into(),
        machine,
        kernel,
        workload: Workload::parse(workload, nr).unwrap(),
        background: default_background(),
        run: Run {
            duration_ns: 300_000_000,
            warmup_ns: 50_000_000,
            seed: 3,
        },
    }
}

fn report(s: &Scenario) -> Report {
    let mut sim = Sim::new(s).unwrap();
    sim.run(|_| {});
    sim.report()
}

#[test]
fn no_state_slower_to_leave_than_the_limit_is_entered() {
    let m = xps13_7390();
    // (workload, cmdline, limit µs): the governors menu (default), teo and ladder (periodic).
    let cases: &[(&str, &str, u32)] = &[
        ("idle", "", 0),
        ("idle", "", 50),
        ("frames:1000@1:loop=1000", "", 20),
        ("idle", "cpuidle.governor=teo", 50),
        ("idle", "cpuidle.governor=teo", 0),
        ("hogs:1@1", "", 100),
        ("idle", "nohz=off", 50),
    ];
    for &(workload, cmdline, limit) in cases {
        let s = scenario(workload, cmdline, Some(limit));
        let r = report(&s);
        assert_eq!(r.cpu_dma_latency_us, Some(limit));
        let mut entered_any = false;
        for c in &r.cpus {
            for st in &c.idle_states {
                let params = m.idle_states.iter().find(|p| p.name == st.name).unwrap();
                if st.usage > 0 {
                    entered_any = true;
                }
                assert!(
                    st.usage == 0 || params.exit_latency_ns <= u64::from(limit) * 1_000,
                    "{workload} {cmdline:?} limit {limit} us: CPU {} entered {} ({} ns to leave) {} times",
                    c.cpu,
                    st.name,
                    params.exit_latency_ns,
                    st.usage
                );
            }
        }
        assert!(
            entered_any,
            "{workload} {cmdline:?}: no idle state entered at all"
        );
    }
}

#[test]
fn without_a_limit_the_run_is_unchanged_and_a_limit_changes_it() {
    let free = report(&scenario("idle", "", None));
    assert_eq!(free.cpu_dma_latency_us, None);
    let json = serde_json::to_string(&free).unwrap();
    assert!(!json.contains("cpu_dma_latency_us"), "no limit, no field");
    // A limit no state exceeds changes nothing but the report's field.
    let mut loose = report(&scenario("idle", "", Some(1_000_000)));
    assert_eq!(loose.cpu_dma_latency_us, Some(1_000_000));
    loose.cpu_dma_latency_us = None;
    assert_eq!(serde_json::to_string(&loose).unwrap(), json);
    // A limit of 0 keeps every CPU polling: no deep residency is left.
    let strict = report(&scenario("idle", "", Some(0)));
    let deep = |r: &Report| -> u64 {
        r.cpus
            .iter()
            .flat_map(|c| c.idle_states.iter().skip(1))
            .map(|s| s.time_ns)
            .sum()
    };
    assert!(deep(&free) > 0);
    assert_eq!(deep(&strict), 0);
}
