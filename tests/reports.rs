//! The report formats people and CI read: Markdown, JUnit XML (validated against
//! `tests/schemas/junit.xsd` with Python's `xmlschema`, which `scripts/test.sh` installs), the
//! in-toto attestation, and `--output` writing several from one run. Golden files in
//! `tests/golden/` hold each format of `verify` on two fixtures, with the parts that change from
//! run to run (time stamp, host name, rules version) normalised; `RIGAUDIT_BLESS=1` rewrites them
//! after a deliberate change.

mod common;

use common::{fixture, rigaudit, root};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn verify_to(bundle: &Path, outs: &[&str]) -> common::Run {
    // The repository root named, so SARIF's paths do not depend on where .git is.
    let repo = root();
    let mut args = vec!["verify", bundle.to_str().unwrap(), "--format", "json"];
    args.extend(["--repo-root", repo.to_str().unwrap()]);
    for o in outs {
        args.push("--output");
        args.push(o);
    }
    rigaudit(&args)
}

fn normalise(text: &str) -> String {
    let rules = rigaudit(&[
        "verify",
        root().join("fixtures/runs/smollm2-cpu").to_str().unwrap(),
        "--format",
        "json",
    ])
    .json()["rules_version"]
        .as_str()
        .unwrap()
        .to_string();
    let root_uri = format!("file://{}/", root().display());
    let mut out = text
        .replace(&rules, "RULES")
        .replace(&root_uri, "file:///ROOT/");
    for (attr, placeholder) in [("timestamp=\"", "TIME"), ("hostname=\"", "HOST")] {
        if let Some(i) = out.find(attr) {
            let start = i + attr.len();
            let end = start + out[start..].find('"').unwrap();
            out.replace_range(start..end, placeholder);
        }
    }
    out
}

fn golden(name: &str, got: &str) {
    let path = root().join("tests/golden").join(name);
    let got = normalise(got);
    if std::env::var_os("RIGAUDIT_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (RIGAUDIT_BLESS=1 writes it)", path.display()));
    if want != got {
        let line = want
            .lines()
            .zip(got.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(got.lines().count()));
        panic!(
            "{name} differs from its golden file at line {}:\n want: {:?}\n  got: {:?}",
            line + 1,
            want.lines().nth(line),
            got.lines().nth(line)
        );
    }
}

fn outputs(tmp: &Path, bundle: &Path) -> (common::Run, PathBuf) {
    let dir = tmp.to_path_buf();
    let run = verify_to(
        bundle,
        &[
            dir.join("r.md").to_str().unwrap(),
            dir.join("r.xml").to_str().unwrap(),
            dir.join("r.intoto.json").to_str().unwrap(),
            &format!("sarif:{}", dir.join("r.out").display()),
            dir.join("r.txt").to_str().unwrap(),
            dir.join("r.json").to_str().unwrap(),
            dir.join("r.html").to_str().unwrap(),
            &format!("github:{}", dir.join("r.gh").display()),
        ],
    );
    (run, dir)
}

fn validate_junit(path: &Path) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xmlschema; xmlschema.XMLSchema(sys.argv[1]).validate(sys.argv[2]); print('valid')",
            root().join("tests/schemas/junit.xsd").to_str().unwrap(),
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} is not valid JUnit: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn count(xml: &str, needle: &str) -> usize {
    xml.matches(needle).count()
}

#[test]
fn every_format_of_a_passing_and_a_failing_page_matches_its_golden_file() {
    for (name, bundle) in [
        ("smollm2-cpu", root().join("fixtures/runs/smollm2-cpu")),
        ("tensorfold", fixture("tensorfold-127-stock-2x")),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (run, dir) = outputs(tmp.path(), &bundle);
        assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
        for (file, ext) in [
            ("r.md", "md"),
            ("r.xml", "xml"),
            ("r.intoto.json", "intoto.json"),
            ("r.txt", "txt"),
            ("r.json", "json"),
            ("r.out", "sarif.json"),
            ("r.html", "html"),
            ("r.gh", "github.txt"),
        ] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            golden(&format!("{name}.{ext}"), &text);
        }
        let sarif: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("r.out")).unwrap()).unwrap();
        assert_eq!(sarif["version"], "2.1.0");
    }
}

