//! The `rigaudit-engine` command line: `serve` a GGUF model over an
//! OpenAI-compatible HTTP API, or write its `tokenizer.json`. The binary
//! `rigaudit-engine` and `rigaudit __engine` (the bundled engine `rigaudit replay`
//! launches) both run [`main_from`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::engine::{self, Draft, EngineConfig, SamplingDefaults};
use crate::gguf::Gguf;
use crate::model::{CpuForward, Forward, Model};
use crate::pool::Pool;
use crate::server::{self, AppState};
use crate::tokenizer::EngineTokenizer;
use clap::{Parser, Subcommand, ValueEnum};
use sha2::{Digest, Sha256};

#[derive(Parser)]
#[command(
    name = "rigaudit-engine",
    version,
    about = "Bundled LLM serving engine for rigaudit replay (CPU, or an NVIDIA GPU with --device cuda)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum DraftArg {
    Off,
    Copies,
}

/// `--nccl`.
#[derive(Clone, Copy, ValueEnum, Debug, PartialEq, Eq)]
enum NcclArg {
    Auto,
    On,
    Off,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve MODEL (a GGUF file) over HTTP.
    Serve(ServeArgs),
    /// Write the tokenizer built from MODEL's metadata as tokenizer.json.
    Tokenizer {
        /// GGUF model file.
        model: PathBuf,
        /// Output path.
        #[arg(long, default_value = "tokenizer.json")]
        out: PathBuf,
    },
    /// Write a model with random weights made from a seed (same seed, same bytes).
    MakeModel(MakeModelArgs),
    /// Measure the GPU: the 4-bit product's bandwidth and error, decode speed on GPU and CPU.
    #[cfg(feature = "cuda")]
    GpuBench(GpuBenchArgs),
}

/// The options of `gpu-bench`, as parsed.
#[cfg(feature = "cuda")]
#[derive(clap::Args)]
struct GpuBenchArgs {
    /// CUDA device: `cuda` or `cuda:N`.
    #[arg(long, default_value = "cuda")]
    device: String,
    /// Seed of the random-weights SmolLM2-shaped model decoded.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Tokens decoded on the GPU (each of graphs on and off).
    #[arg(long, default_value_t = 256)]
    tokens: usize,
    /// Tokens decoded on the CPU.
    #[arg(long, default_value_t = 64)]
    cpu_tokens: usize,
    /// CPU compute threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// The options of `make-model`, as parsed.
#[derive(clap::Args)]
struct MakeModelArgs {
    /// Seed of the weights.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Shape: `smollm2-135m` (SmolLM2-135M's, Q4_1 layers, Q8_0 embeddings) or `tiny`.
    #[arg(long, default_value = "smollm2-135m")]
    preset: String,
    /// Layers instead of the preset's (any size of model); with --from, the layers kept.
    #[arg(long)]
    layers: Option<usize>,
    /// Instead of random weights: this model's first --layers layers, all else as it is (a real
    /// model small enough to carry to another machine, for arithmetic checks).
    #[arg(long, requires = "layers")]
    from: Option<PathBuf>,
    /// Output GGUF path (written atomically).
    #[arg(long)]
    out: PathBuf,
}

fn mem_available() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(4 << 30)
}

/// Where a `serve` command line would listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub host: String,
    pub port: u16,
}

/// What `rigaudit replay` lets a recorded command ask of this engine: `serve` with this parser's
/// own options (the other subcommands write files wherever `--out` says, or measure a GPU), and
/// nothing that only prints help. `args` are the items after the executable. `Err` says why not.
pub fn replayable(args: &[String]) -> Result<Listen, String> {
    let argv = std::iter::once("rigaudit-engine".to_string()).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        format!("the engine's parser refuses it: {first}")
    })?;
    match cli.cmd {
        Cmd::Serve(a) => Ok(Listen {
            host: a.host,
            port: a.port,
        }),
        _ => Err(format!(
            "'{}' is not `serve`: a replay runs the engine's server only (its other commands write files or measure a GPU)",
            args.first().map(String::as_str).unwrap_or("")
        )),
    }
}

