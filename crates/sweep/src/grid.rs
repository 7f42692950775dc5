//! The grid of a sweep: which parameters take which values, and which seeds each point runs.
//!
//! A grid is read from `KEY=VALUE` assignments, one value each (`--set hz=100 --set hz=1000`,
//! so a value keeps its own commas: `--set workload=hogs:2@1,3`), or from a sweep file whose
//! keys hold lists:
//!
//! ```toml
//! cmdline = ["nohz_full=all", "nohz_full=all nohz_full_aggressive"]
//! workload = ["idle", "hogs:1", "hogs:2", "hogs:4", "hogs:8"]
//! "cost.tick_handler_ns" = [1500, 3000]
//! seeds = 3            # or: seed = [1, 7, 42]
//! ```
//!
//! Some keys take an inclusive range `A..B` (with an optional step, `A..B/S`): `seed`,
//! `cost.FIELD` and the hog count of a workload (`hogs:0..8`, `hogs:1..4@4-7`; 0 hogs is
//! `idle`). The points are the cartesian product of the axes, axes in the order
//! [`ParamKey`] sorts them (machine first, warm-up last), the last axis varying fastest, and
//! every point runs every seed, seeds innermost. That order does not depend on the order of
//! the flags, so a sweep file and the flags that say the same thing give the same sweep.

use super::row::{ParamKey, ParamKeyError, SweepParam};
use std::collections::BTreeMap;
use ticklab_cmdline::CmdlineError;
use ticklab_schema::machine;
use ticklab_schema::scenario::{HzError, KernelError, Scenario, VersionError, check_hz};
use ticklab_schema::units::{DurationError, parse_duration};
use ticklab_schema::workload::{TaskGroup, Workload, WorkloadError};

/// Most runs one sweep may have (points × seeds): a guard against a range typo
/// (`seed=1..1000000000`) filling memory before anything runs.
pub const MAX_RUNS: u64 = 1_000_000;

/// The grid of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Swept parameters and their values (ranges expanded), in [`ParamKey`] order.
    axes: BTreeMap<ParamKey, Vec<String>>,
    /// Seeds every point runs, in the order given.
    seeds: Vec<u64>,
}

/// One point of the grid: its parameters and the scenario they make (with the first seed).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the point.
    pub index: u64,
    /// The swept parameters.
    pub params: Vec<SweepParam>,
    /// The base scenario with the parameters applied.
    pub scenario: Scenario,
}

/// Where the seeds of a grid come from when no `seed` key is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seeds {
    /// The base scenario's seed only.
    Base,
    /// `N` seeds counting up from the base scenario's seed (`--seeds N`).
    Count(u64),
}

/// Why a sweep grid was refused, or a point of it did not apply: where (the `--set`
/// assignment, or the sweep file and its key; nothing for the grid as a whole) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{kind}", at.as_ref().map(|a| format!("{a}: ")).unwrap_or_default())]
pub struct GridError {
    /// The assignment or file key the error is about, as the user gave it.
    pub at: Option<String>,
    /// What is wrong.
    pub kind: GridErrorKind,
}

impl GridError {
    fn at(at: Option<String>, kind: GridErrorKind) -> GridError {
        GridError { at, kind }
    }
}

