//! MLPerf LoadGen's `mlperf_log_detail.txt` and `mlperf_log_summary.txt`, read into
//! `rigaudit_audit::imported::loadgen`'s records.
//!
//! Definitions (LoadGen 6.0; in full in `audit/src/imported/loadgen.rs`):
//! - units: latencies in ns, rates per second, settings' durations in ms;
//! - TTFT: when the system under test called `FirstTokenComplete`;
//! - token counts: what the system under test reported;
//! - aggregates: every query of the timed run; no per-query records are written.

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::diff::Subject;
use rigaudit_audit::imported::compare::{Sample, Series, Setting};
use rigaudit_audit::imported::loadgen::{Accuracy, Detail, Logs, Summary, Verdict, CHECKS};
use serde_json::Value;

/// Whether a source is one of LoadGen's logs (by content): a detail log's line starts with
/// `:::MLLOG`, a summary's line is `MLPerf Results Summary` (a note or a JSON file that only
/// mentions them is neither).
pub fn looks_like(s: &Source) -> bool {
    is_detail(s) || is_summary(s)
}

fn is_detail(s: &Source) -> bool {
    has_line(&s.bytes, |l| l.starts_with(b":::MLLOG"))
}

fn is_summary(s: &Source) -> bool {
    has_line(&s.bytes, |l| l.trim_ascii() == b"MLPerf Results Summary")
}

/// Whether a line of the bytes (its leading blanks and a byte-order mark left out) is as asked.
fn has_line(bytes: &[u8], wanted: impl Fn(&[u8]) -> bool) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    bytes
        .split(|b| *b == b'\n')
        .any(|l| wanted(l.trim_ascii_start()))
}

/// Reads the detail log and the summary (either may be missing, not both), and runs the
/// checks; a summary given alone is checked by itself (its verdict, rules, counts of errors and
/// warnings, settings and the order of its figures).
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let di = sources.iter().position(is_detail);
    let si = sources.iter().position(is_summary);
    if di.is_none() && si.is_none() {
        return Err(fatal(format!("{}: no LoadGen log among them (expected mlperf_log_detail.txt, lines of ':::MLLOG {{json}}', and/or mlperf_log_summary.txt, which starts 'MLPerf Results Summary')", super::names(sources))));
    }
    let summary = match si {
        Some(i) => {
            sources[i].role = "summary".into();
            Some(summary(&sources[i])?)
        }
        None => None,
    };
    let detail = match di {
        Some(i) => {
            sources[i].role = "detail log".into();
            Some(detail(&sources[i])?)
        }
        None => None,
    };
    let accuracy = accuracy_of(sources)?;
    let compliance = compliance(sources);
    let accuracy_log = accuracy_log(sources);
    let mut imp = Imported::default();
    notes(sources, di, si, detail.as_ref(), summary.as_ref(), &mut imp);
    let mut logs = match detail {
        Some(detail) => Logs {
            summary,
            detail,
            ..Logs::default()
        },
        None => Logs {
            detail: Detail::of_summary(summary.as_ref().expect("a summary when no detail log")),
            ..Logs::default()
        },
    };
    logs.compliance = compliance;
    logs.accuracy = accuracy;
    logs.accuracy_log = accuracy_log;
    let text = |k: &str| {
        logs.detail
            .values
            .get(k)
            .and_then(|(_, v)| v.as_str())
            .map(String::from)
    };
    imp.tool_version = text("loadgen_version");
    imp.model = text("sut_name");
    imp.found = rigaudit_audit::imported::run(CHECKS, &logs);
    settings_and_figures(&logs.detail, &mut imp);
    Ok(imp)
}

/// The verdict lines of the compliance tests' verification outputs among the sources (TEST01/
/// 04/05 `verify_accuracy.txt`/`verify_performance.txt`, TEST06 `verify_accuracy.txt`), each
/// such source marked as taken.
fn compliance(sources: &mut [Source]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for s in sources.iter_mut().filter(|s| s.role.is_empty()) {
        let verdicts = Verdict::read(&s.name, &String::from_utf8_lossy(&s.bytes));
        if !verdicts.is_empty() {
            s.role = "compliance verdict".into();
            out.extend(verdicts);
        }
    }
    out
}

