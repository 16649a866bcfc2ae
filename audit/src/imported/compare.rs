//! `rigaudit diff` of two runs of another tool (two AIPerf runs, two lm-eval results, ...): the
//! tool's settings first, each with both values and where each side records it, then every
//! figure both sides give, judged by the one decision rule of [`crate::decide`] that replay and
//! the diff of bundles use: a speed figure by the log ratio of its per-request values (a
//! moderated interval, the prior fitted over every speed figure of the diff) and, for a time per
//! request (a latency), its p50, p90, p95 and p99 by their order-statistic intervals; a quality score paired (exact McNemar) when
//! both sides scored the same documents by id, else unpaired (Newcombe); "drifted" controlled
//! over the diff's rows. A figure printed without its records is inconclusive (headline only).

use crate::decide::percentile::{judge_percentile, ratio_interval};
use crate::decide::quality::{paired_evidence, unpaired_evidence, Paired};
use crate::decide::ratio::{self, Runs};
use crate::decide::steady::steady_part;
use crate::decide::{self, Decision, Evidence, FigureKind, Moderated, Tolerances};
use crate::diff::{validity, Diffed, SetupChange, SetupPolicy, Subject};
use crate::diff::{INCONCLUSIVE, MOVED, NOT_COMPARABLE, SETUP_DIFFERS};
use crate::replay::{apply_judgement, Comparison, Inconclusive, ReplayVerdict, Tolerance};
use crate::report::Findings;
use std::collections::{BTreeMap, BTreeSet};

/// What one side gives for a figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Sample {
    /// One value per request (speed).
    Values(Vec<f64>),
    /// Right of n (a score of 0/1 per document).
    Proportion {
        /// Right answers.
        right: u64,
        /// Documents.
        n: u64,
    },
    /// Right or wrong per document, by the document's id (a score of 0/1 per document whose
    /// records name it): compared paired with a side that scored the same ids.
    Answers(Vec<(String, bool)>),
    /// Only the printed figure.
    Headline(f64),
}

/// A figure of one side.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its key (`aiperf.time_to_first_token`, `lm-eval.arith.exact_match,letter`).
    pub key: String,
    /// What the side gives.
    pub sample: Sample,
}

/// A setting of the run as the tool recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// What it is (`tool version`, `input_config/phases/0/concurrency`).
    pub name: String,
    /// Its value, as text.
    pub value: String,
    /// Where it is recorded: file and pointer.
    pub at: String,
    /// The subject it counts under.
    pub subject: Subject,
}

/// One side of the diff.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// Its figures.
    pub series: &'a [Series],
    /// Its settings.
    pub settings: &'a [Setting],
    /// What the format's own checks found on it (what `verify` of it says): its validity
    /// findings are carried into the diff and mark the rows they touch
    /// ([`crate::diff::validity`]).
    pub found: &'a Findings,
}

