//! The detail log's keys against the summary's lines: which key stands for which printed figure,
//! per scenario, and when a printed figure is the key's value as LoadGen prints it.

/// The detail key of a summary line's key, and the factor from the detail log's value to the
/// printed one: every figure `results.cc` prints in `LogSummary` is the one it logs in
/// `LogDetail`, rounded (rows L15-L19), except MultiStream's latency lines, which are per query
/// (`result_*_query_latency_ns`, row L18), and SingleStream's `TPS w/o loadgen overhead`, per
/// second where the detail log's `result_token_throughput` is per nanosecond (row L6).
pub fn detail_key(k: &str, scenario: Option<&str>) -> Option<(String, f64)> {
    if let Some(key) = fixed_key(k, scenario == Some("MultiStream")) {
        let scale = if key == "result_token_throughput" {
            1e9
        } else {
            1.0
        };
        return Some((key.to_string(), scale));
    }
    if let Some(p) = k.strip_suffix("th percentile latency (ns)") {
        let p: f64 = p.trim().parse().ok()?;
        let suffix = match scenario {
            Some("MultiStream") => "_percentile_per_query_latency_ns",
            _ => "_percentile_latency_ns",
        };
        return Some((format!("result_{p:.2}{suffix}"), 1.0));
    }
    if let Some(p) = k.strip_suffix("th first token percentile latency (ns)") {
        let p: f64 = p.trim().parse().ok()?;
        return Some((
            format!("result_first_token_{p:.2}_percentile_latency_ns"),
            1.0,
        ));
    }
    let (p, rest) = k.split_once(" percentile ")?;
    let name = match (rest, scenario) {
        ("latency (ns)", Some("MultiStream")) => {
            format!("result_{p}_percentile_per_query_latency_ns")
        }
        ("latency (ns)", _) => format!("result_{p}_percentile_latency_ns"),
        ("first token latency (ns)", _) => format!("result_first_token_{p}_percentile_latency_ns"),
        ("time to output token (ns)", _) => {
            format!("result_time_per_output_token_{p}_percentile_ns")
        }
        _ => return None,
    };
    Some((name, 1.0))
}

/// The summary lines whose detail key does not depend on the percentile.
pub(super) const FIXED_KEYS: &[(&str, &str)] = &[
    (
        "Completed samples per second",
        "result_completed_samples_per_sec",
    ),
    (
        "Completed tokens per second",
        "result_completed_tokens_per_second",
    ),
    (
        "Scheduled samples per second",
        "result_scheduled_samples_per_sec",
    ),
    ("Samples per second", "result_samples_per_second"),
    ("Tokens per second", "result_tokens_per_second"),
    (
        "Tokens per second (inferred)",
        "result_inferred_tokens_per_second",
    ),
    (
        "Completed tokens per second (inferred)",
        "result_inferred_completed_tokens_per_second",
    ),
    (
        "QPS w/ loadgen overhead",
        "result_qps_with_loadgen_overhead",
    ),
    (
        "QPS w/o loadgen overhead",
        "result_qps_without_loadgen_overhead",
    ),
    (
        "TPS w/ loadgen overhead",
        "result_token_throughput_with_loadgen_overhead",
    ),
    ("TPS w/o loadgen overhead", "result_token_throughput"),
    ("Min latency (ns)", "result_min_latency_ns"),
    ("Max latency (ns)", "result_max_latency_ns"),
    ("Mean latency (ns)", "result_mean_latency_ns"),
    (
        "Min First Token latency (ns)",
        "result_first_token_min_latency_ns",
    ),
    (
        "Max First Token latency (ns)",
        "result_first_token_max_latency_ns",
    ),
    (
        "Mean First Token latency (ns)",
        "result_first_token_mean_latency_ns",
    ),
    // LoadGen 6.0 prints "Time per Output Token", earlier versions "Time to Output Token".
    (
        "Min Time per Output Token (ns)",
        "result_time_to_output_token_min",
    ),
    (
        "Max Time per Output Token (ns)",
        "result_time_to_output_token_max",
    ),
    (
        "Mean Time per Output Token (ns)",
        "result_time_to_output_token_mean",
    ),
    (
        "Min Time to Output Token (ns)",
        "result_time_to_output_token_min",
    ),
    (
        "Max Time to Output Token (ns)",
        "result_time_to_output_token_max",
    ),
    (
        "Mean Time to Output Token (ns)",
        "result_time_to_output_token_mean",
    ),
    ("Result is", "result_validity"),
    (
        "Performance constraints satisfied",
        "result_perf_constraints_met",
    ),
    ("Min duration satisfied", "result_min_duration_met"),
    ("Min queries satisfied", "result_min_queries_met"),
    ("Early stopping satisfied", "early_stopping_met"),
];

pub(super) fn fixed_key(k: &str, per_query: bool) -> Option<&'static str> {
    if per_query {
        let query = match k {
            "Min latency (ns)" => Some("result_min_query_latency_ns"),
            "Max latency (ns)" => Some("result_max_query_latency_ns"),
            "Mean latency (ns)" => Some("result_mean_query_latency_ns"),
            _ => None,
        };
        if query.is_some() {
            return query;
        }
    }
    FIXED_KEYS.iter().find(|(s, _)| *s == k).map(|(_, d)| *d)
}

/// Whether the summary's text and the detail log's number are one figure: each is the exact
/// value rounded (the text at its decimals, a double of the detail log at six significant
/// digits, an integer exactly), so they may differ by half a unit of each.
///
/// A double is known by its point in either file: LoadGen writes the detail log's doubles with
/// the stream's default format (six significant digits, trailing zeros and the point dropped:
/// 23144.0 is written `23144`), so a detail value without a point is still a double where the
/// summary prints the same figure with decimals (it prints integers without: counts, ns).
/// Published: HPE's v4.1 llama2-70b Server run, completed tokens/s `23144.02` against `23144`.
pub fn same_figure(detail: &serde_json::Number, text: &str) -> bool {
    let (Some(x), Ok(shown)) = (detail.as_f64(), text.trim().parse::<f64>()) else {
        return false;
    };
    let text_unit = crate::stats::printed_unit(text);
    let double = detail.is_f64() || text_unit < 1.0;
    let detail_unit = if double && x != 0.0 {
        10f64.powi(x.abs().log10().floor() as i32 - 5)
    } else {
        0.0
    };
    (x - shown).abs() <= 0.5 * (text_unit + detail_unit) * (1.0 + 1e-9) + 1e-12 * x.abs()
}
