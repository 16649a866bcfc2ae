//! Weights repacked at load time into tiles of 8 rows so one 256-bit register
//! holds 4 consecutive quants of each of 8 rows: an integer dot step
//! (`vpdpbusd` or `vpmaddubsw`+`vpmaddwd`) then yields 8 row partial sums at
//! once, scales for 8 rows load as one vector, and results store as 8
//! contiguous floats — no horizontal sums. Each tile's weights are unpacked
//! once per block and reused for a group of tokens, so a batched step reads
//! the weights once for all streams.
//!
//! Layout per (tile, block of 32 columns):
//! - Q4_1 (160 bytes): 8 × f16 scale, 8 × f16 min, then 4 vectors of 32 bytes;
//!   vector `h`, lane `r` holds row `r`'s original bytes `qs[4h..4h+4]`
//!   (low nibbles: elements `4h..4h+4`, high nibbles: `16+4h..16+4h+4`).
//! - Q8_0 (272 bytes): 8 × f16 scale, then 8 vectors; vector `h`, lane `r`
//!   holds row `r`'s quants `4h..4h+4`.

use half::f16;

use crate::kernels::{QAct, Simd, WType, QK};

/// Rows per tile.
pub const TILE: usize = 8;

/// A weight matrix repacked into row tiles.
pub struct Packed {
    /// Quant type.
    pub ty: WType,
    /// Output rows (multiple of 8).
    pub rows: usize,
    /// Inputs per row (multiple of 32).
    pub k: usize,
    data: Vec<u8>,
}

fn tile_block_bytes(ty: WType) -> usize {
    match ty {
        WType::Q4_1 => 160,
        _ => 272,
    }
}

impl Packed {
    /// Repack `rows` rows of `k` quants stored as in GGUF. Returns `None`
    /// for types or shapes the tiled kernels do not cover.
    pub fn pack(ty: WType, rows: usize, k: usize, raw: &[u8]) -> Option<Packed> {
        if !rows.is_multiple_of(TILE)
            || !k.is_multiple_of(QK)
            || !matches!(ty, WType::Q4_1 | WType::Q8_0)
        {
            return None;
        }
        let nb = k / QK;
        let rb = nb * ty.block_bytes();
        if raw.len() < rows * rb {
            return None;
        }
        let tbb = tile_block_bytes(ty);
        let mut data = vec![0u8; rows / TILE * nb * tbb];
        for t in 0..rows / TILE {
            for b in 0..nb {
                let o = &mut data[(t * nb + b) * tbb..(t * nb + b + 1) * tbb];
                for r in 0..TILE {
                    let src = &raw[(t * TILE + r) * rb + b * ty.block_bytes()..];
                    match ty {
                        WType::Q4_1 => {
                            o[2 * r..2 * r + 2].copy_from_slice(&src[0..2]);
                            o[16 + 2 * r..16 + 2 * r + 2].copy_from_slice(&src[2..4]);
                            for h in 0..4 {
                                let dst = 32 + 32 * h + 4 * r;
                                o[dst..dst + 4].copy_from_slice(&src[4 + 4 * h..4 + 4 * h + 4]);
                            }
                        }
                        _ => {
                            o[2 * r..2 * r + 2].copy_from_slice(&src[0..2]);
                            for h in 0..8 {
                                let dst = 16 + 32 * h + 4 * r;
                                o[dst..dst + 4].copy_from_slice(&src[2 + 4 * h..2 + 4 * h + 4]);
                            }
                        }
                    }
                }
            }
        }
        Some(Packed { ty, rows, k, data })
    }

    /// Number of tiles.
    pub fn tiles(&self) -> usize {
        self.rows / TILE
    }

    /// Compute `out[t * stride + r]` for all rows `r` of tiles in `dst.tiles` and
    /// tokens `dst.t0..dst.t0+dst.tn` of `act`.
    ///
    /// # Safety
    /// `dst.out` must be valid for writes at every such index, and no other
    /// thread may write those cells concurrently.
    pub unsafe fn matmul(&self, simd: Simd, act: &QAct, dst: Dst) {
        #[cfg(target_arch = "x86_64")]
        {
            match simd {
                Simd::Avx512Vnni => return x86::matmul_vnni(self, act, dst),
                Simd::Avx2 => return x86::matmul_avx2(self, act, dst),
                Simd::Scalar => {}
            }
        }
        let _ = simd;
        self.matmul_scalar(act, dst)
    }