/// The most keys an accuracy.txt's result dict is read with (the v4.1 scripts print 10 at most).
const MAX_ACCURACY_KEYS: usize = 64;

/// The accuracy script's output among the sources (`accuracy.txt`, by name), read and marked.
fn accuracy_of(sources: &mut [Source]) -> Result<Option<Accuracy>, Fatal> {
    let Some(s) = sources
        .iter_mut()
        .find(|s| s.role.is_empty() && s.name.eq_ignore_ascii_case("accuracy.txt"))
    else {
        return Ok(None);
    };
    s.role = "accuracy result".into();
    accuracy(s).map(Some)
}

/// `mlperf_log_accuracy.json` among the sources (by name; not read: it holds every sample's
/// output, hundreds of MB for an LLM run), marked as taken.
fn accuracy_log(sources: &mut [Source]) -> Option<String> {
    let s = sources
        .iter_mut()
        .find(|s| s.role.is_empty() && s.name.eq_ignore_ascii_case("mlperf_log_accuracy.json"))?;
    s.role = "accuracy log".into();
    Some(s.name.clone())
}

/// Reads accuracy.txt: the dict on the first non-blank line after the line `Results`, as
/// `'key': number` pairs (what MLPerf's LLM accuracy scripts print with Python's `print`).
fn accuracy(src: &Source) -> Result<Accuracy, Fatal> {
    let text = src.text()?;
    let mut lines = text.lines().enumerate();
    lines.find(|(_, l)| l.trim() == "Results").ok_or_else(|| {
        fatal(format!("{}: no line 'Results' (expected the accuracy script's output: a line 'Results', then a dict such as {{'rouge1': 44.5, ..., 'gen_num': 24576}})", src.shown))
    })?;
    let (i, line) = lines.find(|(_, l)| !l.trim().is_empty()).ok_or_else(|| {
        fatal(format!(
            "{}: nothing after the line 'Results' (expected a dict of scores)",
            src.shown
        ))
    })?;
    let at = |what: &str| fatal(format!("{}: line {}: {what}", src.shown, i + 1));
    let body = line
        .trim()
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| at("expected a dict {'key': number, ...} after 'Results'"))?;
    let mut scores = Vec::new();
    for pair in body.split(',').filter(|p| !p.trim().is_empty()) {
        if scores.len() == MAX_ACCURACY_KEYS {
            return Err(at(&format!(
                "more than {MAX_ACCURACY_KEYS} keys in the dict"
            )));
        }
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| at(&format!("expected 'key': number, found '{}'", pair.trim())))?;
        let key = k.trim().trim_matches(|c| c == '\'' || c == '"');
        let value: f64 = v.trim().parse().map_err(|_| {
            at(&format!(
                "expected a number for '{key}', found '{}'",
                v.trim()
            ))
        })?;
        scores.push((key.to_string(), value));
    }
    Ok(Accuracy {
        file: src.name.clone(),
        line: i + 1,
        scores,
        named: rigaudit_audit::imported::loadgen::benchmark_in(&src.shown),
    })
}

/// What was taken from which log, and what could not be.
fn notes(
    sources: &[Source],
    di: Option<usize>,
    si: Option<usize>,
    detail: Option<&Detail>,
    summary: Option<&Summary>,
    imp: &mut Imported,
) {
    if let (Some(d), Some(i)) = (detail, di) {
        imp.taken.push(format!("{} entries of {} (settings requested and in effect, the result's figures and verdict, errors and warnings)", d.values.len(), sources[i].name));
    }
    match (summary, si, detail.is_some()) {
        (Some(s), Some(i), true) => imp.taken.push(format!(
            "{} printed lines of {}, each compared with the detail log",
            s.entries.len(),
            sources[i].name
        )),
        (Some(s), Some(i), false) => {
            imp.taken.push(format!("{} printed lines of {}, read alone: its verdict and rules, the counts of errors and warnings it states, its test parameters and its figures against each other", s.entries.len(), sources[i].name));
            imp.not_taken.push("mlperf_log_detail.txt was not given: LoadGen's version, the settings it put in effect, the text of the errors and warnings it logged and the measured query count are not known, and the summary is compared with nothing".into());
        }
        _ => imp.not_taken.push(
            "mlperf_log_summary.txt was not given: the printed summary is not compared".into(),
        ),
    }
    imp.not_taken.push("per-query latencies: LoadGen writes none outside its trace and accuracy logs, so its percentiles are compared, not recomputed".into());
    imp.not_taken.push("whether a query failed: LoadGen has no notion of it; the system under test completes a failed query like any other".into());
    for s in sources.iter().filter(|s| s.role == "compliance verdict") {
        imp.taken.push(format!(
            "{}: the compliance test's verdict lines (TEST PASS/FAIL, TEST06 checks)",
            s.name
        ));
    }
    accuracy_notes(sources, imp);
    for s in sources.iter().filter(|s| s.role.is_empty()) {
        imp.not_taken
            .push(format!("{}: not a LoadGen file the importer reads", s.name));
    }
}

