//! The command line: every command and option as clap types, their docs the help text. `main`
//! parses them and hands them on; nothing here runs anything.

use crate::output::Format;
use crate::{diff, download, import, measure, rehash, replay};
use clap::{Parser, Subcommand, ValueEnum};
use rigaudit_audit::Severity;
use std::path::PathBuf;

/// Audits published LLM-inference benchmark results.
#[derive(Parser)]
#[command(name = "rigaudit", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The finding severity that fails a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
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
    pub fn severity(self) -> Option<Severity> {
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
pub struct ReportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Lowest severity that makes the run fail (exit 1).
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
    /// Also write the JSON report to this file (atomically).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write the report to FILE, in the format its name says (.json, .sarif, .md, .xml for
    /// JUnit, .intoto.json for an attestation, .html, .txt) or FORMAT:FILE; repeatable, each written
    /// atomically from the same run.
    #[arg(long = "output", value_name = "[FORMAT:]FILE")]
    pub outputs: Vec<String>,
    /// A gate's policy (TOML): per check id a severity or `ignore` with a reason the report
    /// repeats, the fail level, replay's and diff's tolerances, which setup subjects fail a diff
    /// (see `audit/src/policy.rs`).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Sign the in-toto attestation (`--format intoto`, `--output FILE.intoto.json`) with this
    /// ed25519 key (PKCS#8 PEM, or a raw 32-byte seed): it is then a DSSE envelope.
    #[arg(long, value_name = "KEY")]
    pub sign_key: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Verify a published bundle: schemas, recomputed figures, invalid steps, setup consistency.
    Verify {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar); or another
        /// tool's result file (or folder of files), its format detected or named with --from; or
        /// the http(s) URL of a packed bundle or a result file (fetched into the cache).
        bundle: PathBuf,
        /// More result files of the same run (with --from, or detected).
        more: Vec<PathBuf>,
        /// The format of another tool's result files (see `rigaudit import`).
        #[arg(long, value_enum)]
        from: Option<import::Format>,
        #[command(flatten)]
        fetch: download::FetchArgs,
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
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar), or the http(s)
        /// URL of a packed bundle (fetched into the cache).
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
        fetch: download::FetchArgs,
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
        fetch: download::FetchArgs,
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

impl Command {
    /// The report options of a command that builds a report.
    pub fn report_args(&self) -> Option<&ReportArgs> {
        match self {
            Command::Verify { out, .. }
            | Command::Audit { out, .. }
            | Command::Diff { out, .. }
            | Command::Replay { out, .. }
            | Command::Rehash { out, .. } => Some(out),
            Command::Import { report, .. } => Some(report),
            _ => None,
        }
    }
}
