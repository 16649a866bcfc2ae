//! The accuracy scripts' output (`accuracy.txt`) and its targets (docs/formats/loadgen.md rows
//! A1-A6): what each benchmark's script prints, the scores read from it, and the MLPerf
//! submission checker's targets for the LLM benchmarks.

use super::Logs;
use crate::check::{Emit, Ran};
use serde_json::json;

/// What an MLPerf benchmark's accuracy script printed in `accuracy.txt` (rows A1-A5): the
/// scores in every form the MLPerf submission checker reads (the LLM scripts' dict after their
/// `Results` line, `{'rouge1': 44.5435, ..., 'gen_num': 24576}`, its values plain or, under numpy
/// 2, `np.float64(44.5435)`; `accuracy=76.456%`, `mAP=37.552%`, `AUC=80.31`, `{"exact_match":
/// 83.6, "f1": 90.8}`, `Accuracy: mean = 0.8617, ...`, `Word Error Rate: ..., accuracy=92.5%`),
/// and the benchmark it is of.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    /// Its file name.
    pub file: String,
    /// The line of the first score read (of the dict after `Results` when there is one), from 1.
    pub line: usize,
    /// Every score read, in order (a value Python printed as `nan` is NaN).
    pub scores: Vec<(String, f64)>,
    /// The benchmark, as the file's path names it ([`benchmark_in`]), else `None`.
    pub named: Option<String>,
    /// Why no score could be read, when none could (the file is then named in a finding, never
    /// refused: row A6).
    pub unread: Option<String>,
}

impl Accuracy {
    pub(super) fn score(&self, k: &str) -> Option<f64> {
        self.scores.iter().find(|(n, _)| n == k).map(|(_, v)| *v)
    }
}

/// One MLPerf LLM benchmark's accuracy rule: each score's reference, the fraction of it a
/// result must reach, upper limits, and the dataset's sample count.
pub struct Target {
    /// The benchmark's name without its accuracy class (`llama2-70b`).
    pub base: &'static str,
    /// The accuracy classes it has: fractions of the reference (`99` = 0.99).
    pub classes: &'static [(&'static str, f64)],
    /// `(key, reference)`, each to reach at the class's fraction.
    pub scaled: &'static [(&'static str, f64)],
    /// `(key, lower bound, upper bound)`, fixed whatever the class (`gen_len`, `tokens_per_sample`).
    pub bounds: &'static [(&'static str, f64, f64)],
    /// The dataset's sample count (the submission checker's `accuracy-sample-count`).
    pub samples: u64,
}

