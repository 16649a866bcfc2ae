//! rigaudit: audits published LLM-inference benchmark results.
//!
//! Exit codes: 0 when no finding reaches `--fail-on`, 1 when one does, 2 when the tool could not
//! do its job (bad arguments, unreadable bundle, nothing checked).
//!
//! [`main`] parses the arguments and hands them to [`run`], which dispatches each command and
//! returns its exit code or the [`Fatal`] error that stopped it; `main` is the one place such an
//! error is printed. Each reporting command builds its one report with `Report::new` from the
//! `Findings` its stages return (`verify.rs`, `rehash/`, `replay/`, `audit.rs`).

mod answers;
mod audit;
mod bundle;
mod diff;
mod digest;
mod fatal;
mod fetch;
#[cfg(test)]
mod fuzz;
mod host;
mod import;
mod input;
#[cfg(test)]
mod layers;
mod measure;
mod output;
mod rehash;
mod replay;
mod schemas;
mod ssh;
mod subject;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use fatal::{fatal, Fatal};
use output::Format;
use rigaudit_audit::{Report, Severity};
use std::path::PathBuf;
use std::process::ExitCode;
use subject::Subject;

/// Audits published LLM-inference benchmark results.
#[derive(Parser)]
#[command(name = "rigaudit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The finding severity that fails a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    /// Fail on errors (default).
    Error,
    /// Fail on warnings and errors.
    Warning,
    /// Fail on any finding.
    Info,
    /// Never fail on findings (exit 2 still means the tool could not do its job).
    Never,
}