/// What is wrong with a sweep grid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GridErrorKind {
    /// A `--set` without `=`.
    #[error("expected KEY=VALUE, e.g. hz=1000")]
    NotKeyValue,
    /// The sweep file is not TOML (the TOML parser's message).
    #[error("{0}")]
    Toml(String),
    /// A key that is not a sweep parameter.
    #[error("{0}")]
    Key(ParamKeyError),
    /// A value its key does not take.
    #[error("{0}")]
    Value(ValueError),
    /// `seeds =` in a sweep file that is not a positive integer.
    #[error("expected a positive number of seeds")]
    SeedCount,
    /// One value given twice for one key.
    #[error("{key}={value} is given twice")]
    ValueTwice {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Both a seed count and seed values.
    #[error("give seeds either as a count (--seeds) or as seed= values")]
    SeedsTwoWays,
    /// One seed given twice.
    #[error("seed={0} is given twice")]
    SeedTwice(u64),
    /// `--seeds 0`.
    #[error("--seeds: expected at least 1")]
    NoSeeds,
    /// More seeds than a sweep may run.
    #[error("--seeds {0}: at most {MAX_RUNS}")]
    TooManySeeds(u64),
    /// Seeds counting up from the base seed would pass 2^64-1.
    #[error(
        "--seeds {n} from seed {base_seed}: the seeds would pass 18446744073709551615 (2^64-1) \
         and wrap; give a lower --seed"
    )]
    SeedsWrap {
        /// The seed count.
        n: u64,
        /// The base scenario's seed.
        base_seed: u64,
    },
    /// Points × seeds above [`MAX_RUNS`].
    #[error("the sweep has more than {MAX_RUNS} runs")]
    TooManyRuns,
    /// A point's parameter does not apply to the base scenario (boxed: the largest kind by
    /// far, and the rarest).
    #[error("{0}")]
    Point(Box<PointError>),
}

/// Why a value of a sweep key was refused: the value as given and what the key takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A sweep file value that is neither a string nor a number (as TOML writes it).
    #[error("expected a string or a number, found {0}")]
    NotScalar(String),
    /// A seed, a cost or one end of a range that is not a non-negative integer.
    #[error("{0:?}: expected a non-negative integer or a range A..B[/STEP]")]
    NotInteger(String),
    /// A range `A..B/0`.
    #[error("{0:?}: the step of a range must be at least 1")]
    ZeroStep(String),
    /// A range `A..B` with B below A.
    #[error("{0:?}: a range A..B needs A <= B")]
    Reversed(String),
    /// A range of more values than a sweep may run.
    #[error("{0:?}: more than {MAX_RUNS} values")]
    TooManyValues(String),
    /// A range in a workload that is not a hog count.
    #[error("{0:?}: only a hog count takes a range (hogs:A..B[@LIST])")]
    NotAHogRange(String),
}

/// Why a point of the grid does not make a scenario: the parameter and value, or the point,
/// and what the base scenario refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointError {
    /// One parameter's value does not apply (`key=value: why`).
    #[error("{}={value}: {why}", .key.name())]
    Value {
        /// The parameter.
        key: ParamKey,
        /// The value as given.
        value: String,
        /// Why it does not apply.
        why: ApplyError,
    },
    /// The point's kernel version is not a kernel release.
    #[error("{0}")]
    Version(VersionError),
    /// The point's kernel refuses its command line (the point's parameters, then the token).
    #[error("{point}: {error}")]
    Cmdline {
        /// The point's parameters (`key=value key=value`, or `the base scenario`).
        point: String,
        /// What the kernel release refused.
        error: CmdlineError,
    },
}

/// Why one value does not apply to a scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// No machine preset of that name.
    #[error("expected a machine preset ({})", machine::PRESETS.join(", "))]
    Machine,
    /// Not a kernel release.
    #[error("{0}")]
    Version(VersionError),
    /// `hz=` that is not a number.
    #[error("expected a number (CONFIG_HZ)")]
    HzNotANumber,
    /// A `CONFIG_HZ` no kernel is built with.
    #[error("{0}")]
    Hz(HzError),
    /// `nohz=` that is not a tick build option.
    #[error("expected periodic, idle or full")]
    Nohz,
    /// A `cost.FIELD` that is not a cost, or a value it does not take.
    #[error("{0}")]
    Cost(CostError),
    /// A workload the machine cannot run.
    #[error("{0}")]
    Workload(WorkloadError),
    /// A duration or warm-up that does not read.
    #[error("{0}")]
    Duration(DurationError),
}

