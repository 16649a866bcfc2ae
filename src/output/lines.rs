//! The line of a raw file a finding's place names: a JSON pointer resolved in the file's text to
//! the line of the member's key (or of the array element) it points at, or the record a JSON Lines
//! place names (`line N`, `line N /pointer`, `line N, column C`). Pure text in, a line out (1 is
//! the first); the annotations (`--format github`) and SARIF's regions both ask here.
//!
//! The scan is one pass from the start of the text to the value named, skipping what it passes
//! over without building it, and without recursion: a deeply nested file cannot overflow the
//! stack. A member that is not there resolves to the deepest one that is (a missing field is shown
//! at the object that lacks it); a text that is not JSON resolves to nothing.

/// The 1-based line `pointer` names in `text`, when it can be told.
pub fn line_of(text: &str, pointer: &str) -> Option<usize> {
    if let Some(rest) = pointer.strip_prefix("line ") {
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        return digits.parse().ok().filter(|n| *n > 0);
    }
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return None;
    }
    let mut s = Scanner {
        text: text.as_bytes(),
        at: 0,
    };
    s.skip_space();
    if !matches!(s.peek(), Some(b'{') | Some(b'[')) {
        return None;
    }
    let mut found = s.at;
    if pointer != "/" {
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            match s.enter(&token) {
                Some(place) => found = place,
                None => break,
            }
        }
    }
    Some(line_at(text.as_bytes(), found))
}

/// The 1-based line of a byte offset.
fn line_at(text: &[u8], offset: usize) -> usize {
    1 + text[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// A position in a JSON text.
struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Steps over a string starting at its opening quote; returns its raw content.
    fn string(&mut self) -> Option<&[u8]> {
        let start = self.at + 1;
        let mut i = start;
        while i < self.text.len() {
            match self.text[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.at = i + 1;
                    return Some(&self.text[start..i]);
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Steps over one value of any kind, nested ones by counting brackets.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            self.skip_space();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.at += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.at += 1;
                }
                b',' | b':' if depth > 0 => self.at += 1,
                _ => {
                    while !matches!(
                        self.peek(),
                        None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                    ) {
                        self.at += 1;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// After a value: steps over the comma before the next one; `None` at the container's end.
    fn next_item(&mut self) -> Option<()> {
        self.skip_space();
        (self.peek()? == b',').then(|| self.at += 1)
    }

    /// Moves into the member `token` of the object or array at the position: leaves the position
    /// at its value and returns where to show it (the key of a member, the element itself).
    fn enter(&mut self, token: &str) -> Option<usize> {
        self.skip_space();
        match self.peek()? {
            b'{' => self.member(token),
            b'[' => self.element(token.parse().ok()?),
            _ => None,
        }
    }

    fn member(&mut self, token: &str) -> Option<usize> {
        self.at += 1;
        loop {
            self.skip_space();
            if self.peek()? != b'"' {
                return None;
            }
            let key_at = self.at;
            let raw = self.string()?;
            let is_it = key_equals(raw, token);
            self.skip_space();
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            self.skip_space();
            if is_it {
                return Some(key_at);
            }
            self.skip_value()?;
            self.next_item()?;
        }
    }

    fn element(&mut self, index: usize) -> Option<usize> {
        self.at += 1;
        for n in 0.. {
            self.skip_space();
            if self.peek()? == b']' {
                return None;
            }
            if n == index {
                return Some(self.at);
            }
            self.skip_value()?;
            self.next_item()?;
        }
        None
    }
}

/// Whether a key's raw text (escapes and all) is `token`.
fn key_equals(raw: &[u8], token: &str) -> bool {
    if !raw.contains(&b'\\') {
        return raw == token.as_bytes();
    }
    let quoted = [b"\"", raw, b"\""].concat();
    serde_json::from_slice::<String>(&quoted).is_ok_and(|k| k == token)
}

#[cfg(test)]
mod tests {
    use super::line_of;

    const DOC: &str = r#"{
  "id": "x",
  "requests": [
    {"n": 0},
    {
      "n": 1,
      "text": "a \"quoted\" ] brace }"
    },
    {"n": 2}
  ],
  "a/b": {"c~d": [1, [2, 3], {"deep": true}]},
  "t\u0061il": 5
}"#;

    #[test]
    fn a_pointer_resolves_to_the_line_of_its_key_or_element() {
        assert_eq!(line_of(DOC, ""), Some(1));
        assert_eq!(line_of(DOC, "/id"), Some(2));
        assert_eq!(line_of(DOC, "/requests"), Some(3));
        assert_eq!(line_of(DOC, "/requests/0"), Some(4));
        assert_eq!(line_of(DOC, "/requests/1/text"), Some(7));
        assert_eq!(line_of(DOC, "/requests/2/n"), Some(9));
        assert_eq!(line_of(DOC, "/a~1b/c~0d/2/deep"), Some(11));
        assert_eq!(line_of(DOC, "/tail"), Some(12));
    }

    #[test]
    fn a_missing_member_resolves_to_the_deepest_one_there() {
        assert_eq!(line_of(DOC, "/requests/1/missing"), Some(5));
        assert_eq!(line_of(DOC, "/requests/9"), Some(3));
        assert_eq!(line_of(DOC, "/requests/x"), Some(3));
    }

    #[test]
    fn json_lines_places_name_their_line_and_other_text_nothing() {
        assert_eq!(line_of("", "line 38"), Some(38));
        assert_eq!(line_of("", "line 4 /timings/ttft"), Some(4));
        assert_eq!(line_of("", "line 7, column 3"), Some(7));
        assert_eq!(line_of("", "line 0"), None);
        assert_eq!(line_of("a: 1\nb: 2\n", "/a"), None);
        assert_eq!(line_of(DOC, "requests"), None);
    }

    #[test]
    fn broken_or_hostile_text_ends_the_scan_without_a_panic() {
        assert_eq!(line_of("{\"a\": \"unterminated", "/a/b"), Some(1));
        assert_eq!(line_of("[[[[", "/0/0/0/0/0"), Some(1));
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(line_of(&format!("[1,\n{deep}, 2]"), "/2"), Some(2));
        assert_eq!(line_of("{\"a\" 1}", "/a"), Some(1));
        assert_eq!(line_of("[1,2", "/5"), Some(1));
    }
}
