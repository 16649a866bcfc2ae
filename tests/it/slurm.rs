//! `rigaudit replay --slurm`: ranks as steps of one allocation on a real two-node Slurm (Debian's
//! slurm-wlm, nodes n1 and n2 on this machine), started once for this test binary by
//! `scripts/slurm-cluster.sh` in a state folder of its own. A test that cannot start the cluster
//! prints why and returns (set `RIGAUDIT_REQUIRE_SLURM=1` to make that a failure). The tests of
//! one cluster take turns (a lock per cluster): each looks at its cluster's whole queue. The test
//! that waits out a job's time limit (a minute or more) runs on the `linuxproc` cluster (its ranks
//! detach nothing, so the tracking does not bear on it) with the one test that needs that
//! cluster, so the tests of the main cluster do not wait for it where that cluster uses cgroup.
//!
//! The fake engine (tests/fixtures/fake_engine.py, a copy whose `--argv-file` records the whole
//! environment) writes its argv and environment to a file.

use crate::common;

use common::assert_has;
use common::ranks::TwoRanks;
use common::{assert_any, root, sha_file, Run};
use common::{decode_contract, python3_executable as python3, rigaudit, rigaudit_with_env};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// The state folders of the clusters this test binary started.
static STATE_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Cancels the test clusters' jobs and stops their daemons, when the test binary ends.
extern "C" fn stop_clusters() {
    let dirs = STATE_DIRS.lock().map(|d| d.clone()).unwrap_or_default();
    for dir in dirs {
        let _ = Command::new("bash")
            .arg(root().join("scripts/slurm-cluster.sh"))
            .arg("stop")
            .env("RIGAUDIT_SLURM_DIR", &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

type Cluster = Result<(PathBuf, PathBuf), String>;

/// Starts a cluster with process tracking `tracking` (`auto`: cgroup where this machine allows
/// it) on `port`: its state folder and `SLURM_CONF`, or why it could not start.
fn start_cluster(tracking: &str, port: u16) -> Cluster {
    let dir = std::env::temp_dir().join(format!(
        "rigaudit-slurm-test-{}-{tracking}",
        std::process::id()
    ));
    let t0 = Instant::now();
    let out = Command::new("bash")
        .arg(root().join("scripts/slurm-cluster.sh"))
        .arg("start")
        .env("RIGAUDIT_SLURM_DIR", &dir)
        .env("RIGAUDIT_SLURM_PORT", port.to_string())
        .env("RIGAUDIT_SLURM_PROCTRACK", tracking)
        .output()
        .map_err(|e| format!("cannot run scripts/slurm-cluster.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "scripts/slurm-cluster.sh start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!(
        "slurm cluster ({tracking}) started in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    static AT_EXIT: OnceLock<()> = OnceLock::new();
    AT_EXIT.get_or_init(|| {
        // SAFETY: atexit takes a plain function; the harness ends with exit(3), which runs it.
        unsafe {
            libc::atexit(stop_clusters);
        }
    });
    STATE_DIRS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(dir.clone());
    Ok((dir.clone(), dir.join("slurm.conf")))
}

fn test_port() -> u16 {
    std::env::var("RIGAUDIT_SLURM_TEST_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(16917)
}

/// The tests' cluster: cgroup tracking where this machine allows it, else linuxproc.
fn cluster() -> Result<&'static (PathBuf, PathBuf), String> {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER
        .get_or_init(|| start_cluster("auto", test_port()))
        .as_ref()
        .map_err(Clone::clone)
}

/// A cluster with `proctrack/linuxproc` (the tests' own when cgroup is not possible here).
fn linuxproc_cluster() -> Result<&'static (PathBuf, PathBuf), String> {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    if let Ok((_, conf)) = cluster() {
        if tracking_of(conf) == "proctrack/linuxproc" {
            return cluster();
        }
    }
    CLUSTER
        .get_or_init(|| start_cluster("linuxproc", test_port() + 10))
        .as_ref()
        .map_err(Clone::clone)
}

/// The cluster's `ProctrackType`.
fn tracking_of(conf: &Path) -> String {
    let out = Command::new("scontrol")
        .args(["show", "config"])
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "ProctrackType").then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// The cluster's `SLURM_CONF` and this test's turn, or `None` after printing why it is skipped.
fn slurm_or_skip(test: &str) -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    slurm_or_skip_on(test, cluster)
}

/// [`slurm_or_skip`] on the cluster `which` starts.
fn slurm_or_skip_on(
    test: &str,
    which: fn() -> Result<&'static (PathBuf, PathBuf), String>,
) -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    match which() {
        Ok((_, conf)) => Some((conf.clone(), turn_on(conf))),
        Err(why) => {
            if std::env::var_os("RIGAUDIT_REQUIRE_SLURM").is_some() {
                panic!("{test}: {why}");
            }
            println!("SKIPPED {test}: {why}");
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// A turn on the cluster whose `SLURM_CONF` is `conf`: one lock per cluster (two names of one
/// cluster, as `linuxproc_cluster` may give, share it).
fn turn_on(conf: &Path) -> MutexGuard<'static, ()> {
    static TURNS: Mutex<Vec<(PathBuf, &'static Mutex<()>)>> = Mutex::new(Vec::new());
    let lock = {
        let mut turns = TURNS.lock().unwrap_or_else(|p| p.into_inner());
        match turns.iter().find(|(c, _)| c == conf) {
            Some((_, lock)) => *lock,
            None => {
                let lock: &'static Mutex<()> = Box::leak(Box::new(Mutex::new(())));
                turns.push((conf.to_path_buf(), lock));
                lock
            }
        }
    };
    lock.lock().unwrap_or_else(|p| p.into_inner())
}

/// Rank 1's recorded environment (placeholders filled by `--set`).
fn rank1_env() -> Value {
    json!({"FAKE_NOTE": "$(id); it's \"q\"\nline2 ✓", "FAKE_BOX": "second",
           "FAKE_PORT": "<port1>", "FAKE_ARGV_FILE": "<argv1>", "LC_ALL": "C.UTF-8",
           "FAKE_DETACH": "<detach>"})
}

/// A two-box bundle: rank 0 on box `head`, rank 1 on box `second`, both the fake engine at
/// `script` run by python3; rank 1's argv ends with [`common::odd_items`].
fn template(dir: &Path, script: &Path, odd: &[String], digest: Option<&str>) -> PathBuf {
    let b = dir.join("template");
    let card = common::two_box_card("two test nodes", script, odd, rank1_env(), digest);
    common::write_bundle(&b, ("fake-two-node", "fake"), &card, &decode_contract(3, 8));
    b
}

/// What the tests' copy of the fake engine does before it writes its argv:
/// - under PMIx with `FAKE_PMIX_ARGV` set, it prints `fake-engine: PMIx task of rank R` (R its
///   `PMIX_RANK`), its argv file is that + its `PMIX_RANK` + `.json`; a
///   rank other than 0 first reaches rank 0 (`GET /health` at `FAKE_RANK0`, up to 60 s; exit code
///   4 when it cannot), then writes its argv and waits for SIGTERM without serving;
/// - with `FAKE_DETACH=PATH`, it double-forks a child that leaves its session (`setsid`),
///   ignores SIGTERM, writes its pid to PATH and sleeps 10 minutes: a detached child that
///   outlives the rank unless the job's tracking takes it.
const PMIX_AND_DETACH: &str = r#"    rank = os.environ.get("PMIX_RANK")
    if rank is not None and os.environ.get("FAKE_PMIX_ARGV"):
        print("fake-engine: PMIx task of rank " + rank, flush=True)
        ARGS.argv_file = os.environ["FAKE_PMIX_ARGV"] + rank + ".json"
        if rank != "0":
            import urllib.request
            for _ in range(600):
                try:
                    url = "http://%s:%d/health" % (os.environ["FAKE_RANK0"], ARGS.port)
                    urllib.request.urlopen(url, timeout=1).read()
                    break
                except Exception:
                    time.sleep(0.1)
            else:
                sys.exit(4)
            write_argv(ARGS.argv_file)
            while True:
                time.sleep(1)
    if os.environ.get("FAKE_DETACH"):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                with open(os.environ["FAKE_DETACH"] + ".tmp", "w") as f:
                    f.write(str(os.getpid()))
                os.replace(os.environ["FAKE_DETACH"] + ".tmp", os.environ["FAKE_DETACH"])
                time.sleep(600)
            os._exit(0)
        os.wait()
"#;

/// One test's files: a copy of the fake engine that records its whole environment, at a path
/// unique to the test (its marker in /proc), and the bundle.
struct Setup {
    ranks: TwoRanks,
    bundle: PathBuf,
    odd: Vec<String>,
    /// Whether rank 1 detaches a child (its pid in [`Setup::detached_pid_file`]).
    detach: bool,
}

impl Setup {
    fn new(digest: Option<&str>) -> Setup {
        let text = std::fs::read_to_string(root().join("tests/fixtures/fake_engine.py")).unwrap();
        let narrow = r#"{k: v for k, v in os.environ.items() if k.startswith("FAKE_") or k == "SSH_CONNECTION"}"#;
        assert!(
            text.contains(narrow),
            "the fake engine's environment line changed"
        );
        let start = "    if ARGS.argv_file:\n        write_argv(ARGS.argv_file)\n";
        assert!(text.contains(start), "the fake engine's start changed");
        let text = text
            .replace(narrow, "dict(os.environ)")
            .replace(start, &format!("{PMIX_AND_DETACH}{start}"));
        let ranks = TwoRanks::new("fake_engine_slurm_test.py", &text);
        let odd = common::odd_items(&ranks.tmp.path().join("ran"));
        let bundle = template(ranks.tmp.path(), &ranks.script, &odd, digest);
        Setup {
            ranks,
            bundle,
            odd,
            detach: false,
        }
    }

    fn detached_pid_file(&self) -> PathBuf {
        self.tmp.path().join("detached.pid")
    }

    /// The replay's arguments (`--slurm` among `extra`): `mode`/`delay` for both ranks.
    fn args(&self, mode: &str, delay: &str, extra: &[&str]) -> Vec<String> {
        let mut a = self.replay_of(&self.bundle);
        a.extend(self.sets(mode, delay));
        let detach = match self.detach {
            true => format!("detach={}", self.detached_pid_file().display()),
            false => "detach=".into(),
        };
        a.extend(["--set".into(), detach]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    }

    /// `replay BUNDLE` with the options every test gives.
    fn replay_of(&self, bundle: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec!["replay".into(), bundle.display().to_string()];
        for w in [
            "--engine",
            &python3().display().to_string(),
            "--out",
            &self.out().display().to_string(),
            "--format",
            "json",
            "--quiet",
            "--no-load-guard",
            "--confirm",
            "false",
            "--request-timeout",
            "5",
            "--ready-timeout",
            "60",
            // FAKE_NOTE is shell text on purpose (it must arrive verbatim): allowed by name.
            "--allow-env",
            "FAKE_NOTE",
        ] {
            a.push(w.to_string());
        }
        a
    }
}

/// A setup is its two ranks' files, and more.
impl std::ops::Deref for Setup {
    type Target = TwoRanks;
    fn deref(&self) -> &TwoRanks {
        &self.ranks
    }
}

/// Asserts the replay's job leaves the queue within `job_secs` and every rank of `s` is gone
/// within `rank_secs`.
#[track_caller]
fn assert_nothing_left(conf: &Path, s: &Setup, job_secs: u64, rank_secs: u64) {
    assert_eq!(our_jobs_after(conf, job_secs), "");
    assert_eq!(s.leftovers_after(rank_secs), Vec::<String>::new());
}

/// The replay run with `SLURM_CONF` set.
fn run(conf: &Path, args: &[String]) -> Run {
    rigaudit_with_env(args, &[("SLURM_CONF", conf)])
}

/// The replay's jobs still in the queue (every state squeue shows), waiting up to `secs` for
/// them to go.
fn our_jobs_after(conf: &Path, secs: u64) -> String {
    let t0 = Instant::now();
    loop {
        let out = Command::new("squeue")
            .args(["-h", "-n", "rigaudit-replay", "-o", "%i %T"])
            .env("SLURM_CONF", conf)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if (out.status.success() && text.is_empty()) || t0.elapsed() > Duration::from_secs(secs) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn notes(run: &Run) -> Vec<String> {
    run.findings("replay.note")
        .iter()
        .filter_map(|f| f["message"].as_str().map(String::from))
        .collect()
}

#[test]
fn the_plan_maps_boxes_to_nodes_and_shows_each_step_without_allocating() {
    let s = Setup::new(Some(&"ab".repeat(32)));
    let args = s.args("ok", "0", &["--slurm", "--plan", "--box", "second=n2"]);
    let r = rigaudit(&args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let t = &r.stdout;
    assert_has(
        t,
        "allocation: 'salloc' '--no-shell' '-N' '2' '--time=60' '--job-name=rigaudit-replay'",
    );
    assert_has(t, "'--nodelist=n2'");
    assert_has(
        t,
        "rank 0 (box head, the allocation's node 1 not named with --box)",
    );
    assert_has(t, "rank 1 (box second, node n2 (--box))");
    assert_has(t, "  step: 'srun' '--jobid' '<job>' '--nodelist' 'n2' '-N1' '-n1' '--kill-on-bad-exit=1' '--export=NONE' '--' '/bin/sh' '-c' ");
    assert_has(t, "' 'rigaudit-rank' '/usr/bin/env' '-i' 'FAKE_ARGV_FILE=");
    assert_has(t, "'line one\\nline two'");
    assert!(
        t.contains(&format!(
            "check: sha256 of '{}' on the node = {}",
            python3().display(),
            "ab".repeat(32)
        )),
        "{t}"
    );
    assert_has(
        t,
        "'/usr/bin/xargs' '-0' '-r' '/usr/bin/sha256sum' '--' (the path on its stdin)",
    );
    let plain = s.args("ok", "0", &["--slurm", "--plan"]);
    let t = rigaudit(&plain).stdout;
    assert_has(&t, "rank 0 (box head, node 1 of the allocation)");
    assert_has(&t, "rank 1 (box second, node 2 of the allocation)");
    // --slurm-pmix runs one command for every rank: this card's ranks differ in their variables.
    let pmix = s.args("ok", "0", &["--slurm", "--slurm-pmix", "--plan"]);
    let r = rigaudit(&pmix);
    assert_eq!(r.code, 2, "{}", r.stdout);
    r.assert_stderr_has("--slurm-pmix runs one command for every rank, but rank 1's recorded environment differs from rank 0's");
    let mut pmix = s.replay_of(&pmix_template(&s));
    for w in ["--slurm", "--slurm-pmix", "--plan", "--box", "head=n2"] {
        pmix.push(w.into());
    }
    let r = rigaudit(&pmix);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let t = &r.stdout;
    assert_has(
        t,
        "rank 0 (box head, node n2 (--box))\n  task 0 of the PMIx step",
    );
    assert_has(t, "  step: 'srun' '--jobid' '<job>' '--nodelist' 'n2,<node>' '-N' '2' '-n' '2' '--distribution=arbitrary' '--mpi=pmix' '--label' '--kill-on-bad-exit=1' '--export=NONE' '--' '/usr/bin/env' 'FAKE_NOTE=");
}

#[test]
fn rank_1_runs_on_n2_as_a_step_with_its_argv_and_environment_verbatim() {
    let (conf, _turn) = or_skip!(slurm_or_skip("rank_1_runs_on_n2_as_a_step"));
    let s = Setup::new(Some(&sha_file(&python3())));
    let r = run(&conf, &s.args("ok", "2", &["--slurm"]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let r1 = s.argv_info(1).expect("rank 1 wrote its argv");
    let argv: Vec<String> = serde_json::from_value(r1["argv"].clone()).unwrap();
    assert_eq!(&argv[argv.len() - s.odd.len()..], &s.odd[..]);
    let env: serde_json::Map<String, Value> = serde_json::from_value(r1["env"].clone()).unwrap();
    let mut want = rank1_env().as_object().unwrap().clone();
    want["FAKE_PORT"] = env["FAKE_PORT"].clone();
    want["FAKE_ARGV_FILE"] = json!(s.argv_file(1).display().to_string());
    want["FAKE_DETACH"] = json!("");
    assert_eq!(
        env, want,
        "rank 1's environment is not exactly the recorded one"
    );
    // One note a line: a needle (no line break) is in the text when a note holds it.
    let notes = notes(&r).join("\n");
    assert_has(&notes, "rank 1 (box second) runs on node n2 of Slurm job");
    assert_has(&notes, "matches the card's");
    assert_has(&notes, "rank 0's address: 127.0.0.1, node n1's NodeAddr");
    // Each rank got SIGTERM from the scheduler and ended on its own (srun, signalled, would
    // have killed it).
    assert_has(&notes, "every step ended within");
    for rank in [0, 1] {
        assert_has(
            &notes,
            &format!("rank {rank} had already ended (exit code 0)"),
        );
    }
    let tracking = tracking_of(&conf);
    let said = match tracking.as_str() {
        "proctrack/cgroup" => "slurm: process tracking is proctrack/cgroup".to_string(),
        other => format!("warning: slurm: process tracking is {other}, not proctrack/cgroup"),
    };
    assert_has(&notes, &said);
    // What each rank's server mapped was read on its node, in steps of the replay's job beside
    // the rank's (the cluster's nodes are this machine): python3, hashed there.
    let report = r.json();
    let ranks = report["loaded"].as_array().unwrap();
    assert_eq!(ranks.len(), 2, "{ranks:#?}");
    let rank1 = ranks.iter().find(|x| x["rank"] == 1).unwrap();
    assert_eq!(rank1["host"], "n2", "{rank1:#}");
    assert_eq!(rank1["read_at"], json!(["ready", "end"]), "{rank1:#}");
    let exe = rank1["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["role"] == "executable")
        .unwrap_or_else(|| panic!("{rank1:#}"));
    assert_eq!(exe["sha256"], sha_file(&python3()), "{exe:#}");
    assert!(rank1["objects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["role"] == "library" && o["sha256"].is_string()));
    assert!(
        r.findings("loaded.not-read").is_empty(),
        "{:#?}",
        r.findings("loaded.not-read")
    );
    assert_nothing_left(&conf, &s, 10, 10);
}

#[test]
fn a_digest_mismatch_on_a_node_is_refused_before_any_rank_starts() {
    let (conf, _turn) = or_skip!(slurm_or_skip("a_digest_mismatch_on_a_node"));
    let s = Setup::new(Some(&sha_file(&python3())));
    let other = s.tmp.path().join("python3-other");
    let mut bytes = std::fs::read(python3()).unwrap();
    bytes.push(0);
    std::fs::write(&other, bytes).unwrap();
    let engine = format!("second={}", other.display());
    let extra = [
        "--slurm",
        "--box",
        "head=n1",
        "--box",
        "second=n2",
        "--box-engine",
        &engine,
    ];
    let r = run(&conf, &s.args("ok", "0", &extra));
    assert_eq!(r.code, 2, "{}", r.stderr);
    r.assert_stderr_has("refusing to run");
    r.assert_stderr_has("on node n2 (Slurm job");
    assert!(s.argv_info(0).is_none() && s.argv_info(1).is_none());
    assert_eq!(our_jobs_after(&conf, 10), "");
}

#[test]
fn sigterm_to_the_replay_cancels_the_job_and_leaves_no_rank() {
    let (conf, _turn) = or_skip!(slurm_or_skip("sigterm_to_the_replay"));
    let s = Setup::new(None);
    let args = s.args("slow-start", "120", &["--slurm", "--trust-executable"]);
    let child = start_until_both_ranks_run(&conf, &s, &args);
    let (code, err) = signalled(child, false, libc::SIGTERM);
    assert_eq!(code, Some(130), "{err}");
    assert_has(&err, "cancelling Slurm job");
    assert_nothing_left(&conf, &s, 10, 15);
}

/// Ctrl-C in a terminal: SIGINT to the whole foreground process group, here the replay's own
/// (it leads one, as a shell's job does). The ranks' srun clients sit in groups of their own and
/// do not get it; rigaudit's handler stops them (srun, signalled, ends its step) and cancels the
/// job.
#[test]
fn ctrl_c_to_the_replay_s_process_group_cancels_the_job_and_leaves_no_rank() {
    let (conf, _turn) = or_skip!(slurm_or_skip("ctrl_c_to_the_replay"));
    let s = Setup::new(None);
    let args = s.args("slow-start", "120", &["--slurm", "--trust-executable"]);
    let child = start_until_both_ranks_run(&conf, &s, &args);
    let (code, err) = signalled(child, true, libc::SIGINT);
    assert_eq!(code, Some(130), "{err}");
    assert_has(
        &err,
        "rigaudit: interrupted; stopping 2 engine process group(s)",
    );
    assert_has(&err, "rigaudit: interrupted; cancelling Slurm job");
    assert_has(&err, "rigaudit: interrupted; exiting with code 130");
    assert_nothing_left(&conf, &s, 10, 15);
    // What the ranks printed before Ctrl-C is kept.
    for rank in [0, 1] {
        let log = s.out().join(format!("engine-logs/rank{rank}.log"));
        assert!(log.is_file(), "{} kept", log.display());
    }
}

/// Starts rigaudit with `args` (`SLURM_CONF` set) in a process group of its own, stderr piped.
fn start_in_own_group(conf: &Path, args: &[String]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(args)
        .env("SLURM_CONF", conf)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Starts the replay with `args` (in a process group of its own), waits until both ranks have
/// written their argv, and returns the running replay.
fn start_until_both_ranks_run(conf: &Path, s: &Setup, args: &[String]) -> std::process::Child {
    let child = start_in_own_group(conf, args);
    assert!(s.both_started(), "both ranks started");
    child
}

/// Sends `sig` to the child (`group`: to its whole process group, which it leads), waits for it;
/// its exit code and stderr.
fn signalled(
    mut child: std::process::Child,
    group: bool,
    sig: libc::c_int,
) -> (Option<i32>, String) {
    let pid = child.id() as libc::pid_t;
    assert!(pid > 1);
    // SAFETY: kill(2) on the process (or the group) this test started.
    unsafe {
        libc::kill(if group { -pid } else { pid }, sig);
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

#[test]
fn a_rank_that_fails_at_start_ends_the_replay_cancels_the_job_and_leaves_no_rank() {
    let (conf, _turn) = or_skip!(slurm_or_skip("a_rank_that_fails_at_start"));
    let s = Setup::new(None);
    // Box second runs /bin/false: rank 1 ends at once with exit code 1, while rank 0 loads.
    let extra = [
        "--slurm",
        "--trust-executable",
        "--box",
        "head=n1",
        "--box",
        "second=n2",
        "--box-engine",
        "second=/bin/false",
    ];
    let r = run(&conf, &s.args("slow-start", "30", &extra));
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    r.assert_stderr_has("rank 1");
    r.assert_stderr_has("exit code 1");
    assert_nothing_left(&conf, &s, 10, 15);
}

#[test]
fn sigkill_of_the_replay_leaves_the_job_to_its_time_limit_which_ends_every_rank() {
    let (conf, _turn) = or_skip!(slurm_or_skip_on("sigkill_of_the_replay", linuxproc_cluster));
    let s = Setup::new(None);
    // Nothing in rigaudit runs after SIGKILL: the allocation's hard limit (20 s) is the last net.
    let args = s.args(
        "slow-start",
        "600",
        &["--slurm", "--trust-executable", "--slurm-time", "0:20"],
    );
    let mut child = start_until_both_ranks_run(&conf, &s, &args);
    child.kill().unwrap();
    child.wait().unwrap();
    // slurmctld looks at time limits about every 30 s; KillWait is 2 s in the test cluster.
    assert_nothing_left(&conf, &s, 120, 30);
}

#[test]
fn a_rank_that_ignores_sigterm_is_killed_and_the_job_is_gone() {
    let (conf, _turn) = or_skip!(slurm_or_skip("a_rank_that_ignores_sigterm"));
    let s = Setup::new(None);
    let r = run(
        &conf,
        &s.args("ignore-term", "0", &["--slurm", "--trust-executable"]),
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // SIGTERM reaches each rank from the scheduler (scancel --signal=TERM) and is ignored; after
    // 5 s rigaudit stops each srun, which kills its step's task: the step ends as killed (137).
    let notes = notes(&r);
    assert_any(&notes, |n| n.contains("a step still ran after 5 s"));
    for rank in [0, 1] {
        let killed = [
            format!("rank {rank} stopped (exit code 137)"),
            format!("rank {rank} did not stop within"),
        ];
        assert_any(&notes, |n| killed.iter().any(|k| n.contains(k)));
    }
    assert_nothing_left(&conf, &s, 15, 15);
}

/// A two-rank bundle for `--slurm-pmix`: both ranks one command (the fake engine, which takes
/// its rank from PMIx), its argv ending with [`common::odd_items`], its environment odd too.
fn pmix_template(s: &Setup) -> PathBuf {
    let b = s.tmp.path().join("pmix");
    let mut argv: Vec<Value> = [
        "python3",
        s.script.to_str().unwrap(),
        "--port",
        "<port>",
        "--argv-file",
        "replaced-under-pmix",
    ]
    .iter()
    .map(|x| json!(x))
    .collect();
    argv.extend(s.odd.iter().map(|x| json!(x)));
    let env = pmix_env();
    let card = json!({
        "hardware": {"description": "two test nodes", "boxes": [{"name": "head", "rank": 0},
            {"name": "second", "rank": 1}], "accelerator": "cpu"},
        "engine": {"name": "fake-engine", "version": "0.0.1",
                   "binary": {"path": "bin/python3", "sha256": sha_file(&python3())}},
        "checkpoint": {"repo": "fake/fake", "revision": "0"},
        "ranks": 2,
        "commands": [
            {"rank": 0, "box": "head", "argv": argv, "env": env},
            {"rank": 1, "box": "second", "argv": argv, "env": env}
        ],
        "sampling": {"defaults": {"temperature": 0.0}, "defaults_source": "fake"},
        "measured": "2026-12-02T00:00:00Z"
    });
    common::write_bundle(&b, ("fake-pmix", "fake"), &card, &decode_contract(3, 8));
    b
}

/// Both ranks' recorded environment under PMIx (placeholders filled by `--set`).
fn pmix_env() -> Value {
    json!({"FAKE_NOTE": "$(id); it's \"q\"\nline2 ✓", "FAKE_PMIX_ARGV": "<pmix argv>",
           "FAKE_RANK0": "<address of rank 0>", "LC_ALL": "C.UTF-8"})
}

#[test]
fn pmix_ranks_are_tasks_of_one_step_with_their_own_rank_one_namespace_and_the_argv_exact() {
    let (conf, _turn) = or_skip!(slurm_or_skip("pmix_ranks_are_tasks_of_one_step"));
    let s = Setup::new(None);
    let bundle = pmix_template(&s);
    let mut args = s.replay_of(&bundle);
    let base = s.tmp.path().join("argv").display().to_string();
    for w in [
        "--set",
        &format!("pmix argv={base}"),
        "--set",
        "address of rank 0=127.0.0.1",
        "--slurm",
        "--slurm-pmix",
        "--box",
        "head=n2",
        "--box",
        "second=n1",
    ] {
        args.push(w.to_string());
    }
    let r = run(&conf, &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let info: Vec<Value> = (0..2).map(|k| s.argv_info(k).expect("argv")).collect();
    let env = |k: usize, name: &str| info[k]["env"][name].as_str().unwrap_or("").to_string();
    // Rank 1 reached rank 0's server before writing (exit code 4 otherwise, failing the replay).
    assert_eq!(
        (env(0, "PMIX_RANK"), env(1, "PMIX_RANK")),
        ("0".into(), "1".into())
    );
    assert_eq!(
        (env(0, "SLURM_PROCID"), env(1, "SLURM_PROCID")),
        ("0".into(), "1".into())
    );
    assert!(!env(0, "PMIX_NAMESPACE").is_empty());
    assert_eq!(env(0, "PMIX_NAMESPACE"), env(1, "PMIX_NAMESPACE"));
    // Arbitrary distribution: task 0 on the node of rank 0's box, though n1 comes first.
    assert_eq!(
        (env(0, "SLURMD_NODENAME"), env(1, "SLURMD_NODENAME")),
        ("n2".into(), "n1".into())
    );
    let mut want = pmix_env().as_object().unwrap().clone();
    want["FAKE_PMIX_ARGV"] = json!(base);
    want["FAKE_RANK0"] = json!("127.0.0.1");
    for i in &info {
        let argv: Vec<String> = serde_json::from_value(i["argv"].clone()).unwrap();
        assert_eq!(&argv[argv.len() - s.odd.len()..], &s.odd[..]);
        let got = i["env"].as_object().unwrap();
        for (k, v) in got {
            let slurms = ["SLURM_", "PMIX_", "PMI_"].iter().any(|p| k.starts_with(p))
                || ["SLURMD_NODENAME", "TMPDIR", "CUDA_VISIBLE_DEVICES"].contains(&k.as_str());
            assert!(
                want.get(k) == Some(v) || (slurms && !want.contains_key(k)),
                "{k}={v}"
            );
        }
        assert!(want.keys().all(|k| got.contains_key(k)), "{got:#?}");
    }
    let notes = notes(&r);
    assert!(
        notes.iter().any(
            |n| n.contains("ranks 0-1 run as one PMIx step of Slurm job")
                && n.contains("task r on node r of n2,n1")
                && n.contains("each rank's output is in its own engine-logs/rank<r>.log")
        ),
        "{notes:#?}"
    );
    assert_nothing_left(&conf, &s, 10, 15);
    assert_each_task_logs_its_own(&s);
}

/// After a PMIx replay: each task's lines, srun's `--label` taken off, are in its own rank log.
#[track_caller]
fn assert_each_task_logs_its_own(s: &Setup) {
    let log =
        |r: u32| std::fs::read_to_string(s.out().join(format!("engine-logs/rank{r}.log"))).unwrap();
    let (log0, log1) = (log(0), log(1));
    let line = |r: u32| format!("fake-engine: PMIx task of rank {r}\n");
    assert!(log0.starts_with(&line(0)), "rank0.log:\n{log0}");
    assert!(log1.starts_with(&line(1)), "rank1.log:\n{log1}");
    assert!(!log0.contains(&line(1)), "rank0.log:\n{log0}");
    assert!(!log1.contains(&line(0)), "rank1.log:\n{log1}");
    assert_has(&log0, "fake-engine start version=");
    assert!(!log1.contains("fake-engine start"), "rank1.log:\n{log1}");
}

/// Whether process `pid` is alive (or a zombie not yet reaped).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// Replays with rank 1 detaching a child; the child's pid once the replay is over.
fn replay_detaching(conf: &Path) -> (Setup, Run, i32) {
    let mut s = Setup::new(Some(&sha_file(&python3())));
    s.detach = true;
    let r = run(conf, &s.args("ok", "0", &["--slurm"]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let pid: i32 = std::fs::read_to_string(s.detached_pid_file())
        .expect("rank 1 detached a child")
        .trim()
        .parse()
        .unwrap();
    (s, r, pid)
}

#[test]
fn a_child_a_rank_detached_goes_with_the_job_under_cgroup_tracking() {
    let (conf, _turn) = or_skip!(slurm_or_skip("a_child_a_rank_detached"));
    if tracking_of(&conf) != "proctrack/cgroup" {
        println!("SKIPPED a_child_a_rank_detached: this machine runs the cluster without cgroup tracking (see the linuxproc test)");
        return;
    }
    let (_s, r, pid) = replay_detaching(&conf);
    assert_eq!(our_jobs_after(&conf, 15), "");
    let t0 = Instant::now();
    while alive(pid) && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!alive(pid), "the detached child {pid} outlived the job");
    let notes = notes(&r);
    assert!(notes
        .iter()
        .any(|n| n == "slurm: process tracking is proctrack/cgroup"));
    assert_any(&notes, |n| n.contains("cancelled and gone from the queue"));
}

#[test]
fn without_cgroup_tracking_a_replay_warns_refuses_when_asked_and_a_detached_child_escapes() {
    let (conf, _turn) = or_skip!(slurm_or_skip_on(
        "without_cgroup_tracking",
        linuxproc_cluster
    ));
    let s = Setup::new(None);
    let r = run(
        &conf,
        &s.args(
            "ok",
            "0",
            &["--slurm", "--trust-executable", "--slurm-require-cgroup"],
        ),
    );
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    r.assert_stderr_has("refusing to run under Slurm with --slurm-require-cgroup: the cluster's process tracking is proctrack/linuxproc");
    assert!(s.argv_info(0).is_none() && s.argv_info(1).is_none());
    assert_eq!(our_jobs_after(&conf, 10), "");
    // What the warning says: under linuxproc a child that left the rank's session outlives the
    // step; it holds the job in the queue (COMPLETING), which the replay reports, until it ends.
    let (_s, r, pid) = replay_detaching(&conf);
    // One note a line: a needle (no line break) is in the text when a note holds it.
    let notes = notes(&r).join("\n");
    assert_has(
        &notes,
        "warning: slurm: process tracking is proctrack/linuxproc, not proctrack/cgroup",
    );
    assert_has(&notes, "is still in the queue (COMPLETING");
    assert!(
        alive(pid),
        "the detached child {pid} was expected to escape linuxproc tracking"
    );
    assert!(our_jobs_after(&conf, 1).contains("COMPLETING"));
    // SAFETY: kill(2) on the child this test's fake engine detached.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    assert_eq!(our_jobs_after(&conf, 15), "");
}

/// `rehash --slurm --root head=DIR --root second=DIR`: each root is listed and hashed on its box's
/// node, in steps of one allocation; the engine on node n2 differs from the card's and is caught,
/// the one on n1 matches.
#[test]
fn rehash_hashes_each_root_on_its_node_and_catches_a_changed_engine_on_n2() {
    let (conf, _turn) = or_skip!(slurm_or_skip("rehash_hashes_each_root_on_its_node"));
    let s = Setup::new(Some(&sha_file(&python3())));
    let roots = rehash_roots(&s);
    std::fs::copy(python3(), roots[0].join("bin/python3")).unwrap();
    let mut changed = std::fs::read(python3()).unwrap();
    changed.push(0);
    std::fs::write(roots[1].join("bin/python3"), changed).unwrap();
    let r = run(&conf, &rehash_args(&s, &roots));
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let bin: Vec<String> = r
        .findings("rehash.binary-digest")
        .iter()
        .map(|f| format!("{} {}", f["severity"], f["message"]))
        .collect();
    let on = |node: &str, root: &Path| format!("{node}:{}/bin/python3", root.display());
    assert!(
        bin.iter()
            .any(|f| f.starts_with("\"info\"") && f.contains(&on("n1", &roots[0]))),
        "{bin:#?}"
    );
    assert!(
        bin.iter()
            .any(|f| f.starts_with("\"error\"") && f.contains(&on("n2", &roots[1]))),
        "{bin:#?}"
    );
    assert_eq!(our_jobs_after(&conf, 10), "");
}

/// The two roots of `rehash --slurm` (boxes head and second), each with an empty `bin`.
fn rehash_roots(s: &Setup) -> Vec<PathBuf> {
    let roots: Vec<PathBuf> = ["head root", "second root"]
        .iter()
        .map(|d| s.tmp.path().join(d))
        .collect();
    for r in &roots {
        std::fs::create_dir_all(r.join("bin")).unwrap();
    }
    roots
}

/// `rehash BUNDLE --root head=ROOT0 --root second=ROOT1 --slurm --format json`.
fn rehash_args(s: &Setup, roots: &[PathBuf]) -> Vec<String> {
    vec![
        "rehash".into(),
        s.bundle.display().to_string(),
        "--root".into(),
        format!("head={}", roots[0].display()),
        "--root".into(),
        format!("second={}", roots[1].display()),
        "--slurm".into(),
        "--format".into(),
        "json".into(),
    ]
}

/// The live processes named `name` (their `comm`) working in folder `dir`: a step's task.
fn working_in(dir: &Path, name: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).ok();
        if comm.trim() == name && cwd.as_deref() == Some(dir) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `secs` for `name` to run in `dir` (`running`) or to run there no more; whether it
/// came to that.
fn until_working_in(dir: &Path, name: &str, running: bool, secs: u64) -> bool {
    let t0 = Instant::now();
    while working_in(dir, name).is_empty() == running {
        if t0.elapsed() > Duration::from_secs(secs) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// Ctrl-C while `rehash --slurm` hashes on a node: root head's engine is a sparse 64 GiB file,
/// so its step's sha256sum runs long enough to be caught. SIGINT goes to the whole group,
/// the step's srun client included (which on one SIGINT only reports its task): rigaudit's
/// handler cancels the allocation, which ends the step, and exits with 130.
#[test]
fn ctrl_c_while_rehash_hashes_on_a_node_cancels_the_job_and_ends_the_step() {
    let (conf, _turn) = or_skip!(slurm_or_skip("ctrl_c_while_rehash_hashes"));
    let s = Setup::new(Some(&sha_file(&python3())));
    let roots: Vec<PathBuf> = rehash_roots(&s)
        .iter()
        .map(|r| r.canonicalize().unwrap())
        .collect();
    let big = std::fs::File::create(roots[0].join("bin/python3")).unwrap();
    big.set_len(64 << 30).unwrap();
    std::fs::copy(python3(), roots[1].join("bin/python3")).unwrap();
    let child = start_in_own_group(&conf, &rehash_args(&s, &roots));
    let hashing = until_working_in(&roots[0], "sha256sum", true, 60);
    assert!(hashing, "the step hashing root head started");
    let (code, err) = signalled(child, true, libc::SIGINT);
    assert_eq!(code, Some(130), "{err}");
    assert_has(&err, "rigaudit: interrupted; cancelling Slurm job");
    assert_has(&err, "rigaudit: interrupted; exiting with code 130");
    assert_eq!(our_jobs_after(&conf, 10), "");
    let gone = until_working_in(&roots[0], "sha256sum", false, 15);
    assert!(
        gone,
        "sha256sum still runs: {:?}",
        working_in(&roots[0], "sha256sum")
    );
}
