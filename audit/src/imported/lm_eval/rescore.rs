//! lm-eval's scores taken again from each sample: its own metric's scoring (the choice of highest
//! log-likelihood, a greedy match, an exact match after its filters), against the score it recorded.

use super::*;

/// `quality.pct-mismatch`: each metric whose aggregation lm-eval states or implies recomputed
/// from its per-document scores (docs/formats/lm-eval.md row L7).
pub(super) fn rescore(x: &Results, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for t in x.sampled() {
        for m in &t.metrics {
            let scores = scores(t, m);
            let Some(value) = aggregate(m, &scores).filter(|_| m.value.is_finite()) else {
                continue;
            };
            let key = format!("lm-eval.{}.{},{}", t.name, m.name, m.filter);
            let at = format!("/results/{}/{},{}", t.name, m.name, m.filter);
            compare(emit, (&t.file, &at), &key, value, m.value);
            compared = true;
        }
    }
    compared.then_some(())
}

/// The reply as `exact_match` compares it (lm-eval's `exact_match_hf_evaluate`, or the HF
/// `evaluate` metric before 0.4.3; docs/formats/lm-eval.md row L9): the regexes removed, then
/// case, punctuation and digits dropped when the config says so.
fn normal(s: &str, m: &Metric) -> String {
    let mut s = s.to_string();
    for r in &m.regexes_to_ignore {
        if let Ok(re) = regex::Regex::new(r) {
            s = re.replace_all(&s, "").into_owned();
        }
    }
    if m.ignore_case {
        s = s.to_lowercase();
    }
    if m.ignore_punctuation {
        s.retain(|c| !c.is_ascii_punctuation());
    }
    if m.ignore_numbers {
        s.retain(|c| !c.is_ascii_digit());
    }
    s
}

/// `quality.scoring-disagrees`: per-document scores re-scored as lm-eval's own code scores them
/// (docs/formats/lm-eval.md rows L9-L11): a generation's `exact_match` from its filtered reply and
/// target; a multiple-choice `acc` and `acc_norm` from the choices' log-likelihoods; a
/// loglikelihood task's `acc` from whether the target was the greedy continuation.
pub(super) fn scoring_disagrees(x: &Results, emit: &mut Emit) -> Ran {
    let mut ran = false;
    for t in x.rescorable() {
        for m in &t.metrics {
            ran |= match (t.output_type.as_deref(), m.name.as_str()) {
                (Some("generate_until"), "exact_match") => rescore_exact_match(t, m, emit),
                (Some("multiple_choice"), "acc" | "acc_norm") => rescore_choice(t, m, emit),
                (Some("loglikelihood"), "acc") => rescore_greedy(t, m, emit),
                _ => false,
            };
        }
    }
    ran.then_some(())
}

/// The index of the first largest value (numpy's `argmax`: the first of equal ones).
fn argmax(xs: impl Iterator<Item = f64>) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, x) in xs.enumerate() {
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map(|(i, _)| i)
}

/// A multiple-choice document's gold index: the target as an index, or the choice it names.
fn gold(s: &Sample, choices: &[&str]) -> Option<usize> {
    let target = s.target.as_deref()?.trim();
    target
        .parse::<usize>()
        .ok()
        .or_else(|| choices.iter().position(|c| *c == target))
}

/// A multiple-choice `acc` (argmax of the log-likelihoods) or `acc_norm` (argmax of each divided
/// by its choice's length in characters), as `ConfigurableTask.process_results` scores them.
/// Returns whether any document was re-scored.
fn rescore_choice(t: &Task, m: &Metric, emit: &mut Emit) -> bool {
    let delimiter = t.target_delimiter.as_deref().unwrap_or(" ");
    let mut ran = false;
    for s in &t.samples {
        let n = s.loglikelihoods.len();
        let choices: Vec<&str> = s
            .continuations
            .iter()
            .map(|c| c.strip_prefix(delimiter).unwrap_or(c))
            .collect();
        let (Some(&score), false, true) =
            (s.scores.get(&m.name), s.target_is_list, choices.len() == n)
        else {
            continue;
        };
        let Some(gold) = gold(s, &choices).filter(|g| *g < n) else {
            continue;
        };
        let lls = s.loglikelihoods.iter().map(|(ll, _)| *ll);
        let chosen = if m.name == "acc_norm" {
            let lens = choices.iter().map(|c| c.chars().count() as f64);
            argmax(lls.zip(lens).map(|(ll, len)| ll / len))
        } else {
            argmax(lls)
        };
        ran = true;
        let right = chosen == Some(gold);
        if right != (score >= 1.0) {
            disagree(t, s, emit, format!(
                "{}: {} picks choice {} and the target is {gold}, so it is {}, but it is scored {score}",
                t.name,
                m.name,
                chosen.map_or("none".into(), |c| c.to_string()),
                if right { "right" } else { "wrong" }
            ));
        }
    }
    ran
}

/// A loglikelihood task's `acc`: 1 when the target was the greedy continuation.
fn rescore_greedy(t: &Task, m: &Metric, emit: &mut Emit) -> bool {
    let mut ran = false;
    for s in &t.samples {
        let (Some(&score), [(_, greedy)]) = (s.scores.get(&m.name), s.loglikelihoods.as_slice())
        else {
            continue;
        };
        ran = true;
        if *greedy != (score >= 1.0) {
            disagree(
                t,
                s,
                emit,
                format!(
                    "{}: the target {} the greedy continuation, but acc is {score}",
                    t.name,
                    if *greedy { "is" } else { "is not" }
                ),
            );
        }
    }
    ran
}

fn disagree(t: &Task, s: &Sample, emit: &mut Emit, message: String) {
    emit.finding(message)
        .file(t.samples_file.as_deref().unwrap_or_default())
        .pointer(format!("line {}", s.line));
}

/// A generation's `exact_match` from its filtered reply and its target. Returns whether any
/// document was re-scored.
fn rescore_exact_match(t: &Task, m: &Metric, emit: &mut Emit) -> bool {
    let mut ran = false;
    for s in t.samples.iter().filter(|s| !s.target_is_list) {
        let (Some(f), Some(target), Some(&score)) = (&s.filtered, &s.target, s.scores.get(&m.name))
        else {
            continue;
        };
        ran = true;
        let right = normal(f, m) == normal(target, m);
        if right != (score >= 1.0) {
            disagree(
                t,
                s,
                emit,
                format!(
                    "{}: the reply '{}' against the target '{}' is {}, but it is scored {score}",
                    t.name,
                    short(f),
                    short(target),
                    if right { "right" } else { "wrong" }
                ),
            );
        }
    }
    ran
}

pub(super) fn short(s: &str) -> String {
    s.chars().take(80).collect()
}
