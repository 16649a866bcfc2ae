//! Hostile inputs: each must end in bounded time and memory with a clear error (exit 1 or 2),
//! never hang, never read or write outside its place. See docs/security.md for the bounds.

use crate::common;

// The attack suite (issue: a hostile page runs nothing and injects nothing): one harness, one
// module per surface.
mod attack;
mod inputs;
mod outputs;
mod replay_env;
mod ssh_options;

use common::{
    argv, assert_has, decode_contract, fake_engine, fake_engine_card, fixture, python3, sha_hex,
};
use common::{assert_any, write_bundle, Copy, Run};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// tests/peak/peak.c, built once a run: it runs a program in a fork of its own and says the
/// program's exit code and peak memory (a child spawned straight from this large test binary would
/// report the binary's peak as its own).
fn peak() -> &'static Path {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("peak")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        let exe = dir.join("peak");
        common::output_ok(
            Command::new("gcc")
                .args(["-O2", "-o"])
                .arg(&exe)
                .arg(common::root().join("tests/peak/peak.c")),
        );
        exe
    })
}

/// Runs `rigaudit ARGS` with a wall-clock deadline (its process group is killed past it, and the
/// test fails) and checks its peak memory stays under 256 MiB.
fn run_within<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], deadline: Duration) -> Run {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let said = tmp.path().join("peak");
    let mut child = Command::new(peak())
        .arg(&said)
        .arg(env!("CARGO_BIN_EXE_rigaudit"))
        .args(args)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > deadline {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            panic!("rigaudit {args:?} did not end within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = String::from_utf8_lossy(&e.join().unwrap()).into_owned();
    assert!(
        status.success(),
        "the python that ran rigaudit: {status}\n{stderr}"
    );
    let said = std::fs::read_to_string(&said).unwrap();
    let (code, peak_kib) = said.split_once(' ').unwrap();
    let peak_kib: u64 = peak_kib.parse().unwrap();
    assert!(
        peak_kib < 256 * 1024,
        "rigaudit's peak memory was {peak_kib} KiB (bound 256 MiB)"
    );
    Run {
        code: code.parse().unwrap(),
        stdout: String::from_utf8_lossy(&o.join().unwrap()).into_owned(),
        stderr,
    }
}

fn verify(p: &Path) -> Run {
    run_within(
        &["verify", p.to_str().unwrap(), "--format", "json"],
        Duration::from_secs(60),
    )
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

const PAGE: &str = "tensorfold-127-stock-2x";

/// Writes a speed contract of one 4-token decode run, no load guard, at `path`.
fn write_small_contract(path: &Path) {
    let contract = json!({"parts": ["decode"], "model": "m", "prompt_ids": ["code"], "runs": 1,
        "warmups": 0, "max_tokens": 4, "sampling": {"temperature": 0.0}, "seed": 42,
        "enable_thinking": false, "cache_prompt": false,
        "server": {"slots": 1, "window": 4096}, "load_guard": null});
    std::fs::write(path, contract.to_string()).unwrap();
}

/// The path of the manifest's first file of `kind`.
fn path_of_kind(manifest: &Value, kind: &str) -> String {
    let files = manifest["files"].as_array().unwrap();
    let file = files.iter().find(|f| f["kind"] == kind).unwrap();
    file["path"].as_str().unwrap().to_string()
}

#[test]
fn fifo_manifest_is_refused_not_waited_on() {
    let d = tempfile::tempdir().unwrap();
    mkfifo(&d.path().join("bundle.json"));
    let r = verify(d.path());
    r.assert_exit_saying(2, "not a regular file (a FIFO)");
}

#[test]
fn dev_zero_manifest_is_refused() {
    let d = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.path().join("bundle.json")).unwrap();
    let r = verify(d.path());
    r.assert_exit_saying(2, "a device");
}

#[test]
fn manifest_over_its_bound_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(d.path().join("bundle.json")).unwrap();
    f.write_all(b"{\"notes\": \"").unwrap();
    f.write_all(&vec![b'x'; 9 << 20]).unwrap();
    f.write_all(b"\"}").unwrap();
    let r = verify(d.path());
    r.assert_exit_saying(2, "larger than 8 MiB, the bound for a manifest");
}

#[test]
fn fifo_card_and_contract_are_refused_as_incomplete() {
    let c = Copy::of(PAGE);
    let m = c.read_json("bundle.json");
    for kind in ["card", "speed-contract"] {
        let path = path_of_kind(&m, kind);
        std::fs::remove_file(c.path().join(&path)).unwrap();
        mkfifo(&c.path().join(&path));
    }
    let r = verify(c.path());
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.contains("a FIFO"), "{}", r.stdout);
}

