//! Streaming validation and tally of a quality answers file (JSON Lines).
//!
//! The file is read once, in chunks cut at line ends: the reader thread hashes each chunk
//! (sha256 of the whole file, for the manifest's digest) and hands it to one worker per core,
//! which validates and tallies its lines. Memory stays at a few chunks plus 16 bytes a record
//! (for finding repeated ids), whatever the file's size.
//!
//! Each line is first read by hand ([`scan`]: the common shape, one flat object of the schema's keys,
//! no escapes; what it reads serde reads the same), else by a typed fast path: a borrowed serde
//! struct that mirrors
//! `schemas/quality-answers.schema.json` exactly (required fields, nullable fields, no unknown
//! fields, the pattern of `prompt_sha256`, the minimums and the `finish_reason` enum). Only a line
//! it rejects goes to the `jsonschema` validator, which stays the judge: it names the place of each
//! error, and a line it accepts that the fast path rejected (an integer written `5.0`, say) is
//! tallied from the full parse. Why not `jsonschema` on every line: building a `serde_json::Value`
//! per line and walking the schema over it took about 5 s for a million records on this machine,
//! the typed path about a tenth of that (see `benches/answers.py`). The unit test
//! `fast_path_accepts_nothing_the_schema_rejects` checks that the fast path accepts nothing the
//! schema rejects, field by field.
//!
//! Each worker sorts its share of the ids (for repeated ids and per-question pairing) before the
//! shares are merged.

mod scan;

use crate::digest::hex;
use rigaudit_audit::records::{Answer, AnswerTally, AnswerView};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender};

/// A bad line.
#[derive(Debug, Clone)]
pub struct Problem {
    /// `line N` or `line N/pointer`.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
    /// Not JSON at all (rather than JSON that breaks the schema).
    pub unreadable: bool,
}

/// The tally, the digest and the bad lines of one file.
#[derive(Debug, Default)]
pub struct Tallied {
    /// Counts over the good lines.
    pub tally: AnswerTally,
    /// The first bad lines, in line order.
    pub problems: Vec<Problem>,
    /// How many bad lines in all.
    pub problem_count: usize,
    /// sha256 of the whole file, hex.
    pub sha256: String,
    /// Why reading stopped before the end (a line over [`crate::input::ANSWERS_LINE_MAX`]).
    pub refused: Option<String>,
}

impl Tallied {
    /// How many bad lines the listed problems name: a line that breaks the schema in several
    /// places lists several problems, so the problems are not the lines.
    pub fn lines_listed(&self) -> usize {
        let line = |p: &Problem| {
            p.pointer
                .trim_start_matches("line ")
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .map(str::to_string)
        };
        let lines: std::collections::BTreeSet<Option<String>> =
            self.problems.iter().map(line).collect();
        lines.len()
    }
}

const CHUNK: usize = 1 << 20;
const KEEP: usize = 25;
/// Room for the carried tail of the chunk before (a line or less) in a new chunk buffer.
const SLACK: usize = 64 << 10;

/// Whole lines of the file, with the number of the first.
type Chunk = (u64, Vec<u8>);

/// The schema's record, borrowed from the line. Every optional string goes through
/// [`borrowed`]: serde's own `Option<Cow<str>>` copies the string even with `borrow` (its
/// borrowing covers a bare `Cow<str>` only), three allocations a record that took a tenth of a
/// verify's time. `deserialize_with` makes a field required unless it has `default`, which is
/// what the nullable required `finish_reason` needs.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    #[allow(dead_code)]
    prompt: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    prompt_sha256: Option<Cow<'a, str>>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
    max_tokens: u64,
    status: u16,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    error: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "borrowed")]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    extracted: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed")]
    gold: Option<Cow<'a, str>>,
    correct: bool,
    #[serde(default)]
    seconds: Option<f64>,
}

/// A string or null, borrowed from the input when it has no escapes (copied when it has).
fn borrowed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(self)
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
    }
    d.deserialize_option(Text)
}

const fn hex_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).is_ascii_hexdigit();
        i += 1;
    }
    t
}

static HEX: [bool; 256] = hex_table();

fn is_hex64(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 64 && b.iter().fold(true, |ok, c| ok & HEX[*c as usize])
}

