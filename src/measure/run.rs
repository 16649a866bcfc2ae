//! One measurement in progress: the records so far, and one function per part of the speed
//! contract (decode, prefill and context steps, concurrency rounds, the long answer) and for the
//! quality tests. Each counted try runs under the foreign-load guard ([`super::guard`]).

use super::client::{Client, Timed};
use super::guard::Guard;
use super::{prompts, quality, Plan};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::quality::Answer;
use rigaudit_audit::records::speed::{
    DraftCount, FitRow, SpeedContract, SpeedRequest, MAX_REPEATS,
};
use serde_json::{json, Value};
use std::time::Instant;

/// The parts of a speed contract (their counted tries are taken in rounds, see
/// [`super::schedule`]; the long answer last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Single-request decode per prompt.
    Decode,
    /// Prompt processing at sized depths.
    Prefill,
    /// Rounds of requests at once.
    Conc,
    /// Decode after a sized context.
    Ctx,
    /// The long answer.
    L1,
}

impl Part {
    /// The contract's name of the part.
    pub fn name(self) -> &'static str {
        match self {
            Part::Decode => "decode",
            Part::Prefill => "prefill",
            Part::Conc => "conc",
            Part::Ctx => "ctx",
            Part::L1 => "l1",
        }
    }
}

/// One quality test as asked.
pub struct AskedTest {
    /// The test's id.
    pub test: String,
    /// When its first question was sent.
    pub started: chrono::DateTime<chrono::Utc>,
    /// When its last answer came.
    pub ended: chrono::DateTime<chrono::Utc>,
    /// One answer per question.
    pub answers: Vec<Answer>,
}

/// A measurement in progress.
pub struct Run<'a> {
    pub c: &'a SpeedContract,
    pub client: Client,
    seq: u64,
    pub requests: Vec<SpeedRequest>,
    pub drafts: Vec<DraftCount>,
    pub fits: Vec<FitRow>,
    pub log: Vec<String>,
    pub quality: Vec<AskedTest>,
    pub bar: indicatif::ProgressBar,
    /// Tokens the server adds to a completion prompt beyond the tokenizer's count (a BOS).
    prompt_offset: Option<i64>,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
    /// The foreign-load guard, when one watches.
    pub guard: Option<Guard>,
    /// The window the server reports.
    pub window: u64,
    /// The machine's speed reference, probed before every counted step.
    pub reference: super::reference::Reference,
    /// The GPU read around every counted try, when one is.
    pub gpu: Option<super::gpu::Gpu>,
}

