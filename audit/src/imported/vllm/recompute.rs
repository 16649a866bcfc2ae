//! The figures a vLLM result prints, recomputed from its per-request lists as vLLM's
//! `benchmark_serving` computes them: its distributions, totals, peaks and aggregates, each judged
//! against what the file shows.

use super::*;

/// Each printed `{mean,median,std,pXX}_{metric}_ms` with its value over the successes (`None`
/// when the lists cannot give it).
pub(super) fn printed_distributions(r: &Run) -> Vec<(&String, &f64, Option<f64>)> {
    let ok = r.ok_idx();
    r.printed
        .iter()
        .filter_map(|(k, shown)| {
            let (s, m) = split_key(k)?;
            Some((k, shown, values(r, m, &ok).and_then(|v| stat(&v, s))))
        })
        .collect()
}

/// How a printed distribution's value is judged.
pub(super) enum Judged {
    /// Against the successes' value (`speed.recompute-mismatch`).
    OverSuccesses,
    /// It is the value over every request, the failed ones at 0 (`import.failed-as-zero`): the
    /// successes' value is the one given.
    OverAll(f64),
}

/// Whether a printed distribution (`k`, printed `shown`, `exact` over the successes) is the
/// value over every request with the failed ones at 0.
pub(super) fn judge(r: &Run, k: &str, exact: f64, shown: f64) -> Judged {
    let all: Vec<usize> = (0..r.ttfts.len()).collect();
    if super::super::close(exact, shown) || r.ok_idx().len() == all.len() {
        return Judged::OverSuccesses;
    }
    let over_all = split_key(k).and_then(|(s, m)| values(r, m, &all).and_then(|v| stat(&v, s)));
    if over_all.is_some_and(|x| super::super::close(x, shown)) {
        Judged::OverAll(exact)
    } else {
        Judged::OverSuccesses
    }
}

/// Each printed distribution from the successes' per-request values (those printed over every
/// request are `import.failed-as-zero`'s). Returns whether it compared any.
pub(super) fn distributions(r: &Run, emit: &mut Emit) -> bool {
    let mut compared = false;
    for (k, shown, exact) in printed_distributions(r) {
        let Some(exact) = exact else {
            continue;
        };
        if let Judged::OverSuccesses = judge(r, k, exact, *shown) {
            let at = r.at(format!("/{k}"));
            compare(emit, (&r.file, &at), &format!("vllm.{k}"), exact, *shown);
            compared = true;
        }
    }
    compared
}

/// The token totals and the throughputs over `duration`. Returns whether it compared any.
pub(super) fn totals(r: &Run, emit: &mut Emit) -> bool {
    let ok = r.ok_idx();
    let input: f64 = ok.iter().map(|i| r.input_lens[*i]).sum();
    let output: f64 = r.output_lens.iter().sum();
    let Some(d) = r.duration else {
        return false;
    };
    let rows = [
        ("total_input_tokens", input),
        ("total_output_tokens", output),
        ("request_throughput", ok.len() as f64 / d),
        ("output_throughput", output / d),
        ("total_token_throughput", (input + output) / d),
    ];
    let mut compared = false;
    for (k, exact) in rows {
        compared |= compare_printed(r, emit, k, exact);
    }
    compared
}

/// The figure the file prints under `k`, when it prints one, against the value recomputed from
/// its requests. Returns whether it prints one.
pub(super) fn compare_printed(r: &Run, emit: &mut Emit, k: &str, exact: f64) -> bool {
    let Some(shown) = r.printed.get(k) else {
        return false;
    };
    compare(
        emit,
        (&r.file, &r.at(format!("/{k}"))),
        &format!("vllm.{k}"),
        exact,
        *shown,
    );
    true
}

pub(super) const PEAK_KEYS: [&str; 2] = ["max_concurrent_requests", "max_output_tokens_per_s"];

/// `max_concurrent_requests` and `max_output_tokens_per_s` as vLLM computes them (0.11.0 to
/// 0.34.0 alike; docs/formats/vllm.md row V13): the most successes active in one whole second
/// from the first success's start (a request counts in every second from its start's to its
/// end's, both included, so requests that only follow each other in a second both count), and
/// the most token times (first token, then each ITL) in one whole second. `Err` with the printed
/// keys they cannot be recomputed for (no `start_times` before 0.16, or without --save-detailed),
/// `Ok(None)` when there is no success.
pub(super) fn peak_values(r: &Run) -> Result<Option<[f64; 2]>, Vec<String>> {
    let (Some(st), Some(lat)) = (&r.start_times, &r.latencies) else {
        return Err(PEAK_KEYS
            .iter()
            .filter(|k| r.printed.contains_key(**k))
            .map(|k| k.to_string())
            .collect());
    };
    let ok = r.ok_idx();
    if ok.is_empty() {
        return Ok(None);
    }
    let Some((_, per_second, tokens)) = peaks(r, &ok, st, lat) else {
        return Err(PEAK_KEYS.iter().map(|k| k.to_string()).collect());
    };
    Ok(Some([per_second, tokens]))
}

