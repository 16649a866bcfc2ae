//! The llama forward pass on a GPU: weights (repacked for `kernels.cu`), KV caches and every
//! step's activations on the device; the same arithmetic as the CPU engine (activations quantized
//! to 8 bits per block of 32 before each matrix product, f32 KV cache), so both give the same
//! greedy tokens. A step in which every chunk is one decode token is captured once per batch size
//! as a CUDA graph and replayed (a 135M model's decode is bound by launch overhead).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaGraph, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};

use super::nccl::{self, Comm};
use super::shard::{Part, Shard, Sizes};
use super::tp::{self, Ranks};
use super::{compile_ptx, guarded, load_driver, KERNEL_NAMES};
use crate::gguf::{GgmlType, Gguf};
use crate::kernels::WType;
use crate::model::{read_config, Chunk, Config, Forward};

/// Threads per block of the matrix products: 8 a row, so 16 rows a block (small matrices still
/// spread over many multiprocessors: SmolLM2's K/V/Q product is 60 blocks).
pub(crate) const MM_THREADS: u32 = 128;
/// Rows per block of the matrix products.
pub(crate) const MM_ROWS: usize = MM_THREADS as usize / 8;

/// A device error as text naming what failed.
fn dev<E: std::fmt::Debug>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("CUDA {what}: {e:?}")
}

/// Weight format of a device matrix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Quant {
    Q4_1,
    Q8_0,
}

/// A weight matrix on the device: `qs` the quantized values, `scales` the per-block scales
/// (Q4_1: f16 scale and minimum; Q8_0: f16 scale), both row-major by block.
#[derive(Clone, Copy)]
struct DMat {
    quant: Quant,
    rows: usize,
    k: usize,
    qs: u64,
    scales: u64,
}

struct DLayer {
    attn_norm: u64,
    ffn_norm: u64,
    /// Q, K and V stacked (one product per step).
    qkv: DMat,
    wo: DMat,
    /// Gate and up stacked.
    gate_up: DMat,
    down: DMat,
}

/// One kernel argument: a device pointer (or a 64-bit count), an int or a float.
#[derive(Clone, Copy)]
pub(crate) enum Arg {
    P(u64),
    I(i32),
    F(f32),
}

/// Step buffers, sized for `tokens` tokens and `rows` logits rows.
struct Bufs {
    tokens: usize,
    rows: usize,
    ids: CudaSlice<i32>,
    positions: CudaSlice<i32>,
    slots: CudaSlice<i32>,
    want: CudaSlice<i32>,
    logits: CudaSlice<f32>,
    _f32s: Vec<CudaSlice<f32>>,
    _bytes: CudaSlice<i8>,
    /// x, qkv, att (spare: attention quantizes its output itself), gu, xq, xd, xs, logits, and the
    /// id, position, slot and want arrays.
    ptr: [u64; 12],
}

/// The model (or one rank's shard of it) on one GPU with one KV cache per slot.
pub struct GpuForward {
    cfg: Config,
    /// The sizes of this rank's part (its heads and hidden units).
    local: Sizes,
    shard: Shard,
    /// The communicator, when NCCL is in use (always with more than one rank).
    comm: Option<Comm>,
    /// The step header broadcast from rank 0 (`tp::HEADER` i32).
    header: Option<CudaSlice<i32>>,
    stream: Arc<CudaStream>,
    kernels: HashMap<&'static str, CudaFunction>,
    _weights: Vec<CudaSlice<u8>>,
    layers: Vec<DLayer>,
    embd: DMat,
    output: DMat,
    output_norm: u64,
    rope_inv: u64,
    kc: u64,
    vc: u64,
    window: usize,
    bufs: Option<Bufs>,
    graphs: HashMap<usize, CudaGraph>,
    use_graphs: bool,
    /// What the start line reports: device name, architecture, compile or cache.
    pub facts: String,
}

// SAFETY: the scheduler thread alone uses the model once it is moved there; cudarc's handles
// are bound to the context on each call.
unsafe impl Send for GpuForward {}