/// Compares two imported runs of one tool.
pub fn compare(a: Side, b: Side, tol: &Tolerance, policy: &SetupPolicy) -> Diffed {
    let mut d = Diffed::default();
    let mut carried = validity::carried(validity::Side::A, a.found);
    carried.extend(validity::carried(validity::Side::B, b.found));
    validity::report(&carried, &mut d.found);
    let quality: BTreeSet<&str> = a
        .series
        .iter()
        .chain(b.series)
        .filter(|s| matches!(s.sample, Sample::Proportion { .. } | Sample::Answers(_)))
        .map(|s| s.key.as_str())
        .collect();
    d.found.stage(&crate::diff::DIFF, |s| {
        for c in [&SETUP_DIFFERS, &MOVED, &INCONCLUSIVE, &NOT_COMPARABLE] {
            s.decided(c);
        }
    });
    settings(a.settings, b.settings, policy, &mut d);
    let sb: BTreeMap<&str, &Sample> = b
        .series
        .iter()
        .map(|s| (s.key.as_str(), &s.sample))
        .collect();
    let mut rows = Vec::new();
    for s in a.series {
        match sb.get(s.key.as_str()) {
            Some(other) => rows.extend(pair_rows(&s.key, &s.sample, other)),
            None => rows.push((one_sided(&s.key, mean_of(&s.sample), None), None)),
        }
    }
    let sa: BTreeMap<&str, ()> = a.series.iter().map(|s| (s.key.as_str(), ())).collect();
    for s in b.series.iter().filter(|s| !sa.contains_key(s.key.as_str())) {
        rows.push((one_sided(&s.key, None, mean_of(&s.sample)), None));
    }
    decide_rows(&mut rows, tol);
    let rows: Vec<Comparison> = rows
        .into_iter()
        .map(|(row, _)| {
            let mut row = crate::diff::as_change(row);
            let figure = match quality.contains(row.key.as_str()) {
                true => validity::Figure::Quality,
                false => validity::Figure::Speed,
            };
            validity::mark(&mut row, figure, &carried, &|_, _| None);
            row
        })
        .collect();
    crate::diff::row_findings(&rows, &mut d.found);
    d.found.incomplete = validity::nothing_comparable(&rows);
    d.found.comparisons.extend(rows);
    d
}

fn settings(a: &[Setting], b: &[Setting], policy: &SetupPolicy, d: &mut Diffed) {
    let mb: BTreeMap<&str, &Setting> = b.iter().map(|s| (s.name.as_str(), s)).collect();
    let ma: BTreeMap<&str, &Setting> = a.iter().map(|s| (s.name.as_str(), s)).collect();
    let names: std::collections::BTreeSet<&str> = ma.keys().chain(mb.keys()).copied().collect();
    for n in names {
        let (x, y) = (ma.get(n), mb.get(n));
        let val = |s: Option<&&Setting>| s.map_or("absent".to_string(), |s| s.value.clone());
        if val(x) == val(y) {
            continue;
        }
        let subject = x.or(y).map_or(Subject::Text, |s| s.subject);
        let change = SetupChange {
            subject,
            what: n.to_string(),
            a: val(x),
            b: val(y),
            where_a: x.map_or("not recorded".to_string(), |s| s.at.clone()),
            where_b: y.map_or("not recorded".to_string(), |s| s.at.clone()),
        };
        let msg = format!("{n}: A has {}, B has {}", change.a, change.b);
        let mut e = d.found.emitter(&SETUP_DIFFERS);
        if policy.fail.contains(&subject) {
            e.finding(msg);
        } else {
            e.warning(msg);
        }
        d.setup.push(change);
    }
}

/// A side's tally of a quality score: right of n.
fn tally(s: &Sample) -> Option<(u64, u64)> {
    match s {
        Sample::Proportion { right, n } => Some((*right, *n)),
        Sample::Answers(v) => Some((v.iter().filter(|(_, r)| *r).count() as u64, v.len() as u64)),
        _ => None,
    }
}

fn mean_of(s: &Sample) -> Option<f64> {
    match s {
        Sample::Values(v) if !v.is_empty() => Some(v.iter().sum::<f64>() / v.len() as f64),
        Sample::Values(_) => None,
        Sample::Proportion { .. } | Sample::Answers(_) => {
            let (right, n) = tally(s)?;
            (n > 0).then(|| right as f64 / n as f64)
        }
        Sample::Headline(x) => Some(*x),
    }
}

fn count(s: &Sample) -> usize {
    match s {
        Sample::Values(v) => v.len(),
        Sample::Proportion { n, .. } => *n as usize,
        Sample::Answers(v) => v.len(),
        Sample::Headline(_) => 1,
    }
}

fn base(key: &str, (ma, mb): (Option<f64>, Option<f64>), (na, nb): (usize, usize)) -> Comparison {
    Comparison::untested(key, (ma, mb), (na, nb))
}

fn one_sided(key: &str, a: Option<f64>, b: Option<f64>) -> Comparison {
    let mut r = base(key, (a, b), (0, 0));
    r.verdict = ReplayVerdict::NotComparable;
    r.why = format!("only {} gives it", if a.is_some() { "A" } else { "B" });
    r
}

