//! Man pages for `ticklab` and every subcommand, generated from the one clap definition:
//! `ticklab man` (the top page), `ticklab man host run` (one subcommand's page, named
//! `ticklab-host-run(1)`), `ticklab man --dir DIR` (every page as `DIR/ticklab*.1`).
//!
//! Each page is clap_mangen's sections (name, synopsis, description, options, subcommands,
//! version) followed by an EXAMPLES section taken from [`EXAMPLES`], the README's usage lines
//! grouped by the subcommand they call, so a page never lists a flag the parser does not have
//! and its examples are the ones the README shows.

use std::io::Write;
use std::path::Path;

use clap::Command;

/// The README's examples, by subcommand path (words after `ticklab`): each line a command and,
/// after `#`, what it does.
pub(crate) const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "ticklab    # no subcommand: the twin reproduces experiment E1 beside the published table",
            "ticklab --help",
            "ticklab man --dir /usr/local/share/man/man1    # every page, as files",
        ],
    ),
    (
        "sim",
        &[
            "ticklab sim --machine xps13-7390 --hz 1000 --cmdline \"nohz_full=all nohz_full_aggressive\" --workload hogs:2",
            "ticklab sim --scenario experiments/e1-aggressive-2hogs.toml --json",
            "ticklab sim --scenario me.toml --workload hogs:2",
            "ticklab sim --machine kvm-guest-2 --hz 250 --workload frames:1000@1:loop=50000 --duration 5s --histogram",
        ],
    ),
    (
        "compare",
        &[
            "ticklab compare --workload hogs:1 --cmdline \"nohz_full=all\" --cmdline \"nohz_full=all nohz_full_aggressive\" --cmdline \"nohz=off\"",
        ],
    ),
    (
        "experiment",
        &[
            "ticklab experiment e1 --duration 60s",
            "ticklab experiment e1 --json",
            "ticklab experiment e2 --duration 10m    # frame jitter on 64 CPUs, with and without skew_tick",
            "ticklab experiment e2 -D 60s --per-cpu    # the summary and verdicts first, then the per-CPU tables",
            "ticklab experiment e3    # futex ping-pong in a KVM guest",
            "ticklab experiment e4    # what NO_HZ_FULL costs getpid() on three servers",
            "ticklab experiment e2 --ablate    # E2's 3.0-era mechanisms switched off one at a time",
        ],
    ),
    (
        "bench",
        &[
            "ticklab bench --duration 60s    # simulated events per second, best and median of 3 runs",
        ],
    ),
    (
        "host inspect",
        &[
            "ticklab host inspect    # HZ, tick mode per CPU, nohz/nohz_full/isolcpus, cpuidle, clocks",
        ],
    ),
    ("host irqs", &["ticklab host irqs --duration 10s"]),
    (
        "host audit",
        &[
            "ticklab host audit    # the nohz_full/isolcpus set: each check pass/warn/fail, its evidence and fix",
            "ticklab host audit --cpus 2-7 --json    # exit code 3 when a check fails",
        ],
    ),
    (
        "host why",
        &[
            "ticklab host why --duration 5s    # which hrtimers woke each CPU, and why the tick did not stop",
        ],
    ),
    (
        "host run",
        &[
            "ticklab host run --workload frames:1000@1:loop=50000 --duration 30s",
            "ticklab host run --workload syscall:getpid@0",
            "ticklab host run --workload hogs:2 --twin me.toml    # measured beside the twin of this host",
            "ticklab host run --workload frames:1000@1:loop=0 --histogram=100    # cyclictest -h layout",
            "ticklab host run --set haltpoll.guest_halt_poll_ns=0 --workload pingpong:futex@0,1:n=200000",
        ],
    ),
    (
        "host calibrate",
        &[
            "ticklab host calibrate > me.toml    # fit the twin to this host; a verdict per figure on stderr",
        ],
    ),
    (
        "host haltpoll-sweep",
        &[
            "ticklab host haltpoll-sweep    # root: ping-pong per guest_halt_poll_ns, beside the twin",
        ],
    ),
    (
        "vm",
        &[
            "ticklab vm --cmdline \"nohz_full=1\" --workload hogs:1@1    # the host lab inside the guest",
            "ticklab vm compare --cmdline \"nohz_full=1\" --workload hogs:1@1    # and the twin beside it",
        ],
    ),
    (
        "plot",
        &[
            "ticklab plot e1 -D 5s -o figures/",
            "ticklab plot e2 -D 60s --bars -o figures/    # the jitter distributions as cyclictest-style bars",
            "ticklab plot sweep.jsonl --metric irq_per_s --x workload -o irq.svg",
        ],
    ),
    (
        "report",
        &[
            "ticklab report e1 --html e1.html",
            "ticklab report sweep.jsonl --html sweep.html --x workload",
        ],
    ),
    (
        "completions",
        &["ticklab completions bash > /etc/bash_completion.d/ticklab"],
    ),
    ("man", &["ticklab man | man -l -", "ticklab man host run"]),
    ("json-schema", &["ticklab json-schema report"]),
];

