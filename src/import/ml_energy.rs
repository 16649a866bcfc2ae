//! The ML.ENERGY benchmark's LLM result (v3): `results.json`, and `prometheus.json` beside it,
//! read into `rigaudit_audit::imported::ml_energy`'s record.
//!
//! Definitions: the benchmark's own code, tabled in `docs/formats/ml-energy.md`; the checks in
//! `audit/src/imported/ml_energy.rs` cite its rows. `results.json`'s per-request records (one
//! object a request under `/results`) are also read as vLLM's lists, and checked by vLLM's table:
//! the benchmark's client and aggregates are vLLM's (rows R24-R31).

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::ml_energy::{Prometheus, Run, Snapshot, Steady, CHECKS};
use rigaudit_audit::imported::vllm;
use serde_json::{Map, Value};

/// Whether a source is an ML.ENERGY `results.json`: its steady-state energy figures.
pub fn looks_like(s: &Source) -> bool {
    super::holds(&s.bytes, "\"steady_state_energy_per_token\"")
        && super::holds(&s.bytes, "\"steady_state_measurement\"")
}

/// Whether a source is its `prometheus.json`: snapshots of the server's metrics and the window.
fn is_prometheus(s: &Source) -> bool {
    super::holds(&s.bytes, "\"steady_state_stats\"")
        && super::holds(&s.bytes, "\"collection_interval\"")
}

/// Reads `results.json` (and `prometheus.json` when given) and runs vLLM's table over the
/// requests and the ML.ENERGY table over the energy figures.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let missing = "no ML.ENERGY results.json among them (expected the benchmark's result: its steady_state_energy_per_token and steady_state_measurement)";
    let i = super::take(sources, looks_like, "results", missing)?;
    let prometheus = match sources.iter().position(is_prometheus) {
        Some(p) => {
            sources[p].role = "prometheus".into();
            Some(prometheus(&sources[p])?)
        }
        None => None,
    };
    let src = &sources[i];
    let obj = match super::json_of_python(src)? {
        Value::Object(o) => o,
        _ => {
            return Err(fatal(format!(
                "{}: expected a JSON object (an ML.ENERGY result)",
                src.shown
            )))
        }
    };
    let run = read_run(&obj, src, prometheus)?;
    let mut imp = Imported {
        model: obj
            .get("model_id")
            .and_then(Value::as_str)
            .map(String::from),
        ..Default::default()
    };
    notes(&run, &src.name, &mut imp);
    imp.note_unread(
        sources,
        "one ML.ENERGY run (results.json, prometheus.json) is read at a time; not read",
    );
    imp.found
        .merge(rigaudit_audit::imported::run(vllm::CHECKS, &run.requests));
    imp.found.merge(rigaudit_audit::imported::run(CHECKS, &run));
    imp.found.sort_ran();
    let setup: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| SETUP.contains(&k.as_str()))
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect();
    super::flatten(&Value::Object(setup), "", &src.name, &[], &mut imp.settings);
    imp.series = series(&run);
    Ok(imp)
}

/// The setup keys the benchmark writes first (the run's settings for `diff`; row R1-R9).
const SETUP: &[&str] = &[
    "endpoint_type",
    "model_id",
    "seed",
    "num_unique_prompts",
    "num_prompts",
    "num_request_repeats",
    "gpu_model",
    "num_gpus",
    "max_num_seqs",
    "max_num_batched_tokens",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "max_output_tokens",
];

fn notes(r: &Run, name: &str, imp: &mut Imported) {
    imp.taken.push(format!("the {} requests of {name} (TTFT, ITLs, latency, lengths, success, energy), its figures, its steady-state window (energy meter, power and temperature timelines)", r.requests.ttfts.len()));
    if let Some(p) = &r.prometheus {
        imp.taken.push(format!(
            "the {} snapshots of the server's metrics in {} (running batch, generated tokens)",
            p.snapshots.len(),
            p.file
        ));
    }
    imp.not_taken.push("the reply tokens the client counted inside the window (what the energy per token divides by): the benchmark does not write them".into());
    imp.not_taken
        .push("driver.log and server.log (the validator's crash scan)".into());
    imp.not_taken
        .push("the benchmark's version: nothing in its files names it".into());
}

