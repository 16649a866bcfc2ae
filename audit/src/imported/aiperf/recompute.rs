//! The figures an AIPerf export prints, recomputed from its per-request records as AIPerf's own
//! metrics compute them: the distributions, totals, counts, the window, its duration and rates.

use super::*;

/// The values of one metric over the records that carry it (list metrics flattened).
pub(super) fn values(records: &[&Record], tag: &str) -> Vec<f64> {
    records
        .iter()
        .filter_map(|r| r.metrics.get(tag))
        .flatten()
        .copied()
        .collect()
}

/// One field of a distribution recomputed from its values.
pub(super) fn field(sorted: &[f64], name: &str) -> Option<f64> {
    let n = sorted.len();
    let sum: f64 = sorted.iter().sum();
    match name {
        "count" => Some(n as f64),
        "sum" => Some(sum),
        "avg" => (n > 0).then(|| sum / n as f64),
        "min" => sorted.first().copied(),
        "max" => sorted.last().copied(),
        "std" => std_population(sorted),
        p => p
            .strip_prefix('p')
            .and_then(|q| q.parse::<f64>().ok())
            .and_then(|q| percentile_linear(sorted, q)),
    }
}

/// The printed distributions: those with a `p50` or a `min` (0.1.x also gives its single figures
/// a `count` of 1, with no spread: `request_count`, the throughputs).
pub(super) fn printed_distributions(s: &Summary) -> impl Iterator<Item = (&String, &Stat)> {
    s.metrics
        .iter()
        .filter(|(_, stat)| stat.fields.contains_key("p50") || stat.fields.contains_key("min"))
}

/// Every distribution the summary prints (avg, min, max, std, percentiles, sum, count)
/// recomputed from the records that carry the metric. Returns whether it compared any.
pub(super) fn distributions(s: &Summary, records: &[&Record], emit: &mut Emit) -> bool {
    let mut compared = false;
    for (tag, stat) in printed_distributions(s) {
        let mut v = values(records, tag);
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        for name in FIELDS {
            let (Some(&shown), Some(exact)) = (stat.fields.get(*name), field(&v, name)) else {
                continue;
            };
            let at = format!("/{tag}/{name}");
            let key = format!("aiperf.{tag}.{name}");
            compare(emit, (&s.file, &at), &key, exact, shown);
            compared = true;
        }
    }
    compared
}

/// The printed totals are the sums of their record metrics. Returns whether it compared any.
pub(super) fn totals(s: &Summary, records: &[&Record], emit: &mut Emit) -> bool {
    let mut compared = false;
    for (total, tag) in TOTALS {
        let Some(shown) = s.metrics.get(*total).and_then(|m| m.fields.get("avg")) else {
            continue;
        };
        let exact: f64 = values(records, tag).iter().sum();
        let at = format!("/{total}/avg");
        let key = format!("aiperf.{total}");
        compare(emit, (&s.file, &at), &key, exact, *shown);
        compared = true;
    }
    let cached = s.metrics.get("overall_usage_prompt_cache_read_pct");
    let prompt: f64 = values(records, "usage_prompt_tokens").iter().sum();
    if let (Some(shown), true) = (cached.and_then(|m| m.fields.get("avg")), prompt > 0.0) {
        let exact = 100.0
            * values(records, "usage_prompt_cache_read_tokens")
                .iter()
                .sum::<f64>()
            / prompt;
        let at = "/overall_usage_prompt_cache_read_pct/avg";
        let key = "aiperf.overall_usage_prompt_cache_read_pct";
        compare(emit, (&s.file, at), key, exact, *shown);
        compared = true;
    }
    compared
}

/// The failed requests among the records, and the count the summary prints.
pub(super) fn errors(s: &Summary, records: &[&Record]) -> (f64, Option<f64>) {
    let errors = records.iter().filter(|r| r.failed()).count() as f64;
    (errors, printed(s, "error_request_count"))
}

/// A summary figure's `avg`.
pub(super) fn printed(s: &Summary, k: &str) -> Option<f64> {
    s.metrics.get(k).and_then(|m| m.fields.get("avg")).copied()
}

/// The request counts against the records: the error count recorded (judged by
/// `import.failed-hidden`), the valid and all requests and the error rate compared. Returns
/// whether it compared any.
pub(super) fn counts(s: &Summary, records: &[&Record], emit: &mut Emit) -> bool {
    let (errors, shown_errors) = errors(s, records);
    if let Some(shown) = shown_errors.filter(|v| !(errors > 0.0 && *v < errors)) {
        record(emit, "aiperf.error_request_count", errors, shown);
    }
    let all = records.len() as f64;
    let mut rows = vec![
        ("request_count", all - errors),
        ("completed_request_count", all),
    ];
    if all > 0.0 {
        rows.push(("request_error_rate", 100.0 * errors / all));
    }
    let mut compared = false;
    for (k, exact) in rows {
        if let Some(v) = printed(s, k) {
            let at = format!("/{k}/avg");
            compare(emit, (&s.file, &at), &format!("aiperf.{k}"), exact, v);
            compared = true;
        }
    }
    compared
}

/// The run's window as AIPerf takes it (docs/formats/aiperf.md row A3): from the earliest start
/// of a valid request (`min_request_timestamp`) to the latest start plus `request_latency` of one
/// (`max_response_timestamp`); failed and cancelled requests do not enter it.
pub(super) fn window(records: &[&Record]) -> Option<(i64, i64)> {
    let ok: Vec<&&Record> = records.iter().filter(|r| !r.failed()).collect();
    let start = ok.iter().filter_map(|r| r.start_ns).min()?;
    let end = ok.iter().filter_map(|r| r.response_end_ns()).max()?;
    Some((start, end))
}

