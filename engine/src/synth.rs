//! A llama-family GGUF with random weights, made from a seed (`rigaudit-engine make-model`):
//! the same architecture and quantisation as the SmolLM2 Q4_1 file the engine serves (Q8_0 tied
//! token embeddings, Q4_1 layer matrices, f32 norms) with a synthetic byte-level BPE tokenizer
//! embedded, so a full-size speed test needs no download. The same seed and preset give the
//! same bytes.

use half::f16;

use crate::gguf::{GgmlType, Gguf, Value};

/// Hyper-parameters of a made model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Transformer layers.
    pub n_layer: usize,
    /// Hidden size (a multiple of 32 and of the head count).
    pub n_embd: usize,
    /// FFN inner size (a multiple of 32).
    pub n_ff: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (divides `n_head`).
    pub n_head_kv: usize,
    /// Vocabulary size (at least 259: three special tokens and 256 bytes).
    pub n_vocab: usize,
    /// Trained context length written to the metadata.
    pub n_ctx: usize,
}

impl Preset {
    /// SmolLM2-135M's shape: 30 layers, 576 wide, 1536 FFN, 9/3 heads, 49,152 tokens.
    pub const SMOLLM2_135M: Preset = Preset {
        n_layer: 30,
        n_embd: 576,
        n_ff: 1536,
        n_head: 9,
        n_head_kv: 3,
        n_vocab: 49152,
        n_ctx: 8192,
    };
    /// A tiny model for tests: 2 layers, 64 wide, 2/1 heads of 32, 512 tokens.
    pub const TINY: Preset = Preset {
        n_layer: 2,
        n_embd: 64,
        n_ff: 128,
        n_head: 2,
        n_head_kv: 1,
        n_vocab: 512,
        n_ctx: 1024,
    };

    /// The preset called `name` (`smollm2-135m` or `tiny`).
    pub fn by_name(name: &str) -> Option<Preset> {
        match name {
            "smollm2-135m" => Some(Self::SMOLLM2_135M),
            "tiny" => Some(Self::TINY),
            _ => None,
        }
    }

    /// Why these hyper-parameters cannot make a model the engine loads, if they cannot.
    pub fn problem(&self) -> Option<String> {
        let p = self;
        if p.n_layer == 0 || p.n_head == 0 || p.n_head_kv == 0 {
            return Some("layers and heads must be at least 1".into());
        }
        if !p.n_embd.is_multiple_of(32)
            || !p.n_ff.is_multiple_of(32)
            || !p.n_embd.is_multiple_of(p.n_head)
        {
            return Some("widths must be multiples of 32 and of the head count".into());
        }
        if !p.n_head.is_multiple_of(p.n_head_kv) || !(p.n_embd / p.n_head).is_multiple_of(2) {
            return Some("kv heads must divide the heads; head size must be even".into());
        }
        if p.n_vocab < 259 || p.n_vocab > 259 + 256 * 256 {
            return Some(format!("vocabulary must be 259..={}", 259 + 256 * 256));
        }
        None
    }
}

/// Splitmix64: a small, well-mixed deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// GGUF metadata value types this writer emits.
enum Meta {
    U32(u32),
    F32(f32),
    Bool(bool),
    Str(String),
    Strs(Vec<String>),
    I32s(Vec<i32>),
    /// A value read from another file, written at its widest type.
    Copied(Value),
}

/// GGUF's type id for `v` at its widest (as the reader widened it).
fn type_of(v: &Value) -> u32 {
    match v {
        Value::U64(_) => 10,
        Value::I64(_) => 11,
        Value::F64(_) => 12,
        Value::Bool(_) => 7,
        Value::Str(_) => 8,
        Value::Array(_) => 9,
    }
}

/// `v`'s payload (its type id written before it by the caller).
fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(b) => out.push(*b as u8),
        Value::Str(s) => put_str(out, s),
        Value::Array(a) => {
            let elem = a.first().map_or(10, type_of);
            out.extend_from_slice(&elem.to_le_bytes());
            out.extend_from_slice(&(a.len() as u64).to_le_bytes());
            a.iter().for_each(|x| put_value(out, x));
        }
    }
}

