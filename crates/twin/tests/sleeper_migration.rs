//! A frame worker's `clock_nanosleep` sleeper is an unpinned hrtimer: on a `nohz_full` CPU it
//! is queued on a timer-housekeeping CPU (`kernel::timer_migration`, docs/vm-validation.md
//! "What the kernel taught the twin"), which then takes one interrupt per frame while the
//! worker's CPU is woken by a reschedule IPI instead of its own timer. A housekeeping CPU, an
//! `isolcpus=nohz,domain` CPU of 6.1 (tick type only) and `nohz=off` keep their sleepers.

use ticklab_schema::scenario::Scenario;

fn run(cmdline: &str, workload: &str, version: &str) -> (Vec<f64>, Vec<Option<u64>>) {
    let text = format!(
        r#"
name = "sleeper migration"
machine = "kvm-guest-2"
workload = "{workload}"

[kernel]
version = "{version}"
hz = 250
nohz = "full"
cmdline = "{cmdline}"

[run]
duration = "4s"
warmup = "1s"
seed = 3
"#
    );
    let r = simulate(&text, "sleeper_migration.toml");
    (loc_per_s(&r), r.cpus.iter().map(|c| c.res).collect())
}

/// The twin's report of the scenario `text`.
fn simulate(text: &str, origin: &str) -> ticklab_schema::report::Report {
    let s = Scenario::from_toml(text, origin).unwrap();
    ticklab_twin::simulate(&s, |_| {}).unwrap()
}

/// LOC/s per CPU over the measured window.
fn loc_per_s(r: &ticklab_schema::report::Report) -> Vec<f64> {
    let secs = r.duration_ns as f64 / 1e9;
    r.cpus.iter().map(|c| c.loc as f64 / secs).collect()
}

#[test]
fn a_nohz_full_sleeper_fires_on_the_housekeeping_cpu() {
    // (boot line, workload, version, CPU 1 LOC/s range, CPU 0 gains the frames, RES on CPU 1)
    let cases = [
        (
            "nohz_full=1",
            "frames:60@1:loop=1000",
            "6.1",
            (0.0, 5.0),
            true,
            true,
        ),
        (
            "nohz_full=1",
            "hogs:1@0+frames:60@1:loop=1000",
            "6.1",
            (0.0, 5.0),
            true,
            true,
        ),
        (
            "nohz_full=1",
            "frames:60@1:loop=1000",
            "4.2",
            (55.0, 65.0),
            false,
            false,
        ),
        (
            "isolcpus=nohz,domain,1",
            "frames:60@1:loop=1000",
            "6.1",
            (55.0, 65.0),
            false,
            false,
        ),
        // A plain CPU also takes the ticks its wake-ups restart.
        (
            "",
            "frames:60@1:loop=1000",
            "6.1",
            (55.0, 130.0),
            false,
            false,
        ),
    ];
    for (line, w, v, (lo, hi), moved, ipis) in cases {
        let (loc, res) = run(line, w, v);
        let ctx = format!("{line:?} {w} on {v}: LOC/s {loc:?}, RES {res:?}");
        assert!(loc[1] >= lo && loc[1] <= hi, "{ctx}");
        // CPU 0 ticks at 250/s (the timekeeping CPU of a nohz_full boot, or a hog's tick);
        // a moved sleeper adds up to 60/s where a frame start falls between ticks.
        if moved {
            assert!(loc[0] > 270.0, "{ctx}");
        }
        assert_eq!(res[1].is_some_and(|n| n > 100), ipis, "{ctx}");
    }
}

/// A pinned task on CPU 1 sleeping 100 ms at a time (relative, as ticklab's coordinator does),
/// its sleep an unpinned hrtimer when `migrates`: (LOC/s per CPU, RES per CPU, expiries).
fn pinned_sleeper(
    cmdline: &str,
    version: &str,
    migrates: bool,
) -> (Vec<f64>, Vec<Option<u64>>, u64) {
    let text = format!(
        r#"
name = "pinned sleeper"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "{version}"
hz = 250
nohz = "full"
cmdline = "{cmdline}"

[[background]]
name = "sleeper"
kind = "hrtimer"
placement = "per_cpu"
period_ns = 100000000
slack_ns = 50000
wakes_task = true
relative = true
timer_migrates = {migrates}
provenance = "test: a pinned task sleeping 100 ms at a time on CPU 1"
cpus = "1"

[run]
duration = "10s"
warmup = "1s"
seed = 5
"#
    );
    let r = simulate(&text, "pinned_sleeper.toml");
    let expiries = r
        .background
        .iter()
        .find(|b| b.name == "sleeper")
        .map(|b| b.expiries)
        .unwrap();
    (
        loc_per_s(&r),
        r.cpus.iter().map(|c| c.res).collect(),
        expiries,
    )
}

#[test]
fn a_pinned_tasks_sleep_on_a_nohz_full_cpu_fires_on_the_ticking_housekeeper() {
    // (boot line, version, migrates, CPU 1 LOC/s range, RES on CPU 1 per expiry range, or
    // None where the twin counts no RES)
    let cases = [
        // CPU 0 ticks (timekeeping, nohz_full boot), so its next event always comes before
        // the sleep's end: every sleep is queued there and CPU 1 is woken by IPI only.
        ("nohz_full=1", "6.1", true, (0.0, 0.5), Some((0.95, 1.05))),
        // The same task with its sleep kept home: one interrupt per wake-up on CPU 1.
        ("nohz_full=1", "6.1", false, (9.0, 11.0), None),
        // Before 4.3 a running task's timer stays on its CPU whatever that CPU is.
        ("nohz_full=1", "4.2", true, (9.0, 11.0), Some((0.0, 0.0))),
        // A housekeeping CPU keeps its sleepers, and `nohz=off` never migrates: no IPIs to
        // count.
        ("", "6.1", true, (9.0, 60.0), None),
        ("nohz=off", "6.1", true, (255.0, 265.0), None),
    ];
    for (line, v, migrates, (lo, hi), res_per_wake) in cases {
        let (loc, res, n) = pinned_sleeper(line, v, migrates);
        let ctx = format!(
            "{line:?} on {v}, migrates {migrates}: LOC/s {loc:?}, RES {res:?}, {n} expiries"
        );
        assert!((95..=101).contains(&n), "{ctx}");
        assert!(loc[1] >= lo && loc[1] <= hi, "{ctx}");
        match res_per_wake {
            Some((a, b)) => {
                let per =
                    res[1].expect("RES counted where a sleeper may migrate") as f64 / n as f64;
                assert!(per >= a && per <= b, "{ctx}: {per} RES per expiry");
            }
            None => assert_eq!(res[1], None, "{ctx}"),
        }
    }
}

#[test]
fn timer_migrates_needs_the_tasks_cpus() {
    let text = r#"
name = "pinned sleeper"
machine = "kvm-guest-2"
workload = "idle"

[kernel]
version = "6.1"
hz = 250
nohz = "full"

[[background]]
name = "sleeper"
kind = "hrtimer"
placement = "per_cpu"
period_ns = 100000000
wakes_task = true
timer_migrates = true
provenance = "test"
"#;
    let e = Scenario::from_toml(text, "pinned_sleeper.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("background[0].timer_migrates"), "{e}");
}
