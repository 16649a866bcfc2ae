//! llama.cpp's `llama-bench -o json` (or `-o jsonl`), read into
//! `rigaudit_audit::imported::llama_bench`'s records.
//!
//! Definitions (in full in `audit/src/imported/llama_bench.rs`):
//! - units: nanoseconds (`*_ns`, integers) and tokens per second (`*_ts`);
//! - TTFT: none; a `pp` test is a prefill figure (prompt tokens in batches), a `tg` test a decode
//!   figure (tokens one at a time);
//! - token counts: the test's `n_prompt` + `n_gen`, as asked; no server, no usage;
//! - aggregates: every timed repetition (`-r`), after one untimed warm-up; sample standard
//!   deviation.

use super::llama_bench_text::{self as text_out, Layout};
use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::llama_bench::{Bench, Test, CHECKS};
use serde_json::Value;

/// What the file's tests print but the checks do not read (the run's settings are the rest).
const MEASURED: &[&str] = &[
    "samples_ns",
    "samples_ts",
    "avg_ns",
    "avg_ts",
    "stddev_ns",
    "stddev_ts",
    "test_time",
    "model_filename",
];

/// Whether a source is llama-bench's output (by content): JSON or JSON Lines with samples, or the
/// CSV, SQL or Markdown it prints.
pub fn looks_like(s: &Source) -> bool {
    (super::holds(&s.bytes, "\"samples_ns\"") && super::holds(&s.bytes, "\"n_prompt\""))
        || (s.bytes.len() < 64 << 20
            && std::str::from_utf8(&s.bytes)
                .ok()
                .and_then(text_out::text_layout)
                .is_some())
}

/// Reads the file (one; more are refused) and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let i = super::take(sources, looks_like, "results", "not llama-bench output (expected what `llama-bench -o json`, `jsonl`, `csv`, `sql` or `md` prints: tests with n_prompt and their timings)")?;
    let src = &sources[i];
    let (values, truncated, layout) = values(src)?;
    let mut tests = Vec::new();
    for (at, v) in &values {
        tests.push(test(v, at).map_err(|w| fatal(format!("{}: {at}: {w}", src.shown)))?);
    }
    if tests.is_empty() && !truncated {
        return Err(fatal(format!("{}: no test in it", src.shown)));
    }
    let bench = Bench {
        file: src.name.clone(),
        tests,
        truncated,
        layout: layout.option().to_string(),
    };
    let first = values.first().map(|(_, v)| v);
    let built = (layout == Layout::Markdown)
        .then(|| src.text().ok().and_then(text_out::md_build))
        .flatten();
    let text = |k: &str| {
        first.and_then(|v| v.get(k)).map(as_text).or_else(|| {
            let (commit, number) = built.clone()?;
            Some(if k == "build_number" { number } else { commit })
        })
    };
    let mut imp = Imported {
        tool_version: first.map(|_| {
            format!(
                "llama-bench build {} (commit {})",
                text("build_number").unwrap_or_else(|| "?".into()),
                text("build_commit").unwrap_or_else(|| "?".into())
            )
        }),
        model: model(first),
        ..Default::default()
    };
    notes(&bench, layout, &mut imp);
    imp.note_unread(sources, "one llama-bench file is read at a time; not read");
    imp.found = rigaudit_audit::imported::run(CHECKS, &bench);
    for (at, v) in &values {
        let skip: Vec<&str> = MEASURED.to_vec();
        let mut obj = v.clone();
        if let Some(o) = obj.as_object_mut() {
            o.retain(|k, _| !skip.contains(&k.as_str()));
        }
        let prefix = format!("/{}", at.replace(' ', ""));
        super::flatten(&obj, &prefix, &src.name, &[], &mut imp.settings);
    }
    imp.series = series(&bench);
    Ok(imp)
}

fn as_text(v: &Value) -> String {
    v.as_str()
        .map(String::from)
        .unwrap_or_else(|| v.to_string())
}

/// The model as the file names it: its file's name and llama-bench's type (`llama 256M Q4_1`).
fn model(first: Option<&Value>) -> Option<String> {
    let v = first?;
    let file = v.get("model_filename").and_then(|x| x.as_str())?;
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    Some(match v.get("model_type").and_then(|x| x.as_str()) {
        Some(t) => format!("{name} ({t})"),
        None => name.to_string(),
    })
}

fn notes(b: &Bench, layout: Layout, imp: &mut Imported) {
    let reps: Vec<String> = b
        .tests
        .iter()
        .map(|t| format!("{} x{}", t.name(), t.samples_ns.len()))
        .collect();
    if matches!(layout, Layout::Json | Layout::Jsonl) {
        imp.taken.push(format!(
            "{} tests of {} ({}): each repetition's ns and tokens/s, the printed means and standard deviations, and the settings each test records",
            b.tests.len(),
            b.file,
            reps.join(", ")
        ));
    } else {
        let names: Vec<String> = b.tests.iter().map(Test::name).collect();
        imp.taken.push(format!(
            "{} tests of {} (llama-bench {}: {}): the printed means and standard deviations and the settings each test records",
            b.tests.len(),
            b.file,
            layout.option(),
            names.join(", ")
        ));
        imp.not_taken.push(format!("each repetition's time: llama-bench {} prints only the means and standard deviations, so no figure can be recomputed (`-o json` or `-o jsonl` print the samples)", layout.option()));
    }
    imp.not_taken.push("a served request's figures: llama-bench times batches inside one process (no HTTP, no TTFT, no queue); a pp figure is prompt tokens per second, a tg figure generated tokens per second".into());
    imp.not_taken
        .push("the warm-up run and model load: llama-bench does not time them".into());
    imp.not_taken.push(
        "the machine: cpu_info and gpu_info are as llama-bench printed them and cannot be checked"
            .into(),
    );
    if b.truncated {
        imp.not_taken.push(
            "why the run stopped: llama-bench wrote the error to stderr, not to the file".into(),
        );
    }
}

