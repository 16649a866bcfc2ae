//! `rigaudit replay BUNDLE`: re-launches the engine with the card's recorded command, measures it
//! again with the bundle's own contracts, writes the new bundle, and compares every key value.
//!
//! `command` turns the recorded commands into processes to start (placeholders, the executable
//! and its digest); `launch` starts them, waits until the server answers and stops them (process
//! groups, also on Ctrl-C and on error); this module runs [`crate::measure`] in between and hands
//! both bundles to [`rigaudit_audit::replay`], which decides.
//!
//! Placeholders rigaudit fills itself when `--set` does not: `<port>` with a free loopback port
//! (ports are local to a machine), and a placeholder naming the model file (`<model file>`,
//! `<model>`, `<checkpoint file>`) with the checkpoint's weight file, fetched on first use from the
//! package the card names (see [`crate::fetch`]) and checked against the card's digest.

pub mod auto;
pub mod command;
pub mod env_rules;
pub mod launch;
pub mod plan_text;
pub mod prepared;
pub mod probe;
pub mod remote;
mod session;
pub mod slurm;
pub mod slurm_step;

use crate::bundle;
use crate::fatal::{fatal, At, Fatal};
use crate::input::{CARD_MAX, CONTRACT_MAX, QUESTIONS_MAX};
use crate::measure;
use command::{EngineChoice, ResolveOpts};
use rigaudit_audit::decide::DecisionRule;
use rigaudit_audit::records::{FileKind, LoadedRank};
use rigaudit_audit::replay::{self, Tolerance};
use rigaudit_audit::Findings;
use session::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Options of `rigaudit replay` (and the replay part of `rigaudit audit`).
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Replay options")]
pub struct Args {
    /// The engine to run: `bundled` (rigaudit's own engine, for a recorded `rigaudit-engine`), or
    /// the path of an executable whose sha256 matches the card's recorded binary digest.
    #[arg(long, default_value = "bundled", value_name = "bundled|PATH")]
    pub engine: String,
    /// Fills a placeholder of the recorded command: `--set 'model file=/data/m.gguf'`. Repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub sets: Vec<String>,
    /// Run an executable whose digest does not match the card's (or that the card records none
    /// for). Only for an executable you trust: the command comes from someone else's page.
    #[arg(long)]
    pub trust_executable: bool,
    /// The replayed server's API root (default: http://127.0.0.1:PORT/v1, PORT from the command).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Seconds the engine may take to answer `/v1/models` after it starts.
    #[arg(long, default_value_t = 300)]
    pub ready_timeout: u64,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 600)]
    pub request_timeout: u64,
    /// Folder for the replayed bundle and the engine's logs (default: `replay-<bundle id>` in the
    /// current folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The decision rule (the policy's `[decide]`; its defaults without one).
    #[arg(skip)]
    pub rule: DecisionRule,
    /// No progress bar: the global `--quiet`, set by `main`.
    #[arg(skip)]
    pub quiet: bool,
    /// The output of the tools replay runs for it (pip's, when it fetches the model) on standard
    /// error: the global `--verbose`, set by `main`.
    #[arg(skip)]
    pub verbose: bool,
    /// Measure without the foreign-load guard (by default every counted try is watched with the
    /// contract's rule, or the seeds' rule when it states none).
    #[arg(long)]
    pub no_load_guard: bool,
    /// The GPU to read through NVML while measuring (as `measure --gpu`): `auto` reads device 0
    /// when NVML loads, `off` nothing, N device N. Only when every rank runs on this machine (no
    /// `--ssh`/Slurm boxes); the replay's notes say why it was not read otherwise.
    #[arg(long, default_value = "auto", value_parser = measure::gpu::parse_choice, value_name = "N|auto|off")]
    pub gpu: measure::gpu::Choice,
    /// Pass a recorded environment variable that replay's allow-list refuses (a place code is
    /// loaded from: `LD_PRELOAD`, `LD_LIBRARY_PATH`, `PYTHONPATH`, `RIGAUDIT_NCCL`, ...; or a
    /// setting whose value is not a plain word). Without it, a place passes only when its value
    /// is placeholders you fill with --set; every refused variable is named. Repeatable.
    #[arg(long = "allow-env", value_name = "NAME")]
    pub allow_env: Vec<String>,
    /// Confirm a speed drift in a second session before calling it drift, and judge a value too
    /// noisy to judge again over both sessions (default on; only where the card names this
    /// machine's hardware: values for information only need no second session).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub confirm: bool,
    /// How many runs each speed step takes: `recorded` (the recorded contract's), or `auto`: the
    /// recorded runs first, then more runs of each step whose interval still reaches across its
    /// band, as many as the spread measured says would settle it, within `--budget` (see
    /// docs/replay.md).
    #[arg(
        long,
        value_enum,
        default_value = "recorded",
        value_name = "recorded|auto"
    )]
    pub runs: auto::RunsMode,
    /// With `--runs auto`, the most time the replay's sessions may take together: `90s`, `10m`,
    /// `1h` (the first session always runs whole).
    #[arg(long, default_value = "10m", value_parser = auto::parse_budget, value_name = "TIME")]
    pub budget: Duration,
    /// Where ranks run (`--box`, `--ssh-option`, ...): see [`remote`].
    #[command(flatten)]
    pub boxes: remote::BoxArgs,
}

