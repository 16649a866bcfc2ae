//! llama.cpp's `llama-bench -o json` (a JSON array, one object per test) or `-o jsonl` (one object
//! a line): each test's samples per repetition beside the mean and standard deviation it prints.
//!
//! Definitions, as llama-bench writes them (`tools/llama-bench/llama-bench.cpp`):
//! - units: `samples_ns`, `avg_ns`, `stddev_ns` in nanoseconds (unsigned 64-bit integers);
//!   `samples_ts`, `avg_ts`, `stddev_ts` in tokens per second;
//! - a test: `n_prompt` prompt tokens processed in batches (`pp`, a prefill figure: no request,
//!   no TTFT), then `n_gen` tokens generated one at a time (`tg`, a decode figure), after `n_depth`
//!   tokens already in the context (not timed, not counted); a repetition's tokens/s is
//!   `1e9 * (n_prompt + n_gen) / ns`;
//! - token counts: the test's own `n_prompt` and `n_gen`, as asked (llama-bench generates exactly
//!   `n_gen`, whatever the text; no server and no usage);
//! - which repetitions: every one of `-r` after one untimed warm-up run; `avg_*` is their mean,
//!   `stddev_*` their sample standard deviation (n - 1), computed in the samples' own type: for
//!   `*_ns` unsigned 64-bit integers (integer divisions, and a sum of squares that wraps past 2^64
//!   when the samples reach about 2.5 s each), for `*_ts` doubles.
//!
//! A test that fails (a context that cannot be made, a model that does not load) ends the run:
//! with `-o json` the array is left unclosed after the tests that ran.

use super::{
    compare, not_checked, record, row, std_sample, Row, EDITED_OUTPUT, IMPOSSIBLE_AGGREGATE,
    NOT_RECOMPUTABLE, RUN_INCOMPLETE,
};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;

/// One test of the file.
#[derive(Debug, Clone, Default)]
pub struct Test {
    /// Where it is: `/0` (its index in the array) or `line 3` (JSON Lines).
    pub at: String,
    /// `n_prompt`.
    pub n_prompt: u64,
    /// `n_gen`.
    pub n_gen: u64,
    /// `n_depth` (0 when the file has none).
    pub n_depth: u64,
    /// `samples_ns`.
    pub samples_ns: Vec<u64>,
    /// `samples_ts`.
    pub samples_ts: Vec<f64>,
    /// `avg_ns`.
    pub avg_ns: Option<u64>,
    /// `stddev_ns`.
    pub stddev_ns: Option<u64>,
    /// `avg_ts`.
    pub avg_ts: Option<f64>,
    /// `stddev_ts`.
    pub stddev_ts: Option<f64>,
    /// `build_number`, when a whole number.
    pub build_number: Option<u64>,
    /// Every key of the test's object.
    pub keys: Vec<String>,
}

/// The keys llama-bench's JSON output holds at builds whose output has been seen as written:
/// build 1275 (llama.cpp's README at 3469684, 2023-09-23) and build 5163 (8cf427ff, 2025-04-24),
/// as `fixtures/published/llama-bench/VERSIONS.md` lists them.
pub const KEYS_AT_BUILD: &[(u64, &[&str])] = &[
    (
        1275,
        &[
            "avg_ns",
            "avg_ts",
            "blas",
            "build_commit",
            "build_number",
            "cpu_info",
            "cuda",
            "f16_kv",
            "gpu_blas",
            "gpu_info",
            "main_gpu",
            "metal",
            "model_filename",
            "model_n_params",
            "model_size",
            "model_type",
            "mul_mat_q",
            "n_batch",
            "n_gen",
            "n_gpu_layers",
            "n_prompt",
            "n_threads",
            "opencl",
            "samples_ns",
            "samples_ts",
            "stddev_ns",
            "stddev_ts",
            "tensor_split",
            "test_time",
        ],
    ),
    (
        5163,
        &[
            "avg_ns",
            "avg_ts",
            "backends",
            "build_commit",
            "build_number",
            "cpu_info",
            "cpu_mask",
            "cpu_strict",
            "embeddings",
            "flash_attn",
            "gpu_info",
            "main_gpu",
            "model_filename",
            "model_n_params",
            "model_size",
            "model_type",
            "n_batch",
            "n_depth",
            "n_gen",
            "n_gpu_layers",
            "n_prompt",
            "n_threads",
            "n_ubatch",
            "no_kv_offload",
            "poll",
            "samples_ns",
            "samples_ts",
            "split_mode",
            "stddev_ns",
            "stddev_ts",
            "tensor_split",
            "test_time",
            "type_k",
            "type_v",
            "use_mmap",
        ],
    ),
];

