//! lm-evaluation-harness's `results_<date>.json` and `samples_<task>_<date>.jsonl`, read into
//! `rigaudit_audit::imported::lm_eval`'s records.
//!
//! Definitions (lm-eval 0.4; in full in `audit/src/imported/lm_eval.rs`):
//! - units: fractions (0-1), stderr alike;
//! - no TTFT and no token counts are recorded (nor any `finish_reason`);
//! - aggregates: over every document, empty and unextractable replies scored 0.

use super::{Imported, Source};
use crate::fatal::Fatal;
use rigaudit_audit::imported::compare::{Sample as Drawn, Series};
use rigaudit_audit::imported::lm_eval::{Metric, Printed, Results, Sample, Task, CHECKS};
use serde_json::Value;

/// Whether a source is an lm-eval results file (by content): `lm_eval_version` (0.4.9 on), or,
/// as every 0.4 file writes them, `results` beside `versions` and `n-shot` or `configs`.
pub fn looks_like(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    s.name.ends_with(".json")
        && (has("\"lm_eval_version\"")
            || (has("\"results\"")
                && has("\"versions\"")
                && (has("\"n-shot\"") || has("\"configs\""))))
}

/// Reads the results and the samples of each task, and runs the checks.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let ri = super::take(sources, looks_like, "results", "no lm-eval results among them (expected results_<date>.json, a JSON object with results, versions and configs or n-shot)")?;
    let src = sources[ri].clone();
    let v: Value = super::json_of_python(&src)?;
    let results = super::required_at(&src, &v, "/results", Value::as_object, "an object of tasks")?;
    let mut tasks = Vec::new();
    let mut imp = Imported {
        tool_version: super::string_at(&v, "/lm_eval_version"),
        model: super::string_at(&v, "/model_name"),
        ..Default::default()
    };
    let mut printed = Vec::new();
    for (name, r) in results {
        let metrics = metrics(&v, name, r);
        let n = |k: &str| {
            v.pointer(&format!("/n-samples/{}/{k}", pointer_escape(name)))
                .and_then(|x| x.as_f64())
        };
        printed.push(Printed {
            name: name.clone(),
            metrics: metrics.clone(),
            original: n("original"),
            effective: n("effective"),
            declared: declared(&v, name),
            cut_in_code: cut_in_code(&v, name),
        });
        let si = sources.iter().position(|s| is_samples_of(&s.name, name));
        let Some(si) = si else {
            imp.not_taken.push(format!("{name}: no samples file (samples_{name}_<date>.jsonl, written with --log_samples): its figures are not re-scored"));
            continue;
        };
        sources[si].role = format!("samples of {name}");
        let all = samples(&sources[si])?;
        tasks.extend(by_filter(
            &v,
            name,
            &src.name,
            &sources[si].name,
            &metrics,
            &all,
        ));
        imp.taken.push(format!(
            "{name}: {} metrics of {} and the {} document records of {}",
            metrics.len(),
            src.name,
            all.len(),
            sources[si].name
        ));
    }
    not_taken(sources, &mut imp);
    let results = Results {
        file: src.name.clone(),
        tasks,
        printed,
        limit: v.pointer("/config/limit").and_then(|x| x.as_f64()),
        use_cache: super::string_at(&v, "/config/use_cache"),
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &results);
    imp.found.incomplete = no_task(&results);
    settings(&v, &src.name, &mut imp);
    imp.series = series(&results.tasks);
    Ok(imp)
}

/// Why results that list no task are incomplete (nothing was scored or checked), and what to give.
fn no_task(results: &Results) -> Option<String> {
    results.printed.is_empty().then(|| {
        format!(
            "{}: its results list no task, so nothing was scored or checked: give the results file of a run that evaluated tasks (lm_eval --tasks NAME --output_path DIR --log_samples)",
            results.file
        )
    })
}

/// What the import leaves out: what lm-eval does not record, and the files it does not read.
fn not_taken(sources: &[Source], imp: &mut Imported) {
    imp.not_taken.push(
        "why each reply ended (finish_reason) and its token count: lm-eval does not record them"
            .into(),
    );
    imp.not_taken.push("metrics aggregated otherwise than by the mean of per-document scores are shown, not re-scored".into());
    imp.note_unread(sources, "not an lm-eval file the importer reads");
}

/// The run's settings from its task configurations (dates, hashes and environment left out).
fn settings(v: &Value, file: &str, imp: &mut Imported) {
    let skip = [
        "dataset_kwargs",
        "model_args",
        "date",
        "time",
        "git_hash",
        "pretty_env_info",
        "task_hashes",
        "sha",
    ];
    for k in ["configs", "config"] {
        if let Some(c) = v.get(k) {
            super::flatten(c, &format!("/{k}"), file, &skip, &mut imp.settings);
        }
    }
}

