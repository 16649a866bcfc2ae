//! `fit.*`: the memory-fit test's figures recomputed from its steps.
//!
//! Definitions (the seed page's): the largest size that answered counts; the memory figure is the
//! highest rise over idle among the boxes at that size; the per-box peaks are the highest rise at
//! any size.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;
use crate::report::{Finding, Recomputed, Severity};
use crate::stats::{agrees, fmt, printed_decimals, written_decimals};

/// `fit.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "fit.recompute-mismatch",
        severity: Severity::Error,
        doc: "The largest size, the memory figure or a box's peak differs from the steps' records.",
    },
    Check {
        id: "fit.step-exceeds-window",
        severity: Severity::Error,
        doc: "A fit step's prompt is larger than its size or the window, or a refused size is shown as answered.",
    },
];

pub(crate) fn check(b: &Bundle, out: &mut Out) {
    let Some(f) = &b.fit else { return };
    let r = &f.value;
    out.ran("fit.recompute-mismatch");
    out.ran("fit.step-exceeds-window");
    for (i, s) in r.steps.iter().enumerate() {
        if s.prompt_tokens > s.size || (s.answered && s.prompt_tokens > r.window) {
            out.push(
                Finding::new(
                    "fit.step-exceeds-window",
                    Severity::Error,
                    format!("size {}: a prompt of {} tokens does not fit the size or the {}-token window", s.size, s.prompt_tokens, r.window),
                )
                .file(&f.path)
                .pointer(format!("/steps/{i}")),
            );
        }
        if s.answered && s.status.is_some_and(|x| x != 200) {
            out.push(
                Finding::new(
                    "fit.step-exceeds-window",
                    Severity::Error,
                    format!(
                        "size {} is marked answered but has HTTP {}",
                        s.size,
                        s.status.unwrap_or(0)
                    ),
                )
                .file(&f.path)
                .pointer(format!("/steps/{i}/answered")),
            );
        }
    }
    let largest = r.steps.iter().filter(|s| s.answered).max_by_key(|s| s.size);
    let largest_size = largest.map(|s| s.size);
    let memory = largest.and_then(|s| s.rise_gib.values().cloned().reduce(f64::max));
    let mut mismatch = |who: &str, file: &str, ptr: &str, msg: String| {
        out.push(
            Finding::new(
                "fit.recompute-mismatch",
                Severity::Error,
                format!("{who} {msg}"),
            )
            .file(file)
            .pointer(ptr),
        );
    };
    let shown_file = r.shown.as_ref();
    let page = b.manifest.page.fit.as_ref();
    if let Some(s) = shown_file {
        if s.largest_answered != largest_size {
            mismatch(
                "the fit result",
                &f.path,
                "/shown/largest_answered",
                format!(
                    "shows {:?} as the largest size, but the steps answer up to {:?}",
                    s.largest_answered, largest_size
                ),
            );
        }
        if let (Some(x), Some(m)) = (s.memory_gib, memory) {
            if !agrees(m, x, written_decimals(x)) {
                mismatch(
                    "the fit result",
                    &f.path,
                    "/shown/memory_gib",
                    format!(
                        "shows {x} GiB, but the highest rise at the largest size is {} GiB",
                        fmt(m, 2)
                    ),
                );
            }
        }
    }
    if let Some(p) = page {
        if p.largest_answered.is_some() && p.largest_answered != largest_size {
            mismatch(
                "the page",
                "bundle.json",
                "/page/fit/largest_answered",
                format!(
                    "shows {:?} as the largest size, but the steps answer up to {:?}",
                    p.largest_answered, largest_size
                ),
            );
        }
        if let (Some(x), Some(m)) = (&p.memory_gib, memory) {
            if !x
                .parse::<f64>()
                .is_ok_and(|v| agrees(m, v, printed_decimals(x)))
            {
                mismatch(
                    "the page",
                    "bundle.json",
                    "/page/fit/memory_gib",
                    format!(
                        "shows {x} GiB, but the highest rise at the largest size is {} GiB",
                        fmt(m, 2)
                    ),
                );
            }
        }
        for (bx, shown) in &p.peak_gib_per_box {
            let peak = r
                .steps
                .iter()
                .filter_map(|s| s.rise_gib.get(bx))
                .cloned()
                .reduce(f64::max);
            match (peak, shown.parse::<f64>()) {
                (Some(pk), Ok(v)) if agrees(pk, v, printed_decimals(shown)) => {}
                (pk, _) => mismatch(
                    "the page",
                    "bundle.json",
                    &format!("/page/fit/peak_gib_per_box/{bx}"),
                    format!(
                        "shows a peak of {shown} GiB on {bx}, but the steps give {}",
                        pk.map_or("none".into(), |v| fmt(v, 2))
                    ),
                ),
            }
        }
    }
    out.recomputed.push(Recomputed {
        key: "fit.largest_answered".into(),
        value: largest_size.map(|s| s as f64),
        file: shown_file
            .and_then(|s| s.largest_answered)
            .map(|s| s as f64),
        page: page.and_then(|p| p.largest_answered).map(|s| s.to_string()),
    });
    out.recomputed.push(Recomputed {
        key: "fit.memory_gib".into(),
        value: memory,
        file: shown_file.and_then(|s| s.memory_gib),
        page: page.and_then(|p| p.memory_gib.clone()),
    });
}
