//! Streaming validation and tally of a quality answers file (JSON Lines).
//!
//! One line at a time: parse, validate against `schemas/quality-answers.schema.json`, deserialize,
//! add to the tally. Lines are processed in batches on every core; memory stays at a few batches.

use rigaudit_audit::records::{Answer, AnswerTally};
use serde_json::Value;
use std::io::BufRead;

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

/// The tally and the bad lines of one file.
#[derive(Debug, Default)]
pub struct Tallied {
    /// Counts over the good lines.
    pub tally: AnswerTally,
    /// The first bad lines.
    pub problems: Vec<Problem>,
    /// How many bad lines in all.
    pub problem_count: usize,
}

const BATCH: usize = 8192;
const KEEP: usize = 25;

fn one(line: &[u8], n: u64, v: &jsonschema::Validator, t: &mut Tallied) {
    let mut bad = |pointer: String, message: String, unreadable: bool| {
        t.problem_count += 1;
        if t.problems.len() < KEEP {
            t.problems.push(Problem {
                pointer,
                message,
                unreadable,
            });
        }
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            bad(
                format!("line {n}, column {}", e.column()),
                format!("not valid JSON: {e}"),
                true,
            );
            return;
        }
    };
    if !v.is_valid(&value) {
        for (p, m) in crate::schemas::errors(v, &value, 3) {
            bad(
                format!("line {n}{}", if p == "/" { String::new() } else { p }),
                m,
                false,
            );
        }
        return;
    }
    match serde_json::from_value::<Answer>(value) {
        Ok(a) => t.tally.add(&a, n),
        Err(e) => bad(format!("line {n}"), e.to_string(), false),
    }
}

/// Tallies a JSON Lines stream. Blank lines are skipped; an empty file tallies nothing.
pub fn tally(mut r: impl BufRead, v: &jsonschema::Validator) -> Tallied {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let mut total = Tallied::default();
    let mut line_no: u64 = 0;
    loop {
        // Read one batch per thread.
        let mut batches: Vec<Vec<(u64, Vec<u8>)>> = Vec::with_capacity(threads);
        let mut eof = false;
        for _ in 0..threads {
            let mut batch = Vec::with_capacity(BATCH);
            while batch.len() < BATCH {
                let mut buf = Vec::new();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(_) => {
                        line_no += 1;
                        if buf.iter().all(|b| b.is_ascii_whitespace()) {
                            continue;
                        }
                        batch.push((line_no, buf));
                    }
                    Err(e) => {
                        total.problem_count += 1;
                        total.problems.push(Problem {
                            pointer: format!("line {}", line_no + 1),
                            message: format!("cannot read: {e}"),
                            unreadable: true,
                        });
                        eof = true;
                        break;
                    }
                }
            }
            batches.push(batch);
            if eof {
                break;
            }
        }
        let parts: Vec<Tallied> = std::thread::scope(|s| {
            let handles: Vec<_> = batches
                .iter()
                .map(|batch| {
                    s.spawn(move || {
                        let mut t = Tallied::default();
                        for (n, line) in batch {
                            one(line, *n, v, &mut t);
                        }
                        t
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for p in parts {
            total.tally.merge(p.tally);
            total.problem_count += p.problem_count;
            for pr in p.problems {
                if total.problems.len() < KEEP {
                    total.problems.push(pr);
                }
            }
        }
        if eof {
            break;
        }
    }
    total
}
