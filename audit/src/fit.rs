//! `fit.*`: the memory-fit test's figures recomputed from its steps.
//!
//! Definitions (the seed page's): the largest size that answered counts; the memory figure is the
//! highest rise over idle among the boxes at that size; the per-box peaks are the highest rise at
//! any size.

use crate::bundle::{Bundle, Loaded, Run};
use crate::check::{Check, Emit, Ran};
use crate::records::FitResult;
use crate::report::{Recomputed, Severity};
use crate::stats::{agrees, fmt, printed_decimals, written_decimals};

/// `fit.*` checks, in the order they run.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "fit.step-exceeds-window",
        severity: Severity::Error,
        doc: "A fit step's prompt is larger than its size or the window, or a refused size is shown as answered.",
        run: step_exceeds_window,
    },
    Check {
        id: "fit.recompute-mismatch",
        severity: Severity::Error,
        doc: "The largest size, the memory figure or a box's peak differs from the steps' records.",
        run: recompute_mismatch,
    },
];

fn step_exceeds_window(b: &Bundle, e: &mut Emit) -> Ran {
    let f = b.fit.as_ref()?;
    let r = &f.value;
    for (i, s) in r.steps.iter().enumerate() {
        if s.prompt_tokens > s.size || (s.answered && s.prompt_tokens > r.window) {
            e.finding(format!(
                "size {}: a prompt of {} tokens does not fit the size or the {}-token window",
                s.size, s.prompt_tokens, r.window
            ))
            .at(&f.path, format!("/steps/{i}"));
        }
        if s.answered && s.status.is_some_and(|x| x != 200) {
            e.finding(format!(
                "size {} is marked answered but has HTTP {}",
                s.size,
                s.status.unwrap_or(0)
            ))
            .at(&f.path, format!("/steps/{i}/answered"));
        }
    }
    Some(())
}

/// The figures the steps give: the largest size that answered and the highest rise over idle at
/// that size.
struct Figures {
    largest: Option<u64>,
    memory: Option<f64>,
}

impl Figures {
    fn of(r: &FitResult) -> Self {
        let largest = r.steps.iter().filter(|s| s.answered).max_by_key(|s| s.size);
        Figures {
            largest: largest.map(|s| s.size),
            memory: largest.and_then(|s| s.rise_gib.values().cloned().reduce(f64::max)),
        }
    }
}

fn recompute_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let f = b.fit.as_ref()?;
    let fig = Figures::of(&f.value);
    against_file(f, &fig, e);
    against_page(b, &f.value, &fig, e);
    let (shown, page) = (f.value.shown.as_ref(), b.manifest.page.fit.as_ref());
    e.recomputed(Recomputed::new(
        "fit.largest_answered".into(),
        fig.largest.map(|s| s as f64),
        shown.and_then(|s| s.largest_answered).map(|s| s as f64),
        page.and_then(|p| p.largest_answered).map(|s| s.to_string()),
    ));
    e.recomputed(Recomputed::new(
        "fit.memory_gib".into(),
        fig.memory,
        shown.and_then(|s| s.memory_gib),
        page.and_then(|p| p.memory_gib.clone()),
    ));
    Some(())
}

/// What the fit result shows against its steps.
fn against_file(f: &Loaded<FitResult>, fig: &Figures, e: &mut Emit) {
    let Some(s) = &f.value.shown else { return };
    if s.largest_answered != fig.largest {
        e.finding(format!(
            "the fit result shows {:?} as the largest size, but the steps answer up to {:?}",
            s.largest_answered, fig.largest
        ))
        .at(&f.path, "/shown/largest_answered");
    }
    if let (Some(x), Some(m)) = (s.memory_gib, fig.memory) {
        if !agrees(m, x, written_decimals(x)) {
            e.finding(format!(
                "the fit result shows {x} GiB, but the highest rise at the largest size is {} GiB",
                fmt(m, 2)
            ))
            .at(&f.path, "/shown/memory_gib");
        }
    }
}

/// What the page shows against the steps.
fn against_page(b: &Bundle, r: &FitResult, fig: &Figures, e: &mut Emit) {
    let Some(p) = &b.manifest.page.fit else {
        return;
    };
    if p.largest_answered.is_some() && p.largest_answered != fig.largest {
        e.finding(format!(
            "the page shows {:?} as the largest size, but the steps answer up to {:?}",
            p.largest_answered, fig.largest
        ))
        .at("bundle.json", "/page/fit/largest_answered");
    }
    if let (Some(x), Some(m)) = (&p.memory_gib, fig.memory) {
        if !x
            .parse::<f64>()
            .is_ok_and(|v| agrees(m, v, printed_decimals(x)))
        {
            e.finding(format!(
                "the page shows {x} GiB, but the highest rise at the largest size is {} GiB",
                fmt(m, 2)
            ))
            .at("bundle.json", "/page/fit/memory_gib");
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
            (pk, _) => {
                e.finding(format!(
                    "the page shows a peak of {shown} GiB on {bx}, but the steps give {}",
                    pk.map_or("none".into(), |v| fmt(v, 2))
                ))
                .at("bundle.json", format!("/page/fit/peak_gib_per_box/{bx}"));
            }
        }
    }
}

crate::consistency::across_files! { "fit":
    PROMPT_UNDERFILLS: "fit.prompt-underfills", Error, counts::check_fit_fill, "A memory-fit step's prompt does not fill its size by the result's stated share.";
}

#[cfg(test)]
mod tests;