    /// Scalar reference of [`Packed::matmul`].
    ///
    /// # Safety
    /// As for [`Packed::matmul`].
    pub unsafe fn matmul_scalar(&self, act: &QAct, dst: Dst) {
        let nb = self.k / QK;
        let tbb = tile_block_bytes(self.ty);
        let f16at =
            |b: &[u8], i: usize| f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32();
        for tile in dst.tiles {
            for t in dst.t0..dst.t0 + dst.tn {
                for r in 0..TILE {
                    let mut acc = 0f32;
                    for b in 0..nb {
                        let o = &self.data[(tile * nb + b) * tbb..(tile * nb + b + 1) * tbb];
                        let q = &act.q[t * self.k + b * QK..t * self.k + (b + 1) * QK];
                        let ib = t * nb + b;
                        let d = f16at(o, 2 * r);
                        let mut isum = 0i32;
                        match self.ty {
                            WType::Q4_1 => {
                                for h in 0..4 {
                                    for i in 0..4 {
                                        let byte = o[32 + 32 * h + 4 * r + i];
                                        isum += (byte & 0xF) as i32 * q[4 * h + i] as i32;
                                        isum += (byte >> 4) as i32 * q[16 + 4 * h + i] as i32;
                                    }
                                }
                                acc +=
                                    d * act.d[ib] * isum as f32 + f16at(o, 16 + 2 * r) * act.s[ib];
                            }
                            _ => {
                                for h in 0..8 {
                                    for i in 0..4 {
                                        isum += o[16 + 32 * h + 4 * r + i] as i8 as i32
                                            * q[4 * h + i] as i32;
                                    }
                                }
                                acc += d * act.d[ib] * isum as f32;
                            }
                        }
                    }
                    *dst.out.add(t * dst.stride + tile * TILE + r) = acc;
                }
            }
        }
    }
}

/// Where a [`Packed::matmul`] writes: rows of the tiles `tiles` for the tokens
/// `t0..t0+tn`, row `r` of token `t` at `out[t * stride + r]`.
#[derive(Clone)]
pub struct Dst {
    /// The tiles of rows.
    pub tiles: std::ops::Range<usize>,
    /// The first token.
    pub t0: usize,
    /// How many tokens.
    pub tn: usize,
    /// The output cells.
    pub out: *mut f32,
    /// Floats from one token's row of `out` to the next.
    pub stride: usize,
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{tile_block_bytes, Dst, Packed, TILE};
    use crate::kernels::{QAct, WType, QK};
    use core::arch::x86_64::*;

    /// One tile's packed weights (`nb` blocks from `tp`) and where its rows go:
    /// row `r` of token `t` at `out[t * stride + r]`.
    struct TileOut {
        tp: *const u8,
        nb: usize,
        out: *mut f32,
        stride: usize,
    }

    #[inline(always)]
    unsafe fn bc(a: *const i8, o: usize) -> __m256i {
        _mm256_set1_epi32(core::ptr::read_unaligned(a.add(o) as *const i32))
    }

    /// u8 × i8 dot of 4-byte groups into 8 i32 lanes, added to `acc`.
    #[inline(always)]
    unsafe fn dp<const VNNI: bool>(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        if VNNI {
            _mm256_dpbusd_epi32(acc, u, s)
        } else {
            let p = _mm256_maddubs_epi16(u, s);
            _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
        }
    }

