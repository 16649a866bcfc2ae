//! One case per row of `diff::CHECKS`: two small bundles made from the recorded CPU run, one
//! changed, each row found where its problem is planted and quiet on the run against itself.

use super::*;
use crate::report::Finding;
use crate::testkit::{assert_says, Kit, SMOLLM2};

const RESULT: &str = "speed/speed-result.json";

/// The findings of one row when `a` is diffed with `b` (default tolerance and policy).
fn found(a: &Kit, b: &Kit, id: &str) -> Vec<Finding> {
    let d = diffed(a, b);
    assert!(d.found.ran.iter().any(|r| r == id), "{id} did not run");
    d.found
        .findings
        .into_iter()
        .filter(|f| f.check == id)
        .collect()
}

/// `kit` with `edit` applied to every speed request of `step`.
fn each_request(kit: &Kit, step: &'static str, edit: impl Fn(&mut Value)) -> Kit {
    kit.clone().with(RESULT, |v| {
        let requests = v["requests"].as_array_mut().expect("requests");
        requests
            .iter_mut()
            .filter(|q| q["step"] == step)
            .for_each(edit);
    })
}

/// Asserts a finding at `severity` whose message begins with `start`.
#[track_caller]
fn assert_finds(f: &[Finding], severity: Severity, start: &str) {
    let it = |f: &Finding| f.severity == severity && f.message.starts_with(start);
    assert!(f.iter().any(it), "{f:?}");
}

/// The machine's speed reference: `gbps` before each of eight steps.
fn reference(kit: &Kit, gbps: f64) -> Kit {
    let samples: Vec<Value> = (0..8)
        .map(|i| json!({"step": format!("decode/code/{i}"), "gbps": gbps + 0.01 * i as f64}))
        .collect();
    let reference = json!({"kernel": "reference-1 avx2", "threads": 2, "samples": samples});
    kit.clone()
        .with(RESULT, |v| v["machine_reference"] = reference)
}

#[test]
fn a_run_against_itself_differs_in_nothing_and_moves_nothing() {
    let a = Kit::of(SMOLLM2);
    assert_eq!(found(&a, &a, "diff.setup-differs"), vec![]);
    assert_eq!(found(&a, &a, "diff.moved"), vec![]);
}

#[test]
fn setup_differs_names_a_changed_engine_with_both_values() {
    let a = Kit::of(SMOLLM2);
    let b = a
        .clone()
        .set("card.json", "/engine/version", json!("9.9.9"));
    let f = found(&a, &b, "diff.setup-differs");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, Severity::Error);
    assert_says(&f[0], "9.9.9");
}

#[test]
fn moved_names_a_decode_rate_that_halved() {
    let a = Kit::of(SMOLLM2);
    // Every decode reply takes twice as long after its first token.
    let slower = each_request(&a, "decode", |q| {
        let (first, end) = (q["first_token_s"].as_f64(), q["end_s"].as_f64());
        if let (Some(first), Some(end)) = (first, end) {
            q["end_s"] = json!(first + (end - first) * 2.0);
        }
    });
    assert_finds(&found(&a, &slower, "diff.moved"), Severity::Error, "decode");
}

#[test]
fn inconclusive_and_not_comparable_name_their_figures() {
    let a = Kit::of(SMOLLM2);
    let inconclusive = found(&a, &a, "diff.inconclusive");
    assert!(!inconclusive.is_empty(), "a percentile of few samples");
    assert!(inconclusive.iter().all(|f| f.severity == Severity::Info));
    // Every decode request of B refused: its decode figures cannot be compared.
    let refused = each_request(&a, "decode", |q| {
        q["status"] = json!(400);
        q["error"] = json!("maximum context length exceeded");
    });
    let f = found(&a, &refused, "diff.not-comparable");
    assert_finds(&f, Severity::Warning, "decode");
}

#[test]
fn machine_speed_says_the_machine_ran_slower_on_one_side() {
    let a = reference(&Kit::of(SMOLLM2), 20.0);
    assert_eq!(found(&a, &a, "diff.machine-speed"), vec![]);
    let f = found(&a, &reference(&a, 10.0), "diff.machine-speed");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].severity, Severity::Info);
    assert_says(&f[0], "speed moves it explains are inconclusive");
}

/// The diff of `a` with `b` (default tolerance and policy).
fn diffed(a: &Kit, b: &Kit) -> Diffed {
    let (a, b) = (a.bundle(), b.bundle());
    let verified = [&crate::verify(&a), &crate::verify(&b)];
    diff(
        (&a, &b),
        verified,
        &Tolerance::default(),
        &SetupPolicy::default(),
    )
}

fn row_of<'a>(d: &'a Diffed, key: &str) -> &'a Comparison {
    let rows = &d.found.comparisons;
    rows.iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("no row {key}: {rows:?}"))
}

