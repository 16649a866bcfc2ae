//! The command line: every command and option as clap types, their docs the help text. `main`
//! parses them and hands them on; nothing here runs anything.

use crate::output::{ColorWhen, Format};
use crate::{ab, diff, download, import, measure, noise, rehash, replay};
use clap::{Parser, Subcommand, ValueEnum};
use rigaudit_audit::Severity;
use std::path::PathBuf;

/// The exit codes of a command that prints a report, for its help.
macro_rules! report_exits {
    () => {
        "Exit codes:\n  0  PASS: no finding reaches --fail-on (with --fail-on never: PASS, not gated)\n  1  FAIL: a finding reaches --fail-on\n  2  the tool could not run: a usage error, or an input named on the command line that\n     cannot be read (a wrong path, a typo, not a bundle or a result file)\n  3  INCOMPLETE: not everything could be checked (the report says why and what to add)"
    };
}

/// A command's help after its options: `Examples:`, each line indented two spaces, a blank line,
/// then `$exits` (`report_exits` or `plain_exits`).
macro_rules! examples {
    ($exits:ident: $($line:literal),+ $(,)?) => {
        concat!("Examples:\n", $("  ", $line, "\n",)+ "\n", $exits!())
    };
}

/// The exit codes of a command that prints what was asked, for its help.
macro_rules! plain_exits {
    () => {
        "Exit codes:\n  0  done\n  2  the tool could not do its job (bad arguments, an unknown name)"
    };
}

/// Audits published LLM-inference benchmark results.
#[derive(Parser)]
#[command(
    name = "rigaudit",
    version,
    about,
    long_about = None,
    after_help = examples!(report_exits:
        "rigaudit verify ./bundle            check a published bundle folder",
        "rigaudit verify run/ --from aiperf  check another tool's result files",
        "rigaudit checks quality.cutoffs     explain one check",
    )
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// No progress bars and no status lines on standard error; the report is still printed.
    #[arg(
        long,
        short = 'q',
        global = true,
        conflicts_with = "verbose",
        help_heading = "Global options"
    )]
    pub quiet: bool,
    /// Every row of every table in a text report (the recomputed figures that match, too), and
    /// the output of the tools rigaudit runs for you (pip's, when replay fetches the model).
    #[arg(long, short = 'v', global = true, help_heading = "Global options")]
    pub verbose: bool,
    /// When to colour text: auto (a terminal, unless NO_COLOR is set or CLICOLOR_FORCE forces
    /// it), always or never.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        global = true,
        help_heading = "Global options"
    )]
    pub color: ColorWhen,
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
    /// Never fail on findings: the verdict says PASS, not gated, with the errors and warnings it
    /// counts (exit 3 still means incomplete, 2 that the tool could not run).
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
#[command(next_help_heading = "Report options")]
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
    /// (`rigaudit schema policy` prints its schema).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The repository root that SARIF and GitHub annotations give file paths from (default: the
    /// git work tree holding the bundle, found by walking up to the folder with `.git`).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
    /// Sign the in-toto attestation (`--format intoto`, `--output FILE.intoto.json`) with this
    /// ed25519 key (PKCS#8 PEM, or a raw 32-byte seed): it is then a DSSE envelope.
    #[arg(long, value_name = "KEY")]
    pub sign_key: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Verify a published bundle: schemas, recomputed figures, invalid steps, setup consistency.
    #[command(after_help = examples!(report_exits:
        "rigaudit verify ./bundle",
        "rigaudit verify page.tar.gz --format sarif > rigaudit.sarif",
        "rigaudit verify artifacts/run1 --from aiperf",
        "rigaudit verify ./bundle --output report.html --output report.md --fail-on warning",
    ))]
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
    #[command(after_help = examples!(report_exits:
        "rigaudit import --from aiperf artifacts/run1 --out run1-bundle",
        "rigaudit import results_2026.json samples_arith_2026.jsonl --out eval-bundle",
    ))]
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
    #[command(after_help = examples!(report_exits:
        "rigaudit audit ./bundle --root /models --root /opt/engines",
        "rigaudit audit ./bundle --no-replay --root atom=/mnt/atom --root pgx=/mnt/pgx",
    ))]
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
    #[command(after_help = examples!(report_exits:
        "rigaudit diff before/ after/",
        "rigaudit diff stock/ patched/ --format markdown > diff.md",
    ))]
    Diff {
        #[command(flatten)]
        args: diff::Args,
        #[command(flatten)]
        fetch: download::FetchArgs,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Measure two setups in one session, interleaved (ABBA quartets, one server at a time), and
    /// judge each figure by its paired change: unchanged, changed (better or worse) or
    /// inconclusive, stopping once every figure is decided or the budget is spent. Decisive where
    /// `diff` of two sessions is not: the machine's session-to-session speed cancels.
    #[command(after_help = examples!(report_exits:
        "rigaudit ab stock/ patched/",
        "rigaudit ab ./bundle --arg-b=--decode-delay-us=500 --budget 5m",
        "rigaudit ab ./bundle --set-b 'nccl=/opt/nccl-2.30.7' --format markdown > ab.md",
    ))]
    Ab {
        #[command(flatten)]
        args: ab::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Say, from a bundle's own repeated runs, the smallest difference each figure could show: the
    /// 90 % interval between two sessions of as many runs, the runs a side to tell ±5 % / ±10 %,
    /// quality in points (paired at the flip rate when questions were answered twice); and what
    /// one run or a headline cannot tell. Launches and fetches nothing.
    #[command(after_help = examples!(report_exits:
        "rigaudit noise ./bundle",
        "rigaudit noise page.tar.gz --format json > noise.json",
        "rigaudit noise ./bundle --policy dedicated.toml   (its [decide] session spread)",
    ))]
    Noise {
        #[command(flatten)]
        args: noise::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Re-launch the recorded command, measure again with the bundle's contracts, and say per
    /// value whether the page reproduces; writes the replayed bundle.
    #[command(after_help = examples!(report_exits:
        "rigaudit replay ./bundle",
        "rigaudit replay ./bundle --box pgx=auditor@spark-b --output replay.json",
    ))]
    Replay {
        /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
        bundle: PathBuf,
        #[command(flatten)]
        args: replay::Args,
        #[command(flatten)]
        out: ReportArgs,
    },
    /// Measure a running OpenAI-compatible server with a speed contract; writes a bundle.
    #[command(after_help = concat!(
        "Examples:\n",
        "  rigaudit measure --base-url http://127.0.0.1:8080 --contract speed-contract.json --out run1\n\n",
        "Exit codes:\n  0  every step got an answer\n  1  a step got no answer\n",
        "  2  no step did, the measurement stopped early, or bad arguments"
    ))]
    Measure(measure::Args),
    /// Hash what the card records (engine package, the binary inside it, NCCL per box, checkpoint
    /// folders, the bundle's raw files), ask NCCL for its version, and compare with the card.
    #[command(after_help = examples!(report_exits:
        "rigaudit rehash ./bundle --root /models --root /opt/engines",
        "rigaudit rehash ./bundle --file nccl=/usr/lib/x86_64-linux-gnu/libnccl.so.2",
    ))]
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
    /// List every check with its id, severity and what it finds, or explain one: what it finds,
    /// why it matters, how to fix it, an example.
    #[command(after_help = examples!(plain_exits:
        "rigaudit checks",
        "rigaudit checks quality.refused-counted-as-wrong",
        "rigaudit checks --format sarif > rules.sarif",
    ))]
    Checks {
        /// A check's id (`quality.refused-counted-as-wrong`): explain that one.
        id: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    #[command(after_help = examples!(plain_exits:
        "rigaudit completions bash > ~/.local/share/bash-completion/completions/rigaudit",
        "rigaudit completions zsh > ~/.zfunc/_rigaudit",
    ))]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff) to standard output: rigaudit(1), or rigaudit-COMMAND(1) for one
    /// command.
    #[command(after_help = examples!(plain_exits:
        "rigaudit man > rigaudit.1 && man ./rigaudit.1",
        "for c in verify import audit diff ab noise replay measure rehash checks; do",
        "  rigaudit man $c > rigaudit-$c.1; done",
    ))]
    Man {
        /// A command: its own page, rigaudit-COMMAND(1).
        command: Option<String>,
    },
    /// Print the JSON Schema of a file kind (bundle, card, speed-contract, speed-result,
    /// quality-contract, quality-summary, quality-answers, fit-result, report, policy).
    #[command(after_help = examples!(plain_exits:
        "rigaudit schema report",
        "rigaudit schema card > card.schema.json",
    ))]
    Schema {
        /// The kind.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(SCHEMA_KINDS))]
        kind: String,
    },
}

