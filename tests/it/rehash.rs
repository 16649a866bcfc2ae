//! `rigaudit rehash` end to end: the built binary over bundles, packages, NCCL libraries and
//! checkpoint folders that each test makes in a temporary folder.
//!
//! The NCCL tests use the real library of the PyPI wheel nvidia-nccl-cu12 (2.32.3), fetched once
//! by `scripts/fetch-nccl.sh` into a cache outside the repository. They look for it in
//! `RIGAUDIT_NCCL_LIB`, then in `${RIGAUDIT_CACHE:-$HOME/.cache/rigaudit}/nccl/*/libnccl.so.2`;
//! without it they fail when `CI` is set and are skipped with a note otherwise.

use crate::common;

use common::assert_has;
use common::{real_nccl, sha_file, sha_hex as sha};
use serde_json::{json, Value};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rigaudit");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A bundle made from the seed page's card with `edit` applied, and optionally a speed result
/// whose start line reports an NCCL version.
struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new(edit: impl FnOnce(&mut Value), start_line: Option<&str>) -> Case {
        let dir = tempfile::tempdir().expect("tmp");
        let b = dir.path().join("bundle");
        fs::create_dir_all(b.join("speed")).expect("mkdir");
        let text = fs::read_to_string(
            Path::new(ROOT).join("fixtures/pages/tensorfold-127-stock-2x/card.json"),
        )
        .expect("the seed card fixture");
        let mut card: Value = serde_json::from_str(&text).expect("card json");
        edit(&mut card);
        let card_bytes = serde_json::to_vec_pretty(&card).expect("json");
        fs::write(b.join("card.json"), &card_bytes).expect("write");
        let mut files = vec![
            json!({"kind": "card", "path": "card.json", "sha256": sha(&card_bytes), "published": true}),
        ];
        if let Some(line) = start_line {
            let sr = serde_json::to_vec(&json!({"server": {"start_lines": [line]}})).expect("json");
            fs::write(b.join("speed/speed-result.json"), &sr).expect("write");
            files.push(json!({"kind": "speed-result", "path": "speed/speed-result.json", "sha256": sha(&sr), "published": true}));
        }
        let manifest = json!({
            "format": "rigaudit-bundle/1",
            "id": "rehash-test",
            "title": "rehash test bundle",
            "setup": {"engine": "TensorFold 1.2.7", "checkpoint": "GLM", "hardware": "2 boxes"},
            "files": files,
        });
        fs::write(
            b.join("bundle.json"),
            serde_json::to_vec_pretty(&manifest).expect("json"),
        )
        .expect("write");
        fs::create_dir_all(dir.path().join("root")).expect("mkdir");
        Case { dir }
    }

    /// A case whose card records only what `edit` sets (see [`only`]), with no speed result.
    fn only(edit: impl FnOnce(&mut Value)) -> Case {
        Case::new(
            |c| {
                only(c);
                edit(c);
            },
            None,
        )
    }

    fn bundle(&self) -> PathBuf {
        self.dir.path().join("bundle")
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// [`Case::run`], asserted to exit with `code`; the report.
    #[track_caller]
    fn run_expecting(&self, code: i32, args: &[&str]) -> Value {
        let (got, r, err) = self.run(args);
        assert_eq!(got, code, "{r:#}\n{err}");
        r
    }

    /// Runs `rigaudit rehash BUNDLE ARGS --format json --quiet`: exit code and report.
    fn run(&self, args: &[&str]) -> (i32, Value, String) {
        let out = Command::new(BIN)
            .arg("rehash")
            .arg(self.bundle())
            .args(args)
            .args(["--format", "json", "--quiet"])
            .output()
            .expect("run rigaudit");
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (code, report, stderr)
    }
}

fn findings<'a>(r: &'a Value, check: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .map(|a| a.iter().filter(|f| f["check"] == check).collect())
        .unwrap_or_default()
}

