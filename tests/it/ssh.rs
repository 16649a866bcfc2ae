//! `rigaudit replay --box`: ranks on another box, over SSH, against a real `sshd` (Debian's
//! `openssh-server`) that each test starts on a loopback port with its own host key, user key,
//! `sshd_config` and known-hosts file (no system service is touched). The "box" is this machine;
//! what makes it another box is the path: the rank reaches it only through the sshd, so it runs in
//! the session's folder and environment (`SSH_CONNECTION` set), in a session of its own.
//!
//! The fake engine (tests/fixtures/fake_engine.py) writes its argv, environment, process group
//! and session to a file (`--argv-file`). A test that cannot find `sshd` tries to install it
//! (as root with apt-get); if it still cannot, it prints why and returns (set
//! `RIGAUDIT_REQUIRE_SSHD=1` to make that a failure).

use crate::common;

use common::assert_has;
use common::ranks::{free_port, TwoRanks};
use common::{assert_any, read_json, sha_file, sha_hex as sha, write_files, write_tar_gz};
use common::{decode_contract, python3_executable as python3, rigaudit, rigaudit_line, root, Run};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// Installs openssh-server once if `sshd` is missing; the reason when it cannot be had.
fn sshd_available() -> Result<(), String> {
    static TRIED: OnceLock<Result<(), String>> = OnceLock::new();
    TRIED
        .get_or_init(|| {
            if Path::new(SSHD).exists() {
                return Ok(());
            }
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                return Err("sshd is missing and this is not root: apt-get install openssh-server openssh-client".into());
            }
            let install = "apt-get install -y -qq openssh-server openssh-client || \
                 (apt-get update -qq && apt-get install -y -qq openssh-server openssh-client)";
            let ok = Command::new("sh")
                .args(["-c", install])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok && Path::new(SSHD).exists() {
                Ok(())
            } else {
                Err("sshd is missing and apt-get could not install openssh-server".into())
            }
        })
        .clone()
}

/// `Some(sshd)`, or `None` after printing why the test is skipped.
fn sshd_or_skip(test: &str) -> Option<Sshd> {
    match sshd_available() {
        Ok(()) => Some(Sshd::start()),
        Err(why) => {
            if std::env::var_os("RIGAUDIT_REQUIRE_SSHD").is_some() {
                panic!("{test}: {why}");
            }
            println!("SKIPPED {test}: {why}");
            eprintln!("SKIPPED {test}: {why}");
            None
        }
    }
}

/// An sshd of the test's own, killed when dropped (and when the test process dies).
/// The test's sshd and its files, the card recording python3's digest (no --trust-executable:
/// the check on the box passes only because the file there hashes the same); `None` when
/// skipped.
fn sshd_and_setup(test: &str) -> Option<(Sshd, Setup)> {
    let sshd = sshd_or_skip(test)?;
    Some((sshd, Setup::new(Some(&sha_file(&python3())))))
}

/// [`sshd_or_skip`] and a setup whose card records no engine digest.
fn sshd_and_bare_setup(test: &str) -> Option<(Sshd, Setup)> {
    Some((sshd_or_skip(test)?, Setup::new(None)))
}

struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
    user: String,
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(st.success());
}

fn spawn_dying_with_us(cmd: &mut Command) -> Child {
    // SAFETY: prctl is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            Ok(())
        });
    }
    cmd.spawn().expect("spawn")
}

/// `Some(child)` once sshd accepts connections on `port`; `None` (and it is gone) when it exits
/// or does not listen within 10 s.
fn listening(mut child: Child, port: u16) -> Option<Child> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(child);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