impl Test {
    /// The test's name as llama-bench prints it: `pp64`, `tg16`, `pp64+tg16`, with `@d512`.
    pub fn name(&self) -> String {
        let mut n = match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        };
        if self.n_depth > 0 {
            n.push_str(&format!(" @ d{}", self.n_depth));
        }
        n
    }

    /// What its tokens/s measure: prefill (pp), decode (tg) or both.
    pub fn phase(&self) -> &'static str {
        match (self.n_prompt, self.n_gen) {
            (_, 0) => "prefill",
            (0, _) => "decode",
            _ => "prefill+decode",
        }
    }

    /// Each repetition's tokens/s, from its nanoseconds.
    pub fn ts(&self) -> Vec<f64> {
        let tokens = (self.n_prompt + self.n_gen) as f64;
        self.samples_ns
            .iter()
            .map(|ns| 1e9 * tokens / *ns as f64)
            .collect()
    }

    fn pointer(&self, field: &str) -> String {
        if self.at.starts_with('/') {
            format!("{}/{field}", self.at)
        } else {
            format!("{} /{field}", self.at)
        }
    }
}

/// The file, typed.
#[derive(Debug, Clone, Default)]
pub struct Bench {
    /// Its name (findings point into it).
    pub file: String,
    /// Every complete test, in order.
    pub tests: Vec<Test>,
    /// Whether a `-o json` array ends unclosed (the run stopped).
    pub truncated: bool,
    /// The output it is, as the option that writes it (`-o json`, `-o csv`, ...).
    pub layout: String,
}

/// Every llama-bench check, in the order they run.
pub const CHECKS: &[Row<Bench>] = &[
    row(RUN_INCOMPLETE, stopped),
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(IMPOSSIBLE_AGGREGATE, mean_of_rates),
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(EDITED_OUTPUT, edited_output),
];

/// `import.edited-output` (docs/formats/llama-bench.md row B1): a test that states a build whose
/// output has been seen as written, with other keys than that build prints (keys added later, or
/// one it printed missing).
fn edited_output(b: &Bench, emit: &mut Emit) -> Ran {
    for t in &b.tests {
        let Some((build, known)) = t
            .build_number
            .and_then(|n| KEYS_AT_BUILD.iter().find(|(b, _)| *b == n))
        else {
            continue;
        };
        let later: Vec<&str> = t
            .keys
            .iter()
            .map(String::as_str)
            .filter(|k| !known.contains(k))
            .collect();
        let missing: Vec<&str> = known
            .iter()
            .copied()
            .filter(|k| !t.keys.iter().any(|x| x == k))
            .collect();
        if later.is_empty() && missing.is_empty() {
            continue;
        }
        let mut why = Vec::new();
        if !later.is_empty() {
            why.push(format!(
                "it carries keys that build does not print ({})",
                later.join(", ")
            ));
        }
        if !missing.is_empty() {
            why.push(format!(
                "it lacks keys that build prints ({})",
                missing.join(", ")
            ));
        }
        emit.finding(format!(
            "{}: it says build {build}, but {}: the file was edited or rewritten after the run, so it is not the tool's output as written",
            t.name(),
            why.join(", and ")
        ))
        .at(&b.file, t.pointer("build_number"))
        .data(json!({"build": build, "keys_not_of_the_build": later, "keys_missing": missing}));
        return Some(());
    }
    Some(())
}