fn with_severity<'a>(r: &'a Value, check: &str, sev: &str) -> Vec<&'a Value> {
    findings(r, check)
        .into_iter()
        .filter(|f| f["severity"] == sev)
        .collect()
}

fn msg(f: &Value) -> &str {
    f["message"].as_str().unwrap_or("")
}

/// Asserts the finding `f`'s message says `text` (and shows the message when it does not).
#[track_caller]
fn assert_says(f: &Value, text: &str) {
    assert!(msg(f).contains(text), "{}", msg(f));
}

fn no_nccl(c: &mut Value) {
    c["nccl"] = Value::Null;
}

/// A card that records only what a test is about: no package, binary, NCCL or shard count.
fn only(c: &mut Value) {
    c["engine"]["package"] = Value::Null;
    c["engine"]["binary"] = Value::Null;
    no_nccl(c);
    c["checkpoint"]["shards"] = Value::Null;
    c["checkpoint"]["revision_file"] = Value::Null;
}

/// A release-like archive from real files: a real executable as the engine binary, the project's
/// own schemas beside it, below one top folder as releases do.
fn release_tar_gz(path: &Path) -> String {
    let exe = fs::read("/usr/bin/env")
        .or_else(|_| fs::read(BIN))
        .expect("a real executable");
    let schema = |name: &str| fs::read(Path::new(ROOT).join("schemas").join(name)).unwrap();
    let (card, bundle) = (schema("card.schema.json"), schema("bundle.schema.json"));
    let members: [(&str, &[u8]); 3] = [
        ("tensorfold-1.2.7/tensorfold-native", &exe),
        ("tensorfold-1.2.7/schemas/card.schema.json", &card),
        ("tensorfold-1.2.7/schemas/bundle.schema.json", &bundle),
    ];
    common::write_tar_gz(path, &members, flate2::Compression::default());
    sha(&exe)
}

#[test]
fn package_and_binary_inside_pass_on_published_prefix() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pkg = tmp.path().join("tensorfold-1.2.7-linux-aarch64.tar.gz");
    let bin_digest = release_tar_gz(&pkg);
    let pkg_digest = sha_file(&pkg);
    let case = Case::only(|c| {
        c["engine"]["package"] =
            json!({"file": "tensorfold-1.2.7-linux-aarch64.tar.gz", "sha256": &pkg_digest[..8]});
        c["engine"]["binary"] = json!({"path": "tensorfold-native", "sha256": bin_digest});
    });
    fs::copy(
        &pkg,
        case.root().join("tensorfold-1.2.7-linux-aarch64.tar.gz"),
    )
    .expect("copy");
    let r = case.run_expecting(0, &["--root", case.root().to_str().expect("utf8")]);
    let p = findings(&r, "rehash.package-digest");
    assert_eq!(p.len(), 1);
    assert_says(p[0], "matches the 8 published digits");
    assert!(!msg(p[0]).contains("full digest"));
    let b = findings(&r, "rehash.binary-digest");
    assert_eq!(b.len(), 1);
    assert_says(b[0], "!tensorfold-1.2.7/tensorfold-native");
    assert!(msg(b[0]).contains("matches the full digest"));
    // Nothing was unpacked next to the package.
    let left: Vec<_> = fs::read_dir(case.root())
        .expect("ls")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn package_and_binary_fail_when_they_differ() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pkg = tmp.path().join("tensorfold-1.2.7-linux-aarch64.tar.gz");
    release_tar_gz(&pkg);
    let case = Case::only(|c| {
        c["engine"]["package"] =
            json!({"file": "tensorfold-1.2.7-linux-aarch64.tar.gz", "sha256": "250b7cd3"});
        c["engine"]["binary"] = json!({"path": "tensorfold-native", "sha256": "441a3847"});
    });
    let r = case.run_expecting(1, &["--file", &format!("package={}", pkg.display())]);
    let p = with_severity(&r, "rehash.package-digest", "error");
    assert_says(p[0], "the card records 250b7cd3");
    let b = with_severity(&r, "rehash.binary-digest", "error");
    assert_says(b[0], "the card records 441a3847");
}