/// What a row holds for the decision rule.
#[derive(Debug, Clone)]
enum Pending {
    /// Per-request values of a speed figure.
    Speed(Vec<f64>, Vec<f64>),
    /// The q-percentile of per-request values.
    Percentile(Vec<f64>, Vec<f64>, f64),
    /// A quality score over the same documents.
    Paired(Paired, usize),
    /// A quality score as two tallies (right, n).
    Unpaired((u64, u64), (u64, u64)),
}

/// The percentiles compared by their intervals wherever both sides give per-request values.
const PERCENTILES: [(f64, &str); 4] = [(0.50, "p50"), (0.90, "p90"), (0.95, "p95"), (0.99, "p99")];

/// The rows of a figure both sides give: the figure, and for per-request times (latencies, the
/// distributions tools print percentiles of; not a rate's repetitions) its percentiles.
fn pair_rows(key: &str, a: &Sample, b: &Sample) -> Vec<(Comparison, Option<Pending>)> {
    let mut r = base(key, (mean_of(a), mean_of(b)), (count(a), count(b)));
    match (a, b) {
        (Sample::Values(x), Sample::Values(y)) => {
            if x.iter().chain(y).any(|v| !(v.is_finite() && *v > 0.0)) {
                r.verdict = ReplayVerdict::Inconclusive;
                r.inconclusive = Some(Inconclusive::TooFewRuns);
                r.why = "a value not above 0 on a side: a ratio cannot be taken".into();
                return vec![(r, None)];
            }
            // The figure's own row compares each side's steady part (MSER-5); its percentiles
            // describe every request.
            let (sx, sy) = (steady_part(x).0, steady_part(y).0);
            let cut = [x.len() - sx.len(), y.len() - sy.len()];
            if cut != [0, 0] {
                r.warm_up_dropped = Some(cut);
                (r.n_recorded, r.n_replayed) = (sx.len(), sy.len());
            }
            let mut rows = vec![(r, Some(Pending::Speed(sx.to_vec(), sy.to_vec())))];
            let times = !crate::verdict::higher_is_better(key);
            for (q, name) in PERCENTILES.into_iter().filter(|_| times) {
                let pa = crate::decide::percentile::percentile_interval(x, q, 0.9);
                let pb = crate::decide::percentile::percentile_interval(y, q, 0.9);
                let row = base(
                    &format!("{key}.{name}"),
                    (pa.map(|p| p.estimate), pb.map(|p| p.estimate)),
                    (x.len(), y.len()),
                );
                rows.push((row, Some(Pending::Percentile(x.clone(), y.clone(), q))));
            }
            rows
        }
        (Sample::Answers(x), Sample::Answers(y)) => {
            let xs: Vec<(&str, bool)> = x.iter().map(|(i, r)| (i.as_str(), *r)).collect();
            let ys: Vec<(&str, bool)> = y.iter().map(|(i, r)| (i.as_str(), *r)).collect();
            let (t, left_out) = Paired::by_id(&xs, &ys);
            if t.n() > 0 {
                vec![(r, Some(Pending::Paired(t, left_out)))]
            } else {
                let pending = unpaired(a, b);
                vec![(r, pending)]
            }
        }
        _ => match unpaired(a, b) {
            Some(p) => vec![(r, Some(p))],
            None => {
                r.verdict = ReplayVerdict::Inconclusive;
                r.inconclusive = Some(Inconclusive::HeadlineOnly);
                r.why = "only the printed figure on a side, no per-request records to test".into();
                vec![(r, None)]
            }
        },
    }
}

/// Two quality tallies with a document on each side, compared unpaired.
fn unpaired(a: &Sample, b: &Sample) -> Option<Pending> {
    let (x, y) = (tally(a)?, tally(b)?);
    (x.1 > 0 && y.1 > 0).then_some(Pending::Unpaired(x, y))
}

