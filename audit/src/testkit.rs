//! Test-only: small bundles for the checks' unit tests, and one check run by its id.
//!
//! A [`Kit`] holds the JSON of a fixture's files (those a test needs, compiled in), lets a test
//! change one value at a JSON pointer, as `tests/it/common`'s `Copy::set` does on disk, and parses
//! them into a [`Bundle`] the way the CLI does (files in manifest order, answers tallied line by
//! line, every listed file seen present with the digest its manifest records). [`run_check`] looks
//! a check up by its id in whichever table holds it, so a row that moves between tables keeps its
//! tests.

use crate::bundle::{Bundle, FileFacts, Loaded, QualityTest, Seen};
use crate::records::{Answer, AnswerTally, FileEntry, FileKind, Manifest};
use crate::report::Severity::{Error, Warning};
use crate::report::{Finding, Findings, Severity};
use serde_json::Value;
use std::collections::BTreeMap;

/// Asserts a finding's message says `text` (and shows the message when it does not).
#[track_caller]
pub fn assert_says(f: &Finding, text: &str) {
    assert!(f.message.contains(text), "{text:?} not in: {}", f.message);
}

pub use crate::asserts::{assert_ends_with, assert_has, assert_starts_with};

/// The files of a fixture a kit starts from: `(path in the bundle, its text)`.
pub type Files = &'static [(&'static str, &'static str)];

macro_rules! fixture_files {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../fixtures/", $dir, "/", $path)))),*]
    };
}

/// The stock seed page (two boxes, refusals at its window): speed and three quality tests.
pub const TENSORFOLD: Files = fixture_files!("pages/tensorfold-127-stock-2x":
    "bundle.json", "card.json", "speed/speed-contract.json", "speed/speed-result.json",
    "quality/gpqa-diamond/contract.json", "quality/gpqa-diamond/summary.json",
    "quality/gpqa-diamond/answers.jsonl",
    "quality/ifeval/contract.json", "quality/ifeval/summary.json", "quality/ifeval/answers.jsonl",
    "quality/livecodebench/contract.json", "quality/livecodebench/summary.json",
    "quality/livecodebench/answers.jsonl",
);

/// The recipe seed page: speed, the memory-fit test and one quality test.
pub const MIA: Files = fixture_files!("pages/mia-recipe-1104-2x":
    "bundle.json", "card.json", "speed/speed-contract.json", "speed/speed-result.json",
    "fit/result.json",
    "quality/gpqa-diamond/contract.json", "quality/gpqa-diamond/summary.json",
    "quality/gpqa-diamond/answers.jsonl",
);

/// The bundled engine's recorded run on a 2-core CPU: speed and both quality tests.
pub const SMOLLM2: Files = fixture_files!("runs/smollm2-cpu":
    "bundle.json", "card.json", "speed/speed-contract.json", "speed/speed-result.json",
    "quality/arith/contract.json", "quality/arith/summary.json", "quality/arith/answers.jsonl",
    "quality/arith-long/contract.json", "quality/arith-long/summary.json",
    "quality/arith-long/answers.jsonl",
);

/// A fixture's files as JSON, to change and parse. JSON Lines files are arrays of their lines.
#[derive(Clone)]
pub struct Kit {
    files: BTreeMap<String, Value>,
    seen: BTreeMap<usize, Seen>,
}

impl Kit {
    /// The kit of a fixture's files.
    pub fn of(files: Files) -> Kit {
        let parse = |(path, text): &(&str, &str)| {
            let value = if path.ends_with(".jsonl") {
                let lines = text.lines().filter(|l| !l.trim().is_empty());
                Value::Array(lines.map(|l| serde_json::from_str(l).unwrap()).collect())
            } else {
                serde_json::from_str(text).unwrap()
            };
            (path.to_string(), value)
        };
        Kit {
            files: files.iter().map(parse).collect(),
            seen: BTreeMap::new(),
        }
    }

    /// A file's JSON (a JSON Lines file: the array of its lines).
    pub fn json(&mut self, file: &str) -> &mut Value {
        self.files
            .get_mut(file)
            .unwrap_or_else(|| panic!("the kit has no {file}"))
    }

    /// The kit with `edit` applied to a file's JSON.
    pub fn with(mut self, file: &str, edit: impl FnOnce(&mut Value)) -> Kit {
        edit(self.json(file));
        self
    }

    /// The kit with `edit` applied to each line of a JSON Lines file that `pick` selects.
    pub fn lines(self, file: &str, pick: fn(&Value) -> bool, edit: fn(&mut Value)) -> Kit {
        self.with(file, |v| {
            let lines = v.as_array_mut().expect("a JSON Lines file");
            lines.iter_mut().filter(|l| pick(l)).for_each(edit);
        })
    }

