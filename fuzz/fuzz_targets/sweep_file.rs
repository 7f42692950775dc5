//! The sweep file of `sweep --file` (`lines::read_text` within the scenario file's limit,
//! then `Grid::from_toml`), and a grid it accepts laid over a small base scenario: no panic,
//! the identity of a grid is the same when computed twice, and the validation layer takes
//! every point it makes without a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use ticklab_schema::lines::read_text;
use ticklab_sweep::grid::Grid;
use ticklab_schema::scenario::MAX_SCENARIO_BYTES;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = read_text(data, MAX_SCENARIO_BYTES) else {
        return;
    };
    let Ok(grid) = Grid::from_toml(&text, "fuzz", 1) else {
        return;
    };
    let base = ticklab_schema::scenario::Scenario::from_toml(
        "machine = \"xps13-7390\"\nworkload = \"idle\"\n[kernel]\nversion = \"6.6\"\nhz = 250\nnohz = \"idle\"\n[run]\nduration = \"1ms\"\n",
        "base",
    )
    .expect("the base scenario");
    if let Ok(points) = grid.points(&base) {
        assert_eq!(grid.id(&base), grid.id(&base), "the identity is a function of the grid");
        for p in &points {
            // What `sweep` does next with a point: the validation layer, which must not panic.
            let _ = p.scenario.validate();
        }
    }
});
