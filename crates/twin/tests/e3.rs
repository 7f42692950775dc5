//! E3: the ping-pong in a KVM guest (docs/experiments.md E3).

use ticklab_schema::experiment::e3::Config;
use ticklab_twin::experiments::e3;

#[test]
fn print_table() {
    let r = e3::results(20_000);
    for row in &r.rows {
        eprintln!(
            "{:45} {:8.1} hlt {:.2} tsc {:.2} icr {:.2} skip {:5.1}% busy {:5.1}% host {:5.1}% hpoll {:5.1}% pub {:?}",
            row.label, row.ns_per_switch, row.hlt_exits, row.tsc_deadline_exits, row.icr_exits,
            row.ipi_skipped_pct, row.guest_busy_pct, row.host_cpu_pct, row.host_poll_pct, row.published_ns
        );
    }
    for c in &r.checks {
        eprintln!("{} {:.0} vs {:.0} {}", c.what, c.value, c.target, c.ok);
    }
    let _ = Config::Hlt;
}
