//! Ctrl-C: a SIGINT sent to this process while a run is in progress ends it with a partial
//! report marked as interrupted. Its own test binary, so the process-wide handler and the
//! signal touch nothing else.

use std::time::{Duration, Instant};

use ticklab_host::harness::{self, RunConfig, Stop, StopReason, run_workload};
use ticklab_schema::report::WorkloadResult;
use ticklab_schema::workload::Workload;

#[test]
fn sigint_yields_a_partial_report() {
    let stop = Stop::on_signals().unwrap();
    assert!(!stop.is_set());
    let cpu = harness::os::allowed_cpus().unwrap().first().unwrap();
    let spec = format!("frames:500@{cpu}:loop=100+syscall:getpid@{cpu}:n=100000000000");
    let workload = Workload::parse(&spec, harness::os::possible_cpu_count()).unwrap();
    let config = RunConfig {
        duration: Duration::from_secs(30),
        ..RunConfig::default()
    };
    let killer = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: sending a signal to our own process.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
    });
    let started = Instant::now();
    let out = run_workload(&workload, &config, &stop).unwrap();
    killer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(stop.reason(), Some(StopReason::Signal(libc::SIGINT)));
    assert_eq!(out.host_run.interrupted.as_deref(), Some("SIGINT"));
    assert!(out.report.warnings[0].starts_with("interrupted by SIGINT"));
    let WorkloadResult::Frames(g) = &out.report.workloads[0] else {
        panic!("{:?}", out.report.workloads)
    };
    assert!(g.rows[0].frames > 0 && g.rows[0].frames < 15_000);
    let WorkloadResult::Syscall(s) = &out.report.workloads[1] else {
        panic!()
    };
    assert!(s.calls > 0 && s.calls < 100_000_000_000);
}
