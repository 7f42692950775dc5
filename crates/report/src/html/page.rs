//! The page's parts every HTML report shares: the style sheet, escaping, tables, definition
//! lists, figures with their numbers, band verdicts and the page frame.

use crate::format::fixed;
use crate::plot::Figure;
use std::fmt::Write;
use ticklab_schema::experiment::BandCheck;

/// The page's style sheet (inline; no web font, system sans-serif).
pub(super) const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:82rem;\
padding:0 1rem;color:#1b1b1b;line-height:1.45}\
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;\
border-bottom:1px solid #ddd;padding-bottom:.2rem}\
p.sub{color:#555;margin-top:0}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}\
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}\
th,td{border-bottom:1px solid #e3e3e3;padding:.2rem .5rem;text-align:left;vertical-align:top;\
white-space:nowrap}\
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}\
td.pub{color:#555;font-style:italic}td.ok{color:#05703a}td.fail{color:#b00020;font-weight:600}\
figure{margin:1rem 0 .3rem}figure svg{max-width:100%;height:auto;border:1px solid #eee}\
figcaption{color:#555;font-size:.85rem}footer{margin-top:2rem;color:#777;font-size:.8rem}";

/// `s` with `&`, `<`, `>`, `"` and `'` escaped for text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One table cell.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    /// Text, left-aligned.
    Text(String),
    /// A number, right-aligned.
    Num(String),
    /// A published figure, right-aligned, set apart.
    Pub(String),
    /// A band check's verdict.
    Verdict(bool),
}

pub(super) fn table(head: &[&str], rows: &[Vec<Cell>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>\n");
    for row in rows {
        s.push_str("<tr>");
        for c in row {
            let _ = match c {
                Cell::Text(t) => write!(s, "<td>{}</td>", escape(t)),
                Cell::Num(t) => write!(s, "<td class=\"n\">{}</td>", escape(t)),
                Cell::Pub(t) => write!(s, "<td class=\"n pub\">{}</td>", escape(t)),
                Cell::Verdict(true) => write!(s, "<td class=\"ok\">ok</td>"),
                Cell::Verdict(false) => write!(s, "<td class=\"fail\">FAIL</td>"),
            };
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    s
}

pub(super) fn definitions(items: &[(&str, String)]) -> String {
    let mut s = String::from("<dl>\n");
    for (k, v) in items {
        let _ = writeln!(s, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
    }
    s.push_str("</dl>\n");
    s
}

fn figures(figs: &[Figure]) -> String {
    let mut s = String::new();
    for f in figs {
        let _ = writeln!(
            s,
            "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption></figure>",
            escape(&f.id),
            f.svg.trim_end(),
            escape(&f.title)
        );
    }
    s
}

/// Each figure followed by its table (the numbers it was drawn from).
pub(super) fn figures_with_tables(figs: &[Figure], tables: &[String]) -> String {
    debug_assert_eq!(figs.len(), tables.len(), "one table per figure");
    let mut s = String::new();
    for (f, t) in figs.iter().zip(tables) {
        s += &figures(std::slice::from_ref(f));
        s += t;
    }
    s
}

pub(super) fn bands(checks: &[BandCheck], decimals: usize) -> String {
    let rows: Vec<Vec<Cell>> = checks
        .iter()
        .map(|c| {
            vec![
                Cell::Verdict(c.ok),
                Cell::Text(c.what.clone()),
                Cell::Num(fixed(c.value, decimals)),
                Cell::Pub(fixed(c.target, decimals)),
                Cell::Text(c.band.clone()),
            ]
        })
        .collect();
    let passed = checks.iter().filter(|c| c.ok).count();
    format!(
        "{}<p>{passed} of {} checks inside their bands.</p>\n",
        table(&["", "check", "twin", "target", "band"], &rows),
        checks.len()
    )
}

/// The whole page: title, subtitle, then `(heading, body)` sections.
pub(super) fn page(title: &str, subtitle: &str, sections: &[(&str, String)]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n\
         <p class=\"sub\">{}</p>\n",
        escape(subtitle),
        t = escape(title)
    );
    for (h, body) in sections {
        let _ = write!(s, "<section>\n<h2>{}</h2>\n{body}</section>\n", escape(h));
    }
    let _ = write!(
        s,
        "<footer>ticklab {} — typed results rendered by ticklab-report; published figures in \
         italics.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    s
}

pub(super) fn secs(ns: u64) -> String {
    format!("{} s", ns as f64 / 1e9)
}
