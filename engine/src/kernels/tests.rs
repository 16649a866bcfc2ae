use super::*;

/// A xorshift generator of floats in [-1, 1) for the kernel tests.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn f(&mut self) -> f32 {
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

/// The instruction-set levels this machine can run, scalar first.
pub(crate) fn simd_levels() -> Vec<Simd> {
    let best = detect_simd();
    let mut levels = vec![Simd::Scalar];
    if best != Simd::Scalar {
        levels.push(Simd::Avx2);
    }
    if best == Simd::Avx512Vnni {
        levels.push(Simd::Avx512Vnni);
    }
    levels
}

#[test]
fn kernels_match_f32_reference() {
    for simd in simd_levels() {
        check(WType::Q4_1, simd);
        check(WType::Q8_0, simd);
    }
}

#[test]
fn simd_quantize_matches_definition() {
    let mut r = Rng(5);
    let x: Vec<f32> = (0..96).map(|_| r.f() * 4.0).collect();
    let mut a = QAct::default();
    a.quantize(&x, 1, 96);
    for b in 0..3 {
        let amax = x[b * 32..(b + 1) * 32]
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()));
        assert!((a.d[b] - amax / 127.0).abs() < 1e-7);
        let mut sum = 0;
        for j in 0..32 {
            let want = x[b * 32 + j] / a.d[b];
            assert!(
                (a.q[b * 32 + j] as f32 - want).abs() <= 0.5 + 1e-3,
                "{} vs {want}",
                a.q[b * 32 + j]
            );
            sum += a.q[b * 32 + j] as i32;
        }
        assert_eq!(a.qsum[b], sum);
    }
}

#[test]
fn attention_kernels_match_scalar() {
    let mut r = Rng(99);
    let (hd, cap, n) = (64, 50, 37);
    let q: Vec<f32> = (0..hd).map(|_| r.f()).collect();
    let kt: Vec<f32> = (0..hd * cap).map(|_| r.f()).collect();
    let v: Vec<f32> = (0..cap * 192).map(|_| r.f()).collect();
    let simd = detect_simd();
    let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
    let keys = KeysT { kt: &kt, cap, n };
    attn_scores(simd, &q, keys, 0.125, &mut a);
    attn_scores(Simd::Scalar, &q, keys, 0.125, &mut b);
    for p in 0..n {
        assert!(
            (a[p] - b[p]).abs() < 1e-4,
            "score {p}: {} vs {}",
            a[p],
            b[p]
        );
    }
    let q3: Vec<f32> = (0..3 * hd).map(|_| r.f()).collect();
    let mut g3 = vec![0f32; 3 * n];
    attn_scores_group(simd, &q3, hd, keys, 0.125, &mut g3);
    for h in 0..3 {
        let mut one = vec![0f32; n];
        attn_scores(
            Simd::Scalar,
            &q3[h * hd..(h + 1) * hd],
            keys,
            0.125,
            &mut one,
        );
        for p in 0..n {
            assert!((g3[h * n + p] - one[p]).abs() < 1e-4, "group score {h} {p}");
        }
    }
    softmax(simd, &mut a);
    softmax(Simd::Scalar, &mut b);
    for p in 0..n {
        assert!(
            (a[p] - b[p]).abs() < 1e-5 * (1.0 + b[p]),
            "softmax {p}: {} vs {}",
            a[p],
            b[p]
        );
    }
    assert!((a.iter().sum::<f32>() - 1.0).abs() < 1e-4);
    let (mut oa, mut ob) = (vec![0f32; hd], vec![0f32; hd]);
    attn_values(simd, &b, &v[64..], 192, &mut oa);
    attn_values(Simd::Scalar, &b, &v[64..], 192, &mut ob);
    for d in 0..hd {
        assert!((oa[d] - ob[d]).abs() < 1e-4);
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
