//! The prompts the measuring client sends, owned by the project.
//!
//! `code` and `prose` ask for long answers so that a reply runs to its token limit; the filler
//! builds prompts of a given size for prefill and context steps (a log-like text, the task last).

/// The built-in decode prompts by id.
pub fn builtin(id: &str) -> Option<&'static str> {
    Some(match id {
        "code" => "Write a complete, well-commented Python module that implements a least-recently-used cache \
with a fixed capacity, time-based expiry of entries, statistics of hits and misses, and a decorator \
that memoizes function calls with it. Then write thorough unit tests for every method, explain the \
design choices in detail, and discuss the complexity of each operation. Do not stop early.",
        "prose" => "Write a long, detailed essay about the history of lighthouses: how they were built, how their \
lights and lenses changed from open fires to Fresnel lenses and electric lamps, the lives of the keepers \
and their families, famous wrecks that lighthouses could not prevent, and what automation changed. \
Use many paragraphs and concrete examples. Do not stop early.",
        _ => return None,
    })
}

/// A filler of `words` words: numbered log lines, deterministic.
pub fn filler(words: usize) -> String {
    let vocab = [
        "request", "served", "slot", "queue", "token", "cache", "batch", "window", "stream",
        "reply", "prompt", "decode", "prefill", "memory", "thread", "kernel", "matrix", "vector",
        "layer", "weight",
    ];
    let mut s = String::with_capacity(words * 7);
    for i in 0..words {
        if i % 12 == 0 {
            s.push_str(&format!("\n[{:06}] ", i / 12));
        } else {
            s.push(' ');
        }
        s.push_str(vocab[(i * 7 + i / 12) % vocab.len()]);
    }
    s.push_str("\nSummarize the log above in one sentence.");
    s
}

/// A filler prompt of exactly `n` tokens as `tok` counts them (no special tokens added), with that
/// count. Cuts the filler's token ids at `n`, decodes them, and checks that the text encodes back
/// to `n` tokens, nudging the cut when a merge across it changes the count.
pub fn exact(
    tok: &tokenizers::Tokenizer,
    n: usize,
) -> Result<(String, usize), crate::fatal::Fatal> {
    let err = |e: tokenizers::Error| crate::fatal::fatal(format!("tokenizer: {e}"));
    let text = filler(n + 8);
    let ids = tok
        .encode(text.as_str(), false)
        .map_err(err)?
        .get_ids()
        .to_vec();
    let mut cut = n.min(ids.len());
    let mut best: Option<(usize, String, usize)> = None;
    for _ in 0..8 {
        let t = tok.decode(&ids[..cut], false).map_err(err)?;
        let count = tok.encode(t.as_str(), false).map_err(err)?.len();
        if count == n {
            return Ok((t, count));
        }
        let miss = count.abs_diff(n);
        if best.as_ref().is_none_or(|b| miss < b.0) {
            best = Some((miss, t, count));
        }
        cut = if count > n {
            cut.saturating_sub(count - n).max(1)
        } else {
            (cut + (n - count)).min(ids.len())
        };
    }
    let (_, t, count) = best.unwrap_or_default();
    Ok((t, count))
}
