//! `rigaudit diff` of two runs of another tool (two AIPerf runs, two lm-eval results, ...): the
//! tool's settings first, each with both values and where each side records it, then every
//! figure both sides give, with the statistics `diff` uses for bundles: Welch's t-test over the
//! per-request values with the tolerance floor for speed, the two-proportion z-test for quality
//! scores; a figure printed without its records is inconclusive (headline only).

use crate::diff::{Diffed, SetupChange, SetupPolicy, Subject};
use crate::diff::{INCONCLUSIVE, MOVED, NOT_COMPARABLE, SETUP_DIFFERS};
use crate::replay::{Comparison, Inconclusive, ReplayVerdict, Tolerance};
use crate::stats::{two_proportion_p, welch_p};
use std::collections::BTreeMap;

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
}

/// Compares two imported runs of one tool.
pub fn compare(a: Side, b: Side, tol: &Tolerance, policy: &SetupPolicy) -> Diffed {
    let mut d = Diffed::default();
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
    for s in a.series {
        let row = match sb.get(s.key.as_str()) {
            Some(other) => row(&s.key, &s.sample, other, tol),
            None => one_sided(&s.key, mean_of(&s.sample), None),
        };
        push_row(row, &mut d);
    }
    let sa: BTreeMap<&str, ()> = a.series.iter().map(|s| (s.key.as_str(), ())).collect();
    for s in b.series.iter().filter(|s| !sa.contains_key(s.key.as_str())) {
        push_row(one_sided(&s.key, None, mean_of(&s.sample)), &mut d);
    }
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

/// A figure row, with the finding of its row of the diff family (none when it reproduced).
fn push_row(row: Comparison, d: &mut Diffed) {
    crate::diff::row_finding(&row, &mut d.found);
    d.found.comparisons.push(row);
}

fn mean_of(s: &Sample) -> Option<f64> {
    match s {
        Sample::Values(v) if !v.is_empty() => Some(v.iter().sum::<f64>() / v.len() as f64),
        Sample::Values(_) => None,
        Sample::Proportion { right, n } => (*n > 0).then(|| *right as f64 / *n as f64),
        Sample::Headline(x) => Some(*x),
    }
}

fn count(s: &Sample) -> usize {
    match s {
        Sample::Values(v) => v.len(),
        Sample::Proportion { n, .. } => *n as usize,
        Sample::Headline(_) => 1,
    }
}

fn base(key: &str, a: &Sample, b: &Sample) -> Comparison {
    let (ma, mb) = (mean_of(a), mean_of(b));
    let change = ma
        .zip(mb)
        .filter(|(x, _)| *x != 0.0)
        .map(|(x, y)| 100.0 * (y - x) / x);
    Comparison {
        key: key.to_string(),
        recorded: ma,
        replayed: mb,
        n_recorded: count(a),
        n_replayed: count(b),
        change_pct: change,
        p_value: None,
        test: "none".into(),
        verdict: ReplayVerdict::Reproduced,
        direction: change.filter(|c| *c != 0.0).map(|c| {
            if c > 0.0 {
                "up".into()
            } else {
                "down".into()
            }
        }),
        why: String::new(),
        informational: false,
        inconclusive: None,
        sd_recorded: None,
        sd_replayed: None,
    }
}

fn one_sided(key: &str, a: Option<f64>, b: Option<f64>) -> Comparison {
    let mut r = base(
        key,
        &Sample::Values(Vec::new()),
        &Sample::Values(Vec::new()),
    );
    r.recorded = a;
    r.replayed = b;
    r.verdict = ReplayVerdict::NotComparable;
    r.why = format!("only {} gives it", if a.is_some() { "A" } else { "B" });
    r
}

fn row(key: &str, a: &Sample, b: &Sample, tol: &Tolerance) -> Comparison {
    let mut r = base(key, a, b);
    match (a, b) {
        (Sample::Values(x), Sample::Values(y)) => speed(&mut r, x, y, tol),
        (Sample::Proportion { right: r1, n: n1 }, Sample::Proportion { right: r2, n: n2 })
            if *n1 > 0 && *n2 > 0 =>
        {
            let p = two_proportion_p(*r1, *n1, *r2, *n2);
            r.test = "two-proportion-z".into();
            r.p_value = Some(p);
            r.verdict = if p < tol.alpha {
                ReplayVerdict::Drifted
            } else {
                ReplayVerdict::Reproduced
            };
            r.why = format!("{r1}/{n1} against {r2}/{n2}, p = {p:.3}");
        }
        _ => {
            r.verdict = ReplayVerdict::Inconclusive;
            r.inconclusive = Some(Inconclusive::HeadlineOnly);
            r.why = "only the printed figure on a side, no per-request records to test".into();
        }
    }
    r
}

fn speed(r: &mut Comparison, x: &[f64], y: &[f64], tol: &Tolerance) {
    let need = tol.min_runs.max(2);
    if x.len() < need || y.len() < need {
        r.verdict = ReplayVerdict::Inconclusive;
        r.inconclusive = Some(Inconclusive::TooFewRuns);
        r.why = format!(
            "{} and {} requests; the test needs {need} a side",
            x.len(),
            y.len()
        );
        return;
    }
    r.test = "welch".into();
    let p = welch_p(x, y);
    r.p_value = p;
    let moved = r
        .change_pct
        .is_some_and(|c| c.abs() > 100.0 * tol.rel_floor);
    let significant = p.is_some_and(|p| p < tol.alpha);
    let c = r.change_pct.unwrap_or(0.0);
    if moved && significant {
        r.verdict = ReplayVerdict::Drifted;
        r.why = format!(
            "moved {c:+.1} % (p = {:.3}) over {} and {} requests",
            p.unwrap_or(1.0),
            x.len(),
            y.len()
        );
    } else if !significant {
        let p = p.map_or("-".into(), |p| format!("{p:.3}"));
        r.why = format!("{c:+.1} %, p = {p}: not beyond chance");
    } else {
        r.why = format!(
            "{c:+.1} %, within the floor of {:.0} %",
            100.0 * tol.rel_floor
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(v: &[f64]) -> Vec<Series> {
        vec![Series {
            key: "x".into(),
            sample: Sample::Values(v.to_vec()),
        }]
    }

    #[test]
    fn a_moved_speed_figure_and_a_changed_setting_are_named() {
        let tol = Tolerance::default();
        let a = side(&[100.0, 101.0, 99.0, 100.5, 99.5]);
        let b = side(&[150.0, 151.0, 149.0, 150.5, 149.5]);
        let sa = vec![Setting {
            name: "concurrency".into(),
            value: "2".into(),
            at: "f /c".into(),
            subject: Subject::Contract,
        }];
        let sb = vec![Setting {
            name: "concurrency".into(),
            value: "4".into(),
            at: "g /c".into(),
            subject: Subject::Contract,
        }];
        let d = compare(
            Side {
                series: &a,
                settings: &sa,
            },
            Side {
                series: &b,
                settings: &sb,
            },
            &tol,
            &SetupPolicy::default(),
        );
        assert_eq!(d.found.comparisons[0].verdict, ReplayVerdict::Drifted);
        assert_eq!(d.setup.len(), 1);
        assert!(d.found.findings.iter().any(|f| f.check == "diff.moved"));
        let same = compare(
            Side {
                series: &a,
                settings: &sa,
            },
            Side {
                series: &a,
                settings: &sa,
            },
            &tol,
            &SetupPolicy::default(),
        );
        assert!(same.found.findings.is_empty());
        assert!(two_proportion_p(5, 24, 20, 24) < 0.05);
    }
}