/// What was taken from accuracy.txt and mlperf_log_accuracy.json, and what not.
fn accuracy_notes(sources: &[Source], imp: &mut Imported) {
    let role = |r: &str| sources.iter().find(|s| s.role == r);
    if let Some(s) = role("accuracy result") {
        imp.taken.push(format!("{}: the accuracy script's scores, against the benchmark's targets (the MLPerf submission checker's, v4.1 and v5.0), and its gen_num against the run's sample count", s.name));
        imp.not_taken.push(format!("{}: the scores are the accuracy script's, not recomputed (that needs mlperf_log_accuracy.json, the dataset and the script); a benchmark that no folder of the path names is told by its keys and held to its lowest (99 %) target", s.name));
    }
    if let Some(s) = role("accuracy log") {
        imp.not_taken.push(format!(
            "{}: not read (every sample's output); the accuracy is not recomputed",
            s.name
        ));
    }
}

/// The settings in effect (`effective_*`, for diff) and the result's figures (`result_*` times
/// and rates, headlines only: LoadGen prints no per-query values).
fn settings_and_figures(detail: &Detail, imp: &mut Imported) {
    for (k, (line, v)) in detail
        .values
        .iter()
        .filter(|(k, _)| k.starts_with("effective_"))
    {
        let value = v
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| v.to_string());
        imp.settings.push(Setting {
            name: k.clone(),
            value,
            at: format!("{} line {line}", detail.file),
            subject: Subject::Contract,
        });
    }
    for (k, (_, v)) in detail.values.iter().filter(|(k, _)| {
        k.starts_with("result_")
            && (k.ends_with("_ns") || k.ends_with("_per_sec") || k.ends_with("_per_second"))
    }) {
        if let Some(x) = v.as_f64() {
            imp.series.push(Series {
                key: format!("loadgen.{k}"),
                sample: Sample::Headline(x),
            });
        }
    }
}

fn detail(src: &Source) -> Result<Detail, Fatal> {
    let mut d = Detail {
        file: src.name.clone(),
        ..Default::default()
    };
    for (at, line) in (1..).zip(src.text()?.lines()) {
        let Some(json) = line.strip_prefix(":::MLLOG ") else {
            continue;
        };
        let v: Value = serde_json::from_str(json).map_err(|e| {
            fatal(format!(
                "{}: line {at}, column {}: not valid JSON after ':::MLLOG ': {e}",
                src.shown,
                e.column() + 9
            ))
        })?;
        let key = v["key"].as_str().map(String::from).ok_or_else(|| {
            fatal(format!(
                "{}: line {at}: expected a 'key' in the entry",
                src.shown
            ))
        })?;
        let value = v.get("value").cloned().unwrap_or(Value::Null);
        let shown = value
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| value.to_string());
        let flag = |f: &str| {
            v.pointer(&format!("/metadata/{f}"))
                .and_then(|x| x.as_bool())
                .unwrap_or(false)
        };
        if flag("is_error") {
            d.errors.push((at, key.clone(), shown.clone()));
        }
        if flag("is_warning") {
            d.warnings.push((at, key.clone(), shown));
        }
        d.values.insert(key, (at, value));
    }
    if d.values.is_empty() {
        return Err(fatal(format!("{}: no ':::MLLOG' entry in it", src.shown)));
    }
    Ok(d)
}

