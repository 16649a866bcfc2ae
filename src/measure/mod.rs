//! `rigaudit measure`: measures a running OpenAI-compatible server with a speed contract and writes
//! a bundle (`bundle.json`, speed contract, speed result, log) that `verify` reads.
//!
//! Every request carries a nonce and a fresh cache salt and asks for no prompt cache; cached
//! tokens are recorded so that `verify` can check them. A step whose prompt plus reply cannot fit
//! the window the server reports is recorded as not fitting and is not sent. The result is written
//! atomically after every step, so a run that dies keeps what it measured.
//!
//! Every counted try (a decode run, a prefill or context run, a concurrency round, the long
//! answer) runs under the foreign-load guard ([`guard`]) with the contract's rule, or the seeds'
//! rule when the contract states none; a try disturbed by another process is thrown away and
//! repeated, and every try has its row in the result's `load_guard`.
//!
//! The file is split like hyperfine's `benchmark/`: this module plans (options, reading the
//! contracts), [`run`] measures one part at a time, [`write`] writes the bundle.

pub mod client;
pub mod gpu;
pub mod guard;
pub mod prompts;
pub mod quality;
pub mod reference;
pub mod run;
pub mod schedule;
pub mod sse;
pub mod write;

use crate::fatal::{fatal, At, Fatal};
use client::Client;
use rigaudit_audit::records::speed::{LoadGuardRule, SpeedContract, SpeedRequest};
use rigaudit_audit::startline;
use run::{Part, Run, SizedSteps};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `rigaudit measure`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server's API root, for example http://127.0.0.1:8080/v1.
    #[arg(long)]
    pub base_url: String,
    /// The speed contract (schemas/speed-contract.schema.json).
    #[arg(long)]
    pub contract: PathBuf,
    /// Folder to write the bundle into.
    #[arg(long)]
    pub out: PathBuf,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// The server's start lines, to record with the result (a file; one line each).
    #[arg(long)]
    pub start_log: Option<PathBuf>,
    /// A quality test to run: its contract and a questions file (JSON Lines with id, prompt and
    /// gold; a bundle's answers file qualifies), as CONTRACT=QUESTIONS. Repeatable.
    #[arg(long, value_name = "CONTRACT=QUESTIONS")]
    pub quality: Vec<String>,
    /// The model's tokenizer.json, to build prompts of exact token counts. Without it the server's
    /// own `/tokenizer.json` is used when it serves one, else prompts are sized by probing the
    /// server's `usage`.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// A setup card to write into the bundle, its hardware replaced by this machine's.
    #[arg(long)]
    pub card: Option<PathBuf>,
    /// The bundle's id (default: `measure-<start time>`).
    #[arg(long)]
    pub id: Option<String>,
    /// The bundle's title (default: `rigaudit measure of <model>`).
    #[arg(long)]
    pub title: Option<String>,
    /// No progress bar: the global `--quiet`, set by `main`.
    #[arg(skip)]
    pub quiet: bool,
    /// The pid of the server's process (repeatable): it and its descendants are not foreign load.
    /// The owner of a loopback port being measured is found by itself.
    #[arg(long = "server-pid", value_name = "PID")]
    pub server_pids: Vec<u32>,
    /// Measure without the foreign-load guard (the result then records none).
    #[arg(long)]
    pub no_load_guard: bool,
    /// The GPU to read through NVML (libnvidia-ml.so.1) during every counted try (every 100 ms):
    /// a device index, `off`, or `auto` (device 0 when NVML loads and the server is on this
    /// machine's loopback).
    #[arg(long, default_value = "auto", value_parser = gpu::parse_choice, value_name = "N|auto|off")]
    pub gpu: gpu::Choice,
}

