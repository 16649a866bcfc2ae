//! Speed rows: each side's samples and figures per key, invalid steps, and the rows left for the
//! decision rule.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Recorded,
    Replayed,
}

impl Side {
    pub(super) fn name(self) -> &'static str {
        match self {
            Side::Recorded => "recorded",
            Side::Replayed => "replayed",
        }
    }
}

/// Why a step is invalid on one side.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Invalid {
    pub(super) reason: String,
    pub(super) detail: Option<String>,
}

impl Invalid {
    pub(super) fn new(reason: impl Into<String>, detail: Option<String>) -> Self {
        Invalid {
            reason: reason.into(),
            detail,
        }
    }

    pub(super) fn on(&self, sides: &str) -> String {
        match &self.detail {
            Some(d) => format!("{} on {sides} ({d})", self.reason),
            None => format!("{} on {sides}", self.reason),
        }
    }
}

/// The reason a row is not comparable, naming the side(s).
pub(super) fn invalid_why(rec: Option<&Invalid>, rep: Option<&Invalid>) -> String {
    match (rec, rep) {
        (Some(a), Some(b)) if a == b => a.on("both sides"),
        _ => [(Side::Recorded, rec), (Side::Replayed, rep)]
            .into_iter()
            .filter_map(|(s, i)| i.map(|i| i.on(&format!("the {} side", s.name()))))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The step of the per-request records a speed key is measured by.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    Decode(Option<String>),
    Prefill(u64),
    Conc(u32),
    Ctx(u64),
    L1,
}

impl Step {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Step::Decode(_) => "decode",
            Step::Prefill(_) => "prefill",
            Step::Conc(_) => "conc",
            Step::Ctx(_) => "ctx",
            Step::L1 => "l1",
        }
    }

    pub(super) fn matches(&self, q: &SpeedRequest) -> bool {
        match self {
            Step::Decode(p) => p.is_none() || q.prompt_id == *p,
            Step::Prefill(d) | Step::Ctx(d) => q.depth == Some(*d),
            Step::Conc(l) => q.level == Some(*l),
            Step::L1 => true,
        }
    }

    /// The start of the load guard's step names of this step (`decode/code/`, `prefill/512/`,
    /// `conc/4/`, `ctx/1024/`, `l1`).
    pub(super) fn guard_prefix(&self) -> String {
        match self {
            Step::Decode(None) => "decode/".into(),
            Step::Decode(Some(p)) => format!("decode/{p}/"),
            Step::Prefill(d) => format!("prefill/{d}/"),
            Step::Conc(l) => format!("conc/{l}/"),
            Step::Ctx(d) => format!("ctx/{d}/"),
            Step::L1 => "l1".into(),
        }
    }

    /// The part and depth of its rows in the speed result's `fits`.
    pub(super) fn fit(&self) -> Option<(&'static str, Option<u64>)> {
        match self {
            Step::Prefill(d) => Some(("prefill", Some(*d))),
            Step::Ctx(d) => Some(("ctx", Some(*d))),
            Step::L1 => Some(("l1", None)),
            _ => None,
        }
    }
}

/// The families of comparable speed keys, in row order.
pub(super) const FAMILIES: &[&str] = &[
    "decode",
    "decode.",
    "prefill.",
    "ttft.",
    "conc_total.",
    "conc_per_request.",
    "ctx_decode.",
    "ctx_prefill.",
    "l1_decode",
];

pub(super) fn step_of(key: &str) -> Option<Step> {
    let (family, rest) = key.split_once('.').unwrap_or((key, ""));
    match (family, rest) {
        ("decode", "") => Some(Step::Decode(None)),
        ("decode", p) => Some(Step::Decode(Some(p.to_string()))),
        ("prefill" | "ttft", d) => d.parse().ok().map(Step::Prefill),
        ("conc_total" | "conc_per_request", l) => l.parse().ok().map(Step::Conc),
        ("ctx_decode" | "ctx_prefill", d) => d.parse().ok().map(Step::Ctx),
        ("l1_decode", "") => Some(Step::L1),
        _ => None,
    }
}

