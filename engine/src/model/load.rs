//! A model read from its GGUF file: the config from its metadata, each layer's weights by their
//! tensor names, each weight's type checked against those the engine computes with.

use super::*;

pub(super) fn wtype(t: GgmlType) -> Result<WType, GgufError> {
    match t {
        GgmlType::Q4_1 => Ok(WType::Q4_1),
        GgmlType::Q8_0 => Ok(WType::Q8_0),
        GgmlType::Q4_0 => Ok(WType::Q4_0),
        GgmlType::F32 => Ok(WType::F32),
        o => Err(GgufError(format!("unsupported weight type {o}"))),
    }
}

/// The hyper-parameters in `g`'s `llama.*` metadata (the vocabulary size from the token
/// embedding's shape); fails on another architecture or inconsistent head sizes.
pub fn read_config(g: &Gguf) -> Result<Config, GgufError> {
    let arch = g
        .get_str("general.architecture")
        .unwrap_or("llama")
        .to_string();
    if arch != "llama" {
        return Err(GgufError(format!("unsupported architecture {arch}")));
    }
    let u = |k: &str| {
        g.get_u64(&format!("{arch}.{k}"))
            .map(|v| v as usize)
            .ok_or_else(|| GgufError(format!("missing {arch}.{k}")))
    };
    let n_embd = u("embedding_length")?;
    let n_head = u("attention.head_count")?;
    let (te, _) = g.tensor("token_embd.weight")?;
    let cfg = Config {
        n_layer: u("block_count")?,
        n_embd,
        n_ff: u("feed_forward_length")?,
        n_head,
        n_head_kv: u("attention.head_count_kv").unwrap_or(n_head),
        n_vocab: te.dims.get(1).copied().unwrap_or(0),
        n_ctx_train: u("context_length")?,
        rope_base: g
            .get_f64(&format!("{arch}.rope.freq_base"))
            .unwrap_or(10000.0) as f32,
        eps: g
            .get_f64(&format!("{arch}.attention.layer_norm_rms_epsilon"))
            .unwrap_or(1e-5) as f32,
    };
    if n_embd % n_head != 0 || !cfg.n_head.is_multiple_of(cfg.n_head_kv) || n_embd % 32 != 0 {
        return Err(GgufError("inconsistent head sizes".into()));
    }
    Ok(cfg)
}

/// The weight matrix tensor `name` of `g`, as stored (rows must be whole 32-element blocks).
pub(super) fn qmat(g: &Gguf, name: &str) -> Result<QMat, GgufError> {
    let (t, _) = g.tensor(name)?;
    let ty = wtype(t.ty)?;
    let k = t.dims[0];
    let rows = t.dims.get(1).copied().unwrap_or(1);
    if k % 32 != 0 {
        return Err(GgufError(format!(
            "{name}: row length {k} not a multiple of 32"
        )));
    }
    Ok(QMat {
        ty,
        rows,
        k,
        off: t.offset,
        row_bytes: k / 32 * ty.block_bytes(),
        packed: None,
    })
}

/// The f32 norm weight tensor `name` of `g`, copied out.
pub(super) fn norm_weights(g: &Gguf, name: &str) -> Result<Vec<f32>, GgufError> {
    let (t, b) = g.tensor(name)?;
    let n: usize = t.dims.iter().product();
    let mut out = vec![0f32; n];
    match t.ty {
        GgmlType::F32 => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
            }
        }
        o => return Err(GgufError(format!("{name}: norm type {o} unsupported"))),
    }
    Ok(out)
}

/// Layer `i`'s norms and matrices (`blk.{i}.*.weight`).
pub(super) fn load_layer(g: &Gguf, i: usize) -> Result<Layer, GgufError> {
    let p = |s: &str| format!("blk.{i}.{s}.weight");
    Ok(Layer {
        attn_norm: norm_weights(g, &p("attn_norm"))?,
        ffn_norm: norm_weights(g, &p("ffn_norm"))?,
        wq: qmat(g, &p("attn_q"))?,
        wk: qmat(g, &p("attn_k"))?,
        wv: qmat(g, &p("attn_v"))?,
        wo: qmat(g, &p("attn_output"))?,
        gate: qmat(g, &p("ffn_gate"))?,
        up: qmat(g, &p("ffn_up"))?,
        down: qmat(g, &p("ffn_down"))?,
    })
}
