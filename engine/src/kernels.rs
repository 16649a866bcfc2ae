//! Compute kernels: quantized weight formats, activation quantization, quantized
//! dot products (scalar reference plus AVX2 and AVX-512 VNNI paths chosen at
//! run time) and f32 helpers for attention.
//!
//! Every SIMD path is checked against the scalar reference in the tests below.

use half::f16;

/// Elements per quantization block for all block formats used here.
pub const QK: usize = 32;

/// Quantized weight formats supported for matrix products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WType {
    /// 20-byte blocks: f16 scale, f16 min, 16 bytes of nibbles.
    Q4_1,
    /// 34-byte blocks: f16 scale, 32 signed bytes.
    Q8_0,
    /// 18-byte blocks: f16 scale, 16 bytes of nibbles (value = d * (q - 8)).
    Q4_0,
    /// Plain f32 (4 bytes per element), used for tests and small tensors.
    F32,
}

impl WType {
    /// Bytes per block of 32 elements.
    pub fn block_bytes(self) -> usize {
        match self {
            WType::Q4_1 => 20,
            WType::Q8_0 => 34,
            WType::Q4_0 => 18,
            WType::F32 => 128,
        }
    }
}

#[inline(always)]
fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// Dequantize one row of `k` elements into `out`.
pub fn dequant_row(ty: WType, row: &[u8], out: &mut [f32]) {
    let nb = out.len() / QK;
    for b in 0..nb {
        let o = &mut out[b * QK..(b + 1) * QK];
        match ty {
            WType::Q4_1 => {
                let blk = &row[b * 20..(b + 1) * 20];
                let d = f16_at(blk, 0);
                let m = f16_at(blk, 2);
                for j in 0..16 {
                    o[j] = (blk[4 + j] & 0xF) as f32 * d + m;
                    o[j + 16] = (blk[4 + j] >> 4) as f32 * d + m;
                }
            }
            WType::Q4_0 => {
                let blk = &row[b * 18..(b + 1) * 18];
                let d = f16_at(blk, 0);
                for j in 0..16 {
                    o[j] = ((blk[2 + j] & 0xF) as i32 - 8) as f32 * d;
                    o[j + 16] = ((blk[2 + j] >> 4) as i32 - 8) as f32 * d;
                }
            }
            WType::Q8_0 => {
                let blk = &row[b * 34..(b + 1) * 34];
                let d = f16_at(blk, 0);
                for j in 0..32 {
                    o[j] = blk[2 + j] as i8 as f32 * d;
                }
            }
            WType::F32 => {
                for j in 0..32 {
                    let p = b * 128 + j * 4;
                    o[j] = f32::from_le_bytes([row[p], row[p + 1], row[p + 2], row[p + 3]]);
                }
            }
        }
    }
}

/// Quantize a f32 row into Q4_1 bytes (used by tests to build weights).
pub fn quantize_q4_1(x: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len() / QK * 20);
    for blk in x.chunks(QK) {
        let mn = blk.iter().cloned().fold(f32::INFINITY, f32::min);
        let mx = blk.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let d = (mx - mn) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        out.extend_from_slice(&f16::from_f32(mn).to_bits().to_le_bytes());
        for j in 0..16 {
            let a = (((blk[j] - mn) * id + 0.5) as i32).clamp(0, 15) as u8;
            let b = (((blk[j + 16] - mn) * id + 0.5) as i32).clamp(0, 15) as u8;
            out.push(a | (b << 4));
        }
    }
    out
}

/// Quantize a f32 row into Q8_0 bytes (used by tests to build weights).
pub fn quantize_q8_0(x: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len() / QK * 34);
    for blk in x.chunks(QK) {
        let amax = blk.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        for v in blk {
            out.push(((v * id).round() as i32).clamp(-127, 127) as i8 as u8);
        }
    }
    out
}

/// Activations quantized to 8 bits per block of 32 (like ggml's Q8_1):
/// `x[i] ≈ d[b] * q[i]`, with `s[b] = d[b] * sum(q in block)`.
#[derive(Default, Clone)]
pub struct QAct {
    /// Quantized values, `rows * k`.
    pub q: Vec<i8>,
    /// Block scales, `rows * k / 32`.
    pub d: Vec<f32>,
    /// Block scale times block sum, `rows * k / 32`.
    pub s: Vec<f32>,
    /// Integer block sums, `rows * k / 32`.
    pub qsum: Vec<i32>,
    /// Row length.
    pub k: usize,
    /// Row count.
    pub rows: usize,
}

