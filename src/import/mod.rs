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

use crate::fatal::{fatal, Fatal, Unreadable};
use crate::input;
use rigaudit_audit::diff::Subject;
use rigaudit_audit::imported::compare::{Series, Setting};
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

/// One source file, read (bounded) and hashed.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its file name (the name it keeps in an imported bundle).
    pub name: String,
    /// Where it was read from, as shown in messages.
    pub shown: String,
    /// Its content.
    pub bytes: Vec<u8>,
    /// Its sha256, hex.
    pub sha256: String,
    /// What the importer took it as (`summary`, `records`, ...); set by the format's reader.
    pub role: String,
}

impl Source {
    /// Its content as text; an error naming the file when it is not UTF-8.
    pub fn text(&self) -> Result<&str, Fatal> {
        std::str::from_utf8(&self.bytes).map_err(|e| {
            self.unreadable(
                None,
                format!("not UTF-8 text: {e}; expected the tool's text output"),
            )
        })
    }

    /// The error of a source that cannot be read whole at `place` (`line 3`): it names the file,
    /// and marks it, so that a run of several files is checked without it ([`import_read`]).
    pub fn unreadable(&self, place: Option<String>, why: impl Into<String>) -> Fatal {
        crate::fatal::unreadable(
            &self.shown,
            Unreadable {
                file: self.name.clone(),
                place,
                why: why.into(),
            },
        )
    }

    /// [`Source::unreadable`] for a JSON parse error `e` at its line and column.
    fn not_json(&self, line: usize, e: &serde_json::Error) -> Fatal {
        self.unreadable(
            Some(format!("line {line}, column {}", e.column())),
            format!("not valid JSON: {e}"),
        )
    }
}

/// Another tool's files as read: those read whole, and those that could not be (one finding
/// each, `import.unreadable`, while the rest is checked).
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// The files read whole.
    pub sources: Vec<Source>,
    /// The files that could not be read whole, each with where and why.
    pub unread: Vec<Unreadable>,
    /// Whether a file that cannot be read stops the command (exit 2): one file named by itself,
    /// which is all that was asked for.
    pub strict: bool,
}

impl Read {
    /// Sources already read (a tree's run): strict when it is one file.
    pub fn of(sources: Vec<Source>) -> Read {
        Read {
            strict: sources.len() == 1,
            sources,
            unread: Vec::new(),
        }
    }

    /// The format of the files: by the content of those read ([`detect`]), else by the name of
    /// one that could not be read ([`named`]).
    pub fn detect(&self) -> Option<Format> {
        detect(&self.sources).or_else(|| self.unread.iter().find_map(|u| named(&u.file)))
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

/// Flattens a JSON value into settings (`name` = its pointer under `prefix`), leaving out the
/// pointers that contain one of `skip` (paths, addresses, times: what differs run to run).
pub fn flatten(v: &Value, prefix: &str, file: &str, skip: &[&str], out: &mut Vec<Setting>) {
    if skip.iter().any(|k| prefix.contains(k)) {
        return;
    }
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                flatten(x, &format!("{prefix}/{k}"), file, skip, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, &format!("{prefix}/{i}"), file, skip, out);
            }
        }
        Value::Null => {}
        x => out.push(Setting {
            name: prefix.trim_start_matches('/').to_string(),
            value: x
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| x.to_string()),
            at: format!("{file} {prefix}"),
            subject: Subject::Contract,
        }),
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