/// The SARIF 2.1.0 schema of OASIS, kept in `schemas/external/`.
fn sarif_validator() -> jsonschema::Validator {
    let path = root().join("schemas/external/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// The SARIF log is valid, and the schema can refuse: a result with a level SARIF does not have,
/// a region whose line is 0.
fn valid_sarif(v: &jsonschema::Validator, log: &Value) {
    let errors: Vec<String> = v.iter_errors(log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut bad = log.clone();
    bad["runs"][0]["results"] =
        serde_json::json!([{"ruleId": "x", "level": "fatal", "message": {"text": "m"}}]);
    assert!(!v.is_valid(&bad));
    let mut bad = log.clone();
    bad["runs"][0]["results"] = serde_json::json!([{"ruleId": "x", "message": {"text": "m"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a"}, "region": {"startLine": 0}}}]}]);
    assert!(!v.is_valid(&bad));
}

/// The results' files, from the repository root, with their lines.
fn sarif_places(log: &Value) -> Vec<(String, String, Option<u64>)> {
    let results = log["runs"][0]["results"].as_array().unwrap();
    results
        .iter()
        .filter_map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            let uri = loc["artifactLocation"]["uri"].as_str()?;
            assert_eq!(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
            let check = r["ruleId"].as_str().unwrap().to_string();
            Some((check, uri.to_string(), loc["region"]["startLine"].as_u64()))
        })
        .collect()
}

#[test]
fn sarif_of_both_seed_pages_is_schema_valid_and_links_to_lines_in_the_repository() {
    let v = sarif_validator();
    valid_sarif(&v, &rigaudit(&["checks", "--format", "sarif"]).json());
    for bundle in [
        root().join("fixtures/runs/smollm2-cpu"),
        fixture("tensorfold-127-stock-2x"),
    ] {
        // The root named: a checkout without .git (an exported tree) gives the same paths; the
        // walk up to .git has its unit test in src/output/place.rs.
        let root_dir = root();
        let run = sarif_from_root(&bundle, &root_dir);
        let log = run.json();
        valid_sarif(&v, &log);
        let run0 = &log["runs"][0];
        let uri = run0["originalUriBaseIds"]["SRCROOT"]["uri"]
            .as_str()
            .unwrap();
        assert_eq!(uri, format!("file://{}/", root().display()));
        let rule = &run0["tool"]["driver"]["rules"][0];
        assert!(rule["fullDescription"]["text"].as_str().unwrap().len() > 10);
        assert!(rule["help"]["text"].is_string());
        let places = sarif_places(&log);
        assert_eq!(
            places.len(),
            log["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["locations"].is_array())
                .count()
        );
        for (check, uri, line) in &places {
            let path = root().join(uri);
            // A file the manifest lists but the page did not publish is named where it would be.
            match check.as_str() {
                "schema.file-missing" => assert!(!path.exists(), "{uri}"),
                "claims.unpublished" => {}
                _ => assert!(path.is_file(), "{check}: {uri}"),
            }
            if let Some(line) = line {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
                assert!(*line >= 1 && *line <= lines, "{uri}:{line} of {lines}");
            }
        }
    }
    // The failing page's regions are the lines of the values its findings name.
    let log = rigaudit(&[
        "verify",
        fixture("tensorfold-127-stock-2x").to_str().unwrap(),
        "--format",
        "sarif",
        "--repo-root",
        root().to_str().unwrap(),
    ])
    .json();
    let places = sarif_places(&log);
    let (_, uri, line) = places
        .iter()
        .find(|(c, u, _)| c == "quality.no-result-has-value" && u.contains("livecodebench"))
        .unwrap();
    let text = std::fs::read_to_string(root().join(uri)).unwrap();
    let at = text.lines().nth(line.unwrap() as usize - 1).unwrap();
    assert!(at.trim_start().starts_with("\"pct\""), "{at}");
}

/// `rigaudit verify BUNDLE --format sarif --repo-root ROOT`.
fn sarif_from_root(bundle: &Path, repo_root: &Path) -> common::Run {
    let (bundle, repo_root) = (bundle.to_str().unwrap(), repo_root.to_str().unwrap());
    common::rigaudit_line(
        "verify {} --format sarif --repo-root {}",
        &[bundle, repo_root],
    )
}

#[test]
fn repo_root_and_a_bundle_outside_any_repository_set_the_sarif_paths() {
    let page = fixture("tensorfold-127-stock-2x");
    let pages = root().join("fixtures/pages");
    let run = sarif_from_root(&page, &pages);
    let places = sarif_places(&run.json());
    assert!(
        places
            .iter()
            .all(|(_, u, _)| u.starts_with("tensorfold-127-stock-2x/")),
        "{places:?}"
    );
    // A copy where no .git is above: paths stay the bundle's own, based at BUNDLE.
    let tmp = tempfile::tempdir().unwrap();
    if tmp.path().ancestors().any(|d| d.join(".git").exists()) {
        return;
    }
    let copy = tmp.path().join("page");
    common::copy_dir(&page, &copy);
    let log = rigaudit(&["verify", copy.to_str().unwrap(), "--format", "sarif"]).json();
    valid_sarif(&sarif_validator(), &log);
    let run0 = &log["runs"][0];
    assert!(run0["originalUriBaseIds"]["BUNDLE"].is_object());
    let first = &run0["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(first["uriBaseId"], "BUNDLE");
    assert!(copy
        .join(first["uri"].as_str().unwrap())
        .parent()
        .unwrap()
        .is_dir());
}

#[test]
fn the_checks_page_is_the_catalogue_as_markdown() {
    let run = rigaudit(&["checks", "--format", "markdown"]);
    assert_eq!(run.code, 0);
    let path = root().join("docs/checks.md");
    if std::env::var_os("RIGAUDIT_BLESS").is_some() {
        std::fs::write(&path, &run.stdout).unwrap();
    }
    let page = std::fs::read_to_string(&path).unwrap();
    assert!(
        page == run.stdout,
        "docs/checks.md is not `rigaudit checks --format markdown` (RIGAUDIT_BLESS=1 rewrites it)"
    );
    let checks = rigaudit(&["checks", "--format", "json"]).json();
    for c in checks.as_array().unwrap() {
        assert!(
            page.contains(&format!("\n### `{}`\n", c["id"].as_str().unwrap())),
            "{c}"
        );
    }
}

#[test]
fn junit_is_valid_and_counts_failures_and_skips_as_the_report_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, dir) = outputs(tmp.path(), &fixture("tensorfold-127-stock-2x"));
    assert_eq!(run.code, 1);
    let report = run.json();
    let xml_path = dir.join("r.xml");
    validate_junit(&xml_path);
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    // One failure per check with an error finding (the fail level is error).
    let mut failing: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    failing.sort();
    failing.dedup();
    assert!(!failing.is_empty());
    assert_eq!(count(&xml, "<failure "), failing.len(), "{xml}");
    for id in &failing {
        assert!(
            xml.contains(&format!("name=\"{id}\" time=\"0\">\n      <failure ")),
            "{id}"
        );
    }
    // Every check that ran is a test case; the others are named in a property, not skipped.
    let all = common::catalogue_ids();
    let mut cases: Vec<&str> = report["checks_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    cases.extend(&failing);
    cases.sort();
    cases.dedup();
    assert_eq!(count(&xml, "<testcase "), cases.len());
    assert_eq!(count(&xml, "<skipped"), 0, "{xml}");
    assert!(xml.contains(" skipped=\"0\" "), "{xml}");
    let not_run: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .filter(|id| !cases.contains(id))
        .collect();
    assert!(!not_run.is_empty());
    let property = format!(
        "<property name=\"not_applicable\" value=\"{}\"/>",
        not_run.join(" ")
    );
    assert!(xml.contains(&property), "{property}");
    assert!(
        xml.contains("<property name=\"verdict\" value=\"fail\"/>"),
        "{xml}"
    );
    // A passing page: valid, no failure.
    let tmp = tempfile::tempdir().unwrap();
    let (run, dir) = outputs(tmp.path(), &root().join("fixtures/runs/smollm2-cpu"));
    assert_eq!(run.code, 0);
    validate_junit(&dir.join("r.xml"));
    assert_eq!(
        count(
            &std::fs::read_to_string(dir.join("r.xml")).unwrap(),
            "<failure "
        ),
        0
    );
}

/// Validates a statement against tests/schemas/intoto-test-result.schema.json (the Statement v1
/// and test-result v0.1 shapes, written from the in-toto framework's spec text), and checks that
/// the schema can fail: a statement with a malformed subject digest or an unknown result is
/// refused.
fn valid_intoto(st: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/schemas/intoto-test-result.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(st).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let mut bad = st.clone();
    bad["predicate"]["result"] = Value::from("OK");
    assert!(!v.is_valid(&bad));
    let mut bad = st.clone();
    bad["subject"] = serde_json::json!([{"name": "x", "digest": {"sha256": "ABC"}}]);
    assert!(!v.is_valid(&bad));
}

#[test]
fn the_attestation_is_an_in_toto_statement_of_the_verified_files() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = root().join("fixtures/runs/smollm2-cpu");
    let (run, dir) = outputs(tmp.path(), &bundle);
    assert_eq!(run.code, 0);
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.intoto.json")).unwrap()).unwrap();
    valid_intoto(&st);
    assert_eq!(st["_type"], "https://in-toto.io/Statement/v1");
    assert_eq!(
        st["predicateType"],
        "https://in-toto.io/attestation/test-result/v0.1"
    );
    let p = &st["predicate"];
    assert_eq!(p["result"], "PASSED");
    for k in ["passedTests", "warnedTests", "failedTests"] {
        assert!(p[k].is_array(), "{k}");
    }
    assert!(p["configuration"][0]["name"]
        .as_str()
        .unwrap()
        .contains("rules"));
    // The subject: every raw file of the manifest with a digest, and its real sha256.
    let subject = st["subject"].as_array().unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("bundle.json")).unwrap())
            .unwrap();
    assert_eq!(subject.len(), manifest["files"].as_array().unwrap().len());
    for s in subject {
        let name = s["name"].as_str().unwrap();
        let d = Sha256::digest(std::fs::read(bundle.join(name)).unwrap());
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(s["digest"]["sha256"], hex, "{name}");
    }
    // A failing page is FAILED, naming its failed checks.
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = outputs(tmp.path(), &fixture("tensorfold-127-stock-2x"));
    let st: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.intoto.json")).unwrap()).unwrap();
    valid_intoto(&st);
    assert_eq!(st["predicate"]["result"], "FAILED");
    assert!(st["predicate"]["failedTests"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "quality.refused-counted-as-wrong"));
}

#[test]
fn markdown_escapes_table_cells_and_an_unknown_output_name_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = outputs(tmp.path(), &fixture("tensorfold-127-stock-2x"));
    let md = std::fs::read_to_string(dir.join("r.md")).unwrap();
    assert!(
        md.starts_with("❌ **rigaudit verify `tensorfold-127-stock-2x`: FAIL**"),
        "{md}"
    );
    assert!(md.contains("| severity | check | where | message |"));
    for line in md.lines().filter(|l| l.starts_with("| error")) {
        // Four columns, five unescaped pipes: a pipe inside a message would add one.
        let pipes = line
            .char_indices()
            .filter(|(i, c)| *c == '|' && (*i == 0 || line.as_bytes()[i - 1] != b'\\'))
            .count();
        assert_eq!(pipes, 5, "{line}");
    }
    let run = verify_to(
        &fixture("tensorfold-127-stock-2x"),
        &[tmp.path().join("report.weird").to_str().unwrap()],
    );
    assert_eq!(run.code, 2);
    run.assert_stderr_has("cannot tell the format");
}

/// The browser the HTML test renders with: Debian's Chromium (`scripts/test.sh` installs it).
fn chromium() -> PathBuf {
    for p in [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("no Chromium: scripts/test.sh installs Debian's chromium package");
}

/// Pixels of a PNG screenshot close to an RGB colour.
fn pixels_of(png_path: &Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(step)
        .filter(|p| p.len() >= 3 && (0..3).all(|i| p[i].abs_diff(rgb[i]) <= 6))
        .count()
}

fn screenshot(html: &Path, png_path: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1200,1400",
            &format!("--user-data-dir={}", profile.path().display()),
            &format!("--screenshot={}", png_path.display()),
            &format!("file://{}", html.display()),
        ])
        .output()
        .unwrap();
    assert!(
        png_path.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_html_report_is_self_contained_and_its_plots_are_drawn_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("diff.html");
    let pages = [
        fixture("tensorfold-127-stock-2x"),
        fixture("mia-recipe-1104-2x"),
    ];
    let [tf, mia] = pages.each_ref().map(|p| p.to_str().unwrap());
    let run = rigaudit(&["diff", tf, mia, "--output", html.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let text = std::fs::read_to_string(&html).unwrap();
    // Self-contained: nothing to fetch at view time.
    for needle in [
        "<script",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(http",
    ] {
        assert!(!text.contains(needle), "{needle}");
    }
    assert_eq!(
        text.matches("<svg class=\"plot\"").count(),
        4,
        "throughput, decode, prompt processing, quality"
    );
    // Invalid steps are marked, quality bars carry margins.
    assert!(text.contains("class=\"invalid\""));
    assert!(text.contains("class=\"err\""));
    let shot = tmp.path().join("diff.png");
    screenshot(&html, &shot);
    // Both sides' bars are on the screen, in their colours.
    let (a, b) = (
        pixels_of(&shot, [0x4e, 0x79, 0xa7]),
        pixels_of(&shot, [0xf2, 0x8e, 0x2b]),
    );
    assert!(a > 2_000 && b > 2_000, "plot pixels: A {a}, B {b}");
    if let Ok(dir) = std::env::var("RIGAUDIT_SCREENSHOTS") {
        std::fs::copy(&shot, Path::new(&dir).join("diff.png")).unwrap();
    }
}

/// A gate policy that ignores each check of `ids` with a reason and raises cut-off notes to
/// warnings.
fn reweighing(ids: &[String]) -> String {
    let mut toml = String::new();
    for id in ids {
        toml.push_str(&format!(
            "[checks.\"{id}\"]\nseverity = \"ignore\"\nreason = \"known on this page: {id}\"\n"
        ));
    }
    toml.push_str(
        "[checks.\"quality.cutoffs\"]\nseverity = \"warning\"\nreason = \"cut-offs matter here\"\n",
    );
    toml
}

/// `rigaudit verify PAGE --policy POLICY ARGS` with the policy file holding `toml`.
fn verify_under(page: &Path, policy: &Path, toml: &str, args: &[&str]) -> common::Run {
    std::fs::write(policy, toml).unwrap();
    let (page, policy) = (page.to_str().unwrap(), policy.to_str().unwrap());
    let mut all = vec!["verify", page, "--policy", policy];
    all.extend_from_slice(args);
    rigaudit(&all)
}

#[test]
fn a_policy_reweighs_checks_with_reasons_the_report_repeats() {
    let tmp = tempfile::tempdir().unwrap();
    let page = fixture("tensorfold-127-stock-2x");
    let before = rigaudit(&["verify", page.to_str().unwrap(), "--format", "json"]);
    assert_eq!(before.code, 1);
    let errors: Vec<String> = before.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["check"].as_str().unwrap().to_string())
        .collect();
    // Ignore every check that found an error, with a reason; raise a note to a warning.
    let mut ids = errors.clone();
    ids.sort();
    ids.dedup();
    let toml = reweighing(&ids);
    let policy = tmp.path().join("gate.toml");
    let run = verify_under(&page, &policy, &toml, &["--format", "json"]);
    let r = run.json();
    assert_eq!(r["counts"]["error"], 0, "{}", run.stdout);
    let ignored = r["policy"]["ignored"].as_array().unwrap();
    assert_eq!(ignored.len(), ids.len());
    let count = |i: &Value| i["findings"].as_u64().unwrap() as usize;
    assert_eq!(ignored.iter().map(count).sum::<usize>(), errors.len());
    let reason = ignored[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("known on this page"));
    let cutoffs = run.findings("quality.cutoffs");
    assert!(cutoffs.iter().all(|f| f["severity"] == "warning"));
    // The raised cut-off notes now fail at a warning fail level set by the policy.
    let run = verify_under(
        &page,
        &policy,
        &format!("fail_on = \"warning\"\n{toml}"),
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    let run = verify_under(&page, &policy, &format!("fail_on = \"never\"\n{toml}"), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    // A check the catalogue does not have is a usage error, not a silent pass.
    let made_up = "[checks.\"speed.made-up\"]\nseverity = \"ignore\"\nreason = \"x\"\n";
    let run = verify_under(&page, &policy, made_up, &[]);
    assert_eq!(run.code, 2);
    run.assert_stderr_has("speed.made-up");
}

/// Markdown leads as the text report does: a pass that rests on reconstructed files says so on
/// its verdict line, and a failing page's headline (the 70 refused requests) and what to do come
/// before the findings table.
#[test]
fn markdown_and_html_lead_with_the_verdicts_coverage_and_the_headline() {
    let mia = fixture("mia-recipe-1104-2x");
    let md = rigaudit(&["verify", mia.to_str().unwrap(), "--format", "markdown"]).stdout;
    let first = md.lines().next().unwrap();
    assert!(
        first.contains("PASS, self-consistent only: 43 of 43 files reconstructed"),
        "{first}"
    );
    let stock = fixture("tensorfold-127-stock-2x");
    let md = rigaudit(&["verify", stock.to_str().unwrap(), "--format", "markdown"]).stdout;
    let before_table = &md[..md.find("### Findings").unwrap()];
    assert!(
        before_table.contains("2 tests count 70 refused requests as wrong answers"),
        "{before_table}"
    );
    assert!(
        before_table.contains("`rigaudit checks quality.refused-counted-as-wrong`"),
        "{before_table}"
    );
    // The HTML page leads the same way, before its plots and tables.
    let html = rigaudit(&["verify", mia.to_str().unwrap(), "--format", "html"]).stdout;
    assert!(
        html.contains("PASS, self-consistent only: 43 of 43 files reconstructed ("),
        "the HTML verdict"
    );
    let html = rigaudit(&["verify", stock.to_str().unwrap(), "--format", "html"]).stdout;
    let lead = html.find("<ul class=\"why\"><li>quality: 2 tests count 70 refused");
    let first_figure = html.find("<figure").unwrap_or(html.len());
    assert!(
        lead.is_some_and(|at| at < first_figure),
        "the HTML headline"
    );
}
