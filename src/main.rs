//! rigaudit: audits published LLM-inference benchmark results.
//!
//! Exit codes: 0 when no finding reaches `--fail-on`, 1 when one does, 2 when the tool could not
//! do its job (bad arguments, unreadable bundle, nothing checked).

mod answers;
mod bundle;
mod diff;
mod fatal;
mod fetch;
#[cfg(test)]
mod fuzz;
mod host;
mod import;
mod input;
mod measure;
mod output;
mod rehash;
mod replay;
mod schemas;
mod verify;

use clap::{Parser, Subcommand, ValueEnum};
use output::Format;
use rigaudit_audit::{Report, Severity};
use std::io::IsTerminal;
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

/// Reads `--policy`: a TOML file of at most a few MiB whose check ids must be in the catalogue.
fn load_policy(out: &ReportArgs) -> Result<Option<rigaudit_audit::policy::Policy>, fatal::Fatal> {
    let Some(path) = &out.policy else {
        return Ok(None);
    };
    let text = input::read_text(path, input::CONTRACT_MAX, "policy")?;
    let mut p: rigaudit_audit::policy::Policy = toml::from_str(&text)
        .map_err(|e| fatal::fatal(format!("{}: not a policy: {e}", path.display())))?;
    let unknown = p.unknown_checks();
    if !unknown.is_empty() {
        return Err(fatal::fatal(format!(
            "{}: no such check in the catalogue: {} (rigaudit checks lists them)",
            path.display(),
            unknown.join(", ")
        )));
    }
    p.file = path.display().to_string();
    Ok(Some(p))
}