/// One task record per filter its metrics use, each with that filter's samples.
fn by_filter(
    v: &Value,
    name: &str,
    results_file: &str,
    samples_file: &str,
    metrics: &[Metric],
    all: &[(String, Sample)],
) -> Vec<Task> {
    let mut filters: Vec<&str> = metrics.iter().map(|m| m.filter.as_str()).collect();
    filters.sort_unstable();
    filters.dedup();
    let at = |tail: &str| {
        v.pointer(&format!("/{}", tail.replace("{}", &pointer_escape(name))))
            .and_then(|x| x.as_f64())
    };
    filters
        .into_iter()
        .map(|f| Task {
            name: name.to_string(),
            file: results_file.to_string(),
            samples_file: Some(samples_file.to_string()),
            metrics: metrics.iter().filter(|m| m.filter == f).cloned().collect(),
            effective: at("n-samples/{}/effective"),
            max_gen_toks: at("configs/{}/generation_kwargs/max_gen_toks"),
            own_scoring: own_scoring(v, name, metrics),
            samples: all
                .iter()
                .filter(|(filter, _)| filter == f)
                .map(|(_, s)| s.clone())
                .collect(),
        })
        .collect()
}

/// The metric names a task's config declares (`metric_list[].metric`, names only: a metric
/// given as code is left out).
fn declared(v: &Value, name: &str) -> Vec<String> {
    v.pointer(&format!("/configs/{}/metric_list", pointer_escape(name)))
        .and_then(|l| l.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("metric").and_then(|x| x.as_str()))
        .filter(|m| m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(String::from)
        .collect()
}

/// The line of the task's own code (its config's `process_docs` or `custom_dataset`, which
/// lm-eval saves as source text) that keeps part of the dataset with `.select(...)`, and the key
/// that holds it.
fn cut_in_code(v: &Value, name: &str) -> Option<(String, String)> {
    let conf = v.pointer(&format!("/configs/{}", pointer_escape(name)))?;
    ["process_docs", "custom_dataset"].iter().find_map(|key| {
        let code = conf.get(*key)?.as_str()?;
        let line = code.lines().find(|l| {
            let code_part = l.split('#').next().unwrap_or_default();
            code_part.contains(".select(")
        })?;
        Some((key.to_string(), line.trim().chars().take(160).collect()))
    })
}

/// Why a task's scores cannot be re-scored here: its config's own `process_results`, or a
/// `regexes_to_ignore` this reader cannot apply.
fn own_scoring(v: &Value, name: &str, metrics: &[Metric]) -> Option<String> {
    let conf = v.pointer(&format!("/configs/{}", pointer_escape(name)))?;
    if conf.get("process_results").is_some_and(|p| !p.is_null()) {
        return Some("the task scores by its own process_results".into());
    }
    metrics
        .iter()
        .find(|m| !rigaudit_audit::imported::lm_eval::regexes_apply(m))
        .map(|m| format!("{}'s regexes_to_ignore are not read here", m.name))
}

/// Whether a file name is `samples_<task>_<date>.jsonl` for this task (the date starts with a
/// digit, so `samples_a_b_<date>` is not taken for task `a`).
fn is_samples_of(file: &str, task: &str) -> bool {
    file.strip_prefix("samples_")
        .and_then(|r| r.strip_prefix(task))
        .and_then(|r| r.strip_prefix('_'))
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.ends_with(".jsonl"))
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The metrics of one task: every `METRIC,FILTER` number, its stderr and its config.
fn metrics(v: &Value, task: &str, r: &Value) -> Vec<Metric> {
    let mut out = Vec::new();
    let configs = v
        .pointer(&format!("/configs/{}/metric_list", pointer_escape(task)))
        .and_then(|x| x.as_array());
    for (k, x) in r.as_object().into_iter().flatten() {
        let (Some((name, filter)), Some(value)) = (k.split_once(','), super::non_finite(x)) else {
            continue;
        };
        if name.ends_with("_stderr") {
            continue;
        }
        let stderr = r
            .get(format!("{name}_stderr,{filter}"))
            .and_then(super::non_finite);
        let conf = configs.and_then(|c| {
            c.iter()
                .find(|m| m.get("metric").and_then(|n| n.as_str()) == Some(name))
        });
        let flag = |f: &str| {
            conf.and_then(|c| c.get(f))
                .and_then(|b| b.as_bool())
                .unwrap_or(false)
        };
        out.push(Metric {
            name: name.to_string(),
            filter: filter.to_string(),
            value,
            stderr,
            aggregation: conf
                .and_then(|c| c.get("aggregation"))
                .and_then(|a| a.as_str())
                .map(String::from),
            ignore_case: flag("ignore_case"),
            ignore_punctuation: flag("ignore_punctuation"),
            regexes_to_ignore: conf
                .and_then(|c| c.get("regexes_to_ignore"))
                .and_then(|r| r.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    out
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The document records of a samples file, each with its filter.
fn samples(src: &Source) -> Result<Vec<(String, Sample)>, Fatal> {
    super::json_lines(src, sample)
}

fn sample(v: &Value, line: usize) -> Result<(String, Sample), String> {
    let o = v.as_object().ok_or("expected a JSON object")?;
    let resps = o
        .get("resps")
        .and_then(|r| r.as_array())
        .ok_or("at /resps: expected a list of replies")?;
    let loglikelihoods: Vec<(f64, bool)> = resps.iter().filter_map(choice).collect();
    let replies = if loglikelihoods.len() == resps.len() && !resps.is_empty() {
        Vec::new()
    } else {
        resps
            .iter()
            .map(|r| match r {
                Value::Array(a) => a.first().and_then(|x| x.as_str()).unwrap_or("").to_string(),
                Value::String(s) => s.clone(),
                _ => String::new(),
            })
            .collect()
    };
    let loglikelihoods = if replies.is_empty() {
        loglikelihoods
    } else {
        Vec::new()
    };
    let metrics: Vec<&str> = o
        .get("metrics")
        .and_then(|m| m.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    let scores = metrics
        .iter()
        .filter_map(|m| o.get(*m).and_then(score).map(|x| (m.to_string(), x)))
        .collect();
    let filtered = o
        .get("filtered_resps")
        .and_then(|f| f.as_array())
        .and_then(|a| a.first())
        .map(|x| match x {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    let target = o.get("target").map(text);
    let doc_id = o
        .get("doc_id")
        .filter(|d| d.is_string() || d.is_number())
        .map(text);
    let filter = o
        .get("filter")
        .and_then(|f| f.as_str())
        .unwrap_or("none")
        .to_string();
    Ok((
        filter,
        Sample {
            line,
            replies,
            loglikelihoods,
            filtered,
            target,
            scores,
            doc_id,
        },
    ))
}

/// One response of a loglikelihood request: `[[loglikelihood, is_greedy]]` (or the pair itself),
/// the numbers as numbers or as the strings lm-eval's logger writes for them.
fn choice(r: &Value) -> Option<(f64, bool)> {
    let pair = match r.as_array()?.first()? {
        Value::Array(inner) => inner.as_slice(),
        _ => r.as_array()?.as_slice(),
    };
    let [ll, greedy] = pair else { return None };
    let ll = ll.as_f64().or_else(|| ll.as_str()?.parse().ok())?;
    let greedy = greedy.as_bool().or_else(|| match greedy.as_str()? {
        "True" | "true" => Some(true),
        "False" | "false" => Some(false),
        _ => None,
    })?;
    Some((ll, greedy))
}

/// A per-document score: a number or a boolean.
fn score(v: &Value) -> Option<f64> {
    v.as_f64()
        .or_else(|| v.as_bool().map(|b| if b { 1.0 } else { 0.0 }))
}

/// The figures `diff` compares: each metric as right or wrong per document id when its scores
/// are 0 or 1 and every scored record names its document (compared paired), as right of n when
/// not every one does, else its per-document scores.
fn series(tasks: &[Task]) -> Vec<Series> {
    let mut out = Vec::new();
    for t in tasks {
        for m in &t.metrics {
            let scored: Vec<(Option<&String>, f64)> = t
                .samples
                .iter()
                .filter_map(|s| Some((s.doc_id.as_ref(), *s.scores.get(&m.name)?)))
                .collect();
            let scores: Vec<f64> = scored.iter().map(|(_, x)| *x).collect();
            let binary = scores.iter().all(|x| *x == 0.0 || *x == 1.0);
            let ids: Option<Vec<(String, bool)>> = scored
                .iter()
                .map(|(id, x)| Some(((*id)?.clone(), *x == 1.0)))
                .collect();
            let sample = if scores.is_empty() {
                Drawn::Headline(m.value)
            } else if let (true, Some(ids)) = (binary, ids) {
                Drawn::Answers(ids)
            } else if binary {
                let right = scores.iter().filter(|x| **x == 1.0).count() as u64;
                Drawn::Proportion {
                    right,
                    n: scores.len() as u64,
                }
            } else {
                Drawn::Values(scores)
            };
            out.push(Series {
                key: format!("lm-eval.{}.{},{}", t.name, m.name, m.filter),
                sample,
            });
        }
    }
    out
}