/// Runs the engine's command line on `args` (the program name first) and returns its exit code.
pub fn main_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rigaudit-engine: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.cmd {
        Cmd::Tokenizer { model, out } => write_tokenizer(&model, &out),
        Cmd::Serve(args) => serve(args),
        Cmd::MakeModel(args) => make_model(args),
        #[cfg(feature = "cuda")]
        Cmd::GpuBench(args) => gpu_bench(args),
    }
}

/// `gpu-bench`: prints one JSON object: the Q4_1 matrix-vector product over 192 MiB of weights
/// (GB/s, and a device copy of the same bytes), its error against the CPU reference, and greedy
/// decode of a random-weights SmolLM2-sized model on the GPU (graphs on, off) and the CPU.
#[cfg(feature = "cuda")]
fn gpu_bench(a: GpuBenchArgs) -> Result<(), Box<dyn std::error::Error>> {
    use crate::cuda::bench::{check_q4_1, decode_seconds_per_token};
    let Some(n) = parse_device(&a.device)? else {
        return Err("--device: gpu-bench measures a CUDA device (cuda or cuda:N)".into());
    };
    let bytes = crate::synth::make_model(&crate::synth::Preset::SMOLLM2_135M, a.seed)?;
    let window = (32 + a.tokens.max(a.cpu_tokens) + 16).next_multiple_of(256);
    let mut gpu = crate::cuda::model::GpuForward::load(&Gguf::parse(bytes.clone())?, n, 1, window)?;
    let mv = check_q4_1(&gpu, 32768, 9824, 1, 50, false)?;
    let mv32 = check_q4_1(&gpu, 32768, 9824, 1, 50, true)?;
    let mm = check_q4_1(&gpu, 4096, 4096, 64, 10, false)?;
    let nvml = crate::cuda::nvml::Nvml::open(n as u32);
    let before = nvml.as_ref().map(|m| m.facts()).map_err(|e| e.clone());
    let energy = || nvml.as_ref().ok().and_then(|m| m.energy_mj().ok());
    let e0 = energy();
    let graph_s = decode_seconds_per_token(&mut gpu, 32, a.tokens);
    let mj_per_token = energy()
        .zip(e0)
        .map(|(e1, e0)| e1.saturating_sub(e0) as f64 / a.tokens.max(1) as f64);
    let during = nvml.as_ref().map(|m| m.facts()).unwrap_or_default();
    gpu.set_graphs(false);
    let eager_s = decode_seconds_per_token(&mut gpu, 32, a.tokens);
    let threads = compute_threads(a.threads);
    let cpu_model = Model::load(Gguf::parse(bytes.clone())?)?;
    let mut cpu = CpuForward::new(cpu_model, Pool::new(threads), 1, window);
    let cpu_s = decode_seconds_per_token(&mut cpu, 32, a.cpu_tokens);
    let nccl = nccl_decode(&bytes, n, window, a.tokens, graph_s);
    let gb = |b: usize, s: f64| b as f64 / s / 1e9;
    let n_layer = crate::synth::Preset::SMOLLM2_135M.n_layer;
    let report = serde_json::json!({
        "facts": gpu.facts,
        "gemv_q4_1": {"rows": 32768, "k": 9824, "weight_bytes": mv.weight_bytes,
            "us": mv.seconds * 1e6, "gb_per_s": gb(mv.weight_bytes, mv.seconds),
            "copy_gb_per_s_read_plus_write": gb(2 * mv.weight_bytes, mv.copy_seconds),
            "max_rel_err_vs_cpu": mv.max_rel_err,
            "warp_per_row_gb_per_s": gb(mv32.weight_bytes, mv32.seconds),
            "warp_per_row_max_rel_err_vs_cpu": mv32.max_rel_err},
        "gemm_q4_1_64_tokens": {"rows": 4096, "k": 4096, "us": mm.seconds * 1e6,
            "max_rel_err_vs_cpu": mm.max_rel_err},
        "decode_smollm2_random": {"gpu_graph_tok_s": 1.0 / graph_s, "gpu_eager_tok_s": 1.0 / eager_s,
            "launches_per_token": 9 * n_layer + 3,
            "launch_overhead_us_per_token": (eager_s - graph_s) * 1e6,
            "cpu_tok_s": 1.0 / cpu_s, "cpu_threads": threads,
            "speedup_gpu_graph_over_cpu": cpu_s / graph_s},
        "nvml": {"before": before.unwrap_or_else(serde_json::Value::String), "after_graph_decode": during,
            "graph_run_mj_per_decoded_token": mj_per_token},
        "decode_nccl_world_of_one": nccl,
    });
    println!("{report}");
    Ok(())
}

