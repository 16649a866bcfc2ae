//! The text report as a person reads it on an 80x24 terminal: the first 24 lines say the verdict,
//! why and what to do, on the two seed pages, the measured fixture and an AIPerf run; every line
//! fits 100 columns; the recomputed figures are one line plus the rows that differ or have no
//! result, every row with `--verbose`, in numeric order. Snapshots: the golden files of
//! `tests/it/reports.rs`, and here the stock page with `--verbose` and an AIPerf run
//! (`RIGAUDIT_BLESS=1` rewrites them after a deliberate change).

use crate::common;

use common::assert_has;
use common::{fixture, rigaudit, root};
use std::path::PathBuf;

/// What the first 24 lines must hold.
struct Screen {
    /// The command and its arguments.
    args: Vec<String>,
    /// The verdict, as the first line writes it after the colon.
    verdict: &'static str,
    /// Words the lines that say why must hold (a headline, the coverage, the reason).
    why: &'static [&'static str],
}

fn verify(input: PathBuf) -> Vec<String> {
    vec!["verify".into(), input.display().to_string()]
}

fn screens(empty_root: &std::path::Path) -> Vec<Screen> {
    let tf = fixture("tensorfold-127-stock-2x");
    let mia = fixture("mia-recipe-1104-2x");
    let path = |p: &std::path::Path| p.display().to_string();
    vec![
        Screen {
            args: verify(tf.clone()),
            verdict: "FAIL",
            why: &["quality: 2 tests count 70 refused requests as wrong answers"],
        },
        Screen {
            args: verify(mia.clone()),
            verdict: "PASS, self-consistent only: 43 of 43 files reconstructed",
            why: &["not measured: add the raw records the findings name"],
        },
        Screen {
            // AIPerf's own figures over the requests it kept: warnings that name its behaviour
            // (failed requests left out, cached prompt tokens), no error.
            args: verify(root().join("fixtures/imports/aiperf/failures")),
            verdict: "PASS",
            why: &["import.failed-requests", "speed.cached-tokens"],
        },
        Screen {
            // The same gated on warnings fails, leading with them.
            args: [
                verify(root().join("fixtures/imports/aiperf/failures")),
                vec!["--fail-on".into(), "warning".into()],
            ]
            .concat(),
            verdict: "FAIL",
            why: &[
                "  - speed: reply tokens were counted from chunks",
                "\nwarnings\n",
            ],
        },
        Screen {
            args: verify(root().join("fixtures/runs/smollm2-cpu")),
            verdict: "PASS (0 errors",
            why: &["quality.no-result", "arith-long: no result"],
        },
        Screen {
            // With the gate off the verdict says so, and what it would have gated.
            args: [verify(tf.clone()), vec!["--fail-on".into(), "never".into()]].concat(),
            verdict: "PASS, not gated (fail-on never): 4 errors, 2 warnings;",
            why: &[
                "quality: 2 tests count 70 refused requests",
                "the gate is off",
            ],
        },
        Screen {
            args: vec!["diff".into(), path(&tf), path(&mia)],
            verdict: "FAIL",
            why: &["diff: 62 setup differences, 2 figures moved beyond the tolerance"],
        },
        Screen {
            args: vec![
                "rehash".into(),
                path(&tf),
                "--root".into(),
                path(empty_root),
            ],
            verdict: "INCOMPLETE",
            why: &["  - incomplete: none of the artifacts the card records was found"],
        },
    ]
}