/// Sort key of a row: family, then the number after the dot, then the key.
pub(super) fn order(key: &str) -> (usize, u64, String) {
    let family = FAMILIES
        .iter()
        .position(|f| key == *f || (f.ends_with('.') && key.starts_with(f)))
        .unwrap_or(FAMILIES.len());
    let n = key
        .split_once('.')
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0);
    (family, n, key.to_string())
}

/// What one side measured for one key.
#[derive(Debug, Clone)]
pub(super) enum Measured {
    Invalid(Invalid),
    /// Kept under foreign load or on a throttling GPU: which, the words naming it, and what was
    /// measured.
    Disturbed(Inconclusive, String, Box<Measured>),
    Runs {
        value: Option<f64>,
        xs: Vec<f64>,
    },
    Single(f64),
}

impl Measured {
    pub(super) fn value(&self) -> Option<f64> {
        match self {
            Measured::Invalid(_) => None,
            Measured::Disturbed(_, _, m) => m.value(),
            Measured::Runs { value, .. } => *value,
            Measured::Single(x) => Some(*x),
        }
    }

    pub(super) fn n(&self) -> usize {
        match self {
            Measured::Invalid(_) => 0,
            Measured::Disturbed(_, _, m) => m.n(),
            Measured::Runs { xs, .. } => xs.len(),
            Measured::Single(_) => 1,
        }
    }
}

/// One side's speed result with its recomputed figures and samples.
pub(super) struct SpeedSide<'a> {
    pub(super) loaded: Option<&'a Loaded<SpeedResult>>,
    pub(super) values: BTreeMap<String, Option<f64>>,
    pub(super) samples: BTreeMap<String, Vec<f64>>,
    /// Kept tries the load guard saw under foreign load, or (replayed side) that ran on a
    /// throttling GPU: step name, which, and the words naming it.
    pub(super) disturbed: Vec<(String, Inconclusive, String)>,
}

/// The kept tries of a speed result that broke its load guard's rule (the contract's, else the
/// one the result records), with what the guard saw.
pub(super) fn disturbed_tries(
    c: Option<&crate::records::speed::SpeedContract>,
    r: &SpeedResult,
) -> Vec<(String, Inconclusive, String)> {
    let Some(g) = &r.load_guard else {
        return Vec::new();
    };
    let Some(rule) = c.and_then(|c| c.load_guard.as_ref()).or(g.rule.as_ref()) else {
        return Vec::new();
    };
    g.steps
        .iter()
        .filter(|s| s.kept && rule.broken_by(s.longest_run_over))
        .map(|s| {
            let peak = match (&s.peak_process, s.peak_pct) {
                (Some(p), Some(x)) => format!(", peak {p} at {x:.0} % of a core"),
                _ => String::new(),
            };
            (
                s.step.clone(),
                Inconclusive::ForeignLoad,
                format!(
                    "try {} of {} kept with a foreign process above {} % of a core for {} samples in a row{peak}",
                    s.attempt, s.step, rule.threshold_pct, s.longest_run_over
                ),
            )
        })
        .collect()
}

/// The kept tries of a speed result's GPU record (measure `--gpu`) that ran beside a process on
/// the GPU that was not the server's (foreign load, on either side), and, when `throttled` (the
/// replayed side), those whose GPU throttled its clocks for a reason other than `gpu_idle`.
pub(super) fn gpu_disturbed_tries(
    r: &SpeedResult,
    throttled: bool,
) -> Vec<(String, Inconclusive, String)> {
    let Some(g) = &r.gpu else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in g.steps.iter().filter(|t| t.kept) {
        if !t.foreign_processes.is_empty() {
            out.push((
                t.step.clone(),
                Inconclusive::ForeignLoad,
                format!(
                    "try {} of {} kept beside {}",
                    t.attempt,
                    t.step,
                    t.foreign_processes.join(", ")
                ),
            ));
        }
        let reasons: Vec<&str> = t
            .throttle_reasons
            .iter()
            .map(String::as_str)
            .filter(|r| *r != "gpu_idle")
            .collect();
        if throttled && !reasons.is_empty() {
            out.push((
                t.step.clone(),
                Inconclusive::GpuThrottled,
                format!(
                    "try {} of {} ran on {} throttled ({})",
                    t.attempt,
                    t.step,
                    g.name,
                    reasons.join(", ")
                ),
            ));
        }
    }
    out
}

