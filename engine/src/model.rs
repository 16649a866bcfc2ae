//! Llama-family transformer over GGUF quantized weights.
//!
//! The forward pass takes a batch of sequence chunks (one per slot: a prompt
//! chunk, a single decode token, or a token plus draft tokens), runs every
//! matrix product once over all of their tokens (weights read once per step
//! for all active streams) and returns the logits each chunk asked for.

use crate::gguf::{GgmlType, Gguf, GgufError};
use crate::kernels::{self, QAct, Simd, WType};
use crate::pool::{split, Pool};
use crate::tiled::{Dst, Packed, TILE};

mod load;
pub use load::*;

/// Model hyper-parameters read from GGUF metadata.
#[derive(Debug, Clone)]
pub struct Config {
    /// Transformer layers.
    pub n_layer: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// FFN inner size.
    pub n_ff: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_head_kv: usize,
    /// Vocabulary size.
    pub n_vocab: usize,
    /// Trained context length.
    pub n_ctx_train: usize,
    /// RoPE base frequency.
    pub rope_base: f32,
    /// RMS norm epsilon.
    pub eps: f32,
}

impl Config {
    /// Per-head dimension.
    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }
    /// K (or V) row width per token.
    pub fn kv_dim(&self) -> usize {
        self.head_dim() * self.n_head_kv
    }
    /// Bytes of f32 KV cache per token (K and V, all layers).
    pub fn kv_bytes_per_token(&self) -> usize {
        self.n_layer * 2 * self.kv_dim() * 4
    }
}

/// A quantized weight matrix (`rows` outputs, `k` inputs), stored as in the file.
#[derive(Clone, Copy)]
pub struct QMat {
    ty: WType,
    rows: usize,
    k: usize,
    off: usize,
    row_bytes: usize,
    packed: Option<usize>,
}

struct Layer {
    attn_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
    wq: QMat,
    wk: QMat,
    wv: QMat,
    wo: QMat,
    gate: QMat,
    up: QMat,
    down: QMat,
}

/// Loaded model.
pub struct Model {
    /// Hyper-parameters.
    pub cfg: Config,
    data: Vec<u8>,
    tok_embd: QMat,
    output: QMat,
    output_norm: Vec<f32>,
    layers: Vec<Layer>,
    simd: Simd,
    rope_inv: Vec<f32>,
    packed: Vec<Packed>,
}

/// One slot's key/value cache (f32): V laid out `[layer][pos][kv_dim]`, K
/// transposed as `[layer][kv_head][dim][pos]` so scores for consecutive
/// positions come from contiguous loads.
pub struct KvCache {
    k: Vec<f32>,
    v: Vec<f32>,
    cap: usize,
    /// Row stride of transposed K: padded so rows do not alias in L1 sets.
    kstride: usize,
    kv_dim: usize,
}

impl KvCache {
    /// Allocate (lazily zero-filled by the OS) a cache for `cap` positions.
    pub fn new(cfg: &Config, cap: usize) -> Self {
        let n = cfg.n_layer * cap * cfg.kv_dim();
        let kstride = cap.div_ceil(16) * 16 + 16;
        KvCache {
            k: vec![0.0; cfg.n_layer * kstride * cfg.kv_dim()],
            v: vec![0.0; n],
            cap,
            kstride,
            kv_dim: cfg.kv_dim(),
        }
    }
    /// Capacity in positions.
    pub fn capacity(&self) -> usize {
        self.cap
    }
    fn at(&self, layer: usize, pos: usize) -> usize {
        (layer * self.cap + pos) * self.kv_dim
    }
    /// Start of the transposed K block of (layer, kv dim offset `c`): element
    /// (c + d, pos) is at `kt(layer) + (c + d) * cap + pos`.
    fn kt(&self, layer: usize) -> usize {
        layer * self.kv_dim * self.kstride
    }
}

/// A forward pass with the KV caches of its slots: the CPU model or the GPU one.
pub trait Forward: Send {
    /// Hyper-parameters.
    fn config(&self) -> &Config;
    /// Runs a batch of chunks, as [`Model::forward`]: per chunk, its logits rows.
    fn run(&mut self, chunks: &[Chunk]) -> Vec<Vec<f32>>;
    /// Called every 200 ms while no request is in flight: a tensor-parallel rank 0 tells the
    /// other ranks it is still there.
    fn idle(&mut self) {}
}

