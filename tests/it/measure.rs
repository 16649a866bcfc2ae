//! `rigaudit measure` against a fake OpenAI-compatible server on loopback: it writes a bundle that
//! `verify` accepts, times what it should, records refusals and never sends what cannot fit.

use crate::common;

use common::assert_has;
use common::fake_server::{Fake, Mode};
use common::{fake_nvml, rigaudit, rigaudit_line, rigaudit_with_env, verify};
use serde_json::{json, Value};

fn contract(dir: &std::path::Path, window: u64) -> std::path::PathBuf {
    let c = json!({"parts": ["decode", "prefill", "conc", "l1", "ctx"], "model": "fake", "prompt_ids": ["code", "prose"],
        "runs": 2, "warmups": 1, "max_tokens": 16,
        "prefill": {"depths": [64, 100000], "runs": 2, "max_tokens": 1},
        "conc": {"levels": [1, 2, 4], "rounds": 2, "max_tokens": 8, "prompt": "prose"},
        "ctx": {"depths": [128, 100000], "runs": 1, "max_tokens": 8},
        "l1": {"max_tokens": 100000},
        "sampling": {"temperature": 0.0}, "seed": 42, "enable_thinking": false, "cache_prompt": false,
        "server": {"slots": 4, "window": window}, "load_guard": null});
    let p = dir.join("contract.json");
    std::fs::write(&p, c.to_string()).unwrap();
    p
}

fn measure(fake: &Fake, dir: &std::path::Path) -> (common::Run, std::path::PathBuf) {
    let out = dir.join("bundle");
    let c = contract(dir, fake.window);
    // These tests are about what is measured, not about foreign load (see the guard's tests).
    let line = "measure --base-url {} --contract {} --out {} --timeout 30 --no-load-guard";
    let run = rigaudit_line(
        line,
        &[&fake.base(), c.to_str().unwrap(), out.to_str().unwrap()],
    );
    (run, out)
}

fn result(out: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("speed/speed-result.json")).unwrap())
        .unwrap()
}

/// The counted requests' steps in the order sent, named `<step>/<what>/<run or round>`.
fn counted_steps(reqs: &[Value]) -> Vec<String> {
    let name = |q: &Value| {
        let n = q["run"].as_u64().or(q["round"].as_u64()).unwrap();
        let what = match q["step"].as_str().unwrap() {
            "decode" => q["prompt_id"].as_str().unwrap().to_string(),
            "conc" => q["level"].to_string(),
            _ => q["depth"].to_string(),
        };
        format!("{}/{what}/{n}", q["step"].as_str().unwrap())
    };
    reqs.iter()
        .filter(|q| q["warmup"] != true)
        .map(name)
        .collect()
}

/// Decode as timed against the good fake (30 ms to the first text chunk, then 4 ms a token).
fn assert_decode_timed_as_the_fake_paces(r: &Value) {
    let reqs = r["requests"].as_array().unwrap();
    // TTFT is the first text chunk, after the fake's 30 ms delay (a role-only chunk comes at once).
    for q in reqs.iter().filter(|q| q["step"] == "decode") {
        let ttft = q["first_token_s"].as_f64().unwrap() - q["sent_s"].as_f64().unwrap();
        assert!(ttft >= 0.029, "ttft {ttft}");
        assert_eq!(q["completion_tokens_source"], "usage");
        assert_eq!(q["finish_reason"], "length");
    }
    // The fake paces 4 ms a token: the decode rate cannot be above 250 tok/s.
    let decode = r["values"]["decode"].as_f64().unwrap();
    assert!(decode > 0.0 && decode <= 250.0 * 1.02, "{decode}");
}

