//! One folder of a tree into runs, as each tool writes them: AIPerf's and LoadGen's files of one
//! folder are one run (`performance/run_1/` with `mlperf_log_summary.txt` and
//! `mlperf_log_detail.txt`); lm-eval's `results_<time>.json` is one run with the
//! `samples_<task>_<time>.jsonl` of the same time; llama-server's saved streams of one folder are
//! one run; any other result file (vLLM, GuideLLM, llama-bench, saved llama-server responses) is
//! a run by itself. A file's tool is told by [`import::detect_one`] (content, else name); a file
//! of a known tool that cannot be read (a Git LFS pointer, empty, over its bound) is a run of its
//! own that is refused, naming it.

use super::{relative, LeftOut, Place, Row, Tree};
use crate::import::{self, Format, Source};
use crate::input;
use crate::subject::Subject;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};

/// One run found in a folder, before it is verified.
pub struct Run {
    /// Its path relative to the root.
    pub run: String,
    /// Its tool, when known.
    pub tool: Option<Format>,
    /// Its files, read; or why they could not be.
    pub job: Result<Vec<Source>, String>,
}

/// A file read, with where it lies.
type Read = (PathBuf, Source);

/// One run's files: its format, its lead (what names it) and the files.
type Grouped = (Format, PathBuf, Vec<Read>);

/// The runs of a folder's files (`files` sorted), and the files that may be results (by their
/// extension) but are of no tool rigaudit reads.
pub fn runs(root: &Path, dir: &Path, files: &[PathBuf]) -> (Vec<Run>, Vec<LeftOut>) {
    let (found, refused, mut left_out) = read_results(files, FOLDER_READ_MAX);
    let mut groups = split(found.found);
    // An Endpoints run takes its folder's config.yaml and events.jsonl, which no tool's content
    // names; elsewhere they stay files of no tool.
    if let Some(g) = groups.iter_mut().find(|g| g.0 == Format::MlperfEndpoints) {
        left_out.retain(|l| !found.endpoints_extras.iter().any(|(p, _)| *p == l.path));
        g.2.extend(found.endpoints_extras);
    }
    let alone = groups.len() + refused.len() == 1;
    let name = |lead: &Path| relative(root, if alone { dir } else { lead });
    let mut out: Vec<Run> = groups
        .into_iter()
        .map(|(f, lead, g)| Run {
            run: name(&lead),
            tool: Some(f),
            job: Ok(g.into_iter().map(|(_, s)| s).collect()),
        })
        .collect();
    out.extend(refused.into_iter().map(|(p, tool, why)| Run {
        run: name(&p),
        tool,
        job: Err(why),
    }));
    (out, left_out)
}

/// The most bytes of one folder's result files held at once (a folder's runs are grouped before
/// they are verified); a file past it is a row of its own that says so, not read with the rest.
const FOLDER_READ_MAX: u64 = 1 << 30;

/// A file of a known tool that cannot be read: where it is, its tool by name, and why.
type Refused = (PathBuf, Option<Format>, String);

/// The files of a folder read with their tools, and those of no tool an Endpoints run of the
/// same folder takes (its `config.yaml`, `events.jsonl`).
#[derive(Default)]
struct Found {
    found: Vec<(Format, Read)>,
    endpoints_extras: Vec<Read>,
}

/// The folder's files that may be results (by extension), read: each with its tool (by content,
/// else by name; a companion such as LoadGen's compliance verdict by its name, [`import::companion`]),
/// or refused naming why; files of no known tool are left out.
fn read_results(files: &[PathBuf], budget: u64) -> (Found, Vec<Refused>, Vec<LeftOut>) {
    let mut found = Found::default();
    let mut refused = Vec::new();
    let mut unknown = Vec::new();
    let mut held = 0u64;
    for p in files {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        if !import::may_be_result(&name) {
            continue;
        }
        match import::read_source(p) {
            Err(e) => refused.push((p.clone(), import::named(&name), e.0)),
            Ok(src) if src.bytes.is_empty() => {
                if let Some(f) = import::named(&name) {
                    let why = format!("{}: empty (0 bytes): nothing to check", src.shown);
                    refused.push((p.clone(), Some(f), why));
                }
            }
            Ok(src) => {
                let tool = import::detect_one(&src).or_else(|| import::companion(&name));
                let Some(f) = tool else {
                    unknown.push(LeftOut::new(
                        p,
                        "of no tool rigaudit reads (by its content and its name)",
                    ));
                    if import::endpoints::companion(&name)
                        && held + (src.bytes.len() as u64) <= budget
                    {
                        held += src.bytes.len() as u64;
                        found.endpoints_extras.push((p.clone(), src));
                    }
                    continue;
                };
                held += src.bytes.len() as u64;
                if held > budget {
                    held -= src.bytes.len() as u64;
                    let why = format!("{}: not read with the rest of its folder: its result files pass {} MiB in all, the most a tree holds of one folder at once; verify the file alone", src.shown, budget >> 20);
                    refused.push((p.clone(), Some(f), why));
                    continue;
                }
                found.found.push((f, (p.clone(), src)));
            }
        }
    }
    (found, refused, unknown)
}

