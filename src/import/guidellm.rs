//! GuideLLM's `benchmarks.json` (or its YAML rendering), read into
//! `rigaudit_audit::imported::guidellm`'s records, for every layout GuideLLM 0.2 to 0.8 wrote.
//!
//! The definitions are GuideLLM's own code at each version: `docs/formats/guidellm.md` (rows G1
//! to G12) and `audit/src/imported/guidellm.rs`. What is read per version (row G1):
//! - 0.2-0.3: `{"benchmarks": [...]}`, each with `run_stats`, `request_totals` and
//!   `request_samples` beside `metrics`; requests with `start_time`, `end_time`, `prompt`, `error`;
//! - 0.4.0: `config`, `scheduler_metrics` (the measured window), `metrics.request_totals`;
//!   requests with `request_start_time`, `request_end_time`, `info.timings`; no version;
//! - 0.5 on: the same under a top-level `metadata.guidellm_version`.

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::guidellm::{Benchmark, Family, Printed, Report, Request, CHECKS};
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a source is GuideLLM's report (by content), JSON or its YAML rendering.
pub fn looks_like(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    has("\"guidellm_version\"")
        || (has("\"benchmarks\"") && has("\"request_totals\"") && has("\"run_stats\""))
        || (has("\"benchmarks\"") && has("\"request_totals\"") && has("\"scheduler_metrics\""))
        || is_yaml_report(s)
}

/// Reads the report and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let i = super::take(sources, looks_like, "report", "no GuideLLM report among them (expected benchmarks.json or its YAML rendering benchmarks.yaml: an object whose metadata has guidellm_version, or, before 0.5, benchmarks with request_totals and run_stats (0.2-0.3) or scheduler_metrics (0.4); GuideLLM 0.1's GuidanceReport and its CSV report are not read: give its JSON or YAML report)")?;
    let src = &sources[i];
    let v: Value = match is_yaml_report(src) {
        true => super::yaml::parse(&src.bytes).map_err(|e| fatal(format!("{}: {e}", src.shown)))?,
        false => super::json_of(src)?,
    };
    let (family, version) = family_of(src, &v)?;
    let benchmarks = benchmarks_of(src, &v, &version)?;
    let mut imp = Imported {
        tool_version: super::string_at(&v, "/metadata/guidellm_version"),
        model: model_of(&v),
        ..Default::default()
    };
    let listed: usize = benchmarks.iter().map(|b| b.requests.len()).sum();
    imp.taken.push(format!(
        "{} benchmarks of {} ({}, computed as GuideLLM {} computes them: docs/formats/guidellm.md) with {listed} listed requests (successful, incomplete, errored), the measured window of each, and their per-request distributions",
        benchmarks.len(),
        src.name,
        version.label,
        family.versions()
    ));
    imp.not_taken.push("the rate distributions over time (requests_per_second, *_tokens_per_second, request_concurrency, output_tokens_per_iteration), the dispatch and scheduling delays, the per-turn and per-modality (text, image, video, audio, tool call) summaries and the confidence intervals: not recomputed (docs row G11)".into());
    imp.not_taken.push(
        "the server's setup (engine, window, slots, hardware): GuideLLM does not record it".into(),
    );
    imp.note_unread(sources, "not a GuideLLM file the importer reads");
    let report = Report {
        file: sources[i].name.clone(),
        family,
        version: version.named.clone(),
        benchmarks,
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &report);
    settings(&v, &sources[i].name, &mut imp);
    imp.series = series(&report.benchmarks);
    Ok(imp)
}

/// The run's settings (0.8's `config.spec`; before, each benchmark's `args` or `config`).
fn settings(v: &Value, file: &str, imp: &mut Imported) {
    let skip = [
        "target",
        "tokenizer",
        "output",
        "api_routes",
        "api_key",
        "environment",
    ];
    let at = [
        ("/config/spec", "/config/spec"),
        ("/benchmarks/0/args", "/benchmarks/0/args"),
    ];
    for (pointer, prefix) in at {
        if let Some(spec) = v.pointer(pointer) {
            super::flatten(spec, prefix, file, &skip, &mut imp.settings);
            return;
        }
    }
}

fn model_of(v: &Value) -> Option<String> {
    [
        "/config/spec/backend/model",
        "/benchmarks/0/worker/backend_model",
    ]
    .iter()
    .find_map(|p| super::string_at(v, p))
}

/// What the file says of its version: the label for `taken`, the name for messages, and whether
/// `--sample-requests` took effect (0.5.4 on).
struct Version {
    label: String,
    named: String,
    sampling_applies: bool,
}

/// The family that wrote the report: by `metadata.guidellm_version`, else by its layout (row G1).
fn family_of(src: &Source, v: &Value) -> Result<(Family, Version), Fatal> {
    if let Some(s) = super::string_at(v, "/metadata/guidellm_version") {
        let family = Family::of_version(&s).ok_or_else(|| {
            fatal(format!("{}: metadata.guidellm_version {s:?} is not a version GuideLLM wrote (expected 0.5.0 or later)", src.shown))
        })?;
        let version = Version {
            label: format!("GuideLLM {s}"),
            named: format!("GuideLLM {s}"),
            sampling_applies: at_least(&s, [0, 5, 4]),
        };
        return Ok((family, version));
    }
    let first = v.pointer("/benchmarks/0").unwrap_or(&Value::Null);
    let (family, era, why) = if first.get("run_stats").is_some()
        || first.get("request_totals").is_some()
    {
        (
            Family::V02,
            "0.2-0.3",
            "run_stats and request_totals beside metrics",
        )
    } else if first.get("scheduler_metrics").is_some() {
        (
            Family::V04,
            "0.4.0",
            "scheduler_metrics and metrics.request_totals",
        )
    } else {
        return Err(fatal(format!("{}: a benchmarks list whose first benchmark has neither run_stats (GuideLLM 0.2-0.3) nor scheduler_metrics (0.4 on), and no metadata.guidellm_version: a layout this reader does not know, so not read as empty", src.shown)));
    };
    let version = Version {
        label: format!("no version in the file: GuideLLM {era}, inferred from its layout ({why})"),
        named: format!("GuideLLM {era}"),
        sampling_applies: family == Family::V02,
    };
    Ok((family, version))
}

