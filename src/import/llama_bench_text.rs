//! llama-bench's text outputs, `-o csv`, `-o sql` and `-o md` (the default), read into the same
//! test objects as its JSON (`serde_json` objects keyed by llama-bench's field names), for
//! [`super::llama_bench`]. None of them prints the repetitions' samples: CSV and SQL print
//! `avg_ns`, `stddev_ns`, `avg_ts` and `stddev_ts` (`std::to_string`, six decimals), Markdown only
//! `t/s` as `avg_ts ± stddev_ts` at two decimals (docs/formats/llama-bench.md rows B8-B10).

use serde_json::{Map, Value};

/// Which of llama-bench's outputs a text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `-o json`.
    Json,
    /// `-o jsonl`.
    Jsonl,
    /// `-o csv`.
    Csv,
    /// `-o sql`.
    Sql,
    /// `-o md`.
    Markdown,
}

impl Layout {
    /// The option that writes it.
    pub fn option(self) -> &'static str {
        match self {
            Layout::Json => "-o json",
            Layout::Jsonl => "-o jsonl",
            Layout::Csv => "-o csv",
            Layout::Sql => "-o sql",
            Layout::Markdown => "-o md",
        }
    }
}

/// The text layout of a file, by its content: CSV's header, SQL's table, Markdown's table head.
pub fn text_layout(text: &str) -> Option<Layout> {
    let first = text.trim_start().lines().next().unwrap_or_default();
    if first.starts_with("build_commit,") && first.contains(",avg_ts") {
        return Some(Layout::Csv);
    }
    // The table is `test` up to 2025, `llama_bench` later (row B8).
    let table = |t: &str| {
        text.contains(&format!("CREATE TABLE IF NOT EXISTS {t} ("))
            && text.contains(&format!("INSERT INTO {t} ("))
    };
    if table("test") || table("llama_bench") {
        return Some(Layout::Sql);
    }
    md_head(text).map(|_| Layout::Markdown)
}

/// The line index and cells of the first Markdown table head with llama-bench's `test` and `t/s`.
fn md_head(text: &str) -> Option<(usize, Vec<String>)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let cells = md_cells(l)?;
        let has = |k: &str| cells.iter().any(|c| c == k);
        (has("model") && has("test") && has("t/s")).then_some((i, cells))
    })
}

fn md_cells(line: &str) -> Option<Vec<String>> {
    let l = line.trim();
    let inner = l.strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

/// A field's value as llama-bench's JSON would type it: whole numbers and decimals as numbers,
/// the rest as text.
fn typed(field: &str, v: &str) -> Value {
    let numeric = matches!(
        field,
        "build_number"
            | "n_prompt"
            | "n_gen"
            | "n_depth"
            | "avg_ns"
            | "stddev_ns"
            | "avg_ts"
            | "stddev_ts"
    );
    if numeric {
        if let Ok(n) = v.parse::<u64>() {
            return Value::from(n);
        }
        if let Some(x) = v.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            return Value::Number(x);
        }
    }
    Value::String(v.to_string())
}

fn object(fields: &[String], values: &[String]) -> Result<Value, String> {
    if fields.len() != values.len() {
        return Err(format!(
            "{} values under a header of {} fields",
            values.len(),
            fields.len()
        ));
    }
    let map: Map<String, Value> = fields
        .iter()
        .zip(values)
        .map(|(f, v)| (f.clone(), typed(f, v)))
        .collect();
    Ok(Value::Object(map))
}

/// One CSV row of `"quoted"` values (a doubled quote is a quote), as llama-bench writes them.
fn csv_row(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut chars) = (false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The tests of a text output, each with where it is (`line N`).
pub fn tests(text: &str, layout: Layout) -> Result<Vec<(String, Value)>, String> {
    match layout {
        Layout::Csv => csv(text),
        Layout::Sql => sql(text),
        Layout::Markdown => markdown(text),
        Layout::Json | Layout::Jsonl => Ok(Vec::new()),
    }
}

fn csv(text: &str) -> Result<Vec<(String, Value)>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or("no header")?;
    let fields = csv_row(head.trim());
    lines
        .map(|(i, l)| {
            let v = object(&fields, &csv_row(l.trim_end()))
                .map_err(|e| format!("line {}: {e}", i + 1))?;
            Ok((format!("line {}", i + 1), v))
        })
        .collect()
}