/// Why `cost.FIELD=VALUE` does not apply: the field path or value, and what a cost takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CostError {
    /// A path through a cost that is not a table.
    #[error("{0:?}: not a cost field (this machine has no such table)")]
    NotATable(String),
    /// A field the table does not have: its name and the fields it has.
    #[error("{field:?}: expected a cost field: {fields}")]
    NoField {
        /// The missing field.
        field: String,
        /// The table's fields, comma-separated.
        fields: String,
    },
    /// A field that is not a number.
    #[error("{0:?}: not a number field")]
    NotANumber(String),
    /// A value for a fractional field that is not a finite non-negative number.
    #[error("expected a non-negative number")]
    Negative,
    /// A value for an integer field that is not a non-negative integer.
    #[error("expected a non-negative integer (ns)")]
    NotAnInteger,
    /// The costs did not convert to or from their JSON form (serde_json's message).
    #[error("{0}")]
    Json(String),
}

impl Grid {
    /// Reads `KEY=VALUE` assignments (each one value; `seed=` values and ranges are seeds).
    /// `seeds` may not be `Count` when a `seed` key is given. Errors name the assignment.
    pub fn from_sets(sets: &[String], seeds: Seeds, base_seed: u64) -> Result<Grid, GridError> {
        let mut axes: BTreeMap<ParamKey, Vec<String>> = BTreeMap::new();
        let mut seed_list = Vec::new();
        for set in sets {
            let at = || Some(format!("--set {set:?}"));
            let (k, v) = set
                .split_once('=')
                .ok_or_else(|| GridError::at(at(), GridErrorKind::NotKeyValue))?;
            let ctx = |e: ValueError| GridError::at(at(), GridErrorKind::Value(e));
            if k.trim() == "seed" {
                seed_list.extend(expand_u64(v.trim()).map_err(ctx)?);
                continue;
            }
            let key = ParamKey::parse(k.trim())
                .map_err(|e| GridError::at(at(), GridErrorKind::Key(e)))?;
            let values = expand(&key, v).map_err(ctx)?;
            axes.entry(key).or_default().extend(values);
        }
        Grid::new(axes, seed_list, seeds, base_seed).map_err(|kind| GridError::at(None, kind))
    }