/// Greedy decode (graphs on) of the model `bytes` with its all-reduces through NCCL in a world
/// of one, beside `plain_s` seconds per token without NCCL: what NCCL costs a token on one GPU.
#[cfg(feature = "cuda")]
fn nccl_decode(
    bytes: &[u8],
    n: usize,
    window: usize,
    tokens: usize,
    plain_s: f64,
) -> serde_json::Value {
    use crate::cuda::{model::GpuForward, nccl, tp::Ranks};
    let lib = match nccl::load() {
        Ok(lib) => lib,
        Err(e) => return serde_json::json!({ "skipped": e }),
    };
    let one = Ranks { rank: 0, world: 1 };
    let timed = || -> Result<f64, String> {
        let g = Gguf::parse(bytes.to_vec()).map_err(|e| e.to_string())?;
        let mut f = GpuForward::load_ranked(&g, n, 1, window, one, true)?;
        Ok(crate::cuda::bench::decode_seconds_per_token(
            &mut f, 32, tokens,
        ))
    };
    match timed() {
        Ok(s) => serde_json::json!({
            "nccl": lib.version, "nccl_lib": lib.path, "gpu_graph_tok_s": 1.0 / s,
            "all_reduces_per_token": 2 * crate::synth::Preset::SMOLLM2_135M.n_layer,
            "nccl_us_per_token": (s - plain_s) * 1e6,
        }),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

/// The random-weights model `a` asks for: its preset, with `--layers` when given.
fn random_model(a: &MakeModelArgs) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut preset = crate::synth::Preset::by_name(&a.preset).ok_or_else(|| {
        format!(
            "--preset {}: unknown preset (expected smollm2-135m or tiny)",
            a.preset
        )
    })?;
    if let Some(n) = a.layers {
        preset.n_layer = n;
    }
    Ok(crate::synth::make_model(&preset, a.seed)
        .map_err(|why| format!("--preset {}: {why}", a.preset))?)
}

/// `make-model`: writes the random-weights model `a` asks for (or `--from`'s first layers) to `a.out` (a temporary file
/// beside it, renamed into place) and prints its path and SHA-256.
fn make_model(a: MakeModelArgs) -> Result<(), Box<dyn std::error::Error>> {
    let bytes = match &a.from {
        Some(from) => {
            let g = Gguf::open(from)?;
            crate::synth::truncate_layers(&g, a.layers.unwrap_or(0))
                .map_err(|why| format!("--from {}: {why}", from.display()))?
        }
        None => random_model(&a)?,
    };
    let name = a.out.file_name().ok_or("--out: expected a file path")?;
    let tmp = a
        .out
        .with_file_name(format!(".{}.tmp", name.to_string_lossy()));
    std::fs::write(&tmp, &bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &a.out)
        .map_err(|e| format!("cannot rename into {}: {e}", a.out.display()))?;
    println!("{} sha256={:x}", a.out.display(), Sha256::digest(&bytes));
    Ok(())
}

/// `tokenizer`: writes the tokenizer built from `model`'s metadata to `out` and prints its path.
fn write_tokenizer(
    model: &std::path::Path,
    out: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let g = Gguf::open(model)?;
    let tk = EngineTokenizer::from_gguf(&g)?;
    std::fs::write(out, tk.to_json())?;
    println!("{}", out.display());
    Ok(())
}

/// The options of `serve`, as parsed.
#[derive(clap::Args)]
struct ServeArgs {
    /// GGUF model file.
    model: PathBuf,
    /// Model name reported by the API.
    #[arg(long)]
    name: String,
    /// Streams served at once (slots); more requests wait in a queue.
    #[arg(long, default_value_t = 1)]
    parallel: usize,
    /// Context window per request (tokens); picked from memory when absent.
    #[arg(long)]
    context: Option<usize>,
    /// Listen address.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Listen port (0 picks a free one; the start line says which).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Compute threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Draft tokens: `copies` (prompt lookup) or `off`.
    #[arg(long, value_enum, default_value = "off")]
    draft: DraftArg,
    /// Max draft tokens per step.
    #[arg(long, default_value_t = 8)]
    draft_max: usize,
    /// Max prompt tokens evaluated per batched step.
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Where the forward pass runs: `cpu`, or `cuda` / `cuda:N` (an NVIDIA GPU, with weights and
    /// KV caches in its memory; needs the NVIDIA driver and NVRTC).
    #[arg(long, default_value = "cpu")]
    device: String,
    /// NCCL for tensor parallelism's all-reduces (`--device cuda` only): `auto` uses it when the
    /// library loads (a world of one through NCCL too) and requires it for more than one rank;
    /// `on` requires it; `off` never loads it. The ranks come from the environment:
    /// RIGAUDIT_ENGINE_RANK, RIGAUDIT_ENGINE_WORLD and NCCL_COMM_ID (rank 0's address:port), the
    /// same arguments on every rank; rank 0 serves HTTP, the others follow its steps.
    #[arg(long, value_enum, default_value = "auto")]
    nccl: NcclArg,
    /// A deliberate slowdown for testing an auditor: sleeps N ms in every decode step, never in a
    /// prompt's prefill, so a replay can show what a slower decode looks like.
    #[arg(long, value_name = "N", default_value_t = 0)]
    decode_delay_ms: u64,
    /// A few-percent slowdown in microseconds (at ~10 ms a token, 500 is about 5 %): busy-waits
    /// N µs in every decode step, a fixed amount of work a token as a slower kernel adds (a sleep
    /// costs what the scheduler's wake-up makes it: on a shared VM from nothing to twice N). Not
    /// with --decode-delay-ms.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        conflicts_with = "decode_delay_ms"
    )]
    decode_delay_us: u64,
    /// Deliberate reply shapes for testing a server's clients: chosen requests are refused,
    /// empty, cut short, slow to start, fail mid-stream, hang or get HTTP 500 (default: none).
    ///
    /// SPEC is a comma list of SHAPE@WHEN rules; the generation requests (/v1/completions,
    /// /v1/chat/completions) are numbered from 1 in arrival order (a malformed one takes its
    /// number too), and the first rule whose WHEN holds gives a request its shape. Shapes apply
    /// to requests the engine would serve (a real refusal stays what it is).
    ///
    /// SHAPE: `refuse` (HTTP 400, the engine's context-length refusal), `empty` (one token, no
    /// text, finish stop), `one` (one real token, finish stop), `stop` (no token, finish stop),
    /// `length=N` (exactly N tokens, end-of-sequence and stop strings ignored, finish length),
    /// `slow-first=MS` (a normal reply MS ms late, stream headers at once), `midstream-error=N`
    /// (N tokens, then vLLM's error: an SSE `data: {"error": ...}` event and `[DONE]`, or HTTP
    /// 500 when not streamed), `hang[=MS]` (nothing until the client goes, HTTP 504 after MS,
    /// default 60000), `http500` (HTTP 500 with vLLM's error body). Never more tokens than the
    /// request allows; MS from 1 to 3600000.
    ///
    /// WHEN: `N` (the N-th request), `N-K` (the N-th to the K-th), `N/M` (the N-th and every
    /// M-th after it), `N-K/M`, `P%` or `P%:SEED` (about P in a hundred, by a fixed hash of the
    /// request number and SEED, 0 by default).
    ///
    /// Each shaped reply is counted on /metrics (rigaudit_engine_shaped_replies_total{shape=...})
    /// and logged on stderr; docs/reply-shapes.md has each shape's wire form. Example:
    ///
    /// `refuse@3,empty@5/7,slow-first=1500@2,midstream-error=4@9,hang=30000@11,http500@1/13`
    #[arg(long, value_name = "SPEC", value_parser = crate::shapes::Spec::parse)]
    reply_shapes: Option<crate::shapes::Spec>,
    /// Exit when standard input closes (lets a supervising process, such
    /// as a test, take the engine down with it however it ends).
    #[arg(long)]
    exit_with_stdin: bool,
}

