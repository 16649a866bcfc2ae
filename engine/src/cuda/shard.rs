//! How tensor parallelism splits a llama model over ranks (as Megatron-LM and vLLM do): each rank
//! holds whole KV heads with the query heads that read them (rows of Q, K and V), the columns of
//! the attention output that read those query heads, and a band of the feed-forward's hidden units
//! cut on the 32-wide quantization blocks (rows of gate and up, columns of down). The two
//! column-split products (attention output, down) give each rank a partial sum of the whole
//! product; an all-reduce sums them (rank 0 alone adds the residual first). Embeddings, norms and
//! the output head are on every rank; only rank 0 computes logits.
//!
//! KV heads, not query heads, are the unit, so grouped-query attention keeps each query head with
//! its KV head, and a world need not divide the head count: SmolLM2-135M's 3 KV heads go to two
//! ranks as 1 and 2 (3 and 6 query heads). A quantization block never straddles two ranks, so each
//! rank quantizes its activations exactly as one GPU would: the ranks' results differ from one
//! GPU's only in the order the partial sums are added.
//!
//! Pure arithmetic on shapes and bytes, tested on any machine.

use std::ops::Range;

use crate::model::Config;

/// The part of the model one rank holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub rank: usize,
    pub world: usize,
    /// Its KV heads.
    pub kv_heads: Range<usize>,
    /// Its query heads (those that read its KV heads).
    pub heads: Range<usize>,
    /// Its feed-forward hidden units (block-aligned).
    pub ff: Range<usize>,
}

/// The sizes of one rank's part: its heads, KV heads and hidden units; the head size is the
/// model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub n_ff: usize,
    pub hd: usize,
}

impl Sizes {
    /// Width of this rank's queries (and of the attention output it reads).
    pub fn q_dim(&self) -> usize {
        self.n_head * self.hd
    }
    /// Width of this rank's keys (and values).
    pub fn kv_dim(&self) -> usize {
        self.n_head_kv * self.hd
    }
}

/// The `rank`-th of `world` near-equal bands of `0..n`.
fn band(n: usize, rank: usize, world: usize) -> Range<usize> {
    n * rank / world..n * (rank + 1) / world
}

impl Shard {
    /// Rank `rank`'s part of `cfg` in a world of `world` ranks, or why the model cannot be split so.
    pub fn of(cfg: &Config, rank: usize, world: usize) -> Result<Shard, String> {
        if world == 0 || rank >= world {
            return Err(format!(
                "rank {rank} in a world of {world}: a rank is 0 to world - 1"
            ));
        }
        if cfg.n_head_kv == 0 || !cfg.n_head.is_multiple_of(cfg.n_head_kv) {
            return Err(format!(
                "{} query heads do not group over {} KV heads",
                cfg.n_head, cfg.n_head_kv
            ));
        }
        if world > cfg.n_head_kv {
            return Err(format!(
                "a world of {world} ranks cannot split this model's {} KV heads (each rank holds whole KV heads): at most {} ranks",
                cfg.n_head_kv, cfg.n_head_kv
            ));
        }
        if !cfg.n_ff.is_multiple_of(32) || world > cfg.n_ff / 32 {
            return Err(format!(
                "a feed-forward of {} units does not split into {world} bands of 32-wide blocks",
                cfg.n_ff
            ));
        }
        let group = cfg.n_head / cfg.n_head_kv;
        let kv_heads = band(cfg.n_head_kv, rank, world);
        let blocks = band(cfg.n_ff / 32, rank, world);
        Ok(Shard {
            rank,
            world,
            heads: kv_heads.start * group..kv_heads.end * group,
            kv_heads,
            ff: blocks.start * 32..blocks.end * 32,
        })
    }

    /// The whole model on one rank.
    pub fn whole(cfg: &Config) -> Shard {
        Shard {
            rank: 0,
            world: 1,
            kv_heads: 0..cfg.n_head_kv,
            heads: 0..cfg.n_head,
            ff: 0..cfg.n_ff,
        }
    }

    /// This rank adds the residual to its partial sums, computes logits and serves requests.
    pub fn leads(&self) -> bool {
        self.rank == 0
    }

    /// The sizes of this rank's part of `cfg`.
    pub fn sizes(&self, cfg: &Config) -> Sizes {
        Sizes {
            n_head: self.heads.len(),
            n_head_kv: self.kv_heads.len(),
            n_ff: self.ff.len(),
            hd: cfg.head_dim(),
        }
    }

    /// Rows of Q, K and V (in that order) this rank holds, for a head size of `hd`.
    pub fn qkv_rows(&self, hd: usize) -> [Range<usize>; 3] {
        let kv = self.kv_heads.start * hd..self.kv_heads.end * hd;
        [self.heads.start * hd..self.heads.end * hd, kv.clone(), kv]
    }

