//! `rigaudit import --from FORMAT FILE... --out BUNDLE`, and `verify --from FORMAT FILE...`: the
//! result files of the field's own benchmark tools, read and checked.
//!
//! One file per format (its definitions at its top: units, the TTFT anchor, where token counts
//! come from, which requests its aggregates include); the checks are in the audit crate
//! (`audit/src/imported/`). An imported bundle is a `rigaudit-bundle/1` folder whose manifest lists
//! the source files, copied as they were under `sources/` with their sha256, and `import.json`: the
//! format, the tool's version the file states, the importer's version, each source's name, role
//! and digest, and notes of what was taken and what could not be. `verify` on such a bundle checks
//! the digests and runs the format's checks again on the copied sources.

pub mod aiperf;
pub mod diff;
pub mod endpoints;
pub mod guidellm;
pub mod llama_bench;
mod llama_bench_text;
pub mod llama_server;
mod llama_server_body;
pub mod llama_server_stream;
pub mod lm_eval;
pub mod loadgen;
pub mod ml_energy;
pub mod vllm;
pub mod yaml;
mod yaml_depth;

mod bundle;
mod detect;
pub mod importer;
mod parse;
mod source;

pub use bundle::*;
pub use detect::*;
pub use parse::*;
pub use source::*;

use crate::fatal::{fatal, Fatal, Unreadable};
use crate::input;
use rigaudit_audit::diff::Subject;
use rigaudit_audit::imported::compare::{Series, Setting};
use rigaudit_audit::report::Verified;
use rigaudit_audit::{Findings, Report, Severity};
use serde_json::{json, Value};
use sha2::Digest as _;
use std::path::{Path, PathBuf};

/// The version of the importers; recorded in every imported bundle.
pub const IMPORTER_VERSION: &str = concat!(
    "rigaudit-import/1 (rigaudit ",
    env!("CARGO_PKG_VERSION"),
    ")"
);

/// The most files one import reads (a folder of more is refused, not cut).
pub const SOURCES_MAX: usize = 64;

/// A format rigaudit imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// AIPerf: profile_export_aiperf.json and profile_export.jsonl.
    Aiperf,
    /// GuideLLM: benchmarks.json.
    Guidellm,
    /// lm-evaluation-harness: results_<date>.json and samples_<task>_<date>.jsonl.
    LmEval,
    /// MLPerf LoadGen: mlperf_log_detail.txt and mlperf_log_summary.txt.
    Loadgen,
    /// llama.cpp's llama-bench: the output of `-o json` or `-o jsonl`.
    LlamaBench,
    /// llama.cpp's server: saved /completion or /v1/chat/completions responses (JSON Lines) with
    /// their `timings`, or saved streams (`curl -N` output, one `*.sse` file a stream).
    LlamaServer,
    /// vLLM: the result of `vllm bench serve --save-result --save-detailed`.
    Vllm,
    /// The ML.ENERGY benchmark (v3): results.json, with prometheus.json beside it.
    MlEnergy,
    /// MLPerf Endpoints: performance/result_summary.json, with events.jsonl and config.yaml.
    MlperfEndpoints,
}

impl Format {
    /// The name used on the command line and in `import.json`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Aiperf => "aiperf",
            Format::Guidellm => "guidellm",
            Format::LmEval => "lm-eval",
            Format::Loadgen => "loadgen",
            Format::LlamaBench => "llama-bench",
            Format::LlamaServer => "llama-server",
            Format::Vllm => "vllm",
            Format::MlEnergy => "ml-energy",
            Format::MlperfEndpoints => "mlperf-endpoints",
        }
    }

    /// Every format's name, comma-separated (for messages).
    pub fn all_names() -> String {
        let v: Vec<&str> = <Format as clap::ValueEnum>::value_variants()
            .iter()
            .map(|f| f.name())
            .collect();
        v.join(", ")
    }

    /// The format of a name as `import.json` records it.
    pub fn parse(s: &str) -> Option<Self> {
        <Format as clap::ValueEnum>::value_variants()
            .iter()
            .copied()
            .find(|f| f.name() == s)
    }
}