impl QAct {
    /// Quantize `rows` rows of length `k` from `x`.
    pub fn quantize(&mut self, x: &[f32], rows: usize, k: usize) {
        self.k = k;
        self.rows = rows;
        let nb = rows * k / QK;
        self.q.resize(rows * k, 0);
        self.d.resize(nb, 0.0);
        self.s.resize(nb, 0.0);
        self.qsum.resize(nb, 0);
        #[cfg(target_arch = "x86_64")]
        if detect_simd_cached() != Simd::Scalar {
            for b in 0..nb {
                // SAFETY: AVX2 presence was detected; the block is in bounds.
                let (d, sum) = unsafe {
                    x86::quantize_block_avx2(
                        &x[b * QK..(b + 1) * QK],
                        &mut self.q[b * QK..(b + 1) * QK],
                    )
                };
                self.d[b] = d;
                self.s[b] = d * sum as f32;
                self.qsum[b] = sum;
            }
            return;
        }
        for b in 0..nb {
            let xs = &x[b * QK..(b + 1) * QK];
            let amax = xs.iter().fold(0f32, |a, v| a.max(v.abs()));
            let d = amax / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            let mut sum = 0i32;
            let qs = &mut self.q[b * QK..(b + 1) * QK];
            for j in 0..QK {
                let q = (xs[j] * id).round() as i32;
                qs[j] = q as i8;
                sum += q;
            }
            self.d[b] = d;
            self.s[b] = d * sum as f32;
            self.qsum[b] = sum;
        }
    }
}

/// Which SIMD level the dot kernels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simd {
    /// Plain Rust.
    Scalar,
    /// AVX2 + FMA.
    Avx2,
    /// AVX-512 VNNI (256-bit lanes with `vpdpbusd`).
    Avx512Vnni,
}

/// Detect the best SIMD level on this CPU (overridable with
/// `RIGAUDIT_ENGINE_SIMD=scalar|avx2`).
pub fn detect_simd() -> Simd {
    let forced = std::env::var("RIGAUDIT_ENGINE_SIMD").unwrap_or_default();
    #[cfg(target_arch = "x86_64")]
    {
        if forced == "scalar" {
            return Simd::Scalar;
        }
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let vnni = avx2
            && is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw");
        if vnni && forced != "avx2" {
            return Simd::Avx512Vnni;
        }
        if avx2 {
            return Simd::Avx2;
        }
    }
    let _ = forced;
    Simd::Scalar
}

/// [`detect_simd`], computed once per process.
pub fn detect_simd_cached() -> Simd {
    static S: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
    *S.get_or_init(detect_simd)
}

/// The integer dot of one weight block `blk` of `ty` with the 32 activation quants `q` starts
/// with: Q4_1's nibbles as they are, Q4_0's less 8, Q8_0's signed bytes.
#[inline(always)]
fn block_isum(ty: WType, blk: &[u8], q: &[i8]) -> i32 {
    let mut isum = 0i32;
    match ty {
        WType::Q8_0 => {
            for j in 0..32 {
                isum += blk[2 + j] as i8 as i32 * q[j] as i32;
            }
        }
        _ => {
            // Q4_1 (after its scale and minimum) or Q4_0 (after its scale, centred on 8).
            let (at, bias) = if ty == WType::Q4_1 { (4, 0) } else { (2, 8) };
            for j in 0..16 {
                isum += ((blk[at + j] & 0xF) as i32 - bias) * q[j] as i32;
                isum += ((blk[at + j] >> 4) as i32 - bias) * q[j + 16] as i32;
            }
        }
    }
    isum
}

