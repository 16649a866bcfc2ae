//! Attacks on outputs (see attack.rs for what each asserts): page text with every payload in the
//! places it reaches a report (a file name the manifest lists, a quality test on the page, a
//! figure's key, a card field, a refusal's text in a record or an answers file, a setup value a
//! diff shows, another tool's error text and file name, a run's folder name in a tree). Each run
//! writes every report format; beyond the harness's checks (no raw control, raw HTML, Markdown
//! image or foreign workflow command in any output, nothing written outside `out/`), each attack
//! asserts the payload did reach the reports (the JSON report holds it, unchanged), that every
//! Markdown table keeps its columns, that SARIF's `uri`s are percent-encoded and never climb,
//! that the JUnit and HTML reports parse as XML, and that the HTML page has its
//! Content-Security-Policy.

use super::attack::{
    all_payloads, files_under, Attack, Outcome, Scratch, Surface, CONTROLS, HTML_BEACON,
    HTML_COMMENT, HTML_SCRIPT, MD_IMAGE, WORKFLOW_COMMAND,
};
use super::common::{copy_dir, root, sha_file};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGE: &str = "fixtures/pages/tensorfold-127-stock-2x";
const RUN: &str = "fixtures/runs/smollm2-cpu";
const VLLM: &str = "fixtures/imports/vllm/failures/openai-infqps-concurrency2-smollm2.json";

/// Every payload with neither `/` nor `:`, so it can be one file name a manifest may list (a
/// manifest path with `:` is refused as absolute): HTML, a Markdown image, a pipe after a
/// backslash, an unclosed comment, a line break, terminal controls and a bidirectional override.
fn name_payload() -> String {
    "<img src=x onerror=alert(1)><script>alert(1)</script>![x](y) \u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}evil\n;;set-env a\\|b <!-- the rest is hidden"
        .replace('/', "\u{2215}")
}

/// A copy of a fixture at `scratch/b`, and `scratch/out` for the reports.
fn page(s: &Scratch, fixture: &str) -> PathBuf {
    let b = s.path().join("b");
    copy_dir(&root().join(fixture), &b);
    std::fs::create_dir_all(s.out()).unwrap();
    b
}

/// Edits the JSON file `rel` of bundle `b` and records every file's digest again.
fn edit(b: &Path, rel: &str, f: impl FnOnce(&mut Value)) {
    let p = b.join(rel);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    rehash(b);
}

/// Edits line `n` (0-based) of the JSON Lines file `rel` of bundle `b`, digests recorded again.
fn edit_line(b: &Path, rel: &str, n: usize, f: impl FnOnce(&mut Value)) {
    let p = b.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut v: Value = serde_json::from_str(&lines[n]).unwrap();
    f(&mut v);
    lines[n] = v.to_string();
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    rehash(b);
}

fn rehash(b: &Path) {
    let p = b.join("bundle.json");
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for f in m["files"].as_array_mut().unwrap() {
        let file = b.join(f["path"].as_str().unwrap());
        if f["sha256"].is_string() && file.is_file() {
            f["sha256"] = json!(sha_file(&file));
        }
    }
    std::fs::write(&p, serde_json::to_string_pretty(&m).unwrap()).unwrap();
}

/// Lists `path` (missing: it is only named) in bundle `b`'s manifest as a log.
fn list_missing(b: &Path, path: &str) {
    edit(b, "bundle.json", |m| {
        m["files"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kind": "log", "path": path,
            "sha256": null, "published": true, "reconstructed": false}));
    });
}

/// `COMMAND ARGS` with stdout in `format` and every report format written under `out/`.
fn with_reports(command: &[&str], format: &str) -> Vec<String> {
    let mut args: Vec<String> = command.iter().map(|a| a.to_string()).collect();
    args.extend(["--format".into(), format.into()]);
    for o in [
        "out/r.md",
        "out/r.html",
        "out/r.xml",
        "sarif:out/r.sarif",
        "out/r.json",
        "out/r.txt",
        "out/r.intoto.json",
    ] {
        args.extend(["--output".into(), o.into()]);
    }
    args
}

/// `rigaudit verify BUNDLE` with stdout in `format` and every report under `out/`.
fn verify<'a>(s: &'a Scratch, b: &Path, format: &str) -> Outcome<'a> {
    let args = with_reports(&["verify", b.to_str().unwrap()], format);
    Attack::new(s, &args).run()
}

