//! The report as text for people, its most important part first: the verdict with what it covers,
//! one headline per failing family with its sum and what to do next (so the first lines of a
//! terminal say what, why and what now), then the findings by severity, what a policy left out,
//! the recomputed figures as one line plus only the rows that differ or have no result (every row
//! with `--verbose`), and a diff's or replay's figures beside each other. Every line fits
//! [`WIDTH`] columns: longer ones wrap at spaces (a hand-written wrap: the one rule here does not
//! need a crate). Every string rigaudit did not write itself goes through
//! [`super::escape::terminal`]: controls and bidirectional characters written visibly, a
//! value's line break as `\n` (so no value starts a line of a CI log).

use super::Style;
use rigaudit_audit::decide::p_cell;
use rigaudit_audit::verdict::{better_word, runs_to_tell_line, NoiseBasis, NoiseRow, RunsToTell};
use rigaudit_audit::{headline, Recomputed, Report, Severity, Verdict};
use std::fmt::Write;

/// The widest line the text report writes.
pub const WIDTH: usize = 100;

fn paint(s: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// A figure in a table cell: "no result" when there is none, three significant decimals at most.
pub(crate) fn num(x: Option<f64>) -> String {
    match x {
        None => "no result".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
    }
}

/// A recomputed row's value and file figure with as many decimals as show them apart (at most 12),
/// when the row does not match yet its cells `shown` would print both alike (a difference past
/// the decimals a cell shows: 14.028 / 14.028); `None` otherwise, the cells as they are.
pub(crate) fn shown_apart(v: &Recomputed, shown: (&str, &str)) -> Option<(String, String)> {
    let (Some(a), Some(b)) = (v.value, v.file) else {
        return None;
    };
    if v.matches || a == b || shown.0 != shown.1 {
        return None;
    }
    (4..=12)
        .map(|d| (format!("{a:.d$}"), format!("{b:.d$}")))
        .find(|(x, y)| x != y)
}

/// Text from a report that may quote input: hidden characters and line breaks written visibly,
/// length bounded.
fn safe(s: &str) -> String {
    super::escape::terminal_cut(s, crate::input::MESSAGE_MAX)
}

/// Renders a report: the verdict and what it rests on first, then the findings by severity and
/// check, what a policy left out, the recomputed values, the setup differences (diff) and the
/// figures beside each other; every line fitted to [`WIDTH`].
pub fn render(r: &Report, style: Style) -> String {
    let mut o = summary(r, style.color);
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        findings_of(&mut o, r, sev, style.color);
    }
    policy_section(&mut o, r);
    recomputed_section(&mut o, r, style.verbose);
    setup_section(&mut o, r);
    comparisons_section(&mut o, r);
    noise_section(&mut o, r);
    loaded_section(&mut o, r, style.verbose);
    fit(&o, WIDTH)
}

/// The verdict line, one headline per family that fails the run, and what to do next.
fn summary(r: &Report, color: bool) -> String {
    let mut o = verdict_line(r, color);
    if let Some(why) = &r.incomplete {
        let _ = writeln!(o, "  - incomplete: {}", safe(why));
    }
    for h in headline::headlines(r) {
        let _ = writeln!(o, "  - {}", safe(&h));
    }
    if let Some(next) = headline::next_step(r) {
        let _ = writeln!(o, "  what to do: {}", safe(&next));
    }
    o
}

fn verdict_line(r: &Report, color: bool) -> String {
    let mut verdict = match r.verdict {
        Verdict::Pass => paint("PASS", "32;1", color),
        Verdict::Fail => paint("FAIL", "31;1", color),
        Verdict::Incomplete => paint("INCOMPLETE", "33;1", color),
    };
    // What a pass settled, decided with the verdict; an incomplete report's why is the next line.
    if let (Verdict::Pass, Some(q)) = (r.verdict, &r.verdict_qualifier) {
        verdict.push_str(&format!(", {}", safe(q)));
    }
    let head = format!(
        "rigaudit {} {}: {verdict}",
        safe(&r.command),
        safe(&r.bundle)
    );
    let counts = format!(
        "({} errors, {} warnings, {} notes; {} checks ran)",
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len()
    );
    // The counts on the verdict's line when they fit, else on their own.
    let gap = if columns(&head) + 1 + counts.len() <= WIDTH {
        " "
    } else {
        "\n  "
    };
    format!("{head}{gap}{counts}\n")
}