/// The accuracy rules of the LLM benchmarks whose `accuracy.txt` is judged, as MLPerf's
/// submission checker states them (`accuracy-target`, `accuracy-upper-limit`, the dataset sizes;
/// it reads each key with `ACC_PATTERN`, `'rouge1': x`, and asks `x >= target`):
/// - v4.1: mlcommons/inference `tools/submission/submission_checker.py` at commit
///   2ed9555be0c8beea97167bca46938d56aff19c1c (LoadGen '4.1 @ 2ed9555be0', which the v4.1 logs
///   name), lines 251-287;
/// - v5.0 on: the same file at 7bf59976b5f4eb7c5b8f30a88af832e028028446 (lines 360-465), unchanged
///   at b66003e1 (`submission_checker/constants.py`): llama2-70b and gptj as in v4.1, the
///   interactive llama2-70b as llama2-70b, llama3.1-405b added, and mixtral's references moved
///   (rouge1 45.5989, rouge2 23.3526, rougeL 30.4608, gsm8k 73.66, mbxp 60.16, tokens per sample
///   at least 90 % of 144.84).
///
/// A file does not reliably say its round (LoadGen's build label is not one), so each key is
/// held to the lower of the rounds' targets: a score below it misses the target of every round.
pub const TARGETS: &[Target] = &[
    Target {
        base: "gptj",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: &[
            ("rouge1", 42.9865),
            ("rouge2", 20.1235),
            ("rougeL", 29.9881),
        ],
        bounds: &[("gen_len", 4016878.0 * 0.9, f64::INFINITY)],
        samples: 13368,
    },
    Target {
        base: "llama2-70b",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: LLAMA2_70B_SCALED,
        bounds: LLAMA2_70B_BOUNDS,
        samples: 24576,
    },
    Target {
        base: "llama2-70b-interactive",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: LLAMA2_70B_SCALED,
        bounds: LLAMA2_70B_BOUNDS,
        samples: 24576,
    },
    Target {
        base: "mixtral-8x7b",
        classes: &[("", 0.99)],
        // v4.1's rouge1, rouge2, rougeL and mbxp; v5.0's gsm8k and tokens-per-sample floor.
        scaled: &[
            ("rouge1", 45.4911),
            ("rouge2", 23.2829),
            ("rougeL", 30.3615),
            ("gsm8k", 73.66),
            ("mbxp", 60.12),
        ],
        bounds: &[("tokens_per_sample", 144.84 * 0.9, 145.9 * 1.1)],
        samples: 15000,
    },
    // v5.1 on (the checker at 47b91b97, unchanged in the package at b66003e1): the edge variant
    // first, so that a path naming it is not read as llama3.1-8b.
    Target {
        base: "llama3.1-8b-edge",
        classes: &[("", 0.99)],
        scaled: &[
            ("rouge1", 39.06),
            ("rouge2", 16.1147),
            ("rougeL", 24.6375),
            ("rougeLsum", 36.124),
        ],
        bounds: &[("gen_len", 3051113.0 * 0.9, 3051113.0 * 1.1)],
        samples: 5000,
    },
    Target {
        base: "llama3.1-8b",
        classes: &[("", 0.99)],
        scaled: &[
            ("rouge1", 38.7792),
            ("rouge2", 15.9075),
            ("rougeL", 24.4957),
            ("rougeLsum", 35.793),
        ],
        bounds: &[("gen_len", 8167644.0 * 0.9, 8167644.0 * 1.1)],
        samples: 13368,
    },
    // v5.1's tag (75f297d4) had 81.9132 and 3949.648; the round's checker (47b91b97) 81.3582 and
    // 3886.2274: the lower target and the wider bounds of the two.
    Target {
        base: "deepseek-r1",
        classes: &[("", 0.99)],
        scaled: &[("exact_match", 81.3582)],
        bounds: &[("tokens_per_sample", 3886.2274 * 0.9, 3949.648 * 1.1)],
        samples: 4388,
    },
    // v6.0 (the package at 6d0cf9dc, constants.py l. 185, 215, 247).
    Target {
        base: "gpt-oss-120b",
        classes: &[("", 0.99)],
        scaled: &[("exact_match", 83.13)],
        bounds: &[("tokens_per_sample", 0.0, 9999.0 * 1.1)],
        samples: 4395,
    },
    Target {
        base: "llama3.1-405b",
        classes: &[("", 0.99)],
        scaled: &[("rougeL", 21.6666), ("exact_match", 90.1335)],
        bounds: &[("tokens_per_sample", 684.68 * 0.9, 684.68 * 1.1)],
        samples: 8313,
    },
];

const LLAMA2_70B_SCALED: &[(&str, f64)] = &[
    ("rouge1", 44.4312),
    ("rouge2", 22.0352),
    ("rougeL", 28.6162),
];
const LLAMA2_70B_BOUNDS: &[(&str, f64, f64)] = &[("tokens_per_sample", 294.45 * 0.9, 294.45 * 1.1)];

/// The MLPerf inference benchmarks (v4.0-v6.0) whose accuracy.txt is read but not judged here:
/// a path that names one is of that benchmark, never guessed from its keys (llama3.1-8b prints
/// gptj's keys: rouge1, gen_len, gen_num).
pub const OTHER_BENCHMARKS: &[&str] = &[
    "qwen3-vl-235b-a22b",
    "wan-2.2-t2v-a14b",
    "stable-diffusion-xl",
    "resnet50",
    "retinanet",
    "bert-99.9",
    "bert-99",
    "dlrm-v2-99.9",
    "dlrm-v2-99",
    "dlrm-v3",
    "3d-unet-99.9",
    "3d-unet-99",
    "rgat",
    "whisper",
    "pointpainting",
    "yolo-95",
    "yolo-99",
];