/// The CPU model with its thread pool and one KV cache per slot.
pub struct CpuForward {
    model: Model,
    pool: Pool,
    kv: Vec<KvCache>,
}

impl CpuForward {
    /// `model` on `pool` with `slots` KV caches of `window` positions each.
    pub fn new(model: Model, pool: Pool, slots: usize, window: usize) -> Self {
        let kv = (0..slots)
            .map(|_| KvCache::new(&model.cfg, window))
            .collect();
        CpuForward { model, pool, kv }
    }
}

impl Forward for CpuForward {
    fn config(&self) -> &Config {
        &self.model.cfg
    }
    fn run(&mut self, chunks: &[Chunk]) -> Vec<Vec<f32>> {
        self.model.forward(&self.pool, chunks, &mut self.kv)
    }
}

/// A chunk of one sequence to run in a batch.
pub struct Chunk<'a> {
    /// Index of the KV cache (slot) this chunk belongs to.
    pub slot: usize,
    /// Tokens to feed.
    pub tokens: &'a [u32],
    /// Position of the first token.
    pub pos: usize,
    /// Return logits for every token (draft verification) or only the last.
    pub all_logits: bool,
    /// Return no logits at all (an intermediate prompt chunk).
    pub no_logits: bool,
}

#[derive(Clone, Copy)]
struct SyncPtr(*mut f32);
// SAFETY: threads write disjoint index ranges through this pointer.
unsafe impl Sync for SyncPtr {}
unsafe impl Send for SyncPtr {}

impl SyncPtr {
    #[inline(always)]
    fn get(self) -> *mut f32 {
        self.0
    }
}

impl Model {
    /// Build the model from a parsed GGUF (takes ownership of its bytes).
    pub fn load(g: Gguf) -> Result<Self, GgufError> {
        let cfg = read_config(&g)?;
        let layers = (0..cfg.n_layer)
            .map(|i| load_layer(&g, i))
            .collect::<Result<Vec<_>, _>>()?;
        let tok_embd = qmat(&g, "token_embd.weight")?;
        let output = if g.tensors.contains_key("output.weight") {
            qmat(&g, "output.weight")?
        } else {
            tok_embd
        };
        let output_norm = norm_weights(&g, "output_norm.weight")?;
        let hd = cfg.head_dim();
        let rope_inv = (0..hd / 2)
            .map(|i| cfg.rope_base.powf(-(2.0 * i as f32) / hd as f32))
            .collect();
        let mut m = Model {
            cfg,
            data: g.data,
            tok_embd,
            output,
            output_norm,
            layers,
            simd: kernels::detect_simd(),
            rope_inv,
            packed: Vec::new(),
        };
        if std::env::var("RIGAUDIT_ENGINE_NO_REPACK").is_err() {
            m.repack();
        }
        Ok(m)
    }

    fn pack_one(&mut self, q: QMat) -> QMat {
        let raw = &self.data[q.off..q.off + q.rows * q.row_bytes];
        match Packed::pack(q.ty, q.rows, q.k, raw) {
            Some(p) => {
                self.packed.push(p);
                QMat {
                    packed: Some(self.packed.len() - 1),
                    ..q
                }
            }
            None => q,
        }
    }

    /// Repack every matrix the tiled kernels support.
    fn repack(&mut self) {
        for i in 0..self.layers.len() {
            let l = &self.layers[i];
            let mats = [l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down];
            let p: Vec<QMat> = mats.iter().map(|&q| self.pack_one(q)).collect();
            let l = &mut self.layers[i];
            (l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down) =
                (p[0], p[1], p[2], p[3], p[4], p[5], p[6]);
        }
        self.output = self.pack_one(self.output);
    }

    /// SIMD level in use.
    pub fn simd(&self) -> Simd {
        self.simd
    }

    /// Force a SIMD level (tests compare paths).
    pub fn set_simd(&mut self, s: Simd) {
        self.simd = s;
    }

    fn row(&self, m: &QMat, r: usize) -> &[u8] {
        let o = m.off + r * m.row_bytes;
        &self.data[o..o + m.row_bytes]
    }