#[test]
fn card_over_its_bound_is_refused() {
    let c = Copy::of(PAGE);
    let mut card = c.read_json("card.json");
    card["notes_padding"] = json!("x".repeat(5 << 20));
    c.write_json("card.json", &card);
    c.rehash();
    let r = verify(c.path());
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.contains("larger than 4 MiB, the bound for a card"));
}

#[test]
fn answers_line_over_its_bound_is_an_error_not_memory() {
    let c = Copy::of(PAGE);
    let m = c.read_json("bundle.json");
    let path = path_of_kind(&m, "quality-answers");
    // 64 MiB with no line end.
    let mut f = std::fs::File::create(c.path().join(&path)).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..64 {
        f.write_all(&block).unwrap();
    }
    drop(f);
    let r = verify(c.path());
    assert_eq!(r.code, 3, "{}", r.stderr);
    let bound = "longer than 1 MiB, the bound for one line of an answers file";
    assert!(r.stdout.contains(bound), "{}", r.stdout);
}

fn tar_with(entries: &[(&str, tar::EntryType, &[u8])], gz: bool) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let name = if gz { "b.tar.gz" } else { "b.tar" };
    let f = std::fs::File::create(d.path().join(name)).unwrap();
    let w: Box<dyn Write> = if gz {
        Box::new(flate2::write::GzEncoder::new(
            f,
            flate2::Compression::best(),
        ))
    } else {
        Box::new(f)
    };
    let mut b = tar::Builder::new(w);
    for (p, kind, body) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, p, *body).unwrap();
    }
    b.into_inner().unwrap().flush().unwrap();
    d
}

/// A FIFO member is never unpacked: a manifest that is one is refused, naming it (a raw file that
/// is one is one finding, tests/it/verify.rs).
#[test]
fn tar_with_a_fifo_member_is_refused() {
    let d = tar_with(
        &[
            ("b/bundle.json", tar::EntryType::Fifo, b""),
            ("b/card.json", tar::EntryType::Regular, b"{}"),
        ],
        false,
    );
    let r = verify(&d.path().join("b.tar"));
    r.assert_exit_saying(2, "is a FIFO, not a regular file");
}

