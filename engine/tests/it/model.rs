//! Forward-pass checks on the real model: the optimized batched path against
//! the plain f32 reference, and batch/chunk invariance of the logits.

use crate::common;

use rigaudit_engine::model::{Chunk, KvCache};
use rigaudit_engine::pool::Pool;

fn one(toks: &[u32], pos: usize, slot: usize) -> Chunk<'_> {
    Chunk {
        slot,
        tokens: toks,
        pos,
        all_logits: false,
        no_logits: false,
    }
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

#[test]
fn optimized_forward_matches_reference_and_is_batch_invariant() {
    let Some((tk, m)) = common::load_model() else {
        return;
    };
    let pool = Pool::new(2);
    let ids = tk.encode("<|im_start|>user\nThe capital of France is<|im_end|>\n");
    let other = tk.encode("def add(a, b):\n    return");
    assert!(ids.len() > 8);

    let mut kv: Vec<KvCache> = (0..2).map(|_| KvCache::new(&m.cfg, 64)).collect();
    let fast = m.forward(&pool, &[one(&ids, 0, 0)], &mut kv).remove(0);
    let reference = m.forward_reference(&ids);
    assert_eq!(fast.len(), m.cfg.n_vocab);
    assert_eq!(
        argmax(&fast),
        argmax(&reference),
        "greedy token differs from the f32 reference"
    );
    let dot: f64 = fast
        .iter()
        .zip(&reference)
        .map(|(a, b)| (*a as f64) * (*b as f64))
        .sum();
    let na: f64 = fast.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = reference
        .iter()
        .map(|a| (*a as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(
        dot / (na * nb) > 0.995,
        "cosine {} to the f32 reference",
        dot / (na * nb)
    );

    // Prompt fed in two chunks (prefix, then the rest) gives the same logits.
    let mut kv2: Vec<KvCache> = (0..2).map(|_| KvCache::new(&m.cfg, 64)).collect();
    let cut = ids.len() / 2;
    let first = m.forward(
        &pool,
        &[Chunk {
            no_logits: true,
            ..one(&ids[..cut], 0, 0)
        }],
        &mut kv2,
    );
    assert!(first[0].is_empty());
    let chunked = m
        .forward(&pool, &[one(&ids[cut..], cut, 0)], &mut kv2)
        .remove(0);
    assert_eq!(chunked, fast, "chunked prefill changed the logits");

    // Batched with another sequence in another slot: same logits for both.
    let mut kv3: Vec<KvCache> = (0..2).map(|_| KvCache::new(&m.cfg, 64)).collect();
    let alone = m.forward(&pool, &[one(&other, 0, 1)], &mut kv3).remove(0);
    let mut kv4: Vec<KvCache> = (0..2).map(|_| KvCache::new(&m.cfg, 64)).collect();
    let both = m.forward(&pool, &[one(&ids, 0, 0), one(&other, 0, 1)], &mut kv4);
    assert_eq!(both[0], fast, "batching changed slot 0's logits");
    assert_eq!(both[1], alone, "batching changed slot 1's logits");
}