    #[inline(always)]
    unsafe fn q4_1_group<const C: usize, const VNNI: bool>(w: &TileOut, act: &QAct, t: usize) {
        let k = act.k;
        let mask = _mm256_set1_epi8(0xF);
        let mut acc = [_mm256_setzero_ps(); C];
        let mut macc = [_mm256_setzero_ps(); C];
        for b in 0..w.nb {
            let p = w.tp.add(b * 160);
            let d = _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i));
            let m = _mm256_cvtph_ps(_mm_loadu_si128(p.add(16) as *const __m128i));
            let mut wl = [_mm256_setzero_si256(); 4];
            let mut wh = [_mm256_setzero_si256(); 4];
            for h in 0..4 {
                let v = _mm256_loadu_si256(p.add(32 + 32 * h) as *const __m256i);
                wl[h] = _mm256_and_si256(v, mask);
                wh[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            }
            for j in 0..C {
                let a = act.q.as_ptr().add((t + j) * k + b * QK);
                let z = _mm256_setzero_si256();
                let mut s0 = dp::<VNNI>(z, wl[0], bc(a, 0));
                let mut s1 = dp::<VNNI>(z, wh[0], bc(a, 16));
                s0 = dp::<VNNI>(s0, wl[1], bc(a, 4));
                s1 = dp::<VNNI>(s1, wh[1], bc(a, 20));
                s0 = dp::<VNNI>(s0, wl[2], bc(a, 8));
                s1 = dp::<VNNI>(s1, wh[2], bc(a, 24));
                s0 = dp::<VNNI>(s0, wl[3], bc(a, 12));
                s1 = dp::<VNNI>(s1, wh[3], bc(a, 28));
                let ib = (t + j) * (k / QK) + b;
                let sc = _mm256_mul_ps(d, _mm256_set1_ps(*act.d.get_unchecked(ib)));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), sc, acc[j]);
                macc[j] = _mm256_fmadd_ps(m, _mm256_set1_ps(*act.s.get_unchecked(ib)), macc[j]);
            }
        }
        for j in 0..C {
            _mm256_storeu_ps(
                w.out.add((t + j) * w.stride),
                _mm256_add_ps(acc[j], macc[j]),
            );
        }
    }

    #[inline(always)]
    unsafe fn q8_0_group<const C: usize, const VNNI: bool>(w8: &TileOut, act: &QAct, t: usize) {
        let k = act.k;
        let mut acc = [_mm256_setzero_ps(); C];
        let flip = _mm256_set1_epi8(-128);
        for b in 0..w8.nb {
            let p = w8.tp.add(b * 272);
            let d = _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i));
            let mut w = [_mm256_setzero_si256(); 8];
            for (h, wv) in w.iter_mut().enumerate() {
                let v = _mm256_loadu_si256(p.add(16 + 32 * h) as *const __m256i);
                // VNNI: weights as u8 (w + 128); the bias is removed below.
                *wv = if VNNI { _mm256_xor_si256(v, flip) } else { v };
            }
            for j in 0..C {
                let a = act.q.as_ptr().add((t + j) * k + b * QK);
                let ib = (t + j) * (k / QK) + b;
                let z = _mm256_setzero_si256();
                let (mut s0, mut s1) = (z, z);
                for h in (0..8).step_by(2) {
                    if VNNI {
                        s0 = dp::<true>(s0, w[h], bc(a, 4 * h));
                        s1 = dp::<true>(s1, w[h + 1], bc(a, 4 * h + 4));
                    } else {
                        let a0 = bc(a, 4 * h);
                        let a1 = bc(a, 4 * h + 4);
                        s0 = dp::<false>(
                            s0,
                            _mm256_sign_epi8(w[h], w[h]),
                            _mm256_sign_epi8(a0, w[h]),
                        );
                        s1 = dp::<false>(
                            s1,
                            _mm256_sign_epi8(w[h + 1], w[h + 1]),
                            _mm256_sign_epi8(a1, w[h + 1]),
                        );
                    }
                }
                let mut isum = _mm256_add_epi32(s0, s1);
                if VNNI {
                    let corr = _mm256_set1_epi32(128 * *act.qsum.get_unchecked(ib));
                    isum = _mm256_sub_epi32(isum, corr);
                }
                let sc = _mm256_mul_ps(d, _mm256_set1_ps(*act.d.get_unchecked(ib)));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), sc, acc[j]);
            }
        }
        for j in 0..C {
            _mm256_storeu_ps(w8.out.add((t + j) * w8.stride), acc[j]);
        }
    }

    #[inline(always)]
    unsafe fn run<const VNNI: bool, const CMAX: usize>(p: &Packed, act: &QAct, dst: Dst) {
        let nb = p.k / QK;
        let tbb = tile_block_bytes(p.ty);
        let base = p.data.as_ptr();
        let (t0, tn, stride) = (dst.t0, dst.tn, dst.stride);
        // Token tiles keep the activations of a tile of tokens in L1/L2.
        const TT: usize = 32;
        let mut tt = t0;
        while tt < t0 + tn {
            let te = (tt + TT).min(t0 + tn);
            for tile in dst.tiles.clone() {
                let tp = base.add(tile * nb * tbb);
                let w = TileOut {
                    tp,
                    nb,
                    out: dst.out.add(tile * TILE),
                    stride,
                };
                let mut t = tt;
                while t < te {
                    let c = te - t;
                    // The widest group of tokens that fits; returns how many it took.
                    macro_rules! by_width {
                        ($group:ident) => {
                            if c >= 4 && CMAX >= 4 {
                                $group::<4, VNNI>(&w, act, t);
                                4
                            } else if c >= 2 {
                                $group::<2, VNNI>(&w, act, t);
                                2
                            } else {
                                $group::<1, VNNI>(&w, act, t);
                                1
                            }
                        };
                    }
                    t += match p.ty {
                        WType::Q4_1 => by_width!(q4_1_group),
                        _ => by_width!(q8_0_group),
                    };
                }
            }
            tt = te;
        }
    }

    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    pub unsafe fn matmul_vnni(p: &Packed, act: &QAct, dst: Dst) {
        run::<true, 4>(p, act, dst)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn matmul_avx2(p: &Packed, act: &QAct, dst: Dst) {
        run::<false, 2>(p, act, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::{simd_levels, Rng};
    use crate::kernels::{dequant_row, quantize_q4_1, quantize_q8_0};

    #[test]
    fn tiled_kernels_match_f32_reference() {
        let mut rng = Rng(0x1234_5678_9abc_def1u64);
        let (rows, k, ntok) = (24, 96, 7);
        let levels = simd_levels();
        for ty in [WType::Q4_1, WType::Q8_0] {
            let w: Vec<f32> = (0..rows * k).map(|_| rng.f() * 0.7).collect();
            let raw: Vec<u8> = w
                .chunks(k)
                .flat_map(|r| {
                    if ty == WType::Q4_1 {
                        quantize_q4_1(r)
                    } else {
                        quantize_q8_0(r)
                    }
                })
                .collect();
            let mut wd = vec![0f32; rows * k];
            let rb = k / QK * ty.block_bytes();
            for r in 0..rows {
                dequant_row(ty, &raw[r * rb..(r + 1) * rb], &mut wd[r * k..(r + 1) * k]);
            }
            let p = Packed::pack(ty, rows, k, &raw).expect("pack");
            let x: Vec<f32> = (0..ntok * k).map(|_| rng.f() * 2.0).collect();
            let mut act = QAct::default();
            act.quantize(&x, ntok, k);
            for &simd in &levels {
                let mut out = vec![f32::NAN; ntok * rows];
                // Two calls over disjoint tile ranges and token ranges.
                unsafe {
                    let o = out.as_mut_ptr();
                    let dst = |tiles, t0, tn| Dst {
                        tiles,
                        t0,
                        tn,
                        out: o,
                        stride: rows,
                    };
                    p.matmul(simd, &act, dst(0..1, 0, ntok));
                    p.matmul(simd, &act, dst(1..p.tiles(), 0, 3));
                    p.matmul(simd, &act, dst(1..p.tiles(), 3, ntok - 3));
                }
                for t in 0..ntok {
                    for r in 0..rows {
                        let f: f32 = (0..k).map(|i| wd[r * k + i] * x[t * k + i]).sum();
                        let g = out[t * rows + r];
                        assert!(
                            (g - f).abs() <= 0.02 * (1.0 + f.abs()) + 0.05,
                            "{ty:?} {simd:?} t{t} r{r}: {g} vs f32 {f}"
                        );
                    }
                }
            }
        }
    }
}