/// A device pointer of `s` (event tracking is off: one stream, in order).
fn ptr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The bytes of tensor `name`, its quantisation, rows and row length.
fn raw<'g>(g: &'g Gguf, name: &str) -> Result<(&'g [u8], Quant, usize, usize), String> {
    let (t, b) = g.tensor(name).map_err(|e| e.to_string())?;
    let quant = match t.ty {
        GgmlType::Q4_1 => Quant::Q4_1,
        GgmlType::Q8_0 => Quant::Q8_0,
        o => {
            return Err(format!(
                "{name}: type {o} is not supported on CUDA (Q4_1, Q8_0)"
            ))
        }
    };
    Ok((b, quant, t.dims.get(1).copied().unwrap_or(1), t.dims[0]))
}

impl Quant {
    /// Bytes of one block of 32 weights (the CPU kernels' layout of the same type).
    fn block_bytes(self) -> usize {
        match self {
            Quant::Q4_1 => WType::Q4_1,
            Quant::Q8_0 => WType::Q8_0,
        }
        .block_bytes()
    }
}

/// The bytes of `part` of tensor `name`, its quantisation, rows and row length.
fn part(g: &Gguf, name: &str, part: &Part) -> Result<(Vec<u8>, Quant, usize, usize), String> {
    let (b, q, rows, k) = raw(g, name)?;
    let (cut, rows, k) = part
        .cut(b, rows, k / 32, q.block_bytes())
        .map_err(|e| format!("{name}: {e}"))?;
    Ok((cut, q, rows, k))
}

/// Splits the blocks of `bytes` (of `quant`) into the values and the scales arrays.
fn repack(bytes: &[u8], quant: Quant) -> (Vec<u8>, Vec<u8>) {
    // The scales lead each block: Q4_1's f16 scale and minimum, Q8_0's f16 scale.
    let bb = quant.block_bytes();
    let sb = match quant {
        Quant::Q4_1 => 4,
        Quant::Q8_0 => 2,
    };
    let n = bytes.len() / bb;
    let (mut qs, mut sc) = (
        Vec::with_capacity(n * (bb - sb)),
        Vec::with_capacity(n * sb),
    );
    for blk in bytes.chunks_exact(bb) {
        sc.extend_from_slice(&blk[..sb]);
        qs.extend_from_slice(&blk[sb..]);
    }
    (qs, sc)
}

/// Uploads kernels' inputs and keeps the allocations alive.
struct Uploader<'a> {
    stream: &'a Arc<CudaStream>,
    kept: Vec<CudaSlice<u8>>,
}

impl Uploader<'_> {
    fn bytes(&mut self, b: &[u8]) -> Result<u64, String> {
        let s = self
            .stream
            .clone_htod(if b.is_empty() { &[0u8][..] } else { b })
            .map_err(dev("upload"))?;
        let p = ptr(&s, self.stream);
        self.kept.push(s);
        Ok(p)
    }
    fn f32s(&mut self, v: &[f32]) -> Result<u64, String> {
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.bytes(&b)
    }
    fn zeros(&mut self, n: usize) -> Result<u64, String> {
        let s = self
            .stream
            .alloc_zeros::<u8>(n.max(1))
            .map_err(dev("alloc"))?;
        let p = ptr(&s, self.stream);
        self.kept.push(s);
        Ok(p)
    }
    /// The tensors `names` (same row length and type), whole, stacked by rows.
    fn mat(&mut self, g: &Gguf, names: &[String]) -> Result<DMat, String> {
        let parts: Vec<(String, Part)> = names.iter().map(|n| (n.clone(), Part::All)).collect();
        self.mat_parts(g, &parts)
    }
    /// The parts `parts` of tensors (same row length and type once cut), stacked by rows.
    fn mat_parts(&mut self, g: &Gguf, parts: &[(String, Part)]) -> Result<DMat, String> {
        let (mut all, mut rows) = (Vec::new(), 0);
        let (mut quant, mut k) = (Quant::Q4_1, 0);
        for (n, p) in parts {
            let (b, q, r, kk) = part(g, n, p)?;
            if rows > 0 && (q != quant || kk != k) {
                return Err(format!("{n}: shape or type differs from {}", parts[0].0));
            }
            (quant, k) = (q, kk);
            all.extend_from_slice(&b);
            rows += r;
        }
        let (qs, sc) = repack(&all, quant);
        Ok(DMat {
            quant,
            rows,
            k,
            qs: self.bytes(&qs)?,
            scales: self.bytes(&sc)?,
        })
    }
    fn norm(&mut self, g: &Gguf, name: &str) -> Result<u64, String> {
        let (t, b) = g.tensor(name).map_err(|e| e.to_string())?;
        if t.ty != GgmlType::F32 {
            return Err(format!("{name}: norm type {} unsupported", t.ty));
        }
        self.bytes(b)
    }
}

