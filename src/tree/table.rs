//! The tree's one table (text, JSON or Markdown on stdout) and its reports: `--output
//! [FORMAT:]DIR` (and `--report DIR`, JSON) name folders, each given one report per run, its file
//! name the run's path with `/` as `__`, written atomically.

use super::{verify_all, walk, Row, Tree, LIMITS};
use crate::fatal::{fatal, Fatal};
use crate::input;
use crate::output::{self, escape, Format};
use rigaudit_audit::{Report, Severity};
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How a tree's results are shown, as plain values the caller takes from its options.
pub struct Options {
    /// The table's format on stdout (`--format`: text, json or markdown).
    pub format: Format,
    /// The severity that fails a run (`--fail-on`).
    pub fail_on: Option<Severity>,
    /// `--report DIR`: a folder for each run's JSON report.
    pub report: Option<PathBuf>,
    /// `--output [FORMAT:]DIR`: folders for each run's report in a format.
    pub outputs: Vec<String>,
    /// `--quiet`: no progress line on a terminal.
    pub quiet: bool,
}

/// `verify DIR` on a tree: every run verified, the table printed, each run's report written to
/// every output folder; the exit code is the worst run's (0 pass, 1 fail, 3 incomplete: its
/// report was, or it could not be read).
/// `finish` makes a run's report as it leaves the tool (the policy applied).
pub fn verify(
    tree: &Tree,
    opts: &Options,
    finish: &(dyn Fn(Report) -> Report + Sync),
) -> Result<ExitCode, Fatal> {
    let shown = opts.format;
    if !matches!(shown, Format::Text | Format::Json | Format::Markdown) {
        return Err(fatal(format!(
            "{}: a folder of many runs prints its table as text, json or markdown; write each run's report in another format with --output FORMAT:DIR",
            input::shown_path(&tree.root)
        )));
    }
    let dirs = output_dirs(opts)?;
    let walked = walk(&tree.root, LIMITS)?;
    let places = super::submission::results_as_places(walked.places.clone());
    // Without a folder to write the reports to, a row keeps its verdict and counts only: a round
    // of thousands of runs is not held in memory whole.
    let keep_whole = !dirs.is_empty();
    let lean = |r: Report| {
        let mut r = finish(r);
        if !keep_whole {
            r.findings = Vec::new();
            r.recomputed = Vec::new();
            r.checks_run = Vec::new();
            r.artifacts = Vec::new();
        }
        r
    };
    let (mut rows, found_left_out) = verify_all(tree, &places, (opts.fail_on, opts.quiet), &lean);
    rows.extend(walked.unlisted.iter().map(|(dir, why)| Row {
        run: super::relative(&tree.root, dir),
        tool: "unknown".into(),
        report: Err(format!("{why}: the folder's runs, if any, are not checked")),
    }));
    rows.sort_by(|a, b| a.run.cmp(&b.run));
    let mut left_out: Vec<(String, String)> = walked
        .left_out
        .iter()
        .chain(&found_left_out)
        .map(|l| (super::relative(&tree.root, &l.path), l.why.clone()))
        .collect();
    left_out.sort();
    if rows.is_empty() {
        // A folder inside a bundle is named as such, with the bundle's folder to give.
        if let Some(e) = crate::advice::undetected(std::slice::from_ref(&tree.root)) {
            return Err(e);
        }
        return Err(fatal(format!(
            "{}: no run found in the folder: no bundle, and no result file of a format rigaudit imports ({}){}",
            input::shown_path(&tree.root),
            crate::import::Format::all_names(),
            left_out_said(&left_out)
        )));
    }
    write_reports(&tree.root, &rows, &dirs)?;
    let root = input::shown_path(&tree.root);
    let table = Table {
        rows: &rows,
        left_out: &left_out,
    };
    print!("{}", render(&root, &table, shown));
    let worst = rows.iter().map(Row::exit_code).max().unwrap_or(3);
    Ok(ExitCode::from(worst as u8))
}

/// For the error of a tree with no run: what it held that was left out, in short.
fn left_out_said(left_out: &[(String, String)]) -> String {
    match left_out.first() {
        None => String::new(),
        Some((path, why)) => format!(
            "; left out: {} entr{} (the first: {}: {why})",
            left_out.len(),
            if left_out.len() == 1 { "y" } else { "ies" },
            input::shown(path)
        ),
    }
}

/// What a tree's table shows: its runs, and what it left out (path relative to the root, why).
pub struct Table<'a> {
    pub rows: &'a [Row],
    pub left_out: &'a [(String, String)],
}

/// The most left-out entries the text and Markdown tables name (JSON names them all).
const LEFT_OUT_SHOWN: usize = 50;

