//! E3's live pipeline on a KVM guest: measure the futex ping-pong at several
//! `guest_halt_poll_ns` values ([`crate::harness::haltpoll_sweep::sweep`]), fit the guest's
//! switch and its host's wake-up at `guest_halt_poll_ns=0` only ([`super::kvm::fit`]), and
//! predict every other value with the fitted costs, so each point carries measurement beside
//! prediction.
//!
//! The twin comes in through two seams, as everywhere in this crate: `model` (a
//! [`KvmModel`], the two-CPU ns per switch) and `fixed_costs` (the costs the model holds but
//! does not fit, listed beside the fitted ones). The CLI's `host haltpoll-sweep` passes
//! `ticklab_twin::experiments::e3::HostTwin` for both.

use std::path::Path;

use ticklab_schema::experiment::e3::LiveSweep;

use super::error::SimulatorError;
use super::kvm::{self, KvmFitError, KvmGuestCosts, KvmMeasurements, KvmModel, owned};
use crate::harness::haltpoll_sweep::{self, IdleSetup, SweepConfig};
use crate::harness::sysfs_params::current_values;
use crate::harness::{HarnessError, Stop};

/// The costs a guest twin holds without fitting them: (name, ns, how obtained).
pub type FixedCosts<'a> =
    &'a dyn Fn(&KvmGuestCosts) -> Result<Vec<(String, u64, String)>, SimulatorError>;

/// Runs the live sweep of `cfg` with `guest_halt_poll_ns=0` first (the calibration point,
/// whether `cfg.values_ns` lists it or not; the others follow in their order), reading the
/// cpuidle setup and the parameters under `sys_root` (normally `/sys`) before and after.
///
/// `progress` hears the idle setup's verdict, then one line per point. A failed fit is not an
/// error: the points keep no prediction and the verdict says why there is no twin. Needs root
/// for the parameter writes.
pub fn live_sweep(
    cfg: &SweepConfig,
    sys_root: &Path,
    stop: &Stop,
    model: KvmModel<'_>,
    fixed_costs: FixedCosts<'_>,
    mut progress: impl FnMut(&str),
) -> Result<LiveSweep, HarnessError> {
    let mut values_ns = vec![0];
    values_ns.extend(cfg.values_ns.iter().copied().filter(|&v| v != 0));
    let cfg = SweepConfig {
        values_ns,
        ..cfg.clone()
    };
    debug_assert_eq!(
        cfg.values_ns.first(),
        Some(&0),
        "the calibration point runs first"
    );
    let idle = IdleSetup::read(sys_root);
    let params_before = owned(current_values(sys_root));
    progress(&format!(
        "driver {}, governor {}: {}",
        idle.driver,
        idle.governor,
        idle.verdict()
    ));
    let outcome = haltpoll_sweep::sweep(&cfg, stop, &mut progress)?;
    let params_after = owned(current_values(sys_root));
    let mut points = outcome.points;
    let fitted = match points.first() {
        Some(p0) => kvm::fit(
            &KvmMeasurements {
                idle: idle.clone(),
                hz: outcome.hz,
                same_cpu_ns: outcome.same_cpu_ns,
                cross_cpu_ns: p0.ns_per_switch,
                params_before: params_before.clone(),
                params_after: params_after.clone(),
            },
            model,
        ),
        None => Err(KvmFitError::NoPoint),
    };
    let (calibration, twin_err) = match fitted {
        Ok(cal) => {
            for p in &mut points {
                p.predicted_ns = cal.predict(model, p.guest_halt_poll_ns).ok();
                p.calibration_point = p.guest_halt_poll_ns == 0;
            }
            let mut rows = cal.rows();
            if let Ok(fixed) = fixed_costs(&cal.costs) {
                rows.extend(fixed);
            }
            (rows, None)
        }
        Err(e) => (Vec::new(), Some(e)),
    };
    let mut verdict = idle.verdict();
    if let Some(e) = twin_err {
        verdict.push_str(&format!("; no twin: {e}"));
    }
    Ok(LiveSweep {
        driver: idle.driver,
        governor: idle.governor,
        verdict,
        params_before,
        params_after,
        same_cpu_ns: outcome.same_cpu_ns,
        calibration,
        points,
        interrupted: outcome.interrupted,
    })
}
