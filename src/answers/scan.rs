//! The answer line read by hand, for the shape nearly every line has: one flat object of the
//! schema's keys, strings without escapes, plain numbers. It gives the [`Line`] serde would give,
//! or `None`, and the line then goes to serde (which stays the judge of everything else: escapes,
//! unknown or repeated keys, odd numbers, anything malformed).
//!
//! Why not serde alone: serde_json's derived struct reading (its key matching, the moves of the
//! record out of its calls) was about half of a verify's CPU time on a million records, and the
//! verify is held to a bare one-core parse of the file (`benches/answers.py`). This reader does no
//! more than the grammar asks of these lines. `every_line_it_reads_serde_reads_the_same` holds it
//! to serde on mutated lines; `fuzz_answers_stream` runs it on arbitrary bytes.

use super::Line;
use std::borrow::Cow;

/// The line's record, when it has the common shape; `None` sends it to serde.
#[cfg(test)]
pub(super) fn line(text: &str) -> Option<Line<'_>> {
    let mut line = Line::default();
    read_into(text, &mut line).map(|_| line)
}

/// Reads the line's record into `line` (a fresh [`Line::default`]), when it has the common shape;
/// `None` sends it to serde, and `line` is then partly written. Filled in place: a record is
/// some 250 bytes, and returning it by value cost a `memcpy` call a move, a twentieth of a
/// verify's CPU time.
pub(super) fn read_into<'a>(text: &'a str, line: &mut Line<'a>) -> Option<()> {
    let b = text.as_bytes();
    let mut r = Reader { b, text, i: 0 };
    r.ws();
    r.eat(b'{')?;
    let mut seen: u16 = 0;
    loop {
        r.ws();
        let key = r.key()?;
        r.ws();
        r.eat(b':')?;
        r.ws();
        let bit = field(&mut r, key, line)?;
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        r.ws();
        match r.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    r.ws();
    let required = ID | MAX_TOKENS | STATUS | FINISH_REASON | CORRECT;
    (r.i == b.len() && seen & required == required).then_some(())
}

const ID: u16 = 1;
const MAX_TOKENS: u16 = 1 << 5;
const STATUS: u16 = 1 << 6;
const FINISH_REASON: u16 = 1 << 8;
const CORRECT: u16 = 1 << 12;

/// The schema's keys.
#[derive(Clone, Copy)]
enum Key {
    Id,
    Prompt,
    PromptSha256,
    PromptTokens,
    MaxTokens,
    Status,
    Error,
    FinishReason,
    CompletionTokens,
    Extracted,
    Gold,
    Correct,
    Seconds,
}

/// The keys by first letter, each with its closing quote: a key is told by comparing these few
/// bytes, not by reading it as a string first.
fn keys_from(first: u8) -> &'static [(&'static [u8], Key)] {
    match first {
        b'i' => &[(b"id\"", Key::Id)],
        b'p' => &[
            (b"prompt\"", Key::Prompt),
            (b"prompt_sha256\"", Key::PromptSha256),
            (b"prompt_tokens\"", Key::PromptTokens),
        ],
        b'm' => &[(b"max_tokens\"", Key::MaxTokens)],
        b's' => &[(b"status\"", Key::Status), (b"seconds\"", Key::Seconds)],
        b'e' => &[(b"error\"", Key::Error), (b"extracted\"", Key::Extracted)],
        b'f' => &[(b"finish_reason\"", Key::FinishReason)],
        b'c' => &[
            (b"completion_tokens\"", Key::CompletionTokens),
            (b"correct\"", Key::Correct),
        ],
        b'g' => &[(b"gold\"", Key::Gold)],
        _ => &[],
    }
}

