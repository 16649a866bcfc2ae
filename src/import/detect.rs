//! Which tool wrote a file: by content first (each format's own marks), then by name; the
//! companions a result is read with.

use super::importer::IMPORTERS;
use super::*;

/// The format of the sources, detected from their content when not given: the first importer of
/// [`IMPORTERS`] that any source looks like.
pub fn detect(sources: &[Source]) -> Option<Format> {
    IMPORTERS
        .iter()
        .find(|i| sources.iter().any(|s| i.looks_like(s)))
        .map(|i| i.format())
}

/// The format whose tool writes a file of this name, for a file whose content says nothing (empty,
/// cut short, not text): lm-eval's `results*.json` and `samples_*.jsonl`, LoadGen's
/// `mlperf_log_*.txt`, AIPerf's `profile_export*`, GuideLLM's `benchmarks*`, llama-bench's
/// `llama-bench*`, llama-server's `*.sse` (each importer's `writes_name`). vLLM names its results as
/// the user likes: by content only.
pub fn named(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    IMPORTERS
        .iter()
        .find(|i| i.writes_name(&n))
        .map(|i| i.format())
}

/// The format a file of this name goes with, when its content alone says no tool's (it is read with
/// the tool's logs of the same folder, and is no run by itself): MLPerf's compliance verdicts
/// `verify_accuracy.txt` and `verify_performance.txt`, and an accuracy run's `accuracy.txt` and
/// `mlperf_log_accuracy.json`, read with LoadGen's logs; ML.ENERGY's `prometheus.json`, read with its
/// `results.json` (each importer's `goes_with`).
pub fn companion(name: &str) -> Option<Format> {
    let n = name.to_ascii_lowercase();
    IMPORTERS
        .iter()
        .find(|i| i.goes_with(&n))
        .map(|i| i.format())
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
