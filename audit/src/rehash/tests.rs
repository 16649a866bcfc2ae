use super::*;
use crate::testkit::assert_says;

const FULL_PKG: &str = "250b7cd3aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const FULL_BIN: &str = "441a3847bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const FULL_NCCL: &str = "fc7ea663cccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn card() -> Card {
    serde_json::from_value(json!({
            "hardware": {"description": "2x GB10", "boxes": [{"name": "atom", "rank": 0}, {"name": "pgx", "rank": 1}]},
            "engine": {
                "name": "TensorFold", "version": "1.2.7",
                "package": {"file": "tensorfold-1.2.7-linux-aarch64.tar.gz", "sha256": "250b7cd3"},
                "binary": {"path": "tensorfold-native", "sha256": "441a3847"}
            },
            "nccl": {"version": "2.30.7", "file": "libnccl.so.2.30.7",
                     "per_box": [{"box": "atom", "sha256": "fc7ea663"}, {"box": "pgx", "sha256": "fc7ea663"}]},
            "checkpoint": {"repo": "Mia-AiLab/GLM", "revision": "76c0b517", "shards": 3,
                           "revision_file": {"path": "revision", "content": "76c0b517", "written_by": "download"}},
            "ranks": 2,
            "commands": [],
            "sampling": {"defaults": {}, "defaults_source": "x"},
            "measured": "2026-11-12T02:06:00Z"
        }))
        .expect("test card")
}

fn measured() -> Measured {
    Measured {
        card_file: "card.json".into(),
        searched: vec!["/roots".into()],
        ..Default::default()
    }
}

fn hashed(path: &str, d: &str) -> Hashed {
    Hashed {
        at: Location::file(path),
        sha256: Ok(d.to_string()),
    }
}

fn of<'a>(c: &'a Findings, id: &str) -> Vec<&'a Finding> {
    c.findings.iter().filter(|f| f.check == id).collect()
}

/// The first finding `id` of checking `m` against the card, asserted to have `severity`
/// and to say `text`.
fn assert_first(m: &Measured, id: &str, severity: Severity, text: &str) -> Finding {
    let c = check(&card(), m);
    let f = of(&c, id)[0].clone();
    assert_eq!(f.severity, severity);
    assert!(f.message.contains(text), "{}", f.message);
    f
}

fn errors(c: &Findings) -> Vec<&Finding> {
    c.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

#[test]
fn package_prefix_match_is_never_called_full() {
    let mut m = measured();
    m.package
        .push(hashed("/r/tensorfold-1.2.7-linux-aarch64.tar.gz", FULL_PKG));
    let c = check(&card(), &m);
    let f = of(&c, "rehash.package-digest");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Info);
    assert_says(f[0], "matches the 8 published digits");
    assert!(!f[0].message.contains("full digest"));
    assert_eq!(f[0].data["match"], "prefix");
    assert!(c.ran.contains(&"rehash.package-digest".to_string()));
}

#[test]
fn package_mismatch_fails() {
    let mut m = measured();
    m.package.push(hashed("/r/p.tar.gz", OTHER));
    let f = assert_first(
        &m,
        "rehash.package-digest",
        Severity::Error,
        "the card records 250b7cd3",
    );
    assert_eq!(f.pointer.as_deref(), Some("/engine/package/sha256"));
}

#[test]
fn full_digest_is_called_full() {
    let mut cd = card();
    cd.engine.package.as_mut().expect("package").sha256 = FULL_PKG.into();
    let mut m = measured();
    m.package.push(hashed("/r/p.tar.gz", FULL_PKG));
    let c = check(&cd, &m);
    assert!(of(&c, "rehash.package-digest")[0]
        .message
        .contains("matches the full digest"));
}

#[test]
fn malformed_record_is_an_error() {
    let mut cd = card();
    cd.engine.package.as_mut().expect("package").sha256 = "250b7".into();
    let mut m = measured();
    m.package.push(hashed("/r/p.tar.gz", FULL_PKG));
    let c = check(&cd, &m);
    assert_eq!(of(&c, "rehash.package-digest")[0].severity, Severity::Error);
}

