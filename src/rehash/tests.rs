use super::*;

fn read(text: &str) -> Result<Vec<(String, String)>, String> {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("m");
    std::fs::write(&p, text).expect("write");
    read_manifest_file(&p).map(|m| m.entries.into_iter().map(|e| (e.path, e.sha256)).collect())
}

#[test]
fn manifests_in_sha256sum_and_json_shapes_read_alike() {
    let d = "ab".repeat(32);
    let want = vec![
        ("a.safetensors".to_string(), d.clone()),
        ("dir/b.json".to_string(), d.clone()),
    ];
    let text = format!(
        "# made by sha256sum\n{}  ./a.safetensors\n\n{} *dir/b.json\n",
        d.to_uppercase(),
        d
    );
    assert_eq!(read(&text).unwrap(), want);
    let list = format!(
        r#"[{{"path": "a.safetensors", "sha256": "{d}"}}, {{"path": "dir/b.json", "sha256": "{d}"}}]"#
    );
    assert_eq!(read(&list).unwrap(), want);
    assert_eq!(read(&format!(r#"{{"files": {list}}}"#)).unwrap(), want);
}

#[test]
fn a_bad_manifest_names_its_line_or_entry() {
    let d = "ab".repeat(32);
    let e = read(&format!("{d}  a\nnot-a-digest  b\n")).unwrap_err();
    assert!(e.ends_with(": line 2: expected 'SHA256  PATH'"), "{e}");
    let e = read(&format!("{d}\n")).unwrap_err();
    assert!(e.ends_with(": line 1: expected 'SHA256  PATH'"), "{e}");
    let e = read(&format!(
        r#"[{{"path": "a", "sha256": "{d}"}}, {{"path": "b"}}]"#
    ))
    .unwrap_err();
    assert!(e.ends_with(": entry 1 needs a path and a sha256"), "{e}");
    let e = read(r#"{"weights": []}"#).unwrap_err();
    assert!(e.contains("expected a list of {path, sha256}"), "{e}");
    let e = read("[{").unwrap_err();
    assert!(e.contains("line 1, column 2: not valid JSON"), "{e}");
}
