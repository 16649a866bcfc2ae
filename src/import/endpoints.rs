//! MLPerf Endpoints results (`mlcommons/endpoints`): `performance/result_summary.json`, with the
//! run's `events.jsonl` and `config.yaml` when given, read into
//! `rigaudit_audit::imported::endpoints`'s record.
//!
//! Definitions: the writer's own code, tabled in `docs/formats/mlperf-endpoints.md`; the checks in
//! `audit/src/imported/endpoints/` cite its rows. The events log is read one line at a time into
//! each sample's timestamps (its prompts and outputs skipped unparsed into values).

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample as CompareSample, Series as CompareSeries};
use rigaudit_audit::imported::endpoints::accuracy::{Accuracy, Entry};
use rigaudit_audit::imported::endpoints::{Events, Run, Sample, Series, Summary, CHECKS};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// Whether a source is the summary (`result_summary.json`): its sample counts and duration.
pub fn looks_like(s: &Source) -> bool {
    [
        "\"n_samples_issued\"",
        "\"n_samples_completed\"",
        "\"duration_ns\"",
    ]
    .iter()
    .all(|k| super::holds(&s.bytes, k))
}

/// Whether a file of this name, of no tool by its content, goes with an Endpoints summary of its
/// folder (a tree's grouping): the run's `config.yaml`, `events.jsonl` and, when it sits beside
/// them, `accuracy_results.json`.
pub fn companion(name: &str) -> bool {
    matches!(
        name,
        "config.yaml" | "config.yml" | "events.jsonl" | "accuracy_results.json"
    )
}

/// Whether a source is the events log: its first line an event record of the writer.
fn is_events(s: &Source) -> bool {
    let head = &s.bytes[..s.bytes.len().min(4096)];
    super::holds(head, "\"event_type\":\"") && super::holds(head, "\"timestamp_ns\":")
}

/// Whether a source is the run's accuracy file (`accuracy/accuracy_results.json`): its scores.
fn is_accuracy(s: &Source) -> bool {
    super::holds(&s.bytes, "\"accuracy_scores\"")
}

/// Whether a source is the run's `config.yaml`: the writer's settings.
fn is_config(s: &Source) -> bool {
    s.name.ends_with(".yaml") || s.name.ends_with(".yml")
}

/// Reads the summary, and the events and config when given, and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let missing = "no MLPerf Endpoints result_summary.json among them (expected the writer's performance/result_summary.json: n_samples_issued, n_samples_completed, duration_ns)";
    let i = super::take(sources, looks_like, "summary", missing)?;
    let summary = summary(&sources[i])?;
    let mut run = Run {
        summary,
        ..Default::default()
    };
    if let Some(e) = sources.iter().position(is_events) {
        sources[e].role = "events".into();
        run.events = Some(events(&sources[e])?);
    }
    if let Some(a) = sources
        .iter()
        .position(|s| s.role.is_empty() && is_accuracy(s))
    {
        sources[a].role = "accuracy".into();
        run.accuracy = Some(accuracy(&sources[a])?);
    }
    if let Some(c) = sources
        .iter()
        .position(|s| s.role.is_empty() && is_config(s))
    {
        sources[c].role = "config".into();
        config(&sources[c], &mut run)?;
    }
    let mut imp = Imported::default();
    notes(&run, &mut imp);
    imp.note_unread(sources, "one Endpoints run (result_summary.json, events.jsonl, config.yaml, accuracy_results.json) is read at a time; not read");
    imp.found.merge(rigaudit_audit::imported::run(CHECKS, &run));
    imp.series = series(&run);
    Ok(imp)
}

fn notes(r: &Run, imp: &mut Imported) {
    let s = &r.summary;
    imp.taken.push(format!(
        "the {} figures of {} ({} series)",
        s.series.len() * 8 + 8,
        s.file,
        s.series.len()
    ));
    if let Some(e) = &r.events {
        imp.taken.push(format!("the events of {} samples in {} (issue, first chunk, completion, errors; tracking blocks)", e.samples.len(), e.file));
    }
    imp.not_taken.push(
        "the writer's version: its files name the config schema's and the package's, not the build"
            .into(),
    );
}

/// The figures `diff` compares: the printed headlines.
fn series(r: &Run) -> Vec<CompareSeries> {
    let s = &r.summary;
    let mut out = Vec::new();
    for (k, v) in [("qps", s.qps), ("tps", s.tps)] {
        if let Some(v) = v {
            out.push(CompareSeries {
                key: format!("endpoints.{k}"),
                sample: CompareSample::Headline(v),
            });
        }
    }
    out
}

/// The summary, typed (row S).
fn summary(src: &Source) -> Result<Summary, Fatal> {
    let v = super::json_of_python(src)?;
    let obj = v.as_object().ok_or_else(|| {
        fatal(format!(
            "{}: expected a JSON object (an Endpoints result summary)",
            src.shown
        ))
    })?;
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    let series = obj
        .iter()
        .filter(|(_, x)| x.get("percentiles").is_some() || x.get("total").is_some())
        .map(|(k, x)| series_of(k, x))
        .collect();
    let pattern = v.pointer("/run_config/load_pattern");
    Ok(Summary {
        file: src.name.clone(),
        issued: num("n_samples_issued"),
        completed: num("n_samples_completed"),
        failed: num("n_samples_failed"),
        duration_ns: num("duration_ns"),
        state: obj.get("state").and_then(Value::as_str).map(String::from),
        complete: obj.get("complete").and_then(Value::as_bool),
        series,
        legacy_window_ns: num("legacy_loadgen_window_duration_ns"),
        qps: num("qps"),
        tps: num("tps"),
        finish_reasons: obj
            .get("finish_reason_counts")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, n)| Some((k.clone(), n.as_f64()?)))
                    .collect()
            }),
        load_pattern: pattern
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .map(String::from),
        legacy_qps: pattern
            .and_then(|p| p.get("use_legacy_loadgen_qps_metrics"))
            .and_then(Value::as_bool),
    })
}

