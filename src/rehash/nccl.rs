//! Asks an NCCL library file for its version: loads that exact file (an absolute path, so the
//! dynamic loader searches nothing) and calls `ncclGetVersion`, which needs no GPU, libcuda or
//! libcudart.
//!
//! Loading runs the library's own start-up code, and a damaged library can crash the loader, so
//! the load happens in a child process (`rigaudit __nccl-version PATH`); a crash or a hang there
//! becomes "not queried: why", never a crash of rehash. When the file cannot be loaded here (built
//! for another processor, say), the version its text names (`NCCL version 2.30.7+cuda13.3`) is
//! reported instead, marked as read, not queried.
//!
//! Consent: loading runs the library's constructors, that is, code from someone else. rehash
//! loads a library the user named with `--file nccl=PATH`; one it found by walking a `--root` is
//! loaded only with `--load-nccl` (otherwise its version is read from its text, see
//! [`from_text`]); `--no-load` loads none. See docs/security.md.

use rigaudit_audit::rehash::NcclVersion;
use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the child that loads a library may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a file is no shared library, when its ELF header is missing: `None` for a file that starts
/// with one (or that cannot be read: the digest says that). Words for "not a shared library (...)".
pub fn not_library(path: &Path) -> Option<String> {
    let mut head = [0u8; 20];
    let f = crate::input::open_regular(path, "NCCL library").ok()?;
    let n = f.take(20).read(&mut head).ok()?;
    if n >= 4 && &head[..4] == b"\x7fELF" {
        return None;
    }
    let start: String = String::from_utf8_lossy(&head[..n.min(16)]).into_owned();
    Some(if n < 4 {
        format!("ELF header missing: the file holds {n} bytes")
    } else {
        format!(
            "ELF header missing; it starts with \"{}\"",
            crate::input::shown(&start)
        )
    })
}

/// The processor an ELF file is built for, from its header; `Err` when it is no ELF shared object.
pub fn elf_machine(path: &Path) -> Result<&'static str, String> {
    let mut head = [0u8; 20];
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    f.read_exact(&mut head)
        .map_err(|_| "the file is shorter than an ELF header".to_string())?;
    if &head[..4] != b"\x7fELF" {
        return Err("the file is not a shared library (ELF header missing)".into());
    }
    let m = if head[5] == 2 {
        u16::from_be_bytes([head[18], head[19]])
    } else {
        u16::from_le_bytes([head[18], head[19]])
    };
    Ok(match m {
        0x3e => "x86_64",
        0xb7 => "aarch64",
        0x03 => "x86",
        0x28 => "arm",
        0x15 => "powerpc64",
        0xf3 => "riscv64",
        0x16 => "s390x",
        _ => "an unknown processor",
    })
}

/// Loads `path` in this process and calls `ncclGetVersion`. Only the child process calls this.
pub fn query_in_process(path: &Path) -> Result<i64, String> {
    let abs = path
        .canonicalize()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: loading a shared library runs its initialisers; that is why this runs in a child
    // process. The symbol's type is NCCL's documented `ncclResult_t ncclGetVersion(int*)`.
    unsafe {
        let lib = libloading::Library::new(&abs).map_err(|e| format!("cannot load it: {e}"))?;
        let get: libloading::Symbol<
            unsafe extern "C" fn(*mut std::os::raw::c_int) -> std::os::raw::c_int,
        > = lib
            .get(b"ncclGetVersion\0")
            .map_err(|e| format!("it has no ncclGetVersion: {e}"))?;
        let addr = *get as usize;
        loaded_from(addr, &abs)?;
        let mut v: std::os::raw::c_int = 0;
        let rc = get(&mut v);
        if rc != 0 {
            return Err(format!("ncclGetVersion returned error code {rc}"));
        }
        Ok(v as i64)
    }
}

/// Checks that the code at `addr` is mapped from `file` (the loader did not hand back another copy
/// of the library that was loaded already).
fn loaded_from(addr: usize, file: &Path) -> Result<(), String> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Ok(());
    };
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let (Some(range), Some(path)) = (parts.next(), parts.nth(4)) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
            continue;
        };
        if (a..b).contains(&addr) {
            return if Path::new(path) == file {
                Ok(())
            } else {
                Err(format!(
                    "the loader returned ncclGetVersion from {path}, not from this file"
                ))
            };
        }
    }
    Ok(())
}

