//! What the `replay` command itself did, as its report shows it: whether it could run, what it
//! noted (placeholders it filled, recorded variables it refused, how the executable's digest
//! compared, how the engine stopped), and the replayed bundle's own invalid steps as verify
//! sees them. The CLI hands over what happened ([`Done`]); the words of each finding are here.

use super::*;
use crate::check::{About, Emit, Ran};

/// What the replay command did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Done<'a> {
    /// Why it could not run at all, when so.
    pub not_run: Option<&'a str>,
    /// What it noted, in the order it noted it.
    pub notes: &'a [String],
}

/// What a row of the replay command runs: it reads [`Done`].
pub type DoneRun = fn(&Done, &mut Emit) -> Ran;

/// `replay.not-run`.
pub const NOT_RUN: Check<DoneRun> = Check {
    id: "replay.not-run",
    severity: Severity::Error,
    doc: "The replay could not run: the recorded command, its executable or the engine failed before anything was measured.",
    run: not_run,
};

/// `replay.note`.
pub const NOTE: Check<DoneRun> = Check {
    id: "replay.note",
    severity: Severity::Info,
    doc: "What the replay did: placeholders it filled, how the executable's digest compared, how the engine stopped.",
    run: notes,
};

/// The rows of the replay command.
pub const COMMAND_CHECKS: &[Check<DoneRun>] = &[NOT_RUN, NOTE];

/// `replay.not-run`: the replay could not run; it is decided only then.
fn not_run(done: &Done, out: &mut Emit) -> Ran {
    let why = done.not_run?;
    out.finding(format!("the replay could not run: {why}"));
    Some(())
}

/// `replay.note`: each note, as information; a note decides nothing.
fn notes(done: &Done, out: &mut Emit) -> Ran {
    for n in done.notes {
        out.finding(n.clone());
    }
    None
}

/// The findings of what the replay command did: a replay that could not run is incomplete.
pub fn command(done: &Done) -> Findings {
    let mut found = Findings::default();
    for row in COMMAND_CHECKS {
        found.check(row, |run, emit| run(done, emit));
    }
    found.incomplete = done
        .not_run
        .map(|why| format!("the replay could not run: {why}"));
    found
}

/// What a replay measured and did, for its report.
pub struct Outcome<'a> {
    /// The recorded bundle.
    pub recorded: &'a Bundle,
    /// The bundle the replay wrote.
    pub replayed: &'a Bundle,
    /// The replayed bundle's folder, as shown.
    pub dir: &'a str,
    /// Why the replay stopped before its end, when it did.
    pub stopped: Option<&'a str>,
    /// What the command noted.
    pub notes: &'a [String],
    /// What the replay's servers mapped, per rank.
    pub ranks: Vec<crate::records::LoadedRank>,
    /// Whether the user trusted the executable without a verified digest.
    pub executable_trusted: bool,
}

/// What a replay found, in the report's order: the command's notes, the steps that failed
/// ([`failed_steps`]), the comparison's findings and rows (`compared`), the replayed bundle's own
/// findings (`verified`: what verify of it found, given by the caller, as diff's are; see
/// [`replayed_verified`]), and what its servers mapped judged against the recorded card
/// (`loaded.*`), with the inventory.
pub fn report(o: Outcome, compared: Findings, verified: Findings) -> Findings {
    let mut found = command(&Done {
        not_run: None,
        notes: o.notes,
    });
    failed_steps(o.recorded, o.replayed, o.stopped, &mut found);
    found.findings.extend(compared.findings);
    found.findings.extend(replayed_verified(verified, o.dir));
    found.comparisons = compared.comparisons;
    for id in &compared.ran {
        found.ran(id);
    }
    let card = o
        .recorded
        .card
        .as_ref()
        .map(|c| (&c.value, c.path.as_str()));
    found.merge(crate::loaded::judged(card, o.ranks, o.executable_trusted));
    found
}

/// The replayed bundle's own findings (`verified`: what verify of it found), each placed in its
/// folder `dir` and worded "replay: ...". Foreign load during the replay is the comparison's to
/// judge (its rows say "inconclusive: foreign load"), not a fault of the page: it is information.
pub fn replayed_verified(verified: Findings, dir: &str) -> Vec<Finding> {
    let mut found = verified.findings;
    for f in &mut found {
        if f.check == crate::speed::LOAD_GUARD.id {
            f.severity = Severity::Info;
        }
        f.file = Some(format!("{dir}/{}", f.file.as_deref().unwrap_or_default()));
        f.message = format!("replay: {}", f.message);
    }
    found
}

/// Every `replay.*` row in catalogue order: the comparison's, the command's, the failed steps'.
pub fn catalogue() -> impl Iterator<Item = About> {
    crate::check::about(COMPARED)
        .chain(crate::check::about(COMMAND_CHECKS))
        .chain(crate::check::about(FAILED))
}