#[test]
fn zip_package_member_is_read_as_a_stream() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pkg = tmp.path().join("engine.zip");
    let exe = fs::read("/usr/bin/env")
        .or_else(|_| fs::read(BIN))
        .expect("a real executable");
    {
        let mut z = zip::ZipWriter::new(fs::File::create(&pkg).expect("create"));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("engine/tensorfold-native", opts)
            .expect("start");
        z.write_all(&exe).expect("write");
        z.finish().expect("finish");
    }
    let good = sha(&exe);
    let case = Case::only(|c| {
        c["engine"]["package"] = json!({"file": "engine.zip", "sha256": sha_file(&pkg)});
        c["engine"]["binary"] = json!({"path": "tensorfold-native", "sha256": good});
    });
    let r = case.run_expecting(0, &["--file", &format!("package={}", pkg.display())]);
    assert!(msg(findings(&r, "rehash.package-digest")[0]).contains("matches the full digest"));
    assert!(msg(findings(&r, "rehash.binary-digest")[0])
        .contains("engine.zip!engine/tensorfold-native"));
    // A package without the member fails the binary check with a reason.
    let case = Case::only(|c| {
        c["engine"]["package"] = json!({"file": "engine.zip", "sha256": sha_file(&pkg)});
        c["engine"]["binary"] = json!({"path": "tensorfold-other", "sha256": good});
    });
    let r = case.run_expecting(1, &["--file", &format!("package={}", pkg.display())]);
    assert!(msg(with_severity(&r, "rehash.binary-digest", "error")[0])
        .contains("holds no member named tensorfold-other"));
}

fn write_checkpoint(dir: &Path, shards: usize, readme: &str, config: &str, revision: Option<&str>) {
    fs::create_dir_all(dir).expect("mkdir");
    for i in 1..=shards {
        let body: Vec<u8> = (0..(200_000 + i * 7))
            .map(|k| ((k * 31 + i) % 251) as u8)
            .collect();
        fs::write(
            dir.join(format!("model-{i:05}-of-{shards:05}.safetensors")),
            body,
        )
        .expect("write");
    }
    fs::write(dir.join("config.json"), config).expect("write");
    fs::write(dir.join("tokenizer.json"), "{\"model\": {}}").expect("write");
    fs::write(dir.join("README.md"), readme).expect("write");
    if let Some(r) = revision {
        fs::write(dir.join("revision"), format!("{r}\n")).expect("write");
    }
}

#[test]
fn snapshot_is_weights_equal_to_the_pin_when_only_the_model_card_differs() {
    let case = Case::only(|c| {
        c["checkpoint"]["snapshot"] = json!("078455ff");
        c["checkpoint"]["shards"] = json!(3);
        c["checkpoint"]["revision_file"] =
            json!({"path": "revision", "content": "76c0b517", "written_by": "hand"});
    });
    let pin = case.dir.path().join("pin-76c0b517");
    write_checkpoint(
        &pin,
        3,
        "# model card v1",
        "{\"layers\": 2}",
        Some("76c0b517"),
    );
    let snap = case.root().join("GLM");
    write_checkpoint(
        &snap,
        3,
        "# model card v2, new links",
        "{\"layers\": 2}",
        Some("76c0b517"),
    );
    let r = case.run_expecting(
        0,
        &[
            "--root",
            case.root().to_str().expect("utf8"),
            "--compare",
            pin.to_str().expect("utf8"),
        ],
    );
    let f = findings(&r, "rehash.checkpoint-files");
    assert_eq!(f.len(), 1, "{r:#}");
    assert_eq!(f[0]["severity"], "info");
    assert_says(f[0], "is weights-equal");
    assert_says(f[0], "README.md (doc, changed)");
    assert_eq!(f[0]["data"]["weights_equal"], true);
    assert_eq!(
        findings(&r, "rehash.checkpoint-shards")[0]["severity"],
        "info"
    );
    // The hand-written marker names the pin while the folder is the snapshot: said, not failed.
    let rf = findings(&r, "rehash.revision-file");
    assert_says(rf[0], "snapshot 078455ff");
}

