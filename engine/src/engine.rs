//! The scheduler: one thread owns the model, the thread pool and one KV cache
//! per slot, and runs continuous batching — requests join and leave between
//! decode steps, prompt chunks and decode tokens of all active slots share
//! each forward pass, and requests beyond the slot count wait in a queue.
//!
//! Log-probabilities, when a request asks for them, are those of the raw
//! model distribution, as the OpenAI API and vLLM define them: the
//! log-softmax of the unprocessed logits (temperature 1, before top-k,
//! top-p or any other sampling transform), whatever temperature the request
//! samples with. Prompt log-probabilities (`echo`) score each prompt token
//! under the distribution predicted from the tokens before it; the first
//! prompt token has none.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::model::{Chunk, Forward};
use crate::tokenizer::EngineTokenizer;

/// Sampling and stopping parameters of one request.
#[derive(Debug, Clone)]
pub struct GenParams {
    /// Softmax temperature; `<= 0` means greedy.
    pub temperature: f32,
    /// Nucleus sampling mass (1.0 = off).
    pub top_p: f32,
    /// Top-k cut (0 = off).
    pub top_k: usize,
    /// RNG seed; random when absent.
    pub seed: Option<u64>,
    /// Maximum tokens to generate.
    pub max_tokens: usize,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Keep generating past end-of-sequence tokens.
    pub ignore_eos: bool,
    /// Reuse a cached prompt prefix from an earlier request.
    pub cache_prompt: bool,
    /// Cache namespace: prefixes are only shared between equal salts.
    pub cache_salt: String,
    /// Log-probabilities of generated tokens, with this many top
    /// alternatives (`None`: none at all).
    pub logprobs: Option<usize>,
    /// Also the prompt tokens' log-probabilities (the prompt is then
    /// evaluated in full, without the prompt cache).
    pub prompt_logprobs: bool,
}

/// Log-probability of one token under the raw model distribution, with the
/// most likely alternatives at its position.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    /// Token id.
    pub id: u32,
    /// Its log-probability (`None` for the first prompt token).
    pub logprob: Option<f32>,
    /// Top alternatives (id, log-probability), most likely first.
    pub top: Vec<(u32, f32)>,
}

/// Log-softmax of `logits` at `id`, and the `k` most likely tokens (ties go
/// to the lower id, as in greedy sampling). Sums in f64.
pub fn token_logprob(logits: &[f32], id: u32, k: usize) -> TokenLogprob {
    let mx = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&v| ((v - mx) as f64).exp()).sum();
    let lse = mx as f64 + sum.ln();
    let lp = |i: u32| (logits[i as usize] as f64 - lse) as f32;
    let mut top = Vec::new();
    if k > 0 {
        let idx = top_ids(logits, k.min(logits.len()));
        top = idx.into_iter().map(|i| (i, lp(i))).collect();
    }
    TokenLogprob {
        id,
        logprob: Some(lp(id)),
        top,
    }
}

/// Sampling defaults (from the model file when it carries them).
#[derive(Debug, Clone, Copy)]
pub struct SamplingDefaults {
    /// Temperature.
    pub temperature: f32,
    /// Top-p.
    pub top_p: f32,
    /// Top-k.
    pub top_k: usize,
}

/// What a request's stream receives.
#[derive(Debug, Clone)]
pub enum Event {
    /// New text (may be empty when a token produced no printable text yet).
    Text(String),
    /// Log-probability of a generated token; sent before the text it adds.
    Token(TokenLogprob),
    /// Log-probabilities of prompt tokens, in order (`prompt_logprobs`).
    Prompt(Vec<TokenLogprob>),
    /// Generation ended.
    Done(Usage),
}

/// Final accounting of a request.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// `stop` or `length`.
    pub finish_reason: &'static str,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens.
    pub completion_tokens: usize,
    /// Prompt tokens served from the prompt cache.
    pub cached_tokens: usize,
    /// Draft tokens proposed for this request.
    pub drafted: usize,
    /// Draft tokens accepted for this request.
    pub accepted: usize,
    /// Seconds spent on the prompt (queue excluded).
    pub prompt_ms: f64,
    /// Seconds spent generating.
    pub gen_ms: f64,
}

