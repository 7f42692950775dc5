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
    let s = Scenario::from_toml(&text, "sleeper_migration.toml").unwrap();
    let r = ticklab_twin::simulate(&s, |_| {}).unwrap();
    let secs = r.duration_ns as f64 / 1e9;
    (
        r.cpus.iter().map(|c| c.loc as f64 / secs).collect(),
        r.cpus.iter().map(|c| c.res).collect(),
    )
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
