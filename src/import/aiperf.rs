//! AIPerf's `profile_export_aiperf.json` (summary) and `profile_export.jsonl` (per-request
//! records), read into `rigaudit_audit::imported::aiperf`'s records.
//!
//! Definitions (AIPerf 0.13; the checks' file `audit/src/imported/aiperf.rs` has them in full):
//! - units: as each value states (`ms`, `sec`, `tokens`, `tokens/sec`, `requests`, ...);
//! - TTFT: first content chunk - request start (reasoning text counts as content);
//! - token counts: the client's tokenizer on the prompt and reply text (`input_sequence_length`,
//!   `output_sequence_length`); the server's usage is kept beside them (`usage_*`);
//! - aggregates: over the profiling-phase records without an error; errors are counted apart
//!   (`error_request_count`); warm-up records are not in the figures.

mod genai;

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use crate::input::shown;
use rigaudit_audit::imported::aiperf::{Export, RawRecord, Record, Stat, Summary, CHECKS};
use rigaudit_audit::imported::compare::{Sample, Series};
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a source is one of AIPerf's files (its summary, by content), or GenAI-Perf's (its
/// summary or perf_analyzer's export).
pub fn looks_like(s: &Source) -> bool {
    let records =
        super::holds(&s.bytes, "\"benchmark_phase\"") || super::holds(&s.bytes, "\"credit_phase\"");
    is_summary(s) || (s.name.ends_with(".jsonl") && records) || genai::is_export(s)
}

/// AIPerf's summary: `aiperf_version` (0.3 on), or, as every earlier export writes them,
/// `input_config` beside `was_cancelled`.
fn is_summary(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    let aiperf = has("\"aiperf_version\"") || (has("\"input_config\"") && has("\"was_cancelled\""));
    (s.name.ends_with(".json") && aiperf) || genai::is_summary(s)
}

/// Reads the summary and the records and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let si = super::take(sources, is_summary, "summary", "no AIPerf summary among them (expected profile_export_aiperf.json, a JSON object with aiperf_version, or input_config and was_cancelled before 0.4; or GenAI-Perf's profile_export_genai_perf.json)")?;
    let ri = sources
        .iter()
        .position(|s| (s.name.ends_with(".jsonl") && !is_raw(s)) || genai::is_export(s));
    let (mut summary, model, config) = summary(&sources[si])?;
    summary.genai_perf = genai::is_summary(&sources[si]);
    let records = match ri {
        Some(i) if genai::is_export(&sources[i]) => {
            sources[i].role = "records".into();
            genai::records(&sources[i])?
        }
        Some(i) => {
            sources[i].role = "records".into();
            records(&sources[i])?
        }
        None => Vec::new(),
    };
    let raw_i = sources.iter().position(is_raw);
    let raw = match raw_i {
        Some(i) => {
            sources[i].role = "raw records".into();
            Some(raw_records(&sources[i])?)
        }
        None => None,
    };
    let mut imp = Imported {
        tool_version: summary.version.clone(),
        model,
        ..Default::default()
    };
    let records_file = ri.map(|i| sources[i].name.clone()).unwrap_or_default();
    notes(&summary, &records, &records_file, &mut imp);
    if raw.is_some() {
        imp.taken.push(
            "the raw records' chunk times, against which each TTFT's anchor is checked".into(),
        );
        imp.not_taken.retain(|n| !n.starts_with("whether a TTFT"));
    }
    if let Some(limit) = duration_limit(&config) {
        imp.not_taken.push(format!("the requests still running at the end of the --benchmark-duration window ({limit}): AIPerf leaves them out of every figure and of the records, and writes nowhere how many (docs/formats/aiperf.md row A2)"));
    }
    imp.note_unread(sources, "not an AIPerf file the importer reads");
    let raw_file = raw_i.map(|i| sources[i].name.clone()).unwrap_or_default();
    let export = Export {
        summary,
        records,
        records_file,
        raw: raw.map(|r| (raw_file, r)),
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &export);
    let skip = [
        "artifacts",
        "urls",
        "url",
        "runtime",
        "gpu_telemetry",
        "server_metrics",
    ];
    super::flatten(
        &config,
        "/input_config",
        &sources[si].name,
        &skip,
        &mut imp.settings,
    );
    imp.series = series(&export.summary, &export.records);
    Ok(imp)
}