/// The findings of one severity, grouped by check in order of first appearance.
fn findings_of(o: &mut String, r: &Report, sev: Severity, color: bool) {
    let mut seen = std::collections::BTreeSet::new();
    let checks: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.severity == sev)
        .map(|f| f.check.as_str())
        .filter(|c| seen.insert(*c))
        .collect();
    if checks.is_empty() {
        return;
    }
    let (label, code) = match sev {
        Severity::Error => ("errors", "31"),
        Severity::Warning => ("warnings", "33"),
        Severity::Info => ("notes", "36"),
    };
    let _ = writeln!(o, "\n{}", paint(label, code, color));
    for c in checks {
        let _ = writeln!(o, "  {}", paint(&safe(c), "1", color));
        let of = r
            .findings
            .iter()
            .filter(|f| f.severity == sev && f.check == c);
        if r.compares_two() && c == rigaudit_audit::diff::SETUP_DIFFERS.id {
            let _ = writeln!(
                o,
                "    - {} setup difference(s), listed under \"setup differences\"",
                of.count()
            );
            continue;
        }
        for f in of {
            let place = match (&f.file, &f.pointer) {
                (Some(file), Some(p)) => format!("{} {}: ", safe(file), safe(p)),
                (Some(file), None) => format!("{}: ", safe(file)),
                _ => String::new(),
            };
            let _ = writeln!(o, "    - {place}{}", safe(&f.message));
        }
    }
}

fn policy_section(o: &mut String, r: &Report) {
    let Some(p) = &r.policy else { return };
    if p.ignored.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nleft out by the policy {}", safe(&p.file));
    for i in &p.ignored {
        let _ = writeln!(
            o,
            "  {} ({} finding(s)): {}",
            safe(&i.check),
            i.findings,
            safe(&i.reason)
        );
    }
}

/// How a recomputed figure compares with what the file and the page show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agreement {
    /// The recomputed value rounds to what the file and the page show.
    Match,
    /// It does not round to one of them.
    Differs,
    /// Nothing could be recomputed.
    NoResult,
}

/// The decimals a number is shown with: the digits after its point.
fn decimals(shown: &str) -> usize {
    shown.split_once('.').map_or(0, |(_, d)| d.len())
}

impl Agreement {
    /// A row's agreement, by the checks' own rounding rule (`Recomputed::matches`, the one the
    /// JSON report carries): no second rule here or in the HTML page.
    pub(crate) fn of(v: &Recomputed) -> Agreement {
        if v.value.is_none() {
            Agreement::NoResult
        } else if v.matches {
            Agreement::Match
        } else {
            Agreement::Differs
        }
    }

    /// The word a table cell of the HTML page shows, which is also its row's CSS class.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Agreement::Match => "match",
            Agreement::Differs => "differs",
            Agreement::NoResult => "no result",
        }
    }
}

/// [`Agreement::of`].
fn agreement(v: &Recomputed) -> Agreement {
    Agreement::of(v)
}

/// A number at the page's precision when the page shows one, else at [`num`]'s.
fn at_precision(x: Option<f64>, page: Option<&str>) -> String {
    match (x, page.filter(|p| p.trim().parse::<f64>().is_ok())) {
        // At most six decimals: a page's string is input, its length no bound on a column.
        (Some(v), Some(p)) => format!("{v:.*}", decimals(p.trim()).min(6)),
        (x, _) => num(x),
    }
}

