//! `host calibrate --check-unseen`: after the calibration, the loads it did not run, each
//! measured here and run in the fitted twin beside it, exactly as `host run --workload SPEC
//! --twin FILE` does ([`crate::host_twin_cmd::beside`]), and one table of every figure with
//! the in-band count ([`ticklab_schema::unseen_check`], [`ticklab_report::unseen_check_table`];
//! docs/host-lab.md, "The unseen-load check").
//!
//! The twin is the calibration file as written: its text is parsed back, so the check runs
//! what `--twin FILE` would load, not an in-memory scenario the file might not reproduce.

use std::io::Write;
use std::time::Duration;

use ticklab_host::harness::{self, RunConfig, Stop};
use ticklab_schema::scenario::Scenario;
use ticklab_schema::unseen_check::{UnseenCheck, UnseenLoad};
use ticklab_schema::workload::Workload;

use crate::error::{input_error, interrupted, library_error};

/// One load of the check: its name in the table, its workload spec, and whether it is the
/// control (shown, not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadSpec {
    /// The name in the table.
    pub(crate) name: &'static str,
    /// The `--workload` spec.
    pub(crate) spec: &'static str,
    /// Shown, not counted.
    pub(crate) control: bool,
}

/// The loads, in the order they run (issue 30): idle as the control, then six loads no
/// calibration phase runs. The getpid loop is given more calls than a window holds, so the
/// window ends it and its CPU is busy throughout, as beside the hog; the ping-pong runs
/// 200 000 round trips (about 10 s here at 50 µs each; the window caps it); the frame
/// workers do 1000 work units a frame (a few µs here), so a frame is more than a wake-up.
pub(crate) const LOADS: [LoadSpec; 7] = [
    LoadSpec {
        name: "idle",
        spec: "idle",
        control: true,
    },
    LoadSpec {
        name: "two hogs",
        spec: "hogs:2",
        control: false,
    },
    LoadSpec {
        name: "frames 100 Hz",
        spec: "frames:100@1:loop=1000",
        control: false,
    },
    LoadSpec {
        name: "frames 2 kHz",
        spec: "frames:2000@1:loop=1000",
        control: false,
    },
    LoadSpec {
        name: "futex ping-pong 0,1",
        spec: "pingpong:futex@0,1:n=200000",
        control: false,
    },
    LoadSpec {
        name: "getpid beside a hog",
        spec: "syscall:getpid@0:n=100000000000+hogs:1@1",
        control: false,
    },
    LoadSpec {
        name: "two hogs on CPU 1",
        spec: "hogs:1@1+hogs:1@1",
        control: false,
    },
];

/// The shortest window a load may be given (`--load-duration`): below it a 100 Hz frame
/// worker has under 100 frames, too few for a p99.
pub(crate) const MIN_LOAD: Duration = Duration::from_secs(2);

/// Runs every load of [`LOADS`] for `load` each against the twin of `file_text` (a
/// `host calibrate` file), progress through `progress`; returns the check.
pub(crate) fn check(
    file_text: &str,
    calibrate: Duration,
    load: Duration,
    stop: &Stop,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<UnseenCheck> {
    let scenario = Scenario::from_toml(file_text, "the calibration just written")
        .map_err(|e| anyhow::anyhow!("the calibration file does not load back: {e}"))?;
    let mut loads = Vec::with_capacity(LOADS.len());
    for l in LOADS {
        progress(&format!(
            "{}: {} for {:.0} s, then the twin",
            l.name,
            l.spec,
            load.as_secs_f64()
        ));
        let workload = Workload::parse(l.spec, harness::os::possible_cpu_count())
            .map_err(|e| input_error(format!("{}: {e}", l.spec)))?;
        let config = RunConfig {
            duration: load,
            ..RunConfig::default()
        };
        harness::validate(&workload, &config).map_err(library_error)?;
        let run = harness::run_workload(&workload, &config, stop).map_err(library_error)?;
        if let Some(why) = &run.host_run.interrupted {
            return Err(interrupted(why, "the unseen-load check is incomplete"));
        }
        let (_, rows) = crate::host_twin_cmd::beside(&run.report, &workload, &scenario, None)?;
        loads.push(UnseenLoad {
            name: l.name.to_string(),
            spec: l.spec.to_string(),
            control: l.control,
            rows,
            contamination: run.report.contamination.clone(),
            measured_s: run.report.seconds(),
        });
    }
    Ok(UnseenCheck {
        calibrate_s: calibrate.as_secs_f64(),
        load_s: load.as_secs_f64(),
        loads,
    })
}

/// Prints the check: the table, or with `json` the typed [`UnseenCheck`] with its count.
pub(crate) fn print(check: &UnseenCheck, json: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut v = serde_json::to_value(check)?;
        v["in_band"] = serde_json::to_value(check.in_band())?;
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", ticklab_report::unseen_check_table(check))?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_load_parses_and_only_idle_is_the_control() {
        for l in LOADS {
            let w = Workload::parse(l.spec, 2).unwrap_or_else(|e| panic!("{}: {e}", l.spec));
            assert_eq!(l.control, w.groups.is_empty(), "{}", l.spec);
        }
        assert_eq!(LOADS.iter().filter(|l| l.control).count(), 1);
        // A calibration phase's workload is not an unseen load (the phases' specs, as
        // parsed, against each load's).
        let phases = [
            "hogs:1@1",
            "syscall:getpid@0:n=1000000000",
            "pingpong:pipe@0,0:n=100000000",
            "pingpong:pipe@0,1:n=100000000",
            "frames:1000@0:loop=0",
            "hogs:1@1+frames:1000@1:loop=0",
        ];
        for seen in phases {
            let seen = Workload::parse(seen, 2).expect("a phase spec");
            for l in LOADS.iter().filter(|l| !l.control) {
                let w = Workload::parse(l.spec, 2).expect("parsed above");
                assert_ne!(w, seen, "{} is a calibration phase", l.spec);
            }
        }
    }
}