#[test]
fn binary_member_pass_and_fail() {
    let mut m = measured();
    m.binary.push(Hashed {
        at: Location::file("/r/p.tar.gz").member("tf/tensorfold-native"),
        sha256: Ok(FULL_BIN.into()),
    });
    let c = check(&card(), &m);
    assert!(errors(&c).is_empty(), "{:?}", errors(&c));
    assert!(of(&c, "rehash.binary-digest")[0]
        .message
        .contains("/r/p.tar.gz!tf/tensorfold-native"));
    m.binary[0].sha256 = Ok(OTHER.into());
    let c = check(&card(), &m);
    assert_eq!(of(&c, "rehash.binary-digest")[0].severity, Severity::Error);
}

#[test]
fn unreadable_file_is_an_error() {
    let mut m = measured();
    m.binary.push(Hashed {
        at: Location::file("/r/x"),
        sha256: Err("permission denied".into()),
    });
    assert_first(
        &m,
        "rehash.binary-digest",
        Severity::Error,
        "permission denied",
    );
}

#[test]
fn nothing_found_warns_and_runs_nothing() {
    let c = check(&card(), &measured());
    assert!(c.ran.is_empty(), "{:?}", c.ran);
    let nf = of(&c, "rehash.not-found");
    assert_eq!(nf.len(), 4, "{nf:?}");
    assert!(nf.iter().all(|f| f.severity == Severity::Warning));
    assert!(nf[0].message.contains("searched /roots"));
    // Asked to hash and found nothing: the rehash is incomplete, and says what to give.
    let f = findings(&card(), &measured());
    let why = f.incomplete.expect("incomplete");
    assert!(why.contains("--root DIR or --file NAME=PATH"), "{why}");
}

#[test]
fn explicit_missing_file_is_an_error() {
    let mut m = measured();
    m.missing.push(MissingFile {
        kind: "nccl".into(),
        at: Location::file("/nope/libnccl.so.2"),
        why: "No such file".into(),
    });
    let c = check(&card(), &m);
    let nf: Vec<_> = of(&c, "rehash.not-found")
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert_eq!(nf.len(), 1);
    assert!(nf[0].message.contains("/nope/libnccl.so.2"));
}

fn nccl(box_name: Option<&str>, d: &str, v: NcclVersion) -> NcclSeen {
    let mut at = Location::file(format!("/{}/libnccl.so.2.30.7", box_name.unwrap_or("here")));
    at.box_name = box_name.map(String::from);
    NcclSeen {
        file: Hashed {
            at,
            sha256: Ok(d.into()),
        },
        version: v,
    }
}

/// [`nccl`] with the version the library reported when loaded.
fn queried(box_name: Option<&str>, d: &str, code: i64) -> NcclSeen {
    nccl(box_name, d, NcclVersion::Queried { code })
}

#[test]
fn nccl_digest_and_version_pass() {
    let mut m = measured();
    m.start_line_nccl = Some("2.30.7".into());
    m.nccl.push(queried(Some("atom"), FULL_NCCL, 23007));
    m.nccl.push(queried(Some("pgx"), FULL_NCCL, 23007));
    let c = check(&card(), &m);
    assert!(errors(&c).is_empty(), "{:?}", errors(&c));
    let v = of(&c, "rehash.nccl-version");
    assert_eq!(v.len(), 2);
    assert!(v[0].message.contains("2.30.7 (23007)"));
    assert!(v[0].message.contains("start line"));
    assert_eq!(of(&c, "rehash.nccl-digest").len(), 2);
    assert!(of(&c, "rehash.boxes-differ").is_empty());
    assert!(of(&c, "rehash.not-found")
        .iter()
        .all(|f| !f.message.contains("NCCL")));
}