    /// `out[t][off + r] = W[r] · act[t]` for several matrices sharing the
    /// same input, in one parallel region. `outs` gives (matrix, out buffer,
    /// out row stride).
    fn matmul_multi(&self, pool: &Pool, act: &QAct, mats: &[(&QMat, SyncPtr)]) {
        let total: usize = mats.iter().map(|(m, _)| m.rows).sum();
        let ntok = act.rows;
        let simd = self.simd;
        if mats.iter().all(|(m, _)| m.packed.is_some()) {
            pool.run(&|ti, nt| {
                let range = split(total, nt, ti, TILE);
                let mut base = 0;
                for (m, out) in mats {
                    let lo = range.start.max(base);
                    let hi = range.end.min(base + m.rows);
                    if lo < hi {
                        if let Some(p) = m.packed.and_then(|i| self.packed.get(i)) {
                            // SAFETY: tile ranges are disjoint between threads.
                            unsafe {
                                let dst = Dst {
                                    tiles: (lo - base) / TILE..(hi - base) / TILE,
                                    t0: 0,
                                    tn: ntok,
                                    out: out.get(),
                                    stride: m.rows,
                                };
                                p.matmul(simd, act, dst)
                            };
                        }
                    }
                    base += m.rows;
                }
            });
            return;
        }
        pool.run(&|ti, nt| {
            let range = split(total, nt, ti, 16);
            let mut buf = vec![0f32; ntok.min(64)];
            let tile = 64usize;
            let mut t0 = 0;
            while t0 < ntok {
                let tn = (ntok - t0).min(tile);
                let mut base = 0;
                for (m, out) in mats {
                    let lo = range.start.max(base);
                    let hi = range.end.min(base + m.rows);
                    for gr in lo..hi {
                        let r = gr - base;
                        kernels::dot_rows(simd, m.ty, self.row(m, r), act, t0, &mut buf[..tn]);
                        for (j, v) in buf[..tn].iter().enumerate() {
                            // SAFETY: each (token, row) cell is written by exactly one thread.
                            unsafe { *out.get().add((t0 + j) * m.rows + r) = *v };
                        }
                    }
                    base += m.rows;
                }
                t0 += tn;
            }
        });
    }

    /// The rows of `x` normalized with `norm` into `xn`, quantized into `act`, then multiplied
    /// by each of `mats` ([`Model::matmul_multi`]).
    fn norm_matmul(
        &self,
        pool: &Pool,
        (x, norm): (&[f32], &[f32]),
        xn: &mut [f32],
        act: &mut QAct,
        mats: &[(&QMat, SyncPtr)],
    ) {
        self.rmsnorm(x, norm, xn);
        let d = norm.len();
        act.quantize(xn, xn.len() / d, d);
        self.matmul_multi(pool, act, mats);
    }

    fn rmsnorm(&self, x: &[f32], w: &[f32], out: &mut [f32]) {
        let n = w.len();
        for (xr, or) in x.chunks(n).zip(out.chunks_mut(n)) {
            let ss: f32 = xr.iter().map(|v| v * v).sum::<f32>() / n as f32;
            let s = 1.0 / (ss + self.cfg.eps).sqrt();
            for i in 0..n {
                or[i] = xr[i] * s * w[i];
            }
        }
    }

    fn rope(&self, v: &mut [f32], pos: usize, nheads: usize) {
        let hd = self.cfg.head_dim();
        for h in 0..nheads {
            let x = &mut v[h * hd..(h + 1) * hd];
            for i in 0..hd / 2 {
                let th = pos as f32 * self.rope_inv[i];
                let (s, c) = th.sin_cos();
                let (a, b) = (x[2 * i], x[2 * i + 1]);
                x[2 * i] = a * c - b * s;
                x[2 * i + 1] = a * s + b * c;
            }
        }
    }