impl<'a> SpeedSide<'a> {
    /// One side's speed result: `b`'s, judged with its own contract or else `other`'s;
    /// `replayed` when `b` is the replay (only its GPU's throttling makes a row inconclusive).
    pub(super) fn new(b: &'a Bundle, other: &'a Bundle, replayed: bool) -> Self {
        let contract = b.speed_contract.as_ref().or(other.speed_contract.as_ref());
        let loaded = b.speed_result.as_ref();
        let (values, samples) = match (loaded, contract) {
            (Some(r), Some(c)) => (recompute(&c.value, &r.value), samples(&c.value, &r.value)),
            _ => Default::default(),
        };
        let disturbed = loaded
            .map(|r| {
                let mut d = disturbed_tries(contract.map(|c| &c.value), &r.value);
                d.extend(gpu_disturbed_tries(&r.value, replayed));
                d
            })
            .unwrap_or_default();
        SpeedSide {
            loaded,
            values,
            samples,
            disturbed,
        }
    }

    /// The comparable keys this side has: those of its samples and of its result's `values`.
    pub(super) fn keys(&self) -> BTreeSet<String> {
        let mut k: BTreeSet<String> = self.samples.keys().cloned().collect();
        if let Some(l) = self.loaded {
            k.extend(l.value.values.keys().cloned());
        }
        k.retain(|key| step_of(key).is_some());
        k
    }

    pub(super) fn measure(&self, key: &str, step: &Step) -> Measured {
        let Some(l) = self.loaded else {
            return Measured::Invalid(Invalid::new("no speed result", None));
        };
        let r = &l.value;
        if let Some(why) = fit_invalid(r, step) {
            return Measured::Invalid(why);
        }
        let reqs: Vec<&SpeedRequest> = counted(r, step.name())
            .filter(|q| step.matches(q))
            .collect();
        let headline = r.values.get(key).copied().flatten();
        if reqs.is_empty() {
            return match headline {
                Some(x) => Measured::Single(x),
                None => Measured::Invalid(Invalid::new("no counted request", None)),
            };
        }
        if let Some(why) = requests_invalid(&reqs, step) {
            return Measured::Invalid(why);
        }
        let xs = self.samples.get(key).cloned().unwrap_or_default();
        if xs.is_empty() {
            let failed: Vec<&SpeedRequest> =
                reqs.iter().copied().filter(|q| !q.answered()).collect();
            return Measured::Invalid(Invalid::new(
                "no counted run gave a value",
                (!failed.is_empty()).then(|| refusals(&failed)),
            ));
        }
        let value = self
            .values
            .get(key)
            .copied()
            .flatten()
            .or_else(|| crate::stats::median(&xs));
        let runs = Measured::Runs { value, xs };
        let prefix = step.guard_prefix();
        match self
            .disturbed
            .iter()
            .find(|(s, _, _)| s.starts_with(&prefix))
        {
            Some((_, kind, why)) => Measured::Disturbed(*kind, why.clone(), Box::new(runs)),
            None => runs,
        }
    }
}

/// A windowed step the tool marked as not fitting the window, or did not send.
fn fit_invalid(r: &SpeedResult, step: &Step) -> Option<Invalid> {
    let (part, depth) = step.fit()?;
    let f = r
        .fits
        .iter()
        .find(|f| f.part == part && depth.is_none_or(|d| f.depth == d) && (!f.fits || !f.sent))?;
    let reason = if f.fits {
        "step was not sent".to_string()
    } else {
        format!("step does not fit the {}-token window", f.window)
    };
    Some(Invalid::new(
        reason,
        Some(format!(
            "{} prompt + {} reply tokens",
            f.depth, f.max_tokens
        )),
    ))
}

