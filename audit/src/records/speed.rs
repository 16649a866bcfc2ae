//! The speed test: its contract and its result with one record per request.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The measurement parameters of a speed run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedContract {
    /// Parts that ran (`decode`, `prefill`, `conc`, `l1`, `ctx`).
    pub parts: Vec<String>,
    /// The model name sent.
    pub model: String,
    /// Decode prompt ids.
    pub prompt_ids: Vec<String>,
    /// Decode runs per prompt.
    pub runs: u32,
    /// Warm-up requests before the counted runs.
    pub warmups: u32,
    /// Reply tokens per decode request.
    pub max_tokens: u64,
    /// Prefill part.
    #[serde(default)]
    pub prefill: Option<PrefillPart>,
    /// Concurrency part.
    #[serde(default)]
    pub conc: Option<ConcPart>,
    /// Context steps.
    #[serde(default)]
    pub ctx: Option<CtxPart>,
    /// The long answer.
    #[serde(default)]
    pub l1: Option<LongAnswerPart>,
    /// Sampling sent with every request.
    pub sampling: BTreeMap<String, f64>,
    /// Where the sampling came from.
    #[serde(default)]
    pub sampling_source: Option<String>,
    /// Seed sent.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Whether thinking was asked for.
    #[serde(default)]
    pub enable_thinking: Option<bool>,
    /// Whether requests allowed the prompt cache.
    #[serde(default)]
    pub cache_prompt: Option<bool>,
    /// The server's streams (slots) and window as the contract states them.
    pub server: ServerClaims,
    /// The foreign-load guard's rule.
    #[serde(default)]
    pub load_guard: Option<LoadGuardRule>,
}

/// Prefill part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrefillPart {
    /// Prompt sizes in tokens.
    pub depths: Vec<u64>,
    /// Runs per size.
    pub runs: u32,
    /// Reply tokens per request.
    pub max_tokens: u64,
    /// The least timed work of one run, in milliseconds: a run repeats its request until the
    /// requests' times to first token add up to it (see [`MAX_REPEATS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_try_ms: Option<u64>,
}

/// The most requests one run of a prefill or context step repeats to reach its part's
/// `min_try_ms`.
pub const MAX_REPEATS: u32 = 64;

/// Concurrency part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConcPart {
    /// Requests at once.
    pub levels: Vec<u32>,
    /// Rounds per level.
    pub rounds: u32,
    /// Reply tokens per request.
    pub max_tokens: u64,
    /// Prompt id.
    pub prompt: String,
}

/// Context steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CtxPart {
    /// Prompt sizes in tokens.
    pub depths: Vec<u64>,
    /// Runs per size.
    pub runs: u32,
    /// Reply tokens per request.
    pub max_tokens: u64,
    /// As the prefill part's: the least timed work (times to first token) of one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_try_ms: Option<u64>,
}

/// The long answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LongAnswerPart {
    /// Reply cap.
    pub max_tokens: u64,
}

/// Slots and window as a contract claims them, with sources.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerClaims {
    /// Streams served at once.
    pub slots: u32,
    /// Where that number came from.
    #[serde(default)]
    pub slots_source: Option<String>,
    /// The window in tokens.
    pub window: u64,
    /// Where that number came from.
    #[serde(default)]
    pub window_source: Option<String>,
}

/// The load guard's rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadGuardRule {
    /// A process above this share of a core counts (percent).
    pub threshold_pct: f64,
    /// Samples in a row above it that make a step invalid.
    pub consecutive: u32,
    /// Seconds between samples.
    pub interval_s: f64,
    /// Tries of one step at most (the first and its repeats); the last is kept even when
    /// disturbed, and then shows as kept under load. Absent: 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tries: Option<u32>,
}

impl LoadGuardRule {
    /// The rule of the seed pages, which `rigaudit measure` applies when a contract states none:
    /// another process above 25 % of a core in two samples in a row, sampled twice a second,
    /// three tries at most.
    pub fn default_rule() -> Self {
        LoadGuardRule {
            threshold_pct: 25.0,
            consecutive: 2,
            interval_s: 0.5,
            max_tries: Some(3),
        }
    }

    /// Whether a try whose longest run of samples over the threshold was `run` breaks the rule.
    pub fn broken_by(&self, run: u32) -> bool {
        run >= self.consecutive
    }
}

/// The result of a speed run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpeedResult {
    /// Run label.
    pub run: String,
    /// Start, RFC 3339.
    pub started: String,
    /// End, RFC 3339.
    pub ended: String,
    /// What the server said about itself.
    pub server: ServerSeen,
    /// One record per request, warm-ups included.
    pub requests: Vec<SpeedRequest>,
    /// Draft counters per decode run.
    #[serde(default)]
    pub drafts: Vec<DraftCount>,
    /// Whether each sized step fits the window.
    #[serde(default)]
    pub fits: Vec<FitRow>,
    /// The values the measuring tool wrote (key to value; `null` when there is none).
    pub values: BTreeMap<String, Option<f64>>,
    /// The foreign-load guard's summary.
    #[serde(default)]
    pub load_guard: Option<LoadGuard>,
    /// The machine's speed reference, probed before every counted step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_reference: Option<MachineReference>,
    /// The GPU's facts through NVML, when measure read them (older results have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRecord>,
}