impl Sshd {
    fn start() -> Sshd {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("user_key"));
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        // The privilege separation folder sshd insists on (an empty folder, no service).
        let _ = std::fs::create_dir_all("/run/sshd");
        for _ in 0..5 {
            let port = free_port();
            let config = d.join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                     AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nAllowUsers {user}\n\
                     X11Forwarding no\nAllowAgentForwarding no\nPrintMotd no\nLogLevel ERROR\n",
                    d = d.display()
                ),
            )
            .unwrap();
            let log = std::fs::File::create(d.join("sshd.log")).unwrap();
            let child = spawn_dying_with_us(
                Command::new(SSHD)
                    .arg("-D")
                    .arg("-e")
                    .arg("-f")
                    .arg(&config)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(log),
            );
            if let Some(child) = listening(child, port) {
                let host = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
                std::fs::write(d.join("known_hosts"), format!("[127.0.0.1]:{port} {host}"))
                    .unwrap();
                return Sshd {
                    dir,
                    child,
                    port,
                    user,
                };
            }
        }
        panic!("sshd did not start");
    }

    /// `user@127.0.0.1:port:PATH`: how findings name a file on this sshd's box.
    fn at(&self, path: impl std::fmt::Display) -> String {
        format!("{}@127.0.0.1:{}:{path}", self.user, self.port)
    }

    /// `--box NAME=...` and the client options that reach this sshd and trust only its key.
    fn args(&self, name: &str) -> Vec<String> {
        let d = self.dir.path().display();
        let mut v = vec![
            "--box".to_string(),
            format!("{name}={}@127.0.0.1:{}", self.user, self.port),
            "--ssh-config".into(),
            "/dev/null".into(),
        ];
        for o in [
            format!("IdentityFile={d}/user_key"),
            "IdentitiesOnly=yes".into(),
            format!("UserKnownHostsFile={d}/known_hosts"),
            "GlobalKnownHostsFile=/dev/null".into(),
            "StrictHostKeyChecking=yes".into(),
            "LogLevel=ERROR".into(),
        ] {
            v.extend(["--ssh-option".to_string(), o]);
        }
        v
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A two-box test bundle: rank 0 on box `head` (here), rank 1 on box `second`, both the fake
/// engine copied to `script`; rank 1's argv ends with [`common::odd_items`] and its environment
/// holds odd values too. `digest`: the card's engine binary sha256.
fn template(dir: &Path, script: &Path, odd: &[String], digest: Option<&str>) -> PathBuf {
    // A stand-in NCCL library for rank 1's LD_LIBRARY_PATH (it is read, never loaded).
    let nccl = dir.join("nccl");
    std::fs::create_dir_all(&nccl).unwrap();
    std::fs::write(
        nccl.join("libnccl.so.2.30.7"),
        b"\x7fELF not a library; NCCL version 2.30.7+cuda13.3\0",
    )
    .unwrap();
    let nccl_sha = sha_file(&nccl.join("libnccl.so.2.30.7"));
    let b = dir.join("template");
    std::fs::create_dir_all(&b).unwrap();
    // Both ranks share their argv (as the card's check wants); rank 1 differs by its environment,
    // and the card lists rank 1 first.
    let rank1_env = json!({"FAKE_NOTE": "$(id); it's \"q\"\nline2 ✓", "FAKE_BOX": "second",
        "FAKE_PORT": "<port1>", "FAKE_ARGV_FILE": "<argv1>",
        "LD_LIBRARY_PATH": format!("/nonexistent:{}", nccl.display())});
    let mut card = common::two_box_card("two test boxes", script, odd, rank1_env, digest);
    if let Some(commands) = card["commands"].as_array_mut() {
        commands.reverse();
    }
    card["nccl"] = json!({"version": "2.30.7", "file": "libnccl.so.2.30.7", "per_box": [
        {"box": "head", "sha256": &nccl_sha}, {"box": "second", "sha256": &nccl_sha[..8]}]});
    write_bundle(&b, &card);
    b
}

/// Writes the card, a small speed contract and the manifest into the bundle folder `b`.
fn write_bundle(b: &Path, card: &Value) {
    common::write_bundle(b, ("fake-two-box", "fake"), card, &decode_contract(3, 8));
}

/// One test's files: a copy of the fake engine at a path unique to the test (its marker in
/// /proc), the bundle, the argv files of both ranks.
struct Setup {
    ranks: TwoRanks,
    bundle: PathBuf,
    odd: Vec<String>,
}

impl Setup {
    fn new(digest: Option<&str>) -> Setup {
        let engine = std::fs::read_to_string(root().join("tests/fixtures/fake_engine.py")).unwrap();
        let ranks = TwoRanks::new("fake_engine_ssh_test.py", &engine);
        let odd = common::odd_items(&ranks.tmp.path().join("ran"));
        let bundle = template(ranks.tmp.path(), &ranks.script, &odd, digest);
        Setup { ranks, bundle, odd }
    }

    /// The folder a test's box root stands for (made by the test).
    fn box_root(&self) -> PathBuf {
        self.tmp.path().join("box root")
    }

    /// `rehash BUNDLE --root ROOT --format json`, then `extra`.
    fn rehash(&self, bundle: &Path, root: String, extra: Vec<String>) -> Run {
        let mut args = common::argv(
            "rehash {} --root {} --format json",
            &[&bundle.display().to_string(), &root],
        );
        args.extend(extra);
        self.run(&args)
    }

    /// The replay's arguments: `mode`/`delay` for rank 0, then `extra`.
    fn args(&self, mode: &str, delay: &str, extra: &[String]) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "replay".into(),
            self.bundle.display().to_string(),
            "--engine".into(),
            python3().display().to_string(),
            "--out".into(),
            self.out().display().to_string(),
            "--format".into(),
            "json".into(),
            "--quiet".into(),
            "--report".into(),
            self.tmp.path().join("report.json").display().to_string(),
            "--no-load-guard".into(),
            "--confirm".into(),
            "false".into(),
            "--request-timeout".into(),
            "5".into(),
            "--ready-timeout".into(),
            "60".into(),
            // Rank 1's FAKE_NOTE is shell text on purpose (it must arrive verbatim): not a plain
            // setting, so it is passed only when allowed by name.
            "--allow-env".into(),
            "FAKE_NOTE".into(),
        ];
        a.extend(self.sets(mode, delay));
        a.extend(extra.iter().cloned());
        a
    }

    fn run(&self, args: &[String]) -> Run {
        rigaudit(args)
    }

    /// Runs the replay with `delay` for both ranks and `extra`; asserts it exits 0.
    fn replay_ok(&self, delay: &str, extra: &[String]) -> Run {
        let run = self.run(&self.args("ok", delay, extra));
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        run
    }

    /// Asserts every rank is gone within 15 s.
    fn assert_no_leftovers(&self) {
        assert_eq!(self.leftovers_after(15), Vec::<String>::new());
    }
}

