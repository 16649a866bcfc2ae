//! A check is a row and a function: [`Check`] holds its id, catalogue severity, one-line doc and the
//! function that runs it; [`Findings`] collects what every check found; [`Emit`] is what a check
//! writes through.
//!
//! The runner hands each check an [`Emit`] stamped with the check's id and catalogue severity, so
//! the id is written once, in the check's row: `emit.finding(msg).at(file, pointer)` reports at
//! the catalogue severity, `emit.warning(msg)` / `emit.info(msg)` where the check lowers it. A
//! check returns [`Ran`]: `Some(())` when it had what it needs and ran, `None` (usually through
//! `?`) when it did not; the runner records the id of each check that ran.
//!
//! A row's `run` is generic: bundle checks read a [`crate::Bundle`], a schema check one file's
//! facts, a quality check one test. Rehash and replay keep their own inputs: a rehash row's
//! function reads the card and what was measured and reports about one artifact, also through
//! the emitters of rows it concerns ([`Findings::emitter`]); replay rows name the part of the
//! replay that reports them. Functions there that return findings (`digest_finding`,
//! `failed_steps`, `compare`) build them with their row's `id`. The catalogue (`rigaudit checks`,
//! the SARIF rules) reads every row as [`About`].
//!
//! # Migration only
//!
//! Checks written in the earlier shape (a `pub(crate) fn check_x(b: &Bundle, out: &mut Out)` that
//! calls `out.ran("id")` and `out.push(Finding::new("id", Severity::X, msg))`, with a
//! `CHECKS: &[catalogue::Check]` slice of `{ id, severity, doc }`) still compile and still work:
//! [`Out`] is a thin adapter over [`Findings`], `catalogue::Check` is [`About`], and
//! `table::LEGACY` lists such a slice with its function. Both exist only until those checks are
//! rewritten as rows; new checks are rows.

use crate::report::{Finding, Findings, Recomputed, Severity};
use crate::verdict::Comparison;

/// What the catalogue shows of a check: its id, catalogue severity and one-line doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct About {
    /// Stable id, `family.name`.
    pub id: &'static str,
    /// The highest severity it reports.
    pub severity: Severity,
    /// One line on what it finds.
    pub doc: &'static str,
}

/// One check: its catalogue row and the function that runs it. `R` is the function's type, so a
/// family chooses what its checks read (`fn(&Bundle, &mut Emit) -> Ran` for most).
#[derive(Debug, Clone, Copy)]
pub struct Check<R: 'static> {
    /// Stable id, `family.name`; the family is the module that holds the row.
    pub id: &'static str,
    /// The highest severity it reports; [`Emit::finding`] reports at it.
    pub severity: Severity,
    /// One line on what it finds.
    pub doc: &'static str,
    /// The function that runs it.
    pub run: R,
}

impl<R> Check<R> {
    /// The catalogue's view of the row.
    pub const fn about(&self) -> About {
        About {
            id: self.id,
            severity: self.severity,
            doc: self.doc,
        }
    }
}

impl<R> From<&Check<R>> for About {
    fn from(c: &Check<R>) -> About {
        c.about()
    }
}

/// The catalogue rows of a table.
pub fn about<R>(table: &[Check<R>]) -> impl Iterator<Item = About> + '_ {
    table.iter().map(Check::about)
}

/// What a check returns: `Some(())` when it had what it needs and ran, `None` when it did not.
pub type Ran = Option<()>;

/// Running checks into a [`Findings`].
impl Findings {
    /// Runs one check: `call` gets the row's function and an emitter stamped with its id and
    /// severity; the id is recorded as run when `call` returns `Some(())`.
    pub fn check<R>(&mut self, c: &Check<R>, call: impl FnOnce(&R, &mut Emit) -> Ran) {
        let ran = call(&c.run, &mut self.emitter(c)).is_some();
        if ran {
            self.ran(c.id);
        }
    }