/// The figures `diff` compares: vLLM's per-request series, and the energy per token.
fn series(r: &Run) -> Vec<Series> {
    let mut out = Vec::new();
    if let Some(e) = r.steady.per_token {
        out.push(Series {
            key: "ml_energy.steady_state_energy_per_token".into(),
            sample: Sample::Headline(e),
        });
    }
    out
}

/// The typed run of a result object.
fn read_run(
    obj: &Map<String, Value>,
    src: &Source,
    prometheus: Option<Prometheus>,
) -> Result<Run, Fatal> {
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    let records = obj
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            fatal(format!(
                "{}: at /results: expected a list of the requests' records",
                src.shown
            ))
        })?;
    let requests = requests(obj, records, src)?;
    let timeline = obj.get("timeline");
    Ok(Run {
        file: src.name.clone(),
        num_prompts: num("num_prompts"),
        completed: num("completed"),
        max_num_seqs: num("max_num_seqs"),
        output_throughput: num("output_throughput"),
        gpu_model: obj
            .get("gpu_model")
            .and_then(Value::as_str)
            .map(String::from),
        steady: steady(obj),
        request_energy: records
            .iter()
            .map(|r| r.get("energy").and_then(Value::as_f64))
            .collect(),
        power: timeline.map(power).unwrap_or_default(),
        temperatures: timeline.map(temperatures).unwrap_or_default(),
        prometheus,
        requests,
    })
}

/// The per-request records as vLLM's lists (an error names the record that lacks a field).
fn requests(obj: &Map<String, Value>, records: &[Value], src: &Source) -> Result<vllm::Run, Fatal> {
    let field = |i: usize, k: &str| -> Result<f64, Fatal> {
        records[i].get(k).and_then(Value::as_f64).ok_or_else(|| {
            fatal(format!(
                "{}: at /results/{i}/{k}: expected a number",
                src.shown
            ))
        })
    };
    let mut r = vllm::Run {
        file: src.name.clone(),
        detailed: true,
        duration: obj
            .get("duration")
            .and_then(Value::as_f64)
            .filter(|d| *d > 0.0),
        per_request_objects: true,
        keys: obj.keys().cloned().collect(),
        printed: obj
            .iter()
            .filter(|(k, _)| !SETUP.contains(&k.as_str()) || k.as_str() == "max_concurrency")
            .filter_map(|(k, x)| x.as_f64().map(|x| (k.clone(), x)))
            .collect(),
        ..Default::default()
    };
    let mut texts = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        r.ttfts.push(field(i, "ttft")?);
        r.latencies
            .get_or_insert_with(Vec::new)
            .push(field(i, "latency")?);
        r.input_lens.push(field(i, "input_len")?);
        r.output_lens.push(field(i, "output_len")?);
        let itl = rec.get("itl").and_then(Value::as_array).ok_or_else(|| {
            fatal(format!(
                "{}: at /results/{i}/itl: expected a list of seconds",
                src.shown
            ))
        })?;
        r.itls.push(itl.iter().filter_map(Value::as_f64).collect());
        let ok = rec.get("success").and_then(Value::as_bool).unwrap_or(false);
        let error = rec.get("error").and_then(Value::as_str).unwrap_or_default();
        r.errors.push(match (ok, error.is_empty()) {
            (true, _) => String::new(),
            (false, true) => "failed (success false, no error text)".into(),
            (false, false) => error.to_string(),
        });
        let text = |k: &str| {
            rec.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        texts.push(text("output_text") + &text("reasoning_output_text"));
    }
    r.texts = Some(texts);
    Ok(r)
}