#[test]
fn nccl_digest_fails_on_one_box_and_names_it() {
    let mut m = measured();
    m.nccl.push(queried(Some("atom"), FULL_NCCL, 23007));
    m.nccl.push(queried(Some("pgx"), OTHER, 23007));
    m.nccl.push(queried(None, FULL_NCCL, 23007));
    let c = check(&card(), &m);
    let d = of(&c, "rehash.nccl-digest");
    assert_eq!(
        d.iter().filter(|f| f.severity == Severity::Error).count(),
        1
    );
    assert!(d
        .iter()
        .any(|f| f.severity == Severity::Error && f.message.contains("(box pgx)")));
    let b = of(&c, "rehash.boxes-differ");
    assert_eq!(b.len(), 1);
    assert!(b[0].message.contains("2 of 3 copies"), "{}", b[0].message);
    assert_says(b[0], "(box pgx) has 0000");
    assert!(!b[0].message.contains("(box atom) has"), "{}", b[0].message);
}

#[test]
fn nccl_version_fails_against_card_and_start_line() {
    let mut m = measured();
    m.start_line_nccl = Some("2.30.7".into());
    m.nccl.push(queried(Some("atom"), FULL_NCCL, 23203));
    let v = assert_first(&m, "rehash.nccl-version", Severity::Error, "2.32.3 (23203)");
    assert!(v.message.contains("the card says 2.30.7 (23007)"));
    assert!(v.message.contains("start line reports 2.30.7"));
}

#[test]
fn card_and_start_line_disagree() {
    let mut m = measured();
    m.start_line_nccl = Some("2.28.3".into());
    let c = check(&card(), &m);
    let v = of(&c, "rehash.nccl-version");
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].severity, Severity::Error);
}

/// A file that is no shared library is named as such in the digest finding, not only as a
/// digest that differs.
#[test]
fn nccl_file_that_is_no_library_is_named_so() {
    let mut m = measured();
    m.nccl.push(nccl(
        Some("atom"),
        &"0".repeat(64),
        NcclVersion::NotLibrary {
            why: "ELF header missing; it starts with \"hello\"".into(),
        },
    ));
    let c = check(&card(), &m);
    let d = of(&c, "rehash.nccl-digest");
    assert_eq!(d[0].severity, Severity::Error);
    assert!(
        d[0].message
            .contains("not a shared library (ELF header missing; it starts with \"hello\")"),
        "{}",
        d[0].message
    );
    assert!(d[0].message.contains("sha256 is 0000"), "{}", d[0].message);
    let v = of(&c, "rehash.nccl-version");
    assert_eq!(v[0].severity, Severity::Warning);
    assert!(
        v[0].message.contains("not a shared library"),
        "{}",
        v[0].message
    );
}

#[test]
fn nccl_not_queried_is_a_warning_with_the_reason() {
    let mut m = measured();
    m.nccl.push(nccl(
        None,
        FULL_NCCL,
        NcclVersion::NotQueried {
            why: "built for aarch64".into(),
        },
    ));
    assert_first(
        &m,
        "rehash.nccl-version",
        Severity::Warning,
        "not queried: built for aarch64",
    );
    m.nccl[0].version = NcclVersion::FromText {
        version: "2.30.7".into(),
        why: "built for aarch64".into(),
    };
    assert_first(
        &m,
        "rehash.nccl-version",
        Severity::Info,
        "not queried (built for aarch64)",
    );
}

#[test]
fn card_records_different_digests_per_box() {
    let mut cd = card();
    cd.nccl.as_mut().expect("nccl").per_box[1].sha256 = "deadbeef".into();
    let c = check(&cd, &measured());
    assert_eq!(of(&c, "rehash.boxes-differ")[0].severity, Severity::Error);
    // A full digest and its published prefix agree.
    cd.nccl.as_mut().expect("nccl").per_box[1].sha256 = FULL_NCCL.into();
    let c = check(&cd, &measured());
    assert!(of(&c, "rehash.boxes-differ").is_empty());
}

#[test]
fn versions() {
    assert_eq!(nccl_code("2.30.7"), Some(23007));
    assert_eq!(nccl_code("2.32.3"), Some(23203));
    assert_eq!(nccl_code("2.30.7-1+cuda13.3"), Some(23007));
    assert_eq!(nccl_code("2.8.4"), Some(2804));
    assert_eq!(nccl_code("2.x"), None);
    assert_eq!(nccl_dotted(23007), "2.30.7");
    assert_eq!(nccl_dotted(2804), "2.8.4");
}