/// The tests' repetitions, pp as prefill and tg as decode figures, for `diff`.
fn series(b: &Bench) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for t in &b.tests {
        let mut key = format!("llama-bench.{}.{}_tokens_per_s", t.name(), t.phase());
        let same = out.iter().filter(|s| s.key.starts_with(&key)).count();
        if same > 0 {
            key = format!("{key}#{}", same + 1);
        }
        out.push(Series {
            key,
            sample: Sample::Values(t.ts()),
        });
    }
    out
}

/// A file's tests (each with where it is), whether a JSON array ends unclosed, its output.
type Values = (Vec<(String, Value)>, bool, Layout);

/// The file's test objects with where each is (`/0` or `line 3`), whether a JSON array ends
/// unclosed, and which output it is.
fn values(src: &Source) -> Result<Values, Fatal> {
    let text = src.text()?;
    if let Some(layout) = text_out::text_layout(text) {
        let tests = text_out::tests(text, layout).map_err(|e| {
            fatal(format!(
                "{}: llama-bench {}: {e}",
                src.shown,
                layout.option()
            ))
        })?;
        return Ok((tests, false, layout));
    }
    if !text.trim_start().starts_with('[') {
        let lines = super::json_lines(src, |v, n| Ok((format!("line {n}"), v.clone())))?;
        return Ok((lines, false, Layout::Jsonl));
    }
    match super::json_of(src) {
        Ok(Value::Array(a)) => Ok((
            a.into_iter()
                .enumerate()
                .map(|(i, v)| (format!("/{i}"), v))
                .collect(),
            false,
            Layout::Json,
        )),
        Ok(_) => Err(fatal(format!(
            "{}: expected a JSON array of tests at the top",
            src.shown
        ))),
        Err(e) => match unclosed(text) {
            Some(v) => Ok((v, true, Layout::Json)),
            None => Err(e),
        },
    }
}

/// The complete objects of an array that ends before its `]` (llama-bench stopped); `None` when
/// the text is broken in another way (then the JSON reader's error stands).
fn unclosed(text: &str) -> Option<Vec<(String, Value)>> {
    let start = text.find('[')? + 1;
    let mut rest = &text[start..];
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            return Some(out);
        }
        let mut it = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match it.next() {
            Some(Ok(v)) if v.is_object() => {
                out.push((format!("/{}", out.len()), v));
                rest = &rest[it.byte_offset()..];
            }
            Some(Err(e)) if e.is_eof() => return Some(out),
            _ => return None,
        }
    }
}

fn test(v: &Value, at: &str) -> Result<Test, String> {
    let uint = |k: &str| -> Result<Option<u64>, String> {
        match v.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("at /{k}: expected a whole number, found {x}")),
        }
    };
    let list_u = match v.get("samples_ns") {
        Some(x) => x
            .as_array()
            .ok_or("at /samples_ns: expected a list of nanoseconds")?
            .clone(),
        None if v.get("avg_ts").is_some() => Vec::new(),
        None => return Err("expected 'samples_ns', a list of nanoseconds".into()),
    };
    let samples_ns = list_u
        .iter()
        .map(|x| x.as_u64())
        .collect::<Option<Vec<u64>>>()
        .filter(|l| l.iter().all(|x| *x > 0))
        .ok_or("at /samples_ns: expected whole numbers of nanoseconds above 0")?;
    let samples_ts = match v.get("samples_ts").and_then(|x| x.as_array()) {
        Some(a) => a
            .iter()
            .map(|x| x.as_f64())
            .collect::<Option<Vec<f64>>>()
            .ok_or("at /samples_ts: expected numbers")?,
        None => Vec::new(),
    };
    Ok(Test {
        at: at.to_string(),
        n_prompt: uint("n_prompt")?.ok_or("expected 'n_prompt', a whole number")?,
        n_gen: uint("n_gen")?.ok_or("expected 'n_gen', a whole number")?,
        n_depth: uint("n_depth")?.unwrap_or(0),
        samples_ns,
        samples_ts,
        avg_ns: uint("avg_ns")?,
        stddev_ns: uint("stddev_ns")?,
        avg_ts: v.get("avg_ts").and_then(|x| x.as_f64()),
        stddev_ts: v.get("stddev_ts").and_then(|x| x.as_f64()),
        build_number: v.get("build_number").and_then(|x| x.as_u64()),
        keys: v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default(),
    })
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::LlamaBench
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        n.starts_with("llama-bench") && [".json", ".jsonl"].iter().any(|e| n.ends_with(e))
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
}