    /// Run a batch. Returns, per chunk, its logits rows (`n_vocab` each):
    /// none, the last token's, or every token's.
    // Long on purpose: the forward pass, one hot pipeline over all layers and their buffers.
    pub fn forward(&self, pool: &Pool, chunks: &[Chunk], kv: &mut [KvCache]) -> Vec<Vec<f32>> {
        let c = &self.cfg;
        let (d, kvd, hd, nh) = (c.n_embd, c.kv_dim(), c.head_dim(), c.n_head);
        let group = c.n_head / c.n_head_kv;
        // Token table: (chunk, slot, pos).
        let mut toks = Vec::new();
        let mut info = Vec::new();
        for (ci, ch) in chunks.iter().enumerate() {
            for (j, &t) in ch.tokens.iter().enumerate() {
                toks.push(t);
                info.push((ci, ch.slot, ch.pos + j));
            }
        }
        let n = toks.len();
        if n == 0 {
            return chunks.iter().map(|_| Vec::new()).collect();
        }
        let mut x = vec![0f32; n * d];
        for (i, &t) in toks.iter().enumerate() {
            let t = (t as usize).min(self.tok_embd.rows - 1);
            kernels::dequant_row(
                self.tok_embd.ty,
                self.row(&self.tok_embd, t),
                &mut x[i * d..(i + 1) * d],
            );
        }
        let mut xn = vec![0f32; n * d];
        let mut q = vec![0f32; n * d];
        let mut kk = vec![0f32; n * kvd];
        let mut vv = vec![0f32; n * kvd];
        let mut att = vec![0f32; n * d];
        let mut o = vec![0f32; n * d];
        let mut g = vec![0f32; n * c.n_ff];
        let mut u = vec![0f32; n * c.n_ff];
        let mut act = QAct::default();
        let scale = 1.0 / (hd as f32).sqrt();
        let simd = self.simd;
        for (li, l) in self.layers.iter().enumerate() {
            let qkv = [
                (&l.wq, SyncPtr(q.as_mut_ptr())),
                (&l.wk, SyncPtr(kk.as_mut_ptr())),
                (&l.wv, SyncPtr(vv.as_mut_ptr())),
            ];
            self.norm_matmul(pool, (&x, &l.attn_norm), &mut xn, &mut act, &qkv);
            for (i, &(_, slot, pos)) in info.iter().enumerate() {
                self.rope(&mut q[i * d..(i + 1) * d], pos, nh);
                self.rope(&mut kk[i * kvd..(i + 1) * kvd], pos, c.n_head_kv);
                let cache = &mut kv[slot];
                let at = cache.at(li, pos);
                cache.v[at..at + kvd].copy_from_slice(&vv[i * kvd..(i + 1) * kvd]);
                let (kt, cap) = (cache.kt(li), cache.kstride);
                for (c, &val) in kk[i * kvd..(i + 1) * kvd].iter().enumerate() {
                    cache.k[kt + c * cap + pos] = val;
                }
            }
            {
                let kvr: &[KvCache] = kv;
                let attp = SyncPtr(att.as_mut_ptr());
                let qr = &q;
                let info = &info;
                let nkv = c.n_head_kv;
                pool.run(&|ti, nt| {
                    let mut sc: Vec<f32> = Vec::new();
                    // Job = (token, kv head): its `group` query heads share K
                    // loads. Interleaved jobs balance short and long contexts.
                    for job in (ti..n * nkv).step_by(nt) {
                        let (i, kvh) = (job / nkv, job % nkv);
                        let (_, slot, pos) = info[i];
                        let cache = &kvr[slot];
                        let h0 = kvh * group;
                        let qs = &qr[i * d + h0 * hd..i * d + (h0 + group) * hd];
                        let kh = kvh * hd;
                        let np = pos + 1;
                        sc.resize(np * group, 0.0);
                        let ks = cache.kstride;
                        let kt = cache.kt(li) + kh * ks;
                        let keys = kernels::KeysT {
                            kt: &cache.k[kt..kt + hd * ks],
                            cap: ks,
                            n: np,
                        };
                        kernels::attn_scores_group(simd, qs, hd, keys, scale, &mut sc);
                        let v0 = cache.at(li, 0) + kh;
                        let vend = cache.at(li, pos) + kh + hd;
                        for g in 0..group {
                            let w = &mut sc[g * np..(g + 1) * np];
                            kernels::softmax(simd, w);
                            // SAFETY: (token, head) output cells are disjoint per job.
                            let out = unsafe {
                                std::slice::from_raw_parts_mut(
                                    attp.get().add(i * d + (h0 + g) * hd),
                                    hd,
                                )
                            };
                            kernels::attn_values(simd, w, &cache.v[v0..vend], kvd, out);
                        }
                    }
                });
            }
            act.quantize(&att, n, d);
            self.matmul_multi(pool, &act, &[(&l.wo, SyncPtr(o.as_mut_ptr()))]);
            for (a, b) in x.iter_mut().zip(&o) {
                *a += b;
            }
            let gate_up = [
                (&l.gate, SyncPtr(g.as_mut_ptr())),
                (&l.up, SyncPtr(u.as_mut_ptr())),
            ];
            self.norm_matmul(pool, (&x, &l.ffn_norm), &mut xn, &mut act, &gate_up);
            for (a, b) in g.iter_mut().zip(&u) {
                *a = *a / (1.0 + (-*a).exp()) * b;
            }
            act.quantize(&g, n, c.n_ff);
            self.matmul_multi(pool, &act, &[(&l.down, SyncPtr(o.as_mut_ptr()))]);
            for (a, b) in x.iter_mut().zip(&o) {
                *a += b;
            }
        }
        // Which token rows need logits.
        let mut want = Vec::new();
        let mut start = 0;
        for ch in chunks {
            let len = ch.tokens.len();
            if ch.no_logits || len == 0 {
            } else if ch.all_logits {
                want.extend(start..start + len);
            } else {
                want.push(start + len - 1);
            }
            start += len;
        }
        let mut sel = vec![0f32; want.len() * d];
        for (j, &i) in want.iter().enumerate() {
            sel[j * d..(j + 1) * d].copy_from_slice(&x[i * d..(i + 1) * d]);
        }
        let mut seln = vec![0f32; sel.len()];
        self.rmsnorm(&sel, &self.output_norm, &mut seln);
        let nv = self.output.rows;
        let mut logits = vec![0f32; want.len() * nv];
        if !want.is_empty() {
            act.quantize(&seln, want.len(), d);
            self.matmul_multi(pool, &act, &[(&self.output, SyncPtr(logits.as_mut_ptr()))]);
        }
        let mut res = Vec::with_capacity(chunks.len());
        let mut wi = 0;
        for ch in chunks {
            let cnt = if ch.no_logits || ch.tokens.is_empty() {
                0
            } else if ch.all_logits {
                ch.tokens.len()
            } else {
                1
            };
            res.push(logits[wi * nv..(wi + cnt) * nv].to_vec());
            wi += cnt;
        }
        res
    }

