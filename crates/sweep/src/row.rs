//! The sweep's data: a parameter and its key, one run's row, a point's summary over its seeds,
//! and the schema version they are written under.

use super::metrics::{CpuMetric, Metric, Metrics};
use super::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use ticklab_schema::report::CpuRole;

/// Version of the sweep row and summary schema (JSON lines and CSV). Adding optional fields
/// or metrics keeps it; renaming or removing one bumps it (docs/schema.md).
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// A scenario parameter a sweep can vary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum ParamKey {
    /// Machine preset name (`machine`).
    Machine,
    /// Kernel version MAJOR.MINOR (`kernel-version`).
    KernelVersion,
    /// CONFIG_HZ (`hz`).
    Hz,
    /// Tick build option: periodic, idle, full (`nohz`).
    Nohz,
    /// The kernel command line (`cmdline`).
    Cmdline,
    /// One field of the machine's [`Costs`](ticklab_schema::machine::Costs) (`cost.FIELD`).
    Cost(String),
    /// Workload spec (`workload`).
    Workload,
    /// Measured simulated time (`duration`).
    Duration,
    /// Simulated warm-up (`warmup`).
    Warmup,
}

impl ParamKey {
    /// The keys that take no field name, in the order a point applies them (machine first:
    /// the workload and the command line are read against its CPUs).
    pub const PLAIN: [ParamKey; 8] = [
        ParamKey::Machine,
        ParamKey::KernelVersion,
        ParamKey::Hz,
        ParamKey::Nohz,
        ParamKey::Cmdline,
        ParamKey::Workload,
        ParamKey::Duration,
        ParamKey::Warmup,
    ];

    /// The key as written on the command line and in CSV headers.
    pub fn name(&self) -> String {
        match self {
            ParamKey::Machine => "machine".into(),
            ParamKey::KernelVersion => "kernel-version".into(),
            ParamKey::Hz => "hz".into(),
            ParamKey::Nohz => "nohz".into(),
            ParamKey::Cmdline => "cmdline".into(),
            ParamKey::Cost(f) => format!("cost.{f}"),
            ParamKey::Workload => "workload".into(),
            ParamKey::Duration => "duration".into(),
            ParamKey::Warmup => "warmup".into(),
        }
    }

    /// Reads a key (`hz`, `kernel-version` or `kernel_version`, `cost.FIELD`); the error
    /// lists the keys. `seed` is not a [`ParamKey`]: seeds are the replicates of a point.
    pub fn parse(s: &str) -> Result<ParamKey, ParamKeyError> {
        if let Some(field) = s.strip_prefix("cost.") {
            if field.is_empty() {
                return Err(ParamKeyError::NoCostField(s.to_string()));
            }
            return Ok(ParamKey::Cost(field.to_string()));
        }
        let s2 = s.replace('_', "-");
        ParamKey::PLAIN
            .into_iter()
            .find(|k| k.name() == s2)
            .ok_or_else(|| ParamKeyError::Unknown(s.to_string()))
    }
}

/// The names of [`ParamKey::PLAIN`], comma-separated, for [`ParamKeyError::Unknown`].
fn plain_names() -> String {
    let names: Vec<String> = ParamKey::PLAIN.iter().map(ParamKey::name).collect();
    names.join(", ")
}

/// Why a sweep key was refused: the key as given and what a key can be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamKeyError {
    /// `cost.` without a field name.
    #[error("key {0:?}: expected cost.FIELD, e.g. cost.tick_handler_ns")]
    NoCostField(String),
    /// Not a key a sweep can vary.
    #[error("key {0:?}: expected one of {names}, cost.FIELD or seed", names = plain_names())]
    Unknown(String),
}

impl From<ParamKey> for String {
    fn from(k: ParamKey) -> String {
        k.name()
    }
}

impl TryFrom<String> for ParamKey {
    type Error = ParamKeyError;
    fn try_from(s: String) -> Result<ParamKey, ParamKeyError> {
        ParamKey::parse(&s)
    }
}

/// One swept parameter at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepParam {
    /// Which parameter.
    #[schemars(with = "String")]
    pub key: ParamKey,
    /// The value as given (`hogs:2@1,3`, `1000`, `nohz_full=all`).
    pub value: String,
    /// What the value counts, where it counts something: HZ, nanoseconds of a cost, seconds of
    /// a duration, hogs of a `hogs:N` workload (0 for `idle`), MAJOR + MINOR/1000 of a kernel
    /// version. `None` for categories (machine, command line, other workloads).
    pub number: Option<f64>,
}

