//! The harness of the attack suite. An attack is one rigaudit command line against hostile input,
//! run in a scratch folder of its own with `HOME` inside it. After it, every attack asserts:
//!
//! - the exit code it expects and the message that names what was refused ([`Outcome::exit`],
//!   [`Outcome::saying`]);
//! - that no marker file appeared: a payload that could run code writes [`Scratch::marker`];
//! - that nothing was written outside `--out` (the scratch folder's files, `HOME` included, are
//!   listed before and after);
//! - that no output (stdout, stderr and every file it wrote) holds a raw control character, a
//!   bidirectional override, raw HTML from a payload or a workflow command an attacker wrote
//!   ([`assert_clean`], by the format of the output).

#![allow(dead_code)]

use super::common::Run;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// Raw HTML a page may carry: an image beacon (loads a remote URL when rendered).
pub const HTML_BEACON: &str = "<img src=\"https://evil.invalid/beacon.png\">";
/// A script.
pub const HTML_SCRIPT: &str = "<script>alert(1)</script>";
/// An unclosed HTML comment: hides everything after it in a rendered Markdown page.
pub const HTML_COMMENT: &str = "<!-- the rest is hidden";
/// A Markdown image: loads a remote URL too.
pub const MD_IMAGE: &str = "![x](https://evil.invalid/i.png)";
/// A workflow command on a line of its own: read by the Actions runner from any output line.
pub const WORKFLOW_COMMAND: &str = "\n::error title=pwned::PWNED\n::add-mask::x\n";
/// Terminal controls: a title change (OSC ... BEL), a screen clear, a C1 CSI, a bidi override.
pub const CONTROLS: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{202e}evil";
/// Every payload above in one string.
pub fn all_payloads() -> String {
    format!("{HTML_BEACON}{HTML_SCRIPT}{MD_IMAGE}{WORKFLOW_COMMAND}{CONTROLS} a\\|b {HTML_COMMENT}")
}

/// The format an output is in, which decides what it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Text for a terminal or a CI log (stdout or stderr).
    Text,
    /// Markdown (a job summary, a PR comment).
    Markdown,
    /// GitHub workflow commands (`--format github`).
    Github,
    /// The HTML report.
    Html,
    /// JUnit XML.
    Junit,
    /// SARIF (JSON).
    Sarif,
    /// JSON.
    Json,
}

impl Surface {
    /// The surface of a written file, by its extension.
    pub fn of_file(p: &Path) -> Surface {
        let name = p.file_name().unwrap().to_string_lossy().to_lowercase();
        match () {
            _ if name.ends_with(".md") => Surface::Markdown,
            _ if name.ends_with(".html") => Surface::Html,
            _ if name.ends_with(".xml") => Surface::Junit,
            _ if name.ends_with(".sarif") => Surface::Sarif,
            _ if name.ends_with(".json") || name.ends_with(".jsonl") => Surface::Json,
            _ => Surface::Text,
        }
    }
}

/// A character no output may hold raw: C0 controls but line feed and tab, DEL, C1, the
/// bidirectional marks, embeddings, overrides and isolates, and the Unicode line separators.
pub fn forbidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// The workflow commands rigaudit itself writes (`--format github`).
const OWN_COMMANDS: &[&str] = &[
    "::error ",
    "::error::",
    "::warning ",
    "::warning::",
    "::notice ",
    "::notice::",
];

/// Asserts `text` (the output `what`, in `surface`) holds no raw control, no raw HTML or
/// Markdown image of a payload, and no workflow command but rigaudit's own (and those only in
/// `Github`, with no property an attacker wrote).
#[track_caller]
pub fn assert_clean(what: &str, text: &str, surface: Surface) {
    if let Some((i, c)) = text.char_indices().find(|(_, c)| forbidden(*c)) {
        let from = text[..i].char_indices().rev().nth(60).map_or(0, |(j, _)| j);
        panic!(
            "{what}: a raw {c:?} at byte {i}: ...{:?}",
            &text[from..(i + c.len_utf8() + 20).min(text.len())]
        );
    }
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with("::") {
            continue;
        }
        let own = surface == Surface::Github && OWN_COMMANDS.iter().any(|c| t.starts_with(c));
        assert!(
            own,
            "{what}: a workflow command on a line of its own: {line:?}"
        );
        let head = t[2..].split("::").next().unwrap_or("");
        assert!(
            !head.contains("pwned") && !head.contains("PWNED"),
            "{what}: a workflow command's properties carry a payload: {line:?}"
        );
    }
    if matches!(surface, Surface::Markdown | Surface::Html) {
        for raw in [
            "<img",
            "<script",
            "<!-- the rest",
            "![x](",
            "<iframe",
            "javascript:",
        ] {
            assert!(!text.contains(raw), "{what}: raw {raw:?} from a payload");
        }
    }
    if matches!(surface, Surface::Markdown) {
        for line in text.lines().filter(|l| l.starts_with('|')) {
            assert!(
                !line.contains("\\\\|"),
                "{what}: an escaped backslash before a pipe splits a table cell: {line:?}"
            );
        }
    }
}

/// A scratch folder an attack runs in: `home/` is its `HOME`, `out/` its `--out`.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Scratch { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The file a payload that runs code writes.
    pub fn marker(&self) -> PathBuf {
        self.path().join("MARKER")
    }

    /// The attack's `--out` (made by rigaudit when it writes).
    pub fn out(&self) -> PathBuf {
        self.path().join("out")
    }

    pub fn home(&self) -> PathBuf {
        self.path().join("home")
    }

    /// Every file and folder under the scratch folder but `out/`, with its size and time.
    fn listing(&self) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
        let mut seen = BTreeMap::new();
        let mut todo = vec![self.path().to_path_buf()];
        while let Some(d) = todo.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p == self.out() {
                    continue;
                }
                let Ok(m) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                if m.is_dir() {
                    todo.push(p.clone());
                }
                seen.insert(p, (m.len(), m.modified().ok()));
            }
        }
        seen
    }
}