    /// Reads a sweep file (module docs); `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str, base_seed: u64) -> Result<Grid, GridError> {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| GridError::at(Some(origin.into()), GridErrorKind::Toml(e.to_string())))?;
        let mut axes: BTreeMap<ParamKey, Vec<String>> = BTreeMap::new();
        let mut seed_list = Vec::new();
        let mut seeds = Seeds::Base;
        for (k, v) in &table {
            let at = || Some(format!("{origin}: {k}"));
            let ctx = |e: ValueError| GridError::at(at(), GridErrorKind::Value(e));
            let items: Vec<String> = match v {
                toml::Value::Array(a) => a.iter().map(scalar).collect::<Result<_, _>>(),
                other => scalar(other).map(|s| vec![s]),
            }
            .map_err(ctx)?;
            match k.as_str() {
                "seeds" => {
                    let n = match v {
                        toml::Value::Integer(n) if *n > 0 => *n as u64,
                        _ => {
                            return Err(GridError::at(at(), GridErrorKind::SeedCount));
                        }
                    };
                    seeds = Seeds::Count(n);
                }
                "seed" => {
                    for i in &items {
                        seed_list.extend(expand_u64(i).map_err(ctx)?);
                    }
                }
                _ => {
                    let key = ParamKey::parse(k)
                        .map_err(|e| GridError::at(at(), GridErrorKind::Key(e)))?;
                    let axis = axes.entry(key.clone()).or_default();
                    for i in &items {
                        axis.extend(expand(&key, i).map_err(ctx)?);
                    }
                }
            }
        }
        Grid::new(axes, seed_list, seeds, base_seed)
            .map_err(|kind| GridError::at(Some(origin.into()), kind))
    }

    fn new(
        axes: BTreeMap<ParamKey, Vec<String>>,
        seed_list: Vec<u64>,
        seeds: Seeds,
        base_seed: u64,
    ) -> Result<Grid, GridErrorKind> {
        for (k, vs) in &axes {
            for (i, v) in vs.iter().enumerate() {
                if vs[..i].contains(v) {
                    return Err(GridErrorKind::ValueTwice {
                        key: k.name(),
                        value: v.clone(),
                    });
                }
            }
        }
        let seeds = match (seed_list.is_empty(), seeds) {
            (false, Seeds::Count(_)) => return Err(GridErrorKind::SeedsTwoWays),
            (false, Seeds::Base) => {
                for (i, s) in seed_list.iter().enumerate() {
                    if seed_list[..i].contains(s) {
                        return Err(GridErrorKind::SeedTwice(*s));
                    }
                }
                seed_list
            }
            (true, Seeds::Base) => vec![base_seed],
            (true, Seeds::Count(0)) => return Err(GridErrorKind::NoSeeds),
            (true, Seeds::Count(n)) => {
                if n > MAX_RUNS {
                    return Err(GridErrorKind::TooManySeeds(n));
                }
                if base_seed.checked_add(n - 1).is_none() {
                    return Err(GridErrorKind::SeedsWrap { n, base_seed });
                }
                (0..n).map(|i| base_seed + i).collect()
            }
        };
        let g = Grid { axes, seeds };
        let runs = g.axes.values().try_fold(g.seeds.len() as u64, |acc, v| {
            acc.checked_mul(v.len() as u64)
        });
        match runs {
            Some(r) if r <= MAX_RUNS => Ok(g),
            _ => Err(GridErrorKind::TooManyRuns),
        }
    }

    /// The seeds every point runs.
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// The swept keys and their values, in grid order.
    pub fn axes(&self) -> impl Iterator<Item = (&ParamKey, &[String])> {
        self.axes.iter().map(|(k, v)| (k, v.as_slice()))
    }

    /// Number of points (the product of the axes' lengths; 1 with no axis).
    pub fn nr_points(&self) -> u64 {
        self.axes.values().map(|v| v.len() as u64).product()
    }

    /// Number of runs: points × seeds.
    pub fn nr_runs(&self) -> u64 {
        self.nr_points() * self.seeds.len() as u64
    }

    /// Every point, in order, each with its scenario built from `base`. An error names the
    /// point's parameter that does not apply (a machine preset that does not exist, a
    /// workload that does not fit the machine, a command line the kernel version refuses).
    pub fn points(&self, base: &Scenario) -> Result<Vec<Point>, GridError> {
        let axes: Vec<(&ParamKey, &Vec<String>)> = self.axes.iter().collect();
        let n = self.nr_points();
        let mut out = Vec::with_capacity(n as usize);
        for index in 0..n {
            // Mixed radix, last axis fastest.
            let mut rest = index;
            let mut picks = vec![0usize; axes.len()];
            for (i, (_, vs)) in axes.iter().enumerate().rev() {
                picks[i] = (rest % vs.len() as u64) as usize;
                rest /= vs.len() as u64;
            }
            let chosen: Vec<(&ParamKey, &str)> = axes
                .iter()
                .zip(&picks)
                .map(|((k, vs), &p)| (*k, vs[p].as_str()))
                .collect();
            out.push(
                point(index, base, &chosen)
                    .map_err(|e| GridError::at(None, GridErrorKind::Point(Box::new(e))))?,
            );
        }
        Ok(out)
    }

    /// Identity of the sweep of this grid over `base`: 16 hex digits of a 64-bit FNV-1a hash
    /// of the base scenario, the axes and the seeds. Shard outputs of one sweep carry the
    /// same identity; `merge` refuses rows of another.
    pub fn id(&self, base: &Scenario) -> String {
        let axes: Vec<(String, &Vec<String>)> =
            self.axes.iter().map(|(k, v)| (k.name(), v)).collect();
        let text = serde_json::to_string(&(base, axes, &self.seeds)).unwrap_or_default();
        format!("{:016x}", fnv1a(text.as_bytes()))
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A TOML scalar as the text of a value.
fn scalar(v: &toml::Value) -> Result<String, ValueError> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        other => Err(ValueError::NotScalar(other.to_string())),
    }
}