/// What a replay that could not run at all reports inside `audit`: an error, and the result is
/// incomplete; with each note it made before it stopped (the recorded variables it refused, the
/// placeholders it filled), a `replay.note`.
pub fn not_run_noted(e: &Fatal, notes: &[String]) -> Findings {
    let why = e.to_string();
    replay::command(&replay::Done {
        not_run: Some(&why),
        notes,
    })
}

/// The outcome of a replay: what it found and where the new bundle is.
pub struct Replayed {
    /// The recorded bundle's id.
    pub id: String,
    /// What the replay found (comparisons, findings).
    pub found: Findings,
    /// The replayed bundle's folder.
    pub bundle: PathBuf,
}

/// The recorded bundle a replay measures again, opened and read once: the path it was given as,
/// the opened bundle, its records, and the bytes of the files the replay copies or asks again
/// (the card, the contracts, the answers), kept from that one read.
pub struct Recorded {
    /// The bundle as the user named it.
    pub path: PathBuf,
    /// The opened bundle.
    pub opened: bundle::Opened,
    /// Its records.
    pub bundle: rigaudit_audit::Bundle,
    /// The bytes kept of the files the replay copies or asks again.
    pub kept: bundle::Kept,
}

impl Recorded {
    /// Opens and reads the bundle at `path`, keeping what a replay needs of it.
    pub fn open(path: &Path) -> Result<Recorded, Fatal> {
        let opened = bundle::open(path)?;
        let (bundle, kept) = bundle::load_keeping(&opened);
        Ok(Recorded {
            path: path.to_path_buf(),
            opened,
            bundle,
            kept,
        })
    }

    /// The text of the bundle's file of `kind` (of quality test `test`) at `path`: the bytes kept
    /// from the bundle's one read when they were kept and are UTF-8, else read now, bounded by
    /// `limit` (`what` names it in an error).
    fn text_of(
        &self,
        (kind, test): (FileKind, Option<&str>),
        path: &Path,
        (limit, what): (u64, &str),
    ) -> Result<std::borrow::Cow<'_, str>, Fatal> {
        let kept = listed(&self.opened, kind, test)
            .and_then(|entry| self.kept.get(&entry.path))
            .and_then(|bytes| std::str::from_utf8(bytes).ok());
        match kept {
            Some(text) => Ok(text.into()),
            None => crate::input::read_text(path, limit, what).map(Into::into),
        }
    }
}

