//! The JSON Schemas in docs/schema/ (issue 16): each is exactly what `ticklab json-schema`
//! generates from the Rust types (so the files cannot drift from the code), and every JSON
//! output of those kinds validates against its schema. Set `UPDATE_JSON_SCHEMA=1` to rewrite
//! the files after changing a type.

use serde_json::Value;

mod common;
use common::stdout_of as stdout;

fn schema_file(kind: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/schema")
        .join(format!("{kind}.schema.json"))
}

fn validator(kind: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(schema_file(kind)).expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{kind}: not a schema: {e}"))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{what}: {errors:?}");
}

#[test]
fn committed_schemas_are_the_generated_ones() {
    for kind in ["report", "sweep-row", "sweep-summary"] {
        let generated = stdout(&["json-schema", kind]);
        if std::env::var_os("UPDATE_JSON_SCHEMA").is_some() {
            std::fs::write(schema_file(kind), &generated).expect("write schema");
        }
        let committed = std::fs::read_to_string(schema_file(kind)).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/schema/{kind}.schema.json is stale: rerun with UPDATE_JSON_SCHEMA=1"
        );
    }
}

#[test]
fn every_report_output_validates() {
    let report = validator("report");
    // One report per workload kind the twin writes, on machines that run it.
    let sims: &[&[&str]] = &[
        &["--machine", "kvm-guest-2", "--workload", "idle"],
        &[
            "--machine",
            "xps13-7390",
            "--workload",
            "hogs:2",
            "--cmdline",
            "nohz_full=all",
        ],
        &[
            "--machine",
            "xps13-7390",
            "--workload",
            "frames:1000@1-3:loop=1000",
        ],
        &[
            "--machine",
            "xeon-e5-2650v3-2s",
            "--workload",
            "syscall:getpid@3:n=20000",
            "--cmdline",
            "nohz_full=1-39",
        ],
    ];
    for args in sims {
        let all: Vec<&str> = ["sim", "--json", "-q", "-D", "300ms"]
            .iter()
            .chain(*args)
            .copied()
            .collect();
        let doc: Value = serde_json::from_str(&stdout(&all)).expect("sim --json is JSON");
        assert_eq!(doc["schema_version"], 2);
        assert_valid(&report, &doc, &format!("{all:?}"));
    }
    let compare = stdout(&[
        "compare",
        "--json",
        "-q",
        "-D",
        "300ms",
        "--machine",
        "kvm-guest-2",
        "--cmdline",
        "",
        "--cmdline",
        "nohz_full=1",
    ]);
    let docs: Vec<Value> = serde_json::from_str(&compare).expect("compare --json is JSON");
    assert_eq!(docs.len(), 2);
    for d in &docs {
        assert_valid(&report, d, "compare --json");
    }
    // The schema is not a rubber stamp: a report without its CPUs, or with a count that is
    // not a number, is refused.
    let mut broken = docs[0].clone();
    if let Some(o) = broken.as_object_mut() {
        o.remove("cpus");
    }
    assert!(!report.is_valid(&broken));
    let mut broken = docs[0].clone();
    broken["cpus"][0]["loc"] = Value::from("many");
    assert!(!report.is_valid(&broken));
}

#[test]
fn host_outputs_carry_their_schema_version_and_host_run_validates() {
    for args in [
        &["host", "inspect", "--json"][..],
        &["host", "irqs", "--json", "-D", "200ms"],
    ] {
        let doc: Value = serde_json::from_str(&stdout(args)).expect("JSON");
        assert_eq!(doc["schema_version"], 1, "{args:?}");
    }
    let doc: Value = serde_json::from_str(&stdout(&[
        "host",
        "run",
        "--json",
        "-q",
        "--workload",
        "hogs:1",
        "-D",
        "300ms",
    ]))
    .expect("host run --json is JSON");
    assert_valid(&validator("report"), &doc, "host run --json");
}

#[test]
fn every_sweep_output_validates() {
    let sweep: &[&str] = &[
        "sweep",
        "-q",
        "--machine",
        "kvm-guest-2",
        "-D",
        "100ms",
        "--warmup",
        "50ms",
        "--set",
        "hz=250",
        "--set",
        "hz=1000",
        "--set",
        "workload=hogs:0..1",
        "--seeds",
        "2",
    ];
    let row = validator("sweep-row");
    let rows = stdout(sweep);
    assert_eq!(rows.lines().count(), 8);
    for l in rows.lines() {
        let v: Value = serde_json::from_str(l).expect("row is JSON");
        assert_eq!(v["schema_version"], 1);
        assert_valid(&row, &v, l);
    }
    let summary = validator("sweep-summary");
    let sums = stdout(&[sweep, &["--summary"]].concat());
    assert_eq!(sums.lines().count(), 4);
    for l in sums.lines() {
        let v: Value = serde_json::from_str(l).expect("summary is JSON");
        assert_valid(&summary, &v, l);
    }
    // A row is not a summary.
    let first: Value = serde_json::from_str(rows.lines().next().unwrap_or("{}")).expect("JSON");
    assert!(!summary.is_valid(&first));
}
