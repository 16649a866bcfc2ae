//! LoadGen's figures and verdicts recomputed from each other, as `loadgen/results.cc` computes
//! them (the rows of docs/formats/loadgen.md cited on each function). Every comparison allows
//! the rounding each figure was written with: a double of the detail log at six significant
//! digits, an integer (a truncated mean) to one unit, a summary's figure at its decimals.

use super::early_stopping;
use super::Detail;
use crate::check::Emit;
use serde_json::json;

/// A percentile as LoadGen names it (0.9 -> "90", 0.999 -> "99.9").
fn pct(p: f64) -> String {
    format!("{}", (p * 1000.0).round() / 10.0)
}

/// A figure and half a unit of the last digit it was written with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fig {
    pub v: f64,
    pub err: f64,
}

impl Fig {
    fn exact(v: f64) -> Fig {
        Fig { v, err: 0.0 }
    }
    /// The relative error.
    fn rel(self) -> f64 {
        if self.v == 0.0 {
            0.0
        } else {
            self.err / self.v.abs()
        }
    }
}

impl Detail {
    /// A figure with its rounding: the summary's decimals when it came from the summary, six
    /// significant digits for a double of the detail log, one unit for an integer (LoadGen
    /// truncates its means; a double without its point, `23144`, is within half a unit too).
    pub(super) fn fig(&self, k: &str) -> Option<Fig> {
        let v = self.num(k)?;
        if let Some(text) = self.printed.get(k) {
            return Some(Fig {
                v,
                err: 0.5 * crate::stats::printed_unit(text) * self.scale(k),
            });
        }
        let double =
            matches!(self.values.get(k), Some((_, serde_json::Value::Number(n))) if n.is_f64());
        let err = if double { v.abs() * 5e-6 } else { 1.0 };
        Some(Fig { v, err })
    }

    fn scale(&self, k: &str) -> f64 {
        self.scales.get(k).copied().unwrap_or(1.0)
    }

    /// The scenario in effect (`effective_scenario`, or the summary's `Scenario`).
    pub(super) fn scenario(&self) -> Option<&str> {
        self.text("effective_scenario")
    }

    /// Whether the run measured token latencies (LoadGen logs first-token figures only then).
    pub(super) fn token_latencies(&self) -> bool {
        self.values
            .contains_key("result_first_token_min_latency_ns")
            || self.flag("requested_use_token_latencies") == Some(true)
    }

    /// The samples LoadGen counted (`sample_count`, row L1), with the error of how it is known:
    /// MultiStream's queries x samples per query; Offline's samples per second x max latency
    /// (the padded count under equal issue, which v4.x's `generated_samples_per_query` does not
    /// give), else the query's generated samples; one per query in Server and SingleStream.
    fn samples(&self) -> Option<Fig> {
        let q = self.num("result_query_count")?;
        match self.scenario() {
            Some("MultiStream") => Some(Fig::exact(
                q * self.num("effective_samples_per_query").unwrap_or(1.0),
            )),
            Some("Offline") => {
                let rate = self.fig("result_samples_per_second");
                let max = self.fig("result_max_latency_ns");
                let by_rate = rate.zip(max).map(|(r, m)| {
                    mul(
                        r,
                        Fig {
                            v: m.v / 1e9,
                            err: m.err / 1e9,
                        },
                    )
                });
                let generated = self
                    .num("generated_samples_per_query")
                    .map(|s| Fig::exact(s * q));
                by_rate.or(generated)
            }
            _ => Some(Fig::exact(q)),
        }
    }
}

/// `a / b` with its error.
fn div(a: Fig, b: Fig) -> Fig {
    let v = a.v / b.v;
    Fig {
        v,
        err: v.abs() * (a.rel() + b.rel()),
    }
}

/// `a * b` with its error.
fn mul(a: Fig, b: Fig) -> Fig {
    let v = a.v * b.v;
    Fig {
        v,
        err: v.abs() * (a.rel() + b.rel()),
    }
}

