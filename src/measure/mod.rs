//! `rigaudit measure`: measures a running OpenAI-compatible server with a speed contract and writes
//! a bundle (`bundle.json`, speed contract, speed result, log) that `verify` reads.
//!
//! Every request carries a nonce and a fresh cache salt and asks for no prompt cache; cached
//! tokens are recorded so that `verify` can check them. A step whose prompt plus reply cannot fit
//! the window the server reports is recorded as not fitting and is not sent. The result is written
//! atomically after every step, so a run that dies keeps what it measured.

mod client;
pub mod prompts;

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

struct Run<'a> {
    c: &'a SpeedContract,
    client: Client,
    seq: u64,
    requests: Vec<SpeedRequest>,
    drafts: Vec<DraftCount>,
    fits: Vec<FitRow>,
    log: Vec<String>,
}

impl Run<'_> {
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
        };
        extra(&mut r);
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

/// Runs the measurement and writes the bundle. Returns the bundle's folder.
pub fn run(args: &Args) -> Result<PathBuf, Fatal> {
    let text = std::fs::read_to_string(&args.contract)
        .map_err(|e| fatal(format!("{}: {e}", args.contract.display())))?;
    let cv: Value = serde_json::from_str(&text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: {e}",
            args.contract.display(),
            e.line(),
            e.column()
        ))
    })?;
    let errs = crate::schemas::errors(
        crate::schemas::validator(rigaudit_audit::records::FileKind::SpeedContract)
            .expect("schema"),
        &cv,
        5,
    );
    if !errs.is_empty() {
        let list: Vec<String> = errs.iter().map(|(p, m)| format!("at {p}: {m}")).collect();
        return Err(fatal(format!(
            "{}: not a speed contract: {}",
            args.contract.display(),
            list.join("; ")
        )));
    }
    let c: SpeedContract = serde_json::from_value(cv)
        .map_err(|e| fatal(format!("{}: {e}", args.contract.display())))?;
    let client = Client::new(&args.base_url, Duration::from_secs(args.timeout)).map_err(fatal)?;
    let started = chrono::Utc::now();
    let models = client
        .models()
        .map_err(|e| fatal(format!("the server does not answer /models: {e}")))?;
    let window = startline::models_window(&models).unwrap_or(c.server.window);
    let start_lines = match &args.start_log {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| fatal(format!("{}: {e}", p.display())))?
            .lines()
            .map(String::from)
            .collect(),
        None => Vec::new(),
    };
    std::fs::create_dir_all(args.out.join("speed"))
        .map_err(|e| fatal(format!("{}: {e}", args.out.display())))?;
    let mut r = Run {
        c: &c,
        client,
        seq: 0,
        requests: Vec::new(),
        drafts: Vec::new(),
        fits: Vec::new(),
        log: Vec::new(),
    };
    let save = |r: &Run, ended: bool| -> Result<(), Fatal> {
        write_bundle(&args.out, r, &models, &start_lines, started, ended, &text)
    };
    let parts: Vec<&str> = c.parts.iter().map(String::as_str).collect();

    if parts.contains(&"decode") {
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
                    args.contract.display()
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
            }
        }
    }
    if let (true, Some(p)) = (parts.contains(&"prefill"), &c.prefill) {
        for &depth in &p.depths {
            if depth.saturating_add(p.max_tokens) > window {
                r.fits.push(FitRow {
                    part: "prefill".into(),
                    depth,
                    max_tokens: p.max_tokens,
                    window,
                    fits: false,
                    sent: false,
                });
                continue;
            }
            let prompt = sized_prompt(&mut r, depth)?;
            for run in 1..=p.runs {
                let body = r.body(json!(prompt), p.max_tokens, false);
                let t = r.client.stream("completions", body.clone());
                r.record("prefill", &t, p.max_tokens, |q| {
                    q.depth = Some(depth);
                    q.run = Some(run);
                });
            }
            save(&r, false)?;
        }
    }
    if let (true, Some(cc)) = (parts.contains(&"conc"), &c.conc) {
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
        }
    }
    if let (true, Some(cx)) = (parts.contains(&"ctx"), &c.ctx) {
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
            let prompt = sized_prompt(&mut r, depth)?;
            for run in 1..=cx.runs {
                let body = r.body(json!(prompt), cx.max_tokens, false);
                let t = r.client.stream("completions", body.clone());
                r.record("ctx", &t, cx.max_tokens, |q| {
                    q.depth = Some(depth);
                    q.run = Some(run);
                });
            }
            save(&r, false)?;
        }
    }
    if let (true, Some(l1)) = (parts.contains(&"l1"), &c.l1) {
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
    save(&r, true)?;
    Ok(args.out.clone())
}

/// A completion prompt of exactly `depth` tokens as the server counts them (its `usage`), found by
/// probing with one-token replies; the closest size at or under `depth` when no filler hits it.
fn sized_prompt(r: &mut Run, depth: u64) -> Result<String, Fatal> {
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
    out: &Path,
    r: &Run,
    models: &Value,
    start_lines: &[String],
    started: chrono::DateTime<chrono::Utc>,
    ended: bool,
    contract_text: &str,
) -> Result<(), Fatal> {
    let now = chrono::Utc::now();
    let mut result = SpeedResult {
        run: format!("rigaudit-measure-{}", started.format("%Y%m%dT%H%M%SZ")),
        started: started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ended: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        server: ServerSeen {
            start_lines: start_lines.to_vec(),
            models: models.clone(),
        },
        requests: r.requests.clone(),
        drafts: r.drafts.clone(),
        fits: r.fits.clone(),
        values: BTreeMap::new(),
        load_guard: None,
    };
    result.values = rigaudit_audit::speed::recompute(r.c, &result);
    let result_text =
        serde_json::to_string_pretty(&result).map_err(|e| fatal(e.to_string()))? + "\n";
    let mut log = r.log.join("\n");
    log.push('\n');
    if !ended {
        log.push_str("(run in progress or stopped before its end)\n");
    }
    let files = [
        (
            "speed-contract",
            "speed/speed-contract.json",
            contract_text.to_string(),
        ),
        ("speed-result", "speed/speed-result.json", result_text),
        ("log", "speed/log.txt", log),
    ];
    let mut entries = Vec::new();
    for (kind, path, text) in &files {
        write_atomic(&out.join(path), text.as_bytes())?;
        let d = sha2::Sha256::digest(text.as_bytes());
        entries.push(json!({"kind": kind, "path": path, "sha256": d.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                            "published": true, "reconstructed": false}));
    }
    let model = startline::models_ids(models)
        .first()
        .cloned()
        .unwrap_or_default();
    let manifest = json!({
        "format": "rigaudit-bundle/1",
        "id": format!("measure-{}", started.format("%Y%m%dt%H%M%Sz")),
        "title": format!("rigaudit measure of {model}"),
        "source": null,
        "setup": {"engine": start_lines.first().cloned().unwrap_or_else(|| "unknown engine".into()), "checkpoint": model, "hardware": "this machine"},
        "files": entries,
        "sessions": [{"name": "speed", "started": result.started, "ended": result.ended}],
        "notes": ["written by rigaudit measure"],
    });
    write_atomic(
        &out.join("bundle.json"),
        (serde_json::to_string_pretty(&manifest).map_err(|e| fatal(e.to_string()))? + "\n")
            .as_bytes(),
    )
}

use sha2::Digest as _;
