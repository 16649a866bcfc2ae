//! lm-evaluation-harness's results and samples, every layout a 0.4 release wrote
//! (docs/formats/lm-eval.md, rows S1-S4): `results.json` beside `<model_args>_<task>.jsonl` (a JSON
//! array, 0.4.0-0.4.2), `results_<date>.json` beside `samples_<task>_<date>.jsonl` (JSON lines,
//! 0.4.3 on; records say their `filter` and `metrics` from 0.4.7), or a script's dump of
//! `simple_evaluate`'s dict with the records under `samples`; read into
//! `rigaudit_audit::imported::lm_eval`'s records.
//!
//! Definitions (lm-eval 0.4; in full in `audit/src/imported/lm_eval.rs`):
//! - units: as the task's metric gives them (most are fractions 0-1; chrF, BLEU 0-100);
//! - no TTFT and no token counts are recorded (nor any `finish_reason`);
//! - aggregates: over every document, empty and unextractable replies scored 0.

use super::{Imported, Source};
use crate::fatal::{Fatal, Unreadable};
use rigaudit_audit::imported::compare::{Sample as Drawn, Series};
use rigaudit_audit::imported::lm_eval::{Metric, Printed, Results, Sample, Task};
use serde_json::Value;

/// Whether a source is an lm-eval file (by content): a results file, or a samples file of
/// 0.4.0-0.4.2 (a JSON array of document records).
pub fn looks_like(s: &Source) -> bool {
    is_results(s) || is_samples_array(s)
}

/// Whether a source is an lm-eval results file: `lm_eval_version` (0.4.9 on), or, as every 0.4
/// file writes them, `results` beside `versions` and `n-shot` or `configs`.
fn is_results(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    s.name.ends_with(".json")
        && first_byte(s) == Some(b'{')
        && (has("\"lm_eval_version\"")
            || (has("\"results\"")
                && has("\"versions\"")
                && (has("\"n-shot\"") || has("\"configs\""))))
}

/// Whether a source is a samples file as lm-eval 0.4.0-0.4.2 wrote it (`json.dumps(samples[task],
/// indent=2)` into `<model_args>_<task>.jsonl`: one JSON array, not JSON lines; row S1).
pub fn is_samples_array(s: &Source) -> bool {
    let has = |k: &str| super::holds(&s.bytes, k);
    (s.name.ends_with(".jsonl") || s.name.ends_with(".json"))
        && first_byte(s) == Some(b'[')
        && has("\"doc_id\"")
        && has("\"resps\"")
}

fn first_byte(s: &Source) -> Option<u8> {
    s.bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// Reads the results and the samples of each task, and runs the checks; a task whose samples file
/// is among `unread` (it could not be read whole) is said not re-scored for that reason.
pub fn import(sources: &mut [Source], unread: &[Unreadable]) -> Result<Imported, Fatal> {
    let ri = super::take(sources, is_results, "results", "no lm-eval results among them (expected results_<date>.json or results.json, a JSON object with results, versions and configs or n-shot); give the results file lm_eval wrote beside its samples, or the folder that holds both")?;
    let src = sources[ri].clone();
    let v: Value = super::json_of_python(&src)?;
    let results = super::required_at(&src, &v, "/results", Value::as_object, "an object of tasks")?;
    let mut imp = Imported {
        tool_version: super::string_at(&v, "/lm_eval_version"),
        model: super::string_at(&v, "/model_name"),
        ..Default::default()
    };
    let names: Vec<String> = results.keys().cloned().collect();
    let mut out = Results {
        file: src.name.clone(),
        limit: v.pointer("/config/limit").and_then(|x| x.as_f64()),
        use_cache: super::string_at(&v, "/config/use_cache"),
        ..Default::default()
    };
    for (name, r) in results {
        let metrics = metrics(&v, name, r);
        out.printed.push(printed(&v, name, &metrics));
        let Some(records) = records_of(sources, &v, name, &names, &src.name)? else {
            let of_task = |u: &&Unreadable| {
                is_samples_of(&u.file, name) || old_samples_task(&u.file, &names) == Some(name)
            };
            if let Some(u) = unread.iter().find(of_task) {
                imp.not_taken.push(format!("{name}: its samples file {} could not be read whole: its figures are not re-scored", u.file));
                let why = "the file could not be read whole (import.unreadable), so the task is not re-scored".to_string();
                out.unusable.push((name.clone(), u.file.clone(), why));
            } else if subtasks(&v, name).is_empty() {
                imp.not_taken.push(format!("{name}: no samples file (samples_{name}_<date>.jsonl, written with --log_samples): its figures are not re-scored"));
            }
            continue;
        };
        let cfg = Config::of(&v, name, &metrics);
        match by_filter(&cfg, records.1) {
            Ok(split) => {
                imp.taken.push(format!(
                    "{name}: {} metrics of {} and the document records of {}",
                    metrics.len(),
                    src.name,
                    records.0
                ));
                out.tasks
                    .extend(tasks(&cfg, name, (&src.name, &records.0), &metrics, split));
            }
            Err(why) => out.unusable.push((name.clone(), records.0, why)),
        }
    }
    not_taken(sources, &mut imp);
    imp.found = rigaudit_audit::imported::lm_eval::check(&out);
    settings(&v, &src.name, &mut imp);
    imp.series = series(&out.tasks);
    Ok(imp)
}

/// One task as the results print it.
fn printed(v: &Value, name: &str, metrics: &[Metric]) -> Printed {
    let n = |k: &str| {
        v.pointer(&format!("/n-samples/{}/{k}", pointer_escape(name)))
            .and_then(|x| x.as_f64())
    };
    Printed {
        name: name.to_string(),
        metrics: metrics.to_vec(),
        original: n("original"),
        effective: n("effective"),
        declared: declared(v, name),
        cut_in_code: cut_in_code(v, name),
        subtasks: subtasks(v, name),
    }
}

/// A group's tasks: `group_subtasks` (0.4.2 on), or, in a file without it, none.
fn subtasks(v: &Value, name: &str) -> Vec<String> {
    v.pointer(&format!("/group_subtasks/{}", pointer_escape(name)))
        .and_then(|x| x.as_array())
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(String::from))
        .collect()
}

