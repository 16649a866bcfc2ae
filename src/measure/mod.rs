//! `rigaudit measure`: measures a running OpenAI-compatible server with a speed contract and writes
//! a bundle (`bundle.json`, speed contract, speed result, log) that `verify` reads.
//!
//! Every request carries a nonce and a fresh cache salt and asks for no prompt cache; cached
//! tokens are recorded so that `verify` can check them. A step whose prompt plus reply cannot fit
//! the window the server reports is recorded as not fitting and is not sent. The result is written
//! atomically after every step, so a run that dies keeps what it measured.

pub mod client;
pub mod prompts;
pub mod quality;

use crate::fatal::{fatal, Fatal};
use crate::output::write_atomic;
use client::{Client, Timed};
use rigaudit_audit::records::speed::{
    DraftCount, FitRow, ServerSeen, SpeedContract, SpeedRequest, SpeedResult,
};
use rigaudit_audit::startline;
use serde_json::{json, Value};
use std::collections::BTreeMap;
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
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
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
}

fn nonce(seq: &mut u64) -> String {
    *seq += 1;
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:016x}{:04x}",
        (t as u64) ^ (*seq).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        *seq & 0xffff
    )
}

/// One quality test as asked: its id, start, end and answers.
type AskedTest = (
    String,
    chrono::DateTime<chrono::Utc>,
    chrono::DateTime<chrono::Utc>,
    Vec<rigaudit_audit::records::quality::Answer>,
);

struct Run<'a> {
    c: &'a SpeedContract,
    client: Client,
    seq: u64,
    requests: Vec<SpeedRequest>,
    drafts: Vec<DraftCount>,
    fits: Vec<FitRow>,
    log: Vec<String>,
    /// Per quality test: id, start, end, answers.
    quality: Vec<AskedTest>,
    bar: indicatif::ProgressBar,
    /// Tokens the server adds to a completion prompt beyond the tokenizer's count (a BOS).
    prompt_offset: Option<i64>,
    /// Why the run stopped early, if it did.
    stopped: Option<String>,
}

impl Run<'_> {
    /// Whether the run has stopped early.
    fn halted(&self) -> bool {
        self.stopped.is_some()
    }

    /// Asks the plan's liveness check; records why the run stops when it says so.
    fn stopped(&mut self, p: &Plan) -> bool {
        if self.stopped.is_none() {
            if let Some(why) = p.alive.as_ref().and_then(|f| f()) {
                self.log.push(format!("stopped: {why}"));
                self.stopped = Some(why);
            }
        }
        self.stopped.is_some()
    }

    fn body(&mut self, messages_or_prompt: Value, max_tokens: u64, chat: bool) -> Value {
        let n = nonce(&mut self.seq);
        let mut b = json!({
            "model": self.c.model,
            "max_tokens": max_tokens,
            "ignore_eos": true,
            "cache_prompt": false,
            "cache_salt": n,
            "user": n,
        });
        if chat {
            b["messages"] = messages_or_prompt;
            if let Some(t) = self.c.enable_thinking {
                b["chat_template_kwargs"] = json!({"enable_thinking": t});
            }
        } else {
            b["prompt"] = messages_or_prompt;
        }
        for (k, v) in &self.c.sampling {
            b[k.as_str()] = json!(v);
        }
        if let Some(s) = self.c.seed {
            b["seed"] = json!(s);
        }
        b
    }

    fn record(
        &mut self,
        step: &str,
        t: &Timed,
        max_tokens: u64,
        extra: impl FnOnce(&mut SpeedRequest),
    ) {
        let words = t.text.split_whitespace().count() as u64;
        let mut r = SpeedRequest {
            step: step.into(),
            prompt_id: None,
            run: None,
            warmup: false,
            depth: None,
            level: None,
            round: None,
            prompt_tokens: t.prompt_tokens,
            prompt_tokens_source: if t.prompt_tokens.is_some() {
                "usage".into()
            } else {
                "none".into()
            },
            completion_tokens: t.completion_tokens,
            completion_tokens_source: t.completion_source.into(),
            max_tokens,
            finish_reason: t.finish_reason.clone(),
            sent_s: t.sent_s,
            first_token_s: t.first_token_s,
            end_s: t.end_s,
            cached_tokens: t.cached_tokens,
            status: t.status,
            error: t.error.clone(),
            words: (t.status == 200).then_some(words),
            chars: (t.status == 200).then_some(t.text.chars().count() as u64),
            server_timings: t.server_timings.clone(),
        };
        extra(&mut r);
        self.bar.inc(1);
        if let Some(e) = &r.error {
            self.log.push(format!("{step}: HTTP {} {e}", r.status));
        }
        self.requests.push(r);
    }

    fn metrics(&self) -> Option<(u64, u64, u64)> {
        let text = self.client.get_text("/metrics").ok()?;
        let (mut drafts, mut drafted, mut accepted) = (None, None, None);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let mut it = line.split_whitespace();
            let (Some(name), Some(val)) = (it.next(), it.next()) else {
                continue;
            };
            let name = name.split('{').next().unwrap_or(name).to_lowercase();
            let Ok(v) = val.parse::<f64>() else { continue };
            if !name.contains("draft") && !name.contains("spec_decode") {
                continue;
            }
            if name.contains("accept") {
                accepted = Some(v as u64);
            } else if name.contains("num_drafts")
                || name.ends_with("drafts_total")
                || name.ends_with("drafts")
            {
                drafts = Some(v as u64);
            } else if name.contains("draft_tokens") || name.contains("drafted") {
                drafted = Some(v as u64);
            }
        }
        Some((drafts.unwrap_or(0), drafted?, accepted?))
    }
}

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
    })
}