/// A setup is its two ranks' files, and more.
impl std::ops::Deref for Setup {
    type Target = TwoRanks;
    fn deref(&self) -> &TwoRanks {
        &self.ranks
    }
}

fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn notes(run: &Run) -> Vec<String> {
    run.findings("replay.note")
        .iter()
        .filter_map(|f| f["message"].as_str().map(String::from))
        .collect()
}

/// What each rank wrote: rank 1's argv and environment as the card records them, through sshd,
/// in a session of its own; rank 0 here.
fn check_argv_and_env(s: &Setup) {
    let r1 = s.argv_info(1).unwrap_or_else(|| {
        let log = std::fs::read_to_string(s.out().join("engine-logs/rank1.log"));
        panic!("rank 1 wrote no argv; its log: {log:?}")
    });
    let r0 = s.argv_info(0).expect("rank 0 wrote its argv");
    let argv: Vec<String> = serde_json::from_value(r1["argv"].clone()).unwrap();
    assert_eq!(argv[0], s.script.display().to_string());
    assert_eq!(
        &argv[argv.len() - s.odd.len()..],
        &s.odd[..],
        "argv changed on the way"
    );
    assert_eq!(r1["env"]["FAKE_NOTE"], "$(id); it's \"q\"\nline2 ✓");
    assert_eq!(r1["env"]["FAKE_BOX"], "second");
    assert_eq!(r0["env"]["FAKE_BOX"], "head");
    // Rank 1 came through the sshd, in a session and process group of its own; rank 0 did not.
    assert!(r1["env"]["SSH_CONNECTION"].is_string(), "{r1}");
    assert!(r0["env"].get("SSH_CONNECTION").is_none(), "{r0}");
    assert_eq!((&r1["pgid"], &r1["sid"]), (&r1["pid"], &r1["pid"]), "{r1}");
    let argv0: Vec<String> = serde_json::from_value(r0["argv"].clone()).unwrap();
    assert_eq!(argv, argv0, "the ranks' argv differ");
}

