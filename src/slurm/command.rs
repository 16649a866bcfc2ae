//! Runs one Slurm client program with an argv (no shell), optional bytes on its stdin, a time
//! limit (killed when it runs past it) and a cap on what is kept of its output.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most kept of a client's stdout and of its stderr.
pub const OUTPUT_MAX: u64 = 256 * 1024;

/// What a client said and how it ended.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Its exit code; `None` when a signal ended it (or the time limit).
    pub code: Option<i32>,
    /// Its standard output, lossily decoded, at most [`OUTPUT_MAX`] bytes.
    pub stdout: String,
    /// Its standard error, likewise.
    pub stderr: String,
}

impl Output {
    /// Whether it exited with code 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Its stderr (else stdout), trimmed and shown safely, for an error message.
    pub fn said(&self) -> String {
        let s = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        crate::input::shown_n(s.trim(), 2000)
    }
}

fn read_capped(r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut r = r;
        let _ = (&mut r).take(OUTPUT_MAX).read_to_end(&mut buf);
        // Drain the rest so the client never blocks on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `argv` (its first word the program), writing `stdin` to it, for at most `limit`. An
/// error when it cannot start or runs past the limit (then it is killed).
pub fn run(argv: &[String], stdin: Option<&[u8]>, limit: Duration) -> Result<Output, String> {
    let (program, args) = argv.split_first().ok_or("no program")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if let (Some(bytes), Some(mut w)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&bytes);
        });
    }
    let out = child.stdout.take().map(read_capped);
    let err = child.stderr.take().map(read_capped);
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not finish within {} s and was stopped",
                    limit.as_secs()
                ));
            }
        }
    };
    let text = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Output {
        code: status.code(),
        stdout: text(out),
        stderr: text(err),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_command_is_bounded_and_reads_stdin() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = run(&words(&["cat"]), Some(b"a b"), Duration::from_secs(5)).unwrap();
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), "a b"));
        let e = run(&words(&["sleep", "5"]), None, Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("did not finish"), "{e}");
        let o = run(
            &words(&["head", "-c", "1000000", "/dev/zero"]),
            None,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(o.stdout.len() as u64, OUTPUT_MAX);
    }
}
