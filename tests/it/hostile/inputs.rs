//! Attacks on inputs (see attack.rs for what each asserts): a diff side that cannot be read whole,
//! deeply nested YAML, URLs whose credentials must not be printed, signing keys of the wrong kind
//! or mode, and file names that look like options or carry workflow commands given to the
//! pre-commit hook and the GitHub Action's script.

#[allow(unused_imports)]
use super::attack::{assert_clean, Attack, Outcome, Scratch, Surface};
use super::attack::{CONTROLS, WORKFLOW_COMMAND};
use super::common::{copy_dir, root, sha_file};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Every case here ends well within this (each runs in a fraction of a second).
const QUICK: Duration = Duration::from_secs(20);

/// The recorded CPU run (a bundle that passes) copied to `scratch/NAME`.
fn passing(s: &Scratch, name: &str) -> PathBuf {
    let to = s.path().join(name);
    copy_dir(&root().join("fixtures/runs/smollm2-cpu"), &to);
    to
}

/// A seed page (a bundle that fails at the error level) copied to `scratch/NAME`.
fn failing(s: &Scratch, name: &str) -> PathBuf {
    let to = s.path().join(name);
    copy_dir(&root().join("fixtures/pages/tensorfold-127-stock-2x"), &to);
    to
}

fn edit_json(p: &Path, edit: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// Records every present file's sha256 in the bundle's manifest again.
fn rehash(b: &Path) {
    edit_json(&b.join("bundle.json"), |m| {
        for f in m["files"].as_array_mut().unwrap() {
            let p = b.join(f["path"].as_str().unwrap());
            if f["sha256"].is_string() && p.is_file() {
                f["sha256"] = json!(sha_file(&p));
            }
        }
    });
}

/// `rigaudit diff a b` in the scratch folder, in bounded time.
fn diff(s: &Scratch) -> Outcome<'_> {
    Attack::new(s, &["diff", "a", "b"]).deadline(QUICK).run()
}

/// Two copies of the passing run, a and b.
fn two_sides(s: &Scratch) -> (PathBuf, PathBuf) {
    (passing(s, "a"), passing(s, "b"))
}

// ---- 1. diff: a side that cannot be read whole is exit 2, naming the side and the file ----

#[test]
fn diff_two_readable_copies_still_pass_and_a_changed_engine_still_fails() {
    let s = Scratch::new();
    let (_, b) = two_sides(&s);
    diff(&s).exit(0).clean(Surface::Text);
    edit_json(&b.join("card.json"), |c| {
        c["engine"]["version"] = json!("9.9.9")
    });
    rehash(&b);
    diff(&s).exit(1).saying("engine").clean(Surface::Text);
}

#[test]
fn diff_card_missing_on_a_is_exit_2() {
    let s = Scratch::new();
    let (a, _) = two_sides(&s);
    std::fs::remove_file(a.join("card.json")).unwrap();
    let o = diff(&s);
    o.exit(2).saying("side A (a) cannot be read whole");
    o.saying("A: card.json: the card the manifest lists is missing")
        .clean(Surface::Text);
}

#[test]
fn diff_card_missing_on_b_is_exit_2() {
    let s = Scratch::new();
    let (_, b) = two_sides(&s);
    std::fs::remove_file(b.join("card.json")).unwrap();
    let o = diff(&s);
    o.exit(2).saying("side B (b) cannot be read whole");
    o.saying("B: card.json: the card the manifest lists is missing")
        .clean(Surface::Text);
    assert!(!o.run.stderr.contains("side A"), "{}", o.run.stderr);
}

#[test]
fn diff_card_cut_short_is_exit_2() {
    let s = Scratch::new();
    let (_, b) = two_sides(&s);
    let card = std::fs::read(b.join("card.json")).unwrap();
    std::fs::write(b.join("card.json"), &card[..card.len() / 2]).unwrap();
    rehash(&b);
    let o = diff(&s);
    o.exit(2).saying("B: card.json: the card cannot be read");
    o.saying("not valid JSON").clean(Surface::Text);
}

#[test]
fn diff_card_over_its_bound_is_exit_2() {
    let s = Scratch::new();
    let (a, _) = two_sides(&s);
    edit_json(&a.join("card.json"), |c| {
        c["notes_padding"] = json!("x".repeat(5 << 20));
    });
    rehash(&a);
    let o = diff(&s);
    o.exit(2).saying("A: card.json: the card cannot be read");
    o.saying("larger than 4 MiB, the bound for a card")
        .clean(Surface::Text);
}

