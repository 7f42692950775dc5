//! Helpers shared by the twin's integration tests.

use ticklab_schema::scenario::Scenario;

/// Checks that `experiments/FILE` holds scenario `s` (its name aside, which a file may word
/// freely). With `UPDATE_SCENARIOS` set, first writes `s` there under the comment `header`
/// (lines without their `# `), so that the file is regenerated from the code that defines it.
pub(crate) fn assert_scenario_file_current(file: &str, header: &str, s: &Scenario) {
    let path = format!("{}/../../experiments/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_SCENARIOS").is_some() {
        let comment: String = header.lines().map(|l| format!("# {l}\n")).collect();
        std::fs::write(&path, format!("{comment}{}", s.to_toml())).unwrap();
    }
    let loaded = Scenario::load(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        loaded,
        Scenario {
            name: loaded.name.clone(),
            ..s.clone()
        },
        "{path}"
    );
}