/// Reads the given files (a folder stands for the files directly inside it, every one that is not
/// a folder). One file named by itself that cannot be read is an error (exit 2); of a folder or of
/// several files, each that cannot be read whole (not a regular file, over its bound, a Git LFS
/// pointer) is kept in [`Read::unread`], and the others are read.
pub fn read_sources(files: &[PathBuf]) -> Result<Read, Fatal> {
    let strict = matches!(files, [one] if !one.is_dir());
    let mut out = Read {
        strict,
        ..Read::default()
    };
    for p in expand(files)? {
        let (name, shown) = (name_of(&p), input::shown_path(&p));
        if out
            .sources
            .iter()
            .map(|s| &s.name)
            .chain(out.unread.iter().map(|u| &u.file))
            .any(|n| *n == name)
        {
            return Err(fatal(format!(
                "{shown}: two sources are named '{name}'; give each file once"
            )));
        }
        match read_source(&p) {
            Ok(src) => out.sources.push(src),
            Err(e) if !strict => {
                let why = e.0.strip_prefix(&format!("{shown}: ")).unwrap_or(&e.0);
                let why = why.strip_suffix("; refused").unwrap_or(why);
                out.unread.push(Unreadable {
                    file: name,
                    place: None,
                    why: why.to_string(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    if out.sources.is_empty() && out.unread.is_empty() {
        return Err(fatal("no file to import was given"));
    }
    Ok(out)
}

/// A path's file name as an import names the source (made safe to show when it is not UTF-8).
fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| input::shown(&n.to_string_lossy()))
        .unwrap_or_else(|| input::shown_path(p))
}

/// Reads one file (bounded, a regular file only) and hashes it; `Err` naming it when it cannot
/// be read, its name is not a plain UTF-8 file name, or it is a Git LFS pointer.
pub fn read_source(p: &Path) -> Result<Source, Fatal> {
    let bytes = input::read_bounded(p, input::RECORD_MAX, "imported file")?;
    let name = p.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        fatal(format!(
            "{}: the file name is not UTF-8",
            input::shown_path(p)
        ))
    })?;
    let name = input::safe_name(name, "imported file name")?.to_string();
    if let Some(pointer) = lfs_pointer(&bytes) {
        return Err(fatal(format!(
            "{}: a Git LFS pointer ({pointer}), not the file it stands for: fetch the file (git lfs pull) and give it",
            input::shown_path(p)
        )));
    }
    let sha256 = hex(&sha2::Sha256::digest(&bytes));
    Ok(Source {
        name,
        shown: input::shown_path(p),
        bytes,
        sha256,
        role: String::new(),
    })
}

/// The object a Git LFS pointer file names (`oid sha256:..., size N`), when the bytes are one:
/// what a repository holds in place of a large file not fetched.
fn lfs_pointer(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes.get(..bytes.len().min(1024))?).ok()?;
    if !text.starts_with("version https://git-lfs.github.com/spec/") {
        return None;
    }
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| input::shown(v.trim()))
    };
    Some(format!(
        "oid {}, size {}",
        field("oid ").unwrap_or_else(|| "not stated".into()),
        field("size ").unwrap_or_else(|| "not stated".into())
    ))
}

fn expand(files: &[PathBuf]) -> Result<Vec<PathBuf>, Fatal> {
    let mut out = Vec::new();
    for f in files {
        if f.is_dir() {
            let rd = std::fs::read_dir(f)
                .map_err(|e| fatal(format!("{}: cannot list: {e}", input::shown_path(f))))?;
            let mut inner: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                // Every entry but a folder: a FIFO, a socket or a link to nothing is read, refused and
                // named (`import.unreadable`), never skipped in silence.
                .filter(|p| !p.is_dir())
                .collect();
            inner.sort();
            if inner.len() > SOURCES_MAX {
                return Err(fatal(format!(
                    "{}: the folder holds {} files, more than the {SOURCES_MAX} a run of a tool writes; give the files themselves",
                    input::shown_path(f),
                    inner.len()
                )));
            }
            out.extend(inner);
        } else {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// A source's JSON document; an error names the file, line and column.
pub fn json_of(src: &Source) -> Result<Value, Fatal> {
    serde_json::from_slice(&src.bytes).map_err(|e| src.not_json(e.line(), &e))
}

/// A source's JSON as Python's `json` writes it: bare `NaN`, `Infinity` and `-Infinity` (which
/// it writes for undefined floats) are read as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`
/// ([`non_finite`] reads them back); anything else invalid is refused as by [`json_of`].
pub fn json_of_python(src: &Source) -> Result<Value, Fatal> {
    match json_of(src) {
        Ok(v) => Ok(v),
        Err(e) => {
            let quoted = quote_non_finite(&src.bytes).ok_or(e)?;
            serde_json::from_slice(&quoted).map_err(|e| src.not_json(e.line(), &e))
        }
    }
}

/// The text with every bare `NaN`, `Infinity`, `-Infinity` outside a string quoted; `None`
/// when it holds none.
fn quote_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            (escaped, in_string) = (!escaped && b == b'\\', escaped || b != b'"');
            out.push(b);
            i += 1;
            continue;
        }
        let word = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| bytes[i..].starts_with(w.as_bytes()));
        match (b, word) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (_, Some(w)) => {
                found = true;
                out.extend_from_slice(format!("\"{w}\"").as_bytes());
                i += w.len();
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    found.then_some(out)
}

/// A number, or one [`json_of_python`] read from a bare `NaN`, `Infinity` or `-Infinity`.
pub fn non_finite(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| match v.as_str()? {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    })
}

