//! vLLM's serving-benchmark result JSON (`vllm bench serve --save-result`, before it
//! `benchmarks/benchmark_serving.py`; SGLang's `bench_serving` of the same family), read into
//! `rigaudit_audit::imported::vllm`'s record.
//!
//! Definitions: vLLM's own code at each version, tabled in `docs/formats/vllm.md` (rows V1-V17);
//! the checks in `audit/src/imported/vllm.rs` cite them. Every top-level key is kept: which keys
//! a file has tells which version wrote it (row V1).

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::vllm::{values, Run, CHECKS};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The setup keys `vllm bench serve` writes before its results (the run's settings for `diff`).
const SETUP: &[&str] = &[
    "backend",
    "endpoint_type",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
];

/// Whether a source is a vLLM bench serve result (by content): its run figures, or the setup
/// keys it writes first beside a TTFT aggregate (a writer that keeps only the percentiles), or
/// SGLang's bench_serving result of the same family.
pub fn looks_like(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    ["\"request_throughput\"", "\"duration\"", "\"completed\""]
        .iter()
        .all(|k| has(k))
        // SGLang's bench_serving (0.3 writes no request_throughput).
        || (has("\"total_output_tokens_retokenized\"") && has("\"duration\""))
        || (has("\"backend\"")
            && has("\"model_id\"")
            && (has("\"mean_ttft_ms\"") || has("\"median_ttft_ms\"")))
}

/// One result object of a file, with its line when the file holds one a line.
type LineResult = (Option<usize>, Map<String, Value>);

/// The result objects of the file: one JSON object, or one a line (`--append-result` adds a
/// line per run), each with its line.
fn results_of(src: &Source) -> Result<Vec<LineResult>, Fatal> {
    let object = |v: Value, line: Option<usize>| match v {
        Value::Object(o) => Ok((line, o)),
        _ => Err(fatal(format!(
            "{}: {}expected a JSON object (a vLLM result)",
            src.shown,
            line.map_or(String::new(), |n| format!("line {n}: "))
        ))),
    };
    // Python's json writes a bare `Infinity` (`--burstiness inf`; SGLang's `request_rate`).
    match super::json_of_python(src) {
        Ok(v) => Ok(vec![object(v, None)?]),
        Err(e) => {
            // A first line that is a whole result, and more lines: JSON Lines, whose reader
            // names the line that is broken. Else the JSON reader's error stands.
            let mut lines = src
                .bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.trim_ascii().is_empty());
            let first = Source {
                name: src.name.clone(),
                shown: src.shown.clone(),
                bytes: lines.next().unwrap_or_default().to_vec(),
                sha256: String::new(),
                role: String::new(),
            };
            let whole = super::json_of_python(&first).is_ok_and(|v| v.is_object());
            if !whole || lines.next().is_none() {
                return Err(e);
            }
            let results = super::json_lines(src, |v, n| Ok((v.clone(), n)))?;
            results
                .into_iter()
                .map(|(v, n)| object(v, Some(n)))
                .collect()
        }
    }
}

/// Reads the result (one file; more are refused), each of its results when it holds one a line,
/// and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let i = super::take(sources, looks_like, "result", "no vLLM bench serve result among them (expected the JSON of --save-result: its setup keys and its figures, with or without --save-detailed)")?;
    let src = &sources[i];
    let results = results_of(src)?;
    let mut runs = Vec::new();
    for (line, obj) in &results {
        runs.push(run(obj, src, *line)?);
    }
    let first = &results[0].1;
    let mut imp = Imported {
        tool_version: None,
        model: first
            .get("model_id")
            .and_then(|x| x.as_str())
            .map(String::from),
        ..Default::default()
    };
    notes(&runs, &src.name, &mut imp);
    imp.note_unread(sources, "one vLLM result is read at a time; not read");
    for r in &runs {
        imp.found.merge(rigaudit_audit::imported::run(CHECKS, r));
    }
    imp.found.sort_ran();
    let setup: Map<String, Value> = first
        .iter()
        .filter(|(k, _)| SETUP.contains(&k.as_str()))
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect();
    super::flatten(&Value::Object(setup), "", &src.name, &[], &mut imp.settings);
    imp.series = series(&runs[0]);
    Ok(imp)
}

/// What was taken from the results and what could not be.
fn notes(runs: &[Run], name: &str, imp: &mut Imported) {
    for r in runs {
        let at = r.line.map_or(String::new(), |n| format!(" line {n}"));
        if r.detailed {
            imp.taken.push(format!("the {} requests of {name}{at} (TTFT, ITLs, latency, start and queue times, input and output lengths, text, error) and the {} figures it prints", r.ttfts.len(), r.printed.len()));
        } else {
            imp.taken.push(format!(
                "the {} figures {name}{at} prints, checked against each other",
                r.printed.len()
            ));
        }
    }
    if runs.iter().any(|r| !r.detailed) {
        imp.not_taken.push("the per-request lists: the result was saved without --save-detailed (or by a writer that keeps only aggregates), so no figure is recomputed from requests".into());
    }
    if runs.iter().any(|r| r.duration.is_none()) {
        imp.not_taken.push(
            "the run's duration, counts and throughputs: this writer did not save them".into(),
        );
    }
    imp.not_taken
        .push("vLLM's version: the result file does not record it".into());
    imp.not_taken.push("where output_lens came from: the server's usage, or the client's tokenizer on the text when the stream carried no usage; the file does not say".into());
    imp.not_taken
        .push("the server's setup: vLLM's client records only its own settings".into());
}