#[test]
fn classes() {
    assert_eq!(
        classify("model-00001-of-00083.safetensors", None),
        FileClass::Weight
    );
    assert_eq!(classify("config.json", None), FileClass::Config);
    assert_eq!(
        classify("model.safetensors.index.json", None),
        FileClass::Config
    );
    assert_eq!(classify("merges.txt", None), FileClass::Config);
    assert_eq!(classify("README.md", None), FileClass::Doc);
    assert_eq!(classify("LICENSE", None), FileClass::Doc);
    assert_eq!(classify("revision", Some("revision")), FileClass::Marker);
}

fn mf(origin: &str, files: &[(&str, &str)]) -> FileManifest {
    FileManifest {
        origin: origin.into(),
        entries: files
            .iter()
            .map(|(p, d)| ManifestEntry {
                path: p.to_string(),
                sha256: d.to_string(),
            })
            .collect(),
    }
}

fn ckpt(files: &[(&str, &str)], rev: Option<&str>) -> CheckpointSeen {
    CheckpointSeen {
        at: Location::file("/m/GLM"),
        manifest: mf("/m/GLM", files),
        unreadable: vec![],
        revision_file: rev.map(|r| RevisionFileSeen::Content(format!("{r}\n"))),
        hub_revision: None,
    }
}

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn three_shards(readme: &str, config: &str) -> Vec<(&'static str, String)> {
    vec![
        ("model-00001-of-00003.safetensors", A.to_string()),
        ("model-00002-of-00003.safetensors", A.to_string()),
        ("model-00003-of-00003.safetensors", A.to_string()),
        ("config.json", config.to_string()),
        ("README.md", readme.to_string()),
    ]
}

fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(p, d)| (*p, d.as_str())).collect()
}

/// A checkpoint of three shards (the README and config of digest `A`) whose revision file
/// names `revision`.
fn pinned(revision: &str) -> CheckpointSeen {
    ckpt(&as_refs(&three_shards(A, A)), Some(revision))
}

/// [`measured`] with one [`pinned`] checkpoint.
fn measured_pinned(revision: &str) -> Measured {
    let mut m = measured();
    m.checkpoints.push(pinned(revision));
    m
}

/// The snapshot folder `snap` (revision 76c0b517) checked against the pinned revision's
/// three shards, given with `--compare` as `origin`.
fn snapshot_against_pin(snap: Vec<(&'static str, String)>, origin: &str) -> Findings {
    let pin = three_shards(A, A);
    let mut m = measured();
    m.checkpoints.push(ckpt(&as_refs(&snap), Some("76c0b517")));
    m.reference = Some(mf(origin, &as_refs(&pin)));
    check(&card(), &m)
}

#[test]
fn snapshot_weights_equal_when_only_the_model_card_differs() {
    // 078455ff vs 76c0b517: same weights and config, another README.
    let c = snapshot_against_pin(three_shards(B, A), "folder of revision 76c0b517");
    let f = of(&c, "rehash.checkpoint-files");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Info, "{}", f[0].message);
    assert!(f[0].message.contains("is weights-equal"));
    assert_says(f[0], "README.md (doc, changed)");
    assert_eq!(f[0].data["weights_equal"], true);
}

#[test]
fn changed_config_breaks_weights_equality_and_is_listed() {
    let c = snapshot_against_pin(three_shards(A, B), "pin");
    let f = of(&c, "rehash.checkpoint-files");
    assert_eq!(f[0].severity, Severity::Error);
    assert_says(f[0], "config.json (config, changed)");
    assert!(!f[0].message.contains("README"));
}

#[test]
fn recorded_files_with_prefixes_and_a_missing_shard() {
    let mut cd = card();
    cd.checkpoint.files = serde_json::from_value(json!([
        {"path": "model-00001-of-00003.safetensors", "sha256": "aaaaaaaa"},
        {"path": "model-00002-of-00003.safetensors", "sha256": A},
    ]))
    .expect("files");
    let mut m = measured();
    m.checkpoints.push(ckpt(
        &[("model-00001-of-00003.safetensors", A)],
        Some("76c0b517"),
    ));
    let c = check(&cd, &m);
    let f = of(&c, "rehash.checkpoint-files");
    assert_eq!(f[0].severity, Severity::Error);
    assert_says(f[0], "model-00002-of-00003.safetensors (weight, missing)");
    let s = of(&c, "rehash.checkpoint-shards");
    assert_eq!(s[0].severity, Severity::Error);
    assert_says(s[0], "holds 1 weight shards, the card says 3");
    assert_says(s[0], "2 numbered shards are missing (00002, 00003)");
}