/// Everything one measurement needs, parsed and checked.
pub struct Plan {
    /// The server's API root.
    pub base_url: String,
    /// The speed contract.
    pub contract: SpeedContract,
    /// Its text as read (written into the bundle unchanged).
    pub contract_text: String,
    /// Where the contract came from, for messages.
    pub contract_origin: String,
    /// Quality tests to run.
    pub quality: Vec<quality::QualityPlan>,
    /// The tokenizer to size prompts with.
    pub tokenizer: Option<tokenizers::Tokenizer>,
    /// The card to write, if any.
    pub card: Option<Value>,
    /// The server's start lines.
    pub start_lines: Vec<String>,
    /// Folder to write the bundle into.
    pub out: PathBuf,
    /// Seconds one request may take.
    pub timeout: u64,
    /// Whether to draw a progress bar (only on a terminal).
    pub progress: bool,
    /// The bundle's id and title, when not the defaults.
    pub id: Option<String>,
    /// The bundle's title.
    pub title: Option<String>,
    /// Notes for the bundle's manifest (how a replay filled the recorded command, say).
    pub notes: Vec<String>,
    /// Checked between steps: when it returns a reason, the run stops there, keeping what it
    /// measured, and the reason is logged (replay: a rank exited).
    pub alive: Option<Box<dyn Fn() -> Option<String> + Send + Sync>>,
    /// The server's processes (not foreign load to the guard).
    pub server_pids: Vec<u32>,
    /// Whether the foreign-load guard watches.
    pub load_guard: bool,
    /// The GPU to read through NVML.
    pub gpu: gpu::Choice,
    /// Probe the machine-speed reference before the first counted step only, not before each
    /// (`ab`'s blocks: the reference is read between blocks).
    pub reference_once: bool,
    /// Prompts sized on this server by an earlier measurement, by depth, and where this one's
    /// go (`ab`'s blocks on a server kept up: a prompt is sized, with a request, once a server).
    pub sized: Option<SizedPrompts>,
}

/// Prompts of an exact token count, by depth, as one server counted them.
pub type SizedPrompts = std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<u64, String>>>;

/// Runs `rigaudit measure`: reads the contract, quality tests, tokenizer and card the options
/// name, then [`measure`]s.
pub fn run(args: &Args) -> Result<Measured, Fatal> {
    let (contract, contract_text) = read_speed_contract(&args.contract)?;
    let mut quality = Vec::new();
    for q in &args.quality {
        let Some((c, qs)) = q.split_once('=') else {
            return Err(fatal(format!(
                "--quality {q}: expected CONTRACT=QUESTIONS (a quality contract and a JSON Lines file of questions)"
            )));
        };
        quality.push(read_quality(Path::new(c), Path::new(qs))?);
    }
    let tokenizer = match &args.tokenizer {
        Some(t) => Some(
            tokenizers::Tokenizer::from_bytes(crate::input::read_bounded(
                t,
                crate::input::SIDE_FILE_MAX,
                "tokenizer",
            )?)
            .map_err(|e| fatal(format!("{}: not a tokenizer.json: {e}", t.display())))?,
        ),
        None => None,
    };
    let card = match &args.card {
        Some(c) => Some(read_json(c)?),
        None => None,
    };
    let start_lines = match &args.start_log {
        Some(p) => crate::input::read_text(p, crate::input::SIDE_FILE_MAX, "start log")?
            .lines()
            .map(String::from)
            .collect(),
        None => Vec::new(),
    };
    measure(&Plan {
        base_url: args.base_url.clone(),
        contract,
        contract_text,
        contract_origin: args.contract.display().to_string(),
        quality,
        tokenizer,
        card,
        start_lines,
        out: args.out.clone(),
        timeout: args.timeout,
        progress: !args.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        alive: None,
        notes: Vec::new(),
        id: args.id.clone(),
        title: args.title.clone(),
        server_pids: args.server_pids.clone(),
        load_guard: !args.no_load_guard,
        gpu: args.gpu,
        reference_once: false,
        sized: None,
    })
}

/// What [`measure`] wrote.
pub struct Measured {
    /// The bundle's folder.
    pub dir: PathBuf,
    /// Why the run stopped before its end, if it did.
    pub stopped: Option<String>,
    /// The speed steps in which no request got an answer (HTTP 2xx with no error), in the order
    /// they were first measured.
    pub unanswered: Vec<String>,
    /// Whether no step got an answer (at least one was measured).
    pub none_answered: bool,
}

/// The speed steps of `requests` in which no request got an answer (HTTP 2xx with no error), and
/// whether that is every step.
fn unanswered_steps(requests: &[SpeedRequest]) -> (Vec<String>, bool) {
    let mut steps: Vec<(&str, bool)> = Vec::new();
    for q in requests {
        let ok = (200..300).contains(&q.status) && q.error.is_none();
        match steps.iter_mut().find(|(s, _)| *s == q.step) {
            Some((_, any)) => *any |= ok,
            None => steps.push((&q.step, ok)),
        }
    }
    let none: Vec<String> = steps
        .iter()
        .filter(|(_, any)| !any)
        .map(|(s, _)| s.to_string())
        .collect();
    let all = !steps.is_empty() && none.len() == steps.len();
    (none, all)
}

