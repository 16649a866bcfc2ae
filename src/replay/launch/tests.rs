use super::*;

#[test]
fn a_labelled_steps_lines_go_to_their_tasks_logs_without_the_label() {
    assert_eq!(task_label(b"1: up\n"), Some((1, &b"up\n"[..])));
    assert_eq!(task_label(b" 7: x"), Some((7, &b"x"[..])));
    for no in [&b"srun: error: x"[..], b": x", b"12 x", b"", b"1:x"] {
        assert_eq!(task_label(no), None, "{no:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| Mutex::new(File::create(dir.path().join(n)).unwrap());
    let logs = Logs {
        files: vec![file("a"), file("b")],
        labelled: true,
    };
    assert_eq!(logs.route(b"1: hi\n", None), (1, &b"hi\n"[..]));
    assert_eq!(logs.route(b"0: hi\n", None), (0, &b"hi\n"[..]));
    assert_eq!(logs.route(b"2: hi\n", None), (0, &b"2: hi\n"[..]));
    assert_eq!(logs.route(b"srun: x\n", None), (0, &b"srun: x\n"[..]));
    assert_eq!(logs.route(b"0: rest\n", Some(1)), (1, &b"0: rest\n"[..]));
    let plain = Logs {
        files: vec![file("c")],
        labelled: false,
    };
    assert_eq!(plain.route(b"1: hi\n", None), (0, &b"1: hi\n"[..]));
}
use std::collections::BTreeMap;
use std::net::TcpListener;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_engine.py");

/// A listener on a free local port, and the port.
fn bound() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn free_port() -> u16 {
    bound().1
}

/// The rest of a python script that answers HTTP 200 on the port given as its argument.
const OK_SERVER: &str = r#"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"#;

/// The start of a python script whose rank starts a child of its own and prints its pid.
const GRANDCHILD: &str = r#"
import http.server, subprocess, sys
child = subprocess.Popen(['sleep', '60'])
print('grandchild', child.pid, flush=True)"#;

/// Rank `rank` running the python `script` with a free port as its argument, started and
/// ready; its logs' folder goes with it.
fn start_script(rank: u32, script: &str) -> (tempfile::TempDir, Running) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let port_s = port.to_string();
    let r = start(
        &[python(rank, &["-c", script, &port_s])],
        dir.path(),
        &ready(port, 20.0),
    )
    .unwrap();
    (dir, r)
}

/// The first start line of rank 0, waiting up to 2 s for the reader thread.
fn first_start_line(r: &Running) -> String {
    let until = Instant::now() + Duration::from_secs(2);
    while r.start_lines(0).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    r.start_lines(0)[0].clone()
}

fn python(rank: u32, args: &[&str]) -> Launch {
    Launch {
        rank,
        program: "python3".into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: BTreeMap::from([("PYTHONUNBUFFERED".to_string(), "1".to_string())]),
        shown: vec![],
    }
}

fn fake(port: u16, extra: &[&str]) -> Launch {
    let port = port.to_string();
    let mut a = vec![FAKE, "--port", &port];
    a.extend_from_slice(extra);
    python(0, &a)
}

fn ready(port: u16, secs: f64) -> Ready {
    Ready {
        url: format!("http://127.0.0.1:{port}/health"),
        timeout: Duration::from_secs_f64(secs),
    }
}

fn pid_gone(pid: libc::pid_t) -> bool {
    signal(pid, 0) == Err(libc::ESRCH) || crate::interrupt::zombie(&pid.to_string())
}

#[test]
fn fake_engine_starts_is_ready_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut r = start(
        &[fake(port, &["--mode", "ok", "--window", "512"])],
        dir.path(),
        &ready(port, 20.0),
    )
    .unwrap();
    let pid = r.procs[0].pgid;
    // The start line is printed before listening, so it is there once /health answers; allow
    // the reader thread a moment.
    let line = first_start_line(&r);
    assert!(
        line.starts_with("fake-engine start version=0.0.1 streams=1 window=512 "),
        "{line:?}"
    );
    assert!(line.ends_with(&format!("listen=http://127.0.0.1:{port}")));
    assert!(r.start_lines(7).is_empty());
    assert!(r.exited().is_none());
    let log = std::fs::read_to_string(dir.path().join("rank0.log")).unwrap();
    assert!(log.contains("fake-engine start"), "{log}");
    let notes = r.stop();
    assert!(
        notes.iter().any(|n| n.contains("rank 0 stopped")),
        "{notes:?}"
    );
    assert!(pid_gone(pid));
    assert!(!crate::interrupt::holds_group(pid));
    // A second stop (and the drop) does nothing more.
    assert!(r.stop().is_empty());
}

#[test]
fn slow_start_times_out_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let l = fake(port, &["--mode", "slow-start", "--start-delay", "30"]);
    let t0 = Instant::now();
    let e = match start(&[l], dir.path(), &ready(port, 1.0)) {
        Err(e) => e,
        Ok(_) => panic!("ready despite a 30 s start delay"),
    };
    assert!(t0.elapsed() < Duration::from_secs(10));
    let LaunchError::Timeout { waited, tail, .. } = &e else {
        panic!("{e}")
    };
    assert!(*waited >= Duration::from_secs(1));
    assert!(tail.contains("loading"), "{e}");
    assert!(e.to_string().contains("did not answer HTTP 200"), "{e}");
    // Find the pid through the log line the fake prints; it is also the group id.
    let log = std::fs::read_to_string(dir.path().join("rank0.log")).unwrap();
    let pid: libc::pid_t = log
        .split("pid=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {log}"));
    assert!(pid_gone(pid), "rank still there");
    assert!(!group_alive(pid), "a process of its group is still there");
}