#[test]
fn measures_a_server_and_writes_a_bundle_verify_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 30, 4, Mode::Good);
    let (run, out) = measure(&fake, tmp.path());
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let v = verify(&out);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        !v.has("speed.recompute-mismatch") && !v.has("speed.cached-tokens"),
        "{}",
        v.stdout
    );
    let r = result(&out);
    let reqs = r["requests"].as_array().unwrap();
    // 1 warm-up + 4 decode, 2 prefill at 64, 2 x (1 + 2 + 4) conc, 1 ctx at 128; nothing too large sent.
    assert_eq!(reqs.iter().filter(|q| q["step"] == "decode").count(), 5);
    assert_eq!(reqs.iter().filter(|q| q["step"] == "conc").count(), 14);
    assert_eq!(reqs.iter().filter(|q| q["step"] == "ctx").count(), 1);
    assert!(reqs.iter().all(|q| q["status"] == 200), "{reqs:?}");
    assert!(!reqs.iter().any(|q| q["depth"] == 100000));
    // Counted tries go in rounds: every step's first run, then every step's second (a step's
    // runs back to back would sample one moment of the machine).
    let counted = counted_steps(reqs);
    let mut seen = counted.clone();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "decode/code/1",
            "decode/prose/1",
            "prefill/64/1",
            "conc/1/1",
            "conc/2/1",
            "conc/4/1",
            "ctx/128/1",
            "decode/code/2",
            "decode/prose/2",
            "prefill/64/2",
            "conc/1/2",
            "conc/2/2",
            "conc/4/2"
        ],
        "{counted:?}"
    );
    let fits = r["fits"].as_array().unwrap();
    assert!(fits.iter().any(|f| f["part"] == "ctx"
        && f["depth"] == 100000
        && f["fits"] == false
        && f["sent"] == false));
    assert!(fits.iter().any(|f| f["part"] == "l1" && f["sent"] == false));
    // The prefill prompt was sized to exactly 64 tokens as the server counts them.
    assert!(
        reqs.iter()
            .filter(|q| q["step"] == "prefill")
            .all(|q| q["prompt_tokens"] == 64),
        "{reqs:?}"
    );
    assert_decode_timed_as_the_fake_paces(&r);
    // Draft counters come from /metrics deltas (the fake's counters do not move).
    assert!(r["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["drafted"] == 0));
}

#[test]
fn refusals_and_failures_are_recorded_not_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 1, 1, Mode::Error500);
    let (run, out) = measure(&fake, tmp.path());
    assert_eq!(
        run.code, 2,
        "the prompt cannot be sized when every completion fails: {}",
        run.stderr
    );
    assert!(run.stderr.contains("HTTP 500"), "{}", run.stderr);
    // What was measured before the failure is kept.
    let r = result(&out);
    assert!(r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["step"] == "decode")
        .all(|q| q["status"] == 500 && q["error"] == "boom"));
    let v = verify(&out);
    assert!(v.has("speed.failed-request"), "{}", v.stdout);
}

#[test]
fn malformed_stream_and_cached_tokens_are_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 1, 1, Mode::MalformedSse);
    let (_run, out) = measure(&fake, tmp.path());
    let r = result(&out);
    assert!(r["requests"].as_array().unwrap().iter().any(|q| q["error"]
        .as_str()
        .is_some_and(|e| e.contains("malformed SSE"))));
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 1, 1, Mode::Cached);
    let (run, out) = measure(&fake, tmp.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(verify(&out).has("speed.cached-tokens"));
}

#[test]
fn a_server_that_is_not_there_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let c = contract(tmp.path(), 4096);
    let run = rigaudit(&[
        "measure",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--contract",
        c.to_str().unwrap(),
        "--out",
        tmp.path().join("o").to_str().unwrap(),
        "--timeout",
        "5",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("/models"), "{}", run.stderr);
}

/// A CPU hog: another process spinning a core until dropped (or any detached pid to kill when
/// dropped: the GPU tests' sleeper). It is started detached (its parent
/// exits at once), because the fake server lives in this test's process and the guard counts the
/// server's children as the server.
struct Hog(u32);

impl Hog {
    fn start() -> Hog {
        let out = std::process::Command::new("sh")
            .args(["-c", "(while :; do :; done) >/dev/null 2>&1 & echo $!"])
            .output()
            .unwrap();
        Hog(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &self.0.to_string()])
            .status();
    }
}