/// The recomputed figures: one line counting them by agreement, then the rows that differ or
/// have no result (every row when `verbose`), in numeric order of their keys.
fn recomputed_section(o: &mut String, r: &Report, verbose: bool) {
    if r.recomputed.is_empty() {
        return;
    }
    let rows = numeric_order(&r.recomputed);
    let count = |a| rows.iter().filter(|v| agreement(v) == a).count();
    let (differ, none) = (count(Agreement::Differs), count(Agreement::NoResult));
    let mut line = format!(
        "\n{} figures recomputed from the raw records: {} match",
        rows.len(),
        count(Agreement::Match)
    );
    if differ > 0 {
        line.push_str(&format!(", {differ} differ"));
    }
    if none > 0 {
        line.push_str(&format!(", {none} have no result"));
    }
    let shown: Vec<&Recomputed> = rows
        .into_iter()
        .filter(|v| verbose || agreement(v) != Agreement::Match)
        .collect();
    if !verbose && shown.len() < r.recomputed.len() {
        line.push_str(" (every row with --verbose)");
    }
    let _ = writeln!(o, "{line}");
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "  {:<32} {:>12} {:>12} {:>12}   (value / file / page)",
        "figure", "recomputed", "file", "page"
    );
    for v in shown {
        recomputed_row(o, v);
    }
}

fn recomputed_row(o: &mut String, v: &Recomputed) {
    let page = v.page.as_deref();
    let mark = match agreement(v) {
        Agreement::Match => "match",
        Agreement::Differs => "DIFFERS",
        Agreement::NoResult => "no result",
    };
    // The value at the page's precision; the file's as it says it, at most three decimals (more
    // where a row that differs would print both alike).
    let (value, file) = (
        at_precision(v.value, page),
        v.file.map_or("-".into(), |x| num(Some(x))),
    );
    let (value, file) = shown_apart(v, (&value, &file)).unwrap_or((value, file));
    let _ = writeln!(
        o,
        "  {:<32} {:>12} {:>12} {:>12}   {mark}",
        safe(&v.key),
        value,
        file,
        page.map_or("-".into(), safe)
    );
}

/// The rows with runs of keys that differ only in a final number (`ctx_decode.256`,
/// `ctx_decode.2048`) put in numeric order; every other row keeps its place.
pub(crate) fn numeric_order(rows: &[Recomputed]) -> Vec<&Recomputed> {
    let mut out: Vec<&Recomputed> = rows.iter().collect();
    let stem_num = |k: &str| -> Option<(String, u64)> {
        let (stem, n) = k.rsplit_once('.')?;
        Some((stem.to_string(), n.parse().ok()?))
    };
    let mut i = 0;
    while i < out.len() {
        let Some((stem, _)) = stem_num(&out[i].key) else {
            i += 1;
            continue;
        };
        let run = out[i..]
            .iter()
            .take_while(|v| stem_num(&v.key).is_some_and(|(s, _)| s == stem))
            .count();
        out[i..i + run].sort_by_key(|v| stem_num(&v.key).map_or(0, |(_, n)| n));
        i += run;
    }
    out
}

/// The columns a line takes on a terminal: its characters less colour escapes.
fn columns(s: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in s.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (false, _) => n += 1,
            _ => {}
        }
    }
    n
}

/// Prose fitted to [`WIDTH`] columns: a wrapped line continues at its own indent.
pub fn fit_text(text: &str) -> String {
    fit_hanging(text, WIDTH, 0)
}

/// Every line of `text` at most `width` columns: a longer one wraps at spaces, its continuation
/// indented under its text (past a list's `- `); a word too long for a line is cut.
fn fit(text: &str, width: usize) -> String {
    fit_hanging(text, width, 4)
}

/// [`fit`] with a wrapped line's continuation `extra` columns in from its indent (past a list's
/// `- ` whatever `extra` is).
pub fn fit_hanging(text: &str, width: usize, extra: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.trim_start_matches('\n').lines() {
        if columns(line) <= width {
            out.push_str(&super::escape::no_command(line));
            out.push('\n');
            continue;
        }
        let lead = line.len() - line.trim_start().len();
        let hang = lead
            + if line.trim_start().starts_with("- ") {
                2
            } else {
                extra
            };
        wrap_into(&mut out, line, hang, width);
    }
    out
}