/// What [`measure`] wrote.
pub struct Measured {
    /// The bundle's folder.
    pub dir: PathBuf,
    /// Why the run stopped before its end, if it did.
    pub stopped: Option<String>,
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
    serde_json::from_value(v).map_err(|e| fatal(format!("{}: {e}", path.display())))
}

/// Reads and schema-checks a speed contract; returns it with its text.
pub fn read_speed_contract(path: &Path) -> Result<(SpeedContract, String), Fatal> {
    let text = crate::input::read_text(path, crate::input::CONTRACT_MAX, "speed contract")?;
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
        questions: quality::read_questions(questions)?,
    })
}

/// Measures the server with the plan and writes the bundle; returns the bundle's folder. The
/// bundle is rewritten atomically after every step, so a run that stops keeps what it measured.
pub fn measure(p: &Plan) -> Result<Measured, Fatal> {
    let c = &p.contract;
    let client = Client::new(&p.base_url, Duration::from_secs(p.timeout)).map_err(fatal)?;
    let started = chrono::Utc::now();
    let models = client
        .models()
        .map_err(|e| fatal(format!("the server does not answer /models: {e}")))?;
    let window = startline::models_window(&models).unwrap_or(c.server.window);
    std::fs::create_dir_all(p.out.join("speed"))
        .map_err(|e| fatal(format!("{}: {e}", p.out.display())))?;
    let total_requests = planned_requests(c, window)
        + p.quality
            .iter()
            .map(|q| q.questions.len() as u64)
            .sum::<u64>();
    let bar = if p.progress {
        let b = indicatif::ProgressBar::new(total_requests);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg:<24} [{bar:30}] {pos}/{len} requests, {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut r = Run {
        c,
        client,
        seq: 0,
        requests: Vec::new(),
        drafts: Vec::new(),
        fits: Vec::new(),
        log: Vec::new(),
        quality: Vec::new(),
        bar: bar.clone(),
        prompt_offset: None,
        stopped: None,
    };
    // Without a tokenizer given, the server's own (the bundled engine serves /tokenizer.json).
    let served: Option<tokenizers::Tokenizer> = if p.tokenizer.is_none() {
        r.client
            .get_text("/tokenizer.json")
            .ok()
            .and_then(|t| t.parse().ok())
    } else {
        None
    };
    let tok = p.tokenizer.as_ref().or(served.as_ref());
    let tokenizer_note = match tok {
        Some(_) => {
            "prompt sizes: built with the model's tokenizer, confirmed by usage.prompt_tokens"
        }
        None => "prompt sizes: probed with the server's usage.prompt_tokens (no tokenizer given)",
    };
    r.log.push(tokenizer_note.to_string());
    let save =
        |r: &Run, ended: bool| -> Result<(), Fatal> { write_bundle(p, r, &models, started, ended) };
    let parts: Vec<&str> = c.parts.iter().map(String::as_str).collect();

    if !r.halted() && parts.contains(&"decode") {
        bar.set_message("decode");
        for w in 0..c.warmups {
            let pid = c
                .prompt_ids
                .first()
                .cloned()
                .unwrap_or_else(|| "code".into());
            let msgs = json!([{"role": "user", "content": prompts::builtin(&pid).unwrap_or("Write a long essay.")}]);
            let body = r.body(msgs, c.max_tokens, true);
            let t = r.client.stream("chat/completions", body.clone());
            r.record("decode", &t, c.max_tokens, |q| {
                q.prompt_id = Some(pid.clone());
                q.run = Some(w);
                q.warmup = true;
            });
        }
        for pid in c.prompt_ids.clone() {
            let Some(prompt) = prompts::builtin(&pid) else {
                return Err(fatal(format!(
                    "{}: no built-in prompt '{pid}' (built in: code, prose)",
                    p.contract_origin
                )));
            };
            for run in 1..=c.runs {
                let before = r.metrics();
                let body = r.body(
                    json!([{"role": "user", "content": prompt}]),
                    c.max_tokens,
                    true,
                );
                let t = r.client.stream("chat/completions", body.clone());
                let after = r.metrics();
                r.record("decode", &t, c.max_tokens, |q| {
                    q.prompt_id = Some(pid.clone());
                    q.run = Some(run);
                });
                if let (Some(b), Some(a)) = (before, after) {
                    r.drafts.push(DraftCount {
                        step: "decode".into(),
                        prompt_id: Some(pid.clone()),
                        run: Some(run),
                        drafts: a.0.saturating_sub(b.0),
                        drafted: a.1.saturating_sub(b.1),
                        accepted: a.2.saturating_sub(b.2),
                    });
                }
                save(&r, false)?;
                if r.stopped(p) {
                    break;
                }
            }
            if r.halted() {
                break;
            }
        }
    }
    if let (false, true, Some(pf)) = (r.halted(), parts.contains(&"prefill"), &c.prefill) {
        bar.set_message("prefill");
        for &depth in &pf.depths {
            if depth.saturating_add(pf.max_tokens) > window {
                r.fits.push(FitRow {
                    part: "prefill".into(),
                    depth,
                    max_tokens: pf.max_tokens,
                    window,
                    fits: false,
                    sent: false,
                });
                continue;
            }
            let prompt = match sized_prompt(&mut r, tok, depth) {
                Ok(x) => x,
                Err(e) => {
                    r.log.push(format!("stopped: {e}"));
                    r.stopped = Some(e.0);
                    break;
                }
            };
            for run in 1..=pf.runs {
                let body = r.body(json!(prompt), pf.max_tokens, false);
                let t = r.client.stream("completions", body.clone());
                r.record("prefill", &t, pf.max_tokens, |q| {
                    q.depth = Some(depth);
                    q.run = Some(run);
                });
            }
            save(&r, false)?;
            if r.stopped(p) {
                break;
            }
        }
    }
    if let (false, true, Some(cc)) = (r.halted(), parts.contains(&"conc"), &c.conc) {
        bar.set_message("conc");
        let prompt = prompts::builtin(&cc.prompt)
            .unwrap_or("Write a long essay.")
            .to_string();
        for &level in &cc.levels {
            for round in 1..=cc.rounds {
                let bodies: Vec<Value> = (0..level)
                    .map(|_| {
                        r.body(
                            json!([{"role": "user", "content": prompt}]),
                            cc.max_tokens,
                            true,
                        )
                    })
                    .collect();
                let barrier = std::sync::Barrier::new(level as usize);
                let client = &r.client;
                let results: Vec<Timed> = std::thread::scope(|s| {
                    let hs: Vec<_> = bodies
                        .iter()
                        .map(|b| {
                            let barrier = &barrier;
                            s.spawn(move || {
                                barrier.wait();
                                client.stream("chat/completions", b.clone())
                            })
                        })
                        .collect();
                    hs.into_iter()
                        .map(|h| h.join().unwrap_or_default())
                        .collect()
                });
                for t in &results {
                    r.record("conc", t, cc.max_tokens, |q| {
                        q.prompt_id = Some(cc.prompt.clone());
                        q.level = Some(level);
                        q.round = Some(round);
                    });
                }
            }
            save(&r, false)?;
            if r.stopped(p) {
                break;
            }
        }
    }
    if let (false, true, Some(cx)) = (r.halted(), parts.contains(&"ctx"), &c.ctx) {
        bar.set_message("ctx");
        for &depth in &cx.depths {
            let fits = depth.saturating_add(cx.max_tokens) <= window;
            r.fits.push(FitRow {
                part: "ctx".into(),
                depth,
                max_tokens: cx.max_tokens,
                window,
                fits,
                sent: fits,
            });
            if !fits {
                r.log.push(format!(
                    "ctx {depth}: {depth} + {} > window {window}: not sent",
                    cx.max_tokens
                ));
                continue;
            }
            let prompt = match sized_prompt(&mut r, tok, depth) {
                Ok(x) => x,
                Err(e) => {
                    r.log.push(format!("stopped: {e}"));
                    r.stopped = Some(e.0);
                    break;
                }
            };
            for run in 1..=cx.runs {
                let body = r.body(json!(prompt), cx.max_tokens, false);
                let t = r.client.stream("completions", body.clone());
                r.record("ctx", &t, cx.max_tokens, |q| {
                    q.depth = Some(depth);
                    q.run = Some(run);
                });
            }
            save(&r, false)?;
            if r.stopped(p) {
                break;
            }
        }
    }
    if let (false, true, Some(l1)) = (r.halted(), parts.contains(&"l1"), &c.l1) {
        bar.set_message("l1");
        let prompt = prompts::builtin("prose").unwrap_or_default();
        let body = r.body(
            json!([{"role": "user", "content": prompt}]),
            l1.max_tokens,
            true,
        );
        // The prompt's size is only known from the server; a reply cap alone larger than the window
        // cannot fit whatever the prompt.
        if l1.max_tokens >= window {
            r.fits.push(FitRow {
                part: "l1".into(),
                depth: 0,
                max_tokens: l1.max_tokens,
                window,
                fits: false,
                sent: false,
            });
            r.log.push(format!(
                "l1: a reply cap of {} cannot fit the {window}-token window: not sent",
                l1.max_tokens
            ));
        } else {
            let t = r.client.stream("chat/completions", body.clone());
            r.record("l1", &t, l1.max_tokens, |q| q.run = Some(1));
        }
    }
    for qp in &p.quality {
        if r.stopped(p) {
            break;
        }
        bar.set_message(qp.contract.test.clone());
        let t0 = chrono::Utc::now();
        let mut seq = r.seq;
        let answers = quality::ask_all(
            &r.client,
            &qp.contract,
            &c.model,
            &qp.questions,
            || nonce(&mut seq),
            || bar.inc(1),
        );
        r.seq = seq;
        let refused = answers.iter().filter(|a| !a.answered()).count();
        if refused > 0 {
            let first = answers.iter().find(|a| !a.answered());
            r.log.push(format!(
                "quality {}: {refused} of {} requests got no answer (first: HTTP {} {}); left out of the figures",
                qp.contract.test,
                answers.len(),
                first.map_or(0, |a| a.status),
                first.and_then(|a| a.error.clone()).unwrap_or_default()
            ));
        }
        r.quality
            .push((qp.contract.test.clone(), t0, chrono::Utc::now(), answers));
        save(&r, false)?;
    }
    bar.finish_and_clear();
    save(&r, true)?;
    Ok(Measured {
        dir: p.out.clone(),
        stopped: r.stopped.clone(),
    })
}

/// How many requests the speed part will send (for the progress bar).
fn planned_requests(c: &SpeedContract, window: u64) -> u64 {
    let has = |s: &str| c.parts.iter().any(|p| p == s);
    let mut n = 0u64;
    if has("decode") {
        n += u64::from(c.warmups) + c.prompt_ids.len() as u64 * u64::from(c.runs);
    }
    if let (true, Some(pf)) = (has("prefill"), &c.prefill) {
        n += pf
            .depths
            .iter()
            .filter(|d| **d + pf.max_tokens <= window)
            .count() as u64
            * u64::from(pf.runs);
    }
    if let (true, Some(cc)) = (has("conc"), &c.conc) {
        n += cc.levels.iter().map(|l| u64::from(*l)).sum::<u64>() * u64::from(cc.rounds);
    }
    if let (true, Some(cx)) = (has("ctx"), &c.ctx) {
        n += cx
            .depths
            .iter()
            .filter(|d| **d + cx.max_tokens <= window)
            .count() as u64
            * u64::from(cx.runs);
    }
    if has("l1") {
        n += 1;
    }
    n
}

/// A completion prompt of exactly `depth` tokens as the server counts them (its `usage`), found by
/// probing with one-token replies; the closest size at or under `depth` when no filler hits it.
fn sized_prompt(
    r: &mut Run,
    tok: Option<&tokenizers::Tokenizer>,
    depth: u64,
) -> Result<String, Fatal> {
    if let Some(tok) = tok {
        // The server may add tokens of its own (a BOS); learn how many from the first probe.
        let mut offset = r.prompt_offset.unwrap_or(0);
        for _ in 0..3 {
            let want = depth as i64 - offset;
            if want < 1 {
                break;
            }
            let (text, local) = prompts::exact(tok, want as usize)?;
            let body = r.body(json!(text), 1, false);
            let t = r.client.stream("completions", body);
            let Some(n) = t.prompt_tokens else {
                return Err(fatal(format!(
                    "sizing a {depth}-token prompt: the server gave no usage.prompt_tokens (HTTP {}{})",
                    t.status,
                    t.error.map(|e| format!(": {e}")).unwrap_or_default()
                )));
            };
            if n == depth {
                r.prompt_offset = Some(offset);
                return Ok(text);
            }
            offset = n as i64 - local as i64;
            r.prompt_offset = Some(offset);
        }
        r.log.push(format!(
            "prefill/ctx {depth}: the tokenizer's count and the server's usage did not meet; sized by probing instead"
        ));
    }
    let mut words = (depth as f64 / 1.6) as usize;
    let mut best: Option<(u64, String)> = None;
    for _ in 0..8 {
        let p = prompts::filler(words.max(1));
        let body = r.body(json!(p), 1, false);
        let t = r.client.stream("completions", body);
        let Some(n) = t.prompt_tokens else {
            return Err(fatal(format!(
                "sizing a {depth}-token prompt: the server gave no usage.prompt_tokens (HTTP {}{})",
                t.status,
                t.error.map(|e| format!(": {e}")).unwrap_or_default()
            )));
        };
        if n == depth {
            return Ok(p);
        }
        if n < depth && best.as_ref().is_none_or(|(b, _)| n > *b) {
            best = Some((n, p.clone()));
        }
        let per_word = n as f64 / words.max(1) as f64;
        let next = (words as f64 + (depth as f64 - n as f64) / per_word.max(0.1)).round() as usize;
        words = if next == words {
            if n > depth {
                words - 1
            } else {
                words + 1
            }
        } else {
            next
        };
    }
    best.map(|(_, p)| p)
        .ok_or_else(|| fatal(format!("could not size a prompt of {depth} tokens")))
}

fn write_bundle(
    p: &Plan,
    r: &Run,
    models: &Value,
    started: chrono::DateTime<chrono::Utc>,
    ended: bool,
) -> Result<(), Fatal> {
    let out = &p.out;
    let now = chrono::Utc::now();
    let stamp =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let run_label = format!("rigaudit-measure-{}", started.format("%Y%m%dT%H%M%SZ"));
    let mut result = SpeedResult {
        run: run_label.clone(),
        started: stamp(started),
        ended: stamp(now),
        server: ServerSeen {
            start_lines: p.start_lines.clone(),
            models: models.clone(),
        },
        requests: r.requests.clone(),
        drafts: r.drafts.clone(),
        fits: r.fits.clone(),
        values: BTreeMap::new(),
        load_guard: None,
    };
    result.values = rigaudit_audit::speed::recompute(r.c, &result);
    let mut log = r.log.join("\n");
    log.push('\n');
    if !ended {
        log.push_str("(run in progress or stopped before its end)\n");
    }
    // (kind, path, text, quality test)
    let mut files: Vec<(&str, String, String, Option<String>)> = Vec::new();
    if let Some(card) = &p.card {
        let mut card = card.clone();
        card["hardware"] = crate::host::hardware();
        card["measured"] = json!(stamp(started));
        files.push(("card", "card.json".into(), pretty(&card)?, None));
    }
    files.push((
        "speed-contract",
        "speed/speed-contract.json".into(),
        p.contract_text.clone(),
        None,
    ));
    files.push((
        "speed-result",
        "speed/speed-result.json".into(),
        pretty(&result)?,
        None,
    ));
    files.push(("log", "speed/log.txt".into(), log, None));
    let mut sessions =
        vec![json!({"name": "speed", "started": result.started, "ended": result.ended})];
    for (test, t0, t1, answers) in &r.quality {
        let Some(qp) = p.quality.iter().find(|q| &q.contract.test == test) else {
            continue;
        };
        let dir = format!("quality/{test}");
        let summary = quality::summary(&qp.contract, answers, &run_label, &stamp(*t0), &stamp(*t1));
        let mut lines = String::new();
        for a in answers {
            lines.push_str(&serde_json::to_string(a).map_err(|e| fatal(e.to_string()))?);
            lines.push('\n');
        }
        let qlog: String = answers
            .iter()
            .filter(|a| !a.answered())
            .map(|a| {
                format!(
                    "{}: HTTP {} {}\n",
                    a.id,
                    a.status,
                    a.error.as_deref().unwrap_or("")
                )
            })
            .collect();
        files.push((
            "quality-contract",
            format!("{dir}/contract.json"),
            qp.contract_text.clone(),
            Some(test.clone()),
        ));
        files.push((
            "quality-summary",
            format!("{dir}/summary.json"),
            pretty(&summary)?,
            Some(test.clone()),
        ));
        files.push((
            "quality-answers",
            format!("{dir}/answers.jsonl"),
            lines,
            Some(test.clone()),
        ));
        files.push(("log", format!("{dir}/log.txt"), qlog, Some(test.clone())));
        sessions.push(
            json!({"name": format!("quality {test}"), "started": stamp(*t0), "ended": stamp(*t1)}),
        );
    }
    let mut entries = Vec::new();
    for (kind, path, text, test) in &files {
        let to = out.join(path);
        if let Some(d) = to.parent() {
            std::fs::create_dir_all(d).map_err(|e| fatal(format!("{}: {e}", d.display())))?;
        }
        write_atomic(&to, text.as_bytes())?;
        let d = sha2::Sha256::digest(text.as_bytes());
        let mut e = json!({"kind": kind, "path": path, "sha256": d.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                            "published": true, "reconstructed": false});
        if let Some(t) = test {
            e["test"] = json!(t);
        }
        entries.push(e);
    }
    let model = startline::models_ids(models)
        .first()
        .cloned()
        .unwrap_or_default();
    let mut notes = vec!["written by rigaudit measure".to_string()];
    notes.extend(p.notes.iter().cloned());
    if let Some(why) = &r.stopped {
        notes.push(format!("the run stopped early: {why}"));
    }
    let manifest = json!({
        "format": "rigaudit-bundle/1",
        "id": p.id.clone().unwrap_or_else(|| format!("measure-{}", started.format("%Y%m%dt%H%M%Sz"))),
        "title": p.title.clone().unwrap_or_else(|| format!("rigaudit measure of {model}")),
        "source": null,
        "setup": {"engine": p.start_lines.first().cloned().unwrap_or_else(|| "unknown engine".into()), "checkpoint": model, "hardware": crate::host::describe()},
        "files": entries,
        "sessions": sessions,
        "notes": notes,
    });
    write_atomic(
        &out.join("bundle.json"),
        (serde_json::to_string_pretty(&manifest).map_err(|e| fatal(e.to_string()))? + "\n")
            .as_bytes(),
    )
}

/// Pretty JSON with a final newline, for the files of a bundle.
fn pretty<T: serde::Serialize>(v: &T) -> Result<String, Fatal> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| fatal(e.to_string()))? + "\n")
}

use sha2::Digest as _;
