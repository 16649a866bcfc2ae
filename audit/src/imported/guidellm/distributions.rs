//! GuideLLM's distributions as each version computes them: which requests and which times feed
//! each one (per family of versions), their weights, and the summary (mean, median, mode,
//! percentiles) made from them as GuideLLM's `DistributionSummary` does.

use super::*;

/// The events a window test reads from a request (row G3).
#[derive(Debug, Clone, Copy)]
pub(super) enum Event {
    Start,
    End,
    FirstToken,
    FirstOutputToken,
}

/// Which requests a distribution takes (rows G3, G5).
#[derive(Debug, Clone, Copy)]
pub(super) enum Keep {
    /// Every listed request (0.2-0.3: the list is what the aggregator kept).
    All,
    /// A request with a prompt (0.2-0.3 `total_with_prompt`).
    Prompt,
    /// A request of at least this many output tokens (0.2-0.3 `total_with_output_first`, `_multi`).
    Tokens(f64),
    /// A request whose span from the first event to the second meets the measured window
    /// (`get_within_range`: end >= window start and start <= window end; no start: the end; no
    /// end: left out).
    Window(Event, Event),
}

/// How a distribution weighs each request (row G5).
#[derive(Debug, Clone, Copy)]
pub(super) enum Weight {
    One,
    /// `output_tokens or 0`.
    Tokens,
    /// `(output_tokens or 1) - 1`.
    TokensAfterFirst,
}

/// One recomputed distribution: its metric, the request field, its weight and its requests.
pub(super) struct Dist {
    pub(super) name: &'static str,
    pub(super) field: &'static str,
    pub(super) weight: Weight,
    pub(super) keep: Keep,
}

pub(super) const fn d(name: &'static str, field: &'static str, weight: Weight, keep: Keep) -> Dist {
    Dist {
        name,
        field,
        weight,
        keep,
    }
}

pub(super) const REQUEST: Keep = Keep::Window(Event::Start, Event::End);

/// 0.2-0.3 (`benchmark.py` `from_stats`, row G4).
pub(super) const V02_DISTS: &[Dist] = &[
    d("request_latency", "request_latency", Weight::One, Keep::All),
    d(
        "prompt_token_count",
        "prompt_tokens",
        Weight::One,
        Keep::Prompt,
    ),
    d(
        "output_token_count",
        "output_tokens",
        Weight::One,
        Keep::Tokens(1.0),
    ),
    d(
        "time_to_first_token_ms",
        "time_to_first_token_ms",
        Weight::One,
        Keep::Tokens(1.0),
    ),
    d(
        "time_per_output_token_ms",
        "time_per_output_token_ms",
        Weight::Tokens,
        Keep::Tokens(1.0),
    ),
    d(
        "inter_token_latency_ms",
        "inter_token_latency_ms",
        Weight::TokensAfterFirst,
        Keep::Tokens(2.0),
    ),
];

/// 0.4-0.7.3 (`metrics.py` `GenerativeMetrics.compile`, row G4).
pub(super) const V04_DISTS: &[Dist] = &[
    d("request_latency", "request_latency", Weight::One, REQUEST),
    d(
        "request_streaming_iterations_count",
        "info.timings.request_iterations",
        Weight::One,
        REQUEST,
    ),
    d("prompt_token_count", "prompt_tokens", Weight::One, REQUEST),
    d("output_token_count", "output_tokens", Weight::One, REQUEST),
    d("total_token_count", "total_tokens", Weight::One, REQUEST),
    d(
        "time_to_first_token_ms",
        "time_to_first_token_ms",
        Weight::One,
        REQUEST,
    ),
    d(
        "time_to_first_output_token_ms",
        "time_to_first_output_token_ms",
        Weight::One,
        REQUEST,
    ),
    d(
        "time_per_output_token_ms",
        "time_per_output_token_ms",
        Weight::Tokens,
        REQUEST,
    ),
    d(
        "inter_token_latency_ms",
        "inter_token_latency_ms",
        Weight::TokensAfterFirst,
        REQUEST,
    ),
];

/// 0.7.4 on (`metrics.py` `GenerativeMetrics.compile`, row G4).
pub(super) const V074_DISTS: &[Dist] = &[
    d("request_latency", "request_latency", Weight::One, REQUEST),
    d(
        "request_streaming_iterations_count",
        "info.timings.request_iterations",
        Weight::One,
        REQUEST,
    ),
    d("prompt_token_count", "prompt_tokens", Weight::One, REQUEST),
    d("output_token_count", "output_tokens", Weight::One, REQUEST),
    d("total_token_count", "total_tokens", Weight::One, REQUEST),
    d(
        "time_to_first_token_ms",
        "time_to_first_token_ms",
        Weight::One,
        Keep::Window(Event::Start, Event::FirstToken),
    ),
    d(
        "time_to_first_output_token_ms",
        "time_to_first_output_token_ms",
        Weight::One,
        Keep::Window(Event::Start, Event::FirstOutputToken),
    ),
    d(
        "time_to_last_round_trip_ms",
        "time_to_last_round_trip_ms",
        Weight::One,
        REQUEST,
    ),
    d(
        "avg_round_trip_time_ms",
        "avg_round_trip_time_ms",
        Weight::One,
        REQUEST,
    ),
    d(
        "time_per_output_token_ms",
        "time_per_output_token_ms",
        Weight::Tokens,
        REQUEST,
    ),
    d(
        "inter_token_latency_ms",
        "inter_token_latency_ms",
        Weight::TokensAfterFirst,
        Keep::Window(Event::FirstToken, Event::End),
    ),
];

