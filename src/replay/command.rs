//! From the card's recorded commands to the processes to start.
//!
//! A recorded command comes from a page someone else published, so:
//!
//! - it never goes through a shell: each rank becomes a program and a list of arguments for
//!   `std::process::Command`, and an item such as `$(touch x)` or `a;b` reaches the program as it
//!   is written;
//! - an executable runs only when its sha256 matches the digest the card records for the engine
//!   binary (`engine.binary.sha256`, the full 64 hex digits or a recorded prefix of at least 8),
//!   unless the user passes `--trust-executable`, in which case the mismatch becomes a note;
//! - the bundled engine (`EngineChoice::Bundled`) is rigaudit itself run as `rigaudit __engine`;
//!   it stands in only for a recorded `rigaudit-engine`.
//!
//! Placeholders: the page writes `<name>` tokens (for example `<folder of the checkpoint>`) in
//! argv items and env values, as a whole item or inside one (`--model=<model file>`). A name is
//! the non-empty text between `<` and the next `>`, with no `<` inside. `--set NAME=VALUE` fills
//! every `<NAME>`; the filling is one pass, so a value is never scanned for placeholders again
//! (an item that really contains `<...>`, such as a stop string `<|eot|>`, can be kept as it is
//! with `--set '|eot|=<|eot|>'`).
//!
//! Environment: each rank gets the environment rigaudit runs in, with the rank's recorded
//! variables set on top (a recorded variable wins). The inherited environment is kept so that
//! `PATH`, `HOME` and the like still let interpreters and libraries be found; the recorded
//! variables are what the page claims made the difference, and those are set exactly.

use crate::bundle::sha256_file;
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::card::RankCommand;
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name of the bundled engine's executable as a card records it.
pub const BUNDLED_ENGINE: &str = "rigaudit-engine";

/// The hidden subcommand of rigaudit that runs the bundled engine's command line.
pub const ENGINE_SUBCOMMAND: &str = "__engine";

/// Which executable runs the recorded commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineChoice {
    /// The engine bundled with rigaudit (`rigaudit __engine ...`), for a recorded
    /// `rigaudit-engine`.
    Bundled,
    /// An executable the user names (`--engine PATH`); its digest is checked against the card.
    Path(PathBuf),
}

/// What the user said about how to run the card's commands.
#[derive(Debug, Clone)]
pub struct ResolveOpts {
    /// The executable.
    pub engine: EngineChoice,
    /// `--set NAME=VALUE`: fills `<NAME>`.
    pub sets: BTreeMap<String, String>,
    /// `--trust-executable`: run an executable whose digest does not match the card's.
    pub trust_executable: bool,
    /// `--allow-env NAME`: recorded variables that load code, passed anyway.
    pub allow_env: Vec<String>,
}

/// One rank's process, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The rank.
    pub rank: u32,
    /// The executable.
    pub program: PathBuf,
    /// The arguments after the executable.
    pub args: Vec<String>,
    /// The recorded environment with placeholders filled; set on top of the inherited one.
    pub env: BTreeMap<String, String>,
    /// The argv as recorded with placeholders filled (executable first), for the report.
    pub shown: Vec<String>,
}

/// The processes to start, and what the report should say about how they were chosen.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// One per recorded command, in the card's order.
    pub launches: Vec<Launch>,
    /// Notes for the report: how the executable's digest compared, or that it was trusted.
    pub notes: Vec<String>,
}

/// A placeholder found in a string: its byte range (with the brackets) and its name.
fn scan(s: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(open) = s[i..].find('<').map(|o| o + i) {
        let rest = &s[open + 1..];
        match rest.find(['<', '>']) {
            Some(close) if rest.as_bytes()[close] == b'>' && close > 0 => {
                out.push((open, open + 1 + close + 1, &rest[..close]));
                i = open + 1 + close + 1;
            }
            _ => i = open + 1,
        }
    }
    out
}