/// The printed peaks against [`peak_values`]. Returns whether it compared any.
pub(super) fn peaks_compared(r: &Run, emit: &mut Emit) -> bool {
    let Ok(Some(exact)) = peak_values(r) else {
        return false;
    };
    let mut compared = false;
    for (k, exact) in PEAK_KEYS.iter().zip(exact) {
        compared |= compare_printed(r, emit, k, exact);
    }
    compared
}

/// The successes' exact peak concurrency (for the client's cap), vLLM's per-second one and the
/// most token times in one whole second from the first start (row V13).
pub(super) fn peaks(r: &Run, ok: &[usize], st: &[f64], lat: &[f64]) -> Option<(f64, f64, f64)> {
    let mut events: Vec<(f64, i32)> = ok
        .iter()
        .flat_map(|&i| [(st[i], 1), (st[i] + lat[i], -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0, 0);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    let t0 = ok.iter().map(|&i| st[i]).fold(f64::INFINITY, f64::min);
    let end = ok
        .iter()
        .map(|&i| st[i] + lat[i])
        .fold(f64::NEG_INFINITY, f64::max);
    // Whole-second buckets: a span past a day (or not a number) is not a benchmark run's.
    if !(0.0..=86_400.0).contains(&(end - t0)) {
        return None;
    }
    let mut buckets = vec![0.0; (end - t0).ceil() as usize + 1];
    for &i in ok {
        let mut t = st[i] + r.ttfts[i];
        for k in 0..=r.itls[i].len() {
            if k > 0 {
                t += r.itls[i][k - 1];
            }
            let b = (t - t0) as usize;
            if let Some(x) = buckets.get_mut(b) {
                *x += 1.0;
            }
        }
    }
    let tokens = buckets.iter().copied().fold(0.0, f64::max);
    // vLLM: the most requests active in one whole second (a request counts in every second from
    // its start's to its end's, both included; serve.py calculate_metrics). A difference array (+1 at a request's first second, -1 after its last), so the work is one
    // pass over the requests and one over the seconds, whatever the spans a file states.
    let mut change = vec![0i64; buckets.len() + 2];
    for &i in ok {
        let (from, to) = ((st[i] - t0) as usize, (st[i] + lat[i] - t0) as usize);
        if from <= to && from < buckets.len() + 1 {
            change[from] += 1;
            change[(to + 1).min(buckets.len() + 1)] -= 1;
        }
    }
    let mut now = 0i64;
    let per_second = change[..buckets.len() + 1]
        .iter()
        .map(|d| {
            now += d;
            now as f64
        })
        .fold(0.0, f64::max);
    Some((peak as f64, per_second, tokens))
}

/// Whether a printed key is one of the run's figures (a count, total, throughput, distribution,
/// peak or goodput), not a setting.
pub(super) fn is_figure(k: &str) -> bool {
    split_key(k).is_some()
        || k.ends_with("_throughput")
        || k.starts_with("total_")
        || PEAK_KEYS.contains(&k)
        || ["completed", "request_goodput", "request_goodput:"].contains(&k)
}

/// The throughputs [`aggregates`] compares, without the lists: those printed beside their total.
pub(super) fn aggregates_compared(r: &Run) -> Vec<&'static str> {
    let has = |k: &str| r.printed.contains_key(k);
    let mut out = Vec::new();
    if r.duration.is_some_and(|d| d > 0.0) {
        for (k, needs) in [
            ("request_throughput", &["completed"][..]),
            ("output_throughput", &["total_output_tokens"][..]),
            ("input_throughput", &["total_input_tokens"][..]),
            (
                "total_token_throughput",
                &["total_input_tokens", "total_output_tokens"][..],
            ),
        ] {
            if has(k) && needs.iter().all(|n| has(n)) {
                out.push(k);
            }
        }
    }
    out
}

/// Without per-request lists: each throughput against its total over `duration`, where the file
/// prints both. Returns whether it compared any.
pub(super) fn aggregates(r: &Run, emit: &mut Emit) -> bool {
    let (Some(d), p) = (r.duration.filter(|d| *d > 0.0), &r.printed) else {
        return false;
    };
    let get = |k: &str| p.get(k).copied();
    let input = get("total_input_tokens");
    let output = get("total_output_tokens");
    let rows = [
        ("request_throughput", get("completed").map(|c| c / d)),
        ("output_throughput", output.map(|o| o / d)),
        // SGLang's (row V17): total input over the duration.
        ("input_throughput", input.map(|i| i / d)),
        (
            "total_token_throughput",
            input.zip(output).map(|(i, o)| (i + o) / d),
        ),
    ];
    let mut compared = false;
    for (k, exact) in rows {
        if let Some(exact) = exact {
            compared |= compare_printed(r, emit, k, exact);
        }
    }
    compared
}
