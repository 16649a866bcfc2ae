//! Which tool wrote a file: by content first (each format's own marks), then by name; the
//! companions a result is read with.

use super::*;

/// A format's test on a source's content (its `looks_like`).
pub(super) type LooksLike = fn(&Source) -> bool;

/// The formats in the order [`detect`] asks them, each with its test on a source's content.
pub(super) const BY_CONTENT: &[(Format, LooksLike)] = &[
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
