//! `rigaudit replay` against a fake engine (tests/fixtures/fake_engine.py) that fails in each way
//! a real one can: exits during a step, hangs, answers HTTP 500, sends a malformed stream, cannot
//! bind its port, starts too slowly. Each is reported (exit 1: an invalid step; exit 2: nothing
//! could be measured), what was measured before the fault is kept, and no process is left behind.

use crate::common;

use common::assert_has;
use common::{
    decode_contract, fake_engine, fake_engine_card, python3, rigaudit, write_bundle, Run,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A bundle with only a card and a speed contract, whose recorded command starts the fake engine
/// copied to `script` (a path unique to the test, so its processes can be found).
fn template(dir: &Path, script: &Path) -> PathBuf {
    let b = dir.join("template");
    let card = fake_engine_card(
        script,
        &[
            "--mode",
            "<mode>",
            "--after",
            "<after>",
            "--start-delay",
            "<delay>",
        ],
        json!({}),
    );
    let contract = json!({"parts": ["decode", "prefill"], "model": "fake", "prompt_ids": ["code"],
        "runs": 3, "warmups": 0, "max_tokens": 16,
        "prefill": {"depths": [64], "runs": 3, "max_tokens": 1},
        "sampling": {"temperature": 0.0}, "seed": 1, "cache_prompt": false,
        "server": {"slots": 1, "window": 4096}});
    write_bundle(&b, ("fake-template", "fake"), &card, &contract);
    b
}

struct Setup {
    tmp: tempfile::TempDir,
    script: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let script = fake_engine(tmp.path(), "fake_engine.py");
        Setup { tmp, script }
    }

    fn replay(&self, bundle: &Path, out: &str, sets: &[&str], extra: &[&str]) -> (Run, PathBuf) {
        let out = self.tmp.path().join(out);
        let py = python3();
        let mut args = vec![
            "replay".to_string(),
            bundle.to_str().unwrap().into(),
            "--engine".into(),
            py.to_str().unwrap().into(),
            "--trust-executable".into(),
            "--out".into(),
            out.to_str().unwrap().into(),
            "--format".into(),
            "json".into(),
            "--quiet".into(),
            "--request-timeout".into(),
            "3".into(),
        ];
        if !extra.contains(&"--ready-timeout") {
            args.extend(["--ready-timeout".to_string(), "20".to_string()]);
        }
        for s in sets {
            args.push("--set".into());
            args.push(s.to_string());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        (rigaudit(&args), out)
    }

    /// Processes whose command line names this test's copy of the fake engine.
    fn leftovers(&self) -> Vec<String> {
        let needle = self.script.to_str().unwrap();
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let zombie = std::fs::read_to_string(e.path().join("stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true);
            if cmd.contains(needle) && !zombie {
                found.push(cmd);
            }
        }
        found
    }

    /// A recorded bundle: the template replayed on the fake engine in `ok` mode.
    fn recorded(&self) -> PathBuf {
        let t = template(self.tmp.path(), &self.script);
        let (run, out) = self.replay(&t, "recorded", &["mode=ok", "after=2", "delay=0"], &[]);
        assert!(run.code == 0, "{}\n{}", run.stdout, run.stderr);
        out.join("bundle")
    }
}

fn answered(bundle: &Path) -> Vec<Value> {
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(bundle.join("speed/speed-result.json")).unwrap(),
    )
    .unwrap();
    r["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["status"] == 200)
        .cloned()
        .collect()
}

/// Runs one mid-measurement fault and checks what every such fault must give.
fn mid_run_fault(mode: &str, after: &str, says: &str) {
    let s = Setup::new();
    let rec = s.recorded();
    let (run, out) = s.replay(
        &rec,
        "faulty",
        &[
            &format!("mode={mode}"),
            &format!("after={after}"),
            "delay=0",
        ],
        // Other work on the machine is not what this test is about: a try thrown away for it
        // would take the answered requests before the fault with it.
        &["--no-load-guard"],
    );
    assert_eq!(
        run.code, 1,
        "a fault during a step is an invalid step (exit 1)\n{}\n{}",
        run.stdout, run.stderr
    );
    let failed = run.findings("replay.step-failed");
    assert!(!failed.is_empty(), "{}", run.stdout);
    assert!(
        failed
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains(says)),
        "expected '{says}' in {failed:?}"
    );
    // What was measured before the fault is in the replayed bundle, which verify still reads.
    let b = out.join("bundle");
    assert!(
        !answered(&b).is_empty(),
        "the answered requests before the fault are kept"
    );
    let v = common::verify(&b);
    assert_ne!(v.code, 2, "{}", v.stdout);
    assert!(s.leftovers().is_empty(), "left behind: {:?}", s.leftovers());
    // What the server mapped was read once it was ready; a rank gone before the end read is said.
    let report = run.json();
    assert_eq!(report["loaded"][0]["read_at"][0], "ready", "{report:#}");
    if mode == "exit-mid-stream" {
        let gone = run.findings("loaded.not-read");
        assert!(
            gone.iter().any(|f| f["severity"] == "info"
                && f["message"].as_str().unwrap().contains("had exited")),
            "{gone:#?}"
        );
    }
}

#[test]
fn a_faultless_fake_replays_as_reproduced() {
    let s = Setup::new();
    let rec = s.recorded();
    let (run, _) = s.replay(&rec, "again", &["mode=ok", "after=2", "delay=0"], &[]);
    let report = run.json();
    let rows = report["comparisons"].as_array().unwrap().clone();
    assert!(rows.iter().any(|r| r["key"] == "decode.code"));
    assert!(rows.iter().all(|r| r["verdict"] != "drifted"), "{rows:#?}");
    // A pass says how many values it reproduced; a busy machine (foreign load on every try)
    // leaves every row inconclusive, and a replay that reproduced nothing is incomplete.
    let why = report["verdict_qualifier"].as_str().unwrap_or_default();
    if rows.iter().any(|r| r["verdict"] == "reproduced") {
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert!(why.contains(" reproduced"), "{why}");
    } else {
        assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
        assert!(why.starts_with("the replay settled nothing"), "{why}");
    }
    assert!(s.leftovers().is_empty());
}

/// An engine that exits during a step, hangs, answers HTTP 500 or sends a malformed stream: each
/// an invalid step, reported, and what was measured before it kept.
#[test]
fn a_fault_mid_run_is_an_invalid_step_and_nothing_is_lost() {
    for (mode, says) in [
        ("exit-mid-stream", "exited"),
        ("hang", "no answer"),
        ("http500", "HTTP 500"),
        ("malformed-sse", "malformed"),
    ] {
        mid_run_fault(mode, "1", says);
    }
}

#[test]
fn a_port_already_taken_is_a_clear_error() {
    let s = Setup::new();
    let rec = s.recorded();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let (run, _) = s.replay(
        &rec,
        "busy",
        &["mode=ok", "after=2", "delay=0", &format!("port={port}")],
        &[],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    let says = run.stderr.to_lowercase();
    assert!(says.contains("address already in use"), "{}", run.stderr);
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn a_slow_start_past_the_timeout_is_a_clear_error() {
    let s = Setup::new();
    let rec = s.recorded();
    let (run, _) = s.replay(
        &rec,
        "slow",
        &["mode=slow-start", "after=2", "delay=60"],
        &["--ready-timeout", "2"],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("2") && run.stderr.to_lowercase().contains("ready")
            || run.stderr.to_lowercase().contains("timed out")
            || run.stderr.to_lowercase().contains("did not answer"),
        "{}",
        run.stderr
    );
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn an_unfilled_placeholder_and_an_unverified_executable_are_refused() {
    let s = Setup::new();
    let t = template(s.tmp.path(), &s.script);
    // No --set mode=...: the placeholder is named.
    let (run, _) = s.replay(&t, "unfilled", &["after=2", "delay=0"], &[]);
    assert_eq!(run.code, 2);
    run.assert_stderr_has("<mode>");
    // Without --trust-executable, python3 does not match the card's (absent) binary digest.
    let out = s.tmp.path().join("untrusted");
    let run = rigaudit(&[
        "replay",
        t.to_str().unwrap(),
        "--engine",
        python3().to_str().unwrap(),
        "--set",
        "mode=ok",
        "--set",
        "after=2",
        "--set",
        "delay=0",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    run.assert_exit_saying(2, "--trust-executable");
    assert!(s.leftovers().is_empty());
}

/// SIGTERM while the engine loads, with nobody reading the replay's stderr any more (a CI job
/// cancelled, a pipe closed): the handler's messages cannot be written, and the replay still
/// exits 130 at once and leaves no engine. (Its `eprintln!` once panicked on EPIPE and left the
/// replay waiting for an exit that never came.)
#[test]
fn sigterm_with_stderr_closed_still_ends_the_replay_and_the_engine() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let s = Setup::new();
    let t = template(s.tmp.path(), &s.script);
    let py = python3();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args([
            "replay",
            t.to_str().unwrap(),
            "--engine",
            py.to_str().unwrap(),
        ])
        .args(["--trust-executable", "--quiet", "--ready-timeout", "120"])
        .args(["--out", s.tmp.path().join("out").to_str().unwrap()])
        .args([
            "--set",
            "mode=slow-start",
            "--set",
            "after=2",
            "--set",
            "delay=60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while s.leftovers().is_empty() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!s.leftovers().is_empty(), "the engine started");
    drop(child.stderr.take());
    // SAFETY: kill(2) on the replay this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = status.expect("the replay ended within 20 s of SIGTERM");
    assert_eq!(status.code(), Some(130));
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

/// The seed page's one deviation, replayed: the card records NCCL 2.30.7 (another file's digest)
/// and the rank's LD_LIBRARY_PATH puts the PyPI wheel's NCCL 2.32.3 in front, which the server
/// (the fake engine with `--load-library libnccl.so.2`, dlopen by name as engines do) loads. The
/// inventory lists that library hashed with its version; `loaded.nccl` names both files and the
/// variable; the statement of what ran is written beside the in-toto attestation.
#[test]
fn a_swapped_nccl_is_named_with_the_variable_that_put_it_there() {
    let Some(lib) = common::real_nccl() else {
        return;
    };
    let s = Setup::new();
    let b = s.tmp.path().join("swapped");
    let mut card = fake_engine_card(
        &s.script,
        &["--load-library", "libnccl.so.2"],
        json!({"LD_LIBRARY_PATH": "<nccl folder>"}),
    );
    card["nccl"] = json!({"version": "2.30.7", "file": "libnccl.so.2.30.7",
        "per_box": [{"box": "local", "sha256": "fc7ea66300000000000000000000000000000000000000000000000000000000"}]});
    write_bundle(&b, ("fake-swapped", "fake"), &card, &decode_contract(2, 8));
    let folder = lib.parent().unwrap().canonicalize().unwrap();
    let attestation = s.tmp.path().join("replay.intoto.json");
    let (run, _) = s.replay(
        &b,
        "swapped-out",
        &[&format!("nccl folder={}", folder.display())],
        &["--output", attestation.to_str().unwrap()],
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report = run.json();
    let rank = &report["loaded"][0];
    assert_eq!(rank["read_at"], json!(["ready", "end"]), "{rank:#}");
    let objects = rank["objects"].as_array().unwrap();
    let nccl = objects
        .iter()
        .find(|o| o["path"].as_str().unwrap().ends_with("/libnccl.so.2"))
        .unwrap_or_else(|| panic!("no libnccl in {objects:#?}"));
    assert_eq!(nccl["sha256"], common::sha_file(&lib));
    assert_eq!(nccl["version"], "NCCL 2.32.3");
    assert!(objects
        .iter()
        .any(|o| o["role"] == "executable" && o["sha256"].is_string()));
    let found = run.findings("loaded.nccl");
    assert_eq!(found.len(), 1, "{found:#?}");
    let m = found[0]["message"].as_str().unwrap();
    for part in [
        format!("{}/libnccl.so.2", folder.display()),
        "NCCL 2.32.3".into(),
        "libnccl.so.2.30.7".into(),
        format!("LD_LIBRARY_PATH={}", folder.display()),
    ] {
        assert!(m.contains(&part), "{part} not in {m}");
    }
    let statement: Value = serde_json::from_str(
        &std::fs::read_to_string(s.tmp.path().join("replay.loaded.intoto.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        statement["predicateType"],
        "https://rigaudit.dev/attestation/loaded/v0.1"
    );
    let subject = statement["subject"].as_array().unwrap();
    assert!(subject
        .iter()
        .any(|x| x["digest"]["sha256"] == common::sha_file(&lib)));
    assert!(s.leftovers().is_empty());
}

/// The tests whose verdicts need the machine to themselves: `scripts/test.sh` runs every
/// `quiet` module after the rest of the suite, one test at a time.
mod quiet {
    use super::*;

    /// `--runs auto`: recorded on a steady fake engine, replayed on one whose runs spread by a seeded
    /// 70 % (log scale), judged within a ±25 % band with no session term: 16 runs leave the interval
    /// across the band, so the replay adds runs of decode in rounds of their own sessions (the
    /// record's 16 stay as they are), within the budget; the note says each step's runs and why it
    /// got no more, and the rows count the pooled runs. With a budget the first session already
    /// spent, no round runs. Quiet: how far the replayed rate sits from the band's edge moves with how
    /// late the fake engine's sleeps wake, so beside other tests the first session has come out beyond
    /// what runs can settle (2026-12-07: "no number of runs settles it at this spread") instead of
    /// stopped by the budget.
    #[test]
    fn runs_auto_adds_runs_where_the_spread_needs_them_within_the_budget() {
        let _quiet = common::machine_to_myself();
        let s = Setup::new();
        let t = s.tmp.path().join("jitter");
        let card = fake_engine_card(
            &s.script,
            &["--token-delay", "0.01", "--jitter", "<jitter>"],
            json!({}),
        );
        write_bundle(&t, ("fake-jitter", "fake"), &card, &decode_contract(16, 8));
        // Other work on the machine is not what this test is about: no foreign-load guard.
        let (run, rec) = s.replay(&t, "recorded", &["jitter=0"], &["--no-load-guard"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let rec = rec.join("bundle");
        let policy = s.tmp.path().join("band.toml");
        std::fs::write(
            &policy,
            "[decide]\nsetting = \"dedicated\"\ndecode = { band = 0.25, session_sd = 0.0 }\n",
        )
        .unwrap();
        let p = policy.to_str().unwrap();
        let auto = |out: &str, budget: &str| {
            let extra = [
                "--runs",
                "auto",
                "--budget",
                budget,
                "--policy",
                p,
                "--confirm",
                "false",
                "--no-load-guard",
            ];
            let (run, dir) = s.replay(&rec, out, &["jitter=0.7"], &extra);
            assert_ne!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
            let notes = run.findings("replay.note");
            let note = notes
                .iter()
                .filter_map(|f| f["message"].as_str())
                .find(|m| m.starts_with("--runs auto ("))
                .unwrap_or_else(|| panic!("no --runs auto note in {notes:?}"))
                .to_string();
            let r = run.json();
            let row = common::entry(&r, "comparisons", "key", "decode.code").clone();
            (row, note, dir)
        };
        let (row, note, dir) = auto("auto", "120s");
        let n = row["n_replayed"].as_u64().unwrap();
        assert!(n > 16, "decode.code got no more runs: {note}\n{row}");
        assert!(dir.join("more-1/bundle").is_dir(), "{note}");
        assert_has(&note, &format!("decode.code {n} ("));
        assert_eq!(row["n_recorded"], 16, "{row}");
        eprintln!("{note}\n{row}");
        // A budget the first session already spent: no round, the first session's 16 runs.
        let (row, note, dir) = auto("spent", "1s");
        assert!(!dir.join("more-1").exists(), "{note}");
        assert_eq!(row["n_replayed"], 16, "{row}");
        assert_has(&note, "stopped by the budget");
        assert_has(&note, "decode.code 16 (budget: about ");
        assert!(s.leftovers().is_empty());
    }
}