#[test]
fn rank_1_runs_on_the_box_over_ssh_with_its_argv_and_environment_verbatim() {
    let (sshd, s) = or_skip!(sshd_and_setup("rank_1_runs_on_the_box_over_ssh"));
    // Both ranks wait 2 s before they serve, so rank 1 is up (and has written its argv) before
    // rank 0 answers and the replay measures and ends (a real rank 0 waits for its peers).
    let mut extra = sshd.args("second");
    extra.extend(["--allow-env".into(), "LD_LIBRARY_PATH".into()]);
    let run = s.replay_ok("2", &extra);
    check_argv_and_env(&s);
    let ran: Vec<_> = std::fs::read_dir(s.tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("ran"))
        .collect();
    assert!(ran.is_empty(), "an argv item ran as a command: {ran:?}");
    // Rank 1's output comes into its log here (while it runs: see the dropped-connection test).
    let log = std::fs::read_to_string(s.out().join("engine-logs/rank1.log")).unwrap();
    assert_has(&log, "rigaudit-remote: rank started on");
    let notes = notes(&run);
    sshd.assert_rank_1_came_through(&notes);
    assert_any(&notes, |n| {
        n.starts_with("rank 0 runs here (box head")
            && n.ends_with(&format!("sha256 {}", sha_file(&python3())))
    });
    let nccl = format!(
        "rank 1: NCCL on box second: {}/nccl/libnccl.so.2.30.7 sha256 ",
        s.tmp.path().display()
    );
    assert_any(&notes, |n| {
        n.starts_with(&nccl)
            && n.contains("(matches the card's ")
            && n.contains("version 2.30.7 (read from its text, not loaded")
    });
    assert_any(&notes, |n| n == "rank 1 stopped (exit code 0)");
    // What rank 1's server mapped was read on the box (over ssh, at ready and at the end) and
    // hashed there: its executable is the python3 this machine has (the box is this machine).
    let report = run.json();
    let rank1 = report["loaded"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rank"] == 1)
        .unwrap_or_else(|| panic!("no rank 1 in {:#}", report["loaded"]));
    assert!(
        rank1["host"].as_str().unwrap().contains("127.0.0.1"),
        "{rank1:#}"
    );
    assert_eq!(rank1["read_at"], json!(["ready", "end"]), "{rank1:#}");
    let objects = rank1["objects"].as_array().unwrap();
    let exe = objects.iter().find(|o| o["role"] == "executable").unwrap();
    assert_eq!(exe["sha256"], sha_file(&python3()), "{exe:#}");
    let python_size = std::fs::metadata(python3().canonicalize().unwrap())
        .unwrap()
        .len();
    assert_eq!(exe["size"], python_size, "{exe:#}");
    let libc = objects
        .iter()
        .find(|o| o["path"].as_str().unwrap().contains("libc.so"))
        .unwrap_or_else(|| panic!("no libc in {objects:#?}"));
    assert_eq!(libc["role"], "library");
    let libc_path = std::path::Path::new(libc["path"].as_str().unwrap());
    assert_eq!(libc["sha256"], sha_file(libc_path));
    assert!(
        about(&run, "loaded.not-read").is_empty(),
        "{:?}",
        about(&run, "loaded.not-read")
    );
    // A rank on another machine: its GPU is not this machine's NVML's to read.
    assert_any(&notes, |n| {
        n.starts_with("gpu: not read: ranks run on other machines")
    });
    s.assert_no_leftovers();
}

#[test]
fn a_digest_mismatch_on_the_box_is_refused_before_any_rank_starts() {
    let (sshd, s) = or_skip!(sshd_and_setup("a_digest_mismatch_on_the_box"));
    // The box's "engine" is another file: python3 with one byte more.
    let other = s.tmp.path().join("python3-other");
    let mut bytes = std::fs::read(python3()).unwrap();
    bytes.push(0);
    std::fs::write(&other, bytes).unwrap();
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut extra = sshd.args("second");
    extra.extend(["--box-engine".into(), format!("second={}", other.display())]);
    let run = s.run(&s.args("ok", "0", &extra));
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    run.assert_stderr_has("refusing to run");
    run.assert_stderr_has("on box second");
    run.assert_stderr_has(&sha_file(&other));
    run.assert_stderr_has("--trust-executable");
    assert!(
        s.argv_info(0).is_none() && s.argv_info(1).is_none(),
        "a rank started"
    );
    assert!(s.leftovers().is_empty(), "{:?}", s.leftovers());
}

#[test]
fn an_unreachable_box_is_a_clear_error_naming_it() {
    let s = Setup::new(None);
    let closed = free_port();
    let extra: Vec<String> = [
        "--trust-executable".to_string(),
        "--box".into(),
        format!("second=nobody@127.0.0.1:{closed}"),
        "--ssh-config".into(),
        "/dev/null".into(),
    ]
    .to_vec();
    let run = s.run(&s.args("ok", "0", &extra));
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    run.assert_stderr_has(&format!(
        "box second (nobody@127.0.0.1:{closed}): cannot reach it over ssh"
    ));
    assert!(s.argv_info(0).is_none(), "rank 0 started");
    // A box the card does not name is refused too.
    let extra = [
        "--trust-executable".into(),
        "--box".into(),
        "third=h".into(),
    ];
    let run = s.run(&s.args("ok", "0", &extra));
    run.assert_exit_saying(2, "the card names no box 'third'; its boxes: head, second");
}

/// Starts the replay in the background, rank 0 (and rank 1) slow to serve, rank 1 on the box;
/// returns once rank 1 runs there (it has written its argv file), with its pid on the box.
fn start_hanging(s: &Setup, sshd: &Sshd) -> (Child, i64) {
    start_in_background(s, sshd, "slow-start", "120")
}

/// Starts the replay in the background with rank 0 in `mode`; returns once both ranks run, with
/// rank 1's pid on the box.
fn start_in_background(s: &Setup, sshd: &Sshd, mode: &str, delay: &str) -> (Child, i64) {
    let mut extra = sshd.args("second");
    extra.push("--trust-executable".into());
    let child = Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(s.args(mode, delay, &extra))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    s.both_started();
    let info = s.argv_info(1).expect("rank 1 started on the box");
    assert!(s.argv_info(0).is_some(), "rank 0 started");
    let pid = info["pid"].as_i64().unwrap();
    if !alive(pid) {
        // Seen once in a full run of the suite on 2 busy cores (2026-12-03), never alone: say
        // what the replay said when rank 1 is gone before the test could act on it.
        let (code, err) = finish(child);
        panic!("rank 1 (pid {pid}) ended before the test acted on it; the replay exited {code:?}:\n{err}");
    }
    (child, pid)
}

/// Waits for the replay to end; its exit code and what it printed.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status.code(), err)
}

/// The replay's child that runs `ssh` for a rank (its command line carries the wrapper).
fn ssh_client_of(replay: u32) -> Vec<libc::pid_t> {
    common::procs::pids_naming("rigaudit-rank")
        .into_iter()
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1).map(String::from));
            ppid == Some(replay.to_string())
        })
        .collect()
}

/// Kills the replay with `sig` while both ranks run: neither rank survives, on either side.
fn killed_replay_leaves_nothing(sig: libc::c_int) {
    let sshd = or_skip!(sshd_or_skip("killed_replay_leaves_nothing"));
    let s = Setup::new(None);
    let (child, remote) = start_hanging(&s, &sshd);
    // SAFETY: kill(2) on the replay this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
    let (code, err) = finish(child);
    if sig != libc::SIGKILL {
        // The handler's exit code, also when the replay's own thread sees the ssh client end
        // under the handler's SIGTERM first.
        assert_eq!(code, Some(130), "{err}");
    }
    assert_eq!(
        s.leftovers_after(20),
        Vec::<String>::new(),
        "after signal {sig}"
    );
    assert!(!alive(remote));
}

#[test]
fn sigterm_to_the_replay_leaves_no_rank_on_the_box() {
    killed_replay_leaves_nothing(libc::SIGTERM);
}

