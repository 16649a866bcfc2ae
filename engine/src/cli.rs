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
use crate::model::Model;
use crate::pool::Pool;
use crate::server::{self, AppState};
use crate::tokenizer::EngineTokenizer;
use clap::{Parser, Subcommand, ValueEnum};
use sha2::{Digest, Sha256};

#[derive(Parser)]
#[command(
    name = "rigaudit-engine",
    version,
    about = "Bundled CPU LLM serving engine for rigaudit replay"
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

#[derive(Subcommand)]
enum Cmd {
    /// Serve MODEL (a GGUF file) over HTTP.
    Serve {
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
        /// Exit when standard input closes (lets a supervising process, such
        /// as a test, take the engine down with it however it ends).
        #[arg(long)]
        exit_with_stdin: bool,
    },
    /// Write the tokenizer built from MODEL's metadata as tokenizer.json.
    Tokenizer {
        /// GGUF model file.
        model: PathBuf,
        /// Output path.
        #[arg(long, default_value = "tokenizer.json")]
        out: PathBuf,
    },
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
        Cmd::Tokenizer { model, out } => {
            let g = Gguf::open(&model)?;
            let tk = EngineTokenizer::from_gguf(&g)?;
            std::fs::write(&out, tk.to_json())?;
            println!("{}", out.display());
            Ok(())
        }
        Cmd::Serve {
            model,
            name,
            parallel,
            context,
            host,
            port,
            threads,
            draft,
            draft_max,
            batch,
            exit_with_stdin,
        } => {
            if exit_with_stdin {
                std::thread::spawn(|| {
                    let mut sink = Vec::new();
                    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
                    std::process::exit(0);
                });
            }
            if parallel == 0 || parallel > 256 {
                return Err("--parallel must be between 1 and 256".into());
            }
            let bytes = std::fs::read(&model)
                .map_err(|e| format!("cannot read {}: {e}", model.display()))?;
            let digest = format!("{:x}", Sha256::digest(&bytes));
            let g = Gguf::parse(bytes)?;
            let tok = Arc::new(EngineTokenizer::from_gguf(&g)?);
            let f = |k: &str| g.get_f64(k);
            let defaults = SamplingDefaults {
                temperature: f("general.sampling.temp").unwrap_or(0.8) as f32,
                top_p: f("general.sampling.top_p").unwrap_or(0.95) as f32,
                top_k: g.get_u64("general.sampling.top_k").unwrap_or(40) as usize,
            };
            let defaults_src = if g.get("general.sampling.temp").is_some() {
                "model"
            } else {
                "engine"
            };
            let chat_template = g.get_str("tokenizer.chat_template").map(str::to_string);
            let tok_text = |id: u32| tok.inner.id_to_token(id).unwrap_or_default();
            let (bos_text, eos_text) = (tok_text(tok.bos), tok_text(tok.eos));
            let model_obj = Model::load(g)?;
            let cfg = model_obj.cfg.clone();
            let per_tok = cfg.kv_bytes_per_token() as u64;
            let avail = mem_available();
            let (window, window_src) = match context {
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
                        fit.min(cfg.n_ctx_train) / 256 * 256,
                        "auto: fits half of available memory",
                    )
                }
            };
            if window < 16 {
                return Err("not enough memory for a useful context window".into());
            }
            let kv_bytes = per_tok * window as u64 * parallel as u64;
            let threads = threads
                .unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                })
                .max(1);
            let simd = model_obj.simd();
            let pool = Pool::new(threads);
            let draft = match draft {
                DraftArg::Off => Draft::Off,
                DraftArg::Copies => Draft::Copies,
            };
            let handle = engine::start(
                model_obj,
                tok.clone(),
                pool,
                EngineConfig {
                    parallel,
                    window,
                    batch: batch.max(1),
                    draft,
                    draft_max,
                },
            );
            let state = Arc::new(AppState {
                name: name.clone(),
                window,
                n_ctx_train: cfg.n_ctx_train,
                parallel,
                tok,
                engine: handle,
                defaults,
                chat_template,
                bos_text,
                eos_text,
                ids: AtomicU64::new(1),
            });
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind((host.as_str(), port)).await?;
                let addr = listener.local_addr()?;
                let mib = |b: u64| b / (1 << 20);
                println!(
                    "rigaudit-engine start version={} commit={} model={} sha256={} name={} streams={} window={} window_source=\"{}\" n_ctx_train={} kv_cache={}MiB kv_type=f32 mem_left={}MiB threads={} simd={:?} sampling=temperature={},top_k={},top_p={} sampling_source={} draft={} listen=http://{}",
                    env!("CARGO_PKG_VERSION"),
                    option_env!("RIGAUDIT_ENGINE_COMMIT").unwrap_or("unknown"),
                    model.display(),
                    digest,
                    name,
                    parallel,
                    window,
                    window_src,
                    cfg.n_ctx_train,
                    mib(kv_bytes),
                    mib(avail.saturating_sub(kv_bytes)),
                    threads,
                    simd,
                    defaults.temperature,
                    defaults.top_k,
                    defaults.top_p,
                    defaults_src,
                    match draft {
                        Draft::Off => "off".to_string(),
                        Draft::Copies => format!("copies(max={draft_max})"),
                    },
                    addr
                );
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
    }
}
