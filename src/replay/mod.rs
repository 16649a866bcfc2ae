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

pub mod command;
pub mod launch;
pub mod remote;

use crate::bundle;
use crate::fatal::{fatal, Fatal};
use crate::measure;
use command::{EngineChoice, ResolveOpts};
use rigaudit_audit::replay::Tolerance;
use rigaudit_audit::{Finding, Report, Severity};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Options of `rigaudit replay` (and the replay part of `rigaudit audit`).
#[derive(clap::Args, Debug, Clone)]
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
    /// A speed move smaller than this fraction is never drift.
    #[arg(long, default_value_t = 0.10)]
    pub rel_floor: f64,
    /// The highest tolerance floor a speed value may be judged with (a fraction): when the runs'
    /// own spread puts the floor above it, the value is "inconclusive: too noisy", never
    /// reproduced.
    #[arg(long, default_value_t = 0.25)]
    pub max_floor: f64,
    /// Significance level of the tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Measure without the foreign-load guard (by default every counted try is watched with the
    /// contract's rule, or the seeds' rule when it states none).
    #[arg(long)]
    pub no_load_guard: bool,
    /// Pass a recorded environment variable that loads code or changes what runs (`LD_PRELOAD`,
    /// `PYTHONPATH`, `PATH`, ...) to the engine; refused otherwise. Repeatable.
    #[arg(long = "allow-env", value_name = "NAME")]
    pub allow_env: Vec<String>,
    /// Confirm a speed drift in a second session before calling it drift (default on).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub confirm: bool,
    /// Where ranks run (`--box`, `--ssh-option`, ...): see [`remote`].
    #[command(flatten)]
    pub boxes: remote::BoxArgs,
}

/// What one session of a replay needs: the processes to start and the plan to measure with.
struct Session<'a> {
    launches: &'a [command::Launch],
    launchers: &'a [remote::Launcher],
    rank0: u32,
    base_url: &'a str,
    a: &'a Args,
    contract: &'a rigaudit_audit::records::SpeedContract,
    contract_text: &'a str,
    contract_origin: String,
    quality: &'a [measure::quality::QualityPlan],
    tokenizer: Option<&'a tokenizers::Tokenizer>,
    card: &'a serde_json::Value,
    id: String,
    title: String,
}

impl Session<'_> {
    /// Starts the ranks, measures into `out`, stops every rank (also when measuring fails).
    fn run(
        &self,
        out: &Path,
        logs: &Path,
        notes: &mut Vec<String>,
    ) -> Result<measure::Measured, Fatal> {
        let running = launch::start_ranks(
            self.launches,
            self.launchers,
            logs,
            &launch::Ready {
                url: format!("{}/models", self.base_url),
                timeout: Duration::from_secs(self.a.ready_timeout),
            },
        )?;
        let start_lines = running.start_lines(self.rank0);
        let server_pids = running.pids();
        notes.extend(running.notes().iter().cloned());
        let running = Arc::new(Mutex::new(running));
        let watch = Arc::clone(&running);
        let plan = measure::Plan {
            base_url: self.base_url.to_string(),
            contract: self.contract.clone(),
            contract_text: self.contract_text.to_string(),
            contract_origin: self.contract_origin.clone(),
            quality: self.quality.to_vec(),
            tokenizer: self.tokenizer.cloned(),
            card: Some(self.card.clone()),
            start_lines,
            out: out.to_path_buf(),
            timeout: self.a.request_timeout,
            progress: !self.a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            alive: Some(Box::new(move || {
                let mut r = watch.lock().unwrap_or_else(|p| p.into_inner());
                r.exited()
                    .map(|(rank, why)| format!("rank {rank} exited: {why}"))
            })),
            notes: notes.clone(),
            id: Some(self.id.clone()),
            title: Some(self.title.clone()),
            server_pids,
            load_guard: !self.a.no_load_guard,
        };
        let measured = measure::measure(&plan);
        // Stop every rank before anything else can fail.
        let stop_notes = running.lock().unwrap_or_else(|p| p.into_inner()).stop();
        notes.extend(stop_notes);
        measured
    }
}

fn free_port() -> Result<u16, Fatal> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| fatal(format!("cannot find a free loopback port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| fatal(format!("cannot find a free loopback port: {e}")))
}

fn is_model_placeholder(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    (n.contains("model") || n.contains("checkpoint") || n.contains("gguf"))
        && !n.contains("name")
        && !n.contains("folder")
}

/// The value after `--flag` or `--flag=`, in argv.
fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    let eq = format!("{flag}=");
    argv.iter().enumerate().find_map(|(i, a)| {
        if a == flag {
            argv.get(i + 1).cloned()
        } else {
            a.strip_prefix(&eq).map(String::from)
        }
    })
}