/// `speed.recompute-mismatch`: per test with its samples, each repetition's tokens/s, the means
/// and spreads (docs/formats/llama-bench.md rows B4-B7). Runs when some test has samples.
fn recompute(b: &Bench, emit: &mut Emit) -> Ran {
    let mut ran = false;
    for t in b.tests.iter().filter(|t| !t.samples_ns.is_empty()) {
        ran = true;
        samples_ts(b, t, emit);
        means(b, t, emit);
        stddev_ns(b, t, emit);
    }
    ran.then_some(())
}

/// `import.impossible-aggregate` (row B6): llama-bench's `avg_ts` is the mean of each
/// repetition's `1e9 * N / ns`, never below `1e9 * N` over the mean time (the arithmetic mean of
/// rates is at least the rate of the mean), and `avg_ns` is that mean time rounded down; a file
/// printing both against this bound is not one run's. For outputs without samples (CSV, SQL).
fn mean_of_rates(b: &Bench, emit: &mut Emit) -> Ran {
    let mut ran = false;
    for t in b.tests.iter().filter(|t| t.samples_ns.is_empty()) {
        let (Some(avg_ns), Some(avg_ts)) = (t.avg_ns, t.avg_ts) else {
            continue;
        };
        ran = true;
        let tokens = (t.n_prompt + t.n_gen) as f64;
        let floor = 1e9 * tokens / (avg_ns as f64 + 1.0);
        if avg_ts + 5e-7 >= floor * (1.0 - 1e-9) {
            continue;
        }
        emit.finding(format!(
            "{}: avg_ts {avg_ts} is below {floor:.6}, the rate of its mean time avg_ns {avg_ns} over {tokens} tokens: llama-bench's avg_ts is the mean of the repetitions' rates, which is never below that",
            t.name()
        ))
        .at(&b.file, t.pointer("avg_ts"))
        .data(json!({"avg_ts": avg_ts, "avg_ns": avg_ns, "bound": floor}));
    }
    ran.then_some(())
}

/// `import.not-recomputable` (rows B8-B10): the figures of tests printed without their samples
/// (CSV, SQL and Markdown outputs), shown and not checked.
fn not_recomputable(b: &Bench, emit: &mut Emit) -> Ran {
    let names: Vec<String> = b
        .tests
        .iter()
        .filter(|t| t.samples_ns.is_empty())
        .map(|t| format!("{} ({})", t.name(), t.at))
        .collect();
    let what = if b.layout == "-o md" {
        "tests' t/s (avg_ts ± stddev_ts at two decimals)"
    } else {
        "tests' avg_ns, stddev_ns, avg_ts and stddev_ts"
    };
    let why = format!(
        "llama-bench {} does not print the repetitions' samples they are computed from",
        b.layout
    );
    not_checked(emit, (&b.file, "tests"), (what, &why), &names)
}

/// `import.run-incomplete` (row B11): a `-o json` array left unclosed: llama-bench stopped at a
/// failed test.
fn stopped(b: &Bench, emit: &mut Emit) -> Ran {
    if !b.truncated {
        return Some(());
    }
    let last = b.tests.last().map_or("none".to_string(), Test::name);
    emit.finding(format!(
        "the JSON array ends unclosed after {} complete tests (the last: {last}): llama-bench stopped at a test that failed (its error went to stderr, which the file does not hold); the tests asked for after it were not run",
        b.tests.len()
    ))
    .file(&b.file)
    .data(json!({"complete_tests": b.tests.len()}));
    Some(())
}