/// A request handed to the engine.
pub struct Request {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Parameters.
    pub params: GenParams,
    /// Where events go; dropping the receiver cancels the request.
    pub tx: UnboundedSender<Event>,
}

/// Counters exported on `/metrics`.
#[derive(Default)]
pub struct Metrics {
    /// Prompt tokens evaluated (cache hits excluded).
    pub prompt_tokens: AtomicU64,
    /// Prompt tokens reused from the cache.
    pub cached_tokens: AtomicU64,
    /// Tokens generated.
    pub generated_tokens: AtomicU64,
    /// Slots busy right now.
    pub busy_slots: AtomicU64,
    /// Requests waiting for a slot.
    pub queued: AtomicU64,
    /// Draft tokens proposed.
    pub drafted: AtomicU64,
    /// Draft tokens accepted.
    pub accepted: AtomicU64,
    /// Requests finished.
    pub requests: AtomicU64,
    /// Requests cancelled by the client.
    pub cancelled: AtomicU64,
    /// Forward passes run.
    pub steps: AtomicU64,
}

/// Draft mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draft {
    /// No drafting.
    Off,
    /// Prompt-lookup ("copies") drafting.
    Copies,
}

/// Engine settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Slots (streams served at once).
    pub parallel: usize,
    /// Context window per request.
    pub window: usize,
    /// Max prompt tokens evaluated per step (shared by prefilling slots).
    pub batch: usize,
    /// Draft mode.
    pub draft: Draft,
    /// Max draft tokens per step per slot.
    pub draft_max: usize,
    /// A deliberate slowdown (`serve --decode-delay-ms` / `--decode-delay-us`), taken once in
    /// every step that runs decode chunks, after its forward pass.
    pub decode_delay: DecodeDelay,
}

/// How a decode step is slowed on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecodeDelay {
    /// No slowdown.
    #[default]
    None,
    /// Sleeps (`--decode-delay-ms`): a slow engine without a busy core; what a sleep costs
    /// varies with the scheduler's wake-up (on a shared VM from nothing to twice the sleep).
    Sleep(Duration),
    /// Busy-waits on the step's thread (`--decode-delay-us`): a fixed amount of work a token, as
    /// a slower kernel would add, so a few-percent slowdown is that few percent in every session.
    Spin(Duration),
}

impl DecodeDelay {
    /// The time it adds to a step.
    pub fn duration(self) -> Duration {
        match self {
            DecodeDelay::None => Duration::ZERO,
            DecodeDelay::Sleep(d) | DecodeDelay::Spin(d) => d,
        }
    }

