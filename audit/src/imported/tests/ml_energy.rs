//! The ML.ENERGY rows' cases: a clean run built by hand (two requests, a 40 s window on one H100,
//! a server whose counter of generated tokens brackets the window), and one planted problem per
//! row, as the benchmark's own validator or writer would make it (docs/formats/ml-energy.md).

use super::{case, lowered, Case};
use crate::imported::ml_energy::{
    Prometheus, Run, Snapshot, Steady, ENERGY_READINGS, ENERGY_WINDOW,
};
use crate::imported::vllm;
use crate::imported::{IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE};
use crate::report::Severity;
use crate::speed;

/// 2 requests of 30,000 and 50,000 reply tokens over 80 s; a 40 s window of 24,000 J at 0.6 J a
/// token (40,000 tokens in it, as the server's counter, 1,000 a second, says); a batch of 2.
pub(super) fn clean() -> Run {
    let requests = vllm::Run {
        file: "results.json".into(),
        detailed: true,
        duration: Some(80.0),
        ttfts: vec![0.1, 0.1],
        itls: vec![vec![0.0, 0.02], vec![0.0, 0.02]],
        input_lens: vec![100.0, 100.0],
        output_lens: vec![30_000.0, 50_000.0],
        latencies: Some(vec![10.0, 12.0]),
        errors: vec![String::new(), String::new()],
        per_request_objects: true,
        ..Default::default()
    };
    let snapshot = |at: f64, running: f64, generated: f64| Snapshot {
        at,
        running: Some((running, running / 2.0)),
        generated: Some(generated),
    };
    Run {
        file: "results.json".into(),
        requests,
        num_prompts: Some(2.0),
        completed: Some(2.0),
        max_num_seqs: Some(2.0),
        output_throughput: Some(1000.0),
        gpu_model: Some("NVIDIA H100 80GB HBM3".into()),
        steady: Steady {
            duration: Some(40.0),
            energy: Some(24_000.0),
            per_token: Some(0.6),
            measured_time: Some(40.0),
            gpu_energy: vec![("0".into(), 24_000.0)],
            window: Some((100.0, 140.0)),
        },
        request_energy: vec![Some(18_000.0), Some(30_000.0)],
        power: vec![("device_instant".into(), "0".into(), vec![600.0, 610.0])],
        temperatures: vec![55.0, 56.0],
        prometheus: Some(Prometheus {
            file: "prometheus.json".into(),
            window: Some((100.0, 140.0)),
            stats_running: Some(2.0),
            snapshots: (0..80)
                .map(|k| snapshot(70.0 + k as f64, 2.0, 1000.0 * k as f64))
                .collect(),
        }),
    }
}

/// The planted problems, at least one per row of [`crate::imported::ml_energy::CHECKS`].
pub(super) const CASES: &[Case<Run>] = &[
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.steady.energy = Some(25_000.0)
    })
    .saying("add up to 24000 J"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.steady.duration = Some(41.0)
    })
    .saying("lasted 40 s"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.request_energy[1] = Some(31_000.0)
    })
    .saying("request 1: 31000 J"),
    // 24,000 J / 0.2 J = 120,000 tokens in the window: more than the run's 80,000.
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        x.steady.per_token = Some(0.2)
    })
    .saying("more than the 80000"),
    // The server counted 40,000 tokens across the window; 24,000 J / 0.4 J = 60,000.
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        x.steady.per_token = Some(0.4)
    })
    .saying("vllm:generation_tokens_total counted"),
    case(RUN_INCOMPLETE.id, clean, |x| x.completed = Some(1.0)),
    case(ENERGY_WINDOW.id, clean, |x| x.steady.duration = Some(25.0)).saying("lasted 25 s"),
    lowered(ENERGY_WINDOW.id, Severity::Warning, clean, |x| {
        let p = x.prometheus.as_mut().unwrap();
        p.snapshots
            .iter_mut()
            .for_each(|s| s.running = Some((1.0, 0.5)));
        p.stats_running = Some(1.0);
    })
    .saying("50 % of max_num_seqs"),
    lowered(ENERGY_WINDOW.id, Severity::Warning, clean, |x| {
        x.prometheus.as_mut().unwrap().stats_running = Some(1.0)
    })
    .saying("largest engine's"),
    case(ENERGY_WINDOW.id, clean, |x| {
        let p = x.prometheus.as_mut().unwrap();
        p.snapshots.iter_mut().for_each(|s| s.running = None);
        p.stats_running = None;
    })
    .saying("no record of the running batch"),
    lowered(ENERGY_READINGS.id, Severity::Error, clean, |x| {
        x.steady.per_token = Some(150.0);
        x.steady.energy = Some(150.0 * 40_000.0);
        x.steady.gpu_energy = vec![("0".into(), 150.0 * 40_000.0)];
        x.request_energy = vec![None, None];
    })
    .saying("at most 100"),
    case(ENERGY_READINGS.id, clean, |x| x.power[0].2.push(1300.0)).saying("outside 70-1190 W"),
    lowered(ENERGY_READINGS.id, Severity::Error, clean, |x| {
        x.temperatures[0] = 99.0
    })
    .saying("1 of 2 GPU temperature samples"),
    case(ENERGY_READINGS.id, clean, |x| {
        x.prometheus.as_mut().unwrap().snapshots.truncate(40);
    })
    .saying("40 metric snapshots over a 80 s run"),
    lowered(NOT_RECOMPUTABLE.id, Severity::Info, clean, |x| {
        x.prometheus = None
    })
    .saying("prometheus.json was not given"),
];

#[test]
fn every_row_raises_its_planted_problem_and_nothing_on_the_clean_run() {
    super::check_cases(crate::imported::ml_energy::CHECKS, CASES);
}