/// Ctrl-C: SIGINT to the replay.
#[test]
fn ctrl_c_to_the_replay_leaves_no_rank_on_the_box() {
    killed_replay_leaves_nothing(libc::SIGINT);
}

#[test]
fn sigkill_of_the_replay_leaves_no_rank_on_the_box() {
    killed_replay_leaves_nothing(libc::SIGKILL);
}

#[test]
fn a_dropped_connection_ends_the_remote_rank() {
    let sshd = or_skip!(sshd_or_skip("a_dropped_connection_ends_the_remote_rank"));
    let s = Setup::new(None);
    let (child, remote) = start_hanging(&s, &sshd);
    // Rank 1's output reaches its log here while it runs.
    let log = s.out().join("engine-logs/rank1.log");
    let loading = |log: &Path| {
        std::fs::read_to_string(log).is_ok_and(|l| l.contains("fake-engine loading pid="))
    };
    let t0 = Instant::now();
    while !loading(&log) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(loading(&log), "{:?}", std::fs::read_to_string(&log));
    let ssh = ssh_client_of(child.id());
    assert_eq!(ssh.len(), 1, "the ssh client of rank 1: {ssh:?}");
    // SAFETY: kill(2) on the ssh client the test's replay started.
    unsafe {
        libc::kill(ssh[0], libc::SIGKILL);
    }
    let t0 = Instant::now();
    while alive(remote) && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !alive(remote),
        "the rank on the box outlived its connection"
    );
    // The replay sees rank 1 gone before the server was ready: a clear error, exit 2.
    let (code, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    assert_has(&err, "rank 1 exited before the server was ready");
    s.assert_no_leftovers();
}