/// The weighted values of one distribution over the requests of one status (or all) that the
/// family's rule takes.
pub(super) fn weighted(b: &Benchmark, status: Option<&str>, dist: &Dist) -> Vec<(f64, f64)> {
    b.requests
        .iter()
        .filter(|r| status.is_none_or(|s| r.status == s) && r.kept(b, dist.keep))
        .map(|r| {
            let tokens = r.value("output_tokens");
            let weight = match dist.weight {
                Weight::One => 1.0,
                Weight::Tokens => tokens,
                Weight::TokensAfterFirst if tokens == 0.0 => 0.0,
                Weight::TokensAfterFirst => tokens - 1.0,
            };
            (r.value(dist.field), weight)
        })
        .collect()
}

/// Every field of every per-request distribution, per status and in total, recomputed from the
/// listed requests. Returns whether it compared any.
pub(super) fn distributions(x: &Report, b: &Benchmark, emit: &mut Emit) -> bool {
    let mut compared = false;
    for dist in x.family.dists() {
        let Some(by_status) = b.metrics.get(dist.name) else {
            continue;
        };
        for (status, printed) in by_status {
            let filter = (status != "total").then_some(status.as_str());
            let exact = x.family.summary(&weighted(b, filter, dist));
            for (k, shown) in printed {
                let Some(&v) = exact.get(k) else { continue };
                let at = format!(
                    "/benchmarks/{}/metrics/{}/{status}/{}",
                    b.index,
                    dist.name,
                    k.replace('.', "/")
                );
                let key = format!("guidellm.{}.{}.{status}.{k}", b.index, dist.name);
                compare(emit, (&x.file, &at), &key, v, *shown);
                compared = true;
            }
        }
    }
    compared
}

/// A printed summary of nothing: every field 0, as both families write it.
pub(super) fn zeros(count: f64) -> Printed {
    let mut out: Printed = [
        "mean", "median", "mode", "variance", "std_dev", "min", "max",
    ]
    .iter()
    .map(|k| (k.to_string(), 0.0))
    .collect();
    out.insert("count".into(), count);
    out.insert("total_sum".into(), 0.0);
    for (name, _) in PERCENTILES {
        out.insert(format!("percentiles.{name}"), 0.0);
    }
    out
}

/// The moments, extremes and percentiles of a pdf sorted by value (weights as given, divided by
/// their sum), and its mode: the first value of largest weight.
pub(super) fn from_pdf(pdf: &[(f64, f64)], out: &mut Printed) {
    let total: f64 = pdf.iter().map(|(_, w)| w).sum();
    let probs: Vec<(f64, f64)> = pdf.iter().map(|(v, w)| (*v, w / total)).collect();
    let mean = probs.iter().map(|(v, p)| v * p).sum::<f64>();
    let var = probs
        .iter()
        .map(|(v, p)| (v - mean).powi(2) * p)
        .sum::<f64>();
    out.insert("mean".into(), mean);
    out.insert("variance".into(), var);
    out.insert("std_dev".into(), var.sqrt());
    out.insert("min".into(), probs[0].0);
    out.insert("max".into(), probs[probs.len() - 1].0);
    let mode = probs
        .iter()
        .fold(probs[0], |best, &x| if x.1 > best.1 { x } else { best });
    out.insert("mode".into(), mode.0);
    for (name, q) in PERCENTILES {
        let mut cdf = 0.0;
        let at = probs.iter().position(|(_, p)| {
            cdf += p;
            cdf >= *q
        });
        // numpy's argmax of an all-false mask is 0; searchsorted past the end does not occur.
        let v = probs[at.unwrap_or(0)].0;
        out.insert(format!("percentiles.{name}"), v);
        if *name == "p50" {
            out.insert("median".into(), v);
        }
    }
}

/// GuideLLM 0.4 on (`DistributionSummary.from_values`, docs row G6): duplicates merged, zero
/// weights dropped, `count` = the weights' sum rounded, `total_sum` = mean x count; nothing
/// left: every field 0.
pub fn summarize(values: &[(f64, f64)]) -> Printed {
    let count: f64 = values.iter().map(|(_, w)| w).sum::<f64>().round();
    let mut merged: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for &(v, w) in values {
        merged.entry(order_key(v)).or_insert((v, 0.0)).1 += w;
    }
    let pdf: Vec<(f64, f64)> = merged.into_values().filter(|(_, w)| *w > 0.0).collect();
    let mut out = zeros(count);
    if pdf.is_empty() {
        return out;
    }
    from_pdf(&pdf, &mut out);
    out.insert("total_sum".into(), out["mean"] * count);
    out
}

/// GuideLLM 0.2-0.3 (`DistributionSummary.from_distribution_function`, docs row G6): no merge,
/// `count` = the number of values, `total_sum` = their unweighted sum, `mode` the first (smallest)
/// value of largest single weight; nothing: every field 0.
pub fn summarize_v02(values: &[(f64, f64)]) -> Printed {
    let mut pdf = values.to_vec();
    pdf.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = zeros(values.len() as f64);
    if pdf.is_empty() {
        return out;
    }
    from_pdf(&pdf, &mut out);
    out.insert("total_sum".into(), pdf.iter().map(|(v, _)| v).sum());
    out
}

/// A key that orders f64 values like numbers (for the merge of duplicates).
pub(super) fn order_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

pub(super) const PERCENTILES: &[(&str, f64)] = &[
    ("p001", 0.001),
    ("p01", 0.01),
    ("p05", 0.05),
    ("p10", 0.1),
    ("p25", 0.25),
    ("p50", 0.5),
    ("p75", 0.75),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
];
