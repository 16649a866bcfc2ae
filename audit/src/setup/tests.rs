//! One case per row of `setup::CHECKS`: each check, run alone by its id, finds a problem planted
//! in a small bundle and stays quiet on the bundle without it.

use super::*;
use crate::report::Severity::Error;
use crate::testkit::SMOLLM2;
use crate::testkit::{assert_cases, case, one_value_cases, run_check, Kit};
use serde_json::json;

const M: &str = "bundle.json";

#[test]
fn every_setup_row_finds_its_planted_problem() {
    assert_cases(one_value_cases("setup."));
}

/// The recorded run with its speed result and arith summary dated `speed` and `arith`
/// (`(started, ended)`), the manifest's sessions with them.
fn dated(speed: (&str, &str), arith: (&str, &str)) -> Kit {
    let (r, s) = ("speed/speed-result.json", "quality/arith/summary.json");
    let kit = Kit::of(SMOLLM2).set(r, "/started", json!(speed.0));
    let kit = kit.set(r, "/ended", json!(speed.1));
    let kit = kit
        .set(s, "/started", json!(arith.0))
        .set(s, "/ended", json!(arith.1));
    let kit = kit.set(M, "/sessions/0/started", json!(speed.0));
    let kit = kit.set(M, "/sessions/0/ended", json!(speed.1));
    let kit = kit.set(M, "/sessions/1/started", json!(arith.0));
    kit.set(M, "/sessions/1/ended", json!(arith.1))
}

/// The rows the consistency tables hold under `setup.` ids, run by id wherever they live.
#[test]
fn every_setup_consistency_row_finds_its_planted_problem() {
    let run = Kit::of(SMOLLM2);
    let speed = ("2026-12-03T04:04:00Z", "2026-12-03T04:05:10Z");
    let inside = dated(speed, ("2026-12-03T04:03:30Z", "2026-12-03T04:05:30Z"));
    let s = "quality/arith/summary.json";
    let outside = run
        .clone()
        .set(s, "/started", json!("2026-12-03T05:04:20Z"));
    let outside = outside.set(s, "/ended", json!("2026-12-03T05:04:25Z"));
    assert_cases(vec![
        case("setup.sessions-overlap", &run, inside.clone(), Error),
        case("setup.outside-session", &run, outside, Error),
    ]);
    assert!(run_check(&inside.bundle(), "setup.outside-session").is_empty());
}

#[test]
fn flags() {
    let argv: Vec<String> = ["x", "serve", "--parallel", "8", "--ctx-size=4096"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(flag(&argv, SLOT_FLAGS), Some("8"));
    assert_eq!(flag(&argv, WINDOW_FLAGS), Some("4096"));
    assert_eq!(flag(&argv, NAME_FLAGS), None);
}