fn read(s: &Scratch, name: &str) -> String {
    std::fs::read_to_string(s.out().join(name)).unwrap()
}

/// Every string in a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The reports under `out/` hold: the JSON report carries `reached` unchanged in one of its
/// strings (the payload got to the renderers); every Markdown table keeps its columns; SARIF's
/// uris are safe; JUnit and HTML parse as XML; the page has its CSP.
#[track_caller]
fn reports_hold(s: &Scratch, reached: &str) {
    let report: Value = serde_json::from_str(&read(s, "r.json")).unwrap();
    let mut all = Vec::new();
    strings(&report, &mut all);
    assert!(
        all.iter().any(|x| x.contains(reached)),
        "the payload {reached:?} did not reach the report"
    );
    tables_keep_their_columns(&read(s, "r.md"));
    sarif_uris_are_safe(&read(s, "r.sarif"));
    parses_as_xml(&s.out().join("r.xml"));
    parses_as_xml(&s.out().join("r.html"));
    let html = read(s, "r.html");
    let csp = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ";
    assert!(html.contains(csp), "no CSP");
}

/// Each Markdown table's rows have as many cells as its head: no page text split a cell.
#[track_caller]
fn tables_keep_their_columns(md: &str) {
    let mut head: Option<usize> = None;
    for line in md.lines() {
        if !line.starts_with('|') {
            head = None;
            continue;
        }
        let pipes = line.matches('|').count();
        let want = *head.get_or_insert(pipes);
        assert_eq!(
            pipes, want,
            "a row with other columns than its head: {line}"
        );
        assert!(!line.contains("\\|"), "an escaped pipe in {line}");
    }
}

/// Every `artifactLocation.uri` of a SARIF log is percent-encoded (unreserved characters, `/`
/// and `%XX` only), relative, with no empty, `.` or `..` segment.
#[track_caller]
fn sarif_uris_are_safe(sarif: &str) {
    let log: Value = serde_json::from_str(sarif).unwrap();
    for result in log["runs"][0]["results"].as_array().unwrap() {
        for loc in result["locations"].as_array().into_iter().flatten() {
            let uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap();
            let ok = |c: char| c.is_ascii_alphanumeric() || "-._~/%".contains(c);
            assert!(uri.chars().all(ok), "not percent-encoded: {uri}");
            assert!(
                uri.split('/').all(|seg| !matches!(seg, "" | "." | "..")),
                "a uri that can climb or is absolute: {uri}"
            );
        }
    }
}

/// The file parses as XML (Python's expat, through `xml.dom.minidom`).
#[track_caller]
fn parses_as_xml(p: &Path) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])",
        ])
        .arg(p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} is not well-formed XML: {}",
        p.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lines of the annotations (`--format github`) that are workflow commands.
fn commands(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("::")).collect()
}

#[test]
fn a_listed_file_named_with_every_payload_is_no_property_and_escaped_everywhere() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    let name = format!("logs/{}.log", name_payload());
    list_missing(&b, &name);
    let o = verify(&s, &b, "github");
    o.exit(1)
        .saying("title=schema.file-missing::logs/")
        .clean(Surface::Github);
    reports_hold(&s, &name);
    // The file is said in the message, its controls visible, not in a `file=` property.
    let line = commands(&o.run.stdout)
        .into_iter()
        .find(|l| l.contains("onerror"))
        .unwrap();
    assert!(
        line.starts_with("::error title=schema.file-missing::"),
        "{line}"
    );
    assert!(line.contains("\\u{1b}]0;pwned\\u{7}") && line.contains("%0A;;set-env"));
    let md = read(&s, "r.md");
    assert!(md.contains("<code>logs/&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;"));
}

#[test]
fn a_file_name_in_sarif_is_one_percent_encoded_relative_uri() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    list_missing(&b, "logs/a b%20#?<img src=x>\u{1b}é.log");
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, "a b%20#?<img src=x>");
    let sarif = read(&s, "r.sarif");
    assert!(
        sarif.contains("\"uri\": \"logs/a%20b%2520%23%3F%3Cimg%20src%3Dx%3E%1B%C3%A9.log\""),
        "{sarif}"
    );
}