/// Fills every placeholder of `s` that `sets` names; returns the names it could not fill.
fn fill<'a>(s: &'a str, sets: &BTreeMap<String, String>) -> (String, Vec<&'a str>) {
    let mut out = String::with_capacity(s.len());
    let mut missing = Vec::new();
    let mut last = 0;
    for (start, end, name) in scan(s) {
        out.push_str(&s[last..start]);
        match sets.get(name) {
            Some(v) => out.push_str(v),
            None => {
                out.push_str(&s[start..end]);
                missing.push(name);
            }
        }
        last = end;
    }
    out.push_str(&s[last..]);
    (out, missing)
}

/// Every placeholder name in the card's argv items and env values, in order of appearance,
/// each once.
pub fn placeholders(card: &Card) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in &card.commands {
        for s in c.argv.iter().chain(c.env.values()) {
            for (_, _, name) in scan(s) {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

/// Single-quotes a word for a message the user may paste into a shell, its control characters
/// (a newline among them) shown escaped and its length cut, so a recorded word never starts a
/// line of its own in a message.
fn quoted(s: &str) -> String {
    format!("'{}'", crate::input::shown(s).replace('\'', r"'\''"))
}

/// A recorded argv for a message: each item quoted.
fn shown_argv(argv: &[String]) -> String {
    argv.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" ")
}

/// Whether a listen address is this machine's loopback (`127.0.0.0/8`, `::1`, `localhost`).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Turns the card's recorded commands into processes to start: placeholders filled, the
/// executable chosen and its digest checked.
pub fn resolve(card: &Card, opts: &ResolveOpts) -> Result<Resolved, Fatal> {
    if card.commands.is_empty() {
        return Err(fatal(
            "the card records no command to run (commands is empty)",
        ));
    }
    known_sets(card, opts)?;
    let mut notes = Vec::new();
    let filled = fill_commands(card, opts, &mut notes)?;
    let program = program(card, opts, &filled, &mut notes)?;
    let launches = filled
        .into_iter()
        .map(|(rank, argv, env)| {
            let mut args = Vec::with_capacity(argv.len());
            if opts.engine == EngineChoice::Bundled {
                args.push(ENGINE_SUBCOMMAND.to_string());
            }
            args.extend(argv[1..].iter().cloned());
            Launch {
                rank,
                program: program.clone(),
                args,
                env,
                shown: argv,
            }
        })
        .collect();
    Ok(Resolved { launches, notes })
}

/// Every `--set` names a placeholder of the card's commands.
fn known_sets(card: &Card, opts: &ResolveOpts) -> Result<(), Fatal> {
    let known = placeholders(card);
    let unknown: Vec<&String> = opts
        .sets
        .keys()
        .filter(|k| !known.iter().any(|n| n == *k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let list = unknown
        .iter()
        .map(|k| format!("--set {}", quoted(&format!("{k}=..."))))
        .collect::<Vec<_>>()
        .join(", ");
    let have = if known.is_empty() {
        "the card's commands have no placeholder".to_string()
    } else {
        format!(
            "the card's placeholders are: {}",
            known
                .iter()
                .map(|n| format!("<{}>", crate::input::shown(n)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(fatal(format!(
        "{list}: no placeholder of that name in the card's commands; {have}"
    )))
}

/// One rank's command filled: its rank, argv and environment.
type Filled = (u32, Vec<String>, BTreeMap<String, String>);

/// `s` with its placeholders filled; each one with no value goes to `unfilled`, with `place`
/// (`rank 0 argv[1]`, `rank 0 env NAME`) and the recorded text.
fn fill_noted(s: &str, opts: &ResolveOpts, place: &str, unfilled: &mut Vec<String>) -> String {
    let (filled, missing) = fill(s, &opts.sets);
    for name in missing {
        unfilled.push(format!(
            "<{}> in {place} ({})",
            crate::input::shown(name),
            quoted(s)
        ));
    }
    filled
}

/// A rank's recorded environment filled; a placeholder with no value goes to `unfilled`, a
/// variable that the allow-list ([`super::env_rules`]) refuses and `--allow-env` does not name
/// goes to `refused` with its reason, and is not set.
fn fill_env(
    c: &RankCommand,
    opts: &ResolveOpts,
    unfilled: &mut Vec<String>,
    refused: &mut Vec<String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (k, v) in &c.env {
        let place = format!("rank {} env {}", c.rank, crate::input::shown(k));
        let filled = fill_noted(v, opts, &place, unfilled);
        if let Some(why) = env_refusal(k, v, &filled, &opts.allow_env) {
            refused.push(format!(
                "rank {} {}={} ({why})",
                c.rank,
                crate::input::shown(k),
                crate::input::shown(v)
            ));
            continue;
        }
        env.insert(k.clone(), filled);
    }
    env
}

/// Why a recorded variable is not set, or `None` when it is: the allow-list's reason, unless
/// `--allow-env` names it (a name that is no variable name, or a value with a NUL byte, is
/// refused even then: no process can be given it).
pub fn env_refusal(
    name: &str,
    recorded: &str,
    filled: &str,
    allow_env: &[String],
) -> Option<String> {
    if !super::env_rules::name_ok(name) || filled.contains('\0') {
        return super::env_rules::refusal(name, recorded, filled);
    }
    if allow_env.iter().any(|a| a == name) {
        return None;
    }
    super::env_rules::refusal(name, recorded, filled)
}

/// Fills every placeholder; an error lists each one left unfilled with where it is. A recorded
/// variable that loads code is left out unless `--allow-env` names it, and said in `notes`.
fn fill_commands(
    card: &Card,
    opts: &ResolveOpts,
    notes: &mut Vec<String>,
) -> Result<Vec<Filled>, Fatal> {
    let mut unfilled: Vec<String> = Vec::new();
    let mut filled: Vec<Filled> = Vec::new();
    let mut refused_env: Vec<String> = Vec::new();
    for c in &card.commands {
        let mut argv = Vec::with_capacity(c.argv.len());
        for (i, item) in c.argv.iter().enumerate() {
            let place = format!("rank {} argv[{i}]", c.rank);
            argv.push(fill_noted(item, opts, &place, &mut unfilled));
        }
        let env = fill_env(c, opts, &mut unfilled, &mut refused_env);
        if argv.is_empty() {
            return Err(fatal(format!(
                "the card's command for rank {} has an empty argv (no executable)",
                c.rank
            )));
        }
        filled.push((c.rank, argv, env));
    }
    if !unfilled.is_empty() {
        let first = unfilled_first_name(card, &opts.sets);
        return Err(fatal(format!(
            "the card's commands have placeholders with no value:\n  {}\nfill each with --set 'NAME=VALUE' (NAME is the text between the brackets), for example --set {}",
            unfilled.join("\n  "),
            quoted(&format!("{first}=PATH"))
        )));
    }
    notes.extend(refused_note(&refused_env));
    Ok(filled)
}

/// The note that names each refused variable with its reason, once, with how one passes.
fn refused_note(refused: &[String]) -> Option<String> {
    (!refused.is_empty()).then(|| {
        format!(
            "recorded environment refused, not set ({}): {}",
            super::env_rules::HOW_TO_PASS,
            refused.join("; ")
        )
    })
}

/// The note naming every recorded variable the allow-list refuses (as [`resolve`] writes it),
/// worked out before anything is fetched or started, so that a replay that stops early (the
/// model cannot be fetched, the executable is refused) still names each variable it would not
/// have set. `opts.sets` holds a stand-in for each placeholder replay fills itself.
pub fn refused_env_note(card: &Card, opts: &ResolveOpts) -> Option<String> {
    let mut unfilled = Vec::new();
    let mut refused = Vec::new();
    for c in &card.commands {
        fill_env(c, opts, &mut unfilled, &mut refused);
    }
    refused_note(&refused)
}

/// The executable to run: this rigaudit for the bundled engine (every rank must record it), or
/// `--engine PATH` once its digest is checked.
fn program(
    card: &Card,
    opts: &ResolveOpts,
    filled: &[Filled],
    notes: &mut Vec<String>,
) -> Result<PathBuf, Fatal> {
    let p = match &opts.engine {
        EngineChoice::Path(p) => p,
        EngineChoice::Bundled => return bundled(card, filled, notes),
    };
    notes.push(check_executable(card, p, opts.trust_executable)?);
    Ok(p.clone())
}

/// This rigaudit, to run its bundled engine, when every rank records the bundled engine.
fn bundled(card: &Card, filled: &[Filled], notes: &mut Vec<String>) -> Result<PathBuf, Fatal> {
    for (rank, argv, _) in filled {
        let name = Path::new(&argv[0]).file_name().and_then(|n| n.to_str());
        if name != Some(BUNDLED_ENGINE) {
            return Err(fatal(format!(
                "the recorded command of rank {rank} runs {}, not the bundled engine ({BUNDLED_ENGINE}); pass --engine PATH to run that executable (its sha256 must match the card's engine binary, or pass --trust-executable)",
                quoted(&argv[0])
            )));
        }
        let listen = rigaudit_engine::cli::replayable(&argv[1..]).map_err(|why| {
            fatal(format!(
                "the recorded command of rank {rank} ({}) is refused: {why}",
                shown_argv(argv)
            ))
        })?;
        if !is_loopback(&listen.host) {
            notes.push(format!(
                "rank {rank}: the bundled engine listens on {} as recorded (--host), reachable from other machines while the replay runs",
                quoted(&listen.host)
            ));
        }
    }
    if let Some(b) = &card.engine.binary {
        notes.push(format!(
            "the bundled engine (this rigaudit's {ENGINE_SUBCOMMAND}) runs in place of the recorded {}; its digest is not compared with the card's {}",
            b.path, b.sha256
        ));
    }
    std::env::current_exe().map_err(|e| {
        fatal(format!(
            "cannot find rigaudit's own executable to run the bundled engine: {e}"
        ))
    })
}

/// The name of the first unfilled placeholder, for the example in the message.
fn unfilled_first_name(card: &Card, sets: &BTreeMap<String, String>) -> String {
    placeholders(card)
        .into_iter()
        .find(|n| !sets.contains_key(n))
        .unwrap_or_default()
}

/// Checks that `path` is an executable file whose sha256 matches the card's engine binary.
/// Returns the note for the report; refuses unless `trust` when the digest does not match.
fn check_executable(card: &Card, path: &Path, trust: bool) -> Result<String, Fatal> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| fatal(format!("--engine {shown}: cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(fatal(format!("--engine {shown}: not a file")));
    }
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(fatal(format!(
                "--engine {shown}: not executable (no x permission bit)"
            )));
        }
    }
    let found =
        sha256_file(path).map_err(|e| fatal(format!("--engine {shown}: cannot hash it: {e}")))?;
    let recorded = card
        .engine
        .binary
        .as_ref()
        .map(|b| b.sha256.trim().to_ascii_lowercase());
    let problem = match &recorded {
        None => {
            "the card records no digest of the engine binary (engine.binary.sha256)".to_string()
        }
        Some(r) if r.len() < 8 || r.len() > 64 || !r.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("the card's engine binary digest {r:?} is not a sha256 (64 hex digits, or a prefix of at least 8)")
        }
        Some(r) if found.starts_with(r.as_str()) => {
            return Ok(if r.len() == 64 {
                format!("engine {shown}: sha256 {found} matches the card's digest")
            } else {
                format!(
                    "engine {shown}: sha256 {found} matches the {} recorded digits {r}",
                    r.len()
                )
            });
        }
        Some(r) => format!("it differs from the digest the card records: {r}"),
    };
    if trust {
        Ok(format!(
            "engine {shown} runs unverified (--trust-executable): its sha256 is {found}; {problem}"
        ))
    } else {
        Err(fatal(format!(
            "refusing to run --engine {shown}: its sha256 is {found}; {problem}. Pass --trust-executable to run it anyway"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::records::card::{Binary, RankCommand};
    use serde_json::json;

    fn card(commands: Vec<RankCommand>, digest: Option<&str>) -> Card {
        let mut v = json!({
            "hardware": {"description": "test", "boxes": [{"name": "box-1"}]},
            "engine": {"name": "rigaudit-engine"},
            "checkpoint": {"repo": "o/m", "revision": "abc"},
            "ranks": commands.len(),
            "commands": [],
            "sampling": {"defaults": {}, "defaults_source": "test"},
            "measured": "2025-01-01T00:00:00Z"
        });
        v["commands"] = serde_json::to_value(&commands).unwrap();
        let mut c: Card = serde_json::from_value(v).unwrap();
        c.engine.binary = digest.map(|d| Binary {
            path: "bin/engine".into(),
            sha256: d.into(),
        });
        c
    }

    fn cmd(rank: u32, argv: &[&str], env: &[(&str, &str)]) -> RankCommand {
        RankCommand {
            rank,
            box_name: None,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn opts(engine: EngineChoice, sets: &[(&str, &str)], trust: bool) -> ResolveOpts {
        ResolveOpts {
            engine,
            sets: sets
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            trust_executable: trust,
            allow_env: Vec::new(),
        }
    }

    /// [`engine_card`] resolved for the bundled engine with these `--set`s.
    fn resolve_bundled(sets: &[(&str, &str)]) -> Result<Resolved, Fatal> {
        resolve(&engine_card(), &opts(EngineChoice::Bundled, sets, false))
    }

    fn engine_card() -> Card {
        card(
            vec![
                cmd(
                    0,
                    &[
                        "/opt/x/rigaudit-engine",
                        "serve",
                        "<folder of the checkpoint>",
                        "--name=<model file>",
                        "--port",
                        "8080",
                    ],
                    &[("MODEL_DIR", "<folder of the checkpoint>"), ("N", "1")],
                ),
                cmd(
                    1,
                    &["rigaudit-engine", "serve", "x.gguf", "--name=<model file>"],
                    &[],
                ),
            ],
            None,
        )
    }

    #[test]
    fn placeholders_in_order_once() {
        assert_eq!(
            placeholders(&engine_card()),
            vec!["folder of the checkpoint", "model file"]
        );
        assert!(scan("a < b > c <> <x<y> <|eot|>")
            .iter()
            .map(|p| p.2)
            .eq([" b ", "y", "|eot|"]));
    }

    #[test]
    fn fills_whole_items_inside_items_and_env_values() {
        let r = resolve_bundled(&[
            ("folder of the checkpoint", "/ck"),
            ("model file", "/m.gguf"),
        ])
        .unwrap();
        let l0 = &r.launches[0];
        assert_eq!(l0.rank, 0);
        assert_eq!(l0.program, std::env::current_exe().unwrap());
        assert_eq!(
            l0.args,
            vec![
                "__engine",
                "serve",
                "/ck",
                "--name=/m.gguf",
                "--port",
                "8080"
            ]
        );
        assert_eq!(
            l0.shown,
            vec![
                "/opt/x/rigaudit-engine",
                "serve",
                "/ck",
                "--name=/m.gguf",
                "--port",
                "8080"
            ]
        );
        assert_eq!(l0.env["MODEL_DIR"], "/ck");
        assert_eq!(l0.env["N"], "1");
        assert_eq!(
            r.launches[1].args,
            vec!["__engine", "serve", "x.gguf", "--name=/m.gguf"]
        );
        // A value is not scanned again.
        let r = resolve_bundled(&[
            ("folder of the checkpoint", "<model file>"),
            ("model file", "m"),
        ])
        .unwrap();
        assert_eq!(r.launches[0].args[2], "<model file>");
    }

    #[test]
    fn unfilled_placeholders_are_listed() {
        let e = resolve_bundled(&[("model file", "/m")]).unwrap_err().0;
        assert!(
            e.contains("<folder of the checkpoint> in rank 0 argv[2]"),
            "{e}"
        );
        assert!(
            e.contains("<folder of the checkpoint> in rank 0 env MODEL_DIR"),
            "{e}"
        );
        assert!(!e.contains("<model file> in"), "{e}");
        assert!(e.contains("--set 'folder of the checkpoint=PATH'"), "{e}");
        let e = resolve_bundled(&[]).unwrap_err().0;
        assert!(e.contains("<model file> in rank 1 argv[3]"), "{e}");
    }

    #[test]
    fn unknown_set_is_an_error() {
        let e = resolve_bundled(&[
            ("folder of the checkpoint", "/ck"),
            ("model file", "/m"),
            ("modle file", "/m"),
        ])
        .unwrap_err()
        .0;
        assert!(e.contains("--set 'modle file=...'"), "{e}");
        assert!(e.contains("<model file>"), "{e}");
    }

    #[test]
    fn bundled_refuses_another_executable() {
        let c = card(vec![cmd(0, &["/usr/bin/vllm", "serve"], &[])], None);
        let e = resolve(&c, &opts(EngineChoice::Bundled, &[], false))
            .unwrap_err()
            .0;
        assert!(
            e.contains("runs '/usr/bin/vllm', not the bundled engine"),
            "{e}"
        );
        assert!(e.contains("--engine PATH"), "{e}");
    }

    /// An executable file in a fresh folder, and its sha256.
    fn exe(dir: &Path) -> (PathBuf, String) {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("engine");
        std::fs::write(&p, b"#!/bin/false\nnot really an engine\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = sha256_file(&p).unwrap();
        (p, d)
    }

    #[test]
    fn path_with_matching_digest_full_or_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let (p, d) = exe(dir.path());
        let argv = ["vllm", "serve", "--x=1"];
        let c = card(vec![cmd(0, &argv, &[])], Some(&d));
        let r = resolve(&c, &opts(EngineChoice::Path(p.clone()), &[], false)).unwrap();
        assert_eq!(r.launches[0].program, p);
        assert_eq!(r.launches[0].args, vec!["serve", "--x=1"]);
        assert_eq!(r.launches[0].shown, argv);
        assert!(
            r.notes[0].contains("matches the card's digest"),
            "{:?}",
            r.notes
        );
        let c = card(vec![cmd(0, &argv, &[])], Some(&d[..12].to_uppercase()));
        let r = resolve(&c, &opts(EngineChoice::Path(p.clone()), &[], false)).unwrap();
        assert!(
            r.notes[0].contains("matches the 12 recorded digits"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn path_with_other_digest_is_refused_unless_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let (p, d) = exe(dir.path());
        let recorded = "0123456789abcdef";
        let c = card(vec![cmd(0, &["vllm", "serve"], &[])], Some(recorded));
        let e = resolve(&c, &opts(EngineChoice::Path(p.clone()), &[], false))
            .unwrap_err()
            .0;
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert!(e.contains(&d) && e.contains(recorded), "{e}");
        assert!(e.contains("--trust-executable"), "{e}");
        let r = resolve(&c, &opts(EngineChoice::Path(p.clone()), &[], true)).unwrap();
        assert_eq!(r.launches[0].program, p);
        assert!(r.notes[0].contains("unverified"), "{:?}", r.notes);
        assert!(r.notes[0].contains(&d), "{:?}", r.notes);
        // No recorded digest at all: refused too.
        let c = card(vec![cmd(0, &["vllm", "serve"], &[])], None);
        let e = resolve(&c, &opts(EngineChoice::Path(p), &[], false))
            .unwrap_err()
            .0;
        assert!(e.contains("records no digest"), "{e}");
        // A missing file.
        let e = resolve(
            &c,
            &opts(EngineChoice::Path(dir.path().join("nope")), &[], true),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("nope: cannot read it"), "{e}");
    }

    /// `$(...)`, `;` and `>` in an argv item reach the program as written: nothing runs them.
    #[test]
    fn no_shell_between_the_card_and_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("marker");
        let sneaky = format!("$(touch {})", marker.display());
        let redirect = format!(">{}", dir.path().join("redirected").display());
        let c = card(
            vec![cmd(0, &["echo", &sneaky, "a;b", "`id`", &redirect], &[])],
            None,
        );
        let r = resolve(&c, &opts(EngineChoice::Path("/bin/echo".into()), &[], true)).unwrap();
        let ready = crate::replay::launch::Ready {
            url: "http://127.0.0.1:9/never".into(),
            timeout: std::time::Duration::from_secs(10),
        };
        let logs = dir.path().join("logs");
        let err = match crate::replay::launch::start(&r.launches, &logs, &ready) {
            Err(e) => e,
            Ok(_) => panic!("echo became ready?"),
        };
        assert!(
            matches!(
                err,
                crate::replay::launch::LaunchError::Exited { rank: 0, .. }
            ),
            "{err}"
        );
        let log = std::fs::read_to_string(logs.join("rank0.log")).unwrap();
        assert_eq!(log, format!("{sneaky} a;b `id` {redirect}\n"));
        assert!(!marker.exists());
        assert!(!dir.path().join("redirected").exists());
    }

    #[test]
    fn code_loading_env_is_refused_unless_allowed() {
        let c = card(
            vec![cmd(
                0,
                &["rigaudit-engine", "serve", "m.gguf", "--name", "m"],
                &[
                    ("LD_PRELOAD", "/tmp/evil.so"),
                    ("PYTHONPATH", "/tmp/evil"),
                    ("DYLD_INSERT_LIBRARIES", "/tmp/x"),
                    ("RIGAUDIT_NCCL", "/tmp/evil.so"),
                    ("LD_LIBRARY_PATH", "<folder>/../../tmp"),
                    ("SETTING", "/tmp/evil"),
                    ("PYTHONUNBUFFERED", "1"),
                    ("N", "1"),
                ],
            )],
            None,
        );
        let r = resolve(&c, &opts(EngineChoice::Bundled, &[("folder", "/f")], false)).unwrap();
        let env = &r.launches[0].env;
        assert!(!env.contains_key("LD_PRELOAD"));
        assert!(!env.contains_key("PYTHONPATH"));
        assert!(!env.contains_key("DYLD_INSERT_LIBRARIES"));
        assert!(!env.contains_key("RIGAUDIT_NCCL"));
        assert!(
            !env.contains_key("LD_LIBRARY_PATH"),
            "a page's path beside a placeholder"
        );
        assert!(!env.contains_key("SETTING"), "a setting that is a path");
        assert_eq!(env["N"], "1");
        assert_eq!(env["PYTHONUNBUFFERED"], "1");
        let note = r.notes.iter().find(|n| n.contains("refused")).unwrap();
        assert!(note.contains("LD_PRELOAD=/tmp/evil.so"), "{note}");
        let mut o = opts(EngineChoice::Bundled, &[("folder", "/f")], false);
        o.allow_env = vec!["LD_PRELOAD".into()];
        let r = resolve(&c, &o).unwrap();
        assert_eq!(r.launches[0].env["LD_PRELOAD"], "/tmp/evil.so");
        assert!(!r.launches[0].env.contains_key("PYTHONPATH"));
    }
}
