//! GuideLLM's `benchmarks.json`, read into `rigaudit_audit::imported::guidellm`'s records.
//!
//! Definitions (GuideLLM 0.8; in full in `audit/src/imported/guidellm.rs`):
//! - units: `*_ms` milliseconds, `request_latency` seconds, tokens, per-second rates;
//! - TTFT: first streamed token iteration - request start;
//! - token counts: the server's usage, else streamed iterations (one token each assumed);
//! - aggregates: per status (successful, incomplete, errored, total), missing values as 0.0.

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::guidellm::{Benchmark, Printed, Report, Request, CHECKS};
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a source is GuideLLM's report (by content), JSON or its YAML rendering.
pub fn looks_like(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    has("\"guidellm_version\"")
        || (has("\"benchmarks\"") && has("\"request_totals\"") && has("\"run_stats\""))
        || is_yaml_report(s)
}

/// Reads the report and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let i = super::take(sources, looks_like, "report", "no GuideLLM report among them (expected benchmarks.json or its YAML rendering benchmarks.yaml: an object whose metadata has guidellm_version, or, before it, benchmarks with run_stats and request_totals; GuideLLM's CSV report is not read: give its JSON or YAML report)")?;
    let src = &sources[i];
    let v: Value = match is_yaml_report(src) {
        true => super::yaml::parse(&src.bytes).map_err(|e| fatal(format!("{}: {e}", src.shown)))?,
        false => super::json_of(src)?,
    };
    let benchmarks = benchmarks_of(src, &v)?;
    let mut imp = Imported {
        tool_version: super::string_at(&v, "/metadata/guidellm_version"),
        model: super::string_at(&v, "/config/spec/backend/model"),
        ..Default::default()
    };
    let listed: usize = benchmarks.iter().map(|b| b.requests.len()).sum();
    imp.taken.push(format!(
        "{} benchmarks of {} with {listed} listed requests (successful, incomplete, errored) and their per-request distributions",
        benchmarks.len(),
        src.name
    ));
    imp.not_taken.push("the rate distributions over time (requests_per_second, *_tokens_per_second, request_concurrency) and the confidence intervals: not recomputed".into());
    imp.not_taken.push(
        "the server's setup (engine, window, slots, hardware): GuideLLM does not record it".into(),
    );
    imp.note_unread(sources, "not a GuideLLM file the importer reads");
    let report = Report {
        file: sources[i].name.clone(),
        benchmarks,
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &report);
    let skip = ["target", "tokenizer", "output", "api_routes", "api_key"];
    if let Some(spec) = v.pointer("/config/spec") {
        super::flatten(
            spec,
            "/config/spec",
            &sources[i].name,
            &skip,
            &mut imp.settings,
        );
    }
    imp.series = series(&report.benchmarks);
    Ok(imp)
}

/// Whether a source is GuideLLM's report rendered as YAML (`save_yaml`, PyYAML's dump of the
/// same dict as the JSON report): a `.yaml`/`.yml` file with its `guidellm_version:`, or, before
/// it, its `benchmarks:` and `request_totals:`.
fn is_yaml_report(s: &Source) -> bool {
    let name = s.name.to_ascii_lowercase();
    let has = |k: &str| super::holds(&s.bytes, k);
    (name.ends_with(".yaml") || name.ends_with(".yml"))
        && (has("guidellm_version:") || (has("benchmarks:") && has("request_totals:")))
}

/// The report's `/benchmarks`, each read; an error names the benchmark and the place in it.
fn benchmarks_of(src: &Source, v: &Value) -> Result<Vec<Benchmark>, Fatal> {
    let list = super::required_at(
        src,
        v,
        "/benchmarks",
        Value::as_array,
        "a list of benchmarks",
    )?;
    list.iter()
        .enumerate()
        .map(|(n, b)| {
            benchmark(b, n).map_err(|w| fatal(format!("{}: at /benchmarks/{n}{w}", src.shown)))
        })
        .collect()
}