#[test]
fn a_path_through_dot_dot_keeps_its_named_segments_and_says_the_path() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    list_missing(&b, "logs/../speed/./missing.log");
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, "logs/../speed/./missing.log");
    let log: Value = serde_json::from_str(&read(&s, "r.sarif")).unwrap();
    let at = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["locations"][0]["physicalLocation"]["artifactLocation"])
        .find(|a| a["properties"]["path"] == "logs/../speed/./missing.log")
        .expect("the path as given, in the location's properties");
    assert_eq!(at["uri"], "logs/speed/missing.log");
    assert_eq!(at["uriBaseId"], "BUNDLE");
}

#[test]
fn a_backslash_path_is_a_name_not_a_separator_in_sarif() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    list_missing(&b, "logs\\..\\x.log");
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, "logs\\..\\x.log");
    assert!(read(&s, "r.sarif").contains("\"uri\": \"logs%5C..%5Cx.log\""));
}

#[test]
fn in_a_repository_a_hostile_file_name_stays_under_srcroot() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    std::fs::create_dir(s.path().join(".git")).unwrap();
    list_missing(&b, &format!("x/../{}.log", name_payload()));
    let mut args = with_reports(&["verify", b.to_str().unwrap()], "github");
    args.extend(["--repo-root".into(), s.path().to_str().unwrap().into()]);
    Attack::new(&s, &args).run().exit(1).clean(Surface::Github);
    reports_hold(&s, "onerror=alert(1)");
    let sarif = read(&s, "r.sarif");
    assert!(sarif.contains("\"uri\": \"b/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E"));
    assert!(sarif.contains("\"uriBaseId\": \"SRCROOT\""));
}

#[test]
fn a_listed_path_quoting_a_workflow_command_is_one_annotation() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    list_missing(&b, &format!("logs/x{}", all_payloads()));
    let o = verify(&s, &b, "github");
    o.exit(1)
        .saying("title=schema.path-escapes::")
        .clean(Surface::Github);
    reports_hold(&s, WORKFLOW_COMMAND);
    let escapes = commands(&o.run.stdout)
        .into_iter()
        .filter(|l| l.contains("schema.path-escapes"))
        .count();
    assert_eq!(escapes, 1, "{}", o.run.stdout);
    assert!(o
        .run
        .stdout
        .contains("%0A::error title=pwned::PWNED%0A::add-mask::x%0A"));
}

#[test]
fn a_quality_test_on_the_page_named_with_every_payload() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "bundle.json", |m| {
        m["page"]["quality"][0]["test"] = json!(all_payloads());
    });
    let o = verify(&s, &b, "github");
    o.exit(1)
        .saying("title=claims.no-measurement")
        .clean(Surface::Github);
    reports_hold(&s, &all_payloads());
    let md = read(&s, "r.md");
    assert!(
        md.contains("a&#92;&#124;b &lt;&#33;-- the rest is hidden"),
        "{md}"
    );
}

#[test]
fn a_refusal_text_in_a_speed_record_is_quoted_escaped() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(all_payloads());
    });
    verify(&s, &b, "github")
        .exit(1)
        .saying("title=speed.step-exceeds-window::")
        .clean(Surface::Github);
    reports_hold(&s, &all_payloads());
    let xml = read(&s, "r.xml");
    assert!(xml.contains("&lt;img src=&quot;https://evil.invalid/beacon.png&quot;&gt;"));
    assert!(xml.contains("\\u{9b}31m\\u{202e}evil"), "{xml}");
}

#[test]
fn a_figure_key_with_every_payload_is_escaped_in_its_pointer() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    let key = format!("k{}", all_payloads());
    edit(&b, "speed/speed-result.json", |v| {
        v["values"][key.as_str()] = json!(1.0);
    });
    verify(&s, &b, "github")
        .exit(1)
        .saying("title=speed.not-recomputable")
        .clean(Surface::Github);
    reports_hold(&s, &key);
    let md = read(&s, "r.md");
    assert!(
        md.contains("<code>&#92;/values&#92;/k&lt;img") || md.contains("<code>/values/k&lt;img")
    );
}

#[test]
fn a_card_field_with_every_payload_is_quoted_escaped() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    edit(&b, "card.json", |c| {
        c["checkpoint"] = json!(all_payloads());
    });
    verify(&s, &b, "github")
        .exit(1)
        .saying("title=schema.invalid")
        .clean(Surface::Github);
    reports_hold(&s, "beacon.png");
}

