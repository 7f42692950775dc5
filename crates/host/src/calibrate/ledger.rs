//! Which of the twin's costs `host calibrate` fitted, and how: the cost ledger.
//!
//! Every field of `[machine.costs]` (and the idle-state exit latencies a fit may set) is either
//! **fitted**, with the measurement and the rule that gave its value, or a **preset** kept from
//! the `kvm-guest` machine. A fit registers itself with [`CostLedger::fitted`] where it sets the
//! value; the ledger is written into the scenario file's header so a reader sees, cost by cost,
//! what calibration learnt and what it did not.
//!
//! Names are the cost's path in the scenario TOML below `[machine]`: `costs.syscall_ns`,
//! `costs.context_tracking.rcu_eqs_ns`, `idle_states.1.exit_latency_ns`. [`cost_names`] lists
//! every cost of a machine from its serialised form, so a cost added to the schema shows up
//! here (as a preset) without touching this module; [`get`] and [`set`] read and write one
//! cost by that name (the sensitivity test, [`super::sensitivity`], varies presets with them).

use ticklab_schema::machine::Machine;

/// One fitted cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// Path below `[machine]` (`costs.irq_entry_exit_ns`).
    pub name: String,
    /// The measurement and the rule that gave the value, one line.
    pub how: String,
}

/// The fitted costs of one calibration, in the order they were fitted.
///
/// Invariant: a name appears at most once (a later fit of the same cost replaces the earlier
/// entry, keeping its place).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CostLedger {
    fitted: Vec<Fitted>,
}

impl CostLedger {
    /// An empty ledger: every cost is a preset.
    pub fn new() -> CostLedger {
        CostLedger::default()
    }

    /// Records that `name` was fitted, and how.
    pub fn fitted(&mut self, name: &str, how: impl Into<String>) {
        let how = how.into();
        match self.fitted.iter_mut().find(|f| f.name == name) {
            Some(f) => f.how = how,
            None => self.fitted.push(Fitted {
                name: name.to_string(),
                how,
            }),
        }
        debug_assert!(
            self.fitted
                .iter()
                .enumerate()
                .all(|(i, f)| self.fitted[..i].iter().all(|g| g.name != f.name)),
            "a cost is fitted at most once in the ledger"
        );
    }

    /// How `name` was fitted, or `None` for a preset.
    pub fn how(&self, name: &str) -> Option<&str> {
        self.fitted
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.how.as_str())
    }

    /// The fitted costs, in fitting order.
    pub fn entries(&self) -> &[Fitted] {
        &self.fitted
    }

    /// The costs of `machine` that no fit set (`cost_names` order).
    pub fn presets(&self, machine: &Machine) -> Vec<String> {
        cost_names(machine)
            .into_iter()
            .filter(|n| self.how(n).is_none())
            .collect()
    }
}

/// Every cost of `machine` by its path below `[machine]`: each numeric field of `costs` (and of
/// its nested sections), then of `kvm_host` when the machine has that section, then each idle
/// state's exit latency and target residency. Read from the serialised machine, so the list
/// follows the schema.
pub(crate) fn cost_names(machine: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(v) = serde_json::to_value(machine) else {
        return out;
    };
    if let Some(costs) = v.get("costs") {
        numeric_paths("costs", costs, &mut out);
    }
    if let Some(k) = v.get("kvm_host") {
        numeric_paths("kvm_host", k, &mut out);
    }
    if let Some(states) = v.get("idle_states").and_then(|s| s.as_array()) {
        for (i, _) in states.iter().enumerate() {
            out.push(format!("idle_states.{i}.exit_latency_ns"));
            out.push(format!("idle_states.{i}.target_residency_ns"));
        }
    }
    out
}

/// Why a cost path could not be read or set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("machine cost {path}: {why}")]
pub(crate) struct CostPathError {
    /// The path below `[machine]`.
    pub path: String,
    /// What was expected.
    pub why: String,
}

fn path_error(path: &str, why: impl Into<String>) -> CostPathError {
    CostPathError {
        path: path.to_string(),
        why: why.into(),
    }
}

/// The field at `path` (below `[machine]`) of a serialised machine: dot-separated keys, a
/// number indexes a list (`idle_states.1.exit_latency_ns`).
fn field_mut<'v>(
    v: &'v mut serde_json::Value,
    path: &str,
) -> Result<&'v mut serde_json::Value, CostPathError> {
    let mut at = v;
    for key in path.split('.') {
        at = match at {
            serde_json::Value::Object(map) => map.get_mut(key),
            serde_json::Value::Array(list) => {
                key.parse::<usize>().ok().and_then(|i| list.get_mut(i))
            }
            _ => None,
        }
        .ok_or_else(|| path_error(path, format!("no field {key:?} there")))?;
    }
    match at {
        serde_json::Value::Number(_) => Ok(at),
        _ => Err(path_error(path, "expected a numeric field")),
    }
}