/// The files of each format into runs, each with its lead (what names it when the folder holds
/// more than one run: the folder, or the run's main file).
fn split(found: Vec<(Format, Read)>) -> Vec<Grouped> {
    let mut out = Vec::new();
    let mut found = found;
    for &f in <Format as clap::ValueEnum>::value_variants() {
        let (of_f, rest): (Vec<_>, Vec<_>) = found.into_iter().partition(|(g, _)| *g == f);
        found = rest;
        let mine: Vec<Read> = of_f.into_iter().map(|(_, r)| r).collect();
        if mine.is_empty() {
            continue;
        }
        // Companions alone (an accuracy.txt, a compliance verdict, without the logs) are a run
        // of their own too: dropped, a folder of them would pass without being read.
        let folder = mine[0]
            .0
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        match f {
            Format::Aiperf | Format::Loadgen | Format::MlEnergy | Format::MlperfEndpoints => {
                out.push((f, folder, mine))
            }
            Format::LmEval => out.extend(lm_eval(mine).into_iter().map(|g| (f, g[0].0.clone(), g))),
            Format::LlamaServer => {
                let (streams, rest): (Vec<Read>, Vec<Read>) = mine
                    .into_iter()
                    .partition(|(_, s)| import::llama_server_stream::is_stream(s));
                if !streams.is_empty() {
                    out.push((f, folder, streams));
                }
                out.extend(rest.into_iter().map(|r| (f, r.0.clone(), vec![r])));
            }
            _ => out.extend(mine.into_iter().map(|r| (f, r.0.clone(), vec![r]))),
        }
    }
    out
}

/// lm-eval's files of one folder into runs: each results file with the samples of its time; with
/// one results file (or none), every file of the folder is one run (0.4.0-0.4.2's
/// `results.json` with its `<model_args>_<task>.jsonl` arrays, told by content).
fn lm_eval(files: Vec<Read>) -> Vec<Vec<Read>> {
    let (samples, results): (Vec<Read>, Vec<Read>) = files
        .into_iter()
        .partition(|(_, s)| s.name.starts_with("samples_") || import::lm_eval::is_samples_array(s));
    if results.len() <= 1 {
        return vec![results.into_iter().chain(samples).collect()];
    }
    let mut groups: Vec<Vec<Read>> = results.into_iter().map(|r| vec![r]).collect();
    let mut orphans = Vec::new();
    for s in samples {
        let of = |g: &Vec<Read>| {
            let stamp = g[0]
                .1
                .name
                .strip_prefix("results_")?
                .strip_suffix(".json")?;
            Some(s.1.name.ends_with(&format!("_{stamp}.jsonl")))
        };
        match groups.iter().position(|g| of(g) == Some(true)) {
            Some(i) => groups[i].push(s),
            None => orphans.push(s),
        }
    }
    if !orphans.is_empty() {
        groups.push(orphans);
    }
    groups
}

/// Verifies the runs of one place; a panic of a reader is a refused row, not the end of the tree.
/// Also what the place holds that is no run checked (files of no known tool, runs that `--from`
/// leaves out).
pub fn verify_place(
    tree: &Tree,
    place: &Place,
    fail_on: Option<Severity>,
    finish: &(dyn Fn(Report) -> Report + Sync),
) -> (Vec<Row>, Vec<LeftOut>) {
    let from_note = |f: Format| format!("not of the tool --from names ({})", f.name());
    match (place, tree.from) {
        // `--from FORMAT` keeps that tool's runs: no bundle.
        (Place::Bundle(dir), Some(f)) => {
            let why = format!("a bundle, {}", from_note(f));
            (Vec::new(), vec![LeftOut::new(dir, why)])
        }
        (Place::Bundle(dir), None) => {
            let run = relative(&tree.root, dir);
            let report = caught(&run, finish, || {
                let s = Subject::open(std::slice::from_ref(dir), None).map_err(|e| e.0)?;
                crate::verify::run(&s, fail_on).map_err(|e| e.0)
            });
            let tool = "bundle".to_string();
            (vec![Row { run, tool, report }], Vec::new())
        }
        (Place::Result(r), Some(f)) if f != Format::Loadgen => {
            let why = format!("an MLPerf result, {}", from_note(f));
            (Vec::new(), vec![LeftOut::new(&r.dir(), why)])
        }
        (Place::Result(r), _) => {
            let Row { run, tool, report } = super::submission::verify(tree, r, fail_on);
            let report = caught(&run, finish, move || report);
            (vec![Row { run, tool, report }], Vec::new())
        }
        (Place::Files(dir, files), _) => {
            let (runs, mut left_out) = runs(&tree.root, dir, files);
            let mut rows = Vec::new();
            for r in runs {
                match tree.from {
                    Some(f) if r.tool != Some(f) => {
                        let why = format!(
                            "a run of {}, {}",
                            r.tool.map_or("an unknown tool", Format::name),
                            from_note(f)
                        );
                        left_out.push(LeftOut::new(&tree.root.join(&r.run), why));
                    }
                    _ => rows.push(verify_run(tree, r, fail_on, finish)),
                }
            }
            (rows, left_out)
        }
    }
}

