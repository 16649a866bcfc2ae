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
            WType::Q4_1 => {
                for b in 0..nb {
                    let blk = &row[b * 20..(b + 1) * 20];
                    let (dw, mw) = (f16_at(blk, 0), f16_at(blk, 2));
                    let mut isum = 0i32;
                    for j in 0..16 {
                        isum += (blk[4 + j] & 0xF) as i32 * q[b * QK + j] as i32;
                        isum += (blk[4 + j] >> 4) as i32 * q[b * QK + j + 16] as i32;
                    }
                    acc += dw * d[b] * isum as f32 + mw * s[b];
                }
            }
            WType::Q4_0 => {
                for b in 0..nb {
                    let blk = &row[b * 18..(b + 1) * 18];
                    let dw = f16_at(blk, 0);
                    let mut isum = 0i32;
                    for j in 0..16 {
                        isum += ((blk[2 + j] & 0xF) as i32 - 8) * q[b * QK + j] as i32;
                        isum += ((blk[2 + j] >> 4) as i32 - 8) * q[b * QK + j + 16] as i32;
                    }
                    acc += dw * d[b] * isum as f32;
                }
            }
            WType::Q8_0 => {
                for b in 0..nb {
                    let blk = &row[b * 34..(b + 1) * 34];
                    let dw = f16_at(blk, 0);
                    let mut isum = 0i32;
                    for j in 0..32 {
                        isum += blk[2 + j] as i8 as i32 * q[b * QK + j] as i32;
                    }
                    acc += dw * d[b] * isum as f32;
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
    if simd != Simd::Scalar && a.len() % 16 == 0 {
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
    if simd != Simd::Scalar && x.len() % 16 == 0 {
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
    use super::{QAct, QK};
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

    macro_rules! q4_1_kernel {
        ($name:ident, $feat:literal, $isum:ident) => {
            #[target_feature(enable = $feat)]
            pub unsafe fn $name(row: &[u8], act: &QAct, t0: usize, out: &mut [f32]) {
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
                        let bp = rp.add(b * 20);
                        let dw = f16s(bp);
                        let mw = f16s(bp.add(2));
                        let w = unpack_nibbles(bp.add(4));
                        for j in 0..c {
                            let ti = base + j;
                            let qa = _mm256_loadu_si256(
                                act.q.as_ptr().add(ti * k + b * QK) as *const __m256i
                            );
                            let ib = ti * nb + b;
                            let s = $isum(w, qa);
                            let sc = _mm256_set1_ps(dw * *act.d.get_unchecked(ib));
                            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc[j]);
                            macc[j] += mw * *act.s.get_unchecked(ib);
                        }
                    }
                    for j in 0..c {
                        out[t + j] = hsum(acc[j]) + macc[j];
                    }
                    t += c;
                }
            }
        };
    }

    macro_rules! q8_0_kernel {
        ($name:ident, $feat:literal, $isum:ident) => {
            #[target_feature(enable = $feat)]
            pub unsafe fn $name(row: &[u8], act: &QAct, t0: usize, out: &mut [f32]) {
                let k = act.k;
                let nb = k / QK;
                let n = out.len();
                let rp = row.as_ptr();
                let mut t = 0;
                while t < n {
                    let c = (n - t).min(4);
                    let mut acc = [_mm256_setzero_ps(); 4];
                    let base = t0 + t;
                    for b in 0..nb {
                        let bp = rp.add(b * 34);
                        let dw = f16s(bp);
                        let w = _mm256_loadu_si256(bp.add(2) as *const __m256i);
                        let aw = _mm256_sign_epi8(w, w);
                        for j in 0..c {
                            let ti = base + j;
                            let qa = _mm256_loadu_si256(
                                act.q.as_ptr().add(ti * k + b * QK) as *const __m256i
                            );
                            // |w| * (a * sign(w)) == w * a
                            let sa = _mm256_sign_epi8(qa, w);
                            let s = $isum(aw, sa);
                            let sc = _mm256_set1_ps(dw * *act.d.get_unchecked(ti * nb + b));
                            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sc, acc[j]);
                        }
                    }
                    for j in 0..c {
                        out[t + j] = hsum(acc[j]);
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

    q4_1_kernel!(dot_q4_1_avx2, "avx2,fma,f16c", isum_avx2);
    q8_0_kernel!(dot_q8_0_avx2, "avx2,fma,f16c", isum_avx2);
    q4_1_kernel!(
        dot_q4_1_vnni,
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        isum_vnni
    );
    q8_0_kernel!(
        dot_q8_0_vnni,
        "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni",
        isum_vnni
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
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn f(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        }
    }

    fn check(ty: WType, simd: Simd) {
        let mut r = Rng(0x9E3779B97F4A7C15);
        let (k, ntok) = (256, 7);
        let w: Vec<f32> = (0..k).map(|_| r.f() * 0.5).collect();
        let row = match ty {
            WType::Q4_1 => quantize_q4_1(&w),
            WType::Q8_0 => quantize_q8_0(&w),
            _ => unreachable!(),
        };
        let mut wd = vec![0f32; k];
        dequant_row(ty, &row, &mut wd);
        // Quantized weights reproduce the originals within a step.
        for (a, b) in w.iter().zip(&wd) {
            assert!((a - b).abs() < 0.04, "{ty:?} dequant {a} vs {b}");
        }
        let x: Vec<f32> = (0..k * ntok).map(|_| r.f() * 3.0).collect();
        let mut act = QAct::default();
        act.quantize(&x, ntok, k);
        let mut got = vec![0f32; ntok];
        let mut refq = vec![0f32; ntok];
        dot_rows(simd, ty, &row, &act, 0, &mut got);
        dot_rows_scalar(ty, &row, &act, 0, &mut refq);
        for t in 0..ntok {
            // Plain f32 reference on dequantized weights and unquantized x.
            let f: f32 = (0..k).map(|i| wd[i] * x[t * k + i]).sum();
            assert!(
                (got[t] - refq[t]).abs() <= 1e-3 * (1.0 + refq[t].abs()),
                "{ty:?} {simd:?} t{t}: {} vs scalar {}",
                got[t],
                refq[t]
            );
            assert!(
                (got[t] - f).abs() <= 0.02 * (1.0 + f.abs()) + 0.05,
                "{ty:?} {simd:?} t{t}: {} vs f32 {}",
                got[t],
                f
            );
        }
    }

    #[test]
    fn kernels_match_f32_reference() {
        let best = detect_simd();
        let mut levels = vec![Simd::Scalar];
        if best != Simd::Scalar {
            levels.push(Simd::Avx2);
        }
        if best == Simd::Avx512Vnni {
            levels.push(Simd::Avx512Vnni);
        }
        for simd in levels {
            check(WType::Q4_1, simd);
            check(WType::Q8_0, simd);
        }
    }

    #[test]
    fn f32_helpers_match_scalar() {
        let mut r = Rng(42);
        let a: Vec<f32> = (0..64).map(|_| r.f()).collect();
        let b: Vec<f32> = (0..64).map(|_| r.f()).collect();
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let simd = detect_simd();
        assert!((dot_f32(simd, &a, &b) - want).abs() < 1e-4);
        let mut y = b.clone();
        axpy_f32(simd, 0.5, &a, &mut y);
        for i in 0..64 {
            assert!((y[i] - (b[i] + 0.5 * a[i])).abs() < 1e-6);
        }
    }
}