/// Whether a recomputed figure is clearly on one side of a bound: `Some(true)` at or above it,
/// `Some(false)` below it, `None` within the rounding.
fn side(x: Fig, bound: f64) -> Option<bool> {
    let slack = x.err * 1.01 + 1e-9 * bound.abs();
    if x.v - slack >= bound {
        Some(true)
    } else if x.v + slack < bound {
        Some(false)
    } else {
        None
    }
}

/// One verdict LoadGen printed against the one recomputed from its figures.
pub(super) struct Said<'a> {
    pub key: &'a str,
    pub what: &'a str,
    pub recomputed: bool,
    pub why: String,
}

fn against(d: &Detail, said: Said, emit: &mut Emit) {
    let Some(flag) = d.flag(said.key) else { return };
    if flag == said.recomputed {
        return;
    }
    let line = d.values.get(said.key).map_or(0, |(l, _)| *l);
    let verdict = if flag { "met" } else { "not met" };
    emit.finding(format!(
        "the {} is said {verdict}, but {}",
        said.what, said.why
    ))
    .file(&d.file)
    .pointer(format!("line {line}"))
    .data(json!({"key": said.key, "printed": flag, "recomputed": said.recomputed}));
}

/// Row L10: the minimum duration against the span LoadGen measures it on: Offline the max
/// latency, Server the final query's scheduled time ((n - 1) / scheduled samples per second),
/// SingleStream the final query's issue time ((n - 1) / QPS with LoadGen's overhead);
/// MultiStream's is not in the logs.
pub(super) fn min_duration(d: &Detail, emit: &mut Emit) {
    let Some(min) = d.num("effective_min_duration_ms").map(|m| m / 1000.0) else {
        return;
    };
    let n = d.samples().map(|n| Fig::exact(n.v - 1.0));
    let (span, how) = match d.scenario() {
        Some("Offline") => (
            d.fig("result_max_latency_ns").map(|f| Fig {
                v: f.v / 1e9,
                err: f.err / 1e9,
            }),
            "the max latency",
        ),
        Some("Server") => (
            n.zip(d.fig("result_scheduled_samples_per_sec"))
                .map(|(n, r)| div(n, r)),
            "(queries - 1) / scheduled samples per second",
        ),
        Some("SingleStream") => (
            n.zip(d.fig("result_qps_with_loadgen_overhead"))
                .map(|(n, r)| div(n, r)),
            "(queries - 1) / QPS with LoadGen's overhead",
        ),
        _ => (None, ""),
    };
    let Some(span) = span.filter(|s| s.v.is_finite()) else {
        return;
    };
    let Some(met) = side(span, min) else { return };
    let why = format!(
        "LoadGen measures it as {how}: {:.3} s against the {min} s asked",
        span.v
    );
    let said = Said {
        key: "result_min_duration_met",
        what: "minimum duration",
        recomputed: met,
        why,
    };
    against(d, said, emit);
}

/// Row L11: the minimum query count: queries issued >= min_query_count and samples >=
/// min_sample_count.
pub(super) fn min_queries(d: &Detail, emit: &mut Emit) {
    let (Some(n), Some(min)) = (
        d.num("result_query_count"),
        d.num("effective_min_query_count"),
    ) else {
        return;
    };
    let samples = d.samples().unwrap_or(Fig::exact(n));
    let min_samples = d.num("effective_min_sample_count").unwrap_or(0.0);
    let Some(enough) = side(samples, min_samples) else {
        return;
    };
    let met = n >= min && enough;
    let why = format!(
        "{n} queries ({:.0} samples) ran of the {min} ({min_samples}) asked",
        samples.v
    );
    let said = Said {
        key: "result_min_queries_met",
        what: "minimum query count",
        recomputed: met,
        why,
    };
    against(d, said, emit);
}

/// The detail key of a percentile (`DoubleToString(p * 100)`: two decimals), when LoadGen logs
/// that percentile (50, 90, 95, 97, 99, 99.9).
pub(super) fn percentile_key(prefix: &str, p: f64, suffix: &str) -> String {
    format!("{prefix}{:.2}{suffix}", p * 100.0)
}