fn benchmark(b: &Value, index: usize) -> Result<Benchmark, String> {
    let metrics = b["metrics"]
        .as_object()
        .ok_or("/metrics: expected an object")?;
    // Before 0.8 the totals sit beside the metrics.
    let totals = metrics
        .get("request_totals")
        .or_else(|| b.get("request_totals"))
        .and_then(|t| t.as_object())
        .ok_or("/metrics/request_totals: expected an object")?
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
        .collect();
    let mut dists = BTreeMap::new();
    for (name, m) in metrics {
        let Some(by) = m.as_object() else { continue };
        let mut statuses = BTreeMap::new();
        for (status, d) in by {
            if let Some(p) = printed(d) {
                statuses.insert(status.clone(), p);
            }
        }
        if !statuses.is_empty() {
            dists.insert(name.clone(), statuses);
        }
    }
    let reqs = b
        .get("requests")
        .and_then(|r| r.as_object())
        .ok_or("/requests: expected an object")?;
    let mut requests = Vec::new();
    for status in ["successful", "incomplete", "errored"] {
        let list = reqs
            .get(status)
            .and_then(|l| l.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for (i, r) in list.iter().enumerate() {
            requests.push(request(r, status, i).map_err(|w| format!("/requests/{status}/{i}{w}"))?);
        }
    }
    Ok(Benchmark {
        index,
        stripped: b.get("request_samples").is_some_and(|x| x.is_null()),
        totals,
        metrics: dists,
        requests,
    })
}

/// A printed distribution: an object with `mean` and `count`, its percentiles flattened.
fn printed(d: &Value) -> Option<Printed> {
    let o = d.as_object()?;
    o.get("mean")?.as_f64()?;
    o.get("count")?.as_f64()?;
    let mut p = Printed::new();
    for (k, v) in o {
        if let Some(x) = v.as_f64() {
            p.insert(k.clone(), x);
        }
    }
    for (k, v) in o
        .get("percentiles")
        .and_then(|x| x.as_object())
        .into_iter()
        .flatten()
    {
        if let Some(x) = v.as_f64() {
            p.insert(format!("percentiles.{k}"), x);
        }
    }
    Some(p)
}

fn request(r: &Value, status: &str, index: usize) -> Result<Request, String> {
    let o = r.as_object().ok_or(": expected an object")?;
    let values = o
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
        .collect();
    let error = r.pointer("/info/error").filter(|e| !e.is_null()).map(|e| {
        e.as_str()
            .map(String::from)
            .unwrap_or_else(|| e.to_string())
    });
    Ok(Request {
        status: status.to_string(),
        index,
        values,
        usage_output: r
            .pointer("/output_metrics/text_tokens")
            .and_then(|x| x.as_f64()),
        usage_recorded: r.get("output_metrics").is_some(),
        cached: r
            .pointer("/input_metrics/cached_tokens")
            .and_then(|x| x.as_f64()),
        iterations: r
            .pointer("/info/timings/request_iterations")
            .and_then(|x| x.as_f64()),
        error,
        output_chars: r
            .get("output")
            .and_then(|x| x.as_str())
            .map_or(0, |s| s.chars().count()),
    })
}

/// The figures `diff` compares: per benchmark, the successful requests' latencies and rates.
fn series(benchmarks: &[Benchmark]) -> Vec<Series> {
    let mut out = Vec::new();
    for b in benchmarks {
        let ok: Vec<&Request> = b
            .requests
            .iter()
            .filter(|r| r.status == "successful")
            .collect();
        for f in [
            "time_to_first_token_ms",
            "inter_token_latency_ms",
            "request_latency",
            "output_tokens_per_second",
        ] {
            let v: Vec<f64> = ok.iter().filter_map(|r| r.values.get(f).copied()).collect();
            if !v.is_empty() {
                out.push(Series {
                    key: format!("guidellm.{}.{f}", b.index),
                    sample: Sample::Values(v),
                });
            }
        }
    }
    out
}