#[test]
fn changed_config_is_not_weights_equal_and_is_listed() {
    let case = Case::new(only, None);
    let pin = case.dir.path().join("pin");
    write_checkpoint(&pin, 3, "# card", "{\"layers\": 2}", None);
    let snap = case.root().join("GLM");
    write_checkpoint(&snap, 3, "# card", "{\"layers\": 3}", None);
    let r = case.run_expecting(
        1,
        &[
            "--file",
            &format!("checkpoint={}", snap.display()),
            "--compare",
            pin.to_str().expect("utf8"),
        ],
    );
    let f = with_severity(&r, "rehash.checkpoint-files", "error");
    assert_says(f[0], "not weights-equal");
    assert_says(f[0], "config.json (config, changed)");
    assert!(!msg(f[0]).contains("README"));
}

#[test]
fn written_manifest_is_sha256sum_compatible_and_compares() {
    let case = Case::only(|c| {
        c["checkpoint"]["shards"] = json!(2);
    });
    let snap = case.root().join("GLM");
    write_checkpoint(&snap, 2, "# card", "{}", None);
    let manifest = case.dir.path().join("pin.sha256");
    case.run_expecting(
        0,
        &[
            "--file",
            &format!("checkpoint={}", snap.display()),
            "--write-manifest",
            manifest.to_str().expect("utf8"),
        ],
    );
    let text = fs::read_to_string(&manifest).expect("manifest");
    assert_eq!(text.lines().count(), 5, "{text}");
    if let Ok(out) = Command::new("sha256sum")
        .arg("-c")
        .arg("--quiet")
        .arg(&manifest)
        .current_dir(&snap)
        .output()
    {
        assert!(
            out.status.success(),
            "sha256sum -c: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // One shard changed: the manifest comparison names it.
    fs::write(
        snap.join("model-00002-of-00002.safetensors"),
        b"other weights",
    )
    .expect("write");
    let r = case.run_expecting(
        1,
        &[
            "--file",
            &format!("checkpoint={}", snap.display()),
            "--compare",
            manifest.to_str().expect("utf8"),
        ],
    );
    assert!(
        msg(with_severity(&r, "rehash.checkpoint-files", "error")[0])
            .contains("model-00002-of-00002.safetensors (weight, changed)")
    );
}

#[test]
fn shard_count_and_revision_file_fail_against_the_card() {
    let case = Case::only(|c| {
        c["checkpoint"]["shards"] = json!(83);
        c["checkpoint"]["revision_file"] =
            json!({"path": "revision", "content": "76c0b517", "written_by": "download"});
    });
    let ck = case.root().join("GLM");
    write_checkpoint(&ck, 3, "# card", "{}", Some("078455ff"));
    fs::remove_file(ck.join("model-00002-of-00003.safetensors")).expect("rm");
    let r = case.run_expecting(1, &["--root", case.root().to_str().expect("utf8")]);
    let s = with_severity(&r, "rehash.checkpoint-shards", "error");
    assert_says(s[0], "holds 2 weight shards, the card says 83");
    assert_says(s[0], "numbered shards are missing (00002)");
    let rf = with_severity(&r, "rehash.revision-file", "error");
    assert_says(rf[0], "names '078455ff'");
    // The right revision and count pass.
    let case = Case::only(|c| {
        c["checkpoint"]["shards"] = json!(3);
        c["checkpoint"]["revision_file"] =
            json!({"path": "revision", "content": "76c0b517", "written_by": "download"});
    });
    write_checkpoint(
        &case.root().join("GLM"),
        3,
        "# card",
        "{}",
        Some("76c0b517"),
    );
    let r = case.run_expecting(0, &["--root", case.root().to_str().expect("utf8")]);
    assert_eq!(findings(&r, "rehash.revision-file")[0]["severity"], "info");
}

#[test]
fn checkpoints_on_two_boxes_must_agree() {
    let case = Case::new(only, None);
    write_checkpoint(&case.root().join("atom/GLM"), 2, "# card", "{}", None);
    write_checkpoint(
        &case.root().join("pgx/GLM"),
        2,
        "# card",
        "{\"x\": 1}",
        None,
    );
    let r = case.run_expecting(1, &["--root", case.root().to_str().expect("utf8")]);
    let b = with_severity(&r, "rehash.boxes-differ", "error");
    assert_says(b[0], "(box pgx) differs from");
    assert_says(b[0], "config.json");
}

#[test]
fn a_checkpoint_reached_on_two_boxes_through_hard_links_is_read_once() {
    let case = Case::new(only, None);
    let atom = case.root().join("atom/GLM");
    write_checkpoint(&atom, 2, "# card", "{}", None);
    let pgx = case.root().join("pgx/GLM");
    fs::create_dir_all(&pgx).expect("mkdir");
    let mut files = 0;
    for e in fs::read_dir(&atom).expect("list").flatten() {
        fs::hard_link(e.path(), pgx.join(e.file_name())).expect("link");
        files += 1;
    }
    // Digests are kept for files that had settled a second before their reading began.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let out = Command::new(BIN)
        .args(["--verbose", "rehash"])
        .arg(case.bundle())
        .args([
            "--root",
            case.root().to_str().expect("utf8"),
            "--format",
            "json",
        ])
        .output()
        .expect("run rigaudit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(out.status.code(), Some(0), "{r:#}\n{stderr}");
    assert!(findings(&r, "rehash.boxes-differ").is_empty(), "{r:#}");
    // The linked files once more, and the card: read once for its records, its digest made from
    // the same bytes and taken again when the bundle's files are hashed.
    let said = format!(
        "{} more digests of files already hashed in this run",
        files + 1
    );
    assert!(stderr.contains(&said), "{said}: {stderr}");
    assert!(!stderr.contains(" times\n"), "a file read twice: {stderr}");
}

#[test]
fn bundle_file_changed_after_the_manifest_fails() {
    let case = Case::new(
        |c| {
            only(c);
            c["checkpoint"]["shards"] = json!(1);
        },
        Some("NCCL version 2.30.7"),
    );
    write_checkpoint(&case.root().join("GLM"), 1, "# card", "{}", None);
    let r = case.run_expecting(0, &["--root", case.root().to_str().expect("utf8")]);
    assert!(msg(findings(&r, "rehash.bundle-file-digest")[0]).starts_with("2 raw files"));
    fs::write(
        case.bundle().join("speed/speed-result.json"),
        b"{\"server\": {\"start_lines\": []}}",
    )
    .expect("write");
    let r = case.run_expecting(1, &["--root", case.root().to_str().expect("utf8")]);
    let f = with_severity(&r, "rehash.bundle-file-digest", "error");
    assert_eq!(f[0]["file"], "speed/speed-result.json");
}

#[test]
fn checkpoint_with_nothing_to_compare_is_incomplete() {
    let case = Case::new(only, None);
    write_checkpoint(&case.root().join("GLM"), 1, "# card", "{}", None);
    let r = case.run_expecting(3, &["--root", case.root().to_str().expect("utf8")]);
    assert!(
        msg(findings(&r, "rehash.checkpoint-files")[0]).contains("nothing to compare them with")
    );
}

#[test]
fn nothing_found_is_incomplete_not_a_pass() {
    let case = Case::new(|_| {}, None);
    let r = case.run_expecting(3, &["--root", case.root().to_str().expect("utf8")]);
    assert_eq!(r["verdict"], "incomplete");
    assert!(findings(&r, "rehash.not-found")
        .iter()
        .any(|f| msg(f).contains("nothing but the bundle's own files")));
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    let case = Case::new(|_| {}, None);
    let (code, _, err) = case.run(&["--file", "engine=/x"]);
    assert_eq!(code, 2);
    assert_has(&err, "'engine' is no artifact name");
    let (code, _, err) = case.run(&["--root", "/no/such/folder"]);
    assert_eq!(code, 2);
    assert_has(&err, "/no/such/folder");
    let out = Command::new(BIN)
        .args(["rehash", "/no/such/bundle", "--quiet"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

// --- NCCL, with the real library -------------------------------------------------------------

/// The version and digest the real library has (from the wheel: 2.32.3 = 23203).
const REAL_VERSION: &str = "2.32.3";

fn nccl_card(digest_atom: &str, digest_pgx: &str, version: &str) -> impl FnOnce(&mut Value) {
    let (a, p, v) = (
        digest_atom.to_string(),
        digest_pgx.to_string(),
        version.to_string(),
    );
    move |c: &mut Value| {
        only(c);
        c["nccl"] = json!({
            "version": v,
            "file": "libnccl.so.2",
            "per_box": [{"box": "atom", "sha256": a}, {"box": "pgx", "sha256": p}],
        });
    }
}

#[test]
fn real_nccl_right_digest_and_version_pass() {
    let Some(lib) = real_nccl() else { return };
    let d = sha_file(&lib);
    let case = Case::new(
        nccl_card(&d[..8], &d, REAL_VERSION),
        Some("rank 0: NCCL version 2.32.3+cuda12.9"),
    );
    let r = case.run_expecting(
        0,
        &[
            "--file",
            &format!("nccl@atom={}", lib.display()),
            "--file",
            &format!("nccl@pgx={}", lib.display()),
        ],
    );
    let v = findings(&r, "rehash.nccl-version");
    assert_eq!(v.len(), 2, "{r:#}");
    for f in &v {
        assert_eq!(f["severity"], "info");
        assert_says(f, "ncclGetVersion of that file returns 2.32.3 (23203)");
        assert_eq!(f["data"]["queried"], true);
    }
    let dg = findings(&r, "rehash.nccl-digest");
    assert!(
        dg.iter()
            .any(|f| msg(f).contains("matches the 8 published digits")),
        "{r:#}"
    );
    assert!(
        dg.iter()
            .any(|f| msg(f).contains("matches the full digest")),
        "{r:#}"
    );
    assert!(findings(&r, "rehash.boxes-differ").is_empty());
}

#[test]
fn real_nccl_one_flipped_byte_fails_on_digest_and_names_the_box() {
    let Some(lib) = real_nccl() else { return };
    let d = sha_file(&lib);
    let case = Case::new(nccl_card(&d[..8], &d[..8], REAL_VERSION), None);
    fs::create_dir_all(case.root().join("atom")).expect("mkdir");
    fs::create_dir_all(case.root().join("pgx")).expect("mkdir");
    fs::copy(&lib, case.root().join("atom/libnccl.so.2")).expect("copy");
    let mut bytes = fs::read(&lib).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    fs::write(case.root().join("pgx/libnccl.so.2"), &bytes).expect("write");
    drop(bytes);
    let r = case.run_expecting(1, &["--root", case.root().to_str().expect("utf8")]);
    let e = with_severity(&r, "rehash.nccl-digest", "error");
    assert_eq!(e.len(), 1, "{r:#}");
    assert_says(e[0], "(box pgx)");
    let b = with_severity(&r, "rehash.boxes-differ", "error");
    assert_eq!(b.len(), 1, "{r:#}");
    assert_says(b[0], "pgx");
}

#[test]
fn real_nccl_other_recorded_version_fails_on_version() {
    let Some(lib) = real_nccl() else { return };
    let d = sha_file(&lib);
    // The seed page's record: NCCL 2.30.7 on the card and in the start line.
    let case = Case::new(
        nccl_card(&d[..8], &d[..8], "2.30.7"),
        Some("NCCL version 2.30.7+cuda13.3"),
    );
    let r = case.run_expecting(1, &["--file", &format!("nccl={}", lib.display())]);
    let v = with_severity(&r, "rehash.nccl-version", "error");
    assert_eq!(v.len(), 1, "{r:#}");
    assert_says(
        v[0],
        "returns 2.32.3 (23203), but the card says 2.30.7 (23007)",
    );
    assert_says(v[0], "start line reports 2.30.7");
    assert!(
        with_severity(&r, "rehash.nccl-digest", "error").is_empty(),
        "{r:#}"
    );
}

#[test]
fn missing_nccl_library_is_a_clear_finding() {
    // Needs no real library: the file is not there.
    let case = Case::new(nccl_card("fc7ea663", "fc7ea663", "2.30.7"), None);
    let missing = case.root().join("atom/libnccl.so.2.30.7");
    let r = case.run_expecting(1, &["--file", &format!("nccl@atom={}", missing.display())]);
    let f = with_severity(&r, "rehash.not-found", "error");
    assert_says(f[0], &missing.display().to_string());
    assert_says(f[0], "cannot be opened");
}

/// A file named like the NCCL library that is no shared library (text, a download error page) is
/// named as such: found under --root and named with --file alike, and never loaded.
#[test]
fn nccl_file_that_is_no_shared_library_is_named_so() {
    let case = Case::new(nccl_card("fc7ea663", "fc7ea663", "2.30.7"), None);
    let text = case.root().join("atom/libnccl.so.2");
    fs::create_dir_all(text.parent().expect("parent")).expect("mkdir");
    fs::write(&text, "<html>404 Not Found</html>\n").expect("write");
    let (file, dir) = (format!("nccl@atom={}", text.display()), case.root());
    let named = ["--file", &file];
    let root = ["--root", dir.to_str().expect("utf8")];
    for args in [&named[..], &root[..]] {
        let r = case.run_expecting(1, args);
        let d = with_severity(&r, "rehash.nccl-digest", "error");
        assert!(!d.is_empty(), "{args:?}: {r:#}");
        assert_says(
            d[0],
            "not a shared library (ELF header missing; it starts with",
        );
        assert_says(d[0], "sha256 is ");
        let v = findings(&r, "rehash.nccl-version");
        assert!(
            v.iter()
                .any(|f| f["severity"] == "warning" && msg(f).contains("not a shared library")),
            "{args:?}: {v:#?}"
        );
    }
}

#[test]
fn unloadable_nccl_is_not_queried_with_a_reason_never_a_crash() {
    let case = Case::new(nccl_card("fc7ea663", "fc7ea663", "2.30.7"), None);
    // A library for another processor: its version is read from its text, marked as not queried.
    let arm = case.root().join("arm/libnccl.so.2");
    fs::create_dir_all(arm.parent().expect("parent")).expect("mkdir");
    let mut data = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\xb7\0".to_vec();
    data.resize(4096, 0);
    data.extend(b"NCCL version 2.30.7+cuda13.3\0");
    fs::write(&arm, &data).expect("write");
    // A damaged library for this processor: the loader refuses it in the child process.
    let broken = case.root().join("x86/libnccl.so.2");
    fs::create_dir_all(broken.parent().expect("parent")).expect("mkdir");
    let mut data = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0".to_vec();
    data.extend(match std::env::consts::ARCH {
        "aarch64" => [0xb7u8, 0],
        _ => [0x3eu8, 0],
    });
    data.resize(4096, 0xff);
    fs::write(&broken, &data).expect("write");
    let (code, r, err) = case.run(&[
        "--file",
        &format!("nccl={}", arm.display()),
        "--file",
        &format!("nccl={}", broken.display()),
    ]);
    // Digests differ from fc7ea663: exit 1, and a report, not a crash.
    assert_eq!(code, 1, "{r:#}\n{err}");
    let v = findings(&r, "rehash.nccl-version");
    let broken_f = v
        .iter()
        .find(|f| msg(f).contains("x86/libnccl.so.2"))
        .expect("finding for the damaged library");
    assert_eq!(broken_f["severity"], "warning", "{}", msg(broken_f));
    assert_says(broken_f, "not queried");
    if std::env::consts::ARCH != "aarch64" {
        let arm_f = v
            .iter()
            .find(|f| msg(f).contains("arm/libnccl.so.2"))
            .expect("finding for the arm library");
        assert_says(arm_f, "built for aarch64");
        assert_says(arm_f, "2.30.7");
        assert_eq!(arm_f["data"]["queried"], false);
    }
}

// --- what a running server mapped (--running) ----------------------------------------------

/// A process that loads `libnccl.so.2` by name with `folder` first on LD_LIBRARY_PATH, says so,
/// and waits; killed when dropped.
struct Loader(std::process::Child);

impl Loader {
    fn start(folder: &Path) -> Loader {
        use std::io::BufRead;
        let script = "import ctypes, sys, time\nctypes.CDLL('libnccl.so.2')\nprint('loaded', flush=True)\ntime.sleep(120)\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .env("LD_LIBRARY_PATH", folder)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("its line");
        assert_eq!(line.trim(), "loaded");
        Loader(child)
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two ranks already running: rank 0 loaded the NCCL the card records, rank 1 a copy with bytes
/// appended (loadable, another digest) from another folder. `rehash --running` reads both now:
/// rank 1's NCCL is an error naming both files and its LD_LIBRARY_PATH, the ranks differ, rank 0
/// passes; the inventory lists both libraries hashed.
#[test]
fn running_servers_are_read_and_judged_without_a_replay() {
    let Some(lib) = real_nccl() else { return };
    let d = sha_file(&lib);
    let case = Case::new(nccl_card(&d, &d, REAL_VERSION), None);
    let other = case.dir.path().join("other-nccl");
    fs::create_dir_all(&other).unwrap();
    let mut bytes = fs::read(&lib).unwrap();
    bytes.extend_from_slice(b"appended after the ELF image");
    fs::write(other.join("libnccl.so.2"), &bytes).unwrap();
    let good = Loader::start(lib.parent().unwrap());
    let swapped = Loader::start(&other);
    let (code, r, err) = case.run(&[
        "--running",
        &format!("0={}", good.0.id()),
        "--running",
        &format!("1={}", swapped.0.id()),
    ]);
    assert_eq!(code, 1, "{r:#}\n{err}");
    let nccl = findings(&r, "loaded.nccl");
    assert_eq!(nccl.len(), 1, "{r:#}");
    assert_says(nccl[0], "rank 1 mapped ");
    assert_says(nccl[0], &format!("{}/libnccl.so.2", other.display()));
    assert_says(nccl[0], &format!("LD_LIBRARY_PATH={}", other.display()));
    assert_says(nccl[0], "on box pgx");
    assert_eq!(findings(&r, "loaded.ranks-differ").len(), 1, "{r:#}");
    let ranks = r["loaded"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert_eq!(ranks[1]["box"], "pgx");
    assert_eq!(ranks[0]["read_at"], json!(["now"]));
    let digest_of = |rank: &Value| -> String {
        rank["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["path"].as_str().unwrap().ends_with("libnccl.so.2"))
            .map(|o| o["sha256"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(digest_of(&ranks[0]), d);
    assert_eq!(digest_of(&ranks[1]), sha(&bytes));
    // A process that is not running is refused before anything is read.
    let (code, _, err) = case.run(&["--running", "999999999"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no process 999999999"), "{err}");
}