/// A growing GGUF v3 file: metadata, then tensor infos, then 32-aligned tensor data.
#[derive(Default)]
struct Writer {
    meta: Vec<(String, Meta)>,
    /// (name, dims innermost first, ggml type id, bytes).
    tensors: Vec<(String, Vec<usize>, u32, Vec<u8>)>,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl Writer {
    fn kv(&mut self, k: &str, v: Meta) {
        self.meta.push((k.to_string(), v));
    }

    fn put_meta(out: &mut Vec<u8>, v: &Meta) {
        let ty = |out: &mut Vec<u8>, t: u32| out.extend_from_slice(&t.to_le_bytes());
        match v {
            Meta::U32(x) => (ty(out, 4), out.extend_from_slice(&x.to_le_bytes())).1,
            Meta::F32(x) => (ty(out, 6), out.extend_from_slice(&x.to_le_bytes())).1,
            Meta::Bool(b) => (ty(out, 7), out.push(*b as u8)).1,
            Meta::Str(s) => (ty(out, 8), put_str(out, s)).1,
            Meta::Strs(a) => {
                ty(out, 9);
                ty(out, 8);
                out.extend_from_slice(&(a.len() as u64).to_le_bytes());
                a.iter().for_each(|s| put_str(out, s));
            }
            Meta::I32s(a) => {
                ty(out, 9);
                ty(out, 5);
                out.extend_from_slice(&(a.len() as u64).to_le_bytes());
                a.iter()
                    .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
            }
            Meta::Copied(v) => {
                ty(out, type_of(v));
                put_value(out, v);
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(self.tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.meta.len() as u64).to_le_bytes());
        for (k, v) in &self.meta {
            put_str(&mut out, k);
            Self::put_meta(&mut out, v);
        }
        let mut off = 0usize;
        for (name, dims, ty, data) in &self.tensors {
            put_str(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            dims.iter()
                .for_each(|d| out.extend_from_slice(&(*d as u64).to_le_bytes()));
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&(off as u64).to_le_bytes());
            off += data.len().div_ceil(32) * 32;
        }
        out.resize(out.len().div_ceil(32) * 32, 0);
        for (_, _, _, data) in &self.tensors {
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(32) * 32, 0);
        }
        out
    }
}

/// `rows` rows of `k` random Q4_1 weights, uniform over about ±`scale`.
fn q4_1(rng: &mut Rng, rows: usize, k: usize, scale: f32) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows * k / 32 * 20);
    for _ in 0..rows * k / 32 {
        let d = scale * (0.75 + 0.5 * rng.unit()) / 7.5;
        out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        out.extend_from_slice(&f16::from_f32(-7.5 * d).to_bits().to_le_bytes());
        for _ in 0..2 {
            out.extend_from_slice(&rng.next().to_le_bytes());
        }
    }
    out
}

/// `rows` rows of `k` random Q8_0 weights, uniform over about ±`scale`.
fn q8_0(rng: &mut Rng, rows: usize, k: usize, scale: f32) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows * k / 32 * 34);
    for _ in 0..rows * k / 32 {
        let d = scale * (0.75 + 0.5 * rng.unit()) / 127.0;
        out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        for _ in 0..4 {
            let w = rng.next().to_le_bytes();
            out.extend(w.iter().map(|&b| if b == 0x80 { 0x81 } else { b }));
        }
    }
    out
}

/// `n` f32 norm weights near 1.
fn norm(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|_| (0.9 + 0.2 * rng.unit()).to_le_bytes())
        .collect()
}

/// GPT-2's byte-to-character table: the character byte-level BPE writes for each byte.
pub fn byte_chars() -> Vec<char> {
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
    let mut shifted = 0;
    (0u32..256)
        .map(|b| {
            if printable(b) {
                char::from_u32(b).unwrap_or('?')
            } else {
                shifted += 1;
                char::from_u32(255 + shifted).unwrap_or('?')
            }
        })
        .collect()
}

/// A synthetic byte-level BPE vocabulary of `n_vocab` tokens: three ChatML control tokens, the
/// 256 bytes, then pairs of bytes (printable ones first), each with its merge.
fn vocabulary(n_vocab: usize) -> (Vec<String>, Vec<i32>, Vec<String>) {
    let specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
    let chars = byte_chars();
    let mut tokens: Vec<String> = specials.iter().map(|s| s.to_string()).collect();
    let mut types = vec![3; specials.len()];
    tokens.extend(chars.iter().map(|c| c.to_string()));
    types.extend(std::iter::repeat_n(1, 256));
    // Printable ASCII, space and newline first, so common text merges.
    let mut order: Vec<usize> = (32..127).chain([10]).collect();
    order.extend((0..256).filter(|b| !(32..127).contains(b) && *b != 10));
    let mut merges = Vec::new();
    'fill: for &a in &order {
        for &b in &order {
            if tokens.len() >= n_vocab {
                break 'fill;
            }
            tokens.push(format!("{}{}", chars[a], chars[b]));
            types.push(1);
            merges.push(format!("{} {}", chars[a], chars[b]));
        }
    }
    (tokens, types, merges)
}

