//! A speed result's figures recomputed from its records: the per-run samples behind each figure,
//! the figures (medians, means, rates) keyed like the result's `values`, and the server's window.
//! Below the families: the speed rows, the checks that read across a bundle's files
//! (`consistency/`), replay and `measure` all derive figures here, the one way.

use crate::records::speed::{SpeedContract, SpeedRequest, SpeedResult};
use crate::startline;
use crate::stats::{cv_pct, mean, median};
use std::collections::BTreeMap;

/// The counted (not warm-up) requests of a step.
pub(crate) fn counted<'a>(
    r: &'a SpeedResult,
    step: &'a str,
) -> impl Iterator<Item = &'a SpeedRequest> + 'a {
    r.requests
        .iter()
        .filter(move |q| q.step == step && !q.warmup)
}

/// The per-run samples behind each figure [`recompute`] derives, keyed like it:
/// - `decode.<prompt>`: the decode rate of each counted run of that prompt;
/// - `decode`: per run, the mean over the prompts of their `i`-th counted run's rate (as many
///   samples as the prompt with the fewest runs has);
/// - `prefill.<depth>`, `ttft.<depth>`: prompt tokens / TTFT and TTFT of each counted run;
/// - `conc_total.<level>`, `conc_per_request.<level>`: one value per round whose requests all
///   answered;
/// - `ctx_decode.<depth>`, `ctx_prefill.<depth>`: decode and prefill rate of each counted run;
/// - `l1_decode`: the decode rate of each counted run, in record order.
///
/// Every key the contract names is present, with an empty list when no run gave a value.
pub(crate) fn samples(c: &SpeedContract, r: &SpeedResult) -> BTreeMap<String, Vec<f64>> {
    let mut s: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    decode_samples(c, r, &mut s);
    sized_samples(c, r, &mut s);
    conc_samples(c, r, &mut s);
    if c.l1.is_some() {
        s.insert(
            "l1_decode".into(),
            counted(r, "l1").filter_map(|q| q.decode_rate()).collect(),
        );
    }
    s
}

/// `decode.<prompt>` and `decode` samples.
fn decode_samples(c: &SpeedContract, r: &SpeedResult, s: &mut BTreeMap<String, Vec<f64>>) {
    let mut per_prompt: Vec<Vec<f64>> = Vec::new();
    for pid in &c.prompt_ids {
        let rates: Vec<f64> = counted(r, "decode")
            .filter(|q| q.prompt_id.as_deref() == Some(pid))
            .filter_map(|q| q.decode_rate())
            .collect();
        per_prompt.push(rates.clone());
        s.insert(format!("decode.{pid}"), rates);
    }
    if !c.prompt_ids.is_empty() {
        let runs = per_prompt.iter().map(Vec::len).min().unwrap_or(0);
        let means: Vec<f64> = (0..runs)
            .filter_map(|i| mean(&per_prompt.iter().map(|v| v[i]).collect::<Vec<f64>>()))
            .collect();
        s.insert("decode".into(), means);
    }
}

/// The samples of the sized parts: `prefill.<depth>` and `ttft.<depth>`, `ctx_decode.<depth>`
/// and `ctx_prefill.<depth>`.
fn sized_samples(c: &SpeedContract, r: &SpeedResult, s: &mut BTreeMap<String, Vec<f64>>) {
    if let Some(p) = &c.prefill {
        let rates: [Rate; 2] = [
            ("prefill", SpeedRequest::prefill_rate, Pool::Harmonic),
            ("ttft", SpeedRequest::ttft, Pool::Arithmetic),
        ];
        samples_by_depth(r, "prefill", &p.depths, rates, s);
    }
    if let Some(cx) = &c.ctx {
        let rates: [Rate; 2] = [
            ("ctx_decode", SpeedRequest::decode_rate, Pool::Harmonic),
            ("ctx_prefill", SpeedRequest::prefill_rate, Pool::Harmonic),
        ];
        samples_by_depth(r, "ctx", &cx.depths, rates, s);
    }
}

/// How the values of one run's repeated requests make the run's one sample: a rate (work over
/// time, the requests doing the same work) by their harmonic mean, which is their summed work
/// over their summed time; a time by its mean.
#[derive(Clone, Copy)]
enum Pool {
    Harmonic,
    Arithmetic,
}

impl Pool {
    fn of(self, values: &[f64]) -> Option<f64> {
        match self {
            Pool::Arithmetic => mean(values),
            Pool::Harmonic if values.iter().all(|v| *v > 0.0) => {
                mean(&values.iter().map(|v| 1.0 / v).collect::<Vec<f64>>()).map(|m| 1.0 / m)
            }
            Pool::Harmonic => None,
        }
    }
}