/// The MLPerf benchmark a path names, nearest folder first: a folder named as one
/// (`llama2-70b-99.9`, as MLPerf's results tree lays runs out) or holding the name between dashes
/// (`v4.1-nvidia-h100x8-llama2-70b-99.9-server`). The judged benchmarks are asked first, so a
/// class suffix is kept (`llama2-70b-99.9`, not a shorter name).
pub fn benchmark_in(path: &str) -> Option<String> {
    let names = || {
        let judged = TARGETS.iter().flat_map(|t| {
            t.classes.iter().map(|(class, _)| match *class {
                "" => t.base.to_string(),
                c => format!("{}-{c}", t.base),
            })
        });
        judged.chain(OTHER_BENCHMARKS.iter().map(|n| n.to_string()))
    };
    path.rsplit(['/', '\\']).find_map(|part| {
        let dashed = format!("-{part}-");
        names().find(|n| dashed.contains(&format!("-{n}-")))
    })
}

/// The benchmark of an accuracy.txt and its class's fraction (rows A1, A5): by the folder its
/// path names (none when that benchmark has no target here); else, no benchmark named, by its
/// keys where they are of one benchmark alone (gsm8k and mbxp: mixtral; exact_match and rougeL
/// without rouge1: llama3.1-405b; rouge1 with tokens_per_sample: llama2-70b; gptj's keys are also
/// llama3.1-8b's, so they tell nothing) at the benchmark's lowest class (99 %: a 99.9 % run is
/// then held to the 99 % target only).
pub fn target_of(a: &Accuracy) -> Option<(&'static Target, String, f64)> {
    if let Some(named) = &a.named {
        for t in TARGETS {
            for (class, f) in t.classes {
                let name = match *class {
                    "" => t.base.to_string(),
                    c => format!("{}-{c}", t.base),
                };
                if *named == name {
                    return Some((t, name, *f));
                }
            }
        }
        return None;
    }
    let has = |k: &str| a.score(k).is_some();
    let base = if has("gsm8k") && has("mbxp") {
        "mixtral-8x7b"
    } else if has("exact_match") && has("rougeL") && !has("rouge1") {
        "llama3.1-405b"
    } else if has("rouge1") && has("tokens_per_sample") {
        "llama2-70b"
    } else {
        return None;
    };
    let t = TARGETS.iter().find(|t| t.base == base)?;
    let (class, f) = t.classes.first()?;
    let name = match *class {
        "" => t.base.to_string(),
        c => format!("{}-{c}", t.base),
    };
    Some((t, format!("{name} (told by its keys)"), *f))
}

/// `import.accuracy-below-target` (row A5): each score of accuracy.txt against its benchmark's target
/// and upper limit. Ran when the benchmark is known.
pub(super) fn accuracy_targets(x: &Logs, emit: &mut Emit) -> Ran {
    let a = x.accuracy.as_ref().filter(|a| a.unread.is_none())?;
    let (t, name, fraction) = target_of(a)?;
    let wanted = t
        .scaled
        .iter()
        .map(|(k, r)| (*k, r * fraction, f64::INFINITY))
        .chain(t.bounds.iter().copied());
    for (k, low, high) in wanted {
        let Some(v) = a.score(k) else {
            // An upper limit alone (gpt-oss-120b's tokens per sample): the checker only refuses
            // a value above it, and a file without the key passes it.
            if low <= 0.0 && high.is_finite() {
                continue;
            }
            emit.finding(format!(
                "accuracy.txt has no '{k}', which {name} is judged on"
            ))
            .file(&a.file)
            .pointer(format!("line {}", a.line));
            continue;
        };
        if v >= low && v <= high {
            continue;
        }
        let (bound, what) = if v > high {
            (high, "above the upper limit")
        } else {
            (low, "below the target")
        };
        emit.finding(format!(
            "'{k}' {v} is {what} {bound:.4} of {name}: the MLPerf submission checker refuses it in the closed division (the open division takes it as is: not comparable with closed results)"
        ))
        .file(&a.file)
        .pointer(format!("line {}", a.line))
        .data(json!({"key": k, "value": v, "bound": bound, "benchmark": name}));
    }
    Some(())
}

/// `import.accuracy-count-mismatch` (row A5): accuracy.txt's `gen_num` against the run's sample count
/// (the detail log's `qsl_reported_total_count`, every sample of which an accuracy run issues;
/// else the benchmark's dataset size). Ran when both are known.
pub(super) fn accuracy_count(x: &Logs, emit: &mut Emit) -> Ran {
    let a = x.accuracy.as_ref().filter(|a| a.unread.is_none())?;
    let scored = a.score("gen_num")?;
    let (count, whose) = match x.detail.num("qsl_reported_total_count") {
        Some(n) => (n, format!("{}'s qsl_reported_total_count", x.detail.file)),
        None => {
            let (t, name, _) = target_of(a)?;
            (t.samples as f64, format!("the size of {name}'s dataset"))
        }
    };
    if scored != count {
        emit.finding(format!(
            "accuracy.txt scored gen_num {scored} samples, but {whose} is {count}"
        ))
        .file(&a.file)
        .pointer(format!("line {}", a.line))
        .data(json!({"gen_num": scored, "samples": count}));
    }
    Some(())
}