    /// Sets the value at a JSON pointer of a file (of a JSON Lines file: `/<line - 1>/...`).
    pub fn set(mut self, file: &str, pointer: &str, value: Value) -> Kit {
        *self
            .json(file)
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{file} has no {pointer}")) = value;
        self
    }

    /// Records what the CLI saw of the manifest's file `index` (present with its digest else).
    pub fn seen(mut self, index: usize, seen: Seen) -> Kit {
        self.seen.insert(index, seen);
        self
    }

    /// The bundle the CLI would parse from these files.
    pub fn bundle(&self) -> Bundle {
        let manifest: Manifest =
            serde_json::from_value(self.files["bundle.json"].clone()).expect("the manifest parses");
        let mut b = Bundle::new(manifest.clone());
        for (index, e) in manifest.files.iter().enumerate() {
            let seen = self.seen.get(&index).cloned().unwrap_or(Seen::Present {
                sha256: e.sha256.clone(),
                read: true,
                problems: Vec::new(),
            });
            b.files.push(FileFacts { index, seen });
            if let Some(v) = self.files.get(&e.path) {
                load(&mut b, e, v.clone());
            }
        }
        b
    }
}

/// A file's records parsed, with where they came from.
fn loaded<T: serde::de::DeserializeOwned>(e: &FileEntry, v: Value) -> Loaded<T> {
    let value =
        serde_json::from_value(v).unwrap_or_else(|err| panic!("{} does not parse: {err}", e.path));
    Loaded {
        path: e.path.clone(),
        published: e.published,
        reconstructed: e.reconstructed,
        value,
    }
}

/// Puts one file's records into the bundle, as the CLI's loader does.
fn load(b: &mut Bundle, e: &FileEntry, v: Value) {
    match e.kind {
        FileKind::Log => {}
        FileKind::Card => b.card = Some(loaded(e, v)),
        FileKind::SpeedContract => b.speed_contract = Some(loaded(e, v)),
        FileKind::SpeedResult => b.speed_result = Some(loaded(e, v)),
        FileKind::FitResult => b.fit = Some(loaded(e, v)),
        FileKind::QualityContract => test_slot(b, e).contract = Some(loaded(e, v)),
        FileKind::QualitySummary => test_slot(b, e).summary = Some(loaded(e, v)),
        FileKind::QualityAnswers => {
            let answers: Loaded<Vec<Answer>> = loaded(e, v);
            let slot = test_slot(b, e);
            slot.answers_listed = Some((e.path.clone(), e.published));
            slot.answers = Some(Loaded {
                path: answers.path,
                published: answers.published,
                reconstructed: answers.reconstructed,
                value: tally(&answers.value),
            });
        }
    }
}

fn test_slot<'a>(b: &'a mut Bundle, e: &FileEntry) -> &'a mut QualityTest {
    let test = e.test.clone().expect("a quality file names its test");
    if let Some(i) = b.quality.iter().position(|t| t.test == test) {
        return &mut b.quality[i];
    }
    b.quality.push(QualityTest {
        test,
        ..Default::default()
    });
    b.quality.last_mut().expect("just pushed")
}

/// An answers file's tally, line by line as the CLI streams it.
pub fn tally(answers: &[Answer]) -> AnswerTally {
    let mut t = AnswerTally::default();
    for (i, a) in answers.iter().enumerate() {
        t.add(a.view(), i as u64 + 1);
        t.add_reply(a.completion_tokens, a.max_tokens, a.seconds, i as u64 + 1);
    }
    t.finish();
    t
}

/// Runs the one check `id` over `b` (over each test for a quality check, over each file for a
/// schema check), found by its id in the tables; its findings.
pub fn run_check(b: &Bundle, id: &str) -> Vec<Finding> {
    let mut out = Findings::default();
    let mut found = false;
    for c in crate::table::BUNDLE.iter().flat_map(|t| t.iter()) {
        if c.id == id {
            out.check(c, |run, e| run(b, e));
            found = true;
        }
    }
    for c in crate::quality::CHECKS.iter().filter(|c| c.id == id) {
        for t in &b.quality {
            out.check(c, |run, e| run(b, t, e));
        }
        found = true;
    }
    for c in crate::schema::CHECKS.iter().filter(|c| c.id == id) {
        for f in &b.files {
            out.check(c, |run, e| run(b, f, e));
        }
        found = true;
    }
    assert!(found, "no check {id} in the tables");
    assert!(
        out.findings.iter().all(|f| f.check == id),
        "{:?}",
        out.findings
    );
    out.findings
}

/// One row's case: the check finds the problem planted in `planted` at `severity` (and the
/// message contains `says`), and says nothing at that severity or above of `clean`.
pub struct Case {
    /// The check's id.
    pub id: &'static str,
    /// A bundle it must stay quiet on.
    pub clean: Kit,
    /// The same with the problem planted.
    pub planted: Kit,
    /// The severity it reports the problem at.
    pub severity: Severity,
    /// A piece of the message that names the problem.
    pub says: &'static str,
}

