//! A YAML document read into the same `serde_json::Value` tree the JSON readers use (GuideLLM
//! writes its report as `.json`, `.yaml` or `.csv` from one object: `save_yaml` is PyYAML's
//! dump of the JSON-able dict, so the trees are the same).
//!
//! The crate: `serde_yaml_ng`, the maintained fork of `serde_yaml` (archived in 2024), with the
//! same libyaml parser and the same API. It adds two crates to the lock (itself and
//! `unsafe-libyaml`; indexmap, itoa, ryu and serde were already there). `serde_norway` is a
//! second fork of the same code; `serde-saphyr` (a younger crate on its own parser,
//! granit-parser) would add granit-parser, annotate-snippets, encoding_rs_io and more for this
//! one reader. Its own bounds stay on: nesting deeper than 128 is refused, and an alias is
//! replayed at most 100 times the document's events in all. Its depth limit applies only while
//! deserializing, after libyaml has scanned the whole document, and libyaml's scanner is quadratic
//! on deep flow nesting: a linear pre-scan (`yaml_depth`) refuses a document nested deeper than
//! [`crate::input::YAML_DEPTH_MAX`] levels first.
//!
//! Hostile input: an alias bomb (billion laughs: each anchor aliased ten times by the next) is
//! not expanded. Every value the tree would hold is counted as it is built, and past
//! [`budget`] values (a few per byte of the file: a document without aliases cannot reach it)
//! the read stops with an error that says so; the counting cuts the replay short, so the time
//! spent is bounded by the budget, not by the expansion.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// How many values a YAML document of `len` bytes may expand to.
pub fn budget(len: usize) -> usize {
    4 * len + 4096
}

/// The document as a JSON tree; `Err` is a message (without the file's name): where the YAML is
/// invalid, or that it expands past its budget.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    super::yaml_depth::check(bytes, crate::input::YAML_DEPTH_MAX)?;
    let left = Cell::new(budget(bytes.len()));
    let de = serde_yaml_ng::Deserializer::from_slice(bytes);
    Budgeted { left: &left }.deserialize(de).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
            .unwrap_or_default();
        format!("{at}YAML not read: {e}")
    })
}

/// Builds one value, spending one unit of the budget per value.
#[derive(Clone, Copy)]
struct Budgeted<'a> {
    left: &'a Cell<usize>,
}

impl Budgeted<'_> {
    fn spend<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.left.get() {
            0 => Err(E::custom(
                "expands to more values than its size allows (aliases repeated past the bound: an alias bomb?): not expanded",
            )),
            n => {
                self.left.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A float as JSON holds it; YAML's `.nan`, `.inf`, `-.inf` as the strings Python's `json`
/// readers here take for them (`NaN`, `Infinity`, `-Infinity`).
fn float(x: f64) -> Value {
    match Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => Value::String("NaN".into()),
        None if x > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// A mapping key as a JSON object key: a string as is, any other scalar as its JSON text.
fn key(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

impl<'de> Visitor<'de> for Budgeted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value without tags")
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Value, E> {
        self.spend().map(|_| Value::Bool(b))
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Value, E> {
        self.spend().map(|_| Value::from(n))
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Value, E> {
        self.spend().map(|_| Value::from(n))
    }
    fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Value, E> {
        self.spend().map(|_| float(x))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Value, E> {
        self.spend().map(|_| Value::String(s.into()))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Value, E> {
        self.spend().map(|_| Value::String(s))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend().map(|_| Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend().map(|_| Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend()?;
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(self)? {
            let v = map.next_value_seed(self)?;
            out.insert(key(k), v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_as_its_json_twin() {
        let y = b"---\nbenchmarks:\n- type_: x\n  rate: -1\n  t: 1.5\n  none:\n  l: [1, 2]\n";
        let v = parse(y).unwrap();
        let j = r#"{"benchmarks":[{"type_":"x","rate":-1,"t":1.5,"none":null,"l":[1,2]}]}"#;
        assert_eq!(v, serde_json::from_str::<Value>(j).unwrap());
    }

    #[test]
    fn non_finite_floats_read_as_python_json_strings() {
        let v = parse(b"a: .nan\nb: .inf\nc: -.inf\n").unwrap();
        assert_eq!(v["a"], "NaN");
        assert_eq!(v["b"], "Infinity");
        assert_eq!(v["c"], "-Infinity");
    }

    #[test]
    fn an_alias_bomb_is_refused_not_expanded() {
        let mut y = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            y.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let start = std::time::Instant::now();
        let e = parse(y.as_bytes()).unwrap_err();
        assert!(start.elapsed().as_secs() < 2, "{:?}", start.elapsed());
        assert!(e.contains("alias") || e.contains("repetition limit"), "{e}");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let y = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let e = parse(y.as_bytes()).unwrap_err();
        assert!(e.contains("more than 64 levels deep"), "{e}");
        let y = format!("a: {}1{}\n", "[".repeat(64), "]".repeat(64));
        assert!(parse(y.as_bytes()).unwrap_err().contains("more than 64"));
        let y = format!("a: {}1{}\n", "[".repeat(63), "]".repeat(63));
        assert!(parse(y.as_bytes()).is_ok());
    }

    #[test]
    fn the_published_yaml_reports_pass_the_depth_scan() {
        let root = env!("CARGO_MANIFEST_DIR");
        for f in [
            "fixtures/published/guidellm/stripped-sweep-0.3-yaml-twin/benchmarks_stripped.yaml",
            "fixtures/imports/lm-eval/tasks/arith.yaml",
            ".pre-commit-hooks.yaml",
            "action.yml",
        ] {
            let bytes = std::fs::read(format!("{root}/{f}")).unwrap();
            parse(&bytes).unwrap_or_else(|e| panic!("{f}: {e}"));
            // Far from the bound: they nest fewer than 12 levels as the scan counts them.
            assert!(super::super::yaml_depth::check(&bytes, 12).is_ok(), "{f}");
        }
    }
}