/// What a format's reader made of its sources.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    /// The tool's version as the file states it.
    pub tool_version: Option<String>,
    /// The served model as the file names it.
    pub model: Option<String>,
    /// What was taken from the files.
    pub taken: Vec<String>,
    /// What could not be taken or checked, and why.
    pub not_taken: Vec<String>,
    /// What the format's checks found.
    pub found: Findings,
    /// The figures `diff` compares, with the per-request values behind them where there are.
    pub series: Vec<Series>,
    /// The run's settings as the tool recorded them, for `diff`.
    pub settings: Vec<Setting>,
}

impl Imported {
    /// Notes each source no reader took (its role still empty) as not taken: `NAME: why`.
    pub fn note_unread(&mut self, sources: &[Source], why: &str) {
        for s in sources.iter().filter(|s| s.role.is_empty()) {
            self.not_taken.push(format!("{}: {why}", s.name));
        }
    }
}

/// The settings every format has: the tool's version and the model the file names.
fn common_settings(imp: &mut Imported, format: Format) {
    let rows = [
        ("tool version", imp.tool_version.clone(), Subject::Contract),
        ("model", imp.model.clone(), Subject::Checkpoint),
    ];
    for (name, v, subject) in rows {
        if let Some(v) = v {
            imp.settings.push(Setting {
                name: name.into(),
                value: v,
                at: format!("{} files", format.name()),
                subject,
            });
        }
    }
}

/// Runs the format's reader and checks over the sources (their roles are set); `unread` are the
/// run's files that could not be read whole (lm-eval says which tasks they leave not re-scored).
fn import(
    format: Format,
    sources: &mut [Source],
    unread: &[Unreadable],
) -> Result<Imported, Fatal> {
    importer::importer(format).import(sources, unread)
}

/// The one rule of every format for a file that cannot be read whole: the format's reader runs
/// over the files read; when it stops on one that cannot be read whole (a line over its bound,
/// not UTF-8, not valid JSON: [`Source::unreadable`]), that file is set aside and the reader runs
/// again over the others. Each file set aside is one `import.unreadable` error naming it, the
/// place and why; when the others cannot be checked without it (a results file), the report is
/// incomplete, saying why. `Err` when the files are one named by itself ([`Read::strict`]: the
/// command could not run on what was asked), or the reader stops on anything else.
pub fn import_read(format: Format, read: &mut Read) -> Result<Imported, Fatal> {
    let mut imp = loop {
        read.sources.iter_mut().for_each(|s| s.role.clear());
        match import(format, &mut read.sources, &read.unread) {
            Ok(imp) => break imp,
            Err(Fatal(_, Some(u)))
                if !read.strict && read.sources.iter().any(|s| s.name == u.file) =>
            {
                read.sources.retain(|s| s.name != u.file);
                read.unread.push(u);
            }
            Err(e) if !read.strict && !read.unread.is_empty() => {
                // Read, not checked: no note says of each that no check reads it.
                for s in read.sources.iter_mut() {
                    s.role = "not checked (the run could not be)".into();
                }
                break cannot_check(&e, read);
            }
            Err(e) => return Err(e),
        }
    };
    said_unread(&read.unread, &mut imp);
    Ok(imp)
}

/// The import of a run whose reader could not run over the files that were read: nothing is
/// checked, and the report is incomplete, naming the files that could not be read and why.
fn cannot_check(e: &Fatal, read: &Read) -> Imported {
    let names: Vec<&str> = read.unread.iter().map(|u| u.file.as_str()).collect();
    let why = e.0.trim_start_matches(": ");
    Imported {
        found: rigaudit_audit::imported::read::cannot_check(&names, why),
        ..Imported::default()
    }
}

/// One `import.unreadable` error for each file that could not be read whole, naming it, the
/// place and why; and a note of it among what was not taken.
fn said_unread(unread: &[Unreadable], imp: &mut Imported) {
    use rigaudit_audit::imported::read::{FilesRead, UnreadFile};
    let read = FilesRead {
        unreadable: unread
            .iter()
            .map(|u| UnreadFile {
                file: u.file.clone(),
                place: u.place.clone(),
                why: u.why.clone(),
            })
            .collect(),
        ..FilesRead::default()
    };
    rigaudit_audit::imported::read::said(&read, &mut imp.found);
    for u in unread {
        let at = u
            .place
            .as_deref()
            .map_or(String::new(), |p| format!("{p}: "));
        imp.not_taken.push(format!(
            "{}: could not be read whole: {at}{}",
            u.file, u.why
        ));
    }
}