/// A samples file's name and its records, each with its line.
type Records = (String, Vec<(Value, usize)>);

/// A task's samples: the file that holds them (its role set) or the results' own `samples`, named,
/// with each record and its line; `None` when none was given.
fn records_of(
    sources: &mut [Source],
    v: &Value,
    task: &str,
    tasks: &[String],
    results_file: &str,
) -> Result<Option<Records>, Fatal> {
    if let Some(list) = v.pointer(&format!("/samples/{}", pointer_escape(task))) {
        let list = list.as_array().cloned().unwrap_or_default();
        let numbered = list.into_iter().zip(1..).collect();
        return Ok(Some((results_file.to_string(), numbered)));
    }
    let at = sources
        .iter()
        .position(|s| is_samples_of(&s.name, task))
        .or_else(|| {
            sources.iter().position(|s| {
                s.role.is_empty()
                    && is_samples_array(s)
                    && old_samples_task(&s.name, tasks) == Some(task)
            })
        });
    let Some(si) = at else { return Ok(None) };
    sources[si].role = format!("samples of {task}");
    let s = &sources[si];
    let records = if first_byte(s) == Some(b'[') {
        array_records(s)?
    } else {
        super::json_lines(s, |v, line| Ok::<_, String>((v.clone(), line)))?
    };
    Ok(Some((s.name.clone(), records)))
}

/// The records of a samples file that is one JSON array, each with the line it starts on.
fn array_records(s: &Source) -> Result<Vec<(Value, usize)>, Fatal> {
    let v = super::json_of_python(s)?;
    let list = v.as_array().cloned().unwrap_or_default();
    let lines = record_lines(&s.bytes);
    Ok(list
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, lines.get(i).copied().unwrap_or(i + 1)))
        .collect())
}

/// The line on which each element of a top-level JSON array starts (an object at depth 1).
fn record_lines(bytes: &[u8]) -> Vec<usize> {
    let (mut line, mut depth, mut in_string, mut escaped) = (1, 0i32, false, false);
    let mut out = Vec::new();
    for &b in bytes {
        if b == b'\n' {
            line += 1;
        }
        if in_string {
            (escaped, in_string) = (!escaped && b == b'\\', escaped || b != b'"');
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                if depth == 1 {
                    out.push(line);
                }
                depth += 1;
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
    }
    out
}

/// The task whose 0.4.0-0.4.2 samples file this is: `<model_args>_<task>.jsonl` (or `.json`),
/// the longest task name it ends with (`x_b_a.jsonl` is task `b_a`'s when both `a` and `b_a` ran).
fn old_samples_task<'t>(file: &str, tasks: &'t [String]) -> Option<&'t str> {
    let stem = file
        .strip_suffix(".jsonl")
        .or_else(|| file.strip_suffix(".json"))?;
    tasks
        .iter()
        .filter(|t| {
            stem.strip_suffix(t.as_str())
                .is_some_and(|p| p.ends_with('_') && p.len() > 1)
        })
        .max_by_key(|t| t.len())
        .map(String::as_str)
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