impl Line<'_> {
    /// The constraints of the schema that serde's types do not already enforce.
    fn meets_schema(&self) -> bool {
        !self.id.is_empty()
            && self.max_tokens >= 1
            && self.status <= 999
            && self.prompt_sha256.as_deref().is_none_or(is_hex64)
            && matches!(
                self.finish_reason.as_deref(),
                None | Some("length" | "stop" | "error")
            )
    }

    fn view(&self) -> AnswerView<'_> {
        rigaudit_audit::answer_view!(self)
    }
}

/// Whether the typed fast path accepts a line on its own (for the equivalence test).
#[cfg(test)]
fn fast_path_accepts(line: &[u8]) -> bool {
    serde_json::from_slice::<Line>(line).is_ok_and(|l| l.meets_schema())
}

/// Tallies a record read by the typed path when it meets the schema; whether it did.
fn counted(l: &Line, n: u64, t: &mut Tallied) -> bool {
    if !l.meets_schema() {
        return false;
    }
    t.tally.add(l.view(), n);
    t.tally
        .add_reply(l.completion_tokens, l.max_tokens, l.seconds, n);
    true
}

/// One line: `text` is the same line when its chunk is known to be UTF-8 (then its strings are
/// borrowed without checking each again).
fn one(line: &[u8], text: Option<&str>, n: u64, v: &jsonschema::Validator, t: &mut Tallied) {
    if let Some(s) = text {
        let mut scanned = Line::default();
        if scan::read_into(s, &mut scanned).is_some() {
            if counted(&scanned, n, t) {
                return;
            }
        } else if serde_json::from_str::<Line>(s).is_ok_and(|l| counted(&l, n, t)) {
            return;
        }
    } else if serde_json::from_slice::<Line>(line).is_ok_and(|l| counted(&l, n, t)) {
        return;
    }
    // A bad line counts once, with up to three of its errors listed.
    let mut bad = |errors: Vec<(String, String)>, unreadable: bool| {
        t.problem_count += 1;
        for (pointer, message) in errors {
            if t.problems.len() < KEEP {
                t.problems.push(Problem {
                    pointer,
                    message,
                    unreadable,
                });
            }
        }
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            bad(
                vec![(
                    format!("line {n}, column {}", e.column()),
                    format!("not valid JSON: {e}"),
                )],
                true,
            );
            return;
        }
    };
    if !v.is_valid(&value) {
        let errors = crate::schemas::errors(v, &value, 3)
            .into_iter()
            .map(|(p, m)| {
                (
                    format!("line {n}{}", if p == "/" { String::new() } else { p }),
                    m,
                )
            })
            .collect();
        bad(errors, false);
        return;
    }
    match Answer::deserialize(&value) {
        Ok(a) => {
            t.tally.add(a.view(), n);
            t.tally
                .add_reply(a.completion_tokens, a.max_tokens, a.seconds, n);
        }
        Err(e) => bad(vec![(format!("line {n}"), e.to_string())], false),
    }
}

/// The lines of one chunk. The chunk is checked as UTF-8 once, at the speed of std's validator,
/// rather than string by string as a parse of bytes does (a tenth of the parse's time); a chunk
/// that is not UTF-8 is parsed as bytes, line by line, which names the line.
fn work(chunk: &[u8], first_line: u64, v: &jsonschema::Validator, t: &mut Tallied) {
    let mut start = 0;
    let whole = std::str::from_utf8(chunk).ok();
    let ends = memchr::memchr_iter(b'\n', chunk).chain(std::iter::once(chunk.len()));
    for (n, end) in (first_line..).zip(ends) {
        let line = &chunk[start..end];
        if !line.iter().all(|b| b.is_ascii_whitespace()) {
            // A line feed is ASCII: the cut is a character boundary.
            let text = whole.map(|w| &w[start..end]);
            one(line, text, n, v, t);
        }
        start = end + 1;
        if start > chunk.len() {
            break;
        }
    }
}