/// Asserts each case: quiet on the clean bundle, the planted problem found.
pub fn assert_cases(cases: Vec<Case>) {
    for c in cases {
        let quiet = run_check(&c.clean.bundle(), c.id);
        assert!(
            quiet.iter().all(|f| f.severity < c.severity),
            "{} on the clean bundle: {quiet:?}",
            c.id
        );
        let found = run_check(&c.planted.bundle(), c.id);
        assert!(
            found
                .iter()
                .any(|f| f.severity == c.severity && f.message.contains(c.says)),
            "{} did not find the planted problem at {:?} saying '{}': {found:?}",
            c.id,
            c.severity,
            c.says
        );
    }
}

/// A [`Case`] of `planted` against `clean`.
pub fn case(id: &'static str, clean: &Kit, planted: Kit, severity: Severity) -> Case {
    Case {
        id,
        clean: clean.clone(),
        planted,
        severity,
        says: "",
    }
}

impl Case {
    /// The case, its finding's message containing `says`.
    pub fn saying(self, says: &'static str) -> Case {
        Case { says, ..self }
    }
}

/// A case that changes one value: `(check id, fixture, file, JSON pointer, the new value as
/// JSON text, the severity the check reports it at)`. The fixture as it is is the clean bundle.
pub type OneValue = (
    &'static str,
    Files,
    &'static str,
    &'static str,
    &'static str,
    Severity,
);

const R: &str = "speed/speed-result.json";
const C: &str = "speed/speed-contract.json";
const M: &str = "bundle.json";
const CARD: &str = "card.json";
const FIT: &str = "fit/result.json";
const GPQA: &str = "quality/gpqa-diamond/answers.jsonl";
const GPQA_SUMMARY: &str = "quality/gpqa-diamond/summary.json";
const IFEVAL: &str = "quality/ifeval/contract.json";
const REVISION_BY: &str = "/checkpoint/revision_file/written_by";
const TF: Files = TENSORFOLD;

/// The one-value cases of every family's rows, one table (each family's unit tests take theirs
/// by its id's prefix).
#[rustfmt::skip]
const ONE_VALUE: &[OneValue] = &[
    ("speed.cached-tokens", TF, R, "/requests/6/cached_tokens", "1024", Error),
    ("speed.token-source", TF, R, "/requests/3/completion_tokens_source", "\"chunks\"", Warning),
    ("speed.reply-not-at-limit", TF, R, "/requests/1/completion_tokens", "500", Warning),
    ("speed.failed-request", TF, R, "/requests/2/status", "500", Error),
    ("speed.level-above-slots", TF, C, "/conc/levels", "[1, 2, 4, 8, 16]", Warning),
    ("speed.step-exceeds-window", MIA, R, "/fits/0/fits", "false", Warning),
    ("speed.load-guard", TF, R, "/load_guard/steps/5/longest_run_over", "2", Error),
    ("speed.recompute-mismatch", TF, R, "/values/conc_total.8", "58.9", Error),
    ("speed.recompute-mismatch", MIA, M, "/page/speed/decode", "\"28.3\"", Error),
    ("setup.slots-mismatch", TF, C, "/server/slots", "4", Error),
    ("setup.slots-mismatch", TF, CARD, "/commands/1/argv/6", "\"4\"", Error),
    ("setup.window-mismatch", TF, C, "/server/window", "16384", Error),
    ("setup.window-mismatch", MIA, FIT, "/window", "262144", Error),
    ("setup.model-mismatch", TF, C, "/model", "\"GLM-5.3\"", Error),
    ("setup.sampling-mismatch", TF, CARD, "/sampling/defaults/top_p", "0.9", Error),
    ("setup.sampling-mismatch", TF, IFEVAL, "/sampling/top_k", "40", Error),
    ("setup.version-mismatch", TF, CARD, "/engine/version", "\"1.2.8\"", Error),
    ("setup.version-mismatch", TF, CARD, "/nccl/version", "\"2.30.8\"", Error),
    ("setup.ranks-mismatch", TF, CARD, "/ranks", "3", Error),
    ("setup.ranks-mismatch", TF, CARD, "/commands/0/argv/4", "\"GLM\"", Error),
    // The card's first command is rank 1's: it states TF_GLM_RANK=0 (two rank 0s).
    ("setup.ranks-mismatch", TF, CARD, "/commands/0/env/TF_GLM_RANK", "\"0\"", Error),
    ("setup.date-order", TF, CARD, "/engine/published", "\"2026-11-13T09:00:00Z\"", Error),
    ("setup.date-order", TF, M, "/sessions/2/started", "\"2026-11-12T01:00:00Z\"", Error),
    ("setup.revision-marker", TF, CARD, REVISION_BY, "\"hand\"", Warning),
    ("setup.citation-commit", TF, CARD, "/citations/5/commit", "\"0a1b2c3d\"", Warning),
    ("quality.limit-mismatch", MIA, GPQA, "/2/max_tokens", "48", Warning),
    ("quality.answers-summary-mismatch", TF, GPQA_SUMMARY, "/cutoffs", "3", Error),
    ("quality.pct-mismatch", TF, M, "/page/quality/1/pct", "\"45.0\"", Error),
    ("quality.margin-mismatch", TF, M, "/page/quality/1/margin", "\"1.0\"", Error),
    ("quality.count-mismatch", TF, M, "/page/quality/2/cutoffs", "7", Error),
    ("fit.step-exceeds-window", MIA, FIT, "/steps/0/prompt_tokens", "5000", Error),
    ("fit.recompute-mismatch", MIA, M, "/page/fit/memory_gib", "\"99.0\"", Error),
    ("fit.recompute-mismatch", MIA, FIT, "/steps/4/rise_gib/box-4", "101.2", Error),
    ("fit.recompute-mismatch", MIA, FIT, "/steps/5/answered", "false", Error),
    ("fit.prompt-underfills", MIA, FIT, "/steps/5/prompt_tokens", "65000", Error),
    ("claims.unpublished", TF, M, "/files/2/published", "false", Warning),
];

