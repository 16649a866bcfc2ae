//! Tensor parallelism's arithmetic, checked on any machine: a scalar llama forward pass (f32, with
//! the engines' 8-bit activations before each product) run
//! rank by rank, each rank with exactly the weights the GPU ranks upload (`Shard::layer_parts`,
//! `Part::cut` on the GGUF's quantized bytes) and the GPU kernels' layout (its own heads in the
//! stacked Q|K|V, the query head's KV head as `h / (n_head / n_head_kv)` within the rank, its own
//! KV cache), the partial sums of the attention output and of down added up as the all-reduce
//! does, rank 0 alone adding the residual. A world of two or three must give the greedy tokens
//! and logits of a world of one. The collectives themselves need GPUs (engine/tests/it/gpu.rs and
//! engine/benches/GPU.md).

use common::chunk;
use rigaudit_engine::cuda::shard::{Part, Shard, Sizes};
use rigaudit_engine::gguf::{GgmlType, Gguf};
use rigaudit_engine::kernels::{dequant_row, WType};
use rigaudit_engine::model::{read_config, Config, CpuForward, Forward, Model};
use rigaudit_engine::pool::Pool;
use rigaudit_engine::synth::{make_model, Preset};

use crate::common;

/// A dequantized matrix, row-major.
struct Mat {
    rows: usize,
    k: usize,
    w: Vec<f32>,
}

/// `x` as the engines see it before a product: quantized to 8 bits per block of 32 (the scale the
/// block's largest magnitude over 127) and back.
fn q8(x: &[f32]) -> Vec<f32> {
    x.chunks(32)
        .flat_map(|b| {
            let d = b.iter().fold(0f32, |a, v| a.max(v.abs())) / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            b.iter()
                .map(move |v| (v * id).round().clamp(-127.0, 127.0) * d)
        })
        .collect()
}

