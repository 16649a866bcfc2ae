//! The quality part of `measure`: re-asks recorded multiple-choice questions and scores them
//! against their recorded gold, with the test's own answer limit, seed and sampling.
//!
//! A refused request is recorded as refused (HTTP status and error text) and is neither right nor
//! wrong: the summary leaves it out of `total`, `right` and `pct` and says so in `excluded`; a test
//! with no answered question has no percentage and no margin.

use super::client::{Client, Timed};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::quality::{Answer, QualityContract, QualitySummary};
use rigaudit_audit::stats::{margin_pts, MarginMethod};
use serde_json::{json, Value};
use std::path::Path;

/// One question to ask: its id, the prompt text and the gold answer.
#[derive(Debug, Clone)]
pub struct Question {
    /// Question id.
    pub id: String,
    /// The prompt, sent as the one user message.
    pub prompt: String,
    /// The right answer (a letter for multiple choice).
    pub gold: String,
}

/// A quality test to run: its contract (as text, written back unchanged) and its questions.
#[derive(Debug, Clone)]
pub struct QualityPlan {
    /// The contract.
    pub contract: QualityContract,
    /// Its text as read.
    pub contract_text: String,
    /// The questions.
    pub questions: Vec<Question>,
}

/// The questions of a questions file's `text` (read from `path`, which names it in messages):
/// JSON Lines whose records carry at least `id`, `prompt` and `gold` (an answers file of a bundle
/// qualifies). Errors name the file and the line.
pub fn questions_of(path: &Path, text: &str) -> Result<Vec<Question>, Fatal> {
    let mut out = Vec::new();
    let lines = text.lines().enumerate();
    for (i, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| {
            fatal(format!(
                "{}: line {}, column {}: {e}",
                path.display(),
                i + 1,
                e.column()
            ))
        })?;
        let field = |k: &str| -> Result<String, Fatal> {
            v.get(k)
                .and_then(Value::as_str)
                .map(String::from)
                .ok_or_else(|| {
                    fatal(format!(
                        "{}: line {}: expected a string field '{k}' (questions need id, prompt and gold; a prompt published only as its hash cannot be asked again)",
                        path.display(),
                        i + 1
                    ))
                })
        };
        out.push(Question {
            id: field("id")?,
            prompt: field("prompt")?,
            gold: field("gold")?,
        });
    }
    if out.is_empty() {
        return Err(fatal(format!("{}: no questions", path.display())));
    }
    Ok(out)
}

/// The option letters a multiple-choice prompt offers: every `X)` or `(X)` that starts a line, A-J;
/// `ABCD` when the prompt marks none.
pub fn option_letters(prompt: &str) -> String {
    let mut found = String::new();
    for line in prompt.lines() {
        let t = line.trim_start().trim_start_matches('(');
        let mut cs = t.chars();
        if let (Some(c), Some(')')) = (cs.next(), cs.next()) {
            if ('A'..='J').contains(&c) && !found.contains(c) {
                found.push(c);
            }
        }
    }
    if found.is_empty() {
        "ABCD".into()
    } else {
        found
    }
}

/// The answer a reply gives to a multiple-choice question whose options are `letters`: the letter
/// after "answer is" / "Answer:", else the first of those letters standing alone (so the pronoun
/// "I" is not an answer unless the question has an option I); `None` when there is none.
pub fn extract_choice(reply: &str, letters: &str) -> Option<String> {
    let ok = |c: char| letters.contains(c);
    let lower = reply.to_ascii_lowercase();
    for cue in ["answer is", "answer:"] {
        if let Some(at) = lower.find(cue) {
            let rest = &reply[at + cue.len()..];
            if let Some(c) = rest
                .chars()
                .find(|c| !(c.is_whitespace() || matches!(c, '(' | '*' | '"' | '\'')))
                .filter(|c| ok(*c))
            {
                return Some(c.to_string());
            }
        }
    }
    let chars: Vec<char> = reply.chars().collect();
    (0..chars.len())
        .find(|&i| {
            ok(chars[i])
                && (i == 0 || !chars[i - 1].is_alphanumeric())
                && chars.get(i + 1).is_none_or(|c| !c.is_alphanumeric())
        })
        .map(|i| chars[i].to_string())
}

/// Builds one request body for a question.
pub fn body(c: &QualityContract, model: &str, q: &Question, nonce: &str) -> Value {
    let mut b = json!({
        "model": model,
        "messages": [{"role": "user", "content": q.prompt}],
        "max_tokens": c.max_tokens,
        "cache_prompt": false,
        "cache_salt": nonce,
        "user": nonce,
    });
    for (k, v) in &c.sampling {
        b[k.as_str()] = json!(v);
    }
    if let Some(s) = c.seed {
        b["seed"] = json!(s);
    }
    if let Some(t) = c.enable_thinking {
        b["chat_template_kwargs"] = json!({"enable_thinking": t});
    }
    b
}

/// The answer record of one asked question.
pub fn answer(c: &QualityContract, q: &Question, t: &Timed) -> Answer {
    let answered = t.status == 200 && t.error.is_none();
    let extracted = if answered {
        extract_choice(&t.text, &option_letters(&q.prompt))
    } else {
        None
    };
    let correct = answered && extracted.as_deref() == Some(q.gold.as_str());
    Answer {
        id: q.id.clone(),
        prompt: Some(q.prompt.clone()),
        prompt_sha256: None,
        prompt_tokens: t.prompt_tokens,
        max_tokens: c.max_tokens,
        status: t.status,
        error: t.error.clone(),
        finish_reason: if answered {
            t.finish_reason.clone()
        } else {
            None
        },
        completion_tokens: if answered { t.completion_tokens } else { None },
        extracted,
        gold: Some(q.gold.clone()),
        correct,
        seconds: t.end_s.map(|e| e - t.sent_s),
    }
}