/// The words of a line, each with the spaces before it (kept where the line does not wrap, so
/// a table's columns stay aligned).
fn words_with_gaps(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let end = rest.find(' ').unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        let next = tail.trim_start();
        out.push((word, tail.len() - next.len()));
        rest = next;
    }
    // Shift each gap to the word after it.
    let mut gap = 0;
    out.into_iter()
        .map(|(word, after)| {
            let before = gap;
            gap = after;
            (before, word)
        })
        .collect()
}

/// [`wrap_line`], each line it makes passed through [`super::escape::no_command`] (a wrap can
/// start a line with any word of a value).
fn wrap_into(out: &mut String, line: &str, hang: usize, width: usize) {
    let mut wrapped = String::new();
    wrap_line(&mut wrapped, line, hang, width);
    for l in wrapped.lines() {
        out.push_str(&super::escape::no_command(l));
        out.push('\n');
    }
}

fn wrap_line(out: &mut String, line: &str, hang: usize, width: usize) {
    let lead = line.len() - line.trim_start().len();
    let mut current = " ".repeat(lead);
    let mut has_word = false;
    for (gap, word) in words_with_gaps(line) {
        let mut word = word.to_string();
        loop {
            let room = width.saturating_sub(columns(&current) + if has_word { gap } else { 0 });
            if columns(&word) <= room || (!has_word && room == 0) {
                break;
            }
            if has_word {
                out.push_str(current.trim_end());
                out.push('\n');
                current = " ".repeat(hang);
                has_word = false;
                continue;
            }
            // A word longer than a whole line: cut it at the room left.
            let cut: String = word.chars().take(room.max(1)).collect();
            word = word.chars().skip(room.max(1)).collect();
            current.push_str(&cut);
            out.push_str(&current);
            out.push('\n');
            current = " ".repeat(hang);
        }
        if has_word {
            current.push_str(&" ".repeat(gap));
        }
        current.push_str(&word);
        has_word = true;
    }
    out.push_str(current.trim_end());
    out.push('\n');
}

fn setup_section(o: &mut String, r: &Report) {
    if r.setup_changes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nsetup differences (what: A / B; where A and B record it)"
    );
    for c in &r.setup_changes {
        let _ = writeln!(
            o,
            "  [{}] {}: {} / {}   ({})",
            c.subject.name(),
            safe(&c.what),
            safe(&c.a),
            safe(&c.b),
            safe(&c.places())
        );
    }
}

/// What each rank's server mapped: per rank its line, its loader variables, and its files
/// (executables, NCCL and what could not surely be hashed; every file with `--verbose`).
fn loaded_section(o: &mut String, r: &Report, verbose: bool) {
    use super::loaded::{loader_line, object_note, rank_line, role, short_digest, shown_short};
    if r.loaded.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nwhat ran (role / sha256 / path / what the file says)");
    for rank in &r.loaded {
        let _ = writeln!(o, "  {}", safe(&rank_line(rank)));
        if let Some(line) = loader_line(rank) {
            let _ = writeln!(o, "    {}", safe(&line));
        }
        for why in rank.not_read.iter().chain(&rank.gone) {
            let _ = writeln!(o, "    not read: {}", safe(why));
        }
        let shown: Vec<_> = rank
            .objects
            .iter()
            .filter(|x| verbose || shown_short(x))
            .collect();
        for x in &shown {
            let note = object_note(x, rank.read_at.len());
            let _ = writeln!(
                o,
                "    {:<10} {:<16} {}{}",
                role(x),
                short_digest(x),
                safe(&x.path),
                if note.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", safe(&note))
                }
            );
        }
        let rest = rank.objects.len() - shown.len();
        if rest > 0 {
            let _ = writeln!(
                o,
                "    and {rest} more libraries and files, each hashed (--verbose lists them; the JSON report has each with its sha256)"
            );
        }
    }
}

