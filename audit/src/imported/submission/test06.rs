//! TEST06 recomputed from its own accuracy log: the three checks of
//! `compliance/TEST06/run_verification.py` (v4.0 `e39003a9` to v6.0 `b66003e1`: the same rules,
//! reformatted) over `TEST06/accuracy/mlperf_log_accuracy.json`, against what the test's
//! `verify_accuracy.txt` says of them. The submission checker reads only the verify file (row T1);
//! a verify file its own log contradicts is written by hand or by another script.
//!
//! The script's rules, as its code has them:
//! - **sample length**: each sample's `data` (hex) holds `token_count` tokens of the `--dtype` the
//!   submitter chose (`int64` by default to v4.1, `int32` from v5.0; neither is recorded): here the
//!   width under which every sample's length matches, if one does;
//! - **first token** (not asked of Offline): each sample's `token_data` (the first token as the
//!   SUT reported it) is the start of its `data`;
//! - **EOS**: no sample ends with two end-of-sequence tokens, the first token never looked at
//!   (`while i > 0`; v4.1's `return len(data) == 2` therefore never returns true). The id is the
//!   script's default 2, llama2-70b's and mixtral-8x7b's: for the other LLMs the script is given
//!   `-e ID`, which argparse hands over as text that no token equals, so the check passes whatever
//!   the log holds: not recomputed for them.

use super::{Compliance, Result};
use crate::check::{Emit, Ran};
use serde_json::json;

/// One sample of a TEST06 accuracy log, as read: its hex fields and its token count.
#[derive(Debug, Clone)]
pub struct Sample {
    pub seq_id: Option<u64>,
    pub data: String,
    pub token_data: Option<String>,
    pub token_count: Option<u64>,
}

/// A TEST06 accuracy log: its path as shown and its samples, or why it could not be read.
pub type AccuracyLog = (String, std::result::Result<Vec<Sample>, String>);

/// The end-of-sequence id the script compares as a number (its default).
const DEFAULT_EOS: i64 = 2;

/// The benchmarks whose end-of-sequence token is the script's default.
const DEFAULT_EOS_BENCHMARKS: &[&str] = &["llama2-70b", "llama2-70b-interactive", "mixtral-8x7b"];

/// The integer widths the script's `--dtype` offers, widest first (`float32` reads as `int32` here).
const WIDTHS: [(usize, &str); 3] = [(8, "int64"), (4, "int32"), (2, "int16")];

/// What the log shows of one check: passed, or the first sample failing it and why.
type Outcome = std::result::Result<(), String>;

/// The three checks recomputed; `None` where not recomputed.
struct Recomputed {
    dtype: Option<&'static str>,
    length: Outcome,
    first_token: Option<Outcome>,
    eos: Option<Outcome>,
}

/// `import.submission-compliance-log` (row T7).
pub(super) fn compliance_log(r: &Result, emit: &mut Emit) -> Ran {
    let test06 = r
        .compliance
        .iter()
        .find(|c| c.test.eq_ignore_ascii_case("TEST06"))?;
    let (log, samples) = test06.log.as_ref()?;
    let samples = match samples {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            emit.info(format!("{log} holds no sample: TEST06 not recomputed"))
                .at(log.as_str(), "");
            return Some(());
        }
        Err(why) => {
            emit.info(format!("{log}: {why}: TEST06 not recomputed"))
                .at(log.as_str(), "");
            return Some(());
        }
    };
    let (file, lines) = test06.verify.as_ref()?;
    let found = recompute(samples, &r.scenario, &r.benchmark);
    let checks = [
        (
            "Sample length check pass",
            "sample length",
            Some(&found.length),
        ),
        (
            "First token check pass",
            "first token",
            found.first_token.as_ref(),
        ),
        ("EOS check pass", "EOS", found.eos.as_ref()),
    ];
    let (mut agreed, mut passed_not_said) = (Vec::new(), Vec::new());
    let mut contradicted = false;
    for (check, short, outcome) in checks {
        let Some(outcome) = outcome else { continue };
        match (outcome, claim(lines, check)) {
            // "Skipped" is what the script writes when run as for Offline: a run of another
            // scenario whose log fails the first token was verified as the wrong scenario.
            (Err(why), Some(said @ ("True" | "Skipped"))) => {
                contradicted = true;
                emit.finding(format!(
                    "{file} says \"{check}: {said}\", but its {} run's accuracy log fails it: {why}",
                    r.scenario
                ))
                .at(log.as_str(), "")
                .data(json!({"test": "TEST06", "check": check, "dtype": found.dtype}));
            }
            (Ok(()), Some("True")) | (Err(_), Some("False")) => agreed.push(short),
            (Ok(()), _) => passed_not_said.push(short),
            (Err(_), _) => {}
        }
    }
    if !contradicted {
        let said = say_agreed(test06, samples.len(), &found, &agreed, &passed_not_said);
        emit.info(said).at(log.as_str(), "");
    }
    Some(())
}

/// What the verify file's line for `check` says (`True`, `False`, `Skipped`), if it has one.
fn claim<'a>(lines: &'a [String], check: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        l.trim()
            .strip_prefix(check)
            .and_then(|rest| rest.trim_start().strip_prefix(':'))
            .map(str::trim)
    })
}

