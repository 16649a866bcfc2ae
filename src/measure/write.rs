//! Writing a measurement as a bundle: the manifest, the card (this machine's hardware), the
//! speed contract and result, the logs, and per quality test its contract, summary and answers.
//! Every file is written atomically, and the manifest last, so a reader never sees a half-written
//! bundle.

use super::run::Run;
use super::{quality, Plan};
use crate::fatal::{fatal, Fatal};
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

fn write_bundle(
    p: &Plan,
    r: &Run,
    models: &Value,
    started: chrono::DateTime<chrono::Utc>,
    ended: bool,
) -> Result<(), Fatal> {
    let out = &p.out;
    let now = chrono::Utc::now();
    let stamp =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let run_label = format!("rigaudit-measure-{}", started.format("%Y%m%dT%H%M%SZ"));
    let mut result = SpeedResult {
        run: run_label.clone(),
        started: stamp(started),
        ended: stamp(now),
        server: ServerSeen {
            start_lines: p.start_lines.clone(),
            models: models.clone(),
        },
        requests: r.requests.clone(),
        drafts: r.drafts.clone(),
        fits: r.fits.clone(),
        values: BTreeMap::new(),
        load_guard: r.guard.as_ref().map(|g| g.summary()),
    };
    result.values = rigaudit_audit::speed::recompute(r.c, &result);
    let mut log = r.log.join("\n");
    log.push('\n');
    if !ended {
        log.push_str("(run in progress or stopped before its end)\n");
    }
    // (kind, path, text, quality test)
    let mut files: Vec<(&str, String, String, Option<String>)> = Vec::new();
    if let Some(card) = &p.card {
        let mut card = card.clone();
        card["hardware"] = crate::host::hardware();
        card["measured"] = json!(stamp(started));
        files.push(("card", "card.json".into(), pretty(&card)?, None));
    }
    files.push((
        "speed-contract",
        "speed/speed-contract.json".into(),
        p.contract_text.clone(),
        None,
    ));
    files.push((
        "speed-result",
        "speed/speed-result.json".into(),
        pretty(&result)?,
        None,
    ));
    files.push(("log", "speed/log.txt".into(), log, None));
    let mut sessions =
        vec![json!({"name": "speed", "started": result.started, "ended": result.ended})];
    for asked in &r.quality {
        let (test, t0, t1, answers) = (&asked.test, &asked.started, &asked.ended, &asked.answers);
        let Some(qp) = p.quality.iter().find(|q| &q.contract.test == test) else {
            continue;
        };
        let dir = format!("quality/{test}");
        let summary = quality::summary(&qp.contract, answers, &run_label, &stamp(*t0), &stamp(*t1));
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
        files.push((
            "quality-contract",
            format!("{dir}/contract.json"),
            qp.contract_text.clone(),
            Some(test.clone()),
        ));
        files.push((
            "quality-summary",
            format!("{dir}/summary.json"),
            pretty(&summary)?,
            Some(test.clone()),
        ));
        files.push((
            "quality-answers",
            format!("{dir}/answers.jsonl"),
            lines,
            Some(test.clone()),
        ));
        files.push(("log", format!("{dir}/log.txt"), qlog, Some(test.clone())));
        sessions.push(
            json!({"name": format!("quality {test}"), "started": stamp(*t0), "ended": stamp(*t1)}),
        );
    }
    let mut entries = Vec::new();
    for (kind, path, text, test) in &files {
        let to = out.join(path);
        if let Some(d) = to.parent() {
            std::fs::create_dir_all(d).map_err(|e| fatal(format!("{}: {e}", d.display())))?;
        }
        write_atomic(&to, text.as_bytes())?;
        let d = sha2::Sha256::digest(text.as_bytes());
        let mut e = json!({"kind": kind, "path": path, "sha256": d.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                            "published": true, "reconstructed": false});
        if let Some(t) = test {
            e["test"] = json!(t);
        }
        entries.push(e);
    }
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
    write_atomic(
        &out.join("bundle.json"),
        (serde_json::to_string_pretty(&manifest).map_err(|e| fatal(e.to_string()))? + "\n")
            .as_bytes(),
    )
}

/// Pretty JSON with a final newline, for the files of a bundle.
fn pretty<T: serde::Serialize>(v: &T) -> Result<String, Fatal> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| fatal(e.to_string()))? + "\n")
}