/// Reads, hashes, validates and tallies a JSON Lines stream. Blank lines are skipped; an empty
/// stream tallies nothing. A read error is reported as a problem at the line it stopped on.
pub fn tally(mut r: impl Read, v: &jsonschema::Validator) -> Tallied {
    let workers = crate::host::cores().clamp(1, 8);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(workers * 2);
    let rx = std::sync::Mutex::new(rx);
    // Buffers the workers are done with, back to the reader: at most as many as can be in flight
    // (queued, in work, being read), so memory stays what it was, and the reader writes into
    // pages it already has instead of a fresh megabyte a chunk (page faults and zeroing were a
    // tenth of a verify's CPU time).
    let (spare_tx, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(workers);
    let mut hasher = Sha256::new();
    let mut read_error: Option<ReadError> = None;
    let parts: Vec<Tallied> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (rx, spare_tx) = (&rx, spare_tx.clone());
                s.spawn(move || {
                    let mut t = Tallied::default();
                    loop {
                        let next = rx.lock().map(|g| g.recv());
                        match next {
                            Ok(Ok((first, chunk))) => {
                                work(&chunk, first, v, &mut t);
                                let _ = spare_tx.try_send(chunk);
                            }
                            _ => break,
                        }
                    }
                    t.tally.presort();
                    t
                })
            })
            .collect();
        drop(spare_tx);
        read_error = read_chunks(&mut r, &tx, &spare, &mut hasher);
        drop((tx, spare));
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut total = merge(parts, read_error);
    total.sha256 = hex(&hasher.finalize());
    total
}

/// The reader: whole lines per chunk (the tail carried into the next), each sent with the number
/// of its first line and hashed on the way, in a buffer a worker gave back when there is one.
/// Returns where reading failed and why, if it did. A line over
/// [`crate::input::ANSWERS_LINE_MAX`] stops reading: it is refused, not held.
fn read_chunks(
    r: &mut impl Read,
    tx: &SyncSender<Chunk>,
    spare: &Receiver<Vec<u8>>,
    hasher: &mut Sha256,
) -> Option<ReadError> {
    let mut read_error = None;
    let mut line_no: u64 = 1;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        // A carry of a chunk or more is a line still being read: it grows in place.
        let mut buf = if carry.len() >= CHUNK {
            std::mem::take(&mut carry)
        } else {
            let mut buf = spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(CHUNK + SLACK));
            buf.clear();
            buf.extend_from_slice(&carry);
            carry.clear();
            buf
        };
        let start = buf.len();
        // Exactly what this chunk needs (growing would double a recycled buffer), read into the
        // buffer's spare room without zeroing it first.
        buf.reserve_exact(CHUNK);
        let got = match read_full(r, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                buf.truncate(start);
                read_error = Some(ReadError {
                    line: line_no,
                    why: format!("cannot read: {e}"),
                    refused: false,
                });
                0
            }
        };
        hasher.update(&buf[start..start + got]);
        let eof = got == 0;
        let cut = if eof {
            buf.len()
        } else {
            memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1)
        };
        if cut == 0 && !eof {
            if buf.len() > crate::input::ANSWERS_LINE_MAX {
                // A line this long is no answer record: stop rather than hold it.
                return Some(ReadError {
                    line: line_no,
                    why: format!(
                        "line {line_no} is longer than {}, the bound for one line of an answers file; reading stopped there (see docs/security.md)",
                        crate::input::size(crate::input::ANSWERS_LINE_MAX as u64)
                    ),
                    refused: true,
                });
            }
            // A line longer than a chunk: keep reading into it.
            carry = buf;
            continue;
        }
        carry.extend_from_slice(&buf[cut..]);
        buf.truncate(cut);
        if !buf.is_empty() {
            let lines = memchr::memchr_iter(b'\n', &buf).count() as u64;
            let first = line_no;
            line_no += lines;
            if tx.send((first, buf)).is_err() {
                break;
            }
        }
        if eof {
            break;
        }
    }
    read_error
}

/// Where and why reading an answers file stopped.
struct ReadError {
    line: u64,
    why: String,
    /// The input was refused as hostile (a line over its bound).
    refused: bool,
}

/// The workers' tallies as one, the problems in line order (the first [`KEEP`]), a read error
/// among them.
fn merge(parts: Vec<Tallied>, read_error: Option<ReadError>) -> Tallied {
    let mut total = Tallied::default();
    let mut problems: Vec<(u64, Problem)> = Vec::new();
    for p in parts {
        total.tally.merge(p.tally);
        total.problem_count += p.problem_count;
        for pr in p.problems {
            let n = pr
                .pointer
                .trim_start_matches("line ")
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            problems.push((n, pr));
        }
    }
    if let Some(e) = read_error {
        total.problem_count += 1;
        problems.push((
            e.line,
            Problem {
                pointer: format!("line {}", e.line),
                message: e.why.clone(),
                unreadable: true,
            },
        ));
        total.refused = e.refused.then_some(e.why);
    }
    problems.sort_by_key(|(n, _)| *n);
    total.problems = problems.into_iter().map(|(_, p)| p).take(KEEP).collect();
    total.tally.finish();
    total
}

