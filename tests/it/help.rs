//! Every command's help: examples, an exit-code section, no source-file paths; the global
//! `--quiet`, `--verbose` and `--color` on every command; `checks ID` explains one check.

use crate::common;

use common::{assert_has, rigaudit};

const COMMANDS: &[&str] = &[
    "verify",
    "import",
    "audit",
    "diff",
    "ab",
    "noise",
    "replay",
    "measure",
    "rehash",
    "checks",
    "completions",
    "man",
    "schema",
];

#[test]
fn every_help_has_examples_exit_codes_the_global_flags_and_no_source_paths() {
    let mut heads = vec![vec!["--help"]];
    heads.extend(COMMANDS.iter().map(|c| vec![*c, "--help"]));
    for args in heads {
        let run = rigaudit(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        let help = run.stdout;
        for part in ["Examples:\n  rigaudit ", "Exit codes:\n  0  "] {
            assert!(help.contains(part), "{args:?} lacks {part:?}:\n{help}");
        }
        for flag in ["--quiet", "--verbose", "--color <WHEN>"] {
            assert!(help.contains(flag), "{args:?} lacks {flag}:\n{help}");
        }
        for source in ["src/", ".rs`", ".rs)", ".rs "] {
            assert!(!help.contains(source), "{args:?} cites {source}:\n{help}");
        }
    }
}

#[test]
fn checks_id_explains_one_check_and_an_unknown_id_names_the_nearest() {
    let run = rigaudit(&["checks", "quality.refused-counted-as-wrong"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let catalogue = rigaudit(&["checks", "--format", "json"]).json();
    let row = catalogue
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "quality.refused-counted-as-wrong")
        .unwrap();
    // The text is the row's, not a second list's.
    let one_line = run.stdout.replace("\n  ", " ");
    assert!(
        one_line.contains(row["doc"].as_str().unwrap()),
        "{}",
        run.stdout
    );
    for part in [
        "What it finds",
        "Why it matters",
        "How to fix it",
        "Example",
    ] {
        assert!(run.stdout.contains(part), "{}", run.stdout);
    }
    // Each check has its own fix and example, not its family's.
    let explain = |id: &str| rigaudit(&["checks", id, "--format", "json"]).json();
    let (refused, pct) = (
        explain("quality.refused-counted-as-wrong"),
        explain("quality.pct-mismatch"),
    );
    assert_ne!(refused["fix"], pct["fix"]);
    assert_ne!(refused["example"], pct["example"]);
    assert!(
        refused["fix"].as_str().unwrap().contains("refused"),
        "{refused:#}"
    );
    // A diff's setup difference is accepted with --setup-fails-on, never by a policy that lowers
    // it; a check a gate may re-grade shows the policy that does.
    let setup = rigaudit(&["checks", "diff.setup-differs"]);
    assert!(
        setup.stdout.contains("--setup-fails-on"),
        "{}",
        setup.stdout
    );
    assert!(!setup.stdout.contains("severity ="), "{}", setup.stdout);
    assert!(explain("diff.setup-differs")["policy"].is_null());
    assert!(run
        .stdout
        .contains("[checks.\"quality.refused-counted-as-wrong\"]"));
    let unknown = rigaudit(&["checks", "speed.cached-token"]);
    unknown.assert_exit_saying(2, "nearest: speed.cached-tokens");
    let html = rigaudit(&["checks", "--format", "html"]);
    html.assert_exit_saying(2, "text, json, sarif or markdown");
}

#[test]
fn quiet_drops_status_lines_but_not_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = common::root().join("fixtures/imports/aiperf/clean");
    let import = |quiet: bool, out: &str| {
        let out = tmp.path().join(out);
        let mut args = vec![
            "import",
            run_dir.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if quiet {
            args.push("--quiet");
        }
        rigaudit(&args)
    };
    let loud = import(false, "a");
    assert_has(&loud.stderr, "imported aiperf files");
    let quiet = import(true, "b");
    assert!(quiet.stderr.is_empty(), "{}", quiet.stderr);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let same = quiet
        .stdout
        .replace(b.to_str().unwrap(), a.to_str().unwrap());
    assert_eq!(same, loud.stdout);
}

#[test]
fn every_man_page_the_main_page_lists_is_generated_with_examples_and_exit_codes() {
    let main = rigaudit(&["man"]);
    assert_eq!(main.code, 0, "{}", main.stderr);
    // The SUBCOMMANDS section: one `rigaudit\-NAME(1)` line per command.
    let listed: Vec<String> = main
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("rigaudit\\-"))
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.to_string()))
        .collect();
    // clap's `help` is no command with a page: not listed, and `man help` is refused.
    assert!(!listed.contains(&"help".to_string()), "{listed:?}");
    assert_eq!(rigaudit(&["man", "help"]).code, 2);
    assert!(listed.len() >= 8, "{listed:?}");
    for name in listed {
        let page = rigaudit(&["man", &name]);
        assert_eq!(page.code, 0, "man {name}: {}", page.stderr);
        assert!(
            page.stdout.contains(&format!("rigaudit\\-{name} \\- ")),
            "{name}"
        );
        for part in ["Examples:", "Exit codes:", "\\-\\-quiet"] {
            assert!(page.stdout.contains(part), "man {name} lacks {part}");
        }
    }
    let unknown = rigaudit(&["man", "nope"]);
    unknown.assert_exit_saying(2, "one of verify, import");
}