/// Layer `i`'s weights as rank `sh` holds them, uploaded.
fn upload_layer(
    up: &mut Uploader,
    g: &Gguf,
    i: usize,
    sh: &Shard,
    hd: usize,
) -> Result<DLayer, String> {
    let p = |s: &str| format!("blk.{i}.{s}.weight");
    let parts = sh.layer_parts(i, hd);
    Ok(DLayer {
        attn_norm: up.norm(g, &p("attn_norm"))?,
        ffn_norm: up.norm(g, &p("ffn_norm"))?,
        qkv: up.mat_parts(g, &parts.qkv)?,
        wo: up.mat_parts(g, std::slice::from_ref(&parts.wo))?,
        gate_up: up.mat_parts(g, &parts.gate_up)?,
        down: up.mat_parts(g, std::slice::from_ref(&parts.down))?,
    })
}

/// The device `n` opened, its kernels compiled (or read from the cache) and loaded, and what
/// the start line says of it.
type Opened = (Arc<CudaStream>, HashMap<&'static str, CudaFunction>, String);

fn open_device(n: usize) -> Result<Opened, String> {
    load_driver()?;
    guarded("CUDA", || {
        let count = CudaContext::device_count().map_err(dev("device count"))?;
        if n as i32 >= count {
            return Err(format!(
                "--device cuda:{n}: this machine has {count} CUDA device(s)"
            ));
        }
        let ctx = CudaContext::new(n).map_err(dev("context"))?;
        // SAFETY: one stream runs everything in order; no cross-stream events are needed.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability().map_err(dev("capability"))?;
        let arch = format!("compute_{major}{minor}");
        let start = Instant::now();
        let (ptx, cached) = compile_ptx(&arch)?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .map_err(dev("load module"))?;
        let mut kernels = HashMap::new();
        for name in KERNEL_NAMES {
            let f = module.load_function(name).map_err(dev("kernel"))?;
            kernels.insert(*name, f);
        }
        let facts = format!(
            "gpu=\"{}\" arch={arch} kernels={}({}ms)",
            ctx.name().unwrap_or_default(),
            if cached { "cached" } else { "compiled" },
            start.elapsed().as_millis()
        );
        Ok((ctx.new_stream().map_err(dev("stream"))?, kernels, facts))
    })
}

impl GpuForward {
    /// Loads `g` onto CUDA device `device` with `slots` KV caches of `window` positions: the whole
    /// model, no NCCL.
    pub fn load(g: &Gguf, device: usize, slots: usize, window: usize) -> Result<Self, String> {
        let one = Ranks { rank: 0, world: 1 };
        Self::load_ranked(g, device, slots, window, one, false)
    }

    /// Loads rank `ranks.rank`'s shard of `g` onto CUDA device `device`; with `use_nccl` (always
    /// with more than one rank) it then joins the world's NCCL communicator, which blocks until
    /// every rank has loaded and joined.
    pub fn load_ranked(
        g: &Gguf,
        device: usize,
        slots: usize,
        window: usize,
        ranks: Ranks,
        use_nccl: bool,
    ) -> Result<Self, String> {
        let cfg = read_config(g).map_err(|e| e.to_string())?;
        if cfg.head_dim() % 32 != 0 || cfg.head_dim() > 256 {
            return Err(format!(
                "head size {} unsupported on CUDA (a multiple of 32, at most 256)",
                cfg.head_dim()
            ));
        }
        let shard = Shard::of(&cfg, ranks.rank, ranks.world)?;
        let nccl = match use_nccl || ranks.world > 1 {
            true => Some(nccl::load()?),
            false => None,
        };
        let (stream, kernels, facts) = open_device(device)?;
        let mut f = Self::upload(g, cfg, shard, stream, kernels, slots, window)?;
        f.facts = facts;
        if let Some(lib) = nccl {
            f.join(lib, ranks)?;
        }
        Ok(f)
    }

    /// Joins the world's communicator through `lib` and says so in the facts.
    fn join(&mut self, lib: &'static nccl::Nccl, ranks: Ranks) -> Result<(), String> {
        self.stream
            .context()
            .bind_to_thread()
            .map_err(dev("context"))?;
        let id = lib.unique_id()?;
        self.comm = Some(lib.join(id, ranks.rank, ranks.world)?);
        if ranks.world > 1 {
            self.header = Some(
                self.stream
                    .alloc_zeros::<i32>(tp::HEADER)
                    .map_err(dev("alloc"))?,
            );
        }
        self.facts += &format!(
            " nccl={} nccl_lib={} rank={} world={}",
            lib.version, lib.path, ranks.rank, ranks.world
        );
        Ok(())
    }

    /// Uploads `shard` of `g` (its layers, the embeddings, norms and output head whole) and
    /// allocates its KV caches.
    fn upload(
        g: &Gguf,
        cfg: Config,
        shard: Shard,
        stream: Arc<CudaStream>,
        kernels: HashMap<&'static str, CudaFunction>,
        slots: usize,
        window: usize,
    ) -> Result<Self, String> {
        let mut up = Uploader {
            stream: &stream,
            kept: Vec::new(),
        };
        let hd = cfg.head_dim();
        let layers = (0..cfg.n_layer)
            .map(|i| upload_layer(&mut up, g, i, &shard, hd))
            .collect::<Result<Vec<_>, _>>()?;
        let embd = up.mat(g, &["token_embd.weight".to_string()])?;
        if embd.quant != Quant::Q8_0 {
            return Err("token_embd.weight: only Q8_0 embeddings are supported on CUDA".into());
        }
        let output = match g.tensors.contains_key("output.weight") {
            true => up.mat(g, &["output.weight".to_string()])?,
            false => embd,
        };
        let output_norm = up.norm(g, "output_norm.weight")?;
        let inv: Vec<f32> = (0..hd / 2)
            .map(|i| cfg.rope_base.powf(-(2.0 * i as f32) / hd as f32))
            .collect();
        let rope_inv = up.f32s(&inv)?;
        let local = shard.sizes(&cfg);
        let kv_bytes = slots * cfg.n_layer * window * local.kv_dim() * 4;
        let (kc, vc) = (up.zeros(kv_bytes)?, up.zeros(kv_bytes)?);
        let kept = up.kept;
        Ok(GpuForward {
            cfg,
            local,
            shard,
            comm: None,
            header: None,
            stream,
            kernels,
            _weights: kept,
            layers,
            embd,
            output,
            output_norm,
            rope_inv,
            kc,
            vc,
            window,
            bufs: None,
            graphs: HashMap::new(),
            use_graphs: std::env::var_os("RIGAUDIT_ENGINE_NO_GRAPHS").is_none(),
            facts: String::new(),
        })
    }

    /// Turns decode graphs on or off (the bench measures both).
    pub fn set_graphs(&mut self, on: bool) {
        self.use_graphs = on;
        self.graphs.clear();
    }

    /// The stream every launch goes to.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Launches kernel `name` on a grid of `grid` blocks of `block` threads with `args`.
    pub(crate) fn launch(
        &self,
        name: &str,
        grid: (u32, u32),
        block: u32,
        args: &[Arg],
    ) -> Result<(), String> {
        let f = self
            .kernels
            .get(name)
            .ok_or_else(|| format!("kernel {name} not loaded"))?;
        let mut b = self.stream.launch_builder(f);
        for a in args {
            match a {
                Arg::P(p) => b.arg(p),
                Arg::I(i) => b.arg(i),
                Arg::F(x) => b.arg(x),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid.0.max(1), grid.1.max(1), 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every pointer is a live device allocation sized for this step's shapes.
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(dev("launch"))
    }
}

/// One step's inputs: per token its id, position and slot; the rows whose logits are wanted.
#[derive(Default)]
struct Plan {
    ids: Vec<i32>,
    positions: Vec<i32>,
    slots: Vec<i32>,
    want: Vec<i32>,
    /// Logits rows per chunk.
    counts: Vec<usize>,
    /// Every chunk one token whose logits are wanted: a decode step, the same launches each time.
    decode_only: bool,
}

fn plan(chunks: &[Chunk]) -> Plan {
    let mut p = Plan {
        decode_only: true,
        ..Plan::default()
    };
    for ch in chunks {
        let start = p.ids.len() as i32;
        for (j, &t) in ch.tokens.iter().enumerate() {
            p.ids.push(t as i32);
            p.positions.push((ch.pos + j) as i32);
            p.slots.push(ch.slot as i32);
        }
        let len = ch.tokens.len() as i32;
        let rows: Vec<i32> = if ch.no_logits || len == 0 {
            vec![]
        } else if ch.all_logits {
            (start..start + len).collect()
        } else {
            vec![start + len - 1]
        };
        p.decode_only &= len == 1 && rows.len() == 1;
        p.counts.push(rows.len());
        p.want.extend(rows);
    }
    p
}

impl GpuForward {
    /// Step buffers for `tokens` tokens and `rows` logits rows.
    fn alloc_bufs(&self, tokens: usize, rows: usize) -> Result<Bufs, String> {
        let c = &self.cfg;
        let s = &self.stream;
        let wide = c.n_embd.max(c.n_ff);
        let sizes = [
            tokens * c.n_embd,
            tokens * (c.n_embd + 2 * c.kv_dim()),
            tokens * c.n_embd,
            tokens * 2 * c.n_ff,
            tokens * wide / 32,
            tokens * wide / 32,
        ];
        let f32s = sizes
            .iter()
            .map(|&n| s.alloc_zeros::<f32>(n).map_err(dev("alloc")))
            .collect::<Result<Vec<_>, _>>()?;
        let bytes = s.alloc_zeros::<i8>(tokens * wide).map_err(dev("alloc"))?;
        let ints = |n: usize| s.alloc_zeros::<i32>(n).map_err(dev("alloc"));
        let (ids, positions, slots, want) =
            (ints(tokens)?, ints(tokens)?, ints(tokens)?, ints(rows)?);
        let logits = s
            .alloc_zeros::<f32>(rows * c.n_vocab)
            .map_err(dev("alloc"))?;
        let f = |i: usize| ptr(&f32s[i], s);
        let ptr = [
            f(0),
            f(1),
            f(2),
            f(3),
            ptr(&bytes, s),
            f(4),
            f(5),
            ptr(&logits, s),
            ptr(&ids, s),
            ptr(&positions, s),
            ptr(&slots, s),
            ptr(&want, s),
        ];
        Ok(Bufs {
            tokens,
            rows,
            ids,
            positions,
            slots,
            want,
            logits,
            _f32s: f32s,
            _bytes: bytes,
            ptr,
        })
    }

    /// Buffers at least this large (doubling; graphs captured on older ones are dropped).
    fn ensure_bufs(&mut self, tokens: usize, rows: usize) -> Result<(), String> {
        let fits = self
            .bufs
            .as_ref()
            .is_some_and(|b| b.tokens >= tokens && b.rows >= rows);
        if !fits {
            self.graphs.clear();
            let old = self.bufs.as_ref().map_or((16, 4), |b| (b.tokens, b.rows));
            let t = tokens.max(old.0).next_power_of_two();
            let r = rows.max(old.1).next_power_of_two();
            self.bufs = None;
            self.bufs = Some(self.alloc_bufs(t, r)?);
        }
        Ok(())
    }

    fn ptrs(&self) -> [u64; 12] {
        self.bufs.as_ref().map_or([0; 12], |b| b.ptr)
    }

    /// `out[t][row] (+)= m[row] · act[t]` over the quantized activations of `n_tok` tokens.
    fn matmul(
        &self,
        m: &DMat,
        n_tok: usize,
        out: u64,
        stride: usize,
        add: bool,
    ) -> Result<(), String> {
        let [_, _, _, _, xq, xd, xs, ..] = self.ptrs();
        let (name, per) = match (m.quant, n_tok) {
            (Quant::Q4_1, 1) => ("mv_q4_1", 1),
            (Quant::Q4_1, _) => ("mm_q4_1", 8),
            (Quant::Q8_0, 1) => ("mv_q8_0", 1),
            (Quant::Q8_0, _) => ("mm_q8_0", 8),
        };
        let grid = (m.rows.div_ceil(MM_ROWS) as u32, n_tok.div_ceil(per) as u32);
        let args = [m.qs, m.scales, xq, xd, xs, out].map(Arg::P);
        let ints = [m.rows, m.k / 32, n_tok, stride, add as usize].map(|v| Arg::I(v as i32));
        let all: Vec<Arg> = args.into_iter().chain(ints).collect();
        self.launch(name, grid, MM_THREADS, &all)
    }

    /// RMSNorm with `w` of rows `rows` (0: all) of x, quantized into the activations.
    fn norm_q8(&self, n: usize, rows: u64, w: u64) -> Result<(), String> {
        let [x, _, _, _, xq, xd, xs, ..] = self.ptrs();
        let (d, eps) = (self.cfg.n_embd as i32, self.cfg.eps);
        let args = [Arg::P(x), Arg::P(rows), Arg::P(w), Arg::I(d), Arg::F(eps)];
        let out = [xq, xd, xs].map(Arg::P);
        let all: Vec<Arg> = args.into_iter().chain(out).collect();
        self.launch("rmsnorm_q8", (n as u32, 1), 256, &all)
    }

    /// Layer `li`'s attention block over `n` tokens (this rank's heads), its output added to x.
    fn attention_block(&self, li: usize, l: &DLayer, n: usize) -> Result<(), String> {
        let [_, qkv, _, _, xq, xd, xs, _, _, pos, slots, _] = self.ptrs();
        let c = &self.local;
        let (qd, kvd, hd) = (c.q_dim(), c.kv_dim(), c.hd);
        self.norm_q8(n, 0, l.attn_norm)?;
        self.matmul(&l.qkv, n, qkv, qd + 2 * kvd, false)?;
        let i = |v: usize| Arg::I(v as i32);
        let shape = [
            i(c.n_head),
            i(c.n_head_kv),
            i(hd),
            i(li),
            i(self.cfg.n_layer),
            i(self.window),
        ];
        let mut rope = vec![
            Arg::P(qkv),
            Arg::P(pos),
            Arg::P(slots),
            Arg::P(self.rope_inv),
        ];
        rope.extend(shape);
        rope.extend([Arg::P(self.kc), Arg::P(self.vc)]);
        self.launch("rope_store", (n as u32, 1), 128, &rope)?;
        let mut attn = vec![
            Arg::P(qkv),
            Arg::P(pos),
            Arg::P(slots),
            Arg::P(self.kc),
            Arg::P(self.vc),
        ];
        attn.extend(shape);
        let scale = Arg::F(1.0 / (hd as f32).sqrt());
        attn.extend([scale, Arg::P(xq), Arg::P(xd), Arg::P(xs)]);
        self.launch("attention", (c.n_head as u32, n as u32), 128, &attn)?;
        self.row_split_product(&l.wo, n)
    }

    /// A product whose rows this rank holds only some columns of (attention output, down):
    /// rank 0 adds its partial sum to x (the residual), the others write theirs over x, and the
    /// all-reduce sums the ranks' x (with NCCL in use; a world of one through NCCL as well).
    fn row_split_product(&self, m: &DMat, n: usize) -> Result<(), String> {
        let x = self.ptrs()[0];
        let d = self.cfg.n_embd;
        self.matmul(m, n, x, d, self.shard.leads())?;
        match &self.comm {
            Some(comm) => comm.all_reduce_sum(x, n * d, &self.stream),
            None => Ok(()),
        }
    }

    /// Layer `l`'s feed-forward block over `n` tokens (this rank's hidden units), its output added
    /// to x.
    fn ffn_block(&self, l: &DLayer, n: usize) -> Result<(), String> {
        let [_, _, _, gu, xq, xd, xs, ..] = self.ptrs();
        let n_ff = self.local.n_ff;
        self.norm_q8(n, 0, l.ffn_norm)?;
        self.matmul(&l.gate_up, n, gu, 2 * n_ff, false)?;
        let blocks = n * n_ff / 32;
        let args = [
            Arg::P(gu),
            Arg::I(n_ff as i32),
            Arg::I(n as i32),
            Arg::P(xq),
            Arg::P(xd),
            Arg::P(xs),
        ];
        self.launch("silu_mul_q8", (blocks.div_ceil(8) as u32, 1), 256, &args)?;
        self.row_split_product(&l.down, n)
    }

    /// Every launch of a step of `n` tokens and `rows` logits rows (inputs already uploaded);
    /// only rank 0 computes logits.
    fn enqueue(&self, n: usize, rows: usize) -> Result<(), String> {
        let rows = if self.shard.leads() { rows } else { 0 };
        let [x, .., logits, ids, _, _, want] = self.ptrs();
        let (d, e) = (self.cfg.n_embd as i32, &self.embd);
        let args = [
            Arg::P(ids),
            Arg::P(e.qs),
            Arg::P(e.scales),
            Arg::I(d),
            Arg::I(e.rows as i32),
            Arg::P(x),
        ];
        self.launch("embed_q8_0", (n as u32, 1), 256, &args)?;
        for (li, l) in self.layers.iter().enumerate() {
            self.attention_block(li, l, n)?;
            self.ffn_block(l, n)?;
        }
        if rows > 0 {
            self.norm_q8(rows, want, self.output_norm)?;
            self.matmul(&self.output, rows, logits, self.output.rows, false)?;
        }
        Ok(())
    }

    /// A decode step of `n` tokens through its graph, captured on first use; false when
    /// capture is not possible here (the caller launches eagerly).
    fn via_graph(&mut self, n: usize) -> Result<bool, String> {
        if !self.graphs.contains_key(&n) {
            let mode = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            if let Err(e) = self.stream.begin_capture(mode) {
                eprintln!("rigaudit-engine: CUDA graphs unavailable ({e:?}); launching kernels one by one");
                self.use_graphs = false;
                return Ok(false);
            }
            let queued = self.enqueue(n, n);
            let graph = self.stream.end_capture(CUgraphInstantiate_flags(0));
            match (queued, graph) {
                (Ok(()), Ok(Some(g))) => self.graphs.insert(n, g),
                (q, g) => {
                    eprintln!("rigaudit-engine: CUDA graph capture failed ({q:?}, {:?}); launching kernels one by one", g.err());
                    self.use_graphs = false;
                    return Ok(false);
                }
            };
        }
        let g = self.graphs.get(&n).ok_or("graph missing")?;
        g.launch().map_err(dev("graph launch"))?;
        Ok(true)
    }

    /// Runs one step; per chunk its logits rows.
    fn step(&mut self, chunks: &[Chunk]) -> Result<Vec<Vec<f32>>, String> {
        let p = plan(chunks);
        let (n, rows, nv) = (p.ids.len(), p.want.len(), self.cfg.n_vocab);
        if n == 0 {
            return Ok(chunks.iter().map(|_| Vec::new()).collect());
        }
        if let Some(&bad) = p.positions.iter().find(|&&q| q as usize >= self.window) {
            return Err(format!("position {bad} beyond the window {}", self.window));
        }
        self.ensure_bufs(n, rows)?;
        let s = self.stream.clone();
        let b = self.bufs.as_mut().ok_or("no buffers")?;
        s.memcpy_htod(&p.ids, &mut b.ids.slice_mut(0..n))
            .map_err(dev("copy"))?;
        s.memcpy_htod(&p.positions, &mut b.positions.slice_mut(0..n))
            .map_err(dev("copy"))?;
        s.memcpy_htod(&p.slots, &mut b.slots.slice_mut(0..n))
            .map_err(dev("copy"))?;
        if rows > 0 {
            s.memcpy_htod(&p.want, &mut b.want.slice_mut(0..rows))
                .map_err(dev("copy"))?;
        }
        self.lead_step(n, p.decode_only)?;
        let graphed = self.use_graphs && p.decode_only && self.via_graph(n)?;
        if !graphed {
            self.enqueue(n, rows)?;
        }
        let mut host = vec![0f32; rows * nv];
        if rows > 0 {
            let b = self.bufs.as_ref().ok_or("no buffers")?;
            s.memcpy_dtoh(&b.logits.slice(0..rows * nv), &mut host)
                .map_err(dev("copy back"))?;
        }
        self.wait(tp::STEP_LIMIT)?;
        let mut out = Vec::with_capacity(chunks.len());
        let mut at = 0;
        for cnt in p.counts {
            out.push(host[at * nv..(at + cnt) * nv].to_vec());
            at += cnt;
        }
        Ok(out)
    }

    /// The index of the largest logit of each of the last step's first `rows` rows, computed
    /// on the device (the first of equals, as the CPU's greedy pick).
    pub fn argmax_last(&self, rows: usize) -> Result<Vec<u32>, String> {
        let b = self.bufs.as_ref().ok_or("no step has run")?;
        if rows > b.rows {
            return Err(format!("{rows} rows asked, {} held", b.rows));
        }
        let out = self
            .stream
            .alloc_zeros::<i32>(rows.max(1))
            .map_err(dev("alloc"))?;
        let args = [
            Arg::P(b.ptr[7]),
            Arg::I(self.cfg.n_vocab as i32),
            Arg::P(ptr(&out, &self.stream)),
        ];
        self.launch("argmax_rows", (rows as u32, 1), 256, &args)?;
        let v = self.stream.clone_dtoh(&out).map_err(dev("copy back"))?;
        Ok(v.into_iter().take(rows).map(|i| i as u32).collect())
    }

    /// Runs a batch, or the error that stopped it.
    pub fn try_run(&mut self, chunks: &[Chunk]) -> Result<Vec<Vec<f32>>, String> {
        guarded("CUDA", || self.step(chunks))
    }
}

impl Forward for GpuForward {
    fn config(&self) -> &Config {
        &self.cfg
    }
    fn idle(&mut self) {
        if let Err(e) = guarded("CUDA", || self.send_header(tp::IDLE, 0, false)) {
            eprintln!("rigaudit-engine: error: {e}");
            std::process::exit(1);
        }
    }
    fn run(&mut self, chunks: &[Chunk]) -> Vec<Vec<f32>> {
        match self.try_run(chunks) {
            Ok(v) => v,
            Err(e) => {
                // A device that fails mid-step leaves no state to serve from.
                eprintln!("rigaudit-engine: error: {e}");
                std::process::exit(1);
            }
        }
    }
}

mod ranks;

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(slot: usize, tokens: &[u32], pos: usize, all: bool, none: bool) -> Chunk<'_> {
        Chunk {
            slot,
            tokens,
            pos,
            all_logits: all,
            no_logits: none,
        }
    }

    #[test]
    fn a_step_plan_lists_tokens_positions_slots_and_wanted_rows() {
        let (a, b, c) = ([5, 6, 7], [8], [9, 10]);
        let p = plan(&[
            chunk(2, &a, 10, false, false),
            chunk(0, &b, 4, false, false),
            chunk(1, &c, 0, false, true),
        ]);
        assert_eq!(p.ids, [5, 6, 7, 8, 9, 10]);
        assert_eq!(p.positions, [10, 11, 12, 4, 0, 1]);
        assert_eq!(p.slots, [2, 2, 2, 0, 1, 1]);
        assert_eq!(p.want, [2, 3], "last token of each chunk wanting logits");
        assert_eq!(p.counts, [1, 1, 0]);
        assert!(!p.decode_only, "a prompt chunk is no decode step");
        let all = plan(&[chunk(0, &a, 3, true, false)]);
        assert_eq!((all.want, all.counts), (vec![0, 1, 2], vec![3]));
        let decode = plan(&[chunk(0, &b, 7, false, false), chunk(3, &b, 2, false, false)]);
        assert!(decode.decode_only);
        assert_eq!(decode.want, [0, 1]);
    }

    #[test]
    fn repacking_splits_each_block_into_values_and_scales() {
        // Two Q4_1 blocks: scale bytes 0..4 then 16 value bytes.
        let q4: Vec<u8> = (0..40).collect();
        let (qs, sc) = repack(&q4, Quant::Q4_1);
        assert_eq!(sc, [0, 1, 2, 3, 20, 21, 22, 23]);
        assert_eq!(qs[..16], (4..20).collect::<Vec<u8>>()[..]);
        assert_eq!(qs[16..], (24..40).collect::<Vec<u8>>()[..]);
        // One Q8_0 block: a 2-byte scale then 32 values.
        let q8: Vec<u8> = (0..34).collect();
        let (qs, sc) = repack(&q8, Quant::Q8_0);
        assert_eq!((sc, qs.len(), qs[0]), (vec![0, 1], 32, 2));
    }
}
