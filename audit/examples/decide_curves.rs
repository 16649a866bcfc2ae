//! The operating curves of issue 25's decision rule: seeded simulations over CV, runs a side,
//! true drift and session spread, judged by the new rule and by the rule before it. Writes
//! docs/statistics.svg (the curves) and the tables of docs/statistics.md between its markers.
//!
//!     cargo run -p rigaudit-audit --example decide_curves --release

use rigaudit_audit::decide::ratio::runs_to_tell;
use rigaudit_audit::decide::sim::{run, Rule, Scenario, Tally};
use rigaudit_audit::decide::{Decision, Multiplicity, RunsNeeded, Setting, Tolerances};
use std::fmt::Write;
use std::path::PathBuf;

/// Reports a cell: a rate near 5 % is then known to ±1 % (95 %), a row rate to ±0.25 %.
const REPORTS: usize = 2000;
const ROWS: usize = 17;
const CVS: [f64; 3] = [0.03, 0.08, 0.15];
const RUNS: [usize; 4] = [3, 4, 8, 16];
const DRIFTS: [f64; 8] = [0.0, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60];

fn scenario(cv: f64, runs: usize, drift: f64, session_sd: f64) -> Scenario {
    Scenario {
        cv,
        runs,
        drift,
        session_sd,
        rows: ROWS,
        sessions_b: 1,
    }
}

fn seed(s: &Scenario, salt: u64) -> u64 {
    let cv = (s.cv * 1000.0) as u64;
    let drift = (s.drift * 1000.0) as u64;
    let session = (s.session_sd * 1000.0) as u64;
    salt ^ (cv << 40) ^ ((s.runs as u64) << 32) ^ (drift << 16) ^ session
}

fn cell(s: &Scenario, rule: Rule) -> Tally {
    let salt = match rule {
        Rule::Legacy => 1,
        Rule::Decide(..) => 2,
    };
    run(s, rule, REPORTS, seed(s, salt))
}