/// One command line against hostile input.
pub struct Attack<'a> {
    scratch: &'a Scratch,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    program: PathBuf,
    deadline: Duration,
}

impl<'a> Attack<'a> {
    /// `rigaudit ARGS` in `scratch`.
    pub fn new<S: AsRef<OsStr>>(scratch: &'a Scratch, args: &[S]) -> Attack<'a> {
        Attack {
            scratch,
            args: args.iter().map(|a| a.as_ref().to_os_string()).collect(),
            env: Vec::new(),
            program: PathBuf::from(env!("CARGO_BIN_EXE_rigaudit")),
            deadline: Duration::from_secs(120),
        }
    }

    /// Another program (a script of the Action or the pre-commit hook) in `scratch`.
    pub fn program<S: AsRef<OsStr>>(
        scratch: &'a Scratch,
        program: &Path,
        args: &[S],
    ) -> Attack<'a> {
        let mut a = Attack::new(scratch, args);
        a.program = program.to_path_buf();
        a
    }

    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.env.push((k.as_ref().into(), v.as_ref().into()));
        self
    }

    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// Runs it to its end (killed past the deadline, which fails the test), in the scratch folder.
    pub fn run(self) -> Outcome<'a> {
        let before = self.scratch.listing();
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .current_dir(self.scratch.path())
            .env("HOME", self.scratch.home())
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_OUTPUT")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        let run = run_bounded(&mut c, self.deadline);
        let after = self.scratch.listing();
        let written = after
            .iter()
            .filter(|(p, meta)| before.get(*p) != Some(meta))
            .map(|(p, _)| p.clone())
            .collect();
        Outcome {
            scratch: self.scratch,
            run,
            written,
        }
    }
}

/// Runs `c` with its output piped, killed past `deadline` (the test then fails).
fn run_bounded(c: &mut Command, deadline: Duration) -> Run {
    use std::io::Read;
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let (mut o, mut e) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = o.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = e.read_to_end(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{c:?} did not end within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    }
}

/// What an attack left.
pub struct Outcome<'a> {
    scratch: &'a Scratch,
    pub run: Run,
    /// Files and folders outside `out/` that are new or changed.
    pub written: Vec<PathBuf>,
}

impl Outcome<'_> {
    /// Asserts the exit code.
    #[track_caller]
    pub fn exit(&self, code: i32) -> &Self {
        assert_eq!(
            self.run.code, code,
            "exit code\nstdout: {}\nstderr: {}",
            self.run.stdout, self.run.stderr
        );
        self
    }

    /// Asserts stdout or stderr says `text`.
    #[track_caller]
    pub fn saying(&self, text: &str) -> &Self {
        assert!(
            self.run.stdout.contains(text) || self.run.stderr.contains(text),
            "{text:?} not said\nstdout: {}\nstderr: {}",
            self.run.stdout,
            self.run.stderr
        );
        self
    }

    /// Asserts the marker is absent, nothing outside `out/` was written (but the paths
    /// `allowed`, relative to the scratch folder: inputs the test itself made in the run's
    /// place), and stdout (in `stdout_surface`), stderr (text) and every file under `out/` (by
    /// its extension) are clean.
    #[track_caller]
    pub fn clean(&self, stdout_surface: Surface) -> &Self {
        assert!(
            !self.scratch.marker().exists(),
            "the payload ran: the marker exists\nstdout: {}\nstderr: {}",
            self.run.stdout,
            self.run.stderr
        );
        assert!(
            self.written.is_empty(),
            "written outside --out: {:?}\nstderr: {}",
            self.written,
            self.run.stderr
        );
        assert_clean("stdout", &self.run.stdout, stdout_surface);
        assert_clean("stderr", &self.run.stderr, Surface::Text);
        for f in files_under(&self.scratch.out()) {
            let Ok(text) = std::fs::read(&f) else {
                continue;
            };
            let text = String::from_utf8_lossy(&text);
            assert_clean(&f.display().to_string(), &text, Surface::of_file(&f));
        }
        self
    }
}

/// Every regular file under `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => todo.push(p),
                Ok(m) if m.is_file() => files.push(p),
                _ => {}
            }
        }
    }
    files
}

#[test]
fn the_harness_catches_each_kind_of_injection() {
    let caught =
        |text: &str, s: Surface| std::panic::catch_unwind(|| assert_clean("t", text, s)).is_err();
    assert!(caught("a\u{1b}[2Jb", Surface::Text));
    assert!(caught("a\u{9b}b", Surface::Json));
    assert!(caught("a\u{202e}b", Surface::Text));
    assert!(caught("ok\n  ::add-mask::x\n", Surface::Text));
    assert!(caught("::error title=pwned::x\n", Surface::Github));
    assert!(caught("::set-output name=a::b\n", Surface::Github));
    assert!(caught(&format!("x {HTML_BEACON}"), Surface::Markdown));
    assert!(caught("| a \\\\| b |", Surface::Markdown));
    assert!(!caught(
        "::error file=a,title=x::PWNED%0A::add-mask::x\n",
        Surface::Github
    ));
    assert!(!caught(
        "&lt;img src=x&gt; tab\tand line\n",
        Surface::Markdown
    ));
}