/// `serve`: loads the model, starts the engine thread and serves the HTTP API until Ctrl-C.
fn serve(a: ServeArgs) -> Result<(), Box<dyn std::error::Error>> {
    if a.exit_with_stdin {
        exit_when_stdin_closes();
    }
    if a.parallel == 0 || a.parallel > 256 {
        return Err("--parallel must be between 1 and 256".into());
    }
    let device = parse_device(&a.device)?;
    let (m, gguf) = load_model(&a.model)?;
    let avail = mem_available();
    let window = match (device, a.context) {
        (Some(_), None) => (m.n_ctx_train, "auto: trained context (GPU)"),
        _ => context_window(a.context, m.per_tok, a.parallel, m.n_ctx_train, avail)?,
    };
    let threads = compute_threads(a.threads);
    let line = start_line(&a, &m, window, threads, avail);
    let (forward, device_facts) = match forward_on(device, gguf, threads, &a, window.0, &line)? {
        Role::Lead(forward, facts) => (forward, facts),
        Role::Followed => return Ok(()),
    };
    let draft = match a.draft {
        DraftArg::Off => Draft::Off,
        DraftArg::Copies => Draft::Copies,
    };
    let engine_cfg = EngineConfig {
        parallel: a.parallel,
        window: window.0,
        batch: a.batch.max(1),
        draft,
        draft_max: a.draft_max,
        decode_delay: decode_delay(&a),
    };
    let (handle, ended) = engine::start(forward, m.tok.clone(), engine_cfg);
    let line = line + &device_facts;
    let state = Arc::new(AppState {
        name: a.name,
        window: window.0,
        n_ctx_train: m.n_ctx_train,
        parallel: a.parallel,
        tok: m.tok,
        engine: handle,
        defaults: m.defaults,
        chat_template: m.chat_template,
        bos_text: m.bos_text,
        eos_text: m.eos_text,
        ids: AtomicU64::new(1),
        shapes: crate::shapes::Shapes::new(a.reply_shapes.clone()),
    });
    listen(&a.host, a.port, &line, state)?;
    // Ctrl-C: the server is gone, so the engine thread ends; wait for it (briefly), so that a
    // tensor-parallel rank 0 tells its followers to stop before the process exits.
    let _ = ended.recv_timeout(std::time::Duration::from_secs(2));
    Ok(())
}