fn read_json(path: &Path) -> Result<Value, Fatal> {
    let text = crate::input::read_text(path, crate::input::CARD_MAX, "card")?;
    serde_json::from_str(&text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

fn checked<T: serde::de::DeserializeOwned>(
    path: &Path,
    kind: rigaudit_audit::records::FileKind,
    text: &str,
) -> Result<T, Fatal> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: {e}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let errs = crate::schemas::errors(crate::schemas::validator(kind).expect("schema"), &v, 5);
    if !errs.is_empty() {
        let list: Vec<String> = errs.iter().map(|(p, m)| format!("at {p}: {m}")).collect();
        return Err(fatal(format!(
            "{}: not a {}: {}",
            path.display(),
            kind.name(),
            list.join("; ")
        )));
    }
    serde_json::from_value(v).at(path.display())
}

/// Reads and schema-checks a speed contract; returns it with its text.
pub fn read_speed_contract(path: &Path) -> Result<(SpeedContract, String), Fatal> {
    let text = crate::input::read_text(path, crate::input::CONTRACT_MAX, "speed contract")?;
    speed_contract_of(path, text)
}

/// A speed contract's text (read from `path`, which names it in messages), schema-checked.
pub fn speed_contract_of(path: &Path, text: String) -> Result<(SpeedContract, String), Fatal> {
    let c = checked(
        path,
        rigaudit_audit::records::FileKind::SpeedContract,
        &text,
    )?;
    Ok((c, text))
}

/// Reads a quality contract and its questions.
pub fn read_quality(contract: &Path, questions: &Path) -> Result<quality::QualityPlan, Fatal> {
    let text = crate::input::read_text(contract, crate::input::CONTRACT_MAX, "quality contract")?;
    let asked = crate::input::read_text(questions, crate::input::QUESTIONS_MAX, "questions file")?;
    quality_of((contract, text), (questions, &asked))
}

/// A quality contract's text and its questions' (each with the path that names it in messages),
/// checked and parsed.
pub fn quality_of(
    (contract, text): (&Path, String),
    (questions, asked): (&Path, &str),
) -> Result<quality::QualityPlan, Fatal> {
    let c: rigaudit_audit::records::QualityContract = checked(
        contract,
        rigaudit_audit::records::FileKind::QualityContract,
        &text,
    )?;
    // The test id names the files measure writes (quality/<test>/...).
    crate::input::safe_name(&c.test, "quality test id")?;
    Ok(quality::QualityPlan {
        contract: c,
        contract_text: text,
        questions: quality::questions_of(questions, asked)?,
    })
}

/// The progress bar: drawn only on a terminal.
fn progress_bar(show: bool, total: u64) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(total);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg:<24} [{bar:30}] {pos}/{len} requests, {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    b
}

