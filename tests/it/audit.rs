//! The main job on the bundled fixture, and the promise behind it, on whatever machine runs the
//! tests:
//! - the fixture with its card naming **another** machine: `rigaudit audit` says the hardware
//!   differs, every speed row is for information only (any verdict), and what does not depend on
//!   the CPU holds: quality compared paired and inconclusive, the refused test and the step that
//!   cannot fit the window not comparable on both sides, so the replay settled nothing: exit 3,
//!   INCOMPLETE, saying so (never a pass); decode as rigaudit measures it within 0.5 % of the
//!   engine's own timing, beyond the wait of the engine's first streamed token for a core;
//! - the fixture with its card naming **this** machine: the speed rows are judged (not
//!   informational, no hardware difference said), and the exit code follows the verdicts; when the
//!   fixture was recorded on this CPU model, nothing drifted;
//! - **reproduces here**: a short contract recorded on this machine with `rigaudit measure`
//!   against the bundled engine and replayed at once: every speed row reproduced or inconclusive,
//!   none drifted;
//! - **a slower decode**: the same recording (made once for both) replayed with a sleep in every
//!   decode step: the decode rows drift, prefill's do not;
//! - **a throttling GPU**: a tiny decode contract recorded here and replayed with the fake NVML
//!   (tests/fake-nvml) saying a thermal slowdown: every decode row inconclusive, naming it.
//!
//! The model comes from the cache `scripts/fetch-model.sh` fills. The tests of this binary run one
//! at a time (a lock), so none loads the machine under another.

use crate::common;

use common::assert_has;
use common::{copy_with_card, read_json, rigaudit, rigaudit_line, root};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A copy of the fixture whose card's hardware is `hardware`, its digest re-recorded.
fn fixture_on(tmp: &Path, hardware: Value) -> PathBuf {
    let dir = tmp.join("fixture");
    let from = root().join("fixtures/runs/smollm2-cpu");
    copy_with_card(&from, &dir, |card| card["hardware"] = hardware);
    dir
}