#[test]
fn a_cpu_hog_beside_the_server_throws_tries_away_and_the_guard_rows_show_it() {
    let tmp = tempfile::tempdir().unwrap();
    // 30 tokens at 20 ms: each try lasts about 0.6 s, three samples at 0.2 s.
    let fake = Fake::start(4096, 5, 20, Mode::Good);
    let c = json!({"parts": ["decode"], "model": "fake", "prompt_ids": ["code"],
        "runs": 2, "warmups": 0, "max_tokens": 30, "sampling": {"temperature": 0.0},
        "server": {"slots": 4, "window": 4096},
        "load_guard": {"threshold_pct": 25.0, "consecutive": 2, "interval_s": 0.2, "max_tries": 2}});
    let cp = tmp.path().join("contract.json");
    std::fs::write(&cp, c.to_string()).unwrap();
    let out = tmp.path().join("bundle");
    let hog = Hog::start();
    let line = "measure --base-url {} --contract {} --out {} --timeout 30";
    let run = rigaudit_line(
        line,
        &[&fake.base(), cp.to_str().unwrap(), out.to_str().unwrap()],
    );
    let hog_pid = hog.0;
    drop(hog);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = result(&out);
    let g = &r["load_guard"];
    assert_eq!(g["rule"]["max_tries"], 2);
    assert!(g["samples"].as_u64().unwrap() >= 4, "{g}");
    let rows = g["steps"].as_array().unwrap();
    for step in ["decode/code/1", "decode/code/2"] {
        let tries: Vec<&Value> = rows.iter().filter(|s| s["step"] == step).collect();
        assert_eq!(tries.len(), 2, "{step}: {g:#}");
        assert_eq!(tries[0]["try"], 1);
        assert_eq!(tries[0]["kept"], false, "{g:#}");
        assert!(tries[0]["longest_run_over"].as_u64().unwrap() >= 2, "{g:#}");
        // No try left: the second is kept, and its row shows the load it ran under.
        assert_eq!(tries[1]["kept"], true, "{g:#}");
        assert!(tries[1]["longest_run_over"].as_u64().unwrap() >= 2, "{g:#}");
    }
    // Every thrown-away try names what it was thrown away for, and the hog is among it (a
    // program: the shells of the test run add up with it). On a machine loaded by more than the
    // hog, a try may be thrown away for other load in a moment the hog got less than its share.
    let hog = hog_pid.to_string();
    let thrown: Vec<&Value> = rows.iter().filter(|s| s["kept"] == false).collect();
    assert!(
        thrown.iter().all(|s| s["over_processes"]
            .as_array()
            .is_some_and(|o| !o.is_empty())),
        "{g:#}"
    );
    assert!(
        thrown.iter().any(|s| s["over_processes"]
            .as_array()
            .is_some_and(|o| o.iter().any(|p| {
                let p = p.as_str().unwrap();
                p.starts_with("sh (pid") && p.contains(&hog)
            }))),
        "{g:#}"
    );
    // Thrown-away tries leave no records: one request per counted run.
    let decode = r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["step"] == "decode")
        .count();
    assert_eq!(decode, 2);
    let log = std::fs::read_to_string(out.join("speed/log.txt")).unwrap();
    assert_has(&log, "decode/code/1 try 1 thrown away");
    // verify names the tries kept under load.
    let v = verify(&out);
    assert_eq!(v.code, 1, "{}", v.stdout);
    v.assert_has_at("speed.load-guard", "error");
}

#[test]
fn without_the_guard_nothing_is_recorded_and_the_log_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 1, 1, Mode::Good);
    let (run, out) = measure(&fake, tmp.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(result(&out)["load_guard"].is_null());
    let log = std::fs::read_to_string(out.join("speed/log.txt")).unwrap();
    assert_has(&log, "load guard: off");
    // Without NVML (no GPU here) no GPU facts, and the log says so quietly; with it, its facts.
    if log.contains("gpu: none read (no NVML") {
        assert!(result(&out)["gpu"].is_null());
        assert!(!run.stderr.contains("NVML"), "{}", run.stderr);
    } else {
        assert!(result(&out)["gpu"]["name"].is_string(), "{log}");
    }
}