/// `--device`: `None` for the CPU, else the CUDA device number (refused in a build without CUDA).
fn parse_device(arg: &str) -> Result<Option<usize>, Box<dyn std::error::Error>> {
    #[cfg(feature = "cuda")]
    {
        use crate::cuda::Device;
        match arg.parse::<Device>().map_err(|e| format!("--device {e}"))? {
            Device::Cpu => Ok(None),
            Device::Cuda(n) => Ok(Some(n)),
        }
    }
    #[cfg(not(feature = "cuda"))]
    match arg {
        "cpu" => Ok(None),
        _ => Err(format!(
            "--device {arg}: this build has no CUDA support (feature `cuda`): use --device cpu"
        )
        .into()),
    }
}

/// What this process does once its model is loaded.
enum Role {
    /// Serves requests with this forward pass; what the start line adds for it.
    Lead(Box<dyn Forward>, String),
    /// Was a tensor-parallel rank above 0 and has followed rank 0 to the end.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Followed,
}

/// The forward pass of `g` on the CPU (`device` `None`) or CUDA device N, with `a.parallel` KV
/// caches of `window` positions; a rank above 0 of a tensor-parallel world follows rank 0 here
/// (printing `start_line` with its device facts) until rank 0 stops.
fn forward_on(
    device: Option<usize>,
    g: Gguf,
    threads: usize,
    a: &ServeArgs,
    window: usize,
    start_line: &str,
) -> Result<Role, Box<dyn std::error::Error>> {
    match device {
        None => {
            if std::env::var("RIGAUDIT_ENGINE_WORLD").is_ok_and(|w| w.trim() != "1") {
                return Err("RIGAUDIT_ENGINE_WORLD: tensor parallelism needs --device cuda".into());
            }
            let model = Model::load(g)?;
            let pool = Pool::new(threads);
            let cpu = CpuForward::new(model, pool, a.parallel, window);
            Ok(Role::Lead(Box::new(cpu), String::new()))
        }
        #[cfg(feature = "cuda")]
        Some(n) => {
            use crate::cuda::serve::{self as gpu_serve, NcclUse};
            let nccl = match a.nccl {
                NcclArg::Auto => NcclUse::Auto,
                NcclArg::On => NcclUse::On,
                NcclArg::Off => NcclUse::Off,
            };
            let ranks = gpu_serve::ranks(nccl)?;
            let (gpu, facts) = gpu_serve::load(&g, n, a.parallel, window, ranks, nccl)?;
            if ranks.rank > 0 {
                gpu_serve::follow(gpu, &format!("{start_line}{facts}"))?;
                return Ok(Role::Followed);
            }
            Ok(Role::Lead(Box::new(gpu), facts))
        }
        #[cfg(not(feature = "cuda"))]
        Some(_) => {
            let _ = start_line;
            Err("this build has no CUDA support".into())
        }
    }
}