/// Replays a bundle, as a pipeline: fill placeholders -> plan -> session -> confirm -> report.
/// `Err` when it could not be replayed at all (exit 2): unreadable bundle, no card or contract, an
/// executable refused, an engine that does not come up.
pub fn run(path: &Path, a: &Args) -> Result<Replayed, Fatal> {
    boxes_first(a)?;
    replay_recorded(&Recorded::open(path)?, a, &mut Vec::new())
}

/// The user's box and ssh flags, checked before the page is read, so a bad one is named first,
/// whatever the bundle holds.
fn boxes_first(a: &Args) -> Result<(), Fatal> {
    a.boxes.ssh.targets()?;
    crate::ssh::client::Ssh::new(&a.boxes.ssh)?;
    Ok(())
}

/// [`run`] of a bundle already read, its notes kept in `notes` as they are made: when it cannot
/// run to the end, what it did before (the recorded variables it refused, the placeholders it
/// filled) is still there for the report ([`not_run_noted`]).
pub fn run_noted(rec: &Recorded, a: &Args, notes: &mut Vec<String>) -> Result<Replayed, Fatal> {
    boxes_first(a)?;
    replay_recorded(rec, a, notes)
}

/// The pipeline of [`run`] over a bundle read, its box and ssh flags already checked.
fn replay_recorded(rec: &Recorded, a: &Args, notes: &mut Vec<String>) -> Result<Replayed, Fatal> {
    let mut say = |s: String| crate::progress::say(format_args!("rigaudit: {s}"));
    let (path, opened, recorded) = (rec.path.as_path(), &rec.opened, &rec.bundle);
    let card = recorded.card.as_ref().ok_or_else(|| {
        fatal(format!(
            "{}: the bundle has no readable card, so there is no recorded command to replay",
            path.display()
        ))
    })?;
    let ready = ready(&card.value, a, notes, &mut say)?;
    let inputs = plan(rec, ready.model_file.as_deref(), notes)?;
    // Written to only once the bundle's command and contracts were read and checked.
    let out = out_dir(a, opened)?;
    let session = Session {
        launches: &ready.planned.launches,
        launchers: &ready.planned.launchers,
        rank0: ready.rank0,
        base_url: &ready.base_url,
        a,
        contract: &inputs.contract,
        contract_text: &inputs.contract_text,
        contract_origin: inputs.contract_origin.clone(),
        quality: &inputs.quality,
        tokenizer: inputs.tokenizer.as_ref(),
        card: &inputs.card,
        id: format!("{}-replay", opened.manifest.id),
        title: format!("Replay of {}", opened.manifest.title),
        ab_block: false,
    };
    for l in &ready.resolved.launches {
        say(format!("starting rank {}: {}", l.rank, l.shown.join(" ")));
    }
    let id = opened.manifest.id.clone();
    measure_and_judge(&session, (id, recorded), &out, notes)
}

/// Stage 3: the first session measured (with what its servers mapped), more runs with `--runs
/// auto`, a confirming session where a value moved, each value compared and judged; `id` is the
/// recorded bundle's.
fn measure_and_judge(
    session: &Session,
    (id, recorded): (String, &rigaudit_audit::Bundle),
    out: &Path,
    notes: &mut Vec<String>,
) -> Result<Replayed, Fatal> {
    let a = session.a;
    let started = Instant::now();
    let mut loaded = Vec::new();
    let measured = session.run(
        &out.join("bundle"),
        &out.join("engine-logs"),
        notes,
        Some(&mut loaded),
    )?;
    notes.extend(slurm::job_ended(session.launchers));
    let replayed = bundle::load(&bundle::open(&measured.dir)?);
    let first = Sides {
        recorded,
        replayed: &replayed,
    };
    let auto = a.runs == auto::RunsMode::Auto && measured.stopped.is_none();
    let pooled = auto.then(|| more_runs(session, &first, out, started, notes));
    let sides = Sides {
        recorded,
        replayed: pooled.as_ref().unwrap_or(&replayed),
    };
    let compared = compare_confirmed(session, &sides, a, out, &measured, notes);
    Ok(Replayed {
        id,
        // The first session's bundle is the one on disk that verify reads.
        found: report(
            &first,
            compared,
            &measured,
            notes,
            (loaded, a.trust_executable),
        ),
        bundle: measured.dir,
    })
}