/// Whether `rest` starts with `key` (3 to 24 bytes), compared as overlapping words: a `memcmp`
/// call for these few bytes, twice a key, was a tenth of the reading.
fn starts_with_key(rest: &[u8], key: &[u8]) -> bool {
    let n = key.len();
    if rest.len() < n || !(3..=24).contains(&n) {
        return false;
    }
    let word = |b: &[u8], at: usize| b[at..at + 8].try_into().map(u64::from_le_bytes).ok();
    let half = |b: &[u8], at: usize| b[at..at + 4].try_into().map(u32::from_le_bytes).ok();
    match n {
        3 => rest[..3] == *key,
        4..=7 => half(rest, 0) == half(key, 0) && half(rest, n - 4) == half(key, n - 4),
        8..=16 => word(rest, 0) == word(key, 0) && word(rest, n - 8) == word(key, n - 8),
        _ => {
            word(rest, 0) == word(key, 0)
                && word(rest, 8) == word(key, 8)
                && word(rest, n - 8) == word(key, n - 8)
        }
    }
}

/// Reads the value of `key` into `line`; returns the key's bit, or `None` (a value of another
/// shape).
fn field<'a>(r: &mut Reader<'a>, key: Key, line: &mut Line<'a>) -> Option<u16> {
    let bit = match key {
        Key::Id => {
            line.id = Cow::Borrowed(r.string()?);
            ID
        }
        Key::Prompt => set(&mut line.prompt, r.string_or_null()?, 1 << 1),
        Key::PromptSha256 => set(&mut line.prompt_sha256, r.string_or_null()?, 1 << 2),
        Key::PromptTokens => {
            line.prompt_tokens = r.null_or(Reader::integer)?;
            1 << 3
        }
        Key::MaxTokens => {
            line.max_tokens = r.integer()?;
            MAX_TOKENS
        }
        Key::Status => {
            line.status = u16::try_from(r.integer()?).ok()?;
            STATUS
        }
        Key::Error => set(&mut line.error, r.string_or_null()?, 1 << 7),
        Key::FinishReason => set(&mut line.finish_reason, r.string_or_null()?, FINISH_REASON),
        Key::CompletionTokens => {
            line.completion_tokens = r.null_or(Reader::integer)?;
            1 << 9
        }
        Key::Extracted => set(&mut line.extracted, r.string_or_null()?, 1 << 10),
        Key::Gold => set(&mut line.gold, r.string_or_null()?, 1 << 11),
        Key::Correct => {
            line.correct = r.boolean()?;
            CORRECT
        }
        Key::Seconds => {
            line.seconds = r.null_or(Reader::float)?;
            1 << 13
        }
    };
    Some(bit)
}

fn set<'a>(slot: &mut Option<Cow<'a, str>>, value: Option<&'a str>, bit: u16) -> u16 {
    *slot = value.map(Cow::Borrowed);
    bit
}

struct Reader<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
}