#[test]
fn diff_contract_not_json_is_exit_2() {
    let s = Scratch::new();
    let (a, _) = two_sides(&s);
    std::fs::write(
        a.join("speed/speed-contract.json"),
        "{\"parts\": [\"decode\",",
    )
    .unwrap();
    rehash(&a);
    let o = diff(&s);
    o.exit(2)
        .saying("A: speed/speed-contract.json: the speed-contract cannot be read");
    o.saying("not valid JSON").clean(Surface::Text);
}

#[test]
fn diff_manifest_entry_of_a_missing_file_is_exit_2() {
    let s = Scratch::new();
    let (_, b) = two_sides(&s);
    edit_json(&b.join("bundle.json"), |m| {
        m["files"]
            .as_array_mut()
            .unwrap()
            .push(json!({"kind": "fit-result",
            "path": "fit/result.json", "sha256": "0".repeat(64), "published": true, "reconstructed": false}));
    });
    let o = diff(&s);
    o.exit(2)
        .saying("B: fit/result.json: the fit-result the manifest lists is missing");
    o.clean(Surface::Text);
}

#[test]
fn diff_changed_engine_and_broken_result_is_exit_2_not_a_pass() {
    let s = Scratch::new();
    let (_, b) = two_sides(&s);
    edit_json(&b.join("card.json"), |c| {
        c["engine"]["version"] = json!("9.9.9")
    });
    std::fs::write(b.join("speed/speed-result.json"), "{\"runs\": [").unwrap();
    rehash(&b);
    let o = diff(&s);
    o.exit(2)
        .saying("B: speed/speed-result.json: the speed-result cannot be read");
    o.saying("side B (b) cannot be read whole")
        .clean(Surface::Text);
}