/// `import.accuracy-missing` (row A6): mlperf_log_accuracy.json given without accuracy.txt, or
/// an accuracy.txt in which no score can be read in any form the MLPerf submission checker reads
/// (its `ACC_PATTERN`): the run's accuracy is not stated. Ran when either is given.
pub(super) fn accuracy_missing(x: &Logs, emit: &mut Emit) -> Ran {
    if let Some(a) = &x.accuracy {
        if let Some(why) = &a.unread {
            emit.finding(format!(
                "{} holds no accuracy score in a form the MLPerf submission checker reads ({why}): the run's accuracy is not stated, and its targets are not judged",
                a.file
            ))
            .file(&a.file)
            .pointer(format!("line {}", a.line.max(1)));
        }
        return Some(());
    }
    let log = x.accuracy_log.as_ref()?;
    // LoadGen writes the log in every mode, empty in performance mode (row A6): only an
    // accuracy run's, or a log with entries of a run whose mode is not known, wants accuracy.txt.
    let mode = x.detail.text("effective_test_mode");
    let accuracy_run = match mode {
        Some(m) => m == "AccuracyOnly",
        None => !x.accuracy_log_empty,
    };
    if !accuracy_run {
        return Some(());
    }
    emit.finding(format!(
        "{log} is given without accuracy.txt, the accuracy script's output: the run's accuracy is not stated"
    ))
    .file(log);
    Some(())
}

/// The notes of [`super::coverage`] on accuracy.txt: its scores are the script's (not
/// recomputed), and a benchmark whose targets are not known here is read, not judged.
pub(super) fn coverage(x: &Logs, emit: &mut Emit) {
    let Some(a) = x.accuracy.as_ref().filter(|a| a.unread.is_none()) else {
        return;
    };
    let keys: Vec<&str> = a.scores.iter().map(|(k, _)| k.as_str()).collect();
    let judged = match target_of(a) {
        Some((_, name, _)) => format!("judged against {name}'s targets"),
        None => format!("read ({}), not judged: {} (targets are known here for gptj, llama2-70b, mixtral-8x7b, llama3.1-405b)", keys.join(", "), match &a.named {
            Some(n) => format!("no MLPerf target for {n} is known here"),
            None => "no folder of its path names its benchmark, and its keys are not of one benchmark alone".into(),
        }),
    };
    emit.info(format!(
        "{}: the scores are the accuracy script's, not recomputed (that needs mlperf_log_accuracy.json, the dataset and the script); {judged}",
        a.file
    ))
    .file(&a.file)
    .pointer(format!("line {}", a.line));
}

/// `import.empty-scored-wrong`, at warning (row A7): the replies of an accuracy run's log that
/// are empty (`"data" : ""`: the SUT completed the sample with no output, a refused or failed
/// request), counted and named; the accuracy scripts decode and score every entry, so each is in
/// accuracy.txt's scores as a wrong answer. Ran when the log was read.
pub(super) fn empty_replies(x: &Logs, emit: &mut Emit) -> Ran {
    let (entries, empty) = x.accuracy_replies.as_ref()?;
    if empty.is_empty() {
        return Some(());
    }
    let log = x
        .accuracy_log
        .as_deref()
        .unwrap_or("mlperf_log_accuracy.json");
    let shown: Vec<String> = empty.iter().take(5).map(|i| i.to_string()).collect();
    emit.at_severity(
        crate::report::Severity::Warning,
        format!(
            "{} of the {entries} replies in {log} are empty (qsl_idx {}{}): the accuracy script scores each as a wrong answer, so the score counts them as answered wrong, not as failed requests",
            empty.len(),
            shown.join(", "),
            if empty.len() > 5 { ", ..." } else { "" }
        ),
    )
    .file(log)
    .data(json!({"empty": empty.len(), "entries": entries}));
    Some(())
}
