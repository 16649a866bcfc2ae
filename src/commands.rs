//! The reporting commands' ends: each opens its subject ([`crate::subject`]) or reads its input,
//! lets the policy (read once per run) tune its options, runs its stages and hands the one report
//! to [`Gate::emit`]; and what `measure` says at its end.

use crate::cli::ReportArgs;
use crate::fatal::{fatal, Fatal};
use crate::policy::Loaded;
use crate::subject::{Other, Subject};
use crate::{
    ab, audit, diff, download, import, input, loaded, measure, noise, output, rehash, replay, tree,
    verify,
};
use output::intoto::{self, SignKey};
use output::Format;
use rigaudit_audit::decide::DecisionRule;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How a run shows itself: the global `--color`, `--verbose` and `--quiet`.
#[derive(Debug, Clone, Copy)]
pub struct Show {
    /// When to colour the text report on standard output.
    pub color: output::ColorWhen,
    /// Every row of every table in a text report.
    pub verbose: bool,
    /// No status lines on standard error.
    pub quiet: bool,
}

/// Where a report goes: the report options and the policy, read once for the run, and how it is
/// shown.
pub struct Gate {
    /// `--format`, `--fail-on`, `--report`, `--output`.
    pub out: ReportArgs,
    /// `--policy`, read and checked.
    pub policy: Option<Loaded>,
    /// `--color`, `--verbose`, `--quiet`.
    pub show: Show,
}

impl Gate {
    /// The severity that fails the run.
    fn fail_on(&self) -> Option<Severity> {
        self.out.fail_on.severity()
    }

    /// A status line on standard error (`rigaudit: ...`), unless `--quiet`.
    fn say(&self, line: std::fmt::Arguments) {
        if !self.show.quiet {
            crate::progress::say(format_args!("rigaudit: {line}"));
        }
    }

    /// Applies the policy, prints the report in its format, writes every `--report` and
    /// `--output` file (each atomically, from the same report), and maps the verdict to the exit
    /// code. SARIF and annotations show the findings' files as in the repository holding `base`
    /// (the subject's folder, when it has one on disk); annotations on standard output also add
    /// the Markdown report to the job's summary (`$GITHUB_STEP_SUMMARY`) when there is one.
    pub fn emit(&self, report: Report, base: Option<&Path>) -> Result<ExitCode, Fatal> {
        let report = self.finish(report);
        let out = &self.out;
        let places = output::Places::new(base, out.repo_root.as_deref());
        let mut files = output::report_files(out.report.as_deref());
        for spec in &out.outputs {
            files.push(output::parse_output(spec)?);
        }
        let key = self.sign_key(&files)?;
        let style = output::Style {
            color: out.format == Format::Text && self.show.color.on_stdout(),
            verbose: self.show.verbose,
        };
        print!(
            "{}",
            rendered(&report, out.format, (style, &places), key.as_ref())
        );
        let plain = output::Style {
            color: false,
            ..style
        };
        for (format, path) in files {
            let text = rendered(&report, format, (plain, &places), key.as_ref());
            output::write_atomic(&path, text.as_bytes())?;
            // What ran, as a statement of its own beside the test result (signed alike).
            let loaded = (format == Format::Intoto)
                .then(|| intoto::render_loaded(&report))
                .flatten();
            if let Some(statement) = loaded {
                let text = match key.as_ref() {
                    Some(k) => intoto::envelope(&statement, k),
                    None => statement,
                };
                output::write_atomic(&intoto::loaded_path(&path), text.as_bytes())?;
            }
        }
        if out.format == Format::Github {
            if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY") {
                let markdown = output::render(&report, Format::Markdown, plain, &places);
                output::append(Path::new(&summary), markdown.as_bytes())?;
            }
        }
        Ok(ExitCode::from(report.exit_code() as u8))
    }

    /// The report as it leaves the tool: the rules' version set, the policy applied.
    fn finish(&self, mut report: Report) -> Report {
        report.rules_version = rigaudit_audit::catalogue::version();
        if let Some(p) = &self.policy {
            report.apply_policy(&p.rules);
        }
        report
    }
}