/// Scalar reference: dot of `ncols` tokens' activations with one weight row.
/// `out[t] = row · act[t]`.
pub fn dot_rows_scalar(ty: WType, row: &[u8], act: &QAct, t0: usize, out: &mut [f32]) {
    let k = act.k;
    let nb = k / QK;
    let mut deq = vec![0f32; k];
    for (i, o) in out.iter_mut().enumerate() {
        let t = t0 + i;
        let q = &act.q[t * k..(t + 1) * k];
        let d = &act.d[t * nb..(t + 1) * nb];
        let s = &act.s[t * nb..(t + 1) * nb];
        let mut acc = 0f32;
        match ty {
            WType::Q4_1 | WType::Q4_0 | WType::Q8_0 => {
                let bb = ty.block_bytes();
                for b in 0..nb {
                    let blk = &row[b * bb..(b + 1) * bb];
                    let x = f16_at(blk, 0) * d[b] * block_isum(ty, blk, &q[b * QK..]) as f32;
                    // Q4_1 adds its block minimum times the activations' block sum.
                    acc += if ty == WType::Q4_1 {
                        x + f16_at(blk, 2) * s[b]
                    } else {
                        x
                    };
                }
            }
            WType::F32 => {
                dequant_row(ty, row, &mut deq);
                for b in 0..nb {
                    let mut f = 0f32;
                    for j in 0..QK {
                        f += deq[b * QK + j] * q[b * QK + j] as f32;
                    }
                    acc += f * d[b];
                }
            }
        }
        *o = acc;
    }
}

/// Dot products of one quantized weight row with `out.len()` consecutive
/// activation rows starting at `t0`, using the chosen SIMD level.
#[inline]
pub fn dot_rows(simd: Simd, ty: WType, row: &[u8], act: &QAct, t0: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the level was detected at run time with is_x86_feature_detected.
        match (simd, ty) {
            (Simd::Avx512Vnni, WType::Q4_1) => unsafe {
                return x86::dot_q4_1_vnni(row, act, t0, out);
            },
            (Simd::Avx512Vnni, WType::Q8_0) => unsafe {
                return x86::dot_q8_0_vnni(row, act, t0, out);
            },
            (Simd::Avx2, WType::Q4_1) => unsafe {
                return x86::dot_q4_1_avx2(row, act, t0, out);
            },
            (Simd::Avx2, WType::Q8_0) => unsafe {
                return x86::dot_q8_0_avx2(row, act, t0, out);
            },
            _ => {}
        }
    }
    let _ = simd;
    dot_rows_scalar(ty, row, act, t0, out)
}