/// A sample's name, how it is read from one request, and how a run's repeats pool.
type Rate = (&'static str, fn(&SpeedRequest) -> Option<f64>, Pool);

/// A sized step's counted requests grouped by run, in the order first met: one request a run, or
/// the requests a run repeated to reach its part's `min_try_ms`. A request with no run number is
/// its own run.
pub(crate) fn runs_of<'a>(reqs: &[&'a SpeedRequest]) -> Vec<Vec<&'a SpeedRequest>> {
    let mut runs: Vec<Vec<&SpeedRequest>> = Vec::new();
    let mut at: BTreeMap<u32, usize> = BTreeMap::new();
    for q in reqs {
        match q.run.and_then(|n| at.get(&n).copied()) {
            Some(i) => runs[i].push(q),
            None => {
                if let Some(n) = q.run {
                    at.insert(n, runs.len());
                }
                runs.push(vec![q]);
            }
        }
    }
    runs
}

/// The counted runs of a sized part (`prefill`, `ctx`) at `depth`, as [`runs_of`] groups them.
pub(crate) fn runs_at<'a>(
    r: &'a SpeedResult,
    part: &'a str,
    depth: u64,
) -> Vec<Vec<&'a SpeedRequest>> {
    let reqs: Vec<&SpeedRequest> = counted(r, part)
        .filter(|q| q.depth == Some(depth))
        .collect();
    runs_of(&reqs)
}

/// For each depth of a sized part (`prefill`, `ctx`), each rate of the part's counted runs at
/// that depth, under `<name>.<depth>`: a run's one request's value, or its repeats' pooled.
fn samples_by_depth(
    r: &SpeedResult,
    part: &str,
    depths: &[u64],
    rates: [Rate; 2],
    s: &mut BTreeMap<String, Vec<f64>>,
) {
    for d in depths {
        let runs = runs_at(r, part, *d);
        for (name, rate, pool) in rates {
            let per_run = runs.iter().filter_map(|run| match run.as_slice() {
                [one] => rate(one),
                many => {
                    let values: Vec<f64> = many.iter().filter_map(|q| rate(q)).collect();
                    pool.of(&values)
                }
            });
            s.insert(format!("{name}.{d}"), per_run.collect());
        }
    }
}

/// `conc_total.<level>` and `conc_per_request.<level>`: one value per round whose requests all
/// answered.
fn conc_samples(c: &SpeedContract, r: &SpeedResult, s: &mut BTreeMap<String, Vec<f64>>) {
    let Some(cc) = &c.conc else { return };
    for level in &cc.levels {
        let mut totals = Vec::new();
        let mut per = Vec::new();
        for round in 1..=cc.rounds {
            let reqs: Vec<&SpeedRequest> = counted(r, "conc")
                .filter(|q| q.level == Some(*level) && q.round == Some(round))
                .collect();
            if reqs.is_empty() || reqs.iter().any(|q| !q.answered()) {
                continue;
            }
            let start = reqs.iter().map(|q| q.sent_s).fold(f64::MAX, f64::min);
            let end = reqs.iter().filter_map(|q| q.end_s).fold(f64::MIN, f64::max);
            let tokens: u64 = reqs.iter().filter_map(|q| q.completion_tokens).sum();
            if end > start {
                totals.push(tokens as f64 / (end - start));
            }
            let rates: Vec<f64> = reqs.iter().filter_map(|q| q.e2e_rate()).collect();
            if let Some(m) = median(&rates) {
                per.push(m);
            }
        }
        s.insert(format!("conc_total.{level}"), totals);
        s.insert(format!("conc_per_request.{level}"), per);
    }
}

/// Recomputes every figure the records allow. Keys are those of the speed result's `values`.
pub fn recompute(c: &SpeedContract, r: &SpeedResult) -> BTreeMap<String, Option<f64>> {
    let s = samples(c, r);
    let mut v: BTreeMap<String, Option<f64>> = BTreeMap::new();
    if !c.prompt_ids.is_empty() {
        decode_figures(c, r, &s, &mut v);
    }
    draft_figures(r, &mut v);
    // Prefill, concurrency and context steps: medians of their samples; the long answer: the
    // last counted run.
    for (key, xs) in &s {
        if key == "decode" || key.starts_with("decode.") {
            continue;
        }
        let value = if key == "l1_decode" {
            xs.last().copied()
        } else {
            median(xs)
        };
        v.insert(key.clone(), value);
    }
    // Slots as the start line says.
    if let Some(s) = startline::parse(&r.server.start_lines).slots {
        v.insert("slots".into(), Some(s as f64));
    }
    v
}