/// The note of a log that contradicts no `True` of its verify file: the checks it agrees on, those
/// not recomputed and why, and those its log passes that the file does not say passed.
fn say_agreed(
    test06: &Compliance,
    samples: usize,
    found: &Recomputed,
    agreed: &[&str],
    passed_not_said: &[&str],
) -> String {
    let mut not = Vec::new();
    if found.first_token.is_none() && found.dtype.is_some() {
        not.push("the first token (not asked of Offline)");
    }
    if found.eos.is_none() && found.dtype.is_some() {
        not.push("EOS (the script compares a given id as text: it passes whatever the log holds)");
    }
    let file = test06
        .verify
        .as_ref()
        .map_or("its verify file", |(f, _)| f.as_str());
    let dtype = found.dtype.unwrap_or("no one width");
    let agreed = match agreed {
        [] => "no".to_string(),
        some => some.join(", "),
    };
    let mut said = format!(
        "{} recomputed from its accuracy log ({samples} samples, {dtype}): its {agreed} checks agree with {file}",
        test06.test
    );
    if !not.is_empty() {
        said.push_str(&format!("; not recomputed: {}", not.join(", ")));
    }
    if !passed_not_said.is_empty() {
        said.push_str(&format!(
            "; passed by the log, not said passed by the file: {}",
            passed_not_said.join(", ")
        ));
    }
    said
}

fn recompute(samples: &[Sample], scenario: &str, benchmark: &str) -> Recomputed {
    let tokens: Vec<Option<Vec<u8>>> = samples.iter().map(|s| unhex(&s.data)).collect();
    let width = WIDTHS.iter().find(|(w, _)| {
        samples
            .iter()
            .zip(&tokens)
            .all(|(s, t)| matches!((t, s.token_count), (Some(b), Some(n)) if holds(b, n, *w)))
    });
    let Some(&(width, dtype)) = width else {
        return Recomputed {
            dtype: None,
            length: Err(length_failure(samples, &tokens)),
            first_token: None,
            eos: None,
        };
    };
    let first_token =
        (!scenario.eq_ignore_ascii_case("Offline")).then(|| first_token(samples, &tokens, width));
    let base = benchmark.trim_end_matches("-99.9").trim_end_matches("-99");
    let eos = DEFAULT_EOS_BENCHMARKS
        .contains(&base)
        .then(|| eos(samples, &tokens, width));
    Recomputed {
        dtype: Some(dtype),
        length: Ok(()),
        first_token,
        eos,
    }
}

fn name(s: &Sample, i: usize) -> String {
    match s.seq_id {
        Some(id) => format!("sample {} (seq_id {id})", i + 1),
        None => format!("sample {}", i + 1),
    }
}

/// Why no width fits every sample: the first sample whose bytes no width makes its token count.
fn length_failure(samples: &[Sample], tokens: &[Option<Vec<u8>>]) -> String {
    for (i, (s, t)) in samples.iter().zip(tokens).enumerate() {
        let Some(b) = t else {
            return format!("{}'s data is not hex", name(s, i));
        };
        let Some(n) = s.token_count else {
            return format!("{} has no token_count", name(s, i));
        };
        if !WIDTHS.iter().any(|(w, _)| holds(b, n, *w)) {
            return format!(
                "{} holds {} bytes, which is {n} tokens of no integer width",
                name(s, i),
                b.len()
            );
        }
    }
    "no one integer width gives every sample its token_count".to_string()
}

/// Whether `data` is `count` tokens of `width` bytes (a count no file could hold is not).
fn holds(data: &[u8], count: u64, width: usize) -> bool {
    usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(width))
        .is_some_and(|len| len == data.len())
}

fn first_token(samples: &[Sample], tokens: &[Option<Vec<u8>>], width: usize) -> Outcome {
    for (i, (s, t)) in samples.iter().zip(tokens).enumerate() {
        let data = t.as_deref().unwrap_or_default();
        let Some(first) = s.token_data.as_deref().map(unhex) else {
            return Err(format!("{} has no token_data", name(s, i)));
        };
        let Some(first) = first.filter(|f| f.len().is_multiple_of(width)) else {
            return Err(format!("{}'s token_data is not whole tokens", name(s, i)));
        };
        let n = first.len().min(data.len());
        if first[..n] != data[..n] {
            return Err(format!(
                "{}'s first token as reported ({}) is not its output's first ({})",
                name(s, i),
                token(&first, width, 0),
                token(data, width, 0)
            ));
        }
    }
    Ok(())
}

fn eos(samples: &[Sample], tokens: &[Option<Vec<u8>>], width: usize) -> Outcome {
    for (i, (s, t)) in samples.iter().zip(tokens).enumerate() {
        let data = t.as_deref().unwrap_or_default();
        let n = data.len() / width;
        if n >= 3
            && token(data, width, n - 1) == DEFAULT_EOS
            && token(data, width, n - 2) == DEFAULT_EOS
        {
            return Err(format!(
                "{} ends with two end-of-sequence tokens ({DEFAULT_EOS})",
                name(s, i)
            ));
        }
    }
    Ok(())
}

/// Token `i` of `data`, little-endian signed integers of `width` bytes.
fn token(data: &[u8], width: usize, i: usize) -> i64 {
    let b = &data[i * width..(i + 1) * width];
    match width {
        8 => i64::from_le_bytes(b.try_into().unwrap_or_default()),
        4 => i32::from_le_bytes(b.try_into().unwrap_or_default()).into(),
        _ => i16::from_le_bytes(b.try_into().unwrap_or_default()).into(),
    }
}

/// Hex text as bytes (either case), as Python's `bytes.fromhex` takes it without spaces.
fn unhex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}
