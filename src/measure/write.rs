//! Writing a measurement as a bundle: the manifest, the card (this machine's hardware), the
//! speed contract and result, the logs, and per quality test its contract, summary and answers.
//! Every file is written atomically, and the manifest last, so a reader never sees a half-written
//! bundle.

use super::run::{AskedTest, Run};
use super::{quality, Plan};
use crate::digest::hex;
use crate::fatal::{fatal, At, Fatal};
use crate::output::write_atomic;
use rigaudit_audit::records::speed::{ServerSeen, SpeedResult};
use rigaudit_audit::startline;
use serde_json::{json, Value};
use sha2::Digest as _;
use std::collections::BTreeMap;

/// What writing the bundle needs besides the run: the plan, the server's `/v1/models` answer and
/// when the run started.
pub struct Saver<'p> {
    pub plan: &'p Plan,
    pub models: Value,
    pub started: chrono::DateTime<chrono::Utc>,
}

impl Saver<'_> {
    /// Writes (or rewrites) the bundle of the run so far; `ended` when the run is over.
    pub fn save(&self, r: &Run, ended: bool) -> Result<(), Fatal> {
        write_bundle(self.plan, r, &self.models, self.started, ended)
    }
}

type Time = chrono::DateTime<chrono::Utc>;

/// RFC 3339 to the second.
fn stamp(t: Time) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One file of the bundle.
struct BundleFile {
    kind: &'static str,
    path: String,
    text: String,
    /// The quality test it belongs to.
    test: Option<String>,
}

impl BundleFile {
    fn new(kind: &'static str, path: impl Into<String>, text: String, test: Option<&str>) -> Self {
        BundleFile {
            kind,
            path: path.into(),
            text,
            test: test.map(String::from),
        }
    }
}

fn write_bundle(
    p: &Plan,
    r: &Run,
    models: &Value,
    started: Time,
    ended: bool,
) -> Result<(), Fatal> {
    let run_label = format!("rigaudit-measure-{}", started.format("%Y%m%dT%H%M%SZ"));
    let result = speed_result(p, r, models, &run_label, started);
    let mut files = speed_files(p, r, &result, started, ended)?;
    let mut sessions =
        vec![json!({"name": "speed", "started": result.started, "ended": result.ended})];
    for asked in &r.quality {
        let Some(qp) = p.quality.iter().find(|q| q.contract.test == asked.test) else {
            continue;
        };
        files.extend(quality_files(qp, asked, &run_label)?);
        sessions.push(json!({"name": format!("quality {}", asked.test),
                             "started": stamp(asked.started), "ended": stamp(asked.ended)}));
    }
    let entries = write_files(&p.out, &files)?;
    write_manifest(p, r, models, started, (entries, sessions))
}

/// The speed result of the run so far, its values recomputed from its records.
fn speed_result(p: &Plan, r: &Run, models: &Value, run_label: &str, started: Time) -> SpeedResult {
    let mut result = SpeedResult {
        run: run_label.to_string(),
        started: stamp(started),
        ended: stamp(chrono::Utc::now()),
        server: ServerSeen {
            start_lines: p.start_lines.clone(),
            models: models.clone(),
        },
        requests: r.requests.clone(),
        drafts: r.drafts.clone(),
        fits: r.fits.clone(),
        values: BTreeMap::new(),
        load_guard: r.guard.as_ref().map(|g| g.summary()),
        machine_reference: r.reference.record(),
        gpu: r.gpu.as_ref().map(super::gpu::Gpu::record),
    };
    result.values = rigaudit_audit::speed::recompute(r.c, &result);
    result
}

/// The card (this machine's hardware), the speed contract and result, and the log.
fn speed_files(
    p: &Plan,
    r: &Run,
    result: &SpeedResult,
    started: Time,
    ended: bool,
) -> Result<Vec<BundleFile>, Fatal> {
    let mut log = r.log.join("\n");
    log.push('\n');
    if !ended {
        log.push_str("(run in progress or stopped before its end)\n");
    }
    let mut files = Vec::new();
    if let Some(card) = &p.card {
        let mut card = card.clone();
        card["hardware"] = crate::host::hardware();
        card["measured"] = json!(stamp(started));
        files.push(BundleFile::new("card", "card.json", pretty(&card)?, None));
    }
    let contract = p.contract_text.clone();
    files.push(BundleFile::new(
        "speed-contract",
        "speed/speed-contract.json",
        contract,
        None,
    ));
    files.push(BundleFile::new(
        "speed-result",
        "speed/speed-result.json",
        pretty(result)?,
        None,
    ));
    files.push(BundleFile::new("log", "speed/log.txt", log, None));
    Ok(files)
}