/// Each repetition's printed tokens/s against its nanoseconds and the test's token count.
fn samples_ts(b: &Bench, t: &Test, emit: &mut Emit) {
    if t.samples_ts.len() != t.samples_ns.len() {
        emit.finding(format!(
            "{}: {} samples_ts for {} samples_ns; one each per repetition is expected",
            t.name(),
            t.samples_ts.len(),
            t.samples_ns.len()
        ))
        .at(&b.file, t.pointer("samples_ts"));
        return;
    }
    for (i, (exact, shown)) in t.ts().iter().zip(&t.samples_ts).enumerate() {
        let key = format!("llama-bench.{}.samples_ts.{i}", t.name());
        let at = t.pointer(&format!("samples_ts/{i}"));
        if six_digits(*exact, *shown) {
            record(emit, &key, *exact, *shown);
        } else {
            compare(emit, (&b.file, &at), &key, *exact, *shown);
        }
    }
}

/// Whether `shown` is `exact` as a C++ stream prints a double by default (six significant
/// digits: `2410.97`, `123457`, `1.23457e+06`), which is how every llama-bench version writes
/// `samples_ts` (row B5): a rate of 100000 tokens/s or more is printed without decimals.
pub fn six_digits(exact: f64, shown: f64) -> bool {
    if exact == 0.0 || !exact.is_finite() {
        return exact == shown;
    }
    let magnitude = exact.abs().log10().floor() as i32;
    let half = 0.5 * 10f64.powi(magnitude - 5);
    (exact - shown).abs() <= half * (1.0 + 1e-9)
}

/// `avg_ns` (llama-bench's integer mean), `avg_ts` and `stddev_ts` (mean and sample standard
/// deviation of the repetitions' tokens/s).
fn means(b: &Bench, t: &Test, emit: &mut Emit) {
    let n = t.samples_ns.len() as u64;
    if n == 0 {
        return;
    }
    let name = t.name();
    if let Some(shown) = t.avg_ns {
        let sum = t.samples_ns.iter().fold(0u64, |a, x| a.wrapping_add(*x));
        let at = t.pointer("avg_ns");
        let key = format!("llama-bench.{name}.avg_ns");
        compare(emit, (&b.file, &at), &key, (sum / n) as f64, shown as f64);
    }
    let ts = t.ts();
    if let Some(shown) = t.avg_ts {
        let mean = ts.iter().sum::<f64>() / ts.len() as f64;
        let at = t.pointer("avg_ts");
        let key = format!("llama-bench.{name}.avg_ts");
        compare(emit, (&b.file, &at), &key, mean, shown);
    }
    if let Some(shown) = t.stddev_ts {
        let sd = std_sample(&ts).unwrap_or(0.0);
        let at = t.pointer("stddev_ts");
        let key = format!("llama-bench.{name}.stddev_ts");
        compare(emit, (&b.file, &at), &key, sd, shown);
    }
}

/// `stddev_ns` as llama-bench computes it: `sqrt(sum_sq / (n - 1) - mean * mean * n / (n - 1))`
/// in unsigned 64-bit integers (each operation wrapping), the square root of the result as a
/// double, truncated; and whether the wrapping changed it: the same formula in integers that do
/// not wrap gives another value (a sum of squares past 2^64 whose wrap the subtraction cancels
/// leaves it unchanged).
pub fn llama_bench_stddev_ns(v: &[u64]) -> (u64, bool) {
    if v.len() <= 1 {
        return (0, false);
    }
    let n = v.len() as u64;
    let sum = v.iter().fold(0u64, |a, x| a.wrapping_add(*x));
    let sq = v
        .iter()
        .fold(0u64, |a, x| a.wrapping_add(x.wrapping_mul(*x)));
    let mean = sum / n;
    let mmn = mean.wrapping_mul(mean).wrapping_mul(n);
    let inner = (sq / (n - 1)).wrapping_sub(mmn / (n - 1));
    let value = (inner as f64).sqrt() as u64;
    // The same formula over integers wide enough not to wrap.
    let (n, wide) = (n as i128, v.iter().map(|x| *x as i128));
    let sum: i128 = wide.clone().sum();
    let sq: i128 = wide.map(|x| x * x).sum();
    let mean = sum / n;
    let exact_inner = sq / (n - 1) - mean * mean * n / (n - 1);
    let unwrapped = (exact_inner >= 0).then(|| (exact_inner as f64).sqrt() as u64);
    (value, unwrapped != Some(value))
}