#[test]
fn an_answers_error_with_every_payload_is_quoted_escaped() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit_line(&b, "quality/livecodebench/answers.jsonl", 0, |v| {
        v["error"] = json!(all_payloads());
    });
    verify(&s, &b, "github")
        .exit(1)
        .saying("title=quality.refused-counted-as-wrong")
        .clean(Surface::Github);
    reports_hold(&s, "PWNED");
}

#[test]
fn a_step_name_and_a_server_string_with_payloads_are_quoted_escaped() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    edit(&b, "speed/speed-result.json", |v| {
        v["server"] = json!(all_payloads());
        v["requests"][0]["step"] = json!(CONTROLS);
    });
    verify(&s, &b, "github")
        .exit(1)
        .saying("title=schema.invalid")
        .clean(Surface::Github);
    reports_hold(&s, "beacon.png");
}

#[test]
fn the_text_report_shows_controls_visibly_and_starts_no_command() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(all_payloads());
    });
    let o = verify(&s, &b, "text");
    o.exit(1)
        .saying("speed.step-exceeds-window")
        .clean(Surface::Text);
    reports_hold(&s, &all_payloads());
    // One value, its line breaks `\n`, wrapped at its spaces only.
    let words = o
        .run
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(words.contains("\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}evil"));
    assert!(words.contains("\\n::error title=pwned::PWNED\\n::add-mask::x\\n"));
}

#[test]
fn a_wrapped_line_of_the_text_report_never_starts_with_a_command() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    // Words of every length before `::`, so some wrap lands right before it.
    let words: String = (1..40)
        .map(|i| format!("{} ::add-mask::PWNED ", "w".repeat(i % 9 + 1)))
        .collect();
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(words);
    });
    let o = verify(&s, &b, "text");
    o.exit(1).clean(Surface::Text);
    assert!(
        o.run
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("\\::")),
        "no wrap landed before `::`: {}",
        o.run.stdout
    );
    super::attack::assert_clean("r.txt", &read(&s, "r.txt"), Surface::Text);
}

#[test]
fn the_markdown_report_on_stdout_is_text_not_markup() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "bundle.json", |m| {
        m["page"]["quality"][0]["test"] = json!(all_payloads());
    });
    let o = verify(&s, &b, "markdown");
    o.exit(1)
        .saying("claims.no-measurement")
        .clean(Surface::Markdown);
    reports_hold(&s, &all_payloads());
    let md = &o.run.stdout;
    assert!(md.contains("&lt;img src=\"https://evil.invalid/beacon.png\"&gt;"));
    assert!(md.contains("&#33;&#91;x&#93;(https://evil.invalid/i.png)"));
    assert_eq!(md, &read(&s, "r.md"));
}

#[test]
fn an_unclosed_comment_hides_nothing_after_it() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(HTML_COMMENT);
    });
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, HTML_COMMENT);
    let md = read(&s, "r.md");
    assert!(!md.contains("<!--"));
    // What follows the comment is still there to be read: the notes and the footer.
    let at = md.find("&lt;&#33;-- the rest is hidden").unwrap();
    assert!(md[at..].contains("<details><summary>notes"));
    assert!(md.trim_end().ends_with("</sub>"));
    assert!(!read(&s, "r.html").contains("<!--"));
}

#[test]
fn a_backslash_before_a_pipe_keeps_the_markdown_table_whole() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!("a\\|b | c \\\\| d `e|f`");
    });
    verify(&s, &b, "markdown").exit(1).clean(Surface::Markdown);
    reports_hold(&s, "a\\|b | c");
    let md = read(&s, "r.md");
    assert!(
        md.contains("a&#92;&#124;b &#124; c &#92;&#92;&#124; d &#96;e&#124;f&#96;"),
        "{md}"
    );
}

#[test]
fn attribute_quotes_in_page_text_stay_inside_html_and_xml_attributes() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    let quotes = "\" onmouseover=\"alert(1)\" x='y' <svg onload=alert(1)>";
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(quotes);
    });
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, quotes);
    let (html, xml) = (read(&s, "r.html"), read(&s, "r.xml"));
    assert!(!html.contains("\" onmouseover") && !html.contains("<svg onload"));
    assert!(html.contains("&quot; onmouseover=&quot;alert(1)&quot; x=&#39;y&#39;"));
    assert!(xml.contains("&quot; onmouseover=&quot;alert(1)&quot; x=&apos;y&apos;"));
}