/// The [`Case`]s of the one-value changes to rows whose id starts with `family`.
pub fn one_value_cases(family: &str) -> Vec<Case> {
    let one = |&(id, files, file, pointer, value, severity): &OneValue| {
        let clean = Kit::of(files);
        let value: Value = serde_json::from_str(value).expect("a JSON value");
        let planted = clean.clone().set(file, pointer, value);
        case(id, &clean, planted, severity)
    };
    let cases = ONE_VALUE.iter().filter(|c| c.0.starts_with(family));
    cases.map(one).collect()
}

/// The unit tests of the pure families' rows, as text: each row's id must stand in one of them
/// or in [`ONE_VALUE`].
const ROW_TESTS: &[&str] = &[
    include_str!("speed/tests.rs"),
    include_str!("setup/tests.rs"),
    include_str!("quality/tests.rs"),
    include_str!("schema/tests.rs"),
    include_str!("fit/tests.rs"),
    include_str!("claims/tests.rs"),
];

/// The unit tests of the stage families' rows (`rehash.`, `replay.`, `diff.`, `noise.`) and of
/// `loaded.`: the `tests.rs` of the module that holds the rows.
fn stage_row_tests() -> [&'static str; 6] {
    [
        include_str!("replay/tests.rs"),
        include_str!("rehash/tests.rs"),
        include_str!("replay/failed/tests.rs"),
        include_str!("diff/tests.rs"),
        include_str!("noise/tests.rs"),
        include_str!("loaded/tests.rs"),
    ]
}

/// Rows the `replay` command itself reports (what it did, whether it could run): tested end to
/// end, in tests/it/ssh.rs and tests/it/slurm.rs.
const REPORTED_BY_THE_CLI: &[&str] = &["replay.not-run", "replay.note"];

#[test]
fn every_row_of_the_stage_families_has_a_unit_test() {
    let ids = crate::table::all().into_iter().map(|c| c.id);
    let families = ["rehash.", "replay.", "diff.", "noise.", "loaded."];
    let staged: Vec<&str> = ids
        .filter(|id| families.iter().any(|f| id.starts_with(f)))
        .filter(|id| !REPORTED_BY_THE_CLI.contains(id))
        .collect();
    let tests = stage_row_tests();
    let tested = |id: &&str| tests.iter().any(|t| t.contains(&format!("\"{id}\"")));
    let missing: Vec<&str> = staged.iter().copied().filter(|id| !tested(id)).collect();
    assert!(staged.len() >= 22, "{} rows", staged.len());
    assert!(missing.is_empty(), "rows with no unit test: {missing:?}");
}

#[test]
fn every_row_of_the_pure_families_has_a_case() {
    let ids = crate::table::all().into_iter().map(|c| c.id);
    let families = ["speed.", "setup.", "quality.", "schema.", "fit.", "claims."];
    let pure = ids.filter(|id| families.iter().any(|f| id.starts_with(f)));
    let mut missing: Vec<&str> = Vec::new();
    let mut rows = 0;
    for id in pure {
        rows += 1;
        let quoted = format!("\"{id}\"");
        let one_value = ONE_VALUE.iter().any(|c| c.0 == id);
        if !one_value && !ROW_TESTS.iter().any(|t| t.contains(&quoted)) {
            missing.push(id);
        }
    }
    assert!(rows >= 38, "{rows} rows");
    assert!(missing.is_empty(), "rows with no unit case: {missing:?}");
}