fn pct(x: f64) -> String {
    format!("{:.1}", 100.0 * x)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let vm = Rule::Decide(Tolerances::defaults(Setting::SharedVm), Multiplicity::Holm);
    let mut md = String::new();
    before_after(&mut md, vm);
    calibration(&mut md, Setting::SharedVm, &[0.0, 0.06]);
    calibration(&mut md, Setting::Dedicated, &[0.0, 0.02]);
    second_session(&mut md, vm);
    runs_to_tell_table(&mut md);
    let svg = curves(vm);
    std::fs::write(root.join("docs/statistics.svg"), svg).expect("write the SVG");
    let doc_path = root.join("docs/statistics.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    let (begin, end) = ("<!-- tables: begin -->", "<!-- tables: end -->");
    let updated = match (doc.find(begin), doc.find(end)) {
        (Some(b), Some(e)) => format!("{}{begin}\n{md}{}", &doc[..b], &doc[e..]),
        _ => format!("{doc}\n{begin}\n{md}{end}\n"),
    };
    std::fs::write(&doc_path, updated).expect("write the doc");
    print!("{md}");
}

/// The issue's figures beside the new rule's, on the same kind of simulated pairs.
fn before_after(md: &mut String, vm: Rule) {
    let dedicated = Rule::Decide(Tolerances::defaults(Setting::Dedicated), Multiplicity::Holm);
    let _ = writeln!(md, "### Before and after (the new rule: shared-VM defaults, and dedicated; Holm; {REPORTS} reports of {ROWS} rows a cell; percent)\n");
    let _ = writeln!(md, "| case | runs a side | before: called same | before: report fails | after: reproduced | after: drifted | after: inconclusive | after: report fails | dedicated (±7 %): reproduced / drifted / report fails |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let cases = [
        ("CV 8 %, drift 20 %, no session noise", 0.08, 0.20, 0.0),
        ("CV 3 %, drift 10 %, no session noise", 0.03, 0.10, 0.0),
        ("CV 8 %, no drift, no session noise", 0.08, 0.0, 0.0),
        ("CV 15 %, no drift, no session noise", 0.15, 0.0, 0.0),
        ("CV 8 %, no drift, 6 % session spread", 0.08, 0.0, 0.06),
        (
            "CV 8 %, drift 50 % (2x band), 6 % session spread",
            0.08,
            0.50,
            0.06,
        ),
    ];
    for (name, cv, drift, session) in cases {
        for runs in [3, 4, 8] {
            let s = scenario(cv, runs, drift, session);
            let (old, new, ded) = (cell(&s, Rule::Legacy), cell(&s, vm), cell(&s, dedicated));
            let _ = writeln!(
                md,
                "| {name} | {runs} | {} | {} | {} | {} | {} | {} | {} / {} / {} |",
                pct(old.row_rate(Decision::Reproduced)),
                pct(old.failed_rate()),
                pct(new.row_rate(Decision::Reproduced)),
                pct(new.row_rate(Decision::Drifted)),
                pct(new.row_rate(Decision::Inconclusive)),
                pct(new.failed_rate()),
                pct(ded.row_rate(Decision::Reproduced)),
                pct(ded.row_rate(Decision::Drifted)),
                pct(ded.failed_rate()),
            );
        }
    }
    let _ = writeln!(md);
}

/// The calibration table of one setting: report-level false "drifted" at zero drift, the rows
/// reproduced and inconclusive there, and false "reproduced" at twice the band.
fn calibration(md: &mut String, setting: Setting, sessions: &[f64]) {
    let tol = Tolerances::defaults(setting);
    let rule = Rule::Decide(tol, Multiplicity::Holm);
    let band = tol.decode.band;
    let _ = writeln!(md, "### Calibration: {setting:?} defaults (band ±{:.0} %, declared session spread {:.0} %), Holm\n", 100.0 * band, 100.0 * tol.decode.session_sd);
    let _ = writeln!(md, "| true session spread | CV | runs a side | zero drift: report fails | zero drift: rows reproduced | zero drift: rows inconclusive | drift {:.0} % (2x band): rows reproduced | rows drifted |", 200.0 * band);
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for &session in sessions {
        for cv in CVS {
            for runs in RUNS {
                let zero = cell(&scenario(cv, runs, 0.0, session), rule);
                let far = cell(&scenario(cv, runs, 2.0 * band, session), rule);
                let _ = writeln!(
                    md,
                    "| {:.0} % | {:.0} % | {runs} | {} | {} | {} | {} | {} |",
                    100.0 * session,
                    100.0 * cv,
                    pct(zero.failed_rate()),
                    pct(zero.row_rate(Decision::Reproduced)),
                    pct(zero.row_rate(Decision::Inconclusive)),
                    pct(far.row_rate(Decision::Reproduced)),
                    pct(far.row_rate(Decision::Drifted)),
                );
            }
        }
    }
    let _ = writeln!(md);
}

/// What a confirming replay session buys: side B's runs from two sessions (4 runs each) instead
/// of one, with a 6 % session spread and the shared-VM defaults.
fn second_session(md: &mut String, vm: Rule) {
    let _ = writeln!(md, "### A second replay session (6 % session spread, shared-VM defaults, 4 runs a session; percent)\n");
    let _ = writeln!(md, "| CV | replay sessions | zero drift: rows reproduced | zero drift: report fails | drift 50 %: rows drifted | drift 50 %: rows reproduced |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for cv in CVS {
        for sessions_b in [1, 2] {
            let s = Scenario {
                sessions_b,
                ..scenario(cv, 4, 0.0, 0.06)
            };
            let far = Scenario { drift: 0.5, ..s };
            let (zero, far) = (cell(&s, vm), cell(&far, vm));
            let _ = writeln!(
                md,
                "| {:.0} % | {sessions_b} | {} | {} | {} | {} |",
                100.0 * cv,
                pct(zero.row_rate(Decision::Reproduced)),
                pct(zero.failed_rate()),
                pct(far.row_rate(Decision::Drifted)),
                pct(far.row_rate(Decision::Reproduced)),
            );
        }
    }
    let _ = writeln!(md);
}

/// Runs a step needs for a 90 % interval of ±5 % and ±10 % (runs_to_tell), by CV and session
/// spread.
fn runs_to_tell_table(md: &mut String) {
    let _ = writeln!(
        md,
        "### How many runs a side a step needs (90 % interval of the change within ±5 % / ±10 %)\n"
    );
    let _ = writeln!(
        md,
        "| session spread (each side) | CV 3 % | CV 8 % | CV 15 % |"
    );
    let _ = writeln!(md, "|---|---|---|---|");
    for session in [0.0, 0.02, 0.07] {
        let cells: Vec<String> = CVS
            .iter()
            .map(|cv| {
                let var = (1.0 + cv * cv).ln();
                let show = |effect: f64| match runs_to_tell(effect, var, 2.0 * session * session) {
                    RunsNeeded::Runs(n) => n.to_string(),
                    RunsNeeded::NotByRuns => "no number".to_string(),
                };
                format!("{} / {}", show(0.05), show(0.10))
            })
            .collect();
        let _ = writeln!(md, "| {:.0} % | {} |", 100.0 * session, cells.join(" | "));
    }
    let _ = writeln!(md);
}

const W: f64 = 300.0;
const H: f64 = 200.0;
const PAD: f64 = 50.0;
const COLOURS: [&str; 4] = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4"];

/// One panel's polyline points: share of rows with `d` against the true drift.
fn line(tallies: &[Tally], d: Decision, x0: f64, y0: f64) -> String {
    DRIFTS
        .iter()
        .zip(tallies)
        .map(|(drift, t)| {
            let x = x0 + W * drift / 0.6;
            let y = y0 + H * (1.0 - t.row_rate(d));
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The SVG: for each CV (columns) the share of rows called reproduced (top row of panels) and
/// drifted (bottom) against the true drift, one line per runs a side, with a 6 % session
/// spread and the shared-VM defaults; dashed grey, the old rule at 4 runs ("same" / drifted).
fn curves(vm: Rule) -> String {
    let mut svg = String::new();
    let (width, height) = (3.0 * (W + PAD) + PAD, 2.0 * (H + PAD) + 2.0 * PAD);
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (col, cv) in CVS.iter().enumerate() {
        let x0 = PAD + col as f64 * (W + PAD);
        let legacy: Vec<Tally> = DRIFTS
            .iter()
            .map(|d| cell(&scenario(*cv, 4, *d, 0.06), Rule::Legacy))
            .collect();
        let per_runs: Vec<Vec<Tally>> = RUNS
            .iter()
            .map(|n| {
                DRIFTS
                    .iter()
                    .map(|d| cell(&scenario(*cv, *n, *d, 0.06), vm))
                    .collect()
            })
            .collect();
        for (row, (d, label)) in [
            (Decision::Reproduced, "reproduced"),
            (Decision::Drifted, "drifted"),
        ]
        .iter()
        .enumerate()
        {
            let y0 = PAD + row as f64 * (H + PAD);
            panel_frame(
                &mut svg,
                x0,
                y0,
                &format!("CV {:.0} %: share called {label}", 100.0 * cv),
            );
            for (i, tallies) in per_runs.iter().enumerate() {
                let _ = writeln!(
                    svg,
                    r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
                    COLOURS[i],
                    line(tallies, *d, x0, y0)
                );
            }
            let _ = writeln!(
                svg,
                r##"<polyline fill="none" stroke="#888" stroke-dasharray="4 3" points="{}"/>"##,
                line(&legacy, *d, x0, y0)
            );
        }
    }
    legend(&mut svg, height - PAD);
    svg.push_str("</svg>\n");
    svg
}

fn panel_frame(svg: &mut String, x0: f64, y0: f64, title: &str) {
    let _ = writeln!(
        svg,
        r#"<rect x="{x0}" y="{y0}" width="{W}" height="{H}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(svg, r#"<text x="{x0}" y="{}">{title}</text>"#, y0 - 6.0);
    for k in 0..=4 {
        let y = y0 + H * (1.0 - k as f64 / 4.0);
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}%</text>"##,
            x0 + W,
            x0 - 4.0,
            y + 4.0,
            25 * k
        );
    }
    for (i, d) in DRIFTS.iter().enumerate().step_by(2) {
        let x = x0 + W * d / 0.6;
        let _ = writeln!(
            svg,
            r#"<text x="{x}" y="{}" text-anchor="middle">{:.0}%</text>"#,
            y0 + H + 14.0,
            100.0 * d
        );
        let _ = i;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">true drift</text>"#,
        x0 + W / 2.0,
        y0 + H + 28.0
    );
}

fn legend(svg: &mut String, y: f64) {
    for (i, n) in RUNS.iter().enumerate() {
        let x = PAD + i as f64 * 150.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{x}" x2="{}" y1="{y}" y2="{y}" stroke="{}" stroke-width="2"/><text x="{}" y="{}">{n} runs a side (new rule)</text>"#,
            x + 20.0,
            COLOURS[i],
            x + 24.0,
            y + 4.0
        );
    }
    let x = PAD + 4.0 * 150.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{x}" x2="{}" y1="{y}" y2="{y}" stroke="#888" stroke-dasharray="4 3"/><text x="{}" y="{}">old rule, 4 runs ("same" = reproduced)</text>"##,
        x + 20.0,
        x + 24.0,
        y + 4.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="{PAD}" y="{}">6 % session spread, shared-VM defaults (band ±25 %, Holm over 17 rows); {REPORTS} reports of 17 rows a point</text>"#,
        y + 22.0
    );
}