/// f32 dot product.
#[inline]
pub fn dot_f32(simd: Simd, a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar && a.len().is_multiple_of(16) {
        // SAFETY: AVX2/FMA presence was detected at run time.
        return unsafe { x86::dot_f32_avx2(a, b) };
    }
    let _ = simd;
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `y += a * x` over f32 slices.
#[inline]
pub fn axpy_f32(simd: Simd, a: f32, x: &[f32], y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar && x.len().is_multiple_of(16) {
        // SAFETY: AVX2/FMA presence was detected at run time.
        return unsafe { x86::axpy_f32_avx2(a, x, y) };
    }
    let _ = simd;
    for (yv, xv) in y.iter_mut().zip(x) {
        *yv += a * xv;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{KeysT, QAct, QK};
    use core::arch::x86_64::*;

    #[inline(always)]
    unsafe fn f16s(p: *const u8) -> f32 {
        let v = core::ptr::read_unaligned(p as *const u16);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(v as i32)))
    }

    #[inline(always)]
    unsafe fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// Unpack 16 bytes of nibbles into 32 u8 (low nibbles first).
    #[inline(always)]
    unsafe fn unpack_nibbles(p: *const u8) -> __m256i {
        let b = _mm_loadu_si128(p as *const __m128i);
        let lo = _mm_and_si128(b, _mm_set1_epi8(0xF));
        let hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0xF));
        _mm256_set_m128i(hi, lo)
    }

    /// A row kernel: `out[t] = row · act[t0 + t]`, four tokens at a time. `$q4`: Q4_1 blocks
    /// (20 bytes: scale, min, 16 bytes of nibbles) or else Q8_0 blocks (34 bytes: scale, 32
    /// quants). The branches on it are constant, so each kernel keeps only its own.
    macro_rules! row_kernel {
        ($name:ident, $feat:literal, $isum:ident, $q4:literal) => {
            #[target_feature(enable = $feat)]
            pub unsafe fn $name(row: &[u8], act: &QAct, t0: usize, out: &mut [f32]) {
                const Q4: bool = $q4;
                let k = act.k;
                let nb = k / QK;
                let n = out.len();
                let rp = row.as_ptr();
                let mut t = 0;
                while t < n {
                    let c = (n - t).min(4);
                    let mut acc = [_mm256_setzero_ps(); 4];
                    let mut macc = [0f32; 4];
                    let base = t0 + t;
                    for b in 0..nb {
                        let bp = rp.add(b * if Q4 { 20 } else { 34 });
                        let dw = f16s(bp);
                        // Q4_1: its min and unpacked quants; Q8_0: its quants and their magnitudes.
                        let (mw, w, aw) = if Q4 {
                            let w = unpack_nibbles(bp.add(4));
                            (f16s(bp.add(2)), w, w)
                        } else {
                            let w = _mm256_loadu_si256(bp.add(2) as *const __m256i);
                            (0.0, w, _mm256_sign_epi8(w, w))
                        };
                        for j in 0..c {
                            let ti = base + j;
                            let qa = _mm256_loadu_si256(
                                act.q.as_ptr().add(ti * k + b * QK) as *const __m256i
                            );
                            let ib = ti * nb + b;
                            // Q8_0: |w| * (a * sign(w)) == w * a
                            let s = if Q4 {
                                $isum(w, qa)
                            } else {
                                $isum(aw, _mm256_sign_epi8(qa, w))
                            };
                            let sc = _mm256_set1_ps(dw * *act.d.get_unchecked(ib));
                            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc[j]);
                            if Q4 {
                                macc[j] += mw * *act.s.get_unchecked(ib);
                            }
                        }
                    }
                    for j in 0..c {
                        out[t + j] = if Q4 {
                            hsum(acc[j]) + macc[j]
                        } else {
                            hsum(acc[j])
                        };
                    }
                    t += c;
                }
            }
        };
    }

    #[inline(always)]
    unsafe fn isum_avx2(u: __m256i, s: __m256i) -> __m256i {
        let p = _mm256_maddubs_epi16(u, s);
        _mm256_madd_epi16(p, _mm256_set1_epi16(1))
    }

    #[inline(always)]
    unsafe fn isum_vnni(u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
    }

    row_kernel!(dot_q4_1_avx2, "avx2,fma,f16c", isum_avx2, true);
    row_kernel!(dot_q8_0_avx2, "avx2,fma,f16c", isum_avx2, false);
    row_kernel!(
        dot_q4_1_vnni,
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        isum_vnni,
        true
    );
    row_kernel!(
        dot_q8_0_vnni,
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        isum_vnni,
        false
    );

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_f32_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut s0 = _mm256_setzero_ps();
        let mut s1 = _mm256_setzero_ps();
        let mut i = 0;
        while i + 16 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            s1 = _mm256_fmadd_ps(
                _mm256_loadu_ps(pa.add(i + 8)),
                _mm256_loadu_ps(pb.add(i + 8)),
                s1,
            );
            i += 16;
        }
        hsum(_mm256_add_ps(s0, s1))
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy_f32_avx2(a: f32, x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let av = _mm256_set1_ps(a);
        let (px, py) = (x.as_ptr(), y.as_mut_ptr());
        let mut i = 0;
        while i + 8 <= n {
            let v = _mm256_fmadd_ps(av, _mm256_loadu_ps(px.add(i)), _mm256_loadu_ps(py.add(i)));
            _mm256_storeu_ps(py.add(i), v);
            i += 8;
        }
    }

    /// Quantize 32 floats to i8 with one scale; returns (scale, sum of quants).
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn quantize_block_avx2(x: &[f32], q: &mut [i8]) -> (f32, i32) {
        let p = x.as_ptr();
        let sign = _mm256_set1_ps(-0.0);
        let v = [
            _mm256_loadu_ps(p),
            _mm256_loadu_ps(p.add(8)),
            _mm256_loadu_ps(p.add(16)),
            _mm256_loadu_ps(p.add(24)),
        ];
        let mut m = _mm256_andnot_ps(sign, v[0]);
        for vi in &v[1..] {
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, *vi));
        }
        let m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        let m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        let m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        let amax = _mm_cvtss_f32(m4);
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        let i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[0], id));
        let i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[1], id));
        let i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[2], id));
        let i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[3], id));
        let s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
        let s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        let s4 = _mm_hadd_epi32(s4, s4);
        let s4 = _mm_hadd_epi32(s4, s4);
        let sum = _mm_cvtsi128_si32(s4);
        let a = _mm256_packs_epi32(i0, i1);
        let b = _mm256_packs_epi32(i2, i3);
        let c = _mm256_packs_epi16(a, b);
        let c = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, c);
        (d, sum)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn attn_scores_g_avx2<const G: usize>(
        qs: &[f32],
        hd: usize,
        keys: KeysT,
        scale: f32,
        out: &mut [f32],
    ) {
        let KeysT { kt, cap, n } = keys;
        let kp = kt.as_ptr();
        let qp = qs.as_ptr();
        let op = out.as_mut_ptr();
        let sc = _mm256_set1_ps(scale);
        let mut p = 0;
        while p + 16 <= n {
            let mut a0 = [_mm256_setzero_ps(); G];
            let mut a1 = [_mm256_setzero_ps(); G];
            for d in 0..hd {
                let row = kp.add(d * cap + p);
                let k0 = _mm256_loadu_ps(row);
                let k1 = _mm256_loadu_ps(row.add(8));
                for h in 0..G {
                    let qb = _mm256_broadcast_ss(&*qp.add(h * hd + d));
                    a0[h] = _mm256_fmadd_ps(qb, k0, a0[h]);
                    a1[h] = _mm256_fmadd_ps(qb, k1, a1[h]);
                }
            }
            for h in 0..G {
                _mm256_storeu_ps(op.add(h * n + p), _mm256_mul_ps(a0[h], sc));
                _mm256_storeu_ps(op.add(h * n + p + 8), _mm256_mul_ps(a1[h], sc));
            }
            p += 16;
        }
        while p < n {
            for h in 0..G {
                let mut a = 0f32;
                for d in 0..hd {
                    a += *qp.add(h * hd + d) * *kp.add(d * cap + p);
                }
                *op.add(h * n + p) = a * scale;
            }
            p += 1;
        }
    }

    /// exp(x) for 8 lanes (Cephes-style range reduction, degree-5 polynomial).
    #[inline(always)]
    unsafe fn exp8(x: __m256) -> __m256 {
        let x = _mm256_max_ps(
            _mm256_min_ps(x, _mm256_set1_ps(88.0)),
            _mm256_set1_ps(-87.0),
        );
        let fx = _mm256_round_ps(
            _mm256_mul_ps(x, _mm256_set1_ps(std::f32::consts::LOG2_E)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC,
        );
        let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693_359_4), x);
        let r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.121_944_4e-4), r);
        let mut y = _mm256_set1_ps(1.987_569_1e-4);
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.398_199_9e-3));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.333_452e-3));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.166_579_6e-2));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(0.166_666_66));
        y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(0.5));
        y = _mm256_fmadd_ps(
            y,
            _mm256_mul_ps(r, r),
            _mm256_add_ps(r, _mm256_set1_ps(1.0)),
        );
        let e = _mm256_slli_epi32(
            _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)),
            23,
        );
        _mm256_mul_ps(y, _mm256_castsi256_ps(e))
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn exp_sub_sum_avx2(s: &mut [f32], mx: f32) -> f32 {
        let n = s.len();
        let m = _mm256_set1_ps(mx);
        let mut acc = _mm256_setzero_ps();
        let p = s.as_mut_ptr();
        let mut i = 0;
        while i + 8 <= n {
            let e = exp8(_mm256_sub_ps(_mm256_loadu_ps(p.add(i)), m));
            _mm256_storeu_ps(p.add(i), e);
            acc = _mm256_add_ps(acc, e);
            i += 8;
        }
        let mut sum = hsum(acc);
        while i < n {
            let e = (s[i] - mx).exp();
            s[i] = e;
            sum += e;
            i += 1;
        }
        sum
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn attn_values64_avx2(w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
        let mut a = [_mm256_setzero_ps(); 8];
        let vp = v.as_ptr();
        for (p, &wp) in w.iter().enumerate() {
            let wb = _mm256_set1_ps(wp);
            let row = vp.add(p * stride);
            for (j, aj) in a.iter_mut().enumerate() {
                *aj = _mm256_fmadd_ps(wb, _mm256_loadu_ps(row.add(8 * j)), *aj);
            }
        }
        for (j, aj) in a.iter().enumerate() {
            _mm256_storeu_ps(out.as_mut_ptr().add(8 * j), *aj);
        }
    }
}

