//! Reads what a measurer needs out of an engine's start lines and its `/v1/models` answer.
//!
//! Engines word their start lines differently; the patterns here cover the seed pages'
//! TensorFold, llama.cpp's server and the bundled engine (`key=value`).

use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// What the start lines say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StartInfo {
    /// Streams served at once.
    pub slots: Option<u64>,
    /// The window in tokens.
    pub window: Option<u64>,
    /// Sampling defaults.
    pub sampling: BTreeMap<String, f64>,
    /// NCCL version, dotted.
    pub nccl: Option<String>,
    /// Engine version.
    pub engine_version: Option<String>,
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).expect("static pattern"))
}

/// The first group of `r` that matched in `s`.
fn first_group<'s>(r: &Regex, s: &'s str) -> Option<&'s str> {
    let c = r.captures(s)?;
    Some(c.iter().skip(1).flatten().next()?.as_str())
}

/// Parses start lines.
pub fn parse(lines: &[String]) -> StartInfo {
    static SLOTS: OnceLock<Regex> = OnceLock::new();
    static WINDOW: OnceLock<Regex> = OnceLock::new();
    static SAMPLING: OnceLock<Regex> = OnceLock::new();
    static NCCL: OnceLock<Regex> = OnceLock::new();
    static VERSION: OnceLock<Regex> = OnceLock::new();
    let slots = re(
        &SLOTS,
        r"(?i)(?:\b(\d+) streams? at once|\b(\d+) at once|n_slots\s*=\s*(\d+)|\bstreams=(\d+)|\bslots=(\d+))",
    );
    let window = re(
        &WINDOW,
        r"(?i)(?:\bcontext:\s*(\d+)|\b(\d+)-token window|n_ctx(?:_slot)?\s*=\s*(\d+)|\bwindow=(\d+))",
    );
    let sampling = re(
        &SAMPLING,
        r"(?i)\b(temperature|top_p|top_k|min_p)[ =:]+(-?[0-9]+(?:\.[0-9]+)?)",
    );
    let nccl = re(
        &NCCL,
        r"(?i)\bNCCL(?: version)?[ =:v]*([0-9]+\.[0-9]+\.[0-9]+)",
    );
    let version = re(
        &VERSION,
        r"(?i)(?:\bversion[ =:]+v?|\bengine=\S+?/v?|^\S+ v?)([0-9]+\.[0-9]+\.[0-9]+)\b",
    );
    let first = |r: &Regex, s: &str| first_group(r, s).map(String::from);
    let mut info = StartInfo::default();
    for line in lines {
        if info.slots.is_none() {
            info.slots = first(slots, line).and_then(|s| s.parse().ok());
        }
        if info.window.is_none() {
            info.window = first(window, line).and_then(|s| s.parse().ok());
        }
        if info.nccl.is_none() {
            info.nccl = first(nccl, line);
        }
        if info.engine_version.is_none() {
            // NCCL's own version is not the engine's: read the line without it.
            info.engine_version = first(version, &nccl.replace_all(line, ""));
        }
        if line.to_lowercase().contains("sampling") {
            for c in sampling.captures_iter(line) {
                if let Ok(v) = c[2].parse() {
                    info.sampling.entry(c[1].to_lowercase()).or_insert(v);
                }
            }
        }
    }
    info
}

/// The window `/v1/models` reports for its first model (`max_model_len`, `context_length`,
/// `n_ctx`, `meta.n_ctx_train` is not a window and is ignored).
pub fn models_window(models: &serde_json::Value) -> Option<u64> {
    let m = models.get("data")?.get(0)?;
    for key in ["max_model_len", "context_length", "context_window", "n_ctx"] {
        if let Some(v) = m.get(key).and_then(|v| v.as_u64()) {
            return Some(v);
        }
        if let Some(v) = m
            .get("meta")
            .and_then(|x| x.get(key))
            .and_then(|v| v.as_u64())
        {
            return Some(v);
        }
    }
    None
}