/// `decode.<prompt>`, `cv.<prompt>`, `decode`, `cv`, and the words and characters per second.
fn decode_figures(
    c: &SpeedContract,
    r: &SpeedResult,
    s: &BTreeMap<String, Vec<f64>>,
    v: &mut BTreeMap<String, Option<f64>>,
) {
    let mut per_prompt = Vec::new();
    let mut cvs = Vec::new();
    for pid in &c.prompt_ids {
        let rates = s
            .get(&format!("decode.{pid}"))
            .map_or(&[][..], Vec::as_slice);
        let m = median(rates);
        v.insert(format!("decode.{pid}"), m);
        per_prompt.extend(m);
        let cv = cv_pct(rates);
        v.insert(format!("cv.{pid}"), cv);
        cvs.extend(cv);
    }
    v.insert(
        "decode".into(),
        (per_prompt.len() == c.prompt_ids.len())
            .then(|| mean(&per_prompt))
            .flatten(),
    );
    v.insert(
        "cv".into(),
        (!cvs.is_empty()).then(|| cvs.iter().cloned().fold(f64::MIN, f64::max)),
    );
    let (mut words, mut chars, mut secs) = (0u64, 0u64, 0f64);
    let mut have_text = true;
    for q in counted(r, "decode").filter(|q| q.answered()) {
        match (q.words, q.chars, q.first_token_s, q.end_s) {
            (Some(w), Some(ch), Some(f), Some(e)) => {
                words += w;
                chars += ch;
                secs += e - f;
            }
            _ => have_text = false,
        }
    }
    let ok = have_text && secs > 0.0;
    let wps = ok.then(|| words as f64 / secs);
    v.insert("words_per_s".into(), wps);
    v.insert("chars_per_s".into(), ok.then(|| chars as f64 / secs));
    v.insert(
        "secs_500_words".into(),
        wps.filter(|w| *w > 0.0).map(|w| 500.0 / w),
    );
}

/// `acceptance_pct` and `mean_accepted_len` of the decode step's drafts.
fn draft_figures(r: &SpeedResult, v: &mut BTreeMap<String, Option<f64>>) {
    let (mut drafts, mut drafted, mut accepted) = (0u64, 0u64, 0u64);
    for d in r.drafts.iter().filter(|d| d.step == "decode") {
        drafts += d.drafts;
        drafted += d.drafted;
        accepted += d.accepted;
    }
    if drafted > 0 {
        v.insert(
            "acceptance_pct".into(),
            Some(100.0 * accepted as f64 / drafted as f64),
        );
    }
    if drafts > 0 {
        v.insert(
            "mean_accepted_len".into(),
            Some(1.0 + accepted as f64 / drafts as f64),
        );
    }
}

/// The server's window: `/v1/models`, else the start line, else the contract.
pub fn window(c: Option<&SpeedContract>, r: &SpeedResult) -> Option<u64> {
    startline::models_window(&r.server.models)
        .or_else(|| startline::parse(&r.server.start_lines).window)
        .or(c.map(|c| c.server.window))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefill(run: u32, repeat: Option<u32>, ttft: f64) -> SpeedRequest {
        SpeedRequest {
            step: "prefill".into(),
            depth: Some(256),
            run: Some(run),
            repeat,
            prompt_tokens: Some(256),
            status: 200,
            sent_s: 10.0,
            first_token_s: Some(10.0 + ttft),
            end_s: Some(10.0 + ttft),
            ..SpeedRequest::default()
        }
    }

    #[test]
    fn a_run_s_repeats_make_one_sample_its_work_over_its_time() {
        let c: SpeedContract = serde_json::from_value(serde_json::json!({
            "parts": ["prefill"], "model": "m", "prompt_ids": [], "runs": 1, "warmups": 0,
            "max_tokens": 1, "prefill": {"depths": [256], "runs": 2, "max_tokens": 1,
            "min_try_ms": 500}, "sampling": {}, "server": {"slots": 1, "window": 1024}
        }))
        .unwrap();
        let r = SpeedResult {
            requests: vec![
                prefill(1, Some(1), 0.1),
                prefill(1, Some(2), 0.2),
                prefill(1, Some(3), 0.3),
                prefill(2, Some(1), 0.5),
            ],
            ..serde_json::from_value(serde_json::json!({
                "run": "r", "started": "2026-12-05T00:00:00Z", "ended": "2026-12-05T00:01:00Z",
                "server": {"start_lines": [], "models": null}, "requests": [], "values": {}
            }))
            .unwrap()
        };
        let s = samples(&c, &r);
        // Run 1: 768 tokens in 0.6 s; run 2: 256 in 0.5 s.
        let rates = &s["prefill.256"];
        assert_eq!(rates.len(), 2);
        assert!((rates[0] - 1280.0).abs() < 1e-9, "{rates:?}");
        assert!((rates[1] - 512.0).abs() < 1e-9, "{rates:?}");
        let ttft = &s["ttft.256"];
        assert!(
            (ttft[0] - 0.2).abs() < 1e-9 && (ttft[1] - 0.5).abs() < 1e-9,
            "{ttft:?}"
        );
    }

    #[test]
    fn requests_without_a_run_number_are_each_their_own_run() {
        let mut a = prefill(1, None, 0.1);
        a.run = None;
        let b = a.clone();
        let runs = runs_of(&[&a, &b]);
        assert_eq!(runs.len(), 2);
    }
}