    /// Blocks (of 32 columns) of the attention output's rows this rank holds.
    pub fn wo_blocks(&self, hd: usize) -> Range<usize> {
        self.heads.start * hd / 32..self.heads.end * hd / 32
    }

    /// Blocks (of 32 columns) of down's rows this rank holds.
    pub fn down_blocks(&self) -> Range<usize> {
        self.ff.start / 32..self.ff.end / 32
    }
}

/// Which part of a weight matrix (rows of blocks of 32 weights) a rank holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    All,
    /// These rows.
    Rows(Range<usize>),
    /// These blocks (of 32 columns) of every row.
    Blocks(Range<usize>),
}

impl Part {
    /// This part of a row-major matrix of `rows` rows of `per_row` blocks of `block_bytes`
    /// bytes: its bytes, its rows and its row length in weights.
    pub fn cut(
        &self,
        bytes: &[u8],
        rows: usize,
        per_row: usize,
        block_bytes: usize,
    ) -> Result<(Vec<u8>, usize, usize), String> {
        let row_bytes = per_row * block_bytes;
        match self {
            Part::All => Ok((bytes.to_vec(), rows, per_row * 32)),
            Part::Rows(r) => {
                let cut = self::rows(bytes, row_bytes, r.clone())?;
                Ok((cut.to_vec(), r.len(), per_row * 32))
            }
            Part::Blocks(b) => {
                let cut = columns(bytes, per_row, block_bytes, b.clone())?;
                Ok((cut, rows, b.len() * 32))
            }
        }
    }
}

/// Layer `i`'s tensors as a rank holds them: per product, the parts stacked by rows in order.
#[derive(Debug, Clone)]
pub struct LayerParts {
    /// Q, K and V.
    pub qkv: [(String, Part); 3],
    /// The attention output.
    pub wo: (String, Part),
    /// Gate and up.
    pub gate_up: [(String, Part); 2],
    pub down: (String, Part),
}

impl Shard {
    /// Layer `i`'s parts this rank holds, for a head size of `hd`.
    pub fn layer_parts(&self, i: usize, hd: usize) -> LayerParts {
        let name = |s: &str| format!("blk.{i}.{s}.weight");
        let [q, k, v] = self.qkv_rows(hd).map(Part::Rows);
        let ff = Part::Rows(self.ff.clone());
        LayerParts {
            qkv: [
                (name("attn_q"), q),
                (name("attn_k"), k),
                (name("attn_v"), v),
            ],
            wo: (name("attn_output"), Part::Blocks(self.wo_blocks(hd))),
            gate_up: [(name("ffn_gate"), ff.clone()), (name("ffn_up"), ff)],
            down: (name("ffn_down"), Part::Blocks(self.down_blocks())),
        }
    }
}

/// Rows `rows` of a row-major matrix whose rows are `row_bytes` long.
pub fn rows(bytes: &[u8], row_bytes: usize, rows: Range<usize>) -> Result<&[u8], String> {
    bytes
        .get(rows.start * row_bytes..rows.end * row_bytes)
        .ok_or_else(|| format!("rows {rows:?} beyond a matrix of {} bytes", bytes.len()))
}