/// The folder on disk a subject's findings name their files from: a bundle folder the user gave
/// (a packed one is unpacked into a temporary folder gone by the time it is shown), or the folder
/// of another tool's files.
fn base_of(subject: &Subject, paths: &[PathBuf]) -> Option<PathBuf> {
    let first = paths.first()?;
    match subject {
        Subject::Bundle(_)
        | Subject::Other(Other {
            imported: Some(_), ..
        }) => first.is_dir().then(|| first.clone()),
        Subject::Other(_) if first.is_dir() => Some(first.clone()),
        Subject::Other(_) => first.parent().map(Path::to_path_buf),
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
fn rendered(
    report: &Report,
    format: Format,
    (style, places): (output::Style, &output::Places),
    key: Option<&SignKey>,
) -> String {
    let text = output::render(report, format, style, places);
    match key {
        Some(k) if format == Format::Intoto => intoto::envelope(&text, k),
        _ => text,
    }
}

/// `verify`: a bundle, or another tool's result files (named with `--from`, or detected when the
/// path is not a bundle), or a folder of many runs (each verified, one table: [`tree`]).
pub fn verify(
    gate: &Gate,
    paths: &[PathBuf],
    from: Option<import::Format>,
    fetch: &download::FetchArgs,
) -> Result<ExitCode, Fatal> {
    let paths = download::local_paths(paths, fetch)?;
    if let [dir] = paths.as_slice() {
        if tree::is_tree(dir) {
            let t = tree::Tree::new(dir.clone(), from);
            let shown = tree::Options {
                format: gate.out.format,
                fail_on: gate.fail_on(),
                report: gate.out.report.clone(),
                outputs: gate.out.outputs.clone(),
                quiet: gate.show.quiet,
            };
            return tree::verify(&t, &shown, &|r| gate.finish(r));
        }
    }
    let subject = Subject::open(&paths, from)?;
    let base = base_of(&subject, &paths);
    gate.emit(verify::run(&subject, gate.fail_on())?, base.as_deref())
}

/// `Err` when the one path given is a folder of many runs: `command` takes one run.
fn one_run_only(paths: &[PathBuf], command: &str) -> Result<(), Fatal> {
    match paths {
        [dir] if tree::is_tree(dir) => Err(fatal(format!(
            "{}: a folder of many runs; {command} takes one run (a bundle, or one run's files): `rigaudit verify` checks each run of a folder",
            input::shown_path(dir)
        ))),
        _ => Ok(()),
    }
}

/// `import`: writes the bundle and prints the report of its checks.
pub fn import(
    gate: &Gate,
    from: Option<import::Format>,
    files: &[PathBuf],
    out: &Path,
) -> Result<ExitCode, Fatal> {
    one_run_only(files, "import")?;
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
    gate.say(format_args!(
        "imported {} files into {}",
        format.name(),
        input::shown_path(out)
    ));
    let id = out.display().to_string();
    gate.emit(import::report("import", &id, &imp, gate.fail_on()), None)
}

/// The report with the decision rule its comparison rows were judged by, when it has rows.
fn stating(mut r: Report, rule: &DecisionRule) -> Report {
    if !r.comparisons.is_empty() {
        r.decision_rule = rule.describe(r.command == "diff");
    }
    r
}

/// `diff`: two bundles, or two runs of another tool, with the policy's decision rule.
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
    gate.emit(stating(diff::run(&args, gate.fail_on())?, &args.rule), None)
}

/// `ab`, with the policy's decision rule (its multiplicity control) and boxes.
pub fn ab(gate: &Gate, mut args: ab::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_ab(&mut args);
        p.tune_boxes(&mut args.boxes.ssh);
    }
    gate.emit(ab::run(&args, gate.fail_on())?, None)
}

/// `noise`: one bundle's figures told from its own runs, with the policy's decision rule.
pub fn noise(gate: &Gate, mut args: noise::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_noise(&mut args);
    }
    let base = args.bundle.is_dir().then(|| args.bundle.clone());
    gate.emit(noise::run(&args, gate.fail_on())?, base.as_deref())
}

/// `replay`, with the policy's decision rule and boxes.
pub fn replay(gate: &Gate, bundle: &Path, mut args: replay::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_replay(&mut args);
        p.tune_boxes(&mut args.boxes.ssh);
    }
    let r = replay::run(bundle, &args)?;
    gate.say(format_args!(
        "replayed bundle written to {}",
        input::shown_path(&r.bundle)
    ));
    let report = Report::new("replay", &r.id, gate.fail_on(), r.found);
    gate.emit(stating(report, &args.rule), None)
}

/// `rehash`, with the policy's boxes.
pub fn rehash(gate: &Gate, mut args: rehash::Args) -> Result<ExitCode, Fatal> {
    if let Some(p) = &gate.policy {
        p.tune_boxes(&mut args.ssh);
    }
    let running = loaded::running_targets(&args.running)?;
    // With --running and no artifact named, the card is judged against what the servers mapped
    // alone (no search of this machine's files, whose absence would leave the report incomplete).
    let only_running = !running.is_empty() && args.roots.is_empty() && args.files.is_empty();
    let (id, mut found, (card_file, card)) = if only_running {
        let (id, card) = rehash::bundle_card(&args.bundle)?;
        (id, rigaudit_audit::Findings::default(), card)
    } else {
        rehash::stage_with_card(&args)?
    };
    if !running.is_empty() {
        let targets = running
            .into_iter()
            .map(|(rank, pid)| loaded::Target {
                rank,
                box_name: replay::remote::box_or_rank(&card, rank),
                place: loaded::Place::Here(pid),
            })
            .collect();
        found.merge(loaded::running(&card, &card_file, targets));
    }
    gate.emit(Report::new("rehash", &id, gate.fail_on(), found), None)
}

/// `audit`: verify, rehash, replay (unless `--no-replay`), with the policy's decision rule and boxes.
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
    let paths = [bundle.to_path_buf()];
    one_run_only(&paths, "audit")?;
    let subject = Subject::open(&paths, None)?;
    let base = base_of(&subject, &paths);
    let fail_on = gate.fail_on();
    let rule = replay.as_ref().map(|a| a.rule).unwrap_or_default();
    let report = audit::run(subject, bundle, artifacts, replay.as_ref(), fail_on)?;
    gate.emit(stating(report, &rule), base.as_deref())
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
    crate::progress::say(format_args!(
        "rigaudit: {} got no answer: {}; what was measured is in {}",
        if m.none_answered {
            "every step"
        } else {
            "a step"
        },
        m.unanswered.join(", "),
        m.dir.display()
    ));
    Ok(ExitCode::from(if m.none_answered { 2 } else { 1 }))
}