/// The kind of an imported figure by its key's words (a time or rate of prefill, first token,
/// throughput, else decode); a quality score is judged in points whatever its key.
fn kind_of(key: &str) -> FigureKind {
    let k = key.to_ascii_lowercase();
    if k.contains("time_to_first_token") || k.contains("ttft") {
        FigureKind::Ttft
    } else if k.contains("prefill") {
        FigureKind::Prefill
    } else if k.contains("throughput") {
        FigureKind::Throughput
    } else {
        FigureKind::Decode
    }
}

/// Decides the pending rows as one family: speed and quality by [`decide::decide_family`] (a
/// prior fitted to every speed figure's values), percentiles by their intervals at the
/// family's Bonferroni level (they have no p-value to adjust with the rest).
fn decide_rows(rows: &mut [(Comparison, Option<Pending>)], tol: &Tolerance) {
    let t = tol.tolerances();
    let sides: Vec<&[f64]> = rows
        .iter()
        .filter_map(|(_, p)| match p {
            Some(Pending::Speed(a, b)) => Some([a.as_slice(), b.as_slice()]),
            _ => None,
        })
        .flatten()
        .collect();
    let (vars, dfs) = ratio::variances_of(&sides);
    let prior = Moderated::fit(&vars, &dfs);
    let family = rows.iter().filter(|(_, p)| p.is_some()).count().max(1);
    let mut at = Vec::new();
    let mut evidence = Vec::new();
    for (i, (row, p)) in rows.iter_mut().enumerate() {
        match p {
            Some(Pending::Percentile(a, b, q)) => percentile_row(row, a, b, *q, &t, family),
            Some(p) => {
                if let Some(e) = evidence_of(&row.key, p, &t, &prior) {
                    at.push(i);
                    evidence.push(e);
                }
            }
            None => {}
        }
    }
    let judged = decide::decide_family(evidence, tol.rule.multiplicity);
    for (i, j) in at.into_iter().zip(judged) {
        let detail = match &rows[i].1 {
            Some(Pending::Paired(t, left_out)) => Some(paired_detail(t, *left_out)),
            Some(Pending::Unpaired(a, b)) => {
                Some(format!("{}/{} against {}/{}", a.0, a.1, b.0, b.1))
            }
            _ => rows[i].0.warm_up_dropped.map(|[a, b]| {
                format!("a warm-up of the first {a} requests of A and {b} of B dropped (MSER-5)")
            }),
        };
        apply_judgement(&mut rows[i].0, &j, detail.as_deref());
    }
}

fn paired_detail(t: &Paired, left_out: usize) -> String {
    let out = if left_out > 0 {
        format!("; {left_out} documents only one side scored left out")
    } else {
        String::new()
    };
    format!(
        "paired over {} documents: {} right on A only, {} on B only{out}",
        t.n(),
        t.only_a,
        t.only_b
    )
}

/// The evidence of a speed or quality row (a percentile has none: [`percentile_row`]).
fn evidence_of(key: &str, p: &Pending, t: &Tolerances, prior: &Moderated) -> Option<Evidence> {
    Some(match p {
        Pending::Speed(a, b) => {
            let kind = kind_of(key);
            let (a, b) = (Runs::one_session(a), Runs::one_session(b));
            ratio::log_ratio(kind, a, b, &t.of(kind), prior)
        }
        Pending::Paired(pairs, _) => paired_evidence(pairs, &t.quality),
        Pending::Unpaired(a, b) => unpaired_evidence(a.0, a.1, b.0, b.1, &t.quality),
        Pending::Percentile(..) => return None,
    })
}

