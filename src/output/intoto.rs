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
    // The same JSON value with no raw control or bidi mark (a subject is a file name of the page).
    let mut s = super::escape::json(&serde_json::to_string_pretty(&statement).unwrap_or_default());
    s.push('\n');
    s
}

/// The predicate type of the inventory statement: what each rank's server mapped.
pub const LOADED_PREDICATE: &str = "https://rigaudit.dev/attestation/loaded/v0.1";

/// The inventory of what ran (`Report::loaded`) as an in-toto Statement of its own: as subject
/// every file a rank mapped that was hashed (its path and sha256, once), as predicate each rank's
/// box, host, read times, loader variables and files with what they say of themselves, and what
/// could not be read. `None` when the report read no server.
pub fn render_loaded(r: &Report) -> Option<String> {
    if r.loaded.is_empty() {
        return None;
    }
    let mut seen = std::collections::BTreeSet::new();
    let subject: Vec<Value> = r
        .loaded
        .iter()
        .flat_map(|rank| rank.objects.iter())
        .filter_map(|o| Some((o.path.as_str(), o.sha256.as_deref()?)))
        .filter(|pair| seen.insert(*pair))
        .map(|(path, d)| json!({"name": path, "digest": {"sha256": d}}))
        .collect();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subject,
        "predicateType": LOADED_PREDICATE,
        "predicate": {
            "command": r.command,
            "bundle": r.bundle,
            "tool": format!("pkg:cargo/rigaudit@{}", env!("CARGO_PKG_VERSION")),
            "rules": r.rules_version,
            "ranks": r.loaded,
        }
    });
    let mut s = super::escape::json(&serde_json::to_string_pretty(&statement).unwrap_or_default());
    s.push('\n');
    Some(s)
}

/// Where the inventory statement goes beside an in-toto file: `X.intoto.json` ->
/// `X.loaded.intoto.json` (any other name gets `.loaded.intoto.json` after it).
pub fn loaded_path(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".intoto.jsonl")
        .or_else(|| name.strip_suffix(".intoto.json"))
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(&name);
    path.with_file_name(format!("{stem}.loaded.intoto.json"))
}

/// An ed25519 key to sign attestations with, and its keyid.
pub struct SignKey {
    key: ed25519_dalek::SigningKey,
    /// securesystemslib's keyid of the public key.
    pub keyid: String,
}

/// What `--sign-key` takes, said in every refusal of a key.
const SUPPORTED: &str = "rigaudit signs with an ed25519 private key: PKCS#8 PEM (BEGIN PRIVATE KEY; `openssl genpkey -algorithm ed25519 -out key.pem`) or a raw 32-byte seed (the bytes, or 64 hex digits)";

impl SignKey {
    /// Reads `--sign-key`: a PKCS#8 PEM private key, or a raw 32-byte seed (bytes or hex). A key
    /// file that others than its owner may read or write is used, with a warning on standard
    /// error naming its mode and the fix (see [`permissions_warning`]); a key of another kind or
    /// form (RSA, EC, encrypted, OpenSSH's, a public key, a certificate) is refused, named as what
    /// it is. No message holds the key's bytes.
    pub fn load(path: &Path) -> Result<SignKey, Fatal> {
        let shown = input::shown_path(path);
        let f = input::open_regular(path, "signing key")?;
        if let Some(warning) = f
            .metadata()
            .ok()
            .and_then(|m| permissions_warning(&shown, &m))
        {
            crate::progress::say(format_args!("rigaudit: warning: {warning}"));
        }
        let bytes = input::read_all_bounded(f, 64 * 1024, "signing key", &shown)?;
        let key = key_of(&bytes).map_err(|what| fatal(format!("{shown}: {what}; {SUPPORTED}")))?;
        let keyid = keyid_of(&key.verifying_key());
        Ok(SignKey { key, keyid })
    }
}

/// The warning for a key file whose mode lets others than its owner read or write it; `None`
/// when only the owner may. A warning, not a refusal as ssh makes: `--sign-key` is named
/// explicitly, and in CI a key is most often a secret written with `echo "$KEY" > key.pem`, which
/// the usual umask (022) leaves readable by all (0644) on a runner no one else uses.
fn permissions_warning(shown: &str, meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o066 == 0 {
        return None;
    }
    let access = match (mode & 0o044 != 0, mode & 0o022 != 0) {
        (true, true) => "readable and writable",
        (true, false) => "readable",
        _ => "writable",
    };
    let who = match (mode & 0o060 != 0, mode & 0o006 != 0) {
        (true, true) => "its group and all other users",
        (true, false) => "its group",
        _ => "all other users",
    };
    Some(format!(
        "{shown}: the signing key's mode is {mode:04o}, {access} by {who}; a private key should be its owner's alone: chmod 600 {shown}"
    ))
}