/// Stage 1b: each rank's command resolved (placeholders filled, the executable checked), and where
/// each runs: here, or on the box `--box` maps its card box to (over ssh).
fn launches(
    card: &rigaudit_audit::records::Card,
    a: &Args,
    sets: BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> Result<(command::Resolved, remote::Planned), Fatal> {
    let resolved = command::resolve(
        card,
        &ResolveOpts {
            engine: engine_choice(a),
            sets,
            trust_executable: a.trust_executable,
            allow_env: a.allow_env.clone(),
        },
    )?;
    // The refused variables were noted before anything was fetched (fill_placeholders): once.
    let new: Vec<String> = resolved
        .notes
        .iter()
        .filter(|n| !notes.contains(n))
        .cloned()
        .collect();
    notes.extend(new);
    let planned = if a.boxes.slurm.slurm {
        slurm::plan(card, &resolved.launches, a)?
    } else {
        remote::plan(card, &resolved.launches, a)?
    };
    notes.extend(planned.notes.iter().cloned());
    Ok((resolved, planned))
}

/// A card's commands made ready to launch: each rank resolved and placed, rank 0 and the URL of
/// its server, and the model file a placeholder named.
struct Ready {
    resolved: command::Resolved,
    planned: remote::Planned,
    rank0: u32,
    base_url: String,
    model_file: Option<PathBuf>,
}

/// Stage 1 of every replay (and of each side of `ab`): fills the placeholders of `card`'s commands,
/// resolves and places its ranks, and finds rank 0's server.
fn ready(
    card: &rigaudit_audit::records::Card,
    a: &Args,
    notes: &mut Vec<String>,
    say: &mut dyn FnMut(String),
) -> Result<Ready, Fatal> {
    let filled = fill_placeholders(card, a, notes, say)?;
    let port = filled.port.clone();
    let (resolved, planned) = launches(card, a, filled.sets, notes)?;
    let rank0 = resolved
        .launches
        .first()
        .ok_or_else(|| fatal("the card records no command"))?;
    let box_host = planned
        .rank0_host
        .clone()
        .or_else(|| remote::rank0_host(card, &a.boxes, rank0.rank));
    let base_url = base_url(a, rank0, port, box_host)?;
    let rank0 = rank0.rank;
    Ok(Ready {
        resolved,
        planned,
        rank0,
        base_url,
        model_file: filled.model_file,
    })
}

/// The placeholders filled: the values to put in, the port and the model file when known.
struct Filled {
    sets: BTreeMap<String, String>,
    port: Option<String>,
    model_file: Option<PathBuf>,
}

/// Stage 1: `--set` values, then `<port>` with a free loopback port and a model-file placeholder
/// with the checkpoint fetched and checked.
fn fill_placeholders(
    card: &rigaudit_audit::records::Card,
    a: &Args,
    notes: &mut Vec<String>,
    say: &mut dyn FnMut(String),
) -> Result<Filled, Fatal> {
    let mut sets: BTreeMap<String, String> = BTreeMap::new();
    for s in &a.sets {
        let Some((k, v)) = s.split_once('=') else {
            return Err(fatal(format!("--set {s}: expected NAME=VALUE")));
        };
        sets.insert(k.trim_matches(['<', '>']).to_string(), v.to_string());
    }
    if a.boxes.plan {
        let plan = if a.boxes.slurm.slurm {
            slurm::plan_text(card, &a.boxes, &sets, (&a.engine, &a.allow_env))?
        } else {
            plan_text::plan_text(card, &a.boxes, &sets, &a.engine, &a.allow_env)?
        };
        print!("{plan}");
        std::process::exit(0);
    }
    // Every recorded variable the allow-list refuses, named now (on standard error and in the
    // notes), before the model is fetched or anything started: a replay that stops early names
    // them too. The placeholders replay fills itself stand in with values of their shape.
    let mut stand_in = sets.clone();
    for name in command::placeholders(card) {
        if name == "port" {
            stand_in.entry(name).or_insert_with(|| "1".into());
        } else if is_model_placeholder(&name) {
            stand_in.entry(name).or_insert_with(|| "/model".into());
        }
    }
    let opts = ResolveOpts {
        engine: engine_choice(a),
        sets: stand_in,
        trust_executable: a.trust_executable,
        allow_env: a.allow_env.clone(),
    };
    if let Some(note) = command::refused_env_note(card, &opts) {
        say(note.clone());
        notes.push(note);
    }
    let mut port: Option<String> = sets.get("port").cloned();
    let mut model_file: Option<PathBuf> = None;
    for name in command::placeholders(card) {
        if sets.contains_key(&name) {
            if is_model_placeholder(&name) {
                model_file = sets.get(&name).map(PathBuf::from);
            }
            continue;
        }
        if name == "port" {
            let p = free_port()?.to_string();
            notes.push(format!("<port> filled with the free loopback port {p}"));
            port = Some(p.clone());
            sets.insert(name, p);
        } else if is_model_placeholder(&name) {
            let way = crate::fetch::WayOut {
                placeholder: name.clone(),
                verbose: a.verbose,
            };
            let f = crate::fetch::checkpoint_file(&card.checkpoint, &way, say)?;
            notes.push(format!(
                "<{name}> filled with {} (sha256 matches the card)",
                f.display()
            ));
            sets.insert(name, f.display().to_string());
            model_file = Some(f);
        }
    }
    Ok(Filled {
        sets,
        port,
        model_file,
    })
}

/// The engine `--engine` names.
fn engine_choice(a: &Args) -> EngineChoice {
    if a.engine == "bundled" {
        EngineChoice::Bundled
    } else {
        EngineChoice::Path(PathBuf::from(&a.engine))
    }
}

/// The replayed server's API root: `--base-url`, else the recorded `--host`/`--port` (or the port
/// filled in); `box_host`: rank 0's box when it runs on one, for a recorded wildcard or no host.
fn base_url(
    a: &Args,
    rank0: &command::Launch,
    port: Option<String>,
    box_host: Option<String>,
) -> Result<String, Fatal> {
    if let Some(u) = &a.base_url {
        return Ok(u.trim_end_matches('/').to_string());
    }
    let port = flag_value(&rank0.shown, "--port").or(port).ok_or_else(|| {
        fatal("the recorded command names no --port and has no <port> placeholder; pass --base-url with the server's API root")
    })?;
    let host = flag_value(&rank0.shown, "--host")
        .filter(|h| h != "0.0.0.0" && h != "::")
        .or(box_host)
        .unwrap_or_else(|| "127.0.0.1".into());
    Ok(format!("http://{host}:{port}/v1"))
}

/// `--out`, else `replay-<bundle id>`, made and made absolute.
fn out_dir(a: &Args, opened: &bundle::Opened) -> Result<PathBuf, Fatal> {
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("replay-{}", opened.manifest.id)));
    std::fs::create_dir_all(&out).at(out.display())?;
    Ok(out.canonicalize().unwrap_or(out))
}

