//! rigaudit: audits published LLM-inference benchmark results.
//!
//! Exit codes: 0 when no finding reaches `--fail-on`, 1 when one does, 2 when the tool could not
//! run (bad arguments, an input named on the command line that cannot be read: a [`Fatal`]), 3 when
//! the report is incomplete (not everything could be checked: `Report::exit_code`).
//!
//! [`main`] parses the arguments ([`cli`]) and hands them to [`run`], which reads the policy once,
//! dispatches each command and returns its exit code or the [`Fatal`] error that stopped it;
//! `main` is the one place such an error is printed. Each reporting command opens what it is given
//! ([`subject`]), builds its one report with `Report::new` from the `Findings` its stages return
//! (`verify.rs`, `rehash/`, `replay/`, `audit.rs`) and emits it ([`commands`]).

mod ab;
mod advice;
mod answers;
mod audit;
mod bundle;
mod cli;
mod commands;
mod diff;
mod digest;
mod download;
mod fatal;
mod fetch;
#[cfg(test)]
mod fuzz;
mod host;
mod http;
mod import;
mod input;
mod interrupt;
#[cfg(test)]
mod layers;
mod loaded;
mod measure;
mod noise;
mod output;
mod policy;
mod pre_commit;
mod progress;
mod rehash;
mod replay;
mod schemas;
mod slurm;
mod ssh;
mod subject;
mod tree;
mod verify;

use clap::Parser;
use cli::{Cli, Command};
use commands::Gate;
use fatal::{fatal, Fatal};
use std::process::ExitCode;

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
    // `rigaudit __pre-commit ARGS...` is the pre-commit hook (`.pre-commit-hooks.yaml`).
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == pre_commit::SUBCOMMAND)
    {
        return pre_commit::main(std::env::args_os().skip(2));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    // The one error sink: the tool could not do its job. No URL's credentials given as an
    // argument are printed, however the message quoted it.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    run(cli).unwrap_or_else(|e| {
        let message = input::scrubbed(&e.to_string(), &args);
        progress::say(format_args!("rigaudit: {message}"));
        ExitCode::from(2)
    })
}

/// Prints clap's error (or help) and returns its exit code; an argument it quotes that is a URL
/// with credentials is shown without them (the text then without colour).
fn usage_error(e: clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // A usage error quotes the arguments, which a hook may take from file names: no URL's
    // credentials, and through the one stderr writer (controls shown, no workflow command).
    let clean = input::scrubbed(&e.render().to_string(), &args);
    progress::say(format_args!("{}", clean.trim_end()));
    ExitCode::from(2)
}

/// Runs one command; the policy of a reporting command is read (and checked) here, once, and the
/// global `--quiet` reaches the commands that show progress.
fn run(mut cli: Cli) -> Result<ExitCode, Fatal> {
    let policy = match cli.command.report_args() {
        Some(out) => policy::load(out.policy.as_deref())?,
        None => None,
    };
    cli.command.set_quiet(cli.quiet);
    cli.command.set_verbose(cli.verbose);
    if cli.verbose && !cli.quiet {
        input::log_reads();
    }
    let show = commands::Show {
        color: cli.color,
        verbose: cli.verbose,
        quiet: cli.quiet,
    };
    let gate = |out, policy| Gate { out, policy, show };
    let result = match cli.command {
        Command::Verify {
            bundle,
            mut more,
            from,
            fetch,
            out,
        } => {
            more.insert(0, bundle);
            commands::verify(&gate(out, policy), &more, from, &fetch)
        }
        Command::Import {
            from,
            files,
            out,
            report,
        } => commands::import(&gate(report, policy), from, &files, &out),
        Command::Diff { args, fetch, out } => commands::diff(&gate(out, policy), args, &fetch),
        Command::Ab { args, out } => commands::ab(&gate(out, policy), args),
        Command::Noise { args, out } => commands::noise(&gate(out, policy), args),
        Command::Replay { bundle, args, out } => {
            commands::replay(&gate(out, policy), &bundle, args)
        }
        Command::Audit {
            bundle,
            roots,
            files,
            no_replay,
            fetch,
            replay,
            out,
        } => {
            // A --root BOX=DIR of a box mapped with --box is read on that box (replay's ssh options).
            let ssh = replay.boxes.ssh.clone();
            let slurm = replay.boxes.slurm.clone();
            let artifacts = audit::Artifacts {
                roots,
                files,
                ssh,
                slurm,
            };
            let replay = (!no_replay).then_some(replay);
            commands::audit(&gate(out, policy), &bundle, artifacts, replay, &fetch)
        }
        Command::Rehash { args, out } => commands::rehash(&gate(out, policy), args),
        Command::Measure(a) => commands::measured(&measure::run(&a)?),
        Command::NcclVersion { path } => Ok(ExitCode::from(rehash::nccl::child_main(&path) as u8)),
        Command::Completions { shell } => printed(&completions(shell)),
        Command::Man { command } => printed(&man_page(command.as_deref())?),
        Command::Host => printed(
            serde_json::to_string_pretty(&host::hardware())
                .unwrap_or_default()
                .as_bytes(),
        ),
        Command::Checks { id, format } => checks(id.as_deref(), format),
        Command::Schema { kind } => printed(schema_text(&kind)?.as_bytes()),
    };
    if show.verbose && !show.quiet {
        say_hashed();
        say_read();
    }
    result
}