/// The ed25519 key in a key file's bytes; `Err` says what the file holds instead.
fn key_of(bytes: &[u8]) -> Result<ed25519_dalek::SigningKey, String> {
    let text = std::str::from_utf8(bytes).map(str::trim).unwrap_or("");
    if let Some(label) = pem_label(text) {
        return from_pem(&label, text);
    }
    if let Some(seed) = seed_of(bytes, text) {
        return Ok(ed25519_dalek::SigningKey::from_bytes(&seed));
    }
    let ssh_public = ["ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-"];
    if ssh_public.iter().any(|p| text.starts_with(p)) {
        let kind = text.split_whitespace().next().unwrap_or("");
        return Err(format!(
            "an OpenSSH public key ({}); signing needs the private key",
            input::shown(kind)
        ));
    }
    Err(format!(
        "expected an ed25519 key: PKCS#8 PEM, or a 32-byte seed (raw, or 64 hex digits); found {} bytes of neither",
        bytes.len()
    ))
}

/// The label of the PEM block a key file holds (`PRIVATE KEY` of `-----BEGIN PRIVATE KEY-----`):
/// a private key's when there are several blocks, else the first's.
fn pem_label(text: &str) -> Option<String> {
    let labels: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("-----BEGIN ")?.strip_suffix("-----"))
        .collect();
    let private = labels.iter().find(|l| l.ends_with("PRIVATE KEY"));
    private.or(labels.first()).map(|l| l.to_string())
}

/// The DER of the PEM block labelled `label` (headers such as `Proc-Type:` left out).
fn pem_der(label: &str, text: &str) -> Vec<u8> {
    let begin = format!("-----BEGIN {label}-----");
    let body: String = text
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != begin)
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .filter(|l| !l.contains(':'))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap_or_default()
}

/// The key of a PEM file whose block is labelled `label`, or what it is instead.
fn from_pem(label: &str, text: &str) -> Result<ed25519_dalek::SigningKey, String> {
    let der = pem_der(label, text);
    let encrypted = text.contains("Proc-Type: 4,ENCRYPTED");
    let said = match label {
        "PRIVATE KEY" => {
            let alg = pkcs8_algorithm(&der);
            if alg != "ed25519" {
                return Err(format!("{alg} private key (PKCS#8), not an ed25519 one"));
            }
            return ed25519_dalek::SigningKey::from_pkcs8_der(&der).map_err(|e| {
                format!("an ed25519 private key in PKCS#8 PEM that cannot be read: {e}")
            });
        }
        "ENCRYPTED PRIVATE KEY" => "an encrypted PKCS#8 private key; rigaudit asks for no passphrase: decrypt it to a file only you can read (`openssl pkey -in KEY -out plain.pem`)".to_string(),
        "OPENSSH PRIVATE KEY" => format!("an OpenSSH-format private key ({}); rigaudit does not read this format", openssh_kind(&der)),
        "RSA PRIVATE KEY" => format!("an RSA private key (PKCS#1{})", if encrypted { ", encrypted" } else { "" }),
        "EC PRIVATE KEY" => format!("an EC private key (SEC1{}{})", ec_curve(&der).map(|c| format!(", {c}")).unwrap_or_default(), if encrypted { ", encrypted" } else { "" }),
        "PUBLIC KEY" | "RSA PUBLIC KEY" => format!("a public key ({}); signing needs the private key", pkcs8_algorithm(&der)),
        "CERTIFICATE" | "TRUSTED CERTIFICATE" | "X509 CERTIFICATE" => "a certificate, which holds a public key; signing needs the private key".to_string(),
        other => format!("a PEM block of {}, not a private key", input::shown(other)),
    };
    Err(said)
}

/// The algorithm a PKCS#8 or SubjectPublicKeyInfo DER names, by its OID.
fn pkcs8_algorithm(der: &[u8]) -> String {
    let has = |oid: &[u8]| der.windows(oid.len()).any(|w| w == oid);
    let named: [(&[u8], &str); 6] = [
        (&[0x06, 0x03, 0x2b, 0x65, 0x70], "ed25519"),
        (&[0x06, 0x03, 0x2b, 0x65, 0x71], "an Ed448"),
        (&[0x06, 0x03, 0x2b, 0x65, 0x6e], "an X25519"),
        (
            &[
                0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
            ],
            "an RSA",
        ),
        (
            &[
                0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a,
            ],
            "an RSA-PSS",
        ),
        (
            &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01],
            "an EC",
        ),
    ];
    match named.iter().find(|(oid, _)| has(oid)) {
        Some((_, "an EC")) => match ec_curve(der) {
            Some(curve) => format!("an EC ({curve})"),
            None => "an EC".to_string(),
        },
        Some((_, name)) => name.to_string(),
        None if der.is_empty() => "a damaged (its PEM text does not decode)".to_string(),
        None => "an unknown kind of".to_string(),
    }
}

/// The named curve an EC key's DER gives, by its OID.
fn ec_curve(der: &[u8]) -> Option<&'static str> {
    let has = |oid: &[u8]| der.windows(oid.len()).any(|w| w == oid);
    let curves: [(&[u8], &str); 4] = [
        (
            &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07],
            "P-256",
        ),
        (&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22], "P-384"),
        (&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x23], "P-521"),
        (&[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a], "secp256k1"),
    ];
    curves.iter().find(|(oid, _)| has(oid)).map(|(_, c)| *c)
}

