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
//! facts, a quality check one test, a rehash check the card and what was measured. A comparison
//! that decides several rows at once from both sides (replay's comparison, diff's figures, ab's
//! paired rows) is a [`Stage`]: it declares the rows it may emit,
//! each such row holds [`Staged`] (the stage's name) in place of a function of its own, and the
//! stage writes through a [`StageOut`], which refuses a row the stage did not declare. "Ran" is
//! recorded only by the runners: [`Findings::check`] for a row with its own function,
//! [`Findings::stage`] for the rows its stage says it decided. A collector made with
//! [`Findings::capped`] lists at most a number of findings per check and counts the rest (an
//! import, a bundle's schema). The catalogue (`rigaudit checks`, the SARIF rules) reads every
//! row as [`About`].

pub use crate::report::Mark;
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

    /// Runs a stage: `run` writes through a [`StageOut`] that refuses rows `stage` does not
    /// declare; the rows it says it decided ([`StageOut::decided`]) are recorded as run when it
    /// returns.
    pub fn stage<T>(&mut self, stage: &'static Stage, run: impl FnOnce(&mut StageOut) -> T) -> T {
        let mut out = StageOut {
            stage,
            out: self,
            decided: Vec::new(),
        };
        let value = run(&mut out);
        let decided = std::mem::take(&mut out.decided);
        for id in decided {
            self.ran(id);
        }
        value
    }
}

/// A comparison that decides several rows at once from both sides (replay's comparison, diff's
/// figures, ab's paired rows): its name and the rows it may emit. Its rows hold [`Staged`] with its name.
#[derive(Debug, Clone, Copy)]
pub struct Stage {
    /// The stage's name, as its rows' [`Staged`] give it.
    pub name: &'static str,
    /// The rows it may emit (rows of other families included).
    pub rows: &'static [About],
}

impl Stage {
    /// Whether the stage declares the row `id`.
    pub fn declares(&self, id: &str) -> bool {
        self.rows.iter().any(|r| r.id == id)
    }

    fn row(&self, id: &str) -> &'static About {
        let found = self.rows.iter().find(|r| r.id == id);
        debug_assert!(
            found.is_some(),
            "stage {} emits {id}, a row it does not declare",
            self.name
        );
        found.unwrap_or(&UNDECLARED)
    }
}

/// What a row decided by a [`Stage`] holds in place of a function of its own: the stage's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staged(pub &'static str);

/// The row a release build falls back to for an undeclared id (a debug build panics first).
const UNDECLARED: About = About {
    id: "undeclared",
    severity: Severity::Error,
    doc: "",
};

/// What a stage writes through: emitters of its declared rows only.
pub struct StageOut<'a> {
    stage: &'static Stage,
    out: &'a mut Findings,
    decided: Vec<&'static str>,
}