fn read_full(r: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let before = buf.len();
    // `take` stops at a chunk, and `read_to_end` retries an interrupted read.
    let got = r.take(CHUNK as u64).read_to_end(buf);
    got.map(|_| buf.len() - before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::records::FileKind;
    use serde_json::json;

    fn base() -> Value {
        json!({"id": "q-1", "prompt": null, "prompt_sha256": "ab".repeat(32), "prompt_tokens": 10, "max_tokens": 1024,
               "status": 200, "error": null, "finish_reason": "stop", "completion_tokens": 5, "extracted": "A",
               "gold": "A", "correct": true, "seconds": 1.5})
    }

    #[test]
    fn the_fast_path_borrows_its_strings() {
        let line = r#"{"id":"q-1","prompt":null,"prompt_tokens":10,"max_tokens":64,"status":200,"error":null,"finish_reason":"stop","completion_tokens":5,"extracted":"A","gold":"B\n","correct":false}"#;
        let l: Line = serde_json::from_str(line).unwrap();
        assert!(matches!(l.finish_reason, Some(Cow::Borrowed("stop"))));
        assert!(matches!(l.extracted, Some(Cow::Borrowed("A"))));
        assert!(l.error.is_none() && l.prompt.is_none());
        // An escaped string cannot be borrowed: it is copied, unescaped.
        assert!(matches!(&l.gold, Some(Cow::Owned(g)) if g == "B\n"));
    }

    /// Every field set to every kind of value, one at a time, plus removals and extras: the fast
    /// path accepts a line only when the schema does, and then reads the same record.
    #[test]
    fn fast_path_accepts_nothing_the_schema_rejects() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(1),
            json!(-1),
            json!(999),
            json!(1000),
            json!(5.0),
            json!(2.5),
            json!(""),
            json!("x"),
            json!("stop"),
            json!("length"),
            json!("error"),
            json!("cut"),
            json!("ab".repeat(32)),
            json!("AB".repeat(32)),
            json!("zz".repeat(32)),
            json!("ab".repeat(31)),
            json!([]),
            json!({}),
            json!(u64::MAX),
            json!("caf\u{e9} \"quoted\" \\n"),
        ];
        let mut agreed = 0;
        let keys: Vec<String> = base().as_object().unwrap().keys().cloned().collect();
        let mut cases: Vec<Value> = vec![base()];
        for k in &keys {
            for x in &values {
                let mut c = base();
                c[k.as_str()] = x.clone();
                cases.push(c);
            }
            let mut c = base();
            c.as_object_mut().unwrap().remove(k);
            cases.push(c);
        }
        let mut extra = base();
        extra["unexpected"] = json!(1);
        cases.push(extra);
        for c in cases {
            let line = serde_json::to_vec(&c).unwrap();
            let fast = fast_path_accepts(&line);
            let schema = v.is_valid(&c);
            assert!(
                !fast || schema,
                "fast path accepts what the schema rejects: {c}"
            );
            if fast {
                let a = Answer::deserialize(&c).unwrap();
                let l: Line = serde_json::from_slice(&line).unwrap();
                assert_eq!(format!("{:?}", a.view()), format!("{:?}", l.view()));
            }
            // Where they differ, it is only an integer written as a float, which the slow path takes.
            if schema && !fast {
                assert!(
                    c.as_object()
                        .unwrap()
                        .values()
                        .any(|x| x.is_f64() && x.as_f64().unwrap().fract() == 0.0),
                    "{c}"
                );
            }
            agreed += 1;
        }
        assert!(agreed > 200);
    }

    /// `n` lines of [`base`] answers, line `i` edited by `edit(i, _)`.
    fn answer_lines(n: usize, edit: impl Fn(usize, &mut Value)) -> String {
        let mut text = String::new();
        for i in 0..n {
            let mut c = base();
            edit(i, &mut c);
            text.push_str(&serde_json::to_string(&c).unwrap());
            text.push('\n');
        }
        text
    }

    /// Found by the `answers` fuzz target: a line that breaks the schema in several places lists
    /// several problems, so "N more bad lines" counts lines, not problems.
    #[test]
    fn bad_lines_not_listed_are_counted_as_lines() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let text = answer_lines(40, |i, c| {
            c["id"] = json!(i);
            c["correct"] = json!("yes");
            c["status"] = json!("ok");
        });
        let t = tally(text.as_bytes(), v);
        assert_eq!(t.problem_count, 40);
        assert!(t.problems.len() > t.lines_listed(), "{:?}", t.problems);
        assert!(t.lines_listed() < 40);
        let listed: std::collections::BTreeSet<&str> = t
            .problems
            .iter()
            .map(|p| p.pointer.split('/').next().unwrap())
            .collect();
        assert_eq!(listed.len(), t.lines_listed());
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_and_the_rest_of_its_chunk_tallied() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let text = answer_lines(100, |i, c| c["id"] = json!(format!("q{i}")));
        let mut bytes = text.into_bytes();
        if bytes.last() != Some(&b'\n') {
            bytes.push(b'\n');
        }
        // The chunk is not UTF-8 as a whole: its lines are parsed as bytes, each named.
        let bad = answer_lines(1, |_, c| c["id"] = json!("q-bad")).replace("q-bad", "q-\u{FFFD}");
        let mut bad = bad.into_bytes();
        let at = bad
            .windows(3)
            .position(|w| w == "\u{FFFD}".as_bytes())
            .unwrap();
        bad.splice(at..at + 3, [0xff]);
        bytes.extend_from_slice(&bad);
        bytes.push(b'\n');
        bytes.extend_from_slice(answer_lines(1, |_, c| c["id"] = json!("q-last")).as_bytes());
        let t = tally(&bytes[..], v);
        assert_eq!(t.tally.total, 101);
        assert_eq!(t.problem_count, 1);
        assert!(
            t.problems[0].pointer.starts_with("line 101, column") && t.problems[0].unreadable,
            "{:?}",
            t.problems
        );
    }

    #[test]
    fn tally_counts_lines_hashes_and_names_bad_lines() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let mut text = answer_lines(5000, |i, c| {
            c["id"] = json!(format!("q{i}"));
            c["correct"] = json!(i % 3 == 0);
            c["extracted"] = json!(if i % 3 == 0 { "A" } else { "B" });
        });
        text.push('\n');
        text.push_str("{\"id\": 1}\n");
        text.push_str("{not json\n");
        let t = tally(text.as_bytes(), v);
        assert_eq!(t.tally.total, 5000);
        assert_eq!(t.tally.right, 1667);
        assert_eq!(t.problem_count, 2);
        assert!(
            t.problems
                .iter()
                .any(|p| p.pointer == "line 5002" && p.message.contains("required")),
            "{:?}",
            t.problems
        );
        let last = t.problems.last().unwrap();
        assert!(
            last.pointer.starts_with("line 5003, column") && last.unreadable,
            "{:?}",
            t.problems
        );
        assert_eq!(
            t.sha256,
            Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
    }

    /// Lines of up to most of a chunk, among short ones, over many chunks: the reader's buffers
    /// go back and forth between it and the workers, and each tail carried into the next chunk
    /// (a line cut at a chunk's end) comes out whole, in place, with its line number.
    #[test]
    fn lines_cut_at_chunk_ends_are_read_whole_in_recycled_buffers() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let text = answer_lines(3000, |i, c| {
            c["id"] = json!(format!("q{i}"));
            if i % 100 == 7 {
                c["status"] = json!(500);
                c["error"] = json!("e".repeat(CHUNK / 4 + i * 97));
                c["extracted"] = json!(null);
                c["finish_reason"] = json!(null);
                c["completion_tokens"] = json!(null);
                c["correct"] = json!(false);
            }
        });
        let mut text = text.into_bytes();
        text.extend_from_slice(b"{\"id\": 1}\n");
        assert!(text.len() > 8 * CHUNK, "{}", text.len());
        let t = tally(&text[..], v);
        assert_eq!(t.tally.total, 3000);
        assert_eq!(t.tally.refused(), 30);
        assert_eq!(t.tally.duplicate_count, 0);
        assert_eq!(t.problem_count, 1, "{:?}", t.problems);
        assert!(
            t.problems[0].pointer.starts_with("line 3001"),
            "{:?}",
            t.problems
        );
        assert_eq!(t.sha256, hex(&Sha256::digest(&text)));
    }

    #[test]
    fn repeated_ids_are_found_across_chunks() {
        let v = crate::schemas::validator(FileKind::QualityAnswers).unwrap();
        let text = answer_lines(20000, |i, c| {
            c["id"] = json!(format!("q{}", if i == 19999 { 7 } else { i }));
        });
        let t = tally(text.as_bytes(), v);
        assert_eq!(t.tally.duplicate_count, 1);
        assert_eq!(t.tally.duplicate_ids, vec![(20000, 8)]);
    }
}