/// The file kinds `rigaudit schema` prints the JSON Schema of (a misspelt one is refused by clap,
/// naming these and the nearest).
pub const SCHEMA_KINDS: [&str; 10] = [
    "bundle",
    "card",
    "speed-contract",
    "speed-result",
    "quality-contract",
    "quality-summary",
    "quality-answers",
    "fit-result",
    "report",
    "policy",
];

impl Command {
    /// Passes the global `--quiet` to the commands that show progress bars.
    pub fn set_quiet(&mut self, quiet: bool) {
        match self {
            Command::Rehash { args, .. } => args.quiet = quiet,
            Command::Replay { args, .. } => args.quiet = quiet,
            Command::Ab { args, .. } => args.quiet = quiet,
            Command::Audit { replay, .. } => replay.quiet = quiet,
            Command::Measure(args) => args.quiet = quiet,
            _ => {}
        }
    }

    /// Gives the global `--verbose` to the commands that run other tools (replay's model fetch).
    pub fn set_verbose(&mut self, verbose: bool) {
        match self {
            Command::Replay { args, .. } => args.verbose = verbose,
            Command::Audit { replay, .. } => replay.verbose = verbose,
            _ => {}
        }
    }

    /// The report options of a command that builds a report.
    pub fn report_args(&self) -> Option<&ReportArgs> {
        match self {
            Command::Verify { out, .. }
            | Command::Audit { out, .. }
            | Command::Diff { out, .. }
            | Command::Ab { out, .. }
            | Command::Noise { out, .. }
            | Command::Replay { out, .. }
            | Command::Rehash { out, .. } => Some(out),
            Command::Import { report, .. } => Some(report),
            _ => None,
        }
    }
}
