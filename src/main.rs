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
mod digest;
mod fatal;
mod fetch;
mod host;
mod measure;
mod output;
mod rehash;
mod replay;
mod schemas;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use fatal::{fatal, Fatal};
use output::Format;
use rigaudit_audit::{Report, Severity};
use std::path::PathBuf;
use std::process::ExitCode;

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
}

#[derive(Subcommand)]
enum Command {
    /// Verify a published bundle: schemas, recomputed figures, invalid steps, setup consistency.
    Verify {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
        bundle: PathBuf,
        #[command(flatten)]
        out: ReportArgs,
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
    /// Print the JSON Schema of a file kind (bundle, card, speed-contract, speed-result,
    /// quality-contract, quality-summary, quality-answers, fit-result, report).
    Schema {
        /// The kind.
        kind: String,
    },
}

/// Prints a report in its format, writes the JSON report when asked, and maps the verdict to
/// the exit code.
fn emit(report: &Report, out: &ReportArgs) -> Result<ExitCode, Fatal> {
    let color = out.format == Format::Text && output::color_stdout();
    print!("{}", output::render(report, out.format, color));
    if let Some(path) = &out.report {
        output::write_atomic(path, output::json::render(report).as_bytes())?;
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
        eprintln!("rigaudit: {e}");
        ExitCode::from(2)
    })
}

/// Runs one command.
fn run(cli: Cli) -> Result<ExitCode, Fatal> {
    match cli.command {
        Command::Verify { bundle, out } => {
            emit(&verify::run(&bundle, out.fail_on.severity())?, &out)
        }
        Command::Replay { bundle, args, out } => {
            let r = replay::run(&bundle, &args)?;
            eprintln!(
                "rigaudit: replayed bundle written to {}",
                r.bundle.display()
            );
            emit(
                &Report::new("replay", &r.id, out.fail_on.severity(), r.found),
                &out,
            )
        }
        Command::Audit {
            bundle,
            roots,
            files,
            no_replay,
            replay,
            out,
        } => {
            let artifacts = audit::Artifacts { roots, files };
            let replay = (!no_replay).then_some(&replay);
            let r = audit::run(&bundle, artifacts, replay, out.fail_on.severity())?;
            emit(&r, &out)
        }
        Command::Measure(a) => measured(&measure::run(&a)?),
        Command::Rehash { args, out } => emit(&rehash::run(&args, out.fail_on.severity())?, &out),
        Command::NcclVersion { path } => Ok(ExitCode::from(rehash::nccl::child_main(&path) as u8)),
        Command::Host => {
            println!(
                "{}",
                serde_json::to_string_pretty(&host::hardware()).unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Checks { format } => {
            print!("{}", output::catalogue(format));
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { kind } => {
            let text = match kind.as_str() {
                "bundle" => Some(schemas::BUNDLE),
                "report" => Some(schemas::REPORT),
                k => serde_json::from_value(serde_json::Value::String(k.into()))
                    .ok()
                    .and_then(schemas::text),
            };
            print!(
                "{}",
                text.ok_or_else(|| fatal(format!("no schema for '{kind}'")))?
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `measure` says at its end: where the bundle is, or why it stopped early (exit 2, with what
/// was measured kept in the bundle).
fn measured(m: &measure::Measured) -> Result<ExitCode, Fatal> {
    match &m.stopped {
        None => {
            println!("wrote {}", m.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Some(why) => Err(fatal(format!(
            "the measurement stopped before its end: {why}; what it measured is in {}",
            m.dir.display()
        ))),
    }
}
