//! The table of every check, read by the runner ([`crate::verify()`]), `rigaudit checks` and the
//! SARIF rules alike.
//!
//! Each family keeps its rows in its own module (`speed::CHECKS` in `speed/mod.rs`, ...); a check
//! id names its family, so the id leads to its row ([`families`]) and the row to its function or
//! to the [`Stage`] that decides it ([`STAGES`]). Adding a check is one row and one function in
//! the family's file.

use crate::bundle::Run;
use crate::check::{about, About, Check, Stage};
use crate::{
    ab, claims, coverage, diff, fit, loaded, noise, quality, rehash, replay, schema, setup, speed,
};

/// The bundle families `verify` runs over the whole bundle, in the order it runs them (after
/// `schema` over each file and `quality` over each test).
pub const BUNDLE: &[&[Check<Run>]] = &[
    speed::CHECKS,
    setup::CHECKS,
    fit::CHECKS,
    claims::CHECKS,
    ACROSS_FILES,
];

/// The rows whose functions compare a bundle's files with each other (subject files under
/// `consistency/`), each in its family's `ACROSS_FILES`, in the order `verify` runs them: by
/// subject (counts, window, excluded, impossible, backing, provenance).
pub const ACROSS_FILES: &[Check<Run>] = &[
    speed::RUNS_MISMATCH,
    speed::PROMPT_SIZE_MISMATCH,
    quality::QUESTIONS_MISMATCH,
    fit::PROMPT_UNDERFILLS,
    speed::ANSWERED_BEYOND_WINDOW,
    quality::ANSWERED_BEYOND_WINDOW,
    quality::REFUSAL_FITS_WINDOW,
    quality::EXCLUDED_UNEARNED,
    speed::IMPOSSIBLE_RECORD,
    quality::IMPOSSIBLE_RECORD,
    claims::NO_MEASUREMENT,
    claims::UNBACKED,
    setup::SESSIONS_OVERLAP,
    setup::OUTSIDE_SESSION,
];

/// Every check rigaudit knows, in catalogue order: schema, quality, speed, setup, fit, claims,
/// consistency, rehash, loaded, replay, diff, ab, noise, imported, coverage.
pub fn all() -> Vec<About> {
    let mut v: Vec<About> = about(schema::CHECKS).collect();
    v.extend(about(quality::CHECKS));
    for t in BUNDLE {
        v.extend(about(t));
    }
    v.extend(about(rehash::CHECKS));
    v.extend(about(loaded::CHECKS));
    v.extend(replay::catalogue());
    v.extend(about(diff::CHECKS));
    v.extend(about(ab::CHECKS));
    v.extend(about(noise::CHECKS));
    v.extend(crate::imported::CHECKS.iter().copied());
    v.extend(about(coverage::CHECKS));
    v
}

/// Every stage that decides rows of the table (the rows hold its name as their `Staged`).
pub const STAGES: &[&Stage] = &[
    &replay::COMPARISON,
    &replay::FAILED_STEPS,
    &diff::DIFF,
    &ab::AB,
    &coverage::REPORT,
];

/// Every family's table: the prefix of its ids and its rows, in catalogue order within it.
pub fn families() -> Vec<(&'static str, Vec<About>)> {
    let of =
        |tables: &[&[Check<Run>]]| -> Vec<About> { tables.iter().flat_map(|t| about(t)).collect() };
    vec![
        ("schema", about(schema::CHECKS).collect()),
        (
            "quality",
            about(quality::CHECKS)
                .chain(about(quality::ACROSS_FILES))
                .collect(),
        ),
        ("speed", of(&[speed::CHECKS, speed::ACROSS_FILES])),
        ("setup", of(&[setup::CHECKS, setup::ACROSS_FILES])),
        ("fit", of(&[fit::CHECKS, fit::ACROSS_FILES])),
        ("claims", of(&[claims::CHECKS, claims::ACROSS_FILES])),
        ("rehash", about(rehash::CHECKS).collect()),
        ("loaded", about(loaded::CHECKS).collect()),
        ("replay", replay::catalogue().collect()),
        ("diff", about(diff::CHECKS).collect()),
        ("ab", about(ab::CHECKS).collect()),
        ("noise", about(noise::CHECKS).collect()),
        ("import", crate::imported::CHECKS.to_vec()),
        ("coverage", about(coverage::CHECKS).collect()),
    ]
}

/// What a family of checks reads: the words `rigaudit checks ID` adds to a row's doc, written
/// once per family (a row's id names its family). How to fix what each check finds, and an
/// example, are the check's own ([`crate::advice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The id prefix (`quality`).
    pub prefix: &'static str,
    /// What its checks read.
    pub reads: &'static str,
}

