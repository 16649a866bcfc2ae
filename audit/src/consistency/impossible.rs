//! Impossible records are findings, never dropped in silence. The rate helpers of
//! `records/speed.rs` return no value for a request whose times are out of order (and
//! `speed::samples` then recomputes the figure from the other runs); here each such record is an
//! error of its own.
//!
//! Impossible: a first token at or before the request was sent, or after it ended; an end before
//! the send; more reply tokens than the cap; cached tokens above the prompt; an answered request
//! with no finish reason; more tokens in one reply than zero time allows (several tokens with the
//! end at the first token); more accepted draft tokens than drafted; a rate, duration or count
//! below zero or not a number; a percentage outside 0-100; right answers above the total.

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use crate::records::speed::SpeedRequest;

/// Why one speed request cannot be, if it cannot.
pub fn request_problem(q: &SpeedRequest) -> Option<String> {
    let bad = |x: f64| !x.is_finite() || x < 0.0;
    let (s, f, e) = (q.sent_s, q.first_token_s, q.end_s);
    if bad(s) || f.is_some_and(bad) || e.is_some_and(bad) {
        return Some("a time is negative or not a number".into());
    }
    if let Some(f) = f.filter(|f| *f <= s) {
        return Some(format!(
            "its first token ({f} s) is not after it was sent ({s} s)"
        ));
    }
    if let Some(e) = e.filter(|e| *e < s) {
        return Some(format!("it ends ({e} s) before it was sent ({s} s)"));
    }
    if let (Some(f), Some(e)) = (f, e) {
        if f > e {
            return Some(format!("its first token ({f} s) is after its end ({e} s)"));
        }
        if f == e && q.completion_tokens.unwrap_or(0) > 1 {
            return Some("several reply tokens arrived in zero time".into());
        }
    }
    let n = q.completion_tokens.unwrap_or(0);
    if q.max_tokens > 0 && n > q.max_tokens {
        return Some(format!(
            "{n} reply tokens, above its cap of {}",
            q.max_tokens
        ));
    }
    if let (Some(c), Some(p)) = (q.cached_tokens, q.prompt_tokens) {
        if c > p {
            return Some(format!("{c} cached tokens of a {p}-token prompt"));
        }
    }
    if q.answered() && q.finish_reason.is_none() {
        return Some("answered, but with no finish reason".into());
    }
    None
}

/// Why a figure's value is out of range, if it is (`key` as in the speed result's `values`).
pub fn value_problem(key: &str, v: f64) -> Option<String> {
    if !v.is_finite() || v < 0.0 {
        return Some(format!("'{key}' is {v}, not a non-negative number"));
    }
    if key.ends_with("pct") && v > 100.0 {
        return Some(format!("'{key}' is {v} %, above 100"));
    }
    if key == "mean_accepted_len" && v < 1.0 {
        return Some(format!(
            "'{key}' is {v}, below 1 (the token of the target model)"
        ));
    }
    None
}

fn speed_problems(b: &Bundle) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    if let Some(rl) = &b.speed_result {
        let r = &rl.value;
        for (i, q) in r.requests.iter().enumerate() {
            if let Some(p) = request_problem(q) {
                let what = format!("{} request {i}: {p}", q.step);
                v.push((rl.path.clone(), format!("/requests/{i}"), what));
            }
        }
        for (i, d) in r.drafts.iter().enumerate() {
            if d.accepted > d.drafted {
                let what = format!(
                    "draft counts {i}: {} accepted of {} drafted",
                    d.accepted, d.drafted
                );
                v.push((rl.path.clone(), format!("/drafts/{i}"), what));
            }
        }
        for (k, x) in r.values.iter().filter_map(|(k, x)| Some((k, (*x)?))) {
            if let Some(p) = value_problem(k, x) {
                v.push((rl.path.clone(), format!("/values/{k}"), p));
            }
        }
    }
    for (k, s) in &b.manifest.page.speed {
        if let Some(p) = s.parse::<f64>().ok().and_then(|x| value_problem(k, x)) {
            v.push((
                "bundle.json".into(),
                format!("/page/speed/{k}"),
                format!("the page: {p}"),
            ));
        }
    }
    v
}

/// `speed.impossible-record`: requests, draft counts and figures that cannot be.
pub(crate) fn check_speed_records(b: &Bundle, e: &mut Emit) -> Ran {
    if b.speed_result.is_none() && b.manifest.page.speed.is_empty() {
        return None;
    }
    for (file, ptr, what) in speed_problems(b) {
        e.finding(format!(
            "{what}: the record cannot be; a figure that leaves it out is made from the rest"
        ))
        .file(file)
        .pointer(ptr);
    }
    Some(())
}

/// `quality.impossible-record`: summaries, page rows and answer records that cannot be.
pub(crate) fn check_quality_records(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    for t in &b.quality {
        ran = Some(());
        let mut bad: Vec<(String, String, String)> = Vec::new();
        if let Some(s) = &t.summary {
            let v = &s.value;
            let p = |x: &str| (s.path.clone(), x.to_string());
            if v.right > v.total {
                let (f, ptr) = p("/right");
                bad.push((f, ptr, format!("{} right of {} counted", v.right, v.total)));
            }
            if let Some(x) = v.pct.filter(|x| !(0.0..=100.0).contains(x)) {
                let (f, ptr) = p("/pct");
                bad.push((f, ptr, format!("a percentage of {x}")));
            }
            if let Some(x) = v.margin.filter(|x| !x.is_finite() || *x < 0.0) {
                let (f, ptr) = p("/margin");
                bad.push((f, ptr, format!("a margin of {x}")));
            }
            if let Some(x) = v.median_seconds.filter(|x| !x.is_finite() || *x < 0.0) {
                let (f, ptr) = p("/median_seconds");
                bad.push((f, ptr, format!("a median of {x} seconds")));
            }
            if let Some(c) = v.cutoffs.filter(|c| *c > v.total + v.excluded.unwrap_or(0)) {
                let (f, ptr) = p("/cutoffs");
                bad.push((f, ptr, format!("{c} cut off of {} questions", v.total)));
            }
        }
        if let Some(a) = &t.answers {
            if let (n, Some(line)) = a.value.impossible {
                bad.push((a.path.clone(), format!("line {line}"), format!("{n} answer records with more reply tokens than their limit, negative seconds or an answer with no finish reason (first at line {line})")));
            }
        }
        if let Some(p) = b.manifest.page.quality.iter().find(|q| q.test == t.test) {
            if let (Some(r), Some(n)) = (p.right, p.total) {
                if r > n {
                    bad.push((
                        "bundle.json".into(),
                        format!("/page/quality/{}", t.test),
                        format!("the page shows {r} right of {n}"),
                    ));
                }
            }
        }
        for (file, ptr, what) in bad {
            e.finding(format!("{}: {what}: the record cannot be", t.test))
                .file(file)
                .pointer(ptr);
        }
    }
    ran
}