    /// Plain f32 reference forward for a single sequence (no quantized
    /// activations, no SIMD kernels, no cache): logits of the last token.
    /// Used to check the optimized path.
    pub fn forward_reference(&self, tokens: &[u32]) -> Vec<f32> {
        let nv = self.output.rows;
        let all = self.forward_reference_all(tokens);
        all[all.len() - nv..].to_vec()
    }

    /// Plain f32 reference forward over dequantized weights for one sequence:
    /// logits of every token (`tokens.len()` rows of `n_vocab`). Activations
    /// stay f32 throughout (the optimized path quantizes them to 8 bits
    /// before each matrix product); used only to check the optimized path.
    pub fn forward_reference_all(&self, tokens: &[u32]) -> Vec<f32> {
        self.reference_impl(tokens, false)
    }

    /// As [`Model::forward_reference_all`], but every matrix product's input
    /// is first rounded to 8 bits per block of 32 exactly as the optimized
    /// path quantizes it (scale = block max / 127, round to nearest): the
    /// same arithmetic as the optimized path up to summation order and its
    /// approximate `exp`, so the two must agree far more tightly than either
    /// agrees with the f32 reference.
    pub fn forward_reference_q8(&self, tokens: &[u32]) -> Vec<f32> {
        self.reference_impl(tokens, true)
    }

    fn reference_impl(&self, tokens: &[u32], q8: bool) -> Vec<f32> {
        let c = &self.cfg;
        let (d, kvd) = (c.n_embd, c.kv_dim());
        let n = tokens.len();
        let deq = |m: &QMat| {
            let mut w = vec![0f32; m.rows * m.k];
            for r in 0..m.rows {
                kernels::dequant_row(m.ty, self.row(m, r), &mut w[r * m.k..(r + 1) * m.k]);
            }
            w
        };
        let mm = |m: &QMat, x: &[f32]| {
            if q8 {
                ref_matmul(&deq(m), m.rows, m.k, &q8_round(x))
            } else {
                ref_matmul(&deq(m), m.rows, m.k, x)
            }
        };
        let emb = deq(&self.tok_embd);
        let mut x = vec![0f32; n * d];
        for (i, &t) in tokens.iter().enumerate() {
            x[i * d..(i + 1) * d].copy_from_slice(&emb[t as usize * d..(t as usize + 1) * d]);
        }
        drop(emb);
        let mut xn = vec![0f32; n * d];
        for l in &self.layers {
            self.rmsnorm(&x, &l.attn_norm, &mut xn);
            let mut q = mm(&l.wq, &xn);
            let mut k = mm(&l.wk, &xn);
            let v = mm(&l.wv, &xn);
            for t in 0..n {
                self.rope(&mut q[t * d..(t + 1) * d], t, c.n_head);
                self.rope(&mut k[t * kvd..(t + 1) * kvd], t, c.n_head_kv);
            }
            let att = self.ref_attention(&q, &k, &v, n);
            let o = mm(&l.wo, &att);
            for (a, b) in x.iter_mut().zip(&o) {
                *a += b;
            }
            self.rmsnorm(&x, &l.ffn_norm, &mut xn);
            let g = mm(&l.gate, &xn);
            let u = mm(&l.up, &xn);
            let h: Vec<f32> = g
                .iter()
                .zip(&u)
                .map(|(a, b)| a / (1.0 + (-a).exp()) * b)
                .collect();
            let o = mm(&l.down, &h);
            for (a, b) in x.iter_mut().zip(&o) {
                *a += b;
            }
        }
        self.rmsnorm(&x.clone(), &self.output_norm, &mut x);
        mm(&self.output, &x)
    }

