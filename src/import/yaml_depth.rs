//! A linear pre-scan of a YAML document's nesting, run before libyaml sees the bytes.
//!
//! libyaml's scanner is quadratic on deep flow nesting (`[[[[...`, `{{{{...`: its stack of
//! possible simple keys, one per flow level, is walked for every token), and holds every event of
//! a deep block nesting (`- - - - ...` on one line) in memory before `serde_yaml_ng`'s own depth
//! limit of 128 is met while deserializing: a 1 MB line of `[` took minutes, a 10 MB line of `- `
//! 1.5 GB. This scan walks the bytes once and refuses a document nested deeper than
//! [`crate::input::YAML_DEPTH_MAX`] levels, naming the line.
//!
//! What is counted: the open flow collections (`[`, `{` outside quoted scalars and comments; in
//! block context only where a node starts: after the indentation, `- `, `? `, `key: `, an anchor
//! or a tag) plus the open block collections, kept as a stack of (column, kind): a sequence entry
//! `- ` or a mapping key opens a level at its column, closing those at deeper columns (a sequence
//! at the column of the key it is the value of nests under it). Lines that continue a scalar
//! (more indented than the innermost level after a line that ended in a value: a plain scalar's
//! continuation, a block scalar `|` / `>`'s content) are skipped, so text inside them never
//! counts. It is a bound, not a parser: a document it lets through is then parsed by libyaml,
//! whose own depth limit stays on.

/// The kind of an open block collection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Seq,
    Map,
}

/// `Err` (a message naming the line and the bound, without the file's name) when `bytes` nest
/// deeper than `max` levels.
pub fn check(bytes: &[u8], max: usize) -> Result<(), String> {
    let mut s = Scan {
        b: bytes,
        i: 0,
        line: 1,
        line_start: 0,
        levels: Vec::new(),
        max,
    };
    s.run()
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
    /// The open block collections: column and kind, columns increasing.
    levels: Vec<(usize, Kind)>,
    max: usize,
}

fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Whether the byte `k` ahead is blank or the end.
    fn blank_at(&self, k: usize) -> bool {
        self.b.get(self.i + k).is_none_or(|c| blank(*c))
    }

    /// One byte on, counting lines.
    fn bump(&mut self) {
        if self.peek() == Some(b'\n') {
            self.line += 1;
            self.line_start = self.i + 1;
        }
        self.i += 1;
    }

    fn col(&self) -> usize {
        self.i - self.line_start
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// To the start of the next line.
    fn next_line(&mut self) {
        match self.b[self.i.min(self.b.len())..]
            .iter()
            .position(|c| *c == b'\n')
        {
            Some(n) => {
                self.i += n;
                self.bump();
            }
            None => self.i = self.b.len(),
        }
    }

    fn too_deep(&self, depth: usize) -> Result<(), String> {
        if depth <= self.max {
            return Ok(());
        }
        Err(format!(
            "line {}: nested more than {} levels deep, the bound for a YAML document (YAML_DEPTH_MAX); refused before it is parsed (see docs/security.md)",
            self.line, self.max
        ))
    }

    /// The lines: blank lines, comments and the continuation lines of a scalar are skipped.
    fn run(&mut self) -> Result<(), String> {
        if self.b.starts_with("\u{feff}".as_bytes()) {
            self.i = 3;
        }
        // Lines more indented than this continue the scalar the line before ended with.
        let mut scalar_above: Option<isize> = None;
        while self.i < self.b.len() {
            self.skip_ws();
            let indent = self.col() as isize;
            if matches!(self.peek(), None | Some(b'\n' | b'\r' | b'#')) {
                self.next_line();
                continue;
            }
            if scalar_above.is_some_and(|t| indent > t) && !self.document_marker() {
                self.next_line();
                continue;
            }
            scalar_above = self.line_nodes()?;
            self.next_line();
        }
        Ok(())
    }

    /// `---` or `...` at the start of a line: a document starts or ends.
    fn document_marker(&self) -> bool {
        let rest = &self.b[self.i..];
        self.col() == 0
            && (rest.starts_with(b"---") || rest.starts_with(b"..."))
            && self.blank_at(3)
    }

    /// The threshold of continuation lines after a line that ended in a value: deeper than the
    /// innermost open level.
    fn value_ended(&self) -> Option<isize> {
        Some(self.levels.last().map_or(-1, |l| l.0 as isize))
    }

    /// The nodes of one line (a flow collection or a quoted scalar may run over lines). Returns
    /// the continuation threshold when the line ended in a value.
    fn line_nodes(&mut self) -> Result<Option<isize>, String> {
        loop {
            let col = self.col();
            let Some(c) = self.peek() else {
                return Ok(None);
            };
            match c {
                b'\n' | b'\r' | b'#' => return Ok(None),
                b'-' | b'.' if self.document_marker() => {
                    self.levels.clear();
                    self.i += 3;
                    self.skip_ws();
                }
                b'-' | b'?' | b':' if self.blank_at(1) => {
                    if c != b':' {
                        self.open(col, if c == b'-' { Kind::Seq } else { Kind::Map })?;
                    }
                    self.i += 1;
                    self.skip_ws();
                }
                b'&' | b'!' => {
                    while !self.blank_at(0) {
                        self.i += 1;
                    }
                    self.skip_ws();
                }
                b'|' | b'>' => return Ok(self.value_ended()),
                b'[' | b'{' | b'"' | b'\'' => {
                    if c == b'[' || c == b'{' {
                        self.flow()?;
                    } else {
                        self.quoted();
                    }
                    if !self.key_follows(col)? {
                        return Ok(self.value_ended());
                    }
                }
                _ if !self.plain_is_key() => return Ok(self.value_ended()),
                _ => self.open(col, Kind::Map)?,
            }
        }
    }

    /// After a flow collection or a quoted scalar: whether `: ` follows (it was a key, opened at
    /// `col`; the position is then after the colon).
    fn key_follows(&mut self, col: usize) -> Result<bool, String> {
        self.skip_ws();
        if self.peek() == Some(b':') && self.blank_at(1) {
            self.open(col, Kind::Map)?;
            self.i += 1;
            self.skip_ws();
            return Ok(true);
        }
        Ok(false)
    }

    /// A plain scalar in block context, to its line's end: true (the position after the colon)
    /// when it is a key, `: ` or a colon at the end of the line following it.
    fn plain_is_key(&mut self) -> bool {
        while let Some(c) = self.peek() {
            match c {
                b'\n' => return false,
                b':' if self.blank_at(1) => {
                    self.i += 1;
                    self.skip_ws();
                    return true;
                }
                b'#' if blank(self.b[self.i - 1]) => return false,
                _ => self.i += 1,
            }
        }
        false
    }

    /// Opens a block collection of `kind` at `col`, closing those it ends.
    fn open(&mut self, col: usize, kind: Kind) -> Result<(), String> {
        while let Some(&(c, k)) = self.levels.last() {
            let sibling = c == col && (k == kind || (k == Kind::Seq && kind == Kind::Map));
            if !(c > col || sibling) {
                break;
            }
            self.levels.pop();
        }
        self.levels.push((col, kind));
        self.too_deep(self.levels.len())
    }

    /// A flow collection from its opening bracket to the matching close (or the end).
    fn flow(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        let mut node_start = true;
        let mut after_quoted = false;
        while let Some(c) = self.peek() {
            match c {
                b'[' | b'{' => {
                    depth += 1;
                    self.too_deep(self.levels.len() + depth)?;
                    node_start = true;
                }
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(());
                    }
                    node_start = false;
                }
                b'"' | b'\'' if node_start => {
                    self.quoted();
                    (node_start, after_quoted) = (false, true);
                    continue;
                }
                b'#' if blank(self.b[self.i - 1]) => {
                    self.next_line();
                    continue;
                }
                b',' | b'?' => node_start = true,
                b':' => node_start = after_quoted || self.blank_at(1) || self.flow_indicator_at(1),
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ => node_start = false,
            }
            if !blank(c) {
                after_quoted = false;
            }
            self.bump();
        }
        Ok(())
    }

    fn flow_indicator_at(&self, k: usize) -> bool {
        matches!(
            self.b.get(self.i + k),
            Some(b',' | b'[' | b']' | b'{' | b'}')
        )
    }

    /// A single- or double-quoted scalar from its opening quote to its close (or the end).
    fn quoted(&mut self) {
        let q = self.b[self.i];
        self.bump();
        while let Some(c) = self.peek() {
            self.bump();
            if q == b'"' && c == b'\\' {
                if self.peek().is_some() {
                    self.bump();
                }
            } else if c == q {
                if q == b'\'' && self.peek() == Some(b'\'') {
                    self.bump();
                    continue;
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_refused(y: &str, max: usize) -> Option<String> {
        check(y.as_bytes(), max).err()
    }

    #[test]
    fn each_shape_of_nesting_counts_and_names_its_line() {
        let shapes = [
            format!("a: {}\n", "[".repeat(10)),
            format!("a: {}\n", "{".repeat(10)),
            format!("a: {}x\n", "{b: ".repeat(10)),
            format!("a:\n{}x\n", "- ".repeat(10)),
            (0..10).map(|i| format!("{}k:\n", " ".repeat(i))).collect(),
            (0..10).map(|i| format!("{}-\n", " ".repeat(i))).collect(),
            format!("a:\n{}{}\n", "- ".repeat(5), "[".repeat(5)),
            // A mapping under each sequence entry, compact: two levels a column step.
            (0..5)
                .map(|i| format!("{0}- k:\n{0}  -\n", "  ".repeat(i)))
                .collect(),
        ];
        for y in &shapes {
            assert!(check(y.as_bytes(), 11).is_ok(), "{y}");
            let e = depth_refused(y, 8).unwrap_or_else(|| panic!("not refused: {y}"));
            assert!(e.contains("more than 8 levels deep"), "{e}");
        }
        let e = depth_refused("a: 1\nb:\n  c: [[[[x]]]]\n", 3).unwrap();
        assert!(e.starts_with("line 3: "), "{e}");
    }

    #[test]
    fn brackets_in_text_do_not_count() {
        let text = [
            "a: x[y\nb: '[[[['\nc: \"{{{{\\\"[[\"\n",
            "d: |\n  [[[[\n  {{{{\ne: >-\n  [[[[\n",
            "f: long plain\n  [[[[ continued\ng: 1 # [[[[\n",
            "h: [a'b, \"[[[\", '[[''[', x # [[[[\n  ]\n",
        ];
        for y in text {
            assert!(check(y.as_bytes(), 2).is_ok(), "{y}");
        }
        // Many siblings, many documents: the depth, not the size, counts.
        let wide = "- a: [1, {b: 2}]\n  c: 3\n".repeat(10_000);
        assert!(check(wide.as_bytes(), 4).is_ok());
        let docs = "---\na:\n  b: [1]\n...\n".repeat(1000);
        assert!(check(docs.as_bytes(), 3).is_ok());
    }

    #[test]
    fn a_block_scalar_ends_at_a_document_marker() {
        let y = format!("--- |\n text\n---\na: {}\n", "[".repeat(10));
        assert!(depth_refused(&y, 8).is_some());
    }

    #[test]
    fn megabytes_of_nesting_are_refused_at_once() {
        for y in [
            "[".repeat(10 << 20),
            "{".repeat(10 << 20),
            "- ".repeat(5 << 20),
        ] {
            let t = std::time::Instant::now();
            assert!(check(y.as_bytes(), 64).is_err());
            assert!(t.elapsed().as_millis() < 500, "{:?}", t.elapsed());
        }
        // A valid document of 10 MB is scanned in one pass.
        let wide = format!("a: [{}1]\n", "[1, {b: \"x\"}], ".repeat(600_000));
        let t = std::time::Instant::now();
        assert!(check(wide.as_bytes(), 64).is_ok());
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }
}