/// One run of a sweep: a point's parameters, a seed and every metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepRow {
    /// Always [`SWEEP_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Identity of the whole sweep (base scenario, grid and seeds): rows of different sweeps
    /// are never merged.
    pub sweep: String,
    /// Index of this run in the whole sweep (points × seeds, seeds innermost).
    pub run: u64,
    /// Runs in the whole sweep.
    pub runs: u64,
    /// Index of the point (the parameters without the seed).
    pub point: u64,
    /// The swept parameters of the point, in grid order.
    pub params: Vec<SweepParam>,
    /// The run's seed.
    pub seed: u64,
    /// The machine and kernel the run simulated, for figure titles (absent in rows written
    /// before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SweepSetup>,
    /// What the run produced.
    pub metrics: Metrics,
}

/// What a sweep run ran on, in words a figure title can carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepSetup {
    /// Machine preset name (`xps13-7390`).
    pub machine: String,
    /// Kernel version (`6.3`).
    pub kernel: String,
    /// CONFIG_HZ.
    pub hz: u32,
}

/// One CPU's metrics over the seeds of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuSummary {
    /// Logical CPU number.
    pub cpu: u32,
    /// Its role in the tick configuration (the same for every seed).
    pub role: CpuRole,
    /// Statistics per metric.
    pub values: BTreeMap<CpuMetric, Stats>,
}

/// One point of a sweep, over its seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepSummary {
    /// Always [`SWEEP_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Identity of the sweep (as in its rows).
    pub sweep: String,
    /// Index of the point.
    pub point: u64,
    /// The swept parameters of the point.
    pub params: Vec<SweepParam>,
    /// The seeds folded, in run order.
    pub seeds: Vec<u64>,
    /// The setup of the point's first row ([`SweepRow::setup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<SweepSetup>,
    /// Machine-wide statistics per metric (metrics no seed produced are absent).
    pub aggregate: BTreeMap<Metric, Stats>,
    /// Per-CPU statistics, in CPU order (CPUs of the first seed's run).
    pub cpus: Vec<CpuSummary>,
}

impl SweepSummary {
    /// Folds rows into one summary per point, in the order points first appear. Rows of one
    /// point are consecutive in a sweep's output; they need not be here.
    pub fn of_rows(rows: &[SweepRow]) -> Vec<SweepSummary> {
        let mut order: Vec<u64> = Vec::new();
        let mut by_point: BTreeMap<u64, Vec<&SweepRow>> = BTreeMap::new();
        for r in rows {
            by_point
                .entry(r.point)
                .or_insert_with(|| {
                    order.push(r.point);
                    Vec::new()
                })
                .push(r);
        }
        order
            .into_iter()
            .filter_map(|p| by_point.get(&p).map(|rs| SweepSummary::of_point(rs)))
            .collect()
    }

    /// The summary of one point's rows (at least one).
    fn of_point(rows: &[&SweepRow]) -> SweepSummary {
        let first = rows[0];
        let aggregate = Metric::ALL
            .into_iter()
            .filter_map(|m| {
                let xs: Vec<f64> = rows
                    .iter()
                    .filter_map(|r| r.metrics.aggregate.get(&m).copied())
                    .collect();
                if m.is_fraction() {
                    Stats::of_fraction(&xs)
                } else {
                    Stats::of(&xs)
                }
                .map(|s| (m, s))
            })
            .collect();
        let cpus = first
            .metrics
            .cpus
            .iter()
            .enumerate()
            .map(|(i, c)| CpuSummary {
                cpu: c.cpu,
                role: c.role,
                values: CpuMetric::ALL
                    .into_iter()
                    .filter_map(|m| {
                        let xs: Vec<f64> = rows
                            .iter()
                            .filter_map(|r| r.metrics.cpus.get(i))
                            .filter_map(|c| c.values.get(&m).copied())
                            .collect();
                        if m.is_fraction() {
                            Stats::of_fraction(&xs)
                        } else {
                            Stats::of(&xs)
                        }
                        .map(|s| (m, s))
                    })
                    .collect(),
            })
            .collect();
        SweepSummary {
            schema_version: SWEEP_SCHEMA_VERSION,
            sweep: first.sweep.clone(),
            point: first.point,
            params: first.params.clone(),
            seeds: rows.iter().map(|r| r.seed).collect(),
            setup: first.setup.clone(),
            aggregate,
            cpus,
        }
    }
}