impl Mat {
    /// The product with `x` quantized as the engines quantize it: each rank quantizes its own
    /// part, which gives the whole's values because no block straddles two ranks.
    fn times(&self, x: &[f32]) -> Vec<f32> {
        assert_eq!(x.len(), self.k);
        let x = q8(x);
        (0..self.rows)
            .map(|r| {
                self.w[r * self.k..][..self.k]
                    .iter()
                    .zip(&x)
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect()
    }
}

/// The parts `parts` of `g`'s tensors, cut as the GPU ranks cut them, dequantized and stacked.
fn load(g: &Gguf, parts: &[(String, Part)]) -> Mat {
    let (mut w, mut rows, mut k) = (Vec::new(), 0, 0);
    for (name, part) in parts {
        let (t, bytes) = g.tensor(name).unwrap();
        let ty = match t.ty {
            GgmlType::Q4_1 => WType::Q4_1,
            GgmlType::Q8_0 => WType::Q8_0,
            o => panic!("{name}: {o}"),
        };
        let bb = ty.block_bytes();
        let (cut, r, kk) = part.cut(bytes, t.dims[1], t.dims[0] / 32, bb).unwrap();
        let mut row = vec![0.0; kk];
        for chunk in cut.chunks_exact(kk / 32 * bb) {
            dequant_row(ty, chunk, &mut row);
            w.extend_from_slice(&row);
        }
        (rows, k) = (rows + r, kk);
    }
    Mat { rows, k, w }
}

fn norm_weights(g: &Gguf, name: &str) -> Vec<f32> {
    let (_, b) = g.tensor(name).unwrap();
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn rmsnorm(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let s = 1.0 / (ms + eps).sqrt();
    x.iter().zip(w).map(|(v, w)| v * s * w).collect()
}

/// RoPE on each head of `v` (pairs 2i, 2i+1), as the kernels do.
fn rope(v: &mut [f32], hd: usize, pos: usize, base: f32) {
    for head in v.chunks_exact_mut(hd) {
        for i in 0..hd / 2 {
            let (s, c) = (pos as f32 * base.powf(-(2.0 * i as f32) / hd as f32)).sin_cos();
            let (a, b) = (head[2 * i], head[2 * i + 1]);
            (head[2 * i], head[2 * i + 1]) = (a * c - b * s, a * s + b * c);
        }
    }
}

/// One rank: its part of every layer and its KV cache.
struct Rank {
    shard: Shard,
    sizes: Sizes,
    layers: Vec<[Mat; 4]>,
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
}

impl Rank {
    fn new(g: &Gguf, cfg: &Config, rank: usize, world: usize) -> Rank {
        let shard = Shard::of(cfg, rank, world).unwrap();
        let layers = (0..cfg.n_layer)
            .map(|i| {
                let p = shard.layer_parts(i, cfg.head_dim());
                [
                    load(g, &p.qkv),
                    load(g, &[p.wo]),
                    load(g, &p.gate_up),
                    load(g, &[p.down]),
                ]
            })
            .collect();
        let sizes = shard.sizes(cfg);
        let n = cfg.n_layer;
        Rank {
            shard,
            sizes,
            layers,
            keys: vec![vec![]; n],
            values: vec![vec![]; n],
        }
    }

    /// This rank's partial sum of layer `l`'s attention output for the normed input `h` at `pos`.
    fn attention(&mut self, l: usize, h: &[f32], pos: usize, base: f32) -> Vec<f32> {
        let Sizes {
            n_head,
            n_head_kv,
            hd,
            ..
        } = self.sizes;
        let (qd, kvd) = (self.sizes.q_dim(), self.sizes.kv_dim());
        let qkv = self.layers[l][0].times(h);
        let (mut q, mut k) = (qkv[..qd].to_vec(), qkv[qd..qd + kvd].to_vec());
        rope(&mut q, hd, pos, base);
        rope(&mut k, hd, pos, base);
        self.keys[l].extend_from_slice(&k);
        self.values[l].extend_from_slice(&qkv[qd + kvd..]);
        let mut out = vec![0.0; qd];
        for head in 0..n_head {
            let kvh = head / (n_head / n_head_kv);
            let qh = &q[head * hd..][..hd];
            let scores: Vec<f32> = (0..=pos)
                .map(|p| {
                    let kp = &self.keys[l][p * kvd + kvh * hd..][..hd];
                    qh.iter().zip(kp).map(|(a, b)| a * b).sum::<f32>() / (hd as f32).sqrt()
                })
                .collect();
            let max = scores.iter().cloned().fold(f32::MIN, f32::max);
            let e: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
            let total: f32 = e.iter().sum();
            for (p, w) in e.iter().enumerate() {
                let vp = &self.values[l][p * kvd + kvh * hd..][..hd];
                for (o, v) in out[head * hd..][..hd].iter_mut().zip(vp) {
                    *o += w / total * v;
                }
            }
        }
        self.layers[l][1].times(&out)
    }

    /// This rank's partial sum of layer `l`'s feed-forward for the normed input `h`.
    fn ffn(&self, l: usize, h: &[f32]) -> Vec<f32> {
        let gu = self.layers[l][2].times(h);
        let n = self.sizes.n_ff;
        let act: Vec<f32> = (0..n)
            .map(|i| gu[i] / (1.0 + (-gu[i]).exp()) * gu[n + i])
            .collect();
        self.layers[l][3].times(&act)
    }
}

/// What every rank holds whole: norms, embeddings, output head.
struct Whole {
    cfg: Config,
    attn_norm: Vec<Vec<f32>>,
    ffn_norm: Vec<Vec<f32>>,
    out_norm: Vec<f32>,
    embd: Mat,
}

/// The all-reduce: the ranks' partial sums added up, rank 0's with the residual `x`.
fn all_reduce(ranks: &[Rank], x: &[f32], part: impl Fn(usize) -> Vec<f32>) -> Vec<f32> {
    let mut sum = vec![0.0; x.len()];
    for (r, rank) in ranks.iter().enumerate() {
        let p = part(r);
        let residual = rank.shard.leads();
        for ((s, p), x) in sum.iter_mut().zip(p).zip(x) {
            *s += p + if residual { *x } else { 0.0 };
        }
    }
    sum
}

/// The logits after token `tok` at `pos`, every rank stepping through every layer.
fn step(ranks: &mut [Rank], m: &Whole, tok: u32, pos: usize) -> Vec<f32> {
    let c = &m.cfg;
    let mut x = m.embd.w[tok as usize * c.n_embd..][..c.n_embd].to_vec();
    for l in 0..c.n_layer {
        let h = rmsnorm(&x, &m.attn_norm[l], c.eps);
        let parts: Vec<Vec<f32>> = ranks
            .iter_mut()
            .map(|r| r.attention(l, &h, pos, c.rope_base))
            .collect();
        x = all_reduce(ranks, &x, |r| parts[r].clone());
        let h = rmsnorm(&x, &m.ffn_norm[l], c.eps);
        x = all_reduce(ranks, &x, |r| ranks[r].ffn(l, &h));
    }
    m.embd.times(&rmsnorm(&x, &m.out_norm, c.eps))
}

/// Greedy decode of `n` tokens after `prompt` over a world of `world` ranks: tokens and logits.
fn greedy(g: &Gguf, world: usize, prompt: &[u32], n: usize) -> (Vec<u32>, Vec<Vec<f32>>) {
    let cfg = read_config(g).unwrap();
    let m = Whole {
        attn_norm: (0..cfg.n_layer)
            .map(|l| norm_weights(g, &format!("blk.{l}.attn_norm.weight")))
            .collect(),
        ffn_norm: (0..cfg.n_layer)
            .map(|l| norm_weights(g, &format!("blk.{l}.ffn_norm.weight")))
            .collect(),
        out_norm: norm_weights(g, "output_norm.weight"),
        embd: load(g, &[("token_embd.weight".into(), Part::All)]),
        cfg: cfg.clone(),
    };
    let mut ranks: Vec<Rank> = (0..world).map(|r| Rank::new(g, &cfg, r, world)).collect();
    let (mut toks, mut logits) = (prompt.to_vec(), Vec::new());
    for pos in 0..prompt.len() + n - 1 {
        let lg = step(&mut ranks, &m, toks[pos], pos);
        if pos + 1 >= prompt.len() {
            let best = (0..lg.len()).fold(0, |b, i| if lg[i] > lg[b] { i } else { b });
            toks.push(best as u32);
            logits.push(lg);
        }
    }
    (toks[prompt.len()..].to_vec(), logits)
}

/// The CPU engine's logits over the same positions (prompt in one chunk, then greedy decode of
/// `n` tokens), to show that the scalar forward pass above is the engine's model.
fn engine_logits(bytes: Vec<u8>, prompt: &[u32], n: usize) -> (Vec<u32>, Vec<Vec<f32>>) {
    let model = Model::load(Gguf::parse(bytes).unwrap()).unwrap();
    let mut engine = CpuForward::new(model, Pool::new(2), 1, 256);
    let cpu: &mut dyn Forward = &mut engine;
    let mut lg = cpu.run(&[chunk(prompt, 0)]).remove(0);
    let (mut toks, mut all) = (Vec::new(), Vec::new());
    for i in 0..n {
        let t = (0..lg.len()).fold(0, |b, j| if lg[j] > lg[b] { j } else { b }) as u32;
        toks.push(t);
        all.push(lg);
        let next = [t];
        lg = cpu.run(&[chunk(&next, prompt.len() + i)]).remove(0);
    }
    (toks, all)
}

fn log_softmax(row: &[f32]) -> Vec<f64> {
    let max = row.iter().cloned().fold(f32::MIN, f32::max) as f64;
    let lse = row
        .iter()
        .map(|&v| (v as f64 - max).exp())
        .sum::<f64>()
        .ln()
        + max;
    row.iter().map(|&v| v as f64 - lse).collect()
}

#[test]
fn two_and_three_ranks_give_one_ranks_greedy_tokens_and_logits() {
    // Three KV heads of two query heads each, a feed-forward of 8 blocks: bands of 2/3/3 blocks
    // and one KV head per rank at three ranks, 1 and 2 at two.
    let shape = Preset {
        n_layer: 2,
        n_embd: 192,
        n_ff: 256,
        n_head: 6,
        n_head_kv: 3,
        n_vocab: 512,
        n_ctx: 1024,
    };
    let bytes = make_model(&shape, 11).unwrap();
    let g = Gguf::parse(bytes.clone()).unwrap();
    let prompt: Vec<u32> = (0..8).map(|i| 260 + (i * 53) % 240).collect();
    let (one, one_logits) = greedy(&g, 1, &prompt, 12);
    for world in [2, 3] {
        let (toks, logits) = greedy(&g, world, &prompt, 12);
        assert_eq!(toks, one, "world {world}: other greedy tokens");
        let worst = logits
            .iter()
            .flatten()
            .zip(one_logits.iter().flatten())
            .map(|(a, b)| (a - b).abs() / b.abs().max(1.0))
            .fold(0f32, f32::max);
        eprintln!("world {world}: 12 greedy tokens as one rank's, worst relative logit difference {worst:.1e}");
        assert!(worst < 1e-4, "world {world}: logits differ by {worst}");
    }
    // The scalar forward pass is the engine's model: the CPU engine (8-bit activations) gives
    // log-probabilities within the GPU test's tolerance of it.
    let (_, engine) = engine_logits(bytes, &prompt, 12);
    let worst = engine
        .iter()
        .zip(&one_logits)
        .flat_map(|(e, o)| log_softmax(e).into_iter().zip(log_softmax(o)))
        .map(|(a, b)| (a - b).abs())
        .fold(0f64, f64::max);
    eprintln!(
        "the CPU engine against the scalar forward pass: max |logprob difference| {worst:.2e}"
    );
    assert!(
        worst < 0.05,
        "the scalar forward pass is not the engine's model: {worst}"
    );
}
