//! The report as an in-toto attestation: a Statement (v1) whose predicate is the test-result
//! predicate (`https://in-toto.io/attestation/test-result/v0.1`): the result (`PASSED`, `WARNED`,
//! `FAILED`), the checks that passed, warned and failed, and as subject the bundle's raw files with
//! their sha256 as verified, so a page can ship its audit as a statement a signer can wrap
//! (DSSE) and a verifier can check against the files.
//!
//! With `--sign-key KEY` the statement is wrapped in a DSSE envelope
//! (<https://github.com/secure-systems-lab/dsse>, payload type `application/vnd.in-toto+json`)
//! signed with the user's ed25519 key: a PKCS#8 PEM file (`openssl genpkey -algorithm ed25519`),
//! or the raw 32-byte seed (as bytes, or 64 hex digits). The signature's `keyid` is the one
//! securesystemslib gives the public key (sha256 of its canonical JSON), so in-toto's own tools
//! find the key by it.

use crate::fatal::{fatal, Fatal};
use crate::input;
use base64::Engine as _;
use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::Signer;
use rigaudit_audit::{Report, Severity, Verdict};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// The checks that ran, split by the worst severity they found.
fn split(r: &Report) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut passed, mut warned, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for id in &r.checks_run {
        let worst = r
            .findings
            .iter()
            .filter(|f| &f.check == id)
            .map(|f| f.severity)
            .max();
        let fails = |s: Severity| r.fail_on.is_some_and(|t| s >= t);
        match worst {
            Some(s) if fails(s) => failed.push(id.clone()),
            Some(Severity::Error | Severity::Warning) => warned.push(id.clone()),
            _ => passed.push(id.clone()),
        }
    }
    (passed, warned, failed)
}

/// Renders a report as an in-toto Statement with the test-result predicate.
pub fn render(r: &Report) -> String {
    let (passed, warned, failed) = split(r);
    let result = match r.verdict {
        Verdict::Fail | Verdict::Incomplete => "FAILED",
        Verdict::Pass if !warned.is_empty() => "WARNED",
        Verdict::Pass => "PASSED",
    };
    let subject: Vec<Value> = r
        .artifacts
        .iter()
        .map(|a| json!({"name": a.path, "digest": {"sha256": a.sha256}}))
        .collect();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subject,
        "predicateType": "https://in-toto.io/attestation/test-result/v0.1",
        "predicate": {
            "result": result,
            "configuration": [{
                "name": format!("rigaudit {} rules {}", r.command, r.rules_version),
                "uri": format!("pkg:cargo/rigaudit@{}", env!("CARGO_PKG_VERSION")),
            }],
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
        }
    });
    let mut s = serde_json::to_string_pretty(&statement).unwrap_or_default();
    s.push('\n');
    s
}

/// An ed25519 key to sign attestations with, and its keyid.
pub struct SignKey {
    key: ed25519_dalek::SigningKey,
    /// securesystemslib's keyid of the public key.
    pub keyid: String,
}

impl SignKey {
    /// Reads `--sign-key`: a PKCS#8 PEM private key, or a raw 32-byte seed (bytes or hex).
    pub fn load(path: &Path) -> Result<SignKey, Fatal> {
        let shown = input::shown_path(path);
        let bytes = input::read_bounded(path, 64 * 1024, "signing key")?;
        let text = std::str::from_utf8(&bytes).map(str::trim).unwrap_or("");
        let key = if text.starts_with("-----BEGIN") {
            ed25519_dalek::SigningKey::from_pkcs8_pem(text).map_err(|e| {
                fatal(format!(
                    "{shown}: expected an ed25519 private key in PKCS#8 PEM (BEGIN PRIVATE KEY): {e}"
                ))
            })?
        } else if let Some(seed) = seed_of(&bytes, text) {
            ed25519_dalek::SigningKey::from_bytes(&seed)
        } else {
            return Err(fatal(format!(
                "{shown}: expected an ed25519 key: PKCS#8 PEM, or a 32-byte seed (raw, or 64 hex digits); found {} bytes of neither",
                bytes.len()
            )));
        };
        let keyid = keyid_of(&key.verifying_key());
        Ok(SignKey { key, keyid })
    }
}

/// A raw seed: exactly 32 bytes, or 64 hex digits.
fn seed_of(bytes: &[u8], text: &str) -> Option<[u8; 32]> {
    if let Ok(raw) = <[u8; 32]>::try_from(bytes) {
        return Some(raw);
    }
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut seed = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        seed[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(seed)
}

/// securesystemslib's keyid: sha256 of the key's canonical JSON (keys sorted, no spaces).
fn keyid_of(public: &ed25519_dalek::VerifyingKey) -> String {
    let canonical = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        crate::digest::hex(public.as_bytes())
    );
    crate::digest::hex(&Sha256::digest(canonical.as_bytes()))
}

/// DSSE's pre-authentication encoding of a payload: what is signed.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A rendered statement wrapped in a DSSE envelope signed with `key`.
pub fn envelope(statement: &str, key: &SignKey) -> String {
    let payload = statement.as_bytes();
    let sig = key.key.sign(&pae(PAYLOAD_TYPE, payload));
    let b64 = base64::engine::general_purpose::STANDARD;
    let env = json!({
        "payloadType": PAYLOAD_TYPE,
        "payload": b64.encode(payload),
        "signatures": [{"keyid": key.keyid, "sig": b64.encode(sig.to_bytes())}],
    });
    let mut s = serde_json::to_string_pretty(&env).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Verifier;

    fn key_file(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn the_envelope_signs_the_pae_of_the_statement() {
        let dir = tempfile::tempdir().unwrap();
        let key = SignKey::load(&key_file(dir.path(), "k", &[7u8; 32])).unwrap();
        let env: Value = serde_json::from_str(&envelope("{\"a\":1}\n", &key)).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let payload = b64.decode(env["payload"].as_str().unwrap()).unwrap();
        assert_eq!(payload, b"{\"a\":1}\n");
        let sig = b64
            .decode(env["signatures"][0]["sig"].as_str().unwrap())
            .unwrap();
        let sig = ed25519_dalek::Signature::from_slice(&sig).unwrap();
        let signed = pae(PAYLOAD_TYPE, &payload);
        assert!(signed.starts_with(b"DSSEv1 28 application/vnd.in-toto+json 8 {"));
        let public = key.key.verifying_key();
        assert!(public.verify(&signed, &sig).is_ok());
        assert!(public.verify(&pae(PAYLOAD_TYPE, b"{}"), &sig).is_err());
        assert_eq!(env["signatures"][0]["keyid"], key.keyid);
    }

    #[test]
    fn a_seed_in_hex_is_the_same_key_as_its_bytes_and_garbage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let raw = SignKey::load(&key_file(dir.path(), "raw", &[0xab; 32])).unwrap();
        let hex = SignKey::load(&key_file(dir.path(), "hex", "ab".repeat(32).as_bytes())).unwrap();
        assert_eq!(raw.key.verifying_key(), hex.key.verifying_key());
        assert_eq!((raw.keyid.len(), &raw.keyid), (64, &hex.keyid));
        let e = SignKey::load(&key_file(dir.path(), "bad", b"not a key"))
            .err()
            .unwrap()
            .0;
        assert!(
            e.contains("bad") && e.contains("expected an ed25519 key"),
            "{e}"
        );
        let pem = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let e = SignKey::load(&key_file(dir.path(), "pem", pem))
            .err()
            .unwrap()
            .0;
        assert!(e.contains("PKCS#8 PEM"), "{e}");
    }
}