/// What disturbed a try, for the log: the foreign processes on the GPU, else the busiest foreign
/// program on the CPU.
fn disturbance(load: &super::guard::TryLoad, on_gpu: &[String]) -> String {
    if !on_gpu.is_empty() {
        return on_gpu.join(", ");
    }
    format!(
        "{} at {} % of a core, {} samples in a row",
        load.peak_process.as_deref().unwrap_or("a process"),
        load.peak_pct.unwrap_or(0.0),
        load.longest_run_over
    )
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

/// A one-message chat.
fn chat(content: &str) -> Value {
    json!([{"role": "user", "content": content}])
}

impl<'a> Run<'a> {
    pub fn new(c: &'a SpeedContract, client: Client, bar: indicatif::ProgressBar) -> Self {
        Run {
            c,
            client,
            seq: 0,
            requests: Vec::new(),
            drafts: Vec::new(),
            fits: Vec::new(),
            log: Vec::new(),
            quality: Vec::new(),
            bar,
            prompt_offset: None,
            stopped: None,
            guard: None,
            window: c.server.window,
            reference: Default::default(),
            gpu: None,
        }
    }

    /// Whether the run has stopped early.
    pub fn halted(&self) -> bool {
        self.stopped.is_some()
    }

    /// Asks the plan's liveness check; records why the run stops when it says so.
    pub fn stopped(&mut self, p: &Plan) -> bool {
        if self.stopped.is_none() {
            if let Some(why) = p.alive.as_ref().and_then(|f| f()) {
                self.stop(why);
            }
        }
        self.stopped.is_some()
    }

    pub(super) fn stop(&mut self, why: String) {
        self.log.push(format!("stopped: {why}"));
        self.stopped = Some(why);
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

    /// Sends one streamed request and records it.
    fn send(
        &mut self,
        step: &str,
        endpoint: &str,
        input: Value,
        max_tokens: u64,
        extra: impl FnOnce(&mut SpeedRequest),
    ) {
        let is_chat = endpoint.starts_with("chat");
        let body = self.body(input, max_tokens, is_chat);
        let t = self.client.stream(endpoint, body);
        self.record(step, &t, max_tokens, extra);
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
            // Its place in the run (prompt, run, warm-up, depth, level, round): `extra` sets it.
            ..SpeedRequest::default()
        };
        extra(&mut r);
        self.bar.inc(1);
        if let Some(e) = &r.error {
            self.log.push(format!("{step}: HTTP {} {e}", r.status));
        }
        self.requests.push(r);
    }

    /// The draft counters of the server's `/metrics`: drafts, drafted and accepted tokens.
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

    /// Runs one counted try of `step` (`decode/code/1`, `conc/4/2`) under the guard: a try the
    /// guard finds disturbed (a busy foreign process, or a foreign process on the GPU) is thrown
    /// away (its records removed) and repeated, up to the rule's tries; the last is kept whatever
    /// the guard saw, and its row says so.
    pub(super) fn guarded(&mut self, step: &str, mut try_once: impl FnMut(&mut Self)) {
        let max = self.guard.as_ref().map_or(1, Guard::max_tries);
        self.reference.sample(step);
        for attempt in 1..=max {
            let (reqs, drafts) = (self.requests.len(), self.drafts.len());
            let gpu0 = self.gpu.as_ref().map(super::gpu::Gpu::before);
            let t0 = Instant::now();
            try_once(self);
            let on_gpu = self.gpu_after(step, attempt, gpu0, reqs);
            let Some(g) = self.guard.as_mut() else { return };
            let load = g.judge(t0);
            let broken = g.disturbed(&load, &on_gpu);
            let last = attempt == max || self.stopped.is_some();
            g.record(step, attempt, &load, &on_gpu, !broken || last);
            if let Some(gpu) = self.gpu.as_mut() {
                gpu.set_kept(!broken || last);
            }
            if !broken {
                return;
            }
            let why = disturbance(&load, &on_gpu);
            if last {
                self.log.push(format!(
                    "load guard: {step} try {attempt} kept under foreign load ({why}): no try left"
                ));
                return;
            }
            self.log.push(format!(
                "load guard: {step} try {attempt} thrown away ({why}); repeating"
            ));
            self.requests.truncate(reqs);
            self.drafts.truncate(drafts);
        }
    }

    /// Reads the GPU at a try's end (when one is read) and records its row; the foreign
    /// processes seen on it.
    fn gpu_after(
        &mut self,
        step: &str,
        attempt: u32,
        before: Option<super::gpu::Before>,
        first_request: usize,
    ) -> Vec<String> {
        let (Some(gpu), Some(b)) = (self.gpu.as_mut(), before) else {
            return Vec::new();
        };
        let tokens = self.requests[first_request.min(self.requests.len())..]
            .iter()
            .map(|q| q.completion_tokens)
            .sum::<Option<u64>>();
        gpu.after(step, attempt, b, tokens)
    }

    /// Decode's warm-ups (not counted): the first prompt of the contract.
    pub fn warm_up(&mut self) {
        let c = self.c;
        let first = c
            .prompt_ids
            .first()
            .cloned()
            .unwrap_or_else(|| "code".into());
        for w in 0..c.warmups {
            let text = prompts::builtin(&first).unwrap_or("Write a long essay.");
            self.send(
                "decode",
                "chat/completions",
                chat(text),
                c.max_tokens,
                |q| {
                    q.prompt_id = Some(first.clone());
                    q.run = Some(w);
                    q.warmup = true;
                },
            );
        }
    }

    pub(super) fn decode_run(&mut self, pid: &str, prompt: &str, run: u32) {
        let before = self.metrics();
        let max = self.c.max_tokens;
        self.send("decode", "chat/completions", chat(prompt), max, |q| {
            q.prompt_id = Some(pid.to_string());
            q.run = Some(run);
        });
        let after = self.metrics();
        if let (Some(b), Some(a)) = (before, after) {
            self.drafts.push(DraftCount {
                step: "decode".into(),
                prompt_id: Some(pid.to_string()),
                run: Some(run),
                drafts: a.0.saturating_sub(b.0),
                drafted: a.1.saturating_sub(b.1),
                accepted: a.2.saturating_sub(b.2),
            });
        }
    }

    /// Whether a prefill or context step's prompt and reply fit the window; records its fits
    /// row (context steps: always; prefill: only when it does not fit) and logs a step not sent.
    pub(super) fn fits_window(&mut self, part: Part, depth: u64, max_tokens: u64) -> bool {
        let fits = depth.saturating_add(max_tokens) <= self.window;
        if !fits || part == Part::Ctx {
            self.fits.push(FitRow {
                part: part.name().into(),
                depth,
                max_tokens,
                window: self.window,
                fits,
                sent: fits,
            });
        }
        if !fits {
            self.log.push(format!(
                "{} {depth}: {depth} + {max_tokens} > window {}: not sent",
                part.name(),
                self.window
            ));
        }
        fits
    }

    /// One counted run of a prefill or context step: one request, or, when the part states
    /// `min_try_ms`, the request repeated until the repeats' times to first token add up to it
    /// (at most [`MAX_REPEATS`]; a request that fails ends the try), each numbered as a repeat.
    /// A short step timed once is mostly the clock and the scheduler; timed over a longer batch,
    /// its run is the batch's rate (see `figures::runs_of`).
    pub(super) fn sized_run(&mut self, step: &SizedTry, prompt: &str, run: u32) {
        let repeats = if step.min_try_ms.is_some() {
            MAX_REPEATS
        } else {
            1
        };
        let mut timed_s = 0.0;
        for repeat in 1..=repeats {
            if repeat > 1 {
                self.bar.inc_length(1);
            }
            let numbered = step.min_try_ms.map(|_| repeat);
            self.send(
                step.part,
                "completions",
                json!(prompt),
                step.max_tokens,
                |q| {
                    q.depth = Some(step.depth);
                    q.run = Some(run);
                    q.repeat = numbered;
                },
            );
            let Some(ttft) = self.requests.last().and_then(SpeedRequest::ttft) else {
                return;
            };
            timed_s += ttft;
            if timed_s * 1000.0 >= step.min_try_ms.unwrap_or(0) as f64 {
                return;
            }
        }
    }

    pub(super) fn conc_round(
        &mut self,
        cc: &rigaudit_audit::records::speed::ConcPart,
        prompt: &str,
        level: u32,
        round: u32,
    ) {
        let bodies: Vec<Value> = (0..level)
            .map(|_| self.body(chat(prompt), cc.max_tokens, true))
            .collect();
        let barrier = std::sync::Barrier::new(level as usize);
        let client = &self.client;
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
            self.record("conc", t, cc.max_tokens, |q| {
                q.prompt_id = Some(cc.prompt.clone());
                q.level = Some(level);
                q.round = Some(round);
            });
        }
    }

    /// The long answer: one request whose reply cap alone must fit the window.
    pub fn long_answer(&mut self, max_tokens: u64) {
        if max_tokens >= self.window {
            self.fits.push(FitRow {
                part: "l1".into(),
                depth: 0,
                max_tokens,
                window: self.window,
                fits: false,
                sent: false,
            });
            self.log.push(format!(
                "l1: a reply cap of {max_tokens} cannot fit the {}-token window: not sent",
                self.window
            ));
            return;
        }
        let prompt = prompts::builtin("prose").unwrap_or_default();
        self.guarded("l1", |r| {
            r.send("l1", "chat/completions", chat(prompt), max_tokens, |q| {
                q.run = Some(1)
            })
        });
    }

    /// Asks one quality test's questions (no guard: the seeds' quality tests have none).
    pub fn quality_test(&mut self, qp: &quality::QualityPlan) {
        self.bar.set_message(qp.contract.test.clone());
        let t0 = chrono::Utc::now();
        let mut seq = self.seq;
        let bar = self.bar.clone();
        let answers = quality::ask_all(
            &self.client,
            &qp.contract,
            &self.c.model,
            &qp.questions,
            || nonce(&mut seq),
            || bar.inc(1),
        );
        self.seq = seq;
        let refused = answers.iter().filter(|a| !a.answered()).count();
        if let Some(first) = answers.iter().find(|a| !a.answered()) {
            self.log.push(format!(
                "quality {}: {refused} of {} requests got no answer (first: HTTP {} {}); left out of the figures",
                qp.contract.test,
                answers.len(),
                first.status,
                first.error.clone().unwrap_or_default()
            ));
        }
        self.quality.push(AskedTest {
            test: qp.contract.test.clone(),
            started: t0,
            ended: chrono::Utc::now(),
            answers,
        });
    }

    /// A completion prompt of exactly `depth` tokens as the server counts them (its `usage`):
    /// built with the tokenizer when there is one, else found by probing with one-token replies
    /// (the closest size at or under `depth` when no filler hits it).
    pub(super) fn sized_prompt(
        &mut self,
        tok: Option<&tokenizers::Tokenizer>,
        depth: u64,
    ) -> Result<String, Fatal> {
        if let Some(tok) = tok {
            if let Some(text) = self.tokenized_prompt(tok, depth)? {
                return Ok(text);
            }
            self.log.push(format!(
                "prefill/ctx {depth}: the tokenizer's count and the server's usage did not meet; sized by probing instead"
            ));
        }
        self.probed_prompt(depth)
    }

    /// One probe: the server's prompt token count of `text`.
    fn probe(&mut self, text: &str, depth: u64) -> Result<u64, Fatal> {
        let body = self.body(json!(text), 1, false);
        let t = self.client.stream("completions", body);
        t.prompt_tokens.ok_or_else(|| {
            fatal(format!(
                "sizing a {depth}-token prompt: the server gave no usage.prompt_tokens (HTTP {}{})",
                t.status,
                t.error.map(|e| format!(": {e}")).unwrap_or_default()
            ))
        })
    }

    /// A prompt built with the tokenizer, confirmed by the server; the server may add tokens of
    /// its own (a BOS), learned from the first probe.
    fn tokenized_prompt(
        &mut self,
        tok: &tokenizers::Tokenizer,
        depth: u64,
    ) -> Result<Option<String>, Fatal> {
        let mut offset = self.prompt_offset.unwrap_or(0);
        for _ in 0..3 {
            let want = depth as i64 - offset;
            if want < 1 {
                break;
            }
            let (text, local) = prompts::exact(tok, want as usize)?;
            let n = self.probe(&text, depth)?;
            if n == depth {
                self.prompt_offset = Some(offset);
                return Ok(Some(text));
            }
            offset = n as i64 - local as i64;
            self.prompt_offset = Some(offset);
        }
        Ok(None)
    }

    fn probed_prompt(&mut self, depth: u64) -> Result<String, Fatal> {
        let mut words = (depth as f64 / 1.6) as usize;
        let mut best: Option<(u64, String)> = None;
        for _ in 0..8 {
            let p = prompts::filler(words.max(1));
            let n = self.probe(&p, depth)?;
            if n == depth {
                return Ok(p);
            }
            if n < depth && best.as_ref().is_none_or(|(b, _)| n > *b) {
                best = Some((n, p.clone()));
            }
            let per_word = n as f64 / words.max(1) as f64;
            let next =
                (words as f64 + (depth as f64 - n as f64) / per_word.max(0.1)).round() as usize;
            words = match (next == words, n > depth) {
                (true, true) => words - 1,
                (true, false) => words + 1,
                (false, _) => next,
            };
        }
        best.map(|(_, p)| p)
            .ok_or_else(|| fatal(format!("could not size a prompt of {depth} tokens")))
    }
}