/// Every family's words, in catalogue order.
pub const FAMILY_TEXT: &[Family] = &[
    Family {
        prefix: "schema",
        reads: "each file of the bundle against its JSON Schema and the manifest that lists it",
    },
    Family {
        prefix: "quality",
        reads: "the quality tests: their contracts, summaries and per-question answers files",
    },
    Family {
        prefix: "speed",
        reads: "the speed contract, the speed result and its per-request records",
    },
    Family {
        prefix: "setup",
        reads: "the card, the server's start lines and the recorded commands",
    },
    Family {
        prefix: "fit",
        reads: "each step's prompt and reply sizes against the server's context window",
    },
    Family {
        prefix: "claims",
        reads: "the page's figures against the records of the bundle that measure them",
    },
    Family {
        prefix: "rehash",
        reads: "the artifacts the card records (package, binary, NCCL, checkpoint) and the bundle's raw files, hashed",
    },
    Family {
        prefix: "loaded",
        reads: "what each replayed or running server mapped (its executable and every file-backed mapping of it and its children, hashed), against the card",
    },
    Family {
        prefix: "replay",
        reads: "the recorded figures beside a new run of the recorded command",
    },
    Family {
        prefix: "diff",
        reads: "two bundles of one setup: their setup and every figure",
    },
    Family {
        prefix: "ab",
        reads: "two setups measured in one session, interleaved in ABBA quartets: every block's figures, paired",
    },
    Family {
        prefix: "noise",
        reads: "a bundle's own repeated runs (a speed step's runs, a concurrency level's rounds, a quality test's answers) for the smallest difference each figure could show",
    },
    Family {
        prefix: "import",
        reads: "another tool's result files (AIPerf, GuideLLM, lm-eval, LoadGen, llama-bench, llama-server, vLLM)",
    },
    Family {
        prefix: "coverage",
        reads: "what the run could not check: a file it could not read, an artifact it did not find, a stage that could not run",
    },
];

/// The words of the family a check id names.
pub fn family_of(id: &str) -> Option<&'static Family> {
    let prefix = id.split('.').next()?;
    FAMILY_TEXT.iter().find(|f| f.prefix == prefix)
}

/// Looks a check up by id.
pub fn find(id: &str) -> Option<About> {
    all().into_iter().find(|c| c.id == id)
}

/// The row of a bundle check (one `verify` runs over the whole bundle) by id, to run it.
pub fn bundle_check(id: &str) -> Option<&'static Check<Run>> {
    BUNDLE.iter().flat_map(|t| t.iter()).find(|c| c.id == id)
}

/// The row of a quality check (one `verify` runs over each test) by id, to run it.
pub fn quality_check(id: &str) -> Option<&'static Check<quality::Run>> {
    quality::CHECKS.iter().find(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_family_has_its_words_and_every_word_its_family() {
        let prefixes: Vec<&str> = families().into_iter().map(|(p, _)| p).collect();
        let worded: Vec<&str> = FAMILY_TEXT.iter().map(|f| f.prefix).collect();
        assert_eq!(prefixes, worded);
        for c in all() {
            assert!(family_of(c.id).is_some(), "{}", c.id);
        }
    }

    #[test]
    fn every_row_sits_in_the_table_of_the_family_its_id_names() {
        for (family, rows) in families() {
            for r in rows {
                assert_eq!(r.id.split('.').next(), Some(family), "{} in {family}", r.id);
            }
        }
    }

    #[test]
    fn ids_are_unique_and_the_catalogue_is_every_family_s_rows() {
        let all = all();
        let ids: BTreeSet<&str> = all.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), all.len(), "an id is written twice");
        let in_families: BTreeSet<&str> = families()
            .into_iter()
            .flat_map(|(_, rows)| rows.into_iter().map(|r| r.id))
            .collect();
        assert_eq!(ids, in_families);
    }

    /// Every row is run by a runner (schema over each file, quality over each test, the bundle
    /// families over the bundle) or declared by a stage, and each staged row by the stage it
    /// names. `import.*` rows are still run by the imported formats' own collector.
    #[test]
    fn every_row_is_reached_by_a_runner_or_a_declared_stage() {
        let mut reached: BTreeSet<&str> = schema::CHECKS.iter().map(|c| c.id).collect();
        reached.extend(quality::CHECKS.iter().map(|c| c.id));
        reached.extend(BUNDLE.iter().flat_map(|t| t.iter().map(|c| c.id)));
        // `loaded::check` runs every row of its table.
        reached.extend(loaded::CHECKS.iter().map(|c| c.id));
        // `rehash::check`, `noise::noise` and `replay::command` run every row of their tables.
        reached.extend(rehash::CHECKS.iter().map(|c| c.id));
        reached.extend(noise::CHECKS.iter().map(|c| c.id));
        reached.extend(replay::COMMAND_CHECKS.iter().map(|c| c.id));
        for s in STAGES {
            reached.extend(s.rows.iter().map(|r| r.id));
        }
        for (family, rows) in families() {
            for r in rows.iter().filter(|_| family != "import") {
                assert!(reached.contains(r.id), "{} is reached by nothing", r.id);
            }
        }
        let staged = replay::COMPARED
            .iter()
            .chain(replay::FAILED)
            .map(|c| (c.id, c.run))
            .chain(diff::CHECKS.iter().map(|c| (c.id, c.run)))
            .chain(ab::CHECKS.iter().map(|c| (c.id, c.run)))
            .chain(coverage::CHECKS.iter().map(|c| (c.id, c.run)));
        for (id, by) in staged {
            let stage = STAGES.iter().find(|s| s.name == by.0);
            assert!(stage.is_some_and(|s| s.declares(id)), "{id}: {by:?}");
        }
    }

    #[test]
    fn a_bundle_check_is_found_and_run_by_id() {
        assert!(BUNDLE.iter().all(|t| !t.is_empty()));
        let c = bundle_check("speed.runs-mismatch").expect("in the table");
        assert_eq!(c.id, speed::RUNS_MISMATCH.id);
        assert!(bundle_check("rehash.not-found").is_none());
        assert_eq!(
            quality_check("quality.cutoffs").map(|c| c.id),
            Some("quality.cutoffs")
        );
        assert_eq!(find("replay.drifted").map(|c| c.id), Some("replay.drifted"));
    }
}