/// `INSERT INTO test (f, ...) VALUES ('v', ...);` (the table `llama_bench` in later builds), one
/// a line.
fn sql(text: &str) -> Result<Vec<(String, Value)>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        let Some(rest) = l
            .strip_prefix("INSERT INTO test (")
            .or_else(|| l.strip_prefix("INSERT INTO llama_bench ("))
        else {
            continue;
        };
        let at = format!("line {}", i + 1);
        let (names, values) = rest
            .split_once(") VALUES (")
            .ok_or_else(|| format!("{at}: expected `) VALUES (`"))?;
        let fields: Vec<String> = names.split(',').map(|s| s.trim().to_string()).collect();
        let values = values.trim_end_matches(';').trim_end_matches(')');
        let vals: Vec<String> = values
            .split("', '")
            .map(|s| s.trim_matches('\'').to_string())
            .collect();
        out.push((
            at.clone(),
            object(&fields, &vals).map_err(|e| format!("{at}: {e}"))?,
        ));
    }
    Ok(out)
}

/// A Markdown test name (`pp512`, `pp 512`, `tg128`, `pp512+tg128`, `... @ d512`) as its counts.
fn test_name(name: &str) -> Option<(u64, u64, u64)> {
    let (main, depth) = match name.split_once('@') {
        Some((m, d)) => (m.trim(), d.trim().strip_prefix('d')?.trim().parse().ok()?),
        None => (name.trim(), 0),
    };
    let (mut p, mut g) = (0, 0);
    for part in main.split('+') {
        let part = part.trim();
        let n = |s: &str| s.trim().parse::<u64>().ok();
        if let Some(x) = part.strip_prefix("pp") {
            p = n(x)?;
        } else if let Some(x) = part.strip_prefix("tg") {
            g = n(x)?;
        } else {
            return None;
        }
    }
    Some((p, g, depth))
}

/// Every llama-bench table of the text (a log that ran it several times holds several, between
/// other lines), its rows as tests.
fn markdown(text: &str) -> Result<Vec<(String, Value)>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some((start, head)) = md_head(&lines[i..].join("\n")) {
        let start = i + start;
        let rows = lines[start + 2..]
            .iter()
            .take_while(|l| md_cells(l).is_some())
            .count();
        for (k, l) in lines[start + 2..start + 2 + rows].iter().enumerate() {
            out.push(md_row(&head, l, start + 3 + k)?);
        }
        i = start + 2 + rows;
        if i >= lines.len() {
            break;
        }
    }
    if out.is_empty() {
        return Err("no Markdown table with model, test and t/s".into());
    }
    Ok(out)
}

/// One Markdown row (line `n`, from 1) under `head`, as a test object.
fn md_row(head: &[String], line: &str, n: usize) -> Result<(String, Value), String> {
    let at = format!("line {n}");
    let cells = md_cells(line).unwrap_or_default();
    if cells.len() != head.len() {
        return Err(format!(
            "{at}: {} cells under a head of {}",
            cells.len(),
            head.len()
        ));
    }
    let mut map = Map::new();
    for (k, v) in head.iter().zip(&cells) {
        map.insert(k.clone(), Value::String(v.clone()));
    }
    let test = map["test"].as_str().unwrap_or_default().to_string();
    let (p, g, d) =
        test_name(&test).ok_or_else(|| format!("{at}: test {test:?} is not llama-bench's"))?;
    let ts = map["t/s"].as_str().unwrap_or_default().to_string();
    let (avg, sd) = ts
        .split_once('±')
        .map(|(a, s)| (a.trim().to_string(), s.trim().to_string()))
        .ok_or_else(|| format!("{at}: t/s {ts:?} is not `avg ± stddev`"))?;
    map.insert("n_prompt".into(), p.into());
    map.insert("n_gen".into(), g.into());
    map.insert("n_depth".into(), d.into());
    map.insert("avg_ts".into(), typed("avg_ts", &avg));
    map.insert("stddev_ts".into(), typed("stddev_ts", &sd));
    Ok((at, Value::Object(map)))
}

/// Markdown's closing `build: COMMIT (NUMBER)` line, when the file has it.
pub fn md_build(text: &str) -> Option<(String, String)> {
    let l = text
        .lines()
        .rev()
        .find(|l| l.trim().starts_with("build: "))?;
    let (commit, number) = l.trim().strip_prefix("build: ")?.split_once(" (")?;
    Some((commit.to_string(), number.trim_end_matches(')').to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_names_of_every_version() {
        assert_eq!(test_name("pp 512"), Some((512, 0, 0)));
        assert_eq!(test_name("tg128"), Some((0, 128, 0)));
        assert_eq!(test_name("pp512+tg128"), Some((512, 128, 0)));
        assert_eq!(test_name("pp512 @ d4096"), Some((512, 0, 4096)));
        assert_eq!(test_name("512"), None);
    }

    #[test]
    fn csv_quotes() {
        assert_eq!(csv_row(r#""a","b ""c""","""#), vec!["a", "b \"c\"", ""]);
    }
}