/// The key type and whether it is encrypted, from an OpenSSH private key's header
/// (`openssh-key-v1`, the cipher's name, the KDF, then the public key naming its type).
fn openssh_kind(der: &[u8]) -> String {
    let cipher = der
        .strip_prefix(b"openssh-key-v1\0")
        .and_then(|rest| {
            let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            rest.get(4..4 + len)
        })
        .map(String::from_utf8_lossy);
    let text = String::from_utf8_lossy(der);
    let kinds = [
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "ssh-dss",
    ];
    let kind = kinds.iter().find(|k| text.contains(*k)).copied();
    let kind = kind.unwrap_or("of an unknown type");
    match cipher.as_deref() {
        Some("none") => format!("{kind}, not encrypted"),
        Some(c) => format!("{kind}, encrypted with {}", input::shown(c)),
        None => format!("{kind}, its header unreadable"),
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

    /// Runs a key-making tool in `dir`; false (said on stderr) when it is not installed.
    fn made(dir: &Path, tool: &str, args: &[&str]) -> bool {
        match std::process::Command::new(tool)
            .args(args)
            .current_dir(dir)
            .output()
        {
            Ok(o) if o.status.success() => true,
            Ok(o) => panic!("{tool} {args:?}: {}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                eprintln!("SKIPPED: {tool} cannot run here ({e}): its keys are not tried");
                false
            }
        }
    }

    /// The openssl command lines that make each kind of key refused, with what it is named.
    const KEYS: [(&str, &str, &str); 8] = [
        (
            "genpkey -algorithm ed448 -out ed448.pem",
            "ed448.pem",
            "an Ed448 private key (PKCS#8)",
        ),
        (
            "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec.pem",
            "ec.pem",
            "an EC (P-256) private key (PKCS#8)",
        ),
        (
            "genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa.pem",
            "rsa.pem",
            "an RSA private key (PKCS#8)",
        ),
        (
            "pkey -in ed.pem -aes256 -passout pass:pw -out enc.pem",
            "enc.pem",
            "an encrypted PKCS#8 private key",
        ),
        (
            "pkey -in ed.pem -pubout -out pub.pem",
            "pub.pem",
            "a public key (ed25519)",
        ),
        (
            "req -x509 -key ed.pem -subj /CN=t -days 1 -out cert.pem",
            "cert.pem",
            "a certificate",
        ),
        (
            "pkey -in ec.pem -traditional -out sec1.pem",
            "sec1.pem",
            "an EC private key (SEC1, P-256)",
        ),
        (
            "pkey -in rsa.pem -traditional -out pkcs1.pem",
            "pkcs1.pem",
            "an RSA private key (PKCS#1)",
        ),
    ];

    /// Asserts the key file `file` is refused, named as `what`, and no line of its text is echoed.
    fn refused_as(d: &Path, file: &str, what: &str) {
        let text = std::fs::read_to_string(d.join(file)).unwrap();
        let e = SignKey::load(&d.join(file)).err().unwrap().0;
        assert!(e.contains(what), "{file}: {e}");
        assert!(e.contains("ed25519 private key: PKCS#8 PEM"), "{file}: {e}");
        for line in text
            .lines()
            .filter(|l| l.len() > 16 && !l.starts_with("-----"))
        {
            let body = line.split_whitespace().nth(1).unwrap_or(line);
            assert!(!e.contains(body), "{file}: the key's text is echoed: {e}");
        }
    }

    #[test]
    fn each_kind_of_key_is_named_as_what_it_is_and_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ed = "genpkey -algorithm ed25519 -out ed.pem";
        if !made(d, "openssl", &ed.split(' ').collect::<Vec<_>>()) {
            return;
        }
        assert!(SignKey::load(&d.join("ed.pem")).is_ok());
        for (args, file, what) in KEYS {
            made(d, "openssl", &args.split(' ').collect::<Vec<_>>());
            refused_as(d, file, what);
        }
        let ssh = ["-q", "-t", "ed25519", "-N", "", "-f", "ossh"];
        if made(d, "ssh-keygen", &ssh) {
            let what = "an OpenSSH-format private key (ssh-ed25519, not encrypted)";
            refused_as(d, "ossh", what);
            refused_as(d, "ossh.pub", "an OpenSSH public key (ssh-ed25519)");
        }
    }

    #[test]
    fn a_key_others_may_read_is_warned_about_with_its_mode_and_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let k = key_file(dir.path(), "k", &[7u8; 32]);
        let warned = |mode: u32| {
            std::fs::set_permissions(&k, std::fs::Permissions::from_mode(mode)).unwrap();
            permissions_warning("k", &std::fs::metadata(&k).unwrap())
        };
        assert_eq!(warned(0o600), None);
        assert_eq!(warned(0o400), None);
        let w = warned(0o644).unwrap();
        assert!(
            w.contains("mode is 0644, readable by its group and all other users"),
            "{w}"
        );
        assert!(w.ends_with("chmod 600 k"), "{w}");
        assert!(warned(0o640).unwrap().contains("readable by its group;"));
        assert!(warned(0o602)
            .unwrap()
            .contains("writable by all other users"));
        // Used all the same.
        assert!(SignKey::load(&k).is_ok());
    }
}