impl<'a> Reader<'a> {
    /// JSON's whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        let end = self.i + w.len();
        (self.b.get(self.i..end)? == w).then(|| self.i = end)
    }

    /// A string without escapes or control characters, borrowed. The text is UTF-8 and a quote is
    /// ASCII, so both cuts are character boundaries.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        loop {
            match self.next()? {
                b'"' => return Some(&self.text[start..self.i - 1]),
                b'\\' | 0..=0x1f => return None,
                _ => {}
            }
        }
    }

    /// One of the schema's keys, with its quotes: the key with its closing quote, or `None` (an
    /// unknown key, or one written with escapes: serde reads those).
    fn key(&mut self) -> Option<Key> {
        self.eat(b'"')?;
        let rest = &self.b[self.i..];
        let keys = keys_from(*rest.first()?);
        let (text, key) = keys.iter().find(|(k, _)| starts_with_key(rest, k))?;
        self.i += text.len();
        Some(*key)
    }

    fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        self.null_or(Reader::string)
    }

    fn null_or<T>(&mut self, value: fn(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.b.get(self.i) == Some(&b'n') {
            self.word(b"null")?;
            return Some(None);
        }
        value(self).map(Some)
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.b.get(self.i)? {
            b't' => self.word(b"true").map(|_| true),
            b'f' => self.word(b"false").map(|_| false),
            _ => None,
        }
    }

    /// A non-negative integer as JSON writes it (no sign, no leading zero, no fraction or
    /// exponent), within u64.
    fn integer(&mut self) -> Option<u64> {
        let start = self.i;
        let mut n: u64 = 0;
        while let Some(d @ b'0'..=b'9') = self.b.get(self.i) {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        let leading_zero = digits > 1 && self.b[start] == b'0';
        let more = matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'));
        (digits > 0 && !leading_zero && !more).then_some(n)
    }

    /// A number of JSON's grammar, as serde_json reads it: the grammar checked here, the value by
    /// std's parser. Both round correctly (serde_json's `float_roundtrip`, which Cargo.toml names),
    /// so they agree to the bit; a number out of f64's range, which serde refuses, goes to serde.
    fn float(&mut self) -> Option<f64> {
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int = self.digits();
        if int == 0 || (int > 1 && self.b[self.i - int] == b'0') {
            return None;
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        let x: f64 = self.text[start..self.i].parse().ok()?;
        x.is_finite().then_some(x)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the tools write them: Python's `json.dumps` (the bench, the seeds' tools), and
    /// serde_json's compact form (rigaudit's own replay), a refusal among them.
    const LINES: &[&str] = &[
        r#"{"id": "gpqa-0000001", "prompt_tokens": 583, "max_tokens": 1024, "status": 200, "error": null, "finish_reason": "stop", "completion_tokens": 338, "extracted": "A", "gold": "D", "correct": false, "seconds": 11.7}"#,
        r#"{"completion_tokens":12,"correct":true,"error":null,"extracted":"7","finish_reason":"length","gold":"7","id":"arith-3","max_tokens":64,"prompt":"What is 3+4?","prompt_sha256":"ababababababababababababababababababababababababababababababab","prompt_tokens":9,"seconds":0.25,"status":200}"#,
        r#"{"id": "q-9", "prompt": null, "prompt_sha256": null, "prompt_tokens": 1744, "max_tokens": 1024, "status": 400, "error": "maximum context length is 1024 tokens", "finish_reason": null, "completion_tokens": null, "extracted": null, "gold": "B", "correct": false, "seconds": null}"#,
    ];

    /// Values a field may be given: every JSON shape, and numbers at the edges of the grammar and
    /// of the fields' types.
    const VALUES: &[&str] = &[
        "null",
        "true",
        "false",
        "0",
        "-0",
        "01",
        "7",
        "1.0",
        "1e3",
        "1E+3",
        "-1",
        "2.5e-3",
        "-2.5",
        "1.",
        ".5",
        "18446744073709551615",
        "18446744073709551616",
        "65535",
        "65536",
        "\"x\"",
        "\"\"",
        "\"stop\"",
        "\"length\"",
        "\"a\\\"b\"",
        "\"\\u00e9\"",
        "\"é\"",
        "\"tab\there\"",
        "[]",
        "{}",
        "nul",
        "truee",
        "\"unterminated",
    ];

    /// Every variant of the lines: each key's value replaced by each of [`VALUES`], each key
    /// repeated, renamed, escaped or dropped, and spacing, trailing text and every cut.
    fn variants() -> Vec<String> {
        let mut out = Vec::new();
        for line in LINES {
            let object: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(line).unwrap();
            let write = |pairs: &[(String, String)], sep: &str| {
                let body: Vec<String> =
                    pairs.iter().map(|(k, v)| format!("{k}:{sep}{v}")).collect();
                format!("{{{}}}", body.join(&format!(",{sep}")))
            };
            let pairs: Vec<(String, String)> = object
                .iter()
                .map(|(k, v)| (format!("\"{k}\""), v.to_string()))
                .collect();
            for i in 0..pairs.len() {
                for v in VALUES {
                    let mut p = pairs.clone();
                    p[i].1 = v.to_string();
                    out.push(write(&p, " "));
                }
                let mut p = pairs.clone();
                p.push(pairs[i].clone());
                out.push(write(&p, ""));
                let mut p = pairs.clone();
                p.remove(i);
                out.push(write(&p, " "));
                let mut p = pairs.clone();
                p[i].0 = format!("\"{}x\"", &p[i].0[1..p[i].0.len() - 1]);
                out.push(write(&p, ""));
                let mut p = pairs.clone();
                p[i].0 = p[i]
                    .0
                    .replacen('i', "\\u0069", 1)
                    .replacen('e', "\\u0065", 1);
                out.push(write(&p, ""));
            }
            out.push(format!(" \t{line}\r "));
            out.push(write(&pairs, "\t "));
            out.push(format!("{line}x"));
            out.push(format!("{line}{{}}"));
            out.push(format!("[{line}]"));
            out.extend(
                (0..line.len())
                    .filter(|&n| line.is_char_boundary(n))
                    .map(|n| line[..n].to_string()),
            );
        }
        out
    }

    /// Each key is told from every other, from its own cuts and from itself with one byte changed
    /// anywhere, at every length the words cover.
    #[test]
    fn a_key_is_told_by_every_byte() {
        let all: Vec<&[u8]> = b"ipmsefcg"
            .iter()
            .flat_map(|c| keys_from(*c).iter().map(|(k, _)| *k))
            .collect();
        assert_eq!(all.len(), 13);
        for key in &all {
            for other in &all {
                let rest = [*other, b": 1}"].concat();
                assert_eq!(starts_with_key(&rest, key), key == other);
            }
            assert!(!starts_with_key(&key[..key.len() - 1], key));
            for at in 0..key.len() {
                let mut changed = [*key, b": 1}"].concat();
                changed[at] ^= 0x20;
                assert!(!starts_with_key(&changed, key), "{at}");
            }
        }
    }

    #[test]
    fn the_lines_tools_write_are_read_here() {
        for text in LINES {
            let here = line(text).unwrap_or_else(|| panic!("not read here: {text}"));
            assert_eq!(
                Ok(here),
                serde_json::from_str::<Line>(text).map_err(|e| e.to_string())
            );
        }
    }

    /// `seconds` read here is serde's to the bit: hard cases of correct rounding (halfway
    /// points, the subnormal edge, more digits than f64 holds, exponents at the range's ends) and
    /// 20,000 numbers of random digits and exponents; what serde refuses is refused here.
    #[test]
    fn floats_read_here_are_serdes_to_the_bit() {
        let hard = "0.1 2.2250738585072011e-308 2.2250738585072014e-308 4.9e-324 5e-324 \
            2.4703282292062327e-324 1.7976931348623157e308 1.7976931348623159e308 1e309 1e-400 \
            9007199254740993 9007199254740992.5 0.30000000000000004 123456789012345678901234567890 \
            8.0 11.7 -0.0 1e23 8.589973e9";
        let mut numbers: Vec<String> = hard.split_whitespace().map(String::from).collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for _ in 0..20_000 {
            let digits: String = (0..1 + next(24))
                .map(|_| char::from(b'0' + next(10) as u8))
                .collect();
            let int = digits.trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            let frac: String = (0..next(20))
                .map(|_| char::from(b'0' + next(10) as u8))
                .collect();
            let mut n = int.to_string();
            if !frac.is_empty() {
                n = format!("{n}.{frac}");
            }
            if next(2) == 0 {
                n = format!("{n}e{}", next(700) as i64 - 350);
            }
            numbers.push(n);
        }
        for n in &numbers {
            let text = format!("{n}}}");
            let mut r = Reader {
                b: text.as_bytes(),
                text: &text,
                i: 0,
            };
            let serde = serde_json::from_str::<f64>(n).ok();
            assert_eq!(r.float().map(f64::to_bits), serde.map(f64::to_bits), "{n}");
        }
    }

    /// Whatever this reader reads, serde reads the same; and a line of every key's value of
    /// another shape is read by one of the two or refused by both, never read differently.
    #[test]
    fn every_line_it_reads_serde_reads_the_same() {
        let (mut read_here, mut all) = (0, 0);
        for v in variants() {
            all += 1;
            if let Some(here) = line(&v) {
                read_here += 1;
                let serde = serde_json::from_str::<Line>(&v);
                assert_eq!(Ok(&here), serde.as_ref().map_err(|e| e.to_string()), "{v}");
            }
        }
        // The common shapes are read here, the odd ones left to serde.
        assert!(
            read_here > 100 && read_here < all / 2,
            "{read_here} of {all}"
        );
    }
}