/// The subcommand of `root` at `path` (words after `ticklab`), built so that its display name
/// is the page name (`ticklab-host-run`); `None` with the unknown word.
pub(crate) fn find<'a>(root: &'a Command, path: &[String]) -> Result<&'a Command, String> {
    let mut cmd = root;
    for word in path {
        cmd = cmd.find_subcommand(word).ok_or_else(|| {
            let known: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            format!(
                "no man page for `{}`: `{}` has the subcommands {}",
                path.join(" "),
                cmd.get_display_name().unwrap_or(cmd.get_name()),
                known.join(", ")
            )
        })?;
    }
    Ok(cmd)
}

/// The examples of the subcommand at `path` (empty when the README shows none).
fn examples(path: &str) -> &'static [&'static str] {
    EXAMPLES
        .iter()
        .find(|(p, _)| *p == path)
        .map_or(&[], |(_, e)| e)
}

/// Escapes one line for roff: backslashes, hyphens (so flags print as minus signs and can be
/// searched), and a leading control character.
fn roff_line(line: &str) -> String {
    let escaped = line.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// Writes one page: clap_mangen's sections, then EXAMPLES for `path`.
pub(crate) fn render(cmd: &Command, path: &str, out: &mut dyn Write) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(concat!("ticklab ", env!("CARGO_PKG_VERSION")))
        .manual("ticklab manual");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(out)?;
    }
    let ex = examples(path);
    if !ex.is_empty() {
        writeln!(out, ".SH EXAMPLES")?;
        for line in ex {
            writeln!(out, ".PP\n.nf\n{}\n.fi", roff_line(line))?;
        }
    }
    if cmd.get_version().is_some() {
        man.render_version_section(out)?;
    }
    Ok(())
}

/// Every page of `root` and its subcommands, depth first, with its file name and path.
pub(crate) fn all_pages(root: &Command) -> Vec<(String, String, Command)> {
    fn walk(cmd: &Command, path: &str, pages: &mut Vec<(String, String, Command)>) {
        let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
        pages.push((format!("{name}.1"), path.to_string(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let p = if path.is_empty() {
                sub.get_name().to_string()
            } else {
                format!("{path} {}", sub.get_name())
            };
            walk(sub, &p, pages);
        }
    }
    let mut pages = Vec::new();
    walk(root, "", &mut pages);
    pages
}

/// Writes every page into `dir` (created if missing); returns the files written.
pub(crate) fn write_dir(root: &Command, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (file, path, cmd) in all_pages(root) {
        let mut text = Vec::new();
        render(&cmd, &path, &mut text)?;
        let target = dir.join(file);
        std::fs::write(&target, text)?;
        written.push(target);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn root() -> Command {
        let mut c = crate::Cli::command().disable_help_subcommand(true);
        c.build();
        c
    }

    #[test]
    fn every_example_names_a_real_subcommand_and_starts_with_it() {
        let r = root();
        for (path, lines) in EXAMPLES {
            let words: Vec<String> = path.split_whitespace().map(String::from).collect();
            assert!(find(&r, &words).is_ok(), "{path}");
            for l in *lines {
                let want = if path.is_empty() {
                    "ticklab".to_string()
                } else {
                    format!("ticklab {path}")
                };
                assert!(l.starts_with(&want), "{l} is not an example of `{path}`");
            }
        }
    }

    #[test]
    fn every_subcommand_has_a_page_named_for_its_path() {
        let pages = all_pages(&root());
        let names: Vec<&str> = pages.iter().map(|(f, _, _)| f.as_str()).collect();
        for want in [
            "ticklab.1",
            "ticklab-sim.1",
            "ticklab-host-run.1",
            "ticklab-vm.1",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
    }

    #[test]
    fn a_page_has_its_examples_escaped() {
        let r = root();
        let cmd = find(&r, &["sim".to_string()]).unwrap();
        let mut out = Vec::new();
        render(cmd, "sim", &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.contains(".TH ticklab-sim 1"), "{page}");
        assert!(page.contains(".SH EXAMPLES"));
        assert!(page.contains("ticklab sim \\-\\-machine xps13\\-7390"));
    }

    #[test]
    fn an_unknown_page_names_the_word_and_the_choices() {
        let r = root();
        let e = find(&r, &["host".into(), "frob".into()]).unwrap_err();
        assert!(e.contains("host frob") && e.contains("inspect"), "{e}");
    }

    #[test]
    fn roff_escapes_table() {
        for (line, want) in [
            ("a-b", "a\\-b"),
            (".x", "\\&.x"),
            ("'x", "\\&'x"),
            ("a\\b", "a\\eb"),
        ] {
            assert_eq!(roff_line(line), want);
        }
    }
}
