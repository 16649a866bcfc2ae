//! Fidelity of the optimized forward pass to the plain f32 reference path
//! (`Model::forward_reference_all`: dequantized weights, f32 activations, no
//! SIMD kernels, no KV cache) on the real model: perplexity of a fixed text,
//! mean KL divergence of the next-token distributions and top-1 agreement.
//!
//! The text is the US Declaration of Independence (1776, public domain),
//! `tests/fixtures/declaration-of-independence.txt`, written out from the
//! common transcription of the engrossed copy.

use crate::common;

use std::time::Instant;

use rigaudit_engine::model::{Chunk, KvCache, Model};
use rigaudit_engine::pool::Pool;

/// The fixed text.
pub const TEXT: &str = include_str!("../fixtures/declaration-of-independence.txt");
/// Tokens scored: enough for a stable perplexity, few enough that the
/// reference path (a plain f32 loop) stays within seconds.
const N: usize = 256;
/// Prefill chunk of the optimized path (exercises the KV cache across chunks).
const CHUNK: usize = 96;

/// Log-softmax of a logits row, in f64.
fn log_softmax(row: &[f32]) -> Vec<f64> {
    let mx = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = mx + row.iter().map(|&v| (v as f64 - mx).exp()).sum::<f64>().ln();
    row.iter().map(|&v| v as f64 - lse).collect()
}

fn argmax(v: &[f32]) -> usize {
    let mut b = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[b] {
            b = i;
        }
    }
    b
}

/// (ln perplexity of `fast`, ln perplexity of `reference`, mean KL(reference ‖ fast), top-1 agreement).
fn compare(ids: &[u32], fast: &[f32], reference: &[f32], nv: usize) -> (f64, f64, f64, f64) {
    let (mut nll_f, mut nll_r, mut kl, mut agree) = (0.0, 0.0, 0.0, 0usize);
    let n = ids.len() - 1;
    for i in 0..n {
        let (rf, rr) = (
            &fast[i * nv..(i + 1) * nv],
            &reference[i * nv..(i + 1) * nv],
        );
        let (lf, lr) = (log_softmax(rf), log_softmax(rr));
        let next = ids[i + 1] as usize;
        nll_f -= lf[next];
        nll_r -= lr[next];
        kl += lr
            .iter()
            .zip(&lf)
            .map(|(r, f)| r.exp() * (r - f))
            .sum::<f64>();
        agree += usize::from(argmax(rf) == argmax(rr));
    }
    let n = n as f64;
    (nll_f / n, nll_r / n, kl / n, agree as f64 / n)
}

/// Relative difference of two perplexities given as their logs, in percent.
fn pct(a: f64, b: f64) -> f64 {
    ((a - b).exp() - 1.0) * 100.0
}

/// Logits of every position through the optimized path, fed in prefill chunks.
fn optimized(m: &Model, ids: &[u32]) -> Vec<f32> {
    let pool = Pool::new(2);
    let mut kv = vec![KvCache::new(&m.cfg, ids.len())];
    let mut out = Vec::with_capacity(ids.len() * m.cfg.n_vocab);
    for (c, toks) in ids.chunks(CHUNK).enumerate() {
        let ch = Chunk {
            slot: 0,
            tokens: toks,
            pos: c * CHUNK,
            all_logits: true,
            no_logits: false,
        };
        out.extend(m.forward(&pool, &[ch], &mut kv).remove(0));
    }
    out
}

#[test]
fn optimized_perplexity_matches_f32_reference() {
    let Some((tk, m)) = common::load_model() else {
        return;
    };
    let all = tk.encode(TEXT);
    assert!(all.len() > N, "text has only {} tokens", all.len());
    let ids = &all[..N];
    let nv = m.cfg.n_vocab;
    let t0 = Instant::now();
    let fast = optimized(&m, ids);
    let t_fast = t0.elapsed();
    let t0 = Instant::now();
    let f32_ref = m.forward_reference_all(ids);
    let q8_ref = m.forward_reference_q8(ids);
    let t_ref = t0.elapsed();

    let (lf, lr, kl, top1) = compare(ids, &fast, &f32_ref, nv);
    let (_, lq, klq, top1q) = compare(ids, &fast, &q8_ref, nv);
    let (_, _, kl_q8, top1_q8) = compare(ids, &q8_ref, &f32_ref, nv);
    eprintln!(
        "fidelity: {N} tokens, optimized {t_fast:?}, references {t_ref:?}\n\
         optimized vs f32 reference: perplexity {:.4} vs {:.4} ({:+.3} %), mean KL {kl:.5} nats, top-1 {:.2} %\n\
         optimized vs 8-bit-activation reference: perplexity {:.4} ({:+.4} %), mean KL {klq:.6} nats, top-1 {:.2} %\n\
         8-bit-activation reference vs f32: mean KL {kl_q8:.5} nats, top-1 {:.2} %",
        lf.exp(),
        lr.exp(),
        pct(lf, lr),
        top1 * 100.0,
        lq.exp(),
        pct(lf, lq),
        top1q * 100.0,
        top1_q8 * 100.0
    );
    // Bounds. The optimized path rounds every matrix product's input to 8
    // bits per block of 32 (as llama.cpp does); on this 135M-parameter model
    // that rounding alone, replayed in the reference (`forward_reference_q8`),
    // raises perplexity of these 256 tokens by 1.9 % over f32 activations and
    // costs a mean KL of 0.0132 nats (measured; the optimized path: 1.9 %,
    // 0.0135). Two implementations of the same rounding differ position by
    // position about as much as either differs from f32 (a value on a rounding
    // edge goes either way), so the tight checks are relative to the rounding's
    // own cost: the optimized path may be no further from f32 than 1.3x the
    // replayed rounding's KL, its perplexity within 1 % of the replayed
    // rounding's, and within 3 % of f32's. A wrong kernel (a lost block, a
    // wrong scale, a bad RoPE or mask) moves these by far more.
    assert!(
        (lf - lq).abs() < 0.01,
        "perplexity {:.3} % from the 8-bit-activation reference",
        pct(lf, lq)
    );
    assert!(
        kl < 1.3 * kl_q8,
        "mean KL {kl} to f32, over 1.3x the 8-bit rounding's own {kl_q8}"
    );
    assert!(
        (lf - lr).abs() < 0.03,
        "perplexity {:.3} % from the f32 reference",
        pct(lf, lr)
    );
    assert!(
        top1 > top1_q8 - 0.03,
        "top-1 agreement with f32 {top1}, 8-bit rounding alone {top1_q8}"
    );
}