/// `A..B` or `A..B/S` (inclusive) as its numbers; anything else as one number.
fn expand_u64(v: &str) -> Result<Vec<u64>, ValueError> {
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| ValueError::NotInteger(s.to_string()))
    };
    let Some((a, rest)) = v.split_once("..") else {
        return Ok(vec![num(v)?]);
    };
    let (b, step) = match rest.split_once('/') {
        Some((b, s)) => (num(b)?, num(s)?),
        None => (num(rest)?, 1),
    };
    let a = num(a)?;
    if step == 0 {
        return Err(ValueError::ZeroStep(v.to_string()));
    }
    if b < a {
        return Err(ValueError::Reversed(v.to_string()));
    }
    if (b - a) / step >= MAX_RUNS {
        return Err(ValueError::TooManyValues(v.to_string()));
    }
    Ok((a..=b).step_by(step as usize).collect())
}

/// One assignment's values: ranges expanded where the key takes them.
fn expand(key: &ParamKey, v: &str) -> Result<Vec<String>, ValueError> {
    match key {
        ParamKey::Cost(_) if v.contains("..") => {
            Ok(expand_u64(v)?.into_iter().map(|n| n.to_string()).collect())
        }
        ParamKey::Workload if v.contains("..") => {
            // hogs:A..B[/S][@LIST]
            let (head, at) = match v.split_once('@') {
                Some((h, l)) => (h, Some(l)),
                None => (v, None),
            };
            let range = head
                .trim()
                .strip_prefix("hogs:")
                .ok_or_else(|| ValueError::NotAHogRange(v.to_string()))?;
            Ok(expand_u64(range)?
                .into_iter()
                .map(|n| match (n, at) {
                    (0, _) => "idle".to_string(),
                    (n, Some(l)) => format!("hogs:{n}@{l}"),
                    (n, None) => format!("hogs:{n}"),
                })
                .collect())
        }
        _ => Ok(vec![v.to_string()]),
    }
}

/// Builds one point: applies the chosen values to `base` in key order and checks the result.
fn point(index: u64, base: &Scenario, chosen: &[(&ParamKey, &str)]) -> Result<Point, PointError> {
    let mut s = base.clone();
    let mut params = Vec::with_capacity(chosen.len());
    for (key, value) in chosen {
        let ctx = |why| PointError::Value {
            key: (*key).clone(),
            value: (*value).to_string(),
            why,
        };
        let number = apply(&mut s, key, value).map_err(ctx)?;
        params.push(SweepParam {
            key: (*key).clone(),
            value: (*value).to_string(),
            number,
        });
    }
    let nr = s.machine.topology.nr_cpus();
    s.kernel.resolve(nr).map_err(|e| match e {
        KernelError::Version(v) => PointError::Version(v),
        KernelError::Cmdline(error) => PointError::Cmdline {
            point: describe(&params),
            error,
        },
    })?;
    if !chosen.is_empty() {
        s.name = describe(&params);
    }
    Ok(Point {
        index,
        params,
        scenario: s,
    })
}

/// `key=value key=value` of a point, for names and errors.
fn describe(params: &[SweepParam]) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|p| format!("{}={}", p.key.name(), p.value))
        .collect();
    if parts.is_empty() {
        "the base scenario".into()
    } else {
        parts.join(" ")
    }
}