#[test]
fn the_first_24_lines_say_the_verdict_why_and_what_to_do_and_every_line_fits() {
    let empty = tempfile::tempdir().unwrap();
    for s in screens(empty.path()) {
        let args = &s.args;
        let run = rigaudit(args);
        assert!(
            [0, 1, 3].contains(&run.code) && !run.stdout.is_empty(),
            "{}",
            run.stderr
        );
        let lines: Vec<&str> = run.stdout.lines().collect();
        let top = lines[..lines.len().min(24)].join("\n");
        let first = lines[0];
        assert!(
            first.starts_with(&format!("rigaudit {} ", args[0])),
            "{first}"
        );
        assert!(
            first.contains(&format!(": {}", s.verdict)),
            "{args:?} : {first}"
        );
        for why in s.why {
            assert!(top.contains(why), "{why} not in the first 24 lines:\n{top}");
        }
        if run.code != 0 {
            assert_has(&top, "what to do: ");
        }
        if run.code == 1 {
            // The first failing finding is in view too (an error, or a warning under
            // --fail-on warning).
            let section = if top.contains("(0 errors") {
                "\nwarnings\n"
            } else {
                "\nerrors\n"
            };
            assert_has(&top, section);
        }
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }
}

/// Compares `got` with `tests/golden/NAME`, or writes it with `RIGAUDIT_BLESS=1`.
fn snapshot(name: &str, got: &str) {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("RIGAUDIT_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (RIGAUDIT_BLESS=1 writes it)", path.display()));
    if let Some(i) = want.lines().zip(got.lines()).position(|(a, b)| a != b) {
        panic!(
            "{name} differs at line {}:\n want: {:?}\n  got: {:?}",
            i + 1,
            want.lines().nth(i),
            got.lines().nth(i)
        );
    }
    assert_eq!(
        want.lines().count(),
        got.lines().count(),
        "{name}: line count"
    );
}

#[test]
fn the_verbose_stock_page_and_an_aiperf_import_match_their_snapshots() {
    let page = fixture("tensorfold-127-stock-2x");
    let verbose = rigaudit(&["verify", page.to_str().unwrap(), "--verbose"]);
    snapshot("tensorfold.verbose.txt", &verbose.stdout);
    // An import's report names its output folder: a fixed name inside a temporary folder, run
    // from there.
    let tmp = tempfile::tempdir().unwrap();
    let run = root().join("fixtures/imports/aiperf/failures");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .current_dir(tmp.path())
        .args([
            "import",
            run.to_str().unwrap(),
            "--out",
            "aiperf-bundle",
            "--quiet",
            "--fail-on",
            "warning",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .take(24)
            .any(|l| l.starts_with("  what to do: ")),
        "{text}"
    );
    snapshot("aiperf-failures.import.txt", &text);
}

#[test]
fn the_recomputed_figures_are_one_line_and_the_rows_that_matter() {
    let page = fixture("tensorfold-127-stock-2x");
    let run = rigaudit(&["verify", page.to_str().unwrap()]);
    let json = rigaudit(&["verify", page.to_str().unwrap(), "--format", "json"]).json();
    let all = json["recomputed"].as_array().unwrap();
    let none = all.iter().filter(|v| v["value"].is_null()).count();
    assert!(none > 0);
    let summary = format!(
        "{} figures recomputed from the raw records: {} match, {none} have no result",
        all.len(),
        all.len() - none
    );
    assert!(run.stdout.contains(&summary), "{summary}\n{}", run.stdout);
    // Only the rows without a result are listed, each marked; a matching one is not.
    let marked = run
        .stdout
        .lines()
        .filter(|l| l.ends_with("   no result"))
        .count();
    assert_eq!(marked, none, "{}", run.stdout);
    assert!(!run.stdout.contains("\n  decode "), "{}", run.stdout);
    // --verbose lists every row, in numeric order, at the page's precision.
    let verbose = rigaudit(&["verify", page.to_str().unwrap(), "--verbose"]).stdout;
    for v in all {
        let key = v["key"].as_str().unwrap();
        assert!(verbose.contains(&format!("\n  {key} ")), "{key}\n{verbose}");
    }
    let at = |k: &str| verbose.find(&format!("\n  {k} ")).unwrap();
    assert!(at("ctx_decode.16384") < at("ctx_decode.32768"));
    assert!(at("ctx_decode.65536") < at("ctx_decode.131072"));
    let row = verbose
        .lines()
        .find(|l| l.starts_with("  quality.mmlu-pro.margin "))
        .unwrap();
    // 4.798 recomputed, 4.8 on the page: shown at the page's one decimal.
    assert!(row.contains(" 4.8 ") && !row.contains("4.798"), "{row}");
}

#[test]
fn a_figure_that_differs_is_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("page");
    common::copy_dir(&fixture("tensorfold-127-stock-2x"), &page);
    let bundle = page.join("bundle.json");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let edited = text.replacen("\"decode\": \"28.0\"", "\"decode\": \"31.0\"", 1);
    assert_ne!(
        text, edited,
        "the page's decode figure is where this test expects it"
    );
    std::fs::write(&bundle, edited).unwrap();
    let run = rigaudit(&["verify", page.to_str().unwrap()]);
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("  decode "))
        .unwrap_or_else(|| panic!("no decode row:\n{}", run.stdout));
    assert!(row.ends_with("DIFFERS"), "{row}");
    assert!(run.stdout.contains(", 1 differ,"), "{}", run.stdout);
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let page = fixture("tensorfold-127-stock-2x");
    let p = page.to_str().unwrap();
    let esc = |r: &common::Run| r.stdout.contains('\x1b');
    assert!(esc(&rigaudit(&["verify", p, "--color", "always"])));
    assert!(!esc(&rigaudit(&["verify", p, "--color", "never"])));
    // Not a terminal: auto is plain, unless CLICOLOR_FORCE forces it and NO_COLOR is unset.
    assert!(!esc(&rigaudit(&["verify", p])));
    let forced = common::rigaudit_with_env(
        &["verify", p],
        &[("CLICOLOR_FORCE", std::path::Path::new("1"))],
    );
    assert!(esc(&forced));
    let both = common::rigaudit_with_env(
        &["verify", p],
        &[
            ("CLICOLOR_FORCE", std::path::Path::new("1")),
            ("NO_COLOR", std::path::Path::new("1")),
        ],
    );
    assert!(!esc(&both));
}