/// A quality test's contract, summary, answers and log (the requests that got no answer).
fn quality_files(
    qp: &quality::QualityPlan,
    asked: &AskedTest,
    run_label: &str,
) -> Result<Vec<BundleFile>, Fatal> {
    let (test, answers) = (asked.test.as_str(), &asked.answers);
    let (t0, t1) = (stamp(asked.started), stamp(asked.ended));
    let summary = quality::summary(&qp.contract, answers, run_label, &t0, &t1);
    let mut lines = String::new();
    for a in answers {
        lines.push_str(&serde_json::to_string(a).map_err(|e| fatal(e.to_string()))?);
        lines.push('\n');
    }
    let qlog: String = answers
        .iter()
        .filter(|a| !a.answered())
        .map(|a| {
            format!(
                "{}: HTTP {} {}\n",
                a.id,
                a.status,
                a.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    let dir = format!("quality/{test}");
    let t = Some(test);
    Ok(vec![
        BundleFile::new(
            "quality-contract",
            format!("{dir}/contract.json"),
            qp.contract_text.clone(),
            t,
        ),
        BundleFile::new(
            "quality-summary",
            format!("{dir}/summary.json"),
            pretty(&summary)?,
            t,
        ),
        BundleFile::new("quality-answers", format!("{dir}/answers.jsonl"), lines, t),
        BundleFile::new("log", format!("{dir}/log.txt"), qlog, t),
    ])
}

/// Writes every file atomically; returns their manifest entries.
fn write_files(out: &std::path::Path, files: &[BundleFile]) -> Result<Vec<Value>, Fatal> {
    let mut entries = Vec::new();
    for f in files {
        let to = out.join(&f.path);
        if let Some(d) = to.parent() {
            std::fs::create_dir_all(d).at(d.display())?;
        }
        write_atomic(&to, f.text.as_bytes())?;
        let sha256 = hex(&sha2::Sha256::digest(f.text.as_bytes()));
        let mut e = json!({"kind": f.kind, "path": f.path, "sha256": sha256,
                            "published": true, "reconstructed": false});
        if let Some(t) = &f.test {
            e["test"] = json!(t);
        }
        entries.push(e);
    }
    Ok(entries)
}

/// Writes the manifest, last: the files' entries and the sessions.
fn write_manifest(
    p: &Plan,
    r: &Run,
    models: &Value,
    started: Time,
    (entries, sessions): (Vec<Value>, Vec<Value>),
) -> Result<(), Fatal> {
    let model = startline::models_ids(models)
        .first()
        .cloned()
        .unwrap_or_default();
    let mut notes = vec!["written by rigaudit measure".to_string()];
    notes.extend(p.notes.iter().cloned());
    if let Some(why) = &r.stopped {
        notes.push(format!("the run stopped early: {why}"));
    }
    let manifest = json!({
        "format": "rigaudit-bundle/1",
        "id": p.id.clone().unwrap_or_else(|| format!("measure-{}", started.format("%Y%m%dt%H%M%Sz"))),
        "title": p.title.clone().unwrap_or_else(|| format!("rigaudit measure of {model}")),
        "source": null,
        "setup": {"engine": p.start_lines.first().cloned().unwrap_or_else(|| "unknown engine".into()), "checkpoint": model, "hardware": crate::host::describe()},
        "files": entries,
        "sessions": sessions,
        "notes": notes,
    });
    write_atomic(&p.out.join("bundle.json"), pretty(&manifest)?.as_bytes())
}

/// Pretty JSON with a final newline, for the files of a bundle.
fn pretty<T: serde::Serialize>(v: &T) -> Result<String, Fatal> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| fatal(e.to_string()))? + "\n")
}