/// `benchmark_duration`, and `min_request_timestamp` and `max_response_timestamp` where printed
/// (0.2.0-0.3.0), against the records' window (row A3). Returns whether it compared any.
pub(super) fn duration(s: &Summary, records: &[&Record], emit: &mut Emit) -> bool {
    let Some((start, end)) = window(records) else {
        return false;
    };
    // 0.12.0 on: the two timestamps are 64-bit floats (256 ns apart at today's epoch), and the
    // duration their difference.
    let span = if s.column_store() {
        (end as f64 - start as f64) / 1e9
    } else {
        (end - start) as f64 / 1e9
    };
    let mut compared = false;
    for (k, exact) in [
        ("benchmark_duration", span),
        ("min_request_timestamp", start as f64),
        ("max_response_timestamp", end as f64),
    ] {
        if let Some(v) = printed(s, k) {
            let at = format!("/{k}/avg");
            compare(emit, (&s.file, &at), &format!("aiperf.{k}"), exact, v);
            compared = true;
        }
    }
    compared
}

/// Every throughput as AIPerf derives it from the summary's own figures (row A4): its total
/// (request_count, total_osl, total_isl, both) over the printed `benchmark_duration`, or from
/// 0.12.0 on over the phase's window (`end_time` - `start_time`, known to the microsecond, so
/// compared to that). 0.1.x prints no duration: there `output_token_throughput` is
/// `request_throughput` times the reply tokens (output_sequence_length's avg x count) per valid
/// request. Returns whether it compared any.
pub(super) fn rates(s: &Summary, emit: &mut Emit) -> bool {
    let p = |k: &str| printed(s, k);
    let window = match (s.column_store(), s.window_s) {
        (true, Some(w)) if w > 0.0 => Some((w, 2e-6 / w)),
        (true, _) => None,
        (false, _) => p("benchmark_duration").map(|d| (d, 0.0)),
    };
    let mut compared = false;
    let mut check = |rate: &str, exact: f64, emit: &mut Emit, within: f64| {
        if let Some(shown) = p(rate) {
            let at = format!("/{rate}/avg");
            compare_within(
                emit,
                (&s.file, &at),
                &format!("aiperf.{rate}"),
                exact,
                shown,
                within,
            );
            compared = true;
        }
    };
    if let Some((d, within)) = window.filter(|(d, _)| *d > 0.0) {
        let both = p("total_isl").zip(p("total_osl")).map(|(a, b)| a + b);
        for (rate, amount) in [
            ("request_throughput", p("request_count")),
            ("output_token_throughput", p("total_osl")),
            ("input_token_throughput", p("total_isl")),
            ("total_token_throughput", both),
        ] {
            if let Some(a) = amount {
                check(rate, a / d, emit, within);
            }
        }
    } else if let (Some(per_s), Some(n), Some(osl)) = (
        p("request_throughput"),
        p("request_count").filter(|n| *n > 0.0),
        s.metrics.get("output_sequence_length"),
    ) {
        let f = |k: &str| osl.fields.get(k).copied();
        if let (Some(avg), Some(count)) = (f("avg"), f("count")) {
            check(
                "output_token_throughput",
                per_s * avg * count / n,
                emit,
                0.0,
            );
        }
    }
    compared
}

/// GenAI-Perf's throughputs (docs/formats/aiperf.md row G3): over the span from the earliest
/// timestamp to the latest last content chunk of the requests with content; `request_throughput`
/// counts every request of the export, those without content too (`len(requests)`), and
/// `output_token_throughput` the reply tokens (output_sequence_length's avg x count). Returns
/// whether it compared any.
pub(super) fn genai_rates(s: &Summary, records: &[&Record], emit: &mut Emit) -> bool {
    let ok: Vec<&&Record> = records.iter().filter(|r| !r.failed()).collect();
    let start = ok.iter().filter_map(|r| r.start_ns).min();
    let end = ok.iter().filter_map(|r| r.end_ns).max();
    let (Some(start), Some(end)) = (start, end) else {
        return false;
    };
    let span = (end - start) as f64 / 1e9;
    let osl = s.metrics.get("output_sequence_length").and_then(|m| {
        let count = m.fields.get("count").copied().unwrap_or(ok.len() as f64);
        Some(m.fields.get("avg")? * count)
    });
    let mut compared = false;
    for (rate, amount) in [
        ("request_throughput", Some(records.len() as f64)),
        ("output_token_throughput", osl),
    ] {
        if let (Some(shown), Some(a)) = (printed(s, rate), amount) {
            let at = format!("/{rate}/avg");
            compare(
                emit,
                (&s.file, &at),
                &format!("aiperf.{rate}"),
                a / span,
                shown,
            );
            compared = true;
        }
    }
    compared
}

/// [`compare`], agreeing also within a relative `within` (a figure derived from one printed to
/// fewer digits than it carries).
pub(super) fn compare_within(
    emit: &mut Emit,
    at: (&str, &str),
    key: &str,
    exact: f64,
    shown: f64,
    within: f64,
) {
    if (exact - shown).abs() <= within * exact.abs() {
        record(emit, key, exact, shown);
    } else {
        compare(emit, at, key, exact, shown);
    }
}