/// This machine as a card describes hardware (`rigaudit __host`).
fn this_machine() -> Value {
    let run = rigaudit(&["__host"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json()
}

/// `rigaudit COMMAND BUNDLE --out OUT` (`audit` or `replay`) as JSON, with `--set` for each of
/// `sets` (`NAME=VALUE`): the run and its report.
fn run_to(command: &str, bundle: &Path, out: &Path, sets: &[&str]) -> (common::Run, Value) {
    run_to_env(command, bundle, out, sets, &[])
}

/// [`run_to`] with the variables `env` added to rigaudit's environment.
fn run_to_env(
    command: &str,
    bundle: &Path,
    out: &Path,
    sets: &[&str],
    env: &[(&str, &Path)],
) -> (common::Run, Value) {
    let (bundle, out) = (bundle.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec![command, bundle, "--out", out, "--format", "json", "--quiet"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let run = common::rigaudit_with_env(&args, env);
    let report = run.json();
    (run, report)
}

fn audit(bundle: &Path, out: &Path) -> (common::Run, Value) {
    run_to("audit", bundle, out, &[])
}

fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    common::entry(report, "comparisons", "key", key)
}

fn speed_rows(report: &Value) -> Vec<&Value> {
    report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["key"].as_str().unwrap().starts_with("quality."))
        .collect()
}

/// What holds on any machine: quality compared paired over the same 24 questions and inconclusive
/// (the greedy replay gives the same answers, yet 24 questions bound the difference only to
/// about ±9 points, so the ±3 points band can be neither shown nor ruled out: equivalence needs
/// more questions), the refused test and the unfitting step not comparable on both sides.
fn assert_cpu_independent_rows(report: &Value) {
    let arith = row(report, "quality.arith.pct");
    assert_eq!(arith["verdict"], "inconclusive", "{arith}");
    assert_eq!(arith["test"], "mcnemar-paired", "{arith}");
    let long = row(report, "quality.arith-long.pct");
    assert_eq!(long["verdict"], "not-comparable");
    let why = long["why"].as_str().unwrap();
    assert_has(why, "both sides");
    assert_has(why, "maximum context length is 1024 tokens");
    assert_eq!(row(report, "ctx_decode.2048")["verdict"], "not-comparable");
}

/// Decode as rigaudit measures it, against the engine's own timing of the same requests.
fn assert_decode_agrees_with_the_engines_timing(replayed: &Path) {
    let result = replayed.join("bundle/speed/speed-result.json");
    // As llama.cpp's (tests/it/llamacpp.rs): the engine's two compute threads hold both cores, and
    // the first token's chunk can wait behind the next step (seen 2026-12-07: 4.6 ms, 1.8 steps of
    // 2.6 ms, on a VM decoding 390 tokens/s).
    common::assert_decode_agrees_with_the_engines_timing(&result, "the engine", 3.0);
}

/// The bundled engine serving the fixture's model with the fixture card's command.
struct Engine {
    child: std::process::Child,
    port: u16,
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn model_file() -> PathBuf {
    let out = common::output_ok(
        std::process::Command::new("bash").arg(root().join("scripts/fetch-model.sh")),
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn start_engine(card: &Value, logs: &Path) -> Engine {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = model_file();
    let argv: Vec<String> = card["commands"][0]["argv"].as_array().unwrap()[1..]
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("<model file>", model.to_str().unwrap())
                .replace("<port>", &port.to_string())
                .replace("<decode delay>", "0")
        })
        .collect();
    let log = std::fs::File::create(logs).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .arg("__engine")
        .args(&argv)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let e = Engine { child, port };
    let url = format!("127.0.0.1:{port}");
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(&url).is_err() {
        assert!(t0.elapsed().as_secs() < 120, "the engine did not start");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    e
}

/// The short contract of the record-and-replay tests, written into `dir`; its path.
fn short_contract(inputs: &Path, dir: &Path) -> PathBuf {
    let mut contract = read_json(&inputs.join("speed-contract.json"));
    contract["runs"] = json!(4);
    contract["max_tokens"] = json!(96);
    // Short steps timed over a batch of at least 250 ms each run (min_try_ms): timed once, a
    // 256-token prefill (about 0.1 s here) spread 12-18 % (CV) between runs, mostly the clock and
    // the scheduler (docs/measurement.md).
    contract["prefill"] = json!({"depths": [256], "runs": 4, "max_tokens": 1, "min_try_ms": 250});
    // Replies of 96 tokens, as decode's: a rate over 24 tokens (about 0.1 s, half of it the first
    // token) moved 25-27 % between sessions here with the machine quiet (issue 9).
    contract["conc"] = json!({"levels": [1, 2], "rounds": 4, "max_tokens": 96, "prompt": "prose"});
    contract["ctx"] = json!({"depths": [256], "runs": 4, "max_tokens": 96, "min_try_ms": 250});
    contract["parts"] = json!(["decode", "prefill", "conc", "ctx"]);
    contract["l1"] = Value::Null;
    contract["load_guard"] = json!({"threshold_pct": 25.0, "consecutive": 2, "interval_s": 0.5});
    let contract_path = dir.join("speed-contract.json");
    std::fs::write(&contract_path, contract.to_string()).unwrap();
    contract_path
}

/// Records a bundle into `dir/recorded` with the bundled engine started by the card at
/// `card_path` (its placeholders filled as [`start_engine`] does) under the short contract;
/// checks the load guard and machine reference were sampled.
fn record(card_path: &Path, dir: &Path) -> PathBuf {
    let inputs = root().join("fixtures/runs/inputs/smollm2-cpu");
    let contract_path = short_contract(&inputs, dir);
    let bundle = record_under(card_path, dir, &contract_path);
    let res = read_json(&bundle.join("speed/speed-result.json"));
    assert!(res["load_guard"]["samples"].as_u64().unwrap() > 0);
    // The machine's speed reference is probed before every counted step.
    let probes = res["machine_reference"]["samples"].as_array().unwrap();
    assert!(probes.len() >= 8, "{}", res["machine_reference"]);
    assert!(probes.iter().all(|p| p["gbps"].as_f64().unwrap() > 0.0));
    bundle
}

/// Records a bundle into `dir/recorded` with the bundled engine started by the card at
/// `card_path` under the contract at `contract_path`.
fn record_under(card_path: &Path, dir: &Path, contract_path: &Path) -> PathBuf {
    let log = dir.join("start.log");
    let engine = start_engine(&read_json(card_path), &log);
    let bundle = dir.join("recorded");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let base = format!("http://127.0.0.1:{}/v1", engine.port);
    let values = [
        base,
        path(contract_path),
        path(card_path),
        path(&log),
        path(&bundle),
    ];
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let line =
        "measure --base-url {} --contract {} --card {} --start-log {} --out {} --quiet --id here";
    let m = rigaudit_line(line, &values);
    drop(engine);
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    bundle
}

/// `rigaudit replay BUNDLE` into `out` with the `--set` words `sets`; prints the speed rows
/// whatever the outcome.
fn replay_and_print(bundle: &Path, out: &Path, sets: &[&str]) -> (common::Run, Value) {
    let (run, report) = run_to("replay", bundle, out, sets);
    // The speed rows, one line each, whatever the outcome: what a flaky run looked like.
    for r in speed_rows(&report) {
        eprintln!(
            "{:<22} {:>10} {:>10} {:<13} {}",
            r["key"].as_str().unwrap_or(""),
            r["recorded"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}")),
            r["replayed"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}")),
            r["verdict"].as_str().unwrap_or(""),
            r["why"].as_str().unwrap_or("")
        );
    }
    for f in report["findings"].as_array().unwrap() {
        if f["check"] == "replay.machine-speed" {
            eprintln!("{}", f["message"]);
        }
    }
    (run, report)
}

/// A bundle recorded here under the short contract, with the card whose command takes
/// `--decode-delay-ms <decode delay>` (0 while recording), in a folder of its own.
struct Recording {
    dir: tempfile::TempDir,
    bundle: PathBuf,
}

/// Records a [`Recording`]: the fixture's card with `--decode-delay-ms <decode delay>` added,
/// the bundled engine started with it at 0.
fn record_with_delay_flag() -> Recording {
    let dir = tempfile::tempdir().unwrap();
    let card_path = dir.path().join("card.json");
    let inputs = root().join("fixtures/runs/inputs/smollm2-cpu");
    let mut card = read_json(&inputs.join("card.json"));
    let argv = card["commands"][0]["argv"].as_array_mut().unwrap();
    argv.extend([json!("--decode-delay-ms"), json!("<decode delay>")]);
    std::fs::write(&card_path, card.to_string()).unwrap();
    let bundle = record(&card_path, dir.path());
    Recording { dir, bundle }
}

/// The recording the two record-and-replay tests share: made by the first that asks, replayed
/// by both (once as recorded, once with a decode delay), so the quiet tests record once where
/// they recorded twice (a recording is a third of such a test's time). A test that records again
/// (a drift on the first recording) makes a recording of its own.
static SHARED_RECORDING: Mutex<Option<Recording>> = Mutex::new(None);

/// Replays the shared recording (made on the first call) into a folder of its own with `delay`
/// as the decode delay; prints the speed rows.
fn replay_shared_recording(delay: &str) -> (common::Run, Value) {
    let mut shared = SHARED_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
    let recording = shared.get_or_insert_with(record_with_delay_flag);
    replay_with_delay(recording, delay)
}

/// Replays `recording` into a new folder beside its bundle with `--set 'decode delay=DELAY'`.
fn replay_with_delay(recording: &Recording, delay: &str) -> (common::Run, Value) {
    let out = tempfile::tempdir_in(recording.dir.path()).unwrap();
    let delay = format!("decode delay={delay}");
    replay_and_print(&recording.bundle, &out.path().join("replay"), &[&delay])
}

/// Records a new bundle and replays it at once with `delay` as the decode delay.
fn record_again_and_replay(delay: &str) -> (common::Run, Value) {
    replay_with_delay(&record_with_delay_flag(), delay)
}

/// The engine's `--decode-delay-ms` on replay, in ms. Chosen from the engine's decode step
/// measured here (SmolLM2-135M Q4_1, `--threads 2`, the 2-core VM, replies of 96 tokens, the
/// engine's own `predicted_ms`): 4.2-5.6 ms a token with the machine quiet, 8-8.5 ms at a 3 ms
/// delay and 10-11 ms at 4 ms (a sleep also lets the compute threads park, so a step gains more
/// than the sleep). At 4 ms decode moved -40 to -47 % in five runs, but once a confirming session
/// pooled in left it inconclusive at -36 %; 6 ms (about -55 %) keeps the change well beyond the
/// ±25 % band when a neighbour's load stretches a step.
const DECODE_DELAY_MS: &str = "6";

/// The rows the delay must slow down, and those it must leave alone.
const SLOWED: [&str; 4] = ["decode.code", "decode.prose", "decode", "ctx_decode.256"];
const UNTOUCHED: [&str; 3] = ["prefill.256", "ttft.256", "ctx_prefill.256"];

/// A replay on a GPU that throttles (the fake NVML says a thermal slowdown at every reading):
/// every decode row is inconclusive naming the throttle, never drifted; with nothing else to
/// compare the replay settled nothing (exit 3, incomplete, saying a GPU that does not throttle
/// would settle it), and the replayed result carries the GPU; without NVML the replay reads no
/// GPU and no row says so.
#[test]
fn a_replay_on_a_throttling_gpu_is_inconclusive_and_says_why() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let inputs = root().join("fixtures/runs/inputs/smollm2-cpu");
    let mut contract = read_json(&inputs.join("speed-contract.json"));
    contract["parts"] = json!(["decode"]);
    contract["runs"] = json!(3);
    contract["max_tokens"] = json!(16);
    contract["l1"] = Value::Null;
    // Only the GPU may disturb a try: no CPU load on a busy test machine breaks this rule.
    contract["load_guard"] =
        json!({"threshold_pct": 100.0, "consecutive": 1000, "interval_s": 0.5, "max_tries": 2});
    let contract_path = tmp.path().join("speed-contract.json");
    std::fs::write(&contract_path, contract.to_string()).unwrap();
    let bundle = record_under(&inputs.join("card.json"), tmp.path(), &contract_path);
    let nvml = tmp.path().join("nvml");
    std::fs::create_dir_all(&nvml).unwrap();
    let libdir = common::fake_nvml(&nvml);
    let env = [
        ("LD_LIBRARY_PATH", libdir.as_path()),
        ("FAKE_NVML_THROTTLE", Path::new("0x21")),
    ];
    let out = tmp.path().join("throttled");
    let (run, report) = run_to_env("replay", &bundle, &out, &[], &env);
    let rows = serde_json::to_string_pretty(&report["comparisons"]).unwrap();
    assert_eq!(run.code, 3, "{rows}\n{}", run.stderr);
    let why = report["verdict_qualifier"].as_str().unwrap();
    assert_has(why, "the replay settled nothing");
    assert_has(why, "GPU throttled");
    assert_has(why, "on a GPU that does not throttle");
    // Only decode was measured (the other keys are not comparable on both sides).
    let decode: Vec<&Value> = speed_rows(&report)
        .into_iter()
        .filter(|r| r["key"].as_str().unwrap().starts_with("decode"))
        .collect();
    assert_eq!(decode.len(), 3, "{rows}");
    for r in decode {
        assert_eq!(r["verdict"], "inconclusive", "{rows}");
        assert_eq!(r["inconclusive"], "gpu-throttled", "{rows}");
        let why = r["why"].as_str().unwrap();
        assert_has(why, "GPU throttled: on the replayed side, try 1 of decode/");
        assert_has(why, "ran on Fake NVML GPU throttled (sw_thermal_slowdown)");
    }
    assert!(report["replay_summary"]["gpu_throttled"].as_u64().unwrap() >= 3);
    let res = read_json(&out.join("bundle/speed/speed-result.json"));
    assert_eq!(res["gpu"]["name"], "Fake NVML GPU", "{}", res["gpu"]);
    // Without NVML: the replay as before, no GPU read and no row about one.
    let out = tmp.path().join("plain");
    let (run, report) = run_to("replay", &bundle, &out, &[]);
    let res = read_json(&out.join("bundle/speed/speed-result.json"));
    if res["gpu"].is_null() {
        assert_ne!(run.code, 2, "{}", run.stderr);
        assert!(
            speed_rows(&report)
                .iter()
                .all(|r| r["inconclusive"] != "gpu-throttled"),
            "{}",
            report["comparisons"]
        );
    }
}

/// The tests whose verdicts need the machine to themselves: `scripts/test.sh` runs every
/// `quiet` module after the rest of the suite, one test at a time.
mod quiet {
    use super::*;

    /// The main job on the fixture with this machine's hardware on its card. A full audit: beside
    /// the rest of the suite its load guard throws tries away and retries them (alone about a
    /// minute and a half; with three other tests at once it took 435 s, the longest test of the
    /// suite), so it runs alone.
    #[test]
    fn on_this_machine_speed_is_judged() {
        let _quiet = common::machine_to_myself();
        let tmp = tempfile::tempdir().unwrap();
        let bundle = fixture_on(tmp.path(), this_machine());
        let out = tmp.path().join("replay");
        // One session (`--confirm false`): a drift or a value too noisy to judge sent the audit to a
        // second session nearly every time on this VM, doubling the test (69 s against 34 s on
        // other hardware); what confirming does is the slower-decode test's subject below, and
        // this one's is that speed is judged.
        let (bundle, out) = (bundle.to_str().unwrap(), out.to_str().unwrap());
        let args = ["audit", bundle, "--out", out, "--format", "json", "--quiet"];
        let run = rigaudit(&[&args[..], &["--confirm", "false"]].concat());
        let report = run.json();
        assert!(
            !report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["check"] == "replay.hardware-differs"),
            "{:#?}",
            report["findings"]
        );
        let speed = speed_rows(&report);
        let drifted = speed.iter().any(|r| r["verdict"] == "drifted");
        for r in &speed {
            assert_eq!(r["informational"], false, "{r}");
            assert!(!r["why"].as_str().unwrap().is_empty(), "{r}");
        }
        assert_cpu_independent_rows(&report);
        // A judged drift fails the audit; nothing else in this fixture does. Whether the fixture's
        // figures reproduce here is not asserted: this VM's speed shifts between sessions and hosts
        // (the record-and-replay test below holds that promise). Without a drift the audit passes
        // when a value reproduced, and is incomplete when none did (quality is too close to call, so
        // every speed row inconclusive leaves it settling nothing), saying so.
        let reproduced = speed.iter().any(|r| r["verdict"] == "reproduced");
        let want = match (drifted, reproduced) {
            (true, _) => 1,
            (false, true) => 0,
            (false, false) => 3,
        };
        assert_eq!(run.code, want, "{}", run.stderr);
        if want == 3 {
            let why = report["verdict_qualifier"].as_str().unwrap();
            assert_has(why, "the replay settled nothing: none of its");
        }
    }

    #[test]
    fn on_other_hardware_speed_is_informational_and_the_audit_settles_nothing() {
        let _quiet = common::machine_to_myself();
        let tmp = tempfile::tempdir().unwrap();
        let other = json!({
            "description": "1 box: AMD EPYC 9999 (a machine this test never runs on), 64 cores, CPU only",
            "boxes": [{"name": "local", "model": "AMD EPYC 9999 64-Core Processor", "rank": 0, "cores": 64}],
            "link": null, "driver": null, "kernel": null, "gpu_clock_mhz": null, "accelerator": "cpu"
        });
        let bundle = fixture_on(tmp.path(), other);
        let out = tmp.path().join("replay");
        let (run, report) = audit(&bundle, &out);
        // Nothing it measured bears on the page: speed on other hardware, quality too close to call.
        // The audit reproduced nothing, so it is incomplete and says why, not a pass.
        assert_eq!(
            run.code,
            3,
            "{}\n{}",
            serde_json::to_string_pretty(&report["comparisons"]).unwrap(),
            run.stderr
        );
        assert_eq!(report["command"], "audit");
        assert_eq!(report["verdict"], "incomplete");
        let why = report["verdict_qualifier"].as_str().unwrap();
        assert_eq!(Some(why), report["incomplete"].as_str());
        let n = report["comparisons"].as_array().unwrap().len();
        let info = speed_rows(&report).len();
        assert_has(
            why,
            &format!(
                "the replay settled nothing: none of its {n} values reproduced or drifted ({info} for information only: other hardware;"
            ),
        );
        assert_has(why, "to settle them: replay on the hardware the card names");
        assert!(!common::findings_in(&report, "coverage.incomplete").is_empty());
        let hw = common::findings_in(&report, "replay.hardware-differs");
        assert_eq!(hw.len(), 1, "{:#?}", report["findings"]);
        assert!(hw[0]["message"]
            .as_str()
            .unwrap()
            .contains("AMD EPYC 9999 64-Core Processor"));
        let speed = speed_rows(&report);
        assert!(!speed.is_empty());
        for r in speed {
            assert_eq!(r["informational"], true, "{r}");
        }
        assert_eq!(row(&report, "quality.arith.pct")["informational"], false);
        assert_cpu_independent_rows(&report);
        assert_decode_agrees_with_the_engines_timing(&out);
        // What ran: the bundled engine is this rigaudit (`rigaudit __engine`), read at ready and at
        // the end, every file it mapped hashed; the card records none of them (a note).
        let rank = &report["loaded"][0];
        assert_eq!(rank["read_at"], json!(["ready", "end"]), "{rank:#}");
        let objects = rank["objects"].as_array().unwrap();
        let exe = objects.iter().find(|o| o["role"] == "executable").unwrap();
        let me = std::path::Path::new(env!("CARGO_BIN_EXE_rigaudit"));
        assert_eq!(exe["sha256"], common::sha_file(me), "{exe:#}");
        assert!(
            objects.iter().all(|o| o["sha256"].is_string()),
            "{objects:#?}"
        );
        assert!(
            objects.iter().any(|o| o["soname"] == "libc.so.6"),
            "{objects:#?}"
        );
        let unrecorded = common::findings_in(&report, "loaded.unrecorded");
        assert_eq!(unrecorded.len(), 1, "{unrecorded:#?}");
        assert_eq!(unrecorded[0]["severity"], "info");
    }

    #[test]
    fn a_bundle_recorded_here_reproduces_here() {
        let _quiet = common::machine_to_myself();
        let (run, report) = replay_shared_recording("0");
        // One recorded session cannot show its own session's speed: on this shared VM whole
        // stretches of a minute have run 25-35 % off another with the guard quiet and the machine's
        // speed reference moving less, and the replay's sessions, made after, cannot see that the
        // recording's stretch was off. Runs in rounds and the floor between the replay's sessions
        // took first-recording drifts from 4 of 13 runs to 1 of 12 (2026-12-03); a drift on the
        // first recording is therefore recorded again and replayed once more, and the test fails
        // when the second recording drifts too.
        let drifted = speed_rows(&report)
            .iter()
            .any(|r| r["verdict"] == "drifted");
        let (run, report) = if drifted {
            eprintln!("a drift on the first recording; recording and replaying once more");
            record_again_and_replay("0")
        } else {
            (run, report)
        };
        let rows = serde_json::to_string_pretty(&report["comparisons"]).unwrap();
        // A pass says how many values it reproduced; a replay that reproduced none (every row
        // inconclusive, under foreign load) settled nothing: incomplete, exit 3.
        let count = |k: &str| report["replay_summary"][k].as_u64().unwrap_or(0);
        if count("reproduced") == 0 {
            assert_eq!(run.code, 3, "{rows}\n{}", run.stderr);
            assert_has(
                report["verdict_qualifier"].as_str().unwrap(),
                "the replay settled nothing",
            );
        } else {
            assert_eq!(run.code, 0, "{rows}\n{}", run.stderr);
            // `3 of 11 values reproduced (...)`, or `all 11 values reproduced` when every one did.
            let said = report["verdict_qualifier"].as_str().unwrap_or_default();
            let n = count("reproduced");
            assert!(
                said.contains(&format!("{n} of"))
                    || said.contains(&format!("all {n} values reproduced")),
                "{said}"
            );
        }
        let speed = speed_rows(&report);
        assert!(speed.len() >= 8, "{rows}");
        for r in speed {
            let v = r["verdict"].as_str().unwrap();
            assert!(v == "reproduced" || v == "inconclusive", "{rows}");
            assert_eq!(r["informational"], false, "{rows}");
        }
        // Whether some rows reproduce is not asserted: one recording and its replay on this shared
        // 2-core VM differ by up to about 25 % as a whole with the guard quiet and the speed
        // reference steady (seen 2026-12-06: the recording 18 % slower on every row), which the
        // decision rule rightly calls inconclusive. What must hold is asserted above: no row drifts
        // (a false alarm), none is for information only, and the verdict says what it settled (a
        // replay that reproduced nothing is incomplete, exit 3). Settling these rows is issue 36's
        // interleaved comparison (`ab`) and budget.
    }

    /// A real slowdown, replayed, is found where it is and nowhere else (issue 25): the bundle is
    /// recorded with the engine's `--decode-delay-ms <decode delay>` at 0 and replayed with
    /// `--set 'decode delay=N'`, a sleep in every decode step and never in a prompt's prefill.
    #[test]
    fn a_replay_with_a_slower_decode_drifts_on_decode_rows_only() {
        let _quiet = common::machine_to_myself();
        // A slowed row the load guard saw a foreign process in is inconclusive, whatever it
        // measured: on a shared VM the guard reads steal and interrupts as foreign (CI's 2-core box,
        // 2026-12-07: 43-80 % of a core, unattributed, on the decode rows of both attempts). Four
        // runs a side with a confirming session can also leave a real drift "sessions disagree" by
        // design (decode.code -52.5 % then -47.5 % on a day the same request's decode took 3.7 to
        // 13.9 ms a token). So a slowed row is drifted or held back for one of those named
        // reasons, always moved down, never reproduced; at least one slowed row drifts; and an
        // untouched row never drifts. Where no slowed row drifted, or one is inconclusive for
        // another reason (an interval across the band on a -50 % move), record and replay once
        // more and keep the attempt with more drifted rows; a wrong verdict fails at once.
        let first = replay_shared_recording(DECODE_DELAY_MS).1;
        let report = if wrong_rows(&first).is_empty() && !slowdown_found(&first) {
            eprintln!("no slowed row settled as drifted; recording and replaying once more");
            let second = record_again_and_replay(DECODE_DELAY_MS).1;
            let better = drifted_rows(&second) >= drifted_rows(&first);
            if !wrong_rows(&second).is_empty() || better {
                second
            } else {
                first
            }
        } else {
            first
        };
        let rows = serde_json::to_string_pretty(&report["comparisons"]).unwrap();
        assert_eq!(wrong_rows(&report), Vec::<String>::new(), "{rows}");
        assert!(slowdown_found(&report), "{rows}");
        for key in SLOWED {
            let r = row(&report, key);
            let (a, b) = (
                r["recorded"].as_f64().unwrap(),
                r["replayed"].as_f64().unwrap(),
            );
            assert!(b < a, "{key}: {rows}");
        }
        // The conc rows include decode too and slow down with it (-35 to -38 % in a run here), but
        // a round's rate also holds its prompts and first tokens, and at level 2 one sleep serves
        // both streams' step, so how far they move is not the decode rows' and they are not
        // asserted either way.
    }

    /// Why a slowed row may be inconclusive and the slowdown still counts as found where it is.
    const HELD_BACK: [&str; 3] = ["foreign-load", "sessions-disagree", "machine-speed"];

    /// The rows a decode delay got wrong: a slowed row reproduced, or an untouched one drifted.
    fn wrong_rows(report: &Value) -> Vec<String> {
        let slowed = SLOWED
            .iter()
            .filter(|k| row(report, k)["verdict"] == "reproduced");
        let untouched = UNTOUCHED
            .iter()
            .filter(|k| row(report, k)["verdict"] == "drifted");
        slowed.chain(untouched).map(|k| k.to_string()).collect()
    }

    /// How many slowed rows drifted.
    fn drifted_rows(report: &Value) -> usize {
        let drifted = |k: &&&str| row(report, k)["verdict"] == "drifted";
        SLOWED.iter().filter(drifted).count()
    }

    /// Whether the slowdown was found: a slowed row drifted, and every other slowed row is held
    /// back for a reason the rule names on purpose ([`HELD_BACK`]).
    fn slowdown_found(report: &Value) -> bool {
        let settled = |k: &&str| {
            let r = row(report, k);
            r["verdict"] == "drifted"
                || (r["verdict"] == "inconclusive"
                    && HELD_BACK.iter().any(|why| r["inconclusive"] == *why))
        };
        drifted_rows(report) > 0 && SLOWED.iter().all(settled)
    }
}
