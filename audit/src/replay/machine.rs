//! The machine's speed reference across the two sides: a fixed kernel (the bundled engine's
//! decode kernel, `measure` probes it before every counted step) whose figures show a machine
//! that runs slower or faster as a whole between recording and replay, as a shared VM does when
//! its neighbours change. Runs inside one session cannot show that; the reference can.
//!
//! # Definitions
//!
//! - A side's reference figure is the median of its probes (GB/s of weights streamed); the two
//!   sides compare only when both ran the same kernel (name, version and SIMD level) on the same
//!   number of threads.
//! - The machine's move is `m = replayed / recorded` of those medians.
//! - A speed figure's change with the machine's move taken out: for a rate,
//!   `replayed / (recorded * m) - 1`; for a time (`ttft.*`), `replayed / (recorded / m) - 1`.
//!
//! # Rule
//!
//! When the machine moved more than [`MIN_MOVE_PCT`] between the two sides on the same hardware,
//! every speed row is judged a second time, by the same rule over the report's rows, with each
//! side's runs in units of its own session's reference (a rate divided by the side's GB/s, a time
//! multiplied by it: issue 25's covariate, so the machine's move drops out of the log ratio). A
//! row that drifted then:
//! - still drifts in those units: the drift stands, and its reason gives the move and interval
//!   left;
//! - is inside the band or undecided in those units: *inconclusive (machine speed)*, with that
//!   interval.
//!
//! The reference never turns a row into *reproduced*, and a row that reproduced stays
//! reproduced: the recorded figures are the page's, and a page could forge its reference to hide
//! a drift, so the most a forged reference buys is an inconclusive row that says why, beside a
//! `replay.machine-speed` finding with both figures.

use super::*;
use crate::decide::{show_change, Decision, Judgement};

/// The smallest move of the machine's reference (percent) that explains a drift.
pub const MIN_MOVE_PCT: f64 = 5.0;

/// How the machine's reference moved between the two sides.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineMove {
    /// The kernel both sides ran.
    pub kernel: String,
    /// Median of the recorded side's probes, GB/s.
    pub recorded: f64,
    /// Median of the replayed side's probes, GB/s.
    pub replayed: f64,
    /// Probes on each side.
    pub n: (usize, usize),
}

impl MachineMove {
    /// The move, when both results carry a reference of the same kernel.
    pub fn of(rec: Option<&SpeedResult>, rep: Option<&SpeedResult>) -> Option<MachineMove> {
        let (a, b) = (
            rec?.machine_reference.as_ref()?,
            rep?.machine_reference.as_ref()?,
        );
        if a.kernel != b.kernel || a.threads != b.threads {
            return None;
        }
        let (recorded, replayed) = (a.median()?, b.median()?);
        (recorded > 0.0 && replayed > 0.0).then(|| MachineMove {
            kernel: a.kernel.clone(),
            recorded,
            replayed,
            n: (a.samples.len(), b.samples.len()),
        })
    }

    /// `replayed / recorded`.
    pub fn ratio(&self) -> f64 {
        self.replayed / self.recorded
    }

    /// The move in percent.
    pub fn change_pct(&self) -> f64 {
        100.0 * (self.ratio() - 1.0)
    }

    /// Whether the move is large enough to explain anything.
    pub fn moved(&self) -> bool {
        self.change_pct().abs() > MIN_MOVE_PCT
    }

    /// `ran 31.2 % slower on the replayed side than on the recorded side (9.80 -> 6.74 GB/s,
    /// medians of 40 and 38 probes of engine-q4_1-...)`; a diff reads the sides as B and A.
    pub fn text(&self) -> String {
        let c = self.change_pct();
        format!(
            "ran {:.1} % {} on the replayed side than on the recorded side ({:.2} -> {:.2} GB/s, medians of {} and {} probes of {})",
            c.abs(),
            if c < 0.0 { "slower" } else { "faster" },
            self.recorded,
            self.replayed,
            self.n.0,
            self.n.1,
            self.kernel
        )
    }

    /// The figure's change in percent with the machine's move taken out (none without both
    /// figures).
    pub fn scaled_change(
        &self,
        key: &str,
        recorded: Option<f64>,
        replayed: Option<f64>,
    ) -> Option<f64> {
        let (a, b) = (recorded?, replayed?);
        let expected = if is_time(key) {
            a / self.ratio()
        } else {
            a * self.ratio()
        };
        (expected != 0.0).then(|| 100.0 * (b / expected - 1.0))
    }
}

/// Whether a speed key is a time (lower is faster) rather than a rate.
pub(super) fn is_time(key: &str) -> bool {
    key.starts_with("ttft.")
}

/// A drifted row judged again in units of each session's machine-speed reference (`scaled`, the
/// same rule over the report's rows so taken): still drifted there, the drift stands and says
/// so; reproduced or inconclusive there, the row is inconclusive (machine speed), never
/// reproduced, since the recorded reference is the page's own figure. Any other row as it is.
pub(super) fn explained(row: Comparison, scaled: &Judgement, m: &MachineMove) -> Comparison {
    if row.verdict != ReplayVerdict::Drifted || row.informational || !m.moved() {
        return row;
    }
    let e = &scaled.evidence;
    let show = |x: f64| show_change(e.kind, x);
    let in_units = format!(
        "in units of each session's reference the figure moved {} (90 % interval {} to {})",
        show(e.estimate),
        show(e.lo90),
        show(e.hi90)
    );
    if scaled.decision == Decision::Drifted {
        let mut row = row;
        row.why = format!(
            "{}; the machine's reference {}, and {in_units}: still a drift beyond the band",
            row.why,
            m.text()
        );
        return row;
    }
    let there = match scaled.decision {
        Decision::Reproduced => "inside the band",
        _ => "neither inside the band nor a drift beyond it",
    };
    let why = format!(
        "machine speed: this machine's reference kernel {}; {in_units}, {there}, so the drift cannot be told from the machine's own ({})",
        m.text(),
        row.why
    );
    inconclusive(row, Inconclusive::MachineSpeed, why)
}

/// The `replay.machine-speed` finding when the reference moved beyond [`MIN_MOVE_PCT`].
pub(super) fn machine_finding(m: &MachineMove, file: Option<&str>) -> Option<Finding> {
    if !m.moved() {
        return None;
    }
    let mut f = Finding::new(
        MACHINE_SPEED.id,
        Severity::Info,
        format!(
            "this machine's speed reference {}: drifts it explains are inconclusive; a recorded reference is the page's own figure and can only make rows inconclusive, never reproduced",
            m.text()
        ),
    )
    .data(json!({
        "kernel": m.kernel,
        "recorded_gbps": m.recorded,
        "replayed_gbps": m.replayed,
        "change_pct": m.change_pct(),
        "probes": [m.n.0, m.n.1],
    }));
    if let Some(file) = file {
        f = f.file(file).pointer("/machine_reference");
    }
    Some(f)
}