/// ChatML, as SmolLM2's template writes it.
const CHAT_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The metadata of a model of shape `p`: `llama.*` hyper-parameters and the tokenizer.
fn metadata(w: &mut Writer, p: &Preset, seed: u64) {
    w.kv("general.architecture", Meta::Str("llama".into()));
    w.kv(
        "general.name",
        Meta::Str(format!("random-weights seed={seed}")),
    );
    w.kv("general.file_type", Meta::U32(3));
    w.kv("general.quantization_version", Meta::U32(2));
    let u = |v: usize| Meta::U32(v as u32);
    w.kv("llama.block_count", u(p.n_layer));
    w.kv("llama.context_length", u(p.n_ctx));
    w.kv("llama.embedding_length", u(p.n_embd));
    w.kv("llama.feed_forward_length", u(p.n_ff));
    w.kv("llama.attention.head_count", u(p.n_head));
    w.kv("llama.attention.head_count_kv", u(p.n_head_kv));
    w.kv("llama.rope.freq_base", Meta::F32(100000.0));
    w.kv("llama.attention.layer_norm_rms_epsilon", Meta::F32(1e-5));
    w.kv("llama.vocab_size", u(p.n_vocab));
    let (tokens, types, merges) = vocabulary(p.n_vocab);
    w.kv("tokenizer.ggml.model", Meta::Str("gpt2".into()));
    w.kv("tokenizer.ggml.pre", Meta::Str("smollm".into()));
    w.kv("tokenizer.ggml.tokens", Meta::Strs(tokens));
    w.kv("tokenizer.ggml.token_type", Meta::I32s(types));
    w.kv("tokenizer.ggml.merges", Meta::Strs(merges));
    w.kv("tokenizer.ggml.bos_token_id", Meta::U32(1));
    w.kv("tokenizer.ggml.eos_token_id", Meta::U32(2));
    w.kv("tokenizer.ggml.add_bos_token", Meta::Bool(false));
    w.kv("tokenizer.chat_template", Meta::Str(CHAT_TEMPLATE.into()));
}

/// The GGUF bytes of a random-weights model of shape `p` from `seed`; the same arguments give
/// the same bytes. Fails when `p` cannot make a model the engine loads.
pub fn make_model(p: &Preset, seed: u64) -> Result<Vec<u8>, String> {
    if let Some(why) = p.problem() {
        return Err(why);
    }
    let mut w = Writer::default();
    metadata(&mut w, p, seed);
    let mut rng = Rng(seed);
    let (d, ff, kvd) = (p.n_embd, p.n_ff, p.n_embd / p.n_head * p.n_head_kv);
    let s = |k: usize| 1.7 / (k as f32).sqrt();
    w.tensors.push((
        "token_embd.weight".into(),
        vec![d, p.n_vocab],
        8,
        q8_0(&mut rng, p.n_vocab, d, 1.0),
    ));
    for i in 0..p.n_layer {
        let mat = |name: &str, rows: usize, k: usize, rng: &mut Rng| {
            let bytes = q4_1(rng, rows, k, s(k));
            (format!("blk.{i}.{name}.weight"), vec![k, rows], 3, bytes)
        };
        let layer = [
            mat("attn_q", d, d, &mut rng),
            mat("attn_k", kvd, d, &mut rng),
            mat("attn_v", kvd, d, &mut rng),
            mat("attn_output", d, d, &mut rng),
            mat("ffn_gate", ff, d, &mut rng),
            mat("ffn_up", ff, d, &mut rng),
            mat("ffn_down", d, ff, &mut rng),
        ];
        w.tensors.extend(layer);
        for n in ["attn_norm", "ffn_norm"] {
            let bytes = norm(&mut rng, d);
            w.tensors
                .push((format!("blk.{i}.{n}.weight"), vec![d], 0, bytes));
        }
    }
    let bytes = norm(&mut rng, d);
    w.tensors
        .push(("output_norm.weight".into(), vec![d], 0, bytes));
    Ok(w.bytes())
}