/// The GPU a measurement ran beside, through NVML: its facts once at the start, and per counted
/// try the energy it used, its SM clock, the throttle reasons seen and the processes on it that
/// were not the server's.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuRecord {
    /// NVML's device index.
    pub index: u32,
    /// The device's name.
    pub name: String,
    /// The driver's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Memory on the device, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_bytes: Option<u64>,
    /// Memory in use at the start, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_bytes: Option<u64>,
    /// SM clock at the start, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sm_mhz: Option<u32>,
    /// Memory clock at the start, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mem_mhz: Option<u32>,
    /// Power drawn at the start, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// One row per counted try, in order.
    #[serde(default)]
    pub steps: Vec<GpuTry>,
}

/// The GPU during one counted try.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuTry {
    /// Step name (`decode/code/1`).
    pub step: String,
    /// Try number (1-based), as in the guard's rows.
    #[serde(rename = "try")]
    pub attempt: u32,
    /// Whether this try is the one that counts.
    pub kept: bool,
    /// Energy the GPU used during the try (the energy counter's growth), J.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Tokens the try's requests generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// `energy_j` per generated token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j_per_token: Option<f64>,
    /// SM clock at the try's end, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sm_mhz: Option<u32>,
    /// The lowest SM clock read during the try, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sm_min_mhz: Option<u32>,
    /// The highest SM clock read during the try, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sm_max_mhz: Option<u32>,
    /// How many times NVML was read during the try (its start, every 100 ms, its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
    /// Throttle reasons seen at any reading during the try (`gpu_idle`, `sw_power_cap`, ...).
    #[serde(default)]
    pub throttle_reasons: Vec<String>,
    /// Processes on the GPU at any reading during the try that were not the server's
    /// (`pid N (name) on the GPU`; past 32, one line counts the rest).
    #[serde(default)]
    pub foreign_processes: Vec<String>,
}

/// The figures of a fixed kernel run on the measuring machine before every counted step, so that a
/// replay can tell a machine that runs slower or faster as a whole from an engine that does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MachineReference {
    /// The kernel's name, version and SIMD level; figures compare only under one name.
    pub kernel: String,
    /// Threads the kernel ran on.
    pub threads: u32,
    /// One figure per counted step, in order.
    pub samples: Vec<ReferenceSample>,
}

/// One probe of the machine's speed reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSample {
    /// The step the probe ran before (`decode/code/1`).
    pub step: String,
    /// Bytes of weights streamed per second, in GB/s.
    pub gbps: f64,
}

impl MachineReference {
    /// The median of its figures (none without one).
    pub fn median(&self) -> Option<f64> {
        let xs: Vec<f64> = self.samples.iter().map(|s| s.gbps).collect();
        crate::stats::median(&xs)
    }
}

/// What the server said about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerSeen {
    /// Rank 0's start lines.
    pub start_lines: Vec<String>,
    /// The answer of `GET /v1/models`.
    pub models: serde_json::Value,
}

/// One request of a speed run. Times are seconds from the run's start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SpeedRequest {
    /// `decode`, `prefill`, `conc`, `ctx` or `l1`.
    pub step: String,
    /// Prompt id.
    #[serde(default)]
    pub prompt_id: Option<String>,
    /// Run number (1-based) within its step and prompt.
    #[serde(default)]
    pub run: Option<u32>,
    /// The request's place (1-based) among the requests of its run, when the run repeats its
    /// request to reach its part's `min_try_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Whether it was a warm-up.
    #[serde(default)]
    pub warmup: bool,
    /// Prompt size asked for (prefill, ctx).
    #[serde(default)]
    pub depth: Option<u64>,
    /// Requests at once (conc).
    #[serde(default)]
    pub level: Option<u32>,
    /// Round (conc).
    #[serde(default)]
    pub round: Option<u32>,
    /// Prompt tokens.
    pub prompt_tokens: Option<u64>,
    /// Where the prompt count came from (`usage`, `tokenizer`, `chunks`, `requested`).
    pub prompt_tokens_source: String,
    /// Reply tokens.
    pub completion_tokens: Option<u64>,
    /// Where the reply count came from.
    pub completion_tokens_source: String,
    /// Reply cap sent.
    pub max_tokens: u64,
    /// `length`, `stop`, or `null` when refused.
    pub finish_reason: Option<String>,
    /// When the request was sent.
    pub sent_s: f64,
    /// When the first chunk with generated text came.
    pub first_token_s: Option<f64>,
    /// When the reply ended.
    pub end_s: Option<f64>,
    /// Cached prompt tokens the server reported.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// HTTP status.
    pub status: u16,
    /// Error text of a refused request.
    #[serde(default)]
    pub error: Option<String>,
    /// Words in the reply.
    #[serde(default)]
    pub words: Option<u64>,
    /// Characters in the reply.
    #[serde(default)]
    pub chars: Option<u64>,
    /// The engine's own timing of the request, when its last chunk reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<ServerTimings>,
}