fn raw_file(o: &bundle::Opened, kind: &str, test: Option<&str>) -> Option<PathBuf> {
    o.manifest
        .files
        .iter()
        .find(|f| f.kind.name() == kind && test.is_none_or(|t| f.test.as_deref() == Some(t)))
        .and_then(|f| crate::input::inside(&o.root, &f.path).ok())
}

/// The outcome of a replay: the report and where the new bundle is.
pub struct Replayed {
    /// The report (comparisons, findings).
    pub report: Report,
    /// The replayed bundle's folder.
    pub bundle: PathBuf,
}

/// Replays a bundle. `Err` when it could not be replayed at all (exit 2): unreadable bundle, no
/// card or contract, an executable refused, an engine that does not come up.
pub fn run(path: &Path, a: &Args, fail_on: Option<Severity>) -> Result<Replayed, Fatal> {
    let mut say = |s: String| eprintln!("rigaudit: {s}");
    let opened = bundle::open(path)?;
    let recorded = bundle::load(&opened);
    let card = recorded.bundle.card.as_ref().ok_or_else(|| {
        fatal(format!(
            "{}: the bundle has no readable card, so there is no recorded command to replay",
            path.display()
        ))
    })?;
    let card_path = raw_file(&opened, "card", None).ok_or_else(|| fatal("no card file"))?;
    let contract_path = raw_file(&opened, "speed-contract", None).ok_or_else(|| {
        fatal(format!(
            "{}: the bundle has no speed contract to measure with",
            path.display()
        ))
    })?;
    let mut sets: BTreeMap<String, String> = BTreeMap::new();
    for s in &a.sets {
        let Some((k, v)) = s.split_once('=') else {
            return Err(fatal(format!("--set {s}: expected NAME=VALUE")));
        };
        sets.insert(k.trim_matches(['<', '>']).to_string(), v.to_string());
    }
    if a.boxes.plan {
        let plan = remote::plan_text(&card.value, &a.boxes, &sets, &a.engine, &a.allow_env)?;
        print!("{plan}");
        std::process::exit(0);
    }
    let mut notes = Vec::new();
    let mut port: Option<String> = sets.get("port").cloned();
    let mut model_file: Option<PathBuf> = None;
    for name in command::placeholders(&card.value) {
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
            let f = crate::fetch::checkpoint_file(&card.value.checkpoint, &mut say)?;
            notes.push(format!(
                "<{name}> filled with {} (sha256 matches the card)",
                f.display()
            ));
            sets.insert(name, f.display().to_string());
            model_file = Some(f);
        }
    }
    let engine = if a.engine == "bundled" {
        EngineChoice::Bundled
    } else {
        EngineChoice::Path(PathBuf::from(&a.engine))
    };
    let resolved = command::resolve(
        &card.value,
        &ResolveOpts {
            engine,
            sets,
            trust_executable: a.trust_executable,
            allow_env: a.allow_env.clone(),
        },
    )?;
    notes.extend(resolved.notes.iter().cloned());
    // Where each rank runs: here, or on the box `--box` maps its card box to (over ssh).
    let planned = remote::plan(
        &card.value,
        resolved.launches.clone(),
        &a.boxes,
        a.engine == "bundled",
        a.trust_executable,
    )?;
    notes.extend(planned.notes.iter().cloned());
    let rank0 = resolved
        .launches
        .first()
        .ok_or_else(|| fatal("the card records no command"))?;
    let base_url = match &a.base_url {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => {
            let port = flag_value(&rank0.shown, "--port")
                .or(port)
                .ok_or_else(|| {
                    fatal("the recorded command names no --port and has no <port> placeholder; pass --base-url with the server's API root")
                })?;
            let host = flag_value(&rank0.shown, "--host")
                .filter(|h| h != "0.0.0.0" && h != "::")
                .or_else(|| remote::rank0_host(&card.value, &a.boxes, rank0.rank))
                .unwrap_or_else(|| "127.0.0.1".into());
            format!("http://{host}:{port}/v1")
        }
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("replay-{}", opened.manifest.id)));
    std::fs::create_dir_all(&out).map_err(|e| fatal(format!("{}: {e}", out.display())))?;
    let out = out.canonicalize().unwrap_or(out);
    // The plan: the recorded contracts, the recorded questions, the model's tokenizer.
    let (contract, contract_text) = measure::read_speed_contract(&contract_path)?;
    let mut quality = Vec::new();
    for t in &recorded.bundle.quality {
        let (Some(c), Some(q)) = (
            raw_file(&opened, "quality-contract", Some(&t.test)),
            raw_file(&opened, "quality-answers", Some(&t.test)),
        ) else {
            notes.push(format!(
                "quality {}: no contract and answers file to re-ask; not replayed",
                t.test
            ));
            continue;
        };
        match measure::read_quality(&c, &q) {
            Ok(p) => quality.push(p),
            Err(e) => notes.push(format!("quality {}: not replayed: {e}", t.test)),
        }
    }
    let tokenizer = model_file
        .as_deref()
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .and_then(|p| {
            let g = rigaudit_engine::gguf::Gguf::open(p).ok()?;
            rigaudit_engine::tokenizer::EngineTokenizer::from_gguf(&g)
                .ok()
                .map(|t| t.inner)
        });
    if tokenizer.is_none() {
        notes.push(
            "no tokenizer from the checkpoint: prompt sizes probed with the server's usage".into(),
        );
    }
    let card_json: serde_json::Value = serde_json::from_str(&crate::input::read_text(
        &card_path,
        crate::input::CARD_MAX,
        "card",
    )?)
    .map_err(|e| fatal(format!("{}: {e}", card_path.display())))?;
    let session = Session {
        launches: &planned.launches,
        launchers: &planned.launchers,
        rank0: rank0.rank,
        base_url: &base_url,
        a,
        contract: &contract,
        contract_text: &contract_text,
        contract_origin: contract_path.display().to_string(),
        quality: &quality,
        tokenizer: tokenizer.as_ref(),
        card: &card_json,
        id: format!("{}-replay", opened.manifest.id),
        title: format!("Replay of {}", opened.manifest.title),
    };
    for l in &resolved.launches {
        say(format!("starting rank {}: {}", l.rank, l.shown.join(" ")));
    }
    let measured = session.run(&out.join("bundle"), &out.join("engine-logs"), &mut notes)?;
    let replayed_opened = bundle::open(&measured.dir)?;
    let replayed = bundle::load(&replayed_opened);

    let tol = Tolerance {
        rel_floor: a.rel_floor,
        alpha: a.alpha,
        max_floor: a.max_floor,
        ..Tolerance::default()
    };
    let mut compared = rigaudit_audit::replay::compare(&recorded.bundle, &replayed.bundle, &tol);
    // A speed value that drifted, or that was too noisy to judge, is measured once more in a
    // fresh session: drift stands only when that session moves the same way beyond the floor,
    // and a noisy value is judged again over both sessions' runs (see audit's `confirm`).
    let again = rigaudit_audit::replay::keys_to_confirm(&compared);
    if !again.is_empty() && a.confirm && measured.stopped.is_none() {
        say(format!(
            "{} speed value(s) drifted or too noisy to judge ({}); measuring a second session",
            again.len(),
            again.join(", ")
        ));
        let second = session.run(
            &out.join("confirm/bundle"),
            &out.join("confirm/engine-logs"),
            &mut notes,
        );
        match second.and_then(|m| bundle::open(&m.dir)) {
            Ok(o) => {
                let second = bundle::load(&o).bundle;
                let c2 = rigaudit_audit::replay::compare(&recorded.bundle, &second, &tol);
                let both = rigaudit_audit::replay::pool(&replayed.bundle, &second);
                let pooled = rigaudit_audit::replay::compare(&recorded.bundle, &both, &tol);
                rigaudit_audit::replay::confirm(&mut compared, &c2, Some(&pooled));
            }
            Err(e) => notes.push(format!("the confirming session could not run: {e}")),
        }
    }
    let mut findings = Vec::new();
    for n in &notes {
        findings.push(Finding::new("replay.note", Severity::Info, n.clone()));
    }
    findings.extend(rigaudit_audit::replay::failed_steps(
        &recorded.bundle,
        &replayed.bundle,
        measured.stopped.as_deref(),
    ));
    findings.extend(compared.findings);
    // The replayed bundle's own invalid steps, as verify sees them.
    let v = rigaudit_audit::verify(&replayed.bundle);
    for mut f in replayed.findings.into_iter().chain(v.findings) {
        // Foreign load during the replay is the comparison's to judge (its rows say
        // "inconclusive: foreign load"); it is not a fault of the page.
        if f.check == "speed.load-guard" {
            f.severity = Severity::Info;
        }
        f.file = Some(format!(
            "{}/{}",
            measured.dir.display(),
            f.file.unwrap_or_default()
        ));
        f.message = format!("replay: {}", f.message);
        findings.push(f);
    }
    let mut ran = compared.checks_run;
    ran.push("replay.step-failed".into());
    let report = Report::new(
        "replay",
        &opened.manifest.id,
        fail_on,
        ran,
        Vec::new(),
        findings,
    )
    .with_comparisons(compared.rows);
    Ok(Replayed {
        report,
        bundle: measured.dir,
    })
}