/// The ggml type id of `t` (the types a GGUF this engine reads may hold).
fn type_id(t: GgmlType) -> u32 {
    match t {
        GgmlType::F32 => 0,
        GgmlType::F16 => 1,
        GgmlType::Q4_0 => 2,
        GgmlType::Q4_1 => 3,
        GgmlType::Q8_0 => 8,
        GgmlType::Other(id) => id,
    }
}

/// `g` with its first `layers` layers only (metadata, tokenizer and other tensors as they are):
/// a real model small enough to carry, for checks of arithmetic, not of language.
pub fn truncate_layers(g: &Gguf, layers: usize) -> Result<Vec<u8>, String> {
    let have = g.get_u64("llama.block_count").unwrap_or(0) as usize;
    if layers == 0 || layers > have {
        return Err(format!("--layers {layers}: the model has {have} layers"));
    }
    let mut w = Writer::default();
    for (k, v) in &g.meta {
        let v = match k.as_str() {
            "llama.block_count" => Value::U64(layers as u64),
            // This writer aligns tensors to 32 bytes, the default.
            "general.alignment" => continue,
            _ => v.clone(),
        };
        w.kv(k, Meta::Copied(v));
    }
    for (name, t) in &g.tensors {
        let layer = name
            .strip_prefix("blk.")
            .and_then(|r| r.split('.').next())
            .and_then(|i| i.parse::<usize>().ok());
        if layer.is_some_and(|i| i >= layers) {
            continue;
        }
        let (_, bytes) = g.tensor(name).map_err(|e| e.to_string())?;
        w.tensors
            .push((name.clone(), t.dims.clone(), type_id(t.ty), bytes.to_vec()));
    }
    Ok(w.bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_model_parses_with_the_shapes_and_types_asked() {
        let p = Preset {
            n_layer: 3,
            ..Preset::TINY
        };
        let g = Gguf::parse(make_model(&p, 7).unwrap()).unwrap();
        assert_eq!(g.get_u64("llama.block_count"), Some(3));
        let (te, _) = g.tensor("token_embd.weight").unwrap();
        assert_eq!((te.dims.clone(), te.ty), (vec![64, 512], GgmlType::Q8_0));
        let (kt, _) = g.tensor("blk.2.attn_k.weight").unwrap();
        assert_eq!((kt.dims.clone(), kt.ty), (vec![64, 32], GgmlType::Q4_1));
        assert_eq!(g.get_str("tokenizer.ggml.model"), Some("gpt2"));
        assert_eq!(
            g.get("tokenizer.ggml.tokens")
                .and_then(|v| v.as_array())
                .map(|a| a.len()),
            Some(512)
        );
    }

    #[test]
    fn a_truncated_model_keeps_its_first_layers_metadata_and_bytes() {
        let p = Preset {
            n_layer: 3,
            ..Preset::TINY
        };
        let g = Gguf::parse(make_model(&p, 4).unwrap()).unwrap();
        let cut = Gguf::parse(truncate_layers(&g, 2).unwrap()).unwrap();
        assert_eq!(cut.get_u64("llama.block_count"), Some(2));
        assert!(cut.tensors.contains_key("blk.1.ffn_down.weight"));
        assert!(!cut.tensors.keys().any(|k| k.starts_with("blk.2.")));
        for name in [
            "token_embd.weight",
            "blk.1.attn_q.weight",
            "output_norm.weight",
        ] {
            assert_eq!(
                cut.tensor(name).unwrap().1,
                g.tensor(name).unwrap().1,
                "{name}"
            );
        }
        assert_eq!(
            cut.get("tokenizer.ggml.merges"),
            g.get("tokenizer.ggml.merges")
        );
        assert_eq!(
            cut.get_f64("llama.rope.freq_base"),
            g.get_f64("llama.rope.freq_base")
        );
        assert!(truncate_layers(&g, 4).unwrap_err().contains("has 3 layers"));
    }

    #[test]
    fn seeds_decide_the_weights() {
        let a = make_model(&Preset::TINY, 1).unwrap();
        assert_eq!(a, make_model(&Preset::TINY, 1).unwrap());
        assert_ne!(a, make_model(&Preset::TINY, 2).unwrap());
    }

    #[test]
    fn impossible_shapes_are_refused_with_the_reason() {
        let p = Preset {
            n_embd: 60,
            ..Preset::TINY
        };
        assert!(make_model(&p, 0).unwrap_err().contains("multiples of 32"));
        let p = Preset {
            n_vocab: 10,
            ..Preset::TINY
        };
        assert!(make_model(&p, 0).unwrap_err().contains("vocabulary"));
    }
}