#[test]
fn deeply_nested_tar_member_is_refused_quickly() {
    let deep = "d/".repeat(2000) + "x";
    let d = tempfile::tempdir().unwrap();
    {
        let f = std::fs::File::create(d.path().join("b.tar")).unwrap();
        let mut b = tar::Builder::new(f);
        let mut h = tar::Header::new_gnu();
        h.set_size(1);
        h.set_mode(0o644);
        // A GNU long name carries the deep path.
        b.append_data(&mut h, &deep, &b"x"[..]).unwrap();
        b.finish().unwrap();
    }
    let t = Instant::now();
    let r = verify(&d.path().join("b.tar"));
    r.assert_exit_saying(2, "bound");
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn gzip_bomb_stops_before_writing() {
    let zeros = vec![0u8; 100 << 20];
    let d = tar_with(&[("b/big.log", tar::EntryType::Regular, &zeros[..])], true);
    let packed = std::fs::metadata(d.path().join("b.tar.gz")).unwrap().len();
    assert!(packed < 1 << 20, "{packed}");
    let r = verify(&d.path().join("b.tar.gz"));
    r.assert_exit_saying(2, "archive bomb");
}

#[test]
fn quality_test_id_with_dotdot_writes_nothing_outside() {
    let d = tempfile::tempdir().unwrap();
    write_small_contract(&d.path().join("c.json"));
    let q = common::root().join("fixtures/runs/smollm2-cpu/quality");
    let qc = std::fs::read_dir(&q)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut qv: Value =
        serde_json::from_str(&std::fs::read_to_string(qc.join("contract.json")).unwrap()).unwrap();
    qv["test"] = json!("../../escaped");
    std::fs::write(d.path().join("q.json"), qv.to_string()).unwrap();
    let out = d.path().join("a/b/out");
    let r = run_within(
        &[
            "measure",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--contract",
            d.path().join("c.json").to_str().unwrap(),
            "--quality",
            &format!(
                "{}={}",
                d.path().join("q.json").display(),
                qc.join("answers.jsonl").display()
            ),
            "--out",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    );
    r.assert_exit_saying(2, "cannot be used in a file name");
    assert!(!d.path().join("a/escaped").exists());
    assert!(!d.path().join("escaped").exists());
}

#[test]
fn control_characters_and_huge_values_are_escaped_and_cut() {
    let c = Copy::of(PAGE);
    let mut m = c.read_json("bundle.json");
    m["files"].as_array_mut().unwrap().push(json!({"kind": "log",
        "path": "evil\u{1b}]0;pwned\u{7}\u{1b}[2J.txt", "sha256": null, "published": true, "reconstructed": false}));
    c.write_json("bundle.json", &m);
    // A 20 MB string where the speed result wants an object.
    let sr = path_of_kind(&m, "speed-result");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(c.path().join(&sr)).unwrap()).unwrap();
    v["server"] = json!("y".repeat(20 << 20));
    std::fs::write(c.path().join(&sr), v.to_string()).unwrap();
    c.rehash();
    let r = run_within(
        &["verify", c.path().to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(r.code == 1 || r.code == 3, "{}", r.stderr);
    assert!(!r.stdout.contains('\u{1b}'), "raw escape in the output");
    assert!(r.stdout.contains("\\u{1b}"), "{}", r.stdout);
    assert!(r.stdout.len() < 200_000, "{} bytes printed", r.stdout.len());
}

#[test]
fn path_aliases_are_read_once_and_findings_are_bounded() {
    let c = Copy::of(PAGE);
    let mut m = c.read_json("bundle.json");
    let files = m["files"].as_array_mut().unwrap();
    let first = files[0].clone();
    for i in 1..20_000 {
        let mut e = first.clone();
        e["path"] = json!(format!(
            "{}{}",
            "./".repeat(i % 50 + 1),
            first["path"].as_str().unwrap()
        ));
        files.push(e);
    }
    c.write_json("bundle.json", &m);
    let t = Instant::now();
    let r = verify(c.path());
    assert_eq!(r.code, 1, "{}", r.stderr);
    let listed = r.findings("schema.invalid").len();
    assert!(listed <= 201, "{listed} findings");
    assert!(r.stdout.contains("more schema.invalid findings not listed"));
    assert!(t.elapsed() < Duration::from_secs(30));
}

#[test]
fn rehash_never_hashes_a_link_out_of_the_bundle() {
    let c = Copy::of(PAGE);
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), b"secret outside the bundle\n").unwrap();
    let digest = sha_hex(b"secret outside the bundle\n");
    let mut m = c.read_json("bundle.json");
    m["files"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "log",
        "path": "leak.log", "sha256": "00", "published": true, "reconstructed": false}));
    c.write_json("bundle.json", &m);
    std::os::unix::fs::symlink(secret.path(), c.path().join("leak.log")).unwrap();
    let r = run_within(
        &["rehash", c.path().to_str().unwrap(), "--format", "json"],
        Duration::from_secs(60),
    );
    assert!(!r.stdout.contains(&digest), "{}", r.stdout);
    assert!(!r.stderr.contains(&digest));
}

/// The head of a 200 event-stream reply.
const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// Writes `head`, then `chunk` again and again until the client goes away.
fn endless(s: &mut std::net::TcpStream, head: &[u8], chunk: &[u8]) {
    let _ = s.write_all(head);
    while s.write_all(chunk).is_ok() {}
}