/// Counted requests that make a step invalid: all refused, served with cached prompt tokens, or
/// (decode) replies cut before their cap.
fn requests_invalid(reqs: &[&SpeedRequest], step: &Step) -> Option<Invalid> {
    let answered: Vec<&SpeedRequest> = reqs.iter().copied().filter(|q| q.answered()).collect();
    if answered.is_empty() {
        return Some(Invalid::new(
            "every counted request refused",
            Some(refusals(reqs)),
        ));
    }
    let cached: Vec<u64> = reqs
        .iter()
        .filter_map(|q| q.cached_tokens.filter(|c| *c > 0))
        .collect();
    if !cached.is_empty() {
        return Some(Invalid::new(
            "counted runs served with cached prompt tokens",
            Some(format!(
                "{} of {} requests, up to {} tokens cached",
                cached.len(),
                reqs.len(),
                cached.iter().max().copied().unwrap_or(0)
            )),
        ));
    }
    let Step::Decode(_) = step else { return None };
    let short: Vec<&&SpeedRequest> = answered
        .iter()
        .filter(|q| q.completion_tokens.is_some_and(|n| n < q.max_tokens))
        .collect();
    let q = short.first()?;
    Some(Invalid::new(
        "decode replies cut before their cap",
        Some(format!(
            "{} of {} counted replies shorter than their {} tokens, finish reason {}",
            short.len(),
            answered.len(),
            q.max_tokens,
            q.finish_reason.as_deref().unwrap_or("none")
        )),
    ))
}