/// What `serve` keeps from the model file besides the model itself.
struct LoadedModel {
    /// SHA-256 of the file, hex.
    digest: String,
    tok: Arc<EngineTokenizer>,
    defaults: SamplingDefaults,
    /// `model` or `engine`: where `defaults` came from.
    defaults_src: &'static str,
    chat_template: Option<String>,
    bos_text: String,
    eos_text: String,
    n_ctx_train: usize,
    /// KV cache bytes per token.
    per_tok: u64,
    simd: crate::kernels::Simd,
}

/// Reads and parses the GGUF file at `path`: its tokenizer, chat template and sampling
/// defaults, and the parsed file.
fn load_model(path: &std::path::Path) -> Result<(LoadedModel, Gguf), Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let digest = format!("{:x}", Sha256::digest(&bytes));
    let g = Gguf::parse(bytes)?;
    let tok = Arc::new(EngineTokenizer::from_gguf(&g)?);
    let (defaults, defaults_src) = sampling_defaults(&g);
    let chat_template = g.get_str("tokenizer.chat_template").map(str::to_string);
    let tok_text = |id: u32| tok.inner.id_to_token(id).unwrap_or_default();
    let (bos_text, eos_text) = (tok_text(tok.bos), tok_text(tok.eos));
    let cfg = crate::model::read_config(&g)?;
    let loaded = LoadedModel {
        digest,
        tok,
        defaults,
        defaults_src,
        chat_template,
        bos_text,
        eos_text,
        n_ctx_train: cfg.n_ctx_train,
        per_tok: cfg.kv_bytes_per_token() as u64,
        simd: crate::kernels::detect_simd(),
    };
    Ok((loaded, g))
}

/// The start line up to its listen address (known once bound): what is served, how, and
/// where each setting came from.
fn start_line(
    a: &ServeArgs,
    m: &LoadedModel,
    (window, window_src): (usize, &str),
    threads: usize,
    avail: u64,
) -> String {
    let kv_bytes = m.per_tok * window as u64 * a.parallel as u64;
    let mib = |b: u64| b / (1 << 20);
    let draft = match a.draft {
        DraftArg::Off => "off".to_string(),
        DraftArg::Copies => format!("copies(max={})", a.draft_max),
    };
    let tail =
        delay_word(a.decode_delay_ms, a.decode_delay_us) + &shapes_word(a.reply_shapes.as_ref());
    format!(
        "rigaudit-engine start version={} commit={} model={} sha256={} name={} streams={} window={} window_source=\"{}\" n_ctx_train={} kv_cache={}MiB kv_type=f32 mem_left={}MiB threads={} simd={:?} sampling=temperature={},top_k={},top_p={} sampling_source={} draft={}{}",
        env!("CARGO_PKG_VERSION"),
        option_env!("RIGAUDIT_ENGINE_COMMIT").unwrap_or("unknown"),
        a.model.display(),
        m.digest,
        a.name,
        a.parallel,
        window,
        window_src,
        m.n_ctx_train,
        mib(kv_bytes),
        mib(avail.saturating_sub(kv_bytes)),
        threads,
        m.simd,
        m.defaults.temperature,
        m.defaults.top_k,
        m.defaults.top_p,
        m.defaults_src,
        draft,
        tail,
    )
}