#[test]
fn port_taken_is_an_exit_with_the_bind_error() {
    let dir = tempfile::tempdir().unwrap();
    let (_taken, port) = bound();
    let e = match start(
        &[fake(port, &["--mode", "ok"])],
        dir.path(),
        &ready(port, 20.0),
    ) {
        Err(e) => e,
        Ok(_) => panic!("ready on a taken port"),
    };
    let LaunchError::Exited { rank, status, tail } = &e else {
        panic!("{e}")
    };
    assert_eq!(*rank, 0);
    assert_eq!(status, "exit code 1");
    assert!(tail.contains("Address already in use"), "{e}");
    assert!(e
        .to_string()
        .starts_with("rank 0 exited before the server was ready"));
}

#[test]
fn spawn_failure_names_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = python(3, &[]);
    l.program = dir.path().join("no-such-engine");
    let e = match start(&[l], dir.path(), &ready(free_port(), 1.0)) {
        Err(e) => e,
        Ok(_) => panic!("started a missing program"),
    };
    assert!(matches!(e, LaunchError::Spawn { rank: 3, .. }), "{e}");
    assert!(e.to_string().contains("no-such-engine"), "{e}");
}

/// A rank that starts a child of its own and then serves: dropping `Running` ends both.
#[test]
fn drop_kills_the_group_with_a_grandchild() {
    let (_dir, r) = start_script(0, &format!("{GRANDCHILD}{OK_SERVER}"));
    let pid = r.procs[0].pgid;
    let gc: libc::pid_t = first_start_line(&r)
        .strip_prefix("grandchild ")
        .unwrap()
        .parse()
        .unwrap();
    assert!(!pid_gone(pid) && !pid_gone(gc));
    assert!(group_alive(pid));
    drop(r);
    assert!(pid_gone(pid), "the rank is still there");
    assert!(pid_gone(gc), "the grandchild is still there");
    assert!(!group_alive(pid));
}

/// Run as a child of [`sigterm_to_rigaudit_stops_the_ranks_and_exits_130`]: starts a rank
/// with a grandchild, writes its group id to the file `RIGAUDIT_TEST_PGID_FILE` names, and
/// waits to be interrupted.
#[test]
#[ignore = "helper: runs only when the interrupt test starts it"]
fn interrupt_helper() {
    let Some(out) = std::env::var_os("RIGAUDIT_TEST_PGID_FILE") else {
        return;
    };
    let (_dir, r) = start_script(0, &format!("{GRANDCHILD}{OK_SERVER}"));
    let gc = first_start_line(&r).replace("grandchild ", "");
    std::fs::write(&out, format!("{} {gc}", r.procs[0].pgid)).unwrap();
    std::thread::sleep(Duration::from_secs(60));
    panic!("not interrupted");
}

/// SIGTERM to rigaudit (the helper, another run of this test binary) stops its ranks,
/// grandchildren included, and rigaudit exits with 130.
#[test]
fn sigterm_to_rigaudit_stops_the_ranks_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pgid");
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "replay::launch::tests::interrupt_helper",
            "--nocapture",
        ])
        .env("RIGAUDIT_TEST_PGID_FILE", &file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let mut ids = String::new();
    while ids.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        ids = std::fs::read_to_string(&file).unwrap_or_default();
    }
    let ids: Vec<libc::pid_t> = ids.split_whitespace().map(|s| s.parse().unwrap()).collect();
    if ids.len() != 2 {
        let _ = helper.kill();
        let _ = helper.wait();
        panic!("the helper wrote no group id");
    }
    assert!(!pid_gone(ids[0]) && !pid_gone(ids[1]));
    signal(helper.id() as libc::pid_t, libc::SIGTERM).unwrap();
    let status = helper.wait().unwrap();
    let outcome = (
        status.code(),
        pid_gone(ids[0]),
        pid_gone(ids[1]),
        group_alive(ids[0]),
    );
    if outcome.3 {
        // Do not leave them behind when the check fails.
        let _ = signal(-ids[0], libc::SIGKILL);
    }
    assert_eq!(
        outcome,
        (Some(130), true, true, false),
        "(exit code, rank gone, grandchild gone, group alive)"
    );
}

/// A rank that ignores SIGTERM is killed after the grace period.
#[test]
fn stop_kills_what_ignores_sigterm() {
    let script = r#"
import http.server, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)"#;
    let (_dir, mut r) = start_script(0, &format!("{script}{OK_SERVER}"));
    let pid = r.procs[0].pgid;
    let t0 = Instant::now();
    let notes = r.stop();
    assert!(t0.elapsed() >= GRACE, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("SIGKILL")), "{notes:?}");
    assert!(pid_gone(pid));
}

#[test]
fn exited_reports_a_rank_that_died_after_start() {
    let script = r#"
import http.server, os, sys, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
        threading.Thread(target=lambda: (time.sleep(0.3), print('dying now', flush=True), os._exit(4))).start()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"#;
    let (_dir, mut r) = start_script(5, script);
    let until = Instant::now() + Duration::from_secs(10);
    let mut got = None;
    while got.is_none() && Instant::now() < until {
        got = r.exited();
        std::thread::sleep(Duration::from_millis(50));
    }
    let (rank, what) = got.expect("the rank did not exit");
    assert_eq!(rank, 5);
    assert!(what.starts_with("exit code 4"), "{what}");
    assert!(what.contains("dying now"), "{what}");
    // Stopping it then says it had ended by itself; a second stop does nothing more.
    assert_eq!(r.stop(), vec!["rank 5 had already ended (exit code 4)"]);
    assert!(r.stop().is_empty());
}