/// `HTTP <status>: <error>` of the requests that got no answer, distinct, joined.
pub(super) fn refusals(reqs: &[&SpeedRequest]) -> String {
    let set: BTreeSet<String> = reqs
        .iter()
        .filter(|q| !q.answered())
        .map(|q| {
            crate::records::quality::refusal_kind(
                q.status,
                q.error.as_deref().unwrap_or("(no reply)"),
            )
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join("; ")
}

pub(super) fn num(x: Option<f64>) -> String {
    x.map_or("no value".into(), |x| format!("{x:.2}"))
}

/// The sample standard deviation of a side's runs (none with fewer than two).
pub(super) fn side_sd(m: &Measured) -> Option<f64> {
    match m {
        Measured::Runs { xs, .. } => crate::stats::sd(xs),
        _ => None,
    }
}

/// `; the figure moved +x %` (or `a -> b` without a change), for a row not tested.
fn moved_text(row: &Comparison) -> String {
    match row.change_pct {
        Some(c) if c.abs() < 1e-9 => "; the figure did not move".to_string(),
        Some(c) => format!("; the figure moved {c:+.1} %"),
        None => format!("; {} -> {}", num(row.recorded), num(row.replayed)),
    }
}

/// One speed row: not comparable, inconclusive (foreign load, headline only, too few runs), else
/// left for the report's decision rule with both sides' runs ([`super::judge`]).
pub(super) fn speed_row(
    key: &str,
    rec: Measured,
    rep: Measured,
    opts: &Tolerance,
) -> (Comparison, Option<Pending>) {
    let mut row = Comparison {
        sd_recorded: side_sd(&rec),
        sd_replayed: side_sd(&rep),
        ..Comparison::untested(key, (rec.value(), rep.value()), (rec.n(), rep.n()))
    };
    let bad = |m: &Measured| match m {
        Measured::Invalid(i) => Some(i.clone()),
        _ => None,
    };
    let (bad_rec, bad_rep) = (bad(&rec), bad(&rep));
    if bad_rec.is_some() || bad_rep.is_some() {
        row.why = invalid_why(bad_rec.as_ref(), bad_rep.as_ref());
        return (row, None);
    }
    let moved = moved_text(&row);
    if let Some((kind, why)) = disturbed_why(&rec, &rep) {
        return (inconclusive(row, kind, why + &moved), None);
    }
    if let Some(why) = headline_only_why(&rec, &rep, opts) {
        return (
            inconclusive(row, Inconclusive::HeadlineOnly, why + &moved),
            None,
        );
    }
    let (Measured::Runs { xs: a, .. }, Measured::Runs { xs: b, .. }) = (&rec, &rep) else {
        return (row, None);
    };
    if let Some(why) = too_few_why(a.len(), b.len(), opts) {
        return (
            inconclusive(row, Inconclusive::TooFewRuns, why + &moved),
            None,
        );
    }
    let ((a, cut_a), (b, cut_b)) = (steady(a), steady(b));
    if cut_a + cut_b > 0 {
        row.warm_up_dropped = Some([cut_a, cut_b]);
        (row.n_recorded, row.n_replayed) = (a.len(), b.len());
    }
    (row, Some(Pending::Speed(a.to_vec(), b.to_vec())))
}

/// A side's runs from where their steady state starts, and how many were dropped before it.
fn steady(xs: &[f64]) -> (&[f64], usize) {
    let (kept, _) = crate::decide::steady::steady_part(xs);
    (kept, xs.len() - kept.len())
}

/// What a comparison says of the warm-ups it dropped: `a warm-up of 10 recorded runs and none of
/// the replayed dropped (MSER-5)`.
pub(super) fn warm_up_text([a, b]: [usize; 2], (side_a, side_b): (&str, &str)) -> String {
    let part = |n: usize, side: &str| match n {
        0 => format!("none of the {side}"),
        1 => format!("1 {side} run"),
        n => format!("{n} {side} runs"),
    };
    format!(
        "a warm-up of {} and {} dropped (MSER-5)",
        part(a, side_a),
        part(b, side_b)
    )
}

pub(super) fn inconclusive(mut row: Comparison, kind: Inconclusive, why: String) -> Comparison {
    row.verdict = ReplayVerdict::Inconclusive;
    row.inconclusive = Some(kind);
    row.why = why;
    row
}

/// `foreign load: ...` naming the side(s) whose kept tries the guard saw disturbed (foreign load
/// on either side wins), else `GPU throttled: ...` naming the replayed side's throttled try.
pub(super) fn disturbed_why(rec: &Measured, rep: &Measured) -> Option<(Inconclusive, String)> {
    let sides: Vec<(Inconclusive, String)> = [(Side::Recorded, rec), (Side::Replayed, rep)]
        .iter()
        .filter_map(|(s, m)| match m {
            Measured::Disturbed(kind, why, _) => {
                Some((*kind, format!("on the {} side, {why}", s.name())))
            }
            _ => None,
        })
        .collect();
    if sides.is_empty() {
        return None;
    }
    let kind = match sides.iter().any(|(k, _)| *k == Inconclusive::ForeignLoad) {
        true => Inconclusive::ForeignLoad,
        false => Inconclusive::GpuThrottled,
    };
    let label = match kind {
        Inconclusive::ForeignLoad => "foreign load",
        _ => "GPU throttled",
    };
    let words: Vec<&str> = sides.iter().map(|(_, w)| w.as_str()).collect();
    Some((kind, format!("{label}: {}", words.join("; "))))
}

pub(super) fn headline_only_why(
    rec: &Measured,
    rep: &Measured,
    opts: &Tolerance,
) -> Option<String> {
    let singles: Vec<&str> = [(Side::Recorded, rec), (Side::Replayed, rep)]
        .iter()
        .filter(|(_, m)| matches!(m, Measured::Single(_)))
        .map(|(s, _)| s.name())
        .collect();
    if singles.is_empty() {
        return None;
    }
    let sides = if singles.len() == 2 {
        "both sides".to_string()
    } else {
        format!("the {} side", singles[0])
    };
    Some(format!(
        "only a headline figure on {sides}, no per-run records; an interval needs at least {} runs",
        opts.min_runs
    ))
}

pub(super) fn too_few_why(na: usize, nb: usize, opts: &Tolerance) -> Option<String> {
    let few: Vec<String> = [(Side::Recorded, na), (Side::Replayed, nb)]
        .iter()
        .filter(|(_, n)| *n < opts.min_runs)
        .map(|(s, n)| {
            format!(
                "{n} run{} on the {} side",
                if *n == 1 { "" } else { "s" },
                s.name()
            )
        })
        .collect();
    (!few.is_empty()).then(|| {
        format!(
            "{}; an interval needs at least {}",
            few.join(" and "),
            opts.min_runs
        )
    })
}