#[test]
fn characters_xml_forbids_are_written_visibly_in_junit_and_html() {
    let s = Scratch::new();
    let b = page(&s, RUN);
    let odd: String = (1u32..0x20)
        .chain([0x7f, 0x85, 0x9b, 0x2028, 0x2066, 0x200e, 0xfffe, 0xffff])
        .filter_map(char::from_u32)
        .filter(|c| *c != '/')
        .collect();
    list_missing(&b, &format!("logs/odd{odd}.log"));
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, &odd);
    let xml = read(&s, "r.xml");
    assert!(xml.contains("odd\\u{1}\\u{2}"), "{xml}");
    assert!(xml.contains("\\u{fffe}\\u{ffff}.log"), "{xml}");
}

#[test]
fn json_and_sarif_keep_the_payload_unchanged_without_a_raw_character() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(CONTROLS);
    });
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, CONTROLS);
    let json = read(&s, "r.json");
    assert!(
        json.contains("\\u009b31m\\u202eevil"),
        "the C1 and bidi escaped in JSON"
    );
    // SARIF's message shows them, for code scanning's page (its `\` and `[` escaped as SARIF
    // escapes them in a message).
    let log: Value = serde_json::from_str(&read(&s, "r.sarif")).unwrap();
    let texts: Vec<&str> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["message"]["text"].as_str())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains(r"'\\u{1b}\]0;pwned\\u{7}\\u{1b}\[2J\\u{9b}31m\\u{202e}evil'")),
        "{texts:?}"
    );
}

#[test]
fn a_link_in_page_text_is_no_link_in_a_sarif_message() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!("[click](https://evil.invalid/) [x](1)");
    });
    verify(&s, &b, "github").exit(1).clean(Surface::Github);
    reports_hold(&s, "[click](https://evil.invalid/)");
    let sarif = read(&s, "r.sarif");
    assert!(
        sarif.contains("\\\\[click\\\\](https://evil.invalid/) \\\\[x\\\\](1)"),
        "{sarif}"
    );
}

#[test]
fn the_job_summary_written_with_annotations_is_escaped_markdown() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    edit(&b, "bundle.json", |m| {
        m["page"]["quality"][0]["test"] = json!(all_payloads());
    });
    let summary = s.out().join("summary.md");
    let args = ["verify", b.to_str().unwrap(), "--format", "github"];
    Attack::new(&s, &args)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .run()
        .exit(1)
        .clean(Surface::Github);
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{md}");
    tables_keep_their_columns(&md);
}

/// Bundle `b` with its engine binary's path set to `value` (a setup difference for diff).
fn engine_path(b: &Path, value: &str) {
    edit(b, "card.json", |c| {
        c["engine"]["binary"]["path"] = json!(value);
    });
}

#[test]
fn a_setup_difference_with_every_payload_is_escaped_in_diffs_reports() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    engine_path(&b, &all_payloads());
    let stock = root().join(PAGE);
    let args = with_reports(
        &["diff", b.to_str().unwrap(), stock.to_str().unwrap()],
        "github",
    );
    Attack::new(&s, &args)
        .run()
        .exit(1)
        .saying("title=diff.setup-differs")
        .clean(Surface::Github);
    reports_hold(&s, &all_payloads());
    let md = read(&s, "r.md");
    let row = md
        .lines()
        .find(|l| l.contains("card engine.binary.path"))
        .unwrap();
    assert!(
        row.contains("&lt;img src=\"https://evil.invalid/beacon.png\"&gt;"),
        "{row}"
    );
    assert!(read(&s, "r.html").contains("\\u{202e}evil"));
}