/// What a task's config and results say that reading and re-scoring its records need.
struct Config {
    /// The filters in the order lm-eval applies them (`filter_list`, else `none`): before 0.4.7
    /// the records of each come in this order, one block per filter (row S3).
    filters: Vec<String>,
    output_type: Option<String>,
    target_delimiter: Option<String>,
    max_gen_toks: Option<f64>,
    effective: Option<f64>,
    own_scoring: Option<String>,
    /// The metric names the results print for the task (a record's scores before 0.4.7, which
    /// has no `metrics` list; row S2).
    names: Vec<String>,
}

impl Config {
    fn of(v: &Value, name: &str, metrics: &[Metric]) -> Config {
        let conf = v.pointer(&format!("/configs/{}", pointer_escape(name)));
        let get = |k: &str| conf.and_then(|c| c.get(k));
        let mut filters: Vec<String> = get("filter_list")
            .and_then(|l| l.as_array())
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("name").and_then(|n| n.as_str()).map(String::from))
            .collect();
        if filters.is_empty() {
            filters.push("none".into());
        }
        let mut names: Vec<String> = metrics.iter().map(|m| m.name.clone()).collect();
        names.sort_unstable();
        names.dedup();
        let at = |tail: &str| {
            v.pointer(&format!("/{}", tail.replace("{}", &pointer_escape(name))))
                .and_then(|x| x.as_f64())
        };
        Config {
            filters,
            output_type: get("output_type")
                .and_then(|x| x.as_str())
                .map(String::from),
            target_delimiter: get("target_delimiter")
                .and_then(|x| x.as_str())
                .map(String::from),
            // HF models take max_new_tokens for it too (huggingface.py's _model_generate).
            max_gen_toks: at("configs/{}/generation_kwargs/max_gen_toks")
                .or_else(|| at("configs/{}/generation_kwargs/max_new_tokens")),
            effective: at("n-samples/{}/effective"),
            own_scoring: own_scoring(v, name, metrics),
            names,
        }
    }
}

/// The records parsed and split by the filter each belongs to: by its `filter` (0.4.7 on), else
/// by position (one block per filter, in `filter_list` order, each block the same documents);
/// an error says why they cannot be told apart.
fn by_filter(
    cfg: &Config,
    records: Vec<(Value, usize)>,
) -> Result<Vec<(String, Vec<Sample>)>, String> {
    let parsed: Vec<(Option<String>, Sample)> = records
        .iter()
        .map(|(r, line)| sample(r, *line, &cfg.names).map_err(|e| format!("line {line}: {e}")))
        .collect::<Result<_, _>>()?;
    let said = parsed.iter().filter(|(f, _)| f.is_some()).count();
    let mut out: Vec<(String, Vec<Sample>)> = Vec::new();
    if said == parsed.len() {
        for (f, s) in parsed {
            let f = f.unwrap_or_default();
            match out.iter_mut().find(|(g, _)| *g == f) {
                Some((_, list)) => list.push(s),
                None => out.push((f, vec![s])),
            }
        }
        return Ok(out);
    }
    if said > 0 {
        return Err("some records name their filter and others do not".into());
    }
    let n = parsed.len() / cfg.filters.len();
    if n * cfg.filters.len() != parsed.len() {
        return Err(format!("its {} records, which do not name their filter, are not one block per filter of the task's {} ({})", parsed.len(), cfg.filters.len(), cfg.filters.join(", ")));
    }
    let samples: Vec<Sample> = parsed.into_iter().map(|(_, s)| s).collect();
    let blocks: Vec<&[Sample]> = samples.chunks(n.max(1)).collect();
    let ids = |b: &[Sample]| b.iter().map(|s| s.doc_id.clone()).collect::<Vec<_>>();
    if blocks.iter().any(|b| ids(b) != ids(blocks[0])) {
        return Err(format!("its records, which do not name their filter, are not one block of the same documents per filter ({})", cfg.filters.join(", ")));
    }
    Ok(cfg
        .filters
        .iter()
        .zip(blocks)
        .map(|(f, b)| (f.clone(), b.to_vec()))
        .collect())
}