/// The model ids `/v1/models` lists.
pub fn models_ids(models: &serde_json::Value) -> Vec<String> {
    models
        .get("data")
        .and_then(|d| d.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("id").and_then(|v| v.as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The window a refusal text names, in the wordings of the common engines.
pub fn named_window(text: &str) -> Option<u64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    const NAMED_WINDOW: &str = concat!(
        r"(?i)(?:maximum context length is (\d+)",
        r"|context length \((\d+) tokens?\)",
        r"|context size \((\d+) tokens?\)",
        r"|max_new_tokens`?\s+must be <= (\d+)",
        r"|\bn_ctx(?:_slot)?\s*[=:]?\s*(\d+)",
        r"|context (?:length|size|window) (?:is|of) (\d+))",
    );
    first_group(re(&RE, NAMED_WINDOW), text)?.parse().ok()
}

/// The build hash the start lines name, if any.
pub fn start_build(lines: &[String]) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let build = re(
        &RE,
        concat!(
            r"(?i)(?:\bcommit\s*[=:]?\s*([0-9a-f]{7,40})\b",
            r"|\bbuild\s*[=:]?\s*\d*\s*\(([0-9a-f]{7,40})\)",
            r"|\(([0-9a-f]{7,40})\)",
            r"|^\S+(?: \S+)? ([0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*)\b)",
        ),
    );
    lines.iter().find_map(|l| {
        let h = first_group(build, l)?;
        (7..=40).contains(&h.len()).then(|| h.to_lowercase())
    })
}

/// The value of a flag in argv (`--flag V` or `--flag=V`).
pub fn flag<'a>(argv: &'a [String], names: &[&str]) -> Option<&'a str> {
    for (i, a) in argv.iter().enumerate() {
        for n in names {
            if a == n {
                return argv.get(i + 1).map(String::as_str);
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensorfold_start_line() {
        let lines = vec![
            "TensorFold 1.2.7 (93a2e93e) serving GLM-5.3-Flash, tensor parallel 2, context: 8192".to_string(),
            "8 streams at once, the engine's own and 7 more taking 136 pages of 512 rows (0.85 GiB) as they need them (enough for 8 at a 8192-token window)".to_string(),
            "sampling: temperature 1.0, top_p 0.95".to_string(),
            "NCCL 2.30.7 loaded".to_string(),
        ];
        let i = parse(&lines);
        assert_eq!(i.slots, Some(8));
        assert_eq!(i.window, Some(8192));
        assert_eq!(i.sampling.get("temperature"), Some(&1.0));
        assert_eq!(i.sampling.get("top_p"), Some(&0.95));
        assert_eq!(i.nccl.as_deref(), Some("2.30.7"));
        assert_eq!(i.engine_version.as_deref(), Some("1.2.7"));
    }

    #[test]
    fn key_value_start_line() {
        let lines = vec!["rigaudit-engine version=0.1.0 streams=4 window=4096 sampling temperature=0.2 top_p=0.9".to_string()];
        let i = parse(&lines);
        assert_eq!(i.slots, Some(4));
        assert_eq!(i.window, Some(4096));
        assert_eq!(i.sampling.get("top_p"), Some(&0.9));
        assert_eq!(i.engine_version.as_deref(), Some("0.1.0"));
    }

    #[test]
    fn the_bundled_engines_gpu_start_line_gives_its_version_and_nccls_apart() {
        let lines = vec!["rigaudit-engine start version=0.1.0 commit=unknown model=m.gguf streams=8 window=8192 device=cuda:0 gpu=\"NVIDIA H200\" arch=compute_90 kernels=cached(3ms) nccl=2.28.3 nccl_lib=/usr/lib/x86_64-linux-gnu/libnccl.so.2 rank=0 world=2 listen=http://127.0.0.1:8080".to_string()];
        let i = parse(&lines);
        assert_eq!(i.engine_version.as_deref(), Some("0.1.0"));
        assert_eq!(i.nccl.as_deref(), Some("2.28.3"));
        assert_eq!((i.slots, i.window), (Some(8), Some(8192)));
        // A line that names only NCCL's version gives no engine version.
        let i = parse(&["NCCL version 2.30.7+cuda13.3".to_string()]);
        assert_eq!(
            (i.engine_version, i.nccl.as_deref()),
            (None, Some("2.30.7"))
        );
    }

    #[test]
    fn models_answer() {
        let m = serde_json::json!({"data":[{"id":"GLM","max_model_len":8192}]});
        assert_eq!(models_window(&m), Some(8192));
        assert_eq!(models_ids(&m), vec!["GLM".to_string()]);
        assert_eq!(models_window(&serde_json::json!({})), None);
    }
}
