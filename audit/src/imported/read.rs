//! How the files of an imported run were read, as the CLI's readers say: `import.unreadable` for
//! each file that could not be read whole, and a note for each file that no check of the format
//! reads (so none is dropped in silence).

use super::*;

/// A file of an imported run that could not be read whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnreadFile {
    /// The file's name, as the import names its sources.
    pub file: String,
    /// Where in it (`line 3, column 7`), when it was opened.
    pub place: Option<String>,
    /// What was wrong, and what was expected.
    pub why: String,
}

/// What the readers say of the files of one imported run.
#[derive(Debug, Clone, Default)]
pub struct FilesRead {
    /// The format's name (`AIPerf`).
    pub format: String,
    /// The files that could not be read whole.
    pub unreadable: Vec<UnreadFile>,
    /// The files read that no check of the format reads.
    pub not_read: Vec<String>,
}

/// The rows over [`FilesRead`].
pub const READ: &[Row<FilesRead>] = &[row(UNREADABLE, unreadable), row(NOT_RECOMPUTABLE, not_read)];

/// `import.unreadable`: each file that could not be read whole, with the place and why.
fn unreadable(read: &FilesRead, out: &mut Emit) -> Ran {
    for u in &read.unreadable {
        let msg = format!(
            "{}; the file is not read, so nothing in it is checked (the run's other files are)",
            u.why
        );
        // The place is the finding's pointer, shown beside the file.
        let mark = out.finding(msg).file(&u.file);
        if let Some(p) = &u.place {
            mark.pointer(p);
        }
    }
    (!read.unreadable.is_empty()).then_some(())
}

/// A note for each file that no check of the format reads; a note decides nothing.
fn not_read(read: &FilesRead, out: &mut Emit) -> Ran {
    for name in &read.not_read {
        out.info(format!(
            "not read: no {} check reads this file, so nothing in it was checked",
            read.format
        ))
        .file(name);
    }
    None
}

/// Runs the rows over `read` into the import's own collector (its cap and its checks run).
pub fn said(read: &FilesRead, found: &mut Findings) {
    for c in READ {
        found.check(c, |check, emit| check(read, emit));
    }
}

/// A run whose reader could not run over the files that were read: nothing is checked, and the
/// run is incomplete, naming the files in `unreadable` and what the reader needed (`why`).
pub fn cannot_check(unreadable: &[&str], why: &str) -> Findings {
    Findings {
        incomplete: Some(format!(
            "the run cannot be checked: {} could not be read ({}), and without it: {why}",
            unreadable.join(", "),
            UNREADABLE.id
        )),
        ..Findings::default()
    }
}