/// Reads, detects (unless given) and imports the files.
pub fn load(
    format: Option<Format>,
    files: &[PathBuf],
) -> Result<(Format, Vec<Source>, Imported), Fatal> {
    let mut read = read_sources(files)?;
    let format = match format {
        Some(f) => f,
        None => read.detect().ok_or_else(|| {
            let names: Vec<String> = read
                .sources
                .iter()
                .map(|s| s.shown.clone())
                .chain(read.unread.iter().map(|u| u.file.clone()))
                .collect();
            fatal(format!(
                "{}: not a bundle, and not a result file of a format rigaudit imports ({}); name it with --from",
                names.join(", "),
                Format::all_names()
            ))
        })?,
    };
    let mut imported = import_read(format, &mut read)?;
    refuse_unread(format, &read.sources, &mut imported.found)?;
    common_settings(&mut imported, format);
    Ok((format, read.sources, imported))
}

/// A file given (named, or in a named folder) that the format's reader took nothing from is
/// refused when it is another tool's result file (the files of two tools given at once), naming
/// it; any other (AIPerf's CSV beside its JSON, a README) is a note that names it as not read.
/// None is dropped in silence.
fn refuse_unread(format: Format, sources: &[Source], found: &mut Findings) -> Result<(), Fatal> {
    use rigaudit_audit::imported::read::FilesRead;
    let mut read = FilesRead {
        format: format.name().to_string(),
        ..FilesRead::default()
    };
    for s in sources.iter().filter(|s| s.role.is_empty()) {
        if let Some(other) = detect(std::slice::from_ref(s)).filter(|g| *g != format) {
            return Err(fatal(format!(
                "{}: a result file of {}, given with {} files, which take nothing from it; verify each tool's files on their own (rigaudit verify FILE... --from FORMAT)",
                s.shown,
                other.name(),
                format.name()
            )));
        }
        read.not_read.push(s.name.clone());
    }
    rigaudit_audit::imported::read::said(&read, found);
    Ok(())
}

/// The report of an import: its checks, recomputed values and findings.
pub fn report(command: &str, id: &str, imp: &Imported, fail_on: Option<Severity>) -> Report {
    Report::new(command, id, fail_on, found(imp))
}

/// What the import's checks found.
fn found(imp: &Imported) -> Findings {
    imp.found.clone()
}

/// `verify --from FORMAT FILE...` (or files whose format is detected).
pub fn verify_files(format: Option<Format>, files: &[PathBuf]) -> Result<Verified, Fatal> {
    let (_, sources, imp) = load(format, files)?;
    let shown: Vec<String> = files.iter().map(|f| input::shown_path(f)).collect();
    Ok(verified(&shown.join(" "), &sources, &imp))
}

/// `verify` of one run's sources, already read, as `format`; the report's id is `id`.
pub fn verify_read(
    format: Format,
    sources: Vec<Source>,
    id: &str,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    verify_read_with(format, sources, id, fail_on, Findings::default(), |_| {})
}

/// [`verify_read`] with findings of other checks over the same run added (an MLPerf result's
/// submission rules beside its LoadGen logs' checks).
pub fn verify_read_with(
    format: Format,
    sources: Vec<Source>,
    id: &str,
    fail_on: Option<Severity>,
    extra: Findings,
    settle: impl FnOnce(&mut Findings),
) -> Result<Report, Fatal> {
    let mut read = Read::of(sources);
    let mut imp = import_read(format, &mut read)?;
    common_settings(&mut imp, format);
    imp.found.merge(extra);
    settle(&mut imp.found);
    Ok(verified(id, &read.sources, &imp).report("verify", fail_on))
}

/// The report of a verify of sources: the checks' findings, and the files read with their
/// digests (the subjects of an attestation).
fn verified(id: &str, sources: &[Source], imp: &Imported) -> Verified {
    Verified {
        id: id.to_string(),
        found: found(imp),
        artifacts: sources
            .iter()
            .map(|s| rigaudit_audit::report::Artifact {
                path: s.name.clone(),
                sha256: s.sha256.clone(),
            })
            .collect(),
    }
}
