//! The machine's speed reference: a fixed kernel run beside every counted try, so that a replay
//! can tell a machine that runs slower or faster as a whole (a shared VM whose neighbours take
//! the last-level cache, memory bandwidth or clock) from an engine that does.
//!
//! The kernel stands for what decode does: one matrix-vector product of a 64 MiB matrix of Q4_1
//! weights (the size and format of a small quantized model; larger than most caches and held in
//! the largest) with one 8-bit quantized activation row, split by rows across the threads the
//! caller gives (one per core the process may run on), using the bundled engine's own dot kernels
//! at the SIMD level this CPU gives them. It reports the weight bytes streamed per second. The
//! kernel is the engine's rather than a crate's because the figure must track what an engine's
//! decode feels (the cache and memory bandwidth left by neighbours, the clock) and must stay
//! fixed: `kernel` names it, its version and its SIMD level, and figures are compared only under
//! one name.
//!
//! rigaudit's `measure` records the figures (`MachineReference` in its speed result); a figure
//! recorded by someone else can be forged, so `replay` uses it only to turn a drift it explains
//! into "inconclusive", never into "reproduced". It lives in the engine's crate, built with
//! full optimization in every profile, so a debug and a release rigaudit give the same figure.

use crate::kernels::{detect_simd_cached, dot_rows, QAct, Simd, WType, QK};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The kernel's version, part of its recorded name.
const VERSION: u32 = 1;
/// Row length of the matrix (elements).
const K: usize = 2048;
/// Bytes of one Q4_1 row.
const ROW_BYTES: usize = K / QK * 20;
/// Rows of the matrix: 64 MiB of weights.
const ROWS: usize = (64 << 20) / ROW_BYTES;
/// How long one probe streams, at the least.
const PROBE: Duration = Duration::from_millis(60);

/// The kernel's recorded name: what it computes, its version and the SIMD level it ran at.
pub fn kernel_name() -> String {
    let simd = match detect_simd_cached() {
        Simd::Scalar => "scalar",
        Simd::Avx2 => "avx2",
        Simd::Avx512Vnni => "avx512vnni",
    };
    format!("engine-q4_1-matvec-64MiB-v{VERSION}-{simd}")
}

/// The matrix, made once per process: fixed scales and a fixed pseudo-random fill of nibbles, so
/// every run streams the same bytes.
fn matrix() -> &'static [u8] {
    static M: OnceLock<Vec<u8>> = OnceLock::new();
    M.get_or_init(|| {
        let mut x: u32 = 0x9e37_79b9;
        let mut m = vec![0u8; ROWS * ROW_BYTES];
        for block in m.chunks_exact_mut(20) {
            block[..2].copy_from_slice(&0x2000u16.to_le_bytes()); // scale 2^-7 as f16
            block[2..4].copy_from_slice(&0xa400u16.to_le_bytes()); // min -2^-6 as f16
            for b in &mut block[4..] {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = (x >> 24) as u8;
            }
        }
        m
    })
}

/// The activation row, quantized as the engine quantizes its activations.
fn activation() -> QAct {
    let x: Vec<f32> = (0..K)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
        .collect();
    let mut a = QAct::default();
    a.quantize(&x, 1, K);
    a
}

/// One product of the whole matrix with the activation, split by rows across `threads`: the sum
/// of its outputs.
fn pass(m: &[u8], act: &QAct, threads: usize) -> f32 {
    let simd = detect_simd_cached();
    let rows_per = (m.len() / ROW_BYTES).div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = m
            .chunks(rows_per * ROW_BYTES)
            .map(|part| {
                s.spawn(move || {
                    let mut out = [0f32];
                    let mut sum = 0f32;
                    for row in part.chunks_exact(ROW_BYTES) {
                        dot_rows(simd, WType::Q4_1, row, act, 0, &mut out);
                        sum += out[0];
                    }
                    sum
                })
            })
            .collect();
        parts.into_iter().map(|h| h.join().unwrap_or(0.0)).sum()
    })
}

/// Runs the kernel on `threads` threads for about [`PROBE`] (one warm pass first) and gives the
/// bytes streamed per second, in GB/s.
pub fn probe(threads: usize) -> f64 {
    let m = matrix();
    let act = activation();
    let threads = threads.max(1);
    std::hint::black_box(pass(m, &act, threads));
    let start = Instant::now();
    let mut passes = 0u64;
    while passes < 2 || start.elapsed() < PROBE {
        std::hint::black_box(pass(std::hint::black_box(m), &act, threads));
        passes += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    (passes as f64 * m.len() as f64) / secs / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_gives_the_same_product_on_any_number_of_threads() {
        let m = &matrix()[..ROW_BYTES * 64];
        let act = activation();
        let one = pass(m, &act, 1);
        assert!(one.is_finite() && one != 0.0, "{one}");
        assert!((pass(m, &act, 3) - one).abs() <= 1e-3 * one.abs(), "{one}");
        let gbps = probe(2);
        assert!(gbps.is_finite() && gbps > 0.0, "{gbps}");
        assert!(kernel_name().starts_with("engine-q4_1-matvec-64MiB-v1-"));
    }
}