/// The folders `--output` and `--report` name, made when missing; a name that asks for one file
/// (by its extension) is refused, since a tree has a report per run.
fn output_dirs(opts: &Options) -> Result<Vec<(Format, PathBuf)>, Fatal> {
    let mut out = output::report_files(opts.report.as_deref());
    for spec in &opts.outputs {
        out.push(match spec.split_once(':') {
            Some((f, dir)) if <Format as clap::ValueEnum>::from_str(f, true).is_ok() => {
                let f = <Format as clap::ValueEnum>::from_str(f, true).unwrap_or(Format::Json);
                (f, PathBuf::from(dir))
            }
            _ => (Format::Json, PathBuf::from(spec)),
        });
    }
    for (_, dir) in &out {
        if !dir.is_dir() && Format::of_path(dir).is_some() {
            return Err(fatal(format!(
                "{}: a folder of many runs writes one report per run: name a folder (FORMAT:DIR), not a file",
                input::shown_path(dir)
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            fatal(format!(
                "{}: cannot make the folder: {e}",
                input::shown_path(dir)
            ))
        })?;
    }
    Ok(out)
}

/// Writes each run's report into each folder, atomically; SARIF and annotations name the run's
/// files from the repository that holds the tree (or from the run's folder).
fn write_reports(root: &Path, rows: &[Row], dirs: &[(Format, PathBuf)]) -> Result<(), Fatal> {
    for (format, dir) in dirs {
        let mut taken = HashSet::new();
        for row in rows {
            let name = file_name(&row.run, extension(*format), &mut taken);
            let run = root.join(&row.run);
            let base = if run.is_dir() {
                Some(run.as_path())
            } else {
                run.parent()
            };
            let places = output::Places::new(base, None);
            let text = match &row.report {
                Ok(r) => output::render(r, *format, output::Style::default(), &places),
                Err(why) => refused_text(row, why, *format),
            };
            output::write_atomic(&dir.join(name), text.as_bytes())?;
        }
    }
    Ok(())
}

/// What a run that could not be checked leaves in its report file: JSON for the machine formats,
/// a line of text otherwise, escaped for the file's format.
fn refused_text(row: &Row, why: &str, format: Format) -> String {
    match format {
        Format::Json | Format::Sarif | Format::Intoto => {
            let v =
                json!({"run": row.run, "tool": row.tool, "verdict": "incomplete", "error": why});
            escape::json(&serde_json::to_string_pretty(&v).unwrap_or_default()) + "\n"
        }
        _ => {
            let esc: fn(&str) -> String = match format {
                Format::Markdown => escape::markdown_text,
                Format::Html => escape::html_text,
                Format::Junit => escape::xml_text,
                _ => escape::terminal,
            };
            let why = esc(&escape::terminal(why));
            let line = format!("{}: incomplete, not read: {why}", esc(&row.run));
            escape::no_command(&line).into_owned() + "\n"
        }
    }
}

fn extension(f: Format) -> &'static str {
    match f {
        Format::Text => "txt",
        Format::Json => "json",
        Format::Sarif => "sarif",
        Format::Markdown => "md",
        Format::Junit => "xml",
        Format::Intoto => "intoto.json",
        Format::Html => "html",
        Format::Github => "github.txt",
    }
}

/// A run's report file name: its path with `/` as `__`, other characters than letters, digits,
/// `.`, `-` and `_` as `_`, cut to 180 bytes; a name already taken gets `-2`, `-3`, ...
pub fn file_name(run: &str, ext: &str, taken: &mut HashSet<String>) -> String {
    let mut base: String = run
        .replace('/', "__")
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    if base.trim_matches('.').is_empty() {
        base = "run".into();
    }
    if base.starts_with('.') {
        base.insert(0, '_');
    }
    base.truncate(180);
    let mut name = format!("{base}.{ext}");
    let mut n = 1;
    while !taken.insert(name.clone()) {
        n += 1;
        name = format!("{base}-{n}.{ext}");
    }
    name
}

/// One row's verdict and counts (errors, warnings, infos).
fn cells(row: &Row) -> (&'static str, usize, usize, usize) {
    match &row.report {
        Ok(r) => {
            let v = match r.exit_code() {
                0 => "pass",
                1 => "fail",
                _ => "incomplete",
            };
            (v, r.counts.error, r.counts.warning, r.counts.info)
        }
        Err(_) => ("incomplete", 0, 0, 0),
    }
}

/// The table in the format asked for.
pub fn render(root: &str, t: &Table, f: Format) -> String {
    match f {
        Format::Json => json_table(root, t),
        Format::Markdown => markdown_table(t),
        _ => text_table(t),
    }
}

fn json_table(root: &str, t: &Table) -> String {
    let rows = t.rows;
    let runs: Vec<_> = rows
        .iter()
        .map(|row| {
            let (verdict, e, w, i) = cells(row);
            let mut v = json!({"run": row.run, "tool": row.tool, "verdict": verdict, "errors": e, "warnings": w, "infos": i});
            if let Err(why) = &row.report {
                v["error"] = json!(why);
            }
            v
        })
        .collect();
    let worst = rows.iter().map(Row::exit_code).max().unwrap_or(3);
    let verdict = match worst {
        0 => "pass",
        1 => "fail",
        _ => "incomplete",
    };
    let left_out: Vec<_> = t
        .left_out
        .iter()
        .map(|(path, why)| json!({"path": path, "why": why}))
        .collect();
    let mut counts = tally(rows);
    counts["left_out"] = json!(left_out.len());
    let v = json!({"format": "rigaudit/tree/1", "command": "verify", "root": root, "verdict": verdict, "exit_code": worst, "counts": counts, "runs": runs, "left_out": left_out});
    escape::json(&serde_json::to_string_pretty(&v).unwrap_or_default()) + "\n"
}

/// The runs counted by verdict.
fn tally(rows: &[Row]) -> serde_json::Value {
    let n = |v: &str| rows.iter().filter(|r| cells(r).0 == v).count();
    json!({"runs": rows.len(), "pass": n("pass"), "fail": n("fail"), "incomplete": n("incomplete")})
}

fn text_table(t: &Table) -> String {
    let rows = t.rows;
    let w = rows
        .iter()
        .map(|r| escape::terminal(&r.run).chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let mut s = format!(
        "{:<w$}  {:<12}  {:<10}  {:>6}  {:>8}\n",
        "RUN", "TOOL", "VERDICT", "ERRORS", "WARNINGS"
    );
    for row in rows {
        let (v, e, wa, _) = cells(row);
        s += &format!(
            "{:<w$}  {:<12}  {:<10}  {:>6}  {:>8}\n",
            escape::terminal(&row.run),
            escape::terminal(&row.tool),
            v,
            e,
            wa
        );
    }
    s += &refusals(rows, "", escape::terminal);
    s += &left_out_lines(t.left_out, "  ", escape::terminal);
    // A run's name starts its line: none may start a workflow command.
    let mut s: String = s
        .lines()
        .map(|l| escape::no_command(l).into_owned() + "\n")
        .collect();
    s += &last_line(t);
    s
}

/// The table's last line: the runs by verdict, in the table's words (a run that could not be read
/// is incomplete there and here), and what was left out.
fn last_line(t: &Table) -> String {
    let n = tally(t.rows);
    let left = match t.left_out.len() {
        0 => String::new(),
        k => format!("; {k} left out (no run checked; listed above)"),
    };
    format!(
        "{} runs: {} pass, {} fail, {} incomplete{left}\n",
        n["runs"], n["pass"], n["fail"], n["incomplete"]
    )
}

/// What the walk left out, one line each (at most [`LEFT_OUT_SHOWN`]), under a heading.
fn left_out_lines(left_out: &[(String, String)], bullet: &str, esc: fn(&str) -> String) -> String {
    if left_out.is_empty() {
        return String::new();
    }
    let mut s = format!("left out, no run checked ({}):\n", left_out.len());
    for (path, why) in left_out.iter().take(LEFT_OUT_SHOWN) {
        s += &format!("{bullet}{}: {}\n", esc(path), esc(why));
    }
    if left_out.len() > LEFT_OUT_SHOWN {
        s += &format!(
            "{bullet}and {} more (--format json lists every one)\n",
            left_out.len() - LEFT_OUT_SHOWN
        );
    }
    s
}

fn markdown_table(t: &Table) -> String {
    let rows = t.rows;
    let mut s =
        String::from("| run | tool | verdict | errors | warnings |\n|---|---|---|---:|---:|\n");
    for row in rows {
        let (v, e, w, _) = cells(row);
        let (run, tool) = (
            escape::markdown_code(&row.run),
            escape::markdown_cell(&row.tool),
        );
        s += &format!("| {run} | {tool} | {v} | {e} | {w} |\n");
    }
    s += &refusals(rows, "- ", escape::markdown_text);
    s += &left_out_lines(t.left_out, "- ", escape::markdown_text);
    s + &last_line(t)
}

/// The runs that could not be read, each with why (one line each, after the table, in the table's
/// word: incomplete), in the format's escaping `esc`.
fn refusals(rows: &[Row], bullet: &str, esc: fn(&str) -> String) -> String {
    let mut s = String::new();
    for row in rows {
        if let Err(why) = &row.report {
            let why = escape::terminal_cut(why, input::MESSAGE_MAX);
            s += &format!(
                "{bullet}{}: incomplete, not read: {}\n",
                esc(&row.run),
                esc(&why)
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_are_the_runs_path_made_safe_and_unique() {
        let mut taken = HashSet::new();
        let n = |r: &str, t: &mut HashSet<String>| file_name(r, "json", t);
        assert_eq!(n("vllm/a b/x.json", &mut taken), "vllm__a_b__x.json.json");
        assert_eq!(n(".", &mut taken), "run.json");
        assert_eq!(n("..", &mut taken), "run-2.json");
        assert_eq!(n(".hidden", &mut taken), "_.hidden.json");
        assert_eq!(n("vllm/a_b/x.json", &mut taken), "vllm__a_b__x.json-2.json");
    }
}
