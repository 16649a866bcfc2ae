//! The GPU path: its kernels compile to PTX with NVRTC on any machine (NVRTC from PyPI: see
//! scripts/test.sh), `--device cuda` without a driver is a clear error, and where a GPU is found
//! the GPU forward pass gives the CPU engine's greedy tokens, with log-probabilities within
//! [`LOGPROB_TOL`]. Each GPU test says why it is skipped where there is none.

use rigaudit_engine::cuda::{self, model::GpuForward};
use rigaudit_engine::gguf::Gguf;
use rigaudit_engine::model::{CpuForward, Forward, Model};
use rigaudit_engine::pool::Pool;
use rigaudit_engine::synth::{make_model, Preset};

use crate::common;

/// Largest difference allowed between a GPU and a CPU log-probability (nats), over the whole
/// vocabulary at every step: both quantize activations the same way, so only summation order,
/// `exp` and rounding ties differ.
const LOGPROB_TOL: f64 = 0.05;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// NVRTC is loaded, or the test is skipped saying why (a failure in CI, where test.sh installs it).
fn nvrtc_or_skip() -> bool {
    match cuda::load_nvrtc() {
        Ok(_) => true,
        Err(e) if in_ci() => panic!("CI must compile the kernels: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: {e} (scripts/test.sh installs it and sets RIGAUDIT_NVRTC)");
            false
        }
    }
}

/// A CUDA device with a driver is here, or the test is skipped saying why.
fn gpu_or_skip() -> bool {
    let found = cuda::load_driver().and_then(|_| {
        cuda::guarded("CUDA", || {
            cudarc::driver::CudaContext::device_count().map_err(|e| format!("{e:?}"))
        })
    });
    match found {
        Ok(n) if n > 0 => true,
        Ok(_) => (eprintln!("SKIPPED: the CUDA driver sees no device"), false).1,
        Err(e) => (eprintln!("SKIPPED: no GPU here: {e}"), false).1,
    }
}

#[test]
fn every_kernel_compiles_to_ptx() {
    if !nvrtc_or_skip() {
        return;
    }
    for arch in ["compute_80", "compute_90"] {
        let ptx = cuda::compile_kernels(arch).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            ptx.contains(&format!(".target sm_{}", &arch[8..])),
            "{arch}"
        );
        for name in cuda::KERNEL_NAMES {
            assert!(
                ptx.contains(&format!(".entry {name}(")),
                "{name} missing from the {arch} PTX"
            );
        }
    }
}

