//! The rows of [`crate::imported::lm_eval`].

use super::{case, check_cases, quiet, Case};
use crate::imported::lm_eval::{Metric, Printed, Results, Sample, Task, CHECKS, INVALID};
use crate::imported::NOT_RECOMPUTABLE;
use crate::imported::{CACHED_RESPONSES, DECLARED_METRIC_MISSING, EMPTY_SCORED_WRONG};
use crate::imported::{FAILED_HIDDEN, NON_FINITE_SCORE, NOT_RESCORED, STDERR_MISMATCH};
use crate::imported::{SUBSET_OF_DATASET, UNSCORABLE_REPLY, ZERO_UNPARSEABLE};
use crate::quality;

/// A generated reply, its filtered answer and the target, scored under `metric`.
fn reply(line: usize, answer: &str, target: &str, metric: &str, score: f64) -> Sample {
    Sample {
        line,
        replies: vec![format!("The answer is {answer}.")],
        filtered: Some(answer.into()),
        target: Some(target.into()),
        scores: [(metric.to_string(), score)].into(),
        ..Default::default()
    }
}

/// A choice among two by log-likelihood (the first the likelier, the second the likelier per
/// character), the target, scored `acc` and `acc_norm`.
fn choice(line: usize, target: &str, acc: f64, acc_norm: f64) -> Sample {
    Sample {
        line,
        loglikelihoods: vec![(-1.0, false), (-1.5, false)],
        continuations: vec![" 4".into(), " four".into()],
        target: Some(target.into()),
        scores: [("acc".to_string(), acc), ("acc_norm".to_string(), acc_norm)].into(),
        ..Default::default()
    }
}

/// A loglikelihood task's document: its target greedy or not, scored `acc`.
fn greedy(line: usize, is_greedy: bool, acc: f64) -> Sample {
    Sample {
        line,
        loglikelihoods: vec![(-0.5, is_greedy)],
        continuations: vec![" 4".into()],
        target: Some(" 4".into()),
        scores: [("acc".to_string(), acc)].into(),
        ..Default::default()
    }
}

fn metric(name: &str, value: f64, stderr: Option<f64>) -> Metric {
    Metric {
        name: name.into(),
        filter: "none".into(),
        value,
        stderr,
        ..Default::default()
    }
}

/// One task of two documents under `metric` (one right, one wrong: 0.5, stderr 0.5), with
/// its samples, and its printed results and counts agreeing.
fn task(output_type: &str, names: &[&str], samples: Vec<Sample>) -> Results {
    let metrics: Vec<Metric> = names.iter().map(|n| metric(n, 0.5, Some(0.5))).collect();
    Results {
        file: "results.json".into(),
        tasks: vec![Task {
            name: "gsm8k".into(),
            file: "results.json".into(),
            samples_file: Some("samples_gsm8k.jsonl".into()),
            metrics: metrics.clone(),
            effective: Some(2.0),
            max_gen_toks: Some(256.0),
            samples,
            output_type: Some(output_type.into()),
            ..Default::default()
        }],
        printed: vec![Printed {
            name: "gsm8k".into(),
            metrics,
            original: Some(2.0),
            effective: Some(2.0),
            declared: names.iter().map(|n| n.to_string()).collect(),
            cut_in_code: None,
            subtasks: Vec::new(),
        }],
        ..Default::default()
    }
}

fn clean() -> Results {
    let em = "exact_match";
    task(
        "generate_until",
        &[em],
        vec![reply(1, "4", "4", em, 1.0), reply(2, "5", "4", em, 0.0)],
    )
}

/// Two documents: the first's target is the likelier choice, the second's the likelier per
/// character (acc 1, 0; acc_norm 0, 1).
fn multiple_choice() -> Results {
    let docs = vec![choice(1, "0", 1.0, 0.0), choice(2, "1", 0.0, 1.0)];
    task("multiple_choice", &["acc", "acc_norm"], docs)
}

fn loglikelihood() -> Results {
    let docs = vec![greedy(1, true, 1.0), greedy(2, false, 0.0)];
    task("loglikelihood", &["acc"], docs)
}

/// [`clean`] whose printed results are a score of 0 with half the replies parseable.
fn scored_zero() -> Results {
    let mut x = clean();
    printed(&mut x).metrics = vec![
        metric("exact_match", 0.0, None),
        metric("percent_parseable", 50.0, None),
    ];
    x
}

fn sample(x: &mut Results, i: usize) -> &mut Sample {
    &mut x.tasks[0].samples[i]
}