/// The decode step's deliberate slowdown: `--decode-delay-ms` sleeps, `--decode-delay-us`
/// busy-waits (clap lets only one be given).
fn decode_delay(a: &ServeArgs) -> engine::DecodeDelay {
    use std::time::Duration;
    match (a.decode_delay_ms, a.decode_delay_us) {
        (0, 0) => engine::DecodeDelay::None,
        (0, us) => engine::DecodeDelay::Spin(Duration::from_micros(us)),
        (ms, _) => engine::DecodeDelay::Sleep(Duration::from_millis(ms)),
    }
}

/// The start line's word for `--decode-delay-ms` / `--decode-delay-us`, in the unit given: named
/// only when there is a delay.
fn delay_word(ms: u64, us: u64) -> String {
    match (ms, us) {
        (0, 0) => String::new(),
        (0, n) => format!(" decode_delay_us={n}"),
        (n, _) => format!(" decode_delay_ms={n}"),
    }
}

/// The start line's word for `--reply-shapes`: named only when given.
fn shapes_word(spec: Option<&crate::shapes::Spec>) -> String {
    spec.map(|s| format!(" reply_shapes={}", s.text()))
        .unwrap_or_default()
}

/// Exits the process once standard input closes (`--exit-with-stdin`).
fn exit_when_stdin_closes() {
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        std::process::exit(0);
    });
}

/// Sampling defaults from the model's `general.sampling.*` metadata, else the engine's, and
/// which of the two they came from.
fn sampling_defaults(g: &Gguf) -> (SamplingDefaults, &'static str) {
    let f = |k: &str| g.get_f64(k);
    let defaults = SamplingDefaults {
        temperature: f("general.sampling.temp").unwrap_or(0.8) as f32,
        top_p: f("general.sampling.top_p").unwrap_or(0.95) as f32,
        top_k: g.get_u64("general.sampling.top_k").unwrap_or(40) as usize,
    };
    let src = if g.get("general.sampling.temp").is_some() {
        "model"
    } else {
        "engine"
    };
    (defaults, src)
}

/// The context window per slot and where it came from: `--context`, or the largest multiple
/// of 256 (at most the trained context) whose KV caches for all slots fit half of `avail` bytes.
fn context_window(
    context: Option<usize>,
    per_tok: u64,
    parallel: usize,
    n_ctx_train: usize,
    avail: u64,
) -> Result<(usize, &'static str), Box<dyn std::error::Error>> {
    let (window, src) = match context {
        Some(c) => {
            if c < 16 {
                return Err("--context must be at least 16".into());
            }
            (c, "--context")
        }
        None => {
            // Half of the available memory for the KV caches of all slots.
            let fit = (avail / 2 / (per_tok * parallel as u64)) as usize;
            (
                fit.min(n_ctx_train) / 256 * 256,
                "auto: fits half of available memory",
            )
        }
    };
    if window < 16 {
        return Err("not enough memory for a useful context window".into());
    }
    Ok((window, src))
}

/// Compute threads: `--threads`, else every core; at least one.
fn compute_threads(threads: Option<usize>) -> usize {
    threads
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1)
}

/// Binds `host:port`, prints `start_line` with the bound address, and serves the API on
/// `state` until Ctrl-C.
fn listen(
    host: &str,
    port: u16,
    start_line: &str,
    state: Arc<AppState>,
) -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((host, port)).await?;
        let addr = listener.local_addr()?;
        println!("{start_line} listen=http://{addr}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        axum::serve(listener, server::router(state))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