/// One series block (row S10).
fn series_of(name: &str, x: &Value) -> Series {
    let num = |k: &str| x.get(k).and_then(Value::as_f64);
    let list = |k: &str| {
        x.get(k).and_then(Value::as_object).map(|m| {
            m.iter()
                .map(|(p, v)| (p.clone(), v.as_f64()))
                .collect::<Vec<_>>()
        })
    };
    Series {
        name: name.to_string(),
        total: num("total"),
        min: num("min"),
        max: num("max"),
        median: num("median"),
        avg: num("avg"),
        std_dev: num("std_dev"),
        percentiles: list("percentiles").unwrap_or_default(),
        early_stopping: list("early_stopping_percentiles"),
    }
}

/// The accuracy file, typed (row A).
fn accuracy(src: &Source) -> Result<Accuracy, Fatal> {
    let v = super::json_of_python(src)?;
    let expected = || {
        fatal(format!(
            "{}: expected a JSON object with an accuracy_scores list (an Endpoints accuracy_results.json)",
            src.shown
        ))
    };
    let entries = v
        .get("accuracy_scores")
        .and_then(Value::as_array)
        .ok_or_else(expected)?;
    Ok(Accuracy {
        file: src.name.clone(),
        average: v.get("average_accuracy").and_then(Value::as_f64),
        entries: entries.iter().map(accuracy_entry).collect(),
    })
}

/// One `accuracy_scores` entry (row A1).
fn accuracy_entry(e: &Value) -> Entry {
    let num = |k: &str| e.get(k).and_then(Value::as_f64);
    let counts = e.get("response_counts").and_then(|c| {
        let n = |k: &str| c.get(k).and_then(Value::as_f64);
        Some([n("issued")?, n("scored")?, n("empty")?, n("missing")?])
    });
    let osl = e.get("output_sequence_lengths").filter(|o| o.is_object());
    Entry {
        dataset_name: e
            .get("dataset_name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        performance: e.get("dataset_type").and_then(Value::as_str) == Some("performance"),
        // A number, never a bool: the writer's own test of a numeric score.
        score: e
            .get("score")
            .filter(|s| s.is_number())
            .and_then(Value::as_f64),
        unit_samples: num("unit_samples"),
        num_repeats: num("num_repeats"),
        total_samples: num("total_samples"),
        complete: e.get("complete").and_then(Value::as_bool),
        counts,
        osl: osl.map(|o| series_of("output_sequence_lengths", o)),
    }
}

/// One line of the events log: what the checks need of it.
#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(borrow)]
    event_type: Cow<'a, str>,
    timestamp_ns: i64,
    #[serde(borrow, default)]
    sample_uuid: Cow<'a, str>,
}

/// The events log, typed (row E): tracking blocks, and each sample's issue, first chunk,
/// completion and errors, with the block its issue fell in.
fn events(src: &Source) -> Result<Events, Fatal> {
    let text = src.text()?;
    let mut out = Events {
        file: src.name.clone(),
        ..Default::default()
    };
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut tracking = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: Event = serde_json::from_str(line).map_err(|err| {
            src.unreadable(
                Some(format!("line {}", n + 1)),
                format!("not an event record of the writer: {err}"),
            )
        })?;
        let uuid = e.sample_uuid.as_ref();
        match e.event_type.as_ref() {
            "session.start_performance_tracking" => {
                out.blocks.push(e.timestamp_ns);
                tracking = true;
            }
            "session.stop_performance_tracking" => tracking = false,
            "sample.issued" if !index.contains_key(uuid) => {
                index.insert(uuid.to_string(), out.samples.len());
                out.samples.push(Sample {
                    issued: e.timestamp_ns,
                    block: tracking.then(|| out.blocks.len() - 1),
                    ..Default::default()
                });
            }
            other => record(&mut out, &index, uuid, other, e.timestamp_ns),
        }
    }
    Ok(out)
}

/// A sample's later event.
fn record(out: &mut Events, index: &HashMap<String, usize>, uuid: &str, kind: &str, at: i64) {
    let Some(s) = index.get(uuid).and_then(|i| out.samples.get_mut(*i)) else {
        return;
    };
    match kind {
        "sample.recv_first" => s.first = Some(s.first.map_or(at, |f| f.min(at))),
        "sample.complete" => s.complete = Some(at),
        k if k.starts_with("error.") && s.complete.is_none() => s.errors += 1,
        _ => {}
    }
}

/// `config.yaml`: the minimum duration and whether early stopping was on.
fn config(src: &Source, run: &mut Run) -> Result<(), Fatal> {
    let v = super::yaml::parse(&src.bytes).map_err(|e| src.unreadable(None, e))?;
    run.config_given = true;
    run.min_duration_ms = v
        .pointer("/settings/runtime/min_duration_ms")
        .and_then(Value::as_f64);
    run.early_stopping_enabled = v
        .pointer("/settings/early_stopping/enabled")
        .and_then(Value::as_bool);
    Ok(())
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::MlperfEndpoints
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
