//! The reporting commands' ends: each opens its subject ([`crate::subject`]) or reads its input,
//! lets the policy (read once per run) tune its options, runs its stages and hands the one report
//! to [`Gate::emit`]; and what `measure` says at its end.

use crate::cli::ReportArgs;
use crate::fatal::{fatal, Fatal};
use crate::policy::Loaded;
use crate::subject::Subject;
use crate::{audit, diff, download, import, input, measure, output, rehash, replay, verify};
use output::intoto::{self, SignKey};
use output::Format;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where a report goes: the report options and the policy, read once for the run.
pub struct Gate {
    /// `--format`, `--fail-on`, `--report`, `--output`.
    pub out: ReportArgs,
    /// `--policy`, read and checked.
    pub policy: Option<Loaded>,
}

impl Gate {
    /// The severity that fails the run.
    fn fail_on(&self) -> Option<Severity> {
        self.out.fail_on.severity()
    }

    /// Applies the policy, prints the report in its format, writes every `--report` and
    /// `--output` file (each atomically, from the same report), and maps the verdict to the exit
    /// code.
    pub fn emit(&self, mut report: Report) -> Result<ExitCode, Fatal> {
        report.rules_version = rigaudit_audit::catalogue::version();
        if let Some(p) = &self.policy {
            report.apply_policy(&p.rules);
        }
        let out = &self.out;
        let mut files: Vec<(Format, PathBuf)> = out
            .report
            .iter()
            .map(|p| (Format::Json, p.clone()))
            .collect();
        for spec in &out.outputs {
            files.push(output::parse_output(spec)?);
        }
        let key = self.sign_key(&files)?;
        let color = out.format == Format::Text && output::color_stdout();
        print!("{}", rendered(&report, out.format, color, key.as_ref()));
        for (format, path) in files {
            let text = rendered(&report, format, false, key.as_ref());
            output::write_atomic(&path, text.as_bytes())?;
        }
        Ok(ExitCode::from(report.exit_code() as u8))
    }
}

impl Gate {
    /// `--sign-key`, read; `Err` when it cannot be, or when no in-toto attestation is asked for.
    fn sign_key(&self, files: &[(Format, PathBuf)]) -> Result<Option<SignKey>, Fatal> {
        let Some(path) = &self.out.sign_key else {
            return Ok(None);
        };
        let attests =
            self.out.format == Format::Intoto || files.iter().any(|(f, _)| *f == Format::Intoto);
        if !attests {
            return Err(fatal(
                "--sign-key signs the in-toto attestation; ask for one with --format intoto or --output FILE.intoto.json",
            ));
        }
        SignKey::load(path).map(Some)
    }
}

/// A report rendered in a format; the in-toto statement wrapped in a signed DSSE envelope when
/// there is a key.
fn rendered(report: &Report, format: Format, color: bool, key: Option<&SignKey>) -> String {
    let text = output::render(report, format, color);
    match key {
        Some(k) if format == Format::Intoto => intoto::envelope(&text, k),
        _ => text,
    }
}

/// `verify`: a bundle, or another tool's result files (named with `--from`, or detected when the
/// path is not a bundle).
pub fn verify(
    gate: &Gate,
    paths: &[PathBuf],
    from: Option<import::Format>,
    fetch: &download::FetchArgs,
) -> Result<ExitCode, Fatal> {
    let paths = download::local_paths(paths, fetch)?;
    gate.emit(verify::run(&Subject::open(&paths, from)?, gate.fail_on())?)
}

/// `import`: writes the bundle and prints the report of its checks.
pub fn import(
    gate: &Gate,
    from: Option<import::Format>,
    files: &[PathBuf],
    out: &Path,
) -> Result<ExitCode, Fatal> {
    let format = match Subject::open(files, from)? {
        Subject::Other(o) if o.imported.is_none() => o.format,
        s => {
            return Err(fatal(format!(
                "{}: {}; import reads another tool's result files (verify or audit it as it is)",
                input::shown_path(&files[0]),
                s.kind()
            )))
        }
    };
    let (format, imp) = import::run(Some(format), files, out)?;
    eprintln!(
        "rigaudit: imported {} files into {}",
        format.name(),
        input::shown_path(out)
    );
    let id = out.display().to_string();
    gate.emit(import::report("import", &id, &imp, gate.fail_on()))
}

/// `diff`: two bundles, or two runs of another tool, with the policy's tolerances.
pub fn diff(
    gate: &Gate,
    mut args: diff::Args,
    fetch: &download::FetchArgs,
) -> Result<ExitCode, Fatal> {
    let mut both = download::local_paths(&[args.a.clone(), args.b.clone()], fetch)?;
    if let (Some(b), Some(a)) = (both.pop(), both.pop()) {
        (args.a, args.b) = (a, b);
    }
    if let Some(p) = &gate.policy {
        p.tune_diff(&mut args);
    }
    gate.emit(diff::run(&args, gate.fail_on())?)
}

/// `replay`, with the policy's tolerances and boxes.
pub fn replay(gate: &Gate, bundle: &Path, mut args: replay::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_replay(&mut args);
        p.tune_boxes(&mut args.boxes.ssh);
    }
    let r = replay::run(bundle, &args)?;
    eprintln!(
        "rigaudit: replayed bundle written to {}",
        input::shown_path(&r.bundle)
    );
    gate.emit(Report::new("replay", &r.id, gate.fail_on(), r.found))
}

/// `rehash`, with the policy's boxes.
pub fn rehash(gate: &Gate, mut args: rehash::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_boxes(&mut args.ssh);
    }
    gate.emit(rehash::run(&args, gate.fail_on())?)
}

/// `audit`: verify, rehash, replay (unless `--no-replay`), with the policy's tolerances and boxes.
pub fn audit(
    gate: &Gate,
    bundle: &Path,
    mut artifacts: audit::Artifacts,
    mut replay: Option<replay::Args>,
    fetch: &download::FetchArgs,
) -> Result<ExitCode, Fatal> {
    let bundle = &download::local_path(bundle, fetch)?;
    if let Some(p) = &gate.policy {
        p.tune_boxes(&mut artifacts.ssh);
        if let Some(a) = replay.as_mut() {
            p.tune_replay(a);
            p.tune_boxes(&mut a.boxes.ssh);
        }
    }
    let subject = Subject::open(&[bundle.to_path_buf()], None)?;
    let fail_on = gate.fail_on();
    gate.emit(audit::run(
        subject,
        bundle,
        artifacts,
        replay.as_ref(),
        fail_on,
    )?)
}

/// What `measure` says at its end: where the bundle is; exit 1 when a step got no answer, 2 when
/// none did or the measurement stopped early (with what was measured kept in the bundle).
pub fn measured(m: &measure::Measured) -> Result<ExitCode, Fatal> {
    if let Some(why) = &m.stopped {
        return Err(fatal(format!(
            "the measurement stopped before its end: {why}; what it measured is in {}",
            m.dir.display()
        )));
    }
    if m.unanswered.is_empty() {
        println!("wrote {}", m.dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "rigaudit: {} got no answer: {}; what was measured is in {}",
        if m.none_answered {
            "every step"
        } else {
            "a step"
        },
        m.unanswered.join(", "),
        m.dir.display()
    );
    Ok(ExitCode::from(if m.none_answered { 2 } else { 1 }))
}
