use super::*;

fn planned(kind: ChunkKind) -> Planned {
    Planned {
        slot: 0,
        tokens: vec![1],
        pos: 0,
        kind,
        drafts: 0,
    }
}

#[test]
fn the_decode_delay_is_taken_only_in_steps_that_decode() {
    let ms = DecodeDelay::Sleep(Duration::from_millis(7));
    let (mid, last, dec) = (
        ChunkKind::PrefillMid,
        ChunkKind::PrefillLast,
        ChunkKind::Decode,
    );
    // A prompt's chunks, its last (the first token sampled after it): no delay.
    assert_eq!(decode_delay(&[planned(mid)], ms), None);
    assert_eq!(decode_delay(&[planned(last), planned(mid)], ms), None);
    assert_eq!(decode_delay(&[], ms), None);
    // Decode chunks, alone or beside another slot's prompt: one delay for the step.
    assert_eq!(decode_delay(&[planned(dec), planned(dec)], ms), Some(ms));
    assert_eq!(decode_delay(&[planned(dec), planned(last)], ms), Some(ms));
    // No delay asked: never.
    assert_eq!(decode_delay(&[planned(dec)], DecodeDelay::None), None);
    let zero = DecodeDelay::Spin(Duration::ZERO);
    assert_eq!(decode_delay(&[planned(dec)], zero), None);
}

#[test]
fn a_spun_delay_is_work_on_this_thread_for_at_least_its_duration() {
    let d = Duration::from_millis(20);
    let (wall, cpu) = (std::time::Instant::now(), thread_cpu());
    DecodeDelay::Spin(d).take();
    assert!(wall.elapsed() >= d);
    // A sleep would leave the thread's CPU time near zero (microseconds); a spin spends it, as
    // much of the 20 ms as the machine gives this thread: 9 ms with four test threads on two
    // cores, so a fifth is the bound.
    assert!(thread_cpu() - cpu >= d / 5, "{:?}", thread_cpu() - cpu);
}

/// This thread's time on a CPU (Linux's schedstat, in ns).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let ns: u64 = stat.split_whitespace().next().unwrap().parse().unwrap();
    Duration::from_nanos(ns)
}

#[test]
fn copies_draft_finds_earlier_ngram() {
    let h = [1, 2, 3, 4, 5, 6, 9, 1, 2, 3];
    assert_eq!(copies_draft(&h, 3), vec![4, 5, 6]);
    assert_eq!(copies_draft(&[1, 2, 3], 4), Vec::<u32>::new());
}

#[test]
fn greedy_and_seeded_sampling() {
    let logits = vec![0.1, 2.0, 0.3, 1.9];
    let mut p = GenParams {
        temperature: 0.0,
        top_p: 1.0,
        top_k: 0,
        seed: None,
        max_tokens: 1,
        stop: vec![],
        ignore_eos: false,
        cache_prompt: true,
        cache_salt: String::new(),
        logprobs: None,
        prompt_logprobs: false,
    };
    let mut r = 1;
    assert_eq!(sample(&logits, &p, &mut r), 1);
    p.temperature = 1.0;
    p.top_k = 2;
    let (mut r1, mut r2) = (7, 7);
    let a: Vec<u32> = (0..20).map(|_| sample(&logits, &p, &mut r1)).collect();
    let b: Vec<u32> = (0..20).map(|_| sample(&logits, &p, &mut r2)).collect();
    assert_eq!(a, b);
    assert!(a.iter().all(|&t| t == 1 || t == 3));
}

#[test]
fn token_logprob_is_log_softmax_with_sorted_top() {
    let logits = vec![0.1f32, 2.0, 0.3, 2.0];
    let lp = token_logprob(&logits, 2, 3);
    let z: f64 = logits.iter().map(|&v| (v as f64).exp()).sum();
    let want = (0.3f64.exp() / z).ln();
    assert!((lp.logprob.unwrap() as f64 - want).abs() < 1e-6);
    // Ties go to the lower id, as greedy sampling picks.
    assert_eq!(
        lp.top.iter().map(|t| t.0).collect::<Vec<_>>(),
        vec![1, 3, 2]
    );
    let total: f64 = (0..4)
        .map(|i| (token_logprob(&logits, i, 0).logprob.unwrap() as f64).exp())
        .sum();
    assert!((total - 1.0).abs() < 1e-6);
}