/// What a session measures with: the recorded contracts and questions, the model's tokenizer and
/// the card.
struct Inputs {
    contract: rigaudit_audit::records::SpeedContract,
    contract_text: String,
    contract_origin: String,
    quality: Vec<measure::quality::QualityPlan>,
    tokenizer: Option<tokenizers::Tokenizer>,
    card: serde_json::Value,
}

/// Stage 2, the plan: the recorded contracts, the recorded questions, the model's tokenizer.
fn plan(
    rec: &Recorded,
    model_file: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<Inputs, Fatal> {
    let opened = &rec.opened;
    let card_path = raw_file(opened, FileKind::Card, None)?.ok_or_else(|| fatal("no card file"))?;
    let contract_path = raw_file(opened, FileKind::SpeedContract, None)?.ok_or_else(|| {
        fatal(format!(
            "{}: the bundle has no speed contract to measure with",
            rec.path.display()
        ))
    })?;
    let speed = (FileKind::SpeedContract, None);
    let text = rec.text_of(speed, &contract_path, (CONTRACT_MAX, "speed contract"))?;
    let (contract, contract_text) = measure::speed_contract_of(&contract_path, text.into_owned())?;
    let mut quality = Vec::new();
    for t in &rec.bundle.quality {
        let (Some(c), Some(q)) = (
            raw_file(opened, FileKind::QualityContract, Some(&t.test))?,
            raw_file(opened, FileKind::QualityAnswers, Some(&t.test))?,
        ) else {
            notes.push(format!(
                "quality {}: no contract and answers file to re-ask; not replayed",
                t.test
            ));
            continue;
        };
        let test = Some(t.test.as_str());
        let read = rec
            .text_of(
                (FileKind::QualityContract, test),
                &c,
                (CONTRACT_MAX, "quality contract"),
            )
            .and_then(|contract| {
                let asked = (QUESTIONS_MAX, "questions file");
                let questions = rec.text_of((FileKind::QualityAnswers, test), &q, asked)?;
                measure::quality_of((&c, contract.into_owned()), (&q, &questions))
            });
        match read {
            Ok(p) => quality.push(p),
            Err(e) => notes.push(format!("quality {}: not replayed: {e}", t.test)),
        }
    }
    let tokenizer = model_file.and_then(gguf_tokenizer);
    if tokenizer.is_none() {
        notes.push(
            "no tokenizer from the checkpoint: prompt sizes probed with the server's usage".into(),
        );
    }
    let text = rec.text_of((FileKind::Card, None), &card_path, (CARD_MAX, "card"))?;
    let card = serde_json::from_str(&text).at(card_path.display())?;
    Ok(Inputs {
        contract,
        contract_text,
        contract_origin: contract_path.display().to_string(),
        quality,
        tokenizer,
        card,
    })
}

/// The tokenizer of a GGUF checkpoint.
fn gguf_tokenizer(p: &Path) -> Option<tokenizers::Tokenizer> {
    if p.extension().is_none_or(|x| x != "gguf") {
        return None;
    }
    let g = rigaudit_engine::gguf::Gguf::open(p).ok()?;
    rigaudit_engine::tokenizer::EngineTokenizer::from_gguf(&g)
        .ok()
        .map(|t| t.inner)
}

/// The recorded bundle and its replay.
struct Sides<'a> {
    recorded: &'a rigaudit_audit::Bundle,
    replayed: &'a rigaudit_audit::Bundle,
}