fn summary(src: &Source) -> Result<Summary, Fatal> {
    let mut s = Summary {
        file: src.name.clone(),
        ..Default::default()
    };
    for (at, line) in (1..).zip(src.text()?.lines()) {
        if let Some((n, what)) = counted(line) {
            s.counted.push((at, what, n));
        } else if let Some((k, v)) = line.split_once(':') {
            let k = k.trim();
            if !k.is_empty() && !k.starts_with('*') {
                s.entries.push((at, k.to_string(), v.trim().to_string()));
            }
        }
    }
    Ok(s)
}

/// `N warnings encountered. See detailed log.`, `1 error encountered...`, `No warnings
/// encountered during test.`: the count and what it counts.
fn counted(line: &str) -> Option<(u64, &'static str)> {
    let (n, rest) = line.trim().split_once(' ')?;
    let what = if rest.starts_with("warning") {
        "warnings"
    } else if rest.starts_with("error") {
        "errors"
    } else {
        return None;
    };
    if !rest.contains(" encountered") {
        return None;
    }
    let n = if n == "No" { 0 } else { n.parse().ok()? };
    Some((n, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str, text: &str) -> Source {
        Source {
            name: name.into(),
            shown: name.into(),
            bytes: text.as_bytes().to_vec(),
            sha256: String::new(),
            role: String::new(),
        }
    }

    #[test]
    fn a_log_is_told_by_its_lines_not_by_a_mention() {
        let summary = "=====\nMLPerf Results Summary\n=====\nSUT name : x\n";
        assert!(looks_like(&source("mlperf_log_summary.txt", summary)));
        let detail = "\u{feff}:::MLLOG {\"key\": \"loadgen_version\", \"value\": \"4.1\"}\r\n";
        assert!(looks_like(&source("mlperf_log_detail.txt", detail)));
        let note =
            "{\n  \"why\": \"each of its 119 :::MLLOG lines; MLPerf Results Summary read\"\n}\n";
        assert!(!looks_like(&source("expected.json", note)));
        let mut both = [source("expected.json", note), source("s.txt", summary)];
        let e = import(&mut both).err().map(|e| e.0).unwrap_or_default();
        assert!(!e.contains("expected.json"), "{e}");
        assert_eq!(both[1].role, "summary");
    }

    #[test]
    fn accuracy_txt_is_read_from_the_dict_after_results_not_an_earlier_one() {
        let case = "fixtures/published/loadgen/v4.1-nvidia-h200x8-mixtral-8x7b-server";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(case);
        let text = std::fs::read_to_string(path.join("accuracy.txt")).unwrap();
        let mut src = source("accuracy.txt", &text);
        src.shown = format!("{case}/accuracy.txt");
        let a = accuracy(&src).unwrap();
        let score = |k: &str| a.scores.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        assert_eq!(score("gsm8k"), Some(73.12));
        assert_eq!(score("gen_num"), Some(15000.0));
        assert_eq!(
            score("ruby"),
            None,
            "the MBXP counts before 'Results' are not the result"
        );
        assert_eq!(a.named.as_deref(), Some("mixtral-8x7b"));
        assert_eq!(a.line, 7);
    }

    #[test]
    fn a_bad_accuracy_txt_is_refused_naming_file_line_and_what_was_expected() {
        let err = |text: &str| accuracy(&source("accuracy.txt", text)).err().unwrap().0;
        assert!(err("rouge1 44.5\n").contains("accuracy.txt: no line 'Results'"));
        let e = err("Results\n\n{'rouge1': 44.5, 'gen_num': many}\n");
        assert!(
            e.contains("line 3") && e.contains("a number for 'gen_num'"),
            "{e}"
        );
        assert!(err("Results\nrouge1=44\n").contains("expected a dict"));
        let many: Vec<String> = (0..65).map(|i| format!("'k{i}': 1")).collect();
        let e = err(&format!("Results\n{{{}}}\n", many.join(", ")));
        assert!(e.contains("more than 64 keys"), "{e}");
        assert!(err("Results\n").contains("nothing after the line 'Results'"));
    }
}
