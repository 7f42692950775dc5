//! `ticklab report --html` opened in a real browser: headless Chromium (Debian's
//! `chromium-headless-shell`; scripts/setup.sh installs it) loads each page from a file,
//! and the test checks that nothing went wrong while it rendered — no console message, no
//! error event, nothing the page tried to fetch — and that every figure is laid out with a
//! visible size.
//!
//! How: a copy of the page gets two small scripts (the page itself has none): one at the
//! top of `<head>` that records every `error` event (script errors and failed loads, which
//! are captured on the window), one at the end of `<body>` that, once the page has loaded
//! (every load done or failed), writes for each `<svg>`
//! its bounding box and number of drawn elements into a `<pre id="boxes">`. Chromium's
//! `--dump-dom` prints the DOM after load, with that `<pre>`; `--enable-logging=stderr`
//! prints console messages on stderr, which must have none.
//!
//! `#[ignore]`d because it needs the browser; CI runs the ignored tests as root after
//! installing it.

use std::path::Path;
use std::process::Command;

mod common;
use common::stdout_of as ticklab;

const PROBE_HEAD: &str = "<script>window.__errors=[];addEventListener('error',function(e){\
window.__errors.push(String(e.message||(e.target&&e.target.outerHTML)||e.type));},true);</script>";

const PROBE_BODY: &str = "<script>addEventListener('load',function(){var out=[];\
document.querySelectorAll('svg').forEach(function(s){var r=s.getBoundingClientRect();\
out.push(Math.round(r.width)+' '+Math.round(r.height)+' '+s.querySelectorAll('*').length);});\
var p=document.createElement('pre');p.id='boxes';p.textContent=out.join('\\n');\
document.body.appendChild(p);var e=document.createElement('pre');e.id='errors';\
e.textContent=window.__errors.join('\\n');document.body.appendChild(e);});</script>";

/// The text of `<pre id="ID">…</pre>` in the dumped DOM.
fn pre<'a>(dom: &'a str, id: &str) -> &'a str {
    let open = format!("<pre id=\"{id}\">");
    let start = dom
        .find(&open)
        .unwrap_or_else(|| panic!("no {open} in the DOM:\n{dom}"))
        + open.len();
    let end = dom[start..].find("</pre>").expect("</pre>") + start;
    &dom[start..end]
}

/// Opens `page` in headless Chromium and checks it (see the module documentation).
fn check_in_chromium(page: &Path) {
    let html = std::fs::read_to_string(page).expect("page");
    let figures = html.matches("<svg").count();
    assert!(figures > 0, "{}: no figure", page.display());
    let probed = html
        .replacen("<head>", &format!("<head>{PROBE_HEAD}"), 1)
        .replacen("</body>", &format!("{PROBE_BODY}</body>"), 1);
    let copy = page.with_extension("probe.html");
    std::fs::write(&copy, probed).expect("write probe copy");
    let out = Command::new("timeout")
        .args(["120", "chromium-headless-shell"])
        .args([
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1100,2000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", copy.display()))
        .output()
        .expect("chromium-headless-shell (apt-get install chromium-headless-shell)");
    assert!(out.status.success(), "chromium: {out:?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert_eq!(pre(&dom, "errors"), "", "error events");
    let boxes: Vec<(u32, u32, u32)> = pre(&dom, "boxes")
        .lines()
        .map(|l| {
            let v: Vec<u32> = l.split(' ').map(|x| x.parse().expect("number")).collect();
            (v[0], v[1], v[2])
        })
        .collect();
    assert_eq!(boxes.len(), figures, "every figure is in the DOM");
    for (i, &(w, h, elements)) in boxes.iter().enumerate() {
        assert!(w >= 300 && h >= 150, "figure {i} is {w}×{h} px");
        assert!(elements > 20, "figure {i} draws {elements} elements");
    }
}

#[test]
#[ignore = "needs chromium-headless-shell"]
fn report_pages_render_in_chromium() {
    let dir = std::env::temp_dir().join(format!("ticklab-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let e1 = dir.join("e1.html");
    ticklab(&[
        "report",
        "e1",
        "-D",
        "1s",
        "--html",
        e1.to_str().expect("path"),
    ]);
    check_in_chromium(&e1);
    let e3 = dir.join("e3.html");
    ticklab(&["report", "e3", "--html", e3.to_str().expect("path")]);
    check_in_chromium(&e3);
    std::fs::remove_dir_all(&dir).ok();
}

/// The check itself can fail: a page that loads a missing image is caught.
#[test]
#[ignore = "needs chromium-headless-shell"]
#[should_panic(expected = "error events")]
fn a_page_with_a_failed_load_fails_the_check() {
    let dir = std::env::temp_dir().join(format!("ticklab-html-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let page = dir.join("bad.html");
    let svg = "<svg width=\"400\" height=\"200\">".to_string()
        + &"<rect width=\"1\" height=\"1\"/>".repeat(30)
        + "</svg>";
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><head></head><body>{svg}<img src=\"missing.png\"></body></html>"
        ),
    )
    .expect("write");
    check_in_chromium(&page);
}