#[test]
fn diff_result_not_of_its_schema_or_linked_out_is_exit_2() {
    let s = Scratch::new();
    let (a, b) = two_sides(&s);
    edit_json(&a.join("speed/speed-result.json"), |r| {
        r["runs"] = json!("many")
    });
    rehash(&a);
    std::fs::remove_file(b.join("speed/speed-result.json")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", b.join("speed/speed-result.json")).unwrap();
    let o = diff(&s);
    o.exit(2)
        .saying("A: speed/speed-result.json: the speed-result breaks its schema");
    o.saying("B: speed/speed-result.json: the speed-result is refused")
        .saying("outside the bundle")
        .clean(Surface::Text);
}

// ---- 2. YAML nested past YAML_DEPTH_MAX is refused at once, whatever its shape ----

/// `rigaudit verify --from guidellm` of a YAML report whose benchmarks are `body`: refused in
/// well under a second, naming the file, the line and the bound.
fn deep_yaml(body: &[u8], line: usize) {
    let s = Scratch::new();
    let p = s.path().join("benchmarks.yaml");
    let mut text = b"guidellm_version: x\nbenchmarks:\n".to_vec();
    text.extend_from_slice(body);
    std::fs::write(&p, text).unwrap();
    let t = Instant::now();
    let o = Attack::new(&s, &["verify", "--from", "guidellm", "benchmarks.yaml"])
        .deadline(QUICK)
        .run();
    let bound = format!("benchmarks.yaml: line {line}: nested more than 64 levels deep");
    o.exit(2).saying(&bound).clean(Surface::Text);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn yaml_10_mb_of_flow_sequences_is_refused_at_once() {
    deep_yaml(format!("- {}", "[".repeat(10 << 20)).as_bytes(), 3);
}

#[test]
fn yaml_10_mb_of_flow_mappings_is_refused_at_once() {
    deep_yaml(format!("- x: {}", "{a: ".repeat(5 << 20)).as_bytes(), 3);
}

#[test]
fn yaml_10_mb_of_block_sequences_on_one_line_is_refused_at_once() {
    deep_yaml("- ".repeat(5 << 20).as_bytes(), 3);
}

#[test]
fn yaml_block_mappings_each_more_indented_are_refused_at_once() {
    let body: String = (1..5000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    deep_yaml(body.as_bytes(), 66);
}

#[test]
fn yaml_mixed_block_and_flow_nesting_is_refused_at_once() {
    let body = format!("{}{}\n", "- ".repeat(40), "[{a: ".repeat(1 << 20));
    deep_yaml(body.as_bytes(), 3);
}

// ---- 3. URLs are never printed with their credentials, parsed or not ----

const PASSWORD: &str = "hunter2-s3cret";

/// Runs `args` and asserts the password is in no output.
fn no_password(args: &[&str], code: i32, says: &str) {
    let s = Scratch::new();
    let o = Attack::new(&s, args).deadline(QUICK).run();
    o.exit(code).saying(says).clean(Surface::Text);
    for text in [&o.run.stdout, &o.run.stderr] {
        assert!(!text.contains(PASSWORD), "the password is printed: {text}");
        assert!(
            !text.contains("hunter2"),
            "part of the password is printed: {text}"
        );
    }
}

#[test]
fn url_with_a_bad_port_is_shown_without_its_password() {
    let url = format!("https://user:{PASSWORD}@host:bad/page.tar.gz");
    no_password(
        &["verify", &url],
        2,
        "https://host:bad/page.tar.gz: not a URL",
    );
}

#[test]
fn url_with_an_unclosed_ipv6_host_is_shown_without_its_password() {
    let url = format!("http://user:{PASSWORD}@[::1");
    no_password(&["diff", &url, "b"], 2, "http://[::1: not a URL");
}

#[test]
fn url_whose_password_holds_a_slash_or_hash_is_shown_without_it() {
    let url = format!("https://user:{}/x#{PASSWORD}@host/a.tar.gz", "hunter2");
    no_password(&["audit", &url, "--no-replay"], 2, "https://host/a.tar.gz");
}

#[test]
fn url_of_another_scheme_read_as_a_path_is_shown_without_its_password() {
    let url = format!("ftp://user:{PASSWORD}@host/page");
    no_password(
        &["verify", &url],
        2,
        "ftp://host/page: cannot open the bundle",
    );
}

#[test]
fn url_quoted_by_a_usage_error_is_shown_without_its_password() {
    let url = format!("https://user:{PASSWORD}@host/x.tar.gz");
    no_password(&["diff", "a", "b", &url], 2, "https://host/x.tar.gz");
}

#[test]
fn measures_base_url_is_shown_without_its_password() {
    let s = Scratch::new();
    super::write_small_contract(&s.path().join("c.json"));
    let url = format!("http://user:{PASSWORD}@127.0.0.1:9/v1");
    let args = [
        "measure",
        "--base-url",
        &url,
        "--contract",
        "c.json",
        "--out",
        "out",
    ];
    let o = Attack::new(&s, &args).deadline(QUICK).run();
    o.exit(2)
        .saying("http://127.0.0.1:9/v1/models")
        .clean(Surface::Text);
    assert!(!format!("{}{}", o.run.stdout, o.run.stderr).contains("hunter2"));
    for f in super::attack::files_under(&s.out()) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(!text.contains("hunter2"), "{}: {text}", f.display());
    }
}

// ---- 4. --sign-key: a key others may read is warned about; other kinds are named ----

/// Makes `out` in `dir` with openssl; false (said) when openssl cannot run here.
fn openssl(dir: &Path, args: &[&str]) -> bool {
    match Command::new("openssl").args(args).current_dir(dir).output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => panic!("openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            eprintln!("SKIPPED: openssl cannot run here ({e})");
            false
        }
    }
}

/// `verify RUN --format intoto --sign-key KEY` in `s`.
fn sign_with<'a>(s: &'a Scratch, key: &str) -> Outcome<'a> {
    passing(s, "run");
    let args = ["verify", "run", "--format", "intoto", "--sign-key", key];
    Attack::new(s, &args).deadline(QUICK).run()
}

#[test]
fn sign_key_readable_by_others_is_used_with_a_warning_naming_mode_and_fix() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let key = s.path().join("seed.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = sign_with(&s, "seed.key");
    o.exit(0)
        .saying("warning: seed.key: the signing key's mode is 0644");
    o.saying("chmod 600 seed.key").clean(Surface::Json);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = sign_with(&s, "seed.key");
    o.exit(0).clean(Surface::Json);
    assert!(!o.run.stderr.contains("warning"), "{}", o.run.stderr);
}

