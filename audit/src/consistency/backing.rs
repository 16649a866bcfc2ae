//! A printed figure needs a measurement behind it.
//!
//! Definitions: a speed key of a known family names its step: `prefill.N` and `ttft.N` the
//! prefill depth N, `ctx_decode.N` and `ctx_prefill.N` the context depth N, `conc_total.N` and
//! `conc_per_request.N` the concurrency level N, `decode.<prompt>` and `cv.<prompt>` a decode
//! prompt, `decode`, `cv`, `words_per_s`, `chars_per_s` and `secs_500_words` the decode part,
//! `l1_decode` the long answer, `acceptance_pct` and `mean_accepted_len` draft counts. Such a key
//! whose step the contract does not name (or, for drafts, with no draft counted) was measured by
//! nothing: an error. Any other figure that rigaudit has no definition for (such as the stock seed
//! page's "decode, window 1") is a claim nothing in the bundle backs: a warning. A quality row or
//! memory-fit figure the page prints for a test the bundle has no file of is an error too.

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use crate::records::speed::{SpeedContract, SpeedResult};
use crate::records::FileKind;

/// Whether the contract names the step of `key`: `Some(true)` it does, `Some(false)` it does
/// not, `None` when `key` is of no known family.
pub fn names_step(c: &SpeedContract, r: &SpeedResult, key: &str) -> Option<bool> {
    let has = |p: &str| c.parts.iter().any(|x| x == p);
    let num = |s: &str| s.parse::<u64>().ok();
    let (fam, arg) = key.split_once('.').unwrap_or((key, ""));
    let depth_in =
        |d: Option<&Vec<u64>>| num(arg).is_some_and(|n| d.is_some_and(|d| d.contains(&n)));
    Some(match fam {
        "prefill" | "ttft" => has("prefill") && depth_in(c.prefill.as_ref().map(|p| &p.depths)),
        "ctx_decode" | "ctx_prefill" => has("ctx") && depth_in(c.ctx.as_ref().map(|p| &p.depths)),
        "conc_total" | "conc_per_request" => {
            let levels = c
                .conc
                .as_ref()
                .map(|p| p.levels.iter().map(|l| u64::from(*l)).collect());
            has("conc") && depth_in(levels.as_ref())
        }
        "decode" | "cv" if !arg.is_empty() => {
            has("decode") && c.prompt_ids.iter().any(|p| p == arg)
        }
        "decode" | "cv" | "words_per_s" | "chars_per_s" | "secs_500_words" if arg.is_empty() => {
            has("decode") && !c.prompt_ids.is_empty()
        }
        "l1_decode" => has("l1") && c.l1.is_some(),
        "acceptance_pct" | "mean_accepted_len" => r.drafts.iter().any(|d| d.drafted > 0),
        "slots" => true,
        _ => return None,
    })
}

/// The figures shown: the page's speed keys and the result's keys that have a value.
fn shown(b: &Bundle, r: &SpeedResult) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = b
        .manifest
        .page
        .speed
        .keys()
        .map(|k| (k.clone(), "bundle.json".to_string()))
        .collect();
    for (k, x) in &r.values {
        if x.is_some() && !v.iter().any(|(s, _)| s == k) {
            v.push((
                k.clone(),
                b.speed_result
                    .as_ref()
                    .map_or(String::new(), |r| r.path.clone()),
            ));
        }
    }
    v
}

/// `claims.no-measurement`: figures of a known kind that no step measured.
pub(crate) fn check_no_measurement(b: &Bundle, e: &mut Emit) -> Ran {
    if let (Some(c), Some(r)) = (&b.speed_contract, &b.speed_result) {
        for (key, file) in shown(b, &r.value) {
            if names_step(&c.value, &r.value, &key) == Some(false) {
                let ptr = if file == "bundle.json" {
                    format!("/page/speed/{key}")
                } else {
                    format!("/values/{key}")
                };
                e.finding( format!("'{key}' is shown, but the speed contract names no step that measures it: no step measured it"))
                        .file(file)
                        .pointer(ptr);
            }
        }
    }
    let m = &b.manifest;
    let listed = |kind: FileKind, test: Option<&str>| {
        m.files
            .iter()
            .any(|f| f.kind == kind && (test.is_none() || f.test.as_deref() == test))
    };
    for q in &m.page.quality {
        let printed = q.pct.is_some() || q.margin.is_some() || q.right.is_some();
        let t = Some(q.test.as_str());
        if printed && !listed(FileKind::QualitySummary, t) && !listed(FileKind::QualityAnswers, t) {
            e.finding( format!("the page shows a result for {}, but the bundle has no summary or answers of it: no run measured it", q.test))
                    .file("bundle.json")
                    .pointer(format!("/page/quality/{}", q.test));
        }
    }
    let fit_printed = m
        .page
        .fit
        .as_ref()
        .is_some_and(|f| f.memory_gib.is_some() || f.largest_answered.is_some());
    if fit_printed && !listed(FileKind::FitResult, None) {
        e.finding( "the page shows memory-fit figures, but the bundle has no fit result: no run measured them")
                .file("bundle.json")
                .pointer("/page/fit");
    }
    Some(())
}

/// `claims.unbacked`: figures of no known kind that nothing recomputes.
pub(crate) fn check_unbacked(b: &Bundle, e: &mut Emit) -> Ran {
    let (Some(c), Some(r)) = (&b.speed_contract, &b.speed_result) else {
        return None;
    };
    let defined = crate::figures::recompute(&c.value, &r.value);
    let unbacked: Vec<String> = shown(b, &r.value)
        .into_iter()
        .map(|(k, _)| k)
        .filter(|k| !defined.contains_key(k) && names_step(&c.value, &r.value, k).is_none())
        .collect();
    for key in &unbacked {
        let page = b.manifest.page.speed.get(key);
        e.finding(
                format!(
                    "'{key}' ({}) has no definition, and no record of the bundle measures it: the claim is unbacked",
                    page.cloned().unwrap_or_else(|| "in the speed result".into())
                ),
            )
            .file(if page.is_some() { "bundle.json".to_string() } else { r.path.clone() })
            .pointer(if page.is_some() { format!("/page/speed/{key}") } else { format!("/values/{key}") });
    }
    Some(())
}