#[test]
fn a_side_that_lost_a_request_carries_its_finding_and_its_steps_rows_are_not_comparable() {
    let a = Kit::of(SMOLLM2);
    // One counted decode request of the prompt `code` refused on B; the step keeps a value.
    let b = a.clone().with(RESULT, |v| {
        let requests = v["requests"].as_array_mut().expect("requests");
        let q = requests
            .iter_mut()
            .find(|q| q["step"] == "decode" && q["prompt_id"] == "code" && q["warmup"] == false)
            .expect("a counted decode request");
        q["status"] = json!(400);
        q["error"] = json!("maximum context length exceeded");
    });
    let d = diffed(&a, &b);
    // B's own verify finds the lost request; the diff lists it as B's, under its own check.
    let carried: Vec<&Finding> = d
        .found
        .findings
        .iter()
        .filter(|f| f.check == "speed.failed-request")
        .collect();
    assert!(!carried.is_empty(), "{:?}", d.found.findings);
    for f in &carried {
        assert!(f.message.starts_with("B: "), "{}", f.message);
        assert_eq!(f.data["side"], "B");
    }
    assert!(d.found.ran.iter().any(|id| id == "speed.failed-request"));
    // The rows of that step are not comparable, never better or worse; the others are judged.
    for key in ["decode", "decode.code"] {
        let r = row_of(&d, key);
        assert_eq!(r.verdict, ReplayVerdict::NotComparable, "{key}: {}", r.why);
        assert!(
            r.why.starts_with("not comparable: B lost requests: "),
            "{}",
            r.why
        );
        assert_eq!((r.better, r.change_pct, r.p_value), (None, None, None));
    }
    for key in ["decode.prose", "prefill.128"] {
        let r = row_of(&d, key);
        assert_ne!(r.verdict, ReplayVerdict::NotComparable, "{key}: {}", r.why);
    }
    // A's side is clean: nothing of A is carried.
    assert!(d
        .found
        .findings
        .iter()
        .all(|f| !f.message.starts_with("A: ")));
}

#[test]
fn a_quality_row_shows_its_change_in_points_once() {
    let a = Kit::of(SMOLLM2);
    let d = diffed(&a, &a);
    let q = row_of(&d, "quality.arith.pct");
    assert_eq!(
        q.change_pct, None,
        "a score's change is never a relative percent"
    );
    assert_eq!(q.change_points, Some(0.0));
    assert_eq!(q.change_shown().as_deref(), Some("+0.0 pp"));
    assert!(!q.why.contains("+0.0 points ("), "{}", q.why);
    // A speed row judged by the rule: its change is the one judged, not repeated in its reason.
    let decode = row_of(&d, "decode");
    assert_eq!(decode.test, "log-ratio");
    let shown = decode.change_shown().expect("a judged change");
    assert!(!decode.why.contains(&shown), "{shown} in {}", decode.why);
}

fn argv(s: &str) -> Vec<String> {
    s.split(' ').map(String::from).collect()
}

#[test]
fn flags_and_positionals_are_read_from_argv() {
    let (f, p) = flags(&argv(
        "srv serve m.gguf --port 8 --ctx=4096 --flash-attn -t 2",
    ));
    assert_eq!(f["--port"], "8");
    assert_eq!(f["--ctx"], "4096");
    assert_eq!(f["--flash-attn"], "(set)");
    assert_eq!(f["-t"], "2");
    assert_eq!(p, vec!["serve", "m.gguf"]);
}

#[test]
fn command_changes_name_added_removed_and_changed_flags_and_env() {
    let a = RankCommand {
        rank: 0,
        box_name: Some("a".into()),
        argv: argv("srv serve --parallel 4 --kv bf16"),
        env: BTreeMap::from([("X".to_string(), "1".to_string())]),
    };
    let b = RankCommand {
        argv: argv("srv serve --parallel 8 --draft dflash2"),
        env: BTreeMap::from([("Y".to_string(), "2".to_string())]),
        ..a.clone()
    };
    let c = command_changes(0, Some(&a), Some(&b), "A.json", "B.json");
    let whats: Vec<&str> = c.iter().map(|x| x.what.as_str()).collect();
    assert!(
        whats.contains(&"rank 0 flag --parallel (changed)"),
        "{whats:?}"
    );
    assert!(whats.contains(&"rank 0 flag --kv (removed)"), "{whats:?}");
    assert!(whats.contains(&"rank 0 flag --draft (added)"), "{whats:?}");
    assert!(whats.contains(&"rank 0 env X (removed)"), "{whats:?}");
    assert!(whats.contains(&"rank 0 env Y (added)"), "{whats:?}");
    let p = c.iter().find(|x| x.what.contains("--parallel")).unwrap();
    assert_eq!((p.a.as_str(), p.b.as_str()), ("4", "8"));
    assert_eq!(p.where_a, "A.json/argv");
}

#[test]
fn json_leaves_that_differ_are_named_with_both_values_and_pointers() {
    let a = json!({"runs": 2, "prefill": {"depths": [512, 2048]}, "x": null});
    let b = json!({"runs": 3, "prefill": {"depths": [512]}});
    let c = json_changes(
        &|_| Subject::Contract,
        "speed contract",
        (&a, "a.json"),
        (&b, "b.json"),
        &[],
    );
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[0].what, "speed contract prefill.depths");
    assert_eq!(c[0].a, "[512,2048]");
    assert_eq!(c[1].what, "speed contract runs");
    assert_eq!(c[1].where_b, "b.json /runs");
}

#[test]
fn identical_changes_of_several_ranks_are_one_row_naming_the_ranks() {
    let change = |what: &str, b: &str, at: &str| SetupChange {
        subject: Subject::Command,
        what: what.into(),
        a: "absent".into(),
        b: b.into(),
        where_a: format!("card.json /commands/{at}/env"),
        where_b: format!("card.json /commands/{at}/env"),
    };
    let grouped = group_ranks(vec![
        change("rank 0 env KV (added)", "fp8", "0"),
        change("rank 0 env PORT (added)", "8888", "0"),
        change("rank 1 env KV (added)", "fp8", "1"),
        change("rank 1 env PORT (added)", "9999", "1"),
        change("card engine.name", "x", "9"),
    ]);
    let what: Vec<&str> = grouped.iter().map(|c| c.what.as_str()).collect();
    assert_eq!(
        what,
        [
            "ranks 0, 1 env KV (added)",
            "rank 0 env PORT (added)",
            "rank 1 env PORT (added)",
            "card engine.name"
        ]
    );
    assert_eq!(
        grouped[0].where_a,
        "card.json /commands/0/env, /commands/1/env"
    );
}