/// A key made by `make` (openssl arguments) is refused, named as `what`, its text not echoed.
fn refused_key(make: &[&str], file: &str, what: &str) {
    let s = Scratch::new();
    let ed = ["genpkey", "-algorithm", "ed25519", "-out", "ed.pem"];
    if !openssl(s.path(), &ed) || !openssl(s.path(), make) {
        return;
    }
    let text = std::fs::read_to_string(s.path().join(file)).unwrap();
    let o = sign_with(&s, file);
    o.exit(2)
        .saying(what)
        .saying("ed25519 private key: PKCS#8 PEM");
    o.clean(Surface::Text);
    for line in text
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
    {
        assert!(
            !o.run.stderr.contains(line),
            "the key is echoed: {}",
            o.run.stderr
        );
    }
}

#[test]
fn sign_key_rsa_is_named_and_refused() {
    let make = [
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:1024",
    ];
    refused_key(
        &[&make[..], &["-out", "k.pem"]].concat(),
        "k.pem",
        "an RSA private key",
    );
}

#[test]
fn sign_key_ec_p256_is_named_and_refused() {
    let make = [
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
    ];
    let what = "an EC (P-256) private key (PKCS#8)";
    refused_key(&[&make[..], &["-out", "k.pem"]].concat(), "k.pem", what);
}

#[test]
fn sign_key_encrypted_pkcs8_is_named_and_refused() {
    let make = [
        "pkey", "-in", "ed.pem", "-aes256", "-passout", "pass:pw", "-out", "k.pem",
    ];
    refused_key(&make, "k.pem", "an encrypted PKCS#8 private key");
}

#[test]
fn sign_key_public_key_and_certificate_are_named_and_refused() {
    let make = ["pkey", "-in", "ed.pem", "-pubout", "-out", "pub.pem"];
    refused_key(&make, "pub.pem", "a public key (ed25519)");
    let make = [
        "req", "-x509", "-key", "ed.pem", "-subj", "/CN=t", "-days", "1", "-out", "c.pem",
    ];
    refused_key(&make, "c.pem", "a certificate");
}

#[test]
fn sign_key_in_openssh_format_is_named_and_refused() {
    let s = Scratch::new();
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f", "id_ed25519"])
        .current_dir(s.path())
        .status();
    if !made.is_ok_and(|st| st.success()) {
        eprintln!("SKIPPED: ssh-keygen cannot run here");
        return;
    }
    let o = sign_with(&s, "id_ed25519");
    o.exit(2)
        .saying("an OpenSSH-format private key (ssh-ed25519, not encrypted)");
    o.clean(Surface::Text);
}

// ---- 5. The pre-commit hook: a file name is never an option ----

fn hook() -> PathBuf {
    root().join("action/pre-commit.sh")
}

/// The hook run in `s` with `args` (what pre-commit passes: the hook's args, then the files),
/// this build's rigaudit.
fn run_hook<'a>(s: &'a Scratch, args: &[&str]) -> Outcome<'a> {
    Attack::program(s, &hook(), args)
        .env("RIGAUDIT", env!("CARGO_BIN_EXE_rigaudit"))
        .deadline(QUICK)
        .run()
}

/// A repository with a failing bundle `bad/` and committed files named `names` (empty).
fn repo_with(names: &[&str]) -> Scratch {
    let s = Scratch::new();
    failing(&s, "bad");
    for n in names {
        std::fs::write(s.path().join(n), "").unwrap();
    }
    s
}

#[test]
fn hook_file_named_fail_on_never_after_the_separator_is_a_file() {
    let s = repo_with(&["--fail-on=never"]);
    let o = run_hook(&s, &["--", "--fail-on=never", "bad/card.json"]);
    o.exit(1).saying("FAIL").clean(Surface::Text);
}

#[test]
fn hook_without_a_separator_takes_no_existing_file_as_an_option() {
    let s = repo_with(&["--fail-on=never", "--output=PWN.json", "--verbose"]);
    let files = [
        "--fail-on=never",
        "--output=PWN.json",
        "--verbose",
        "bad/card.json",
    ];
    let o = run_hook(&s, &files);
    o.exit(1).saying("FAIL").clean(Surface::Text);
    assert!(!s.path().join("PWN.json").exists());
}

#[test]
fn hook_output_option_not_on_the_allow_list_is_never_taken() {
    // No such file: without a separator, only known options are options.
    let s = repo_with(&[]);
    let o = run_hook(&s, &["--output=PWN.json", "bad/card.json"]);
    o.exit(1).clean(Surface::Text);
    assert!(!s.path().join("PWN.json").exists());
}

#[test]
fn hook_file_named_dash_x_is_a_file() {
    let s = repo_with(&["-x"]);
    let o = run_hook(&s, &["--", "-x", "bad/card.json"]);
    o.exit(1).saying("FAIL").clean(Surface::Text);
}

