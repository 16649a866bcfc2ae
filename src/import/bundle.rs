//! An imported bundle on disk: `import --out` writes the sources copied as they were, their
//! digests and `import.json`; `verify` on such a bundle reads them back and checks again.

use super::*;

/// The `import.json` of an imported bundle's folder.
pub fn read_import_record(dir: &Path) -> Result<Value, Fatal> {
    let rec_path = dir.join("import.json");
    let text = input::read_text(&rec_path, input::MANIFEST_MAX, "import record")?;
    serde_json::from_str(&text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: not valid JSON: {e}",
            input::shown_path(&rec_path),
            e.line(),
            e.column()
        ))
    })
}

/// `rigaudit import`: writes the bundle; returns the import for the report.
pub fn run(
    format: Option<Format>,
    files: &[PathBuf],
    out: &Path,
) -> Result<(Format, Imported), Fatal> {
    let (format, sources, imp) = load(format, files)?;
    write_bundle(format, &sources, &imp, out)?;
    Ok((format, imp))
}

pub(super) fn write_bundle(
    format: Format,
    sources: &[Source],
    imp: &Imported,
    out: &Path,
) -> Result<(), Fatal> {
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(fatal(format!(
            "{}: the output folder exists and is not empty; refused",
            input::shown_path(out)
        )));
    }
    let src = out.join("sources");
    std::fs::create_dir_all(&src).map_err(|e| {
        fatal(format!(
            "{}: cannot make the folder: {e}",
            input::shown_path(&src)
        ))
    })?;
    for s in sources {
        crate::output::write_atomic(&src.join(&s.name), &s.bytes)?;
    }
    let record = import_record(format, sources, imp);
    let text = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
    crate::output::write_atomic(&out.join("import.json"), text.as_bytes())?;
    let manifest = manifest(
        format,
        sources,
        imp,
        &hex(&sha2::Sha256::digest(text.as_bytes())),
    );
    let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
    crate::output::write_atomic(&out.join("bundle.json"), text.as_bytes())
}

pub(super) fn import_record(format: Format, sources: &[Source], imp: &Imported) -> Value {
    let list: Vec<Value> = sources
        .iter()
        .map(|s| json!({"name": s.name, "path": format!("sources/{}", s.name), "role": s.role, "sha256": s.sha256, "bytes": s.bytes.len()}))
        .collect();
    json!({
        "format": "rigaudit-import/1",
        "from": format.name(),
        "tool_version": imp.tool_version,
        "importer": IMPORTER_VERSION,
        "model": imp.model,
        "sources": list,
        "taken": imp.taken,
        "not_taken": imp.not_taken,
    })
}

pub(super) fn manifest(
    format: Format,
    sources: &[Source],
    imp: &Imported,
    record_sha: &str,
) -> Value {
    let mut files = vec![
        json!({"kind": "log", "path": "import.json", "sha256": record_sha, "published": false, "reconstructed": false, "note": "the importer's record: format, versions, sources and their digests, what was taken"}),
    ];
    for s in sources {
        files.push(json!({"kind": "log", "path": format!("sources/{}", s.name), "sha256": s.sha256, "published": true, "reconstructed": false, "note": format!("{} {} ({}), as the tool wrote it", format.name(), s.role, s.name)}));
    }
    let first = sources
        .first()
        .map(|s| s.sha256[..12].to_string())
        .unwrap_or_default();
    let tool = format!(
        "{} {}",
        format.name(),
        imp.tool_version
            .as_deref()
            .unwrap_or("(version not stated)")
    );
    let mut notes = vec![format!("imported by {IMPORTER_VERSION} from {tool}")];
    notes.extend(imp.taken.iter().map(|t| format!("taken: {t}")));
    notes.extend(imp.not_taken.iter().map(|t| format!("not taken: {t}")));
    json!({
        "format": "rigaudit-bundle/1",
        "id": format!("{}-import-{first}", format.name()),
        "title": format!("{tool} result of {}, imported", imp.model.as_deref().unwrap_or("an unnamed model")),
        "source": tool,
        "setup": {
            "engine": "not stated by the imported files",
            "checkpoint": imp.model.clone().unwrap_or_else(|| "not stated by the imported files".into()),
            "hardware": "not stated by the imported files",
        },
        "files": files,
        "notes": notes,
    })
}

/// `verify` of an imported bundle: the digests of every file (the bundle loader), then the
/// format's checks again on the copied sources (`files`, read from its `import.json` by
/// `crate::subject`).
pub fn verify_bundle(
    opened: &crate::bundle::Opened,
    format: Format,
    files: &[PathBuf],
) -> Result<Verified, Fatal> {
    let read = crate::bundle::load(opened);
    let mut sources = read_sources(files)?;
    let imp = import_read(format, &mut sources)?;
    // The bundle's own files (present, digests) by the schema checks, then the format's checks.
    let mut all = Findings::default();
    rigaudit_audit::schema::run(&read, &mut all);
    all.merge(found(&imp));
    all.sort_ran();
    Ok(Verified {
        id: opened.manifest.id.clone(),
        found: all,
        artifacts: rigaudit_audit::schema::verified(&read),
    })
}