/// The version `path` reports, queried in a child process; falls back to the version its text
/// names when it cannot be loaded here.
pub fn probe(path: &Path) -> NcclVersion {
    let why = match elf_machine(path) {
        Err(e) => return NcclVersion::NotQueried { why: e },
        Ok(m) if m != std::env::consts::ARCH => {
            format!(
                "the library is built for {m} and this machine is {}, so it cannot be loaded here",
                std::env::consts::ARCH
            )
        }
        Ok(_) => match query_in_child(path) {
            Ok(code) => return NcclVersion::Queried { code },
            Err(e) => e,
        },
    };
    from_text(path, why)
}

/// The version a library's text names, without loading it; `why` says why it was not loaded.
pub fn from_text(path: &Path, why: String) -> NcclVersion {
    match version_in_text(path) {
        Ok(Some(version)) => NcclVersion::FromText { version, why },
        Ok(None) => NcclVersion::NotQueried {
            why: format!("{why}; its text names no NCCL version either"),
        },
        Err(e) => NcclVersion::NotQueried {
            why: format!("{why}; reading its text failed: {e}"),
        },
    }
}

fn query_in_child(path: &Path) -> Result<i64, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find rigaudit's own executable to load it apart: {e}"))?;
    let mut child = Command::new(exe)
        .arg("__nccl-version")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the child process that loads it: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > PROBE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "loading it did not finish within {} s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("cannot wait for the child process: {e}")),
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or(serde_json::Value::Null);
    if let Some(code) = v.get("code").and_then(|c| c.as_i64()) {
        return Ok(code);
    }
    if let Some(e) = v.get("error").and_then(|c| c.as_str()) {
        return Err(e.to_string());
    }
    let tail: String = err
        .trim()
        .chars()
        .rev()
        .take(300)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(match status.code() {
        Some(c) => format!("the child process that loaded it exited with code {c}: {tail}"),
        None => {
            format!("the child process that loaded it was killed by a signal ({status}): {tail}")
        }
    })
}

/// The version an NCCL library's text names (`NCCL version 2.30.7+cuda13.3`), read as a stream.
pub fn version_in_text(path: &Path) -> io::Result<Option<String>> {
    version_in_reader(&mut std::fs::File::open(path)?)
}

/// [`version_in_text`] of an open file (or any stream), read from where it stands.
pub fn version_in_reader(f: &mut dyn Read) -> io::Result<Option<String>> {
    let re = regex::bytes::Regex::new(r"NCCL version ([0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3})[+ ]")
        .map_err(io::Error::other)?;
    let mut buf = vec![0u8; 4 << 20];
    let mut keep = 0usize;
    loop {
        let n = f.read(&mut buf[keep..])?;
        if n == 0 {
            return Ok(None);
        }
        let end = keep + n;
        if let Some(c) = re.captures(&buf[..end]) {
            return Ok(Some(String::from_utf8_lossy(&c[1]).to_string()));
        }
        // Keep the tail so a match across two reads is found.
        keep = 64.min(end);
        buf.copy_within(end - keep..end, 0);
    }
}

/// The child side: prints `{"code": N}` or `{"error": "..."}` for `rigaudit __nccl-version PATH`.
pub fn child_main(path: &Path) -> i32 {
    let r = std::panic::catch_unwind(|| query_in_process(path))
        .unwrap_or_else(|_| Err("loading it panicked".into()));
    match r {
        Ok(code) => {
            println!("{}", serde_json::json!({ "code": code }));
            0
        }
        Err(e) => {
            println!("{}", serde_json::json!({ "error": e }));
            3
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_and_text() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("libnccl.so.2");
        let mut data = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\xb7\0".to_vec();
        data.extend(std::iter::repeat_n(0u8, (4 << 20) - 30));
        data.extend(b"NCCL version 2.30.7+cuda13.3\0");
        std::fs::write(&p, &data).expect("write");
        assert_eq!(elf_machine(&p), Ok("aarch64"));
        assert_eq!(
            version_in_text(&p).expect("read").as_deref(),
            Some("2.30.7")
        );
        if std::env::consts::ARCH != "aarch64" {
            match probe(&p) {
                NcclVersion::FromText { version, why } => {
                    assert_eq!(version, "2.30.7");
                    assert!(why.contains("built for aarch64"), "{why}");
                }
                other => panic!("expected a version read from the text, got {other:?}"),
            }
        }
        let q = dir.path().join("not-elf");
        std::fs::write(&q, b"hello").expect("write");
        assert!(matches!(probe(&q), NcclVersion::NotQueried { .. }));
        assert_eq!(not_library(&p), None);
        assert_eq!(
            not_library(&q).as_deref(),
            Some("ELF header missing; it starts with \"hello\"")
        );
    }
}