impl StageOut<'_> {
    /// An emitter of one of the stage's declared rows.
    pub fn row(&mut self, row: impl Into<About>) -> Emit<'_> {
        let declared = self.stage.row(row.into().id);
        Emit {
            id: declared.id,
            severity: declared.severity,
            out: self.out,
        }
    }

    /// Says that a declared row had what it needs: the stage's runner records it as run.
    pub fn decided(&mut self, row: impl Into<About>) {
        let id = self.stage.row(row.into().id).id;
        if !self.decided.contains(&id) {
            self.decided.push(id);
        }
    }

    /// Adds a finding built elsewhere (its check must be a declared row).
    pub fn push(&mut self, f: Finding) -> Mark<'_> {
        self.stage.row(&f.check);
        self.out.push(f)
    }

    /// A value recomputed from raw records.
    pub fn recomputed(&mut self, r: Recomputed) {
        self.out.recomputed.push(r);
    }

    /// A row comparing two bundles' figure.
    pub fn comparison(&mut self, row: Comparison) {
        self.out.comparisons.push(row);
    }

    /// The comparison rows emitted so far.
    pub fn comparisons(&mut self) -> &mut Vec<Comparison> {
        &mut self.out.comparisons
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
        self.out.push(Finding::new(self.id, severity, message))
    }

    /// A finding built by a helper several rows share; it must be this check's.
    pub fn push(&mut self, f: Finding) -> Mark<'_> {
        debug_assert_eq!(f.check, self.id, "a finding of another check");
        self.out.push(f)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Cap, FINDINGS_PER_CHECK};

    const BY_TEST: Staged = Staged("test");
    const DECLARED: Check<Staged> = Check {
        id: "test.declared",
        severity: Severity::Warning,
        doc: "A row the test stage declares.",
        run: BY_TEST,
    };
    const OTHER: Check<Staged> = Check {
        id: "test.other",
        severity: Severity::Error,
        doc: "A row it does not.",
        run: BY_TEST,
    };
    const STAGE: Stage = Stage {
        name: BY_TEST.0,
        rows: &[DECLARED.about()],
    };

    #[test]
    fn a_stage_records_as_run_only_the_rows_it_decided() {
        let mut found = Findings::default();
        found.stage(&STAGE, |s| {
            s.row(&DECLARED).finding("seen").at("f.json", "/x");
        });
        assert!(found.ran.is_empty());
        assert_eq!(found.findings[0].severity, Severity::Warning);
        assert_eq!(found.findings[0].pointer.as_deref(), Some("/x"));
        found.stage(&STAGE, |s| s.decided(&DECLARED));
        assert_eq!(found.ran, vec!["test.declared".to_string()]);
        assert!(STAGE.declares(DECLARED.id) && !STAGE.declares(OTHER.id));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a row it does not declare")]
    fn a_stage_refuses_a_row_it_did_not_declare() {
        Findings::default().stage(&STAGE, |s| {
            s.row(&OTHER).finding("not mine");
        });
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a row it does not declare")]
    fn a_stage_refuses_a_finding_built_for_another_row() {
        Findings::default().stage(&STAGE, |s| {
            s.push(Finding::new(OTHER.id, Severity::Error, "not mine"));
        });
    }

    #[test]
    fn findings_of_one_check_are_counted_past_the_cap() {
        let mut found = Findings::capped(Cap::PER_CHECK);
        let c = Check {
            id: DECLARED.id,
            severity: DECLARED.severity,
            doc: DECLARED.doc,
            run: (),
        };
        for i in 0..FINDINGS_PER_CHECK + 5 {
            let severity = if i == FINDINGS_PER_CHECK + 1 {
                Severity::Warning
            } else {
                Severity::Info
            };
            found.check(&c, |_, e| {
                e.at_severity(severity, format!("{i}")).file("past.json");
                Some(())
            });
        }
        found.emitter(&OTHER).finding("x");
        assert_eq!(found.findings.len(), FINDINGS_PER_CHECK + 1);
        assert!(found.findings.iter().all(|f| f.message != "201"));
        assert_eq!(found.dropped["test.declared"], (5, Severity::Warning));
        let report = crate::report::Report::new("t", "b", None, found);
        let last = report.findings.last().unwrap();
        assert_eq!(report.findings.len(), FINDINGS_PER_CHECK + 2);
        assert_eq!(last.check, "test.declared");
        assert_eq!(last.severity, Severity::Warning);
        assert_eq!(
            last.message,
            "5 more findings of this check are not listed (the first 200 are)"
        );
    }

    #[test]
    fn a_merged_stage_lists_its_dropped_counts_at_its_end() {
        let mut stage = Findings::capped(Cap {
            per_check: 1,
            note: |id, more, _| format!("{more} more {id}"),
        });
        for _ in 0..3 {
            stage.emitter(&DECLARED).finding("again");
        }
        let mut all = Findings::default();
        all.merge(stage);
        all.emitter(&OTHER).finding("after");
        let messages: Vec<&str> = all.findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages, ["again", "2 more test.declared", "after"]);
    }
}