fn printed(x: &mut Results) -> &mut Printed {
    &mut x.printed[0]
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Results>] = &[
    // The results count more documents than the samples file holds.
    case(FAILED_HIDDEN.id, clean, |x| {
        x.tasks[0].effective = Some(3.0)
    }),
    case(quality::PCT_MISMATCH.id, clean, |x| {
        x.tasks[0].metrics[0].value = 0.6
    }),
    // A reply equal to its target, scored wrong.
    case(quality::SCORING_DISAGREES.id, clean, |x| {
        sample(x, 1).filtered = Some("4".into())
    })
    .saying("the reply '4'"),
    // The likelier choice is the target, scored wrong.
    case(quality::SCORING_DISAGREES.id, multiple_choice, |x| {
        sample(x, 1).scores.insert("acc".into(), 1.0);
    })
    .saying("acc picks choice 0 and the target is 1"),
    // Two choices equally likely per character: numpy's argmax takes the first.
    case(quality::SCORING_DISAGREES.id, multiple_choice, |x| {
        sample(x, 1).loglikelihoods = vec![(-2.0, false), (-5.0, false)];
        sample(x, 1).continuations = vec![" ab".into(), " abcde".into()];
    })
    .saying("acc_norm picks choice 0"),
    // A greedy target scored wrong.
    case(quality::SCORING_DISAGREES.id, loglikelihood, |x| {
        sample(x, 0).scores.insert("acc".into(), 0.0);
    })
    .saying("is the greedy continuation"),
    // The metric's ignore_numbers dropped: '4' and '5' differ.
    case(quality::SCORING_DISAGREES.id, clean, |x| {
        x.tasks[0].metrics[0].ignore_numbers = true;
        sample(x, 1).scores.insert("exact_match".into(), 0.0);
    })
    .saying("the reply '5' against the target '4' is right"),
    case(STDERR_MISMATCH.id, clean, |x| {
        x.tasks[0].metrics[0].stderr = Some(0.3)
    }),
    case(EMPTY_SCORED_WRONG.id, clean, |x| {
        sample(x, 1).replies = vec![" ".into()]
    }),
    case(UNSCORABLE_REPLY.id, clean, |x| {
        sample(x, 1).filtered = Some(INVALID.into())
    }),
    case(NOT_RESCORED.id, clean, |x| {
        x.tasks[0].own_scoring = Some("process_results".into())
    }),
    // An aggregation lm-eval computes by its own function (f1): named, not recomputed.
    case(NOT_RECOMPUTABLE.id, clean, |x| {
        x.tasks[0].metrics[0].aggregation = Some("f1".into())
    })
    .saying("exact_match,none (aggregation f1)"),
    // A samples file whose records cannot be used: named.
    case(NOT_RECOMPUTABLE.id, clean, |x| {
        x.unusable = vec![("gsm8k".into(), "s.jsonl".into(), "no filter".into())]
    })
    .saying("cannot be used: no filter"),
    // Fewer effective than original documents; a --limit where the file gives no counts;
    // the task's own process_docs selecting rows.
    case(SUBSET_OF_DATASET.id, clean, |x| {
        printed(x).effective = Some(1.0)
    })
    .saying("gsm8k 1 of 2"),
    case(SUBSET_OF_DATASET.id, clean, |x| {
        x.limit = Some(1.0);
        printed(x).original = None;
    })
    .saying("--limit 1"),
    case(SUBSET_OF_DATASET.id, clean, |x| {
        let code = "dataset.select(range(100))";
        printed(x).cut_in_code = Some(("process_docs".into(), code.into()));
    })
    .saying("own process_docs"),
    // A printed 0 where no reply could be parsed (the clean twin: half were).
    case(ZERO_UNPARSEABLE.id, scored_zero, |x| {
        printed(x).metrics[1].value = 0.0
    }),
    case(NON_FINITE_SCORE.id, clean, |x| {
        printed(x).metrics[0].value = f64::NAN
    }),
    case(CACHED_RESPONSES.id, clean, |x| {
        x.use_cache = Some("lm_cache/run".into())
    }),
    case(DECLARED_METRIC_MISSING.id, clean, |x| {
        printed(x).declared.push("f1".into())
    }),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_results_raise_nothing() {
    quiet(CHECKS, &clean());
    quiet(CHECKS, &multiple_choice());
    quiet(CHECKS, &loglikelihood());
    quiet(CHECKS, &scored_zero());
}