/// A source's JSON Lines, each line through `each` (its value and 1-based number): blank lines
/// skipped, a line over [`input::ANSWERS_LINE_MAX`] refused, Python's bare `NaN` and `Infinity`
/// read as by [`json_of_python`]; an error names the file and line.
pub fn json_lines<T>(
    src: &Source,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    let python_line = |line: &str| {
        serde_json::from_str(line).or_else(|e| {
            let quoted = quote_non_finite(line.as_bytes()).ok_or(e)?;
            serde_json::from_slice(&quoted)
        })
    };
    json_lines_by(src, Some(input::ANSWERS_LINE_MAX), python_line, each)
}

/// A source's JSON Lines as strict JSON, each line through `each`, with no bound on a line
/// (AIPerf's raw export holds every chunk of a reply on one line).
pub fn strict_json_lines<T>(
    src: &Source,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    json_lines_by(src, None, |line| serde_json::from_str(line), each)
}

/// The loop of [`json_lines`] and [`strict_json_lines`]: `parse` reads a line, `line_max` bounds
/// one when given.
fn json_lines_by<T>(
    src: &Source,
    line_max: Option<usize>,
    parse: impl Fn(&str) -> Result<Value, serde_json::Error>,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    let text = src.text()?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(max) = line_max.filter(|max| line.len() > *max) {
            return Err(src.unreadable(
                Some(format!("line {}", i + 1)),
                format!(
                    "{} bytes, longer than the bound for one record ({}): expected one JSON record a line, each within it",
                    line.len(),
                    input::size(max as u64)
                ),
            ));
        }
        let v = parse(line).map_err(|e| src.not_json(i + 1, &e))?;
        out.push(
            each(&v, i + 1).map_err(|w| fatal(format!("{}: line {}: {w}", src.shown, i + 1)))?,
        );
    }
    Ok(out)
}

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

/// The text at a JSON pointer (`/metadata/x_request_id`), owned; none when the place is absent or
/// holds something other than a string.
pub fn string_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(|x| x.as_str())
        .map(String::from)
}

/// The value at `pointer` of a source's document, read by `as_kind` (`Value::as_object`, ...);
/// an error names the file, the place and what was `expected`.
pub fn required_at<'v, T>(
    src: &Source,
    v: &'v Value,
    pointer: &str,
    as_kind: impl Fn(&'v Value) -> Option<T>,
    expected: &str,
) -> Result<T, Fatal> {
    v.pointer(pointer)
        .and_then(as_kind)
        .ok_or_else(|| fatal(format!("{}: at {pointer}: expected {expected}", src.shown)))
}

/// The `error` object of a response or record, when it has one: its `code` and `message`
/// (OpenAI's error shape, which AIPerf and llama.cpp's server both write).
pub fn error_of(v: &Value) -> Option<(Option<i64>, String)> {
    v.get("error").filter(|e| !e.is_null()).map(|e| {
        let code = e.get("code").and_then(|c| c.as_i64());
        let msg = e
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_string();
        (code, msg)
    })
}

/// The index of the source `is` picks, its role set to `role`; when none is, an error naming
/// every source given and then `missing` (what was expected).
pub fn take(
    sources: &mut [Source],
    is: impl Fn(&Source) -> bool,
    role: &str,
    missing: &str,
) -> Result<usize, Fatal> {
    let i = sources
        .iter()
        .position(is)
        .ok_or_else(|| fatal(format!("{}: {missing}", names(sources))))?;
    sources[i].role = role.into();
    Ok(i)
}