/// `measure` of a two-run decode against the server at `base` with the fake NVML (`env`: its answers) and the
/// guard's `rule`; the run, the speed result and the log.
fn measure_with_nvml(
    base: &str,
    dir: &std::path::Path,
    rule: Value,
    env: &[(&str, &str)],
) -> (common::Run, Value, String) {
    let c = json!({"parts": ["decode"], "model": "fake", "prompt_ids": ["code"],
        "runs": 2, "warmups": 0, "max_tokens": 30, "sampling": {"temperature": 0.0},
        "server": {"slots": 4, "window": 4096}, "load_guard": rule});
    let cp = dir.join("contract.json");
    std::fs::write(&cp, c.to_string()).unwrap();
    let out = dir.join("bundle");
    let libdir = std::fs::create_dir_all(dir.join("nvml"))
        .map(|_| fake_nvml(&dir.join("nvml")))
        .unwrap();
    let mut vars: Vec<(&str, &std::path::Path)> = vec![("LD_LIBRARY_PATH", &libdir)];
    vars.extend(env.iter().map(|(k, v)| (*k, std::path::Path::new(v))));
    let args = common::argv(
        "measure --base-url {} --contract {} --out {} --timeout 30",
        &[base, cp.to_str().unwrap(), out.to_str().unwrap()],
    );
    let run = rigaudit_with_env(&args, &vars);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let log = std::fs::read_to_string(out.join("speed/log.txt")).unwrap();
    (run, result(&out), log)
}

/// A rule no CPU load on a busy test machine breaks: only the GPU can disturb a try.
fn gpu_only_rule() -> Value {
    json!({"threshold_pct": 100.0, "consecutive": 1000, "interval_s": 0.2, "max_tries": 2})
}

#[test]
fn gpu_facts_through_nvml_are_recorded_per_counted_try() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 5, 2, Mode::Good);
    // The fake server runs in this test's process: its pid on the GPU is the server's.
    let me = format!("{}:1048576", std::process::id());
    let env = [
        ("FAKE_NVML_PROCESSES", me.as_str()),
        ("FAKE_NVML_THROTTLE", "0x5"),
    ];
    let (_, r, log) = measure_with_nvml(&fake.base(), tmp.path(), gpu_only_rule(), &env);
    assert_has(
        &log,
        "gpu: device 0 (Fake NVML GPU, driver 999.99-fake) read through NVML",
    );
    let g = &r["gpu"];
    assert_eq!(g["name"], "Fake NVML GPU", "{g:#}");
    assert_eq!(g["driver"], "999.99-fake");
    assert_eq!(g["memory_total_bytes"], 80u64 << 30);
    assert_eq!(g["memory_used_bytes"], 3u64 << 30);
    assert_eq!(
        (g["clock_sm_mhz"].clone(), g["clock_mem_mhz"].clone()),
        (json!(1980), json!(2619))
    );
    assert_eq!(g["power_w"], 312.0);
    let steps = g["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(names, ["decode/code/1", "decode/code/2"], "{g:#}");
    for s in steps {
        // The counter is read at the try's start and end, 1500 mJ apart in the fake.
        assert_eq!(s["energy_j"], 1.5, "{s}");
        assert_eq!(s["completion_tokens"], 30, "{s}");
        assert_eq!(s["energy_j_per_token"], 0.05, "{s}");
        assert_eq!(
            s["throttle_reasons"],
            json!(["gpu_idle", "sw_power_cap"]),
            "{s}"
        );
        assert_eq!(s["foreign_processes"], json!([]), "{s}");
        assert_eq!(
            (s["try"].clone(), s["kept"].clone()),
            (json!(1), json!(true)),
            "{s}"
        );
    }
    // Only the server on the GPU: nothing foreign, no try thrown away.
    let rows = r["load_guard"]["steps"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|s| s["gpu_processes"].is_null() && s["kept"] == true),
        "{rows:?}"
    );
    assert!(!log.contains("thrown away"), "{log}");
    let v = verify(&tmp.path().join("bundle"));
    assert!(
        !v.has("schema.invalid") && !v.has("speed.load-guard"),
        "{}",
        v.stdout
    );
    v.assert_lacks("speed.gpu-foreign");
    // 0x5: idle and a software power cap; the cap is named.
    v.assert_has_at("speed.gpu-throttled", "warning");
    assert!(
        v.findings("speed.gpu-throttled")[0]["message"]
            .as_str()
            .unwrap()
            .contains("(sw_power_cap)"),
        "{}",
        v.stdout
    );
}