#[test]
fn compiled_kernels_are_cached_by_digest() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = tempfile_dir("ptx-cache");
    let (first, cached) = cuda::compile_ptx_in(&dir, "compute_90").unwrap();
    assert!(!cached, "an empty cache answered");
    let (again, cached) = cuda::compile_ptx_in(&dir, "compute_90").unwrap();
    assert!(cached && again == first, "the second start compiled again");
    let (other, cached) = cuda::compile_ptx_in(&dir, "compute_80").unwrap();
    assert!(
        !cached && other != first,
        "another architecture came from the cache"
    );
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, 2, "one file per digest");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_cuda_without_a_driver_is_a_clear_error() {
    if cuda::load_driver().is_ok() {
        eprintln!("SKIPPED: this machine has a CUDA driver");
        return;
    }
    let dir = tempfile_dir("nodriver");
    let model = dir.join("tiny.gguf");
    std::fs::write(&model, make_model(&Preset::TINY, 1).unwrap()).unwrap();
    let (code, out, err) = serve_with(&model, &["--device", "cuda"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no CUDA driver found (libcuda.so.1)"), "{err}");
    assert!(err.contains("use --device cpu"), "{err}");
    assert!(out.is_empty(), "a start line was printed");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `serve MODEL --port 0 ARGS` with `env` added: its exit code, standard output and error.
fn serve_with(
    model: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .args([
            "serve",
            model.to_str().unwrap(),
            "--name",
            "t",
            "--port",
            "0",
        ])
        .args(args)
        .env_remove("NCCL_COMM_ID")
        .envs(env.iter().copied())
        .output()
        .expect("run rigaudit-engine");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// A refused start: the model, the arguments, the environment added, what the error must say.
type Case<'a> = (
    &'a std::path::Path,
    Vec<&'a str>,
    Vec<(&'a str, &'a str)>,
    &'a str,
);

#[test]
fn tensor_parallel_ranks_are_checked_before_any_gpu_is_asked_for() {
    let dir = tempfile_dir("ranks");
    let (tiny, wide) = (dir.join("tiny.gguf"), dir.join("wide.gguf"));
    std::fs::write(&tiny, make_model(&Preset::TINY, 1).unwrap()).unwrap();
    let two_kv = Preset {
        n_head: 4,
        n_head_kv: 2,
        n_embd: 128,
        ..Preset::TINY
    };
    std::fs::write(&wide, make_model(&two_kv, 1).unwrap()).unwrap();
    let rank0 = [
        ("RIGAUDIT_ENGINE_RANK", "0"),
        ("RIGAUDIT_ENGINE_WORLD", "2"),
    ];
    let addr = ("NCCL_COMM_ID", "127.0.0.1:29556");
    let with_addr = [rank0[0], rank0[1], addr];
    let cuda = ["--device", "cuda"];
    let cases: [Case; 5] = [
        (
            &wide,
            cuda.to_vec(),
            rank0.to_vec(),
            "needs NCCL_COMM_ID=<address of rank 0>:<port>",
        ),
        (
            &wide,
            vec!["--device", "cuda", "--nccl", "off"],
            with_addr.to_vec(),
            "--nccl is off",
        ),
        (
            &tiny,
            cuda.to_vec(),
            with_addr.to_vec(),
            "cannot split this model's 1 KV heads",
        ),
        (
            &wide,
            vec!["--device", "cpu"],
            with_addr.to_vec(),
            "tensor parallelism needs --device cuda",
        ),
        (
            &wide,
            vec!["--device", "cuda", "--nccl", "on"],
            vec![("RIGAUDIT_NCCL", "/nonexistent/libnccl.so.2")],
            "no NCCL library found (tried /nonexistent/libnccl.so.2;",
        ),
    ];
    for (model, args, env, want) in cases {
        let (code, out, err) = serve_with(model, &args, &env);
        assert_eq!(code, 1, "{args:?} {env:?}: {err}");
        assert!(
            err.contains(want),
            "{args:?} {env:?}: wanted {want:?} in {err}"
        );
        assert!(out.is_empty(), "{args:?}: a start line was printed: {out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempfile_dir(what: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("engine-gpu-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn log_softmax(row: &[f32]) -> Vec<f64> {
    let mx = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = row.iter().map(|&v| (v as f64 - mx).exp()).sum::<f64>().ln() + mx;
    row.iter().map(|&v| v as f64 - lse).collect()
}

fn argmax(v: &[f32]) -> u32 {
    (0..v.len()).fold(0, |b, i| if v[i] > v[b] { i } else { b }) as u32
}

/// Greedy decode of `n` tokens after `prompt` on `f` (slot 0): the tokens and each step's
/// log-probabilities over the vocabulary (the last token is the last step's pick, not run).
fn greedy(f: &mut dyn Forward, prompt: &[u32], n: usize) -> (Vec<u32>, Vec<Vec<f64>>) {
    use common::chunk;
    let mut logits = f.run(&[chunk(prompt, 0)]).remove(0);
    let (mut toks, mut lps) = (Vec::new(), Vec::new());
    for i in 0..n {
        let t = argmax(&logits);
        toks.push(t);
        lps.push(log_softmax(&logits));
        if i + 1 < n {
            let next = [t];
            logits = f.run(&[chunk(&next, prompt.len() + i)]).remove(0);
        }
    }
    (toks, lps)
}

/// The GPU and CPU engines on `bytes` (a GGUF) agree: same greedy tokens, log-probabilities
/// within [`LOGPROB_TOL`]; prefill in one chunk (matrix-matrix kernels) and decode (matrix-vector
/// kernels, graphs) both ran.
fn assert_gpu_matches_cpu(bytes: Vec<u8>, prompt: &[u32], what: &str) {
    assert_gpu_matches_cpu_with(bytes, prompt, what, false)
}

/// As [`assert_gpu_matches_cpu`], with the all-reduces through NCCL (a world of one) when `nccl`.
fn assert_gpu_matches_cpu_with(bytes: Vec<u8>, prompt: &[u32], what: &str, nccl: bool) {
    let g = Gguf::parse(bytes.clone()).unwrap();
    let one = cuda::tp::Ranks { rank: 0, world: 1 };
    let mut gpu =
        GpuForward::load_ranked(&g, 0, 1, 256, one, nccl).unwrap_or_else(|e| panic!("{what}: {e}"));
    let model = Model::load(Gguf::parse(bytes).unwrap()).unwrap();
    let mut cpu = CpuForward::new(model, Pool::new(2), 1, 256);
    let (gt, gl) = greedy(&mut gpu, prompt, 24);
    let (ct, cl) = greedy(&mut cpu, prompt, 24);
    assert_eq!(gt, ct, "{what}: GPU and CPU greedy tokens differ");
    let worst = gl
        .iter()
        .flatten()
        .zip(cl.iter().flatten())
        .map(|(a, b)| (a - b).abs())
        .fold(0f64, f64::max);
    eprintln!("{what}: 24 greedy tokens identical, max |logprob GPU - CPU| = {worst:.2e}");
    assert!(
        worst <= LOGPROB_TOL,
        "{what}: log-probabilities differ by {worst}"
    );
    let last = gpu.argmax_last(1).unwrap();
    assert_eq!(last, [gt[23]], "{what}: device argmax of the last logits");
    // Kernels launched one by one (no graphs) give the same tokens.
    gpu.set_graphs(false);
    let (eager, _) = greedy(&mut gpu, prompt, 24);
    assert_eq!(eager, ct, "{what}: without graphs, other tokens");
}

#[test]
fn gpu_matches_cpu_on_random_models() {
    if !gpu_or_skip() {
        return;
    }
    let prompt: Vec<u32> = (0..40).map(|i| 300 + (i * 37) % 200).collect();
    assert_gpu_matches_cpu(make_model(&Preset::TINY, 3).unwrap(), &prompt, "tiny");
    let four = Preset {
        n_layer: 4,
        ..Preset::SMOLLM2_135M
    };
    assert_gpu_matches_cpu(
        make_model(&four, 5).unwrap(),
        &prompt,
        "smollm2-shaped, 4 layers",
    );
}

#[test]
fn gpu_through_nccl_matches_cpu() {
    if !gpu_or_skip() {
        return;
    }
    if let Err(e) = cuda::nccl::load() {
        eprintln!("SKIPPED: {e}");
        return;
    }
    let prompt: Vec<u32> = (0..40).map(|i| 300 + (i * 37) % 200).collect();
    let four = Preset {
        n_layer: 4,
        ..Preset::SMOLLM2_135M
    };
    let bytes = make_model(&four, 5).unwrap();
    assert_gpu_matches_cpu_with(bytes, &prompt, "smollm2-shaped, NCCL world of one", true);
}

#[test]
fn gpu_matches_cpu_on_the_real_model() {
    if !gpu_or_skip() {
        return;
    }
    let Some(path) = common::model_path() else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let g = Gguf::parse(bytes.clone()).unwrap();
    let tk = rigaudit_engine::tokenizer::EngineTokenizer::from_gguf(&g).unwrap();
    let prompt =
        tk.encode("<|im_start|>user\nThe capital of France is<|im_end|>\n<|im_start|>assistant\n");
    assert_gpu_matches_cpu(bytes, &prompt, "SmolLM2-135M Q4_1");
}

#[test]
fn q4_1_products_match_the_cpu_reference() {
    if !gpu_or_skip() {
        return;
    }
    let g = Gguf::parse(make_model(&Preset::TINY, 1).unwrap()).unwrap();
    let gpu = GpuForward::load(&g, 0, 1, 64).unwrap();
    // Odd shapes: rows not a multiple of 32, blocks per row not a multiple of 8, tokens of 8.
    for (rows, k, ntok) in [
        (300, 576, 1),
        (300, 576, 5),
        (77, 1536, 13),
        (4096, 4096, 1),
    ] {
        let c = cuda::bench::check_q4_1(&gpu, rows, k, ntok, 3, false).unwrap();
        eprintln!(
            "{rows}x{k}, {ntok} tokens: max relative error {:.1e}",
            c.max_rel_err
        );
        assert!(c.max_rel_err < 1e-4, "{rows}x{k} x{ntok}: {c:?}");
        if ntok == 1 {
            let w = cuda::bench::check_q4_1(&gpu, rows, k, 1, 3, true).unwrap();
            eprintln!(
                "{rows}x{k}, warp per row: max relative error {:.1e}",
                w.max_rel_err
            );
            assert!(w.max_rel_err < 1e-4, "{rows}x{k} warp per row: {w:?}");
        }
    }
}