#[test]
fn hook_folder_named_like_a_flag_holding_a_bundle_is_verified_as_a_path() {
    let s = Scratch::new();
    failing(&s, "--output=PWN.json");
    failing(&s, "--fail-on=never");
    let files = ["--output=PWN.json/card.json", "--fail-on=never/card.json"];
    let o = run_hook(&s, &[&["--"][..], &files].concat());
    o.exit(1).saying("FAIL").clean(Surface::Text);
    assert!(s.path().join("--output=PWN.json").is_dir());
    assert!(!s.path().join("PWN.json").exists());
}

#[test]
fn hook_committed_file_named_double_dash_does_not_make_files_options() {
    let s = repo_with(&["--fail-on=never", "--"]);
    let o = run_hook(&s, &["--fail-on=never", "--", "bad/card.json"]);
    o.exit(1).saying("FAIL").clean(Surface::Text);
}

#[test]
fn hook_users_own_options_before_the_separator_still_apply() {
    let s = repo_with(&["--fail-on=warning"]);
    let o = run_hook(
        &s,
        &[
            "--fail-on",
            "never",
            "--",
            "--fail-on=warning",
            "bad/card.json",
        ],
    );
    o.exit(0)
        .saying("tensorfold-127-stock-2x")
        .clean(Surface::Text);
    // Without a separator, a known option that is no file still applies (older configs).
    let o = run_hook(&s, &["--fail-on", "never", "bad/card.json"]);
    o.exit(0).clean(Surface::Text);
}

// ---- 5. The Action's script: paths after `--`, its own messages escaped ----

/// `action/run.sh` run in `s` as the runner would, with `paths` (one per line) and this build's
/// binary; its outputs, summary and temporary files under `out/`.
fn run_action<'a>(s: &'a Scratch, paths: &str) -> Outcome<'a> {
    let out = s.out();
    std::fs::create_dir_all(out.join("tmp")).unwrap();
    Attack::program(s, &root().join("action/run.sh"), &[] as &[&str])
        .env("INPUT_BINARY", env!("CARGO_BIN_EXE_rigaudit"))
        .env("INPUT_PATHS", paths)
        .env("INPUT_FAIL_ON", "error")
        .env("GITHUB_OUTPUT", out.join("github-output"))
        .env("GITHUB_STEP_SUMMARY", out.join("summary.md"))
        .env("RUNNER_TEMP", out.join("tmp"))
        .deadline(QUICK)
        .run()
}

fn outputs(s: &Scratch) -> String {
    std::fs::read_to_string(s.out().join("github-output")).unwrap_or_default()
}

#[test]
fn action_path_lines_carrying_workflow_commands_inject_none() {
    let s = Scratch::new();
    failing(&s, "bad");
    let o = run_action(&s, &format!("bad{WORKFLOW_COMMAND}"));
    o.exit(2).clean(Surface::Github);
    o.saying("::error title=rigaudit::::error title=pwned::PWNED: could not be verified");
    assert!(
        outputs(&s).starts_with("verdict=error\n"),
        "{}",
        outputs(&s)
    );
}

#[test]
fn action_path_with_percent_0a_is_escaped_not_decoded() {
    let s = Scratch::new();
    let o = run_action(&s, "page%0A::error title=pwned::PWNED");
    o.exit(2).clean(Surface::Github);
    o.saying("::error title=rigaudit::page%250A::error title=pwned::PWNED: could not be verified");
}

#[test]
fn action_path_with_cr_and_terminal_controls_is_escaped() {
    let s = Scratch::new();
    let o = run_action(&s, &format!("x\r::error title=pwned::PWNED {CONTROLS}"));
    o.exit(2).clean(Surface::Github);
    o.saying("::error title=rigaudit::x%0D::error title=pwned::PWNED \\x1B]0;pwned\\x07");
    o.saying("\\u{9b}31m\\u{202e}evil: could not be verified");
}

#[test]
fn action_path_named_like_flags_is_verified_as_a_path() {
    let s = Scratch::new();
    failing(&s, "--fail-on=never");
    failing(&s, "--output=PWN.json");
    let o = run_action(&s, "--fail-on=never\n--output=PWN.json\n");
    o.exit(1).clean(Surface::Github);
    assert!(outputs(&s).starts_with("verdict=fail\n"), "{}", outputs(&s));
    assert!(!s.path().join("PWN.json").exists());
}