fn diff_report(args: &diff::Args, out: &ReportArgs) -> ExitCode {
    let run = if import::diff::applies(args) {
        import::diff::run(args, out.fail_on.severity())
    } else {
        diff::run(args, out.fail_on.severity())
    };
    match run {
        Ok(r) => emit(&r, out),
        Err(e) => {
            eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
            ExitCode::from(2)
        }
    }
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
    /// Import another tool's result files (AIPerf, GuideLLM, lm-eval, MLPerf LoadGen) as a bundle:
    /// the sources copied with their sha256, the importer's record, notes of what was taken and
    /// what could not; prints the checks' report.
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
    /// Compare two bundles of one setup: the setup differences first, then every figure with the
    /// statistics replay uses (exit 1 when the setup differs in what matters or a figure moved).
    Diff {
        #[command(flatten)]
        args: diff::Args,
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
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to standard output: `rigaudit man > rigaudit.1`.
    Man,
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

fn emit(report: &Report, out: &ReportArgs) -> ExitCode {
    let mut owned;
    let report = match load_policy(out) {
        Ok(None) => report,
        Ok(Some(p)) => {
            owned = report.clone();
            owned.apply_policy(&p);
            &owned
        }
        Err(e) => {
            eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let color = out.format == Format::Text
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    print!("{}", output::render(report, out.format, color));
    let mut files: Vec<(Format, PathBuf)> = out
        .report
        .iter()
        .map(|p| (Format::Json, p.clone()))
        .collect();
    for spec in &out.outputs {
        match output::parse_output(spec) {
            Ok(f) => files.push(f),
            Err(e) => {
                eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                return ExitCode::from(2);
            }
        }
    }
    for (format, path) in files {
        let text = output::render(report, format, false);
        if let Err(e) = output::write_atomic(&path, text.as_bytes()) {
            eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
            return ExitCode::from(2);
        }
    }
    ExitCode::from(report.exit_code() as u8)
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
    match cli.command {
        Command::Verify {
            bundle,
            more,
            from,
            out,
        } => match verify_any(bundle, more, from, out.fail_on.severity()) {
            Ok(r) => emit(&r, &out),
            Err(e) => {
                eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                ExitCode::from(2)
            }
        },
        Command::Import {
            from,
            files,
            out,
            report,
        } => import_report(from, &files, &out, &report),
        Command::Diff { mut args, out } => {
            if let Ok(Some(p)) = load_policy(&out) {
                tune_diff(&mut args, &p);
            }
            diff_report(&args, &out)
        }
        Command::Replay {
            bundle,
            mut args,
            out,
        } => {
            if let Ok(Some(p)) = load_policy(&out) {
                tune_replay(&mut args, &p);
            }
            match replay::run(&bundle, &args, out.fail_on.severity()) {
                Ok(r) => {
                    eprintln!(
                        "rigaudit: replayed bundle written to {}",
                        input::shown_path(&r.bundle)
                    );
                    emit(&r.report, &out)
                }
                Err(e) => {
                    eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                    ExitCode::from(2)
                }
            }
        }
        Command::Audit {
            bundle,
            roots,
            files,
            no_replay,
            mut replay,
            out,
        } => {
            if let Ok(Some(p)) = load_policy(&out) {
                tune_replay(&mut replay, &p);
            }
            let audited = audit(
                &bundle,
                roots,
                files,
                no_replay,
                &replay,
                out.fail_on.severity(),
            );
            match audited {
                Ok(r) => emit(&r, &out),
                Err(e) => {
                    eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                    ExitCode::from(2)
                }
            }
        }
        Command::Measure(a) => match measure::run(&a) {
            Ok(m) => match m.stopped {
                None => match unanswered_steps(&m.dir) {
                    Some((steps, all)) if !steps.is_empty() => {
                        eprintln!(
                            "rigaudit: {} got no answer: {}; what was measured is in {}",
                            if all { "every step" } else { "a step" },
                            steps.join(", "),
                            m.dir.display()
                        );
                        ExitCode::from(if all { 2 } else { 1 })
                    }
                    _ => {
                        println!("wrote {}", m.dir.display());
                        ExitCode::SUCCESS
                    }
                },
                // Could not finish: exit 2, with what was measured kept in the bundle.
                Some(why) => {
                    eprintln!(
                        "rigaudit: the measurement stopped before its end: {why}; what it measured is in {}",
                        m.dir.display()
                    );
                    ExitCode::from(2)
                }
            },
            Err(e) => {
                eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                ExitCode::from(2)
            }
        },
        Command::Rehash { args, out } => match rehash::run(&args, out.fail_on.severity()) {
            Ok(r) => emit(&r, &out),
            Err(e) => {
                eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
                ExitCode::from(2)
            }
        },
        Command::NcclVersion { path } => ExitCode::from(rehash::nccl::child_main(&path) as u8),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "rigaudit", &mut script);
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            ExitCode::SUCCESS
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut page = Vec::new();
            match clap_mangen::Man::new(cmd).render(&mut page) {
                Ok(()) => {
                    let _ = std::io::Write::write_all(&mut std::io::stdout(), &page);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("rigaudit: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Host => {
            println!(
                "{}",
                serde_json::to_string_pretty(&host::hardware()).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Command::Checks { format } => {
            let all = rigaudit_audit::catalogue::all();
            match format {
                Format::Json | Format::Sarif => {
                    let v: Vec<_> = all
                        .iter()
                        .map(|c| serde_json::json!({"id": c.id, "severity": c.severity, "doc": c.doc}))
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                }
                _ => {
                    for c in all {
                        println!("{:<38} {:<8} {}", c.id, c.severity.name(), c.doc);
                    }
                }
            }
            ExitCode::SUCCESS
        }
        Command::Schema { kind } => {
            let text = match kind.as_str() {
                "bundle" => Some(schemas::BUNDLE),
                "report" => Some(schemas::REPORT),
                k => serde_json::from_value(serde_json::Value::String(k.into()))
                    .ok()
                    .and_then(schemas::text),
            };
            match text {
                Some(t) => {
                    print!("{t}");
                    ExitCode::SUCCESS
                }
                None => {
                    eprintln!("rigaudit: no schema for '{kind}'");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// `rigaudit import`: writes the bundle and prints the report of its checks.
fn import_report(
    from: Option<import::Format>,
    files: &[PathBuf],
    out: &std::path::Path,
    report: &ReportArgs,
) -> ExitCode {
    match import::run(from, files, out) {
        Ok((format, imp)) => {
            eprintln!(
                "rigaudit: imported {} files into {}",
                format.name(),
                input::shown_path(out)
            );
            let id = out.display().to_string();
            let r = import::report("import", &id, &imp, report.fail_on.severity());
            emit(&r, report)
        }
        Err(e) => {
            eprintln!("rigaudit: {}", input::escaped(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// `verify`: a bundle, or another tool's result files (named with `--from`, or detected when the
/// path is not a bundle).
fn verify_any(
    bundle: PathBuf,
    more: Vec<PathBuf>,
    from: Option<import::Format>,
    fail_on: Option<Severity>,
) -> Result<Report, fatal::Fatal> {
    let plain = from.is_none() && more.is_empty();
    if plain && (!bundle.exists() || import::is_bundle(&bundle)) {
        return verify::run(&bundle, fail_on);
    }
    let mut files = vec![bundle.clone()];
    files.extend(more);
    if plain && import::detect_files(&files).is_none() {
        return verify::run(&bundle, fail_on);
    }
    import::verify_files(from, &files, fail_on)
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

/// `rigaudit audit`: verify, then rehash when roots or files are given, then replay unless told
/// not to; one report. A replay that cannot run at all makes the report incomplete (exit 2), with
/// the verify (and rehash) findings kept.
fn audit(
    bundle: &std::path::Path,
    roots: Vec<String>,
    files: Vec<String>,
    no_replay: bool,
    replay_args: &replay::Args,
    fail_on: Option<Severity>,
) -> Result<Report, fatal::Fatal> {
    let v = verify::run(bundle, fail_on)?;
    let mut ran = v.checks_run;
    let mut findings = v.findings;
    let recomputed = v.recomputed;
    let artifacts = v.artifacts;
    let mut comparisons = Vec::new();
    let mut incomplete = v.verdict == rigaudit_audit::Verdict::Incomplete;
    if !roots.is_empty() || !files.is_empty() {
        let r = rehash::run(
            &rehash::Args {
                bundle: bundle.to_path_buf(),
                roots,
                files,
                quiet: true,
                ..Default::default()
            },
            fail_on,
        )?;
        ran.extend(r.checks_run);
        findings.extend(r.findings);
    }
    if !no_replay {
        match replay::run(bundle, replay_args, fail_on) {
            Ok(r) => {
                eprintln!(
                    "rigaudit: replayed bundle written to {}",
                    r.bundle.display()
                );
                ran.extend(r.report.checks_run);
                findings.extend(r.report.findings);
                comparisons = r.report.comparisons;
            }
            Err(e) => {
                incomplete = true;
                ran.push("replay.not-run".into());
                findings.push(rigaudit_audit::Finding::new(
                    "replay.not-run",
                    Severity::Error,
                    format!("the replay could not run: {e}"),
                ));
            }
        }
    }
    ran.sort();
    ran.dedup();
    let id = v.bundle;
    let mut report =
        Report::new("audit", &id, fail_on, ran, recomputed, findings).with_comparisons(comparisons);
    if incomplete {
        report.verdict = rigaudit_audit::Verdict::Incomplete;
    }
    report.artifacts = artifacts;
    Ok(report)
}