/// Stage 3b (`--runs auto`): rounds of more runs of the steps whose interval still reaches
/// across their band, sized by [`auto::round_plan`] to the budget left at the first session's
/// time a try, each a session of its own into `OUT/more-N`, pooled with what came before; the
/// note says each step's runs and why it got no more. Returns the pooled replayed side.
fn more_runs(
    session: &Session,
    first: &Sides,
    out: &Path,
    started: Instant,
    notes: &mut Vec<String>,
) -> rigaudit_audit::Bundle {
    let a = session.a;
    let tol = Tolerance {
        rule: a.rule,
        ..Tolerance::default()
    };
    let per_try = started.elapsed() / auto::tries_of(session.contract).max(1) as u32;
    let mut pooled = first.replayed.clone();
    let mut compared = replay::compare(first.recorded, &pooled, &tol);
    let mut stop = auto::Stop::Rounds;
    let wanting = |c: &Findings| {
        c.comparisons
            .iter()
            .any(|r| matches!(auto::need_of(r), auto::Need::Runs(_)))
    };
    for round in 1..=auto::ROUNDS {
        let left = a.budget.saturating_sub(started.elapsed());
        let afford = (left.as_secs_f64() / per_try.as_secs_f64().max(1e-3)) as usize;
        let plan = auto::round_plan(&compared.comparisons, session.contract, afford);
        if plan.is_empty() {
            stop = if wanting(&compared) {
                auto::Stop::Budget
            } else {
                auto::Stop::Settled
            };
            break;
        }
        match session.top_up(&plan, round, out, notes) {
            Ok(more) => pooled = replay::pool(&pooled, &more),
            Err(e) => {
                notes.push(format!("--runs auto: round {round} could not run: {e}"));
                stop = auto::Stop::Failed;
                break;
            }
        }
        compared = replay::compare(first.recorded, &pooled, &tol);
    }
    if stop == auto::Stop::Rounds && !wanting(&compared) {
        stop = auto::Stop::Settled;
    }
    notes.push(auto::note(&compared, stop, a.budget, started.elapsed()));
    pooled
}