fn notes(s: &Summary, records: &[Record], records_file: &str, imp: &mut Imported) {
    if records.is_empty() {
        imp.taken.push(format!(
            "the {} metrics the summary prints, read alone and checked against each other",
            s.metrics.len()
        ));
        imp.not_taken.push("the per-request records (profile_export.jsonl, written with --export-level records or raw) were not given: no figure is recomputed from requests".into());
    }
    let profiling = records.iter().filter(|r| r.phase == "profiling").count();
    imp.taken.push(format!(
        "{profiling} profiling-phase request records of {records_file} (latencies, TTFT, client and usage token counts, errors) and the {} metrics the summary prints",
        s.metrics.len()
    ));
    let other = records.len() - profiling;
    if other > 0 {
        imp.not_taken.push(format!("{other} records of other phases (warm-up): AIPerf leaves them out of its figures, and so does the check"));
    }
    imp.not_taken.push("the time-sliced figures (effective_*, active_*, tokens_in_flight) and the adj_* percentiles: the records hold no per-slice data".into());
    imp.not_taken.push(
        "the server's setup (engine, window, slots, hardware): AIPerf does not record it".into(),
    );
    imp.not_taken.push(
        "whether a TTFT was taken at an empty chunk: the records file holds no chunks".into(),
    );
}

fn summary(src: &Source) -> Result<(Summary, Option<String>, Value), Fatal> {
    let v: Value = super::json_of(src)?;
    let obj = v
        .as_object()
        .ok_or_else(|| fatal(format!("{}: expected a JSON object at the top", src.shown)))?;
    let mut metrics = BTreeMap::new();
    // Before 0.3 the metrics sit under `records` (by tag, or by display name before 0.1).
    let listed = obj
        .get("records")
        .and_then(|r| r.as_object())
        .unwrap_or(obj);
    for (k, m) in listed {
        let Some(unit) = m.get("unit").and_then(|u| u.as_str()) else {
            continue;
        };
        let fields = m
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(f, x)| x.as_f64().map(|x| (f.clone(), x)))
            .collect();
        metrics.insert(
            k.clone(),
            Stat {
                unit: unit.to_string(),
                fields,
            },
        );
    }
    let s = Summary {
        file: src.name.clone(),
        version: super::string_at(&v, "/aiperf_version"),
        metrics,
        was_cancelled: v.get("was_cancelled").and_then(|x| x.as_bool()),
        is_complete: v.get("is_complete").and_then(|x| x.as_bool()),
        incomplete_reason: super::string_at(&v, "/incomplete_reason"),
        streaming: v
            .pointer("/input_config/endpoint/streaming")
            .and_then(|x| x.as_bool()),
        errors: error_summary(&v),
        window_s: window(&v),
        genai_perf: false,
    };
    let model = super::string_at(&v, "/input_config/models/items/0/name")
        .or_else(|| super::string_at(&v, "/input_config/model_names/0"))
        .or_else(|| super::string_at(&v, "/input_config/model/0"));
    let config = v.get("input_config").cloned().unwrap_or(Value::Null);
    Ok((s, model, config))
}

/// The run's duration limit and grace period, as `D s + G s grace`, when it had one: under
/// `loadgen` to 0.11, as the profiling phase's `duration` and `grace_period` from 0.12.
fn duration_limit(config: &Value) -> Option<String> {
    let phase = config
        .get("phases")
        .and_then(Value::as_array)
        .and_then(|p| p.iter().find(|x| x["kind"] == "profiling"));
    let (d, g) = match phase {
        Some(p) => (p.get("duration"), p.get("grace_period")),
        None => (
            config.pointer("/loadgen/benchmark_duration"),
            config.pointer("/loadgen/benchmark_grace_period"),
        ),
    };
    let d = d.and_then(Value::as_f64)?;
    let g = g
        .and_then(Value::as_f64)
        .map_or(String::new(), |g| format!(" + {g} s grace"));
    Some(format!("{d} s{g}"))
}

/// `end_time` - `start_time` in seconds: ISO date-times printed to the microsecond, in local time
/// (0.12.0 on the window its throughputs are over).
fn window(v: &Value) -> Option<f64> {
    let at = |k: &str| {
        let t = v.get(k)?.as_str()?;
        chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").ok()
    };
    let d = at("end_time")? - at("start_time")?;
    Some(d.num_microseconds()? as f64 / 1e6)
}

/// `error_summary`: each kind of error the run met, its count and `code type: message`.
fn error_summary(v: &Value) -> Vec<(f64, String)> {
    v.get("error_summary")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .map(|e| {
            let d = |k: &str| {
                e.pointer(&format!("/error_details/{k}"))
                    .map(|x| {
                        x.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| x.to_string())
                    })
                    .unwrap_or_default()
            };
            let n = e.get("count").and_then(Value::as_f64).unwrap_or(0.0);
            (n, format!("{} {}: {}", d("code"), d("type"), d("message")))
        })
        .collect()
}