/// Row L12 (Server): the latency constraints: the target percentile of the latency (or, with
/// token latencies, of the first-token latency and of the time per output token) within its
/// bound.
pub(super) fn perf_constraints(d: &Detail, emit: &mut Emit) {
    if d.scenario() != Some("Server") {
        return;
    }
    let Some(p) = d.num("effective_target_latency_percentile") else {
        return;
    };
    let bounds: Vec<(String, Option<f64>, &str)> = if d.token_latencies() {
        let ttft = d
            .num("requested_server_ttft_latency")
            .or(d.num("effective_ttft_latency_ns"));
        let tpot = d
            .num("requested_server_tpot_latency")
            .or(d.num("effective_tpot_latency_ns"));
        vec![
            (
                percentile_key("result_first_token_", p, "_percentile_latency_ns"),
                ttft,
                "first-token latency",
            ),
            (
                percentile_key("result_time_per_output_token_", p, "_percentile_ns"),
                tpot,
                "time per output token",
            ),
        ]
    } else {
        let target = d.num("effective_target_latency_ns");
        vec![(
            percentile_key("result_", p, "_percentile_latency_ns"),
            target,
            "latency",
        )]
    };
    let mut met = true;
    let mut why = Vec::new();
    for (key, bound, what) in bounds {
        let (Some(v), Some(bound)) = (d.num(&key), bound) else {
            return;
        };
        met &= v <= bound;
        why.push(format!(
            "the p{} {what} is {v} ns, its bound {bound} ns",
            pct(p)
        ));
    }
    let said = Said {
        key: "result_perf_constraints_met",
        what: "latency constraint",
        recomputed: met,
        why: why.join("; "),
    };
    against(d, said, emit);
}

/// Row L13: early stopping. Server without token latencies: met when the queries issued reach
/// h(t) + t, t the queries over the latency bound (`result_overlatency_query_count`);
/// SingleStream and MultiStream: when they reach h(1) + 1. With token latencies LoadGen tests
/// the TPOT bound, then the TTFT bound (not tested once TPOT fails), on counts it does not log:
/// the flag is held to the two printed results.
pub(super) fn early_stopping(d: &Detail, emit: &mut Emit) {
    let (Some(n), Some(p)) = (
        d.num("result_query_count"),
        d.num("effective_target_latency_percentile"),
    ) else {
        return;
    };
    let n = n as i64;
    let (met, why) = match d.scenario() {
        Some("Server") if d.token_latencies() => match token_results(d) {
            Some(r) => r,
            None => return,
        },
        Some("Server") => {
            let Some(t) = d.num("result_overlatency_query_count") else {
                return;
            };
            let (met, more) = early_stopping::server(n, t as i64, p);
            (
                met,
                format!(
                    "{n} queries with {t} over the latency bound need {more} more at p{}",
                    pct(p)
                ),
            )
        }
        Some("SingleStream") | Some("MultiStream") => {
            let need = early_stopping::streams_minimum(p);
            (
                n >= need,
                format!("{n} queries ran, and p{} needs at least {need}", pct(p)),
            )
        }
        _ => return,
    };
    let said = Said {
        key: "early_stopping_met",
        what: "early stopping",
        recomputed: met,
        why,
    };
    against(d, said, emit);
}

/// The token-latency early-stopping verdict the TPOT and TTFT results state: met when every
/// result printed says "Run successful".
fn token_results(d: &Detail) -> Option<(bool, String)> {
    let said: Vec<(&str, &str)> = [
        ("early_stopping_tpot_result", "TPOT"),
        ("early_stopping_ttft_result", "TTFT"),
    ]
    .iter()
    .filter_map(|(k, what)| Some((d.text(k)?, *what)))
    .filter(|(t, _)| !t.trim().is_empty())
    .collect();
    if said.is_empty() {
        return None;
    }
    let failed: Vec<&str> = said
        .iter()
        .filter(|(t, _)| !t.contains("Run successful"))
        .map(|(_, w)| *w)
        .collect();
    let why = match failed.is_empty() {
        true => "the TPOT and TTFT early-stopping results say 'Run successful'".to_string(),
        false => format!(
            "the {} early-stopping result says the run was not successful",
            failed.join(" and ")
        ),
    };
    Some((failed.is_empty(), why))
}