    /// Takes it: sleeps or busy-waits for its duration.
    fn take(self) {
        match self {
            DecodeDelay::None => {}
            DecodeDelay::Sleep(d) => std::thread::sleep(d),
            DecodeDelay::Spin(d) => {
                let start = std::time::Instant::now();
                while start.elapsed() < d {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

struct Active {
    req: Request,
    prompt_done: usize,
    generated: Vec<u32>,
    pending: Option<u32>,
    rng: u64,
    emitted: usize,
    cached: usize,
    drafted: usize,
    accepted: usize,
    t_start: Instant,
    t_first: Option<Instant>,
}

struct Slot {
    /// Tokens whose K/V are valid in this slot's cache, in order.
    tokens: Vec<u32>,
    salt: String,
    active: Option<Active>,
    last_used: u64,
}

/// Handle for submitting requests to the engine thread.
#[derive(Clone)]
pub struct EngineHandle {
    tx: Sender<Request>,
    /// Shared counters.
    pub metrics: Arc<Metrics>,
}

impl EngineHandle {
    /// Queue a request. Fails only if the engine thread is gone.
    pub fn submit(&self, r: Request) -> Result<(), String> {
        self.metrics.queued.fetch_add(1, Ordering::Relaxed);
        self.tx.send(r).map_err(|_| "engine stopped".to_string())
    }
}

/// Start the engine thread; with its handle, a receiver that hears once the thread has ended
/// (every handle dropped) and its forward pass is dropped (a tensor-parallel rank 0 then has told
/// its followers to stop).
pub fn start(
    model: Box<dyn Forward>,
    tok: Arc<EngineTokenizer>,
    cfg: EngineConfig,
) -> (EngineHandle, Receiver<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let (ended, ended_rx) = std::sync::mpsc::channel();
    let metrics = Arc::new(Metrics::default());
    let m2 = metrics.clone();
    std::thread::Builder::new()
        .name("engine-scheduler".into())
        .spawn(move || {
            Scheduler::new(model, tok, cfg, m2).run(rx);
            let _ = ended.send(());
        })
        .expect("spawn engine thread");
    (EngineHandle { tx, metrics }, ended_rx)
}

struct Scheduler {
    /// The forward pass with its slots' KV caches (CPU or GPU).
    model: Box<dyn Forward>,
    tok: Arc<EngineTokenizer>,
    cfg: EngineConfig,
    metrics: Arc<Metrics>,
    slots: Vec<Slot>,
    queue: VecDeque<Request>,
    clock: u64,
    seed_ctr: u64,
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// Sample a token from logits with the given parameters.
pub fn sample(logits: &[f32], p: &GenParams, rng: &mut u64) -> u32 {
    if p.temperature <= 0.0 || p.top_k == 1 {
        return argmax(logits);
    }
    let k = if p.top_k == 0 {
        logits.len()
    } else {
        p.top_k.min(logits.len())
    };
    let idx = top_ids(logits, k);
    let mut probs = softmax_at(logits, &idx, p.temperature);
    if p.top_p < 1.0 {
        nucleus(&mut probs, p.top_p);
    }
    let r = (splitmix(rng) >> 40) as f32 / (1u64 << 24) as f32;
    let mut c = 0.0;
    for (i, q) in probs.iter().enumerate() {
        c += q;
        if r < c {
            return idx[i];
        }
    }
    idx[probs.len() - 1]
}

/// Greedy choice: the id of the largest logit (the first of equal ones).
fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// The ids of the `k` largest logits (`1 <= k <= logits.len()`), largest first; ties go to
/// the lower id.
fn top_ids(logits: &[f32], k: usize) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..logits.len() as u32).collect();
    let cmp = |a: &u32, b: &u32| {
        logits[*b as usize]
            .total_cmp(&logits[*a as usize])
            .then(a.cmp(b))
    };
    if k < idx.len() {
        idx.select_nth_unstable_by(k - 1, cmp);
        idx.truncate(k);
    }
    idx.sort_unstable_by(cmp);
    idx
}

/// Probabilities of the tokens `idx` (largest logit first) at `temperature`, normalised over them.
fn softmax_at(logits: &[f32], idx: &[u32], temperature: f32) -> Vec<f32> {
    let mx = logits[idx[0] as usize];
    let mut probs: Vec<f32> = idx
        .iter()
        .map(|&i| ((logits[i as usize] - mx) / temperature).exp())
        .collect();
    let sum: f32 = probs.iter().sum();
    for q in probs.iter_mut() {
        *q /= sum;
    }
    probs
}

/// Nucleus cut: keeps the most likely probabilities (sorted, largest first) up to mass
/// `top_p` and renormalises them.
fn nucleus(probs: &mut Vec<f32>, top_p: f32) {
    let mut c = 0.0;
    let mut cut = probs.len();
    for (i, q) in probs.iter().enumerate() {
        c += q;
        if c >= top_p {
            cut = i + 1;
            break;
        }
    }
    probs.truncate(cut);
    let s: f32 = probs.iter().sum();
    for q in probs.iter_mut() {
        *q /= s;
    }
}

/// Prompt-lookup drafting: find the most recent earlier occurrence of the
/// last n-gram of `hist` and propose up to `max` tokens that followed it.
pub fn copies_draft(hist: &[u32], max: usize) -> Vec<u32> {
    if max == 0 {
        return Vec::new();
    }
    for n in [3usize, 2] {
        if hist.len() <= n {
            continue;
        }
        let tail = &hist[hist.len() - n..];
        let end = hist.len() - n;
        for start in (0..end).rev() {
            if &hist[start..start + n] == tail {
                let from = start + n;
                let to = (from + max).min(hist.len());
                if from < to {
                    return hist[from..to].to_vec();
                }
            }
        }
    }
    Vec::new()
}

/// What a chunk of a step feeds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChunkKind {
    /// Prompt tokens with more of the prompt after them.
    PrefillMid,
    /// The prompt's last tokens: the first token is sampled after them.
    PrefillLast,
    /// A decoding slot's pending token, then its draft tokens.
    Decode,
}

/// One slot's chunk in a step's plan.
struct Planned {
    /// Slot index.
    slot: usize,
    /// Tokens to feed.
    tokens: Vec<u32>,
    /// Position of the first.
    pos: usize,
    kind: ChunkKind,
    /// Draft tokens after the pending one (decode chunks).
    drafts: usize,
}

impl Scheduler {
    fn new(
        model: Box<dyn Forward>,
        tok: Arc<EngineTokenizer>,
        cfg: EngineConfig,
        metrics: Arc<Metrics>,
    ) -> Self {
        let slots = (0..cfg.parallel)
            .map(|_| Slot {
                tokens: Vec::new(),
                salt: String::new(),
                active: None,
                last_used: 0,
            })
            .collect();
        let seed_ctr = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Scheduler {
            model,
            tok,
            cfg,
            metrics,
            slots,
            queue: VecDeque::new(),
            clock: 0,
            seed_ctr,
        }
    }

    fn run(&mut self, rx: Receiver<Request>) {
        loop {
            let busy = self.slots.iter().any(|s| s.active.is_some());
            if !busy && self.queue.is_empty() {
                match rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(r) => self.queue.push_back(r),
                    Err(RecvTimeoutError::Timeout) => {
                        self.model.idle();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            while let Ok(r) = rx.try_recv() {
                self.queue.push_back(r);
            }
            self.drop_cancelled();
            self.admit();
            self.step();
        }
    }

    fn drop_cancelled(&mut self) {
        let before = self.queue.len();
        self.queue.retain(|r| !r.tx.is_closed());
        let gone = before - self.queue.len();
        if gone > 0 {
            self.metrics
                .queued
                .fetch_sub(gone as u64, Ordering::Relaxed);
            self.metrics
                .cancelled
                .fetch_add(gone as u64, Ordering::Relaxed);
        }
        for s in &mut self.slots {
            if s.active.as_ref().is_some_and(|a| a.req.tx.is_closed()) && s.active.take().is_some()
            {
                self.metrics.busy_slots.fetch_sub(1, Ordering::Relaxed);
                self.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Moves queued requests into free slots, each to the slot holding the longest reusable
    /// prefix of its prompt (ties: the least recently used), until either runs out.
    fn admit(&mut self) {
        while !self.queue.is_empty() {
            let free: Vec<usize> = (0..self.slots.len())
                .filter(|&i| self.slots[i].active.is_none())
                .collect();
            if free.is_empty() {
                return;
            }
            let Some(req) = self.queue.pop_front() else {
                return;
            };
            self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
            let (best, cached) = self.best_slot(&req, &free);
            self.clock += 1;
            let seed = req.params.seed.unwrap_or_else(|| {
                self.seed_ctr = self.seed_ctr.wrapping_add(0x9E37);
                splitmix(&mut self.seed_ctr)
            });
            let slot = &mut self.slots[best];
            slot.tokens.truncate(cached);
            slot.salt = req.params.cache_salt.clone();
            slot.last_used = self.clock;
            self.metrics
                .cached_tokens
                .fetch_add(cached as u64, Ordering::Relaxed);
            self.metrics.busy_slots.fetch_add(1, Ordering::Relaxed);
            slot.active = Some(Active {
                req,
                prompt_done: cached,
                generated: Vec::new(),
                pending: None,
                rng: seed,
                emitted: 0,
                cached,
                drafted: 0,
                accepted: 0,
                t_start: Instant::now(),
                t_first: None,
            });
        }
    }

    /// The free slot (of `free`, not empty) to serve `req` in, and how many of its prompt
    /// tokens that slot's cache already holds (never the whole prompt: the last token is
    /// evaluated for its logits).
    fn best_slot(&self, req: &Request, free: &[usize]) -> (usize, usize) {
        let prompt = &req.prompt;
        let limit = prompt.len().saturating_sub(1);
        let reuse = |s: &Slot| -> usize {
            if !req.params.cache_prompt
                || req.params.prompt_logprobs
                || s.salt != req.params.cache_salt
            {
                return 0;
            }
            s.tokens
                .iter()
                .zip(prompt.iter())
                .take_while(|(a, b)| a == b)
                .count()
                .min(limit)
        };
        // Best prefix match; ties go to the least recently used slot.
        let best = free
            .iter()
            .copied()
            .max_by_key(|&i| (reuse(&self.slots[i]), u64::MAX - self.slots[i].last_used))
            .unwrap_or(free[0]);
        (best, reuse(&self.slots[best]))
    }

    /// One forward pass: plans this step's chunks (every decoding slot's pending token and
    /// drafts, then prompt chunks within the batch budget), runs them, and applies the logits.
    fn step(&mut self) {
        let mut plan = self.plan_decodes();
        self.plan_prefills(&mut plan);
        if plan.is_empty() {
            return;
        }
        let chunks: Vec<Chunk> = plan
            .iter()
            .map(|p| Chunk {
                slot: p.slot,
                tokens: &p.tokens,
                pos: p.pos,
                all_logits: (p.kind == ChunkKind::Decode && p.drafts > 0)
                    || (p.kind != ChunkKind::Decode && self.wants_prompt_lp(p.slot)),
                no_logits: p.kind == ChunkKind::PrefillMid && !self.wants_prompt_lp(p.slot),
            })
            .collect();
        let logits = self.model.run(&chunks);
        drop(chunks);
        if let Some(d) = decode_delay(&plan, self.cfg.decode_delay) {
            d.take();
        }
        self.metrics.steps.fetch_add(1, Ordering::Relaxed);
        for (p, lg) in plan.into_iter().zip(logits) {
            let si = p.slot;
            let Some(mut a) = self.slots[si].active.take() else {
                continue;
            };
            let done = if p.kind == ChunkKind::Decode {
                self.apply_decode(&mut a, &p, &lg)
            } else {
                self.apply_prefill(&mut a, &p, &lg)
            };
            if let Some(reason) = done {
                self.finish(a, reason);
                self.metrics.busy_slots.fetch_sub(1, Ordering::Relaxed);
            } else if a.req.tx.is_closed() {
                self.metrics.busy_slots.fetch_sub(1, Ordering::Relaxed);
                self.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
            } else {
                self.slots[si].active = Some(a);
            }
        }
    }

    /// The decode chunks of a step: each decoding slot's pending token, followed by up to
    /// `draft_max` prompt-lookup draft tokens when drafting is on.
    fn plan_decodes(&self) -> Vec<Planned> {
        let window = self.cfg.window;
        let mut plan = Vec::new();
        for (si, s) in self.slots.iter().enumerate() {
            let Some(a) = &s.active else { continue };
            if let Some(p) = a.pending {
                let pos = s.tokens.len();
                let mut toks = vec![p];
                if self.cfg.draft == Draft::Copies {
                    let remaining = a
                        .req
                        .params
                        .max_tokens
                        .saturating_sub(a.generated.len() + 1);
                    let room = window.saturating_sub(pos + 1);
                    let max = self.cfg.draft_max.min(remaining).min(room);
                    let mut hist = s.tokens.clone();
                    hist.push(p);
                    let d = copies_draft(&hist, max);
                    toks.extend(d.iter());
                }
                let drafts = toks.len() - 1;
                plan.push(Planned {
                    slot: si,
                    tokens: toks,
                    pos,
                    kind: ChunkKind::Decode,
                    drafts,
                });
            }
        }
        plan
    }

    /// Appends the prompt chunks of a step: slots still reading their prompt, in slot order,
    /// share the batch budget (`batch` tokens).
    fn plan_prefills(&self, plan: &mut Vec<Planned>) {
        let mut budget = self.cfg.batch.max(1);
        for (si, s) in self.slots.iter().enumerate() {
            let Some(a) = &s.active else { continue };
            if a.pending.is_none() && budget > 0 {
                let n = (a.req.prompt.len() - a.prompt_done).min(budget);
                budget -= n;
                let last = a.prompt_done + n == a.req.prompt.len();
                let toks = a.req.prompt[a.prompt_done..a.prompt_done + n].to_vec();
                plan.push(Planned {
                    slot: si,
                    tokens: toks,
                    pos: a.prompt_done,
                    kind: if last {
                        ChunkKind::PrefillLast
                    } else {
                        ChunkKind::PrefillMid
                    },
                    drafts: 0,
                });
            }
        }
    }

    /// Takes a prompt chunk's logits `lg`: its prompt log-probabilities when asked, and after
    /// the prompt's last chunk the first generated token. Returns a finish reason when done.
    fn apply_prefill(&mut self, a: &mut Active, p: &Planned, lg: &[f32]) -> Option<&'static str> {
        let (si, nv) = (p.slot, self.model.config().n_vocab);
        if a.req.params.prompt_logprobs {
            prompt_logprobs(a, lg, nv);
        }
        a.prompt_done += p.tokens.len();
        self.metrics
            .prompt_tokens
            .fetch_add(p.tokens.len() as u64, Ordering::Relaxed);
        self.slots[si].tokens.extend_from_slice(&p.tokens);
        if p.kind != ChunkKind::PrefillLast {
            return None;
        }
        a.t_first = Some(Instant::now());
        let row = &lg[lg.len() - nv..];
        if a.req.params.max_tokens == 0 {
            Some("length")
        } else {
            let t = sample(row, &a.req.params, &mut a.rng);
            self.accept_token(self.slots[si].tokens.len(), a, t, row)
        }
    }

    /// Takes a decode chunk's logits `lg` (`p.tokens` = [pending, drafts...]; logits row `i`
    /// follows token `i`): samples after the pending token and after each draft token while
    /// the drafts match what was sampled. Returns a finish reason when done.
    fn apply_decode(&mut self, a: &mut Active, p: &Planned, lg: &[f32]) -> Option<&'static str> {
        let (si, nv) = (p.slot, self.model.config().n_vocab);
        let (toks, nd) = (&p.tokens, p.drafts);
        let mut done = None;
        self.slots[si].tokens.push(toks[0]);
        a.drafted += nd;
        self.metrics.drafted.fetch_add(nd as u64, Ordering::Relaxed);
        let rows = lg.len() / nv;
        for i in 0..rows {
            let row = &lg[i * nv..(i + 1) * nv];
            let t = sample(row, &a.req.params, &mut a.rng);
            done = self.accept_token(self.slots[si].tokens.len(), a, t, row);
            if done.is_some() {
                break;
            }
            if i < nd && toks[i + 1] == t {
                // Draft token i verified: its K/V is valid.
                self.slots[si].tokens.push(t);
                a.pending = None;
                a.accepted += 1;
                self.metrics.accepted.fetch_add(1, Ordering::Relaxed);
            } else {
                break;
            }
        }
        // After an accepted draft we still need its successor: the
        // last sampled token that was not a verified draft is pending.
        done
    }

    /// Whether slot `si`'s request asks for prompt log-probabilities.
    fn wants_prompt_lp(&self, si: usize) -> bool {
        self.slots[si]
            .active
            .as_ref()
            .is_some_and(|a| a.req.params.prompt_logprobs)
    }

    /// Record a sampled token (`row`: the logits it was sampled from);
    /// returns a finish reason when generation ends.
    fn accept_token(
        &self,
        cached_len: usize,
        a: &mut Active,
        t: u32,
        row: &[f32],
    ) -> Option<&'static str> {
        let p = &a.req.params;
        if !p.ignore_eos && self.tok.stop_ids.contains(&t) {
            a.pending = None;
            return Some("stop");
        }
        if let Some(k) = p.logprobs {
            let _ = a.req.tx.send(Event::Token(token_logprob(row, t, k)));
        }
        a.generated.push(t);
        a.pending = Some(t);
        self.metrics
            .generated_tokens
            .fetch_add(1, Ordering::Relaxed);
        let text = self.tok.decode(&a.generated);
        // Only look past what was already sent; if decoding more tokens ever
        // moved a character boundary, wait for the text to settle.
        let fresh = text.get(a.emitted..).unwrap_or("");
        let stop_at = p
            .stop
            .iter()
            .filter_map(|s| fresh.find(s.as_str()).map(|i| i + a.emitted))
            .min();
        if let Some(at) = stop_at {
            if let Some(t) = text.get(a.emitted..at) {
                if !t.is_empty() {
                    let _ = a.req.tx.send(Event::Text(t.to_string()));
                }
            }
            a.emitted = at;
            a.pending = None;
            return Some("stop");
        }
        let full = a.generated.len() >= p.max_tokens || cached_len + 2 >= self.cfg.window;
        let upto = if full {
            text.len()
        } else {
            settled_end(&text, a.emitted, &p.stop)
        };
        if upto > a.emitted && text.is_char_boundary(upto) && text.is_char_boundary(a.emitted) {
            let _ = a
                .req
                .tx
                .send(Event::Text(text[a.emitted..upto].to_string()));
            a.emitted = upto;
        }
        if full {
            a.pending = None;
            return Some("length");
        }
        None
    }

    fn finish(&self, a: Active, reason: &'static str) {
        let now = Instant::now();
        let first = a.t_first.unwrap_or(now);
        let u = Usage {
            finish_reason: reason,
            prompt_tokens: a.req.prompt.len(),
            completion_tokens: a.generated.len(),
            cached_tokens: a.cached,
            drafted: a.drafted,
            accepted: a.accepted,
            prompt_ms: (first - a.t_start).as_secs_f64() * 1e3,
            gen_ms: (now - first).as_secs_f64() * 1e3,
        };
        self.metrics.requests.fetch_add(1, Ordering::Relaxed);
        let _ = a.req.tx.send(Event::Done(u));
    }
}

/// The sleep a step with chunks `plan` takes after its forward pass: `delay` when it is not zero
/// and the step ran a decode chunk, else none (a prompt's chunks and the token sampled after
/// them never wait).
fn decode_delay(plan: &[Planned], delay: DecodeDelay) -> Option<DecodeDelay> {
    let decodes = plan.iter().any(|p| p.kind == ChunkKind::Decode);
    (decodes && !delay.duration().is_zero()).then_some(delay)
}

/// How far the decoded `text` can be sent while generation goes on: not past `emitted` while
/// it ends in an unfinished character, and not into a tail that could start a stop string.
fn settled_end(text: &str, emitted: usize, stop: &[String]) -> usize {
    if text.ends_with('\u{FFFD}') {
        return emitted;
    }
    let mut upto = text.len();
    // Hold back a tail that could start a stop string.
    for s in stop {
        for l in (1..s.len()).rev() {
            if text.len() >= l && s.is_char_boundary(l) && text.ends_with(&s[..l]) {
                upto = upto.min(text.len() - l);
                break;
            }
        }
    }
    upto
}

/// Send the log-probabilities of the prompt tokens a prefill chunk scored:
/// `lg` holds one logits row per chunk token; row `i` predicts the prompt
/// token after it. The first prompt token gets an entry without one.
fn prompt_logprobs(a: &Active, lg: &[f32], nv: usize) {
    let prompt = &a.req.prompt;
    let k = a.req.params.logprobs.unwrap_or(0);
    let mut out = Vec::new();
    if a.prompt_done == 0 {
        out.push(TokenLogprob {
            id: prompt[0],
            logprob: None,
            top: Vec::new(),
        });
    }
    for (i, row) in lg.chunks_exact(nv).enumerate() {
        let next = a.prompt_done + i + 1;
        if next < prompt.len() {
            out.push(token_logprob(row, prompt[next], k));
        }
    }
    let _ = a.req.tx.send(Event::Prompt(out));
}

#[cfg(test)]
mod tests;