/// Under `--verbose`: how many files the run hashed, and how many digests it took from its own
/// cache instead of reading a file again ([`digest`]).
fn say_hashed() {
    match digest::cache_counts() {
        (0, 0) => {}
        (hashed, 0) => progress::say(format_args!("rigaudit: {hashed} files hashed")),
        (hashed, served) => progress::say(format_args!(
            "rigaudit: {hashed} files hashed, {served} more digests of files already hashed in this run taken without reading them again"
        )),
    }
}

/// Under `--verbose`: how many input files the run read, and any it read more than once
/// ([`input::read_files`]).
fn say_read() {
    let (files, again) = input::read_files();
    if files == 0 {
        return;
    }
    progress::say(format_args!("rigaudit: {files} input files read"));
    for (path, times) in again {
        let path = input::shown_path(&path);
        progress::say(format_args!("rigaudit: {path} read {times} times"));
    }
}

/// `rigaudit checks [ID]`: the catalogue as text, JSON, SARIF or Markdown, or one check explained as text
/// or JSON; any other format is refused, naming those it has.
fn checks(id: Option<&str>, format: output::Format) -> Result<ExitCode, Fatal> {
    use output::Format as F;
    match (id, format) {
        (None, F::Text | F::Json | F::Sarif | F::Markdown) => {
            printed(output::catalogue(format).as_bytes())
        }
        (Some(id), F::Text | F::Json) => printed(output::explain(id, format)?.as_bytes()),
        (None, _) => Err(fatal(
            "checks --format: the catalogue is written as text, json, sarif or markdown",
        )),
        (Some(_), _) => Err(fatal(
            "checks ID --format: one check is explained as text or json",
        )),
    }
}

/// The shell completion script (`rigaudit completions SHELL`).
fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "rigaudit", &mut script);
    script
}

/// A man page, roff: rigaudit(1) (`rigaudit man`), which lists rigaudit-COMMAND(1) for each
/// command, or that page (`rigaudit man COMMAND`), with the global options, examples and exit
/// codes of its help.
fn man_page(command: Option<&str>) -> Result<Vec<u8>, Fatal> {
    // clap's own `help` subcommand is no command with a page of its own.
    let mut cli = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cli.build();
    let cmd = match command {
        None => cli,
        Some(name) => {
            let found = cli
                .get_subcommands()
                .find(|c| c.get_name() == name && !c.is_hide_set());
            let Some(sub) = found else {
                let names: Vec<&str> = cli
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                return Err(fatal(format!(
                    "man {}: no such command; one of {}",
                    input::shown(name),
                    names.join(", ")
                )));
            };
            sub.clone()
                .display_name(format!("rigaudit-{name}"))
                .bin_name(format!("rigaudit {name}"))
        }
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(|e| fatal(format!("man page: {e}")))?;
    Ok(page)
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