/// The first `n` positions of a K cache stored transposed: dimension `d` of
/// position `p` at `kt[d * cap + p]`.
#[derive(Clone, Copy)]
pub struct KeysT<'a> {
    /// The transposed keys.
    pub kt: &'a [f32],
    /// Floats from one dimension's row to the next.
    pub cap: usize,
    /// The positions scored.
    pub n: usize,
}

/// Attention scores for one query head: `out[p] = scale * q · K[p]` for
/// `p < keys.n`.
pub fn attn_scores(simd: Simd, q: &[f32], keys: KeysT, scale: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar {
        // SAFETY: AVX2/FMA presence was detected at run time; indexes stay
        // below d * cap + n <= kt.len() (checked by the caller's layout).
        return unsafe { x86::attn_scores_g_avx2::<1>(q, q.len(), keys, scale, out) };
    }
    let _ = simd;
    let KeysT { kt, cap, n } = keys;
    for (p, o) in out[..n].iter_mut().enumerate() {
        *o = q
            .iter()
            .enumerate()
            .map(|(d, qv)| qv * kt[d * cap + p])
            .sum::<f32>()
            * scale;
    }
}

/// Scores for `G` query heads sharing one KV head: `out[g * n + p]` for
/// `p < n`, each K row loaded once for all heads. `qs` holds the G queries
/// back to back (`G * hd` floats).
pub fn attn_scores_group(
    simd: Simd,
    qs: &[f32],
    hd: usize,
    keys: KeysT,
    scale: f32,
    out: &mut [f32],
) {
    let g = qs.len() / hd;
    let n = keys.n;
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar && (1..=4).contains(&g) {
        // SAFETY: AVX2/FMA presence was detected at run time; reads stay
        // below (hd - 1) * cap + n <= kt.len() and writes below g * n.
        unsafe {
            match g {
                1 => x86::attn_scores_g_avx2::<1>(qs, hd, keys, scale, out),
                2 => x86::attn_scores_g_avx2::<2>(qs, hd, keys, scale, out),
                3 => x86::attn_scores_g_avx2::<3>(qs, hd, keys, scale, out),
                _ => x86::attn_scores_g_avx2::<4>(qs, hd, keys, scale, out),
            }
        }
        return;
    }
    for h in 0..g {
        let q = &qs[h * hd..(h + 1) * hd];
        attn_scores(Simd::Scalar, q, keys, scale, &mut out[h * n..(h + 1) * n]);
    }
}

/// In-place softmax over `s`.
pub fn softmax(simd: Simd, s: &mut [f32]) {
    let mx = s.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar {
        // SAFETY: AVX2/FMA presence was detected at run time.
        let sum = unsafe { x86::exp_sub_sum_avx2(s, mx) };
        let inv = 1.0 / sum;
        for v in s.iter_mut() {
            *v *= inv;
        }
        return;
    }
    let _ = simd;
    let mut sum = 0f32;
    for v in s.iter_mut() {
        *v = (*v - mx).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in s.iter_mut() {
        *v *= inv;
    }
}

/// `out = Σ_p w[p] * v[p * stride .. p * stride + out.len()]`.
pub fn attn_values(simd: Simd, w: &[f32], v: &[f32], stride: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if simd != Simd::Scalar && out.len() == 64 {
        // SAFETY: AVX2/FMA presence was detected at run time; the caller's
        // layout guarantees p * stride + 64 <= v.len() for p < w.len().
        return unsafe { x86::attn_values64_avx2(w, v, stride, out) };
    }
    let _ = simd;
    out.fill(0.0);
    for (p, wp) in w.iter().enumerate() {
        for (d, o) in out.iter_mut().enumerate() {
            *o += wp * v[p * stride + d];
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