fn comparisons_section(o: &mut String, r: &Report) {
    if r.comparisons.is_empty() {
        return;
    }
    let diff = r.compares_two();
    let header = if diff {
        "A beside B (key / A / B / change / p / verdict / better / why)"
    } else {
        "recorded beside the replay (key / recorded / replayed / change / p / verdict / why)"
    };
    let _ = writeln!(o, "\n{header}");
    if let Some(s) = &r.replay_summary {
        let _ = writeln!(o, "  {}", safe(&s.line(diff)));
    }
    for c in &r.comparisons {
        let change = c.change_shown().unwrap_or_else(|| "-".into());
        let p = c.p_value.map_or("-".into(), p_cell);
        let verdict = format!(
            "{}{}",
            c.verdict.name(),
            if c.informational { " (info)" } else { "" }
        );
        let better = if diff {
            format!(" {:<6}", better_word(c.better))
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:<28} {:>12} {:>12} {:>8} {:>8}   {:<22}{better} {}",
            safe(&c.key),
            num(c.recorded),
            num(c.replayed),
            change,
            p,
            verdict,
            safe(&c.why)
        );
    }
    if let Some(line) = runs_to_tell_line(&r.comparisons) {
        let _ = writeln!(o, "  {}", safe(&line));
    }
    rule_section(o, r);
}

/// `noise`'s rows: per figure its runs, spread and smallest difference (speed: between two
/// sessions, the declared session spread included, and within one; quality: in points), or what
/// it lacks.
fn noise_section(o: &mut String, r: &Report) {
    if r.noise.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nsmallest difference each figure could show (90 % half-widths): between two sessions of its\n  runs, the declared session spread included, and within one; runs a side to tell ±5/±10 %"
    );
    let _ = writeln!(
        o,
        "  {:<26} {:>9} {:>4} {:>7} {:>10} {:>9}  runs: sessions; within",
        "key", "value", "n", "spread", "sessions", "within"
    );
    for row in &r.noise {
        let head = format!(
            "  {:<26} {:>9} {:>4}",
            safe(&row.key),
            num(row.value),
            row.n
        );
        let _ = writeln!(o, "{head} {}", noise_cells(row));
    }
}

/// A noise row's cells after its key, value and runs.
fn noise_cells(row: &NoiseRow) -> String {
    let plan = |t: RunsToTell| {
        let one = |n: usize| {
            if n == 0 {
                "–".to_string()
            } else {
                n.to_string()
            }
        };
        format!("{}/{}", one(t.pct5), one(t.pct10))
    };
    if let Some(s) = &row.speed {
        return format!(
            "{:>7} {:>10} {:>9}  {}; {}",
            format!("{:.1} %", s.log_sd_pct),
            format!("±{:.1} %", s.half_width_pct),
            format!("±{:.1} %", s.half_width_within_pct),
            plan(s.runs_to_tell),
            plan(s.runs_to_tell_within)
        );
    }
    if let Some(q) = &row.quality {
        let paired = match (q.half_width_paired_points, q.flip_rate_pct) {
            (Some(p), Some(f)) => format!("paired ±{p:.1} at {f:.1} % flips"),
            _ => "flip rate not measured".to_string(),
        };
        return format!(
            " ±{:.1} points unpaired; {paired}",
            q.half_width_unpaired_points
        );
    }
    match row.basis {
        NoiseBasis::OneRun => " cannot be told: one run",
        NoiseBasis::HeadlineOnly => " cannot be told: a headline only",
        _ => " no value",
    }
    .to_string()
}

