//! What every importer parses with: JSON (strict, or Python's with its non-finite numbers), JSON
//! Lines, values at a pointer, an error object, the settings of a file flattened.

use super::*;

/// Flattens a JSON value into settings (`name` = its pointer under `prefix`), leaving out the
/// pointers that contain one of `skip` (paths, addresses, times: what differs run to run).
pub fn flatten(v: &Value, prefix: &str, file: &str, skip: &[&str], out: &mut Vec<Setting>) {
    if skip.iter().any(|k| prefix.contains(k)) {
        return;
    }
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                flatten(x, &format!("{prefix}/{k}"), file, skip, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(x, &format!("{prefix}/{i}"), file, skip, out);
            }
        }
        Value::Null => {}
        x => out.push(Setting {
            name: prefix.trim_start_matches('/').to_string(),
            value: x
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| x.to_string()),
            at: format!("{file} {prefix}"),
            subject: Subject::Contract,
        }),
    }
}

/// A source's JSON document; an error names the file, line and column.
pub fn json_of(src: &Source) -> Result<Value, Fatal> {
    serde_json::from_slice(&src.bytes).map_err(|e| src.not_json(e.line(), &e))
}

/// A source's JSON as Python's `json` writes it: bare `NaN`, `Infinity` and `-Infinity` (which
/// it writes for undefined floats) are read as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`
/// ([`non_finite`] reads them back); anything else invalid is refused as by [`json_of`].
pub fn json_of_python(src: &Source) -> Result<Value, Fatal> {
    match json_of(src) {
        Ok(v) => Ok(v),
        Err(e) => {
            let quoted = quote_non_finite(&src.bytes).ok_or(e)?;
            serde_json::from_slice(&quoted).map_err(|e| src.not_json(e.line(), &e))
        }
    }
}

/// The text with every bare `NaN`, `Infinity`, `-Infinity` outside a string quoted; `None`
/// when it holds none.
pub(super) fn quote_non_finite(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            (escaped, in_string) = (!escaped && b == b'\\', escaped || b != b'"');
            out.push(b);
            i += 1;
            continue;
        }
        let word = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| bytes[i..].starts_with(w.as_bytes()));
        match (b, word) {
            (b'"', _) => {
                in_string = true;
                out.push(b);
                i += 1;
            }
            (_, Some(w)) => {
                found = true;
                out.extend_from_slice(format!("\"{w}\"").as_bytes());
                i += w.len();
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    found.then_some(out)
}

/// A number, or one [`json_of_python`] read from a bare `NaN`, `Infinity` or `-Infinity`.
pub fn non_finite(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| match v.as_str()? {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    })
}

/// A source's JSON Lines, each line through `each` (its value and 1-based number): blank lines
/// skipped, a line over [`input::ANSWERS_LINE_MAX`] refused, Python's bare `NaN` and `Infinity`
/// read as by [`json_of_python`]; an error names the file and line.
pub fn json_lines<T>(
    src: &Source,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    let python_line = |line: &str| {
        serde_json::from_str(line).or_else(|e| {
            let quoted = quote_non_finite(line.as_bytes()).ok_or(e)?;
            serde_json::from_slice(&quoted)
        })
    };
    json_lines_by(src, Some(input::ANSWERS_LINE_MAX), python_line, each)
}

/// A source's JSON Lines as strict JSON, each line through `each`, with no bound on a line
/// (AIPerf's raw export holds every chunk of a reply on one line).
pub fn strict_json_lines<T>(
    src: &Source,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    json_lines_by(src, None, |line| serde_json::from_str(line), each)
}

/// The loop of [`json_lines`] and [`strict_json_lines`]: `parse` reads a line, `line_max` bounds
/// one when given.
pub(super) fn json_lines_by<T>(
    src: &Source,
    line_max: Option<usize>,
    parse: impl Fn(&str) -> Result<Value, serde_json::Error>,
    each: impl Fn(&Value, usize) -> Result<T, String>,
) -> Result<Vec<T>, Fatal> {
    let text = src.text()?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(max) = line_max.filter(|max| line.len() > *max) {
            return Err(src.unreadable(
                Some(format!("line {}", i + 1)),
                format!(
                    "{} bytes, longer than the bound for one record ({}): expected one JSON record a line, each within it",
                    line.len(),
                    input::size(max as u64)
                ),
            ));
        }
        let v = parse(line).map_err(|e| src.not_json(i + 1, &e))?;
        out.push(
            each(&v, i + 1).map_err(|w| fatal(format!("{}: line {}: {w}", src.shown, i + 1)))?,
        );
    }
    Ok(out)
}

/// The text at a JSON pointer (`/metadata/x_request_id`), owned; none when the place is absent or
/// holds something other than a string.
pub fn string_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(|x| x.as_str())
        .map(String::from)
}

/// The value at `pointer` of a source's document, read by `as_kind` (`Value::as_object`, ...);
/// an error names the file, the place and what was `expected`.
pub fn required_at<'v, T>(
    src: &Source,
    v: &'v Value,
    pointer: &str,
    as_kind: impl Fn(&'v Value) -> Option<T>,
    expected: &str,
) -> Result<T, Fatal> {
    v.pointer(pointer)
        .and_then(as_kind)
        .ok_or_else(|| fatal(format!("{}: at {pointer}: expected {expected}", src.shown)))
}

/// The `error` object of a response or record, when it has one: its `code` and `message`
/// (OpenAI's error shape, which AIPerf and llama.cpp's server both write).
pub fn error_of(v: &Value) -> Option<(Option<i64>, String)> {
    v.get("error").filter(|e| !e.is_null()).map(|e| {
        let code = e.get("code").and_then(|c| c.as_i64());
        let msg = e
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_string();
        (code, msg)
    })
}

/// The index of the source `is` picks, its role set to `role`; when none is, an error naming
/// every source given and then `missing` (what was expected).
pub fn take(
    sources: &mut [Source],
    is: impl Fn(&Source) -> bool,
    role: &str,
    missing: &str,
) -> Result<usize, Fatal> {
    let i = sources
        .iter()
        .position(is)
        .ok_or_else(|| fatal(format!("{}: {missing}", names(sources))))?;
    sources[i].role = role.into();
    Ok(i)
}