#[test]
fn shard_count_passes() {
    let m = measured_pinned("76c0b517");
    let c = check(&card(), &m);
    let s = of(&c, "rehash.checkpoint-shards");
    assert_eq!(s[0].severity, Severity::Info);
    assert!(errors(&c).is_empty(), "{:?}", errors(&c));
}

#[test]
fn revision_file_pass_and_fail() {
    let mut m = measured_pinned("76c0b517f00d");
    let c = check(&card(), &m);
    assert_eq!(of(&c, "rehash.revision-file")[0].severity, Severity::Info);
    m.checkpoints[0].revision_file = Some(RevisionFileSeen::Content("078455ff".into()));
    assert_first(
        &m,
        "rehash.revision-file",
        Severity::Error,
        "names '078455ff'",
    );
    m.checkpoints[0].revision_file = Some(RevisionFileSeen::Missing);
    let c = check(&card(), &m);
    assert_eq!(of(&c, "rehash.revision-file")[0].severity, Severity::Error);
}

#[test]
fn hand_written_marker_over_a_snapshot_is_said() {
    let mut cd = card();
    cd.checkpoint.snapshot = Some("078455ff".into());
    let mut m = measured_pinned("76c0b517");
    m.checkpoints[0].hub_revision = Some("078455ff0123456789abcdef0123456789abcdef".into());
    let c = check(&cd, &m);
    let r = of(&c, "rehash.revision-file");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].message.contains("snapshot 078455ff"));
    m.checkpoints[0].hub_revision = Some("11111111aaaa".into());
    let c = check(&cd, &m);
    assert!(of(&c, "rehash.revision-file")
        .iter()
        .any(|f| f.severity == Severity::Error));
}

#[test]
fn checkpoints_on_two_boxes_differ() {
    let mut m = measured_pinned("76c0b517");
    let mut other = pinned("76c0b517");
    other.manifest.entries[1].sha256 = B.into();
    other.at = other.at.on("pgx");
    m.checkpoints.push(other);
    let c = check(&card(), &m);
    let b = of(&c, "rehash.boxes-differ");
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].severity, Severity::Error);
    assert!(b[0].message.contains("model-00002-of-00003.safetensors"));
    assert!(b[0].message.contains("(box pgx)"));
}

#[test]
fn bundle_files() {
    let mut m = measured();
    m.bundle_files.push(BundleFileSeen {
        path: "card.json".into(),
        recorded: Some(A.into()),
        published: true,
        sha256: Some(Ok(A.into())),
    });
    m.bundle_files.push(BundleFileSeen {
        path: "speed/x.json".into(),
        recorded: Some(A.into()),
        published: true,
        sha256: Some(Ok(B.into())),
    });
    m.bundle_files.push(BundleFileSeen {
        path: "gone.json".into(),
        recorded: Some(A.into()),
        published: true,
        sha256: None,
    });
    let c = check(&card(), &m);
    let d = of(&c, "rehash.bundle-file-digest");
    assert_eq!(
        d.iter().filter(|f| f.severity == Severity::Error).count(),
        1
    );
    assert!(d.iter().any(|f| f.message.starts_with("1 raw files")));
    assert!(of(&c, "rehash.not-found")
        .iter()
        .any(|f| f.file.as_deref() == Some("gone.json")));
}

#[test]
fn revisions() {
    assert!(same_revision("76c0b517", "76c0b517abcdef"));
    assert!(!same_revision("76c0b51", "76c0b527"));
    assert!(!same_revision("76c0", "76c0b517"));
    assert!(!same_revision("", ""));
}

#[test]
fn ids_are_in_the_catalogue() {
    let c = check(&card(), &measured());
    for f in &c.findings {
        assert!(
            CHECKS.iter().any(|k| k.id == f.check),
            "{} not in CHECKS",
            f.check
        );
    }
}