/// The figures `diff` compares, one value a request: TTFT, TPOT and E2EL, and ITL as each
/// request's mean gap (the gaps of one request share its batch and are not independent samples).
fn series(r: &Run) -> Vec<Series> {
    let ok: Vec<usize> = (0..r.ttfts.len()).filter(|i| r.ok(*i)).collect();
    let mut out = Vec::new();
    for m in ["ttft", "tpot", "e2el"] {
        if let Some(v) = values(r, m, &ok).filter(|v| !v.is_empty()) {
            out.push(Series {
                key: format!("vllm.{m}_ms"),
                sample: Sample::Values(v),
            });
        }
    }
    let itl: Vec<f64> = ok
        .iter()
        .filter_map(|&i| values(r, "itl", &[i]))
        .filter(|gaps| !gaps.is_empty())
        .map(|gaps| gaps.iter().sum::<f64>() / gaps.len() as f64)
        .collect();
    if !itl.is_empty() {
        out.push(Series {
            key: "vllm.itl_mean_per_request_ms".into(),
            sample: Sample::Values(itl),
        });
    }
    for k in ["request_throughput", "output_throughput"] {
        if let Some(x) = r.printed.get(k) {
            out.push(Series {
                key: format!("vllm.{k}"),
                sample: Sample::Headline(*x),
            });
        }
    }
    out
}

/// The typed result; every per-request list, when there are (`--save-detailed`), must hold one
/// entry per request; without `ttfts` the result is read as aggregates only.
fn run(obj: &Map<String, Value>, src: &Source, line: Option<usize>) -> Result<Run, Fatal> {
    let place = line.map_or(String::new(), |n| format!("line {n}: "));
    let err =
        |k: &str, what: &str| fatal(format!("{}: {place}at /{k}: expected {what}", src.shown));
    let nums = |k: &str| -> Result<Option<Vec<f64>>, Fatal> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_f64())
                .collect::<Option<Vec<f64>>>()
                .map(Some)
                .ok_or_else(|| err(k, "a list of numbers, one per request")),
            Some(_) => Err(err(k, "a list of numbers, one per request")),
        }
    };
    let duration = match obj.get("duration") {
        None | Some(Value::Null) => None,
        Some(d) => Some(
            d.as_f64()
                .filter(|d| *d > 0.0)
                .ok_or_else(|| err("duration", "the run's duration in seconds, above 0"))?,
        ),
    };
    let (keys, backend, printed) = top_level(obj);
    let Some(ttfts) = nums("ttfts")? else {
        return Ok(Run {
            file: src.name.clone(),
            line,
            duration,
            printed,
            keys,
            backend,
            ..Run::default()
        });
    };
    let need = |k: &str| {
        nums(k)?.ok_or_else(|| err(k, "a list, one per request, beside ttfts (--save-detailed)"))
    };
    let itls =
        itls(obj).ok_or_else(|| err("itls", "a list of lists of seconds (--save-detailed)"))?;
    let strings = |k: &str| -> Option<Vec<String>> {
        obj.get(k)?.as_array().map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or("").to_string())
                .collect()
        })
    };
    let r = Run {
        file: src.name.clone(),
        line,
        detailed: true,
        duration,
        itls,
        input_lens: need("input_lens")?,
        output_lens: need("output_lens")?,
        latencies: nums("latencies")?,
        start_times: nums("start_times")?,
        queue_times: nums("queue_times")?,
        texts: strings("generated_texts"),
        errors: strings("errors").unwrap_or_default(),
        printed,
        keys,
        backend,
        ttfts,
        per_request_objects: false,
    };
    lengths_agree(&r, src)?;
    Ok(r)
}

/// Every top-level key (the writer's version shows in them), `backend`, and every top-level
/// number but the setup's (`max_concurrency` kept, for the cap).
fn top_level(
    obj: &Map<String, Value>,
) -> (BTreeSet<String>, Option<String>, BTreeMap<String, f64>) {
    let keys = obj.keys().cloned().collect();
    let backend = obj
        .get("backend")
        .and_then(|b| b.as_str())
        .map(String::from);
    let printed = obj
        .iter()
        .filter(|(k, _)| !SETUP.contains(&k.as_str()) || k.as_str() == "max_concurrency")
        .filter_map(|(k, x)| x.as_f64().map(|x| (k.clone(), x)))
        .collect();
    (keys, backend, printed)
}

/// `itls`: one list of seconds per request.
fn itls(obj: &Map<String, Value>) -> Option<Vec<Vec<f64>>> {
    obj.get("itls")?
        .as_array()?
        .iter()
        .map(|l| l.as_array()?.iter().map(|x| x.as_f64()).collect())
        .collect()
}

fn lengths_agree(r: &Run, src: &Source) -> Result<(), Fatal> {
    let n = r.ttfts.len();
    let lists = [
        ("itls", Some(r.itls.len())),
        ("input_lens", Some(r.input_lens.len())),
        ("output_lens", Some(r.output_lens.len())),
        ("latencies", r.latencies.as_ref().map(Vec::len)),
        ("start_times", r.start_times.as_ref().map(Vec::len)),
        ("queue_times", r.queue_times.as_ref().map(Vec::len)),
        ("generated_texts", r.texts.as_ref().map(Vec::len)),
        ("errors", Some(r.errors.len()).filter(|x| *x > 0)),
    ];
    for (k, len) in lists {
        if let Some(len) = len.filter(|l| *l != n) {
            return Err(fatal(format!(
                "{}: at /{k}: {len} entries, but ttfts has {n}: expected one per request",
                src.shown
            )));
        }
    }
    Ok(())
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::Vllm
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
}