/// A summary read without its per-request records passes as "summary only", in the text
/// report's first line and in the JSON report's `verdict_qualifier`: AIPerf's summary file alone,
/// and vLLM's result saved without its per-request lists (the fixture's, the lists taken out).
#[test]
fn a_summary_without_its_records_passes_as_summary_only() {
    let tmp = tempfile::tempdir().unwrap();
    let vllm = root().join("fixtures/imports/vllm/clean/openai-infqps-concurrency2-smollm2.json");
    let mut result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&vllm).unwrap()).unwrap();
    for k in [
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "latencies",
        "start_times",
        "queue_times",
        "generated_texts",
        "errors",
    ] {
        result.as_object_mut().unwrap().remove(k);
    }
    let summary = tmp.path().join("openai-infqps-concurrency2-smollm2.json");
    std::fs::write(&summary, result.to_string()).unwrap();
    let aiperf = root().join("fixtures/imports/aiperf/clean/profile_export_aiperf.json");
    let cases = [
        (
            summary,
            "summary only: 29 printed figures not recomputed (no per-request records given)",
        ),
        (
            aiperf,
            "summary only: 50 distributions not recomputed (no per-request records given)",
        ),
    ];
    for (file, says) in cases {
        let file = file.display().to_string();
        let text = rigaudit(&["verify", &file]);
        assert_eq!(text.code, 0, "{}", text.stderr);
        let first_two = text.stdout.lines().take(2).collect::<Vec<_>>().join(" ");
        let first_two = first_two.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_has(&first_two, &format!(": PASS, {says}"));
        let json = rigaudit(&["verify", &file, "--format", "json"]).json();
        assert_eq!(json["verdict"], "pass");
        assert_eq!(json["verdict_qualifier"], says, "{file}");
    }
    // The same vLLM result with its per-request lists is recomputed: a plain pass.
    let detailed = rigaudit(&["verify", vllm.to_str().unwrap(), "--format", "json"]).json();
    assert_eq!(detailed["verdict"], "pass");
    assert!(detailed.get("verdict_qualifier").is_none(), "{detailed:#}");
}