/// The steady-state window's figures (rows R12-R14, R20, R21).
fn steady(obj: &Map<String, Value>) -> Steady {
    let num = |k: &str| obj.get(k).and_then(Value::as_f64);
    let m = obj.get("steady_state_measurement");
    let t = obj.get("timeline");
    let at = |k: &str| t.and_then(|t| t.get(k)).and_then(Value::as_f64);
    Steady {
        duration: num("steady_state_duration"),
        energy: num("steady_state_energy"),
        per_token: num("steady_state_energy_per_token"),
        measured_time: m.and_then(|m| m.get("time")).and_then(Value::as_f64),
        gpu_energy: m
            .and_then(|m| m.get("gpu_energy"))
            .and_then(Value::as_object)
            .map(|g| {
                g.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default(),
        window: at("steady_state_start_time").zip(at("steady_state_end_time")),
    }
}

/// `timeline.power`: each domain's samples by GPU (`[[time, watts], ...]`).
fn power(timeline: &Value) -> Vec<(String, String, Vec<f64>)> {
    let Some(domains) = timeline.get("power").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (domain, gpus) in domains {
        for (gpu, samples) in gpus.as_object().into_iter().flatten() {
            out.push((domain.clone(), gpu.clone(), second_of_pairs(samples)));
        }
    }
    out
}

/// `timeline.temperature`: every GPU's samples (`[[time, °C], ...]`).
fn temperatures(timeline: &Value) -> Vec<f64> {
    let gpus = timeline.get("temperature").and_then(Value::as_object);
    gpus.into_iter()
        .flatten()
        .flat_map(|(_, s)| second_of_pairs(s))
        .collect()
}

fn second_of_pairs(samples: &Value) -> Vec<f64> {
    let pairs = samples.as_array().map(Vec::as_slice).unwrap_or_default();
    pairs.iter().filter_map(|p| p.get(1)?.as_f64()).collect()
}

/// `prometheus.json`: the window, the stated batch and each snapshot reduced (rows P1-P6).
fn prometheus(src: &Source) -> Result<Prometheus, Fatal> {
    let v = super::json_of_python(src)?;
    let num = |k: &str| v.get(k).and_then(Value::as_f64);
    let timeline = v.get("timeline").and_then(Value::as_array).ok_or_else(|| {
        fatal(format!(
            "{}: at /timeline: expected the list of metric snapshots",
            src.shown
        ))
    })?;
    let snapshots = timeline
        .iter()
        .filter_map(|s| Some((s.get("timestamp")?.as_f64()?, s.get("metrics")?.as_str()?)))
        .map(|(at, text)| snapshot(at, text))
        .collect();
    Ok(Prometheus {
        file: src.name.clone(),
        window: num("steady_state_start_time").zip(num("steady_state_end_time")),
        stats_running: v
            .pointer("/steady_state_stats/vllm:num_requests_running")
            .and_then(Value::as_f64),
        snapshots,
    })
}

/// One `/metrics` text reduced: the running requests summed over label sets and their largest,
/// and the generated-token counter summed (Prometheus's text format: `name{labels} value`).
pub fn snapshot(at: f64, text: &str) -> Snapshot {
    let (mut running, mut generated): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = sample(line) else {
            continue;
        };
        match name {
            "vllm:num_requests_running" => running.push(value),
            "vllm:generation_tokens_total" => generated.push(value),
            _ => {}
        }
    }
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    Snapshot {
        at,
        running: (!running.is_empty()).then(|| {
            (
                sum(&running),
                running.iter().copied().fold(f64::MIN, f64::max),
            )
        }),
        generated: (!generated.is_empty()).then(|| sum(&generated)),
    }
}

/// A sample line's metric name and value (labels, if any, skipped; a timestamp after the value
/// ignored).
fn sample(line: &str) -> Option<(&str, f64)> {
    let name_end = line.find(['{', ' '])?;
    let rest = match line[name_end..].strip_prefix('{') {
        Some(labels) => &labels[labels.find('}')? + 1..],
        None => &line[name_end..],
    };
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some((&line[..name_end], value))
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::MlEnergy
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn goes_with(&self, n: &str) -> bool {
        n == "prometheus.json"
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

    #[test]
    fn a_snapshot_sums_its_engines_and_keeps_the_largest() {
        let text = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 30.0\nvllm:num_requests_running{engine=\"1\",model_name=\"m\"} 34.0\nvllm:generation_tokens_total{engine=\"0\"} 100\nvllm:generation_tokens_total{engine=\"1\"} 50 1763000000\nvllm:num_requests_waiting 3\n";
        let s = snapshot(5.0, text);
        assert_eq!(s.running, Some((64.0, 34.0)));
        assert_eq!(s.generated, Some(150.0));
        assert_eq!(sample("up 1"), Some(("up", 1.0)));
        assert_eq!(sample("broken{a=\"b\" 1"), None);
    }
}
