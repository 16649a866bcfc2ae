//! Unit tests of each imported format's rows: per format, one table of cases, each a clean input
//! built by hand and the problem planted in its twin; one driver runs the format's table over
//! both and asserts the row raises its id (at its severity) on the planted problem only.

use super::Row;
use crate::report::{Findings, Severity};

mod aiperf;
mod endpoints;
mod guidellm;
mod llama_bench;
mod llama_server;
mod lm_eval;
mod loadgen;
mod ml_energy;
mod shared;
mod submission;
mod vllm;

/// One planted problem of a format's input: the row `id` must raise it on `clean` with `plant`
/// applied, and must not on `clean` as built.
pub(super) struct Case<F> {
    /// The row's id.
    pub id: &'static str,
    /// The severity the row reports this problem at; `None`: the row's catalogue severity.
    pub at: Option<Severity>,
    /// The clean input.
    pub clean: fn() -> F,
    /// What turns the clean input into its bad twin.
    pub plant: fn(&mut F),
    /// Words the finding must hold, where a row finds several problems (which one this is).
    pub says: Option<&'static str>,
}

impl<F> Case<F> {
    /// The case whose finding holds these words.
    pub const fn saying(self, words: &'static str) -> Self {
        Case {
            says: Some(words),
            ..self
        }
    }
}

/// A case reported at the row's catalogue severity.
pub(super) const fn case<F>(id: &'static str, clean: fn() -> F, plant: fn(&mut F)) -> Case<F> {
    Case {
        id,
        at: None,
        clean,
        plant,
        says: None,
    }
}

/// A case the row reports below its catalogue severity.
pub(super) const fn lowered<F>(
    id: &'static str,
    at: Severity,
    clean: fn() -> F,
    plant: fn(&mut F),
) -> Case<F> {
    Case {
        at: Some(at),
        ..case(id, clean, plant)
    }
}

fn raised<'a>(found: &'a Findings, id: &str) -> impl Iterator<Item = (Severity, &'a str)> + 'a {
    let id = id.to_string();
    found
        .findings
        .iter()
        .filter(move |f| f.check == id)
        .map(|f| (f.severity, f.message.as_str()))
}

/// Runs every case of a format through its table; panics naming each case that failed.
pub(super) fn check_cases<F: Clone>(table: &[Row<F>], cases: &[Case<F>]) {
    let mut failed = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let Some(row) = table.iter().find(|r| r.id == c.id) else {
            failed.push(format!("case {i}: no row {} in the table", c.id));
            continue;
        };
        let clean = (c.clean)();
        let on_clean: Vec<_> = raised(&super::run(table, &clean), c.id)
            .map(|(s, m)| format!("{s:?}: {m}"))
            .collect();
        if !on_clean.is_empty() {
            failed.push(format!(
                "case {i} ({}) raised on the clean twin: {on_clean:?}",
                c.id
            ));
        }
        let mut bad = clean;
        (c.plant)(&mut bad);
        let found = super::run(table, &bad);
        let want = c.at.unwrap_or(row.severity);
        let got: Vec<_> = raised(&found, c.id).collect();
        let says = c.says.unwrap_or_default();
        if !got.iter().any(|(s, m)| *s == want && m.contains(says)) {
            let what = format!("at {want:?} saying {says:?}");
            failed.push(format!("case {i} ({}): not raised {what}: {got:?}", c.id));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The rows of a table without a case in the format's table of cases.
/// A format's rows without a planted case, and those the catalogue (`rigaudit checks`) lacks.
fn uncovered<F>(format: &str, table: &[Row<F>], cases: &[Case<F>]) -> Vec<String> {
    let uncased = table
        .iter()
        .filter(|r| !cases.iter().any(|c| c.id == r.id))
        .map(|r| format!("{format}: {} has no case", r.id));
    let catalogue = crate::table::all();
    let uncatalogued = table
        .iter()
        .filter(|r| !catalogue.iter().any(|c| c.id == r.id))
        .map(|r| format!("{format}: {} is not in the catalogue", r.id));
    uncased.chain(uncatalogued).collect()
}

/// Asserts a format's table raises nothing on an input.
pub(super) fn quiet<F>(table: &[Row<F>], input: &F) {
    let found = super::run(table, input);
    let all: Vec<_> = found
        .findings
        .iter()
        .map(|f| format!("{} {:?}: {}", f.check, f.severity, f.message))
        .collect();
    assert!(all.is_empty(), "{all:#?}");
}

#[test]
fn every_row_of_every_format_has_a_case_and_is_in_the_catalogue() {
    let missing: Vec<String> = [
        uncovered("aiperf", super::aiperf::CHECKS, aiperf::CASES),
        uncovered("guidellm", super::guidellm::CHECKS, guidellm::CASES),
        uncovered(
            "llama_bench",
            super::llama_bench::CHECKS,
            llama_bench::CASES,
        ),
        uncovered(
            "llama_server",
            super::llama_server::CHECKS,
            llama_server::CASES,
        ),
        uncovered("lm_eval", super::lm_eval::CHECKS, lm_eval::CASES),
        uncovered("loadgen", super::loadgen::CHECKS, loadgen::CASES),
        uncovered("endpoints", super::endpoints::CHECKS, endpoints::CASES),
        uncovered("ml_energy", super::ml_energy::CHECKS, ml_energy::CASES),
        uncovered("submission", super::submission::CHECKS, submission::CASES),
        uncovered("vllm", super::vllm::CHECKS, vllm::CASES),
    ]
    .concat();
    assert!(missing.is_empty(), "{missing:?}");
}