/// The figures `diff` compares: per-request values of the latency and rate metrics over the
/// valid profiling records, and the run-wide throughputs as printed.
fn series(s: &Summary, records: &[Record]) -> Vec<Series> {
    let ok: Vec<&Record> = records
        .iter()
        .filter(|r| r.phase == "profiling" && !r.failed())
        .collect();
    let mut out = Vec::new();
    for tag in [
        "time_to_first_token",
        "request_latency",
        "inter_token_latency",
        "output_token_throughput_per_user",
        "prefill_throughput_per_user",
    ] {
        let v: Vec<f64> = ok
            .iter()
            .filter_map(|r| r.metrics.get(tag).and_then(|x| x.first().copied()))
            .collect();
        if !v.is_empty() {
            out.push(Series {
                key: format!("aiperf.{tag}"),
                sample: Sample::Values(v),
            });
        }
    }
    for tag in ["request_throughput", "output_token_throughput"] {
        if let Some(x) = s.metrics.get(tag).and_then(|m| m.fields.get("avg")) {
            out.push(Series {
                key: format!("aiperf.{tag}"),
                sample: Sample::Headline(*x),
            });
        }
    }
    out
}

fn records(src: &Source) -> Result<Vec<Record>, Fatal> {
    let out = super::json_lines(src, record)?;
    if out.is_empty() {
        return Err(fatal(format!(
            "{}: no request record in it (expected one JSON object per line)",
            src.shown
        )));
    }
    Ok(out)
}

fn record(v: &Value, line: usize) -> Result<Record, String> {
    let meta = v["metadata"]
        .as_object()
        .ok_or("expected an object with 'metadata'")?;
    let metrics = v["metrics"]
        .as_object()
        .ok_or("expected an object with 'metrics'")?;
    let mut out = BTreeMap::new();
    for (k, m) in metrics {
        let val = m
            .get("value")
            .ok_or_else(|| format!("at /metrics/{}: expected a 'value'", shown(k)))?;
        let list: Vec<f64> = match val {
            Value::Array(a) => a.iter().filter_map(|x| x.as_f64()).collect(),
            x => vec![x.as_f64().ok_or_else(|| {
                format!(
                    "at /metrics/{}/value: expected a number or a list of numbers",
                    shown(k)
                )
            })?],
        };
        out.insert(k.clone(), list);
    }
    let error = super::error_of(v);
    Ok(Record {
        line,
        // `credit_phase` before 0.1.x's flat export (43b78902) renamed it.
        phase: meta
            .get("benchmark_phase")
            .or_else(|| meta.get("credit_phase"))
            .and_then(|p| p.as_str())
            .unwrap_or("profiling")
            .to_string(),
        cancelled: meta
            .get("was_cancelled")
            .and_then(|c| c.as_bool())
            .unwrap_or(false),
        error,
        // `timestamp_ns` (the request's start) before 0.1.x's flat export (43b78902).
        start_ns: meta
            .get("request_start_ns")
            .or_else(|| meta.get("timestamp_ns"))
            .and_then(|x| x.as_i64()),
        end_ns: meta.get("request_end_ns").and_then(|x| x.as_i64()),
        metrics: out,
        request_id: super::string_at(v, "/metadata/x_request_id"),
    })
}

fn is_raw(s: &Source) -> bool {
    s.name.ends_with("_raw.jsonl")
}

/// The raw records: each request's start and its chunks' times, and whether each carried text.
fn raw_records(src: &Source) -> Result<Vec<RawRecord>, Fatal> {
    super::strict_json_lines(src, raw_record)
}

fn raw_record(v: &Value, line: usize) -> Result<RawRecord, String> {
    let start_ns = v
        .get("start_perf_ns")
        .and_then(|x| x.as_i64())
        .ok_or("expected start_perf_ns, a number")?;
    let mut chunks = Vec::new();
    for r in v
        .get("responses")
        .and_then(|x| x.as_array())
        .into_iter()
        .flatten()
    {
        let Some(t) = r.get("perf_ns").and_then(|x| x.as_i64()) else {
            continue;
        };
        let packets = r
            .get("packets")
            .and_then(|x| x.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        chunks.push((t, packets.iter().any(carries_text)));
    }
    Ok(RawRecord {
        line,
        request_id: super::string_at(v, "/metadata/x_request_id"),
        start_ns,
        chunks,
    })
}

/// Whether an SSE packet's JSON carries generated text (content or reasoning).
fn carries_text(p: &Value) -> bool {
    let Some(body) = p.get("value").and_then(|x| x.as_str()) else {
        return false;
    };
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    v.get("choices")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .any(|c| {
            ["content", "reasoning_content", "reasoning"]
                .iter()
                .any(|k| {
                    c.pointer(&format!("/delta/{k}"))
                        .and_then(|x| x.as_str())
                        .is_some_and(|t| !t.is_empty())
                })
                || c.get("text")
                    .and_then(|x| x.as_str())
                    .is_some_and(|t| !t.is_empty())
        })
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::Aiperf
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        n.starts_with("profile_export")
            && [".json", ".jsonl", ".csv"].iter().any(|e| n.ends_with(e))
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
}