/// The summary of a test's answers: over answered questions only, refused ones excluded.
pub fn summary(
    c: &QualityContract,
    answers: &[Answer],
    run: &str,
    started: &str,
    ended: &str,
) -> QualitySummary {
    let answered: Vec<&Answer> = answers.iter().filter(|a| a.answered()).collect();
    let total = answered.len() as u64;
    let right = answered.iter().filter(|a| a.correct).count() as u64;
    let excluded = answers.len() as u64 - total;
    let cutoffs = answered
        .iter()
        .filter(|a| a.finish_reason.as_deref() == Some("length"))
        .count() as u64;
    let method = MarginMethod::parse(&c.margin.method).unwrap_or(MarginMethod::Normal);
    let pct = (total > 0).then(|| round(100.0 * right as f64 / total as f64, 1));
    let margin = margin_pts(right, total, c.margin.z, method).map(|m| round(m, 1));
    let mut secs: Vec<f64> = answered.iter().filter_map(|a| a.seconds).collect();
    secs.sort_by(f64::total_cmp);
    QualitySummary {
        test: c.test.clone(),
        run: Some(run.to_string()),
        started: Some(started.to_string()),
        ended: Some(ended.to_string()),
        total,
        right,
        pct,
        margin: if total > 0 { margin } else { None },
        cutoffs: Some(cutoffs),
        errors: Some(excluded),
        excluded: Some(excluded),
        median_seconds: rigaudit_audit::stats::median(&secs).map(|m| round(m, 3)),
    }
}

fn round(x: f64, d: i32) -> f64 {
    let f = 10f64.powi(d);
    (x * f).round() / f
}

/// Asks every question of a test, `concurrency` at a time, in question order.
pub fn ask_all(
    client: &Client,
    c: &QualityContract,
    model: &str,
    questions: &[Question],
    mut nonce: impl FnMut() -> String,
    mut tick: impl FnMut(),
) -> Vec<Answer> {
    let per = c.concurrency.unwrap_or(1).max(1) as usize;
    let mut out = Vec::with_capacity(questions.len());
    for chunk in questions.chunks(per) {
        let bodies: Vec<Value> = chunk.iter().map(|q| body(c, model, q, &nonce())).collect();
        let timed: Vec<Timed> = std::thread::scope(|s| {
            let hs: Vec<_> = bodies
                .iter()
                .map(|b| s.spawn(move || client.stream("chat/completions", b.clone())))
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for (q, t) in chunk.iter().zip(&timed) {
            out.push(answer(c, q, t));
            tick();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_the_letter_a_reply_gives() {
        let x = |r: &str| extract_choice(r, "ABCD");
        assert_eq!(x("The answer is (C)."), Some("C".into()));
        assert_eq!(x("Answer: B"), Some("B".into()));
        assert_eq!(x("B) 42"), Some("B".into()));
        assert_eq!(x("I think it is D because"), Some("D".into()));
        assert_eq!(x("Because 12 is even"), None);
        assert_eq!(x("the answer is 42"), None);
        assert_eq!(extract_choice("I", "ABCDEFGHIJ"), Some("I".into()));
    }

    #[test]
    fn reads_the_option_letters_a_prompt_offers() {
        assert_eq!(option_letters("What is 2+2?\nA) 4\nB) 5\nC) 3"), "ABC");
        assert_eq!(option_letters("Pick one:\n(A) x\n(B) y"), "AB");
        assert_eq!(option_letters("no options here"), "ABCD");
    }

    fn contract() -> QualityContract {
        serde_json::from_value(
            json!({"test": "t", "name": "T", "questions": 3, "max_tokens": 8,
            "margin": {"method": "wilson"}}),
        )
        .unwrap()
    }

    #[test]
    fn refused_questions_are_excluded_not_wrong() {
        let c = contract();
        let q = |id: &str, gold: &str| Question {
            id: id.into(),
            prompt: "p".into(),
            gold: gold.into(),
        };
        let ok = |text: &str| Timed {
            status: 200,
            text: text.into(),
            finish_reason: Some("stop".into()),
            end_s: Some(1.0),
            ..Default::default()
        };
        let refused = Timed {
            status: 400,
            error: Some("maximum context length is 8 tokens".into()),
            ..Default::default()
        };
        let a = vec![
            answer(&c, &q("1", "A"), &ok("A")),
            answer(&c, &q("2", "B"), &ok("C")),
            answer(&c, &q("3", "C"), &refused),
        ];
        assert!(a[0].correct && !a[1].correct && !a[2].correct);
        assert_eq!(a[2].extracted, None);
        let s = summary(&c, &a, "r", "s", "e");
        assert_eq!((s.total, s.right, s.excluded), (2, 1, Some(1)));
        assert_eq!(s.pct, Some(50.0));
        let none = summary(&c, &a[2..], "r", "s", "e");
        assert_eq!((none.total, none.pct, none.margin), (0, None, None));
    }
}