    /// An emitter for a check without running it (a stage that reports about a check it did not
    /// run, such as "nothing could be checked").
    pub fn emitter<R>(&mut self, c: &Check<R>) -> Emit<'_> {
        Emit {
            id: c.id,
            severity: c.severity,
            out: self,
        }
    }

    /// Records that the checks of a table ran (a stage that ran them elsewhere, such as a
    /// replay that compared every figure).
    pub fn mark_ran<R>(&mut self, c: &Check<R>) {
        self.ran(c.id);
    }
}

/// What one check writes through: every finding gets the check's id.
pub struct Emit<'a> {
    id: &'static str,
    severity: Severity,
    out: &'a mut Findings,
}

impl Emit<'_> {
    /// The check's id.
    pub fn id(&self) -> &'static str {
        self.id
    }

    /// A finding at the check's catalogue severity.
    pub fn finding(&mut self, message: impl Into<String>) -> Mark<'_> {
        self.at_severity(self.severity, message)
    }

    /// A finding lowered to a warning.
    pub fn warning(&mut self, message: impl Into<String>) -> Mark<'_> {
        self.at_severity(Severity::Warning, message)
    }

    /// A finding lowered to info.
    pub fn info(&mut self, message: impl Into<String>) -> Mark<'_> {
        self.at_severity(Severity::Info, message)
    }

    /// A finding at a severity the check decides (never above its catalogue severity).
    pub fn at_severity(&mut self, severity: Severity, message: impl Into<String>) -> Mark<'_> {
        self.out
            .findings
            .push(Finding::new(self.id, severity, message));
        Mark(self.out.findings.last_mut().expect("just pushed"))
    }

    /// A value recomputed from raw records.
    pub fn recomputed(&mut self, r: Recomputed) {
        self.out.recomputed.push(r);
    }

    /// A row comparing a recorded figure with its replay.
    pub fn comparison(&mut self, row: Comparison) {
        self.out.comparisons.push(row);
    }
}

/// A finding just emitted, to place and detail.
pub struct Mark<'a>(&'a mut Finding);

impl Mark<'_> {
    /// Sets the file and the pointer inside it.
    pub fn at(self, file: impl Into<String>, pointer: impl Into<String>) -> Self {
        self.file(file).pointer(pointer)
    }

    /// Sets the file.
    pub fn file(self, file: impl Into<String>) -> Self {
        self.0.file = Some(file.into());
        self
    }

    /// Sets the pointer.
    pub fn pointer(self, pointer: impl Into<String>) -> Self {
        self.0.pointer = Some(pointer.into());
        self
    }

    /// Sets the file when there is one.
    pub fn maybe_file(self, file: Option<&str>) -> Self {
        match file {
            Some(f) => self.file(f),
            None => self,
        }
    }

    /// Sets the machine-readable details.
    pub fn data(self, data: serde_json::Value) -> Self {
        self.0.data = data;
        self
    }
}

/// Migration only: today's `out.ran(id)` + `out.push(Finding)` shape over a [`Findings`]
/// (`out.recomputed` reaches the collector's field). Used by legacy checks listed in
/// `table::LEGACY`; new checks are [`Check`] rows.
#[derive(Debug, Default)]
pub struct Out(pub Findings);

impl Out {
    /// Records that a check ran.
    pub fn ran(&mut self, id: &'static str) {
        self.0.ran(id);
    }

    /// Adds a finding.
    pub fn push(&mut self, f: Finding) {
        self.0.findings.push(f);
    }
}

impl std::ops::Deref for Out {
    type Target = Findings;
    fn deref(&self) -> &Findings {
        &self.0
    }
}

impl std::ops::DerefMut for Out {
    fn deref_mut(&mut self) -> &mut Findings {
        &mut self.0
    }
}

/// Up to `n` items joined with ", ", with "and N more" when there are more.
pub fn list<T: std::fmt::Display>(items: &[T], n: usize) -> String {
    let mut s = items
        .iter()
        .take(n)
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > n {
        s.push_str(&format!(" and {} more", items.len() - n));
    }
    s
}