/// The decision rule the rows were judged by: its bands and multiplicity control.
fn rule_section(o: &mut String, r: &Report) {
    if r.decision_rule.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n{}", safe(&r.decision_rule[0]));
    for line in &r.decision_rule[1..] {
        let _ = writeln!(o, "  {}", safe(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_that_differs_past_the_decimals_shown_prints_them_apart() {
        // AIPerf's benchmark_duration of issue 38: 14.028 / 14.028 marked DIFFERS.
        let mut v = Recomputed::new("d".into(), Some(14.027_885_568), Some(14.028_01), None);
        v.matches = false;
        let shown = (num(v.value), num(v.file));
        assert_eq!(shown.0, shown.1, "alike at three decimals");
        let (a, b) = shown_apart(&v, (&shown.0, &shown.1)).unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("14.0279", "14.0280"));
        // A row that matches, or that already prints apart, is left as it is.
        v.matches = true;
        assert_eq!(shown_apart(&v, (&shown.0, &shown.1)), None);
        v.matches = false;
        assert_eq!(shown_apart(&v, ("14.028", "14.03")), None);
    }

    fn row(key: &str) -> Recomputed {
        Recomputed::new(key.into(), Some(1.0), None, None)
    }

    #[test]
    fn keys_that_differ_in_a_final_number_sort_by_it_and_the_rest_keep_their_place() {
        let rows: Vec<Recomputed> = [
            "quality.b.pct",
            "quality.a.pct",
            "ctx.2048",
            "ctx.256",
            "cv",
        ]
        .iter()
        .map(|k| row(k))
        .collect();
        let keys: Vec<&str> = numeric_order(&rows)
            .iter()
            .map(|v| v.key.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "quality.b.pct",
                "quality.a.pct",
                "ctx.256",
                "ctx.2048",
                "cv"
            ]
        );
    }

    #[test]
    fn long_lines_wrap_at_spaces_under_their_text_and_long_words_are_cut() {
        let line = format!("    - {}", "word ".repeat(40));
        let out = fit(&line, 30);
        for l in out.lines() {
            assert!(l.len() <= 30, "{l}");
        }
        assert!(
            out.lines().nth(1).unwrap().starts_with("      word"),
            "{out}"
        );
        assert_eq!(out.split_whitespace().filter(|w| *w == "word").count(), 40);
        let long = format!("  {}", "x".repeat(70));
        let out = fit(&long, 30);
        assert!(out.lines().all(|l| l.len() <= 30), "{out}");
        assert_eq!(out.matches('x').count(), 70);
    }

    #[test]
    fn a_wrapped_line_keeps_its_columns_before_the_wrap() {
        let line = format!("{:<10} {:<6} {}", "id", "error", "word ".repeat(12));
        let out = fit_hanging(&line, 40, 18);
        let first = out.lines().next().unwrap();
        assert!(first.starts_with("id         error  word"), "{out}");
        assert!(
            out.lines().nth(1).unwrap().starts_with(&" ".repeat(18)),
            "{out}"
        );
        assert_eq!(out.matches("word").count(), 12);
    }

    #[test]
    fn a_figure_agrees_at_the_precision_it_is_shown_with() {
        let row = |v: f64, file: f64, page: &str| {
            Recomputed::new("k".into(), Some(v), Some(file), Some(page.into()))
        };
        assert_eq!(agreement(&row(4.798, 4.8, "4.8")), Agreement::Match);
        assert_eq!(agreement(&row(4.86, 4.86, "4.8")), Agreement::Differs);
        assert_eq!(
            agreement(&row(14.708179026, 14.708178944, "14.7")),
            Agreement::Match
        );
        assert_eq!(agreement(&row(28.0, 31.0, "28")), Agreement::Differs);
        let none = Recomputed::new("k".into(), None, None, None);
        assert_eq!(agreement(&none), Agreement::NoResult);
        assert_eq!(at_precision(Some(44.949), Some("44.9")), "44.9");
        assert_eq!(at_precision(Some(44.949), None), "44.949");
        let long_page = format!("1.{}", "0".repeat(5000));
        assert_eq!(at_precision(Some(1.0), Some(&long_page)), "1.000000");
    }
}