/// `replay --plan` on the seed pages: both ranks with their boxes, where each is reached, the
/// argv and environment, and the digests that would be checked; nothing is started.
#[test]
fn the_seed_pages_plan_both_ranks_on_their_boxes() {
    let page = common::fixture("tensorfold-127-stock-2x");
    let line = "replay {} --plan --engine /opt/tensorfold/tensorfold-native \
                --box atom=auditor@spark-a --box pgx=auditor@spark-b:2222 --set {}";
    let run = rigaudit_line(
        line,
        &[page.to_str().unwrap(), "address of rank 0=10.0.0.1"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let o = &run.stdout;
    for want in [
        "rank 1 (box pgx, on auditor@spark-b:2222 over ssh)",
        "rank 0 (box atom, on auditor@spark-a over ssh)",
        "  run:  '/opt/tensorfold/tensorfold-native' 'serve' '<folder of Mia-AiLab",
        "  env:  NCCL_COMM_ID='10.0.0.1:29583'",
        "  env:  TF_GLM_RANK='1'",
        // A place whose value is wholly the user's placeholder passes (the user fills it).
        "  env:  LD_LIBRARY_PATH='<folder with libnccl.so.2.30.7>'\n",
        "on the box, with sha256sum = 441a3847",
        "NCCL libnccl.so.2.30.7 on the box = sha256 fc7ea663, version 2.30.7",
    ] {
        assert!(o.contains(want), "{want:?} not in\n{o}");
    }
    assert!(o.find("rank 1 (").unwrap() < o.find("rank 0 (").unwrap());
}

/// `replay --plan` on the second seed page with the mapping from a `--box-file`: one box here,
/// one mapped (a `--box` for the same box wins over the file); no digest recorded.
#[test]
fn the_second_seed_page_plans_from_a_box_file() {
    let page = common::fixture("mia-recipe-1104-2x");
    let dir = tempfile::tempdir().unwrap();
    let lab: &[u8] = b"# the lab\nbox-4=nobody@old-host  # replaced below\n\n";
    common::write_files(dir.path(), &[("boxes", lab)]);
    let hosts = dir.path().join("boxes");
    let run = rigaudit_line(
        "replay {} --plan --engine /srv/start.sh --box-file {} --box box-4=b4",
        &[page.to_str().unwrap(), hosts.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_stdout_has("rank 0 (box box-3, here (not mapped with --box))");
    run.assert_stdout_has("rank 1 (box box-4, on b4 over ssh)");
    run.assert_stdout_has("none recorded (refused unless --trust-executable)");
}

/// Rank 1 killed on its box while rank 0 serves: the replay stops with a failed step naming it
/// (exit 1), and what was measured before is kept.
#[test]
fn a_rank_killed_on_the_box_is_a_failed_step() {
    let sshd = or_skip!(sshd_or_skip("a_rank_killed_on_the_box_is_a_failed_step"));
    let s = Setup::new(None);
    // Rank 0 answers two requests, then holds the third until the request timeout (5 s): the
    // replay is still measuring when rank 1 dies.
    let (child, remote) = start_in_background(&s, &sshd, "hang", "0");
    // SAFETY: kill(2) on the rank this test's replay started on the "box".
    unsafe {
        libc::kill(remote as libc::pid_t, libc::SIGKILL);
    }
    let (code, err) = finish(child);
    assert_eq!(code, Some(1), "{err}");
    let report: Value = read_json(&s.tmp.path().join("report.json"));
    let failed: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "replay.step-failed")
        .filter_map(|f| f["message"].as_str().map(String::from))
        .collect();
    assert_any(&failed, |m| m.contains("rank 1 exited: exit code 137"));
    s.assert_no_leftovers();
}

/// A `--box-file` line that is not a mapping is an error naming the file and line.
#[test]
fn a_bad_box_file_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("boxes");
    std::fs::write(&hosts, "box-3=ok-host\nbox-4 spark-b\n").unwrap();
    let page = common::fixture("mia-recipe-1104-2x");
    let run = rigaudit_line(
        "replay {} --plan --box-file {}",
        &[page.to_str().unwrap(), hosts.to_str().unwrap()],
    );
    run.assert_exit_saying(2, &format!("{}:2: --box ", hosts.display()));
}

/// Asserts some finding of `check` in `run`'s report is at `severity` and says each of `says`.
#[track_caller]
fn assert_found(run: &Run, check: &str, severity: &str, says: &[&str]) {
    let found = run.findings(check);
    let hit = found.iter().any(|f| {
        let message = f["message"].as_str().unwrap_or("");
        f["severity"] == severity && says.iter().all(|s| message.contains(s))
    });
    assert!(
        hit,
        "no {severity} {check} saying {says:?}: {found:#?}\n{}",
        run.stderr
    );
}

/// `"severity" "message"` of each finding of `check`.
fn about(run: &Run, check: &str) -> Vec<String> {
    run.findings(check)
        .iter()
        .map(|f| format!("{} {}", f["severity"], f["message"]))
        .collect()
}

/// `rehash --root second=DIR --box second=...`: the card's binary and NCCL library are found and
/// hashed on the box over ssh, compared with the card, and a changed copy there is caught.
#[test]
fn rehash_reads_a_box_root_over_ssh() {
    let (sshd, s) = or_skip!(sshd_and_setup("rehash_reads_a_box_root_over_ssh"));
    let boxroot = s.box_root();
    std::fs::create_dir_all(boxroot.join("opt/bin")).unwrap();
    std::fs::create_dir_all(boxroot.join("lib")).unwrap();
    std::fs::copy(python3(), boxroot.join("opt/bin/python3")).unwrap();
    let lib = boxroot.join("lib/libnccl.so.2.30.7");
    std::fs::copy(s.tmp.path().join("nccl/libnccl.so.2.30.7"), &lib).unwrap();
    let root = format!("second={}", boxroot.display());
    let rehash = || s.rehash(&s.bundle, root.clone(), sshd.args("second"));
    let at = sshd.at(boxroot.display());
    let run = rehash();
    assert_found(&run, "rehash.binary-digest", "info", &[&at]);
    assert_found(&run, "rehash.nccl-digest", "info", &[&at]);
    let version = about(&run, "rehash.nccl-version");
    assert_any(&version, |f| f.contains("2.30.7"));
    // The copy on the box changed: caught.
    std::fs::write(&lib, b"another library").unwrap();
    let run = rehash();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_found(&run, "rehash.nccl-digest", "error", &[&at]);
}

impl Sshd {
    /// Asserts a replay note says rank 1 ran on box `second` through this sshd, its executable
    /// matching the card's.
    fn assert_rank_1_came_through(&self, notes: &[String]) {
        let place = format!(
            "rank 1 runs on box second ({}@127.0.0.1:{}) over ssh",
            self.user, self.port
        );
        assert_any(notes, |n| {
            n.starts_with(&place) && n.contains("matches the card's")
        });
    }

    /// A policy file's `[boxes]` and `[ssh]` that reach this sshd as box `name` (at `dest`, or
    /// this sshd's own address) and trust only its key.
    fn policy(&self, name: &str, dest: Option<&str>) -> String {
        let d = self.dir.path().display();
        let here = format!("{}@127.0.0.1:{}", self.user, self.port);
        format!(
            "fail_on = \"error\"\n\n[boxes]\n{name} = \"{}\"\n\n[ssh]\nconfig = \"/dev/null\"\n\
             options = [\"IdentityFile={d}/user_key\", \"IdentitiesOnly=yes\", \
             \"UserKnownHostsFile={d}/known_hosts\", \"GlobalKnownHostsFile=/dev/null\", \
             \"StrictHostKeyChecking=yes\", \"LogLevel=ERROR\"]\n",
            dest.unwrap_or(&here)
        )
    }
}

/// A nightly gate's replay: the box map and the ssh options come only from `--policy`; rank 1
/// reaches the box through the test sshd as with `--box` flags.
#[test]
fn a_replay_takes_its_boxes_from_the_policy_file() {
    let (sshd, s) = or_skip!(sshd_and_setup(
        "a_replay_takes_its_boxes_from_the_policy_file"
    ));
    let policy = s.tmp.path().join("gate.toml");
    std::fs::write(&policy, sshd.policy("second", None)).unwrap();
    let extra: Vec<String> = [
        "--allow-env",
        "LD_LIBRARY_PATH",
        "--policy",
        policy.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let run = s.replay_ok("2", &extra);
    check_argv_and_env(&s);
    let notes = notes(&run);
    sshd.assert_rank_1_came_through(&notes);
    assert!(!notes.iter().any(|n| n.contains("wins over")), "{notes:#?}");
    s.assert_no_leftovers();
}

/// A `--box` for a box the policy file maps wins over the file's entry (which points at a closed
/// port), and a replay note says so; an `--ssh-option` of a key the file sets is noted too.
#[test]
fn a_box_flag_overrides_the_policy_files_entry() {
    let (sshd, s) = or_skip!(sshd_and_setup(
        "a_box_flag_overrides_the_policy_files_entry"
    ));
    let policy = s.tmp.path().join("gate.toml");
    let closed = format!("nobody@127.0.0.1:{}", free_port());
    std::fs::write(&policy, sshd.policy("second", Some(&closed))).unwrap();
    let mut extra: Vec<String> = ["--allow-env", "LD_LIBRARY_PATH", "--policy"]
        .map(String::from)
        .to_vec();
    extra.push(policy.display().to_string());
    extra.extend(sshd.args("second"));
    let run = s.replay_ok("2", &extra);
    check_argv_and_env(&s);
    let here = format!("{}@127.0.0.1:{}", sshd.user, sshd.port);
    let want = format!(
        "box second: --box second={here} ({here}) wins over {}: at /boxes/second ({closed})",
        policy.display()
    );
    let notes = notes(&run);
    assert!(notes.iter().any(|n| n == &want), "{want}\n{notes:#?}");
    assert_any(&notes, |n| {
        n.starts_with("--ssh-option LogLevel=ERROR wins over")
            && n.contains(": at /ssh/options/5 (LogLevel=ERROR)")
    });
    assert_any(&notes, |n| {
        n.starts_with("--ssh-config /dev/null wins over")
    });
    s.assert_no_leftovers();
}

/// Malformed `[boxes]` and `[ssh]` entries of a policy file are refused (exit 2) with the file,
/// the JSON pointer of the entry and what was expected; nothing is started.
#[test]
fn malformed_policy_boxes_are_refused_with_their_pointer() {
    let s = Setup::new(None);
    let policy = s.tmp.path().join("gate.toml");
    let f = policy.display().to_string();
    for (text, want) in [
        (
            "[boxes]\nsecond = \"auditor@spark b\"\n",
            format!("{f}: at /boxes/second: 'auditor@spark b': the host must be a name or an address; expected [USER@]HOST[:PORT]"),
        ),
        (
            "[boxes]\nsecond = \"h:99999\"\n",
            format!("{f}: at /boxes/second: 'h:99999': \"99999\" is not a port; expected [USER@]HOST[:PORT]"),
        ),
        (
            "[boxes]\nthird = \"spark-c\"\n",
            format!("{f}: at /boxes/third: the card names no box 'third'; its boxes: head, second"),
        ),
        (
            "[ssh]\noptions = [\"LogLevel=ERROR\", \"ProxyCommand=sh -c id\"]\n",
            format!("{f}: at /ssh/options/1: 'ProxyCommand' is not an ssh option rigaudit passes; expected one of: "),
        ),
        (
            "[boxes]\nsecond = 22\n",
            format!("{f}: does not follow the policy schema (rigaudit schema policy): at /boxes/second: "),
        ),
        (
            "[ssh]\nconfig = \"x\"\nproxy = \"y\"\n",
            format!("{f}: does not follow the policy schema (rigaudit schema policy): at /ssh: "),
        ),
    ] {
        std::fs::write(&policy, text).unwrap();
        let extra = ["--policy".to_string(), f.clone(), "--plan".into()];
        let run = s.run(&s.args("ok", "0", &extra));
        assert_eq!(run.code, 2, "{text}\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(&want), "{want}\nnot in\n{}", run.stderr);
        assert!(s.argv_info(0).is_none(), "rank 0 started");
    }
}

/// A small checkpoint folder made by the test; the card records three of its files.
fn checkpoint_bundle(s: &Setup, ckpt: &Path) -> PathBuf {
    write_files(
        ckpt,
        &[
            ("config.json", b"{\"layers\": 2}"),
            ("model.safetensors", b"weights as hashed on the box"),
            // An odd name: it reaches sha256sum as data (stdin), never as shell words.
            ("sub dir/it's $(touch x); `id`.json", b"{}"),
            (".cache/huggingface/lock", b"not a checkpoint file"),
        ],
    );
    // A link to a file counts as the file (a hub client's snapshot is made of links).
    std::os::unix::fs::symlink("config.json", ckpt.join("linked.json")).unwrap();
    let mut card: Value = read_json(&s.bundle.join("card.json"));
    card["checkpoint"]["files"] = json!([
        {"path": "config.json", "sha256": sha("{\"layers\": 2}")},
        {"path": "model.safetensors", "sha256": sha("the weights the page ran")},
        {"path": "tokenizer.json", "sha256": sha("{}")},
    ]);
    let b = s.tmp.path().join("with-checkpoint");
    std::fs::create_dir_all(&b).unwrap();
    write_bundle(&b, &card);
    b
}

/// The checkpoint-files finding's message and data of a rehash.
fn checkpoint_finding(run: &Run) -> (String, Value) {
    let f = run.findings("rehash.checkpoint-files");
    assert_eq!(f.len(), 1, "{f:#?}\n{}", run.stderr);
    (
        f[0]["message"].as_str().unwrap().to_string(),
        f[0]["data"].clone(),
    )
}

/// `rehash --root second=DIR` hashes the checkpoint folder in DIR on the box: the same files and
/// digests as a local rehash of that folder; one file matches the card, one changed, one missing.
#[test]
fn rehash_reads_a_checkpoint_folder_on_a_box_over_ssh() {
    let (sshd, s) = or_skip!(sshd_and_bare_setup(
        "rehash_reads_a_checkpoint_folder_on_a_box_over_ssh"
    ));
    let boxroot = s.box_root();
    let bundle = checkpoint_bundle(&s, &boxroot.join("models/GLM"));
    // A file name that is not UTF-8 (a name on Linux is bytes): named to the box by its bytes.
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad\xffname.json");
        std::fs::write(boxroot.join("models/GLM").join(name), b"{}").unwrap();
    }
    let rehash = |root: String, extra: Vec<String>| s.rehash(&bundle, root, extra);
    let remote = rehash(format!("second={}", boxroot.display()), sshd.args("second"));
    assert_eq!(remote.code, 1, "{}\n{}", remote.stdout, remote.stderr);
    let (msg, data) = checkpoint_finding(&remote);
    let at = sshd.at(format!("{}/models/GLM", boxroot.display()));
    assert_has(&msg, &at);
    assert_eq!(data["matched_full"], 1, "{data:#}");
    let differ: Vec<String> = data["differ"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["path"].as_str().unwrap(),
                d["kind"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        differ,
        [
            "model.safetensors changed",
            "bad\u{fffd}name.json only-here",
            "linked.json only-here",
            "sub dir/it's $(touch x); `id`.json only-here",
            "tokenizer.json missing",
        ],
        "{data:#}"
    );
    assert!(
        !boxroot.join("models/GLM/x").exists(),
        "a name ran as a command"
    );
    // The local rehash of the same folder finds the same files with the same digests.
    let local = rehash(format!("second={}", boxroot.display()), Vec::new());
    let (local_msg, local_data) = checkpoint_finding(&local);
    assert_eq!(local_data, data, "{local_msg}\n{msg}");
}

/// A bundle whose card records a package `file` (digest `pkg`) holding the binary
/// `tensorfold-native` (digest `bin`).
fn package_bundle(s: &Setup, name: &str, file: &str, pkg: &str, bin: &str) -> PathBuf {
    let mut card: Value = read_json(&s.bundle.join("card.json"));
    card["engine"]["package"] = json!({"file": file, "sha256": pkg});
    card["engine"]["binary"] = json!({"path": "tensorfold-native", "sha256": bin});
    card["nccl"] = Value::Null;
    let b = s.tmp.path().join(name);
    std::fs::create_dir_all(&b).unwrap();
    write_bundle(&b, &card);
    b
}

/// `rehash --root second=DIR`: a package on the box is streamed (`cat` over ssh) into the local
/// member reader: the package's digest and its binary member's, a tar.gz that matches the card
/// and a zip whose member changed; nothing is copied beside it.
#[test]
fn rehash_reads_the_binary_inside_a_package_on_a_box() {
    let (sshd, s) = or_skip!(sshd_and_bare_setup(
        "rehash_reads_the_binary_inside_a_package_on_a_box"
    ));
    let boxroot = s.box_root();
    std::fs::create_dir_all(boxroot.join("dl")).unwrap();
    let exe = std::fs::read(python3()).unwrap();
    let tgz = boxroot.join("dl/tensorfold-1.2.7.tar.gz");
    let member = ("tensorfold-1.2.7/tensorfold-native", &exe[..]);
    write_tar_gz(&tgz, &[member], flate2::Compression::fast());
    let zip_path = boxroot.join("dl/engine.zip");
    {
        use std::io::Write;
        let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("engine/tensorfold-native", opts).unwrap();
        z.write_all(b"not the engine the page ran").unwrap();
        z.finish().unwrap();
    }
    let exe_sha = sha_file(&python3());
    let root = format!("second={}", boxroot.display());
    let rehash = |bundle: &Path| s.rehash(bundle, root.clone(), sshd.args("second"));
    let at = sshd.at(format!("{}/dl/", boxroot.display()));
    let b = package_bundle(
        &s,
        "tgz",
        "tensorfold-1.2.7.tar.gz",
        &sha_file(&tgz),
        &exe_sha,
    );
    let run = rehash(&b);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let tgz_at = format!("{at}tensorfold-1.2.7.tar.gz");
    let matches = "matches the full digest";
    assert_found(&run, "rehash.package-digest", "info", &[&tgz_at, matches]);
    let member = "tensorfold-1.2.7.tar.gz!tensorfold-1.2.7/tensorfold-native";
    assert_found(&run, "rehash.binary-digest", "info", &[member, matches]);
    let b = package_bundle(&s, "zip", "engine.zip", &sha_file(&zip_path), &exe_sha);
    let run = rehash(&b);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let zip_member = format!("{at}engine.zip!engine/tensorfold-native");
    assert_found(&run, "rehash.binary-digest", "error", &[&zip_member]);
    let left: Vec<_> = std::fs::read_dir(boxroot.join("dl"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