/// The blocks `blocks` of every row of a row-major matrix of rows of `per_row` blocks of
/// `block_bytes` bytes each: a narrower matrix with the same rows.
pub fn columns(
    bytes: &[u8],
    per_row: usize,
    block_bytes: usize,
    blocks: Range<usize>,
) -> Result<Vec<u8>, String> {
    let row_bytes = per_row * block_bytes;
    if blocks.end > per_row || row_bytes == 0 || !bytes.len().is_multiple_of(row_bytes) {
        return Err(format!(
            "blocks {blocks:?} of rows of {per_row} blocks ({} bytes in all)",
            bytes.len()
        ));
    }
    let keep = blocks.start * block_bytes..blocks.end * block_bytes;
    Ok(bytes
        .chunks_exact(row_bytes)
        .flat_map(|row| &row[keep.clone()])
        .copied()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{dequant_row, WType};

    /// SmolLM2-135M's shape (the random-weights preset's): 9 query heads over 3 KV heads of 64,
    /// a feed-forward of 1536.
    fn smollm2() -> Config {
        let p = crate::synth::Preset::SMOLLM2_135M;
        Config {
            n_layer: p.n_layer,
            n_embd: p.n_embd,
            n_ff: p.n_ff,
            n_head: p.n_head,
            n_head_kv: p.n_head_kv,
            n_vocab: p.n_vocab,
            n_ctx_train: p.n_ctx,
            rope_base: 100000.0,
            eps: 1e-5,
        }
    }

    #[test]
    fn ranks_hold_whole_kv_groups_and_block_aligned_bands_that_cover_the_model_once() {
        let c = smollm2();
        for world in 1..=3 {
            let shards: Vec<Shard> = (0..world)
                .map(|r| Shard::of(&c, r, world).unwrap())
                .collect();
            let (mut heads, mut ff) = (0, 0);
            for s in &shards {
                assert_eq!(s.heads.start, heads, "{s:?}: heads follow on");
                assert_eq!(s.ff.start, ff, "{s:?}: units follow on");
                assert_eq!(s.heads.len(), 3 * s.kv_heads.len(), "{s:?}: whole groups");
                assert_eq!(s.ff.start % 32 + s.ff.end % 32, 0, "{s:?}: block-aligned");
                assert!(!s.heads.is_empty() && !s.ff.is_empty());
                (heads, ff) = (s.heads.end, s.ff.end);
            }
            assert_eq!((heads, ff), (9, 1536), "world {world} covers the model");
        }
        let two = Shard::of(&c, 1, 2).unwrap();
        assert_eq!(
            (two.kv_heads.clone(), two.heads.clone(), two.ff.clone()),
            (1..3, 3..9, 768..1536)
        );
        assert_eq!(two.qkv_rows(64), [192..576, 64..192, 64..192]);
        assert_eq!((two.wo_blocks(64), two.down_blocks()), (6..18, 24..48));
        assert_eq!(Shard::of(&c, 0, 1).unwrap(), Shard::whole(&c));
        let e = Shard::of(&c, 0, 4).unwrap_err();
        assert!(
            e.contains("cannot split this model's 3 KV heads") && e.contains("at most 3"),
            "{e}"
        );
        assert!(Shard::of(&c, 2, 2).is_err());
    }

    /// A Q8_0 matrix of `rows` x `k` with scale 1/64 and values from a counter.
    fn q8_matrix(rows: usize, k: usize) -> Vec<u8> {
        let scale = half::f16::from_f32(1.0 / 64.0).to_le_bytes();
        let mut v = 7u32;
        let mut out = Vec::new();
        for _ in 0..rows * k / 32 {
            out.extend_from_slice(&scale);
            for _ in 0..32 {
                v = v.wrapping_mul(1_103_515_245).wrapping_add(12345);
                out.push((v >> 16) as u8);
            }
        }
        out
    }

    fn dequant(bytes: &[u8], rows: usize, k: usize) -> Vec<Vec<f32>> {
        bytes
            .chunks_exact(bytes.len() / rows)
            .map(|row| {
                let mut out = vec![0.0; k];
                dequant_row(WType::Q8_0, row, &mut out);
                out
            })
            .collect()
    }

    #[test]
    fn a_column_split_product_sums_over_the_ranks_to_the_whole_product() {
        let (rows, k) = (5, 9 * 64);
        let w = q8_matrix(rows, k);
        let whole = dequant(&w, rows, k);
        let act: Vec<f32> = (0..k).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
        let full: Vec<f32> = whole
            .iter()
            .map(|r| r.iter().zip(&act).map(|(a, b)| a * b).sum())
            .collect();
        let c = Config {
            n_embd: k,
            ..smollm2()
        };
        let mut summed = vec![0.0f32; rows];
        for rank in 0..3 {
            let s = Shard::of(&c, rank, 3).unwrap();
            let blocks = s.wo_blocks(64);
            let part = columns(&w, k / 32, 34, blocks.clone()).unwrap();
            let narrow = dequant(&part, rows, blocks.len() * 32);
            for (r, row) in narrow.iter().enumerate() {
                assert_eq!(row[..], whole[r][blocks.start * 32..blocks.end * 32]);
                let a = &act[blocks.start * 32..blocks.end * 32];
                summed[r] += row.iter().zip(a).map(|(x, y)| x * y).sum::<f32>();
            }
        }
        for (s, f) in summed.iter().zip(&full) {
            assert!((s - f).abs() <= 1e-4 * f.abs().max(1.0), "{s} vs {f}");
        }
        let picked = rows_of(&w, rows, k);
        assert_eq!(picked, dequant(&w, rows, k)[1..3]);
    }

    fn rows_of(w: &[u8], rows: usize, k: usize) -> Vec<Vec<f32>> {
        let row_bytes = w.len() / rows;
        dequant(super::rows(w, row_bytes, 1..3).unwrap(), 2, k)
    }

    #[test]
    fn cuts_beyond_the_matrix_are_errors_not_panics() {
        let w = q8_matrix(2, 64);
        assert!(columns(&w, 2, 34, 1..3).is_err());
        assert!(columns(&w[..50], 2, 34, 0..1).is_err());
        assert!(rows(&w, 68, 1..3).is_err());
    }
}
