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

/// A summary: its `MLPerf Results Summary` line; or, named `mlperf_log_summary.txt`, only the
/// counts of errors and warnings, which is all LoadGen writes there in accuracy mode.
fn is_summary(s: &Source) -> bool {
    has_line(&s.bytes, |l| l.trim_ascii() == b"MLPerf Results Summary")
        || (s.name.eq_ignore_ascii_case("mlperf_log_summary.txt")
            && has_line(&s.bytes, |l| counted(&String::from_utf8_lossy(l)).is_some()))
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
    let companions = sources.iter().any(|s| super::companion(&s.name).is_some());
    if di.is_none() && si.is_none() && !companions {
        return Err(fatal(format!("{}: no LoadGen log among them (expected mlperf_log_detail.txt, lines of ':::MLLOG {{json}}', and/or mlperf_log_summary.txt, which starts 'MLPerf Results Summary'; or an accuracy run's accuracy.txt, a compliance test's verify_accuracy.txt or verify_performance.txt)", super::names(sources))));
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
    let accuracy = accuracy_of(sources);
    let compliance = compliance(sources);
    let accuracy_log = accuracy_log(sources);
    let accuracy_replies = sources
        .iter()
        .find(|s| s.role == "accuracy log")
        .map(|s| replies(&s.bytes));
    let mut imp = Imported::default();
    notes(sources, di, si, detail.as_ref(), summary.as_ref(), &mut imp);
    let detail = match (detail, &summary) {
        (Some(detail), _) => detail,
        (None, Some(s)) => Detail::of_summary(s),
        (None, None) => Detail::default(),
    };
    let mut logs = Logs {
        summary,
        detail,
        ..Logs::default()
    };
    logs.compliance = compliance;
    logs.accuracy = accuracy;
    logs.accuracy_log_empty = accuracy_log.as_ref().is_some_and(|(_, empty)| *empty);
    logs.accuracy_log = accuracy_log.map(|(name, _)| name);
    logs.accuracy_replies = accuracy_replies;
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

/// The most scores read from one accuracy.txt (the v4.1-v6.0 scripts print 12 at most).
const MAX_ACCURACY_KEYS: usize = 64;

/// The accuracy script's output among the sources (`accuracy.txt`, by name), read and marked.
fn accuracy_of(sources: &mut [Source]) -> Option<Accuracy> {
    let s = sources
        .iter_mut()
        .find(|s| s.role.is_empty() && s.name.eq_ignore_ascii_case("accuracy.txt"))?;
    s.role = "accuracy result".into();
    Some(accuracy(s))
}

/// `mlperf_log_accuracy.json` among the sources (by name; its outputs are not decoded, only its
/// entries counted, [`replies`]), marked as taken: its name, and whether it holds no entry (`[`
/// and `]` alone, what LoadGen writes in performance mode).
fn accuracy_log(sources: &mut [Source]) -> Option<(String, bool)> {
    let s = sources
        .iter_mut()
        .find(|s| s.role.is_empty() && s.name.eq_ignore_ascii_case("mlperf_log_accuracy.json"))?;
    s.role = "accuracy log".into();
    let empty = s.bytes.iter().all(|b| b"[] \t\r\n".contains(b));
    Some((s.name.clone(), empty))
}

/// The entries of an accuracy log (LoadGen writes one `{ "seq_id" : .., "qsl_idx" : .., "data" :
/// "..", ... }` a line) and the `qsl_idx` of those with an empty reply (`"data" : ""`).
fn replies(bytes: &[u8]) -> (usize, Vec<u64>) {
    let (mut entries, mut empty) = (0, Vec::new());
    for line in bytes.split(|b| *b == b'\n') {
        let line = String::from_utf8_lossy(line);
        const KEY: &str = "\"qsl_idx\" : ";
        let Some(at) = line.find(KEY) else {
            continue;
        };
        entries += 1;
        if line.contains("\"data\" : \"\"") {
            let digits: String = line[at + KEY.len()..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            empty.extend(digits.parse::<u64>().ok());
        }
    }
    (entries, empty)
}

/// Reads accuracy.txt in every form the benchmarks' accuracy scripts print it (docs/formats/
/// loadgen.md rows A1-A5): the LLM scripts' dict after their line `Results` (its values plain
/// or `np.float64(...)`); else each line's dict (`{"exact_match": 83.6, "f1": 90.8}`) or
/// `key=value` / `key: value` scores (`accuracy=76.456%, good=38228, total=50000`, `mAP=37.5%`,
/// `AUC=80.3`, `Accuracy: mean = 0.8617, kidney = 0.93, tumor = 0.79`). Never refused: a file
/// with no score in any of these forms is an `Accuracy` whose `unread` says why (row A6).
fn accuracy(src: &Source) -> Accuracy {
    let mut a = Accuracy {
        file: src.name.clone(),
        named: rigaudit_audit::imported::loadgen::benchmark_in(&src.shown),
        ..Accuracy::default()
    };
    let text = match src.text() {
        Ok(t) => t,
        Err(e) => {
            a.unread = Some(e.0);
            return a;
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let results = lines.iter().position(|l| l.trim() == "Results");
    let from = results.map_or(0, |i| i + 1);
    for (i, line) in lines.iter().enumerate().skip(from) {
        let found = scores_of_line(line);
        if found.is_empty() {
            continue;
        }
        if a.scores.is_empty() {
            a.line = i + 1;
        }
        let room = MAX_ACCURACY_KEYS - a.scores.len();
        a.scores.extend(found.into_iter().take(room));
        // The LLM scripts print one dict after 'Results'; what follows is their hash line.
        if results.is_some() || a.scores.len() == MAX_ACCURACY_KEYS {
            break;
        }
    }
    if a.scores.is_empty() {
        a.unread = Some(match results {
            Some(i) => format!("line {}: 'Results', but no score after it", i + 1),
            None => "no dict of scores after a line 'Results', and no 'key=number' or 'key: number' score on any line".into(),
        });
    }
    a
}

/// The scores of one line of accuracy.txt: a dict's numeric entries, else `key=number` /
/// `key: number` pairs separated by commas.
fn scores_of_line(line: &str) -> Vec<(String, f64)> {
    let t = line.trim();
    // A dict, alone or after a label (SDXL: `Accuracy Results: {'FID_SCORE': 23.0, ...}`).
    let dict = t.find('{').map(|i| &t[i..]).filter(|d| d.ends_with('}'));
    if let Some(body) = dict.and_then(|d| d.strip_prefix('{')?.strip_suffix('}')) {
        return top_level(body)
            .into_iter()
            .filter_map(|item| {
                let (k, v) = item.split_once(':')?;
                let key = k.trim().trim_matches(|c| c == '\'' || c == '"');
                Some((key.to_string(), number(v)?))
            })
            .collect();
    }
    // A log line naming a URL (`no results: http://...jpg, idx=539`) holds no score.
    if t.contains("://") {
        return Vec::new();
    }
    t.split(',')
        .filter_map(|part| {
            let at = part.rfind(['=', ':'])?;
            let (k, v) = (&part[..at], &part[at + 1..]);
            let key = k
                .rsplit(':')
                .next()?
                .trim()
                .trim_matches(|c| c == '\'' || c == '"');
            let plain = |c: char| c.is_ascii_alphanumeric() || " _-/.".contains(c);
            if key.is_empty() || key.len() > 40 || !key.chars().all(plain) {
                return None;
            }
            Some((key.to_string(), number(v)?))
        })
        .collect()
}

/// The items of a dict's body split at its top-level commas.
fn top_level(body: &str) -> Vec<&str> {
    let (mut out, mut depth, mut quote, mut start) = (Vec::new(), 0i32, None, 0);
    for (i, c) in body.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&body[start..]);
    out
}

/// A score as Python prints it: `44.5`, `nan`, `'44.5'`, `76.456%`, or a numpy scalar's repr
/// (`np.float64(44.5)`, numpy 2).
fn number(v: &str) -> Option<f64> {
    let mut v = v.trim();
    if let Some(open) = v.find('(') {
        let name = &v[..open];
        if name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        {
            v = v[open + 1..].strip_suffix(')')?;
        }
    }
    let v = v
        .trim()
        .trim_matches(|c| c == '\'' || c == '"')
        .trim_end_matches('%');
    match v {
        "nan" | "NaN" => Some(f64::NAN),
        _ => v.parse().ok(),
    }
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
            "{}: its entries counted for empty replies; the outputs are not decoded, so the accuracy is not recomputed",
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

/// Reads the detail log's `:::MLLOG {json}` entries. LoadGen 4.0 writes a value holding a line
/// break raw (its `result_invalid_reason` when two constraints fail: docs/formats/loadgen.md row
/// V1), so an entry that does not parse is read again with the lines that follow it, up to the
/// next entry; one that still does not parse is skipped and named (`Detail::unreadable`).
fn detail(src: &Source) -> Result<Detail, Fatal> {
    let mut d = Detail {
        file: src.name.clone(),
        given: true,
        ..Default::default()
    };
    let lines: Vec<&str> = src.text()?.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(json) = line.strip_prefix(":::MLLOG ") else {
            continue;
        };
        let at = i + 1;
        match entry(json, &lines[i + 1..]) {
            Ok(v) => take_entry(&mut d, at, v),
            Err(e) => d.unreadable.push((at, e)),
        }
    }
    if d.values.is_empty() {
        return Err(fatal(format!("{}: no ':::MLLOG' entry in it", src.shown)));
    }
    Ok(d)
}

/// One entry's JSON, continued over the raw lines after it when it does not parse alone.
fn entry(json: &str, after: &[&str]) -> Result<Value, String> {
    let first = serde_json::from_str::<Value>(json);
    let Err(e) = first else {
        return first.map_err(|e| e.to_string());
    };
    let mut joined = json.to_string();
    for next in after.iter().take_while(|l| !l.starts_with(":::MLLOG")) {
        joined.push_str("\\n");
        joined.push_str(next);
        if let Ok(v) = serde_json::from_str::<Value>(&joined) {
            return Ok(v);
        }
    }
    Err(format!(
        "not valid JSON after ':::MLLOG ' (column {}): {e}",
        e.column() + 9
    ))
}

/// One entry into the detail's values (taken, not copied); an error's or warning's value is also
/// kept as text, to be shown.
fn take_entry(d: &mut Detail, at: usize, mut v: Value) {
    let Some(key) = v["key"].as_str().map(String::from) else {
        d.unreadable.push((at, "no 'key' in the entry".into()));
        return;
    };
    let flag = |f: &str| {
        v.pointer(&format!("/metadata/{f}"))
            .and_then(|x| x.as_bool())
            .unwrap_or(false)
    };
    let (error, warning) = (flag("is_error"), flag("is_warning"));
    let value = v.get_mut("value").map(Value::take).unwrap_or(Value::Null);
    if error || warning {
        let shown = value
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| value.to_string());
        let list = if error {
            &mut d.errors
        } else {
            &mut d.warnings
        };
        list.push((at, key.clone(), shown.clone()));
        if error && warning {
            d.warnings.push((at, key.clone(), shown));
        }
    }
    d.values.insert(key, (at, value));
}

fn summary(src: &Source) -> Result<Summary, Fatal> {
    let mut s = Summary {
        file: src.name.clone(),
        ..Default::default()
    };
    let text = src.text()?;
    s.early = early_stopping(text);
    for (at, line) in (1..).zip(text.lines()) {
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

/// The early-stopping results a summary prints (`Early Stopping Result:`, or with token
/// latencies `TTFT Early Stopping Result:` and `TPOT Early Stopping Result:`), each the indented
/// lines after it joined as the detail log joins them, under the detail log's key.
fn early_stopping(text: &str) -> Vec<(usize, String, String)> {
    let mut out: Vec<(usize, String, String)> = Vec::new();
    let mut open = false;
    for (at, line) in (1..).zip(text.lines()) {
        let key = match line.trim() {
            "Early Stopping Result:" => Some("early_stopping_result"),
            "TTFT Early Stopping Result:" => Some("early_stopping_ttft_result"),
            "TPOT Early Stopping Result:" => Some("early_stopping_tpot_result"),
            _ => None,
        };
        if let Some(key) = key {
            out.push((at, key.to_string(), String::new()));
            open = true;
        } else if open && line.starts_with(' ') && !line.trim().is_empty() {
            let last = out.last_mut().expect("an open result");
            last.2 = format!("{} {}", last.2, line.trim()).trim().to_string();
        } else {
            open = false;
        }
    }
    out
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

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::Loadgen
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        n.starts_with("mlperf_log_") && n.ends_with(".txt")
    }

    fn goes_with(&self, n: &str) -> bool {
        matches!(
            n,
            "verify_accuracy.txt"
                | "verify_performance.txt"
                | "accuracy.txt"
                | "mlperf_log_accuracy.json"
        )
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
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
        let a = accuracy(&src);
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
    fn an_accuracy_logs_empty_replies_are_counted_and_named() {
        let log = b"[\n{ \"seq_id\" : 2, \"qsl_idx\" : 1, \"data\" : \"\", \"token_count\" : 0 },\n{ \"seq_id\" : 4, \"qsl_idx\" : 13, \"data\" : \"546F\", \"token_count\" : 1 },\n{ \"seq_id\" : 5, \"qsl_idx\" : 40, \"data\" : \"\" }\n]\n";
        assert_eq!(replies(log), (3, vec![1, 40]));
        assert_eq!(replies(b"[\n]\n"), (0, vec![]));
    }

    #[test]
    fn accuracy_txt_is_read_in_every_form_its_scripts_print_and_never_refused() {
        let read = |text: &str| accuracy(&source("accuracy.txt", text));
        let score = |a: &Accuracy, k: &str| a.scores.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        // llama2-70b under numpy 2 (row A1): numpy scalars' repr.
        let np = read("\nResults\n\n{'rouge1': np.float64(44.4542), 'gen_len': np.int64(29579723), 'gen_num': 24576, 'tokens_per_sample': np.float64(301.1)}\n\nhash=8f6a\n");
        assert_eq!(
            (score(&np, "rouge1"), score(&np, "gen_num")),
            (Some(44.4542), Some(24576.0))
        );
        assert_eq!((np.line, np.unread.as_deref()), (4, None));
        // gpt-j's f-strings; deepseek-r1's hyphenated key.
        let quoted =
            read("Results\n{'rouge1': '42.9865', 'gen_len': 4016878, 'num-samples': 4388}\n");
        assert_eq!(score(&quoted, "rouge1"), Some(42.9865));
        assert_eq!(score(&quoted, "num-samples"), Some(4388.0));
        // resnet, retinanet (after its COCO table), dlrm, 3d-unet, whisper, bert, SDXL (A2-A4).
        let forms = [
            ("accuracy=76.456%, good=38228, total=50000\n", "accuracy", 76.456),
            (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.375\nmAP=37.552%\n", "mAP", 37.552),
            ("AUC=80.310%, accuracy=96.6%, good=1, total=2, queries=2\n", "AUC", 80.31),
            ("Accuracy: mean = 0.86170, kidney = 0.9347, tumor = 0.7887\nDone!\n", "mean", 0.8617),
            ("Word Error Rate: 2.0256%, accuracy=97.9744%\n", "accuracy", 97.9744),
            ("{\"exact_match\": 83.6, \"f1\": 90.874}\n", "f1", 90.874),
            ("Accuracy Results: {'FID_SCORE': 23.01, 'CLIP_SCORE': 31.68}\n", "CLIP_SCORE", 31.68),
        ];
        for (text, key, want) in forms {
            let a = read(text);
            assert_eq!(score(&a, key), Some(want), "{text}: {:?}", a.scores);
        }
        // No score in any form: read as unread, with why; never an error of the import.
        let none = read("rouge1 44.5\nhash=9e7b0544\n");
        assert!(none.scores.is_empty());
        assert!(
            none.unread
                .as_deref()
                .unwrap()
                .contains("no dict of scores"),
            "{none:?}"
        );
        let empty = read("Results\n\n");
        assert!(empty
            .unread
            .as_deref()
            .unwrap()
            .contains("'Results', but no score after it"));
        let many: Vec<String> = (0..65).map(|i| format!("'k{i}': 1")).collect();
        assert_eq!(
            read(&format!("Results\n{{{}}}\n", many.join(", ")))
                .scores
                .len(),
            64
        );
    }
}