/// The sources as shown, comma-separated (for messages).
pub fn names(sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| s.shown.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `needle` occurs in `hay` (the formats are told apart by a key only they write).
pub fn holds(hay: &[u8], needle: &str) -> bool {
    memchr::memmem::find(hay, needle.as_bytes()).is_some()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A format's test on a source's content (its `looks_like`).
type LooksLike = fn(&Source) -> bool;

/// The formats in the order [`detect`] asks them, each with its test on a source's content.
const BY_CONTENT: &[(Format, LooksLike)] = &[
    // First: its results.json is vLLM's result grown energy figures (and is named as lm-eval's).
    (Format::MlEnergy, ml_energy::looks_like),
    (Format::MlperfEndpoints, endpoints::looks_like),
    (Format::Aiperf, aiperf::looks_like),
    (Format::Guidellm, guidellm::looks_like),
    (Format::LmEval, lm_eval::looks_like),
    (Format::Loadgen, loadgen::looks_like),
    (Format::LlamaBench, llama_bench::looks_like),
    (Format::LlamaServer, llama_server::looks_like),
    (Format::Vllm, vllm::looks_like),
];

/// The format of the sources, detected from their content when not given: the first of
/// [`BY_CONTENT`] that any source looks like.
pub fn detect(sources: &[Source]) -> Option<Format> {
    BY_CONTENT
        .iter()
        .find(|(_, looks_like)| sources.iter().any(looks_like))
        .map(|(format, _)| *format)
}

/// The format whose tool writes a file of this name, for a file whose content says nothing (empty,
/// cut short, not text): lm-eval's `results*.json` and `samples_*.jsonl`, LoadGen's
/// `mlperf_log_*.txt`, AIPerf's `profile_export*`, GuideLLM's `benchmarks*`, llama-bench's
/// `llama-bench*`, llama-server's `*.sse`. vLLM names its results as the user likes: by content only.
pub fn named(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    let ext = |exts: &[&str]| exts.iter().any(|e| n.ends_with(e));
    let rules: [(bool, Format); 7] = [
        (n.starts_with("results") && ext(&[".json"]), Format::LmEval),
        (
            n.starts_with("samples_") && ext(&[".jsonl"]),
            Format::LmEval,
        ),
        (
            n.starts_with("mlperf_log_") && ext(&[".txt"]),
            Format::Loadgen,
        ),
        (
            n.starts_with("profile_export") && ext(&[".json", ".jsonl", ".csv"]),
            Format::Aiperf,
        ),
        (
            n.starts_with("benchmarks") && ext(&[".json", ".yaml", ".yml"]),
            Format::Guidellm,
        ),
        (
            n.starts_with("llama-bench") && ext(&[".json", ".jsonl"]),
            Format::LlamaBench,
        ),
        (ext(&[".sse"]), Format::LlamaServer),
    ];
    rules.iter().find(|(hit, _)| *hit).map(|(_, f)| *f)
}

/// The format a file of this name goes with, when its content alone says no tool's (it is read with
/// the tool's logs of the same folder, and is no run by itself): MLPerf's compliance verdicts
/// `verify_accuracy.txt` and `verify_performance.txt`, and an accuracy run's `accuracy.txt` and
/// `mlperf_log_accuracy.json`, read with LoadGen's logs; ML.ENERGY's `prometheus.json`, read with its
/// `results.json`.
pub fn companion(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    match n.as_str() {
        "verify_accuracy.txt"
        | "verify_performance.txt"
        | "accuracy.txt"
        | "mlperf_log_accuracy.json" => Some(Format::Loadgen),
        "prometheus.json" => Some(Format::MlEnergy),
        _ => None,
    }
}

/// Whether a file of this name may be a tool's result, by its extension (what a tree's walk reads:
/// `.json`, `.jsonl`, `.txt`, `.sse`, `.yaml`, `.yml`, `.csv`; notes such as `.md` are not read).
pub fn may_be_result(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [".json", ".jsonl", ".txt", ".sse", ".yaml", ".yml", ".csv"]
        .iter()
        .any(|e| n.ends_with(e))
}

/// The format of one file: by its content ([`detect`]), else by its name ([`named`]).
pub fn detect_one(src: &Source) -> Option<Format> {
    detect(std::slice::from_ref(src)).or_else(|| named(&src.name))
}

/// Runs the format's reader and checks over the sources (their roles are set); `unread` are the
/// run's files that could not be read whole (lm-eval says which tasks they leave not re-scored).
fn import(
    format: Format,
    sources: &mut [Source],
    unread: &[Unreadable],
) -> Result<Imported, Fatal> {
    match format {
        Format::Aiperf => aiperf::import(sources),
        Format::Guidellm => guidellm::import(sources),
        Format::LmEval => lm_eval::import(sources, unread),
        Format::Loadgen => loadgen::import(sources),
        Format::LlamaBench => llama_bench::import(sources),
        Format::LlamaServer => llama_server::import(sources),
        Format::Vllm => vllm::import(sources),
        Format::MlEnergy => ml_energy::import(sources),
        Format::MlperfEndpoints => endpoints::import(sources),
    }
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
    let mut imp = Imported::default();
    imp.found.incomplete = Some(format!(
        "the run cannot be checked: {} could not be read (import.unreadable), and without it: {}",
        names.join(", "),
        e.0.trim_start_matches(": ")
    ));
    imp
}

/// One `import.unreadable` error for each file that could not be read whole, naming it, the
/// place and why; and a note of it among what was not taken.
fn said_unread(unread: &[Unreadable], imp: &mut Imported) {
    use rigaudit_audit::imported::UNREADABLE;
    for u in unread {
        // The place is the finding's pointer, shown beside the file.
        let msg = format!(
            "{}; the file is not read, so nothing in it is checked (the run's other files are)",
            u.why
        );
        let at = u
            .place
            .as_deref()
            .map_or(String::new(), |p| format!("{p}: "));
        let f = rigaudit_audit::Finding::new(UNREADABLE.id, UNREADABLE.severity, msg).file(&u.file);
        imp.found.ran(UNREADABLE.id);
        imp.found.push(match &u.place {
            Some(p) => f.pointer(p),
            None => f,
        });
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
    for s in sources.iter().filter(|s| s.role.is_empty()) {
        if let Some(other) = detect(std::slice::from_ref(s)).filter(|g| *g != format) {
            return Err(fatal(format!(
                "{}: a result file of {}, given with {} files, which take nothing from it; verify each tool's files on their own (rigaudit verify FILE... --from FORMAT)",
                s.shown,
                other.name(),
                format.name()
            )));
        }
        let note = format!(
            "not read: no {} check reads this file, so nothing in it was checked",
            format.name()
        );
        found.push(
            rigaudit_audit::Finding::new(
                rigaudit_audit::imported::NOT_RECOMPUTABLE.id,
                Severity::Info,
                note,
            )
            .file(&s.name),
        );
    }
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
pub fn verify_files(
    format: Option<Format>,
    files: &[PathBuf],
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let (_, sources, imp) = load(format, files)?;
    let shown: Vec<String> = files.iter().map(|f| input::shown_path(f)).collect();
    Ok(verified(&shown.join(" "), &sources, &imp, fail_on))
}

/// `verify` of one run's sources, already read, as `format`; the report's id is `id`.
pub fn verify_read(
    format: Format,
    sources: Vec<Source>,
    id: &str,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    verify_read_with(format, sources, id, fail_on, Findings::default())
}

/// [`verify_read`] with findings of other checks over the same run added (an MLPerf result's
/// submission rules beside its LoadGen logs' checks).
pub fn verify_read_with(
    format: Format,
    sources: Vec<Source>,
    id: &str,
    fail_on: Option<Severity>,
    extra: Findings,
) -> Result<Report, Fatal> {
    let mut read = Read::of(sources);
    let mut imp = import_read(format, &mut read)?;
    common_settings(&mut imp, format);
    imp.found.merge(extra);
    Ok(verified(id, &read.sources, &imp, fail_on))
}

/// The report of a verify of sources: the checks' findings, and the files read with their
/// digests (the subjects of an attestation).
fn verified(id: &str, sources: &[Source], imp: &Imported, fail_on: Option<Severity>) -> Report {
    let mut r = report("verify", id, imp, fail_on);
    r.artifacts = sources
        .iter()
        .map(|s| rigaudit_audit::report::Artifact {
            path: s.name.clone(),
            sha256: s.sha256.clone(),
        })
        .collect();
    r
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

fn write_bundle(
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

fn import_record(format: Format, sources: &[Source], imp: &Imported) -> Value {
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

fn manifest(format: Format, sources: &[Source], imp: &Imported, record_sha: &str) -> Value {
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
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let read = crate::bundle::load(opened);
    let mut sources = read_sources(files)?;
    let imp = import_read(format, &mut sources)?;
    // The bundle's own files (present, digests) by the schema checks, then the format's checks.
    let mut all = Findings::default();
    rigaudit_audit::schema::run(&read, &mut all);
    all.merge(found(&imp));
    all.ran.sort();
    all.ran.dedup();
    let mut r = Report::new("verify", &opened.manifest.id, fail_on, all);
    r.artifacts = rigaudit_audit::schema::verified(&read);
    Ok(r)
}
