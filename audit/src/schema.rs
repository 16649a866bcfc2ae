//! `schema.*`: a bundle's files are present, readable, valid against their schemas and match the
//! manifest's digests.
//!
//! The CLI does the reading and the schema validation (that is I/O); this module holds the ids and
//! the pure rules it applies: safe paths inside a bundle and digest comparison.

use crate::catalogue::Check;
use crate::report::Severity;

/// `schema.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "schema.file-missing",
        severity: Severity::Error,
        doc: "A file the manifest lists is not in the bundle (info when the page did not publish it).",
    },
    Check {
        id: "schema.unreadable",
        severity: Severity::Error,
        doc: "A file cannot be read or is not well-formed JSON / JSON Lines.",
    },
    Check {
        id: "schema.invalid",
        severity: Severity::Error,
        doc: "A file does not follow the JSON Schema of its kind (the pointer names the place).",
    },
    Check {
        id: "schema.digest-mismatch",
        severity: Severity::Error,
        doc: "A file's sha256 differs from the digest the manifest records.",
    },
    Check {
        id: "schema.path-escapes",
        severity: Severity::Error,
        doc: "A manifest path is absolute or leaves the bundle.",
    },
    Check {
        id: "schema.no-digest",
        severity: Severity::Warning,
        doc: "A file has no recorded sha256, so nobody can tell whether it changed.",
    },
];

/// Checks that a manifest path is relative and stays inside the bundle.
pub fn safe_path(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("the path is empty".into());
    }
    if p.starts_with('/') || p.starts_with('\\') || p.contains(':') {
        return Err(format!(
            "'{p}' is absolute; paths must be relative to the bundle"
        ));
    }
    let mut depth: i32 = 0;
    for part in p.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("'{p}' leaves the bundle through '..'"));
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// How a recorded digest compares with a computed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestMatch {
    /// All 64 hex digits match.
    Full,
    /// The recorded prefix of this many hex digits matches (never called a full match).
    Prefix(usize),
    /// They differ.
    Mismatch,
    /// The recorded digest is not 8 to 64 hex digits.
    Malformed,
}

impl DigestMatch {
    /// Whether the digests agree as far as the record goes.
    pub fn ok(self) -> bool {
        matches!(self, DigestMatch::Full | DigestMatch::Prefix(_))
    }

    /// Words for a report.
    pub fn describe(self) -> String {
        match self {
            DigestMatch::Full => "matches the full digest".into(),
            DigestMatch::Prefix(n) => format!("matches the {n} published digits"),
            DigestMatch::Mismatch => "differs".into(),
            DigestMatch::Malformed => "the recorded digest is not 8 to 64 hex digits".into(),
        }
    }
}

/// Compares a recorded sha256 (full or a prefix of at least 8 hex digits) with a computed one.
pub fn compare_digest(recorded: &str, computed_hex: &str) -> DigestMatch {
    let r = recorded.trim().to_ascii_lowercase();
    let r = r.strip_prefix("sha256:").unwrap_or(&r);
    if r.len() < 8 || r.len() > 64 || !r.bytes().all(|b| b.is_ascii_hexdigit()) {
        return DigestMatch::Malformed;
    }
    let c = computed_hex.to_ascii_lowercase();
    if !c.starts_with(r) {
        DigestMatch::Mismatch
    } else if r.len() == 64 {
        DigestMatch::Full
    } else {
        DigestMatch::Prefix(r.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert!(safe_path("speed/result.json").is_ok());
        assert!(safe_path("a/../b.json").is_ok());
        assert!(safe_path("../x").is_err());
        assert!(safe_path("a/../../x").is_err());
        assert!(safe_path("/etc/passwd").is_err());
        assert!(safe_path("C:/x").is_err());
        assert!(safe_path("").is_err());
    }

    #[test]
    fn digests() {
        let full = "250b7cd3".to_string() + &"0".repeat(56);
        assert_eq!(compare_digest(&full, &full), DigestMatch::Full);
        assert_eq!(compare_digest("250b7cd3", &full), DigestMatch::Prefix(8));
        assert_eq!(compare_digest("250b7cd4", &full), DigestMatch::Mismatch);
        assert_eq!(compare_digest("250b7", &full), DigestMatch::Malformed);
        assert_eq!(compare_digest("zzzzzzzz", &full), DigestMatch::Malformed);
        assert!(!DigestMatch::Prefix(8).describe().contains("full"));
    }
}
