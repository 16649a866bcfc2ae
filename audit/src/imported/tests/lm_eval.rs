//! The rows of [`crate::imported::lm_eval`].

use super::{case, check_cases, quiet, Case};
use crate::imported::lm_eval::{Metric, Printed, Results, Sample, Task, CHECKS, INVALID};
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

/// A choice among two by log-likelihood (the first the likelier), the target, scored `acc`.
fn choice(line: usize, target: &str, score: f64) -> Sample {
    Sample {
        line,
        loglikelihoods: vec![(-1.0, false), (-2.0, false)],
        target: Some(target.into()),
        scores: [("acc".to_string(), score)].into(),
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
fn task(metric_name: &str, samples: Vec<Sample>) -> Results {
    let metrics = vec![metric(metric_name, 0.5, Some(0.5))];
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
            own_scoring: None,
        }],
        printed: vec![Printed {
            name: "gsm8k".into(),
            metrics,
            original: Some(2.0),
            effective: Some(2.0),
            declared: vec![metric_name.into()],
            cut_in_code: None,
        }],
        limit: None,
        use_cache: None,
    }
}

fn clean() -> Results {
    let em = "exact_match";
    task(
        em,
        vec![reply(1, "4", "4", em, 1.0), reply(2, "5", "4", em, 0.0)],
    )
}

fn multiple_choice() -> Results {
    task("acc", vec![choice(1, "0", 1.0), choice(2, "1", 0.0)])
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
        sample(x, 1).target = Some("0".into())
    })
    .saying("highest log-likelihood"),
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
    quiet(CHECKS, &scored_zero());
}