/// An engine's own timing of one request (llama.cpp's and the bundled engine's `timings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimings {
    /// Tokens generated.
    #[serde(default)]
    pub predicted_n: Option<u64>,
    /// Milliseconds from the first generated token to the last.
    #[serde(default)]
    pub predicted_ms: Option<f64>,
    /// Prompt tokens evaluated (not from the cache).
    #[serde(default)]
    pub prompt_n: Option<u64>,
    /// Milliseconds spent on the prompt.
    #[serde(default)]
    pub prompt_ms: Option<f64>,
}

impl ServerTimings {
    /// The engine's decode rate by rigaudit's definition: (tokens - 1) / time after the first.
    pub fn decode_rate(&self) -> Option<f64> {
        let n = self.predicted_n? as f64;
        let ms = self.predicted_ms?;
        (n > 1.0 && ms > 0.0).then(|| (n - 1.0) / (ms / 1000.0))
    }
}

impl SpeedRequest {
    /// Whether the server answered (HTTP 200 and a first token).
    pub fn answered(&self) -> bool {
        self.status == 200 && self.first_token_s.is_some() && self.end_s.is_some()
    }

    /// Decode rate: tokens after the first / time after the first token.
    pub fn decode_rate(&self) -> Option<f64> {
        let n = self.completion_tokens? as f64;
        let t = self.end_s? - self.first_token_s?;
        (self.answered() && n > 1.0 && t > 0.0).then(|| (n - 1.0) / t)
    }

    /// Time to first token.
    pub fn ttft(&self) -> Option<f64> {
        let t = self.first_token_s? - self.sent_s;
        (self.answered() && t > 0.0).then_some(t)
    }

    /// Prefill rate: prompt tokens / time to first token.
    pub fn prefill_rate(&self) -> Option<f64> {
        Some(self.prompt_tokens? as f64 / self.ttft()?)
    }

    /// End-to-end rate: reply tokens / (end - sent).
    pub fn e2e_rate(&self) -> Option<f64> {
        let n = self.completion_tokens? as f64;
        let t = self.end_s? - self.sent_s;
        (self.answered() && t > 0.0).then(|| n / t)
    }
}

/// Draft counters over one decode run (deltas of the engine's counters).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DraftCount {
    /// Step.
    pub step: String,
    /// Prompt id.
    #[serde(default)]
    pub prompt_id: Option<String>,
    /// Run.
    #[serde(default)]
    pub run: Option<u32>,
    /// Draft proposals.
    pub drafts: u64,
    /// Tokens drafted.
    pub drafted: u64,
    /// Tokens accepted.
    pub accepted: u64,
}

/// Whether a sized step fits the window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitRow {
    /// Part (`ctx`, `prefill`, `l1`).
    pub part: String,
    /// Prompt size in tokens.
    pub depth: u64,
    /// Reply cap.
    pub max_tokens: u64,
    /// The window the server reported.
    pub window: u64,
    /// Whether the tool judged that it fits.
    pub fits: bool,
    /// Whether a request was sent.
    pub sent: bool,
}

/// The foreign-load guard's summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadGuard {
    /// The rule the measuring tool applied (the contract's, or its own when the contract states
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<LoadGuardRule>,
    /// Samples taken.
    pub samples: u64,
    /// One row per step try.
    pub steps: Vec<GuardedStep>,
}

/// One try of one step under the guard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuardedStep {
    /// Step name (`decode/code/1`, `l1`).
    pub step: String,
    /// Try number (1-based).
    #[serde(rename = "try")]
    pub attempt: u32,
    /// Longest run of samples in a row with a foreign process above the threshold.
    pub longest_run_over: u32,
    /// Highest foreign sample, percent of a core.
    #[serde(default)]
    pub peak_pct: Option<f64>,
    /// The process of that sample.
    #[serde(default)]
    pub peak_process: Option<String>,
    /// Every foreign process above the threshold in a sample of the try (`name (pid N)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_processes: Option<Vec<String>>,
    /// Processes on the GPU during the try that were not the server's (`pid N (name) on the
    /// GPU`): foreign load as a busy process is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_processes: Option<Vec<String>>,
    /// Whether this try is the one that counts.
    pub kept: bool,
}