/// The server's own processes for the guard: those the plan names, and the owner of the loopback
/// port the base URL points at.
fn server_processes(p: &Plan) -> Vec<u32> {
    let mut pids = p.server_pids.clone();
    if let Some(port) = loopback_port(&p.base_url) {
        pids.extend(guard::port_owners(port));
    }
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The port of a base URL on this machine's loopback (`localhost`, `127.x.x.x`, `[::1]`), if it is
/// one: a server this machine runs.
fn loopback_port(base_url: &str) -> Option<u16> {
    let url = base_url.trim_start_matches("http://");
    let hostport = url.split('/').next().unwrap_or("");
    let (host, port) = hostport.rsplit_once(':')?;
    let local = matches!(host, "localhost" | "[::1]") || host.starts_with("127.");
    local.then(|| port.parse().ok()).flatten()
}

/// Turns the machine's speed reference on when the server runs on this machine (its probes would
/// measure another machine than the engine's otherwise), and says so in the log.
fn start_reference(p: &Plan, r: &mut Run) {
    let here = loopback_port(&p.base_url).is_some();
    r.reference = if p.reference_once {
        reference::Reference::once(here)
    } else {
        reference::Reference::new(here)
    };
    r.log.push(if here && p.reference_once {
        "machine reference: a fixed kernel probed once, before the first counted step".to_string()
    } else if here {
        "machine reference: a fixed kernel probed before every counted step".to_string()
    } else {
        format!(
            "machine reference: not probed: the server ({}) is not on this machine's loopback",
            crate::input::without_credentials(&p.base_url)
        )
    });
}

/// Starts the guard the plan asks for, and says in the log what it watches.
fn start_guard(p: &Plan, r: &mut Run) {
    if !p.load_guard {
        r.log.push("load guard: off (--no-load-guard)".into());
        return;
    }
    let (rule, whose) = match &p.contract.load_guard {
        Some(rule) => (rule.clone(), "the contract's"),
        None => (
            LoadGuardRule::default_rule(),
            "the seeds' (the contract states none)",
        ),
    };
    let server = server_processes(p);
    r.log.push(format!(
        "load guard: {whose} rule; a try is repeated when one other process uses more than {} % of a core in {} samples in a row ({} s apart), {} tries at most; the server's processes {:?} and their children are not foreign",
        rule.threshold_pct,
        rule.consecutive,
        rule.interval_s,
        rule.max_tries.unwrap_or(3),
        server
    ));
    r.guard = Some(guard::Guard::start(rule, server));
}

/// Opens the GPU the plan asks for, and says in the log what it reads. `auto` without NVML (or
/// with the server elsewhere) reads nothing; a device asked for by index that cannot be read
/// stops the measurement.
fn start_gpu(p: &Plan, r: &mut Run) -> Result<(), Fatal> {
    let index = match p.gpu {
        gpu::Choice::Off => {
            r.log.push("gpu: not read (--gpu off)".into());
            return Ok(());
        }
        gpu::Choice::Auto if loopback_port(&p.base_url).is_none() => {
            r.log
                .push("gpu: not read: the server is not on this machine's loopback".into());
            return Ok(());
        }
        gpu::Choice::Auto => 0,
        gpu::Choice::Index(i) => i,
    };
    match gpu::Gpu::open(index, server_processes(p)) {
        Ok(g) => {
            r.log.push(g.describe());
            r.gpu = Some(g);
        }
        Err(e) if p.gpu == gpu::Choice::Auto => r.log.push(format!("gpu: none read ({e})")),
        Err(e) => return Err(fatal(format!("--gpu {index}: {e}"))),
    }
    Ok(())
}

/// The tokenizer the server at `base_url` serves (`/tokenizer.json`, as the bundled engine does),
/// when it serves one that parses.
pub fn served_tokenizer(base_url: &str, timeout_s: u64) -> Option<tokenizers::Tokenizer> {
    served_tokenizer_of(&Client::new(base_url, Duration::from_secs(timeout_s)).ok()?)
}

fn served_tokenizer_of(client: &Client) -> Option<tokenizers::Tokenizer> {
    client
        .get_text("/tokenizer.json")
        .ok()
        .and_then(|t| t.parse().ok())
}

/// Measures the server with the plan and writes the bundle; returns the bundle's folder. The
/// bundle is rewritten atomically after every step, so a run that stops keeps what it measured.
pub fn measure(p: &Plan) -> Result<Measured, Fatal> {
    let c = &p.contract;
    let client = Client::new(&p.base_url, Duration::from_secs(p.timeout)).map_err(fatal)?;
    let started = chrono::Utc::now();
    let models = client.models().at("the server does not answer /models")?;
    let window = startline::models_window(&models).unwrap_or(c.server.window);
    std::fs::create_dir_all(p.out.join("speed")).at(p.out.display())?;
    let questions: u64 = p.quality.iter().map(|q| q.questions.len() as u64).sum();
    let bar = progress_bar(p.progress, run::planned_requests(c, window) + questions);
    let mut r = Run::new(c, client, bar.clone());
    r.window = window;
    // Without a tokenizer given, the server's own (the bundled engine serves /tokenizer.json).
    let served = if p.tokenizer.is_none() {
        served_tokenizer_of(&r.client)
    } else {
        None
    };
    let tok = p.tokenizer.as_ref().or(served.as_ref());
    r.log.push(
        match tok {
            Some(_) => {
                "prompt sizes: built with the model's tokenizer, confirmed by usage.prompt_tokens"
            }
            None => {
                "prompt sizes: probed with the server's usage.prompt_tokens (no tokenizer given)"
            }
        }
        .to_string(),
    );
    start_guard(p, &mut r);
    start_reference(p, &mut r);
    start_gpu(p, &mut r)?;
    let save = write::Saver {
        plan: p,
        models,
        started,
    };
    speed_part(&mut r, tok, p, &save)?;
    for qp in &p.quality {
        if r.stopped(p) {
            break;
        }
        r.quality_test(qp);
        save.save(&r, false)?;
    }
    bar.finish_and_clear();
    save.save(&r, true)?;
    let (unanswered, none_answered) = unanswered_steps(&r.requests);
    Ok(Measured {
        dir: p.out.clone(),
        stopped: r.stopped.clone(),
        unanswered,
        none_answered,
    })
}

/// The speed part: decode's warm-ups, the counted tries of every step the contract lists in
/// rounds ([`schedule`]), then the long answer.
fn speed_part(
    r: &mut Run,
    tok: Option<&tokenizers::Tokenizer>,
    p: &Plan,
    save: &write::Saver,
) -> Result<(), Fatal> {
    let c = r.c;
    let has = |part: Part| c.parts.iter().any(|x| x == part.name());
    let sized = |depths, runs, max_tokens, min_try_ms| SizedSteps {
        depths,
        runs,
        max_tokens,
        min_try_ms,
        tokenizer: tok,
    };
    let mut steps = Vec::new();
    if has(Part::Decode) {
        steps.extend(schedule::decode_steps(r, p)?);
        r.warm_up();
    }
    if let (true, Some(pf)) = (has(Part::Prefill), &c.prefill) {
        let s = sized(&pf.depths, pf.runs, pf.max_tokens, pf.min_try_ms);
        steps.extend(schedule::sized_steps(r, Part::Prefill, s));
    }
    if let (true, Some(cc)) = (has(Part::Conc), &c.conc) {
        steps.extend(schedule::conc_steps(cc));
    }
    if let (true, Some(cx)) = (has(Part::Ctx), &c.ctx) {
        let s = sized(&cx.depths, cx.runs, cx.max_tokens, cx.min_try_ms);
        steps.extend(schedule::sized_steps(r, Part::Ctx, s));
    }
    schedule::run_rounds(r, &mut steps, p, save)?;
    if let (true, false, Some(l1)) = (has(Part::L1), r.stopped(p), &c.l1) {
        r.bar.set_message("l1");
        r.long_answer(l1.max_tokens);
    }
    save.save(r, false)
}

#[cfg(test)]
mod tests {
    use super::{loopback_port, unanswered_steps};
    use rigaudit_audit::records::speed::SpeedRequest;

    fn request(step: &str, status: u16, error: Option<&str>) -> SpeedRequest {
        serde_json::from_value(serde_json::json!({
            "step": step, "status": status, "error": error, "max_tokens": 8, "sent_s": 0.0,
            "prompt_tokens_source": "usage", "completion_tokens_source": "usage"
        }))
        .unwrap()
    }

    #[test]
    fn a_step_is_unanswered_when_none_of_its_requests_got_an_answer() {
        let rs = [
            request("decode", 200, None),
            request("prefill", 400, Some("too long")),
            request("conc", 200, Some("stream broke")),
            request("prefill", 503, None),
            request("conc", 200, None),
        ];
        assert_eq!(unanswered_steps(&rs), (vec!["prefill".to_string()], false));
        assert_eq!(
            unanswered_steps(&rs[1..3]),
            (vec!["prefill".to_string(), "conc".to_string()], true)
        );
        assert_eq!(unanswered_steps(&[]), (vec![], false));
    }

    #[test]
    fn only_a_server_on_this_machine_s_loopback_has_a_loopback_port() {
        assert_eq!(loopback_port("http://127.0.0.1:8080/v1"), Some(8080));
        assert_eq!(loopback_port("http://localhost:9/v1"), Some(9));
        assert_eq!(loopback_port("http://[::1]:18000/v1"), Some(18000));
        assert_eq!(loopback_port("http://10.0.0.7:8080/v1"), None);
        assert_eq!(loopback_port("http://box-1.example:8080/v1"), None);
        assert_eq!(loopback_port("http://127.0.0.1/v1"), None);
    }
}