/// Stage 4: compares the two bundles; a speed value that drifted, whose interval reached across
/// its band, or that drifted as far as the machine's own change of speed explains, is measured
/// once more in a fresh session ("looks twice"): drift stands only when that session moves the
/// same way and the two sessions' runs pooled, judged with the spread measured between the
/// sessions, still drift; a value across the band is judged again over both sessions' runs; a
/// value the machine explained takes the fresh session's verdict when that one is judged (see
/// audit's `confirm`).
fn compare_confirmed(
    session: &Session,
    sides: &Sides,
    a: &Args,
    out: &Path,
    measured: &measure::Measured,
    notes: &mut Vec<String>,
) -> Findings {
    let tol = Tolerance {
        rule: a.rule,
        ..Tolerance::default()
    };
    let mut compared = replay::compare(sides.recorded, sides.replayed, &tol);
    let again = replay::keys_to_confirm(&compared);
    if again.is_empty() || !a.confirm || measured.stopped.is_some() {
        return compared;
    }
    crate::progress::say(format_args!(
        "rigaudit: {} speed value(s) drifted, undecided (interval across the band), or moved with the machine's speed ({}); measuring a second session",
        again.len(),
        again.join(", ")
    ));
    let second = session.run(
        &out.join("confirm/bundle"),
        &out.join("confirm/engine-logs"),
        notes,
        None,
    );
    match second.and_then(|m| bundle::open(&m.dir)) {
        Ok(o) => {
            let second = bundle::load(&o);
            let c2 = replay::compare(sides.recorded, &second, &tol);
            let both = replay::pool(sides.replayed, &second);
            let measured = replay::SessionSpread::of(&compared, &c2).map(|s| s.sd());
            let tol = Tolerance {
                measured_session_sd: measured,
                ..tol
            };
            let pooled = replay::compare(sides.recorded, &both, &tol);
            replay::confirm(&mut compared, &c2, Some(&pooled));
        }
        Err(e) => notes.push(format!("the confirming session could not run: {e}")),
    }
    compared
}

/// Stage 5: what the replay found: its notes, the steps that failed, the comparison, and the
/// replayed bundle's own invalid steps as verify sees them.
fn report(
    sides: &Sides,
    compared: Findings,
    measured: &measure::Measured,
    notes: &[String],
    (loaded, executable_trusted): (Vec<LoadedRank>, bool),
) -> Findings {
    let dir = measured.dir.display().to_string();
    let outcome = replay::Outcome {
        recorded: sides.recorded,
        replayed: sides.replayed,
        dir: &dir,
        stopped: measured.stopped.as_deref(),
        notes,
        ranks: loaded,
        executable_trusted,
    };
    replay::report(outcome, compared, rigaudit_audit::verify(sides.replayed))
}