/// A loopback server whose every answer is hostile in one way.
fn hostile_server(mode: &'static str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if s.read(&mut b).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(b[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let models = r#"{"object":"list","data":[{"id":"m","context_window":4096}]}"#;
                if head.starts_with("GET /v1/models") {
                    if mode == "endless-models" {
                        let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n[";
                        return endless(&mut s, head, &[b' '; 65536]);
                    }
                    let _ = s.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{models}",
                            models.len()
                        )
                        .as_bytes(),
                    );
                    return;
                }
                if head.starts_with("POST") {
                    match mode {
                        "slow" => {
                            let _ = s.write_all(SSE_HEAD);
                            // One byte every half second, forever.
                            while s.write_all(b":").is_ok() {
                                std::thread::sleep(Duration::from_millis(500));
                            }
                        }
                        "endless-stream" => {
                            let event = format!(
                                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
                                "x".repeat(4000)
                            )
                            .repeat(16);
                            endless(&mut s, SSE_HEAD, event.as_bytes());
                        }
                        "endless-line" => {
                            let head = [SSE_HEAD, b"data: "].concat();
                            endless(&mut s, &head, &[b'x'; 65536]);
                        }
                        _ => {
                            let head =
                                b"HTTP/1.1 500 Internal Server Error\r\nconnection: close\r\n\r\n";
                            endless(&mut s, head, &[b'e'; 65536]);
                        }
                    }
                    return;
                }
                let _ = s.write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            });
        }
    });
    format!("http://{addr}/v1")
}