#[test]
fn diffs_text_report_shows_a_setup_value_on_one_line() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    engine_path(&b, &format!("x{WORKFLOW_COMMAND}{CONTROLS}"));
    let stock = root().join(PAGE);
    let args = with_reports(
        &["diff", b.to_str().unwrap(), stock.to_str().unwrap()],
        "text",
    );
    let o = Attack::new(&s, &args).run();
    o.exit(1).saying("setup differences").clean(Surface::Text);
    reports_hold(&s, CONTROLS);
    // The value's line breaks are `\n`: it wraps at its spaces only.
    let words = o
        .run
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("card engine.binary.path: x\\n::error title=pwned::PWNED\\n::add-mask::x\\n\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{202e}evil"),
        "{}",
        o.run.stdout
    );
}

/// A vLLM result file named `name` in `scratch/v`, its fourth request's error text `error`.
fn vllm(s: &Scratch, name: &str, error: &str) -> PathBuf {
    let dir = s.path().join("v");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(s.out()).unwrap();
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(VLLM)).unwrap()).unwrap();
    v["errors"][3] = json!(error);
    v["model_id"] = json!(error);
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn another_tools_error_text_is_escaped_in_every_report() {
    let s = Scratch::new();
    let p = vllm(&s, "openai-run.json", &all_payloads());
    let args = with_reports(&["verify", "--from", "vllm", p.to_str().unwrap()], "github");
    let o = Attack::new(&s, &args).run();
    o.exit(0)
        .saying("title=import.failed-requests")
        .clean(Surface::Github);
    reports_hold(&s, "the rest is hidden");
    let line = commands(&o.run.stdout)
        .into_iter()
        .find(|l| l.contains("import.failed-requests"))
        .unwrap();
    assert!(
        line.contains("\\u{9b}31m\\u{202e}evil a\\|b <!-- the rest is hidden"),
        "{line}"
    );
}

#[test]
fn another_tools_file_named_with_markup_and_a_pipe_is_escaped() {
    let s = Scratch::new();
    let name = "openai-<img src=x onerror=alert(1)> a|b ![x](y) $x$ #1.json";
    let p = vllm(&s, name, "Bad Request");
    for format in ["github", "markdown", "text"] {
        let args = with_reports(&["verify", "--from", "vllm", p.to_str().unwrap()], format);
        let surface = match format {
            "github" => Surface::Github,
            "markdown" => Surface::Markdown,
            _ => Surface::Text,
        };
        Attack::new(&s, &args).run().exit(0).clean(surface);
        reports_hold(&s, "onerror=alert(1)");
    }
    let md = read(&s, "r.md");
    assert!(
        md.contains(
            "&lt;img src=x onerror=alert(1)&gt; a&#124;b &#33;&#91;x&#93;(y) &#36;x&#36; #1.json"
        ),
        "{md}"
    );
    assert!(
        read(&s, "r.sarif").contains("openai-%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%20a%7Cb")
    );
}

#[test]
fn a_run_folder_named_with_payloads_is_escaped_in_the_trees_tables() {
    let s = Scratch::new();
    let tree = s.path().join("tree");
    let name = format!("::add-mask::x {HTML_BEACON} a|b \u{1b}[2J\u{202e}");
    copy_dir(&root().join(RUN), &tree.join(name.replace('/', "\u{2215}")));
    copy_dir(&root().join(RUN), &tree.join("plain"));
    let o = Attack::new(&s, &["verify", tree.to_str().unwrap(), "--format", "text"]).run();
    o.exit(0).clean(Surface::Text);
    assert!(
        o.run.stdout.contains("\\::add-mask::x <img"),
        "{}",
        o.run.stdout
    );
    assert!(
        o.run.stdout.contains("a|b \\u{1b}[2J\\u{202e}"),
        "{}",
        o.run.stdout
    );
    let o = Attack::new(
        &s,
        &["verify", tree.to_str().unwrap(), "--format", "markdown"],
    )
    .run();
    o.exit(0).clean(Surface::Markdown);
    tables_keep_their_columns(&o.run.stdout);
    assert!(
        o.run.stdout.contains("<code>::add-mask::x &lt;img"),
        "{}",
        o.run.stdout
    );
}