/// A percentile row: decided by its order-statistic intervals ([`judge_percentile`]), drifted
/// only at the Bonferroni level over the family's `family` rows.
fn percentile_row(
    row: &mut Comparison,
    a: &[f64],
    b: &[f64],
    q: f64,
    t: &Tolerances,
    family: usize,
) {
    let kind = kind_of(&row.key);
    let tol = t.of(kind);
    let band = tol.band_in_estimate_units(kind);
    let drift_confidence = 1.0 - decide::ALPHA / family as f64;
    let decision = judge_percentile(a, b, q, &tol, kind, drift_confidence);
    let shown = |x: f64| 100.0 * x.exp_m1();
    let interval = ratio_interval(a, b, q, 0.90);
    row.test = "order-statistic".into();
    row.band = Some(shown(band));
    // The one change the row shows: the one judged, of the two percentiles.
    if let Some((d, _, _)) = interval.filter(|(d, _, _)| d.is_finite()) {
        row.change_pct = Some(shown(d));
    }
    row.interval90 = interval
        .filter(|(_, lo, hi)| lo.is_finite() && hi.is_finite())
        .map(|(_, lo, hi)| [shown(lo), shown(hi)]);
    let few = too_few_notes(a.len(), b.len(), q);
    let said = match interval {
        Some((d, lo, hi)) => format!(
            "{:+.1} % (90 % interval {} to {}; {} and {} samples)",
            shown(d),
            end(lo),
            end(hi),
            a.len(),
            b.len()
        ),
        None => "no interval".to_string(),
    };
    let band_text = format!("±{:.0} %", shown(band));
    (row.verdict, row.why) = match decision {
        Decision::Reproduced => (ReplayVerdict::Reproduced, format!("{said}: inside the {band_text} band")),
        Decision::Drifted => (
            ReplayVerdict::Drifted,
            format!("{said}: beyond the {band_text} band, and its {:.1} % interval (Bonferroni over {family} rows) leaves out no change", 100.0 * drift_confidence),
        ),
        Decision::Inconclusive => (
            ReplayVerdict::Inconclusive,
            format!("{said}: neither inside the {band_text} band nor a drift beyond it"),
        ),
    };
    if decision == Decision::Inconclusive {
        row.inconclusive = Some(if few.is_empty() {
            Inconclusive::WideInterval
        } else {
            Inconclusive::TooFewRuns
        });
    }
    if !few.is_empty() {
        row.why = format!("{}; {}", row.why, few.join("; "));
    }
}

/// What each side's sample count lacks for a q-percentile (`A: p99 of 12 samples: ...`).
fn too_few_notes(na: usize, nb: usize, q: f64) -> Vec<String> {
    [(na, "A"), (nb, "B")]
        .iter()
        .filter_map(|(n, side)| {
            crate::decide::percentile::too_few_samples(q, *n)
                .map(|w| format!("{side}: {}", w.replacen(" printed from", " of", 1)))
        })
        .collect()
}