/// The value of the cost at `path` (a name of [`cost_names`]).
pub(crate) fn get(machine: &Machine, path: &str) -> Result<f64, CostPathError> {
    let mut v =
        serde_json::to_value(machine).map_err(|e| path_error(path, format!("serialise: {e}")))?;
    field_mut(&mut v, path)?
        .as_f64()
        .ok_or_else(|| path_error(path, "expected a number"))
}

/// Sets the cost at `path` (a name of [`cost_names`]) to `value`: an integer field (every ns
/// cost but the work unit) takes `value` rounded to the nearest integer, which must be finite
/// and not negative. Through the serialised machine (not a hot path), so it follows the schema;
/// on error the machine is unchanged.
pub(crate) fn set(machine: &mut Machine, path: &str, value: f64) -> Result<(), CostPathError> {
    if !value.is_finite() || value < 0.0 {
        return Err(path_error(
            path,
            format!("expected a finite value of at least 0, found {value}"),
        ));
    }
    let mut v =
        serde_json::to_value(&*machine).map_err(|e| path_error(path, format!("serialise: {e}")))?;
    let field = field_mut(&mut v, path)?;
    let is_integer = field.is_u64();
    *field = if is_integer {
        if value.round() > u64::MAX as f64 {
            return Err(path_error(path, format!("{value} does not fit in 64 bits")));
        }
        serde_json::Value::from(value.round() as u64)
    } else {
        serde_json::Value::from(value)
    };
    *machine = serde_json::from_value(v).map_err(|e| path_error(path, e.to_string()))?;
    Ok(())
}

fn numeric_paths(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(_) => out.push(prefix.to_string()),
        serde_json::Value::Object(map) => {
            for (k, x) in map {
                numeric_paths(&format!("{prefix}.{k}"), x, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_schema::machine::kvm_guest;

    #[test]
    fn every_cost_is_named_and_presets_are_the_rest() {
        let m = kvm_guest(2);
        let names = cost_names(&m);
        for n in [
            "costs.irq_entry_exit_ns",
            "costs.tick_handler_ns",
            "costs.work_unit_ns",
            "costs.context_tracking.rcu_eqs_ns",
            "idle_states.1.exit_latency_ns",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
        }
        assert!(
            !names.iter().any(|n| n.starts_with("kvm_host")),
            "{names:?}"
        );
        let mut guest = m.clone();
        guest.kvm_host = Some(ticklab_schema::machine::KvmHost {
            host_wake_ns: 2861,
            host_halt_poll_ns: None,
        });
        let with = cost_names(&guest);
        assert_eq!(with.len(), names.len() + 1);
        assert!(
            with.iter().any(|n| n == "kvm_host.host_wake_ns"),
            "{with:?}"
        );
        let mut l = CostLedger::new();
        l.fitted("costs.syscall_ns", "getpid");
        l.fitted("costs.syscall_ns", "getpid, again");
        assert_eq!(l.entries().len(), 1);
        assert_eq!(l.how("costs.syscall_ns"), Some("getpid, again"));
        let presets = l.presets(&m);
        assert_eq!(presets.len(), names.len() - 1);
        assert!(!presets.iter().any(|p| p == "costs.syscall_ns"));
    }

    #[test]
    fn get_and_set_a_cost_by_its_path() {
        // (path, value set, value read back)
        let ok: [(&str, f64, f64); 6] = [
            ("costs.tick_handler_ns", 2000.0, 2000.0),
            ("costs.tick_handler_ns", 1234.6, 1235.0),
            ("costs.work_unit_ns", 6.25, 6.25),
            ("costs.context_tracking.rcu_eqs_ns", 0.0, 0.0),
            ("idle_states.1.exit_latency_ns", 500.0, 500.0),
            ("idle_states.0.target_residency_ns", 7.0, 7.0),
        ];
        for (path, value, back) in ok {
            let mut m = kvm_guest(2);
            set(&mut m, path, value).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(get(&m, path), Ok(back), "{path}");
            // Nothing else moved.
            for other in cost_names(&m).iter().filter(|n| *n != path) {
                assert_eq!(
                    get(&m, other),
                    get(&kvm_guest(2), other),
                    "{path} moved {other}"
                );
            }
        }
        let m = kvm_guest(2);
        assert_eq!(
            get(&m, "costs.tick_handler_ns"),
            Ok(m.costs.tick_handler_ns as f64)
        );
        // (path, value, the error's words)
        let bad: [(&str, f64, &str); 6] = [
            ("costs.no_such_ns", 1.0, "no field \"no_such_ns\""),
            ("idle_states.9.exit_latency_ns", 1.0, "no field \"9\""),
            ("idle_states.x.exit_latency_ns", 1.0, "no field \"x\""),
            ("idle_states.1.name", 1.0, "expected a numeric field"),
            ("costs.tick_handler_ns", -1.0, "at least 0"),
            ("costs.tick_handler_ns", f64::NAN, "finite"),
        ];
        for (path, value, words) in bad {
            let mut m = kvm_guest(2);
            let e = set(&mut m, path, value).unwrap_err();
            assert_eq!(e.path, path);
            assert!(e.to_string().contains(words), "{path}: {e}");
            assert_eq!(m, kvm_guest(2), "{path}: a refused set changes nothing");
        }
    }
}