/// Row L2: Offline's `Samples per second` times its max latency gives the samples issued: the
/// query's samples, or (equal-issue mode, row L1) that count padded to whole sets of the
/// performance sample count.
pub(super) fn offline_samples(d: &Detail) -> Option<String> {
    if d.scenario() != Some("Offline") {
        return None;
    }
    let rate = d.fig("result_samples_per_second")?;
    let max = d.fig("result_max_latency_ns")?;
    let n = mul(
        rate,
        Fig {
            v: max.v / 1e9,
            err: max.err / 1e9,
        },
    );
    let per = d
        .num("generated_samples_per_query")
        .or(d.num("effective_samples_per_query"))?;
    let queries = d.num("generated_query_count").unwrap_or(1.0).max(1.0);
    // The queries it measured: an Offline run issues one, whatever it generated (v4.1's
    // 3d-unet Offline results as published: 43 generated, one measured of 28,380 samples).
    let measured = d.num("result_query_count").unwrap_or(queries).max(1.0);
    // The loaded set is the performance sample count, or the QSL's whole count when it holds
    // fewer (`GenerateLoadableSets`, loadgen.cc l. 624-660 at v5.1): published, a QSL of 20.
    let psc = d.num("effective_performance_sample_count").unwrap_or(0.0);
    let qsl = d.num("qsl_reported_total_count");
    let set = qsl.map_or(psc, |q| if psc > 0.0 { psc.min(q) } else { q });
    let padded = if set > 0.0 {
        (per / set).ceil() * set
    } else {
        per
    };
    let candidates = [
        Some(per * queries),
        Some(padded * queries),
        Some(per * measured),
        Some(padded * measured),
        Some(set).filter(|s| *s > 0.0),
    ];
    let slack = n.err * 1.01 + 0.5;
    if candidates
        .iter()
        .flatten()
        .any(|c| (n.v - c).abs() <= slack)
    {
        return None;
    }
    // Without the QSL's count (a summary alone) the set may be any size up to the performance
    // sample count: only a count outside what any set gives is wrong.
    if qsl.is_none() && n.v >= per * queries - slack && n.v <= padded * queries + slack {
        return None;
    }
    Some(format!(
        "Samples per second {} x max latency {} s gives {:.1} samples, but the run issued {per} per query ({padded} padded to whole sets of {set}) in {queries} queries: LoadGen divides the samples it issued by the max latency",
        rate.v,
        max.v / 1e9,
        n.v
    ))
}

/// Rows L5 and L6 (Server, SingleStream, MultiStream with token latencies): the token count
/// two ways: completed tokens per second x (n - 1) / completed samples per second, and
/// `result_token_throughput` (tokens per ns of the summed latencies) x mean latency x n.
pub(super) fn token_count(d: &Detail) -> Option<String> {
    let n = d.samples()?.v;
    let per_ns = d.fig("result_token_throughput")?;
    let mean = d.fig("result_mean_latency_ns")?;
    let by_latency = mul(mul(per_ns, mean), Fig::exact(n));
    let by_rate = match d.scenario() {
        Some("Server") => {
            let tokens = d.fig("result_completed_tokens_per_second")?;
            let rate = d.fig("result_completed_samples_per_sec")?;
            mul(tokens, div(Fig::exact(n - 1.0), rate))
        }
        _ => return None,
    };
    let slack = (by_latency.err + by_rate.err) * 1.01 + 1.0 + by_latency.v / mean.v.max(1.0);
    if (by_latency.v - by_rate.v).abs() <= slack || !by_rate.v.is_finite() {
        return None;
    }
    Some(format!(
        "the completed tokens per second give {:.0} tokens, but result_token_throughput x mean latency x {n} samples gives {:.0}: both are LoadGen's one token count",
        by_rate.v, by_latency.v
    ))
}