#[test]
fn a_foreign_process_on_the_gpu_is_foreign_load_and_the_guard_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 5, 2, Mode::Good);
    // A process of no one's: started detached, so it is not a child of this test (the server).
    let out = std::process::Command::new("sh")
        .args(["-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let sleep: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let sleeper = Hog(sleep); // killed when dropped, whatever the test's end
    let procs = format!("{}:1048576,{sleep}:2097152", std::process::id());
    let env = [("FAKE_NVML_PROCESSES", procs.as_str())];
    let (_, r, log) = measure_with_nvml(&fake.base(), tmp.path(), gpu_only_rule(), &env);
    drop(sleeper);
    let named = format!("pid {sleep} (sleep) on the GPU");
    assert_has(
        &log,
        &format!("load guard: decode/code/1 try 1 thrown away ({named}); repeating"),
    );
    assert_has(
        &log,
        &format!("decode/code/2 try 2 kept under foreign load ({named})"),
    );
    let rows = r["load_guard"]["steps"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (row, kept) in rows.iter().zip([false, true, false, true]) {
        assert_eq!(row["gpu_processes"], json!([named]), "{row}");
        assert_eq!(row["kept"], kept, "{row}");
    }
    let gpu = r["gpu"]["steps"].as_array().unwrap();
    let kept: Vec<bool> = gpu.iter().map(|s| s["kept"].as_bool().unwrap()).collect();
    assert_eq!(kept, [false, true, false, true], "{gpu:?}");
    assert!(
        gpu.iter().all(|s| s["foreign_processes"] == json!([named])),
        "{gpu:?}"
    );
    // Thrown-away tries leave no records: one request per counted run.
    assert_eq!(r["requests"].as_array().unwrap().len(), 2);
    // verify names the kept tries beside it; the schema takes the new rows.
    let v = verify(&tmp.path().join("bundle"));
    assert!(!v.has("schema.invalid"), "{}", v.stdout);
    v.assert_has_at("speed.gpu-foreign", "warning");
    v.assert_lacks("speed.gpu-throttled");
}

#[test]
fn a_gpu_asked_for_by_index_that_nvml_does_not_have_stops_measure() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = Fake::start(4096, 1, 1, Mode::Good);
    let c = contract(tmp.path(), fake.window);
    let libdir = fake_nvml(tmp.path());
    let out = tmp.path().join("bundle");
    let line = "measure --base-url {} --contract {} --out {} --no-load-guard --gpu 3";
    let args = common::argv(
        line,
        &[&fake.base(), c.to_str().unwrap(), out.to_str().unwrap()],
    );
    let run = rigaudit_with_env(&args, &[("LD_LIBRARY_PATH", &libdir)]);
    run.assert_exit_saying(2, "--gpu 3: nvmlDeviceGetHandleByIndex_v2: NVML error 2");
    let bad = rigaudit_line(
        "measure --base-url {} --contract {} --out {} --gpu first",
        &[&fake.base(), c.to_str().unwrap(), out.to_str().unwrap()],
    );
    bad.assert_exit_saying(2, "expected auto, off or a device index");
}

/// The tests' fake engine (tests/fixtures/fake_engine.py) serving on a free loopback port, killed
/// when dropped: a server in a process of its own.
struct Engine(std::process::Child, u16);

impl Engine {
    fn start(dir: &std::path::Path) -> Engine {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = common::fake_engine(dir, "gpu_engine.py");
        let child = std::process::Command::new("python3")
            .arg(&script)
            .args(["--port", &port.to_string(), "--mode", "ok"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("python3");
        let up = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                up.elapsed().as_secs() < 20,
                "the fake engine did not listen"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Engine(child, port)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_server_s_process_on_the_gpu_is_the_server_not_foreign_load() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = Engine::start(tmp.path());
    // Only the engine on the GPU: found as the owner of the port measured, it is not foreign.
    let procs = format!("{}:4294967296", engine.0.id());
    let env = [("FAKE_NVML_PROCESSES", procs.as_str())];
    let base = format!("http://127.0.0.1:{}/v1", engine.1);
    let (_, r, log) = measure_with_nvml(&base, tmp.path(), gpu_only_rule(), &env);
    assert_has(&log, "gpu: device 0 (Fake NVML GPU");
    let steps = r["gpu"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(
        steps
            .iter()
            .all(|s| s["kept"] == true && s["foreign_processes"] == json!([])),
        "{steps:?}"
    );
    let rows = r["load_guard"]["steps"].as_array().unwrap();
    assert!(
        rows.iter().all(|s| s["gpu_processes"].is_null()),
        "{rows:?}"
    );
    assert!(!log.contains("thrown away"), "{log}");
}

/// Steers the fake NVML through its steering file: for every completion request the fake server
/// receives, `lines` are in the file from `from` to `to` after the request began, and out of it
/// otherwise (each write a rename, so NVML never reads half a file). Stops when dropped.
struct Steer(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Option<std::thread::JoinHandle<()>>,
);

impl Steer {
    fn start(fake: &Fake, file: &std::path::Path, lines: String, window_ms: (u64, u64)) -> Steer {
        use std::sync::atomic::Ordering;
        let put = |path: &std::path::Path, text: &str| {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, path).unwrap();
        };
        put(file, "");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop2, seen, file) = (stop.clone(), fake.requests.clone(), file.to_path_buf());
        let ms = std::time::Duration::from_millis;
        let thread = std::thread::spawn(move || {
            let mut handled = 0;
            while !stop2.load(Ordering::Relaxed) {
                if seen.load(Ordering::Relaxed) > handled {
                    handled = seen.load(Ordering::Relaxed);
                    std::thread::sleep(ms(window_ms.0));
                    put(&file, &lines);
                    std::thread::sleep(ms(window_ms.1 - window_ms.0));
                    put(&file, "");
                }
                std::thread::sleep(ms(2));
            }
        });
        Steer(stop, Some(thread))
    }
}

impl Drop for Steer {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_gpu_process_or_throttle_only_in_the_middle_of_a_try_is_seen() {
    let tmp = tempfile::tempdir().unwrap();
    // 30 tokens at 20 ms: a try of 0.6 s; NVML shows the sleeper, a thermal slowdown and a low SM
    // clock only from 150 to 400 ms into each request: never at a try's start or end.
    let fake = Fake::start(4096, 5, 20, Mode::Good);
    let out = std::process::Command::new("sh")
        .args(["-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
        .output()
        .unwrap();
    let sleep: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let sleeper = Hog(sleep);
    let file = tmp.path().join("steer");
    let lines = format!(
        "FAKE_NVML_PROCESSES={}:1048576,{sleep}:2097152\nFAKE_NVML_THROTTLE=0x20\nFAKE_NVML_SM_MHZ=1200\n",
        std::process::id()
    );
    let steer = Steer::start(&fake, &file, lines, (150, 400));
    let me = format!("{}:1048576", std::process::id());
    let env = [
        ("FAKE_NVML_STEER", file.to_str().unwrap()),
        ("FAKE_NVML_PROCESSES", me.as_str()),
    ];
    let (_, r, log) = measure_with_nvml(&fake.base(), tmp.path(), gpu_only_rule(), &env);
    drop((steer, sleeper));
    let named = format!("pid {sleep} (sleep) on the GPU");
    assert_has(
        &log,
        &format!("load guard: decode/code/1 try 1 thrown away ({named}); repeating"),
    );
    let rows = r["load_guard"]["steps"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (row, kept) in rows.iter().zip([false, true, false, true]) {
        assert_eq!(row["gpu_processes"], json!([named]), "{row}");
        assert_eq!(row["kept"], kept, "{row}");
    }
    for s in r["gpu"]["steps"].as_array().unwrap() {
        assert_eq!(s["throttle_reasons"], json!(["sw_thermal_slowdown"]), "{s}");
        assert_eq!(s["clock_sm_min_mhz"], 1200, "{s}");
        assert_eq!(s["clock_sm_max_mhz"], 1980, "{s}");
        // Read at the end, outside the window.
        assert_eq!(s["clock_sm_mhz"], 1980, "{s}");
        assert!(s["samples"].as_u64().unwrap() >= 5, "{s}");
    }
    let v = verify(&tmp.path().join("bundle"));
    assert!(!v.has("schema.invalid"), "{}", v.stdout);
    v.assert_has_at("speed.gpu-throttled", "warning");
}