/// One try of a prefill or context step, as [`Run::sized_run`] sends it.
pub struct SizedTry<'p> {
    /// `prefill` or `ctx`.
    pub part: &'p str,
    pub depth: u64,
    pub max_tokens: u64,
    pub min_try_ms: Option<u64>,
}

/// What prefill and context steps share: depths, runs and reply cap, the least timed work of a
/// run, and the tokenizer that sizes their prompts.
#[derive(Clone, Copy)]
pub struct SizedSteps<'t> {
    pub depths: &'t [u64],
    pub runs: u32,
    pub max_tokens: u64,
    /// The least timed work of one run (times to first token), in milliseconds.
    pub min_try_ms: Option<u64>,
    pub tokenizer: Option<&'t tokenizers::Tokenizer>,
}

/// How many requests the speed part will send (for the progress bar).
pub fn planned_requests(c: &SpeedContract, window: u64) -> u64 {
    let has = |s: &str| c.parts.iter().any(|p| p == s);
    let sized = |depths: &[u64], max: u64, runs: u32| {
        depths.iter().filter(|d| **d + max <= window).count() as u64 * u64::from(runs)
    };
    let mut n = 0u64;
    if has("decode") {
        n += u64::from(c.warmups) + c.prompt_ids.len() as u64 * u64::from(c.runs);
    }
    if let (true, Some(pf)) = (has("prefill"), &c.prefill) {
        n += sized(&pf.depths, pf.max_tokens, pf.runs);
    }
    if let (true, Some(cc)) = (has("conc"), &c.conc) {
        n += cc.levels.iter().map(|l| u64::from(*l)).sum::<u64>() * u64::from(cc.rounds);
    }
    if let (true, Some(cx)) = (has("ctx"), &c.ctx) {
        n += sized(&cx.depths, cx.max_tokens, cx.runs);
    }
    if has("l1") {
        n += 1;
    }
    n
}