/// Runs measure against the hostile server; returns the run, its wall time and the errors the
/// written speed result records.
fn measure_against(mode: &'static str) -> (Run, Duration, Vec<String>) {
    let base = hostile_server(mode);
    let d = tempfile::tempdir().unwrap();
    write_small_contract(&d.path().join("c.json"));
    let out = d.path().join("out");
    let t = Instant::now();
    let contract = d.path().join("c.json");
    let line = "measure --base-url {} --contract {} --out {} --timeout 3 --quiet";
    let args = argv(
        line,
        &[&base, contract.to_str().unwrap(), out.to_str().unwrap()],
    );
    let r = run_within(&args, Duration::from_secs(90));
    let took = t.elapsed();
    let errors = std::fs::read_to_string(out.join("speed/speed-result.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| {
            v["requests"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|q| q["error"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (r, took, errors)
}

#[test]
fn a_server_sending_a_byte_at_a_time_meets_the_total_deadline() {
    let (r, took, errors) = measure_against("slow");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    r.assert_stderr_has("got no answer: decode");
    assert_any(&errors, |e| e.contains("total deadline"));
    assert!(took < Duration::from_secs(60), "{took:?}");
}

#[test]
fn an_endless_sse_line_is_bounded() {
    let (r, _, errors) = measure_against("endless-line");
    assert!(r.code == 1 || r.code == 2, "{}{}", r.stdout, r.stderr);
    assert_any(&errors, |e| e.contains("the bound for one line"));
}

#[test]
fn an_endless_error_body_is_bounded() {
    let (r, _, errors) = measure_against("endless-error");
    assert!(r.code == 1 || r.code == 2, "{}{}", r.stdout, r.stderr);
    assert_any(&errors, |e| e.contains("the bound for a error body"));
}

#[test]
fn an_endless_models_reply_is_a_clear_error() {
    let (r, _, _) = measure_against("endless-models");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    r.assert_stderr_has("the bound for a /v1/models reply");
}

#[test]
fn fixture_still_verifies() {
    // The bounds do not touch an honest bundle.
    let r = verify(&fixture(PAGE));
    assert!(r.code == 1, "{}", r.stderr);
}

/// A card whose rank env sets LD_PRELOAD to a library that writes a marker file when loaded:
/// replay refuses the variable (no marker), says so in the report, and runs the rest.
#[test]
fn recorded_ld_preload_is_refused_on_replay() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("MARKER");
    let lib = d.path().join("evil.so");
    let src = d.path().join("evil.c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void f(void) {{ FILE *x = fopen(\"{}\", \"w\"); if (x) fclose(x); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let script = fake_engine(d.path(), "fake_engine.py");
    let b = d.path().join("bundle");
    let env = json!({"LD_PRELOAD": lib.to_str().unwrap(), "PYTHONSTARTUP": "/x"});
    let card = fake_engine_card(&script, &["--mode", "ok"], env);
    write_bundle(&b, ("evil", "evil"), &card, &decode_contract(1, 4));
    let replay = |out: &str, allow: &str| {
        let (py, out) = (python3(), d.path().join(out));
        let line = format!(
            "replay {{}} --engine {{}} --trust-executable {allow} --out {{}} --format json --quiet \
            --request-timeout 10 --ready-timeout 30 --confirm false"
        );
        let values = [
            b.to_str().unwrap(),
            py.to_str().unwrap(),
            out.to_str().unwrap(),
        ];
        run_within(&argv(&line, &values), Duration::from_secs(120))
    };
    let r = replay("out", "");
    assert!(!marker.exists(), "the recorded LD_PRELOAD library ran");
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("recorded environment refused") && all.contains("LD_PRELOAD"),
        "{all}"
    );
    if !built {
        eprintln!("cc not available: the marker library was not built; the refusal was checked");
        return;
    }
    // The control: allowed by name, the library is loaded (so the test above could see it).
    let r = replay("out2", "--allow-env LD_PRELOAD");
    assert!(
        marker.exists(),
        "--allow-env LD_PRELOAD did not pass it: {}{}",
        r.stdout,
        r.stderr
    );
}

/// A GNU long-name entry declaring 1 GiB: the tar reader would hold it whole; refused at its
/// header instead.
#[test]
fn huge_tar_long_name_is_refused_at_its_header() {
    let d = tempfile::tempdir().unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_path("././@LongLink").unwrap();
    h.set_entry_type(tar::EntryType::GNULongName);
    h.set_size(1 << 30);
    h.set_cksum();
    let mut bytes = h.as_bytes().to_vec();
    bytes.extend(vec![b'a'; 1 << 20]);
    std::fs::write(d.path().join("b.tar"), &bytes).unwrap();
    let r = verify(&d.path().join("b.tar"));
    r.assert_exit_saying(2, "metadata entry");
}

/// A manifest just under its bound, holding ~100,000 entries: bounded time and memory.
#[test]
fn manifest_of_many_entries_stays_small() {
    let d = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut len = 0;
    let mut i = 0;
    while len < (7 << 20) {
        let e = json!({"kind": "log", "path": format!("l/{i}.txt"), "sha256": null,
            "published": false, "reconstructed": false});
        len += e.to_string().len() + 1;
        files.push(e);
        i += 1;
    }
    let m = json!({"format": "rigaudit-bundle/1", "id": "many", "title": "many",
        "setup": {"engine": "e", "checkpoint": "c", "hardware": "h"}, "files": files});
    std::fs::write(d.path().join("bundle.json"), m.to_string()).unwrap();
    let t = Instant::now();
    let r = verify(d.path());
    assert!(r.code == 1 || r.code == 3, "{}", r.stderr);
    assert!(r.stdout.len() < 1 << 20, "{} bytes printed", r.stdout.len());
    eprintln!("{i} entries verified in {:?}", t.elapsed());
}

#[test]
fn tar_of_too_many_entries_is_refused() {
    let d = tempfile::tempdir().unwrap();
    {
        let f = std::fs::File::create(d.path().join("b.tar")).unwrap();
        let mut b = tar::Builder::new(f);
        for _ in 0..10_001 {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            h.set_mode(0o755);
            b.append_data(&mut h, "b/", std::io::empty()).unwrap();
        }
        b.finish().unwrap();
    }
    let r = verify(&d.path().join("b.tar"));
    r.assert_exit_saying(2, "more than 10000 entries");
}

#[test]
fn endless_or_fifo_side_inputs_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    for bad in ["/dev/zero", fifo.to_str().unwrap()] {
        // rehash --compare
        let r = run_within(
            &[
                "rehash",
                fixture(PAGE).to_str().unwrap(),
                "--compare",
                bad,
                "--format",
                "json",
            ],
            Duration::from_secs(60),
        );
        r.assert_exit_saying(2, "not a regular file");
        // measure --contract, and --quality questions
        let r = run_within(
            &[
                "measure",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--contract",
                bad,
                "--out",
                d.path().join("o").to_str().unwrap(),
            ],
            Duration::from_secs(30),
        );
        r.assert_exit_saying(2, "not a regular file");
    }
    assert!(!d.path().join("o").exists());
}

#[test]
fn an_endless_stream_is_bounded() {
    let (r, took, errors) = measure_against("endless-stream");
    eprintln!("endless stream: {took:?}: {:?}", errors.first());
    assert!(r.code == 1 || r.code == 2, "{}{}", r.stdout, r.stderr);
    assert_any(&errors, |e| {
        e.contains("the bound for a streamed reply") || e.contains("total deadline")
    });
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// Processes whose command line holds `needle`.
fn pids_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmd).contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// `kill -9` of rigaudit during a replay: the engine it started dies with it (PR_SET_PDEATHSIG).
#[test]
fn the_engine_does_not_outlive_a_killed_replay() {
    let d = tempfile::tempdir().unwrap();
    let script = fake_engine(d.path(), "fake_engine_pdeathsig.py");
    let b = d.path().join("bundle");
    let card = fake_engine_card(&script, &["--mode", "hang", "--after", "0"], json!({}));
    write_bundle(&b, ("hang", "hang"), &card, &decode_contract(1, 4));
    let py = python3();
    let out = d.path().join("out");
    let line = "replay {} --engine {} --trust-executable --out {} --quiet \
        --request-timeout 120 --ready-timeout 30";
    let values = [
        b.to_str().unwrap(),
        py.to_str().unwrap(),
        out.to_str().unwrap(),
    ];
    let mut child = Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(argv(line, &values))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let needle = script.to_str().unwrap().to_string();
    let start = Instant::now();
    while pids_with(&needle).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the engine never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let it reach the hanging request.
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap(); // SIGKILL: no handler of rigaudit runs
    child.wait().unwrap();
    let start = Instant::now();
    while !pids_with(&needle).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the engine outlived the killed replay: {:?}",
            pids_with(&needle)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_vllm_result_whose_requests_each_span_a_day_ends_quickly() {
    // vLLM's per-second concurrency counts every request in every second it spans; 100,000
    // requests of a day each must not cost 100,000 x 86,400 steps (over a minute here; the
    // difference array takes about 2 s in a debug build).
    let src =
        common::root().join("fixtures/imports/vllm/clean/openai-infqps-concurrency2-smollm2.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    let n = 100_000;
    for key in [
        "input_lens",
        "output_lens",
        "ttfts",
        "queue_times",
        "errors",
    ] {
        let first = v[key][0].clone();
        v[key] = Value::Array(vec![first; n]);
    }
    v["itls"] = json!(vec![Vec::<f64>::new(); n]);
    v["generated_texts"] = json!(vec!["x"; n]);
    v["latencies"] = json!(vec![85_000.0; n]);
    v["start_times"] = json!((0..n).map(|i| i as f64 * 0.01).collect::<Vec<_>>());
    v["completed"] = json!(n);
    v["num_prompts"] = json!(n);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vllm-day-long.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let run = run_within(
        &["verify", file.to_str().unwrap(), "--format", "json"],
        Duration::from_secs(60),
    );
    assert!(
        run.code == 0 || run.code == 1,
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_has(&run.stdout, "vllm.max_concurrent_requests");
}

/// A deterministic xorshift stream for the mutations below.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// One mutation of a file's bytes: cut it, flip a byte, put an extreme number where a digit was,
/// repeat a stretch, or drop a line.
fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let at = rng.below(b.len());
    match rng.below(5) {
        0 => b.truncate(at),
        1 => b[at] ^= 1 << rng.below(8),
        2 => {
            if let Some(d) = b[at..].iter().position(|c| c.is_ascii_digit()) {
                let extreme = ["1e308", "-1", "184467440737095516160", "NaN", "0"][rng.below(5)];
                b.splice(at + d..at + d + 1, extreme.bytes());
            }
        }
        3 => {
            let len = rng.below(4096).min(b.len() - at);
            let stretch = b[at..at + len].to_vec();
            b.splice(at..at, stretch.iter().cycle().take(len * 8).copied());
        }
        _ => {
            let start = b[..at]
                .iter()
                .rposition(|c| *c == b'\n')
                .map_or(0, |i| i + 1);
            let end = b[at..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(b.len(), |i| at + i + 1);
            b.drain(start..end);
        }
    }
    b
}

#[test]
fn mutated_files_of_every_imported_tool_end_in_a_verdict_or_a_clear_error() {
    // A file of each import fixture, mutated 40 times: the reader ends within its bound with
    // exit 0, 1 or 2 and never panics. RIGAUDIT_MUTATION_SEED picks another fixed sequence.
    let seed = std::env::var("RIGAUDIT_MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15u64);
    let mut rng = Rng(seed.max(1));
    let root = common::root().join("fixtures/imports");
    let runs = [
        ("aiperf", "failures"),
        ("guidellm", "failures"),
        ("lm-eval", "failures"),
        ("loadgen", "failures"),
        ("llama-bench", "failures"),
        ("llama-server", "failures"),
        ("llama-server", "stream-failures"),
        ("vllm", "failures"),
    ];
    let mut tried = 0;
    for (format, name) in runs {
        let src = root.join(format).join(name);
        let files: Vec<_> = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        for _ in 0..40 {
            let dir = tempfile::tempdir().unwrap();
            let victim = rng.below(files.len());
            for (i, f) in files.iter().enumerate() {
                let bytes = std::fs::read(f).unwrap();
                let bytes = if i == victim {
                    mutate(&bytes, &mut rng)
                } else {
                    bytes
                };
                std::fs::write(dir.path().join(f.file_name().unwrap()), bytes).unwrap();
            }
            let d = dir.path().to_str().unwrap();
            let run = run_within(
                &["verify", "--from", format, d, "--format", "json"],
                Duration::from_secs(30),
            );
            assert!(
                (0..=3).contains(&run.code) && !run.stderr.contains("panicked"),
                "{format}/{name} mutated {:?}: exit {}\n{}",
                files[victim],
                run.code,
                run.stderr
            );
            tried += 1;
        }
    }
    assert_eq!(tried, 320);
}

#[test]
fn a_yaml_alias_bomb_is_refused_not_expanded() {
    // Billion laughs in a GuideLLM YAML report: nine levels of ten aliases each, 10^9 values.
    let mut y = String::from("---\nlol: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let refs = vec![format!("*{prev}"); 10].join(", ");
        y.push_str(&format!("l{name}: &{name} [{refs}]\n"));
    }
    y.push_str("benchmarks:\n- request_totals: *i\n");
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("benchmarks.yaml");
    std::fs::write(&p, &y).unwrap();
    let t = Instant::now();
    let r = run_within(
        &["verify", "--from", "guidellm", p.to_str().unwrap()],
        Duration::from_secs(30),
    );
    r.assert_exit_saying(2, "alias bomb");
    assert!(r.stderr.contains("benchmarks.yaml"), "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn a_deeply_nested_yaml_report_is_refused() {
    let y = format!(
        "benchmarks:\n- request_totals: {}{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("benchmarks.yaml");
    std::fs::write(&p, &y).unwrap();
    let r = run_within(
        &["verify", "--from", "guidellm", p.to_str().unwrap()],
        Duration::from_secs(30),
    );
    r.assert_exit_saying(2, "line 2: nested more than 64 levels deep");
    assert!(r.stderr.contains("benchmarks.yaml"), "{}", r.stderr);
}