/// Applies one value to the scenario; returns the number it stands for, if any.
fn apply(s: &mut Scenario, key: &ParamKey, value: &str) -> Result<Option<f64>, ApplyError> {
    let v = value.trim();
    match key {
        ParamKey::Machine => {
            s.machine = machine::preset(v).ok_or(ApplyError::Machine)?;
            Ok(None)
        }
        ParamKey::KernelVersion => {
            s.kernel.version = v.to_string();
            let (a, b) = s.kernel.version_tuple().map_err(ApplyError::Version)?;
            Ok(Some(a as f64 + b as f64 / 1000.0))
        }
        ParamKey::Hz => {
            let hz = v.parse::<u32>().map_err(|_| ApplyError::HzNotANumber)?;
            let hz = check_hz(hz).map_err(ApplyError::Hz)?;
            s.kernel.hz = hz;
            Ok(Some(hz as f64))
        }
        ParamKey::Nohz => {
            s.kernel.nohz = serde_json::from_value(serde_json::Value::String(v.into()))
                .map_err(|_| ApplyError::Nohz)?;
            Ok(None)
        }
        ParamKey::Cmdline => {
            s.kernel.cmdline = value.to_string();
            Ok(None)
        }
        ParamKey::Cost(field) => set_cost(s, field, v).map(Some).map_err(ApplyError::Cost),
        ParamKey::Workload => {
            let w =
                Workload::parse(v, s.machine.topology.nr_cpus()).map_err(ApplyError::Workload)?;
            let number = match &w.groups[..] {
                [] => Some(0.0),
                [TaskGroup::Hogs { count, .. }] => Some(*count as f64),
                // A bsp job's number is its rank count: excess against N.
                [TaskGroup::Bsp { ranks, .. }] => Some(*ranks as f64),
                _ => None,
            };
            s.workload = w;
            Ok(number)
        }
        ParamKey::Duration => {
            s.run.duration_ns = parse_duration(v).map_err(ApplyError::Duration)?;
            Ok(Some(s.run.duration_ns as f64 / 1e9))
        }
        ParamKey::Warmup => {
            s.run.warmup_ns =
                ticklab_schema::units::parse_warmup(v).map_err(ApplyError::Duration)?;
            Ok(Some(s.run.warmup_ns as f64 / 1e9))
        }
    }
}