/// Whether a version string is at least `min` (major, minor, patch; a `.devN` counts as its
/// release).
fn at_least(v: &str, min: [u32; 3]) -> bool {
    let mut got = [0u32; 3];
    for (slot, part) in got.iter_mut().zip(v.split('.')) {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        *slot = digits.parse().unwrap_or(0);
    }
    got >= min
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
fn benchmarks_of(src: &Source, v: &Value, version: &Version) -> Result<Vec<Benchmark>, Fatal> {
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
            benchmark(b, n, version)
                .map_err(|w| fatal(format!("{}: at /benchmarks/{n}{w}", src.shown)))
        })
        .collect()
}

fn benchmark(b: &Value, index: usize, version: &Version) -> Result<Benchmark, String> {
    let metrics = b["metrics"]
        .as_object()
        .ok_or("/metrics: expected an object")?;
    // Before 0.4 the totals sit beside the metrics.
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
        let statuses: BTreeMap<String, Printed> = by
            .iter()
            .filter_map(|(status, d)| printed(d).map(|p| (status.clone(), p)))
            .collect();
        if !statuses.is_empty() {
            dists.insert(name.clone(), statuses);
        }
    }
    Ok(Benchmark {
        index,
        sampling: sampling(b, version),
        window: window(b),
        totals,
        metrics: dists,
        requests: requests(b)?,
    })
}

/// Every listed request of a benchmark, by status.
fn requests(b: &Value) -> Result<Vec<Request>, String> {
    let reqs = b
        .get("requests")
        .and_then(|r| r.as_object())
        .ok_or("/requests: expected an object")?;
    let mut out = Vec::new();
    for status in ["successful", "incomplete", "errored"] {
        let list = reqs
            .get(status)
            .and_then(|l| l.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for (i, r) in list.iter().enumerate() {
            out.push(request(r, status, i).map_err(|w| format!("/requests/{status}/{i}{w}"))?);
        }
    }
    Ok(out)
}

/// The measured window (0.4 on): the span whose requests the figures take (row G2).
fn window(b: &Value) -> Option<(f64, f64)> {
    let m = b.get("scheduler_metrics")?;
    let lo = m.get("measure_start_time")?.as_f64()?;
    let hi = m.get("measure_end_time")?.as_f64()?;
    Some((lo, hi))
}

/// What says the benchmark's lists may be a sample (row G9): `request_samples` (0.2-0.3,
/// `--output-sampling`); `config.sample_requests` (0.4-0.6) or `config.sample_size` (0.7 on)
/// above 0, where the version applied it (0.5.4 on).
fn sampling(b: &Value, version: &Version) -> Option<String> {
    if let Some(s) = b.get("request_samples").filter(|s| !s.is_null()) {
        return Some(format!("request_samples {s}: --output-sampling"));
    }
    let config = b.get("config")?;
    let (key, n) = ["sample_size", "sample_requests"]
        .iter()
        .find_map(|k| config.get(*k).and_then(Value::as_i64).map(|n| (*k, n)))?;
    (n > 0 && version.sampling_applies).then(|| format!("config.{key} {n}"))
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
    let mut values: BTreeMap<String, f64> = o
        .iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k.clone(), x)))
        .collect();
    let num = |p: &str| r.pointer(p).and_then(Value::as_f64);
    let iterations = num("/info/timings/request_iterations");
    if let Some(n) = iterations {
        values.insert("info.timings.request_iterations".into(), n);
    }
    let error = ["/info/error", "/error"]
        .iter()
        .find_map(|p| {
            r.pointer(p)
                .filter(|e| !e.is_null() && e.as_str() != Some(""))
        })
        .map(|e| {
            e.as_str()
                .map(String::from)
                .unwrap_or_else(|| e.to_string())
        });
    let prompt = r.get("prompt");
    Ok(Request {
        status: status.to_string(),
        index,
        values,
        start: num("/request_start_time").or_else(|| num("/start_time")),
        end: num("/request_end_time").or_else(|| num("/end_time")),
        first_token: num("/info/timings/first_token_iteration"),
        first_output_token: num("/info/timings/first_output_token_iteration"),
        no_prompt: prompt.is_some_and(|p| p.is_null() || p.as_str() == Some("")),
        usage_output: num("/output_metrics/total_tokens"),
        usage_recorded: r.get("output_metrics").is_some(),
        cached: num("/input_metrics/cached_tokens"),
        iterations,
        error,
        output_chars: r
            .get("output")
            .and_then(|x| x.as_str())
            .map_or(0, |s| s.chars().count()),
        has_output: r.get("output").is_some_and(Value::is_string),
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

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::Guidellm
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        n.starts_with("benchmarks") && [".json", ".yaml", ".yml"].iter().any(|e| n.ends_with(e))
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
}