/// One task record per filter its metrics use, each with that filter's samples.
fn tasks(
    cfg: &Config,
    name: &str,
    files: (&str, &str),
    metrics: &[Metric],
    split: Vec<(String, Vec<Sample>)>,
) -> Vec<Task> {
    let mut filters: Vec<&str> = metrics.iter().map(|m| m.filter.as_str()).collect();
    filters.sort_unstable();
    filters.dedup();
    filters
        .into_iter()
        .map(|f| Task {
            name: name.to_string(),
            file: files.0.to_string(),
            samples_file: Some(files.1.to_string()),
            metrics: metrics.iter().filter(|m| m.filter == f).cloned().collect(),
            effective: cfg.effective,
            max_gen_toks: cfg.max_gen_toks,
            own_scoring: cfg.own_scoring.clone(),
            output_type: cfg.output_type.clone(),
            target_delimiter: cfg.target_delimiter.clone(),
            samples: split
                .iter()
                .find(|(g, _)| g == f)
                .map(|(_, s)| s.clone())
                .unwrap_or_default(),
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
    let generates = conf.get("output_type").and_then(|o| o.as_str()) == Some("generate_until");
    if generates && conf.get("doc_to_choice").is_some_and(|c| !c.is_null()) {
        return Some(
            "its target is an index into doc_to_choice, which the samples do not hold".into(),
        );
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
            ignore_numbers: flag("ignore_numbers"),
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

/// One document record: its filter when it names it (0.4.7 on) and the sample. `names` are the
/// task's metrics as the results print them: a record's scores when it has no `metrics` list
/// (before 0.4.7, row S2).
fn sample(v: &Value, line: usize, names: &[String]) -> Result<(Option<String>, Sample), String> {
    let o = v.as_object().ok_or("expected a JSON object")?;
    let resps = o
        .get("resps")
        .and_then(|r| r.as_array())
        .ok_or("at /resps: expected a list of replies")?;
    let lls: Vec<(f64, bool)> = resps.iter().filter_map(choice).collect();
    let is_choice = lls.len() == resps.len() && !resps.is_empty();
    let replies = if is_choice {
        Vec::new()
    } else {
        resps.iter().map(first_text).collect()
    };
    let listed: Option<Vec<String>> = o.get("metrics").and_then(|m| m.as_array()).map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect()
    });
    let scores = listed
        .as_deref()
        .unwrap_or(names)
        .iter()
        .filter_map(|m| o.get(m).and_then(score).map(|x| (m.clone(), x)))
        .collect();
    // A filter chain without take_first leaves each response a list (`[["[invalid]"]]`): the
    // metric then gets that one-element list, which it scores as its element.
    let filtered = o
        .get("filtered_resps")
        .and_then(|f| f.as_array())
        .and_then(|a| a.first())
        .map(|f| match f {
            Value::Array(inner) if inner.len() == 1 && inner[0].is_string() => text(&inner[0]),
            f => text(f),
        });
    let sample = Sample {
        line,
        replies,
        loglikelihoods: if is_choice { lls } else { Vec::new() },
        filtered,
        target: o.get("target").map(text),
        target_is_list: o.get("target").is_some_and(Value::is_array),
        scores,
        doc_id: o
            .get("doc_id")
            .filter(|d| d.is_string() || d.is_number())
            .map(text),
        continuations: if is_choice {
            continuations(o.get("arguments"))
        } else {
            Vec::new()
        },
    };
    let filter = o.get("filter").and_then(|f| f.as_str()).map(String::from);
    Ok((filter, sample))
}

/// The text of one generation response (`["text"]`, or the text itself).
fn first_text(r: &Value) -> String {
    match r {
        Value::Array(a) => a.first().and_then(|x| x.as_str()).unwrap_or("").to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

/// The continuation of each request of a record's `arguments`: `[[context, continuation], ...]`
/// (0.4.0-0.4.2) or `{"gen_args_I": {"arg_0": context, "arg_1": continuation}}` (0.4.3 on), in
/// request order.
fn continuations(args: Option<&Value>) -> Vec<String> {
    match args {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(|a| a.get(1).and_then(|c| c.as_str()).map(String::from))
            .collect(),
        Some(Value::Object(map)) => {
            let mut numbered: Vec<(usize, String)> = map
                .iter()
                .filter_map(|(k, a)| {
                    let i = k.strip_prefix("gen_args_")?.parse().ok()?;
                    Some((i, a.get("arg_1")?.as_str()?.to_string()))
                })
                .collect();
            numbered.sort_unstable_by_key(|(i, _)| *i);
            numbered.into_iter().map(|(_, c)| c).collect()
        }
        _ => Vec::new(),
    }
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

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::LmEval
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        (n.starts_with("results") && n.ends_with(".json"))
            || (n.starts_with("samples_") && n.ends_with(".jsonl"))
    }

    fn import(
        &self,
        sources: &mut [Source],
        unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources, unread)
    }
}
