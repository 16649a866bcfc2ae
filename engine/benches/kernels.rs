//! Micro-benchmark of the quantized dot kernels (scalar vs detected SIMD).
use rigaudit_engine::kernels::{self, QAct, Simd, WType};
use std::time::Instant;

fn main() {
    let (k, rows, ntok) = (576usize, 1536usize, 1usize);
    let w: Vec<f32> = (0..k * rows)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let q: Vec<u8> = w.chunks(k).flat_map(kernels::quantize_q4_1).collect();
    let rb = k / 32 * 20;
    let x: Vec<f32> = (0..k * ntok)
        .map(|i| ((i * 104729) % 997) as f32 / 997.0 - 0.5)
        .collect();
    let mut act = QAct::default();
    act.quantize(&x, ntok, k);
    for simd in [Simd::Scalar, kernels::detect_simd()] {
        let mut out = vec![0f32; ntok];
        let t = Instant::now();
        let iters = 200;
        for _ in 0..iters {
            for r in 0..rows {
                kernels::dot_rows(
                    simd,
                    WType::Q4_1,
                    &q[r * rb..(r + 1) * rb],
                    &act,
                    0,
                    &mut out,
                );
            }
        }
        let dt = t.elapsed().as_secs_f64() / iters as f64;
        println!(
            "{simd:?}: {:.1} us per {rows}x{k} Q4_1 matvec ({:.2} GB/s of weights)",
            dt * 1e6,
            (rows * rb) as f64 / dt / 1e9
        );
    }
}