#[test]
fn every_output_of_a_page_with_every_payload_everywhere_is_clean() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    let all = all_payloads();
    edit(&b, "bundle.json", |m| {
        m["title"] = json!(all);
        m["setup"]["engine"] = json!(all);
        m["page"]["quality"][1]["test"] = json!(all);
    });
    edit(&b, "speed/speed-result.json", |v| {
        v["requests"][38]["error"] = json!(all);
        v["values"][format!("k{all}")] = json!(2.0);
    });
    edit_line(&b, "quality/livecodebench/answers.jsonl", 0, |v| {
        v["error"] = json!(all);
    });
    list_missing(&b, &format!("logs/{}.log", name_payload()));
    let mut annotations = 0;
    for (format, surface) in [
        ("github", Surface::Github),
        ("text", Surface::Text),
        ("markdown", Surface::Markdown),
        ("html", Surface::Html),
        ("junit", Surface::Junit),
        ("sarif", Surface::Sarif),
        ("json", Surface::Json),
        ("intoto", Surface::Json),
    ] {
        let o = verify(&s, &b, format);
        o.exit(1).clean(surface);
        reports_hold(&s, &all);
        if surface == Surface::Github {
            annotations = commands(&o.run.stdout).len();
        }
    }
    // One annotation per finding: no payload made one more.
    let report: Value = serde_json::from_str(&read(&s, "r.json")).unwrap();
    assert_eq!(annotations, report["findings"].as_array().unwrap().len());
    for f in files_under(&s.out()) {
        let text = std::fs::read_to_string(&f).unwrap();
        if f.extension().is_some_and(|e| e == "md" || e == "html") {
            assert!(!text.contains(MD_IMAGE), "{}", f.display());
        }
    }
}

#[test]
fn a_tree_run_that_cannot_be_checked_is_named_escaped_in_its_report_files() {
    let s = Scratch::new();
    let tree = s.path().join("tree");
    copy_dir(&root().join(RUN), &tree.join("plain"));
    let name = format!(
        "::add-mask::x {} a|b \u{9b}31m",
        HTML_SCRIPT.replace('/', "\u{2215}")
    );
    std::fs::create_dir_all(tree.join(&name)).unwrap();
    std::fs::write(tree.join(&name).join("bundle.json"), "{not json").unwrap();
    std::fs::create_dir_all(s.out()).unwrap();
    let mut args = vec!["verify", tree.to_str().unwrap(), "--format", "markdown"];
    args.extend(["--output", "html:out", "--output", "markdown:out"]);
    args.extend(["--output", "text:out", "--output", "json:out"]);
    let o = Attack::new(&s, &args).run();
    o.exit(3)
        .saying("incomplete, not read")
        .clean(Surface::Markdown);
    tables_keep_their_columns(&o.run.stdout);
    let refused = |ext: &str| {
        let f = files_under(&s.out())
            .into_iter()
            .find(|f| {
                let n = f.file_name().unwrap().to_string_lossy().into_owned();
                n.ends_with(&format!(".{ext}")) && !n.starts_with("plain")
            })
            .unwrap_or_else(|| panic!("no .{ext} report of the refused run"));
        std::fs::read_to_string(f).unwrap()
    };
    assert!(refused("html").starts_with("\\::add-mask::x &lt;script&gt;alert(1)"));
    assert!(refused("md").contains("a&#124;b &#92;u{9b}31m: incomplete, not read"));
    assert!(refused("txt").starts_with("\\::add-mask::x <script>"));
    let json: Value = serde_json::from_str(&refused("json")).unwrap();
    // The tree names a run as its folder, shown: its controls already visible.
    assert_eq!(json["verdict"], "incomplete");
    assert!(
        json["run"].as_str().unwrap().ends_with("a|b \\u{9b}31m"),
        "{json}"
    );
}

#[test]
fn an_attestation_names_a_hostile_file_without_a_raw_character() {
    let s = Scratch::new();
    let b = page(&s, PAGE);
    let name = format!("logs/{}.log", name_payload());
    std::fs::create_dir_all(b.join("logs")).unwrap();
    std::fs::write(b.join(&name), "a log\n").unwrap();
    edit(&b, "bundle.json", |m| {
        m["files"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kind": "log", "path": name,
            "sha256": "0".repeat(64), "published": true, "reconstructed": false}));
    });
    rehash(&b);
    let args = ["verify", b.to_str().unwrap(), "--format", "intoto"];
    let o = Attack::new(&s, &args).run();
    o.exit(1).clean(Surface::Json);
    // The escapes are JSON's: the subject is the file's name, unchanged for a reader.
    let statement: Value = serde_json::from_str(&o.run.stdout).unwrap();
    let names: Vec<String> = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(&name)), "{names:?}");
}
