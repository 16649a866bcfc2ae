//! Kernel checks and speed measurements on the GPU (`rigaudit-engine gpu-bench`, tests/gpu.rs):
//! the 4-bit products against the CPU's scalar reference, the matrix-vector product's bandwidth
//! beside a device copy of the same bytes, and decode speed on the GPU (graphs on and off) and
//! on the CPU engine.

use std::time::Instant;

use cudarc::driver::{CudaSlice, DevicePtr};

use super::model::{Arg, GpuForward, MM_ROWS, MM_THREADS};
use crate::kernels::{dot_rows_scalar, QAct, WType};
use crate::model::{Chunk, Forward};

/// What one Q4_1 product check measured.
#[derive(Debug, Clone, Copy)]
pub struct MatmulCheck {
    /// Largest |GPU - CPU| over the checked outputs, relative to the largest |CPU| output.
    pub max_rel_err: f64,
    /// Seconds per product (median of the timed calls).
    pub seconds: f64,
    /// Weight bytes one product reads (values and scales).
    pub weight_bytes: usize,
    /// Seconds per device copy of the same bytes (median).
    pub copy_seconds: f64,
}

/// Splitmix64 bytes.
fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(n);
    out
}

/// `rows` × `k` random Q4_1 weights as the file stores them (scales 1/64, minimum -1/8).
fn random_q4_1(rows: usize, k: usize) -> Vec<u8> {
    let nibbles = random_bytes(rows * k / 2, 7);
    let (d, m) = (half::f16::from_f32(1.0 / 64.0), half::f16::from_f32(-0.125));
    let mut out = Vec::with_capacity(rows * k / 32 * 20);
    for blk in nibbles.chunks_exact(16) {
        out.extend_from_slice(&d.to_bits().to_le_bytes());
        out.extend_from_slice(&m.to_bits().to_le_bytes());
        out.extend_from_slice(blk);
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Uploads `v`, keeping it in `kept`; its device pointer.
fn upload<T: cudarc::driver::DeviceRepr>(
    f: &GpuForward,
    v: &[T],
    kept: &mut Vec<CudaSlice<T>>,
) -> Result<u64, String> {
    let s = f
        .stream()
        .clone_htod(v)
        .map_err(|e| format!("CUDA upload: {e:?}"))?;
    let p = s.device_ptr(f.stream()).0;
    kept.push(s);
    Ok(p)
}

/// Times `iters` runs of `run` (after one warm-up), synchronizing after each; the median.
fn time(f: &GpuForward, iters: usize, run: impl Fn() -> Result<(), String>) -> Result<f64, String> {
    run()?;
    let sync = || {
        f.stream()
            .synchronize()
            .map_err(|e| format!("CUDA sync: {e:?}"))
    };
    sync()?;
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        run()?;
        sync()?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

/// The values (16 bytes) and scales (4 bytes) of each 20-byte Q4_1 block, as two arrays.
fn split_blocks(raw: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let n = raw.len() / 20;
    let (mut qs, mut sc) = (Vec::with_capacity(n * 16), Vec::with_capacity(n * 4));
    for b in raw.chunks_exact(20) {
        sc.extend_from_slice(&b[..4]);
        qs.extend_from_slice(&b[4..]);
    }
    (qs, sc)
}

/// Largest |`got` - CPU| over the first 512 rows of the Q4_1 product of `raw` (`rows` rows)
/// with `act`, relative to the largest |CPU| value; `got` is token-major (`[t][rows]`).
fn rel_err_vs_cpu(raw: &[u8], act: &QAct, got: &[f32], rows: usize) -> f64 {
    let row_bytes = act.k / 32 * 20;
    let (mut worst, mut scale) = (0f64, 0f64);
    let mut want = vec![0f32; act.rows];
    for r in 0..rows.min(512) {
        let row = &raw[r * row_bytes..(r + 1) * row_bytes];
        dot_rows_scalar(WType::Q4_1, row, act, 0, &mut want);
        for (t, w) in want.iter().enumerate() {
            worst = worst.max((got[t * rows + r] - w).abs() as f64);
            scale = scale.max(w.abs() as f64);
        }
    }
    worst / scale.max(1e-30)
}

/// Checks the Q4_1 product of a random `rows` × `k` matrix with `ntok` random activation rows
/// against [`dot_rows_scalar`] (the first 512 rows), and times it and a copy of its bytes; with
/// `warp_per_row`, the matrix-vector kernel that gives each row a whole warp (the alternative for
/// long rows that `gpu-bench` times beside the engine's eight threads a row).
pub fn check_q4_1(
    f: &GpuForward,
    rows: usize,
    k: usize,
    ntok: usize,
    iters: usize,
    warp_per_row: bool,
) -> Result<MatmulCheck, String> {
    if warp_per_row && ntok != 1 {
        return Err("the warp-per-row kernel is a matrix-vector product (one token)".into());
    }
    let raw = random_q4_1(rows, k);
    let x: Vec<f32> = random_bytes(ntok * k, 9)
        .iter()
        .map(|&b| b as f32 / 64.0 - 2.0)
        .collect();
    let mut act = QAct::default();
    act.quantize(&x, ntok, k);
    let (qs, sc) = split_blocks(&raw);
    let (mut bytes, mut floats, mut ints) = (Vec::new(), Vec::new(), Vec::new());
    let p_qs = upload(f, &qs, &mut bytes)?;
    let p_sc = upload(f, &sc, &mut bytes)?;
    let p_xq = upload(f, &act.q, &mut ints)?;
    let p_xd = upload(f, &act.d, &mut floats)?;
    let p_xs = upload(f, &act.s, &mut floats)?;
    let p_out = upload(f, &vec![0f32; rows * ntok], &mut floats)?;
    let p_copy = upload(f, &vec![0u8; qs.len() + sc.len()], &mut bytes)?;
    let (name, per, rows_per_block) = match (warp_per_row, ntok) {
        (true, _) => ("mv_q4_1_w32", 1, MM_THREADS as usize / 32),
        (false, 1) => ("mv_q4_1", 1, MM_ROWS),
        (false, _) => ("mm_q4_1", 8, MM_ROWS),
    };
    let grid = (
        rows.div_ceil(rows_per_block) as u32,
        ntok.div_ceil(per) as u32,
    );
    let ints_args = [rows, k / 32, ntok, rows, 0].map(|v| Arg::I(v as i32));
    let args: Vec<Arg> = [p_qs, p_sc, p_xq, p_xd, p_xs, p_out]
        .map(Arg::P)
        .into_iter()
        .chain(ints_args)
        .collect();
    let seconds = time(f, iters, || f.launch(name, grid, MM_THREADS, &args))?;
    let words = (qs.len() + sc.len()) / 16;
    let copy = [Arg::P(p_qs), Arg::P(p_copy), Arg::P(words as u64)];
    let copy_seconds = time(f, iters, || f.launch("copy_u4", (1024, 1), 256, &copy))?;
    let got: Vec<f32> = f
        .stream()
        .clone_dtoh(&floats[2])
        .map_err(|e| format!("CUDA copy back: {e:?}"))?;
    Ok(MatmulCheck {
        max_rel_err: rel_err_vs_cpu(&raw, &act, &got, rows),
        seconds,
        weight_bytes: qs.len() + sc.len(),
        copy_seconds,
    })
}

/// Seconds per token of greedy decode on `f`: a `prompt`-token prefill (not timed), then `n`
/// decode steps of one token each (slot 0), logits to the host each step as `serve` does.
pub fn decode_seconds_per_token(f: &mut dyn Forward, prompt: usize, n: usize) -> f64 {
    let toks: Vec<u32> = (0..prompt as u32).map(|i| 300 + i * 7 % 1000).collect();
    let chunk = Chunk {
        slot: 0,
        tokens: &toks,
        pos: 0,
        all_logits: false,
        no_logits: false,
    };
    let mut logits = f.run(&[chunk]).remove(0);
    let start = Instant::now();
    for i in 0..n {
        let next =
            [(0..logits.len()).fold(0, |b, j| if logits[j] > logits[b] { j } else { b }) as u32];
        let chunk = Chunk {
            slot: 0,
            tokens: &next,
            pos: prompt + i,
            all_logits: false,
            no_logits: false,
        };
        logits = f.run(&[chunk]).remove(0);
    }
    start.elapsed().as_secs_f64() / n.max(1) as f64
}