/// `stddev_ns` against llama-bench's own integer formula over the samples (whose integer
/// rounding is some ns off the exact sample standard deviation); when that formula wrapped past
/// 2^64 the printed value describes nothing, and the finding says so.
fn stddev_ns(b: &Bench, t: &Test, emit: &mut Emit) {
    let Some(shown) = t.stddev_ns else {
        return;
    };
    let values: Vec<f64> = t.samples_ns.iter().map(|x| *x as f64).collect();
    let exact = std_sample(&values).unwrap_or(0.0);
    let (tool, wrapped) = llama_bench_stddev_ns(&t.samples_ns);
    let key = format!("llama-bench.{}.stddev_ns", t.name());
    let value = if wrapped { exact } else { tool as f64 };
    record(emit, &key, value, shown as f64);
    let near = (exact - shown as f64).abs() <= (1e-6 * exact).max(1.0);
    if near || (tool == shown && !wrapped) {
        return;
    }
    let why = if tool == shown {
        ": it is what llama-bench's unsigned 64-bit arithmetic gives, and that wrapped (the samples' sum of squares passes 2^64), so the printed spread describes nothing"
    } else {
        ""
    };
    emit.finding(format!(
        "{key} is printed as {shown} but its samples give {exact:.0}{why}"
    ))
    .at(&b.file, t.pointer("stddev_ns"))
    .data(json!({"printed": shown, "recomputed": exact, "llama_bench_integer": tool, "wrapped": wrapped}));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_ts_are_compared_at_six_significant_digits() {
        // A C++ stream prints 123456.7 as "123457": right at six digits, 0.3 off at one decimal.
        assert!(six_digits(123_456.7, 123_457.0));
        assert!(!super::super::close(123_456.7, 123_457.0));
        assert!(six_digits(2410.9741, 2410.97));
        assert!(six_digits(1_234_567.0, 1.23457e6));
        assert!(!six_digits(2410.9741, 2411.0));
    }

    #[test]
    fn a_mean_rate_below_the_rate_of_the_mean_time_is_impossible() {
        let t = |avg_ts: f64| Test {
            at: "line 2".into(),
            n_prompt: 512,
            avg_ns: Some(1_000_000_000),
            avg_ts: Some(avg_ts),
            ..Default::default()
        };
        let bench = |avg_ts| Bench {
            file: "llama-bench.csv".into(),
            tests: vec![t(avg_ts)],
            layout: "-o csv".into(),
            ..Default::default()
        };
        let found = |b: &Bench| crate::imported::run(CHECKS, b).findings.len();
        // 512 tokens in a mean of 1 s: the mean of the rates is at least 512 (less the rounding).
        assert_eq!(found(&bench(512.0)), 1, "the not-recomputable note only");
        assert_eq!(found(&bench(511.0)), 2);
    }

    #[test]
    fn the_integer_stddev_is_llama_bench_s_and_wraps() {
        // Samples of a real run under load (fixtures/imports/llama-bench/overflow).
        let v = [740_069_036, 3_941_222_400, 2_168_001_670];
        assert_eq!(llama_bench_stddev_ns(&v), (3_434_407_237, true));
        let f: Vec<f64> = v.iter().map(|x| *x as f64).collect();
        assert!((std_sample(&f).unwrap() - 1.6037e9).abs() < 1e6);
        assert_eq!(llama_bench_stddev_ns(&[168_824_990]), (0, false));
        // A clean run's tg16: the integer formula is 28 ns off the exact value, and not wrapped.
        let v = [168_824_990, 157_425_176, 162_469_222];
        assert_eq!(llama_bench_stddev_ns(&v), (5_712_499, false));
        // Samples of 6 s: the sum of squares passes 2^64, but the subtraction cancels the wrap.
        let v = [6_000_000_000, 6_000_030_000, 6_000_061_000];
        assert_eq!(llama_bench_stddev_ns(&v), (83_248, false));
    }
}