    /// Causal multi-head attention in f32 over a whole sequence (reference).
    fn ref_attention(&self, q: &[f32], k: &[f32], v: &[f32], n: usize) -> Vec<f32> {
        let c = &self.cfg;
        let (d, kvd, hd) = (c.n_embd, c.kv_dim(), c.head_dim());
        let group = c.n_head / c.n_head_kv;
        let scale = 1.0 / (hd as f32).sqrt();
        let mut att = vec![0f32; n * d];
        let mut sc = Vec::with_capacity(n);
        for t in 0..n {
            for h in 0..c.n_head {
                let kh = (h / group) * hd;
                let qh = &q[t * d + h * hd..t * d + (h + 1) * hd];
                sc.clear();
                sc.extend(
                    (0..=t).map(|p| ref_dot(qh, &k[p * kvd + kh..p * kvd + kh + hd]) * scale),
                );
                let mx = sc.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0f32;
                for s in sc.iter_mut() {
                    *s = (*s - mx).exp();
                    sum += *s;
                }
                let out = &mut att[t * d + h * hd..t * d + (h + 1) * hd];
                for (p, s) in sc.iter().enumerate() {
                    let w = s / sum;
                    for (o, vv) in out.iter_mut().zip(&v[p * kvd + kh..p * kvd + kh + hd]) {
                        *o += w * vv;
                    }
                }
            }
        }
        att
    }
}

/// `x` rounded to 8 bits per block of 32 as [`QAct::quantize`] does it,
/// returned dequantized.
fn q8_round(x: &[f32]) -> Vec<f32> {
    let mut out = x.to_vec();
    for b in out.chunks_mut(32) {
        let amax = b.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for v in b.iter_mut() {
            *v = (*v * id).round_ties_even() * d;
        }
    }
    out
}

/// f32 dot product in eight independent lanes (lets the compiler vectorize
/// the reference path without changing what it computes beyond summation order).
fn ref_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `out[t][r] = w[r] · x[t]` in f32 (reference), rows split over the cores.
fn ref_matmul(w: &[f32], rows: usize, k: usize, x: &[f32]) -> Vec<f32> {
    let n = x.len() / k;
    let threads = std::thread::available_parallelism()
        .map_or(1, |v| v.get())
        .min(8);
    let per = rows.div_ceil(threads);
    let parts: Vec<Vec<f32>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|ti| {
                s.spawn(move || {
                    let (lo, hi) = (ti * per, ((ti + 1) * per).min(rows));
                    let mut part = vec![0f32; n * hi.saturating_sub(lo)];
                    for r in lo..hi {
                        let wr = &w[r * k..(r + 1) * k];
                        for t in 0..n {
                            part[t * (hi - lo) + r - lo] = ref_dot(wr, &x[t * k..(t + 1) * k]);
                        }
                    }
                    part
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("reference worker"))
            .collect()
    });
    let mut out = vec![0f32; n * rows];
    for (ti, part) in parts.iter().enumerate() {
        let (lo, hi) = (ti * per, ((ti + 1) * per).min(rows));
        for t in 0..n {
            if hi > lo {
                out[t * rows + lo..t * rows + hi]
                    .copy_from_slice(&part[t * (hi - lo)..(t + 1) * (hi - lo)]);
            }
        }
    }
    out
}
