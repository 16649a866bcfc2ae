//! `import.submission-scenarios` (row A10): the scenarios a closed or network result's benchmark
//! folder must hold, and may hold, by the round's table for the system's type. The tables are the
//! checkers' own `MODEL_CONFIG` (`required-scenarios-<type>`, `optional-scenarios-<type>`, the
//! models and their name mapping), written into `scenarios.json` by
//! `fixtures/submissions/scenario-tables.py` from each round's checker; nothing is typed here.
//!
//! What the checker does with a benchmark folder that breaks them differs by round:
//! - before v6.0 (`submission_checker.py`, C51 l. 2500-2540 and 2846-2876): a scenario neither
//!   required nor optional gets no result; a required one missing gives the *benchmark folder* no
//!   result (an entry of its own beside its results, which stand); v5.1's check that one of Server
//!   and Interactive is there voids the result the loop saw last (the last scenario folder) when no
//!   required one is missing, else the benchmark folder;
//! - from v6.0 (the package, `loader.py` `check_scenarios`, `performance_check.py`
//!   `scenarios_check`): every result of a benchmark folder that lacks a required scenario, has
//!   one the table does not know, or has neither Server nor Interactive where both are optional,
//!   fails its performance check.
//!
//! Rigaudit's rows are results: a finding the checker puts on the benchmark folder is put on the
//! folder's first result (by name), and says so. A required scenario counts as there when its
//! folder is; the checker before v6.0 also wants its performance run valid (C51 l. 2737-2738),
//! which that result's own row judges. That the folder then has no result either is not said
//! again on a sibling's row: the invalid run's row fails, so the submitter's folder fails as it
//! does under the checker, and no verdict of the tree changes.

use super::Result;
use crate::check::{Emit, Ran};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One round's tables, as `scenarios.json` holds them.
#[derive(Debug, Deserialize)]
struct Round {
    models: Vec<String>,
    model_mapping: BTreeMap<String, String>,
    types: BTreeMap<String, Scenarios>,
}

/// The required and optional scenarios of each model, for one system type.
#[derive(Debug, Deserialize)]
struct Scenarios {
    required: BTreeMap<String, Vec<String>>,
    optional: BTreeMap<String, Vec<String>>,
}

/// The tables of every round, parsed once from the embedded file.
fn rounds() -> &'static BTreeMap<String, Round> {
    static ROUNDS: OnceLock<BTreeMap<String, Round>> = OnceLock::new();
    ROUNDS.get_or_init(|| {
        serde_json::from_str(include_str!("scenarios.json"))
            .expect("scenarios.json is written by fixtures/submissions/scenario-tables.py")
    })
}

/// The checker's model for a benchmark folder's name (`get_mlperf_model` without a submitter's
/// own mapping, which only the open division has): the name itself when it is a model, else the
/// round's mapping, else the checker's guesses by substring, mapped again.
fn mlperf_model(round: &Round, folder: &str) -> String {
    if round.models.iter().any(|m| m == folder) {
        return folder.to_string();
    }
    if let Some(m) = round.model_mapping.get(folder) {
        return m.clone();
    }
    let guess = if ["mobilenet", "efficientnet", "resnet50"]
        .iter()
        .any(|k| folder.contains(k))
    {
        "resnet"
    } else if folder.contains("bert-99.9") {
        "bert-99.9"
    } else if folder.contains("bert-99") {
        "bert-99"
    } else if folder.contains("llama3_1-405b") {
        "llama3.1-405b"
    } else {
        folder
    };
    round
        .model_mapping
        .get(guess)
        .cloned()
        .unwrap_or_else(|| guess.to_string())
}

/// What a benchmark folder lacks and holds beyond its table: the required scenarios missing
/// (with "one of Interactive or Server" where both are optional and neither is there), and the
/// scenarios neither required nor optional. Names compare without case, as the checker maps
/// lower-case scenario folders.
struct Gaps {
    missing: Vec<String>,
    one_of_missing: bool,
    unknown: Vec<String>,
}

fn gaps(required: &[String], optional: &[String], present: &[String]) -> Gaps {
    let has = |s: &str| present.iter().any(|p| p.eq_ignore_ascii_case(s));
    let known = |p: &str| {
        required
            .iter()
            .chain(optional)
            .any(|s| s.eq_ignore_ascii_case(p))
    };
    let opt = |s: &str| optional.iter().any(|o| o == s);
    Gaps {
        missing: required.iter().filter(|s| !has(s)).cloned().collect(),
        one_of_missing: opt("Interactive")
            && opt("Server")
            && !has("Interactive")
            && !has("Server"),
        unknown: present.iter().filter(|p| !known(p)).cloned().collect(),
    }
}

/// `import.submission-scenarios` (row A10).
pub(super) fn scenarios(r: &Result, emit: &mut Emit) -> Ran {
    if !["closed", "network"].contains(&r.division.to_ascii_lowercase().as_str()) {
        return None;
    }
    let round_name = r.checker_round()?;
    let round = rounds().get(round_name)?;
    let (_, system) = r.system_desc.as_ref()?;
    let system_type = system.as_ref()?.get("system_type")?.as_str()?;
    let kind = match system_type {
        "edge,datacenter" => "datacenter,edge",
        other => other,
    };
    let table = round.types.get(kind)?;
    let model = mlperf_model(round, &r.benchmark);
    let required = table.required.get(&model)?;
    let optional = table.optional.get(&model).map_or(&[][..], |o| &o[..]);
    let g = gaps(required, optional, &r.scenarios_beside);
    let package = super::judged_by_package(Some(round_name));
    let first = r.scenarios_beside.first() == Some(&r.scenario);
    let last = r.scenarios_beside.last() == Some(&r.scenario);
    let folder = r.dir.rsplit_once('/').map_or(r.dir.as_str(), |(d, _)| d);
    let data = json!({"round": round_name, "system_type": system_type, "model": model,
        "required": required, "optional": optional, "present": r.scenarios_beside});
    let table_said = format!(
        "round {round_name}'s table for a {system_type} system: {model} {}",
        listed(required, optional)
    );
    let mut missing = g.missing.clone();
    if g.one_of_missing {
        missing.push("one of Interactive or Server".into());
    }
    // Where the checker puts a missing scenario, and what it does there.
    let (on_this, what) = if package {
        (
            true,
            "the submission checker fails every result of the folder",
        )
    } else if g.missing.is_empty() && round_name == "v5.1" {
        (
            last,
            "round v5.1's checker gives its last scenario folder's result none, this one",
        )
    } else {
        (first, "the submission checker gives the benchmark folder no result (its results stand; said on its first)")
    };
    if !missing.is_empty() && on_this {
        emit.finding(format!(
            "{folder} lacks {} ({table_said}): {what}",
            missing.join(", ")
        ))
        .at(folder, "")
        .data(data.clone());
    }
    if g.unknown.iter().any(|u| u == &r.scenario) || (package && !g.unknown.is_empty()) {
        let whose = if package {
            "every result of the folder"
        } else {
            "its result"
        };
        emit.finding(format!("{folder} holds {}, which the table neither requires nor allows ({table_said}): the submission checker gives {whose} none", g.unknown.join(", ")))
            .at(r.dir.as_str(), "")
            .data(data);
    }
    Some(())
}

/// "Offline, Server required; Interactive optional".
fn listed(required: &[String], optional: &[String]) -> String {
    let mut s = format!("{} required", required.join(", "));
    if !optional.is_empty() {
        s.push_str(&format!("; {} optional", optional.join(", ")));
    }
    s
}