fn verify_run(
    tree: &Tree,
    r: Run,
    fail_on: Option<Severity>,
    finish: &(dyn Fn(Report) -> Report + Sync),
) -> Row {
    let tool = r.tool.map_or("unknown", Format::name).to_string();
    let id = input::shown_path(&tree.root.join(&r.run));
    let report = caught(&r.run, finish, || match (r.job, r.tool) {
        (Ok(sources), Some(f)) => import::verify_read(f, sources, &id, fail_on).map_err(|e| e.0),
        (Err(why), _) => Err(why),
        (Ok(_), None) => Err(format!("{id}: not a known tool's result")),
    });
    Row {
        run: r.run,
        tool,
        report,
    }
}

/// The report `f` makes, finished (the policy applied); a panic in it is an error naming the run.
fn caught(
    run: &str,
    finish: &(dyn Fn(Report) -> Report + Sync),
    f: impl FnOnce() -> Result<Report, String>,
) -> Result<Report, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(format!("{run}: the reader stopped on an internal error")))
        .map(finish)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn published(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/published")
            .join(rel)
    }

    /// The runs of a folder as (run, tool, the names of its files).
    fn named(root: &Path, dir: &Path) -> Vec<(String, String, Vec<String>)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        runs(root, dir, &files)
            .0
            .into_iter()
            .map(|r| {
                let tool = r.tool.map_or("unknown", Format::name).to_string();
                let names = r.job.unwrap().into_iter().map(|s| s.name).collect();
                (r.run, tool, names)
            })
            .collect()
    }

    #[test]
    fn a_compliance_verdict_goes_with_the_loadgen_logs_of_its_folder_and_alone_is_a_run_of_its_own()
    {
        let tmp = tempfile::tempdir().unwrap();
        let case = published("loadgen/v4.1-nvidia-b200x1-llama2-70b-99.9-server");
        let run = tmp.path().join("run_1");
        std::fs::create_dir_all(&run).unwrap();
        for f in [
            "accuracy.txt",
            "mlperf_log_summary.txt",
            "mlperf_log_detail.txt",
            "verify_accuracy.txt",
        ] {
            std::fs::copy(case.join(f), run.join(f)).unwrap();
        }
        write(&run, "notes.json", "{\"why\": \"119 :::MLLOG lines\"}");
        let names = [
            "accuracy.txt",
            "mlperf_log_detail.txt",
            "mlperf_log_summary.txt",
            "verify_accuracy.txt",
        ];
        let want = (
            "run_1".to_string(),
            "loadgen".to_string(),
            names.map(String::from).to_vec(),
        );
        assert_eq!(named(tmp.path(), &run), vec![want]);
        let alone = tmp.path().join("TEST06");
        std::fs::create_dir_all(&alone).unwrap();
        std::fs::copy(
            case.join("verify_accuracy.txt"),
            alone.join("verify_accuracy.txt"),
        )
        .unwrap();
        // Alone it is still read (a folder of verdicts must not pass unread).
        let want = (
            "TEST06".to_string(),
            "loadgen".to_string(),
            vec!["verify_accuracy.txt".to_string()],
        );
        assert_eq!(named(tmp.path(), &alone), vec![want]);
    }

    #[test]
    fn a_folder_past_its_read_budget_names_the_files_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let case = published("vllm/ascend-20250218-llama3-8b-qps1");
        let file = case.join("serving_llama8B_tp1_qps_1.json");
        let size = std::fs::metadata(&file).unwrap().len();
        let files: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = tmp.path().join(format!("r{i}.json"));
                std::fs::copy(&file, &p).unwrap();
                p
            })
            .collect();
        let (found, refused, _) = read_results(&files, 2 * size);
        assert_eq!(found.found.len(), 2);
        assert_eq!(refused.len(), 1);
        let (path, tool, why) = &refused[0];
        assert_eq!((path, *tool), (&files[2], Some(Format::Vllm)));
        assert!(
            why.contains("r2.json") && why.contains("verify the file alone"),
            "{why}"
        );
    }

    #[test]
    fn lm_eval_results_of_two_times_are_two_runs_each_with_its_samples() {
        let tmp = tempfile::tempdir().unwrap();
        let case = published("lm-eval/calamita-en-it-phi35-process-results");
        for e in std::fs::read_dir(&case).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "expected.json" {
                continue;
            }
            std::fs::copy(e.path(), tmp.path().join(&name)).unwrap();
            let other = name.replace("2024-10-11", "2025-01-02");
            std::fs::copy(e.path(), tmp.path().join(other)).unwrap();
        }
        let runs = named(tmp.path(), tmp.path());
        assert_eq!(runs.len(), 2, "{runs:?}");
        for (run, tool, files) in &runs {
            let stamp = &run[run.find('_').unwrap() + 1..run.len() - ".json".len()];
            assert_eq!(tool, "lm-eval");
            assert!(files.len() >= 2, "{files:?}");
            assert!(files.iter().all(|f| f.contains(stamp)), "{run}: {files:?}");
        }
    }
}
