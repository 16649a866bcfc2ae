//! The report formats people and CI read: Markdown, JUnit XML (validated against
//! `tests/schemas/junit.xsd` with Python's `xmlschema`, which `scripts/test.sh` installs), the
//! in-toto attestation, and `--output` writing several from one run. Golden files in
//! `tests/golden/` hold each format of `verify` on two fixtures, with the parts that change from
//! run to run (time stamp, host name, rules version) normalised; `RIGAUDIT_BLESS=1` rewrites them
//! after a deliberate change.

use crate::common;

use common::assert_has;
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
    assert_has(&xml, " skipped=\"0\" ");
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
    assert_has(&xml, "<property name=\"verdict\" value=\"fail\"/>");
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
    // It passes with a warning: its test whose every request was refused has no result.
    assert_eq!(p["result"], "WARNED");
    assert_eq!(p["warnedTests"], serde_json::json!(["quality.no-result"]));
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
        md.starts_with("❌ **rigaudit verify <code>tensorfold-127-stock-2x</code>: FAIL**"),
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

/// Chromium's arguments for a headless run with a fresh profile and nothing fetched.
fn chromium_run(profile: &Path, window_height: u32, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--window-size=1200,{window_height}"))
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args);
    cmd.output().unwrap()
}

fn screenshot(html: &Path, png_path: &Path, height: u32) {
    let profile = tempfile::tempdir().unwrap();
    let out = chromium_run(
        profile.path(),
        height,
        &[
            &format!("--screenshot={}", png_path.display()),
            &format!("file://{}", html.display()),
        ],
    );
    assert!(
        png_path.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the test measures on the rendered page, written into its title by a script added to a
/// copy (the report itself has none): where the first finding, the table of figures and the
/// first chart are (px from the top), the page's height, and how many markers of the lines'
/// two sides are hidden under something else (a marker is visible where it, or a marker of its
/// side at the same point, is the topmost element at its own point: a dot at its centre, an open
/// square on its left edge).
const PROBE: &str = r#"<script>
const at = s => { const e = document.querySelector(s); return e ? Math.round(e.getBoundingClientRect().top + scrollY) : -1; };
const hidden = (sel, dx) => [...document.querySelectorAll(sel)].filter(m => {
  const b = m.getBoundingClientRect(); scrollTo(0, b.top + scrollY - 200);
  const r = m.getBoundingClientRect();
  const top = document.elementFromPoint(r.left + (dx ? 0.5 : r.width / 2), r.top + r.height / 2);
  return !(top && top.getAttribute('class') === m.getAttribute('class'));
}).length;
const probe = { finding: at('#findings tbody tr'), figures: at('table.figures'), chart: at('figure'),
  height: document.documentElement.scrollHeight,
  dots: document.querySelectorAll('svg.plot > .mark.side0').length, dots_hidden: hidden('svg.plot > .mark.side0', false),
  squares: document.querySelectorAll('svg.plot > .mark.side1').length, squares_hidden: hidden('svg.plot > .mark.side1', true),
  plots_drawn: [...document.querySelectorAll('svg.plot')].filter(s => s.getBoundingClientRect().height > 100).length };
document.title = JSON.stringify(probe);
</script>"#;

/// The page's Content-Security-Policy: loads nothing, runs no script.
const CSP_META: &str =
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ";

/// The page `html` rendered in Chromium with [`PROBE`]: what it measured. The probed copy drops
/// the page's Content-Security-Policy, which would block the probe as it blocks any script.
fn probe(html: &Path) -> Value {
    let mut text = std::fs::read_to_string(html).unwrap();
    let start = text.find(CSP_META).expect("the page has its CSP");
    let end = start + text[start..].find("/>").unwrap() + 2;
    text.replace_range(start..end, "");
    let probed = html.with_extension("probe.html");
    std::fs::write(&probed, text.replace("</body>", &format!("{PROBE}</body>"))).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = chromium_run(
        profile.path(),
        1400,
        &["--dump-dom", &format!("file://{}", probed.display())],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let title = dom
        .split_once("<title>")
        .and_then(|(_, rest)| rest.split_once("</title>"))
        .map(|(t, _)| t.replace("&amp;", "&"))
        .unwrap_or_default();
    serde_json::from_str(&title).unwrap_or_else(|e| {
        panic!(
            "no probe in the title ({e}): {title}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A report page rendered in Chromium: self-contained, the findings and the table of figures
/// above the first chart, every chart drawn, both sides' line markers visible; its screenshot
/// (the whole page) under the test's target folder, with both sides' bars on it.
fn check_in_browser(html: &Path, name: &str, plots: usize) -> Value {
    let text = std::fs::read_to_string(html).unwrap();
    // Self-contained: nothing to fetch at view time, no script.
    for needle in [
        "<script",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(http",
    ] {
        assert!(!text.contains(needle), "{name}: {needle}");
    }
    // Nothing loaded or run should anything get through; the screenshot below is of the page
    // with its policy, so the policy lets the page draw.
    assert!(text.contains(CSP_META), "{name}: no CSP");
    assert!(!text.contains("script-src"), "{name}");
    assert_eq!(text.matches("<svg class=\"plot\"").count(), plots, "{name}");
    let p = probe(html);
    let at = |k: &str| p[k].as_i64().unwrap();
    assert!(
        at("finding") > 0 && at("finding") < at("figures"),
        "{name}: {p}"
    );
    assert!(at("figures") < at("chart"), "{name}: {p}");
    assert_eq!(at("plots_drawn"), plots as i64, "{name}: {p}");
    assert!(at("dots") > 0 && at("dots") == at("squares"), "{name}: {p}");
    assert_eq!(at("dots_hidden") + at("squares_hidden"), 0, "{name}: {p}");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    let shot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    screenshot(html, &shot, (at("height") as u32).clamp(800, 16_000));
    // Both sides' bars are on the screen, in their colours.
    let (a, b) = (
        pixels_of(&shot, [0x4e, 0x79, 0xa7]),
        pixels_of(&shot, [0xb3, 0x59, 0x00]),
    );
    assert!(a > 2_000 && b > 2_000, "{name}: plot pixels: A {a}, B {b}");
    if let Ok(dir) = std::env::var("RIGAUDIT_SCREENSHOTS") {
        std::fs::copy(&shot, Path::new(&dir).join(format!("{name}.png"))).unwrap();
    }
    p
}

#[test]
fn the_html_report_is_self_contained_and_its_plots_are_drawn_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = [
        fixture("tensorfold-127-stock-2x"),
        fixture("mia-recipe-1104-2x"),
    ];
    let [tf, mia] = pages.each_ref().map(|p| p.to_str().unwrap());
    let stock = tmp.path().join("stock.html");
    let run = rigaudit(&["verify", tf, "--output", stock.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let diff = tmp.path().join("diff.html");
    let run = rigaudit(&["diff", tf, mia, "--output", diff.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    // Throughput, decode, prompt processing, time to first token, quality on both.
    check_in_browser(&stock, "stock", 5);
    check_in_browser(&diff, "diff", 5);
    let (stock, diff) = (
        std::fs::read_to_string(&stock).unwrap(),
        std::fs::read_to_string(&diff).unwrap(),
    );
    // No result is said in words; spread is drawn; a figure the page or file shows without a
    // result (the refused tests' 0 %) is marked, with the refusal in words under the chart.
    for page in [&stock, &diff] {
        assert!(page.contains("class=\"invalid\"") && page.contains(">no result</text>"));
        assert!(page.contains("class=\"err\""));
    }
    assert_eq!(stock.matches("<text class=\"differs\"").count(), 2);
    assert!(stock.contains("<li><code>livecodebench</code>: no result recomputed: livecodebench: the summary counts 40 refused requests"));
    // The diff marks its two changed figures, and lists each setup difference once.
    assert_eq!(diff.matches("<text class=\"differs\"").count(), 2);
    assert!(diff.contains("<li><code>gpqa-think</code>: refused on A: 30 of 30 requests"));
    assert_eq!(diff.matches("card engine.binary.path").count(), 1);
}

/// axe-core's `axe.min.js` at the version `scripts/a11y/package-lock.json` pins, fetched once
/// into the target's test folder by `scripts/fetch-axe.sh` (which `scripts/test.sh` runs first);
/// `None` (with the reason printed) when it cannot be fetched here.
fn axe() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("axe");
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/fetch-axe.sh"))
        .arg(&dir)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "SKIPPED: axe-core could not be fetched (npm, or the npm registry unreachable): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()))
}

/// `scripts/a11y.py` on `pages`: axe's violations and the width of each page at a 1280 px wide
/// viewport, by page; and its exit code.
fn a11y(axe: &Path, pages: &[PathBuf]) -> (i32, Value) {
    let out = std::process::Command::new("python3")
        .arg(root().join("scripts/a11y.py"))
        .arg("--axe")
        .arg(axe)
        .arg("--json")
        .args(pages)
        .output()
        .unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "a11y.py: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

/// The violations of `impacts` axe found on a page, as `impact rule: places`.
fn violations(result: &Value, impacts: &[&str]) -> Vec<String> {
    result["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| impacts.contains(&v["impact"].as_str().unwrap_or("")))
        .map(|v| format!("{} {}: {}", v["impact"], v["id"], v["nodes"]))
        .collect()
}

/// Every kind of HTML report (verify of both seed pages and of the recorded run, a diff of two
/// pages and one of two vLLM runs) in Chromium: axe-core's WCAG 2.x A/AA rules and best
/// practices find nothing serious or critical, and the page is no wider than a 1280 px screen
/// (the diff's setup table was 1,549 px). The check finds what it looks for: a copy with a
/// low-contrast colour and a wide cell fails it.
#[test]
fn the_html_reports_pass_axe_and_fit_a_1280_px_screen_in_a_real_browser() {
    chromium();
    let axe = or_skip!(axe());
    let tmp = tempfile::tempdir().unwrap();
    let [tf, mia] = ["tensorfold-127-stock-2x", "mia-recipe-1104-2x"].map(fixture);
    let runs = root().join("fixtures/runs/smollm2-cpu");
    let vllm = root().join("fixtures/imports/vllm");
    let (clean, failures) = (vllm.join("clean"), vllm.join("failures"));
    let s = |p: &PathBuf| p.to_str().unwrap().to_string();
    let reports = [
        ("verify-stock", vec!["verify".into(), s(&tf)]),
        ("verify-mia", vec!["verify".into(), s(&mia)]),
        ("verify-run", vec!["verify".into(), s(&runs)]),
        ("diff-pages", vec!["diff".into(), s(&tf), s(&mia)]),
        ("diff-vllm", vec!["diff".into(), s(&clean), s(&failures)]),
    ];
    let mut pages = Vec::new();
    for (name, mut args) in reports {
        let page = tmp.path().join(format!("{name}.html"));
        args.extend(["--output".into(), s(&page)]);
        let run = rigaudit(&args);
        assert!(page.exists(), "{name}: exit {}: {}", run.code, run.stderr);
        pages.push(page);
    }
    let (code, results) = a11y(&axe, &pages);
    for page in &pages {
        let r = &results[page.to_str().unwrap()];
        let bad = violations(r, &["serious", "critical"]);
        let width = r["scrollWidth"].as_i64().unwrap();
        eprintln!(
            "{}: axe {}: {} violations ({} serious or critical); scrollWidth {width} at 1280 px",
            page.file_name().unwrap().to_string_lossy(),
            r["axe"],
            r["violations"].as_array().unwrap().len(),
            bad.len()
        );
        assert!(bad.is_empty(), "{}: {bad:#?}", page.display());
        assert!(
            width <= 1280,
            "{}: {width} px wide: {}",
            page.display(),
            r["wide"]
        );
    }
    assert_eq!(code, 0, "{results}");
    // A copy of the stock page with its FAIL and errors in light red, and a cell that cannot wrap.
    let text = std::fs::read_to_string(&pages[0]).unwrap();
    let broken = tmp.path().join("broken.html");
    let wide = format!(
        "<p style=\"white-space:nowrap\">{}</p></main>",
        "x".repeat(400)
    );
    std::fs::write(
        &broken,
        text.replace("#b42318", "#ff8080").replace("</main>", &wide),
    )
    .unwrap();
    let (code, results) = a11y(&axe, std::slice::from_ref(&broken));
    let r = &results[broken.to_str().unwrap()];
    assert_eq!(code, 1, "{r}");
    assert!(
        violations(r, &["serious"])
            .iter()
            .any(|v| v.contains("color-contrast")),
        "{r}"
    );
    assert!(r["scrollWidth"].as_i64().unwrap() > 1280, "{r}");
}

/// The HTML page's findings come first, by severity, the errors in a callout; its table of
/// figures has every recomputed figure in numeric key order, differing rows marked by the rows'
/// own `matches`; a diff's has its change, better or worse, verdict and p.
#[test]
fn the_html_page_puts_findings_first_and_tables_every_figure() {
    let page = common::Copy::of("tensorfold-127-stock-2x");
    let p = page.path().to_str().unwrap();
    let html = rigaudit(&["verify", p, "--format", "html"]).stdout;
    let callout = html.find("<div class=\"callout\" role=\"alert\"").unwrap();
    let first_error = html
        .find("quality.refused-counted-as-wrong</code>")
        .unwrap();
    let warnings = html.find("<h3 id=\"warnings\">Warnings (2)</h3>").unwrap();
    let notes = html.find("<h3 id=\"notes\">Notes (14)</h3>").unwrap();
    let figures = html.find("<table class=\"figures\">").unwrap();
    let chart = html.find("<figure").unwrap();
    assert!(callout < first_error && first_error < warnings && warnings < notes);
    assert!(notes < figures && figures < chart);
    let json = rigaudit(&["verify", p, "--format", "json"]).json();
    let rows = json["recomputed"].as_array().unwrap();
    let table = &html[figures..chart];
    assert_eq!(table.matches("<tr class=").count(), rows.len());
    let differs = rows
        .iter()
        .filter(|r| r["matches"] == false && !r["value"].is_null());
    assert_eq!(
        table.matches("<tr class=\"differs\">").count(),
        differs.count()
    );
    let at = |k: &str| table.find(&format!("<code>{k}</code>")).unwrap();
    assert!(at("ctx_decode.16384") < at("ctx_decode.32768"));
    assert!(at("ctx_decode.65536") < at("ctx_decode.131072"));
    // A page figure edited away from its records is a differing row, marked.
    page.set("bundle.json", "/page/speed/decode", Value::from("31.0"));
    let html = rigaudit(&["verify", p, "--format", "html"]).stdout;
    let row = html
        .split("<tr class=\"differs\">")
        .nth(1)
        .unwrap_or_default();
    assert!(
        row.starts_with("<th scope=\"row\"><code>decode</code></th><td>31.0</td><td>28.0</td>"),
        "{row:.200}"
    );
    // The diff's table: a row per figure with change, better/worse, verdict and p.
    let mia = fixture("mia-recipe-1104-2x");
    let diff = rigaudit(&["diff", p, mia.to_str().unwrap(), "--format", "html"]).stdout;
    assert!(diff.contains("<th scope=\"col\">better / worse</th><th scope=\"col\">verdict</th><th scope=\"col\">p</th>"));
    assert!(
        diff.contains(
            "<td>1.107</td><td>-37.8 %</td><td class=\"mark\">✓ better</td><td>changed</td><td>0.0007</td>"
        ),
        "the TTFT row"
    );
}

/// Checks HTML pages as XML (the page is written well-formed, so a strict parser reads it) and
/// for what a screen reader needs: one `h1` and no heading level skipped, a header cell in every
/// table, every chart an image with a name and a title, ids once, every `#link` to an id there.
const HTML_CHECK: &str = r#"
import sys, xml.etree.ElementTree as ET
SVG = '{http://www.w3.org/2000/svg}'
problems = []
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    say = lambda m: problems.append(path + ': ' + m)
    if root.tag != 'html' or root.get('lang') != 'en':
        say('no <html lang="en">')
    heads = [int(e.tag[1]) for e in root.iter() if e.tag in ('h1', 'h2', 'h3', 'h4', 'h5', 'h6')]
    if heads[:1] != [1] or heads.count(1) != 1:
        say('not one h1 first: %s' % heads)
    for a, b in zip(heads, heads[1:]):
        if b > a + 1:
            say('h%d then h%d' % (a, b))
    for t in root.iter('table'):
        if t.find('.//th') is None:
            say('a table without a header cell')
    for s in root.iter(SVG + 'svg'):
        if s.get('aria-hidden') == 'true':
            continue
        if s.get('role') != 'img' or not s.get('aria-label') or s.find(SVG + 'title') is None:
            say('a chart without role, name or title')
    ids = [e.get('id') for e in root.iter() if e.get('id')]
    for i in set(ids):
        if ids.count(i) > 1:
            say('id %s %d times' % (i, ids.count(i)))
    for e in root.iter('a'):
        h = e.get('href', '')
        if h.startswith('#') and h[1:] not in ids:
            say('a link to no id: ' + h)
print('\n'.join(problems))
sys.exit(1 if problems else 0)
"#;

fn validate_html(paths: &[&Path]) {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(HTML_CHECK)
        .args(paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_html_pages_are_well_formed_and_accessible() {
    let tmp = tempfile::tempdir().unwrap();
    let tf = fixture("tensorfold-127-stock-2x");
    let mia = fixture("mia-recipe-1104-2x");
    let runs = root().join("fixtures/runs/smollm2-cpu");
    let aiperf = root().join("fixtures/imports/aiperf/failures");
    let pages = [
        ("stock", vec!["verify", tf.to_str().unwrap()]),
        ("passing", vec!["verify", runs.to_str().unwrap()]),
        ("aiperf", vec!["verify", aiperf.to_str().unwrap()]),
        (
            "diff",
            vec!["diff", tf.to_str().unwrap(), mia.to_str().unwrap()],
        ),
    ];
    let mut paths = Vec::new();
    for (name, mut args) in pages {
        let path = tmp.path().join(format!("{name}.html"));
        args.extend(["--output", path.to_str().unwrap()]);
        let run = rigaudit(&args);
        assert!(run.code == 0 || run.code == 1, "{name}: {}", run.stderr);
        paths.push(path);
    }
    validate_html(&paths.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    // The check finds what it looks for: a page with a skipped heading level and a chart with
    // no name fails it.
    let text = std::fs::read_to_string(&paths[0]).unwrap();
    let broken = tmp.path().join("broken.html");
    let skipped = text.replacen("<h2>Findings</h2>", "<h4>Findings</h4>", 1);
    std::fs::write(&broken, skipped.replacen(" role=\"img\"", "", 1)).unwrap();
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(HTML_CHECK)
        .arg(&broken)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("h1 then h4") && said.contains("a chart without role"),
        "{said}"
    );
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
    let errors = common::checks_at(&before.json(), "error");
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
    assert_has(
        first,
        "PASS, self-consistent only: 43 of 43 files reconstructed",
    );
    let stock = fixture("tensorfold-127-stock-2x");
    let md = rigaudit(&["verify", stock.to_str().unwrap(), "--format", "markdown"]).stdout;
    let before_table = &md[..md.find("### Findings").unwrap()];
    assert_has(
        before_table,
        "2 tests count 70 refused requests as wrong answers",
    );
    assert_has(
        before_table,
        "<code>rigaudit checks quality.refused-counted-as-wrong</code>",
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

/// A run of rigaudit in one format, its standard output.
fn report_in(format: &str, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--format", format]);
    rigaudit(&all).stdout
}

#[test]
fn sarif_junit_and_annotations_carry_the_qualified_verdict_and_why_a_run_is_incomplete() {
    let v = sarif_validator();
    // A pass on a page rebuilt from itself: what it covers, in the run's properties.
    let page = fixture("mia-recipe-1104-2x");
    let pass = ["verify", page.to_str().unwrap()];
    let covers = "PASS, self-consistent only: 43 of 43 files reconstructed";
    let log: Value = serde_json::from_str(&report_in("sarif", &pass)).unwrap();
    valid_sarif(&v, &log);
    let run0 = &log["runs"][0];
    assert_eq!(run0["properties"]["verdict"], "pass");
    assert_eq!(run0["properties"]["qualified_verdict"], covers);
    assert!(run0["properties"]["next_step"].is_string(), "{run0:#}");
    assert_eq!(run0["invocations"][0]["executionSuccessful"], true);
    assert_eq!(run0["invocations"][0]["exitCode"], 0);
    assert!(run0["invocations"][0]["toolExecutionNotifications"].is_null());
    let junit = report_in("junit", &pass);
    assert_has(
        &junit,
        &format!("name=\"qualified_verdict\" value=\"{covers}\""),
    );
    let github = report_in("github", &pass);
    assert!(github.lines().last().unwrap().contains(covers), "{github}");
    // An incomplete rehash: not successful, with a notification saying what to give it.
    let empty = tempfile::tempdir().unwrap();
    let tf = fixture("tensorfold-127-stock-2x");
    let rehash = [
        "rehash",
        tf.to_str().unwrap(),
        "--root",
        empty.path().to_str().unwrap(),
    ];
    let log: Value = serde_json::from_str(&report_in("sarif", &rehash)).unwrap();
    valid_sarif(&v, &log);
    let run0 = &log["runs"][0];
    let why = run0["properties"]["incomplete"].as_str().unwrap();
    assert!(why.starts_with("none of the artifacts"), "{why}");
    assert_has(why, "give --root DIR or --file NAME=PATH");
    let inv = &run0["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(inv["exitCode"], 3);
    let note = &inv["toolExecutionNotifications"][0];
    assert_eq!(note["level"], "error");
    assert_eq!(note["message"]["text"], format!("incomplete: {why}"));
    let junit = report_in("junit", &rehash);
    assert_has(
        &junit,
        "name=\"qualified_verdict\" value=\"INCOMPLETE: none of the artifacts",
    );
    let github = report_in("github", &rehash);
    let last = github.lines().last().unwrap();
    assert_has(last, ": INCOMPLETE: none of the artifacts");
}