/// An end of a percent interval as the report prints it (`open` when unbounded).
fn end(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1} %", 100.0 * x.exp_m1())
    } else {
        "open".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::assert_ends_with;

    fn side(v: &[f64]) -> Vec<Series> {
        vec![Series {
            key: "x_ms".into(),
            sample: Sample::Values(v.to_vec()),
        }]
    }

    #[test]
    fn a_moved_speed_figure_and_a_changed_setting_are_named() {
        let a = side(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let b = side(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let concurrency = |value: &str, at: &str| {
            vec![Setting {
                name: "concurrency".into(),
                value: value.into(),
                at: at.into(),
                subject: Subject::Contract,
            }]
        };
        let (sa, sb) = (concurrency("2", "f /c"), concurrency("4", "g /c"));
        let d = diffed((&a, &sa), (&b, &sb));
        assert_eq!(d.found.comparisons[0].verdict, ReplayVerdict::Changed);
        assert_eq!(d.found.comparisons[0].better, Some(false), "a time went up");
        assert_eq!(d.setup.len(), 1);
        assert!(d.found.findings.iter().any(|f| f.check == "diff.moved"));
        let same = diffed((&a, &sa), (&a, &sa));
        assert_eq!(same.found.comparisons[0].verdict, ReplayVerdict::Unchanged);
        assert!(!same.found.findings.iter().any(|f| f.check == "diff.moved"));
        // Five requests a side: a p99 is their largest in disguise, never judged unchanged.
        let p99 = same
            .found
            .comparisons
            .iter()
            .find(|r| r.key == "x_ms.p99")
            .unwrap();
        assert_eq!(p99.verdict, ReplayVerdict::Inconclusive, "{}", p99.why);
        assert!(p99.why.contains("p99 of 5 samples"), "{}", p99.why);
    }

    fn answers(right: &[bool]) -> Vec<Series> {
        vec![Series {
            key: "lm-eval.arith.exact_match,none".into(),
            sample: Sample::Answers(
                right
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i.to_string(), *r))
                    .collect(),
            ),
        }]
    }

    /// Two runs of figures and settings compared with the default tolerance and policy.
    fn diffed(a: (&[Series], &[Setting]), b: (&[Series], &[Setting])) -> Diffed {
        let nothing = Findings::default();
        let (a, b) = (
            Side {
                series: a.0,
                settings: a.1,
                found: &nothing,
            },
            Side {
                series: b.0,
                settings: b.1,
                found: &nothing,
            },
        );
        compare(a, b, &Tolerance::default(), &SetupPolicy::default())
    }

    fn diff_of(a: &[Series], b: &[Series]) -> Comparison {
        diffed((a, &[]), (b, &[])).found.comparisons[0].clone()
    }

    #[test]
    fn a_warm_up_of_requests_is_dropped_from_the_figures_row_not_its_percentiles() {
        // 40 requests' output rates a side around 50 tok/s (±2 %); B's first 10 ran at half speed.
        let steady: Vec<f64> = (0..40)
            .map(|i| 50.0 * (1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0)))
            .collect();
        let mut cold = steady.clone();
        for x in cold.iter_mut().take(10) {
            *x *= 0.5;
        }
        let series = |values: &[f64]| {
            vec![Series {
                key: "vllm.output_throughput".into(),
                sample: Sample::Values(values.to_vec()),
            }]
        };
        let r = diff_of(&series(&steady), &series(&cold));
        assert_eq!(r.warm_up_dropped, Some([0, 10]), "{r:?}");
        assert_eq!((r.n_recorded, r.n_replayed), (40, 30));
        assert_eq!(r.verdict, ReplayVerdict::Unchanged, "{}", r.why);
        assert_ends_with(
            &r.why,
            "(a warm-up of the first 0 requests of A and 10 of B dropped (MSER-5))",
        );
        // The same requests without the transient: compared whole.
        let r = diff_of(&series(&steady), &series(&steady));
        assert_eq!(r.warm_up_dropped, None);
    }

    #[test]
    fn quality_on_the_same_documents_is_compared_paired() {
        // 400 documents, the same 300 right on both sides: paired, the interval is 0 wide and
        // inside the ±3 points band; unpaired tallies of 75 % over 400 could not show that.
        let same: Vec<bool> = (0..400).map(|i| i % 4 != 0).collect();
        let r = diff_of(&answers(&same), &answers(&same));
        assert_eq!(r.test, "mcnemar-paired");
        assert_eq!(r.verdict, ReplayVerdict::Unchanged, "{}", r.why);
        assert!(r.why.contains("paired over 400 documents"), "{}", r.why);
        let tallies = |right| {
            vec![Series {
                key: "lm-eval.arith.exact_match,none".into(),
                sample: Sample::Proportion { right, n: 400 },
            }]
        };
        let r = diff_of(&tallies(300), &tallies(300));
        assert_eq!(r.test, "newcombe-unpaired");
        assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{}", r.why);
        // 40 documents flipped from right to wrong: 10 points down, worse.
        let worse: Vec<bool> = same
            .iter()
            .enumerate()
            .map(|(i, r)| *r && i >= 60)
            .collect();
        let r = diff_of(&answers(&same), &answers(&worse));
        assert_eq!(r.verdict, ReplayVerdict::Changed, "{}", r.why);
        assert_eq!(r.better, Some(false));
    }
}
