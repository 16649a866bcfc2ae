//! One case per row of `speed::CHECKS`: each check, run alone by its id, finds a problem planted
//! in a small bundle and stays quiet on the bundle without it.

use crate::records::SpeedResult;
use crate::report::Severity::{Error, Info, Warning};
use crate::testkit::{assert_cases, case, one_value_cases, Kit};
use crate::testkit::{MIA, SMOLLM2, TENSORFOLD as TF};
use serde_json::{json, Value};

const R: &str = "speed/speed-result.json";
const M: &str = "bundle.json";

/// The recorded run with a machine-speed reference: one probe of `gbps(i)` before each counted
/// decode run (the guard's step names), and one more for `extra_step` when given.
fn with_reference(gbps: impl Fn(usize) -> f64, extra_step: Option<&str>) -> Kit {
    let mut kit = Kit::of(SMOLLM2);
    let result: SpeedResult = serde_json::from_value(kit.json(R).clone()).unwrap();
    let names = super::guard::counted_step_names(&result).into_iter();
    let decode = names.filter(|n| n.starts_with("decode/"));
    let steps: Vec<String> = decode.chain(extra_step.map(String::from)).collect();
    let probe = |(i, step): (usize, &String)| json!({"step": step, "gbps": gbps(i)});
    let samples: Vec<Value> = steps.iter().enumerate().map(probe).collect();
    kit.json(R)["machine_reference"] =
        json!({"kernel": "engine-q4_1-matvec-64MiB-v1-avx2", "threads": 2, "samples": samples});
    kit
}

/// The recorded run with a `gpu` record: one row per counted decode run, the first thrown away
/// and repeated; `edit` changes the kept rows.
fn with_gpu(edit: impl Fn(&mut Value)) -> Kit {
    let mut kit = Kit::of(SMOLLM2);
    let result: SpeedResult = serde_json::from_value(kit.json(R).clone()).unwrap();
    let names = super::guard::counted_step_names(&result).into_iter();
    let mut steps = vec![json!({"step": "decode/code/1", "try": 1, "kept": false,
        "throttle_reasons": ["hw_slowdown"], "foreign_processes": ["pid 7 (x) on the GPU"]})];
    for step in names.filter(|n| n.starts_with("decode/")) {
        let mut t = json!({"step": step, "try": 1, "kept": true, "energy_j": 12.5,
            "throttle_reasons": ["gpu_idle"], "foreign_processes": []});
        edit(&mut t);
        steps.push(t);
    }
    kit.json(R)["gpu"] = json!({"index": 0, "name": "NVIDIA H100", "steps": steps});
    kit
}

#[test]
fn every_speed_row_finds_its_planted_problem() {
    let tf = Kit::of(TF);
    let mut page_step = tf.clone();
    page_step.json(M)["page"]["speed"]["ctx_decode.16384"] = json!("25.0");
    let steady = with_reference(|i| 10.0 + 0.2 * (i % 3) as f64, None);
    let slowed = with_reference(|i| if i == 1 || i == 2 { 6.0 } else { 10.0 }, None);
    let stray = with_reference(|_| 10.0, Some("decode/code/99"));
    // A thrown-away try's foreign process or throttling is not the kept figures'.
    let gpu_clean = with_gpu(|_| {});
    let gpu_foreign = with_gpu(|t| t["foreign_processes"] = json!(["pid 9 (train) on the GPU"]));
    let gpu_throttled = with_gpu(|t| t["throttle_reasons"] = json!(["gpu_idle", "sw_power_cap"]));
    let mut cases = one_value_cases("speed.");
    cases.extend([
        case("speed.step-exceeds-window", &tf, page_step, Error),
        case("speed.machine-unsteady", &steady, slowed, Warning).saying("median of 10.00 GB/s"),
        case("speed.machine-unsteady", &steady, stray, Warning).saying("'decode/code/99'"),
        case("speed.gpu-foreign", &gpu_clean, gpu_foreign, Warning).saying("pid 9 (train)"),
        case("speed.gpu-throttled", &gpu_clean, gpu_throttled, Warning).saying("(sw_power_cap)"),
        case("speed.not-recomputable", &Kit::of(MIA), tf, Info).saying("decode_window1"),
    ]);
    assert_cases(cases);
}

/// A request of the recorded run's `step` at `depth`.
fn at(q: &Value, step: &str, depth: u64) -> bool {
    q["step"] == step && q["depth"] == depth
}

/// Three ctx runs at 2,048 tokens answered although the window is 1,024, and the step no longer
/// marked as not fitting.
fn answered_beyond_window(r: &mut Value) {
    let mut q = r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| at(q, "ctx", 512))
        .unwrap()
        .clone();
    (q["depth"], q["prompt_tokens"]) = (json!(2048), json!(2048));
    for run in 1..=3 {
        q["run"] = json!(run);
        r["requests"].as_array_mut().unwrap().push(q.clone());
    }
    r["fits"]
        .as_array_mut()
        .unwrap()
        .retain(|f| f["depth"] != 2048);
}

/// The rows the consistency tables hold under `speed.` ids, run by id wherever they live.
#[test]
fn every_speed_consistency_row_finds_its_planted_problem() {
    let run = Kit::of(SMOLLM2);
    let no_warmups = run.clone().with(R, |r| {
        let requests = r["requests"].as_array_mut().unwrap();
        requests.retain(|q| q["warmup"] != true);
    });
    let small_prompts = run.clone().with(R, |r| {
        let requests = r["requests"].as_array_mut().unwrap();
        for q in requests.iter_mut().filter(|q| at(q, "prefill", 512)) {
            q["prompt_tokens"] = json!(256);
        }
    });
    let first_token_before_sent = run.clone().with(R, |r| {
        let requests = r["requests"].as_array_mut().unwrap();
        let q = requests
            .iter_mut()
            .find(|q| q["step"] == "decode" && q["warmup"] != true);
        let q = q.unwrap();
        q["first_token_s"] = json!(q["sent_s"].as_f64().unwrap() - 0.1);
    });
    let beyond = run.clone().with(R, answered_beyond_window);
    assert_cases(vec![
        case("speed.runs-mismatch", &run, no_warmups, Error).saying("0 decode warm-ups"),
        case("speed.prompt-size-mismatch", &run, small_prompts, Error),
        case(
            "speed.impossible-record",
            &run,
            first_token_before_sent,
            Error,
        ),
        case("speed.answered-beyond-window", &run, beyond, Error),
    ]);
}
