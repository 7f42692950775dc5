//! Reading a sweep's JSON lines back into typed rows (`merge`, `plot`, `report`, `sweep
//! --resume`), line by line within the limits of [`ticklab_schema::lines`].

use super::grid::MAX_RUNS;
use super::row::SweepRow;
use std::io::BufRead;
use ticklab_schema::lines::{LinesError, MAX_LINE_BYTES, MAX_LINES_TOTAL_BYTES, for_each_line};

/// Reads every non-blank line of `input` as a [`SweepRow`]; stops at the first line that is
/// not one (its number and the parser's message in the error) or at a limit.
pub fn read_rows(input: impl BufRead) -> Result<Vec<SweepRow>, LinesError> {
    let mut rows = Vec::new();
    for_each_line(input, MAX_LINE_BYTES, MAX_LINES_TOTAL_BYTES, |_, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        if rows.len() as u64 >= MAX_RUNS {
            return Err(NotARow::TooMany);
        }
        let row: SweepRow = serde_json::from_str(line).map_err(NotARow::Json)?;
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

/// Why a line was refused as a row (the line's number is [`LinesError::Line`]'s).
#[derive(Debug, thiserror::Error)]
enum NotARow {
    /// One row more than any sweep has.
    #[error("more than {MAX_RUNS} rows: no sweep has that many runs")]
    TooMany,
    /// Not the JSON of a row.
    #[error("expected a row of `ticklab sweep` (JSON lines): {0}")]
    Json(serde_json::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_their_errors() {
        assert_eq!(read_rows(&b"\n \n"[..]), Ok(Vec::new()));
        let e = read_rows(&b"\ny\n"[..]).unwrap_err();
        assert!(matches!(e, LinesError::Line { line: 2, .. }), "{e}");
        let yes = std::io::BufReader::new(std::io::repeat(b'y'));
        assert!(matches!(
            read_rows(yes),
            Err(LinesError::LineTooLong { line: 1, .. })
        ));
    }
}