impl FailOn {
    fn severity(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// Options every reporting command shares.
#[derive(clap::Args)]
struct ReportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Lowest severity that makes the run fail (exit 1).
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// Also write the JSON report to this file (atomically).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Also write the report to FILE, in the format its name says (.json, .sarif, .md, .xml for
    /// JUnit, .intoto.json for an attestation, .html, .txt) or FORMAT:FILE; repeatable, each written
    /// atomically from the same run.
    #[arg(long = "output", value_name = "[FORMAT:]FILE")]
    outputs: Vec<String>,
    /// A gate's policy (TOML): per check id a severity or `ignore` with a reason the report
    /// repeats, the fail level, replay's and diff's tolerances, which setup subjects fail a diff
    /// (see `audit/src/policy.rs`).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

/// Reads `--policy`: a TOML file of at most a few MiB that follows `schemas/policy.schema.json`,
/// whose check ids are in the catalogue and whose boxes and ssh options are well formed.
fn load_policy(out: &ReportArgs) -> Result<Option<rigaudit_audit::policy::Policy>, Fatal> {
    let Some(path) = &out.policy else {
        return Ok(None);
    };
    let text = input::read_text(path, input::CONTRACT_MAX, "policy")?;
    let value: serde_json::Value = toml::from_str(&text)
        .map_err(|e| fatal(format!("{}: not a policy: {e}", path.display())))?;
    let errs = schemas::errors(schemas::policy(), &value, 10);
    if !errs.is_empty() {
        let list: Vec<String> = errs.iter().map(|(p, m)| format!("at {p}: {m}")).collect();
        return Err(fatal(format!(
            "{}: does not follow the policy schema (rigaudit schema policy): {}",
            path.display(),
            list.join("; ")
        )));
    }
    let mut p: rigaudit_audit::policy::Policy = serde_json::from_value(value)
        .map_err(|e| fatal(format!("{}: not a policy: {e}", path.display())))?;
    let unknown = p.unknown_checks();
    if !unknown.is_empty() {
        return Err(fatal(format!(
            "{}: no such check in the catalogue: {} (rigaudit checks lists them)",
            path.display(),
            unknown.join(", ")
        )));
    }
    p.file = path.display().to_string();
    ssh::boxmap::PolicyBoxes::from_policy(&p)?;
    Ok(Some(p))
}

/// The policy's boxes and ssh options under the command line's.
fn tune_boxes(ssh: &mut ssh::SshArgs, p: &rigaudit_audit::policy::Policy) -> Result<(), Fatal> {
    ssh.policy = Some(ssh::boxmap::PolicyBoxes::from_policy(p)?);
    Ok(())
}

/// The policy's tolerances over replay's options.
fn tune_replay(a: &mut replay::Args, p: &rigaudit_audit::policy::Policy) {
    a.rel_floor = p.replay.rel_floor.unwrap_or(a.rel_floor);
    a.alpha = p.replay.alpha.unwrap_or(a.alpha);
    a.max_floor = p.replay.max_floor.unwrap_or(a.max_floor);
}

/// The policy's tolerances and setup subjects over diff's options.
fn tune_diff(a: &mut diff::Args, p: &rigaudit_audit::policy::Policy) {
    a.rel_floor = p.replay.rel_floor.unwrap_or(a.rel_floor);
    a.alpha = p.replay.alpha.unwrap_or(a.alpha);
    a.max_floor = p.replay.max_floor.unwrap_or(a.max_floor);
    if let Some(s) = &p.diff.setup_fails_on {
        let names: Vec<&str> = s.iter().map(|x| x.name()).collect();
        a.setup_fails_on = Some(if names.is_empty() {
            "none".into()
        } else {
            names.join(",")
        });
    }
}

#[derive(Subcommand)]
enum Command {
    /// Verify a published bundle: schemas, recomputed figures, invalid steps, setup consistency.
    Verify {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar); or another
        /// tool's result file (or folder of files), its format detected or named with --from.
        bundle: PathBuf,
        /// More result files of the same run (with --from, or detected).
        more: Vec<PathBuf>,
        /// The format of another tool's result files (see `rigaudit import`).
        #[arg(long, value_enum)]
        from: Option<import::Format>,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Import another tool's result files (AIPerf, GuideLLM, lm-eval, MLPerf LoadGen, llama-bench,
    /// llama-server, vLLM bench serve) as a bundle: the sources copied with their sha256, the
    /// importer's record, notes of what was taken and what could not; prints the checks' report.
    Import {
        /// The format (detected from the content when not given).
        #[arg(long, value_enum)]
        from: Option<import::Format>,
        /// The tool's result files, or a folder holding them.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The bundle folder to write (must not exist, or be empty).
        #[arg(long, value_name = "BUNDLE")]
        out: PathBuf,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// The main job: verify a bundle, rehash what the given roots hold, and replay the recorded
    /// command (the bundled engine by default) to see whether the page reproduces. One report.
    Audit {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
        bundle: PathBuf,
        /// Folders to rehash the card's artifacts from (see `rehash --root`). Repeatable.
        #[arg(long = "root", value_name = "[BOX=]DIR")]
        roots: Vec<String>,
        /// Artifacts to rehash by name (see `rehash --file`). Repeatable.
        #[arg(long = "file", value_name = "NAME[@BOX]=PATH")]
        files: Vec<String>,
        /// Verify (and rehash) only; do not launch anything.
        #[arg(long)]
        no_replay: bool,
        #[command(flatten)]
        replay: replay::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Compare two bundles of one setup: the setup differences first, then every figure with the
    /// statistics replay uses (exit 1 when the setup differs in what matters or a figure moved).
    Diff {
        #[command(flatten)]
        args: diff::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Re-launch the recorded command, measure again with the bundle's contracts, and say per
    /// value whether the page reproduces; writes the replayed bundle.
    Replay {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
        bundle: PathBuf,
        #[command(flatten)]
        args: replay::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Measure a running OpenAI-compatible server with a speed contract; writes a bundle.
    Measure(measure::Args),
    /// Hash what the card records (engine package, the binary inside it, NCCL per box, checkpoint
    /// folders, the bundle's raw files), ask NCCL for its version, and compare with the card.
    Rehash {
        #[command(flatten)]
        args: rehash::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Loads one NCCL library and prints its version as JSON (rehash runs this in a child process).
    #[command(name = "__nccl-version", hide = true)]
    NcclVersion {
        /// The library file.
        path: PathBuf,
    },
    /// Prints this machine as a card's `hardware` object (what `measure --card` records).
    #[command(name = "__host", hide = true)]
    Host,
    /// List every check with its id, severity and what it finds.
    Checks {
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to standard output: `rigaudit man > rigaudit.1`.
    Man,
    /// Print the JSON Schema of a file kind (bundle, card, speed-contract, speed-result,
    /// quality-contract, quality-summary, quality-answers, fit-result, report, policy).
    Schema {
        /// The kind.
        kind: String,
    },
}

/// Applies the policy, prints the report in its format, writes every `--report` and `--output`
/// file (each atomically, from the same report), and maps the verdict to the exit code.
fn emit(mut report: Report, out: &ReportArgs) -> Result<ExitCode, Fatal> {
    report.rules_version = rigaudit_audit::catalogue::version();
    if let Some(p) = load_policy(out)? {
        report.apply_policy(&p);
    }
    let mut files: Vec<(Format, PathBuf)> = out
        .report
        .iter()
        .map(|p| (Format::Json, p.clone()))
        .collect();
    for spec in &out.outputs {
        files.push(output::parse_output(spec)?);
    }
    let color = out.format == Format::Text && output::color_stdout();
    print!("{}", output::render(&report, out.format, color));
    for (format, path) in files {
        output::write_atomic(&path, output::render(&report, format, false).as_bytes())?;
    }
    Ok(ExitCode::from(report.exit_code() as u8))
}

fn main() -> ExitCode {
    // `rigaudit __engine ARGS...` is the bundled engine (`rigaudit-engine ARGS...`): replay launches
    // it as a child process of this very executable, so the engine it runs is the one built with
    // it. Dispatched before clap so that the engine's own options pass through untouched.
    let mut args = std::env::args_os();
    if std::env::args_os().nth(1).is_some_and(|a| a == "__engine") {
        args.next();
        args.next();
        return rigaudit_engine::cli::main_from(
            std::iter::once(std::ffi::OsString::from("rigaudit-engine")).chain(args),
        );
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The one error sink: the tool could not do its job.
    run(cli).unwrap_or_else(|e| {
        eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
        ExitCode::from(2)
    })
}

/// Runs one command.
fn run(cli: Cli) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Verify {
            bundle,
            more,
            from,
            out,
        } => emit(
            verify_any(bundle, more, from, out.fail_on.severity())?,
            &out,
        ),
        Command::Import {
            from,
            files,
            out,
            report,
        } => import_report(from, &files, &out, &report),
        Command::Diff { args, out } => diff_report(args, &out),
        Command::Replay { bundle, args, out } => replay_report(&bundle, args, &out),
        Command::Audit {
            bundle,
            roots,
            files,
            no_replay,
            replay,
            out,
        } => {
            // A --root BOX=DIR of a box mapped with --box is read on that box (replay's ssh options).
            let ssh = replay.boxes.ssh.clone();
            let artifacts = audit::Artifacts { roots, files, ssh };
            audit_report(&bundle, artifacts, (!no_replay).then_some(replay), &out)
        }
        Command::Measure(a) => measured(&measure::run(&a)?),
        Command::Rehash { args, out } => rehash_report(args, &out),
        Command::NcclVersion { path } => Ok(ExitCode::from(rehash::nccl::child_main(&path) as u8)),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "rigaudit", &mut script);
            printed(&script)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut page)
                .map_err(|e| fatal(format!("man page: {e}")))?;
            printed(&page)
        }
        Command::Host => printed(
            serde_json::to_string_pretty(&host::hardware())
                .unwrap_or_default()
                .as_bytes(),
        ),
        Command::Checks { format } => {
            print!("{}", output::catalogue(format));
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { kind } => printed(schema_text(&kind)?.as_bytes()),
    }
}

/// `diff`: two bundles, or two runs of another tool, with the policy's tolerances.
fn diff_report(mut args: diff::Args, out: &ReportArgs) -> Result<ExitCode, Fatal> {
    if let Some(p) = load_policy(out)? {
        tune_diff(&mut args, &p);
    }
    emit(diff::run(&args, out.fail_on.severity())?, out)
}

/// `replay`, with the policy's tolerances.
fn replay_report(
    bundle: &std::path::Path,
    mut args: replay::Args,
    out: &ReportArgs,
) -> Result<ExitCode, Fatal> {
    if let Some(p) = load_policy(out)? {
        tune_replay(&mut args, &p);
        tune_boxes(&mut args.boxes.ssh, &p)?;
    }
    let r = replay::run(bundle, &args)?;
    eprintln!(
        "rigaudit: replayed bundle written to {}",
        input::shown_path(&r.bundle)
    );
    emit(
        Report::new("replay", &r.id, out.fail_on.severity(), r.found),
        out,
    )
}

/// `rehash`, with the policy's boxes.
fn rehash_report(mut args: rehash::Args, out: &ReportArgs) -> Result<ExitCode, Fatal> {
    if let Some(p) = load_policy(out)? {
        tune_boxes(&mut args.ssh, &p)?;
    }
    emit(rehash::run(&args, out.fail_on.severity())?, out)
}

/// `audit`: verify, rehash, replay (unless `--no-replay`), with the policy's tolerances.
fn audit_report(
    bundle: &std::path::Path,
    artifacts: audit::Artifacts,
    replay: Option<replay::Args>,
    out: &ReportArgs,
) -> Result<ExitCode, Fatal> {
    let (mut artifacts, mut replay) = (artifacts, replay);
    if let Some(p) = load_policy(out)? {
        tune_boxes(&mut artifacts.ssh, &p)?;
        if let Some(a) = replay.as_mut() {
            tune_replay(a, &p);
            tune_boxes(&mut a.boxes.ssh, &p)?;
        }
    }
    let subject = Subject::open(&[bundle.to_path_buf()], None)?;
    let r = audit::run(
        subject,
        bundle,
        artifacts,
        replay.as_ref(),
        out.fail_on.severity(),
    )?;
    emit(r, out)
}

/// The JSON Schema of a file kind (`rigaudit schema KIND`).
fn schema_text(kind: &str) -> Result<&'static str, Fatal> {
    let text = match kind {
        "bundle" => Some(schemas::BUNDLE),
        "report" => Some(schemas::REPORT),
        "policy" => Some(schemas::POLICY),
        k => serde_json::from_value(serde_json::Value::String(k.into()))
            .ok()
            .and_then(schemas::text),
    };
    text.ok_or_else(|| fatal(format!("no schema for '{kind}'")))
}

/// Writes bytes to standard output; a closed pipe (`| head`) is not an error worth a panic.
fn printed(bytes: &[u8]) -> Result<ExitCode, Fatal> {
    let mut out = std::io::stdout();
    let _ = std::io::Write::write_all(&mut out, bytes);
    if !bytes.ends_with(b"\n") {
        let _ = std::io::Write::write_all(&mut out, b"\n");
    }
    Ok(ExitCode::SUCCESS)
}

/// What `measure` says at its end: where the bundle is; exit 1 when a step got no answer, 2 when
/// none did or the measurement stopped early (with what was measured kept in the bundle).
fn measured(m: &measure::Measured) -> Result<ExitCode, Fatal> {
    if let Some(why) = &m.stopped {
        return Err(fatal(format!(
            "the measurement stopped before its end: {why}; what it measured is in {}",
            m.dir.display()
        )));
    }
    match unanswered_steps(&m.dir) {
        Some((steps, all)) if !steps.is_empty() => {
            eprintln!(
                "rigaudit: {} got no answer: {}; what was measured is in {}",
                if all { "every step" } else { "a step" },
                steps.join(", "),
                m.dir.display()
            );
            Ok(ExitCode::from(if all { 2 } else { 1 }))
        }
        _ => {
            println!("wrote {}", m.dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `rigaudit import`: writes the bundle and prints the report of its checks.
fn import_report(
    from: Option<import::Format>,
    files: &[PathBuf],
    out: &std::path::Path,
    report: &ReportArgs,
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
    emit(
        import::report("import", &id, &imp, report.fail_on.severity()),
        report,
    )
}

/// `verify`: a bundle, or another tool's result files (named with `--from`, or detected when the
/// path is not a bundle).
fn verify_any(
    bundle: PathBuf,
    more: Vec<PathBuf>,
    from: Option<import::Format>,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let mut paths = vec![bundle];
    paths.extend(more);
    verify::run(&Subject::open(&paths, from)?, fail_on)
}

/// The speed steps of a written measurement in which no request got an answer (HTTP 2xx with no
/// error), and whether that is every step; `None` when the result cannot be read.
fn unanswered_steps(dir: &std::path::Path) -> Option<(Vec<String>, bool)> {
    let bytes = input::read_bounded(
        &dir.join("speed/speed-result.json"),
        input::RECORD_MAX,
        "speed result",
    )
    .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let mut steps: Vec<(String, bool)> = Vec::new();
    for r in v.get("requests")?.as_array()? {
        let step = r.get("step").and_then(|s| s.as_str()).unwrap_or("?");
        let status = r.get("status").and_then(|s| s.as_u64()).unwrap_or(0);
        let ok = (200..300).contains(&status) && r.get("error").is_none_or(|e| e.is_null());
        match steps.iter_mut().find(|(s, _)| s == step) {
            Some((_, any)) => *any |= ok,
            None => steps.push((step.to_string(), ok)),
        }
    }
    let none: Vec<String> = steps
        .iter()
        .filter(|(_, any)| !any)
        .map(|(s, _)| s.clone())
        .collect();
    let all = !steps.is_empty() && none.len() == steps.len();
    Some((none, all))
}