/// Sets `cost.FIELD` (a dotted path into the machine's costs, e.g.
/// `context_tracking.rcu_eqs_ns`) to a number; the field keeps its type (an integer field
/// takes a non-negative integer).
fn set_cost(s: &mut Scenario, path: &str, v: &str) -> Result<f64, CostError> {
    let json = |e: serde_json::Error| CostError::Json(e.to_string());
    let mut costs = serde_json::to_value(&s.machine.costs).map_err(json)?;
    let fields_of = |o: &serde_json::Map<String, serde_json::Value>| {
        o.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    let mut slot = &mut costs;
    for part in path.split('.') {
        let obj = slot
            .as_object_mut()
            .ok_or_else(|| CostError::NotATable(path.to_string()))?;
        let fields = fields_of(obj);
        slot = obj.get_mut(part).ok_or_else(|| CostError::NoField {
            field: part.to_string(),
            fields,
        })?;
    }
    let (new, number) = match slot {
        serde_json::Value::Number(n) if n.is_f64() => {
            let x: f64 = v
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or(CostError::Negative)?;
            (serde_json::json!(x), x)
        }
        serde_json::Value::Number(_) => {
            let x: u64 = v.parse().map_err(|_| CostError::NotAnInteger)?;
            (serde_json::json!(x), x as f64)
        }
        _ => return Err(CostError::NotANumber(path.to_string())),
    };
    *slot = new;
    s.machine.costs = serde_json::from_value(costs).map_err(json)?;
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklab_cmdline::NohzBuild;
    use ticklab_schema::scenario::{Kernel, Run, default_background};

    fn base() -> Scenario {
        Scenario {
            name: "base".into(),
            machine: machine::xps13_7390(),
            kernel: Kernel::new("6.3", 1000, NohzBuild::Full, ""),
            workload: Workload::default(),
            background: default_background(),
            run: Run::default(),
        }
    }

    fn sets(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn values_keep_their_commas_and_ranges_expand() {
        let g = Grid::from_sets(
            &sets(&[
                "workload=hogs:2@1,3",
                "workload=hogs:0..2",
                "hz=100",
                "seed=5..9/2",
            ]),
            Seeds::Base,
            1,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let axes: Vec<(String, Vec<String>)> =
            g.axes().map(|(k, v)| (k.name(), v.to_vec())).collect();
        assert_eq!(
            axes,
            [
                ("hz".to_string(), vec!["100".to_string()]),
                (
                    "workload".to_string(),
                    sets(&["hogs:2@1,3", "idle", "hogs:1", "hogs:2"])
                ),
            ]
        );
        assert_eq!(g.seeds(), [5, 7, 9]);
        assert_eq!((g.nr_points(), g.nr_runs()), (4, 12));
    }

    #[test]
    fn bad_assignments_table() {
        // (assignments, seeds, a word the error must hold)
        let cases: &[(&[&str], Seeds, &str)] = &[
            (&["hz"], Seeds::Base, "KEY=VALUE"),
            (&["hzz=100"], Seeds::Base, "hzz"),
            (&["hz=100", "hz=100"], Seeds::Base, "twice"),
            (&["seed=1"], Seeds::Count(3), "either"),
            (&["seed=3..1"], Seeds::Base, "A <= B"),
            (&["seed=1..5/0"], Seeds::Base, "step"),
            (&["seed=x"], Seeds::Base, "integer"),
            (&["workload=frames:1..3"], Seeds::Base, "hog count"),
            (&["seed=0..99999999999"], Seeds::Base, "more than"),
            (&[], Seeds::Count(0), "at least 1"),
        ];
        for (s, seeds, word) in cases {
            let e = Grid::from_sets(&sets(s), *seeds, 1).unwrap_err();
            assert!(e.to_string().contains(word), "{s:?}: {e}");
        }
    }

    #[test]
    fn points_apply_in_key_order_last_axis_fastest() {
        let g = Grid::from_sets(
            &sets(&[
                "workload=idle",
                "workload=hogs:8",
                "cmdline=nohz_full=all",
                "cmdline=nohz_full=all nohz_full_aggressive",
                "cost.tick_handler_ns=1234",
            ]),
            Seeds::Count(3),
            10,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ps = g.points(&base()).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = ps.iter().map(|p| p.scenario.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cmdline=nohz_full=all cost.tick_handler_ns=1234 workload=idle",
                "cmdline=nohz_full=all cost.tick_handler_ns=1234 workload=hogs:8",
                "cmdline=nohz_full=all nohz_full_aggressive cost.tick_handler_ns=1234 workload=idle",
                "cmdline=nohz_full=all nohz_full_aggressive cost.tick_handler_ns=1234 workload=hogs:8",
            ]
        );
        assert_eq!(ps[1].scenario.machine.costs.tick_handler_ns, 1234);
        assert_eq!(ps[1].params[2].number, Some(8.0));
        assert_eq!(g.seeds(), [10, 11, 12]);
    }

    #[test]
    fn flags_and_file_are_one_sweep() {
        let flags = Grid::from_sets(
            &sets(&[
                "workload=hogs:1..2",
                "hz=100",
                "hz=1000",
                "seed=1",
                "seed=2",
            ]),
            Seeds::Base,
            1,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let file = Grid::from_toml(
            "hz = [100, 1000]\nworkload = \"hogs:1..2\"\nseed = [1, 2]\n",
            "s.toml",
            1,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(flags, file);
        assert_eq!(flags.id(&base()), file.id(&base()));
        let other = Grid::from_toml("hz = [100]\n", "s.toml", 1).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(flags.id(&base()), other.id(&base()));
        let e = Grid::from_toml("hz = [true]\n", "s.toml", 1).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("s.toml: hz"));
        assert!(matches!(e.kind, GridErrorKind::Value(_)), "{e}");
    }

    #[test]
    fn points_refuse_what_does_not_apply() {
        // (assignment, a word the error must hold)
        let cases = [
            ("machine=xps", "preset"),
            ("hz=1001", "CONFIG_HZ"),
            ("nohz=sometimes", "periodic"),
            ("cost.no_such_ns=1", "expected a cost field"),
            ("cost.work_unit_ns=-1", "non-negative"),
            ("cost.tick_handler_ns=1.5", "integer"),
            ("workload=hogs:9", "hogs:9"),
            ("cmdline=nohz_full=99", "nohz_full=99"),
            ("kernel-version=six", "MAJOR.MINOR"),
            ("duration=10", "unit"),
        ];
        for (set, word) in cases {
            let g = Grid::from_sets(&sets(&[set]), Seeds::Base, 1)
                .unwrap_or_else(|e| panic!("{set}: {e}"));
            let e = g.points(&base()).unwrap_err();
            assert!(matches!(e.kind, GridErrorKind::Point(_)), "{set}: {e}");
            assert!(e.to_string().contains(word), "{set}: {e}");
        }
    }
}
